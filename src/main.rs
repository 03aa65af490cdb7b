//! The `npusim` command line: it parses arguments, reads the input files, calls the pipeline
//! library (`pipeline`) and the report renderers (`reports`), writes what they produce and
//! chooses the exit code. The only part of npusim that touches files and the terminal.
//!
//! Exit codes: 0 success; 1 a finding (hazard, deadlock, double set, unpaired set_flag,
//! overflow) or an npusim bug; 2 bad input (load errors, a run error, bad arguments, unreadable
//! files).

/// `eprintln!` that never panics: stderr may be a closed pipe (`npusim run x 2>&1 | head -1`),
/// and a report nobody reads is not worth a crash. The line goes through `sim::text::shown`:
/// a control or bidirectional character that came from an input (a name, a value echoed in a
/// message) is shown escaped, never acted on by the terminal.
macro_rules! err_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", sim::text::shown(&line));
    }};
}

/// `eprint!` that never panics (see [`err_line`]), for text that is safe already: a
/// diagnostic `input::render` drew (it escapes its input text itself, and may colour its own
/// output), a summary of numbers.
macro_rules! err_text {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

mod calibrate;
mod check;
mod cli;
mod compare;
mod diff;
mod input;
mod opt;
mod output;
mod pack;
mod progress;
mod sweep;
mod workers;

use cli::{Cli, Command, Input, LevelArg, PlanArgs, PlanFormat, RunArgs, RunFormat, ViewArgs};
use input::Rejected;
use pipeline::{Failure, Simulation};
use reports::table::{Align, Table};
use sim::{Config, Diagnostic, Kernel, Program, RunError};
use std::path::Path;
use std::process::ExitCode;

// mimalloc: loading a big program makes millions of small allocations (YAML nodes, operands,
// paths), which glibc's allocator spent a third of the time on (BENCHMARKS.md, "Big inputs")
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How the process ends when something went wrong; the message has already been printed.
#[derive(Debug)]
pub struct Exit(pub u8);

impl Exit {
    /// Prints `error: MESSAGE` and gives the bad-input exit code.
    pub fn input(message: impl std::fmt::Display) -> Exit {
        err_line!("error: {message}");
        Exit(2)
    }
}

fn main() -> ExitCode {
    // mimalloc hands freed memory back to the OS after 10 ms and faults it in again on the
    // next allocation: loading a big program (whose YAML tree is freed as the program is
    // built) spent a fifth of its time clearing pages. Large OS pages, where the OS has them,
    // keep the memory committed: `check` of 100,000 buffers 2.3 s -> 1.5 s.
    // SAFETY: mi_option_set only stores the value; mimalloc reads options when it uses them.
    unsafe { libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1) };
    let cli = Cli::parse_checked();
    input::set_max_input_bytes(cli.max_input_bytes);
    output::on_signals();
    if let Err(Exit(code)) = refuse_clashes(&cli.command) {
        return ExitCode::from(code);
    }
    let outcome = match cli.command {
        Command::Check {
            input,
            plan,
            format,
        } => check::check(&input, &plan, format),
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
            run: run_args,
            format,
            output,
            views,
        } => run(&input, &plan, &run_args, &views, format, output.as_deref()),
        Command::Compare {
            input,
            levels,
            plan,
            run,
            format,
            output,
            html,
        } => compare::compare(&compare::CompareArgs {
            input: &input,
            levels: &levels.0,
            plan: &plan,
            run: &run,
            format,
            output: output.as_deref(),
            html: html.as_deref(),
        }),
        Command::Pack {
            instance,
            capacity,
            mode,
            time_limit,
            minimize,
            timing,
            output,
        } => pack::pack(&pack::PackArgs {
            instance: &instance,
            capacity,
            mode,
            time_limit,
            minimize,
            timing,
            output: output.as_deref(),
        }),
        Command::Diff(args) => diff::diff(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args),
        Command::Opt { args } => opt::opt(&args),
        Command::Configs { show: None } => configs(),
        Command::Configs { show: Some(name) } => show_config(&name),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Exit(code)) => ExitCode::from(code),
    }
}

/// An output that is an input of the command, or another of its outputs, refused before
/// anything runs ([`output::refuse_clashes`]). `sweep` and `calibrate` check theirs once the
/// files their input names are known.
fn refuse_clashes(command: &Command) -> Result<(), Exit> {
    let (inputs, outputs) = match command {
        // `opt` checks its own, once it knows whether it reads MLIR or YAML
        Command::Plan { input, output, .. } => (input_files(input), vec![("-o", output)]),
        Command::Run {
            input,
            output,
            views,
            ..
        } => (
            input_files(input),
            vec![
                ("-o", output),
                ("--trace", &views.trace),
                ("--html", &views.html),
            ],
        ),
        Command::Compare {
            input,
            output,
            html,
            ..
        } => (input_files(input), vec![("-o", output), ("--html", html)]),
        Command::Diff(args) => (
            diff::input_files(args),
            vec![("-o", &args.output), ("--html", &args.html)],
        ),
        Command::Pack {
            instance, output, ..
        } => (
            vec![("the instance".to_string(), instance.as_path())],
            vec![("-o", output)],
        ),
        _ => return Ok(()),
    };
    output::refuse_clashes(&inputs, &given(&outputs))
}

/// The outputs given on the command line, by flag.
pub fn given<'a>(
    outputs: &[(&'static str, &'a Option<std::path::PathBuf>)],
) -> Vec<(&'static str, &'a Path)> {
    outputs
        .iter()
        .filter_map(|(flag, path)| path.as_deref().map(|p| (*flag, p)))
        .collect()
}

/// The files `input` names: the program, and the config when it is a file.
pub fn input_files(input: &Input) -> Vec<(String, &Path)> {
    let mut files = vec![("the program".to_string(), input.program.as_path())];
    if sim::builtin::builtin(&input.config).is_none() {
        files.push(("the config".to_string(), Path::new(&input.config)));
    }
    files
}

fn load(input: &Input) -> Result<(Config, Kernel, input::Source), Exit> {
    try_load(input).map_err(|r| r.report())
}

/// The config, then the kernel (a single-type program, or a mixed kernel's parts): the first
/// that cannot be read or loaded stops it.
fn try_load(input: &Input) -> Result<(Config, Kernel, input::Source), Rejected> {
    let config = input::load_config(&input.config)?;
    let (kernel, src) = input::load_kernel(&input.program, &config, &input.params, input.blocks)?;
    Ok((config, kernel, src))
}

/// How messages name part `part` of `kernel`: `aiv: ` in a mixed kernel, nothing in a
/// single-type one.
pub fn part_prefix(config: &Config, kernel: &Kernel, part: usize) -> String {
    if kernel.is_mixed() {
        format!("{}: ", config.core(kernel.parts[part].core).name)
    } else {
        String::new()
    }
}

/// Every part of `kernel` with its plan, as the plan documents read them.
pub fn plan_parts<'a>(
    config: &'a Config,
    kernel: &'a Kernel,
    planned: &'a [planner::Planned],
) -> Vec<reports::PlanPart<'a>> {
    kernel
        .parts
        .iter()
        .zip(planned)
        .map(|(program, p)| reports::PlanPart {
            core: &config.core(program.core).name,
            program,
            plan: &p.plan,
        })
        .collect()
}

/// [`failed`] for a failure of one part of a kernel: located in that part's program, with
/// the part named (`aiv: `) after `context` in a mixed kernel.
pub fn part_failed(
    e: &pipeline::PartFailure,
    kernel: &Kernel,
    config: &Config,
    src: &input::Source,
    context: &str,
) -> Exit {
    if let Some(messages) = kernel_no_such_scope(&e.failure, kernel, config) {
        for message in messages {
            err_line!("error: {message}");
        }
        return Exit(2);
    }
    let context = format!("{context}{}", part_prefix(config, kernel, e.part));
    failed(&e.failure, &kernel.parts[e.part], config, src, &context)
}

/// [`failure_diagnostics`] for a failure of one part of a kernel (see [`part_failed`]).
pub fn part_failure_diagnostics(
    e: &pipeline::PartFailure,
    kernel: &Kernel,
    config: &Config,
    src: &input::Source,
) -> (Vec<Diagnostic>, u8) {
    if let Some(messages) = kernel_no_such_scope(&e.failure, kernel, config) {
        let problems = messages
            .into_iter()
            .map(|m| Diagnostic::error("", "", m))
            .collect();
        return (problems, 2);
    }
    let (mut problems, code) = failure_diagnostics(&e.failure, &kernel.parts[e.part], config, src);
    let prefix = part_prefix(config, kernel, e.part);
    for d in &mut problems {
        d.message.insert_str(0, &prefix);
    }
    (problems, code)
}

/// A mixed kernel's `--capacity` for a scope neither part's core has: one message per scope,
/// naming each part's scopes. `None` for any other failure, and for a single-type kernel
/// (whose message is [`no_such_scope`]'s).
fn kernel_no_such_scope(f: &Failure, kernel: &Kernel, config: &Config) -> Option<Vec<String>> {
    let Failure::NoSuchScope { scopes, .. } = f else {
        return None;
    };
    if !kernel.is_mixed() {
        return None;
    }
    let has: Vec<String> = kernel
        .parts
        .iter()
        .map(|p| {
            let core = config.core(p.core);
            let names: Vec<&str> = core.scopes.iter().map(|s| s.space.yaml_name()).collect();
            format!("{} has {}", core.name, names.join(", "))
        })
        .collect();
    Some(
        scopes
            .iter()
            .map(|space| {
                format!(
                    "--capacity {}=...: no part of the mixed kernel has a {} scope ({})",
                    space.yaml_name(),
                    space.yaml_name(),
                    has.join("; ")
                )
            })
            .collect(),
    )
}

/// `--level best` needs runs: `check` and `plan` refuse it.
fn no_best(args: &PlanArgs) -> Result<(), Exit> {
    best_refused(args).map_or(Ok(()), |message| Err(Exit::input(message)))
}

/// Why `--level best` is refused by `check` and `plan`, if it was given.
fn best_refused(args: &PlanArgs) -> Option<&'static str> {
    (args.level == LevelArg::Best).then_some(
        "--level best plans, synchronises and runs every level to keep the fastest: use it with `npusim run` (`npusim compare` shows every level)",
    )
}

/// Debug builds check every plan with the planner's independent validator.
const VALIDATE: bool = cfg!(debug_assertions);

/// Prints why the pipeline stopped and gives the exit code: 1 for a finding (an overflow) or
/// an npusim bug, 2 for bad input. `context` prefixes the message (`level 0: `).
pub fn failed(
    f: &Failure,
    program: &Program,
    config: &Config,
    src: &input::Source,
    context: &str,
) -> Exit {
    match f {
        Failure::Overflow(e) => {
            err_line!("error: {}: {context}{e}", src.name);
            // HIVM's message stays verbatim above; the peak op is then shown in the source
            if let Some(d) = overflow_peak(e, program, src) {
                err_text!("\n{}", input::render(&d, Some(src)));
            }
            Exit(1)
        }
        Failure::NoSuchScope { .. } => {
            for message in no_such_scope(f, config) {
                err_line!("error: {message}");
            }
            Exit(2)
        }
        Failure::ReadBeforeWrite { buffer, op } => {
            err_line!("error: {}: the program cannot be planned", src.name);
            let d = read_before_write(program, *buffer, *op, src);
            err_text!("\n{}", input::render(&d, Some(src)));
            Exit(2)
        }
        Failure::Run(e) => run_failed(e, src),
        Failure::CrossSync(e) => {
            err_line!("error: {}: {e}", src.name);
            Exit(2)
        }
        Failure::InvalidPlan(violations) => {
            err_line!("error: {INVALID_PLAN}:");
            for v in violations {
                err_line!("  {v}");
            }
            Exit(1)
        }
        Failure::Accounting(e) => {
            err_line!("error: {ACCOUNTING}: {e}");
            Exit(1)
        }
    }
}

const INVALID_PLAN: &str =
    "internal: the plan fails its validator (a planner bug; please report it)";
const ACCOUNTING: &str =
    "internal: the run's cycle accounting does not add up (an engine bug; please report it)";

/// The problems [`failed`] prints, as diagnostics (for `check --format json`), and the exit
/// code. An overflow is one problem: HIVM's message, placed at the op where the scope is
/// fullest, with what to do.
pub fn failure_diagnostics(
    f: &Failure,
    program: &Program,
    config: &Config,
    src: &input::Source,
) -> (Vec<Diagnostic>, u8) {
    match f {
        Failure::Overflow(e) => {
            let mut d = Diagnostic::error(&src.name, "", e.to_string());
            if let Some(peak) = overflow_peak(e, program, src) {
                d.path = peak.path;
                d.line = peak.line;
                d.column = peak.column;
                d.hint = peak.hint;
            }
            (vec![d], 1)
        }
        Failure::NoSuchScope { .. } => (
            no_such_scope(f, config)
                .into_iter()
                .map(|m| Diagnostic::error("", "", m))
                .collect(),
            2,
        ),
        Failure::ReadBeforeWrite { buffer, op } => {
            (vec![read_before_write(program, *buffer, *op, src)], 2)
        }
        Failure::Run(e) => (vec![run_error_diagnostic(e, src)], 2),
        Failure::CrossSync(e) => (
            e.problems
                .iter()
                .map(|m| {
                    let mut d = Diagnostic::error(&src.name, "", m.clone());
                    d.hint =
                        Some("write the cross-core flags by hand (cross_set / cross_wait)".into());
                    d
                })
                .collect(),
            2,
        ),
        Failure::InvalidPlan(violations) => (
            violations
                .iter()
                .map(|v| Diagnostic::error("", "", format!("{INVALID_PLAN}: {v}")))
                .collect(),
            1,
        ),
        Failure::Accounting(e) => (
            vec![Diagnostic::error("", "", format!("{ACCOUNTING}: {e}"))],
            1,
        ),
    }
}

/// Where an overflowing scope is fullest, located in the program, with the buffers live there
/// and what to do; `None` when the planner did not name the op.
fn overflow_peak(
    e: &planner::PlanError,
    program: &Program,
    src: &input::Source,
) -> Option<Diagnostic> {
    let planner::PlanError::Overflow {
        space,
        peak_op: Some(op),
        largest,
        required_bits,
        available_bits,
        ..
    } = e
    else {
        return None;
    };
    let live: Vec<String> = largest.iter().map(|(n, _)| format!("`{n}`")).collect();
    let mut d = Diagnostic::error(
        &src.name,
        &program.op(*op).path,
        format!(
            "{} is fullest here: {} live",
            space.yaml_name(),
            live.join(", ")
        ),
    );
    d.hint = Some(if required_bits <= available_bits {
        "plan with `--placement exact`, or make these buffers smaller, give them fewer slots (multi), or end a lifetime earlier".into()
    } else {
        "make these buffers smaller, give them fewer slots (multi), or end a lifetime earlier"
            .into()
    });
    input::locate(&src.text, &mut d);
    Some(d)
}

/// One message per `--capacity` scope the program's core lacks.
fn no_such_scope(f: &Failure, config: &Config) -> Vec<String> {
    let Failure::NoSuchScope { core, scopes } = f else {
        return Vec::new();
    };
    let core = config.core(*core);
    let has: Vec<&str> = core.scopes.iter().map(|s| s.space.yaml_name()).collect();
    scopes
        .iter()
        .map(|space| {
            format!(
                "--capacity {}=...: core {} has no {} scope; its scopes are {}",
                space.yaml_name(),
                core.name,
                space.yaml_name(),
                has.join(", ")
            )
        })
        .collect()
}

/// A buffer read before anything writes it, located at the op that reads it.
fn read_before_write(
    program: &Program,
    buffer: sim::BufferId,
    op: sim::OpId,
    src: &input::Source,
) -> Diagnostic {
    let buffer = &program.buffer(buffer).name;
    let mut d = Diagnostic::error(
        &src.name,
        &program.op(op).path,
        format!("buffer `{buffer}` is read before its first write"),
    );
    d.hint = Some(format!(
        "write `{buffer}` (load, a vector op or sstore) before this op reads it"
    ));
    input::locate(&src.text, &mut d);
    d
}

fn plan(
    input: &Input,
    args: &PlanArgs,
    explain: Option<&str>,
    show_sync: bool,
    format: Option<PlanFormat>,
    out: Option<&Path>,
) -> Result<(), Exit> {
    if let (true, Some(f @ (PlanFormat::Text | PlanFormat::Yaml | PlanFormat::Json))) =
        (show_sync, format)
    {
        let name = format!("{f:?}").to_lowercase();
        return Err(Exit::input(format!(
            "--show-sync prints a YAML kernel, or HIVM MLIR with `--format mlir`; `--format {name}` does not apply to it"
        )));
    }
    let (config, mut kernel, src) = load(input)?;
    no_best(args)?;
    if show_sync {
        // the printed program is what runs: a mixed kernel's cross-core flags included
        kernel = planner::synchronize_kernel(&kernel, &config)
            .map_err(|e| {
                let f = Failure::CrossSync(e);
                failed(&f, kernel.first(), &config, &src, "")
            })?
            .kernel;
    }
    let planned = pipeline::plan_kernel(&kernel, &config, &args.options(), VALIDATE)
        .map_err(|e| part_failed(&e, &kernel, &config, &src, ""))?;
    if let Some(name) = explain {
        return output::emit(out, &explain_text(&config, &kernel, &planned, name, &src)?);
    }
    if format == Some(PlanFormat::Mlir) {
        return output::emit(out, &mlir_text(&config, &kernel, &planned, show_sync)?);
    }
    if show_sync {
        return output::emit(out, &synchronised_text(&config, &kernel, &planned));
    }
    let parts = plan_parts(&config, &kernel, &planned);
    let text = match format.unwrap_or(PlanFormat::Text) {
        PlanFormat::Text => reports::kernel_plan_text(&parts),
        PlanFormat::Yaml => reports::kernel_plan_yaml(&parts),
        PlanFormat::Json => pretty(&reports::kernel_plan_json(&parts)),
        PlanFormat::Mlir => unreachable!("handled above"),
    };
    output::emit(out, &text)
}

/// `npusim opt`: the program as HIVM MLIR as written, planned (`-hivm-plan-memory`), or
/// planned and synchronised (`-hivm-inject-sync` too).
pub fn opt_yaml(
    input: &Input,
    args: &PlanArgs,
    plan_memory: bool,
    inject_sync: bool,
    out: Option<&Path>,
) -> Result<(), Exit> {
    let (config, mut kernel, src) = load(input)?;
    no_best(args)?;
    if !plan_memory {
        let parts: Vec<reports::MlirPart> = kernel
            .parts
            .iter()
            .map(|program| reports::MlirPart {
                program,
                plan: None,
            })
            .collect();
        let text = reports::kernel_mlir(&parts, &config).map_err(mlir_refused)?;
        return output::emit(out, &text);
    }
    if inject_sync {
        kernel = planner::synchronize_kernel(&kernel, &config)
            .map_err(|e| {
                let f = Failure::CrossSync(e);
                failed(&f, kernel.first(), &config, &src, "")
            })?
            .kernel;
    }
    let planned = pipeline::plan_kernel(&kernel, &config, &args.options(), VALIDATE)
        .map_err(|e| part_failed(&e, &kernel, &config, &src, ""))?;
    output::emit(out, &mlir_text(&config, &kernel, &planned, inject_sync)?)
}

/// What the MLIR writer cannot express, each problem on its own line (bad input, exit 2).
fn mlir_refused(problems: Vec<String>) -> Exit {
    for p in &problems {
        err_line!("error: {p}");
    }
    err_line!("error: the program has no HIVM MLIR form (docs/mlir.md lists what has one)");
    Exit(2)
}

/// The kernel as HIVM MLIR under its plans: planned, or (`synced`) synchronised under them.
fn mlir_text(
    config: &Config,
    kernel: &Kernel,
    planned: &[planner::Planned],
    synced: bool,
) -> Result<String, Exit> {
    let programs: Vec<Program> = if synced {
        kernel
            .parts
            .iter()
            .zip(planned)
            .map(|(program, p)| planner::synchronize(program, config, &p.plan).program)
            .collect()
    } else {
        kernel.parts.clone()
    };
    let parts: Vec<reports::MlirPart> = programs
        .iter()
        .zip(planned)
        .map(|(program, p)| reports::MlirPart {
            program,
            plan: Some(&p.plan),
        })
        .collect();
    reports::kernel_mlir(&parts, config).map_err(mlir_refused)
}

/// `plan --explain NAME`: why the buffer got its address; in a mixed kernel, in every part
/// that declares a buffer of that name, each headed `== PART ==`.
fn explain_text(
    config: &Config,
    kernel: &Kernel,
    planned: &[planner::Planned],
    name: &str,
    src: &input::Source,
) -> Result<String, Exit> {
    let mut sections = Vec::new();
    for (program, p) in kernel.parts.iter().zip(planned) {
        if let Some(b) = program.buffers.iter().position(|b| b.name == name) {
            let text = reports::plan_explain(program, p, sim::BufferId::new(b));
            sections.push(if kernel.is_mixed() {
                format!("== {} ==\n\n{text}", config.core(program.core).name)
            } else {
                text
            });
        }
    }
    if !sections.is_empty() {
        return Ok(sections.join("\n"));
    }
    let names: Vec<&str> = kernel
        .parts
        .iter()
        .flat_map(|p| p.buffers.iter().map(|b| b.name.as_str()))
        .collect();
    let hint = sim::diag::did_you_mean(name, names.iter().copied())
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    Err(Exit::input(format!(
        "--explain {name}: {} has no buffer `{name}`{hint}",
        src.name
    )))
}

/// `plan --show-sync`: every part synchronised under its plan and printed as one `sync:
/// manual` kernel; what the pass could not overlap goes above it, as comments (a mixed
/// kernel's name their part).
fn synchronised_text(config: &Config, kernel: &Kernel, planned: &[planner::Planned]) -> String {
    let synced: Vec<planner::Synced> = kernel
        .parts
        .iter()
        .zip(planned)
        .map(|(program, p)| planner::synchronize(program, config, &p.plan))
        .collect();
    let parts: Vec<(&Program, &planner::Plan)> = synced
        .iter()
        .zip(planned)
        .map(|(s, p)| (&s.program, &p.plan))
        .collect();
    let mut text = reports::kernel_yaml(&parts, config);
    let notes: String = synced
        .iter()
        .enumerate()
        .flat_map(|(part, s)| {
            let prefix = part_prefix(config, kernel, part);
            s.serialised.iter().map(move |x| {
                format!(
                    "# warning: {prefix}multi-buffer `{}` is serialised: {}\n",
                    x.buffer, x.message
                )
            })
        })
        .collect();
    let at = text.find("\nkernel:").map_or(0, |i| i + 1);
    text.insert_str(at, &notes);
    text
}

fn run(
    input: &Input,
    args: &PlanArgs,
    run_args: &RunArgs,
    views: &ViewArgs,
    format: RunFormat,
    out: Option<&Path>,
) -> Result<(), Exit> {
    let config = input::load_config(&input.config).map_err(|r| r.report())?;
    let (kernel, src) = input::load_kernel(&input.program, &config, &input.params, input.blocks)
        .map_err(|r| r.report())?;
    let findings = kernel.findings.clone();
    let ran = run_loaded(&config, kernel, &src, args, run_args, views, format, out);
    kernel_findings_exit(&findings, &src, ran)
}

/// After a run (`ran`), the kernel's own findings ([`sim::Kernel::findings`]: ops the
/// hardware cannot run as written), one line each; the exit is 1 when there are any and the
/// run itself found nothing (it has said its own problems).
fn kernel_findings_exit(
    findings: &[Diagnostic],
    src: &input::Source,
    ran: Result<(), Exit>,
) -> Result<(), Exit> {
    match ran {
        Ok(()) | Err(Exit(1)) if !findings.is_empty() => {
            for d in findings {
                let hint = d.hint.as_ref().map(|h| format!(" (hint: {h})"));
                err_line!(
                    "finding: {}: {}{}",
                    d.location(),
                    d.message,
                    hint.unwrap_or_default()
                );
            }
            if ran.is_ok() {
                let n = findings.len();
                err_line!(
                    "error: {}: the run found {n} problem{}: the finding{} above",
                    src.name,
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "" } else { "s" }
                );
            }
            Err(Exit(1))
        }
        other => other,
    }
}

/// `run` on a loaded kernel.
#[allow(clippy::too_many_arguments)]
fn run_loaded(
    config: &Config,
    kernel: Kernel,
    src: &input::Source,
    args: &PlanArgs,
    run_args: &RunArgs,
    views: &ViewArgs,
    format: RunFormat,
    out: Option<&Path>,
) -> Result<(), Exit> {
    let (config, src) = (config.clone(), src.clone());
    let cores = sim::launch::slots(&kernel.parts.iter().collect::<Vec<_>>(), &config);
    let core = match &views.core {
        None => None,
        Some((b, t, i)) => Some(find_core(&config, &cores, *b, t, *i, &src)?),
    };
    let spec = html_spec(views, &cores, &config, &src)?;
    if cores.len() > 1 || kernel.is_mixed() {
        return run_launch(
            &config, &kernel, args, run_args, views, spec, core, format, out, &src,
        );
    }
    let mut opts = args.pipeline(run_args, VALIDATE);
    let unwatched = Views::unwatched(views);
    let plain = Views::plain(views);
    let best = if args.level == LevelArg::Best {
        let (sim, best) = best_level(&kernel, &config, &opts, &src)?;
        if unwatched {
            return report_run(&config, &sim, Some(&best), None, plain, format, out, &src);
        }
        // the views watch the chosen level's run, made again
        // (the one part's: --level best runs one program)
        opts.plan.max_level = sim.parts[0].planned.plan.level;
        Some(best)
    } else {
        None
    };
    let program = kernel
        .parts
        .into_iter()
        .next()
        .expect("a kernel has a part");
    if unwatched {
        // no observer beside the race checker (and the progress line on a terminal): the
        // run pays for nothing it does not show
        let mut progress = progress::RunProgress::on_terminal("run", opts.limits.max_instructions);
        let sim = pipeline::simulate_observed(&program, &config, &opts, &mut progress);
        // its line cleared before the report is written
        drop(progress);
        let sim = sim.map_err(|f| failed(&f, &program, &config, &src, ""))?;
        return report_run(&config, &sim, None, None, plain, format, out, &src);
    }
    let failed = |f: &Failure| failed(f, &program, &config, &src, "");
    let prepared = pipeline::prepare(&program, &config, &opts).map_err(|f| failed(&f))?;
    let mut file = views
        .trace
        .as_deref()
        .map(output::StreamFile::create)
        .transpose()?;
    let window = views.trace_window.unwrap_or(reports::TraceWindow::ALL);
    let max_bytes = views
        .trace_max_bytes
        .unwrap_or(reports::DEFAULT_TRACE_MAX_BYTES);
    // the views name the ops of the program that runs, which the run consumes: a copy
    let ran = prepared.program.clone();
    let watch = watch(views, &[&ran], &config, spec);
    let (sim, written, watch) = std::thread::scope(|scope| {
        // the trace is formatted and written on a thread of its own, beside the run
        let trace = file.as_mut().map(|f| {
            let part = reports::TracePart {
                original: &program,
                program: &ran,
                planned: &prepared.planned,
            };
            let t = reports::Trace::for_launch(&[part], &config, window, f.writer())
                .with_max_bytes(max_bytes);
            reports::Background::spawn(scope, t)
        });
        let progress = progress::RunProgress::on_terminal("run", opts.limits.max_instructions);
        let mut observers = (trace, (watch, progress));
        let sim = pipeline::run_prepared(prepared.into(), &config, &opts, &mut observers);
        let (trace, (watch, progress)) = observers;
        // its line cleared before the report is written
        drop(progress);
        let written = trace.map(|bg| {
            let t = bg.finish();
            let cut = t.stopped_at();
            t.finish().map(|_| cut)
        });
        (sim, written, watch)
    });
    let sim = sim.map_err(|f| failed(&f))?;
    commit_trace(written, file, views)?;
    let watched = Watched::of(watch, &[&ran], &sim.result);
    report_run(
        &config,
        &sim,
        best.as_ref(),
        watched.rows.as_deref(),
        watched.views(views),
        format,
        out,
        &src,
    )
}

/// What the HTML page's timeline keeps (`--html-window`, `--html-cores` resolved against the
/// launch's cores), or `None` without `--html`.
fn html_spec(
    views: &ViewArgs,
    cores: &[sim::launch::Slot],
    config: &Config,
    src: &input::Source,
) -> Result<Option<reports::TimelineSpec>, Exit> {
    if views.html.is_none() {
        return Ok(None);
    }
    let window = views.html_window.unwrap_or(reports::TraceWindow::ALL);
    let shown = match &views.html_cores {
        None => None,
        Some(list) => Some(
            select_cores(list, cores, config)
                .map_err(|e| Exit::input(format!("--html-cores {list}: {}: {e}", src.name)))?,
        ),
    };
    Ok(Some(reports::TimelineSpec {
        from: window.from,
        to: window.to,
        cores: shown,
        ..Default::default()
    }))
}

/// `--html-cores`: the launch's cores a list names (docs/cli.md): `all`, `TYPE`, `TYPE<B>` or
/// `TYPE<B>-<C>`, comma-separated; the indices in launch order. Every item that names nothing
/// is reported.
fn select_cores(
    list: &str,
    cores: &[sim::launch::Slot],
    config: &Config,
) -> Result<Vec<usize>, String> {
    let blocks = cores.last().map_or(0, |s| s.block + 1);
    let mut types: Vec<&str> = Vec::new();
    for s in cores {
        let t = config.core(s.core).name.as_str();
        if !types.contains(&t) {
            types.push(t);
        }
    }
    let mut chosen = vec![false; cores.len()];
    let mut problems = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item == "all" {
            chosen.iter_mut().for_each(|c| *c = true);
            continue;
        }
        // the longest core type the item starts with, then its blocks
        let Some(ty) = types
            .iter()
            .filter(|t| item.starts_with(**t))
            .max_by_key(|t| t.len())
        else {
            problems.push(format!(
                "`{item}` names no core type of the launch ({})",
                types.join(", ")
            ));
            continue;
        };
        let rest = &item[ty.len()..];
        let range = if rest.is_empty() {
            Some((0, blocks.saturating_sub(1)))
        } else {
            let (a, b) = rest.split_once('-').unwrap_or((rest, rest));
            match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if a <= b => Some((a, b)),
                _ => None,
            }
        };
        let Some((a, b)) = range else {
            problems.push(format!(
                "`{item}` is not TYPE, TYPE<B> or TYPE<B>-<C> (e.g. aiv0-3)"
            ));
            continue;
        };
        if b >= blocks {
            problems.push(format!(
                "`{item}`: the launch has blocks 0..{blocks} (0 to {})",
                blocks.saturating_sub(1)
            ));
            continue;
        }
        for (k, s) in cores.iter().enumerate() {
            if config.core(s.core).name == *ty && (a..=b).contains(&s.block) {
                chosen[k] = true;
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok((0..cores.len()).filter(|&k| chosen[k]).collect())
}

/// `--core B:TYPE:I`: the index of that core in the launch, or an error naming the range.
fn find_core(
    config: &Config,
    cores: &[sim::launch::Slot],
    block: u32,
    ty: &str,
    index: u32,
    src: &input::Source,
) -> Result<usize, Exit> {
    if let Some(k) = cores
        .iter()
        .position(|s| s.block == block && config.core(s.core).name == ty && s.index == index)
    {
        return Ok(k);
    }
    let blocks = cores.last().map_or(0, |s| s.block + 1);
    let mut types: Vec<String> = Vec::new();
    for s in cores {
        let per = cores
            .iter()
            .filter(|o| o.block == s.block && o.core == s.core)
            .count();
        let t = format!("{} (index 0..{per})", config.core(s.core).name);
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Err(Exit::input(format!(
        "--core {block}:{ty}:{index}: {} has no such core; its launch has blocks 0..{blocks} of {}",
        src.name,
        types.join(", ")
    )))
}

/// `run` of a launch of more than one core (many blocks, or a mixed kernel): every part
/// planned and synchronised on its own, all cores in one run. The trace has a process per
/// core, the profile sums over the cores, the HTML page has a lane group per shown core, and
/// `--level best` runs every level of the whole launch.
#[allow(clippy::too_many_arguments)]
fn run_launch(
    config: &Config,
    kernel: &sim::Kernel,
    args: &PlanArgs,
    run_args: &RunArgs,
    views: &ViewArgs,
    spec: Option<reports::TimelineSpec>,
    core: Option<usize>,
    format: RunFormat,
    out: Option<&Path>,
    src: &input::Source,
) -> Result<(), Exit> {
    let mut opts = args.pipeline(run_args, VALIDATE);
    let unwatched = Views::unwatched(views);
    let plain = Views::plain(views);
    let best = if args.level == LevelArg::Best {
        let (sim, best) = best_level(kernel, config, &opts, src)?;
        if unwatched {
            return report_launch(
                config,
                &sim,
                core,
                Some(&best),
                None,
                plain,
                format,
                out,
                src,
            );
        }
        // the views watch the chosen level's run, made again
        opts.plan.max_level = best.chosen;
        Some(best)
    } else {
        None
    };
    // a part that cannot be planned is reported against its own ops
    let prepared = pipeline::prepare_kernel(kernel, config, &opts)
        .map_err(|e| part_failed(&e, kernel, config, src, ""))?;
    let failed = |f: &Failure| failed(f, kernel.first(), config, src, "");
    if unwatched {
        // no observer beside the race checker (and the progress line on a terminal): the run
        // pays for nothing it does not show
        let mut progress = progress::RunProgress::on_terminal("run", opts.limits.max_instructions);
        let sim = pipeline::run_prepared(prepared, config, &opts, &mut progress);
        // its line cleared before the report is written
        drop(progress);
        let sim = sim.map_err(|f| failed(&f))?;
        return report_launch(config, &sim, core, None, None, plain, format, out, src);
    }
    let mut file = views
        .trace
        .as_deref()
        .map(output::StreamFile::create)
        .transpose()?;
    let window = views.trace_window.unwrap_or(reports::TraceWindow::ALL);
    let max_bytes = views
        .trace_max_bytes
        .unwrap_or(reports::DEFAULT_TRACE_MAX_BYTES);
    // the views name the ops of the programs that run, which the run consumes: copies
    let ran: Vec<Program> = prepared.parts.iter().map(|p| p.program.clone()).collect();
    let ran_parts: Vec<&Program> = ran.iter().collect();
    let watch = watch(views, &ran_parts, config, spec);
    let (sim, written, watch) = std::thread::scope(|scope| {
        // the trace is formatted and written on a thread of its own, beside the run
        let trace = file.as_mut().map(|f| {
            let parts: Vec<reports::TracePart> = kernel
                .parts
                .iter()
                .zip(&ran)
                .zip(&prepared.parts)
                .map(|((original, program), p)| reports::TracePart {
                    original: p.planned_program.as_ref().unwrap_or(original),
                    program,
                    planned: &p.planned,
                })
                .collect();
            let t = reports::Trace::for_launch(&parts, config, window, f.writer())
                .with_max_bytes(max_bytes);
            reports::Background::spawn(scope, t)
        });
        let progress = progress::RunProgress::on_terminal("run", opts.limits.max_instructions);
        let mut observers = (trace, (watch, progress));
        let sim = pipeline::run_prepared(prepared, config, &opts, &mut observers);
        let (trace, (watch, progress)) = observers;
        // its line cleared before the report is written
        drop(progress);
        let written = trace.map(|bg| {
            let t = bg.finish();
            let cut = t.stopped_at();
            t.finish().map(|_| cut)
        });
        (sim, written, watch)
    });
    let sim = sim.map_err(|f| failed(&f))?;
    commit_trace(written, file, views)?;
    let watched = Watched::of(watch, &ran_parts, &sim.result);
    report_launch(
        config,
        &sim,
        core,
        best.as_ref(),
        watched.rows.as_deref(),
        watched.views(views),
        format,
        out,
        src,
    )
}

/// Prints a launch's report (with `--core`'s detail, `--level best`'s levels and the profile
/// rows, if any), writes its HTML page when asked, and prints its problems.
#[allow(clippy::too_many_arguments)]
fn report_launch(
    config: &Config,
    sim: &Simulation,
    core: Option<usize>,
    best: Option<&reports::BestLevel>,
    profile: Option<&[reports::ProfileRow]>,
    views: Views<'_>,
    format: RunFormat,
    out: Option<&Path>,
    src: &input::Source,
) -> Result<(), Exit> {
    let mut report: reports::Run = sim.into();
    report.core = core;
    report.best = best;
    report.profile = profile;
    report.critical = views.critical;
    report.roofline = views.roofline;
    let page = views.args.html.as_ref().map(|_| {
        let table = profile.map(reports::profile_html);
        reports::run_html(config, &report, views.timeline, table.as_deref())
    });
    output::emit(out, &format.render(config, &report))?;
    if let (Some(path), Some(page)) = (views.args.html.as_deref(), &page) {
        output::emit(Some(path), page)?;
    }
    problems_exit(config, sim, src)
}

/// Puts the trace file in place once its writer finished without an error (a failed write
/// leaves no file: [`output::StreamFile`] is written beside it and renamed).
/// A trace cut at `--trace-max-bytes` is still put in place (a valid trace of the cycles
/// before the cut), with a warning that says how to see the rest; the exit code stays.
fn commit_trace(
    written: Option<std::io::Result<Option<reports::TraceCut>>>,
    file: Option<output::StreamFile>,
    views: &ViewArgs,
) -> Result<(), Exit> {
    let path = || {
        views
            .trace
            .as_deref()
            .expect("a trace has a file")
            .display()
    };
    let cut = match written {
        Some(Err(e)) => return Err(Exit::input(format!("cannot write {}: {e}", path()))),
        Some(Ok(cut)) => cut,
        None => None,
    };
    if let Some(f) = file {
        f.commit()?;
    }
    if let Some(cut) = cut {
        let c = cut.cycle;
        err_line!(
            "warning: the trace reached --trace-max-bytes ({} bytes) at cycle {c}: {} holds the events that start by then; trace a part with --trace-window A:B (e.g. --trace-window {c}:{}), or raise --trace-max-bytes",
            cut.max_bytes,
            path(),
            c.saturating_mul(2).max(c + 1),
        );
    }
    Ok(())
}

/// Prints a run's dropped work (warnings: the exit code stays) and its problems; exit 1 when
/// there are problems.
fn problems_exit(config: &Config, sim: &Simulation, src: &input::Source) -> Result<(), Exit> {
    for d in dropped_work(sim, src) {
        err_line!("{d}");
    }
    let n = report_problems(config, sim, "");
    if n > 0 {
        err_line!(
            "error: {}: the run found {n} problem{}; see the report",
            src.name,
            if n == 1 { "" } else { "s" }
        );
        return Err(Exit(1));
    }
    Ok(())
}

/// What `run` writes besides its report.
#[derive(Clone, Copy)]
struct Views<'a> {
    args: &'a ViewArgs,
    timeline: Option<&'a reports::Timeline>,
    /// The critical path walked after the run: its "paced by" line, or with
    /// `--critical-path` all of it.
    critical: reports::PathView<'a>,
    /// `--roofline`'s, counted during the run.
    roofline: Option<&'a reports::RooflineReport>,
}

impl<'a> Views<'a> {
    /// Whether nothing but the report watches the run (no trace, profile, page, roofline or
    /// critical path, not even its "paced by" line): then the run pays for no observer.
    fn unwatched(args: &ViewArgs) -> bool {
        args.trace.is_none()
            && !args.profile
            && args.html.is_none()
            && !args.roofline
            && args.no_critical_path
    }

    /// The views of a run nothing watched.
    fn plain(args: &'a ViewArgs) -> Views<'a> {
        Views {
            args,
            timeline: None,
            critical: reports::PathView::Off,
            roofline: None,
        }
    }
}

/// The observers `run`'s views ask for, beside the trace and the progress line: the profile,
/// the HTML page's timeline (its memory bounded), the critical path's walker and the roofline,
/// called in that order.
type Watch<'a> = (
    Option<reports::Profiler>,
    (
        Option<reports::Timeline>,
        (
            Option<sim::critical::Critical>,
            Option<reports::Roofline<'a>>,
        ),
    ),
);

/// The [`Watch`] of a run of `parts` (the programs that run, whose ops the views name).
fn watch<'a>(
    views: &ViewArgs,
    parts: &[&'a Program],
    config: &'a Config,
    spec: Option<reports::TimelineSpec>,
) -> Watch<'a> {
    let profiler = views
        .profile
        .then(|| reports::Profiler::for_launch(parts, config));
    let timeline = spec.map(|spec| reports::Timeline::for_launch(parts, config, spec));
    let critical = walker(views, parts, config);
    let roofline = views
        .roofline
        .then(|| reports::Roofline::for_launch(parts, config));
    (profiler, (timeline, (critical, roofline)))
}

/// What a [`Watch`] saw, once the run ended.
struct Watched {
    rows: Option<Vec<reports::ProfileRow>>,
    timeline: Option<reports::Timeline>,
    /// The walker's path ([`path_view`]).
    critical: Option<Option<sim::critical::CriticalPath>>,
    roofline: Option<reports::RooflineReport>,
}

impl Watched {
    fn of(watch: Watch<'_>, parts: &[&Program], result: &sim::engine::RunResult) -> Watched {
        let (profiler, (timeline, (critical, roofline))) = watch;
        Watched {
            rows: profiler.map(|p| p.rows(parts)),
            timeline,
            critical: critical.map(|c| c.finish(result)),
            roofline: roofline.map(|r| r.finish(result)),
        }
    }

    /// The views of the report, `args` being the command line's.
    fn views<'a>(&'a self, args: &'a ViewArgs) -> Views<'a> {
        Views {
            args,
            timeline: self.timeline.as_ref(),
            critical: path_view(args, &self.critical),
            roofline: self.roofline.as_ref(),
        }
    }
}

/// The records the default walker keeps (at most about 150 MB): the "paced by" line of a run
/// without `--critical-path`, which past them says the path was not followed
/// (docs/decisions.md, "The paced-by line by default").
const PACED_BY_BUDGET: u64 = 2_000_000;

/// The critical path's walker of a run of `parts`: unbounded with `--critical-path`, on
/// [`PACED_BY_BUDGET`] for the default "paced by" line, none with `--no-critical-path`.
fn walker(args: &ViewArgs, parts: &[&Program], config: &Config) -> Option<sim::critical::Critical> {
    let c = sim::critical::Critical::for_launch(parts, config);
    if args.critical_path {
        Some(c)
    } else if args.no_critical_path {
        None
    } else {
        Some(c.with_budget(PACED_BY_BUDGET))
    }
}

/// What the report shows of the path `walked` ([`walker`]; `Some(None)`: it gave up).
fn path_view<'a>(
    args: &ViewArgs,
    walked: &'a Option<Option<sim::critical::CriticalPath>>,
) -> reports::PathView<'a> {
    match walked {
        None => reports::PathView::Off,
        Some(None) => reports::PathView::TooLong(PACED_BY_BUDGET),
        Some(Some(p)) if args.critical_path => reports::PathView::Full(p),
        Some(Some(p)) => reports::PathView::Line(p),
    }
}

/// Prints a run's report (with the profile rows, if any), writes its HTML page when asked,
/// and prints its problems.
#[allow(clippy::too_many_arguments)]
fn report_run(
    config: &Config,
    sim: &Simulation,
    best: Option<&reports::BestLevel>,
    profile: Option<&[reports::ProfileRow]>,
    views: Views<'_>,
    format: RunFormat,
    out: Option<&Path>,
    src: &input::Source,
) -> Result<(), Exit> {
    let mut report: reports::Run = sim.into();
    report.best = best;
    report.profile = profile;
    report.critical = views.critical;
    report.roofline = views.roofline;
    let page = views.args.html.as_ref().map(|_| {
        let table = profile.map(reports::profile_html);
        reports::run_html(config, &report, views.timeline, table.as_deref())
    });
    output::emit(out, &format.render(config, &report))?;
    if let (Some(path), Some(page)) = (views.args.html.as_deref(), &page) {
        output::emit(Some(path), page)?;
    }
    problems_exit(config, sim, src)
}

/// `run --level best`: every level of the whole kernel (every part at that level, all cores
/// in one run), the fastest kept (the highest among equals). Fails like a single run when no
/// level fits (with level 0's overflow) or a level fails otherwise.
fn best_level(
    kernel: &Kernel,
    config: &Config,
    opts: &pipeline::Options,
    src: &input::Source,
) -> Result<(Simulation, reports::BestLevel), Exit> {
    let levels = pipeline::compare_kernel(kernel, config, &[2, 1, 0], opts)
        .map_err(|e| part_failed(&e, kernel, config, src, ""))?;
    let mut tried = Vec::new();
    let mut best: Option<(u8, Box<Simulation>)> = None;
    let mut last_overflow = None;
    for l in levels {
        match l.outcome {
            pipeline::LevelOutcome::Ran(sim) => {
                tried.push((l.level, Ok(sim.result.total_cycles)));
                let faster = match &best {
                    Some((_, b)) => sim.result.total_cycles < b.result.total_cycles,
                    None => true,
                };
                if faster {
                    best = Some((l.level, sim));
                }
            }
            pipeline::LevelOutcome::Overflow(e) => {
                let part = part_prefix(config, kernel, l.part);
                tried.push((l.level, Err(format!("{part}{e}"))));
                last_overflow = Some((l.part, e));
            }
        }
    }
    match best {
        Some((chosen, sim)) => Ok((
            *sim,
            reports::BestLevel {
                chosen,
                levels: tried,
            },
        )),
        None => {
            let (part, e) = last_overflow.expect("every level ran or overflowed");
            Err(part_failed(
                &pipeline::PartFailure {
                    part,
                    failure: pipeline::Failure::Overflow(e),
                },
                kernel,
                config,
                src,
                "level 0: ",
            ))
        }
    }
}

/// The work a run dropped, one warning per tensor and kind, located at the tensor's declaration
/// (`FILE:LINE:COL: warning: gm.y: gm tensor `y` ... is stored to, but ...`).
fn dropped_work(sim: &Simulation, src: &input::Source) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = sim
        .dropped
        .iter()
        .map(|g| {
            // the parts share their gm tensors (one table, the same ids): any part names them
            let program = &sim.parts[0].program;
            let w = reports::Warning::dropped(program, g);
            let mut d = Diagnostic::error(
                &src.name,
                &program.tensor(g.tensor).path,
                format!("[{}] {}", w.kind, w.message),
            );
            d.severity = sim::diag::Severity::Warning;
            d
        })
        .collect();
    sim::load::locate(&src.text, &mut out);
    out
}

/// Prints a run's hazards, sync findings and deadlock on stderr, each line prefixed with
/// `context` after its kind (`hazard: level 0: ...`), and returns how many there were. In a
/// launch of more than one core, a finding and a waiter name their core (`block 1 aiv 0: `)
/// and the op of that core's part.
pub fn report_problems(config: &Config, sim: &Simulation, context: &str) -> usize {
    let lines = problem_lines(config, sim, context);
    for line in &lines {
        err_line!("{line}");
    }
    lines.len()
}

/// The lines [`report_problems`] prints, one entry per problem (a sweep records them as a
/// point's message); a hazard with a suggested fix has it on a `fix:` line under it.
pub fn problem_lines(config: &Config, sim: &Simulation, context: &str) -> Vec<String> {
    let result = &sim.result;
    let who = |core: u32| match result.cores.get(core as usize) {
        Some(c) if result.cores.len() > 1 => format!("{}: ", reports::core_name(config, c)),
        _ => String::new(),
    };
    let hazards = sim.hazards.as_deref().unwrap_or_default();
    let mut lines: Vec<String> = hazards
        .iter()
        .map(|h| match &h.fix {
            // what would order it, on a line of its own under it
            Some(fix) => format!("hazard: {context}{h}\nfix: {context}{fix}"),
            None => format!("hazard: {context}{h}"),
        })
        .collect();
    for f in &result.findings {
        // the op is in the program of the core that made it (a cross-core set: maybe the other
        // part's)
        let program = sim.program_of(config, f.op_core() as usize);
        lines.push(format!(
            "finding: {context}{}{}",
            who(f.core()),
            reports::finding_text(program, f)
        ));
    }
    if let Some(stopped) = &result.stopped {
        lines.push(format!("finding: {context}{stopped}"));
    }
    if let Some(d) = &result.deadlock {
        let waiters: Vec<String> = d
            .waiters
            .iter()
            .map(|w| {
                let program = sim.program_of(config, w.core as usize);
                format!(
                    "{}{} waits on {} ({})",
                    who(w.core),
                    w.pipe,
                    w.on,
                    reports::op_ref(program, w.op)
                )
            })
            .collect();
        lines.push(format!(
            "finding: {context}deadlock at cycle {}: {}",
            d.cycle,
            waiters.join("; ")
        ));
    }
    lines
}

/// A run error is bad input: report it like a load error, located in the program.
fn run_failed(e: &RunError, src: &input::Source) -> Exit {
    err_line!("error: {}: the run stopped", src.name);
    err_text!(
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

/// `configs --show NAME`: the built-in config's YAML, byte for byte, so that a copy loads with
/// `--config FILE` exactly as the built-in does.
fn show_config(name: &str) -> Result<(), Exit> {
    match sim::builtin::builtin(name) {
        Some(text) => output::emit(None, text),
        None => {
            let names: Vec<&str> = sim::builtin::BUILTIN.iter().map(|(n, _)| *n).collect();
            let hint = sim::diag::did_you_mean(name, names.iter().copied())
                .map(|s| format!(" (hint: did you mean `{s}`?)"))
                .unwrap_or_default();
            Err(Exit::input(format!(
                "configs --show {name}: no built-in config `{name}`; the built-in configs are {}{hint}",
                names.join(", ")
            )))
        }
    }
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

    #[test]
    fn html_cores_name_types_blocks_and_ranges() {
        let config = sim::load_config(
            sim::builtin::builtin(sim::builtin::DEFAULT).unwrap(),
            "<built-in>",
        )
        .unwrap();
        let text = "kernel: k\nlaunch: { blocks: 4 }\naic:\n  body:\n    - scalar: { cycles: 1 }\naiv:\n  body:\n    - scalar: { cycles: 1 }\n";
        let kernel = sim::load_kernel(text, "k.yaml", &config, &[], None).unwrap();
        let parts: Vec<&Program> = kernel.parts.iter().collect();
        let slots = sim::launch::slots(&parts, &config);
        // (block, type) of each chosen core, in launch order
        let pick = |list: &str| -> Vec<(u32, String)> {
            select_cores(list, &slots, &config)
                .unwrap()
                .into_iter()
                .map(|k| (slots[k].block, config.core(slots[k].core).name.clone()))
                .collect()
        };
        let cores = |v: &[(u32, &str)]| -> Vec<(u32, String)> {
            v.iter().map(|(b, t)| (*b, t.to_string())).collect()
        };
        assert_eq!(pick("aic0"), cores(&[(0, "aic")]));
        assert_eq!(
            pick("aiv1-2, aic3"),
            cores(&[(1, "aiv"), (1, "aiv"), (2, "aiv"), (2, "aiv"), (3, "aic")])
        );
        assert_eq!(pick("aic").len(), 4);
        assert_eq!(pick("all").len(), slots.len());
        // listed twice: once
        assert_eq!(pick("aic0,aic0-1").len(), 2);
        // every bad item at once
        let e = select_cores("aix,aiv4,aiv2-1,aic-", &slots, &config).unwrap_err();
        assert_eq!(
            e,
            "`aix` names no core type of the launch (aic, aiv); \
             `aiv4`: the launch has blocks 0..4 (0 to 3); \
             `aiv2-1` is not TYPE, TYPE<B> or TYPE<B>-<C> (e.g. aiv0-3); \
             `aic-` is not TYPE, TYPE<B> or TYPE<B>-<C> (e.g. aiv0-3)"
        );
    }
}
