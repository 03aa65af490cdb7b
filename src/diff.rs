//! `npusim diff A B`: what changed from A to B. Each side is a run document (`run --format
//! json`) or a program run on the spot with `--profile`'s and `--critical-path`'s observers; either way it becomes a
//! run document and `reports::diff` compares the two documents, so a document written last
//! week and a run made now are compared by the same code.

use crate::cli::{DiffArgs, LevelArg};
use crate::{input, output, part_failed, pretty, report_problems, Exit, VALIDATE};
use serde_json::Value;
use std::path::Path;

/// The files `diff` reads: A, B, and the configs that are files.
pub fn input_files(args: &DiffArgs) -> Vec<(String, &Path)> {
    let mut files = vec![("A".to_string(), args.a.as_path())];
    if let Some(b) = &args.b {
        files.push(("B".to_string(), b.as_path()));
    }
    for c in [&args.config, &args.vs_config].into_iter().flatten() {
        if sim::builtin::builtin(c).is_none() {
            files.push(("the config".to_string(), Path::new(c)));
        }
    }
    files
}

/// One side as read: a run document, or a program to run.
enum Read {
    Document(reports::RunDoc),
    Program(input::Source),
}

/// Whether `text` is JSON rather than a program: its first character that is not white space
/// opens an object or a list (a YAML program is a mapping in block style; an MLIR file starts
/// with `module`, `func` or a comment).
fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('{' | '['))
}

/// Reads a run document from `src`, or every reason it is not one, each a line naming the
/// file and where in it.
fn document(src: &input::Source) -> Result<reports::RunDoc, Vec<String>> {
    let v: Value = serde_json::from_str(&src.text).map_err(|e| {
        vec![format!(
            "{}:{}:{}: not a JSON document: {e}; diff takes run documents (`npusim run PROGRAM --format json -o FILE`) or programs",
            src.name,
            e.line(),
            e.column()
        )]
    })?;
    reports::read_run_document(&v).map_err(|problems| {
        let fix = "write one with `npusim run PROGRAM --format json -o FILE`";
        problems
            .into_iter()
            .map(|p| format!("{}: not a run document: {p}; {fix}", src.name))
            .collect()
    })
}

/// The options of one side that ran a program.
struct Options<'a> {
    config: &'a str,
    params: Vec<(String, i64)>,
    blocks: Option<u32>,
    level: u8,
}

impl Options<'_> {
    /// How the outputs name a program run with these options: the path and every option given
    /// or differing from the other side's, so two runs of one file are told apart.
    fn label(&self, path: &Path, other: &Options) -> String {
        let mut label = input::name(path);
        label.push_str(&format!(" --level {}", self.level));
        if self.config != sim::builtin::DEFAULT || other.config != self.config {
            label.push_str(&format!(" --config {}", self.config));
        }
        for (name, value) in &self.params {
            label.push_str(&format!(" --param {name}={value}"));
        }
        if let Some(b) = self.blocks {
            label.push_str(&format!(" --blocks {b}"));
        }
        label
    }
}

/// Runs the program of `src` and gives its run document with the profile and the critical
/// path, and the problems
/// its run found (printed on stderr, prefixed with the side).
fn run_program(
    src: &input::Source,
    o: &Options,
    args: &DiffArgs,
    side: &str,
) -> Result<(reports::RunDoc, usize), Exit> {
    let config = input::load_config(o.config).map_err(|r| r.report())?;
    let kernel = sim::load::load_kernel(&src.text, &src.name, &config, &o.params, o.blocks)
        .map_err(|error| input::report_load_error(&error, &[src]))?;
    let opts = args.plan.at_level(o.level).pipeline(&args.run, VALIDATE);
    let prepared = pipeline::prepare_kernel(&kernel, &config, &opts)
        .map_err(|e| part_failed(&e, &kernel, &config, src, &format!("{side}: ")))?;
    // the profile names the ops of the programs that run, which the run consumes: copies
    let ran: Vec<sim::Program> = prepared.parts.iter().map(|p| p.program.clone()).collect();
    let parts: Vec<&sim::Program> = ran.iter().collect();
    let mut observers = (
        reports::Profiler::for_launch(&parts, &config),
        sim::critical::Critical::for_launch(&parts, &config),
    );
    let sim = pipeline::run_prepared(prepared, &config, &opts, &mut observers)
        .map_err(|f| crate::failed(&f, kernel.first(), &config, src, &format!("{side}: ")))?;
    let (profiler, critical) = observers;
    let rows = profiler.rows(&parts);
    // the critical path too, so that two programs' diff compares their paths
    let critical = critical
        .finish(&sim.result)
        .expect("a walker without a budget always walks");
    let mut report: reports::Run = (&sim).into();
    report.profile = Some(&rows);
    report.critical = reports::PathView::Full(&critical);
    let doc = reports::read_run_document(&reports::run_json(&config, &report)).map_err(|p| {
        // the document was written by this npusim: not reading it back is a bug
        err_line!(
            "error: npusim bug: its own run document of {side} does not read back: {}",
            p.join("; ")
        );
        Exit(1)
    })?;
    let mut problems = report_problems(&config, &sim, &format!("{side}: "));
    for d in &kernel.findings {
        err_line!("finding: {side}: {}: {}", d.location(), d.message);
        problems += 1;
    }
    Ok((doc, problems))
}

/// `npusim diff`: exit 2 on bad input (nothing written), 1 when a run on the spot found
/// problems (the diff is written, the problems on stderr), else 0 whether or not A and B
/// differ.
pub fn diff(args: &DiffArgs) -> Result<(), Exit> {
    let level = |l: Option<LevelArg>, flag: &str| {
        match l {
        None => Ok(None),
        Some(LevelArg::Fixed(n)) => Ok(Some(n)),
        Some(LevelArg::Best) => Err(Exit::input(format!(
            "{flag} best: diff compares two chosen levels; give --level N --vs-level M (N, M among 0, 1, 2)"
        ))),
    }
    };
    let (level_a, level_b) = (
        level(args.level, "--level")?,
        level(args.vs_level, "--vs-level")?,
    );
    for (i, (name, _)) in args.vs_params.iter().enumerate() {
        if args.vs_params[..i].iter().any(|(n, _)| n == name) {
            return Err(Exit::input(format!(
                "--vs-param gives the param `{name}` twice; give it once"
            )));
        }
    }
    let b_path = args.b.as_deref().unwrap_or(&args.a);
    if args.b.is_some() && input::is_stdin(&args.a) && input::is_stdin(b_path) {
        return Err(Exit::input(
            "A and B are both `-`: the standard input can be read once; write one side to a file",
        ));
    }
    let classify = |src: input::Source| -> Result<Read, Vec<String>> {
        if looks_like_json(&src.text) {
            document(&src).map(Read::Document)
        } else {
            Ok(Read::Program(src))
        }
    };
    let src_a = input::read(&args.a, "A").map_err(|r| r.report())?;
    let src_b = match &args.b {
        Some(b) => input::read(b, "B").map_err(|r| r.report())?,
        None => src_a.clone(),
    };
    // every problem of both documents before stopping
    let (read_a, read_b) = (classify(src_a), classify(src_b));
    let problems: Vec<String> = [&read_a, &read_b]
        .into_iter()
        .filter_map(|r| r.as_ref().err())
        .flatten()
        .cloned()
        .collect();
    if !problems.is_empty() {
        for p in &problems {
            err_line!("error: {p}");
        }
        return Err(Exit(2));
    }
    let (read_a, read_b) = (read_a.expect("no problems"), read_b.expect("no problems"));
    refuse_unused(args, &read_a, &read_b)?;

    let opts_a = Options {
        config: args.config.as_deref().unwrap_or(sim::builtin::DEFAULT),
        params: args.params.clone(),
        blocks: args.blocks,
        level: level_a.unwrap_or(2),
    };
    let mut params_b = opts_a.params.clone();
    for (name, value) in &args.vs_params {
        match params_b.iter_mut().find(|(n, _)| n == name) {
            Some(p) => p.1 = *value,
            None => params_b.push((name.clone(), *value)),
        }
    }
    let opts_b = Options {
        config: args.vs_config.as_deref().unwrap_or(opts_a.config),
        params: params_b,
        blocks: args.vs_blocks.or(args.blocks),
        level: level_b.unwrap_or(opts_a.level),
    };
    let mut problems = 0;
    let mut side = |read: Read, path: &Path, o: &Options, other: &Options, name: &str| {
        Ok::<_, Exit>(match read {
            Read::Document(doc) => (doc, input::name(path)),
            Read::Program(src) => {
                let (doc, n) = run_program(&src, o, args, name)?;
                problems += n;
                (doc, o.label(path, other))
            }
        })
    };
    let (doc_a, label_a) = side(read_a, &args.a, &opts_a, &opts_b, "A")?;
    let (doc_b, label_b) = side(read_b, b_path, &opts_b, &opts_a, "B")?;
    let (a, b) = (
        reports::DiffSide {
            label: label_a,
            doc: &doc_a,
        },
        reports::DiffSide {
            label: label_b,
            doc: &doc_b,
        },
    );
    let d = reports::diff(&doc_a, &doc_b);
    let text = match args.format {
        crate::cli::RunFormat::Text => reports::diff_text(&a, &b, &d),
        crate::cli::RunFormat::Json => pretty(&reports::diff_json(&a, &b, &d)),
    };
    let page = args.html.as_ref().map(|_| reports::diff_html(&a, &b, &d));
    output::emit(args.output.as_deref(), &text)?;
    if let (Some(path), Some(page)) = (args.html.as_deref(), &page) {
        output::emit(Some(path), page)?;
    }
    if problems > 0 {
        err_line!(
            "error: the runs found {problems} problem{}; see above",
            if problems == 1 { "" } else { "s" }
        );
        return Err(Exit(1));
    }
    Ok(())
}

/// Options that run a program, given where no side they apply to is one: refused, so a
/// `--level` meant for a document is never silently ignored.
fn refuse_unused(args: &DiffArgs, a: &Read, b: &Read) -> Result<(), Exit> {
    let program = |r: &Read| matches!(r, Read::Program(_));
    let for_both = [
        ("--config", args.config.is_some()),
        ("--param", !args.params.is_empty()),
        ("--blocks", args.blocks.is_some()),
        ("--level", args.level.is_some()),
    ];
    let for_b = [
        ("--vs-config", args.vs_config.is_some()),
        ("--vs-param", !args.vs_params.is_empty()),
        ("--vs-blocks", args.vs_blocks.is_some()),
        ("--vs-level", args.vs_level.is_some()),
    ];
    let mut refused = Vec::new();
    if !program(a) && !program(b) {
        refused.extend(for_both.iter().filter(|(_, on)| *on).map(|(f, _)| {
            format!("{f}: A and B are run documents, and {f} applies to a program run on the spot; drop it")
        }));
    }
    if !program(b) {
        refused.extend(for_b.iter().filter(|(_, on)| *on).map(|(f, _)| {
            format!("{f}: B is a run document, and {f} applies to B run on the spot; drop it, or give B as a program")
        }));
    }
    if refused.is_empty() {
        return Ok(());
    }
    for r in &refused {
        err_line!("error: {r}");
    }
    Err(Exit(2))
}
