//! The located syntax tree of a HIVM MLIR file (docs/mlir.md): what the reader
//! ([`super::parse_file`]) builds and the lowering ([`super::lower`]) reads.
//!
//! Ops are classified by family while parsing: each family the simulator understands gets its
//! operands and types parsed into fields; every other op is [`OpKind::Opaque`], which keeps its
//! operand names (so a use of a memory value can still be found) and its source text. Every op
//! keeps its byte span, so a source-preserving printer can copy it and findings can point at
//! its line and column.

/// A place in the file: 1-based line and column (in characters), and the byte offset.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
    pub offset: u32,
}

/// The bytes `[start.offset, end)` of the file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Span {
    pub start: Pos,
    pub end: u32,
}

/// One `// -----` chunk of a split-input file (the whole file when it has no separator).
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    /// The chunk's bytes in the file.
    pub span: Span,
    /// `#name = affine_map<...>` (and other `#alias = ...`) definitions, in order.
    pub aliases: Vec<Alias>,
    /// The top-level ops: one `builtin.module` (explicit or implicit), or bare `func.func`s.
    pub ops: Vec<Op>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Alias {
    /// Without the `#` (`map`, `map1`).
    pub name: String,
    pub value: Attr,
    pub span: Span,
}

/// An SSA value use: `%name`, `%name#2` (result 2 of a multi-result op), `%arg0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Value {
    /// Without the `%` and without `#N`.
    pub name: String,
    /// The `#N` result index, 0 when absent.
    pub index: u32,
    pub pos: Pos,
}

/// A result group defined by an op: `%r` or `%r:3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Result_ {
    pub name: String,
    pub count: u32,
    pub pos: Pos,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub results: Vec<Result_>,
    /// The full op name as written, generic quotes removed (`hivm.hir.load`, `func.func`,
    /// `func.return` for `return`, `builtin.module` for `module`, `scf.for`).
    pub name: String,
    pub kind: OpKind,
    /// From the first result (or the name) to the end of the op, regions included.
    pub span: Span,
    /// The position of the op name.
    pub name_pos: Pos,
    /// The trailing attribute dictionary (`{hivm.multi_buffer = 2 : i32}` of annotation.mark,
    /// `attributes {...}` of func.func and module, a generic op's `<{...}>`/`{...}`), and any
    /// `key = value` keyword attributes of custom syntax (`reduce_dims = [1]`,
    /// `round_mode = <rint>`, `init_out_buffer = false`), in source order.
    pub attrs: Vec<NamedAttr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NamedAttr {
    pub name: String,
    /// `None` for a unit attribute (`{hacc.entry}`).
    pub value: Option<Attr>,
    pub pos: Pos,
}

/// An attribute value. Those the simulator reads are structured; the rest keep their text.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// `2 : i32`, `-1`, `true`/`false` (as 1/0 with type `i1`).
    Int {
        value: i128,
        ty: Option<Box<Type>>,
    },
    Float {
        text: String,
        ty: Option<Box<Type>>,
    },
    Str(String),
    /// `[1, 2]`, `[[0, 1], [2]]`.
    Array(Vec<Attr>),
    /// `<max>`, `<PIPE_MTE2>`: an enum spelled in angle brackets; the text inside.
    Enum(String),
    /// `#hivm.pipe<PIPE_MTE2>`, `#hacc.function_kind<DEVICE>`, `#hivm.address_space<ub>`:
    /// dialect `hivm`, name `pipe`, body `PIPE_MTE2` (the balanced text inside `<...>`).
    Dialect {
        dialect: String,
        name: String,
        body: String,
    },
    /// `#map` (a use of an alias), without the `#`.
    AliasRef(String),
    AffineMap(AffineMap),
    /// `{a = 1, b}`.
    Dict(Vec<NamedAttr>),
    /// A type used as an attribute (`f16`, `memref<...>`).
    Type(Box<Type>),
    /// `unit`.
    Unit,
    /// Anything else (`dense<...>`, `@sym`, `affine_set<...>`), as written.
    Other(String),
}

/// `affine_map<(d0, d1)[s0] -> (d0 + s0, d1 floordiv 2)>`.
#[derive(Clone, Debug, PartialEq)]
pub struct AffineMap {
    pub dims: u32,
    pub symbols: u32,
    pub results: Vec<AffineExpr>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AffineExpr {
    Dim(u32),
    Sym(u32),
    Const(i64),
    Add(Box<AffineExpr>, Box<AffineExpr>),
    Mul(Box<AffineExpr>, Box<AffineExpr>),
    FloorDiv(Box<AffineExpr>, Box<AffineExpr>),
    CeilDiv(Box<AffineExpr>, Box<AffineExpr>),
    Mod(Box<AffineExpr>, Box<AffineExpr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// `index`.
    Index,
    /// `i1`, `i8`, `i32`, `i64`, `si32`, `ui8`: width and signedness as written.
    Int {
        bits: u32,
        signed: Option<bool>,
    },
    /// `f16`, `bf16`, `f32`, `f64`, `f8E4M3FN`, ...: the name as written.
    Float(String),
    MemRef(MemRefType),
    /// `tensor<4x?xf32>`.
    Tensor {
        shape: Vec<Dim>,
        elem: Box<Type>,
    },
    /// `vector<64xf32>`.
    Vector {
        shape: Vec<Dim>,
        elem: Box<Type>,
    },
    /// `(T, U) -> V` and `() -> ()`.
    Function {
        inputs: Vec<Type>,
        results: Vec<Type>,
    },
    /// `none`, `!dialect.type<...>`, anything else, as written.
    Other(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    Static(u64),
    /// `?`.
    Dynamic,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemRefType {
    pub shape: Vec<Dim>,
    /// The element type (`f16`, `i8`, ...).
    pub elem: Box<Type>,
    pub layout: Layout,
    /// `#hivm.address_space<ub>` gives `Some("ub")`; `None` when the type has none.
    pub space: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// No layout: contiguous row-major.
    Identity,
    /// `strided<[512, ?, 1], offset: ?>`; `None` entries are `?`.
    Strided {
        strides: Vec<Option<i64>>,
        offset: Option<i64>,
    },
    /// An affine map or `#alias` layout, kept as an attribute.
    Map(Box<Attr>),
}

/// A region's blocks; an op's regions are in source order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Region {
    pub blocks: Vec<Block>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    /// `^bb0(%a: T, ...)`: the label (without `^`) and its arguments; `None` for an entry
    /// block written without a label.
    pub label: Option<String>,
    pub args: Vec<(Value, Type)>,
    pub ops: Vec<Op>,
}

/// One entry of a mixed static/dynamic list (`[%i, 0]` offsets of a subview): a value or a
/// constant.
#[derive(Clone, Debug, PartialEq)]
pub enum OpFold {
    Value(Value),
    Const(i64),
}

/// An operand group entry with its type: `ins(%a, %b : T, U)` gives (%a, T), (%b, U).
#[derive(Clone, Debug, PartialEq)]
pub struct Typed {
    pub value: Value,
    pub ty: Type,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ViewKind {
    /// `memref.subview %src[offsets] [sizes] [strides] : A to B`.
    Subview {
        offsets: Vec<OpFold>,
        sizes: Vec<OpFold>,
        strides: Vec<OpFold>,
    },
    /// `memref.view %src[%byte_shift][%sizes...] : A to B`.
    View {
        byte_shift: Value,
        sizes: Vec<Value>,
    },
    /// `memref.reinterpret_cast %src to offset: [o], sizes: [..], strides: [..] : A to B`.
    ReinterpretCast {
        offset: Vec<OpFold>,
        sizes: Vec<OpFold>,
        strides: Vec<OpFold>,
    },
    /// `memref.collapse_shape %src [[0, 1], [2]] : A into B`.
    CollapseShape { reassociation: Vec<Vec<u32>> },
    /// `memref.expand_shape %src [[0, 1]] output_shape [%n, 1] : A into B`.
    ExpandShape {
        reassociation: Vec<Vec<u32>>,
        output_shape: Vec<OpFold>,
    },
    /// `memref.cast`, `memref.memory_space_cast`, `hivm.hir.bitcast`, `memref.reshape` and
    /// other whole-buffer aliases: same bytes, another type.
    Cast,
}

/// What an op is, for the families the simulator reads (reference: hivm-mlir.md §8).
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// `module [@name] [attributes {...}] { ... }`; attributes in [`Op::attrs`].
    Module { name: Option<String>, body: Region },
    /// `func.func [private] @name(%a: T {argattrs}, ...) [-> (R)] [attributes {...}] { ... }`;
    /// function attributes in [`Op::attrs`]; `body` is empty for a declaration.
    Func {
        name: String,
        private: bool,
        args: Vec<FuncArg>,
        results: Vec<Type>,
        body: Region,
    },
    /// `func.return` / `return` with its operands.
    Return { values: Vec<Value> },
    /// `func.call @f(%a, ...) : (T) -> R`.
    Call { callee: String, args: Vec<Value> },
    /// `memref.alloc(%d...) [{attrs}] : T` and `memref.alloca`.
    Alloc { dynamic_sizes: Vec<Value>, ty: Type },
    /// `hivm.hir.pointer_cast(%a[, %b...]) [dyn sizes] : T`.
    PointerCast {
        addrs: Vec<Value>,
        dynamic_sizes: Vec<Value>,
        ty: Type,
    },
    /// `memref_ext.alloc_workspace() from %w offset = [...] : from A to B`.
    AllocWorkspace { text: String, ty: Type },
    /// A destination-passing-style op: `hivm.hir.load`, `store`, `copy`, `nd2nz`, `fixpipe`,
    /// `mmadL1`, `load_scale`, every `hivm.hir.v*` vector op, ...: the op name says which.
    /// Leading custom syntax (`<max>` of vreduce) is in `modifier`; a leading or trailing attribute
    /// dictionary and `key = value` keywords are in [`Op::attrs`]; other keyword groups
    /// (`temp_buffer(%t : T)`) are in `groups`. Tensor results (`-> tensor<...>`) in `results`.
    Dps {
        modifier: Option<String>,
        ins: Vec<Typed>,
        outs: Vec<Typed>,
        groups: Vec<(String, Vec<Typed>)>,
        results: Vec<Type>,
    },
    /// `scf.for %iv = %lb to %ub step %s [iter_args(%a = %x, ...)] [-> (T...)] [: i32] { ... }`.
    For {
        iv: Value,
        lower: Value,
        upper: Value,
        step: Value,
        iter_args: Vec<(Value, Value)>,
        result_types: Vec<Type>,
        body: Region,
    },
    /// `scf.if %c [-> (T...)] { ... } [else { ... }]`.
    If {
        cond: Value,
        result_types: Vec<Type>,
        then: Region,
        els: Option<Region>,
    },
    /// `scf.while (%a = %x, ...) : (T...) -> (U...) { before } do { after }`.
    While {
        inits: Vec<(Value, Value)>,
        before: Region,
        after: Region,
    },
    /// `scf.yield %a, ... : T...`.
    Yield { values: Vec<Value> },
    /// `scf.condition(%c) %a, ... : T...`.
    Condition { cond: Value, values: Vec<Value> },
    /// `scope.scope : () -> () { ... }` and other single-region containers
    /// (`hivm.hir.custom_macro`): their region runs once, in place.
    Scope { body: Region },
    /// The view ops; `source` is the viewed memref, `ty` the result type, `source_ty` the
    /// source's type where written.
    View {
        kind: ViewKind,
        source: Value,
        source_ty: Option<Type>,
        ty: Type,
    },
    /// `annotation.mark %x {attrs} : T`.
    Mark { target: Value },
    /// `hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]` (or `%ev` for the event), also
    /// spelled with `#hivm.pipe<...>`/`#hivm.event<...>`: the pipes without `PIPE_`/`#hivm.pipe<`.
    SetFlag {
        src: String,
        dst: String,
        event: Event,
    },
    WaitFlag {
        src: String,
        dst: String,
        event: Event,
    },
    /// `hivm.hir.pipe_barrier[<PIPE_ALL>]`: the pipe name (`ALL`, `MTE3`).
    PipeBarrier { pipe: String },
    /// `hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_S>] flag = 0 ...`: core type, the two
    /// pipes, and the flag.
    SyncBlockSet {
        core: String,
        pipes: Vec<String>,
        flag: Event,
    },
    SyncBlockWait {
        core: String,
        pipes: Vec<String>,
        flag: Event,
    },
    /// `hivm.hir.sync_block[<ALL_CUBE>, 0 : i64] ...`.
    SyncBlock { text: String },
    /// `memref.load %m[%i, ...] : T` / `memref.store %v, %m[%i, ...] : T`.
    MemLoad { memref: Value, indices: Vec<Value> },
    MemStore {
        value: Value,
        memref: Value,
        indices: Vec<Value>,
    },
    /// `arith.constant 8 : index`, `arith.constant 1.0 : f32`, `arith.constant dense<...>`.
    Constant { value: Attr, ty: Type },
    /// A scalar op on values, classified by name: every `arith.*` (but constant), `math.*`,
    /// `index.*`, `affine.apply/min/max` (their map in `map`), `arith.cmpi` (predicate in
    /// `predicate`).
    Scalar {
        operands: Vec<Value>,
        predicate: Option<String>,
        map: Option<Attr>,
        /// For affine ops: how many of `operands` are dims (the rest are symbols).
        dims: u32,
        types: Vec<Type>,
    },
    /// Anything else: its operand uses in order (so memory uses are still seen) and the types
    /// after the last `:`, when the reader could find them.
    Opaque {
        operands: Vec<Value>,
        types: Vec<Type>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct FuncArg {
    pub value: Value,
    pub ty: Type,
    pub attrs: Vec<NamedAttr>,
}

/// A sync op's event or flag: a literal (`EVENT_ID3` or `3`) or an SSA value.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Id(u32),
    Value(Value),
}
