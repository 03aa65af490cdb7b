//! `npusim check`: load the config and the kernel, plan every part, and say what is wrong: as
//! text (an `ok:` line, or every problem rendered on stderr) or as one JSON document
//! (`reports::check_json`) on stdout whatever the outcome.

use crate::cli::{CheckFormat, Input, PlanArgs};
use crate::{
    best_refused, load, no_best, output, part_failed, part_failure_diagnostics, part_prefix,
    plan_parts, pretty, try_load, Exit, VALIDATE,
};
use sim::diag::Severity;
use sim::{Config, Diagnostic, Kernel, Program};

/// Runs the check and prints it in `format`. Exit codes, whatever the format: 0 when the
/// kernel loads and every part plans, 1 for a finding (an overflow), 2 for bad input.
pub fn check(input: &Input, args: &PlanArgs, format: CheckFormat) -> Result<(), Exit> {
    match format {
        CheckFormat::Text => text(input, args),
        CheckFormat::Json => json(input, args),
    }
}

/// `N ops, M buffers` and `plan: SCOPE USED of CAPACITY bytes (MODE), ...` of one part.
fn summary(program: &Program, plan: &planner::Plan) -> (String, String) {
    let scopes: Vec<String> = plan
        .scopes
        .iter()
        .filter(|s| s.required > 0)
        .map(|s| {
            format!(
                "{} {} of {} bytes ({})",
                s.space.yaml_name(),
                s.used,
                s.capacity,
                s.mode.name()
            )
        })
        .collect();
    (
        format!(
            "{} ops, {} buffers",
            program.ops.len(),
            program.buffers.len()
        ),
        format!(
            "plan: {}",
            if scopes.is_empty() {
                "no on-chip buffers".to_string()
            } else {
                scopes.join(", ")
            }
        ),
    )
}

/// The `ok:` text: `ok: KERNEL (SUMMARY)` for a single-type kernel; for a mixed kernel `ok:
/// KERNEL (mixed kernel, N blocks)` and one indented `PART: SUMMARY` line per part. Then the
/// plans' warnings, a mixed kernel's naming their part.
fn ok_text(config: &Config, kernel: &Kernel, planned: &[planner::Planned]) -> String {
    let first = kernel.first();
    let mut text = if kernel.is_mixed() {
        let blocks = first.launch.blocks;
        let mut t = format!(
            "ok: {} (mixed kernel, {blocks} block{})\n",
            first.kernel,
            if blocks == 1 { "" } else { "s" }
        );
        for (program, p) in kernel.parts.iter().zip(planned) {
            let (counts, plan) = summary(program, &p.plan);
            let core = &config.core(program.core).name;
            t.push_str(&format!("  {core}: {counts}; {plan}\n"));
        }
        t
    } else {
        let (counts, plan) = summary(first, &planned[0].plan);
        format!("ok: {} ({counts}); {plan}\n", first.kernel)
    };
    for (part, p) in planned.iter().enumerate() {
        let prefix = part_prefix(config, kernel, part);
        for w in &p.plan.warnings {
            text.push_str(&format!("warning: {prefix}{w}\n"));
        }
    }
    text
}

fn text(input: &Input, args: &PlanArgs) -> Result<(), Exit> {
    let (config, kernel, src) = load(input)?;
    no_best(args)?;
    let planned = pipeline::plan_kernel(&kernel, &config, &args.options(), VALIDATE)
        .map_err(|e| part_failed(&e, &kernel, &config, &src, ""))?;
    output::emit(None, &ok_text(&config, &kernel, &planned))
}

/// The same steps as [`text`], in the same order, each problem collected instead of printed;
/// the document is printed once, complete. On a failure, stderr gets one line saying so.
fn json(input: &Input, args: &PlanArgs) -> Result<(), Exit> {
    let file = input.program.display().to_string();
    let (config, kernel, src) = match try_load(input) {
        Ok(loaded) => loaded,
        Err(rejected) => return finish(&file, &[], None, &rejected.diagnostics(), 2),
    };
    let parts: Vec<&Program> = kernel.parts.iter().collect();
    if let Some(message) = best_refused(args) {
        let problem = Diagnostic::error("", "", message);
        return finish(&file, &parts, None, &[problem], 2);
    }
    match pipeline::plan_kernel(&kernel, &config, &args.options(), VALIDATE) {
        Ok(planned) => {
            let mut warnings = Vec::new();
            for (part, p) in planned.iter().enumerate() {
                let prefix = part_prefix(&config, &kernel, part);
                warnings.extend(p.plan.warnings.iter().map(|w| Diagnostic {
                    severity: Severity::Warning,
                    ..Diagnostic::error(&src.name, "", format!("{prefix}{w}"))
                }));
            }
            let plans = plan_parts(&config, &kernel, &planned);
            finish(&file, &parts, Some(&plans), &warnings, 0)
        }
        Err(e) => {
            let (problems, code) = part_failure_diagnostics(&e, &kernel, &config, &src);
            finish(&file, &parts, None, &problems, code)
        }
    }
}

/// Prints the check document and gives `code` as the exit code.
fn finish(
    file: &str,
    parts: &[&Program],
    plan: Option<&[reports::PlanPart]>,
    problems: &[Diagnostic],
    code: u8,
) -> Result<(), Exit> {
    let doc = reports::check_json(&reports::Check {
        file,
        parts,
        plan,
        problems,
    });
    output::emit(None, &pretty(&doc))?;
    if code == 0 {
        return Ok(());
    }
    let errors = problems
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    err_line!(
        "error: {file}: {errors} problem{}; see the JSON document",
        if errors == 1 { "" } else { "s" }
    );
    Err(Exit(code))
}
