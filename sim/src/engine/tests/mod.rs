//! Unit tests of the engine on programs built directly in Rust (independent of the loader).
//! Every expected number is derived by hand from the rules in the module docs; the derivation
//! is in the comment above each assertion. The tests are in files by subject; this one holds
//! the small config and the program builder they share.

use super::*;
use crate::config::{
    CoreConfig, CubeConfig, PathConfig, ScalarConfig, ScopeConfig, SyncConfig, VecCost,
    VectorConfig,
};
use crate::expr::{BinOp, Expr};
use crate::ids::{BufferId, CoreId, TensorId, VarId};
use crate::program::*;
use crate::types::{Dtype, Space};

mod checks;
mod mmad;
mod observers;
mod sync;
mod timing;
mod work;

// ----- a small config ------------------------------------------------------------------------

fn path(from: Space, to: Space, pipe: Pipe, bpc: u32, startup: u32) -> PathConfig {
    PathConfig {
        from,
        to,
        pipe,
        bytes_per_cycle: bpc,
        startup,
        read_bytes_per_cycle: None,
        nz_bytes_per_cycle: None,
    }
}

/// issue 1, loop 2, branch 1, flag latency 2, queue depth 2, 4 event ids;
/// gm->ub 64 B/c +10, ub->gm 32 B/c +5, ub->ub (V) 64 B/c +2, gm->l1 64 B/c +10,
/// l1->l0a 128 B/c +4, l1->l0b 64 B/c +3, gm->l0a/l0b 64 B/c +10, l0c->gm (FIX) 32 B/c +6;
/// vector: 256 B repeats, default 2 c/repeat +4, vadd 1 c/repeat +3; cube 16x16, k 32 B, +5.
fn config() -> Config {
    use Space::*;
    Config {
        name: "test".into(),
        description: String::new(),
        clock_mhz: 1000,
        cores: vec![CoreConfig {
            name: "t".into(),
            scopes: [Ub, L1, L0a, L0b, L0c]
                .into_iter()
                .map(|space| ScopeConfig {
                    space,
                    bytes: 1 << 20,
                    align: 32,
                    plan_align: 32,
                })
                .collect(),
            pipes: Pipe::ALL.to_vec(),
        }],
        queue_depth: 2,
        scalar: ScalarConfig {
            issue_cycles: 1,
            loop_cycles: 2,
            branch_cycles: 1,
            gm_latency: None,
        },
        sync: SyncConfig {
            event_ids: 4,
            flag_latency: 2,
        },
        paths: vec![
            path(Gm, Ub, Pipe::Mte2, 64, 10),
            path(Ub, Gm, Pipe::Mte3, 32, 5),
            path(Ub, Ub, Pipe::V, 64, 2),
            path(Gm, L1, Pipe::Mte2, 64, 10),
            path(L1, L0a, Pipe::Mte1, 128, 4),
            path(L1, L0b, Pipe::Mte1, 64, 3),
            path(Gm, L0a, Pipe::Mte2, 64, 10),
            path(Gm, L0b, Pipe::Mte2, 64, 10),
            path(L0c, Gm, Pipe::Fix, 32, 6),
        ],
        vector: VectorConfig {
            repeat_bytes: 256,
            block_bytes: None,
            ub_banks: None,
            default: VecCost {
                cycles_per_repeat: 2,
                startup: 4,
            },
            ops: {
                let mut ops = [None; VecOp::COUNT];
                ops[VecOp::Vadd.index()] = Some(VecCost {
                    cycles_per_repeat: 1,
                    startup: 3,
                });
                ops
            },
        },
        cube: CubeConfig {
            fractal_m: 16,
            fractal_n: 16,
            fractal_k_bytes: 32,
            startup: 5,
        },
        memory: None,
        chip: None,
        cross_core: None,
        launch_cost: None,
    }
}

// ----- a program builder ---------------------------------------------------------------------

/// A program tree; flattened into pre-order ops by [`B::build`].
#[allow(clippy::large_enum_variant)]
enum T {
    Leaf(OpKind),
    For {
        var: VarId,
        from: i64,
        to: Expr,
        body: Vec<T>,
    },
    If {
        cond: Expr,
        then: Vec<T>,
        els: Option<Vec<T>>,
    },
}

struct B {
    p: Program,
}

impl B {
    fn new() -> B {
        B {
            p: Program {
                kernel: "test".into(),
                file: String::new(),
                texts: Default::default(),
                core: CoreId::new(0),
                sync: SyncMode::Manual,
                params: vec![],
                launch: crate::program::Launch::SINGLE,
                tensors: vec![],
                buffers: vec![],
                views: vec![],
                vars: vec![],
                ops: vec![],
                body: Block::default(),
            },
        }
    }

    /// A builder with one loop variable, `t`: most loops' tests start here.
    fn with_t() -> (B, VarId) {
        let mut b = B::new();
        let t = b.var("t");
        (b, t)
    }

    fn tensor(&mut self, name: &str, shape: &[u64], dtype: Dtype) -> TensorId {
        let elements = shape.iter().product();
        self.p.tensors.push(Tensor {
            name: name.into(),
            shape: shape.to_vec(),
            dtype,
            elements,
            bytes: dtype.bytes_for(elements),
            path: format!("gm.{name}"),
        });
        TensorId::new(self.p.tensors.len() - 1)
    }

    fn buffer(
        &mut self,
        name: &str,
        scope: Space,
        elements: u64,
        dtype: Dtype,
        multi: u32,
    ) -> BufferId {
        self.p.buffers.push(Buffer {
            name: name.into(),
            scope,
            shape: vec![elements],
            dtype,
            elements,
            bytes: dtype.bytes_for(elements),
            multi,
            inplace: true,
            unique: false,
            share: None,
            preload: false,
            at: None,
            path: format!("buffers.{name}"),
            declared_in: None,
            loop_parent: None,
        });
        BufferId::new(self.p.buffers.len() - 1)
    }

    fn var(&mut self, name: &str) -> VarId {
        self.p.vars.push(Var {
            name: name.into(),
            loop_op: Some(OpId(0)),
        });
        VarId::new(self.p.vars.len() - 1)
    }

    /// A gm tensor `x` of `rows` × `cols` f16 and a UB buffer `xb` of one row in `multi`
    /// slots: what most tests load and store.
    fn x_and_xb(&mut self, rows: u64, cols: u64, multi: u32) -> (TensorId, BufferId) {
        let x = self.tensor("x", &[rows, cols], Dtype::F16);
        let xb = self.buffer("xb", Space::Ub, cols, Dtype::F16, multi);
        (x, xb)
    }

    /// An `mmad_l1` of `c = a × b`, m × k by k × n of f16 into f32, initialising `c`, on new
    /// whole buffers `a` and `b` in L1 and `c` in L0C, each of exactly its matrix.
    fn mmad(&mut self, m: u64, n: u64, k: u64) -> Mmad {
        let a = self.buffer("a", Space::L1, m * k, Dtype::F16, 1);
        let b = self.buffer("b", Space::L1, k * n, Dtype::F16, 1);
        let c = self.buffer("c", Space::L0c, m * n, Dtype::F32, 1);
        let dim = |d: u64| Expr::Const(d as i64);
        Mmad {
            a: self.b(a),
            b: self.b(b),
            c: self.b(c),
            m: dim(m),
            n: dim(n),
            k: dim(k),
            init: Expr::Const(1),
            bias: None,
        }
    }

    /// The whole buffer.
    fn b(&self, b: BufferId) -> Operand {
        let buf = &self.p.buffers[b.index()];
        Operand {
            text: buf.name.clone(),
            base: Ref::Buffer(b),
            slot: None,
            indices: vec![],
            space: buf.scope,
            dtype: buf.dtype,
            elements: Some(buf.elements),
        }
    }

    fn slot(&self, b: BufferId, k: i64) -> Operand {
        let mut o = self.b(b);
        o.text = format!("{}@{k}", o.text);
        o.slot = Some(Expr::Const(k));
        o
    }

    /// Row `i` of a 2-d tensor.
    fn row(&self, t: TensorId, i: Expr) -> Operand {
        let ten = &self.p.tensors[t.index()];
        Operand {
            text: format!("{}[..]", ten.name),
            base: Ref::Tensor(t),
            slot: None,
            indices: vec![Index::At(i)],
            space: Space::Gm,
            dtype: ten.dtype,
            elements: Some(ten.shape[1..].iter().product()),
        }
    }

    fn build(mut self, body: Vec<T>) -> Program {
        let ops = self.flatten(body, None, None, "body");
        self.p.body.ops = ops;
        self.p
    }

    fn flatten(
        &mut self,
        items: Vec<T>,
        parent: Option<OpId>,
        lp: Option<OpId>,
        path: &str,
    ) -> Vec<OpId> {
        let mut ids = vec![];
        for (i, t) in items.into_iter().enumerate() {
            let id = OpId::new(self.p.ops.len());
            let path = format!("{path}[{i}]");
            self.p.ops.push(Op {
                kind: OpKind::Scalar {
                    cycles: Expr::Const(0),
                },
                path: path.clone(),
                loc: Default::default(),
                pipe: None,
                loop_parent: lp,
                parent,
            });
            let kind = match t {
                T::Leaf(k) => k,
                T::For {
                    var,
                    from,
                    to,
                    body,
                } => {
                    self.p.vars[var.index()].loop_op = Some(id);
                    let ops = self.flatten(body, Some(id), Some(id), &format!("{path}.for.body"));
                    OpKind::For(ForLoop {
                        var,
                        from: Expr::Const(from),
                        to,
                        step: Expr::Const(1),
                        body: Block {
                            ops,
                            ..Block::default()
                        },
                    })
                }
                T::If { cond, then, els } => {
                    let then = self.flatten(then, Some(id), lp, &format!("{path}.then"));
                    let els = els.map(|e| self.flatten(e, Some(id), lp, &format!("{path}.else")));
                    OpKind::If {
                        cond,
                        then: Block {
                            ops: then,
                            ..Block::default()
                        },
                        els: els.map(|ops| Block {
                            ops,
                            ..Block::default()
                        }),
                    }
                }
            };
            self.p.ops[id.index()].kind = kind;
            ids.push(id);
        }
        ids
    }
}

fn load(src: Operand, dst: Operand) -> T {
    T::Leaf(OpKind::Load {
        src,
        dst,
        layout: Layout::Nd,
    })
}

fn store(src: Operand, dst: Operand) -> T {
    T::Leaf(OpKind::Store { src, dst })
}

fn vop(op: VecOp, ins: Vec<Operand>, out: Operand) -> T {
    T::Leaf(OpKind::Vector(Box::new(VectorOp {
        op,
        ins,
        outs: vec![out],
        tmp: None,
        scalar: None,
        broadcast: vec![],
        transpose: false,
        dims: vec![],
    })))
}

fn set(src: Pipe, dst: Pipe, id: i64) -> T {
    T::Leaf(OpKind::SetFlag {
        src,
        dst,
        id: Expr::Const(id),
    })
}

fn wait(src: Pipe, dst: Pipe, id: i64) -> T {
    T::Leaf(OpKind::WaitFlag {
        src,
        dst,
        id: Expr::Const(id),
    })
}

fn scalar(c: i64) -> T {
    T::Leaf(OpKind::Scalar {
        cycles: Expr::Const(c),
    })
}

fn mmad_l1(m: Mmad) -> T {
    T::Leaf(OpKind::MmadL1(Box::new(m)))
}

fn for_(var: VarId, to: i64, body: Vec<T>) -> T {
    T::For {
        var,
        from: 0,
        to: Expr::Const(to),
        body,
    }
}

fn stats(r: &RunResult, p: Pipe) -> &PipeStats {
    r.cores[0].pipe(p).unwrap()
}

fn stall(r: &RunResult, p: Pipe, s: Stall) -> u64 {
    stats(r, p)
        .stalls
        .iter()
        .find(|(x, _)| *x == s)
        .map_or(0, |(_, c)| *c)
}

/// (instructions, busy, starved, idle) of pipe `p`.
fn totals(r: &RunResult, p: Pipe) -> (u64, u64, u64, u64) {
    let s = stats(r, p);
    (s.instructions, s.busy, s.starved, s.idle)
}

/// The cycles `p` waited for flag `id` from `src`.
fn flag_stall(r: &RunResult, p: Pipe, src: Pipe, id: u32) -> u64 {
    stall(r, p, Stall::WaitFlag { src, id })
}

/// Runs `p` on the test [`config`], checking the accounting identity and that the spans the
/// observer saw add up to the accounting.
fn ok(p: &Program) -> RunResult {
    ok_on(p, &config())
}

/// [`ok`] on another config.
fn ok_on(p: &Program, config: &Config) -> RunResult {
    let mut ledger = Ledger::new();
    let r = run_observed(p, config, &mut ledger).expect("runs");
    r.check_accounting().unwrap();
    ledger.check(&r).unwrap();
    r
}
