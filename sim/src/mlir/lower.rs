//! HIVM MLIR functions into npusim programs (docs/mlir.md, "How MLIR maps").
//!
//! A function becomes a program *document*: the same [`Node`] tree a YAML program parses into,
//! with every node placed at the MLIR text it came from. The loader then reads it exactly as
//! it reads YAML, so every check, the planner, the sync pass, the race checker and the engine
//! run unchanged, and every problem the loader finds points at the MLIR line and column.
//!
//! What the lowering itself decides:
//! - gm memref arguments are gm tensors; `memref.alloc` (and `pointer_cast`, whose offsets
//!   become `at:`) are buffers of the block that declares them; `annotation.mark` with
//!   `hivm.multi_buffer = N` gives `multi: N`;
//! - view ops resolve to their root (a tensor or buffer) and a box of it (per-dimension start
//!   and length) or, after a reshape, a contiguous element range (a window);
//! - index and integer values are evaluated into npusim expressions where they feed shapes,
//!   offsets, bounds, conditions or flag ids; other scalar ops are scalar work;
//! - an op that touches memory or sync and is not understood is an error naming it, and every
//!   such op is listed at once.

use super::ast::{
    Attr, Chunk, Dim, Event, MemRefType, Op, OpFold, OpKind, Pos, Region, Type, Typed, Value,
    ViewKind,
};
use crate::diag::Diagnostic;
use crate::yaml::{Node, Value as Y};
use std::collections::HashMap;

/// What the lowering of one function gives.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The program document, as if read from YAML.
    pub doc: Node,
    /// The function's name (without `@`).
    pub func: String,
    /// The core type the function runs on: from `hivm.func_core_type` (`aiv`, `aic`), or from
    /// the memory spaces it uses; `mix` for a function using both sides.
    pub core: &'static str,
    /// Every allocation in program order, with the buffer it became.
    pub allocs: Vec<AllocSite>,
    /// Where each op of the document came from: the op's position, and its one-line text.
    pub texts: Vec<(Pos, String)>,
    /// Whether the function carried its own sync ops (`sync: manual`).
    pub manual: bool,
    /// Each loop variable: its npusim name and the MLIR induction variable (without `%`).
    pub vars: Vec<(String, String)>,
    /// The copies HIVM inserts before a loop's yield (see [`CopySite`]).
    pub copies: Vec<CopySite>,
    /// Plan-only: the allocs nothing uses (by start offset), which PlanMemory erases.
    pub erased: Vec<u32>,
}

/// A loop whose body reads its carried buffer after writing the buffer it yields: HIVM's
/// PlanMemory copies the yielded buffer into the carried one before the yield and yields the
/// carried one, so the two need not share an address. The lowering adds the copy; the printer
/// writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct CopySite {
    /// The `scf.yield` op's name position.
    pub yield_pos: Pos,
    /// `hivm.hir.copy ins(%y : T) outs(%arg : T)`.
    pub copy: String,
    /// The yield with the carried value in place of the yielded one.
    pub yield_text: String,
}

/// A `memref.alloc` (or `pointer_cast`) and the buffer it became.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocSite {
    /// The alloc op's position.
    pub pos: Pos,
    pub buffer: String,
    /// The alloc's result (without `%`).
    pub ssa: String,
    /// The op name's position (`memref.alloc`), where HIVM reports the alloc.
    pub op_pos: Pos,
}

/// How the lowering treats the sync ops of the input.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SyncOps {
    /// Kept: a function with any set/wait/barrier runs `sync: manual`.
    Keep,
    /// Dropped (for `opt -hivm-inject-sync`, which inserts its own): the program is `sync: auto`.
    Drop,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Values of scalar function arguments (`--param argN=V`), by name without `%`.
    pub params: Vec<(String, i64)>,
    pub sync: SyncOps,
    /// Plan-only lowering for `npusim opt` on lit tests, whose functions are not complete
    /// kernels: a value npusim cannot compute gets a stand-in (`docs/mlir.md`, "What `opt`
    /// assumes"), gm tensors are flat and sized by what each move takes, mmadL1 sizes follow
    /// its operands, and a read before the first write is allowed.
    pub lenient: bool,
}

/// The functions of the chunks that have a body, in order: (chunk index, the op).
pub fn functions(chunks: &[Chunk]) -> Vec<(usize, &Op)> {
    fn walk<'a>(ops: &'a [Op], chunk: usize, out: &mut Vec<(usize, &'a Op)>) {
        for op in ops {
            match &op.kind {
                OpKind::Module { body, .. } => {
                    for b in &body.blocks {
                        walk(&b.ops, chunk, out);
                    }
                }
                OpKind::Func { body, .. } if !body.blocks.is_empty() => out.push((chunk, op)),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        walk(&c.ops, i, &mut out);
    }
    out
}

/// Lowers one function (an op of kind [`OpKind::Func`]) of `chunk`.
pub fn lower(
    src: &str,
    chunk: &Chunk,
    func: &Op,
    file: &str,
    opts: &Options,
) -> Result<Lowered, Vec<Diagnostic>> {
    let OpKind::Func {
        name, args, body, ..
    } = &func.kind
    else {
        return Err(vec![Diagnostic::error(file, "", "not a function")]);
    };
    let mut l = Lower::new(src, chunk, func, file, opts);
    for a in args {
        l.arg(a);
    }
    let mut block = BlockOut::default();
    block.roots.extend(l.local_args.iter().copied());
    if body.blocks.len() > 1 {
        l.blocks(body, &mut block);
    } else if let Some(b) = body.blocks.first() {
        for op in &b.ops {
            l.op(op, &mut block);
        }
    }
    let attr_core = func
        .attrs
        .iter()
        .find(|a| a.name == "hivm.func_core_type")
        .and_then(|a| match &a.value {
            Some(Attr::Dialect { body, .. }) => Some(body.clone()),
            Some(Attr::Enum(b)) => Some(b.clone()),
            _ => None,
        });
    let core = match attr_core.as_deref() {
        Some("AIV") => "aiv",
        Some("AIC") => "aic",
        _ => match (l.uses_ub, l.uses_cube) {
            (true, true) => "mix",
            (false, true) => "aic",
            _ => "aiv",
        },
    };
    // a function marked AIV or AIC that uses the other side's memories is a MIX function
    // as far as its memories go
    let core = if l.uses_ub && l.uses_cube {
        "mix"
    } else {
        core
    };
    if !l.diags.is_empty() {
        return Err(l.diags);
    }
    let pos = func.name_pos;
    let mut top = vec![
        ("kernel".to_string(), s(pos, &sanitize(name))),
        ("core".to_string(), s(pos, core)),
        (
            "sync".to_string(),
            s(pos, if l.manual { "manual" } else { "auto" }),
        ),
    ];
    if !l.params.is_empty() {
        top.push(("params".to_string(), map(pos, l.params.clone())));
    }
    // the launch variable `block` exists only in a launched program: the stand-in conditions
    // and `get_block_idx` read it
    if l.launched {
        top.push((
            "launch".to_string(),
            map(pos, vec![("blocks".to_string(), int(pos, 1))]),
        ));
    }
    if !l.tensors.is_empty() {
        top.push(("gm".to_string(), map(pos, l.tensors.clone())));
    }
    let buffers = l.render_buffers(&block.roots);
    if !buffers.is_empty() {
        top.push(("buffers".to_string(), map(pos, buffers)));
    }
    if !block.views.is_empty() {
        top.push(("views".to_string(), map(pos, block.views)));
    }
    top.push(("body".to_string(), seq(pos, block.ops)));
    Ok(Lowered {
        doc: map(pos, top),
        func: name.clone(),
        core,
        allocs: l.allocs,
        texts: l.texts,
        manual: l.manual,
        vars: l.vars,
        copies: l.copies,
        erased: l.erased,
    })
}

impl<'a> Lower<'a> {
    fn new(src: &'a str, chunk: &'a Chunk, func: &Op, file: &'a str, opts: &'a Options) -> Self {
        Lower {
            src,
            file,
            opts,
            chunk,
            diags: Vec::new(),
            vals: HashMap::new(),
            roots: Vec::new(),
            names: HashMap::new(),
            allocs: Vec::new(),
            texts: Vec::new(),
            tensors: Vec::new(),
            params: Vec::new(),
            uses_ub: false,
            uses_cube: false,
            manual: false,
            vars: Vec::new(),
            launched: false,
            pre_alloc: HashMap::new(),
            accesses: Vec::new(),
            seq: 0,
            copies: Vec::new(),
            erased: Vec::new(),
            stores: Vec::new(),
            view_sizes: HashMap::new(),
            local_args: Vec::new(),
            func_text: if opts.lenient {
                super::print::uncommented(
                    src.get(func.span.start.offset as usize..func.span.end as usize)
                        .unwrap_or(""),
                )
            } else {
                String::new()
            },
        }
    }
}

/// Runs a host function (the tiling function the compiler emits beside a kernel) as far as
/// its integer arithmetic goes, and gives what it stores into its memref arguments at constant
/// indices: (the argument's position, the indices, the value). `opts.params` give its scalar
/// arguments and its arguments' dynamic dimensions (`argN_dimK`) by its own argument names.
pub fn host_stores(
    src: &str,
    chunk: &Chunk,
    func: &Op,
    file: &str,
    opts: &Options,
) -> Vec<(usize, Vec<i64>, i64)> {
    let OpKind::Func { args, body, .. } = &func.kind else {
        return Vec::new();
    };
    let mut l = Lower::new(src, chunk, func, file, opts);
    for a in args {
        l.arg(a);
    }
    let mut block = BlockOut::default();
    if let Some(b) = body.blocks.first() {
        for op in &b.ops {
            l.op(op, &mut block);
        }
    }
    l.stores
        .iter()
        .filter_map(|(m, at, v)| {
            let i = args.iter().position(|a| a.value.name == *m)?;
            Some((i, at.clone(), (*v)?))
        })
        .collect()
}

/// A value of the function as far as the program model needs it.
#[derive(Clone, Debug)]
enum Val {
    /// An integer (index, iN) as an npusim expression; `konst` when it is a constant.
    Int { expr: String, konst: Option<i64> },
    /// A memref: part of a root.
    Mem(Mem),
    /// A scalar the lowering does not evaluate (a float, a loaded value, an argument without a
    /// `--param`): `what` says where it comes from.
    Unknown { what: String },
    /// A tensor-dialect value: not memory the simulator sees.
    Tensor,
    /// A value whose definition was already reported as an error: its uses say nothing more.
    Poisoned,
}

#[derive(Clone, Debug)]
struct Mem {
    root: usize,
    sel: Sel,
    /// The value's own type.
    ty: MemRefType,
}

#[derive(Clone, Debug)]
enum Sel {
    Whole,
    /// Per dimension of the root: start expression and length.
    Box(Vec<(String, u64)>),
    /// A contiguous range of the root's elements: start expression and length.
    Range(String, u64),
    /// A box whose extents are computed when the kernel runs (a tail tile: `affine.min`):
    /// per dimension of the root, start and length expressions.
    DynBox(Vec<(String, String)>),
    /// A contiguous range of a one-dimensional root whose length is computed when the kernel
    /// runs: start and length expressions.
    DynRange(String, String),
}

#[derive(Clone, Debug)]
struct Root {
    name: String,
    tensor: bool,
    shape: Vec<u64>,
    dtype: String,
    scope: &'static str,
    multi: u32,
    at: Option<Vec<i64>>,
    share: Option<usize>,
    pos: Pos,
    /// A `select` view: the roots it may be (an `scf.if`'s result, a loop-carried value, an
    /// `arith.select` of memrefs); empty for a tensor or buffer.
    select: Vec<usize>,
    /// HIVM's `ignoreInplace`: a buffer met through control flow or a select never takes an
    /// input's address (`inplace: false`).
    inplace: bool,
    /// `hivm.preload_local_buffer`: live for its whole enclosing loop (`preload: true`).
    preload: bool,
}

#[derive(Default)]
struct BlockOut {
    ops: Vec<Node>,
    roots: Vec<usize>,
    views: Vec<(String, Node)>,
    /// Scalar ops seen since the last op that was written.
    scalar: u64,
    scalar_pos: Pos,
}

struct Lower<'a> {
    /// The whole file's text (spans index it).
    src: &'a str,
    file: &'a str,
    opts: &'a Options,
    chunk: &'a Chunk,
    diags: Vec<Diagnostic>,
    vals: HashMap<(String, u32), Val>,
    roots: Vec<Root>,
    /// Names given out, so each is unique.
    names: HashMap<String, u32>,
    allocs: Vec<AllocSite>,
    texts: Vec<(Pos, String)>,
    tensors: Vec<(String, Node)>,
    params: Vec<(String, Node)>,
    uses_ub: bool,
    uses_cube: bool,
    manual: bool,
    vars: Vec<(String, String)>,
    launched: bool,
    /// Roots created ahead of their alloc op (a buffer a loop yields), by the op's offset.
    pre_alloc: HashMap<u32, usize>,
    /// Every memory access in program order: (op sequence number, root, whether it writes).
    accesses: Vec<(u32, usize, bool)>,
    seq: u32,
    copies: Vec<CopySite>,
    erased: Vec<u32>,
    /// Every `memref.store` of an integer at constant indices: (the memref, the indices, the
    /// value when it is a constant), for [`host_stores`].
    stores: Vec<(String, Vec<i64>, Option<i64>)>,
    /// A `memref.view` sized when the kernel runs: its result's dynamic sizes, as expressions.
    view_sizes: HashMap<String, Vec<String>>,
    /// The function's text without comments (plan-only: which values are used).
    func_text: String,
    /// Plan-only: the roots standing for on-chip memref arguments ([`Lower::local_arg`]).
    local_args: Vec<usize>,
}

/// What [`Lower::snapshot`] keeps.
struct Snapshot {
    diags: usize,
    vals: HashMap<(String, u32), Val>,
    roots: usize,
    names: HashMap<String, u32>,
    allocs: usize,
    texts: usize,
    vars: usize,
    uses: (bool, bool, bool, bool),
    accesses: usize,
    copies: usize,
}

fn s(pos: Pos, text: &str) -> Node {
    Node {
        line: pos.line,
        column: pos.column,
        value: Y::Str(text.to_string()),
    }
}

fn int(pos: Pos, v: i64) -> Node {
    Node {
        line: pos.line,
        column: pos.column,
        value: Y::Int(v),
    }
}

fn map(pos: Pos, entries: Vec<(String, Node)>) -> Node {
    Node {
        line: pos.line,
        column: pos.column,
        value: Y::Map(entries),
    }
}

fn seq(pos: Pos, items: Vec<Node>) -> Node {
    Node {
        line: pos.line,
        column: pos.column,
        value: Y::Seq(items),
    }
}

fn boolean(pos: Pos, b: bool) -> Node {
    Node {
        line: pos.line,
        column: pos.column,
        value: Y::Bool(b),
    }
}

/// An npusim name for an MLIR value or symbol: letters, digits and `_`, not starting with a
/// digit and not a reserved word.
pub fn sanitize(raw: &str) -> String {
    let mut out: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty()
        || out.starts_with(|c: char| c.is_ascii_digit())
        || matches!(out.as_str(), "min" | "max" | "true" | "false" | "all")
    {
        out.insert(0, 'v');
    }
    out
}

/// npusim's dtype for an MLIR element type.
fn dtype(t: &Type) -> Option<&'static str> {
    Some(match t {
        Type::Int { bits, signed } => match (bits, signed) {
            (1, _) => "i1",
            (8, Some(false)) => "u8",
            (8, _) => "i8",
            (16, Some(false)) => "u16",
            (16, _) => "i16",
            (32, Some(false)) => "u32",
            (32, _) => "i32",
            (64, Some(false)) => "u64",
            (64, _) => "i64",
            _ => return None,
        },
        Type::Float(f) => match f.as_str() {
            "f16" => "f16",
            "bf16" => "bf16",
            "f32" => "f32",
            _ => return None,
        },
        _ => return None,
    })
}

/// npusim's scope for an HIVM address space.
fn scope(space: &str) -> Option<&'static str> {
    Some(match space {
        "gm" => "gm",
        "ub" => "ub",
        "cbuf" => "l1",
        "ca" => "l0a",
        "cb" => "l0b",
        "cc" => "l0c",
        _ => return None,
    })
}

fn paren(e: &str) -> String {
    if e.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        e.to_string()
    } else {
        format!("({e})")
    }
}

/// The one-line text of an op, for findings: its source with runs of white space joined.
pub fn one_line(src: &str, max: usize) -> String {
    let mut out = String::new();
    let mut space = false;
    for line in src.lines() {
        let line = strip_comment(line);
        for c in line.chars() {
            if c.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
        space = !out.is_empty();
    }
    if out.chars().count() > max {
        let mut t: String = out.chars().take(max.saturating_sub(3)).collect();
        t.push_str("...");
        return t;
    }
    out
}

/// `line` without a trailing `//` comment (outside strings).
pub fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && b.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

impl<'a> Lower<'a> {
    fn error(&mut self, pos: Pos, message: String, hint: Option<String>) {
        let mut d = Diagnostic::error(self.file, "", message);
        d.line = Some(pos.line);
        d.column = Some(pos.column);
        d.hint = hint;
        self.diags.push(d);
    }

    fn text_of(&self, op: &Op) -> String {
        let start = op.span.start.offset as usize;
        let end = op.span.end as usize;
        // an op with regions: its header only
        let src = self.src.get(start..end).unwrap_or("");
        let header = match src.find('{') {
            Some(i) if op_has_regions(op) => &src[..i],
            _ => src,
        };
        one_line(header, crate::program::Loc::TEXT_MAX)
    }

    fn fresh(&mut self, raw: &str) -> String {
        let base = sanitize(raw);
        let n = self.names.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base
        } else {
            format!("{base}_{}", *n - 1)
        }
    }

    fn set(&mut self, v: &Value, val: Val) {
        self.vals.insert((v.name.clone(), v.index), val);
    }

    fn get(&self, v: &Value) -> Option<&Val> {
        self.vals.get(&(v.name.clone(), v.index))
    }

    fn set_results(&mut self, op: &Op, val: Val) {
        for r in &op.results {
            for i in 0..r.count.max(1) {
                self.vals.insert((r.name.clone(), i), val.clone());
            }
        }
    }

    /// The first result value of `op`.
    fn result(op: &Op) -> Option<Value> {
        op.results.first().map(|r| Value {
            name: r.name.clone(),
            index: 0,
            pos: r.pos,
        })
    }

    fn arg(&mut self, a: &super::ast::FuncArg) {
        match &a.ty {
            Type::MemRef(m) => {
                // a dynamic dimension takes its size from `--param argN_dimK` (the sizes the
                // kernel runs with; the tiling struct's values come the same way)
                let given = if self.opts.lenient {
                    None
                } else {
                    self.given_dims(m, &a.value.name, a.value.pos)
                };
                let m = &given.unwrap_or_else(|| m.clone());
                let shape = if self.opts.lenient {
                    Some(vec![1])
                } else {
                    self.static_shape(m, a.value.pos, &a.value.name)
                };
                let Some(shape) = shape else {
                    self.set(&a.value, Val::Poisoned);
                    return;
                };
                let Some(dt) = self.dtype_of(m, a.value.pos) else {
                    return;
                };
                let sc = m.space.as_deref().unwrap_or("gm");
                if sc != "gm" && self.opts.lenient {
                    self.local_arg(a, m, dt);
                    return;
                }
                if sc != "gm" {
                    self.error(
                        a.value.pos,
                        format!(
                            "argument %{} is in {sc}; npusim's kernel arguments are gm tensors",
                            a.value.name
                        ),
                        Some("give the argument #hivm.address_space<gm>".into()),
                    );
                    return;
                }
                // plan-only: one flat tensor large enough for any move
                let shape = if self.opts.lenient {
                    vec![1u64 << 24]
                } else {
                    shape
                };
                let name = self.fresh(&a.value.name);
                let pos = a.value.pos;
                self.tensors.push((
                    name.clone(),
                    map(
                        pos,
                        vec![
                            (
                                "shape".into(),
                                seq(pos, shape.iter().map(|d| int(pos, *d as i64)).collect()),
                            ),
                            ("dtype".into(), s(pos, dt)),
                        ],
                    ),
                ));
                self.roots.push(Root {
                    name,
                    tensor: true,
                    shape,
                    dtype: dt.to_string(),
                    scope: "gm",
                    multi: 1,
                    at: None,
                    share: None,
                    pos,
                    select: Vec::new(),
                    inplace: true,
                    preload: false,
                });
                let root = self.roots.len() - 1;
                self.set(
                    &a.value,
                    Val::Mem(Mem {
                        root,
                        sel: Sel::Whole,
                        ty: m.clone(),
                    }),
                );
            }
            Type::Index | Type::Int { .. } => {
                let given = self
                    .opts
                    .params
                    .iter()
                    .find(|(k, _)| *k == a.value.name || *k == sanitize(&a.value.name))
                    .map(|(_, v)| *v);
                match given {
                    Some(v) => {
                        let name = self.fresh(&a.value.name);
                        self.params.push((name.clone(), int(a.value.pos, v)));
                        self.set(
                            &a.value,
                            Val::Int {
                                expr: name,
                                konst: Some(v),
                            },
                        );
                    }
                    None => self.set(
                        &a.value,
                        Val::Unknown {
                            what: format!(
                                "function argument %{} (give its value with --param {}=N)",
                                a.value.name,
                                sanitize(&a.value.name)
                            ),
                        },
                    ),
                }
            }
            _ => self.set(
                &a.value,
                Val::Unknown {
                    what: format!("function argument %{}", a.value.name),
                },
            ),
        }
    }

    fn static_shape(&mut self, m: &MemRefType, pos: Pos, what: &str) -> Option<Vec<u64>> {
        let mut out = Vec::new();
        for d in &m.shape {
            match d {
                // plan-only: HIVM plans an empty buffer (0 bytes; docs/mlir.md)
                Dim::Static(0) if self.opts.lenient => out.push(0),
                Dim::Static(0) => {
                    self.error(
                        pos,
                        format!("%{what} is empty (a dimension of 0): npusim's buffers hold at least one element, and HIVM places an empty one where a one-element buffer would not fit"),
                        None,
                    );
                    return None;
                }
                Dim::Static(n) => out.push(*n),
                Dim::Dynamic => {
                    let ks: Vec<String> = m
                        .shape
                        .iter()
                        .enumerate()
                        .filter(|(_, d)| **d == Dim::Dynamic)
                        .map(|(k, _)| format!("--param {}=N", dim_param(what, k)))
                        .collect();
                    self.error(
                        pos,
                        format!(
                            "%{what} has a dynamic shape; npusim plans and runs static shapes only"
                        ),
                        Some(format!(
                            "give the sizes the kernel runs with ({}), or the memref static sizes",
                            ks.join(", ")
                        )),
                    );
                    return None;
                }
            }
        }
        if out.is_empty() {
            out.push(1);
        }
        Some(out)
    }

    fn dtype_of(&mut self, m: &MemRefType, pos: Pos) -> Option<&'static str> {
        match dtype(&m.elem) {
            Some(d) => Some(d),
            None => {
                self.error(
                    pos,
                    format!(
                        "element type {} is not one npusim models",
                        type_name(&m.elem)
                    ),
                    Some("npusim's dtypes: i1 i8 u8 i16 u16 f16 bf16 i32 u32 f32 i64 u64".into()),
                );
                None
            }
        }
    }

    /// The expression of an integer value, or an error at `at` naming why it is unknown.
    fn expr(&mut self, v: &Value, at: Pos, role: &str) -> Option<String> {
        match self.get(v).cloned() {
            Some(Val::Int { expr, .. }) => Some(expr),
            Some(Val::Poisoned) => None,
            Some(Val::Unknown { .. }) if self.opts.lenient => {
                let s = stand_in(role);
                self.launched |= s.contains("block");
                Some(s)
            }
            Some(Val::Unknown { what }) => {
                self.error(
                    at,
                    format!(
                        "{role} %{} is not known to npusim: it comes from {what}",
                        v.name
                    ),
                    None,
                );
                None
            }
            Some(_) => {
                self.error(at, format!("{role} %{} is not an integer", v.name), None);
                None
            }
            None => {
                self.error(
                    v.pos,
                    format!("%{} is used but never defined", v.name),
                    None,
                );
                None
            }
        }
    }

    fn fold(&mut self, f: &OpFold, at: Pos, role: &str) -> Option<String> {
        match f {
            OpFold::Const(c) => Some(c.to_string()),
            OpFold::Value(v) => self.expr(v, at, role),
        }
    }

    fn konst(&self, v: &Value) -> Option<i64> {
        match self.get(v) {
            Some(Val::Int { konst, .. }) => *konst,
            _ => None,
        }
    }

    fn mem(&mut self, v: &Value, op: &str) -> Option<Mem> {
        match self.get(v).cloned() {
            Some(Val::Mem(m)) => Some(m),
            Some(Val::Poisoned) => None,
            Some(_) => {
                self.error(
                    v.pos,
                    format!("{op}: %{} is not a memref npusim can see", v.name),
                    None,
                );
                None
            }
            None => {
                self.error(
                    v.pos,
                    format!("%{} is used but never defined", v.name),
                    None,
                );
                None
            }
        }
    }

    /// The operand text of a memory value: `name`, `name[a:b, c:d]`, or a window declared in
    /// `block` for a range of a buffer.
    fn operand(&mut self, m: &Mem, pos: Pos, block: &mut BlockOut) -> String {
        let root = &self.roots[m.root];
        let name = root.name.clone();
        let slice = |st: &str, len: &str| match (st.parse::<i64>(), len.parse::<i64>()) {
            (Ok(a), Ok(b)) => format!("{a} : {}", a + b),
            (Ok(0), _) => format!("0 : {len}"),
            _ => format!("{st} : {} + {}", paren(st), paren(len)),
        };
        match &m.sel {
            Sel::Whole => name,
            Sel::DynBox(b) => {
                let parts: Vec<String> = b.iter().map(|(st, len)| slice(st, len)).collect();
                format!("{name}[{}]", parts.join(", "))
            }
            Sel::DynRange(st, len) => format!("{name}[{}]", slice(st, len)),
            Sel::Box(b) => {
                let whole = b
                    .iter()
                    .zip(&root.shape)
                    .all(|((st, len), d)| st == "0" && len == d);
                if whole {
                    return name;
                }
                let parts: Vec<String> = b
                    .iter()
                    .map(|(st, len)| {
                        let end = match st.parse::<i64>() {
                            Ok(c) => (c + *len as i64).to_string(),
                            Err(_) => format!("{} + {len}", paren(st)),
                        };
                        format!("{st} : {end}")
                    })
                    .collect();
                format!("{name}[{}]", parts.join(", "))
            }
            Sel::Range(st, len) => {
                let total: u64 = root.shape.iter().product();
                if st == "0" && *len == total {
                    return name;
                }
                if root.shape.len() == 1 || root.tensor {
                    if root.shape.len() == 1 {
                        let end = match st.parse::<i64>() {
                            Ok(c) => (c + *len as i64).to_string(),
                            Err(_) => format!("{} + {len}", paren(st)),
                        };
                        return format!("{name}[{st} : {end}]");
                    }
                    // a range of a many-dimensional gm tensor: the rows it covers
                    let row: u64 = root.shape[1..].iter().product();
                    let first = format!("{} / {row}", paren(st));
                    let rows = len.div_ceil(row).max(1);
                    return format!("{name}[{first} : {} + {rows}]", paren(&first));
                }
                let w = self.fresh(&format!("{name}_w"));
                block.views.push((
                    w.clone(),
                    map(
                        pos,
                        vec![
                            ("of".into(), s(pos, &name)),
                            ("offset".into(), s(pos, st)),
                            ("shape".into(), seq(pos, vec![int(pos, *len as i64)])),
                        ],
                    ),
                ));
                w
            }
        }
    }

    /// Records that the current op reads or writes `v` (a memory value).
    fn access(&mut self, v: &Value, write: bool) {
        if let Some(Val::Mem(m)) = self.get(v).cloned() {
            for r in self.members(m.root) {
                self.accesses.push((self.seq, r, write));
            }
        }
    }

    /// Declares gm tensor `root` one-dimensional, `total` elements (nothing used it yet).
    fn flatten_tensor(&mut self, root: usize, total: u64) {
        let name = self.roots[root].name.clone();
        self.roots[root].shape = vec![total];
        if let Some((_, node)) = self.tensors.iter_mut().find(|(n, _)| *n == name) {
            if let Y::Map(fields) = &mut node.value {
                for (k, v) in fields.iter_mut() {
                    if k == "shape" {
                        let (line, column) = (v.line, v.column);
                        *v = Node {
                            line,
                            column,
                            value: Y::Seq(vec![Node {
                                line,
                                column,
                                value: Y::Int(total as i64),
                            }]),
                        };
                    }
                }
            }
        }
    }

    /// The elements a memory value selects.
    fn count(&self, m: &Mem) -> u64 {
        match &m.sel {
            Sel::Whole => self.roots[m.root].shape.iter().product(),
            Sel::Box(b) => b.iter().map(|(_, l)| *l).product(),
            Sel::Range(_, l) => *l,
            // not known before the kernel runs: the root's (an upper bound)
            Sel::DynBox(_) | Sel::DynRange(..) => self.roots[m.root].shape.iter().product(),
        }
    }

    fn render_buffers(&mut self, roots: &[usize]) -> Vec<(String, Node)> {
        let mut out = Vec::new();
        for &r in roots {
            let root = &self.roots[r];
            if !root.select.is_empty() {
                continue;
            }
            let pos = root.pos;
            // an on-chip argument takes no bytes of the plan (see `local_arg`)
            let shape: &[u64] = if self.local_args.contains(&r) {
                &[0]
            } else {
                &root.shape
            };
            let mut fields = vec![
                ("scope".to_string(), s(pos, root.scope)),
                (
                    "shape".to_string(),
                    seq(pos, shape.iter().map(|d| int(pos, *d as i64)).collect()),
                ),
                ("dtype".to_string(), s(pos, &root.dtype)),
            ];
            if root.multi > 1 {
                fields.push(("multi".into(), int(pos, root.multi as i64)));
            }
            if let Some(at) = &root.at {
                fields.push((
                    "at".into(),
                    seq(pos, at.iter().map(|a| int(pos, *a)).collect()),
                ));
            }
            if !root.inplace {
                fields.push(("inplace".into(), boolean(pos, false)));
            }
            if root.preload {
                fields.push(("preload".into(), boolean(pos, true)));
            }
            if let Some(sh) = root.share {
                fields.push(("share".into(), s(pos, &self.roots[sh].name.clone())));
            }
            out.push((root.name.clone(), map(pos, fields)));
        }
        out
    }

    fn flush_scalar(&mut self, block: &mut BlockOut) {
        if block.scalar > 0 {
            let pos = block.scalar_pos;
            block.ops.push(map(
                pos,
                vec![(
                    "scalar".into(),
                    map(pos, vec![("cycles".into(), int(pos, block.scalar as i64))]),
                )],
            ));
            self.texts
                .push((pos, format!("{} scalar ops", block.scalar)));
            block.scalar = 0;
        }
    }

    fn push(
        &mut self,
        op: &Op,
        block: &mut BlockOut,
        key: &str,
        value: Node,
        extra: Vec<(String, Node)>,
    ) {
        self.flush_scalar(block);
        let pos = op.name_pos;
        let mut item = vec![(key.to_string(), value)];
        item.extend(extra);
        block.ops.push(map(pos, item));
        let text = self.text_of(op);
        self.texts.push((pos, text));
    }

    /// `sync_block_set[<CORE>, <TPIPE>, <PIPE>] flag = F` becomes `cross_set: { mode, pipe:
    /// TPIPE, id: F }` and `sync_block_wait[<CORE>, <TPIPE>, <PIPE>] flag = F` becomes
    /// `cross_wait: { id: F, pipe: PIPE }`, each marked with the core type that runs it (`core:
    /// aic` for CUBE, `aiv` for VECTOR): [`super::mix::split`] puts it in that part and drops
    /// the mark. The mode is 2 (a cube core and its vector cores) unless the op says
    /// `INTER_BLOCK_SYNCHRONIZATION` (mode 0: every core of the type in the launch).
    fn cross_op(
        &mut self,
        op: &Op,
        core: &str,
        pipes: &[String],
        flag: &Event,
        block: &mut BlockOut,
    ) {
        let side = match core
            .trim_start_matches("#hivm.tcore_type<")
            .trim_end_matches('>')
        {
            "CUBE" => "aic",
            "VECTOR" => "aiv",
            other => {
                self.error(
                    op.name_pos,
                    format!("{}: core type {other} is not CUBE or VECTOR", op.name),
                    Some("a cross-core flag is set and waited for by the cube core (CUBE) or the vector cores (VECTOR)".into()),
                );
                return;
            }
        };
        let pipe = |i: usize| {
            pipes.get(i).map(|p| {
                let p = p.trim_start_matches("#hivm.pipe<").trim_end_matches('>');
                p.strip_prefix("PIPE_").unwrap_or(p).to_ascii_lowercase()
            })
        };
        let (Some(tpipe), Some(wpipe)) = (pipe(0), pipe(1)) else {
            self.error(
                op.name_pos,
                format!("{}: expected [<CORE>, <PIPE>, <PIPE>]", op.name),
                None,
            );
            return;
        };
        let id = match flag {
            Event::Id(n) => n.to_string(),
            Event::Value(v) => match self.expr(v, v.pos, "the flag") {
                Some(e) => e,
                None => return,
            },
        };
        let pos = op.name_pos;
        let inter = self.src
            [op.span.start.offset as usize..(op.span.end as usize).min(self.src.len())]
            .contains("INTER_BLOCK_SYNCHRONIZATION");
        let (key, mut fields) = if matches!(op.kind, OpKind::SyncBlockSet { .. }) {
            (
                "cross_set",
                vec![
                    ("mode".to_string(), int(pos, if inter { 0 } else { 2 })),
                    ("pipe".to_string(), s(pos, &tpipe)),
                    ("id".to_string(), s(pos, &id)),
                ],
            )
        } else {
            (
                "cross_wait",
                vec![
                    ("id".to_string(), s(pos, &id)),
                    ("pipe".to_string(), s(pos, &wpipe)),
                ],
            )
        };
        fields.push((super::mix::SIDE.to_string(), s(pos, side)));
        self.push(op, block, key, map(pos, fields), vec![]);
    }

    /// The flags InjectSync hands an `mmadL1` in its `sync_related_args` (SyncCodegen's
    /// `UpdateMmadL1SyncTemplateInter`, HIVM 1.2.0): the events its template waits on before
    /// reading A and B from L1 (MTE2 -> MTE1: args 0 and 1) and sets once it has read them, for
    /// the next loads of A and B (MTE1 -> MTE2: args 2 and 3); `-1` is none. The K-loop index
    /// (arg 4) and the M -> MTE1 events of the template's L0 double buffer (args 5, 6) order
    /// work inside the macro, which npusim's `mmad_l1` already models. Returns (event id, whether
    /// it is a set); dropped with the other sync ops when `opt` injects its own.
    fn mmad_sync_args(&mut self, op: &Op, args: &[Typed]) -> Vec<(String, bool)> {
        if self.opts.sync == SyncOps::Drop || args.is_empty() {
            return Vec::new();
        }
        if args.len() != 7 {
            self.error(
                op.name_pos,
                format!(
                    "{}: sync_related_args holds {} values; HIVM's mmadL1 takes 7",
                    op.name,
                    args.len()
                ),
                None,
            );
            return Vec::new();
        }
        let mut out = Vec::new();
        for (i, a) in args.iter().enumerate().take(4) {
            if matches!(
                self.get(&a.value),
                Some(Val::Int {
                    konst: Some(-1),
                    ..
                })
            ) {
                continue;
            }
            let Some(id) = self.expr(&a.value, a.value.pos, "an mmadL1 event") else {
                continue;
            };
            out.push((id, i >= 2));
        }
        if !out.is_empty() {
            self.manual = true;
        }
        out
    }

    fn sync_node(
        &mut self,
        op: &Op,
        block: &mut BlockOut,
        key: &str,
        src: &str,
        dst: &str,
        id: &str,
    ) {
        let pos = op.name_pos;
        let node = map(
            pos,
            vec![
                ("src".into(), s(pos, src)),
                ("dst".into(), s(pos, dst)),
                ("id".into(), s(pos, id)),
            ],
        );
        self.push(op, block, key, node, vec![]);
    }

    fn scalar_work(&mut self, op: &Op, block: &mut BlockOut) {
        if block.scalar == 0 {
            block.scalar_pos = op.name_pos;
        }
        block.scalar += 1;
    }

    fn region(&mut self, r: &Region) -> BlockOut {
        let mut out = BlockOut::default();
        if let Some(b) = r.blocks.first() {
            for op in &b.ops {
                self.op(op, &mut out);
            }
            if r.blocks.len() > 1 {
                let p = r.blocks[1]
                    .ops
                    .first()
                    .map(|o| o.name_pos)
                    .unwrap_or_default();
                self.error(
                    p,
                    "a region with more than one block (cf.br control flow) is not read by npusim"
                        .into(),
                    Some("npusim reads structured control flow: scf.for, scf.if".into()),
                );
            }
        }
        self.flush_scalar(&mut out);
        out
    }

    /// A block's fields beside its op key: `buffers`, `views`, `body` (or a branch's list).
    fn block_fields(&mut self, out: BlockOut, pos: Pos, body_key: &str) -> Vec<(String, Node)> {
        let mut fields = Vec::new();
        let buffers = self.render_buffers(&out.roots);
        if !buffers.is_empty() {
            fields.push(("buffers".into(), map(pos, buffers)));
        }
        if !out.views.is_empty() {
            fields.push(("views".into(), map(pos, out.views)));
        }
        fields.push((body_key.into(), seq(pos, out.ops)));
        fields
    }

    fn op(&mut self, op: &Op, block: &mut BlockOut) {
        match &op.kind {
            OpKind::Constant { value, ty } => {
                let v = match (value, ty) {
                    (Attr::Int { value, .. }, Type::Index | Type::Int { .. }) => {
                        match i64::try_from(*value) {
                            Ok(k) => Val::Int {
                                expr: k.to_string(),
                                konst: Some(k),
                            },
                            Err(_) => Val::Unknown {
                                what: "an integer constant outside 64 bits".into(),
                            },
                        }
                    }
                    (_, Type::Tensor { .. }) => Val::Tensor,
                    _ => Val::Unknown {
                        what: format!("the constant at line {}", op.name_pos.line),
                    },
                };
                self.set_results(op, v);
            }
            OpKind::Scalar {
                operands,
                predicate,
                map: amap,
                dims,
                types,
            } => {
                // a select of memrefs: either buffer, decided when it runs
                if op.name == "arith.select" {
                    let mems: Vec<Mem> = operands
                        .iter()
                        .skip(1)
                        .filter_map(|v| match self.get(v) {
                            Some(Val::Mem(m)) => Some(m.clone()),
                            _ => None,
                        })
                        .collect();
                    if mems.len() == 2 {
                        let roots: Vec<usize> = mems.iter().map(|m| m.root).collect();
                        let ty = mems[0].ty.clone();
                        let v = self.merge(&roots, &ty, op.name_pos, block, true, false);
                        self.set_results(op, v);
                        return;
                    }
                }
                let v = self.scalar(op, operands, predicate.as_deref(), amap.as_ref(), *dims, types);
                self.set_results(op, v);
                self.scalar_work(op, block);
            }
            OpKind::Alloc { dynamic_sizes, ty } => {
                if !dynamic_sizes.is_empty() {
                    self.error(
                        op.name_pos,
                        "memref.alloc with dynamic sizes: npusim plans static sizes only".into(),
                        Some("give the alloc the static size the kernel runs with".into()),
                    );
                    return;
                }
                self.alloc(op, ty, None, block);
            }
            OpKind::PointerCast {
                addrs,
                dynamic_sizes,
                ty,
            } => {
                if !dynamic_sizes.is_empty() {
                    self.error(
                        op.name_pos,
                        "hivm.hir.pointer_cast with dynamic sizes: npusim plans static sizes only"
                            .into(),
                        None,
                    );
                    return;
                }
                let mut at = Vec::new();
                for a in addrs {
                    match self.konst(a) {
                        Some(k) => at.push(k),
                        None => {
                            self.error(
                                a.pos,
                                format!("pointer_cast address %{} is not a constant", a.name),
                                None,
                            );
                            return;
                        }
                    }
                }
                self.alloc(op, ty, Some(at), block);
            }
            OpKind::Mark { target } => {
                if op.attrs.iter().any(|a| a.name == "hivm.preload_local_buffer") {
                    if let Some(Val::Mem(m)) = self.get(target).cloned() {
                        self.roots[m.root].preload = true;
                    }
                }
                let n = op.attrs.iter().find(|a| a.name == "hivm.multi_buffer");
                if let Some(a) = n {
                    let k = match &a.value {
                        Some(Attr::Int { value, .. }) => u32::try_from(*value).ok(),
                        _ => None,
                    };
                    let Some(k) = k.filter(|k| *k >= 1) else {
                        self.error(a.pos, "hivm.multi_buffer must be a positive integer".into(), None);
                        return;
                    };
                    if let Some(m) = self.mem(target, "annotation.mark") {
                        let root = &mut self.roots[m.root];
                        if root.tensor {
                            self.error(
                                target.pos,
                                "hivm.multi_buffer on a gm tensor: only on-chip buffers have slots"
                                    .into(),
                                None,
                            );
                        } else if root.at.is_none() {
                            root.multi = k;
                        }
                    }
                }
            }
            OpKind::View {
                kind,
                source,
                ty,
                ..
            } => self.view(op, kind, source, ty),
            OpKind::Dps {
                modifier,
                ins,
                outs,
                groups,
                results,
            } => {
                let _ = results;
                self.dps(op, modifier.as_deref(), ins, outs, groups, block);
            }
            OpKind::For {
                iv,
                lower,
                upper,
                step,
                iter_args,
                body,
                ..
            } => self.for_op(op, iv, lower, upper, step, iter_args, body, block),
            OpKind::If {
                cond, then, els, ..
            } => self.if_op(op, cond, then, els.as_ref(), block),
            OpKind::While {
                inits,
                before,
                after,
            } => self.while_op(op, inits, before, after, block),
            OpKind::Yield { .. } | OpKind::Condition { .. } | OpKind::Return { .. } => {}
            OpKind::Scope { body } => {
                let mut returned: Vec<Value> = Vec::new();
                for b in &body.blocks {
                    for o in &b.ops {
                        if o.name == "scope.return" {
                            if let OpKind::Opaque { operands: v, .. }
                            | OpKind::Return { values: v }
                            | OpKind::Yield { values: v } = &o.kind
                            {
                                returned = v.clone();
                            }
                            continue;
                        }
                        self.op(o, block);
                    }
                }
                // a scope's results are what it returns (HIVM aliases them)
                let vals: Vec<Val> = returned
                    .iter()
                    .map(|v| {
                        self.get(v).cloned().unwrap_or(Val::Unknown {
                            what: format!("a result of the scope at line {}", op.name_pos.line),
                        })
                    })
                    .collect();
                self.set_many(op, vals);
            }
            OpKind::SetFlag { src, dst, event } | OpKind::WaitFlag { src, dst, event } => {
                if self.opts.sync == SyncOps::Drop {
                    return;
                }
                self.manual = true;
                let key = if matches!(op.kind, OpKind::SetFlag { .. }) {
                    "set_flag"
                } else {
                    "wait_flag"
                };
                let id = match event {
                    Event::Id(n) => n.to_string(),
                    Event::Value(v) => match self.expr(v, v.pos, "the event id") {
                        Some(e) => e,
                        None => return,
                    },
                };
                let pos = op.name_pos;
                let node = map(
                    pos,
                    vec![
                        ("src".into(), s(pos, &src.to_ascii_lowercase())),
                        ("dst".into(), s(pos, &dst.to_ascii_lowercase())),
                        ("id".into(), s(pos, &id)),
                    ],
                );
                self.push(op, block, key, node, vec![]);
            }
            OpKind::PipeBarrier { pipe } => {
                if self.opts.sync == SyncOps::Drop {
                    return;
                }
                self.manual = true;
                let pos = op.name_pos;
                let p = pipe.strip_prefix("PIPE_").unwrap_or(pipe).to_ascii_lowercase();
                self.push(op, block, "barrier", s(pos, &p), vec![]);
            }
            OpKind::SyncBlockSet { core, pipes, flag } | OpKind::SyncBlockWait { core, pipes, flag } => {
                // plan-only lowering drops them: they neither allocate nor order a core's own
                // pipes, so planning and InjectSync do not see them
                if self.opts.sync == SyncOps::Drop || self.opts.lenient {
                    return;
                }
                self.cross_op(op, core, pipes, flag, block);
            }
            OpKind::SyncBlock { .. } => {
                if self.opts.sync == SyncOps::Drop || self.opts.lenient {
                    return;
                }
                self.error(
                    op.name_pos,
                    format!("{}: a barrier across all cores of a type is not read yet", op.name),
                    Some("write it as a mode-0 cross_set/cross_wait pair in a YAML kernel (docs/programs.md, \"Cross-core flags\")".into()),
                );
            }
            OpKind::MemLoad { memref, indices } | OpKind::MemStore { memref, indices, .. } => {
                let load = matches!(op.kind, OpKind::MemLoad { .. });
                if let OpKind::MemStore { value, .. } = &op.kind {
                    let at: Option<Vec<i64>> = indices.iter().map(|i| self.konst(i)).collect();
                    if let Some(at) = at {
                        self.stores
                            .push((memref.name.clone(), at, self.konst(value)));
                    }
                }
                self.set_results(
                    op,
                    Val::Unknown {
                        what: format!("the memref.load at line {}", op.name_pos.line),
                    },
                );
                let Some(m) = self.mem(memref, &op.name) else {
                    return;
                };
                self.seq += 1;
                self.access(memref, !load);
                let root = self.roots[m.root].clone();
                let mut idx = Vec::new();
                for i in indices {
                    // plan-only: which buffer is touched matters, not which element
                    if self.opts.lenient {
                        idx.push("0".to_string());
                        continue;
                    }
                    match self.expr(i, i.pos, "the index") {
                        Some(e) => idx.push(e),
                        None => return,
                    }
                }
                // indices of the value's own type: only exact for a whole root
                let text = if matches!(m.sel, Sel::Whole) && idx.len() == root.shape.len() {
                    format!("{}[{}]", root.name, idx.join(", "))
                } else {
                    let mut one = m.clone();
                    // one element of the view: its first, as an approximation of where
                    one.sel = match &m.sel {
                        Sel::Box(b) => Sel::Box(b.iter().map(|(st, _)| (st.clone(), 1)).collect()),
                        Sel::DynBox(b) => Sel::Box(b.iter().map(|(st, _)| (st.clone(), 1)).collect()),
                        Sel::DynRange(st, _) => Sel::Range(st.clone(), 1),
                        Sel::Range(st, _) => Sel::Range(st.clone(), 1),
                        Sel::Whole => Sel::Box(root.shape.iter().map(|_| ("0".into(), 1)).collect()),
                    };
                    self.operand(&one, op.name_pos, block)
                };
                let pos = op.name_pos;
                if load {
                    if let Some(v) = self.given_element(memref, indices, &m, &root) {
                        self.set_results(op, v);
                    }
                    self.push(op, block, "sload", map(pos, vec![("src".into(), s(pos, &text))]), vec![]);
                } else {
                    self.push(op, block, "sstore", map(pos, vec![("dst".into(), s(pos, &text))]), vec![]);
                }
            }
            OpKind::Call { args, .. } => self.use_op(op, args, block),
            OpKind::Opaque { operands, .. } => {
                let hivm_scalar = op.name.starts_with("hivm.hir.get_block_idx")
                    || op.name.starts_with("hivm.hir.get_sub_block_idx");
                if hivm_scalar {
                    let var = if op.name.ends_with("get_block_idx") {
                        "block"
                    } else {
                        "subblock"
                    };
                    self.launched = true;
                    self.set_results(
                        op,
                        Val::Int {
                            expr: var.into(),
                            konst: None,
                        },
                    );
                    self.scalar_work(op, block);
                    return;
                }
                let touches: Vec<Value> = operands
                    .iter()
                    .filter(|v| matches!(self.get(v), Some(Val::Mem(_))))
                    .cloned()
                    .collect();
                let generic_use = op.name == "bufferization.to_tensor"
                    || op.name == "memref.dealloc"
                    || self.is_generic(op);
                if op.name == "memref.dim" {
                    // HIVM's planner skips it: a size, not an access. A static dimension (a
                    // dynamic one given by `--param`) is its size.
                    if let Some(n) = self.dim_size(operands) {
                        self.set_results(
                            op,
                            Val::Int {
                                expr: n.to_string(),
                                konst: Some(n),
                            },
                        );
                        self.scalar_work(op, block);
                        return;
                    }
                    self.set_results(
                        op,
                        Val::Unknown {
                            what: format!("memref.dim at line {}", op.name_pos.line),
                        },
                    );
                    return;
                }
                if op.name == "memref.copy" && touches.len() == 2 {
                    // `memref.copy %src, %dst`: a move (the writer's L1 -> L0A/L0B copies)
                    let (Some(Val::Mem(a)), Some(Val::Mem(b))) =
                        (self.get(&touches[0]).cloned(), self.get(&touches[1]).cloned())
                    else {
                        return;
                    };
                    self.seq += 1;
                    self.access(&touches[0], false);
                    self.access(&touches[1], true);
                    let pos = op.name_pos;
                    let (src, dst) = (
                        self.operand(&a, touches[0].pos, block),
                        self.operand(&b, touches[1].pos, block),
                    );
                    let node = map(
                        pos,
                        vec![("src".into(), s(touches[0].pos, &src)), ("dst".into(), s(touches[1].pos, &dst))],
                    );
                    self.push(op, block, "copy", node, vec![]);
                    return;
                }
                if op.name == "linalg.fill" && touches.len() == 1 {
                    // fills its memref on the vector unit: a vdup
                    if let Some(Val::Mem(m)) = self.get(&touches[0]).cloned() {
                        let pos = op.name_pos;
                        let t = self.operand(&m, touches[0].pos, block);
                        let node = map(pos, vec![("out".into(), s(touches[0].pos, &t)), ("scalar".into(), s(pos, "0"))]);
                        self.push(op, block, "vdup", node, vec![]);
                        return;
                    }
                }
                if !touches.is_empty() && generic_use {
                    if op.name != "memref.dealloc" {
                        self.use_op(op, &touches, block);
                    }
                    self.set_results(op, Val::Tensor);
                } else if !touches.is_empty() || is_memory_op(&op.name) {
                    self.error(
                        op.name_pos,
                        format!("`{}` touches memory or sync and npusim does not know it", op.name),
                        Some(
                            "docs/mlir.md lists the ops npusim reads; an op it does not know cannot be planned or timed"
                                .into(),
                        ),
                    );
                } else {
                    let tensorish = op.name.starts_with("tensor.")
                        || op.name.starts_with("bufferization.")
                        || op.name.starts_with("linalg.");
                    self.set_results(
                        op,
                        if tensorish {
                            Val::Tensor
                        } else {
                            Val::Unknown {
                                what: format!("`{}` at line {}", op.name, op.name_pos.line),
                            }
                        },
                    );
                    if !tensorish {
                        self.scalar_work(op, block);
                    }
                }
            }
            OpKind::AllocWorkspace { .. } => self.error(
                op.name_pos,
                "memref_ext.alloc_workspace: gm workspaces are planned by `mem-plan-mode=global-work-space-plan`, which npusim does not implement".into(),
                None,
            ),
            OpKind::Module { .. } | OpKind::Func { .. } => self.error(
                op.name_pos,
                format!("{} inside a function", op.name),
                None,
            ),
        }
    }

    /// Whether `op` was written in generic form (`"some_use"(%x)`): an op of a test dialect
    /// that only uses its operands.
    fn is_generic(&self, op: &Op) -> bool {
        let start = op.name_pos.offset as usize;
        self.src.as_bytes().get(start) == Some(&b'"')
    }

    fn use_op(&mut self, op: &Op, vals: &[Value], block: &mut BlockOut) {
        let mut items = Vec::new();
        for v in vals {
            if let Some(Val::Mem(m)) = self.get(v).cloned() {
                let t = self.operand(&m, v.pos, block);
                items.push(s(v.pos, &t));
            }
        }
        if items.is_empty() {
            return;
        }
        let pos = op.name_pos;
        self.push(op, block, "use", seq(pos, items), vec![]);
    }

    fn alloc(&mut self, op: &Op, ty: &Type, at: Option<Vec<i64>>, block: &mut BlockOut) {
        let Type::MemRef(m) = ty else {
            self.error(
                op.name_pos,
                format!("{} of a non-memref type", op.name),
                None,
            );
            return;
        };
        let Some(res) = Self::result(op) else {
            return;
        };
        // plan-only: an alloc nothing uses is erased by PlanMemory, and takes no place
        if self.opts.lenient
            && at.is_none()
            && super::print::occurrences(&self.func_text, &res.name) <= 1
        {
            self.erased.push(op.span.start.offset);
            self.set(&res, Val::Poisoned);
            return;
        }
        if let Some(idx) = self.pre_alloc.remove(&op.name_pos.offset) {
            block.roots.push(idx);
            self.allocs.push(AllocSite {
                pos: op.span.start,
                buffer: self.roots[idx].name.clone(),
                ssa: res.name.clone(),
                op_pos: op.name_pos,
            });
            self.set(
                &res,
                Val::Mem(Mem {
                    root: idx,
                    sel: Sel::Whole,
                    ty: m.clone(),
                }),
            );
            return;
        }
        let Some(shape) = self.static_shape(m, op.name_pos, &res.name) else {
            self.set(&res, Val::Poisoned);
            return;
        };
        let Some(dt) = self.dtype_of(m, op.name_pos) else {
            self.set(&res, Val::Poisoned);
            return;
        };
        let space = m.space.clone().unwrap_or_else(|| "gm".into());
        let Some(sc) = scope(&space) else {
            self.error(
                op.name_pos,
                format!("address space `{space}` is not one npusim models"),
                Some("npusim plans ub, cbuf (L1), ca (L0A), cb (L0B) and cc (L0C)".into()),
            );
            return;
        };
        if sc == "gm" {
            self.error(
                op.name_pos,
                format!("{} in gm: npusim plans on-chip memories only", op.name),
                Some("give the alloc an on-chip #hivm.address_space (ub, cbuf, cc)".into()),
            );
            return;
        }
        if sc == "ub" {
            self.uses_ub = true;
        } else {
            self.uses_cube = true;
        }
        let name = self.fresh(&res.name);
        let multi = at.as_ref().map(|a| a.len().max(1) as u32).unwrap_or(1);
        self.roots.push(Root {
            name: name.clone(),
            tensor: false,
            shape,
            dtype: dt.into(),
            scope: sc,
            multi,
            at,
            share: None,
            pos: op.name_pos,
            select: Vec::new(),
            inplace: true,
            preload: false,
        });
        let r = self.roots.len() - 1;
        block.roots.push(r);
        self.allocs.push(AllocSite {
            pos: op.span.start,
            buffer: name,
            ssa: res.name.clone(),
            op_pos: op.name_pos,
        });
        self.set(
            &res,
            Val::Mem(Mem {
                root: r,
                sel: Sel::Whole,
                ty: m.clone(),
            }),
        );
    }

    fn view(&mut self, op: &Op, kind: &ViewKind, source: &Value, ty: &Type) {
        // a failed view reports once: its result is poisoned for its uses
        self.set_results(op, Val::Poisoned);
        if matches!(self.get(source), Some(Val::Tensor)) {
            self.set_results(op, Val::Tensor);
            return;
        }
        let Some(src) = self.mem(source, &op.name) else {
            return;
        };
        let Type::MemRef(rty) = ty else {
            self.set_results(op, Val::Tensor);
            return;
        };
        let rty = &self.static_reshape(kind, &src.ty, rty);
        let root_shape = self.roots[src.root].shape.clone();
        let sel = match kind {
            ViewKind::Subview {
                offsets,
                sizes,
                strides,
            } => {
                let mut offs = Vec::new();
                let mut lens = Vec::new();
                // extents computed when the kernel runs (a tail tile), by dimension
                let mut dynamic: Vec<Option<String>> = Vec::new();
                for (i, o) in offsets.iter().enumerate() {
                    let Some(e) = self.fold(o, op.name_pos, "the subview offset") else {
                        return;
                    };
                    offs.push(e);
                    dynamic.push(None);
                    let len = match sizes.get(i) {
                        Some(OpFold::Const(c)) => *c as u64,
                        Some(OpFold::Value(v)) => match self.konst(v) {
                            Some(c) => c as u64,
                            // plan-only: a tail tile's size; the whole dimension stands for it
                            None if self.opts.lenient => match src.ty.shape.get(i) {
                                Some(Dim::Static(n)) => *n,
                                _ => root_shape.get(i).copied().unwrap_or(1),
                            },
                            None => match self.get(v).cloned() {
                                Some(Val::Int { expr, .. }) => {
                                    dynamic[i] = Some(expr);
                                    1
                                }
                                _ => {
                                    self.error(
                                        v.pos,
                                        format!("subview size %{} is not a value npusim can compute", v.name),
                                        Some("npusim needs each size as an expression of constants, params and loop variables".into()),
                                    );
                                    return;
                                }
                            },
                        },
                        None => 1,
                    };
                    let stride = match strides.get(i) {
                        Some(OpFold::Const(c)) => *c,
                        Some(OpFold::Value(v)) => self.konst(v).unwrap_or(1),
                        None => 1,
                    };
                    // a strided subview covers from its first to its last element
                    lens.push(if stride > 1 && len > 0 {
                        (len - 1) * stride as u64 + 1
                    } else {
                        len
                    });
                }
                let src_shape: Vec<u64> = src
                    .ty
                    .shape
                    .iter()
                    .map(|d| match d {
                        Dim::Static(n) => *n,
                        Dim::Dynamic => 0,
                    })
                    .collect();
                if dynamic.iter().any(Option::is_some) {
                    // a box of the root whose extents are expressions: the subview must
                    // select root dimensions one to one
                    let ext: Vec<String> = lens
                        .iter()
                        .zip(&dynamic)
                        .map(|(l, d)| d.clone().unwrap_or_else(|| l.to_string()))
                        .collect();
                    let add = |a: &str, b: &str| match (a.parse::<i64>(), b.parse::<i64>()) {
                        (Ok(x), Ok(y)) => (x + y).to_string(),
                        (Ok(0), _) => b.to_string(),
                        (_, Ok(0)) => a.to_string(),
                        _ => format!("{} + {}", a, paren(b)),
                    };
                    let starts: Option<Vec<String>> = match &src.sel {
                        Sel::Whole if root_shape.len() == offs.len() => Some(offs.clone()),
                        Sel::Box(b) if b.len() == offs.len() => {
                            Some(b.iter().zip(&offs).map(|((s, _), o)| add(s, o)).collect())
                        }
                        Sel::DynBox(b) if b.len() == offs.len() => {
                            Some(b.iter().zip(&offs).map(|((s, _), o)| add(s, o)).collect())
                        }
                        _ => None,
                    };
                    let starts = starts.map(|st| st.into_iter().zip(ext.clone()).collect());
                    let found = starts
                        .or_else(|| self.dyn_box_rank_reduced(&src, &src_shape, &offs, &ext))
                        .map(Sel::DynBox)
                        .or_else(|| self.dyn_range_flat(&src, &source.name, &offs, &ext));
                    match found {
                        Some(sel) => sel,
                        None => {
                            self.error(
                                op.name_pos,
                                "a subview sized when the kernel runs, of a reshaped view: npusim cannot say which elements it selects".into(),
                                None,
                            );
                            return;
                        }
                    }
                } else {
                    self.narrow(&src, &src_shape, &root_shape, offs, lens)
                }
            }
            // plan-only: a view sized at run time (a tail tile) covers its whole buffer, as
            // HIVM's planner sees it (a write through it is the buffer's gen)
            ViewKind::View { .. } if self.opts.lenient && rty.shape.contains(&Dim::Dynamic) => {
                Sel::Whole
            }
            ViewKind::View { byte_shift, sizes } if !self.roots[src.root].tensor => {
                // the compiler allocates a byte buffer and views it typed: the buffer takes
                // the type of its views (one type: two would need bytes npusim does not model)
                let Some(vt) = dtype(&rty.elem) else {
                    self.error(
                        op.name_pos,
                        "the view's element type is not one npusim models".into(),
                        None,
                    );
                    return;
                };
                let bits = |d: &str| -> u64 {
                    d.trim_start_matches(['i', 'u', 'f', 'b'])
                        .trim_start_matches('f')
                        .parse()
                        .unwrap_or(8)
                };
                let root = &mut self.roots[src.root];
                if root.dtype != vt {
                    if root.dtype == "i8" && matches!(src.sel, Sel::Whole) {
                        let bytes: u64 = root.shape.iter().product();
                        root.shape = vec![(bytes * 8 / bits(vt)).max(1)];
                        root.dtype = vt.to_string();
                    } else {
                        let (had, name) = (root.dtype.clone(), root.name.clone());
                        self.error(
                            op.name_pos,
                            format!("{name} is viewed as {vt} here and as {had} elsewhere: npusim gives a buffer one element type"),
                            None,
                        );
                        return;
                    }
                }
                let Some(shift) = self.expr(byte_shift, op.name_pos, "the view's byte shift")
                else {
                    return;
                };
                let eb = bits(vt) / 8;
                let start = match shift.parse::<u64>() {
                    Ok(s) => (s / eb.max(1)).to_string(),
                    Err(_) => format!("{} / {eb}", paren(&shift)),
                };
                // the element count: static dimensions times the dynamic sizes, in order
                let mut fixed: u64 = 1;
                let mut terms: Vec<String> = Vec::new();
                let mut dyns = sizes.iter();
                for d in &rty.shape {
                    match d {
                        Dim::Static(n) => fixed *= n,
                        Dim::Dynamic => {
                            let Some(v) = dyns.next() else { break };
                            let Some(e) = self.expr(v, v.pos, "the view's size") else {
                                return;
                            };
                            terms.push(paren(&e));
                        }
                    }
                }
                if let Some(r) = op.results.first() {
                    let exprs: Option<Vec<String>> = sizes
                        .iter()
                        .map(|v| match self.get(v) {
                            Some(Val::Int { expr, .. }) => Some(expr.clone()),
                            _ => None,
                        })
                        .collect();
                    if let Some(e) = exprs.filter(|e| !e.is_empty()) {
                        self.view_sizes.insert(r.name.clone(), e);
                    }
                }
                if terms.is_empty() {
                    Sel::Range(start, fixed)
                } else {
                    if fixed != 1 {
                        terms.insert(0, fixed.to_string());
                    }
                    Sel::DynRange(start, terms.join(" * "))
                }
            }
            ViewKind::View { byte_shift, .. } => {
                let bits: u64 = self.roots[src.root]
                    .dtype
                    .trim_start_matches(['i', 'u', 'f', 'b'])
                    .trim_start_matches('f')
                    .parse()
                    .unwrap_or(8);
                let n: u64 = rty
                    .shape
                    .iter()
                    .map(|d| match d {
                        Dim::Static(n) => *n,
                        Dim::Dynamic => 1,
                    })
                    .product();
                let elem_bits = dtype(&rty.elem)
                    .map(|d| {
                        d.trim_start_matches(['i', 'u', 'f', 'b'])
                            .trim_start_matches('f')
                            .parse::<u64>()
                            .unwrap_or(8)
                    })
                    .unwrap_or(8);
                let Some(shift) = self.expr(byte_shift, op.name_pos, "the view's byte shift")
                else {
                    return;
                };
                let start = if bits == 8 {
                    shift
                } else {
                    format!("{} * 8 / {bits}", paren(&shift))
                };
                let len = (n * elem_bits).div_ceil(bits.max(1));
                Sel::Range(start, len)
            }
            // a gm tensor first seen whole through a reshape to fewer dimensions (the compiler
            // collapses its arguments before tiling them): it is declared in that shape, so
            // the tiles' ranges, even those sized when the kernel runs, are boxes of it
            ViewKind::CollapseShape { .. }
                if self.roots[src.root].tensor
                    && matches!(src.sel, Sel::Whole)
                    && rty.shape.len() > 1
                    && rty.shape.len() < self.roots[src.root].shape.len()
                    && src.ty.shape.len() == self.roots[src.root].shape.len()
                    && !self.accesses.iter().any(|a| a.1 == src.root) =>
            {
                let total: u64 = self.roots[src.root].shape.iter().product();
                let shape: Option<Vec<u64>> = rty
                    .shape
                    .iter()
                    .map(|d| match d {
                        Dim::Static(n) => Some(*n),
                        Dim::Dynamic => None,
                    })
                    .collect();
                if let Some(shape) = shape.filter(|s| s.iter().product::<u64>() == total) {
                    self.redeclare_tensor(src.root, shape);
                }
                Sel::Whole
            }
            // a gm tensor first seen whole through a one-dimensional reshape (the compiler
            // flattens its arguments before tiling them): it is declared flat, so the tiles'
            // ranges are boxes of it
            ViewKind::CollapseShape { .. } | ViewKind::Cast
                if self.roots[src.root].tensor
                    && matches!(src.sel, Sel::Whole)
                    && rty.shape.len() == 1
                    && self.roots[src.root].shape.len() > 1
                    && !self.accesses.iter().any(|a| a.1 == src.root) =>
            {
                let total: u64 = self.roots[src.root].shape.iter().product();
                if let Dim::Static(n) = rty.shape[0] {
                    if n == total {
                        self.flatten_tensor(src.root, total);
                    }
                }
                Sel::Whole
            }
            // the same bytes, another type: the part of the root stays the same
            _ => src.sel.clone(),
        };
        self.set_results(
            op,
            Val::Mem(Mem {
                root: src.root,
                sel,
                ty: rty.clone(),
            }),
        );
    }

    /// The selection of a subview with offsets `offs` and lengths `lens` of `src` (whose type
    /// has shape `src_shape`).
    fn narrow(
        &mut self,
        src: &Mem,
        src_shape: &[u64],
        root_shape: &[u64],
        offs: Vec<String>,
        lens: Vec<u64>,
    ) -> Sel {
        let add = |a: &str, b: &str| -> String {
            match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(x), Ok(y)) => (x + y).to_string(),
                (Ok(0), _) => b.to_string(),
                (_, Ok(0)) => a.to_string(),
                _ => format!("{} + {}", a, paren(b)),
            }
        };
        match &src.sel {
            Sel::Whole if src_shape == root_shape => Sel::Box(offs.into_iter().zip(lens).collect()),
            Sel::Box(b) if b.len() == offs.len() => Sel::Box(
                b.iter()
                    .zip(offs.into_iter().zip(lens))
                    .map(|((st, _), (o, l))| (add(st, &o), l))
                    .collect(),
            ),
            // a subview of a reshaped part: the contiguous range from its first to its last
            // element, in the source type's row-major order
            sel => {
                let base = match sel {
                    Sel::Whole => "0".to_string(),
                    Sel::Range(st, _) | Sel::DynRange(st, _) => st.clone(),
                    Sel::DynBox(b) => {
                        let mut terms = Vec::new();
                        for (i, (st, _)) in b.iter().enumerate() {
                            let inner: u64 = root_shape[i + 1..].iter().product();
                            if st != "0" {
                                terms.push(format!("{} * {inner}", paren(st)));
                            }
                        }
                        if terms.is_empty() {
                            "0".into()
                        } else {
                            terms.join(" + ")
                        }
                    }
                    Sel::Box(b) => {
                        // the box's first element, flattened over the root
                        let mut terms = Vec::new();
                        for (i, (st, _)) in b.iter().enumerate() {
                            let inner: u64 = root_shape[i + 1..].iter().product();
                            if st != "0" {
                                terms.push(if inner == 1 {
                                    st.clone()
                                } else {
                                    format!("{} * {inner}", paren(st))
                                });
                            }
                        }
                        if terms.is_empty() {
                            "0".into()
                        } else {
                            terms.join(" + ")
                        }
                    }
                };
                let mut first = Vec::new();
                let mut span: u64 = 1;
                for (i, (o, l)) in offs.iter().zip(&lens).enumerate() {
                    let inner: u64 = src_shape
                        .get(i + 1..)
                        .map(|s| s.iter().product())
                        .unwrap_or(1);
                    if o != "0" {
                        first.push(if inner == 1 {
                            o.clone()
                        } else {
                            format!("{} * {inner}", paren(o))
                        });
                    }
                    span += l.saturating_sub(1) * inner;
                }
                let f = if first.is_empty() {
                    "0".to_string()
                } else {
                    first.join(" + ")
                };
                Sel::Range(add(&base, &f), span)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn scalar(
        &mut self,
        op: &Op,
        operands: &[Value],
        predicate: Option<&str>,
        amap: Option<&Attr>,
        dims: u32,
        types: &[Type],
    ) -> Val {
        let _ = types;
        let unknown = |what: String| Val::Unknown { what };
        let mut args = Vec::new();
        for v in operands {
            match self.get(v) {
                Some(Val::Int { expr, konst }) => args.push((expr.clone(), *konst)),
                Some(Val::Unknown { what }) => return unknown(what.clone()),
                _ => {
                    return unknown(format!("`{}` at line {}", op.name, op.name_pos.line));
                }
            }
        }
        let short = op.name.rsplit('.').next().unwrap_or("");
        let bin = |sym: &str| -> Option<String> {
            let (a, b) = (args.first()?, args.get(1)?);
            Some(format!("{} {sym} {}", paren(&a.0), paren(&b.0)))
        };
        let expr = match (op.name.split('.').next().unwrap_or(""), short) {
            ("arith" | "index", "addi" | "add") => bin("+"),
            ("arith" | "index", "subi" | "sub") => bin("-"),
            ("arith" | "index", "muli" | "mul") => bin("*"),
            ("arith" | "index", "floordivsi" | "floordivs") => bin("/"),
            // npusim's `/` floors; divsi truncates: they agree on the non-negative values
            // index arithmetic carries
            ("arith" | "index", "divsi" | "divui" | "divs" | "divu") => bin("/"),
            ("arith" | "index", "remsi" | "remui" | "rems" | "remu") => bin("%"),
            ("arith" | "index", "ceildivsi" | "ceildivui" | "ceildivs" | "ceildivu") => {
                let (a, b) = match (args.first(), args.get(1)) {
                    (Some(a), Some(b)) => (a.0.clone(), b.0.clone()),
                    _ => return unknown(op.name.clone()),
                };
                Some(format!(
                    "({} + {} - 1) / {}",
                    paren(&a),
                    paren(&b),
                    paren(&b)
                ))
            }
            ("arith" | "index", "minsi" | "minui" | "mins" | "minu") => {
                args.get(1).map(|b| format!("min({}, {})", args[0].0, b.0))
            }
            ("arith" | "index", "maxsi" | "maxui" | "maxs" | "maxu") => {
                args.get(1).map(|b| format!("max({}, {})", args[0].0, b.0))
            }
            ("arith", "index_cast" | "index_castui" | "extsi" | "extui" | "trunci")
            | ("index", "casts" | "castu") => args.first().map(|a| a.0.clone()),
            ("arith", "andi") => bin("&&"),
            ("arith", "ori") => bin("||"),
            ("arith", "cmpi") => {
                let sym = match predicate.unwrap_or("") {
                    "eq" => "==",
                    "ne" => "!=",
                    "slt" | "ult" => "<",
                    "sle" | "ule" => "<=",
                    "sgt" | "ugt" => ">",
                    "sge" | "uge" => ">=",
                    _ => return unknown(format!("arith.cmpi at line {}", op.name_pos.line)),
                };
                bin(sym)
            }
            // a branch of 0 drops its term: the compiler's tile sizes are selects of a size
            // and 0, nested, and each term repeats its condition
            ("arith", "select") => match (args.first(), args.get(1), args.get(2)) {
                (Some(c), Some(a), Some(b)) if b.1 == Some(0) => {
                    Some(format!("{} * {}", paren(&c.0), paren(&a.0)))
                }
                (Some(c), Some(a), Some(b)) if a.1 == Some(0) => {
                    Some(format!("!{} * {}", paren(&c.0), paren(&b.0)))
                }
                (Some(c), Some(a), Some(b)) => Some(format!(
                    "{} * {} + !{} * {}",
                    paren(&c.0),
                    paren(&a.0),
                    paren(&c.0),
                    paren(&b.0)
                )),
                _ => None,
            },
            ("affine", "apply" | "min" | "max") => {
                let m = match amap {
                    Some(Attr::AffineMap(m)) => Some(m.clone()),
                    Some(Attr::AliasRef(a)) => self
                        .chunk
                        .aliases
                        .iter()
                        .find(|x| &x.name == a)
                        .and_then(|x| match &x.value {
                            Attr::AffineMap(m) => Some(m.clone()),
                            _ => None,
                        }),
                    _ => None,
                };
                match m {
                    Some(m) => {
                        let exprs: Vec<String> =
                            m.results.iter().map(|r| affine(r, &args, dims)).collect();
                        match short {
                            "apply" => exprs.into_iter().next(),
                            f => exprs.into_iter().reduce(|a, b| format!("{f}({a}, {b})")),
                        }
                    }
                    None => None,
                }
            }
            _ => None,
        };
        match expr {
            Some(e) => {
                let konst = crate::expr::parse(&e, &mut |_| None)
                    .ok()
                    .and_then(|x| x.as_const());
                match konst {
                    Some(k) => Val::Int {
                        expr: k.to_string(),
                        konst: Some(k),
                    },
                    None => Val::Int {
                        expr: e,
                        konst: None,
                    },
                }
            }
            None => unknown(format!("`{}` at line {}", op.name, op.name_pos.line)),
        }
    }

    /// The state a trial lowering changes, so it can be undone.
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            diags: self.diags.len(),
            vals: self.vals.clone(),
            roots: self.roots.len(),
            names: self.names.clone(),
            allocs: self.allocs.len(),
            texts: self.texts.len(),
            vars: self.vars.len(),
            uses: (self.uses_ub, self.uses_cube, self.manual, self.launched),
            accesses: self.accesses.len(),
            copies: self.copies.len(),
        }
    }

    fn restore(&mut self, s: Snapshot) {
        self.diags.truncate(s.diags);
        self.vals = s.vals;
        self.roots.truncate(s.roots);
        self.names = s.names;
        self.allocs.truncate(s.allocs);
        self.texts.truncate(s.texts);
        self.vars.truncate(s.vars);
        self.accesses.truncate(s.accesses);
        self.copies.truncate(s.copies);
        (self.uses_ub, self.uses_cube, self.manual, self.launched) = s.uses;
    }

    /// The roots a memory value may be: itself, or a select's members.
    fn members(&self, root: usize) -> Vec<usize> {
        let r = &self.roots[root];
        if r.select.is_empty() {
            vec![root]
        } else {
            r.select.clone()
        }
    }

    /// A value that is one of `roots` (merged after a branch, carried around a loop): the
    /// root itself when there is one, else a `select` view declared in `block`.
    fn merge(
        &mut self,
        roots: &[usize],
        ty: &MemRefType,
        pos: Pos,
        block: &mut BlockOut,
        conditional: bool,
        branch: bool,
    ) -> Val {
        let mut all: Vec<usize> = Vec::new();
        for &r in roots {
            for m in self.members(r) {
                if !all.contains(&m) {
                    all.push(m);
                }
            }
        }
        // HIVM's alias sets: buffers met through control flow share one storage entry (an
        // inplace pair it forces); through a select (conditional) they only stay apart.
        // Either way none of them is inplaced with an op's input.
        if all.len() > 1 && !all.iter().any(|&r| self.roots[r].tensor) {
            // a select's operands are HIVM's `ignoreInplace`; so are the buffers a loop
            // carries (its forced pair); a branch's yields are not
            if !(conditional && branch) {
                for &r in &all {
                    self.roots[r].inplace = false;
                }
            }
            if !conditional {
                let head = all
                    .iter()
                    .copied()
                    .find(|&r| self.roots[r].at.is_none())
                    .unwrap_or(all[0]);
                for &r in &all {
                    if r != head && self.roots[r].share.is_none() && self.roots[r].at.is_none() {
                        self.roots[r].share = Some(head);
                    }
                }
            }
        }
        // one storage entry: the value is its head buffer (the others share its address)
        if !conditional && all.len() > 1 && !all.iter().any(|&r| self.roots[r].tensor) {
            let head = self.roots[all[0]].share.unwrap_or(all[0]);
            return Val::Mem(Mem {
                root: head,
                sel: Sel::Whole,
                ty: ty.clone(),
            });
        }
        if all.len() == 1 {
            return Val::Mem(Mem {
                root: all[0],
                sel: Sel::Whole,
                ty: ty.clone(),
            });
        }
        if all.iter().any(|&r| self.roots[r].tensor) {
            return Val::Tensor;
        }
        let name = self.fresh("sel");
        let first = self.roots[all[0]].clone();
        let names: Vec<Node> = all
            .iter()
            .map(|&r| s(pos, &self.roots[r].name.clone()))
            .collect();
        block.views.push((
            name.clone(),
            map(pos, vec![("select".into(), seq(pos, names))]),
        ));
        self.roots.push(Root {
            name,
            select: all,
            pos,
            share: None,
            at: None,
            multi: 1,
            ..first
        });
        Val::Mem(Mem {
            root: self.roots.len() - 1,
            sel: Sel::Whole,
            ty: ty.clone(),
        })
    }

    /// Moves the buffers of `inner` that `escaping` names (they outlive their block through a
    /// yield) into `outer`, so names after the op can still see them.
    fn hoist(&self, escaping: &[usize], inner: &mut BlockOut, outer: &mut BlockOut) {
        for r in escaping {
            for m in self.members(*r) {
                if let Some(i) = inner.roots.iter().position(|x| *x == m) {
                    inner.roots.remove(i);
                    outer.roots.push(m);
                }
            }
        }
    }

    fn yielded_roots(&self, yielded: &[Value]) -> Vec<Option<usize>> {
        yielded
            .iter()
            .map(|v| match self.get(v) {
                Some(Val::Mem(m)) => Some(m.root),
                _ => None,
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn for_op(
        &mut self,
        op: &Op,
        iv: &Value,
        lower: &Value,
        upper: &Value,
        step: &Value,
        iter_args: &[(Value, Value)],
        body: &Region,
        block: &mut BlockOut,
    ) {
        let from = self.expr(lower, lower.pos, "the loop's lower bound");
        let to = self.expr(upper, upper.pos, "the loop's upper bound");
        let st = self.expr(step, step.pos, "the loop's step");
        let inits: Vec<Option<Val>> = iter_args
            .iter()
            .map(|(_, i)| self.get(i).cloned())
            .collect();
        let carried = |l: &mut Self, arg: &Value, init: &Option<Val>| {
            let v = match init {
                Some(Val::Mem(m)) => Val::Mem(m.clone()),
                Some(Val::Tensor) => Val::Tensor,
                _ => Val::Unknown {
                    what: format!("the loop-carried value %{}", arg.name),
                },
            };
            l.set(arg, v);
        };
        // a first pass finds what the body yields: a carried memref is its initial buffer on
        // the first trip and the yielded one after, so the body sees a select of both
        let snap = self.snapshot();
        let before = snap.roots;
        let var = self.fresh(&iv.name);
        self.set(
            iv,
            Val::Int {
                expr: var.clone(),
                konst: None,
            },
        );
        for ((arg, _), init) in iter_args.iter().zip(&inits) {
            carried(self, arg, init);
        }
        let _ = self.region(body);
        let first: Vec<Option<Root>> = self
            .yielded_roots(&last_yield(body))
            .iter()
            .map(|r| r.map(|r| self.roots[r].clone()))
            .collect();
        let first_ids = self.yielded_roots(&last_yield(body));
        // HIVM copies the yielded buffer into the carried one when the body reads the carried
        // one after writing the yielded one (their lifetimes meet): then the two stay apart
        let copy_mode: Vec<bool> = inits
            .iter()
            .enumerate()
            .map(|(i, init)| {
                let (Some(Val::Mem(m)), Some(Some(y))) = (init, first_ids.get(i)) else {
                    return false;
                };
                if *y == m.root {
                    return false;
                }
                let log = &self.accesses[snap.accesses..];
                let Some(w) = log.iter().find(|a| a.1 == *y && a.2).map(|a| a.0) else {
                    return false;
                };
                log.iter().any(|a| a.1 == m.root && !a.2 && a.0 > w)
            })
            .collect();
        self.restore(snap);
        let var = self.fresh(&iv.name);
        self.vars.push((var.clone(), iv.name.clone()));
        self.set(
            iv,
            Val::Int {
                expr: var.clone(),
                konst: None,
            },
        );
        self.flush_scalar(block);
        let mut out = BlockOut::default();
        for (i, ((arg, _), init)) in iter_args.iter().zip(&inits).enumerate() {
            carried(self, arg, init);
            let Some(Val::Mem(m)) = init else { continue };
            if copy_mode.get(i) == Some(&true) {
                continue;
            }
            let y = match (
                first.get(i).cloned().flatten(),
                first_ids.get(i).copied().flatten(),
            ) {
                // an alloc of the body: created now, taken by its alloc op when it comes
                (Some(root), Some(id)) if id >= before && root.select.is_empty() => {
                    let name = self.fresh(&root.name);
                    self.roots.push(Root {
                        name,
                        ..root.clone()
                    });
                    let idx = self.roots.len() - 1;
                    self.pre_alloc.insert(root.pos.offset, idx);
                    idx
                }
                (_, Some(id)) if id < before => id,
                _ => continue,
            };
            if y != m.root {
                let ty = m.ty.clone();
                let v = self.merge(&[m.root, y], &ty, op.name_pos, &mut out, false, false);
                self.set(arg, v);
            }
        }
        let yield_values = last_yield(body);
        let in_scope = scope_yields(body, &yield_values, &copy_mode);
        if let Some(b) = body.blocks.first() {
            for o in &b.ops {
                self.op(o, &mut out);
                for site in in_scope.iter().filter(|x| std::ptr::eq(x.scope, o)) {
                    self.scope_copy(site, &iter_args[site.index].0, &inits, &mut out);
                }
            }
        }
        let yield_op = body.blocks.first().and_then(|b| b.ops.last());
        let mut yielded = self.yielded_roots(&yield_values);
        for (i, ((arg, _), init)) in iter_args.iter().zip(&inits).enumerate() {
            if copy_mode.get(i) != Some(&true) {
                continue;
            }
            if in_scope.iter().any(|x| x.index == i) {
                // copied before the scope's return (above): the loop carries its buffer
                if let Some(Val::Mem(m)) = init {
                    yielded[i] = Some(m.root);
                }
                continue;
            }
            let (Some(Val::Mem(m)), Some(Some(y)), Some(yv), Some(yop)) =
                (init, yielded.get(i), yield_values.get(i), yield_op)
            else {
                continue;
            };
            let pos = yop.name_pos;
            let (yn, an) = (self.roots[*y].name.clone(), self.roots[m.root].name.clone());
            self.push(
                yop,
                &mut out,
                "copy",
                map(
                    pos,
                    vec![("src".into(), s(pos, &yn)), ("dst".into(), s(pos, &an))],
                ),
                vec![],
            );
            let src = self
                .src
                .get(yop.span.start.offset as usize..yop.span.end as usize)
                .unwrap_or("");
            let line = one_line(src, usize::MAX);
            let tys = line
                .rsplit_once(" : ")
                .map(|(_, t)| t.to_string())
                .unwrap_or_default();
            let ty = split_top(&tys)
                .get(i)
                .cloned()
                .unwrap_or_else(|| tys.clone());
            let names: Vec<String> = yield_values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    if k == i {
                        format!("%{}", arg.name)
                    } else {
                        format!("%{}", v.name)
                    }
                })
                .collect();
            self.copies.push(CopySite {
                yield_pos: pos,
                copy: format!(
                    "hivm.hir.copy ins(%{} : {ty}) outs(%{} : {ty})",
                    yv.name, arg.name
                ),
                yield_text: format!("scf.yield {} : {tys}", names.join(", ")),
            });
            yielded[i] = Some(m.root);
        }
        self.flush_scalar(&mut out);
        // the loop's results: the initial value or what the body yields
        let mut results = Vec::new();
        let mut escaping = Vec::new();
        for (i, init) in inits.iter().enumerate() {
            let v = match (init, yielded.get(i).copied().flatten()) {
                (Some(Val::Mem(m)), Some(y)) if y == m.root => Val::Mem(m.clone()),
                (Some(Val::Mem(m)), Some(y)) => {
                    escaping.push(y);
                    let ty = m.ty.clone();
                    self.merge(&[m.root, y], &ty, op.name_pos, block, false, false)
                }
                (Some(Val::Mem(m)), None) => Val::Mem(m.clone()),
                (Some(Val::Tensor), _) => Val::Tensor,
                _ => Val::Unknown {
                    what: format!("a result of the scf.for at line {}", op.name_pos.line),
                },
            };
            results.push(v);
        }
        self.hoist(&escaping, &mut out, block);
        // a select declared in the body over buffers now hoisted stays valid: the body sees
        // its enclosing block's names
        self.set_many(op, results);
        let (Some(from), Some(to), Some(st)) = (from, to, st) else {
            return;
        };
        let pos = op.name_pos;
        let head = map(
            pos,
            vec![
                ("var".into(), s(pos, &var)),
                ("from".into(), s(pos, &from)),
                ("to".into(), s(pos, &to)),
                ("step".into(), s(pos, &st)),
            ],
        );
        let fields = self.block_fields(out, pos, "body");
        self.push(op, block, "for", head, fields);
    }

    /// `scf.while`: npusim's `while` runs a trip count, so the loop must have one it can
    /// compute; a plan-only lowering takes 2. Its body is the condition region's ops, then
    /// the body region's: the buffers the condition forwards are the body's arguments and the
    /// loop's results, and a buffer the body yields shares its initial value's address
    /// (HIVM's forced inplace pair).
    fn while_op(
        &mut self,
        op: &Op,
        inits: &[(Value, Value)],
        before: &Region,
        after: &Region,
        block: &mut BlockOut,
    ) {
        if !self.opts.lenient {
            self.error(
                op.name_pos,
                "scf.while: npusim runs a loop a number of times it knows, and cannot compute this loop's".into(),
                Some("write the loop as scf.for with its bounds; `npusim opt` plans scf.while loops".into()),
            );
            return;
        }
        let init_vals: Vec<Option<Val>> = inits.iter().map(|(_, i)| self.get(i).cloned()).collect();
        for ((arg, _), v) in inits.iter().zip(&init_vals) {
            let v = v.clone().unwrap_or(Val::Unknown {
                what: format!("the loop-carried value %{}", arg.name),
            });
            self.set(arg, v);
        }
        self.flush_scalar(block);
        let mut out = BlockOut::default();
        let mut forwarded: Vec<Value> = Vec::new();
        if let Some(b) = before.blocks.first() {
            for o in &b.ops {
                if let OpKind::Condition { values, .. } = &o.kind {
                    forwarded = values.clone();
                }
                self.op(o, &mut out);
            }
        }
        let fwd: Vec<Option<Val>> = forwarded.iter().map(|v| self.get(v).cloned()).collect();
        if let Some(b) = after.blocks.first() {
            for ((arg, _), v) in b.args.iter().zip(&fwd) {
                if let Some(v) = v {
                    self.set(arg, v.clone());
                }
            }
            for o in &b.ops {
                self.op(o, &mut out);
            }
        }
        self.flush_scalar(&mut out);
        let yielded = self.yielded_roots(&last_yield(after));
        let mut escaping = Vec::new();
        for (init, y) in init_vals.iter().zip(&yielded) {
            if let (Some(Val::Mem(m)), Some(y)) = (init, y) {
                escaping.push(*y);
                let ty = m.ty.clone();
                let _ = self.merge(&[m.root, *y], &ty, op.name_pos, block, false, false);
            }
        }
        self.hoist(&escaping, &mut out, block);
        self.set_many(
            op,
            fwd.into_iter()
                .map(|v| {
                    v.unwrap_or(Val::Unknown {
                        what: "a result of scf.while".into(),
                    })
                })
                .collect(),
        );
        let pos = op.name_pos;
        let head = map(pos, vec![("trips".into(), int(pos, 2))]);
        let fields = self.block_fields(out, pos, "body");
        self.push(op, block, "while", head, fields);
    }

    fn set_many(&mut self, op: &Op, vals: Vec<Val>) {
        let mut i = 0;
        for r in &op.results {
            for k in 0..r.count.max(1) {
                if let Some(v) = vals.get(i) {
                    self.vals.insert((r.name.clone(), k), v.clone());
                }
                i += 1;
            }
        }
    }

    fn if_op(
        &mut self,
        op: &Op,
        cond: &Value,
        then: &Region,
        els: Option<&Region>,
        block: &mut BlockOut,
    ) {
        // plan-only: HIVM's passes never evaluate a condition, so neither branch may be
        // known to run (a constant `true` included)
        let c = if self.opts.lenient {
            self.launched = true;
            Some(stand_in("the condition"))
        } else {
            self.expr(cond, cond.pos, "the condition")
        };
        self.flush_scalar(block);
        let mut t = self.region(then);
        let ty = self.yielded_roots(&last_yield(then));
        let mut e = els.map(|r| {
            let out = self.region(r);
            (out, self.yielded_roots(&last_yield(r)))
        });
        // each result is whichever branch ran: the one buffer both yield, or a select
        let mut results = Vec::new();
        let mut escaping = Vec::new();
        for (i, a) in ty.iter().enumerate() {
            let b = e.as_ref().and_then(|(_, ey)| ey.get(i).copied().flatten());
            let v = match (a, b) {
                (Some(a), Some(b)) => {
                    escaping.extend([*a, b]);
                    let ty = self.roots[*a].clone();
                    let mt = MemRefType {
                        shape: ty.shape.iter().map(|d| Dim::Static(*d)).collect(),
                        elem: Box::new(Type::Other(ty.dtype.clone())),
                        layout: super::ast::Layout::Identity,
                        space: None,
                    };
                    self.merge(&[*a, b], &mt, op.name_pos, block, true, true)
                }
                (Some(a), None) => {
                    escaping.push(*a);
                    Val::Mem(Mem {
                        root: *a,
                        sel: Sel::Whole,
                        ty: MemRefType {
                            shape: Vec::new(),
                            elem: Box::new(Type::Index),
                            layout: super::ast::Layout::Identity,
                            space: None,
                        },
                    })
                }
                _ => Val::Unknown {
                    what: format!("a result of the scf.if at line {}", op.name_pos.line),
                },
            };
            results.push(v);
        }
        self.hoist(&escaping, &mut t, block);
        if let Some((eo, _)) = e.as_mut() {
            self.hoist(&escaping, eo, block);
        }
        self.set_many(op, results);
        let Some(c) = c else {
            return;
        };
        let pos = op.name_pos;
        let mut fields = Vec::new();
        let branch = |l: &mut Self, out: BlockOut| -> Node {
            let has_decls =
                !out.roots.iter().all(|r| !l.roots[*r].select.is_empty()) || !out.views.is_empty();
            if has_decls {
                map(pos, l.block_fields(out, pos, "body"))
            } else {
                seq(pos, out.ops)
            }
        };
        fields.push(("then".to_string(), branch(self, t)));
        if let Some((eo, _)) = e {
            fields.push(("else".to_string(), branch(self, eo)));
        }
        self.push(op, block, "if", s(pos, &c), fields);
    }

    fn dps(
        &mut self,
        op: &Op,
        modifier: Option<&str>,
        ins: &[Typed],
        outs: &[Typed],
        groups: &[(String, Vec<Typed>)],
        block: &mut BlockOut,
    ) {
        // tensor IR (before bufferization) is not what npusim runs
        let any_mem = ins
            .iter()
            .chain(outs)
            .any(|t| matches!(self.get(&t.value), Some(Val::Mem(_))));
        if !any_mem {
            self.set_results(op, Val::Tensor);
            return;
        }
        let short = op
            .name
            .strip_prefix("hivm.hir.")
            .unwrap_or(&op.name)
            .to_string();
        let pos = op.name_pos;
        self.seq += 1;
        for t in ins {
            self.access(&t.value, false);
        }
        for t in outs {
            self.access(&t.value, true);
        }
        for (_, g) in groups {
            for t in g {
                self.access(&t.value, true);
            }
        }
        let mut opnd = |l: &mut Self, t: &Typed| -> Option<Node> {
            let m = l.mem(&t.value, &op.name)?;
            let text = l.operand(&m, t.value.pos, block);
            Some(s(t.value.pos, &text))
        };
        let one = |v: &[Typed], what: &str, l: &mut Self| -> Option<Typed> {
            match v.first() {
                Some(t) => Some(t.clone()),
                None => {
                    l.error(pos, format!("{}: no {what} operand", op.name), None);
                    None
                }
            }
        };
        match short.as_str() {
            "load" | "nd2nz" | "load_scale" | "store" | "copy" | "fixpipe" => {
                let (Some(i), Some(o)) = (one(ins, "ins", self), one(outs, "outs", self)) else {
                    return;
                };
                let (Some(mut src), Some(mut dst)) = (opnd(self, &i), opnd(self, &o)) else {
                    return;
                };
                if self.opts.lenient {
                    // plan-only: the gm side takes as many elements as the on-chip side
                    if let (Some(Val::Mem(a)), Some(Val::Mem(b))) =
                        (self.get(&i.value).cloned(), self.get(&o.value).cloned())
                    {
                        let (ga, gb) = (self.roots[a.root].tensor, self.roots[b.root].tensor);
                        if ga && !gb {
                            let n = self.count(&b);
                            src = s(
                                i.value.pos,
                                &format!("{}[0 : {n}]", self.roots[a.root].name),
                            );
                        } else if gb && !ga {
                            let n = self.count(&a);
                            dst = s(
                                o.value.pos,
                                &format!("{}[0 : {n}]", self.roots[b.root].name),
                            );
                        }
                    }
                }
                let key = match short.as_str() {
                    "nd2nz" | "load_scale" => "load",
                    k => k,
                };
                let mut f = vec![("src".to_string(), src), ("dst".to_string(), dst)];
                if short == "nd2nz" {
                    f.push(("layout".into(), s(pos, "nz")));
                }
                self.push(op, block, key, map(pos, f), vec![]);
            }
            "mmadL1" | "mmadmxL1" => {
                // operands already in L0A/L0B (npusim's writer spells `mmad` this way): the
                // cube op alone, no staging
                let in_l0 = matches!(self.get(&ins[0].value), Some(Val::Mem(m)) if self.roots[m.root].scope == "l0a");
                let key = if in_l0 { "mmad" } else { "mmad_l1" };
                if ins.len() < 6 {
                    self.error(
                        pos,
                        format!(
                            "{}: expected ins(a, b, init, m, k, n), found {} operands",
                            op.name,
                            ins.len()
                        ),
                        None,
                    );
                    return;
                }
                let Some(o) = one(outs, "outs", self) else {
                    return;
                };
                let (Some(a), Some(b), Some(c)) =
                    (opnd(self, &ins[0]), opnd(self, &ins[1]), opnd(self, &o))
                else {
                    return;
                };
                let mut f = vec![
                    ("a".to_string(), a),
                    ("b".to_string(), b),
                    ("c".to_string(), c),
                ];
                if self.opts.lenient {
                    // plan-only: sizes the operands hold (lit tests' operands are often smaller
                    // than their m, k, n): k = 1, m from a, n from b and c
                    let cnt = |l: &Self, t: &Typed| match l.get(&t.value) {
                        Some(Val::Mem(m)) => l.count(m).max(1),
                        _ => 1,
                    };
                    let (na, nb, nc) = (cnt(self, &ins[0]), cnt(self, &ins[1]), cnt(self, &o));
                    let m = na.min(nc);
                    let n = nb.min(nc / m).max(1);
                    let init = self
                        .expr(&ins[2].value, ins[2].value.pos, "mmadL1's init")
                        .unwrap_or_else(|| "1".into());
                    for (k, v) in [
                        ("init", init),
                        ("m", m.to_string()),
                        ("k", "1".into()),
                        ("n", n.to_string()),
                    ] {
                        f.push((k.to_string(), s(pos, &v)));
                    }
                    self.push(op, block, key, map(pos, f), vec![]);
                    return;
                }
                for (k, i) in [("init", 2), ("m", 3), ("k", 4), ("n", 5)] {
                    let v = &ins[i].value;
                    let Some(e) = self.expr(v, v.pos, &format!("mmadL1's {k}")) else {
                        return;
                    };
                    f.push((k.to_string(), s(v.pos, &e)));
                }
                let args = groups
                    .iter()
                    .find(|(g, _)| g == "sync_related_args")
                    .map(|(_, a)| a.as_slice())
                    .unwrap_or(&[]);
                let flags = self.mmad_sync_args(op, args);
                for (id, _) in flags.iter().filter(|(_, set)| !set) {
                    self.sync_node(op, block, "wait_flag", "mte2", "mte1", id);
                }
                // InjectSync orders nothing between two mmadL1s accumulating into one L0C
                // tile: the template its args are for does (compiled kernels accumulate right),
                // so the macro is read as waiting for the M pipe's earlier work
                if !args.is_empty() && self.opts.sync == SyncOps::Keep {
                    self.push(op, block, "barrier", s(pos, "m"), vec![]);
                }
                self.push(op, block, key, map(pos, f), vec![]);
                for (id, _) in flags.iter().filter(|(_, set)| *set) {
                    self.sync_node(op, block, "set_flag", "mte1", "mte2", id);
                }
            }
            _ if short.starts_with('v') => {
                self.vector(op, &short, modifier, ins, outs, groups, block)
            }
            _ => self.error(
                pos,
                format!("`{}` touches memory and npusim does not know it", op.name),
                Some("docs/mlir.md lists the HIVM ops npusim reads".into()),
            ),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn vector(
        &mut self,
        op: &Op,
        short: &str,
        modifier: Option<&str>,
        ins: &[Typed],
        outs: &[Typed],
        groups: &[(String, Vec<Typed>)],
        block: &mut BlockOut,
    ) {
        let pos = op.name_pos;
        let mut mem_ins = Vec::new();
        let mut scalar: Option<String> = None;
        for t in ins {
            match self.get(&t.value).cloned() {
                Some(Val::Mem(m)) => mem_ins.push((m, t.value.pos)),
                Some(Val::Int { expr, .. }) => scalar = Some(expr),
                // npusim never computes data: a float scalar's value does not change timing
                Some(Val::Unknown { .. }) => scalar = Some("0".into()),
                Some(Val::Poisoned) => return,
                _ => {
                    self.error(
                        t.value.pos,
                        format!("%{} is not defined", t.value.name),
                        None,
                    );
                    return;
                }
            }
        }
        self.gm_inputs_plan_only(&mut mem_ins);
        // HIVM vector ops npusim has no op of its own for, timed as the op of their cost class
        // (one repeat per 256 B of output, docs/mlir.md)
        let short = match short {
            "vshl" | "vshr" => "vadd",
            "vmod" => "vdiv",
            "vpow" => "vmul",
            s => s,
        };
        let name = match (short, modifier) {
            ("vreduce", Some(m)) => format!("vreduce_{m}"),
            ("vbrc", _) if mem_ins.is_empty() => "vdup".to_string(),
            (op2, _) if scalar.is_some() && !mem_ins.is_empty() => match op2 {
                "vadd" | "vsub" => "vadds".into(),
                "vmul" | "vdiv" => "vmuls".into(),
                "vmax" => "vmaxs".into(),
                "vmin" => "vmins".into(),
                o => o.to_string(),
            },
            (o, _) => o.to_string(),
        };
        // a compare or select against scalars: npusim's vcmp and vsel take vectors, and a
        // scalar operand costs what a vector operand does, so the vector input stands for it
        let want = match crate::types::VecOp::parse(&name).map(|v| v.form()) {
            Some(crate::types::VecForm::Compare) => 2,
            Some(crate::types::VecForm::Select) => 3,
            _ => 0,
        };
        if !mem_ins.is_empty() && mem_ins.len() < want && scalar.is_some() {
            while mem_ins.len() < want {
                let first = mem_ins[0].clone();
                mem_ins.push(first);
            }
            // HIVM never lets a vsel's 64-bit output overwrite its i1 condition, which now
            // also stands for the scalar data
            if want == 3 {
                if let Some(Val::Mem(om)) = outs.first().and_then(|o| self.get(&o.value).cloned()) {
                    if dtype(&om.ty.elem).is_some_and(|d| d.ends_with("64")) {
                        self.roots[om.root].inplace = false;
                    }
                }
            }
        }
        if crate::types::VecOp::parse(&name).is_none() {
            self.error(
                pos,
                format!("`{}` is a vector op npusim does not model", op.name),
                Some("docs/programs.md lists npusim's vector ops".into()),
            );
            return;
        }
        if name == "vcast" {
            // HIVM inplaces a narrowing cast only over a contiguous last dimension
            let bits = |m: &Mem| -> u32 {
                match dtype(&m.ty.elem) {
                    Some(d) => d
                        .trim_start_matches(['i', 'u', 'f', 'b'])
                        .trim_start_matches('f')
                        .parse()
                        .unwrap_or(8),
                    None => 8,
                }
            };
            let strided = |m: &Mem| matches!(&m.ty.layout, super::ast::Layout::Strided { strides, .. } if strides.last().copied().flatten() != Some(1));
            if let (Some((i, _)), Some(o)) = (mem_ins.first(), outs.first()) {
                if let Some(Val::Mem(om)) = self.get(&o.value).cloned() {
                    if bits(&om) < bits(i) && (strided(i) || strided(&om)) {
                        self.roots[om.root].inplace = false;
                    }
                }
            }
        }
        self.dynamic_broadcast(op, &mut mem_ins, outs);
        let mut f = Vec::new();
        // a reduction whose operands npusim sees at ranks that do not pair up: both in the
        // MLIR's own ranks, the unit dimensions the MLIR dropped indexed away
        let reduced = if name.starts_with("vreduce") && !self.opts.lenient {
            self.reduction_in_mlir_ranks(&mem_ins, outs)
        } else {
            None
        };
        let mut ins_nodes = Vec::new();
        for (i, (m, p)) in mem_ins.iter().enumerate() {
            let t = match (&reduced, i) {
                (Some((t, _)), 0) => t.clone(),
                _ => self.operand(m, *p, block),
            };
            ins_nodes.push(s(*p, &t));
        }
        if !ins_nodes.is_empty() {
            f.push(("ins".to_string(), seq(pos, ins_nodes)));
        }
        let mut out_nodes = Vec::new();
        for o in outs {
            let Some(m) = self.mem(&o.value, &op.name) else {
                return;
            };
            let t = match &reduced {
                Some((_, t)) => t.clone(),
                None => self.operand(&m, o.value.pos, block),
            };
            out_nodes.push(s(o.value.pos, &t));
        }
        // one channel of a deinterleave (HIVM's `index_mode = <CHANNEL_k>`): npusim's
        // vdeinterleave writes two outputs, here the same one twice
        if name == "vdeinterleave" && out_nodes.len() == 1 {
            out_nodes.push(out_nodes[0].clone());
        }
        match out_nodes.len() {
            0 => {
                self.error(pos, format!("{}: no outs operand", op.name), None);
                return;
            }
            1 => f.push(("out".into(), out_nodes.pop().unwrap_or_else(|| s(pos, "")))),
            _ => f.push(("out".into(), seq(pos, out_nodes))),
        }
        if let Some(sc) = scalar.filter(|_| {
            matches!(
                name.as_str(),
                "vadds" | "vmuls" | "vmaxs" | "vmins" | "vdup"
            )
        }) {
            f.push(("scalar".into(), s(pos, &sc)));
        }
        for (g, vals) in groups {
            if g == "temp_buffer" {
                if let Some(t) = vals.first() {
                    if let Some(m) = self.mem(&t.value, &op.name) {
                        let text = self.operand(&m, t.value.pos, block);
                        f.push(("tmp".into(), s(t.value.pos, &text)));
                    }
                }
            }
        }
        for a in &op.attrs {
            let dims = |v: &Option<Attr>| -> Vec<Node> {
                match v {
                    Some(Attr::Array(xs)) => xs
                        .iter()
                        .filter_map(|x| match x {
                            Attr::Int { value, .. } => Some(int(a.pos, *value as i64)),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                }
            };
            match a.name.as_str() {
                "reduce_dims"
                    if self.opts.lenient
                        || mem_ins
                            .first()
                            .is_some_and(|(m, _)| matches!(m.sel, Sel::DynRange(..))) =>
                {
                    // plan-only: the dimensions of the operand as npusim selects it (a
                    // reshaped view reads its root's shape)
                    let rank = match mem_ins.first() {
                        Some((m, _)) => match &m.sel {
                            Sel::Whole => self.roots[m.root].shape.len(),
                            Sel::Box(b) => b.len(),
                            Sel::DynBox(b) => b.len(),
                            Sel::Range(..) | Sel::DynRange(..) => 1,
                        },
                        None => 1,
                    };
                    let mut d = dims(&a.value);
                    if d.iter()
                        .any(|n| matches!(n.value, Y::Int(k) if k as usize >= rank))
                    {
                        d = vec![int(a.pos, rank as i64 - 1)];
                    }
                    f.push(("dims".into(), seq(a.pos, d)));
                }
                "reduce_dims" if reduced.is_some() => {
                    f.push(("dims".into(), seq(a.pos, dims(&a.value))))
                }
                "reduce_dims" => {
                    let given: Vec<u64> = dims(&a.value)
                        .iter()
                        .filter_map(|n| match n.value {
                            Y::Int(k) => u64::try_from(k).ok(),
                            _ => None,
                        })
                        .collect();
                    let out = outs.first().and_then(|o| match self.get(&o.value) {
                        Some(Val::Mem(m)) => Some(m.clone()),
                        _ => None,
                    });
                    let d = match (mem_ins.first(), out) {
                        (Some((i, _)), Some(o)) => self.reduce_dims_seen(i, &o, &given),
                        _ => given,
                    };
                    f.push((
                        "dims".into(),
                        seq(a.pos, d.iter().map(|k| int(a.pos, *k as i64)).collect()),
                    ))
                }
                // a view sized when the kernel runs is one flat range: its dimensions are gone
                "broadcast_dims" | "broadcast"
                    if mem_ins
                        .iter()
                        .any(|(m, _)| matches!(m.sel, Sel::DynRange(..))) => {}
                "broadcast_dims" | "broadcast" if !self.opts.lenient => {
                    f.push(("broadcast".into(), seq(a.pos, dims(&a.value))))
                }
                "permutation" if name == "vtranspose" => {
                    f.push(("transpose".into(), boolean(a.pos, true)))
                }
                _ => {}
            }
        }
        if self.opts.lenient && name != "vbrc" {
            // plan-only: the dimensions an input broadcasts along, from the shapes (lit
            // tests' `broadcast` lists do not always match them)
            let shape = |l: &Self, m: &Mem| -> Vec<u64> {
                match &m.sel {
                    Sel::Whole => l.roots[m.root].shape.clone(),
                    Sel::Box(b) => b.iter().map(|(_, n)| *n).collect(),
                    Sel::Range(_, n) => vec![*n],
                    Sel::DynBox(_) | Sel::DynRange(..) => l.roots[m.root].shape.clone(),
                }
            };
            if let Some(Val::Mem(om)) = outs.first().and_then(|o| self.get(&o.value).cloned()) {
                let out_shape = shape(self, &om);
                let mut dims: Vec<usize> = Vec::new();
                for (m, _) in &mem_ins {
                    let s = shape(self, m);
                    if s.len() == out_shape.len() {
                        for (d, (a, b)) in s.iter().zip(&out_shape).enumerate() {
                            if *a == 1 && *b > 1 && !dims.contains(&d) {
                                dims.push(d);
                            }
                        }
                    }
                }
                if !dims.is_empty() {
                    dims.sort_unstable();
                    f.push((
                        "broadcast".into(),
                        seq(pos, dims.iter().map(|d| int(pos, *d as i64)).collect()),
                    ));
                }
            }
        }
        self.push(op, block, &name, map(pos, f), vec![]);
    }
}

impl Lower<'_> {
    /// The static shape npusim sees for `m` (its selection of the root), when it has one.
    fn seen_shape(&self, m: &Mem) -> Option<Vec<u64>> {
        match &m.sel {
            Sel::Whole => Some(self.roots[m.root].shape.clone()),
            Sel::Box(b) => Some(b.iter().map(|(_, n)| *n).collect()),
            Sel::Range(_, n) => Some(vec![*n]),
            Sel::DynBox(_) | Sel::DynRange(..) => None,
        }
    }

    /// `m` (the type of argument `what`) with each dynamic dimension K the size `--param
    /// what_dimK` gives, and those params declared; `None` when one is missing or none is
    /// dynamic.
    fn given_dims(&mut self, m: &MemRefType, what: &str, pos: Pos) -> Option<MemRefType> {
        if !m.shape.contains(&Dim::Dynamic) {
            return None;
        }
        let mut out = m.clone();
        let mut found = Vec::new();
        for (k, d) in m.shape.iter().enumerate() {
            if *d != Dim::Dynamic {
                continue;
            }
            let name = dim_param(what, k);
            let v = self.opts.params.iter().find(|(n, _)| *n == name)?.1;
            found.push((name, v));
            out.shape[k] = Dim::Static(u64::try_from(v).ok()?);
        }
        for (name, v) in found {
            self.params.push((name, int(pos, v)));
        }
        Some(out)
    }

    /// The size `memref.dim %m, %k` reads when the dimension is static.
    fn dim_size(&self, operands: &[Value]) -> Option<i64> {
        let (m, k) = (operands.first()?, operands.get(1)?);
        let Some(Val::Mem(mem)) = self.get(m) else {
            return None;
        };
        let k = usize::try_from(self.konst(k)?).ok()?;
        match mem.ty.shape.get(k)? {
            Dim::Static(n) => i64::try_from(*n).ok(),
            Dim::Dynamic => None,
        }
    }

    /// The value of a `memref.load` of a constant element K of a whole one-dimensional gm
    /// argument (the tiling struct the host fills), given by `--param argN_elemK`; unknown,
    /// naming that param, when it is not given.
    fn given_element(
        &mut self,
        memref: &Value,
        indices: &[Value],
        m: &Mem,
        root: &Root,
    ) -> Option<Val> {
        if !root.tensor || !matches!(m.sel, Sel::Whole) || root.shape.len() != 1 {
            return None;
        }
        let [i] = indices else { return None };
        let k = self.konst(i)?;
        let name = format!("{}_elem{k}", sanitize(&memref.name));
        match self.opts.params.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                if !self.params.iter().any(|(n, _)| *n == name) {
                    self.params.push((name.clone(), int(memref.pos, *v)));
                }
                // the value itself, so that the sizes it gives fold into static shapes
                Some(Val::Int {
                    expr: v.to_string(),
                    konst: Some(*v),
                })
            }
            None => Some(Val::Unknown {
                what: format!(
                    "element {k} of %{} (a value the host fills, such as the tiling struct's: give it with --param {name}=N)",
                    memref.name
                ),
            }),
        }
    }

    /// The result type of a reshape with the sizes its source's static shape gives (a kernel
    /// of dynamic shape whose sizes `--param` gave): a collapsed dimension is the product of
    /// its group, an expanded one the constant of its `output_shape`.
    fn static_reshape(&self, kind: &ViewKind, src: &MemRefType, rty: &MemRefType) -> MemRefType {
        let mut out = rty.clone();
        // plan-only lowering keeps its own reading of views sized at run time
        if self.opts.lenient || !rty.shape.contains(&Dim::Dynamic) {
            return out;
        }
        match kind {
            ViewKind::CollapseShape { reassociation } if reassociation.len() == rty.shape.len() => {
                for (i, group) in reassociation.iter().enumerate() {
                    let n: Option<u64> = group
                        .iter()
                        .map(|&d| match src.shape.get(d as usize) {
                            Some(Dim::Static(n)) => Some(*n),
                            _ => None,
                        })
                        .product();
                    if let Some(n) = n {
                        out.shape[i] = Dim::Static(n);
                    }
                }
            }
            ViewKind::ExpandShape { output_shape, .. } if output_shape.len() == rty.shape.len() => {
                for (i, f) in output_shape.iter().enumerate() {
                    let n = match f {
                        OpFold::Const(c) => Some(*c),
                        OpFold::Value(v) => self.konst(v),
                    };
                    if let Some(n) = n.and_then(|n| u64::try_from(n).ok()) {
                        out.shape[i] = Dim::Static(n);
                    }
                }
            }
            ViewKind::View { sizes, .. } => {
                let mut given = sizes.iter();
                for d in out.shape.iter_mut() {
                    if *d == Dim::Dynamic {
                        let Some(v) = given.next() else { break };
                        if let Some(n) = self.konst(v).and_then(|n| u64::try_from(n).ok()) {
                            *d = Dim::Static(n);
                        }
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// Declares gm tensor `root` with `shape` (nothing used it yet; same element count).
    fn redeclare_tensor(&mut self, root: usize, shape: Vec<u64>) {
        let (name, pos) = (self.roots[root].name.clone(), self.roots[root].pos);
        if let Some((_, node)) = self.tensors.iter_mut().find(|(n, _)| *n == name) {
            if let Y::Map(fields) = &mut node.value {
                for (k, v) in fields.iter_mut() {
                    if k == "shape" {
                        *v = seq(pos, shape.iter().map(|d| int(pos, *d as i64)).collect());
                    }
                }
            }
        }
        self.roots[root].shape = shape;
    }

    /// A subview sized when the kernel runs of a rank-reduced part (`memref.subview` that
    /// dropped unit dimensions of a box of the root): each source dimension is the next box
    /// dimension of its extent, the dropped ones are 1 and keep their start.
    fn dyn_box_rank_reduced(
        &self,
        src: &Mem,
        src_shape: &[u64],
        offs: &[String],
        ext: &[String],
    ) -> Option<Vec<(String, String)>> {
        let boxed: Vec<(String, String)> = match &src.sel {
            Sel::Box(b) => b.iter().map(|(s, n)| (s.clone(), n.to_string())).collect(),
            Sel::DynBox(b) => b.clone(),
            _ => return None,
        };
        if boxed.len() <= offs.len() || src_shape.len() != offs.len() {
            return None;
        }
        let mut out = Vec::new();
        let mut j = 0;
        for (i, want) in src_shape.iter().enumerate() {
            // skip the box's unit dimensions the source type dropped
            while j < boxed.len() && boxed[j].1 != want.to_string() {
                if boxed[j].1 != "1" {
                    return None;
                }
                out.push(boxed[j].clone());
                j += 1;
            }
            let (st, _) = boxed.get(j)?;
            let start = match (st.parse::<i64>(), offs[i].parse::<i64>()) {
                (Ok(a), Ok(b)) => (a + b).to_string(),
                (Ok(0), _) => offs[i].clone(),
                (_, Ok(0)) => st.clone(),
                _ => format!("{st} + {}", paren(&offs[i])),
            };
            out.push((start, ext[i].clone()));
            j += 1;
        }
        while j < boxed.len() {
            if boxed[j].1 != "1" {
                return None;
            }
            out.push(boxed[j].clone());
            j += 1;
        }
        Some(out)
    }

    /// A subview sized when the kernel runs of a flat part of a one-dimensional root (a
    /// `memref.view` of a byte buffer): the contiguous range from its first to its last
    /// element, in the source type's row-major order. A dimension's step is the product of the
    /// source's later extents, so it must be static wherever the subview moves along it.
    fn dyn_range_flat(
        &self,
        src: &Mem,
        source: &str,
        offs: &[String],
        ext: &[String],
    ) -> Option<Sel> {
        if self.roots[src.root].shape.len() != 1 {
            return None;
        }
        let base = match &src.sel {
            Sel::Whole => "0".to_string(),
            Sel::Range(st, _) | Sel::DynRange(st, _) => st.clone(),
            _ => return None,
        };
        let dims = &src.ty.shape;
        if dims.len() != offs.len() {
            return None;
        }
        let mut first = vec![base];
        let mut span = vec!["1".to_string()];
        for i in 0..dims.len() {
            let moves = offs[i] != "0" || ext[i] != "1";
            if !moves {
                continue;
            }
            // the step: the later extents, a dynamic one from the view's sizes
            let mut inner: u64 = 1;
            let mut terms: Vec<String> = Vec::new();
            let sizes = self.view_sizes.get(source);
            for (j, d) in dims.iter().enumerate().skip(i + 1) {
                match d {
                    Dim::Static(n) => inner *= n,
                    Dim::Dynamic => {
                        let k = dims[..j].iter().filter(|d| **d == Dim::Dynamic).count();
                        terms.push(paren(sizes?.get(k)?));
                    }
                }
            }
            if inner != 1 || terms.is_empty() {
                terms.insert(0, inner.to_string());
            }
            let inner = terms.join(" * ");
            if offs[i] != "0" {
                first.push(format!("{} * {inner}", paren(&offs[i])));
            }
            if ext[i] != "1" {
                span.push(match (ext[i].parse::<u64>(), inner.parse::<u64>()) {
                    (Ok(n), Ok(m)) => (n.saturating_sub(1) * m).to_string(),
                    _ => format!("({} - 1) * {inner}", paren(&ext[i])),
                });
            }
        }
        let first: Vec<String> = first.into_iter().filter(|t| t != "0").collect();
        let first = if first.is_empty() {
            "0".to_string()
        } else {
            first.join(" + ")
        };
        // one dimension moving by single elements spans its extent (keeps the text short:
        // the loader caps an expression's size)
        let span = match span.as_slice() {
            [one] => one.clone(),
            [_, t] if ext.iter().filter(|e| *e != "1").count() == 1 => {
                let i = (0..ext.len()).find(|&i| ext[i] != "1").unwrap_or(0);
                let inner: u64 = dims[i + 1..]
                    .iter()
                    .map(|d| match d {
                        Dim::Static(n) => *n,
                        Dim::Dynamic => 0,
                    })
                    .product();
                if inner == 1 {
                    ext[i].clone()
                } else {
                    format!("1 + {t}")
                }
            }
            _ => span.join(" + "),
        };
        Some(Sel::DynRange(first, span))
    }

    /// A reduction's input and output operands written in the ranks of their MLIR types, when
    /// npusim sees them at ranks that do not pair up (a rank-reducing subview of `[1, 118,
    /// 104, 1]` read as `[118, 100]`, reduced into a `[1, 1, 100]` buffer read as `[1, 100]`):
    /// each is a box of its root whose extents, with unit ones dropped where the MLIR type has
    /// none, are the type's; a dropped dimension is an index (`x[0, 0 : 118, 0 : 100, 0]`).
    fn reduction_in_mlir_ranks(
        &self,
        ins: &[(Mem, Pos)],
        outs: &[super::ast::Typed],
    ) -> Option<(String, String)> {
        let (i, _) = ins.first()?;
        let o = match self.get(&outs.first()?.value)? {
            Val::Mem(m) => m.clone(),
            _ => return None,
        };
        let (si, so) = (self.seen_shape(i)?, self.seen_shape(&o)?);
        if si.len() == so.len() {
            return None;
        }
        Some((self.in_mlir_rank(i)?, self.in_mlir_rank(&o)?))
    }

    /// `m` as a selection of its root in the rank of its MLIR type (see
    /// [`Self::reduction_in_mlir_ranks`]).
    fn in_mlir_rank(&self, m: &Mem) -> Option<String> {
        let root = &self.roots[m.root];
        // a multi-buffer's slot or a select: written by `operand` only
        if root.multi > 1 || !root.select.is_empty() {
            return None;
        }
        let boxed: Vec<(String, u64)> = match &m.sel {
            Sel::Whole => root.shape.iter().map(|n| ("0".to_string(), *n)).collect(),
            Sel::Box(b) => b.clone(),
            _ => return None,
        };
        let want: Vec<u64> =
            m.ty.shape
                .iter()
                .map(|d| match d {
                    Dim::Static(n) => Some(*n),
                    Dim::Dynamic => None,
                })
                .collect::<Option<_>>()?;
        let mut k = 0;
        let mut parts = Vec::new();
        for (st, n) in &boxed {
            if k < want.len() && want[k] == *n {
                parts.push(if st.parse::<i64>().is_ok() {
                    format!("{st} : {}", st.parse::<i64>().ok()? + *n as i64)
                } else {
                    format!("{st} : {} + {n}", paren(st))
                });
                k += 1;
            } else if *n == 1 {
                parts.push(st.clone());
            } else {
                return None;
            }
        }
        (k == want.len()).then(|| format!("{}[{}]", root.name, parts.join(", ")))
    }

    /// Plan-only: a vector op's input in gm (the compiler emits one, `vadd` of a gm subview and
    /// a ub buffer, for AscendNPU-IR's compile-return-arg.mlir) is read in place of another
    /// input in ub: PlanMemory plans no gm, and HIVM reuses the ub input for the output as it
    /// would with two ub inputs (a minimal case checked against bishengir-opt); a run refuses
    /// the op.
    fn gm_inputs_plan_only(&self, ins: &mut [(Mem, Pos)]) {
        if !self.opts.lenient {
            return;
        }
        let on_chip = ins
            .iter()
            .find(|(m, _)| self.roots[m.root].scope != "gm")
            .cloned();
        if let Some((ub, _)) = on_chip {
            for (m, _) in ins.iter_mut() {
                if self.roots[m.root].scope == "gm" {
                    *m = ub.clone();
                }
            }
        }
    }

    /// A reduction's `reduce_dims` in the dimensions npusim sees. A reshape of a whole buffer
    /// keeps the buffer's own shape (`collapse_shape` of `[1, 4080]` into `[4080]` is still
    /// `[1, 4080]` to npusim), so the MLIR dimension numbers index another rank: then the
    /// reduced dimensions are those where the input's extent differs from the output's (the
    /// output keeps a reduced dimension as 1, HIVM's rule), or the last one when none differ
    /// (every reduced extent is already 1, which reduces nothing).
    fn reduce_dims_seen(&self, input: &Mem, out: &Mem, given: &[u64]) -> Vec<u64> {
        let (Some(i), Some(o)) = (self.seen_shape(input), self.seen_shape(out)) else {
            return given.to_vec();
        };
        if i.len() == input.ty.shape.len() || i.len() != o.len() {
            return given.to_vec();
        }
        let differ: Vec<u64> = (0..i.len())
            .filter(|&d| i[d] != o[d])
            .map(|d| d as u64)
            .collect();
        if differ.is_empty() {
            vec![i.len() as u64 - 1]
        } else {
            differ
        }
    }
}

/// The `--param` that gives dimension `k` of the dynamic memref argument `arg`.
fn dim_param(arg: &str, k: usize) -> String {
    format!("{}_dim{k}", sanitize(arg))
}

/// What `opt` puts where a value it cannot compute is needed (plan-only lowering): a
/// condition npusim cannot decide when loading (`block % 2 == 0`: the planner and the sync
/// pass take both branches), a trip count of 2, offsets and ids of 0.
fn stand_in(role: &str) -> String {
    if role.contains("condition") || role.contains("init") {
        "block % 2 == 0".into()
    } else if role.contains("upper bound") {
        "2".into()
    } else if role.contains("step") {
        "1".into()
    } else {
        "0".into()
    }
}

/// `a, b<c, d>, e` split at its top-level commas: `[a, b<c, d>, e]`.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    let mut prev = ' ';
    for c in s.chars() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' if prev != '-' => depth -= 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                prev = c;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        prev = c;
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The values of the region's closing `scf.yield`.
fn last_yield(r: &Region) -> Vec<Value> {
    r.blocks
        .first()
        .and_then(|b| b.ops.last())
        .and_then(|o| match &o.kind {
            OpKind::Yield { values } => Some(values.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn op_has_regions(op: &Op) -> bool {
    matches!(
        op.kind,
        OpKind::Module { .. }
            | OpKind::Func { .. }
            | OpKind::For { .. }
            | OpKind::If { .. }
            | OpKind::While { .. }
            | OpKind::Scope { .. }
    )
}

/// Ops that touch memory or sync by their name, whatever their operands.
fn is_memory_op(name: &str) -> bool {
    let n = name.strip_prefix("hivm.hir.").unwrap_or("");
    !n.is_empty()
        && !matches!(
            n,
            "set_mask_norm"
                | "set_ffts_base_addr"
                | "debug"
                | "get_block_num"
                | "get_sub_block_num"
                | "set_ctrl"
                | "set_atomic"
        )
}

fn type_name(t: &Type) -> String {
    match t {
        Type::Index => "index".into(),
        Type::Int { bits, signed } => match signed {
            Some(true) => format!("si{bits}"),
            Some(false) => format!("ui{bits}"),
            None => format!("i{bits}"),
        },
        Type::Float(f) => f.clone(),
        Type::Other(o) => o.clone(),
        _ => "a composite type".into(),
    }
}

/// An affine expression as an npusim expression over the map's operands (`dims` dims first).
fn affine(e: &super::ast::AffineExpr, args: &[(String, Option<i64>)], dims: u32) -> String {
    use super::ast::AffineExpr as A;
    let arg = |i: usize| {
        args.get(i)
            .map(|a| paren(&a.0))
            .unwrap_or_else(|| "0".into())
    };
    match e {
        A::Dim(i) => arg(*i as usize),
        A::Sym(j) => arg(dims as usize + *j as usize),
        A::Const(c) => c.to_string(),
        A::Add(a, b) => format!("({} + {})", affine(a, args, dims), affine(b, args, dims)),
        A::Mul(a, b) => format!("({} * {})", affine(a, args, dims), affine(b, args, dims)),
        A::FloorDiv(a, b) => format!("({} / {})", affine(a, args, dims), affine(b, args, dims)),
        A::CeilDiv(a, b) => {
            let (x, y) = (affine(a, args, dims), affine(b, args, dims));
            format!("(({x} + {y} - 1) / {y})")
        }
        A::Mod(a, b) => format!("({} % {})", affine(a, args, dims), affine(b, args, dims)),
    }
}

impl Lower<'_> {
    /// A function body of several blocks joined by `cf.br` / `cf.cond_br` (plan-only): the
    /// blocks in written order, as HIVM's PlanMemory walks them (see [`super::cfg`]). A block
    /// argument is what its predecessors pass (one buffer, or a select of them as for an
    /// `scf.if`'s result); a branch is no op; a use after HIVM freed the buffer reads another
    /// input of the op in its place, so it does not keep the buffer live.
    fn blocks(&mut self, body: &Region, block: &mut BlockOut) {
        if !self.opts.lenient {
            let p = body.blocks[1]
                .ops
                .first()
                .map(|o| o.name_pos)
                .unwrap_or_default();
            self.error(
                p,
                "a function of more than one block (cf.br control flow) is run by npusim only as structured control flow".into(),
                Some("write it with scf.if / scf.for; `npusim opt` plans it as HIVM does".into()),
            );
            return;
        }
        let cfg = match super::cfg::analyse(self.src, body) {
            Ok(c) => c,
            Err(problems) => {
                for (p, m) in problems {
                    self.error(p, m, Some("npusim reads forward cf.br / cf.cond_br between the blocks of a function".into()));
                }
                return;
            }
        };
        for (k, b) in body.blocks.iter().enumerate() {
            for (i, (arg, ty)) in b.args.iter().enumerate() {
                let incoming = cfg.incoming[k].get(i).cloned().unwrap_or_default();
                self.block_arg(arg, ty, &incoming, block);
            }
            for op in &b.ops {
                if super::cfg::is_branch(&op.name) {
                    continue;
                }
                // the freed on-chip buffers this op reads (a gm tensor is no buffer of HIVM's)
                let dead: Vec<&String> = match &op.kind {
                    OpKind::Dps { ins, .. } => cfg
                        .dead
                        .iter()
                        .filter(|(o, n)| {
                            *o == op.span.start.offset
                                && ins.iter().any(|t| t.value.name == *n)
                                && matches!(self.vals.get(&(n.clone(), 0)),
                                    Some(Val::Mem(m)) if !self.roots[m.root].tensor)
                        })
                        .map(|(_, n)| n)
                        .collect(),
                    _ => Vec::new(),
                };
                let stand_in = match &op.kind {
                    OpKind::Dps { ins, .. } if !dead.is_empty() => ins
                        .iter()
                        .filter(|t| !dead.contains(&&t.value.name))
                        .find_map(|t| match self.get(&t.value) {
                            Some(v @ Val::Mem(_)) => Some(v.clone()),
                            _ => None,
                        }),
                    _ => None,
                };
                let Some(v) = stand_in else {
                    self.op(op, block);
                    continue;
                };
                let saved: Vec<((String, u32), Option<Val>)> = dead
                    .iter()
                    .map(|n| {
                        let key = ((*n).clone(), 0);
                        let old = self.vals.insert(key.clone(), v.clone());
                        (key, old)
                    })
                    .collect();
                self.op(op, block);
                for (key, old) in saved {
                    match old {
                        Some(o) => self.vals.insert(key, o),
                        None => self.vals.remove(&key),
                    };
                }
            }
        }
    }

    /// A block argument: the value its predecessors pass, or a select of the buffers they do.
    fn block_arg(&mut self, arg: &Value, ty: &Type, incoming: &[String], block: &mut BlockOut) {
        let vals: Vec<Option<Val>> = incoming
            .iter()
            .map(|n| self.vals.get(&(n.clone(), 0)).cloned())
            .collect();
        let mems: Vec<Mem> = vals
            .iter()
            .filter_map(|v| match v {
                Some(Val::Mem(m)) => Some(m.clone()),
                _ => None,
            })
            .collect();
        let v = match ty {
            Type::MemRef(mt) if !mems.is_empty() && mems.len() == vals.len() => {
                if mems.iter().all(|m| m.root == mems[0].root) {
                    Val::Mem(Mem {
                        ty: mt.clone(),
                        ..mems[0].clone()
                    })
                } else {
                    let roots: Vec<usize> = mems.iter().map(|m| m.root).collect();
                    self.merge(&roots, mt, arg.pos, block, true, true)
                }
            }
            _ => match vals.first() {
                Some(Some(first))
                    if vals
                        .iter()
                        .all(|v| v.as_ref().is_some_and(|v| same_int(v, first))) =>
                {
                    first.clone()
                }
                _ => Val::Unknown {
                    what: format!("block argument %{}", arg.name),
                },
            },
        };
        self.set(arg, v);
    }
}

/// A value as written, without `%`: `x`, or `r#1` for a result of a group.
fn value_text(v: &Value) -> String {
    if v.index > 0 {
        format!("{}#{}", v.name, v.index)
    } else {
        v.name.clone()
    }
}

/// Two integer values that are the same expression.
fn same_int(a: &Val, b: &Val) -> bool {
    matches!((a, b), (Val::Int { expr: x, .. }, Val::Int { expr: y, .. }) if x == y)
}

impl Lower<'_> {
    /// Plan-only: an op with an inline broadcast (`broadcast = [..]`) over memrefs of dynamic
    /// shapes. HIVM lets its output take an input's address only when the two operands'
    /// types have the same static shape (`isStaticShapeSame`: `?` equals `?`); npusim's rule
    /// compares the shapes of the operands as selected, which for a view sized when the
    /// kernel runs are its root's or unknown.
    /// So each operand stands for its whole root, except an input whose type's shape is not
    /// the output's, which stands for one element of it: the planner then sees the shapes
    /// HIVM's rule compares.
    fn dynamic_broadcast(&mut self, op: &Op, mem_ins: &mut [(Mem, Pos)], outs: &[Typed]) {
        if !self.opts.lenient {
            return;
        }
        let listed = op.attrs.iter().any(|a| {
            matches!(a.name.as_str(), "broadcast" | "broadcast_dims")
                && matches!(&a.value, Some(Attr::Array(v)) if !v.is_empty())
        });
        let dynamic = |m: &Mem| m.ty.shape.contains(&Dim::Dynamic);
        let Some(out) = outs.first() else { return };
        let Some(Val::Mem(om)) = self.get(&out.value).cloned() else {
            return;
        };
        if !listed || !(dynamic(&om) || mem_ins.iter().any(|(m, _)| dynamic(m))) {
            return;
        }
        for (m, _) in mem_ins.iter_mut() {
            m.sel = if m.ty.shape == om.ty.shape {
                Sel::Whole
            } else {
                Sel::Range("0".into(), 1)
            };
        }
        self.set(
            &out.value,
            Val::Mem(Mem {
                sel: Sel::Whole,
                ..om
            }),
        );
    }
}

impl Lower<'_> {
    /// Plan-only: a memref argument in an on-chip space (`ub`, `cbuf`, ...). HIVM's PlanMemory
    /// plans `memref.alloc`s only: an argument is no buffer of its plan (it traces to no
    /// alloc), so it takes no address, is never inplaced, and reading it unwritten is no
    /// error. npusim declares it as a buffer fixed at offset 0 with no bytes (`shape: [0]`,
    /// `at: [0]`): the planner places around it nothing, a fixed buffer never takes part in
    /// inplace, and `opt` does not report a fixed buffer read before its first write.
    fn local_arg(&mut self, a: &super::ast::FuncArg, m: &MemRefType, dt: &'static str) {
        let space = m.space.clone().unwrap_or_default();
        let Some(sc) = scope(&space) else {
            self.error(
                a.value.pos,
                format!(
                    "argument %{}: address space `{space}` is not one npusim models",
                    a.value.name
                ),
                Some("npusim plans ub, cbuf (L1), ca (L0A), cb (L0B) and cc (L0C)".into()),
            );
            return;
        };
        if sc == "ub" {
            self.uses_ub = true;
        } else {
            self.uses_cube = true;
        }
        // the shape views of it read (the declared buffer itself has none)
        let shape: Vec<u64> = m
            .shape
            .iter()
            .map(|d| match d {
                Dim::Static(n) => *n,
                Dim::Dynamic => 1,
            })
            .collect();
        let name = self.fresh(&a.value.name);
        let pos = a.value.pos;
        self.roots.push(Root {
            name,
            tensor: false,
            shape,
            dtype: dt.to_string(),
            scope: sc,
            multi: 1,
            at: Some(vec![0]),
            share: None,
            pos,
            select: Vec::new(),
            inplace: false,
            preload: false,
        });
        let root = self.roots.len() - 1;
        self.local_args.push(root);
        self.set(
            &a.value,
            Val::Mem(Mem {
                root,
                sel: Sel::Whole,
                ty: m.clone(),
            }),
        );
    }
}

/// A carried buffer HIVM copies into before a `scope.return`: the loop yields a result of a
/// `scope.scope` of its body, and HIVM's NormalizeLoopIterator then places the copy inside the
/// scope and returns the carried buffer (`replaceReturnValueByIterArg`), not before the yield.
struct ScopeYield<'o> {
    /// The scope op in the loop body.
    scope: &'o Op,
    /// The loop's iter_arg (and yielded value) index.
    index: usize,
    /// Which of the scope's results is yielded.
    result: usize,
    /// The scope's `scope.return` op and its operands.
    ret: &'o Op,
    returned: Vec<Value>,
}

/// The yielded values (of the iter_args in copy mode) that are results of a `scope.scope`
/// in the loop's body.
fn scope_yields<'o>(
    body: &'o Region,
    yielded: &[Value],
    copy_mode: &[bool],
) -> Vec<ScopeYield<'o>> {
    let Some(b) = body.blocks.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (index, v) in yielded.iter().enumerate() {
        if copy_mode.get(index) != Some(&true) {
            continue;
        }
        for o in &b.ops {
            let OpKind::Scope { body: sb } = &o.kind else {
                continue;
            };
            let mut k = 0usize;
            let mut result = None;
            for r in &o.results {
                for j in 0..r.count.max(1) {
                    if r.name == v.name && j == v.index {
                        result = Some(k);
                    }
                    k += 1;
                }
            }
            let Some(result) = result else { continue };
            let ret = sb
                .blocks
                .iter()
                .flat_map(|b| &b.ops)
                .rfind(|x| x.name == "scope.return");
            let Some(ret) = ret else { continue };
            let returned = match &ret.kind {
                OpKind::Opaque { operands: v, .. }
                | OpKind::Return { values: v }
                | OpKind::Yield { values: v } => v.clone(),
                _ => continue,
            };
            if returned.len() > result {
                out.push(ScopeYield {
                    scope: o,
                    index,
                    result,
                    ret,
                    returned,
                });
            }
        }
    }
    out
}

impl Lower<'_> {
    /// HIVM's copy of a scope's returned buffer into the loop's carried one, placed after the
    /// scope's ops (npusim inlines a scope: that is before its `scope.return`); the scope's
    /// result becomes the carried buffer.
    fn scope_copy(
        &mut self,
        site: &ScopeYield<'_>,
        arg: &Value,
        inits: &[Option<Val>],
        out: &mut BlockOut,
    ) {
        let (Some(Some(Val::Mem(m))), Some(src)) =
            (inits.get(site.index), site.returned.get(site.result))
        else {
            return;
        };
        let Some(Val::Mem(sm)) = self.get(src).cloned() else {
            return;
        };
        let pos = site.ret.name_pos;
        let (yn, an) = (
            self.roots[sm.root].name.clone(),
            self.roots[m.root].name.clone(),
        );
        self.push(
            site.ret,
            out,
            "copy",
            map(
                pos,
                vec![("src".into(), s(pos, &yn)), ("dst".into(), s(pos, &an))],
            ),
            vec![],
        );
        let text = self
            .src
            .get(site.ret.span.start.offset as usize..site.ret.span.end as usize)
            .unwrap_or("");
        let line = one_line(text, usize::MAX);
        let tys = line
            .rsplit_once(" : ")
            .map(|(_, t)| t.to_string())
            .unwrap_or_default();
        let ty = split_top(&tys)
            .get(site.result)
            .cloned()
            .unwrap_or_else(|| tys.clone());
        let names: Vec<String> = site
            .returned
            .iter()
            .enumerate()
            .map(|(k, v)| {
                if k == site.result {
                    format!("%{}", arg.name)
                } else {
                    format!("%{}", value_text(v))
                }
            })
            .collect();
        self.copies.push(CopySite {
            yield_pos: pos,
            copy: format!(
                "hivm.hir.copy ins(%{} : {ty}) outs(%{} : {ty})",
                value_text(src),
                arg.name
            ),
            yield_text: format!("scope.return {} : {tys}", names.join(", ")),
        });
        let mut k = 0usize;
        for r in &site.scope.results {
            for j in 0..r.count.max(1) {
                if k == site.result {
                    self.vals.insert((r.name.clone(), j), Val::Mem(m.clone()));
                }
                k += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower_text(text: &str, lenient: bool) -> Result<Lowered, Vec<Diagnostic>> {
        lower_with(text, lenient, &[])
    }

    fn lower_with(
        text: &str,
        lenient: bool,
        params: &[(String, i64)],
    ) -> Result<Lowered, Vec<Diagnostic>> {
        let chunks = crate::mlir::parse_file(text, "t.mlir").expect("parses");
        let (c, f) = functions(&chunks)[0];
        let opts = Options {
            params: params.to_vec(),
            sync: SyncOps::Keep,
            lenient,
        };
        lower(text, &chunks[c], f, "t.mlir", &opts)
    }

    fn flow(text: &str) -> String {
        let l = lower_text(text, false).unwrap_or_else(|d| panic!("{d:?}"));
        crate::yaml::flow(&l.doc, 1 << 20)
    }

    const UB: &str = "#hivm.address_space<ub>";
    const GM: &str = "#hivm.address_space<gm>";

    #[test]
    fn a_vector_kernel_lowers_to_the_program_it_means() {
        let text = format!(
            "func.func @add(%x: memref<4x64xf16, {GM}>, %z: memref<4x64xf16, {GM}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %t = %c0 to %c4 step %c1 {{
    %a = memref.alloc() : memref<64xf16, {UB}>
    %r = memref.subview %x[%t, 0] [1, 64] [1, 1] : memref<4x64xf16, {GM}> to memref<64xf16, strided<[1], offset: ?>, {GM}>
    hivm.hir.load ins(%r : memref<64xf16, strided<[1], offset: ?>, {GM}>) outs(%a : memref<64xf16, {UB}>)
    hivm.hir.vexp ins(%a : memref<64xf16, {UB}>) outs(%a : memref<64xf16, {UB}>)
    %w = memref.subview %z[%t, 0] [1, 64] [1, 1] : memref<4x64xf16, {GM}> to memref<64xf16, strided<[1], offset: ?>, {GM}>
    hivm.hir.store ins(%a : memref<64xf16, {UB}>) outs(%w : memref<64xf16, strided<[1], offset: ?>, {GM}>)
  }}
  return
}}"
        );
        // the row t of each gm tensor is the box [t, t + 1) x [0, 64); the core is aiv (UB)
        assert_eq!(
            flow(&text),
            "{ kernel: add, core: aiv, sync: auto, gm: { x: { shape: [4, 64], dtype: f16 }, \
             z: { shape: [4, 64], dtype: f16 } }, body: [{ for: { var: t, from: \"0\", to: \"4\", \
             step: \"1\" }, buffers: { a: { scope: ub, shape: [64], dtype: f16 } }, body: \
             [{ load: { src: \"x[t : t + 1, 0 : 64]\", dst: a } }, { vexp: { ins: [a], out: a } }, \
             { store: { src: a, dst: \"z[t : t + 1, 0 : 64]\" } }] }] }"
        );
    }

    #[test]
    fn index_arithmetic_becomes_expressions() {
        let text = format!(
            "#map = affine_map<(d0)[s0] -> (d0 * 16 + s0)>
func.func @k(%x: memref<256xf16, {GM}>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c2 {{
    %o = affine.apply #map(%i)[%c8]
    %p = arith.muli %o, %c2 : index
    %a = memref.alloc() : memref<16xf16, {UB}>
    %r = memref.subview %x[%p] [16] [1] : memref<256xf16, {GM}> to memref<16xf16, strided<[1], offset: ?>, {GM}>
    hivm.hir.load ins(%r : memref<16xf16, strided<[1], offset: ?>, {GM}>) outs(%a : memref<16xf16, {UB}>)
  }}
  return
}}"
        );
        let f = flow(&text);
        // (i * 16 + 8) * 2, two scalar ops before the load (affine.apply, arith.muli)
        assert!(
            f.contains("{ scalar: { cycles: 2 } }, { load: { src: \"x[(((i * 16) + 8)) * 2 : ((((i * 16) + 8)) * 2) + 16]\", dst: a } }"),
            "{f}"
        );
        // %n is an index argument: without --param it is no value at all; with one, a param
        assert!(!f.contains("params"), "{f}");
        let l = lower_with(&text, false, &[("n".into(), 4)]).unwrap();
        assert!(crate::yaml::flow(&l.doc, 1 << 20).contains("params: { n: 4 }"));
    }

    #[test]
    fn planned_buffers_keep_their_offsets_and_sync_ops_make_the_program_manual() {
        let text = format!(
            "func.func @k(%x: memref<64xf32, {GM}>) {{
  %c0 = arith.constant 0 : i64
  %c256 = arith.constant 256 : i64
  %a = hivm.hir.pointer_cast(%c0, %c256) : memref<64xf32, {UB}>
  hivm.hir.load ins(%x : memref<64xf32, {GM}>) outs(%a : memref<64xf32, {UB}>)
  hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID1>]
  hivm.hir.wait_flag[#hivm.pipe<PIPE_MTE2>, #hivm.pipe<PIPE_MTE3>, #hivm.event<EVENT_ID1>]
  hivm.hir.store ins(%a : memref<64xf32, {UB}>) outs(%x : memref<64xf32, {GM}>)
  hivm.hir.pipe_barrier[<PIPE_ALL>]
  return
}}"
        );
        let f = flow(&text);
        assert!(f.contains("sync: manual"), "{f}");
        assert!(
            f.contains("a: { scope: ub, shape: [64], dtype: f32, multi: 2, at: [0, 256] }"),
            "{f}"
        );
        assert!(f.contains("{ set_flag: { src: mte2, dst: mte3, id: \"1\" } }, { wait_flag: { src: mte2, dst: mte3, id: \"1\" } }"), "{f}");
        assert!(f.contains("{ barrier: all }"), "{f}");
    }

    #[test]
    fn a_branch_result_is_a_select_and_a_loop_carried_buffer_shares_its_address() {
        let text = format!(
            "func.func @k(%x: memref<64xf32, {GM}>, %c: i1) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %i0 = memref.alloc() : memref<64xf32, {UB}>
  hivm.hir.load ins(%x : memref<64xf32, {GM}>) outs(%i0 : memref<64xf32, {UB}>)
  %r = scf.for %t = %c0 to %c4 step %c1 iter_args(%acc = %i0) -> (memref<64xf32, {UB}>) {{
    %n = memref.alloc() : memref<64xf32, {UB}>
    hivm.hir.vadd ins(%acc, %acc : memref<64xf32, {UB}>, memref<64xf32, {UB}>) outs(%n : memref<64xf32, {UB}>)
    scf.yield %n : memref<64xf32, {UB}>
  }}
  %b = memref.alloc() : memref<64xf32, {UB}>
  hivm.hir.load ins(%x : memref<64xf32, {GM}>) outs(%b : memref<64xf32, {UB}>)
  %cond = arith.cmpi eq, %c0, %c1 : index
  %s = scf.if %cond -> (memref<64xf32, {UB}>) {{
    scf.yield %r : memref<64xf32, {UB}>
  }} else {{
    scf.yield %b : memref<64xf32, {UB}>
  }}
  hivm.hir.store ins(%s : memref<64xf32, {UB}>) outs(%x : memref<64xf32, {GM}>)
  return
}}"
        );
        let f = flow(&text);
        // the yielded %n gets %i0's address and neither is inplaced (HIVM's forced pair)
        assert!(
            f.contains("n: { scope: ub, shape: [64], dtype: f32, inplace: false, share: i0 }"),
            "{f}"
        );
        assert!(
            f.contains("i0: { scope: ub, shape: [64], dtype: f32, inplace: false }"),
            "{f}"
        );
        // the if's result is either buffer: a select view, read by the store
        assert!(f.contains("views: { sel: { select: [i0, b] } }"), "{f}");
        assert!(f.contains("{ store: { src: sel, dst: x } }"), "{f}");
        // a condition of constants folds
        assert!(f.contains("{ if: \"0\""), "{f}");
    }

    #[test]
    fn what_npusim_cannot_read_is_an_error_at_its_place_all_at_once() {
        let text = format!(
            "func.func @k(%x: memref<64xf32, {GM}>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<64xf32, {UB}>
  scf.for %t = %c0 to %n step %c1 {{
    hivm.hir.vfoo ins(%a : memref<64xf32, {UB}>) outs(%a : memref<64xf32, {UB}>)
  }}
  hivm.hir.nz2nd ins(%a : memref<64xf32, {UB}>) outs(%x : memref<64xf32, {GM}>)
  return
}}"
        );
        let errs = lower_text(&text, false).unwrap_err();
        let got: Vec<String> = errs
            .iter()
            .map(|d| format!("{}:{} {}", d.line.unwrap(), d.column.unwrap(), d.message))
            .collect();
        assert_eq!(
            got,
            [
                "5:23 the loop's upper bound %n is not known to npusim: it comes from function argument %n (give its value with --param n=N)",
                "6:5 `hivm.hir.vfoo` is a vector op npusim does not model",
                "8:3 `hivm.hir.nz2nd` touches memory and npusim does not know it",
            ]
        );
        // plan-only, the bound is a stand-in and the loop is kept (the ops are still errors)
        let errs = lower_text(&text, true).unwrap_err();
        assert_eq!(errs.len(), 2);
    }

    #[test]
    fn block_indices_are_the_launch_variables() {
        let text = format!(
            "func.func @k(%x: memref<8x64xf32, {GM}>) {{
  %b = hivm.hir.get_block_idx -> i64
  %i = arith.index_cast %b : i64 to index
  %a = memref.alloc() : memref<64xf32, {UB}>
  %r = memref.subview %x[%i, 0] [1, 64] [1, 1] : memref<8x64xf32, {GM}> to memref<64xf32, strided<[1], offset: ?>, {GM}>
  hivm.hir.load ins(%r : memref<64xf32, strided<[1], offset: ?>, {GM}>) outs(%a : memref<64xf32, {UB}>)
  return
}}"
        );
        let f = flow(&text);
        assert!(f.contains("launch: { blocks: 1 }"), "{f}");
        assert!(f.contains("src: \"x[block : block + 1, 0 : 64]\""), "{f}");
    }

    #[test]
    fn memref_copy_is_a_move_and_an_mmad_l1_of_l0_operands_is_an_mmad() {
        let text = "func.func @k(%a: memref<16x16xf16, #hivm.address_space<gm>>) {
  %true = arith.constant true
  %c16 = arith.constant 16 : index
  %l1 = memref.alloc() : memref<16x16xf16, #hivm.address_space<cbuf>>
  %l0a = memref.alloc() : memref<16x16xf16, #hivm.address_space<ca>>
  %l0b = memref.alloc() : memref<16x16xf16, #hivm.address_space<cb>>
  %c = memref.alloc() : memref<16x16xf32, #hivm.address_space<cc>>
  hivm.hir.nd2nz ins(%a : memref<16x16xf16, #hivm.address_space<gm>>) outs(%l1 : memref<16x16xf16, #hivm.address_space<cbuf>>)
  memref.copy %l1, %l0a : memref<16x16xf16, #hivm.address_space<cbuf>> to memref<16x16xf16, #hivm.address_space<ca>>
  memref.copy %l1, %l0b : memref<16x16xf16, #hivm.address_space<cbuf>> to memref<16x16xf16, #hivm.address_space<cb>>
  hivm.hir.mmadL1 ins(%l0a, %l0b, %true, %c16, %c16, %c16 : memref<16x16xf16, #hivm.address_space<ca>>, memref<16x16xf16, #hivm.address_space<cb>>, i1, index, index, index) outs(%c : memref<16x16xf32, #hivm.address_space<cc>>)
  return
}";
        let f = flow(text);
        assert!(
            f.contains("{ copy: { src: l1, dst: l0a } }, { copy: { src: l1, dst: l0b } }"),
            "{f}"
        );
        assert!(
            f.contains(
                "{ mmad: { a: l0a, b: l0b, c: c, init: \"1\", m: \"16\", k: \"16\", n: \"16\" } }"
            ),
            "{f}"
        );
    }

    #[test]
    fn cross_core_flags_become_cross_ops_of_the_named_core() {
        let text = "func.func @k() {
  %c2 = arith.constant 2 : index
  hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_S>] flag = 0
  hivm.hir.sync_block_wait[<VECTOR>, <PIPE_FIX>, <PIPE_MTE2>] flag = 0
  hivm.hir.sync_block_set[#hivm.tcore_type<VECTOR>, #hivm.pipe<PIPE_MTE3>, #hivm.pipe<PIPE_S>] flag = 5 {sync_instr_mode = #hivm.sync_block_instr_mode<INTER_BLOCK_SYNCHRONIZATION>}
  return
}";
        let f = flow(text);
        // mode 2 (an AI core's cube and vector cores) unless the op says inter-block (mode 0);
        // the set goes on its first pipe, the wait on its second; the core type is kept for
        // the split of a MIX function
        for want in [
            "{ cross_set: { mode: 2, pipe: fix, id: \"0\", npusim_side: aic } }",
            "{ cross_wait: { id: \"0\", pipe: mte2, npusim_side: aiv } }",
            "{ cross_set: { mode: 0, pipe: mte3, id: \"5\", npusim_side: aiv } }",
        ] {
            assert!(f.contains(want), "{want} in {f}");
        }
        // plan-only lowering drops them: they do not change a plan
        let l = lower_text(text, true).unwrap_or_else(|d| panic!("{d:?}"));
        assert!(!crate::yaml::flow(&l.doc, 1 << 20).contains("cross"));
        let d = lower_text(
            "func.func @k() {
  hivm.hir.sync_block_set[<ALL>, <PIPE_FIX>, <PIPE_S>] flag = 0
  return
}",
            false,
        )
        .expect_err("a core type that is neither CUBE nor VECTOR");
        assert_eq!((d[0].line, d[0].column), (Some(2), Some(3)), "{d:?}");
        assert!(d[0].message.contains("core type ALL"), "{d:?}");
    }

    #[test]
    fn an_mmadl1_waits_and_sets_the_events_injectsync_hands_it() {
        // InjectSync's sync_related_args: wait on A's load (event 1), no wait on B's (-1), set
        // for the next load of A (event 2), none for B; the K-loop index and the two M -> MTE1
        // events are the template's own. So: wait MTE2 -> MTE1 #1, the M pipe's earlier work,
        // the mmad, set MTE1 -> MTE2 #2.
        let text = "func.func @k(%a: memref<256xf16, #hivm.address_space<gm>>) {
  %true = arith.constant true
  %c16 = arith.constant 16 : index
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c0_i64 = arith.constant 0 : i64
  %cm1 = arith.constant -1 : i64
  %l1 = memref.alloc() : memref<256xf16, #hivm.address_space<cbuf>>
  %acc = memref.alloc() : memref<256xf32, #hivm.address_space<cc>>
  hivm.hir.nd2nz ins(%a : memref<256xf16, #hivm.address_space<gm>>) outs(%l1 : memref<256xf16, #hivm.address_space<cbuf>>)
  hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_MTE1>, <EVENT_ID1>]
  hivm.hir.mmadL1 ins(%l1, %l1, %true, %c16, %c16, %c16 : memref<256xf16, #hivm.address_space<cbuf>>, memref<256xf16, #hivm.address_space<cbuf>>, i1, index, index, index) outs(%acc : memref<256xf32, #hivm.address_space<cc>>) sync_related_args(%c1_i64, %cm1, %c2_i64, %cm1, %c0_i64, %cm1, %cm1 : i64, i64, i64, i64, i64, i64, i64)
  hivm.hir.wait_flag[<PIPE_MTE1>, <PIPE_MTE2>, <EVENT_ID2>]
  return
}";
        let f = flow(text);
        assert!(
            f.contains(
                "{ wait_flag: { src: mte2, dst: mte1, id: \"1\" } }, { barrier: m }, { mmad_l1: { a: l1, b: l1, c: acc, init: \"1\", m: \"16\", k: \"16\", n: \"16\" } }, { set_flag: { src: mte1, dst: mte2, id: \"2\" } }"
            ),
            "{f}"
        );
    }

    #[test]
    fn a_reduction_over_a_reshaped_buffer_reduces_the_buffers_own_dimension() {
        // HIVM reduces [64] (a collapse of the [1, 64] buffer) into [1] (a collapse of [1, 1]):
        // npusim sees the buffers' own shapes, so the reduced dimension is 1 (64 -> 1), not
        // the MLIR's 0, which would ask for [64] out of [1, 64] (bishengir-opt accepts this
        // function and plans a at 0, r at 256, t at 288)
        let text = format!(
            "func.func @rowsum(%x: memref<64xf32, {GM}>, %y: memref<1xf32, {GM}>) {{
  %a = memref.alloc() : memref<1x64xf32, {UB}>
  %r = memref.alloc() : memref<1x1xf32, {UB}>
  %t = memref.alloc() : memref<32xf32, {UB}>
  %a1 = memref.collapse_shape %a [[0, 1]] : memref<1x64xf32, {UB}> into memref<64xf32, {UB}>
  %r1 = memref.collapse_shape %r [[0, 1]] : memref<1x1xf32, {UB}> into memref<1xf32, {UB}>
  hivm.hir.load ins(%x : memref<64xf32, {GM}>) outs(%a1 : memref<64xf32, {UB}>)
  hivm.hir.vreduce <sum> ins(%a1 : memref<64xf32, {UB}>) outs(%r1 : memref<1xf32, {UB}>) temp_buffer(%t : memref<32xf32, {UB}>) reduce_dims = [0]
  hivm.hir.store ins(%r1 : memref<1xf32, {UB}>) outs(%y : memref<1xf32, {GM}>)
  return
}}"
        );
        let f = flow(&text);
        assert!(
            f.contains("{ vreduce_sum: { ins: [a], out: r, tmp: t, dims: [1] } }"),
            "{f}"
        );
        let config = crate::load_config(crate::builtin::builtin("ascend910b").unwrap(), "c")
            .expect("the built-in config loads");
        crate::mlir::load_kernel(&text, "t.mlir", &config, &[], None)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_reduction_whose_operands_npusim_sees_at_other_ranks_is_written_in_the_mlirs() {
        // [4, 8] (a rank-reducing subview of the [1, 4, 16, 1] buffer a) reduced along 0 into
        // [1, 8] (a collapse of the [1, 1, 8] buffer r): npusim's views of a and r have ranks
        // 4 and 3, which no reduction pairs, so both are written in the MLIR's ranks, the unit
        // dimensions the MLIR dropped as indices (bishengir-opt plans this function: a at 0,
        // r at 256, t at 288)
        let text = format!(
            "func.func @colsum(%x: memref<4x8xf32, {GM}>, %y: memref<8xf32, {GM}>) {{
  %a = memref.alloc() : memref<1x4x16x1xf32, {UB}>
  %r = memref.alloc() : memref<1x1x8xf32, {UB}>
  %t = memref.alloc() : memref<64xf32, {UB}>
  %s = memref.subview %a[0, 0, 0, 0] [1, 4, 8, 1] [1, 1, 1, 1] : memref<1x4x16x1xf32, {UB}> to memref<4x8xf32, strided<[16, 1]>, {UB}>
  %r1 = memref.collapse_shape %r [[0, 1], [2]] : memref<1x1x8xf32, {UB}> into memref<1x8xf32, {UB}>
  %r2 = memref.collapse_shape %r [[0, 1, 2]] : memref<1x1x8xf32, {UB}> into memref<8xf32, {UB}>
  hivm.hir.load ins(%x : memref<4x8xf32, {GM}>) outs(%s : memref<4x8xf32, strided<[16, 1]>, {UB}>)
  hivm.hir.vreduce <sum> ins(%s : memref<4x8xf32, strided<[16, 1]>, {UB}>) outs(%r1 : memref<1x8xf32, {UB}>) temp_buffer(%t : memref<64xf32, {UB}>) reduce_dims = [0]
  hivm.hir.store ins(%r2 : memref<8xf32, {UB}>) outs(%y : memref<8xf32, {GM}>)
  return
}}"
        );
        let f = flow(&text);
        assert!(
            f.contains("{ vreduce_sum: { ins: [\"a[0, 0 : 4, 0 : 8, 0]\"], out: \"r[0 : 1, 0, 0 : 8]\", tmp: t, dims: [0] } }"),
            "{f}"
        );
        let config = crate::load_config(crate::builtin::builtin("ascend910b").unwrap(), "c")
            .expect("the built-in config loads");
        crate::mlir::load_kernel(&text, "t.mlir", &config, &[], None)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn subviews_sized_when_the_kernel_runs_of_a_reshaped_argument_and_of_a_flat_view() {
        // rows [o, o + k) of x seen as [96, 100] (x is declared in that shape: its first use is
        // the collapse), k = min(n, 8); in ub, the same k rows of 100 of a view of a byte
        // buffer: its first k * 100 elements, from element 0 to (k - 1) * 100 + 99
        // (bishengir-opt reads this function)
        let text = format!(
            "func.func @rows(%x: memref<2x48x100xf32, {GM}>, %n: index, %o: index) {{
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %g = memref.collapse_shape %x [[0, 1], [2]] : memref<2x48x100xf32, {GM}> into memref<96x100xf32, {GM}>
  %k = affine.min affine_map<()[s0] -> (s0, 8)>()[%n]
  %src = memref.subview %g[%o, 0] [%k, 100] [1, 1] : memref<96x100xf32, {GM}> to memref<?x100xf32, strided<[100, 1], offset: ?>, {GM}>
  %b = hivm.hir.pointer_cast(%c0_i64) : memref<4096xi8, {UB}>
  %v = memref.view %b[%c0][%k] : memref<4096xi8, {UB}> to memref<1x?x100xf32, {UB}>
  %w = memref.subview %v[0, 0, 0] [1, %k, 100] [1, 1, 1] : memref<1x?x100xf32, {UB}> to memref<?x100xf32, strided<[100, 1]>, {UB}>
  hivm.hir.load ins(%src : memref<?x100xf32, strided<[100, 1], offset: ?>, {GM}>) outs(%w : memref<?x100xf32, strided<[100, 1]>, {UB}>)
  return
}}"
        );
        let p = [("n".to_string(), 5), ("o".to_string(), 4)];
        let l = lower_with(&text, false, &p).unwrap_or_else(|d| panic!("{d:?}"));
        let f = crate::yaml::flow(&l.doc, 1 << 20);
        assert!(f.contains("x: { shape: [96, 100], dtype: f32 }"), "{f}");
        assert!(
            f.contains("{ load: { src: \"x[o : o + (min(n, 8)), 0 : 100]\", dst: \"b[0 : 1 + ((min(n, 8)) - 1) * 100 + 99]\" } }"),
            "{f}"
        );
        let config = crate::load_config(crate::builtin::builtin("ascend910b").unwrap(), "c")
            .expect("the built-in config loads");
        crate::mlir::load_kernel(&text, "t.mlir", &config, &p, None)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_select_with_a_zero_branch_is_one_term() {
        // select(i < 2, 16, 0) is (i < 2) * 16, select(i < 2, 0, 32) is !(i < 2) * 32: the
        // compiler nests such selects for its tile sizes, and the full form repeats the
        // condition in each term
        let text = format!(
            "func.func @k(%x: memref<256xf16, {GM}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c4 step %c1 {{
    %lt = arith.cmpi slt, %i, %c2 : index
    %o = arith.select %lt, %c16, %c0 : index
    %p = arith.select %lt, %c0, %c32 : index
    %a = memref.alloc() : memref<16xf16, {UB}>
    %r = memref.subview %x[%o] [16] [1] : memref<256xf16, {GM}> to memref<16xf16, strided<[1], offset: ?>, {GM}>
    hivm.hir.load ins(%r : memref<16xf16, strided<[1], offset: ?>, {GM}>) outs(%a : memref<16xf16, {UB}>)
    %w = memref.subview %x[%p] [16] [1] : memref<256xf16, {GM}> to memref<16xf16, strided<[1], offset: ?>, {GM}>
    hivm.hir.store ins(%a : memref<16xf16, {UB}>) outs(%w : memref<16xf16, strided<[1], offset: ?>, {GM}>)
  }}
  return
}}"
        );
        let f = flow(&text);
        assert!(
            f.contains("src: \"x[(i < 2) * 16 : ((i < 2) * 16) + 16]\""),
            "{f}"
        );
        assert!(
            f.contains("dst: \"x[!(i < 2) * 32 : (!(i < 2) * 32) + 16]\""),
            "{f}"
        );
    }

    #[test]
    fn names_become_npusim_names() {
        assert_eq!(sanitize("0"), "v0");
        assert_eq!(sanitize("alloc_1"), "alloc_1");
        assert_eq!(sanitize("x.y-z$"), "x_y_z_");
        assert_eq!(sanitize("max"), "vmax");
    }
}

#[cfg(test)]
mod split_tests {
    #[test]
    fn types_split_at_top_level_commas_only() {
        assert_eq!(
            super::split_top("memref<64xf32, #hivm.address_space<ub>>, index, (i1) -> f16"),
            [
                "memref<64xf32, #hivm.address_space<ub>>",
                "index",
                "(i1) -> f16"
            ]
        );
    }
}
