//! The kernel program model (docs/programs.md) after loading: names resolved to typed ids, params
//! folded into expressions, pipes chosen, shapes checked. Built by [`crate::load::load_program`];
//! the planner, the engine and the reports only ever read it.
//!
//! Ops live in one table in pre-order ([`Program::ops`]); a control op's blocks list the ids of
//! the ops inside them, so a walk over `body` visits ops in program order.

use crate::expr::Expr;
use crate::ids::CoreId;
use crate::ids::{BufferId, OpId, TensorId, VarId, ViewId};
use crate::types::{Dtype, Pipe, Space};
pub use crate::types::{VecForm, VecOp};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Program {
    pub kernel: String,
    /// The file the program was loaded from, as the user named it (`programs/softmax.yaml`);
    /// empty for a program built in code. Findings name their ops with it ([`Program::locate`]).
    pub file: String,
    /// The one-line texts of the ops, one after the other ([`Loc::text`]): one buffer, shared
    /// by the programs a pass rebuilds from this one, not an allocation per op.
    pub texts: Arc<str>,
    /// The core type the program runs on (an index into the config's `cores`).
    pub core: CoreId,
    pub sync: SyncMode,
    /// Params after `--param` overrides, in declaration order.
    pub params: Vec<(String, i64)>,
    pub launch: Launch,
    pub tensors: Vec<Tensor>,
    pub buffers: Vec<Buffer>,
    pub views: Vec<View>,
    pub vars: Vec<Var>,
    pub ops: Vec<Op>,
    pub body: Block,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SyncMode {
    /// npusim inserts the flags the plan needs.
    Auto,
    /// The program runs exactly as written.
    Manual,
}

impl SyncMode {
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Auto => "auto",
            SyncMode::Manual => "manual",
        }
    }
}

/// A global-memory tensor (a kernel argument or workspace).
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: String,
    pub shape: Vec<u64>,
    pub dtype: Dtype,
    pub elements: u64,
    pub bytes: u64,
    /// YAML path of the declaration (`gm.x`).
    pub path: String,
}

/// An on-chip buffer.
#[derive(Clone, Debug)]
pub struct Buffer {
    pub name: String,
    pub scope: Space,
    pub shape: Vec<u64>,
    pub dtype: Dtype,
    pub elements: u64,
    /// Size of one slot: ceil(elements × bits / 8), before alignment.
    pub bytes: u64,
    /// Number of slots (1 for a plain buffer).
    pub multi: u32,
    /// `inplace: false` forbids taking over an input's address.
    pub inplace: bool,
    /// `unique: true`: never shares memory with anything.
    pub unique: bool,
    /// `share: OTHER`: must get OTHER's address.
    pub share: Option<BufferId>,
    /// `preload: true`: live for its whole enclosing loop.
    pub preload: bool,
    /// `at:` fixed byte offsets, one per slot; not planned.
    pub at: Option<Vec<u64>>,
    /// YAML path of the declaration (`body[0].for.buffers.xb`).
    pub path: String,
    /// The control op whose block declares the buffer; `None` for the kernel body.
    pub declared_in: Option<OpId>,
    /// The innermost loop enclosing the declaration.
    pub loop_parent: Option<OpId>,
}

/// An alias of buffer storage; never allocated.
#[derive(Clone, Debug)]
pub struct View {
    pub name: String,
    pub kind: ViewKind,
    pub path: String,
    pub declared_in: Option<OpId>,
    /// Memory space, dtype and shape of the view as seen by operands.
    pub scope: Space,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
}

#[derive(Clone, Debug)]
pub enum ViewKind {
    /// `{ of: BUF, offset: EXPR, shape: [...] }`: a window at an element offset of `of`
    /// (a buffer, or another window).
    Window { of: Ref, offset: Expr },
    /// `{ select: [A, B] }`: any of these buffers, chosen at run time.
    Select { of: Vec<BufferId> },
}

/// A loop variable.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    /// The `for` or `while` that owns it; `None` for the launch's `block` and `subblock`, which
    /// are fixed for a core's whole run.
    pub loop_op: Option<OpId>,
}

/// How the kernel is launched (`launch: { blocks }`, `--blocks`): how many cores of the
/// program's type run it, and the variables that tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Cores of the program's type the kernel runs on (1 without `launch`).
    pub blocks: u32,
    /// `block`: the core's index, `0 .. blocks` (`None` in a program built without the
    /// loader, which cannot name it).
    pub block: Option<VarId>,
    /// `subblock`: a vector core's index in its AI core (`block % aiv_per_aic`); 0 on a cube
    /// or coupled core.
    pub subblock: Option<VarId>,
}

impl Launch {
    /// One block, no launch variables: a program built by hand.
    pub const SINGLE: Launch = Launch {
        blocks: 1,
        block: None,
        subblock: None,
    };
}

/// What an operand names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ref {
    Buffer(BufferId),
    View(ViewId),
    Tensor(TensorId),
}

/// One dimension of an operand's index list.
#[derive(Clone, Debug)]
pub enum Index {
    /// `e`: selects one position and drops the dimension.
    At(Expr),
    /// `a:b`: the half-open range [a, b); a missing bound is 0 or the dimension's extent.
    Slice { start: Expr, end: Expr },
}

/// An operand: `name`, `name[e1, e2:e3, ...]`, `name@k`.
#[derive(Clone, Debug)]
pub struct Operand {
    /// The text as written, for reports.
    pub text: String,
    pub base: Ref,
    /// `@k`: an explicit slot of a multi-buffer.
    pub slot: Option<Expr>,
    /// One entry per leading dimension indexed; missing trailing dimensions are whole.
    pub indices: Vec<Index>,
    pub space: Space,
    pub dtype: Dtype,
    /// Elements selected, when every slice extent is constant.
    pub elements: Option<u64>,
}

impl Operand {
    /// Bytes selected, when constant.
    pub fn bytes(&self) -> Option<u64> {
        self.elements.map(|e| self.dtype.bytes_for(e))
    }
}

/// A block: the program body, a loop body, or a branch.
#[derive(Clone, Debug, Default)]
pub struct Block {
    pub ops: Vec<OpId>,
    pub buffers: Vec<BufferId>,
    pub views: Vec<ViewId>,
}

#[derive(Clone, Debug)]
pub struct Op {
    pub kind: OpKind,
    /// YAML path of the op (`body[0].for.body[2]`).
    pub path: String,
    /// Where the op is written in the program file ([`Program::locate`]).
    pub loc: Loc,
    /// The pipe that executes it: the path's pipe for moves, V for vector ops, M for mmad
    /// (mmad_l1 also stages on MTE1), S for scalar and control ops, `None` for `use`.
    pub pipe: Option<Pipe>,
    /// The innermost enclosing `for`/`while`.
    pub loop_parent: Option<OpId>,
    /// The enclosing control op.
    pub parent: Option<OpId>,
}

/// Where an op is written: what findings point at (docs/cli.md, "Where findings point").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loc {
    /// 1-based line and column (in characters) of the op's list item in the program file; 0 when
    /// unknown (a program built in code, an op inserted into an empty body).
    pub line: u32,
    pub column: u32,
    /// The op as written, in one line: bytes `[text.0, text.1)` of [`Program::texts`], its key
    /// and its value in flow style (`vexp { ins: [xb], out: yb }`; a loop's or branch's blocks
    /// left out), at most [`Loc::TEXT_MAX`] characters ([`Program::op_text`]). An op a pass
    /// inserted has the text of the op it was inserted beside.
    pub text: (u32, u32),
    /// For an op a pass inserted (the sync pass, the cross-core pass): on which side of the op
    /// at `line:column` it went.
    pub inserted: Option<Side>,
}

impl Loc {
    /// The longest op text kept: enough for an op's operands, short enough for one line of a
    /// table.
    pub const TEXT_MAX: usize = 60;

    /// The location of an op inserted on `side` of an op written at `beside`.
    pub fn inserted(beside: &Loc, side: Side) -> Loc {
        Loc {
            inserted: Some(side),
            ..beside.clone()
        }
    }
}

/// Where a pass inserted an op, relative to the op it names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    Before,
    After,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Layout {
    Nd,
    Nz,
}

#[derive(Clone, Debug)]
pub enum Quant {
    None,
    /// A scalar quantisation (dtype conversion with one scale).
    Scalar,
    /// Per-channel parameters read from an FP-buffer operand.
    Tensor(Box<Operand>),
}

/// Which cores a `cross_set` signals (its `mode`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CrossMode {
    /// Mode 0: once every core of the setter's type in the launch has set the id, each of
    /// their counters increments (a barrier across blocks).
    All,
    /// Mode 1: once both vector cores of an AI core have set the id, both counters increment.
    Pair,
    /// Mode 2: a cube core's set increments its AI core's vector counters; the cube counter
    /// increments once every vector core of the AI core has set.
    Block,
}

impl CrossMode {
    /// The number written in the program (0, 1, 2).
    pub fn number(self) -> u32 {
        match self {
            CrossMode::All => 0,
            CrossMode::Pair => 1,
            CrossMode::Block => 2,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BarrierTarget {
    Pipe(Pipe),
    All,
}

#[derive(Clone, Debug)]
pub enum OpKind {
    Load {
        src: Operand,
        dst: Operand,
        layout: Layout,
    },
    Store {
        src: Operand,
        dst: Operand,
    },
    Copy {
        src: Operand,
        dst: Operand,
    },
    Fixpipe {
        src: Operand,
        dst: Operand,
        quant: Quant,
        relu: bool,
    },
    // the large variants are boxed: an op table of a million ops should not pay 500 bytes an
    // op for the few that are cube or vector ops
    Mmad(Box<Mmad>),
    /// The L1 macro: stages `a`/`b` through L0A/L0B on MTE1, then runs on M.
    MmadL1(Box<Mmad>),
    Vector(Box<VectorOp>),
    Sload {
        src: Operand,
    },
    Sstore {
        dst: Operand,
    },
    Scalar {
        cycles: Expr,
    },
    Use {
        operands: Vec<Operand>,
    },
    SetFlag {
        src: Pipe,
        dst: Pipe,
        id: Expr,
    },
    WaitFlag {
        src: Pipe,
        dst: Pipe,
        id: Expr,
    },
    Barrier(BarrierTarget),
    /// `cross_set: { mode, pipe, id }`: signals other cores of the launch (docs/timing.md,
    /// "Cross-core flags"); runs on `pipe` once every earlier instruction of it has completed.
    CrossSet {
        mode: CrossMode,
        pipe: Pipe,
        id: Expr,
    },
    /// `cross_wait: { id, pipe }`: blocks `pipe` at its head until the core's counter `id` is
    /// above 0, then decrements it.
    CrossWait {
        pipe: Pipe,
        id: Expr,
    },
    For(ForLoop),
    If {
        cond: Expr,
        then: Block,
        els: Option<Block>,
    },
    While {
        /// The anonymous iteration counter (0, 1, ...).
        var: VarId,
        trips: Expr,
        body: Block,
    },
}

/// `for: { var, from, to, step }` and its body: `var` takes from, from + step, ... while below
/// `to`.
#[derive(Clone, Debug)]
pub struct ForLoop {
    pub var: VarId,
    pub from: Expr,
    pub to: Expr,
    pub step: Expr,
    pub body: Block,
}

impl ForLoop {
    /// How many times a loop from `from` to `to` by `step` runs: ceil((to - from) / step),
    /// which is negative when `to` lies behind `from` in the direction of `step` (a run-time
    /// error); `None` for a step of 0.
    pub fn trips(from: i64, to: i64, step: i64) -> Option<i128> {
        if step == 0 {
            return None;
        }
        let (d, s) = (to as i128 - from as i128, step as i128);
        let q = d / s;
        let r = d % s;
        Some(if r != 0 && ((r > 0) == (s > 0)) {
            q + 1
        } else {
            q
        })
    }
}

#[derive(Clone, Debug)]
pub struct Mmad {
    pub a: Operand,
    pub b: Operand,
    pub c: Operand,
    pub m: Expr,
    pub n: Expr,
    pub k: Expr,
    /// Non-zero: c = a·b; zero: c += a·b.
    pub init: Expr,
    /// A BT operand added to c (mmad only).
    pub bias: Option<Operand>,
}

#[derive(Clone, Debug)]
pub struct VectorOp {
    pub op: VecOp,
    pub ins: Vec<Operand>,
    /// One output, two for `vdeinterleave`.
    pub outs: Vec<Operand>,
    pub tmp: Option<Operand>,
    pub scalar: Option<Expr>,
    /// Dimensions of the inputs broadcast to the output.
    pub broadcast: Vec<u32>,
    pub transpose: bool,
    /// Reduced dimensions (`vreduce_*`).
    pub dims: Vec<u32>,
}

/// A kernel as launched: one program per core type it runs (docs/programs.md, "Launches and mixed kernels").
/// A single-type kernel has one part; a mixed kernel (`aic:` and `aiv:`) has the cube part
/// first, then the vector part. Every part declares the same params and gm tensors in the same
/// order, so a `TensorId` names the same tensor in each, and the same `launch.blocks`.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub parts: Vec<Program>,
    /// Ops of the input the hardware cannot run as written, which the loader stood something
    /// runnable in for (a vector op reading gm, in the compiler's MLIR: docs/mlir.md, "Vector
    /// ops on gm"); `run` reports each as a finding. Empty for a YAML program.
    pub findings: Vec<crate::diag::Diagnostic>,
}

impl Kernel {
    /// A single-type kernel.
    pub fn single(program: Program) -> Kernel {
        Kernel {
            parts: vec![program],
            findings: Vec::new(),
        }
    }

    /// Whether the kernel has an `aic` and an `aiv` part.
    pub fn is_mixed(&self) -> bool {
        self.parts.len() > 1
    }

    /// The first part: the only one of a single-type kernel.
    pub fn first(&self) -> &Program {
        &self.parts[0]
    }
}

impl Program {
    #[inline]
    pub fn op(&self, id: OpId) -> &Op {
        &self.ops[id.index()]
    }

    #[inline]
    pub fn buffer(&self, id: BufferId) -> &Buffer {
        &self.buffers[id.index()]
    }

    #[inline]
    pub fn view(&self, id: ViewId) -> &View {
        &self.views[id.index()]
    }

    #[inline]
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id.index()]
    }

    /// The name an operand base refers to.
    pub fn ref_name(&self, r: Ref) -> &str {
        match r {
            Ref::Buffer(b) => &self.buffer(b).name,
            Ref::View(v) => &self.view(v).name,
            Ref::Tensor(t) => &self.tensor(t).name,
        }
    }

    /// The buffers whose storage an operand base may touch (a window's root buffer, every
    /// buffer of a `select`); empty for gm tensors.
    pub fn root_buffers(&self, r: Ref) -> Vec<BufferId> {
        crate::footprint::Bases::of(self).roots(r)
    }

    /// The blocks directly inside a control op (empty for other ops).
    pub fn blocks(&self, id: OpId) -> Vec<&Block> {
        match &self.op(id).kind {
            OpKind::For(ForLoop { body, .. }) | OpKind::While { body, .. } => vec![body],
            OpKind::If { then, els, .. } => {
                let mut v = vec![then];
                v.extend(els.iter());
                v
            }
            _ => vec![],
        }
    }

    /// How findings name op `id` (docs/cli.md, "Where findings point"): the file, line and
    /// column of the op and its text, `programs/softmax.yaml:23:9 vexp { ins: [xb], out: xb }`;
    /// an op a pass inserted names itself and the op it went beside,
    /// `programs/softmax.yaml:20:9 set_flag MTE2->V (inserted after load { ... })`. An op
    /// without a location (a program built in code) is named by its YAML path and key,
    /// `body[0].for.body[2] vadd`; an id the program does not have, `op999 ?`.
    pub fn locate(&self, id: OpId) -> String {
        let Some(op) = self.ops.get(id.index()) else {
            return format!("{id} ?");
        };
        let loc = &op.loc;
        if loc.line == 0 {
            return format!("{} {}", op.path, op.kind.name());
        }
        let mut out = if self.file.is_empty() {
            format!("{}:{} ", loc.line, loc.column)
        } else {
            format!("{}:{}:{} ", self.file, loc.line, loc.column)
        };
        let text = self.op_text(id);
        match loc.inserted {
            None => out.push_str(text),
            Some(side) => {
                let side = match side {
                    Side::Before => "before",
                    Side::After => "after",
                };
                out.push_str(&format!("{} (inserted {side} {text})", op.kind.title()));
            }
        }
        out
    }

    /// Op `id`'s one-line text ([`Loc::text`]); empty when unknown.
    pub fn op_text(&self, id: OpId) -> &str {
        self.ops
            .get(id.index())
            .and_then(|o| self.texts.get(o.loc.text.0 as usize..o.loc.text.1 as usize))
            .unwrap_or("")
    }

    /// The name of a loop variable, for printing expressions.
    pub fn var_name(&self, v: VarId) -> String {
        self.vars[v.index()].name.clone()
    }
}

impl OpKind {
    /// The op's YAML key (`load`, `vadd`, `for`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Load { .. } => "load",
            OpKind::Store { .. } => "store",
            OpKind::Copy { .. } => "copy",
            OpKind::Fixpipe { .. } => "fixpipe",
            OpKind::Mmad(_) => "mmad",
            OpKind::MmadL1(_) => "mmad_l1",
            OpKind::Vector(v) => v.op.name(),
            OpKind::Sload { .. } => "sload",
            OpKind::Sstore { .. } => "sstore",
            OpKind::Scalar { .. } => "scalar",
            OpKind::Use { .. } => "use",
            OpKind::SetFlag { .. } => "set_flag",
            OpKind::WaitFlag { .. } => "wait_flag",
            OpKind::Barrier(_) => "barrier",
            OpKind::CrossSet { .. } => "cross_set",
            OpKind::CrossWait { .. } => "cross_wait",
            OpKind::For(_) => "for",
            OpKind::If { .. } => "if",
            OpKind::While { .. } => "while",
        }
    }

    /// The key with what tells an instance apart at a glance: `set_flag MTE2->V`, `barrier V`,
    /// `barrier all`; the key alone for other ops.
    pub fn title(&self) -> String {
        match self {
            OpKind::SetFlag { src, dst, .. } | OpKind::WaitFlag { src, dst, .. } => {
                format!("{} {src}->{dst}", self.name())
            }
            OpKind::Barrier(BarrierTarget::Pipe(p)) => format!("barrier {p}"),
            OpKind::Barrier(BarrierTarget::All) => "barrier all".to_string(),
            k => k.name().to_string(),
        }
    }

    /// Operands the op reads, in field order.
    pub fn reads(&self) -> Vec<&Operand> {
        match self {
            OpKind::Load { src, .. } | OpKind::Store { src, .. } | OpKind::Copy { src, .. } => {
                vec![src]
            }
            OpKind::Fixpipe { src, quant, .. } => {
                let mut v = vec![src];
                if let Quant::Tensor(q) = quant {
                    v.push(q);
                }
                v
            }
            OpKind::Mmad(m) | OpKind::MmadL1(m) => {
                let mut v = vec![&m.a, &m.b];
                // c is read when the op accumulates (init may be false)
                if m.init.as_const().is_none_or(|i| i == 0) {
                    v.push(&m.c);
                }
                v.extend(m.bias.iter());
                v
            }
            OpKind::Vector(v) => v.ins.iter().collect(),
            OpKind::Sload { src } => vec![src],
            OpKind::Use { operands } => operands.iter().collect(),
            _ => vec![],
        }
    }

    /// Operands the op writes, in field order (a vector op's `tmp` counts as written).
    pub fn writes(&self) -> Vec<&Operand> {
        match self {
            OpKind::Load { dst, .. }
            | OpKind::Store { dst, .. }
            | OpKind::Copy { dst, .. }
            | OpKind::Fixpipe { dst, .. } => vec![dst],
            OpKind::Mmad(m) | OpKind::MmadL1(m) => vec![&m.c],
            OpKind::Vector(v) => v.outs.iter().chain(v.tmp.iter()).collect(),
            OpKind::Sstore { dst } => vec![dst],
            _ => vec![],
        }
    }

    pub fn is_control(&self) -> bool {
        matches!(
            self,
            OpKind::For(_) | OpKind::If { .. } | OpKind::While { .. }
        )
    }
}
