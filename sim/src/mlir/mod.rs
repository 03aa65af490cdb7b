//! HIVM MLIR in (docs/mlir.md): the reader builds the located tree of [`ast`]; the lowering
//! turns a function into the program model the planner, sync pass and engine read.
//!
//! The reader is hand-written (hivm-mlir.md §9): the grammar needed is small, every HIVM op
//! needs its own syntax anyway, and a hand-written lexer can re-lex a dimension list
//! (`16x?xf16`) from inside a token, which a generated lexer cannot do without a second mode.

//!
//! How the reader decides (the contract with the lowering, beyond [`ast`]'s doc comments):
//! - A chunk with no explicit `module` gets an implicit `builtin.module` (name `None`, no
//!   attributes) spanning its ops, so the lowering always finds one module per non-empty chunk.
//!   A chunk holding only comments (the part before the first `// -----`, or after a trailing
//!   one) has no ops.
//! - Op boundaries come from each family's grammar. An op of unknown syntax
//!   ([`ast::OpKind::Opaque`]) runs until the next token that can only start an op: `%r =`
//!   (or `%r:2 =`, `%a, %b =`), a dotted op name or `return` not followed by `=`/`:`, a generic
//!   `"name"(`, a block label `^bb1:` or the `}` closing its region. It keeps every `%value`
//!   used (in brackets too), the types after its last top-level `:` or `->`, its `key = value`
//!   keywords and attribute dictionaries in [`ast::Op::attrs`], and its regions: one region that
//!   holds ops makes it a [`ast::OpKind::Scope`]. A `{` opens a region (not a dictionary) when
//!   the next token starts an op, except `{name}`/`{name = ...}`/`{name, ...}`.
//! - Every `hivm.hir.*` op without its own family below is DPS when `ins(` or `outs(` follows
//!   its name, an optional `<modifier>` or `"string"` (custom_macro's macro name, kept as the
//!   modifier without quotes) and optional leading `{attrs}`; otherwise it is opaque
//!   (`get_block_idx`, `set_ffts_base_addr`, `set_mask_norm`, ...). A keyword with an SSA value
//!   and a type (`pad_value = %cst : f16`) is a one-operand group; one without a type is kept
//!   in `attrs` as `Attr::Other("%v")`, as are sync ops' `ffts_base_addr = %x`.
//! - Pipes drop `PIPE_` (`MTE2`); events drop `EVENT_ID` (`Event::Id(3)`); cores keep their
//!   word (`CUBE`). `arith.constant`'s value carries the constant's type; `true`/`false` are
//!   `Int` 1/0 of type `i1`. `scope.return` reads as [`ast::OpKind::Yield`].
//! - A view's `source_ty` is `A` of `: A to B`/`into B`/`-> B`, or the first input of
//!   `memref.reshape`'s function type.

pub mod ast;
mod attrs;
pub mod cfg;
pub mod hivm_live;
pub mod hivm_rng;
mod host;
mod lexer;
pub mod lower;
pub mod mix;
mod ops;
mod parser;
pub mod print;
mod walk;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use ast::{Chunk, Pos, Span};

/// Read a whole `.mlir` file: split at `// -----` lines (as `-split-input-file` does) and read
/// each chunk. Positions are in the whole file. Every chunk's first syntax error is reported,
/// so one run shows the problems of all chunks.
pub fn parse_file(text: &str, file: &str) -> Result<Vec<Chunk>, crate::LoadError> {
    // Recursive descent over input nested up to MAX_DEPTH levels needs more stack than a test
    // or worker thread's default 2 MiB in a debug build; a scoped thread with a stack sized for
    // the cap keeps deep input a located error, never a stack overflow. The stack is virtual
    // memory, touched only as deep as the input nests.
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("mlir-reader".into())
            .stack_size(READER_STACK)
            .spawn_scoped(s, || parse_file_here(text, file))
            .map(|h| h.join())
    })
    .unwrap_or_else(|_| Ok(parse_file_here(text, file)))
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Enough for [`parser::MAX_DEPTH`] levels of the deepest-recursing syntax in a debug build
/// (256 nested regions need about 9 MiB there; unit tests nest every kind past the cap).
const READER_STACK: usize = 64 << 20;

fn parse_file_here(text: &str, file: &str) -> Result<Vec<Chunk>, crate::LoadError> {
    let mut chunks = Vec::new();
    let mut diagnostics = Vec::new();
    for (start, end) in split_chunks(text) {
        let mut p = parser::Parser::new(text, start, end);
        let span = Span {
            start,
            end: end as u32,
        };
        match p.chunk(span) {
            Ok(c) => chunks.push(c),
            Err(e) => diagnostics.push(parser::diagnostic(file, *e)),
        }
    }
    if diagnostics.is_empty() {
        Ok(chunks)
    } else {
        Err(crate::LoadError { diagnostics })
    }
}

/// The chunks' starts and end offsets: lines that are exactly `// -----` (trimmed) separate.
fn split_chunks(text: &str) -> Vec<(Pos, usize)> {
    let mut out = Vec::new();
    let mut start = Pos {
        line: 1,
        column: 1,
        offset: 0,
    };
    let mut offset = 0usize;
    for (line, l) in (1u32..).zip(text.split_inclusive('\n')) {
        if l.trim() == "// -----" {
            out.push((start, offset));
            start = Pos {
                line: line + 1,
                column: 1,
                offset: (offset + l.len()) as u32,
            };
        }
        offset += l.len();
    }
    out.push((start, text.len()));
    out
}

use crate::config::{Config, CoreConfig};
use crate::diag::{Diagnostic, LoadError};
use crate::program::{Kernel, Loc};
use crate::types::Pipe;
use ast::{Op, OpKind};
pub use lower::{Lowered, Options, SyncOps};

/// A function of an MLIR file, loaded.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub kernel: Kernel,
    pub lowered: Lowered,
    /// The config the kernel loaded against: the one given, plus a `mix` core type when the
    /// function uses both the vector and the cube core's memories ([`with_mix_core`]).
    pub config: Config,
    /// Which chunk of the file the function is in.
    pub chunk: usize,
    /// Where the function's name is (HIVM reports an overflow there).
    pub func_pos: ast::Pos,
}

/// The functions of `chunks` that `func` selects: the one named `func`, else every function
/// with a body.
pub fn select<'a>(
    chunks: &'a [Chunk],
    func: Option<&str>,
    file: &str,
) -> Result<Vec<(usize, &'a Op)>, LoadError> {
    let all = lower::functions(chunks);
    let Some(name) = func else {
        if all.is_empty() {
            return Err(LoadError {
                diagnostics: vec![Diagnostic::error(
                    file,
                    "",
                    "the file holds no func.func with a body: nothing to simulate",
                )],
            });
        }
        return Ok(all);
    };
    let chosen: Vec<_> = all
        .iter()
        .copied()
        .filter(|(_, op)| matches!(&op.kind, OpKind::Func { name: n, .. } if n == name))
        .collect();
    if chosen.is_empty() {
        let names = function_names(&all);
        return Err(LoadError {
            diagnostics: vec![Diagnostic::error(
                file,
                "",
                format!("no function @{name} in the file"),
            )
            .with_hint(format!("its functions: {}", names.join(", ")))],
        });
    }
    Ok(chosen)
}

/// `@name` of each function, for messages that list them.
fn function_names(all: &[(usize, &Op)]) -> Vec<String> {
    all.iter()
        .filter_map(|(_, op)| match &op.kind {
            OpKind::Func { name, .. } => Some(format!("@{name}")),
            _ => None,
        })
        .collect()
}

/// Lowers and loads one function of a parsed file (`text` is the whole file).
#[allow(clippy::too_many_arguments)]
pub fn load_function(
    text: &str,
    chunks: &[Chunk],
    chunk: usize,
    func: &Op,
    file: &str,
    config: &Config,
    opts: &Options,
    blocks: Option<u32>,
) -> Result<Loaded, LoadError> {
    load_function_with(text, chunks, chunk, func, file, config, opts, &[], blocks)
}

/// [`load_function`], where `computed` (a part of `opts.params` npusim computed rather than the
/// user gave) reaches the loader only where the lowering declared it.
#[allow(clippy::too_many_arguments)]
fn load_function_with(
    text: &str,
    chunks: &[Chunk],
    chunk: usize,
    func: &Op,
    file: &str,
    config: &Config,
    opts: &Options,
    computed: &[(String, i64)],
    blocks: Option<u32>,
) -> Result<Loaded, LoadError> {
    let mut lowered = lower::lower(text, &chunks[chunk], func, file, opts)
        .map_err(|diagnostics| LoadError { diagnostics })?;
    let declared = |name: &str| {
        match &lowered.doc.value {
        crate::yaml::Value::Map(top) => top.iter().any(|(k, v)| {
            k == "params"
                && matches!(&v.value, crate::yaml::Value::Map(ps) if ps.iter().any(|(p, _)| p == name))
        }),
        _ => false,
    }
    };
    let params: Vec<(String, i64)> = opts
        .params
        .iter()
        .filter(|(n, _)| !computed.iter().any(|(c, _)| c == n) || declared(n))
        .cloned()
        .collect();
    // a MIX function runs split into its cube and vector parts where the chip has both core
    // types; `opt` plans and synchronises it whole, as HIVM does before its split
    let split = lowered.core == "mix"
        && !opts.lenient
        && config.core_named("aic").is_some()
        && config.core_named("aiv").is_some();
    let config = if split {
        lowered.doc =
            mix::split(&lowered.doc, file).map_err(|diagnostics| LoadError { diagnostics })?;
        config.clone()
    } else if lowered.core == "mix" && config.core_named("mix").is_none() {
        with_mix_core(config)
    } else {
        config.clone()
    };
    let mut kernel =
        crate::load::load_kernel_tree(&lowered.doc, file, &config, &params, blocks, opts.lenient)?;
    for p in &mut kernel.parts {
        retext(p, &lowered);
    }
    Ok(Loaded {
        kernel,
        lowered,
        config,
        chunk,
        func_pos: func.span.start,
    })
}

/// Findings name ops by their MLIR text (`hivm.hir.load ins(%arg0 : ...) outs(...)`), not
/// by the YAML the lowering built.
fn retext(p: &mut crate::Program, lowered: &Lowered) {
    let by_pos: std::collections::HashMap<(u32, u32), &str> = lowered
        .texts
        .iter()
        .map(|(pos, t)| ((pos.line, pos.column), t.as_str()))
        .collect();
    let mut texts = String::new();
    for op in &mut p.ops {
        let start = texts.len();
        let old = &p.texts[op.loc.text.0 as usize..op.loc.text.1 as usize];
        match by_pos.get(&(op.loc.line, op.loc.column)) {
            Some(t) => texts.push_str(t),
            None => texts.push_str(old),
        }
        op.loc.text = (start as u32, texts.len() as u32);
    }
    let _ = Loc::TEXT_MAX;
    p.texts = texts.into();
}

/// `config` with one more core type, `mix`: every scope and pipe of its core types. HIVM plans
/// a MIX function (one function touching UB and the cube's memories) before it is split into
/// its AIC and AIV parts; npusim plans it on this core, and runs only split kernels.
pub fn with_mix_core(config: &Config) -> Config {
    let mut c = config.clone();
    let mut mix = CoreConfig {
        name: "mix".into(),
        scopes: Vec::new(),
        pipes: Vec::new(),
    };
    for core in &config.cores {
        for s in &core.scopes {
            if !mix.scopes.iter().any(|m| m.space == s.space) {
                mix.scopes.push(*s);
            }
        }
    }
    for p in Pipe::ALL {
        if config.cores.iter().any(|c| c.pipes.contains(&p)) {
            mix.pipes.push(p);
        }
    }
    c.cores.push(mix);
    c
}

/// Whether an input is HIVM MLIR rather than a YAML program: a `.mlir` file, or text whose
/// first line that is not blank or a comment opens a module or a function (a YAML program
/// cannot start that way: `module {` is not a mapping).
pub fn looks_like_mlir(file: &str, text: &str) -> bool {
    if file.ends_with(".mlir") {
        return true;
    }
    text.lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('#'))
        .is_some_and(|l| {
            ["module", "func.func", "\"builtin.module\""]
                .iter()
                .any(|kw| l.strip_prefix(kw).is_some_and(opens_an_op))
        })
}

/// What follows an op's keyword in MLIR (a space, `{`, `@`, `(`, `<` or nothing); a YAML key
/// such as `module:` or `modules` is not an op.
fn opens_an_op(rest: &str) -> bool {
    match rest.chars().next() {
        None => true,
        Some(c) if c.is_whitespace() => !rest.trim_start().starts_with(':'),
        Some(c) => matches!(c, '{' | '@' | '(' | '<'),
    }
}

/// Loads the kernel of an MLIR file for `check`, `plan`, `run`, `compare` and `sweep`: the
/// file's one function with a body (or its one `hacc.entry` function), with its own sync ops.
pub fn load_kernel(
    text: &str,
    file: &str,
    config: &Config,
    params: &[(String, i64)],
    blocks: Option<u32>,
) -> Result<Kernel, LoadError> {
    let chunks = parse_file(text, file)?;
    let all = select(&chunks, None, file)?;
    let entries: Vec<_> = all
        .iter()
        .copied()
        .filter(|(_, op)| op.attrs.iter().any(|a| a.name == "hacc.entry"))
        .collect();
    let chosen = match (all.len(), entries.len()) {
        (1, _) => all[0],
        (_, 1) => entries[0],
        _ => {
            let names = function_names(&all);
            return Err(LoadError {
                diagnostics: vec![Diagnostic::error(
                    file,
                    "",
                    format!(
                        "the file holds {} functions ({}) and npusim simulates one kernel",
                        all.len(),
                        names.join(", ")
                    ),
                )
                .with_hint(
                    "keep one function in the file, or mark the kernel `hacc.entry`; `npusim opt` plans every function",
                )],
            });
        }
    };
    // a kernel of dynamic shape: its tiling struct, from the host tiling function the file
    // holds (the params the kernel does not read are not declared: they go to the lowering only)
    let tiling = host::tiling_params(text, &chunks, &all, chosen.1, file, params);
    let opts = Options {
        params: params.iter().chain(&tiling).cloned().collect(),
        sync: SyncOps::Keep,
        lenient: false,
    };
    let loaded = load_function_with(
        text, &chunks, chosen.0, chosen.1, file, config, &opts, &tiling, blocks,
    )?;
    if loaded.lowered.core == "mix" && loaded.kernel.parts.len() < 2 {
        let mut d = Diagnostic::error(
            file,
            "",
            format!(
                "@{} is a MIX function (it uses UB and the cube's memories), and config {} has no separate cube and vector cores to split it onto",
                loaded.lowered.func, config.name
            ),
        )
        .with_hint("run it on a config with `aic` and `aiv` core types (the built-in ascend910b); `npusim opt -hivm-plan-memory` plans it on any");
        d.line = Some(chosen.1.name_pos.line);
        d.column = Some(chosen.1.name_pos.column);
        return Err(LoadError {
            diagnostics: vec![d],
        });
    }
    Ok(loaded.kernel)
}

/// Locates diagnostics found after loading (run errors), given by YAML path, in the MLIR
/// file: the path is looked up in the document the function lowered to.
pub fn locate(text: &str, file: &str, diags: &mut [Diagnostic]) {
    let doc = parse_file(text, file).ok().and_then(|chunks| {
        let all = lower::functions(&chunks);
        let (c, f) = *all.first()?;
        let opts = Options {
            params: Vec::new(),
            sync: SyncOps::Keep,
            lenient: false,
        };
        lower::lower(text, &chunks[c], f, file, &opts)
            .ok()
            .map(|l| match l.core {
                // as load_function split it (a run error comes from a split MIX function)
                "mix" => mix::split(&l.doc, file).unwrap_or(l.doc),
                _ => l.doc,
            })
    });
    match doc {
        Some(d) => crate::load::locate_in_tree(&d, diags),
        None => {
            for d in diags.iter_mut().filter(|d| d.line.is_none()) {
                d.line = Some(1);
                d.column = Some(1);
            }
        }
    }
}
