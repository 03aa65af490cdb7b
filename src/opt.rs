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
use sim::mlir::ast::Chunk;
use sim::mlir::print::{print_chunk, Edits};
use sim::mlir::{Loaded, Options as LowerOptions, SyncOps};
use sim::program::{BarrierTarget, OpKind as P, Side};
use sim::{Config, Diagnostic, Program};
use std::collections::HashMap;
use std::path::PathBuf;

/// What `npusim opt` was asked to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OptArgs {
    pub input: Option<PathBuf>,
    pub plan_memory: bool,
    pub inject_sync: bool,
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
}

/// The usage line of `npusim opt`.
pub const USAGE: &str = "usage: npusim opt FILE [-hivm-plan-memory[=OPTIONS]] [-hivm-inject-sync[=OPTIONS]] [-split-input-file] [-verify-diagnostics] [-hacc-append-device-spec=target=NAME] [--config NAME|FILE] [--param NAME=INT ...] [-o FILE]";

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
            "split-input-file" => a.split = true,
            // npusim reads every dialect's ops (unknown ones opaquely): nothing to allow
            "allow-unregistered-dialect" => {}
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
            "hivm-inject-block-sync"
            | "hivm-graph-sync-solver"
            | "hivm-cross-core-gss"
            | "hivm-mark-multi-buffer"
            | "hivm-enable-multi-buffer"
            | "pass-pipeline" => a.unsupported.push(format!(
                "{}: npusim implements -hivm-plan-memory and -hivm-inject-sync",
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

/// Runs `npusim opt` with raw arguments (after `opt`).
pub fn opt(raw: &[String]) -> Result<(), Exit> {
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
            res.code = res.code.max(1);
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
    if !args.plan_memory && !args.inject_sync {
        return (edits, diags, unsupported);
    }
    let funcs: Vec<_> = sim::mlir::lower::functions(chunks)
        .into_iter()
        .filter(|(i, _)| *i == c)
        .collect();
    for (_, func) in funcs {
        let opts = LowerOptions {
            params: args.params.clone(),
            sync: SyncOps::Drop,
            lenient: true,
        };
        let loaded =
            match sim::mlir::load_function(text, chunks, c, func, file, config, &opts, None) {
                Ok(l) => l,
                Err(e) => {
                    for d in e.diagnostics {
                        unsupported.push(format!(
                            "{}:{}:{}: {}",
                            d.file,
                            d.line.unwrap_or(1),
                            d.column.unwrap_or(1),
                            d.message
                        ));
                    }
                    continue;
                }
            };
        plan_function(&loaded, args, &mut edits, &mut diags, &mut unsupported);
    }
    (edits, diags, unsupported)
}

fn plan_function(
    loaded: &Loaded,
    args: &OptArgs,
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
    // HIVM's lifetimes: a buffer declared outside a loop and touched in it lives for the
    // whole loop
    opts.plan.liveness = planner::LivenessMode::Scoped;
    opts.plan.inplace_last_input_first = true;
    let prepared = match pipeline::prepare(program, config, &opts) {
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
        // an output inplaced into a multi-buffer is used through the multi-buffer's value
        let ssa = |b: sim::BufferId| {
            let name = &program.buffers[b.index()].name;
            loaded
                .lowered
                .allocs
                .iter()
                .find(|a| &a.buffer == name)
                .map(|a| a.ssa.clone())
        };
        for &(gen, kill) in &prepared.planned.applied {
            if program.buffers[kill.index()].multi > 1 {
                if let (Some(g), Some(k)) = (ssa(gen), ssa(kill)) {
                    edits.rename.insert(g, k);
                }
            }
        }
    }
    if args.inject_sync {
        sync_edits(&prepared.program, &loaded.lowered, edits, unsupported);
    }
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
                if op.loop_parent.is_some() && program.buffers[b.index()].loop_parent != op.loop_parent {
                    written[group(b)] = true;
                }
            }
        }
    }
    (0..n)
        .map(sim::BufferId::new)
        .filter(|b| read[b.index()] && !written[group(*b)])
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
) {
    let mut fresh = 0u32;
    for op in &program.ops {
        let Some(side) = op.loc.inserted else {
            continue;
        };
        let key = (op.loc.line, op.loc.column);
        let mut lines = Vec::new();
        let line = match &op.kind {
            P::SetFlag { src, dst, id } | P::WaitFlag { src, dst, id } => {
                let name = if matches!(op.kind, P::SetFlag { .. }) {
                    "set_flag"
                } else {
                    "wait_flag"
                };
                let ev = match id.as_const() {
                    Some(k) => format!("<EVENT_ID{k}>"),
                    None => match event_value(id, program, lowered, &mut fresh, &mut lines) {
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
    use sim::expr::{BinOp, Expr};
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
            let sym = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "floordiv",
                BinOp::Rem => "mod",
                _ => return None,
            };
            format!("({x} {sym} {y})")
        }
        Expr::Unary(..) => return None,
    })
}
