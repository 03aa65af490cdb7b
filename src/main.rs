//! The `npusim` command line: the only part of npusim that touches files and the terminal.
//!
//! Exit codes: 0 success; 1 a finding (deadlock, double set, unpaired set_flag, overflow);
//! 2 bad input (load errors, a run error, bad arguments, unreadable files).

mod cli;
mod input;
mod output;

use clap::Parser;
use cli::{Cli, Command, Input, PlanFormat, RunFormat};
use planner::Plan;
use reports::table::{Align, Table};
use sim::program::SyncMode;
use sim::{Config, Diagnostic, Program, RunError};
use std::path::Path;
use std::process::ExitCode;

/// How the process ends when something went wrong; the message has already been printed.
#[derive(Debug)]
pub struct Exit(pub u8);

impl Exit {
    /// Prints `error: MESSAGE` and gives the bad-input exit code.
    pub fn input(message: impl std::fmt::Display) -> Exit {
        eprintln!("error: {message}");
        Exit(2)
    }
}

/// The message for `run` on a `sync: auto` program until the sync pass exists.
const AUTO_SYNC_NOT_BUILT: &str = "sync: auto needs the automatic sync pass, which is not built \
     yet; write `sync: manual` and the flags";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Check { input } => check(&input),
        Command::Plan {
            input,
            format,
            output,
        } => plan(&input, format, output.as_deref()),
        Command::Run {
            input,
            format,
            output,
        } => run(&input, format, output.as_deref()),
        Command::Configs => configs(),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Exit(code)) => ExitCode::from(code),
    }
}

fn load(input: &Input) -> Result<(Config, Program, input::Source), Exit> {
    let config = input::load_config(&input.config)?;
    let (program, src) = input::load_program(&input.program, &config, &input.params)?;
    Ok((config, program, src))
}

fn check(input: &Input) -> Result<(), Exit> {
    let (_, program, _) = load(input)?;
    let line = format!(
        "ok: {} ({} ops, {} buffers)\n",
        program.kernel,
        program.ops.len(),
        program.buffers.len()
    );
    output::emit(None, &line)
}

fn make_plan(program: &Program, config: &Config) -> Result<Plan, Exit> {
    planner::plan_sequential(program, config).map_err(|e| {
        eprintln!("error: {e}");
        Exit(1)
    })
}

fn plan(input: &Input, format: PlanFormat, out: Option<&Path>) -> Result<(), Exit> {
    let (config, program, _) = load(input)?;
    let plan = make_plan(&program, &config)?;
    let text = match format {
        PlanFormat::Text => reports::plan_text(&program, &plan),
        PlanFormat::Yaml => reports::plan_yaml(&program, &plan),
        PlanFormat::Json => pretty(&reports::plan_json(&program, &plan)),
    };
    output::emit(out, &text)
}

fn run(input: &Input, format: RunFormat, out: Option<&Path>) -> Result<(), Exit> {
    let (config, program, src) = load(input)?;
    if program.sync == SyncMode::Auto {
        return Err(Exit::input(format!("{}: {AUTO_SYNC_NOT_BUILT}", src.name)));
    }
    let plan = make_plan(&program, &config)?;
    let result = sim::run(&program, &config).map_err(|e| run_failed(&e, &src))?;
    let text = match format {
        RunFormat::Text => reports::run_text(&program, &config, &plan, &result),
        RunFormat::Json => pretty(&reports::run_json(&program, &config, &plan, &result)),
    };
    output::emit(out, &text)?;
    if result.has_findings() {
        let mut n = result.findings.len();
        for f in &result.findings {
            eprintln!("finding: {}", reports::finding_text(&program, f));
        }
        if let Some(d) = &result.deadlock {
            n += 1;
            let waiters: Vec<String> = d
                .waiters
                .iter()
                .map(|w| {
                    format!(
                        "{} waits on {} ({})",
                        w.pipe,
                        w.on,
                        reports::op_ref(&program, w.op)
                    )
                })
                .collect();
            eprintln!(
                "finding: deadlock at cycle {}: {}",
                d.cycle,
                waiters.join("; ")
            );
        }
        eprintln!(
            "error: {}: the run found {n} problem{}; see the report",
            src.name,
            if n == 1 { "" } else { "s" }
        );
        return Err(Exit(1));
    }
    Ok(())
}

/// A run error is bad input: report it like a load error, located in the program.
fn run_failed(e: &RunError, src: &input::Source) -> Exit {
    eprintln!("error: {}: the run stopped", src.name);
    eprint!(
        "\n{}",
        input::render(&run_error_diagnostic(e, src), Some(src))
    );
    Exit(2)
}

/// A run error as a diagnostic located at its op in the program text.
fn run_error_diagnostic(e: &RunError, src: &input::Source) -> Diagnostic {
    let mut d = Diagnostic::error(
        &src.name,
        &e.path,
        format!("{} (cycle {}{})", e.message, e.cycle, e.iteration),
    );
    input::locate(&src.text, &mut d);
    d
}

fn configs() -> Result<(), Exit> {
    let mut t = Table::new(vec![
        ("name".into(), Align::Left),
        ("cores".into(), Align::Left),
        ("clock".into(), Align::Right),
        ("description".into(), Align::Left),
    ]);
    for (name, text) in sim::builtin::BUILTIN {
        let file = format!("<built-in {name}>");
        let config = sim::load_config(text, &file).map_err(|e| {
            input::report_load_error(
                &e,
                &[&input::Source {
                    name: file.clone(),
                    text: text.to_string(),
                }],
            )
        })?;
        let cores: Vec<&str> = config.cores.iter().map(|c| c.name.as_str()).collect();
        t.row(vec![
            if *name == sim::builtin::DEFAULT {
                format!("{name} (default)")
            } else {
                name.to_string()
            },
            cores.join(", "),
            format!("{} MHz", config.clock_mhz),
            config.description.clone(),
        ]);
    }
    output::emit(None, &t.render(""))
}

fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a JSON value always serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_errors_are_located_in_the_program() {
        let src = input::Source {
            name: "k.yaml".into(),
            text: "kernel: k\nbody:\n  - for: { var: t, to: 4 }\n    body:\n      - scalar: { cycles: t }\n"
                .into(),
        };
        let e = RunError {
            op: sim::OpId::new(1),
            path: "body[0].for.body[0]".into(),
            message: "cycles must not be negative".into(),
            cycle: 12,
            iteration: ", t=3".into(),
        };
        let d = run_error_diagnostic(&e, &src);
        assert_eq!(
            d.to_string(),
            "k.yaml:5:9: error: body[0].for.body[0]: cycles must not be negative (cycle 12, t=3)"
        );
        assert_eq!(run_failed(&e, &src).0, 2);
    }
}
