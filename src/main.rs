//! The `npusim` command line: the only part of npusim that touches files and the terminal.
//!
//! Exit codes: 0 success; 1 a finding (deadlock, double set, unpaired set_flag, overflow);
//! 2 bad input (load errors, a run error, bad arguments, unreadable files).

mod cli;
mod compare;
mod input;
mod output;
mod pack;

use clap::Parser;
use cli::{Cli, Command, Input, PlanArgs, PlanFormat, RunFormat};
use planner::{LivenessError, PlanFailure, Planned, SyncStats};
use reports::table::{Align, Table};
use sim::program::SyncMode;
use sim::{Config, Diagnostic, Hazard, Program, RunError, RunResult};
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Check { input, plan } => check(&input, &plan),
        Command::Plan {
            input,
            plan: args,
            explain,
            show_sync,
            format,
            output,
        } => plan(
            &input,
            &args,
            explain.as_deref(),
            show_sync,
            format,
            output.as_deref(),
        ),
        Command::Run {
            input,
            plan,
            no_race_check,
            format,
            output,
        } => run(&input, &plan, !no_race_check, format, output.as_deref()),
        Command::Compare {
            input,
            levels,
            plan,
            no_race_check,
            format,
            output,
        } => compare::compare(&compare::CompareArgs {
            input: &input,
            levels: &levels.0,
            plan: &plan,
            race_check: !no_race_check,
            format,
            output: output.as_deref(),
        }),
        Command::Pack {
            instance,
            capacity,
            mode,
            time_limit,
            minimize,
            output,
        } => pack::pack(&pack::PackArgs {
            instance: &instance,
            capacity,
            mode,
            time_limit,
            minimize,
            output: output.as_deref(),
        }),
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

fn check(input: &Input, args: &PlanArgs) -> Result<(), Exit> {
    let (config, program, src) = load(input)?;
    let planned = make_plan(&program, &config, args, &src)?;
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

/// Why [`try_plan`] or [`execute`] gave no result.
#[derive(Debug)]
pub enum Failed {
    /// A scope did not fit (a finding, exit 1): HIVM's message, not printed yet.
    Overflow(String),
    /// Anything else; the message has been printed.
    Exit(Exit),
}

impl From<Exit> for Failed {
    fn from(e: Exit) -> Failed {
        Failed::Exit(e)
    }
}

/// Plans the program; an overflow is a finding (exit 1), a read before the first write is bad
/// input (exit 2). Debug builds also run the independent validator on every plan.
fn make_plan(
    program: &Program,
    config: &Config,
    args: &PlanArgs,
    src: &input::Source,
) -> Result<Planned, Exit> {
    try_plan(program, config, args, src).map_err(|f| overflow_exit(f, src))
}

/// Prints an overflow as `error: FILE: MESSAGE` (exit 1); other failures are already printed.
fn overflow_exit(f: Failed, src: &input::Source) -> Exit {
    match f {
        Failed::Overflow(message) => {
            eprintln!("error: {}: {message}", src.name);
            Exit(1)
        }
        Failed::Exit(e) => e,
    }
}

/// [`make_plan`], leaving an overflow to the caller.
fn try_plan(
    program: &Program,
    config: &Config,
    args: &PlanArgs,
    src: &input::Source,
) -> Result<Planned, Failed> {
    let core = config.core(program.core);
    let mut bad = Vec::new();
    for (space, _) in &args.common.capacities {
        if !core.scopes.iter().any(|s| s.space == *space) {
            let has: Vec<&str> = core.scopes.iter().map(|s| s.space.yaml_name()).collect();
            bad.push(format!(
                "--capacity {}=...: core {} has no {} scope; its scopes are {}",
                space.yaml_name(),
                core.name,
                space.yaml_name(),
                has.join(", ")
            ));
        }
    }
    if !bad.is_empty() {
        for b in &bad {
            eprintln!("error: {b}");
        }
        return Err(Exit(2).into());
    }
    let planned = planner::plan_program(program, config, &args.options()).map_err(|e| match e {
        PlanFailure::Plan(e) => Failed::Overflow(e.to_string()),
        PlanFailure::Liveness(LivenessError::ReadBeforeWrite { buffer, op }) => {
            let buffer = &program.buffer(buffer).name;
            let op = &program.op(op).path;
            eprintln!("error: {}: the program cannot be planned", src.name);
            let mut d = Diagnostic::error(
                &src.name,
                op,
                format!("buffer `{buffer}` is read before its first write"),
            );
            d.hint = Some(format!(
                "write `{buffer}` (load, a vector op or sstore) before this op reads it"
            ));
            input::locate(&src.text, &mut d);
            eprint!("\n{}", input::render(&d, Some(src)));
            Failed::Exit(Exit(2))
        }
    })?;
    if cfg!(debug_assertions) {
        if let Err(v) = planned.validate(program, config) {
            eprintln!(
                "error: internal: the plan fails its validator (a planner bug; please report it):"
            );
            for x in v {
                eprintln!("  {x}");
            }
            return Err(Exit(1).into());
        }
    }
    Ok(planned)
}

fn plan(
    input: &Input,
    args: &PlanArgs,
    explain: Option<&str>,
    show_sync: bool,
    format: PlanFormat,
    out: Option<&Path>,
) -> Result<(), Exit> {
    let (config, program, src) = load(input)?;
    let planned = make_plan(&program, &config, args, &src)?;
    if let Some(name) = explain {
        let Some(b) = program.buffers.iter().position(|b| b.name == name) else {
            let names: Vec<&str> = program.buffers.iter().map(|b| b.name.as_str()).collect();
            let hint = sim::diag::did_you_mean(name, names.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return Err(Exit::input(format!(
                "--explain {name}: {} has no buffer `{name}`{hint}",
                src.name
            )));
        };
        let text = reports::plan_explain(&program, &planned, sim::BufferId::new(b));
        return output::emit(out, &text);
    }
    let plan = &planned.plan;
    if show_sync {
        let synced = planner::synchronize(&program, &config, plan);
        return output::emit(out, &reports::program_yaml(&synced.program, &config, plan));
    }
    let text = match format {
        PlanFormat::Text => reports::plan_text(&program, plan),
        PlanFormat::Yaml => reports::plan_yaml(&program, plan),
        PlanFormat::Json => pretty(&reports::plan_json(&program, plan)),
    };
    output::emit(out, &text)
}

/// What one plan → sync → run produced.
pub struct Executed {
    pub planned: Planned,
    /// What the sync pass inserted, when the program was `sync: auto`.
    pub auto_sync: Option<SyncStats>,
    /// The program that ran: the synchronised one (`sync: manual`; original ops keep their
    /// paths, so reports name what the user wrote).
    pub program: Program,
    pub result: RunResult,
    /// `None` when the race checker was skipped.
    pub hazards: Option<Vec<Hazard>>,
}

impl Executed {
    /// The run document (`run --format json`).
    pub fn json(&self, config: &Config) -> serde_json::Value {
        reports::run_json(
            &self.program,
            config,
            &self.planned.plan,
            &self.result,
            self.hazards.as_deref(),
            self.auto_sync.as_ref(),
        )
    }
}

/// Plans the program, synchronises it with that plan (`sync: auto`; a `sync: manual` program
/// comes back unchanged) and runs the result, with the race checker when `race_check`.
/// `run` and `compare` both go through here.
pub fn execute(
    program: &Program,
    config: &Config,
    args: &PlanArgs,
    src: &input::Source,
    race_check: bool,
) -> Result<Executed, Failed> {
    let planned = try_plan(program, config, args, src)?;
    let synced = planner::synchronize(program, config, &planned.plan);
    let auto_sync = (program.sync == SyncMode::Auto).then_some(synced.stats);
    let program = synced.program;
    let (result, hazards) = if race_check {
        let (offsets, slot_bytes) = planned.plan.addresses();
        let placement = sim::race::Placement {
            offsets: &offsets,
            slot_bytes: &slot_bytes,
        };
        let r = sim::race::check(&program, config, &placement).map_err(|e| run_failed(&e, src))?;
        (r.result, Some(r.hazards))
    } else {
        let r = sim::run(&program, config).map_err(|e| run_failed(&e, src))?;
        (r, None)
    };
    Ok(Executed {
        planned,
        auto_sync,
        program,
        result,
        hazards,
    })
}

fn run(
    input: &Input,
    args: &PlanArgs,
    race_check: bool,
    format: RunFormat,
    out: Option<&Path>,
) -> Result<(), Exit> {
    let (config, program, src) = load(input)?;
    let ran =
        execute(&program, &config, args, &src, race_check).map_err(|f| overflow_exit(f, &src))?;
    let text = match format {
        RunFormat::Text => reports::run_text(
            &ran.program,
            &config,
            &ran.planned.plan,
            &ran.result,
            ran.hazards.as_deref(),
            ran.auto_sync.as_ref(),
        ),
        RunFormat::Json => pretty(&ran.json(&config)),
    };
    output::emit(out, &text)?;
    let n = report_problems(&ran, "");
    if n > 0 {
        eprintln!(
            "error: {}: the run found {n} problem{}; see the report",
            src.name,
            if n == 1 { "" } else { "s" }
        );
        return Err(Exit(1));
    }
    Ok(())
}

/// Prints a run's hazards, sync findings and deadlock on stderr, each line prefixed with
/// `context` after its kind (`hazard: level 0: ...`), and returns how many there were.
fn report_problems(ran: &Executed, context: &str) -> usize {
    let program = &ran.program;
    let result = &ran.result;
    let hazards = ran.hazards.as_deref().unwrap_or_default();
    for h in hazards {
        eprintln!("hazard: {context}{h}");
    }
    let mut n = hazards.len() + result.findings.len();
    for f in &result.findings {
        eprintln!("finding: {context}{}", reports::finding_text(program, f));
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
                    reports::op_ref(program, w.op)
                )
            })
            .collect();
        eprintln!(
            "finding: {context}deadlock at cycle {}: {}",
            d.cycle,
            waiters.join("; ")
        );
    }
    n
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
