//! `npusim sweep` (docs/cli.md, "npusim sweep"): every point of a sweep file's grid planned,
//! synchronised and run through the pipeline library, on N workers, one CSV row (or JSON
//! line) per point in the grid's order; the points of one shard of it (`--shard K/N`, or the
//! array variables of Slurm, Kubernetes or HyperQueue); the shards merged back (`--merge`);
//! and a summary of the results (`--summary`, with an HTML plot).
//!
//! The sweep file and every program and config it names are read and checked before the
//! first point runs (bad input: exit 2, every problem reported at its place). A point that
//! fails after that is recorded, with its status and message, and the sweep goes on: a sweep
//! that ran exits 0.

mod merge;
mod point;
mod runner;
mod shard;
mod spec;
mod summary;
mod table;

use crate::cli::{SweepArgs, SweepFormat};
use crate::input::{self, Source};
use crate::{output, Exit};
use sim::{Config, Diagnostic, LoadError, Pipe, Space};
use spec::{Fnv, Grid, PairInfo, SweepFile};
use std::io::Write;
use std::path::Path;
use table::Columns;

/// What every point of a sweep reads: the sweep file, its programs and configs (read and
/// checked once), the grid and the CSV's columns.
pub struct Inputs {
    pub grid: Grid,
    /// Each program's text, named by its path (resolved against the sweep file's directory).
    pub programs: Vec<Source>,
    pub configs: Vec<LoadedConfig>,
    pub columns: Columns,
    /// Identifies the sweep in its parts (`--shard`): the same inputs and options give the
    /// same fingerprint on every machine.
    pub fingerprint: String,
}

pub struct LoadedConfig {
    pub source: Source,
    pub config: Config,
}

/// The first line of a part (the output of one shard), which `--merge` reads:
/// `#npusim-sweep-part format=csv shard=K/N points=P sweep=FINGERPRINT`.
pub const PART_TAG: &str = "#npusim-sweep-part";

pub fn sweep(args: &SweepArgs) -> Result<(), Exit> {
    if !args.merge.is_empty() {
        return merge::merge(&args.merge, args.output.as_deref());
    }
    if let Some(results) = &args.summary {
        return summary::summary(&summary::SummaryArgs {
            results,
            html: args.html.as_deref(),
            x: args.x.as_deref(),
            by: args.by.as_deref(),
        });
    }
    let file = args
        .file
        .as_deref()
        .expect("clap requires a sweep file, --merge or --summary");
    let shard = shard::resolve(args.shard, args.shards, &|var| std::env::var_os(var))
        .map_err(Exit::input)?;
    let shared = point::Shared {
        checks: args.checks.clone(),
        liveness: args.liveness,
        placement: args.placement,
    };
    let inputs = load(file, &shared)?;
    let mut read = vec![("the sweep file".to_string(), file)];
    for p in &inputs.programs {
        read.extend(p.file().map(|f| ("the program".to_string(), f)));
    }
    for c in &inputs.configs {
        read.extend(c.source.file().map(|f| ("the config".to_string(), f)));
    }
    output::refuse_clashes(&read, &crate::given(&[("-o", &args.output)]))?;
    if let Some((_, from)) = &shard {
        err_line!("sweep: running {from}");
    } else {
        for var in ["JOB_COMPLETION_INDEX", "HQ_TASK_ID"] {
            if std::env::var_os(var).is_some() {
                err_line!(
                    "sweep: note: {var} is set but --shards is not, so this runs every point; \
                     give --shards N to run one shard"
                );
            }
        }
    }
    let part = shard.as_ref().map(|(s, _)| *s);
    let shard = part.unwrap_or(shard::Shard { k: 0, n: 1 });
    if args.dry_run {
        return dry_run(&inputs, shard, args.output.as_deref());
    }
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let count = shard.count(inputs.grid.points);
    let jobs = jobs.clamp(1, count.max(1) as usize);

    let mut head = Vec::new();
    if let Some(s) = part {
        head.extend(part_line(&inputs, args.format, s).as_bytes());
    }
    if args.format == SweepFormat::Csv {
        head.extend(table::csv_record(&table::header(&inputs.columns)));
    }
    // a part ends with the digests of its head and rows, which --merge checks
    let mut digest = part.map(|_| {
        let mut d = merge::PartDigest::default();
        d.add(&head);
        d
    });
    let mut progress =
        crate::progress::Progress::new("sweep", "point", count, args.output.is_none());
    match args.output.as_deref() {
        Some(path) => {
            // the file appears whole, once the last point is written, or not at all
            let mut file = output::StreamFile::create(path)?;
            let w = file.writer();
            let cannot =
                |e: std::io::Error| Exit::input(format!("cannot write {}: {e}", path.display()));
            w.write_all(&head).map_err(cannot)?;
            runner::run(
                &inputs,
                &shared,
                shard,
                jobs,
                args.format,
                w,
                digest.as_mut(),
                &mut progress,
            )
            .map_err(|e| cannot(e.0))?;
            if let Some(d) = &digest {
                w.write_all(d.end_line().as_bytes()).map_err(cannot)?;
            }
            file.commit()?;
        }
        None => {
            let mut out = output::stdout()?;
            // a broken pipe (`npusim sweep s.yaml | head`) ends the sweep without a message
            output::stdout_result(out.write_all(&head).and_then(|_| {
                runner::run(
                    &inputs,
                    &shared,
                    shard,
                    jobs,
                    args.format,
                    &mut out,
                    digest.as_mut(),
                    &mut progress,
                )
                .map_err(|e| e.0)?;
                // the digests end a part only when every row was written
                match &digest {
                    Some(d) => out
                        .write_all(d.end_line().as_bytes())
                        .and_then(|()| out.flush()),
                    None => Ok(()),
                }
            }))?;
        }
    }
    progress.finish(jobs);
    Ok(())
}

/// `#npusim-sweep-part format=F shard=K/N points=P sweep=FINGERPRINT` and a newline.
fn part_line(inputs: &Inputs, format: SweepFormat, s: shard::Shard) -> String {
    format!(
        "{PART_TAG} format={} shard={}/{} points={} sweep={}\n",
        match format {
            SweepFormat::Csv => "csv",
            SweepFormat::Jsonl => "jsonl",
        },
        s.k,
        s.n,
        inputs.grid.points,
        inputs.fingerprint
    )
}

/// `--dry-run`: the shard's points as CSV (`index` and the input columns), and their count
/// on stderr. Streamed a row at a time, so listing 10^8 points takes no more memory than
/// listing ten (BENCHMARKS.md, "Sweeps"); a closed pipe (`| head`) ends the listing without a
/// message, like a sweep's.
fn dry_run(inputs: &Inputs, shard: shard::Shard, out: Option<&Path>) -> Result<(), Exit> {
    let list = |w: &mut dyn Write| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(w);
        let mut header = vec!["index".to_string()];
        header.extend(table::input_header(&inputs.columns));
        w.write_all(&table::csv_record(&header))?;
        for index in shard.indices(inputs.grid.points) {
            let point = inputs.grid.point(index);
            let mut cells = vec![index.to_string()];
            cells.extend(table::input_cells(inputs, &point));
            w.write_all(&table::csv_record(&cells))?;
        }
        w.flush()
    };
    match out {
        Some(path) => {
            // the file appears whole, once the last point is listed, or not at all
            let mut file = output::StreamFile::create(path)?;
            list(file.writer())
                .map_err(|e| Exit::input(format!("cannot write {}: {e}", path.display())))?;
            file.commit()?;
        }
        None => {
            if list(&mut std::io::stdout().lock()).is_err() {
                return Ok(());
            }
        }
    }
    let count = shard.count(inputs.grid.points);
    err_line!(
        "sweep: {count} point{} listed (of {} in the sweep)",
        if count == 1 { "" } else { "s" },
        inputs.grid.points
    );
    Ok(())
}

/// Reads the sweep file and every program and config it names, checks them (every problem
/// reported before stopping: exit 2) and builds the grid.
fn load(path: &Path, shared: &point::Shared) -> Result<Inputs, Exit> {
    let sweep = input::read(path, "sweep").map_err(|r| r.report())?;
    // what could be read of a file with problems: its programs and configs are checked too,
    // so that one report holds every problem
    let mut partial = None;
    let read = sim::load::read_document(&sweep.text, &sweep.name, |r, root| {
        partial = spec::read(r, root);
        partial.clone()
    });
    let (file, mut shape) = match read {
        Ok(file) => (file, Vec::new()),
        Err(e) => match partial {
            Some(file) => (file, e.diagnostics),
            None => return Err(input::report_load_error(&e, &[&sweep])),
        },
    };
    // relative paths are the sweep file's directory's: the sweep runs the same from anywhere
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut here: Vec<Diagnostic> = Vec::new();
    let mut elsewhere: Vec<Diagnostic> = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let at = |path: String, message: String, hint: Option<String>| {
        let mut d = Diagnostic::error(&sweep.name, &path, message);
        d.hint = hint;
        d
    };

    let mut programs: Vec<Option<Source>> = Vec::new();
    // each program's file, its path resolved (`.`, `..`, symbolic links), with its index
    let mut files: Vec<(std::path::PathBuf, usize)> = Vec::new();
    for (i, p) in file.programs.iter().enumerate() {
        let resolved = dir.join(p);
        let name = resolved.display().to_string();
        programs.push(match input::read_text(&resolved) {
            Ok(text) => {
                // one file under two spellings is a value listed twice, as two equal spellings
                // are (the sweep file's reader refuses those)
                if let Ok(real) = std::fs::canonicalize(&resolved) {
                    match files.iter().find(|(f, _)| *f == real) {
                        Some((_, first)) => here.push(at(
                            format!("programs[{i}]"),
                            format!(
                                "`{p}` is the program `{}` (programs[{first}]) spelled another way: one file, listed twice",
                                file.programs[*first]
                            ),
                            Some("list each program once: the grid would run the same points twice".into()),
                        )),
                        None => files.push((real, i)),
                    }
                }
                Some(Source { name, text })
            }
            Err(e) => {
                here.push(at(
                    format!("programs[{i}]"),
                    e.describe(&name, "program"),
                    Some(format!(
                        "a program's path is relative to the sweep file's directory ({})",
                        shown_dir(dir)
                    )),
                ));
                None
            }
        });
    }
    let mut configs: Vec<Option<LoadedConfig>> = Vec::new();
    for (i, c) in file.configs.iter().enumerate() {
        configs.push(match input::config_source_in(c, dir) {
            Ok(source) => match sim::load_config(&source.text, &source.name) {
                Ok(config) => Some(LoadedConfig { source, config }),
                Err(e) => {
                    elsewhere.extend(e.diagnostics);
                    sources.push(source);
                    None
                }
            },
            Err(rejected) => {
                for d in rejected.diagnostics() {
                    let hint = d.hint.or_else(|| {
                        Some(format!(
                            "a config is a built-in name or a file relative to the sweep file's directory ({})",
                            shown_dir(dir)
                        ))
                    });
                    here.push(at(format!("configs[{i}]"), d.message, hint));
                }
                None
            }
        });
    }

    // every program on every config with its own params: what the grid needs to know of it
    let mut infos: Vec<PairInfo> = Vec::new();
    let mut pipes: Vec<Pipe> = Vec::new();
    let mut scopes: Vec<Space> = Vec::new();
    for (p, program) in programs.iter().enumerate() {
        let Some(src) = program else { continue };
        let mut failed = false;
        for (c, config) in configs.iter().enumerate() {
            let Some(config) = config else { continue };
            let config = &config.config;
            match sim::load_kernel(&src.text, &src.name, config, &[], None) {
                Ok(kernel) => {
                    let mut own: Vec<Space> = Vec::new();
                    for part in &kernel.parts {
                        own.extend(config.core(part.core).scopes.iter().map(|s| s.space));
                    }
                    own.sort();
                    own.dedup();
                    pipes.extend(&config.core(kernel.first().core).pipes);
                    scopes.extend(&own);
                    infos.push(PairInfo {
                        program: p,
                        config: c,
                        declared: kernel
                            .first()
                            .params
                            .iter()
                            .map(|(n, _)| n.clone())
                            .collect(),
                        scopes: own,
                    });
                }
                Err(e) => {
                    for d in e.diagnostics {
                        if !elsewhere.contains(&d) {
                            elsewhere.push(d);
                        }
                    }
                    failed = true;
                }
            }
        }
        if failed {
            sources.push(src.clone());
        }
    }
    // against programs that did not load, or values that were left out, the axes would be
    // judged on part of the sweep
    let all_loaded = programs.iter().all(Option::is_some)
        && configs.iter().all(Option::is_some)
        && elsewhere.is_empty()
        && shape.is_empty();
    if all_loaded {
        check_axes(&file, &infos, &mut |path, message, hint| {
            here.push(at(path, message, hint))
        });
    }
    if !shape.is_empty() || !here.is_empty() || !elsewhere.is_empty() {
        sim::load::locate(&sweep.text, &mut here);
        shape.extend(here);
        shape.extend(elsewhere);
        let mut all: Vec<&Source> = vec![&sweep];
        all.extend(&sources);
        return Err(input::report_load_error(
            &LoadError { diagnostics: shape },
            &all,
        ));
    }

    let programs: Vec<Source> = programs.into_iter().map(|p| p.expect("loaded")).collect();
    let configs: Vec<LoadedConfig> = configs.into_iter().map(|c| c.expect("loaded")).collect();
    pipes.sort();
    pipes.dedup();
    scopes.sort();
    scopes.dedup();
    let mut capacities: Vec<Space> = file.capacities.iter().flatten().map(|(s, _)| *s).collect();
    capacities.sort();
    capacities.dedup();
    let columns = Columns {
        params: file.params.iter().map(|(n, _)| n.clone()).collect(),
        capacities,
        pipes,
        scopes,
    };
    let fingerprint = fingerprint(&file, &programs, &configs, shared);
    let grid = Grid::new(file, &infos).map_err(|e| Exit::input(format!("{}: {e}", sweep.name)))?;
    Ok(Inputs {
        grid,
        programs,
        configs,
        columns,
        fingerprint,
    })
}

fn shown_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".into()
    } else {
        dir.display().to_string()
    }
}

/// The axes' values against what the programs are: a param no program declares, and a
/// capacity for a scope no program's cores have, are problems (a typo would otherwise
/// silently drop out of the grid).
fn check_axes(
    file: &SweepFile,
    infos: &[PairInfo],
    problem: &mut dyn FnMut(String, String, Option<String>),
) {
    let mut declared: Vec<&str> = infos
        .iter()
        .flat_map(|i| i.declared.iter().map(String::as_str))
        .collect();
    declared.sort();
    declared.dedup();
    for (name, _) in &file.params {
        if !declared.contains(&name.as_str()) {
            let hint = sim::diag::did_you_mean(name, declared.iter().copied())
                .map(|d| format!("did you mean `{d}`?"))
                .or_else(|| {
                    Some(if declared.is_empty() {
                        "the programs declare no params".to_string()
                    } else {
                        format!("the programs declare {}", declared.join(", "))
                    })
                });
            problem(
                format!("params.{name}"),
                format!("no program of the sweep declares the param `{name}`"),
                hint,
            );
        }
    }
    let mut has: Vec<Space> = infos
        .iter()
        .flat_map(|i| i.scopes.iter().copied())
        .collect();
    has.sort();
    has.dedup();
    for (i, set) in file.capacities.iter().enumerate() {
        for (space, _) in set {
            if !has.contains(space) {
                let names: Vec<&str> = has.iter().map(|s| s.yaml_name()).collect();
                problem(
                    format!("capacities[{i}].{}", space.yaml_name()),
                    format!(
                        "no program of the sweep runs on a core with a {} scope",
                        space.yaml_name()
                    ),
                    Some(format!("their cores have {}", names.join(", "))),
                );
            }
        }
    }
}

/// The sweep's fingerprint: npusim's version, the options, the axes, and every program's and
/// config's name and text. Parts of one sweep share it; a changed program or option changes it.
fn fingerprint(
    file: &SweepFile,
    programs: &[Source],
    configs: &[LoadedConfig],
    shared: &point::Shared,
) -> String {
    let mut h = Fnv::default();
    h.add(b"npusim sweep 1")
        .add(env!("CARGO_PKG_VERSION").as_bytes())
        .add(format!("{shared:?}").as_bytes())
        .add(format!("{file:?}").as_bytes());
    for (p, src) in file.programs.iter().zip(programs) {
        h.add(p.as_bytes()).add(src.text.as_bytes());
    }
    for (c, loaded) in file.configs.iter().zip(configs) {
        h.add(c.as_bytes()).add(loaded.source.text.as_bytes());
    }
    h.hex()
}
