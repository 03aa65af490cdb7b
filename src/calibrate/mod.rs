//! `npusim calibrate` (docs/cli.md, "npusim calibrate"; docs/calibration.md): a measurements
//! file's cases run against the simulator.
//!
//! `--check` runs every case (on `-j` workers) and compares each simulated value with the
//! measured one: exit 0 when every judged case is within its tolerance, 1 otherwise. `--fit`
//! fits named config numbers to the measurements ([`fit`]) and writes the config with them.
//!
//! The measurements file and every program and config it names are read and checked before
//! anything runs (bad input: exit 2, every problem reported at its place), as `sweep` does.

mod fit;
pub mod keys;
mod run;
mod spec;

use crate::cli::{CalibrateArgs, RunFormat};
use crate::input::{self, Source};
use crate::{output, Exit};
use run::{BusyAt, RunValue};
use sim::{Config, Diagnostic, LoadError};
use spec::{Measurements, What};
use std::path::{Path, PathBuf};

/// What every case reads: the measurements, each run case's program text and config, and
/// where each busy share is taken.
pub struct Inputs {
    pub file: Source,
    pub measurements: Measurements,
    /// Per case: its program (`None` for a derived case).
    pub programs: Vec<Option<Source>>,
    /// Per case: the index of its config in `configs` (0, the command's, for a derived case).
    pub config_of: Vec<usize>,
    /// The command's `--config` first, then every other config a case names, once each.
    pub configs: Vec<LoadedConfig>,
    /// Per case: for each of its busy entries, the cores and pipe it is read from.
    pub busy: Vec<Vec<BusyAt>>,
}

pub struct LoadedConfig {
    /// As written (`ascend910b`, `my.yaml`).
    pub label: String,
    pub source: Source,
    pub config: Config,
}

pub fn calibrate(args: &CalibrateArgs) -> Result<(), Exit> {
    let inputs = load(&args.file, &args.config)?;
    let mut read = vec![("the measurements file".to_string(), args.file.as_path())];
    for p in inputs.programs.iter().flatten() {
        read.extend(p.file().map(|f| ("the program".to_string(), f)));
    }
    for c in &inputs.configs {
        read.extend(c.source.file().map(|f| ("the config".to_string(), f)));
    }
    let written = crate::given(&[("-o", &args.output), ("--html", &args.html)]);
    output::refuse_clashes(&read, &written)?;
    match &args.fit {
        Some(keys) => fit::fit(&inputs, keys, args),
        None => check(&inputs, args),
    }
}

/// `--check`: every case run, the report written, exit 1 unless every judged case is within
/// its tolerance.
fn check(inputs: &Inputs, args: &CalibrateArgs) -> Result<(), Exit> {
    let cases = &inputs.measurements.cases;
    let runs: Vec<usize> = (0..cases.len())
        .filter(|&i| cases[i].run().is_some())
        .collect();
    let configs: Vec<&Config> = inputs
        .config_of
        .iter()
        .map(|&c| &inputs.configs[c].config)
        .collect();
    let jobs = jobs(args.jobs, runs.len());
    let mut progress = crate::progress::Progress::new(
        "calibrate",
        "run",
        runs.len() as u64,
        args.output.is_none(),
    );
    let values = run::run_cases(
        inputs,
        &runs,
        &configs,
        &args.checks,
        jobs,
        Some(&mut progress),
    );
    progress.finish(jobs);
    let mut by_case: Vec<Option<RunValue>> = vec![None; cases.len()];
    for (i, v) in runs.into_iter().zip(values) {
        by_case[i] = Some(v);
    }
    let cal = report(inputs, &by_case, !args.checks.no_race_check);
    let text = match args.format {
        RunFormat::Text => reports::calibration_text(&cal),
        RunFormat::Json => crate::pretty(&reports::calibration_json(&cal)),
    };
    let page = args.html.as_ref().map(|_| reports::calibration_html(&cal));
    output::emit(args.output.as_deref(), &text)?;
    if let (Some(path), Some(page)) = (args.html.as_deref(), &page) {
        output::emit(Some(path), page)?;
    }
    let s = cal.summary();
    if s.all_within {
        Ok(())
    } else {
        err_line!(
            "error: {}: {} of {} judged case{} outside {} tolerance{}{}",
            inputs.file.name,
            s.outside + s.failed,
            s.judged,
            if s.judged == 1 { "" } else { "s" },
            if s.judged == 1 { "its" } else { "their" },
            match s.busy_judged - s.busy_within {
                0 => String::new(),
                n => format!(", {n} busy share{} outside", if n == 1 { "" } else { "s" }),
            },
            if args.output.is_some() {
                "; see the report"
            } else {
                ""
            }
        );
        Err(Exit(1))
    }
}

/// Workers: `-j`, or every core; never more than there are runs.
fn jobs(arg: Option<u32>, runs: usize) -> usize {
    let jobs = arg.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    jobs.clamp(1, runs.max(1))
}

/// The report of a calibration whose run cases gave `values` (by case index).
fn report(inputs: &Inputs, values: &[Option<RunValue>], race_check: bool) -> reports::Calibration {
    let cases = &inputs.measurements.cases;
    let derived = run::derive(cases, values);
    let out = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let kind = match &c.what {
                What::Run(r) => reports::CaseKind::Run {
                    program: r.program.clone(),
                    params: r.params.clone(),
                    blocks: r.blocks,
                    config: inputs.configs[inputs.config_of[i]].label.clone(),
                    l2: r.l2.name().into(),
                },
                What::Derived {
                    minuend,
                    subtrahend,
                    divide_by,
                } => reports::CaseKind::Derived {
                    minuend: cases[*minuend].name.clone(),
                    subtrahend: cases[*subtrahend].name.clone(),
                    divide_by: *divide_by,
                },
            };
            let outcome = match (&values[i], &derived[i]) {
                (
                    Some(RunValue::Ran {
                        us,
                        cycles,
                        hazards,
                        ..
                    }),
                    _,
                ) => reports::Outcome::Ran {
                    us: *us,
                    cycles: Some(*cycles),
                    hazards: *hazards,
                },
                (_, Ok(us)) => reports::Outcome::Ran {
                    us: *us,
                    cycles: None,
                    hazards: None,
                },
                (_, Err(m)) => reports::Outcome::Failed(m.clone()),
            };
            let shares = match &values[i] {
                Some(RunValue::Ran { busy, .. }) => busy.iter().map(|b| Some(*b)).collect(),
                _ => vec![None; c.busy.len()],
            };
            let busy = c
                .busy
                .iter()
                .zip(&inputs.busy[i])
                .zip(shares)
                .map(|((b, at), simulated)| reports::BusyReport {
                    core: at.core.clone(),
                    pipe: at.pipe.report_name().into(),
                    measured_percent: b.percent,
                    simulated_percent: simulated,
                    tolerance_points: b.tolerance_points,
                })
                .collect();
            reports::CaseReport {
                name: c.name.clone(),
                kind,
                source: c.source.clone(),
                measured_us: c.measured_us,
                measured_from_cases: c.measured_from_cases,
                judged: c.judged,
                tolerance_percent: c.tolerance_percent,
                outcome,
                busy,
            }
        })
        .collect();
    reports::Calibration {
        file: inputs.file.name.clone(),
        config: inputs.configs[0].label.clone(),
        race_check,
        cases: out,
    }
}

/// Reads the measurements file and every program and config it names, and checks them (every
/// problem reported before stopping: exit 2). `config` is the command's `--config`.
pub fn load(path: &Path, config: &str) -> Result<Inputs, Exit> {
    let file = input::read(path, "measurements").map_err(|r| r.report())?;
    let measurements = sim::load::read_document(&file.text, &file.name, spec::read)
        .map_err(|e| input::report_load_error(&e, &[&file]))?;
    // the command's config first: a problem with it is the command's, not the file's
    let default = input::load_config(config).map_err(|r| r.report())?;
    let mut configs = vec![LoadedConfig {
        label: config.to_string(),
        source: input::config_source(config).map_err(|r| r.report())?,
        config: default,
    }];
    // relative paths are the measurements file's directory's: it runs the same from anywhere
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut here: Vec<Diagnostic> = Vec::new();
    let mut elsewhere: Vec<Diagnostic> = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let at = |path: String, message: String, hint: Option<String>| {
        let mut d = Diagnostic::error(&file.name, &path, message);
        d.hint = hint;
        d
    };
    let cases = &measurements.cases;
    let mut programs: Vec<Option<Source>> = vec![None; cases.len()];
    let mut config_of = vec![0usize; cases.len()];
    let mut busy: Vec<Vec<BusyAt>> = vec![Vec::new(); cases.len()];
    let mut read_programs: Vec<(PathBuf, Source)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let Some(run) = case.run() else { continue };
        let p = case.path();
        if let Some(c) = &run.config {
            match configs.iter().position(|l| &l.label == c) {
                Some(k) => config_of[i] = k,
                None => match input::config_source_in(c, &dir) {
                    Ok(source) => match sim::load_config(&source.text, &source.name) {
                        Ok(config) => {
                            config_of[i] = configs.len();
                            configs.push(LoadedConfig {
                                label: c.clone(),
                                source,
                                config,
                            });
                        }
                        Err(e) => {
                            elsewhere.extend(e.diagnostics);
                            sources.push(source);
                            continue;
                        }
                    },
                    Err(rejected) => {
                        for d in rejected.diagnostics() {
                            let hint = d.hint.or_else(|| {
                                Some(format!(
                                    "a config is a built-in name or a file relative to the measurements file's directory ({})",
                                    shown_dir(&dir)
                                ))
                            });
                            here.push(at(format!("{p}.config"), d.message, hint));
                        }
                        continue;
                    }
                },
            }
        }
        let resolved = dir.join(&run.program);
        let src = match read_programs.iter().find(|(p, _)| *p == resolved) {
            Some((_, s)) => s.clone(),
            None => match input::read_text(&resolved) {
                Ok(text) => {
                    let s = Source {
                        name: resolved.display().to_string(),
                        text,
                    };
                    read_programs.push((resolved.clone(), s.clone()));
                    s
                }
                Err(e) => {
                    here.push(at(
                        format!("{p}.program"),
                        e.describe(&resolved.display().to_string(), "program"),
                        Some(format!(
                            "a program's path is relative to the measurements file's directory ({})",
                            shown_dir(&dir)
                        )),
                    ));
                    continue;
                }
            },
        };
        let config = &configs[config_of[i]].config;
        // the case's params against the program's: a param it lacks is the case's mistake,
        // said at the case (the program alone is checked by loading it as written)
        match sim::load_kernel(&src.text, &src.name, config, &[], None) {
            Ok(plain) => {
                let declared: Vec<&str> = plain
                    .first()
                    .params
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect();
                let mut unknown = false;
                for (name, _) in &run.params {
                    if !declared.contains(&name.as_str()) {
                        unknown = true;
                        let hint = sim::diag::did_you_mean(name, declared.iter().copied())
                            .map(|d| format!("did you mean `{d}`?"))
                            .unwrap_or_else(|| match declared[..] {
                                [] => "the program declares no params".into(),
                                _ => format!("the program declares {}", declared.join(", ")),
                            });
                        here.push(at(
                            format!("{p}.params.{name}"),
                            format!("{} declares no param `{name}`", run.program),
                            Some(hint),
                        ));
                    }
                }
                if unknown {
                    programs[i] = Some(src);
                    continue;
                }
            }
            Err(e) => {
                for d in e.diagnostics {
                    if !elsewhere.contains(&d) {
                        elsewhere.push(d);
                    }
                }
                if !sources.iter().any(|s| s.name == src.name) {
                    sources.push(src.clone());
                }
                programs[i] = Some(src);
                continue;
            }
        }
        match sim::load_kernel(&src.text, &src.name, config, &run.params, run.blocks) {
            Ok(kernel) => {
                busy[i] = case
                    .busy
                    .iter()
                    .filter_map(|b| match busy_at(b, &kernel, config) {
                        Ok(at) => Some(at),
                        Err((message, hint)) => {
                            here.push(at(format!("{p}.busy.{}", b.key), message, Some(hint)));
                            None
                        }
                    })
                    .collect();
            }
            Err(e) => {
                // blocks out of range is the case's; what its params do to the program (a
                // shape that no longer fits) is said in the program, naming the case
                let mut in_program = false;
                for mut d in e.diagnostics {
                    if d.path == "--blocks" {
                        here.push(at(format!("{p}.blocks"), d.message, d.hint));
                        continue;
                    }
                    in_program = true;
                    d.message = format!("{} (with the params of case {})", d.message, case.name);
                    if !elsewhere.contains(&d) {
                        elsewhere.push(d);
                    }
                }
                if !in_program {
                    programs[i] = Some(src);
                    continue;
                }
                if !sources.iter().any(|s| s.name == src.name) {
                    sources.push(src.clone());
                }
            }
        }
        programs[i] = Some(src);
    }
    if !here.is_empty() || !elsewhere.is_empty() {
        sim::load::locate(&file.text, &mut here);
        here.extend(elsewhere);
        let mut all: Vec<&Source> = vec![&file];
        all.extend(&sources);
        return Err(input::report_load_error(
            &LoadError { diagnostics: here },
            &all,
        ));
    }
    Ok(Inputs {
        file,
        measurements,
        programs,
        config_of,
        configs,
        busy,
    })
}

fn shown_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".into()
    } else {
        dir.display().to_string()
    }
}

/// The cores and pipe a busy entry reads: its core (a part of the kernel) and pipe, or the
/// one part whose core has the pipe. Else a message and a hint.
fn busy_at(
    b: &spec::Busy,
    kernel: &sim::Kernel,
    config: &Config,
) -> Result<BusyAt, (String, String)> {
    let cores: Vec<&sim::config::CoreConfig> =
        kernel.parts.iter().map(|p| config.core(p.core)).collect();
    let names: Vec<&str> = cores.iter().map(|c| c.name.as_str()).collect();
    let pipe = b.pipe;
    match &b.core {
        Some(name) => {
            let Some(core) = cores.iter().find(|c| &c.name == name) else {
                return Err((
                    format!("the kernel runs on no core `{name}`"),
                    format!("its cores are {}", names.join(", ")),
                ));
            };
            if !core.pipes.contains(&pipe) {
                return Err((
                    format!("core {name} has no pipe {}", pipe.yaml_name()),
                    format!(
                        "its pipes are {}",
                        core.pipes
                            .iter()
                            .map(|p| p.yaml_name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            Ok(BusyAt {
                core: name.clone(),
                pipe,
            })
        }
        None => {
            let with: Vec<&str> = cores
                .iter()
                .filter(|c| c.pipes.contains(&pipe))
                .map(|c| c.name.as_str())
                .collect();
            match with[..] {
                [one] => Ok(BusyAt {
                    core: one.to_string(),
                    pipe,
                }),
                [] => Err((
                    format!("no core of the kernel has pipe {}", pipe.yaml_name()),
                    format!("the kernel runs on {}", names.join(", ")),
                )),
                _ => Err((
                    format!(
                        "pipe {} is on more than one core of the kernel ({})",
                        pipe.yaml_name(),
                        with.join(", ")
                    ),
                    format!(
                        "name the core: {}",
                        with.iter()
                            .map(|c| format!("{c}.{}", pipe.yaml_name()))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                )),
            }
        }
    }
}
