//! `npusim check`: load the config and the program, plan the program, and say what is wrong:
//! as text (an `ok:` line, or every problem rendered on stderr) or as one JSON document
//! (`reports::check_json`) on stdout whatever the outcome.

use crate::cli::{CheckFormat, Input, PlanArgs};
use crate::{
    best_refused, failed, failure_diagnostics, load, no_best, output, pretty, try_load, Exit,
    VALIDATE,
};
use sim::diag::Severity;
use sim::Diagnostic;

/// Runs the check and prints it in `format`. Exit codes, whatever the format: 0 when the
/// program loads and plans, 1 for a finding (an overflow), 2 for bad input.
pub fn check(input: &Input, args: &PlanArgs, format: CheckFormat) -> Result<(), Exit> {
    match format {
        CheckFormat::Text => text(input, args),
        CheckFormat::Json => json(input, args),
    }
}

fn text(input: &Input, args: &PlanArgs) -> Result<(), Exit> {
    let (config, program, src) = load(input)?;
    no_best(args)?;
    let planned = pipeline::plan(&program, &config, &args.options(), VALIDATE)
        .map_err(|f| failed(&f, &program, &config, &src, ""))?;
    let scopes: Vec<String> = planned
        .plan
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
    let mut text = format!(
        "ok: {} ({} ops, {} buffers); plan: {}\n",
        program.kernel,
        program.ops.len(),
        program.buffers.len(),
        if scopes.is_empty() {
            "no on-chip buffers".to_string()
        } else {
            scopes.join(", ")
        }
    );
    for w in &planned.plan.warnings {
        text.push_str(&format!("warning: {w}\n"));
    }
    output::emit(None, &text)
}

/// The same steps as [`text`], in the same order, each problem collected instead of printed;
/// the document is printed once, complete. On a failure, stderr gets one line saying so.
fn json(input: &Input, args: &PlanArgs) -> Result<(), Exit> {
    let file = input.program.display().to_string();
    let (config, program, src) = match try_load(input) {
        Ok(loaded) => loaded,
        Err(rejected) => return finish(&file, None, None, &rejected.diagnostics(), 2),
    };
    if let Some(message) = best_refused(args) {
        let problem = Diagnostic::error("", "", message);
        return finish(&file, Some(&program), None, &[problem], 2);
    }
    match pipeline::plan(&program, &config, &args.options(), VALIDATE) {
        Ok(planned) => {
            let warnings: Vec<Diagnostic> = planned
                .plan
                .warnings
                .iter()
                .map(|w| Diagnostic {
                    severity: Severity::Warning,
                    ..Diagnostic::error(&src.name, "", w.clone())
                })
                .collect();
            finish(&file, Some(&program), Some(&planned.plan), &warnings, 0)
        }
        Err(f) => {
            let (problems, code) = failure_diagnostics(&f, &program, &config, &src);
            finish(&file, Some(&program), None, &problems, code)
        }
    }
}

/// Prints the check document and gives `code` as the exit code.
fn finish(
    file: &str,
    program: Option<&sim::Program>,
    plan: Option<&planner::Plan>,
    problems: &[Diagnostic],
    code: u8,
) -> Result<(), Exit> {
    let doc = reports::check_json(&reports::Check {
        file,
        program,
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
