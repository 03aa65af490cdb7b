//! `npusim opt`: a `bishengir-opt`-compatible driver for the passes npusim implements
//! (docs/mlir.md, "npusim opt"), so a lit RUN line runs with `bishengir-opt` replaced by
//! `npusim opt`.
//!
//! Exit codes follow the conformance runner's convention (scripts/conformance): 0 success,
//! 1 a diagnostic of a pass (an overflow, a read before the first write) or a failed
//! `-verify-diagnostics`, 2 bad arguments or an unreadable or malformed file, 3 input npusim
//! cannot handle (an op or an option it does not implement), with one `unsupported: REASON`
//! line on stderr per chunk.

use crate::input;
use crate::Exit;
use pipeline::Failure;
use sim::mlir::ast::{Chunk, Op};
use sim::mlir::print::{print_chunk, Edits};
use sim::mlir::{Loaded, Options as LowerOptions, SyncOps};
use sim::program::{BarrierTarget, OpKind as P, Side};
use sim::{Config, Diagnostic, Pipe, Program};
use std::collections::HashMap;
use std::path::PathBuf;

/// What `npusim opt` was asked to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OptArgs {
    pub input: Option<PathBuf>,
    pub plan_memory: bool,
    pub inject_sync: bool,
    /// `-hivm-inject-block-sync`: the cross-core hand-offs of MIX functions, by npusim's
    /// cross-core pass (docs/sync.md, "Across cores"), printed as `sync_block_set`/`wait`.
    pub inject_block_sync: bool,
    pub split: bool,
    pub verify: bool,
    pub config: Option<String>,
    pub params: Vec<(String, i64)>,
    pub output: Option<PathBuf>,
    /// `--emit-program`: print each function as the npusim program it lowers to (YAML, flow
    /// style), instead of the module: what npusim read.
    pub emit_program: bool,
    /// Options npusim does not implement: (flag, option), refused as unsupported.
    pub unsupported: Vec<String>,
    /// `--npusim-sync`: `-hivm-inject-sync` runs npusim's own sync pass instead of the
    /// InjectSync compatibility mode (docs/sync.md).
    pub npusim_sync: bool,
}

/// The usage line of `npusim opt`.
pub const USAGE: &str = "usage: npusim opt FILE [-hivm-plan-memory[=OPTIONS]] [-hivm-inject-sync[=OPTIONS]] [--npusim-sync] [-hivm-inject-block-sync] [-split-input-file] [-verify-diagnostics] [-hacc-append-device-spec=target=NAME] [--config NAME|FILE] [--param NAME=INT ...] [-o FILE]";

/// Parses `opt`'s arguments the way `bishengir-opt` spells them: one or two leading dashes,
/// pass options after `=` (`-hivm-plan-memory="mem-plan-mode=local-mem-plan"`, the shell
/// having removed the quotes). Every problem is collected.
pub fn parse_args(args: &[String]) -> Result<OptArgs, Vec<String>> {
    let mut a = OptArgs::default();
    let mut problems = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(arg) = it.next() {
        if arg == "-" || !arg.starts_with('-') {
            if a.input.is_some() {
                problems.push(format!(
                    "`{arg}`: opt reads one file (the first was already given)"
                ));
            }
            a.input = Some(PathBuf::from(arg));
            continue;
        }
        if arg == "-h" || arg == "--help" || arg == "-help" {
            problems.push("help".into());
            continue;
        }
        let flag = arg.trim_start_matches('-');
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (flag, None),
        };
        let mut next = |what: &str| -> Option<String> {
            match value {
                Some(v) => Some(v.to_string()),
                None => match it.next() {
                    Some(v) => Some(v.clone()),
                    None => {
                        problems.push(format!("`{arg}` needs {what}"));
                        None
                    }
                },
            }
        };
        match name {
            "hivm-plan-memory" => {
                a.plan_memory = true;
                for (k, v) in pass_options(value.unwrap_or("")) {
                    let why = match (k.as_str(), v.as_deref()) {
                        ("mem-plan-mode", Some("local-mem-plan")) => continue,
                        // a display option: what is planned does not change
                        ("enable-memory-display", _) => continue,
                        ("enable-global-workspace-reuse", Some("false")) => continue,
                        ("mem-plan-mode", _) | ("enable-global-workspace-reuse", _) => {
                            "npusim plans on-chip buffers only, not the GM workspace"
                        }
                        ("restrict-inplace-as-isa", _) => {
                            "npusim's inplace rules are HIVM's default ones (docs/planner.md)"
                        }
                        ("plan-memory-strategy", _) => {
                            "HIVM 1.2.0 has no such option; npusim plans first fit, as 1.2.0 does"
                        }
                        _ => "not an option npusim knows",
                    };
                    a.unsupported.push(format!(
                        "-hivm-plan-memory option `{}`: {why}",
                        show_option(&k, v.as_deref())
                    ));
                }
            }
            "hivm-inject-sync" => {
                a.inject_sync = true;
                for (k, v) in pass_options(value.unwrap_or("")) {
                    match (k.as_str(), v.as_deref()) {
                        ("sync-mode", Some("normal")) => {}
                        _ => a.unsupported.push(format!(
                            "-hivm-inject-sync option `{}` is not implemented by npusim's sync pass",
                            show_option(&k, v.as_deref())
                        )),
                    }
                }
            }
            "hivm-inject-block-sync" => {
                a.inject_block_sync = true;
                for (k, v) in pass_options(value.unwrap_or("")) {
                    match (k.as_str(), v.as_deref()) {
                        ("block-all-sync" | "disable-auto-inject-block-sync", Some("false")) => {}
                        _ => a.unsupported.push(format!(
                            "-hivm-inject-block-sync option `{}` is not implemented by npusim's cross-core pass",
                            show_option(&k, v.as_deref())
                        )),
                    }
                }
            }
            "split-input-file" => a.split = true,
            // npusim reads every dialect's ops (unknown ones opaquely): nothing to allow
            "allow-unregistered-dialect" => {}
            "npusim-sync" => a.npusim_sync = true,
            "emit-program" => a.emit_program = true,
            "verify-diagnostics" => a.verify = true,
            "hacc-append-device-spec" => {
                let v = value.unwrap_or("");
                let target = pass_options(v)
                    .into_iter()
                    .find(|(k, _)| k == "target")
                    .and_then(|(_, v)| v);
                match target.as_deref() {
                    Some(t) if t.starts_with("Ascend910B") => {
                        a.config.get_or_insert_with(|| "ascend910b".into());
                    }
                    Some(t) => a.unsupported.push(format!(
                        "-hacc-append-device-spec target `{t}`: npusim has a config for the Ascend910B family only (ascend910b)"
                    )),
                    None => {}
                }
            }
            "config" => {
                if let Some(v) = next("a config name or file") {
                    a.config = Some(v);
                }
            }
            "param" => {
                if let Some(v) = next("NAME=INT") {
                    match v.split_once('=').map(|(k, x)| (k, x.trim().parse::<i64>())) {
                        Some((k, Ok(x))) if !k.is_empty() => {
                            if a.params.iter().any(|(p, _)| p == k) {
                                problems.push(format!("--param {k} is given twice"));
                            }
                            a.params.push((k.to_string(), x));
                        }
                        _ => problems.push(format!("`--param {v}`: write NAME=INT")),
                    }
                }
            }
            "o" => {
                if let Some(v) = next("a file") {
                    a.output = Some(PathBuf::from(v));
                }
            }
            "hivm-graph-sync-solver"
            | "hivm-cross-core-gss"
            | "hivm-mark-multi-buffer"
            | "hivm-enable-multi-buffer"
            | "pass-pipeline" => a.unsupported.push(format!(
                "{}: npusim implements -hivm-plan-memory, -hivm-inject-sync and -hivm-inject-block-sync",
                arg
            )),
            _ => problems.push(format!("unknown option `{arg}`")),
        }
    }
    // as bishengir-opt: no file reads standard input
    if a.input.is_none() {
        a.input = Some(PathBuf::from("-"));
    }
    if problems.is_empty() {
        Ok(a)
    } else {
        Err(problems)
    }
}

fn show_option(k: &str, v: Option<&str>) -> String {
    match v {
        Some(v) => format!("{k}={v}"),
        None => k.to_string(),
    }
}

/// `a=1 b c=x` (or comma-separated, in braces) into pairs.
fn pass_options(s: &str) -> Vec<(String, Option<String>)> {
    s.trim_matches(|c| c == '"' || c == '\'' || c == '{' || c == '}')
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (p.to_string(), None),
        })
        .collect()
}

/// Runs `npusim opt` with raw arguments (after `opt`): on HIVM MLIR, npusim's passes as
/// `bishengir-opt` runs HIVM's; on a YAML program, the program written as HIVM MLIR
/// ([`crate::opt_yaml`]).
pub fn opt(raw: &[String]) -> Result<(), Exit> {
    if let Some(file) = yaml_input(raw) {
        let words = std::iter::once("npusim opt".to_string()).chain(raw.iter().map(|a| {
            // bishengir-opt's one-dash pass names, in clap's two-dash form
            if a.starts_with("-hivm-") || a.starts_with("-hacc-") {
                format!("-{a}")
            } else {
                a.clone()
            }
        }));
        let y = match <crate::cli::YamlOpt as clap::Parser>::try_parse_from(words) {
            Ok(y) => y,
            Err(e) => {
                err_line!("{}", e.to_string().trim_end());
                err_line!("({file} is a YAML program: opt writes it as HIVM MLIR)");
                return Err(Exit(2));
            }
        };
        if let Some(out) = &y.output {
            crate::output::refuse_clashes(&crate::input_files(&y.input), &[("-o", out)])?;
        }
        return crate::opt_yaml(
            &y.input,
            &y.plan,
            y.hivm_plan_memory,
            y.hivm_inject_sync,
            y.output.as_deref(),
        );
    }
    let args = match parse_args(raw) {
        Ok(a) => a,
        Err(problems) if problems.iter().any(|p| p == "help") => {
            let _ = crate::output::emit(None, &format!("{USAGE}\n"));
            return Ok(());
        }
        Err(problems) => {
            for p in &problems {
                err_line!("error: {p}");
            }
            err_line!("{USAGE}");
            return Err(Exit(2));
        }
    };
    let path = args.input.clone().unwrap_or_default();
    if let Some(out) = &args.output {
        crate::output::refuse_clashes(&[(input::name(&path), path.as_path())], &[("-o", out)])?;
    }
    let src = input::read(&path, "program").map_err(|r| r.report())?;
    let config = input::load_config(args.config.as_deref().unwrap_or("ascend910b"))
        .map_err(|r| r.report())?;
    if !sim::mlir::looks_like_mlir(&src.name, &src.text) {
        err_line!(
            "error: {}: `npusim opt` reads HIVM MLIR; write a YAML program as MLIR with `npusim plan {} --format mlir`",
            src.name,
            src.name
        );
        return Err(Exit(2));
    }
    let result = run_opt(&src.text, &src.name, &config, &args);
    for line in &result.stderr {
        err_line!("{line}");
    }
    crate::output::emit(args.output.as_deref(), &result.stdout)?;
    match result.code {
        0 => Ok(()),
        c => Err(Exit(c)),
    }
}

/// What one `opt` run prints, and its exit code.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OptResult {
    pub stdout: String,
    pub stderr: Vec<String>,
    pub code: u8,
}

/// `opt` on the text of a file: every chunk (with `-split-input-file`; else the file is one
/// module), every function of a chunk.
pub fn run_opt(text: &str, file: &str, config: &Config, args: &OptArgs) -> OptResult {
    let mut res = OptResult::default();
    if !args.unsupported.is_empty() {
        for u in &args.unsupported {
            res.stderr.push(format!("unsupported: {u}"));
        }
        res.code = 3;
        return res;
    }
    let chunks = match sim::mlir::parse_file(text, file) {
        Ok(c) => c,
        Err(e) => {
            for d in &e.diagnostics {
                res.stderr.push(mlir_diag(d));
            }
            res.code = 2;
            return res;
        }
    };
    if args.emit_program {
        let mut out = String::new();
        for (c, func) in sim::mlir::lower::functions(&chunks) {
            let opts = LowerOptions {
                params: args.params.clone(),
                sync: if args.plan_memory || args.inject_sync {
                    SyncOps::Drop
                } else {
                    SyncOps::Keep
                },
                lenient: args.plan_memory || args.inject_sync,
            };
            match sim::mlir::lower::lower(text, &chunks[c], func, file, &opts) {
                Ok(l) => {
                    out.push_str(&sim::yaml::flow(&l.doc, 1 << 30));
                    out.push('\n');
                }
                Err(ds) => {
                    for d in &ds {
                        res.stderr.push(mlir_diag(d));
                    }
                    res.code = 2;
                }
            }
        }
        res.stdout = out;
        return res;
    }
    let mut outs = Vec::new();
    let groups: Vec<Vec<usize>> = if args.split {
        (0..chunks.len()).map(|i| vec![i]).collect()
    } else {
        vec![(0..chunks.len()).collect()]
    };
    for group in groups {
        let mut printed = String::new();
        let mut diags: Vec<Diagnostic> = Vec::new();
        let mut unsupported: Vec<String> = Vec::new();
        for &c in &group {
            let (edits, d, u) = chunk_edits(text, &chunks, c, file, config, args);
            diags.extend(d);
            unsupported.extend(u);
            if !fatal(&diags) && unsupported.is_empty() {
                printed.push_str(&print_chunk(text, &chunks[c], &edits));
            }
        }
        let expected = if args.verify {
            group
                .iter()
                .flat_map(|&c| expectations(text, &chunks[c]))
                .collect()
        } else {
            Vec::new()
        };
        if !unsupported.is_empty() {
            for u in unsupported {
                res.stderr.push(format!("unsupported: {u}"));
            }
            res.code = res.code.max(3);
            continue;
        }
        if args.verify {
            let failures = verify(&diags, &expected, file);
            if failures.is_empty() {
                if !fatal(&diags) {
                    outs.push(printed);
                }
            } else {
                res.stderr.extend(failures);
                res.code = res.code.max(1);
            }
            continue;
        }
        if !fatal(&diags) {
            outs.push(printed);
        }
        if !diags.is_empty() {
            for d in &diags {
                res.stderr.push(mlir_diag(d));
            }
            // an alloc left unplanned is reported but the pass succeeds, as bishengir-opt's
            // (AllocToPointerCast's pattern fails on it; the pass does not)
            if fatal(&diags) {
                res.code = res.code.max(1);
            }
        }
    }
    res.stdout = outs.join("// -----\n");
    res
}

/// Whether a chunk's diagnostics stop its output: an overflow fails the pass; a read before
/// the first write leaves that alloc unplanned and the module is printed (as HIVM does).
fn fatal(diags: &[Diagnostic]) -> bool {
    diags
        .iter()
        .any(|d| !d.message.ends_with("read before first write"))
}

/// The input file when it is a YAML program (not HIVM MLIR): the first argument that is not an
/// option or an option's value, read to tell.
fn yaml_input(raw: &[String]) -> Option<String> {
    let mut skip = false;
    for a in raw {
        if skip {
            skip = false;
            continue;
        }
        if a.starts_with('-') && a != "-" {
            // the options that take a separate value
            skip = matches!(
                a.as_str(),
                "--config"
                    | "--param"
                    | "-o"
                    | "--output"
                    | "--blocks"
                    | "--level"
                    | "--capacity"
                    | "--liveness"
                    | "--placement"
            );
            continue;
        }
        if a == "-" {
            return None;
        }
        let text = std::fs::read_to_string(a).ok()?;
        return (!sim::mlir::looks_like_mlir(a, &text)).then(|| a.clone());
    }
    None
}

/// `file:line:col: error: message`, as MLIR tools print a diagnostic.
fn mlir_diag(d: &Diagnostic) -> String {
    let mut s = format!(
        "{}:{}:{}: error: {}",
        d.file,
        d.line.unwrap_or(1),
        d.column.unwrap_or(1),
        d.message
    );
    if let Some(h) = &d.hint {
        s.push_str(&format!(" (hint: {h})"));
    }
    s
}

/// An `expected-error` annotation: the line it expects a diagnostic on, and the text.
#[derive(Clone, Debug, PartialEq)]
struct Expected {
    line: u32,
    text: String,
}

/// The `// expected-error[@+N|@-N|@below|@above] {{text}}` annotations of a chunk.
fn expectations(text: &str, chunk: &Chunk) -> Vec<Expected> {
    let start = chunk.span.start.offset as usize;
    let end = (chunk.span.end as usize).min(text.len());
    let body = &text[start..end];
    let first_line = chunk.span.start.line;
    let lines: Vec<&str> = body.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(k) = l.find("expected-error") else {
            continue;
        };
        let rest = &l[k + "expected-error".len()..];
        let (at, rest) = match rest.strip_prefix('@') {
            Some(r) => {
                let end = r.find(char::is_whitespace).unwrap_or(r.len());
                (Some(&r[..end]), &r[end..])
            }
            None => (None, rest),
        };
        let Some(open) = rest.find("{{") else {
            continue;
        };
        let Some(close) = rest.rfind("}}") else {
            continue;
        };
        if close < open + 2 {
            continue;
        }
        let msg = rest[open + 2..close].to_string();
        let here = first_line + i as u32;
        let target = match at {
            None => Some(here),
            Some("below") => (i + 1..lines.len())
                .find(|&j| !is_comment_or_blank(lines[j]))
                .map(|j| first_line + j as u32),
            Some("above") => (0..i)
                .rev()
                .find(|&j| !is_comment_or_blank(lines[j]))
                .map(|j| first_line + j as u32),
            Some(off) => off
                .parse::<i64>()
                .ok()
                .map(|o| (here as i64 + o).max(1) as u32),
        };
        if let Some(line) = target {
            out.push(Expected { line, text: msg });
        }
    }
    out
}

fn is_comment_or_blank(l: &str) -> bool {
    let t = l.trim_start();
    t.is_empty() || t.starts_with("//")
}

/// `-verify-diagnostics`: every expected diagnostic was produced on its line, and nothing else.
fn verify(diags: &[Diagnostic], expected: &[Expected], file: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut used = vec![false; diags.len()];
    for e in expected {
        let hit = diags
            .iter()
            .enumerate()
            .find(|(i, d)| !used[*i] && d.line == Some(e.line) && d.message.contains(&e.text));
        match hit {
            Some((i, _)) => used[i] = true,
            None => out.push(format!(
                "{file}:{}:1: error: expected error \"{}\" was not produced",
                e.line, e.text
            )),
        }
    }
    for (i, d) in diags.iter().enumerate() {
        if !used[i] {
            out.push(format!("{} (unexpected)", mlir_diag(d)));
        }
    }
    out
}

/// The edits of chunk `c`: its functions planned (and synchronised), or the diagnostics of
/// the passes, or why npusim cannot handle it.
fn chunk_edits(
    text: &str,
    chunks: &[Chunk],
    c: usize,
    file: &str,
    config: &Config,
    args: &OptArgs,
) -> (Edits, Vec<Diagnostic>, Vec<String>) {
    let mut edits = Edits::default();
    let mut diags = Vec::new();
    let mut unsupported = Vec::new();
    if !args.plan_memory && !args.inject_sync && !args.inject_block_sync {
        return (edits, diags, unsupported);
    }
    let funcs: Vec<_> = sim::mlir::lower::functions(chunks)
        .into_iter()
        .filter(|(i, _)| *i == c)
        .collect();
    for (_, func) in funcs {
        if args.inject_block_sync {
            block_sync_edits(
                text,
                chunks,
                c,
                func,
                file,
                config,
                args,
                &mut edits,
                &mut unsupported,
            );
            if !args.plan_memory && !args.inject_sync {
                continue;
            }
        }
        let opts = LowerOptions {
            params: args.params.clone(),
            sync: SyncOps::Drop,
            lenient: true,
        };
        let loaded =
            match sim::mlir::load_function(text, chunks, c, func, file, config, &opts, None) {
                Ok(l) => l,
                Err(e) => {
                    unsupported_lines(e.diagnostics, &mut unsupported);
                    continue;
                }
            };
        // InjectSync's device entry (a final `pipe_barrier[PIPE_ALL]`): `hacc.entry` on a
        // `hacc.function_kind<DEVICE>` function
        let kind = |k: &str| {
            func.attrs.iter().any(|a| {
                a.name == "hacc.function_kind"
                    && matches!(&a.value, Some(sim::mlir::ast::Attr::Dialect { body, .. }) if body == k)
            })
        };
        let entry = kind("DEVICE") && func.attrs.iter().any(|a| a.name == "hacc.entry");
        // InjectSync leaves host functions alone
        if kind("HOST") && args.inject_sync && !args.plan_memory && !args.npusim_sync {
            continue;
        }
        let names = ChunkNames::of(text, &chunks[c]);
        let ctx = FuncCtx {
            func,
            text,
            device_entry: entry,
            names: &names,
            offset: func.span.start.offset,
            op: func,
        };
        plan_function(
            &loaded,
            args,
            &ctx,
            &mut edits,
            &mut diags,
            &mut unsupported,
        );
    }
    (edits, diags, unsupported)
}

/// A lowering's or loader's problems as `unsupported:` reasons, `file:line:column: message`.
fn unsupported_lines(diags: Vec<Diagnostic>, unsupported: &mut Vec<String>) {
    for d in diags {
        unsupported.push(format!(
            "{}:{}:{}: {}",
            d.file,
            d.line.unwrap_or(1),
            d.column.unwrap_or(1),
            d.message
        ));
    }
}

/// `-hivm-inject-block-sync` on one function: a MIX function is split into its cube and vector
/// parts as `run` splits it, npusim's cross-core pass orders its gm hand-offs, and each flag it
/// inserts is printed beside the MLIR op it was inserted beside: `sync_block_set[<CUBE |
/// VECTOR>, <the setting pipe>, <the waiting pipe>] flag = F` and `sync_block_wait[...]` with
/// the same pipes (the reader maps them back: the set's second pipe, the wait's third). A
/// function that is not MIX has no hand-offs (HIVM's pass leaves it too).
#[allow(clippy::too_many_arguments)]
fn block_sync_edits(
    text: &str,
    chunks: &[Chunk],
    c: usize,
    func: &sim::mlir::ast::Op,
    file: &str,
    config: &Config,
    args: &OptArgs,
    edits: &mut Edits,
    unsupported: &mut Vec<String>,
) {
    let opts = LowerOptions {
        params: args.params.clone(),
        sync: SyncOps::Drop,
        lenient: true,
    };
    let report = unsupported_lines;
    let lowered = match sim::mlir::lower::lower(text, &chunks[c], func, file, &opts) {
        Ok(l) => l,
        Err(d) => return report(d, unsupported),
    };
    if lowered.core != "mix" {
        return;
    }
    if config.core_named("aic").is_none() || config.core_named("aiv").is_none() {
        unsupported.push(format!(
            "{file}: -hivm-inject-block-sync: config {} has no separate cube and vector cores",
            config.name
        ));
        return;
    }
    let doc = match sim::mlir::mix::split(&lowered.doc, file) {
        Ok(d) => d,
        Err(d) => return report(d, unsupported),
    };
    let kernel = match sim::load::load_kernel_tree(&doc, file, config, &args.params, None, true) {
        Ok(k) => k,
        Err(e) => return report(e.diagnostics, unsupported),
    };
    let synced = match planner::synchronize_kernel(&kernel, config) {
        Ok(s) => s,
        Err(e) => {
            unsupported.push(format!("{file}: -hivm-inject-block-sync: {e}"));
            return;
        }
    };
    // each flag's setting and waiting pipes, from the ops the pass inserted
    let mut set_pipe: HashMap<(usize, i64), Pipe> = HashMap::new();
    let mut wait_pipe: HashMap<(usize, i64), Pipe> = HashMap::new();
    for (i, p) in synced.kernel.parts.iter().enumerate() {
        for op in p.ops.iter().filter(|o| o.loc.inserted.is_some()) {
            match &op.kind {
                P::CrossSet { pipe, id, .. } => {
                    if let Some(k) = id.as_const() {
                        set_pipe.insert((i, k), *pipe);
                    }
                }
                P::CrossWait { pipe, id } => {
                    if let Some(k) = id.as_const() {
                        wait_pipe.insert((i, k), *pipe);
                    }
                }
                _ => {}
            }
        }
    }
    for (i, p) in synced.kernel.parts.iter().enumerate() {
        let core = match config.core(p.core).name.as_str() {
            "aic" => "CUBE",
            _ => "VECTOR",
        };
        let other = 1 - i;
        for op in &p.ops {
            let Some(side) = op.loc.inserted else {
                continue;
            };
            let (name, id, set, wait) = match &op.kind {
                P::CrossSet { pipe, id, .. } => {
                    let k = id.as_const();
                    let wait = k.and_then(|k| wait_pipe.get(&(other, k)).copied());
                    ("sync_block_set", k, Some(*pipe), wait)
                }
                P::CrossWait { pipe, id } => {
                    let k = id.as_const();
                    let set = k.and_then(|k| set_pipe.get(&(other, k)).copied());
                    ("sync_block_wait", k, set, Some(*pipe))
                }
                _ => continue,
            };
            let (Some(id), Some(set), Some(wait)) = (id, set, wait) else {
                unsupported.push(format!(
                    "{file}: -hivm-inject-block-sync: an inserted {name} whose flag or pipes are not constant"
                ));
                continue;
            };
            let line = format!(
                "hivm.hir.{name}[<{core}>, <{}>, <{}>] flag = {id}",
                set.cce_name(),
                wait.cce_name()
            );
            let key = (op.loc.line, op.loc.column);
            match side {
                Side::Before => edits.before.entry(key).or_default().push(line),
                Side::After => edits.after.entry(key).or_default().push(line),
            }
        }
    }
}

/// What the compatibility printer needs of the function beside its program.
struct FuncCtx<'a> {
    /// The function op and the file's text (the uses of an alloc nothing touches).
    func: &'a Op,
    text: &'a str,
    /// InjectSync's device entry: a final `pipe_barrier[PIPE_ALL]`.
    device_entry: bool,
    names: &'a ChunkNames,
    /// The function op's start offset (its prologue's key).
    offset: u32,
    /// The function op, for the emulation of HIVM's liveness walk.
    op: &'a sim::mlir::ast::Op,
}

/// PlanMemory's `kPlanRetryCount`: the seeds it tries.
const HIVM_PLAN_ATTEMPTS: u32 = 20;

/// The inplace kill order of each op, and the gen order of each loop's start.
type HivmOrders = (
    Vec<(sim::OpId, Vec<sim::BufferId>)>,
    Vec<Vec<sim::BufferId>>,
);

/// HIVM's kill and loop-gen orders for shuffle seed `seed`, in the program's ids: the
/// emulation's allocs by the buffers they became, its ops by their source position.
fn hivm_orders(loaded: &Loaded, func: &sim::mlir::ast::Op, seed: u32) -> HivmOrders {
    let program = loaded.kernel.first();
    let orders = sim::mlir::hivm_live::orders(func, seed);
    let buffer_at: HashMap<u32, sim::BufferId> = loaded
        .lowered
        .allocs
        .iter()
        .filter_map(|a| {
            let b = program.buffers.iter().position(|b| b.name == a.buffer)?;
            Some((a.op_pos.offset, sim::BufferId::new(b)))
        })
        .collect();
    let op_at: HashMap<(u32, u32), sim::OpId> = program
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.loc.inserted.is_none() && o.loc.line > 0)
        .map(|(i, o)| ((o.loc.line, o.loc.column), sim::OpId::new(i)))
        .collect();
    let buffers = |allocs: &[sim::mlir::hivm_live::Alloc]| -> Vec<sim::BufferId> {
        allocs
            .iter()
            .filter_map(|a| buffer_at.get(&a.at.offset).copied())
            .collect()
    };
    let mut kills: Vec<_> = orders
        .kills
        .iter()
        .filter_map(|(pos, kills)| Some((*op_at.get(&(pos.line, pos.column))?, buffers(kills))))
        .collect();
    // the planner looks an op up by binary search (stable: equal ops keep their order)
    kills.sort_by_key(|(op, _)| *op);
    let gens = orders.loop_gens.iter().map(|(_, g)| buffers(g)).collect();
    (kills, gens)
}

fn plan_function(
    loaded: &Loaded,
    args: &OptArgs,
    func: &FuncCtx,
    edits: &mut Edits,
    diags: &mut Vec<Diagnostic>,
    unsupported: &mut Vec<String>,
) {
    let program = loaded.kernel.first();
    let config = &loaded.config;
    let file = &program.file;
    let mut opts = pipeline::Options {
        validate: false,
        race_check: false,
        ..pipeline::Options::default()
    };
    // HIVM's rule is checked below, per storage entry, as PlanMemory checks it; InjectSync
    // on planned IR does not look
    opts.plan.reads_unwritten = true;
    // HIVM leaves such an alloc unplanned (it has no gen), reports it, and plans the rest
    let mut unplanned: Vec<String> = Vec::new();
    if args.plan_memory {
        for b in never_written(program) {
            let name = &program.buffers[b.index()].name;
            let mut d = Diagnostic::error(
                &program.file,
                "",
                "'memref.alloc' op error: read before first write",
            );
            if let Some(s) = loaded.lowered.allocs.iter().find(|a| &a.buffer == name) {
                d.line = Some(s.op_pos.line);
                d.column = Some(s.op_pos.column);
            }
            diags.push(d);
            unplanned.push(name.clone());
        }
    }
    // An alloc no op reads or writes is never gen'd, so PlanMemory gives it no address: one
    // named only by views the rewrite's folding erases goes with them, silently; one named by
    // an `annotation.mark` (or anything else) stays an alloc, reported as never written.
    // Planned with no bytes, it takes no place among the others.
    let pinned_program;
    let mut program = program;
    if args.plan_memory {
        let idle = untouched(program);
        if !idle.is_empty() {
            let mut p = program.clone();
            for &b in &idle {
                let buf = &mut p.buffers[b.index()];
                buf.bytes = 0;
                let Some(site) = loaded.lowered.allocs.iter().find(|a| a.buffer == buf.name) else {
                    continue;
                };
                match dead_views(func.func, func.text, &site.ssa) {
                    Some(views) => {
                        edits.erased.insert(site.pos.offset);
                        edits.erased.extend(views);
                    }
                    None => {
                        let mut d = Diagnostic::error(
                            &program.file,
                            "",
                            "'memref.alloc' op error: read before first write",
                        );
                        d.line = Some(site.op_pos.line);
                        d.column = Some(site.op_pos.column);
                        diags.push(d);
                    }
                }
                unplanned.push(buf.name.clone());
            }
            pinned_program = p;
            program = &pinned_program;
        }
    }
    // HIVM's lifetimes: a buffer declared outside a loop and touched in it lives for the
    // whole loop
    opts.plan.liveness = planner::LivenessMode::Scoped;
    // the inputs HIVM's kill order (below) does not list: last first
    opts.plan.inplace_last_input_first = true;
    opts.plan.allocs_after = allocs_after(program, loaded);
    // what HIVM's inplace rule reads from operands as the MLIR writes them
    opts.plan.as_written = as_written(program, loaded);
    // an MLIR alloc in a loop body is a new value every iteration
    opts.plan.fresh_loop_allocs = true;
    opts.plan.inplace_through_select = true;
    // HIVM's DMA class as its code has it: a fixpipe's source is not a DMA buffer
    opts.plan.dma_without_fix = true;
    // and its stage 2 between levels 2 and 1: no sharing within one innermost loop
    opts.plan.hivm_stage2 = true;
    // HIVM's ties: PlanMemory plans with shuffle seed 0, then 1..19 while a scope overflows,
    // and keeps the first plan that fits (docs/planner.md, "Ties, as HIVM decides them")
    let mut attempt = 0;
    let prepared = loop {
        (opts.plan.kill_order, opts.plan.loop_gen_order) = hivm_orders(loaded, func.op, attempt);
        let last = attempt + 1 == HIVM_PLAN_ATTEMPTS;
        match pipeline::prepare(program, config, &opts) {
            Err(Failure::Overflow(_)) if !last => attempt += 1,
            other => break other,
        }
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(f) => {
            diags.extend(failure(&f, program, loaded, file));
            if diags.is_empty() {
                unsupported.push(format!("{file}: {f}"));
            }
            return;
        }
    };
    if args.plan_memory {
        edits.fold_constants = true;
        edits.erased.extend(loaded.lowered.erased.iter().copied());
        for c in &loaded.lowered.copies {
            let key = (c.yield_pos.line, c.yield_pos.column);
            edits.before.entry(key).or_default().push(c.copy.clone());
            edits.replace.insert(key, c.yield_text.clone());
        }
        let by_name: HashMap<&str, &[u64]> = program
            .buffers
            .iter()
            .zip(&prepared.planned.plan.buffers)
            .map(|(b, p)| (b.name.as_str(), p.offsets.as_slice()))
            .collect();
        for site in &loaded.lowered.allocs {
            if unplanned.contains(&site.buffer) {
                continue;
            }
            if let Some(offs) = by_name.get(site.buffer.as_str()) {
                edits.offsets.insert(site.pos.offset, offs.to_vec());
            }
        }
    }
    if args.inject_sync && args.npusim_sync {
        sync_edits(&prepared.program, &loaded.lowered, edits, unsupported, None);
    } else if args.inject_sync {
        // InjectSync's rules on the same plan: what bishengir-opt prints
        let (names, func_offset) = (func.names, func.offset);
        let opts = planner::CompatOptions {
            device_entry: func.device_entry,
        };
        let detailed = planner::synchronize_compat_detailed(program, &prepared.planned.plan, &opts);
        let synced = &detailed.synced;
        let mut events = HivmEvents::new(names);
        let absorbed: std::collections::HashSet<usize> = detailed
            .mmad_args
            .iter()
            .flat_map(|m| m.absorbed.iter().map(|o| o.index()))
            .collect();
        sync_edits(
            &synced.program,
            &loaded.lowered,
            edits,
            unsupported,
            Some((&mut events, &absorbed)),
        );
        mmad_args_edits(
            &detailed.mmad_args,
            &synced.program,
            &mut events,
            names,
            func_offset,
            edits,
            unsupported,
        );
        events.flush(&synced.program, &loaded.lowered, edits, unsupported);
    }
}

/// `(buffer, loop)` for every alloc that comes after a loop's op in the MLIR, sorted: HIVM's
/// loop-begin gen takes only the allocs live at the loop (PlanOptions::allocs_after).
fn allocs_after(program: &Program, loaded: &Loaded) -> Vec<(sim::BufferId, sim::OpId)> {
    let loops: Vec<(sim::OpId, (u32, u32))> = program
        .ops
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op.kind, P::For(_) | P::While { .. }))
        .map(|(i, op)| (sim::OpId::new(i), (op.loc.line, op.loc.column)))
        .collect();
    let mut out = Vec::new();
    for (b, buf) in program.buffers.iter().enumerate() {
        let Some(site) = loaded.lowered.allocs.iter().find(|a| a.buffer == buf.name) else {
            continue;
        };
        let at = (site.op_pos.line, site.op_pos.column);
        out.extend(
            loops
                .iter()
                .filter(|(_, l)| *l < at)
                .map(|&(l, _)| (sim::BufferId::new(b), l)),
        );
    }
    out.sort_unstable();
    out
}

/// Per vector op the lowering noted ([`sim::mlir::WrittenSite`]), sorted by op: what its
/// MLIR operands tell HIVM's inplace rule (PlanOptions::as_written).
fn as_written(program: &Program, loaded: &Loaded) -> Vec<(sim::OpId, planner::AsWritten)> {
    let mut out: Vec<_> = program
        .ops
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op.kind, P::Vector(_)))
        .filter_map(|(i, op)| {
            let site = loaded
                .lowered
                .written
                .iter()
                .find(|w| (w.pos.line, w.pos.column) == (op.loc.line, op.loc.column))?;
            let w = planner::AsWritten {
                offsets_differ: site.offsets_differ,
                out_rank: site.out_rank,
            };
            Some((sim::OpId::new(i), w))
        })
        .collect();
    out.sort_unstable_by_key(|&(o, _)| o);
    out
}

/// The buffers no op reads or writes, nor any buffer of their storage entry (`share`).
fn untouched(program: &Program) -> Vec<sim::BufferId> {
    let bases = sim::footprint::Bases::of(program);
    let n = program.buffers.len();
    let mut touched = vec![false; n];
    for op in &program.ops {
        for o in op.kind.writes().into_iter().chain(op.kind.reads()) {
            for b in bases.roots(o.base) {
                touched[b.index()] = true;
            }
        }
    }
    // a share group is touched when any member is (the loader refuses cycles; the bound
    // keeps a bad program from looping)
    for _ in 0..n {
        let mut changed = false;
        for (i, buf) in program.buffers.iter().enumerate() {
            if let Some(s) = buf.share {
                if touched[i] != touched[s.index()] {
                    touched[i] = true;
                    touched[s.index()] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    (0..n)
        .filter(|&i| !touched[i])
        .map(sim::BufferId::new)
        .collect()
}

/// Whether `text` names `%name` (not a longer name starting with it).
fn names_value(text: &str, name: &str) -> bool {
    let pat = format!("%{name}");
    text.match_indices(&pat).any(|(i, _)| {
        let next = text.as_bytes().get(i + pat.len()).copied().unwrap_or(b' ');
        !(next.is_ascii_alphanumeric() || matches!(next, b'_' | b'$' | b'.' | b'-'))
    })
}

/// Ops MLIR folds away when nothing uses their result: views of a memref.
const VIEW_OPS: &[&str] = &[
    "memref.subview",
    "memref.view",
    "memref.reinterpret_cast",
    "memref.cast",
    "memref.collapse_shape",
    "memref.expand_shape",
    "memref.transpose",
];

/// When every use of `%ssa` in `func` is a view whose own results are used only by such views
/// (transitively), the start offsets of those views: the greedy rewrite after PlanMemory
/// erases them and then the alloc. `None` when anything else uses it (an `annotation.mark`).
fn dead_views(func: &Op, text: &str, ssa: &str) -> Option<Vec<u32>> {
    // the non-region ops: name, start offset, results, and text from the name on (operands)
    let mut ops: Vec<(String, u32, Vec<String>, &str)> = Vec::new();
    func.walk(&mut |op| {
        if op.kind.regions().is_empty() {
            let start = op.name_pos.offset as usize;
            let end = (op.span.end as usize).min(text.len());
            if let Some(t) = text.get(start..end) {
                let results = op.results.iter().map(|r| r.name.clone()).collect();
                ops.push((op.name.clone(), op.span.start.offset, results, t));
            }
        }
    });
    let mut out = Vec::new();
    let mut todo = vec![ssa.to_string()];
    while let Some(v) = todo.pop() {
        for (name, start, results, t) in &ops {
            if !names_value(t, &v) {
                continue;
            }
            if !VIEW_OPS.contains(&name.as_str()) {
                return None;
            }
            // each view is queued once, so the walk ends
            if !out.contains(start) {
                out.push(*start);
                todo.extend(results.iter().cloned());
            }
        }
    }
    Some(out)
}

/// The buffers PlanMemory refuses with "read before first write": read somewhere, while
/// nothing writes their storage entry (the buffer and those sharing its address) anywhere.
fn never_written(program: &Program) -> Vec<sim::BufferId> {
    let bases = sim::footprint::Bases::of(program);
    let n = program.buffers.len();
    let group = |b: sim::BufferId| -> usize {
        let mut at = b;
        // the loader refuses share cycles; the bound keeps a bad program from looping
        for _ in 0..n {
            match program.buffers[at.index()].share {
                Some(s) => at = s,
                None => break,
            }
        }
        at.index()
    };
    let mut written = vec![false; n];
    let mut read = vec![false; n];
    for op in &program.ops {
        for o in op.kind.writes() {
            for b in bases.roots(o.base) {
                written[group(b)] = true;
            }
        }
        for o in op.kind.reads() {
            for b in bases.roots(o.base) {
                read[b.index()] = true;
                // a buffer declared outside a loop and touched in it is gen'd at the loop's
                // begin (HIVM's GetLiveBuffersInLoop): never unwritten
                if op.loop_parent.is_some()
                    && program.buffers[b.index()].loop_parent != op.loop_parent
                {
                    written[group(b)] = true;
                }
            }
        }
    }
    (0..n)
        .map(sim::BufferId::new)
        // a fixed buffer (`at:`, a pointer_cast or an on-chip argument) is no alloc of
        // HIVM's plan: PlanMemory does not check it
        .filter(|b| {
            read[b.index()] && !written[group(*b)] && program.buffers[b.index()].at.is_none()
        })
        .collect()
}

/// The pass diagnostics of a failed plan, in HIVM's words.
fn failure(f: &Failure, program: &Program, loaded: &Loaded, file: &str) -> Vec<Diagnostic> {
    match f {
        Failure::Overflow(planner::PlanError::Overflow {
            space,
            required_bits,
            available_bits,
            ..
        }) => {
            let mut d = Diagnostic::error(
                file,
                "",
                format!(
                    "{} overflow, requires {required_bits} bits while {available_bits} bits available! (possible reason: tiling basic block is too large or block number is more than what user expect due to multi-buffer feature is enabled and some ops need extra local buffer.)",
                    space.hivm_name()
                ),
            );
            // HIVM reports it at the function
            d.line = Some(loaded.func_pos.line);
            d.column = Some(loaded.func_pos.column);
            vec![d]
        }
        Failure::ReadBeforeWrite { buffer, .. } => {
            let name = &program.buffers[buffer.index()].name;
            let site = loaded.lowered.allocs.iter().find(|a| &a.buffer == name);
            let mut d =
                Diagnostic::error(file, "", "'memref.alloc' op error: read before first write");
            if let Some(s) = site {
                d.line = Some(s.pos.line);
                d.column = Some(s.pos.column);
            }
            vec![d]
        }
        _ => Vec::new(),
    }
}

/// The inserted sync ops of the synchronised program, as lines beside the ops they were
/// inserted next to.
fn sync_edits(
    program: &Program,
    lowered: &sim::mlir::Lowered,
    edits: &mut Edits,
    unsupported: &mut Vec<String>,
    mut hivm: Option<(&mut HivmEvents, &std::collections::HashSet<usize>)>,
) {
    let mut fresh = 0u32;
    for (i, op) in program.ops.iter().enumerate() {
        let Some(side) = op.loc.inserted else {
            continue;
        };
        // ops an mmadL1 issues itself (its `sync_related_args`)
        if hivm.as_ref().is_some_and(|(_, skip)| skip.contains(&i)) {
            continue;
        }
        let key = (op.loc.line, op.loc.column);
        let mut lines = Vec::new();
        let line = match &op.kind {
            P::SetFlag { src, dst, id } | P::WaitFlag { src, dst, id } => {
                let name = if matches!(op.kind, P::SetFlag { .. }) {
                    "set_flag"
                } else {
                    "wait_flag"
                };
                let ev = match (id.as_const(), hivm.as_mut()) {
                    (Some(k), _) => format!("<EVENT_ID{k}>"),
                    (None, Some((h, _))) => match h.value(id, program) {
                        Ok(v) => v,
                        Err(why) => {
                            unsupported.push(format!("an inserted {name}: {why}"));
                            continue;
                        }
                    },
                    (None, None) => match event_value(id, program, lowered, &mut fresh, &mut lines)
                    {
                        Some(v) => v,
                        None => {
                            unsupported.push(format!(
                                "an inserted {name} whose event id is not an affine expression of loop variables"
                            ));
                            continue;
                        }
                    },
                };
                format!(
                    "hivm.hir.{name}[<{}>, <{}>, {ev}]",
                    src.cce_name(),
                    dst.cce_name()
                )
            }
            P::Barrier(BarrierTarget::All) => "hivm.hir.pipe_barrier[<PIPE_ALL>]".to_string(),
            P::Barrier(BarrierTarget::Pipe(p)) => {
                format!("hivm.hir.pipe_barrier[<{}>]", p.cce_name())
            }
            _ => continue,
        };
        lines.push(line);
        let slot = match side {
            Side::Before => edits.before.entry(key).or_default(),
            Side::After => edits.after.entry(key).or_default(),
        };
        slot.extend(lines);
    }
}

/// An event id that depends on loop variables, as an SSA value: `affine.apply` of the
/// expression over the loop's induction variables, then `arith.index_cast` to i64 (the
/// operand type of set_flag/wait_flag). Lines computing it go into `lines`.
fn event_value(
    id: &sim::expr::Expr,
    program: &Program,
    lowered: &sim::mlir::Lowered,
    fresh: &mut u32,
    lines: &mut Vec<String>,
) -> Option<String> {
    let mut dims: Vec<String> = Vec::new();
    let body = affine_text(id, program, lowered, &mut dims)?;
    *fresh += 1;
    let n = *fresh;
    let d: Vec<String> = (0..dims.len()).map(|i| format!("d{i}")).collect();
    lines.push(format!(
        "%npu_ev{n} = affine.apply affine_map<({}) -> ({body})>({})",
        d.join(", "),
        dims.iter()
            .map(|x| format!("%{x}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    lines.push(format!(
        "%npu_ev{n}_i64 = arith.index_cast %npu_ev{n} : index to i64"
    ));
    Some(format!("%npu_ev{n}_i64"))
}

fn affine_text(
    e: &sim::expr::Expr,
    program: &Program,
    lowered: &sim::mlir::Lowered,
    dims: &mut Vec<String>,
) -> Option<String> {
    use sim::expr::Expr;
    Some(match e {
        Expr::Const(c) => c.to_string(),
        Expr::Var(v) => {
            let name = &program.vars[v.index()].name;
            let iv = lowered.vars.iter().find(|(n, _)| n == name)?.1.clone();
            let k = match dims.iter().position(|d| *d == iv) {
                Some(k) => k,
                None => {
                    dims.push(iv);
                    dims.len() - 1
                }
            };
            format!("d{k}")
        }
        Expr::Binary(op, a, b) => {
            let (x, y) = (
                affine_text(a, program, lowered, dims)?,
                affine_text(b, program, lowered, dims)?,
            );
            let sym = affine_symbol(*op)?;
            format!("({x} {sym} {y})")
        }
        Expr::Unary(..) => return None,
    })
}

/// Names in use in a chunk: its SSA values and attribute aliases, so that the values and
/// aliases the compatibility printer makes do not collide with them.
struct ChunkNames {
    ssa: std::collections::HashSet<String>,
    aliases: std::collections::HashSet<String>,
    /// By an op's (line, column): the first op of its first block (a loop's body starts
    /// there).
    first_inside: HashMap<(u32, u32), (u32, u32)>,
    /// By function (its start offset): the i64 constants at the top of its body, by value.
    consts: HashMap<u32, HashMap<i64, String>>,
}

fn top_consts(
    text: &str,
    ops: &[sim::mlir::ast::Op],
    out: &mut HashMap<u32, HashMap<i64, String>>,
) {
    for op in ops {
        if let sim::mlir::ast::OpKind::Func { body, .. } = &op.kind {
            let mut m = HashMap::new();
            for o in body.blocks.first().map_or(&[][..], |b| &b.ops[..]) {
                let Some(r) = o.results.first() else { continue };
                let t = text
                    .get(o.span.start.offset as usize..o.span.end as usize)
                    .unwrap_or("");
                let v = t
                    .split_once("arith.constant ")
                    .and_then(|(_, rest)| {
                        rest.strip_suffix(" : i64")
                            .or(rest.trim_end().strip_suffix(": i64"))
                    })
                    .and_then(|v| v.trim().parse::<i64>().ok());
                if let Some(v) = v {
                    m.entry(v).or_insert_with(|| r.name.clone());
                }
            }
            out.insert(op.span.start.offset, m);
        }
        for r in op.kind.regions() {
            for b in &r.blocks {
                top_consts(text, &b.ops, out);
            }
        }
    }
}

fn first_ops(ops: &[sim::mlir::ast::Op], out: &mut HashMap<(u32, u32), (u32, u32)>) {
    for op in ops {
        let regions = op.kind.regions();
        if let Some(first) = regions
            .first()
            .and_then(|r| r.blocks.first())
            .and_then(|b| b.ops.first())
        {
            out.insert(
                (op.name_pos.line, op.name_pos.column),
                (first.name_pos.line, first.name_pos.column),
            );
        }
        for r in regions {
            for b in &r.blocks {
                first_ops(&b.ops, out);
            }
        }
    }
}

impl ChunkNames {
    fn of(text: &str, chunk: &Chunk) -> ChunkNames {
        let body = text
            .get(chunk.span.start.offset as usize..chunk.span.end as usize)
            .unwrap_or("");
        let mut ssa = std::collections::HashSet::new();
        let b = body.as_bytes();
        let mut i = 0;
        while i < b.len() {
            // comments (a CHECK line's `%1`) name nothing
            if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if b[i] == b'%' {
                let start = i + 1;
                let j = sim::mlir::print::ssa_name_end(b, start);
                if j > start {
                    ssa.insert(body[start..j].to_string());
                }
                i = j.max(i + 1);
            } else {
                i += 1;
            }
        }
        let mut first_inside = HashMap::new();
        first_ops(&chunk.ops, &mut first_inside);
        let mut consts = HashMap::new();
        top_consts(text, &chunk.ops, &mut consts);
        ChunkNames {
            consts,
            ssa,
            aliases: chunk.aliases.iter().map(|a| a.name.clone()).collect(),
            first_inside,
        }
    }
}

/// A multi-buffer flag's event id as bishengir prints it (SyncCodegen): at the start of the
/// buffer's loop, the flattened iteration count modulo the number of ids (`affine.apply` of a
/// `#map` alias, `arith.index_cast` to i64), then per flag the ids as constants chosen by
/// `arith.cmpi eq` / `arith.select`, the chain of the flag met last first.
struct HivmEvents<'a> {
    names: &'a ChunkNames,
    taken: std::collections::HashSet<String>,
    /// MLIR's suffix counter for names already taken (one per function: `c0_i64_0`, then
    /// `c1_i64_1`).
    conflicts: u32,
    counters: Vec<Counter>,
}

struct Counter {
    lp: sim::OpId,
    n: i64,
    /// The count over the loops' induction variables (symbols `s0`, ... innermost first).
    count: sim::expr::Expr,
    apply: String,
    cast: String,
    /// Per flag, in the order met: the first id and the select's name.
    chains: Vec<(i64, String)>,
}

impl<'a> HivmEvents<'a> {
    fn new(names: &'a ChunkNames) -> HivmEvents<'a> {
        HivmEvents {
            names,
            taken: names.ssa.clone(),
            conflicts: 0,
            counters: Vec::new(),
        }
    }

    /// The lowest free number as an SSA name.
    fn fresh(&mut self) -> String {
        let mut k = 0u32;
        while self.taken.contains(&k.to_string()) {
            k += 1;
        }
        self.taken.insert(k.to_string());
        k.to_string()
    }

    /// `c{v}_i64`, suffixed `_0`, `_1`, ... when taken, as MLIR names constants.
    fn constant(&mut self, v: i64) -> String {
        let base = format!("c{v}_i64");
        if self.taken.insert(base.clone()) {
            return base;
        }
        loop {
            let n = format!("{base}_{}", self.conflicts);
            self.conflicts += 1;
            if self.taken.insert(n.clone()) {
                return n;
            }
        }
    }

    /// The SSA value of id `id` (`first + count mod n`, as the compatibility pass writes a
    /// multi-buffer id).
    fn value(&mut self, id: &sim::expr::Expr, program: &Program) -> Result<String, String> {
        use sim::expr::{BinOp, Expr};
        let (first, slot) = match id {
            Expr::Binary(BinOp::Add, a, b) if a.as_const().is_some() => {
                (a.as_const().unwrap_or(0), &**b)
            }
            e => (0, e),
        };
        let Expr::Binary(BinOp::Rem, count, n) = slot else {
            return Err(
                "its event id is not one of consecutive ids chosen by the iteration".into(),
            );
        };
        let Some(n) = n.as_const() else {
            return Err(
                "its event id is not one of consecutive ids chosen by the iteration".into(),
            );
        };
        let at = self.counter(count, n, program)?;
        if let Some((_, name)) = self.counters[at].chains.iter().find(|(f, _)| *f == first) {
            return Ok(format!("%{name}"));
        }
        let name = self.fresh();
        self.counters[at].chains.push((first, name.clone()));
        Ok(format!("%{name}"))
    }

    /// The SSA value of an iteration count (no modulo): an mmadL1's K-loop condition.
    fn count_value(
        &mut self,
        count: &sim::expr::Expr,
        program: &Program,
    ) -> Result<String, String> {
        let at = self.counter(count, 0, program)?;
        Ok(format!("%{}", self.counters[at].cast))
    }

    /// The counter of `count` modulo `n` (0: none), made on first use.
    fn counter(
        &mut self,
        count: &sim::expr::Expr,
        n: i64,
        program: &Program,
    ) -> Result<usize, String> {
        let mut vars = Vec::new();
        count.vars(&mut vars);
        let depth = |l: sim::OpId| {
            let mut d = 0;
            let mut at = program.op(l).loop_parent;
            while let Some(x) = at {
                d += 1;
                at = program.op(x).loop_parent;
            }
            d
        };
        let lp = vars
            .iter()
            .filter_map(|v| program.vars[v.index()].loop_op)
            .max_by_key(|&l| depth(l))
            .ok_or("its event id does not depend on a loop")?;
        Ok(
            match self.counters.iter().position(|c| c.lp == lp && c.n == n) {
                Some(k) => k,
                None => {
                    let apply = format!("npu_count{}", self.counters.len());
                    self.taken.insert(apply.clone());
                    let cast = self.fresh();
                    self.counters.push(Counter {
                        lp,
                        n,
                        count: count.clone(),
                        apply,
                        cast,
                        chains: Vec::new(),
                    });
                    self.counters.len() - 1
                }
            },
        )
    }

    /// Writes the counters and selects at the start of their loops, and the `#map` aliases.
    fn flush(
        mut self,
        program: &Program,
        lowered: &sim::mlir::Lowered,
        edits: &mut Edits,
        unsupported: &mut Vec<String>,
    ) {
        let counters = std::mem::take(&mut self.counters);
        for c in counters {
            let P::For(f) = &program.op(c.lp).kind else {
                unsupported.push("a multi-buffer event id chosen by a `while` loop".into());
                continue;
            };
            let Some(&first_op) = f.body.ops.first() else {
                continue;
            };
            // the symbols: the induction variables of the loops around, innermost first
            let mut syms = Vec::new();
            let mut at = Some(c.lp);
            while let Some(l) = at {
                if let P::For(g) = &program.op(l).kind {
                    syms.push(g.var);
                }
                at = program.op(l).loop_parent;
            }
            let whole = if c.n == 0 {
                c.count.clone()
            } else {
                sim::expr::Expr::Binary(
                    sim::expr::BinOp::Rem,
                    Box::new(c.count.clone()),
                    Box::new(sim::expr::Expr::Const(c.n)),
                )
            };
            let Some(body) = affine_symbols(&whole, &syms) else {
                unsupported.push(
                    "a multi-buffer event id that is not an affine count of constant-bound loops"
                        .into(),
                );
                continue;
            };
            let map = format!(
                "affine_map<()[{}] -> ({body})>",
                (0..syms.len())
                    .map(|k| format!("s{k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let alias = self.alias(&map, edits);
            let ivs: Option<Vec<String>> = syms
                .iter()
                .map(|v| {
                    let name = &program.vars[v.index()].name;
                    lowered
                        .vars
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, iv)| format!("%{iv}"))
                })
                .collect();
            let Some(ivs) = ivs else {
                unsupported.push(
                    "a multi-buffer event id over a loop variable without an MLIR name".into(),
                );
                continue;
            };
            let mut lines = vec![
                format!("%{} = affine.apply #{alias}()[{}]", c.apply, ivs.join(", ")),
                format!("%{} = arith.index_cast %{} : index to i64", c.cast, c.apply),
            ];
            // each chain goes right after the counter: the one made last prints first
            for (first, name) in c.chains.iter().rev() {
                let consts: Vec<String> = (0..c.n).map(|k| self.constant(first + k)).collect();
                for (k, cn) in consts.iter().enumerate() {
                    lines.push(format!("%{cn} = arith.constant {} : i64", first + k as i64));
                }
                let mut prev = consts[0].clone();
                for k in 1..c.n {
                    let kc = self.constant(k);
                    lines.push(format!("%{kc} = arith.constant {k} : i64"));
                    let cmp = self.fresh();
                    lines.push(format!("%{cmp} = arith.cmpi eq, %{}, %{kc} : i64", c.cast));
                    let sel = if k == c.n - 1 {
                        name.clone()
                    } else {
                        self.fresh()
                    };
                    lines.push(format!(
                        "%{sel} = arith.select %{cmp}, %{}, %{prev} : i64",
                        consts[k as usize]
                    ));
                    prev = sel;
                }
            }
            // at the start of the loop's body, as bishengir puts it; else before the body's
            // first npusim op
            let loop_loc = &program.op(c.lp).loc;
            let loc = &program.op(first_op).loc;
            let key = self
                .names
                .first_inside
                .get(&(loop_loc.line, loop_loc.column))
                .copied()
                .unwrap_or((loc.line, loc.column));
            let slot = edits.before.entry(key).or_default();
            lines.append(slot);
            *slot = lines;
        }
    }

    /// The alias of `map`: an existing one of this chunk's edits, else `#map`, `#map1`, ...
    /// (names of the input's aliases skipped).
    fn alias(&self, map: &str, edits: &mut Edits) -> String {
        for a in &edits.aliases {
            if let Some((name, value)) = a.split_once(" = ") {
                if value == map {
                    return name.trim_start_matches('#').to_string();
                }
            }
        }
        let taken: std::collections::HashSet<String> = edits
            .aliases
            .iter()
            .filter_map(|a| {
                a.split_once(" = ")
                    .map(|(n, _)| n.trim_start_matches('#').to_string())
            })
            .chain(self.names.aliases.iter().cloned())
            .collect();
        let mut k = 0;
        let name = loop {
            let n = if k == 0 {
                "map".to_string()
            } else {
                format!("map{k}")
            };
            if !taken.contains(&n) {
                break n;
            }
            k += 1;
        };
        edits.aliases.push(format!("#{name} = {map}"));
        name
    }
}

/// `e` as an affine expression over symbols `s0`, `s1`, ... (`syms[k]` is `sk`); nested
/// operations parenthesised.
fn affine_symbols(e: &sim::expr::Expr, syms: &[sim::VarId]) -> Option<String> {
    use sim::expr::Expr;
    let atom = |x: &Expr| matches!(x, Expr::Const(_) | Expr::Var(_));
    Some(match e {
        Expr::Const(c) => c.to_string(),
        Expr::Var(v) => format!("s{}", syms.iter().position(|s| s == v)?),
        Expr::Binary(op, a, b) => {
            let sym = affine_symbol(*op)?;
            let side = |x: &Expr| -> Option<String> {
                let t = affine_symbols(x, syms)?;
                Some(if atom(x) { t } else { format!("({t})") })
            };
            format!("{} {sym} {}", side(a)?, side(b)?)
        }
        Expr::Unary(..) => return None,
    })
}

/// Each `mmadL1`'s `sync_related_args` (InjectSync's SyncCodegen): the events the op's template
/// issues itself, as i64 values: constants (one per value, the function's own reused; new ones
/// at the start of the function, the first made last, as MLIR inserts them), or the values of
/// ids chosen by the iteration and of the loop count.
fn mmad_args_edits(
    all: &[planner::MmadSyncArgs],
    program: &Program,
    events: &mut HivmEvents,
    names: &ChunkNames,
    func_offset: u32,
    edits: &mut Edits,
    unsupported: &mut Vec<String>,
) {
    let own = names.consts.get(&func_offset);
    let mut made: Vec<(i64, String)> = Vec::new();
    for m in all {
        let mut vals = vec![String::new(); m.args.len()];
        // InjectSync makes the default -1 first, then the M→MTE1 events, then the rest
        let order = [4usize, 5, 6, 0, 1, 2, 3];
        let mut constant = |v: i64, events: &mut HivmEvents| -> String {
            if let Some(n) = own.and_then(|c| c.get(&v)) {
                return format!("%{n}");
            }
            if let Some((_, n)) = made.iter().find(|(x, _)| *x == v) {
                return format!("%{n}");
            }
            let n = events.constant(v);
            made.push((v, n.clone()));
            format!("%{n}")
        };
        constant(-1, events);
        for k in order {
            let a = &m.args[k];
            vals[k] = match a.as_const() {
                Some(v) => constant(v, events),
                None => {
                    let r = if k == 4 {
                        events.count_value(a, program)
                    } else {
                        events.value(a, program)
                    };
                    match r {
                        Ok(v) => v,
                        Err(why) => {
                            unsupported.push(format!("an mmadL1's sync_related_args: {why}"));
                            return;
                        }
                    }
                }
            };
        }
        let loc = &program.op(m.op).loc;
        edits.suffix.insert(
            (loc.line, loc.column),
            format!(
                "sync_related_args({} : {})",
                vals.join(", "),
                vec!["i64"; vals.len()].join(", ")
            ),
        );
    }
    if !made.is_empty() {
        let lines = edits.prologue.entry(func_offset).or_default();
        for (v, n) in made.iter().rev() {
            lines.push(format!("%{n} = arith.constant {v} : i64"));
        }
    }
}

/// The affine-map spelling of an npusim operator, where it has one.
fn affine_symbol(op: sim::expr::BinOp) -> Option<&'static str> {
    use sim::expr::BinOp;
    Some(match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "floordiv",
        BinOp::Rem => "mod",
        _ => return None,
    })
}

#[cfg(test)]
#[path = "opt_tests.rs"]
mod lit_constructs;
