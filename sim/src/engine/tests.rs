//! Unit tests of the engine on programs built directly in Rust (independent of the loader).
//! Every expected number is derived by hand from the rules in the module docs; the derivation
//! is in the comment above each assertion.

use super::*;
use crate::config::{
    CoreConfig, CubeConfig, PathConfig, ScalarConfig, ScopeConfig, SyncConfig, VecCost,
    VectorConfig,
};
use crate::expr::{BinOp, Expr};
use crate::ids::{BufferId, CoreId, TensorId, VarId};
use crate::program::*;
use crate::types::{Dtype, Space};

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

fn for_(var: VarId, to: i64, body: Vec<T>) -> T {
    T::For {
        var,
        from: 0,
        to: Expr::Const(to),
        body,
    }
}

fn stats(r: &RunResult, p: Pipe) -> &PipeStats {
    r.pipe(p).unwrap()
}

fn stall(r: &RunResult, p: Pipe, s: Stall) -> u64 {
    stats(r, p)
        .stalls
        .iter()
        .find(|(x, _)| *x == s)
        .map_or(0, |(_, c)| *c)
}

/// Runs `p`, checking the accounting identity and that the spans the observer saw add up to
/// the accounting.
fn ok(p: &Program) -> RunResult {
    let mut ledger = Ledger::new();
    let r = run_observed(p, &config(), &mut ledger).expect("runs");
    r.check_accounting().unwrap();
    ledger.check(&r).unwrap();
    r
}

// ----- tests ---------------------------------------------------------------------------------

#[test]
fn single_load() {
    let mut b = B::new();
    let x = b.tensor("x", &[1, 512], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 1);
    let ops = vec![load(b.row(x, Expr::Const(0)), b.b(xb))];
    let r = ok(&b.build(ops));
    // S sends at 0 (busy [0,1)); it joins MTE2 at 1; 1024 B / 64 = 16 cycles of work, busy
    // [1,17), completes at 1 + 10 + 16 = 27.
    assert_eq!(r.total_cycles, 27);
    let m = stats(&r, Pipe::Mte2);
    assert_eq!((m.busy, m.starved, m.idle, m.instructions), (16, 1, 10, 1));
    let s = stats(&r, Pipe::S);
    assert_eq!((s.busy, s.idle, s.instructions), (1, 26, 0));
    assert_eq!(stats(&r, Pipe::V).idle, 27);
    assert_eq!(r.overlap_cycles, 0);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
    assert_eq!(r.pipes.len(), 7);
}

#[test]
fn flag_chain_and_overlap() {
    // load (MTE2) -> set/wait MTE2->V -> vadd -> set/wait V->MTE3 -> store; then a second load
    // that overlaps the vadd.
    let mut b = B::new();
    let x = b.tensor("x", &[2, 512], Dtype::F16);
    let z = b.tensor("z", &[1, 512], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 1);
    let yb = b.buffer("yb", Space::Ub, 512, Dtype::F16, 1);
    let zb = b.buffer("zb", Space::Ub, 512, Dtype::F16, 1);
    let ops = vec![
        load(b.row(x, Expr::Const(0)), b.b(xb)),
        set(Pipe::Mte2, Pipe::V, 0),
        wait(Pipe::Mte2, Pipe::V, 0),
        vop(VecOp::Vadd, vec![b.b(xb), b.b(xb)], b.b(zb)),
        load(b.row(x, Expr::Const(1)), b.b(yb)),
        set(Pipe::V, Pipe::Mte3, 1),
        wait(Pipe::V, Pipe::Mte3, 1),
        store(b.b(zb), b.row(z, Expr::Const(0))),
    ];
    let r = ok(&b.build(ops));
    // S sends load0 at 0 (joins MTE2 at 1), set at 1 (load0 started at 1 first: queue empty;
    // joins 2), wait at 2 (V, joins 3), vadd at 3 (joins 4), load1 at 4 (MTE2 holds the set:
    // joins 5). set V->MTE3 at 5: V holds wait + vadd unstarted = queue_depth 2, so S stalls
    // until V starts them at 29 (queue_full V = 24); sends at 29 (joins 30), wait at 30 (MTE3,
    // joins 31), store at 31 (joins 32); S ends at 32.
    // MTE2: load0 [1,17), 1024 B / 64 = 16, completes 27; set starts 27 (drain [17,27) = 10),
    //   visible 29; load1 starts 27, busy [27,43), completes 53.
    // V: starved [0,3), wait_flag MTE2#0 [3,29) = 26; vadd: 1024 B = 4 repeats x 1 = 4, busy
    //   [29,33), completes 36; set joins 30, starts 36 (drain [33,36) = 3), visible 38.
    // MTE3: starved [0,31), wait_flag V#1 [31,38) = 7; store starts 38: 1024/32 = 32, busy
    //   [38,70), completes 75.
    // total = max(S 32, MTE2 53, V 36, MTE3 75) = 75.
    assert_eq!(r.total_cycles, 75);
    let s = stats(&r, Pipe::S);
    assert_eq!((s.busy, s.idle, s.instructions), (8, 75 - 32, 0));
    assert_eq!(stall(&r, Pipe::S, Stall::QueueFull(Pipe::V)), 24);
    let m2 = stats(&r, Pipe::Mte2);
    assert_eq!((m2.busy, m2.starved, m2.idle), (32, 1, 75 - 43));
    assert_eq!(stall(&r, Pipe::Mte2, Stall::Drain), 10);
    assert_eq!(m2.instructions, 3);
    let v = stats(&r, Pipe::V);
    assert_eq!(
        (v.busy, v.starved, v.idle, v.instructions),
        (4, 3, 75 - 36, 3)
    );
    assert_eq!(
        stall(
            &r,
            Pipe::V,
            Stall::WaitFlag {
                src: Pipe::Mte2,
                id: 0
            }
        ),
        26
    );
    assert_eq!(stall(&r, Pipe::V, Stall::Drain), 3);
    let m3 = stats(&r, Pipe::Mte3);
    assert_eq!((m3.busy, m3.starved, m3.idle), (32, 31, 5));
    assert_eq!(
        stall(
            &r,
            Pipe::Mte3,
            Stall::WaitFlag {
                src: Pipe::V,
                id: 1
            }
        ),
        7
    );
    // Overlap: MTE2 [27,43) with V [29,33) = 4 and with MTE3 [38,43) = 5 -> 9.
    assert_eq!(r.overlap_cycles, 9);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
}

#[test]
fn queue_full_stalls_scalar() {
    // Four loads of 1024 B on MTE2 with queue_depth 2.
    let mut b = B::new();
    let x = b.tensor("x", &[4, 512], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 1);
    let ops = (0..4)
        .map(|i| load(b.row(x, Expr::Const(i)), b.b(xb)))
        .collect();
    let r = ok(&b.build(ops));
    // L0: sent 0, joins 1, starts 1, busy [1,17). L1: sent 1, joins 2. L2: sent 2 (queue holds
    // L1 only), joins 3. L3 at 3: queue holds L1, L2 -> full until L1 starts at 17; sent at 17,
    // joins 18 (S stalls 14). L2 starts 33, L3 starts 49, busy to 65, completes 75.
    assert_eq!(r.total_cycles, 75);
    let s = stats(&r, Pipe::S);
    assert_eq!(stall(&r, Pipe::S, Stall::QueueFull(Pipe::Mte2)), 14);
    assert_eq!((s.busy, s.idle), (4, 75 - 18));
    let m = stats(&r, Pipe::Mte2);
    assert_eq!((m.busy, m.starved, m.idle), (64, 1, 10));
}

#[test]
fn loop_costs_and_slots() {
    // for t in 0..3: load x[t] -> xb (multi 2); S: 2 loop cycles + 1 issue per iteration.
    let mut b = B::new();
    let t = b.var("t");
    let x = b.tensor("x", &[3, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 2);
    let ops = vec![for_(t, 3, vec![load(b.row(x, Expr::Var(t)), b.b(xb))])];
    let p = b.build(ops);
    #[derive(Default)]
    struct Rec {
        issues: Vec<(u64, u64, Vec<i64>, Vec<u32>)>,
        starts: Vec<(u64, u64, u64)>,
    }
    impl Observer for Rec {
        fn on_issue(&mut self, i: &Issue<'_>) {
            self.issues
                .push((i.seq, i.cycle, i.vars.to_vec(), i.slots.to_vec()));
        }
        fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
            self.starts.push((seq, start, complete));
        }
    }
    let mut rec = Rec::default();
    let r = run_observed(&p, &config(), &mut rec).unwrap();
    // Iteration t: loop cycles [3t, 3t+2), send at 3t+2, joins 3t+3. 128 B / 64 = 2 work.
    // Starts 3, 6, 9 (each after the previous work ends); last completes 9 + 10 + 2 = 21.
    assert_eq!(r.total_cycles, 21);
    let s = stats(&r, Pipe::S);
    assert_eq!((s.busy, s.instructions, s.idle), (9, 3, 12));
    let m = stats(&r, Pipe::Mte2);
    assert_eq!((m.busy, m.starved, m.idle), (6, 3 + 1 + 1, 10));
    // operands: src (gm, slot 0), dst (xb: iterations completed mod 2)
    let slots: Vec<_> = rec.issues.iter().map(|i| i.3.clone()).collect();
    assert_eq!(slots, vec![vec![0, 0], vec![0, 1], vec![0, 0]]);
    let cycles: Vec<_> = rec.issues.iter().map(|i| (i.1, i.2[0])).collect();
    assert_eq!(cycles, vec![(2, 0), (5, 1), (8, 2)]);
    assert_eq!(rec.starts, vec![(0, 3, 15), (1, 6, 18), (2, 9, 21)]);
}

#[test]
fn explicit_slot_and_if() {
    let mut b = B::new();
    let t = b.var("t");
    let x = b.tensor("x", &[2, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 2);
    let cond = Expr::binary(BinOp::Eq, Expr::Var(t), Expr::Const(1)).unwrap();
    let ops = vec![for_(
        t,
        2,
        vec![T::If {
            cond,
            then: vec![load(b.row(x, Expr::Var(t)), b.slot(xb, 0))],
            els: Some(vec![scalar(5)]),
        }],
    )];
    let r = ok(&b.build(ops));
    // t=0: loop [0,2), branch [2,3), else: scalar [3,8). t=1: loop [8,10), branch [10,11),
    // send [11,12), joins 12, 2 cycles of work [12,14), completes 24.
    assert_eq!(r.total_cycles, 24);
    let s = stats(&r, Pipe::S);
    // 2 iterations + 2 ifs + 1 scalar
    assert_eq!((s.busy, s.instructions, s.idle), (12, 5, 12));
}

#[test]
fn unmatched_wait_deadlocks() {
    let mut b = B::new();
    let x = b.tensor("x", &[1, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 1);
    let ops = vec![
        load(b.row(x, Expr::Const(0)), b.b(xb)),
        wait(Pipe::Mte2, Pipe::V, 3),
    ];
    let p = b.build(ops);
    let r = ok(&p);
    // load: sent 0, joins 1, busy [1,3), completes 13; wait: sent 1, joins 2, never starts.
    // Last event: completion at 13.
    let d = r.deadlock.as_ref().expect("deadlock");
    assert_eq!(d.cycle, 13);
    assert_eq!(
        d.waiters,
        vec![Waiter {
            core: 0,
            pipe: Pipe::V,
            op: OpId(1),
            on: WaitOn::Flag {
                src: Pipe::Mte2,
                dst: Pipe::V,
                id: 3
            }
        }]
    );
    assert_eq!(r.total_cycles, 13);
    // V: starved [0,2), waits [2,13)
    assert_eq!(stats(&r, Pipe::V).starved, 2);
    assert_eq!(
        stall(
            &r,
            Pipe::V,
            Stall::WaitFlag {
                src: Pipe::Mte2,
                id: 3
            }
        ),
        11
    );
    assert!(r.has_findings());
}

#[test]
fn scalar_wait_and_queue_deadlock() {
    // S waits on a flag from V that V only sets after a wait nobody satisfies.
    let mut b = B::new();
    let _ = b.tensor("x", &[1, 64], Dtype::F16);
    let ops = vec![
        wait(Pipe::Mte3, Pipe::V, 0),
        set(Pipe::V, Pipe::S, 0),
        wait(Pipe::V, Pipe::S, 0),
    ];
    let r = ok(&b.build(ops));
    let d = r.deadlock.unwrap();
    // S sends at 0 and 1, reaches the wait at 2; V's wait joined at 1.
    assert_eq!(d.cycle, 2);
    assert_eq!(d.waiters.len(), 2);
    assert_eq!(d.waiters[0].pipe, Pipe::S);
    assert_eq!(d.waiters[0].op, OpId(2));
    assert_eq!(
        d.waiters[1].on,
        WaitOn::Flag {
            src: Pipe::Mte3,
            dst: Pipe::V,
            id: 0
        }
    );
}

#[test]
fn double_and_unpaired_set() {
    let b = B::new();
    let ops = vec![
        set(Pipe::S, Pipe::V, 1),
        set(Pipe::S, Pipe::V, 1),
        scalar(4),
    ];
    let r = ok(&b.build(ops));
    // Both sets at cycle 0 (no cycles); the second finds the flag set. scalar [0,4).
    assert_eq!(r.total_cycles, 4);
    assert_eq!(
        r.findings,
        vec![
            SyncFinding::DoubleSet {
                core: 0,
                src: Pipe::S,
                dst: Pipe::V,
                id: 1,
                op: OpId(1),
                cycle: 0
            },
            SyncFinding::UnpairedSet {
                core: 0,
                src: Pipe::S,
                dst: Pipe::V,
                id: 1,
                op: OpId(0)
            }
        ]
    );
    assert_eq!(stats(&r, Pipe::S).instructions, 3);
}

/// `for t in 0..n: set_flag S->V #1` with no wait: iteration t's set is at 2t + 2 (two loop
/// cycles, a set costs none); the first sets the flag and each later one is a double set.
fn repeated_sets(n: i64) -> RunResult {
    let mut b = B::new();
    let t = b.var("t");
    let ops = vec![for_(t, n, vec![set(Pipe::S, Pipe::V, 1)])];
    ok(&b.build(ops))
}

#[test]
fn double_sets_are_kept_up_to_a_bound_and_the_rest_counted() {
    let double = |t: u64| SyncFinding::DoubleSet {
        core: 0,
        src: Pipe::S,
        dst: Pipe::V,
        id: 1,
        op: OpId(1),
        cycle: 2 * t + 2,
    };
    let unpaired = SyncFinding::UnpairedSet {
        core: 0,
        src: Pipe::S,
        dst: Pipe::V,
        id: 1,
        op: OpId(1),
    };
    // 1001 sets: 1000 double sets, all kept (iterations 1..=1000)
    let r = repeated_sets(1001);
    let mut want: Vec<_> = (1..=1000).map(double).collect();
    want.push(unpaired.clone());
    assert_eq!(r.findings, want);
    // 1002: one past the bound
    let r = repeated_sets(1002);
    let mut want: Vec<_> = (1..=1000).map(double).collect();
    want.push(SyncFinding::DoubleSetsOmitted { core: 0, count: 1 });
    want.push(unpaired.clone());
    assert_eq!(r.findings, want);
    // 250 000: 249 999 double sets, the first 1000 kept, whatever the run's length
    let r = repeated_sets(250_000);
    assert_eq!(r.findings.len(), 1002);
    assert_eq!(
        r.findings[..1000],
        (1..=1000).map(double).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        r.findings[1000..],
        [
            SyncFinding::DoubleSetsOmitted {
                core: 0,
                count: 249_999 - 1000
            },
            unpaired
        ]
    );
    assert_eq!(DOUBLE_SETS_KEPT, 1000);
}

#[test]
fn scalar_side_flags_and_barrier_all() {
    let mut b = B::new();
    let x = b.tensor("x", &[1, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 1);
    let ops = vec![
        set(Pipe::S, Pipe::Mte2, 0),                  // S at 0, visible 2
        wait(Pipe::S, Pipe::Mte2, 0),                 // sent 0, joins 1, starts 2
        load(b.row(x, Expr::Const(0)), b.b(xb)),      // sent 1, joins 2, starts 2, [2,4) done 14
        set(Pipe::Mte2, Pipe::S, 2),                  // sent 2, joins 3, drains to 14, visible 16
        wait(Pipe::Mte2, Pipe::S, 2),                 // S at 3 waits until 16
        T::Leaf(OpKind::Barrier(BarrierTarget::All)), // S at 16: nothing in flight
        scalar(1),                                    // [16,17)
    ];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 17);
    assert_eq!(
        stall(
            &r,
            Pipe::S,
            Stall::WaitFlag {
                src: Pipe::Mte2,
                id: 2
            }
        ),
        13
    );
    assert_eq!(stall(&r, Pipe::S, Stall::BarrierAll), 0);
    let s = stats(&r, Pipe::S);
    // set, wait, barrier, scalar
    assert_eq!((s.instructions, s.busy, s.idle), (4, 4, 0));
    let m = stats(&r, Pipe::Mte2);
    // starved [0,1), wait_flag S#0 [1,2), busy [2,4), drain [4,14), idle [14,17)
    assert_eq!((m.starved, m.busy, m.idle, m.instructions), (1, 2, 3, 3));
    assert_eq!(
        stall(
            &r,
            Pipe::Mte2,
            Stall::WaitFlag {
                src: Pipe::S,
                id: 0
            }
        ),
        1
    );
    assert_eq!(stall(&r, Pipe::Mte2, Stall::Drain), 10);
    assert!(r.findings.is_empty());
}

#[test]
fn barrier_all_waits_for_completion() {
    let mut b = B::new();
    let x = b.tensor("x", &[1, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 1);
    let ops = vec![
        load(b.row(x, Expr::Const(0)), b.b(xb)), // [1,3) completes 13
        T::Leaf(OpKind::Barrier(BarrierTarget::All)), // S at 1 waits to 13
        scalar(2),                               // [13,15)
    ];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 15);
    assert_eq!(stall(&r, Pipe::S, Stall::BarrierAll), 12);
}

#[test]
fn mmad_l1_macro() {
    let mut b = B::new();
    let a = b.buffer("a", Space::L1, 32 * 32, Dtype::F16, 1); // 2048 B
    let bb = b.buffer("b", Space::L1, 32 * 32, Dtype::F16, 1); // 2048 B
    let c = b.buffer("c", Space::L0c, 32 * 32, Dtype::F32, 1);
    let m = Mmad {
        a: b.b(a),
        b: b.b(bb),
        c: b.b(c),
        m: Expr::Const(32),
        n: Expr::Const(32),
        k: Expr::Const(32),
        init: Expr::Const(1),
        bias: None,
    };
    let ops = vec![
        T::Leaf(OpKind::MmadL1(Box::new(m.clone()))),
        T::Leaf(OpKind::MmadL1(Box::new(m))),
    ];
    let r = ok(&b.build(ops));
    // Stage: 2048/128 + 2048/64 = 16 + 32 = 48 work, startup max(4,3) = 4.
    // M part: 2 x 2 x ceil(32 / (32/2)) = 8 work, startup 5.
    // #1: MTE1 sent 0, joins 1, [1,49) completes 53; M sent 1, joins 2, starts 53 [53,61) -> 66.
    // #2: MTE1 sent 2, joins 3, starts 49 [49,97) -> 101; M sent 3, joins 4, starts 101
    //   [101,109) -> 114.
    assert_eq!(r.total_cycles, 114);
    let mm = stats(&r, Pipe::M);
    assert_eq!(mm.busy, 16);
    // M: starved [0,2), macro wait [2,53), busy [53,61), macro wait [61,101), busy, idle 5
    assert_eq!(
        stall(&r, Pipe::M, Stall::WaitMacro { src: Pipe::Mte1 }),
        51 + 40
    );
    assert_eq!((mm.starved, mm.idle, mm.instructions), (2, 5, 2));
    let m1 = stats(&r, Pipe::Mte1);
    assert_eq!((m1.busy, m1.starved, m1.idle), (96, 1, 17));
    // overlap: MTE1 [49,97) with M [53,61) = 8
    assert_eq!(r.overlap_cycles, 8);
}

#[test]
fn mmad_l1_staging_waits_for_m_to_free_a_half() {
    // L0A and L0B of 32 KiB: halves of 16384 B. m = n = 512, k = 64 of f16 (kf = 32 B / 2 = 16):
    // a = b = 512 x 64 x 2 = 65536 B. A chunk of kc elements of k holds 65536 x kc / 64 B of
    // each, which fits 16384 for kc <= 16: one fractal. 4 fractals -> 4 chunks of 16.
    let mut config = config();
    for s in &mut config.cores[0].scopes {
        if matches!(s.space, Space::L0a | Space::L0b) {
            s.bytes = 32768;
        }
    }
    let mut b = B::new();
    let a = b.buffer("a", Space::L1, 512 * 64, Dtype::F16, 1);
    let bb = b.buffer("b", Space::L1, 64 * 512, Dtype::F16, 1);
    let c = b.buffer("c", Space::L0c, 512 * 512, Dtype::F32, 1);
    let m = Mmad {
        a: b.b(a),
        b: b.b(bb),
        c: b.b(c),
        m: Expr::Const(512),
        n: Expr::Const(512),
        k: Expr::Const(64),
        init: Expr::Const(1),
        bias: None,
    };
    let p = b.build(vec![T::Leaf(OpKind::MmadL1(Box::new(m)))]);
    let mut ledger = Ledger::new();
    let r = run_observed(&p, &config, &mut ledger).expect("runs");
    r.check_accounting().unwrap();
    ledger.check(&r).unwrap();
    // Stage chunk: 16384 / 128 + 16384 / 64 = 128 + 256 = 384, startup 4.
    // M chunk: 32 x 32 x 1 = 1024, startup 5.
    // MTE1 sent 0 (joins 1), M sent 1 (joins 2).
    // MTE1 c0 [1,385) -> 389; c1 [385,769) -> 773.
    // M c0 starts 389 (its copy): [389,1413) -> 1418.
    // MTE1 c2 goes into c0's half: waits for M's c0, [769,1418) = 649; [1418,1802) -> 1806.
    // M c1 starts 1413 (c1 copied at 773): [1413,2437) -> 2442.
    // MTE1 c3 waits for M's c1: [1802,2442) = 640; [2442,2826) -> 2830.
    // M c2 [2437,3461) -> 3466 (copied at 1806); c3 [3461,4485) -> 4490 = total.
    assert_eq!(r.total_cycles, 4490);
    let m1 = stats(&r, Pipe::Mte1);
    // MTE1: starved 1, busy 4 x 384 = 1536, waits 649 + 640, idle [2826,4490) = 1664.
    assert_eq!(
        (m1.instructions, m1.busy, m1.starved, m1.idle),
        (1, 1536, 1, 1664)
    );
    assert_eq!(
        stall(&r, Pipe::Mte1, Stall::WaitMacro { src: Pipe::M }),
        1289
    );
    let mm = stats(&r, Pipe::M);
    // M: starved [0,2), waits [2,389) = 387, busy 4 x 1024, idle [4485,4490) = 5.
    assert_eq!(
        (mm.instructions, mm.busy, mm.starved, mm.idle),
        (1, 4096, 2, 5)
    );
    assert_eq!(
        stall(&r, Pipe::M, Stall::WaitMacro { src: Pipe::Mte1 }),
        387
    );
}

#[test]
fn mmad_l1_chunking() {
    use super::compiled::chunking;
    // k 512 (32 fractals of 16): a 16384 B, b 32768 B, halves 8192: a fits 256 of k (16
    // fractals), b 128 (8): 4 chunks of 128.
    assert_eq!(chunking(512, 16, (16384, 8192), (32768, 8192)), (4, 128));
    // 5 fractals, at most 4 per chunk: 2 chunks, as equal as whole fractals allow: 48 + 32.
    assert_eq!(chunking(80, 16, (80, 64), (0, 1)), (2, 48));
    // everything fits: one chunk of the whole k (not a multiple of the fractal)
    assert_eq!(chunking(40, 16, (100, 1000), (100, 1000)), (1, 40));
    // not even one fractal fits: one fractal per chunk
    assert_eq!(chunking(64, 16, (1000, 1), (0, 1)), (4, 16));
    assert_eq!(chunking(0, 16, (0, 1), (0, 1)), (1, 0));
}

#[test]
fn runtime_errors_name_op_and_iteration() {
    // index t+1 of a 3-row tensor: out of bounds at t = 2
    let mut b = B::new();
    let t = b.var("t");
    let x = b.tensor("x", &[3, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 1);
    let i = Expr::binary(BinOp::Add, Expr::Var(t), Expr::Const(1)).unwrap();
    let ops = vec![for_(t, 3, vec![load(b.row(x, i), b.b(xb))])];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert_eq!(e.path, "body[0].for.body[0]");
    assert_eq!(e.iteration, ", t=2");
    assert!(e.message.contains("index 3 out of bounds"), "{}", e.message);
    // t=0 sends at 2, t=1 at 5, t=2 reaches the load at 8
    assert_eq!(e.cycle, 8);

    // a flag id computed out of range
    let mut b = B::new();
    let t = b.var("t");
    let id = Expr::binary(BinOp::Mul, Expr::Var(t), Expr::Const(4)).unwrap();
    let ops = vec![for_(
        t,
        2,
        vec![T::Leaf(OpKind::SetFlag {
            src: Pipe::V,
            dst: Pipe::Mte2,
            id,
        })],
    )];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert!(e.message.contains("flag id 4"), "{}", e.message);
    assert_eq!(e.iteration, ", t=1");

    // a negative trip count
    let mut b = B::new();
    let t = b.var("t");
    let ops = vec![for_(t, -2, vec![scalar(1)])];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert!(
        e.message.contains("negative trip count -2"),
        "{}",
        e.message
    );

    // division by zero in an expression
    let mut b = B::new();
    let t = b.var("t");
    let c = Expr::Binary(BinOp::Div, Box::new(Expr::Const(4)), Box::new(Expr::Var(t)));
    let ops = vec![for_(t, 1, vec![T::Leaf(OpKind::Scalar { cycles: c })])];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert!(e.message.contains("division by zero"), "{}", e.message);
    assert_eq!(
        e.to_string(),
        format!("body[0].for.body[0]: {} (cycle 2, t=0)", e.message)
    );
}

#[test]
fn bounds_checks_are_left_out_only_where_they_cannot_fail() {
    use super::compile::compile;
    let big = Expr::Const(1 << 62);
    let mut b = B::new();
    let t = b.var("t");
    let u = b.var("u");
    let x = b.tensor("x", &[4, 64], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 1);
    let t1 = Expr::binary(BinOp::Add, Expr::Var(t), Expr::Const(1)).unwrap();
    // t × 2^62 − t × 2^62: 0 as a linear form, but it overflows at t = 2
    let tb = Expr::binary(BinOp::Mul, Expr::Var(t), big).unwrap();
    let zero = Expr::binary(BinOp::Sub, tb.clone(), tb).unwrap();
    let ops = vec![
        // x[u] before u's loop: u's range is not known there
        load(b.row(x, Expr::Var(u)), b.b(xb)),
        for_(
            t,
            3,
            vec![
                load(b.row(x, Expr::Var(t)), b.b(xb)),
                load(b.row(x, t1.clone()), b.b(xb)),
                T::For {
                    var: u,
                    from: 0,
                    to: t1,
                    body: vec![load(b.row(x, Expr::Var(u)), b.b(xb))],
                },
                load(b.row(x, zero), b.b(xb)),
            ],
        ),
    ];
    let p = b.build(ops);
    let c = compile(&p, &config(), &crate::Addresses::default())
        .ok()
        .unwrap();
    // the gm sources of the five loads, in order: x[u] outside, x[t] (t in 0..=2), x[t + 1]
    // (1..=3 of 4 rows), x[u] (u in 0..=2), the overflowing zero
    let checks: Vec<bool> = c.opnds.iter().step_by(2).map(|o| o.check).collect();
    assert_eq!(checks, [true, false, false, false, true]);
    // the one left in still fails where it must
    let e = run(&p, &config()).unwrap_err();
    assert!(e.message.contains("overflow"), "{}", e.message);
    assert_eq!(e.iteration, ", t=2");
}

#[test]
fn a_guard_proves_the_checks_of_its_branch() {
    use super::compile::compile;
    // for t < 4: if GUARD: load x[t + 1]; else: load x[t - 1] (x has 4 rows); t is variable 0
    let t = Expr::Var(VarId::new(0));
    let build = |guard: &Expr| {
        let mut b = B::new();
        let t = Expr::Var(b.var("t"));
        let x = b.tensor("x", &[4, 64], Dtype::F16);
        let xb = b.buffer("xb", Space::Ub, 64, Dtype::F16, 1);
        let next = Expr::binary(BinOp::Add, t.clone(), Expr::Const(1)).unwrap();
        let prev = Expr::binary(BinOp::Sub, t.clone(), Expr::Const(1)).unwrap();
        let Expr::Var(v) = t else { unreachable!() };
        let ops = vec![for_(
            v,
            4,
            vec![T::If {
                cond: guard.clone(),
                then: vec![load(b.row(x, next), b.b(xb))],
                els: Some(vec![load(b.row(x, prev), b.b(xb))]),
            }],
        )];
        b.build(ops)
    };
    let checks = |p: &Program| -> Vec<bool> {
        let c = compile(p, &config(), &crate::Addresses::default())
            .ok()
            .unwrap();
        c.opnds.iter().step_by(2).map(|o| o.check).collect()
    };
    // t < 3: then t + 1 <= 3, else t = 3 and t - 1 = 2: both proven, and both run
    let p = build(&Expr::binary(BinOp::Lt, t.clone(), Expr::Const(3)).unwrap());
    assert_eq!(checks(&p), [false, false]);
    ok(&p);
    // t % 2 == 1 is not understood: both loads keep their checks
    let odd = Expr::binary(
        BinOp::Eq,
        Expr::binary(BinOp::Rem, t.clone(), Expr::Const(2)).unwrap(),
        Expr::Const(1),
    )
    .unwrap();
    let p = build(&odd);
    assert_eq!(checks(&p), [true, true]);
    // t = 0 is even: the else loads x[-1]
    let e = run(&p, &config()).unwrap_err();
    assert!(
        e.message.contains("index -1 out of bounds"),
        "{}",
        e.message
    );
    assert_eq!(
        (e.path.as_str(), e.iteration.as_str()),
        ("body[0].for.body[0].else[0]", ", t=0")
    );
}

#[test]
fn zero_trip_loop_costs_nothing() {
    let mut b = B::new();
    let t = b.var("t");
    let ops = vec![for_(t, 0, vec![scalar(7)]), scalar(1)];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 1);
    assert_eq!(stats(&r, Pipe::S).instructions, 1);
}

#[test]
fn empty_program() {
    let r = ok(&B::new().build(vec![]));
    assert_eq!(r.total_cycles, 0);
    assert!(r.pipes.iter().all(|p| p.accounted() == 0));
}

#[test]
fn long_loop_is_streamed() {
    // 100k loads of 1024 B: S (3 cycles per iteration) keeps MTE2's queue full, so after the
    // first load joins at 3 (loop [0,2), send [2,3)) MTE2 is busy without a gap for
    // 100k x 16 cycles; the last load completes 10 cycles after its work ends.
    let mut b = B::new();
    let t = b.var("t");
    let x = b.tensor("x", &[1, 512], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 2);
    let ops = vec![for_(
        t,
        100_000,
        vec![load(b.row(x, Expr::Const(0)), b.b(xb))],
    )];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 3 + 1_600_000 + 10);
    let m = stats(&r, Pipe::Mte2);
    assert_eq!(
        (m.instructions, m.busy, m.starved, m.idle),
        (100_000, 1_600_000, 3, 10)
    );
    assert_eq!(stats(&r, Pipe::S).instructions, 100_000);
}

#[test]
fn observer_sees_every_instruction_in_time_order() {
    // The flag chain plus an mmad_l1: every started instruction is issued once and started
    // once, flag ids are reported, and the event cycles never go backwards.
    let mut b = B::new();
    let x = b.tensor("x", &[1, 512], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 1);
    let a = b.buffer("a", Space::L1, 256, Dtype::F16, 1);
    let c = b.buffer("c", Space::L0c, 256, Dtype::F32, 1);
    let m = Mmad {
        a: b.b(a),
        b: b.b(a),
        c: b.b(c),
        m: Expr::Const(16),
        n: Expr::Const(16),
        k: Expr::Const(16),
        init: Expr::Const(1),
        bias: None,
    };
    let ops = vec![
        load(b.row(x, Expr::Const(0)), b.b(xb)),
        set(Pipe::Mte2, Pipe::V, 3),
        wait(Pipe::Mte2, Pipe::V, 3),
        vop(VecOp::Vexp, vec![b.b(xb)], b.b(xb)),
        T::Leaf(OpKind::MmadL1(Box::new(m))),
        scalar(3),
    ];
    let p = b.build(ops);
    #[derive(Default)]
    struct Rec {
        last: u64,
        issued: Vec<(u64, Pipe, Option<u32>, usize)>,
        started: Vec<u64>,
    }
    impl Observer for Rec {
        fn on_issue(&mut self, i: &Issue<'_>) {
            assert!(i.cycle >= self.last);
            self.last = i.cycle;
            self.issued.push((i.seq, i.pipe, i.flag_id, i.slots.len()));
        }
        fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
            assert!(start >= self.last && complete >= start);
            self.last = start;
            self.started.push(seq);
        }
    }
    let mut rec = Rec::default();
    let r = run_observed(&p, &config(), &mut rec).unwrap();
    let pipes: Vec<_> = rec.issued.iter().map(|i| (i.1, i.2, i.3)).collect();
    assert_eq!(
        pipes,
        vec![
            (Pipe::Mte2, None, 2),
            (Pipe::Mte2, Some(3), 0),
            (Pipe::V, Some(3), 0),
            (Pipe::V, None, 2),
            (Pipe::Mte1, None, 3),
            (Pipe::M, None, 3),
            (Pipe::S, None, 0),
        ]
    );
    let mut started = rec.started.clone();
    started.sort();
    assert_eq!(started, (0..7).collect::<Vec<u64>>());
    assert_eq!(r.instructions(), 7);
}

#[test]
fn composed_observers_each_see_every_call_in_order() {
    // (&mut A, (&mut B, ())): each part sees exactly the calls a lone observer sees, in the
    // same order, and watching does not change the run.
    let mut b = B::new();
    let t = b.var("t");
    let x = b.tensor("x", &[4, 512], Dtype::F16);
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 2);
    let ops = vec![for_(
        t,
        4,
        vec![
            load(b.row(x, Expr::Var(t)), b.b(xb)),
            set(Pipe::Mte2, Pipe::V, 0),
            wait(Pipe::Mte2, Pipe::V, 0),
            vop(VecOp::Vexp, vec![b.b(xb)], b.b(xb)),
        ],
    )];
    let p = b.build(ops);
    #[derive(Default)]
    struct Log(Vec<(char, u64, u64)>);
    impl Observer for Log {
        fn on_issue(&mut self, i: &Issue<'_>) {
            self.0.push(('i', i.seq, i.cycle));
        }
        fn on_start(&mut self, seq: u64, start: u64, _: u64) {
            self.0.push(('s', seq, start));
        }
    }
    let alone = {
        let mut a = Log::default();
        let r = run_observed(&p, &config(), &mut a).unwrap();
        (r, a.0)
    };
    let (mut a, mut b2) = (Log::default(), Log::default());
    let mut pair = (&mut a, (&mut b2, ()));
    let r = run_observed(&p, &config(), &mut pair).unwrap();
    assert_eq!(r, alone.0);
    assert_eq!(a.0, alone.1);
    assert_eq!(b2.0, alone.1);
    assert_eq!(a.0.len(), 2 * 16);
}
