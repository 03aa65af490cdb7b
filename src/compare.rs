//! `npusim compare`: plan, synchronise and run one program once per reuse level, and print the
//! levels side by side (`reports::compare_text`) or as a list of run documents.

use crate::cli::{Input, PlanCommon, RunFormat};
use crate::{execute, load, output, pretty, report_problems, Executed, Exit, Failed};
use reports::{CompareLevel, CompareOutcome, CompareRun};
use std::path::Path;

pub struct CompareArgs<'a> {
    pub input: &'a Input,
    /// The levels, in the order the rows are printed.
    pub levels: &'a [u8],
    pub plan: &'a PlanCommon,
    pub race_check: bool,
    pub format: RunFormat,
    pub output: Option<&'a Path>,
}

/// One level's outcome: a run, or the overflow message of its plan.
enum Outcome {
    Ran(Box<Executed>),
    Overflow(String),
}

/// Runs every level, prints the comparison, then every level's problems on stderr. Exit 1 when
/// a level overflowed or its run found something (hazard, sync finding, deadlock); 2 on bad
/// input (the first level that hits it stops the comparison).
pub fn compare(args: &CompareArgs) -> Result<(), Exit> {
    let (config, program, src) = load(args.input)?;
    let mut outcomes = Vec::with_capacity(args.levels.len());
    for &level in args.levels {
        let plan = args.plan.at_level(level);
        let outcome = match execute(&program, &config, &plan, &src, args.race_check) {
            Ok(ran) => Outcome::Ran(Box::new(ran)),
            Err(Failed::Overflow(message)) => Outcome::Overflow(message),
            Err(Failed::Exit(e)) => return Err(e),
        };
        outcomes.push((level, outcome));
    }

    let text = match args.format {
        RunFormat::Text => {
            let levels: Vec<CompareLevel> = outcomes
                .iter()
                .map(|(level, o)| CompareLevel {
                    level: *level,
                    outcome: match o {
                        Outcome::Ran(ran) => CompareOutcome::Ran(CompareRun {
                            program: &ran.program,
                            plan: &ran.planned.plan,
                            result: &ran.result,
                            hazards: ran.hazards.as_deref(),
                            auto_sync: ran.auto_sync.as_ref(),
                        }),
                        Outcome::Overflow(message) => CompareOutcome::Overflow(message),
                    },
                })
                .collect();
            reports::compare_text(&program, &config, &levels)
        }
        RunFormat::Json => {
            let docs: Vec<serde_json::Value> = outcomes
                .iter()
                .map(|(level, o)| match o {
                    Outcome::Ran(ran) => ran.json(&config),
                    Outcome::Overflow(message) => {
                        reports::overflow_json(&program, &config, *level, message)
                    }
                })
                .collect();
            pretty(&serde_json::Value::Array(docs))
        }
    };

    // the comparison is complete even when a level overflowed or found problems, and it is
    // where they are shown: write it, then list the problems on stderr
    output::emit(args.output, &text)?;
    let mut problems = 0;
    let mut bad_levels = Vec::new();
    for (level, o) in &outcomes {
        let n = match o {
            Outcome::Ran(ran) => report_problems(ran, &format!("level {level}: ")),
            Outcome::Overflow(message) => {
                eprintln!("error: {}: level {level}: {message}", src.name);
                1
            }
        };
        if n > 0 {
            problems += n;
            bad_levels.push(level.to_string());
        }
    }
    if problems > 0 {
        eprintln!(
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
