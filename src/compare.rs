//! `npusim compare`: plan, synchronise and run one kernel once per reuse level, and print the
//! levels side by side (`reports::kernel_compare_text`) or as a list of run documents. A
//! launch of many cores, or a mixed kernel, runs whole at every level: each part planned and
//! synchronised on its own, all cores in one run.

use crate::cli::{Input, PlanCommon, RunArgs, RunFormat};
use crate::{load, output, part_failed, part_prefix, pretty, report_problems, Exit, VALIDATE};
use pipeline::LevelOutcome;
use reports::CompareOutcome;
use std::path::Path;

pub struct CompareArgs<'a> {
    pub input: &'a Input,
    /// The levels, in the order the rows are printed.
    pub levels: &'a [u8],
    pub plan: &'a PlanCommon,
    pub run: &'a RunArgs,
    pub format: RunFormat,
    pub output: Option<&'a Path>,
    /// `--html FILE`: also the comparison as an HTML page.
    pub html: Option<&'a Path>,
}

/// Runs every level, prints the comparison, then every level's problems on stderr. Exit 1 when
/// a level overflowed or its run found something (hazard, sync finding, deadlock); 2 on bad
/// input (the first level that hits it stops the comparison).
pub fn compare(args: &CompareArgs) -> Result<(), Exit> {
    let (config, kernel, src) = load(args.input)?;
    let parts: Vec<&sim::Program> = kernel.parts.iter().collect();
    let opts = args.plan.at_level(2).pipeline(args.run, VALIDATE);
    // each level's run shows its progress line on a terminal, cleared when it ends
    // (from 2 s into the comparison, however short each level)
    let (max, began) = (opts.limits.max_instructions, std::time::Instant::now());
    let levels = pipeline::compare_kernel_observed(&kernel, &config, args.levels, &opts, |l| {
        crate::progress::RunProgress::on_terminal(format!("compare level {l}"), max)
            .map(|p| p.since(began))
    })
    .map_err(|e| part_failed(&e, &kernel, &config, &src, ""))?;
    let mut views = reports::compare_levels(&levels);
    // a mixed kernel's overflow names its part
    for (view, l) in views.iter_mut().zip(&levels) {
        if let CompareOutcome::Overflow(message) = &mut view.outcome {
            message.insert_str(0, &part_prefix(&config, &kernel, l.part));
        }
    }
    let program = kernel.first();
    let text = match args.format {
        RunFormat::Text => reports::kernel_compare_text(&parts, &config, &views),
        RunFormat::Json => pretty(&reports::compare_json(program, &config, &views)),
    };

    let page = args
        .html
        .map(|_| reports::compare_html(program, &config, &views));

    // the comparison is complete even when a level overflowed or found problems, and it is
    // where they are shown: write it, then list the problems on stderr
    output::emit(args.output, &text)?;
    if let (Some(path), Some(page)) = (args.html, &page) {
        output::emit(Some(path), page)?;
    }
    let mut problems = 0;
    let mut bad_levels = Vec::new();
    for l in &levels {
        let n = match &l.outcome {
            LevelOutcome::Ran(sim) => {
                report_problems(&config, sim, &format!("level {}: ", l.level))
            }
            LevelOutcome::Overflow(e) => {
                let part = part_prefix(&config, &kernel, l.part);
                err_line!("error: {}: level {}: {part}{e}", src.name, l.level);
                1
            }
        };
        if n > 0 {
            problems += n;
            bad_levels.push(l.level.to_string());
        }
    }
    if problems > 0 {
        err_line!(
            "error: {}: {problems} problem{} at level{} {}; see the report",
            src.name,
            if problems == 1 { "" } else { "s" },
            if bad_levels.len() == 1 { "" } else { "s" },
            bad_levels.join(", ")
        );
        return Err(Exit(1));
    }
    Ok(())
}
