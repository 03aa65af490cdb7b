//! Synchronisation gone wrong or done by S: waits nobody satisfies (deadlocks), double and
//! unpaired sets (and the bound on how many are kept), flags set and waited by the scalar unit,
//! `barrier: all`.

use super::*;

#[test]
fn unmatched_wait_deadlocks() {
    let mut b = B::new();
    let (x, xb) = b.x_and_xb(1, 64, 1);
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
    assert_eq!(flag_stall(&r, Pipe::V, Pipe::Mte2, 3), 11);
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
    let (b, t) = B::with_t();
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
    let (x, xb) = b.x_and_xb(1, 64, 1);
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
    assert_eq!(flag_stall(&r, Pipe::S, Pipe::Mte2, 2), 13);
    assert_eq!(stall(&r, Pipe::S, Stall::BarrierAll), 0);
    let s = stats(&r, Pipe::S);
    // set, wait, barrier, scalar
    assert_eq!((s.instructions, s.busy, s.idle), (4, 4, 0));
    let m = stats(&r, Pipe::Mte2);
    // starved [0,1), wait_flag S#0 [1,2), busy [2,4), drain [4,14), idle [14,17)
    assert_eq!((m.starved, m.busy, m.idle, m.instructions), (1, 2, 3, 3));
    assert_eq!(flag_stall(&r, Pipe::Mte2, Pipe::S, 0), 1);
    assert_eq!(stall(&r, Pipe::Mte2, Stall::Drain), 10);
    assert!(r.findings.is_empty());
}

#[test]
fn barrier_all_waits_for_completion() {
    let mut b = B::new();
    let (x, xb) = b.x_and_xb(1, 64, 1);
    let ops = vec![
        load(b.row(x, Expr::Const(0)), b.b(xb)), // [1,3) completes 13
        T::Leaf(OpKind::Barrier(BarrierTarget::All)), // S at 1 waits to 13
        scalar(2),                               // [13,15)
    ];
    let r = ok(&b.build(ops));
    assert_eq!(r.total_cycles, 15);
    assert_eq!(stall(&r, Pipe::S, Stall::BarrierAll), 12);
}
