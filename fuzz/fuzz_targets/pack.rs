//! `pack`: arbitrary bytes as a MiniMalloc CSV instance for the placement core.
//!
//! bytes → UTF-8 (invalid input is skipped) → `planner::pack::csv::parse`; an instance that
//! parses is placed by fast mode, then by exact mode (0.05 s time limit) at two small
//! capacities derived from it, the lower bound (no minimising) and twice it (minimising, two
//! threads), as `npusim pack` drives them (src/pack.rs). Every placement returned goes through
//! `planner::pack::validate`, and the answers are checked against each other:
//!
//! - no placement is lower than the lower bound;
//! - `Feasible` comes with a placement of height ≤ the capacity; `Infeasible` is wrong when the
//!   fast placement fits; a height proven minimal is no higher than the fast one;
//! - the placement written as CSV (`csv::write`) reads back as the same instance with every
//!   buffer fixed at its offset.
//!
//! An instance whose fixed buffers collide has no valid placement: for it the solvers only have
//! to return, and exact mode to say `Infeasible`.
//!
//! Any violation is a panic, so libFuzzer reports it like a crash.

#![no_main]

#[path = "edge_numbers.rs"]
mod edge_numbers;

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use planner::pack::exact::{self, ExactOptions, Outcome};
use planner::pack::{bound::lower_bound, csv, fast, validate, Instance, Solution};
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((inst, columns)) = csv::parse(text) else {
        return;
    };
    let lb = lower_bound(&inst).bytes;
    if !fixed_buffers_fit(&inst) {
        // no placement is valid: the solvers must still return, and exact must say so
        let _ = fast::solve(&inst);
        let opts = ExactOptions {
            time_limit: Some(Duration::from_secs_f64(0.05)),
            ..Default::default()
        };
        let r = exact::solve(&inst, lb, &opts);
        assert_eq!(
            r.outcome,
            Outcome::Infeasible,
            "exact: fixed buffers collide"
        );
        return;
    }

    let f = fast::solve(&inst).solution;
    check(&inst, &f, None, "fast");
    assert!(
        f.height >= lb,
        "fast: height {} below the lower bound {lb}",
        f.height
    );
    round_trip(&inst, columns, &f);

    for (capacity, minimize, threads) in [(lb, false, 1), (lb.saturating_mul(2), true, 2)] {
        let opts = ExactOptions {
            time_limit: Some(Duration::from_secs_f64(0.05)),
            threads,
            minimize,
        };
        let r = exact::solve(&inst, capacity, &opts);
        let what = format!("exact at capacity {capacity} (minimize {minimize})");
        if let Some(s) = &r.solution {
            let cap = (r.outcome == Outcome::Feasible).then_some(capacity);
            check(&inst, s, cap, &what);
            assert!(
                s.height >= lb,
                "{what}: height {} below the lower bound {lb}",
                s.height
            );
            if r.optimal {
                assert!(
                    s.height <= f.height,
                    "{what}: height {} proven minimal, but fast mode found {}",
                    s.height,
                    f.height
                );
            }
        }
        match r.outcome {
            Outcome::Feasible => {
                assert!(r.solution.is_some(), "{what}: feasible without a placement")
            }
            Outcome::Infeasible => assert!(
                f.height > capacity,
                "{what}: proven infeasible, but fast mode fits at height {}",
                f.height
            ),
            Outcome::Unknown => {}
        }
    }
});

/// Whether the fixed buffers alone are a valid placement (when they collide, nothing is).
fn fixed_buffers_fit(inst: &Instance) -> bool {
    let fixed: Vec<_> = inst
        .buffers
        .iter()
        .filter(|b| b.fixed.is_some())
        .cloned()
        .collect();
    let offsets: Vec<u64> = fixed.iter().map(|b| b.fixed.unwrap()).collect();
    validate(&Instance::new(fixed), &offsets, None).is_ok()
}

/// The validator accepts the placement, and its height is what the offsets reach.
fn check(inst: &Instance, s: &Solution, capacity: Option<u64>, what: &str) {
    if let Err(v) = validate(inst, &s.offsets, capacity) {
        panic!("{what}: the placement fails its validator: {v:?}");
    }
    let height = inst
        .buffers
        .iter()
        .zip(&s.offsets)
        .map(|(b, &o)| o as u128 + b.size as u128)
        .max()
        .unwrap_or(0);
    assert_eq!(
        s.height as u128, height,
        "{what}: height is not max(offset + size)"
    );
}

/// The written placement reads back as the instance with every buffer fixed at its offset.
fn round_trip(inst: &Instance, columns: csv::Columns, s: &Solution) {
    let text = csv::write(inst, columns, s);
    let back = match csv::parse(&text) {
        Ok((back, _)) => back,
        Err(e) => panic!("the written placement does not read back: {e:?}\n{text}"),
    };
    assert_eq!(back.len(), inst.len(), "round trip: buffer count");
    for ((a, b), &o) in inst.buffers.iter().zip(&back.buffers).zip(&s.offsets) {
        let mut want = a.clone();
        want.fixed = Some(o);
        assert_eq!(&want, b, "round trip changed a buffer");
    }
}

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    edge_numbers::mutate(data, size, max_size, seed)
});
