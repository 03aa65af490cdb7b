//! `compare` plans, synchronises and runs once per level, in the order asked; a level that
//! overflows is recorded and the comparison goes on.

use crate::{config, load, opts};
use pipeline::LevelOutcome;
use sim::Space;

#[test]
fn levels_in_the_order_asked_with_overflows_recorded() {
    let p = load("programs/reuse_levels.yaml");
    let levels = pipeline::compare(&p, &config(), &[0, 2, 1], &opts()).unwrap();
    assert_eq!(
        levels.iter().map(|l| l.level).collect::<Vec<_>>(),
        [0, 2, 1]
    );
    let runs: Vec<&sim::RunResult> = levels
        .iter()
        .map(|l| match &l.outcome {
            LevelOutcome::Ran(s) => {
                assert_eq!(s.parts[0].planned.plan.level, l.level);
                &s.result
            }
            LevelOutcome::Overflow(e) => panic!("level {}: {e}", l.level),
        })
        .collect();
    let cycles: Vec<u64> = runs.iter().map(|r| r.total_cycles).collect();
    // level 0 shares A's slot with C, so the next load waits for the add: slower
    assert!(cycles[0] > cycles[1].max(cycles[2]), "{cycles:?}");
    // levels 2 and 1 differ only in addresses: the same vector work but for the bank
    // conflicts those addresses cause
    let v_work = |r: &sim::RunResult| {
        let core = &r.cores[0];
        let v = core.pipe(sim::Pipe::V).unwrap();
        v.busy - core.bank_conflict_cycles.unwrap_or(0)
    };
    assert_eq!(v_work(runs[1]), v_work(runs[2]));

    // too small a UB for every level: each overflows, none stops the others
    let mut o = opts();
    o.plan.capacities = vec![(Space::Ub, 32 * 1024)];
    let levels = pipeline::compare(&p, &config(), &[2, 1, 0], &o).unwrap();
    assert_eq!(levels.len(), 3);
    assert!(levels
        .iter()
        .all(|l| matches!(l.outcome, LevelOutcome::Overflow(_))));
}
