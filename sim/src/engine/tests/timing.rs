//! The timing rules on small programs: a move's work and startup, flags between pipes and the
//! overlap they leave, a full queue stalling S, loops and their slots, ifs, zero-trip and long
//! (streamed) loops.

use super::*;

#[test]
fn single_load() {
    let mut b = B::new();
    let (x, xb) = b.x_and_xb(1, 512, 1);
    let ops = vec![load(b.row(x, Expr::Const(0)), b.b(xb))];
    let r = ok(&b.build(ops));
    // S sends at 0 (busy [0,1)); it joins MTE2 at 1; 1024 B / 64 = 16 cycles of work, busy
    // [1,17), completes at 1 + 10 + 16 = 27.
    assert_eq!(r.total_cycles, 27);
    assert_eq!(totals(&r, Pipe::Mte2), (1, 16, 1, 10));
    let s = stats(&r, Pipe::S);
    assert_eq!((s.busy, s.idle, s.instructions), (1, 26, 0));
    assert_eq!(stats(&r, Pipe::V).idle, 27);
    assert_eq!(r.cores[0].overlap_cycles, 0);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
    assert_eq!(r.cores[0].pipes.len(), 7);
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
    // MTE2: load0, set, load1
    assert_eq!(totals(&r, Pipe::Mte2), (3, 32, 1, 75 - 43));
    assert_eq!(stall(&r, Pipe::Mte2, Stall::Drain), 10);
    assert_eq!(totals(&r, Pipe::V), (3, 4, 3, 75 - 36));
    assert_eq!(flag_stall(&r, Pipe::V, Pipe::Mte2, 0), 26);
    assert_eq!(stall(&r, Pipe::V, Stall::Drain), 3);
    // MTE3: wait, store
    assert_eq!(totals(&r, Pipe::Mte3), (2, 32, 31, 5));
    assert_eq!(flag_stall(&r, Pipe::Mte3, Pipe::V, 1), 7);
    // Overlap: MTE2 [27,43) with V [29,33) = 4 and with MTE3 [38,43) = 5 -> 9.
    assert_eq!(r.cores[0].overlap_cycles, 9);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
}

#[test]
fn queue_full_stalls_scalar() {
    // Four loads of 1024 B on MTE2 with queue_depth 2.
    let mut b = B::new();
    let (x, xb) = b.x_and_xb(4, 512, 1);
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
    assert_eq!(totals(&r, Pipe::Mte2), (4, 64, 1, 10));
}

#[test]
fn loop_costs_and_slots() {
    // for t in 0..3: load x[t] -> xb (multi 2); S: 2 loop cycles + 1 issue per iteration.
    let (mut b, t) = B::with_t();
    let (x, xb) = b.x_and_xb(3, 64, 2);
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
    assert_eq!(totals(&r, Pipe::Mte2), (3, 6, 3 + 1 + 1, 10));
    // operands: src (gm, slot 0), dst (xb: iterations completed mod 2)
    let slots: Vec<_> = rec.issues.iter().map(|i| i.3.clone()).collect();
    assert_eq!(slots, vec![vec![0, 0], vec![0, 1], vec![0, 0]]);
    let cycles: Vec<_> = rec.issues.iter().map(|i| (i.1, i.2[0])).collect();
    assert_eq!(cycles, vec![(2, 0), (5, 1), (8, 2)]);
    assert_eq!(rec.starts, vec![(0, 3, 15), (1, 6, 18), (2, 9, 21)]);
}

#[test]
fn explicit_slot_and_if() {
    let (mut b, t) = B::with_t();
    let (x, xb) = b.x_and_xb(2, 64, 2);
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
fn zero_trip_loop_costs_nothing() {
    let (b, t) = B::with_t();
    let ops = vec![for_(t, 0, vec![scalar(7)]), scalar(1)];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 1);
    assert_eq!(stats(&r, Pipe::S).instructions, 1);
}

#[test]
fn empty_program() {
    let r = ok(&B::new().build(vec![]));
    assert_eq!(r.total_cycles, 0);
    assert!(r.cores[0].pipes.iter().all(|p| p.accounted() == 0));
}

#[test]
fn long_loop_is_streamed() {
    // 100k loads of 1024 B: S (3 cycles per iteration) keeps MTE2's queue full, so after the
    // first load joins at 3 (loop [0,2), send [2,3)) MTE2 is busy without a gap for
    // 100k x 16 cycles; the last load completes 10 cycles after its work ends.
    let (mut b, t) = B::with_t();
    let (x, xb) = b.x_and_xb(1, 512, 2);
    let ops = vec![for_(
        t,
        100_000,
        vec![load(b.row(x, Expr::Const(0)), b.b(xb))],
    )];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 3 + 1_600_000 + 10);
    assert_eq!(totals(&r, Pipe::Mte2), (100_000, 1_600_000, 3, 10));
    assert_eq!(stats(&r, Pipe::S).instructions, 100_000);
}
