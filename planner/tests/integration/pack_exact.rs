//! The exact mode of the placement core (`planner::pack::exact`): oracles with a known
//! optimum, proven infeasibility, fixed offsets, determinism and the time limit. Every
//! placement goes through the independent validator.

use planner::pack::exact::{solve, ExactOptions, ExactResult, Outcome};
use planner::pack::{bound::lower_bound, csv, gen, validate, Instance, PackBuffer};
use std::time::Duration;

fn parse(text: &str) -> Instance {
    csv::parse(text).unwrap().0
}

fn minimize() -> ExactOptions {
    ExactOptions {
        minimize: true,
        ..ExactOptions::default()
    }
}

/// Checks the result's placement against the capacity when it claims feasibility.
fn checked(inst: &Instance, cap: u64, r: &ExactResult) {
    if let Some(s) = &r.solution {
        let limit = (r.outcome == Outcome::Feasible).then_some(cap);
        assert_eq!(validate(inst, &s.offsets, limit), Ok(()));
        assert!(s.height >= r.lower_bound);
    }
    if r.outcome == Outcome::Feasible {
        assert!(r.solution.as_ref().unwrap().height <= cap);
    }
}

/// `omnimalloc/small/*`, `minimalloc/derived/tricky.5`, `minimalloc/examples/input.12`
/// (the generated families and the suites in tests/data), with their optima.
const TINY: [(&str, &str, u64); 9] = [
    ("a.6", "0,0,3,2\n1,2,5,2\n2,0,2,3\n3,3,5,3\n4,1,4,1", 6),
    ("b.6", "0,0,4,2\n1,2,6,2\n2,0,2,3\n3,4,6,3\n4,1,5,1", 6),
    ("c.8", "0,0,5,3\n1,3,8,3\n2,0,3,4\n3,5,8,4\n4,2,6,1", 8),
    (
        "d.9",
        "0,0,5,3\n1,3,8,3\n2,0,3,4\n3,5,8,4\n4,2,6,1\n5,1,7,1",
        9,
    ),
    (
        "e.12",
        "0,10,11,5\n1,3,5,4\n2,7,12,4\n3,5,11,3\n4,1,8,4",
        12,
    ),
    (
        "f.14",
        "0,0,5,4\n1,0,6,3\n2,1,6,2\n3,5,8,5\n4,2,8,4\n5,1,2,5",
        14,
    ),
    (
        "g.7",
        "0,10,11,3\n1,1,6,2\n2,1,3,5\n3,5,12,2\n4,10,12,1\n5,7,9,5",
        7,
    ),
    ("tricky.5", TRICKY, 5),
    (
        "input.12",
        "b1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4",
        12,
    ),
];

const TRICKY: &str = "b0,0,1,3\nb1,0,3,1\nb2,4,5,3\nb3,2,5,1\nb4,1,2,2\nb5,3,4,2\nb6,1,4,1";

fn tiny(body: &str) -> Instance {
    parse(&format!("id,lower,upper,size\n{body}\n"))
}

#[test]
fn tiny_oracles_are_solved_to_their_optimum() {
    for (name, body, opt) in TINY {
        let inst = tiny(body);
        let cap = 1 << 30;
        let r = solve(&inst, cap, &minimize());
        checked(&inst, cap, &r);
        assert_eq!(r.outcome, Outcome::Feasible, "{name}");
        assert!(r.optimal, "{name}: optimality not proven");
        assert_eq!(r.solution.unwrap().height, opt, "{name}");
    }
}

#[test]
fn tricky_is_infeasible_at_the_lower_bound_and_optimal_one_above() {
    let inst = tiny(TRICKY);
    assert_eq!(lower_bound(&inst).bytes, 4);
    for opts in [ExactOptions::default(), minimize()] {
        let r = solve(&inst, 4, &opts);
        assert_eq!(r.outcome, Outcome::Infeasible);
        assert!(!r.optimal);
        assert_eq!(r.lower_bound, 4);
    }
    let r = solve(&inst, 5, &minimize());
    checked(&inst, 5, &r);
    assert_eq!((r.outcome, r.optimal), (Outcome::Feasible, true));
    assert_eq!(r.solution.unwrap().height, 5);
}

#[test]
fn the_readme_example_fits_at_12() {
    let inst = tiny(TINY[8].1);
    let r = solve(&inst, 12, &ExactOptions::default());
    checked(&inst, 12, &r);
    assert_eq!(r.outcome, Outcome::Feasible);
    assert_eq!(
        solve(&inst, 11, &ExactOptions::default()).outcome,
        Outcome::Infeasible
    );
}

#[test]
fn generated_families_are_solved_at_their_optimum() {
    let mut cases: Vec<gen::Generated> = Vec::new();
    for seed in 0..6u64 {
        cases.push(gen::pipeline(
            2 + seed as usize % 4,
            4 + seed as usize * 3,
            seed,
        ));
        cases.push(gen::nested(1 + seed as usize % 4, seed));
        cases.push(gen::guillotine(20 + 8 * seed as usize, 1 << 20, seed));
    }
    for (i, g) in cases.iter().enumerate() {
        let opt = g.optimum.unwrap();
        let r = solve(&g.instance, opt, &ExactOptions::default());
        checked(&g.instance, opt, &r);
        assert_eq!(r.outcome, Outcome::Feasible, "case {i}");
        // with minimize, the height is proven minimal (it equals the bound)
        let m = solve(&g.instance, opt, &minimize());
        assert_eq!(
            (m.outcome, m.optimal),
            (Outcome::Feasible, true),
            "case {i}"
        );
        assert_eq!(m.solution.unwrap().height, opt, "case {i}");
    }
}

#[test]
fn guillotine_tilings_are_solved_at_their_optimum() {
    // perfect tilings: the valley test of the exact mode prunes them (capacity = live total)
    for (n, seed) in [(60, 2), (80, 6), (100, 7), (120, 8)] {
        let g = gen::guillotine(n, 1 << 20, seed);
        let opt = g.optimum.unwrap();
        let r = solve(&g.instance, opt, &ExactOptions::default());
        checked(&g.instance, opt, &r);
        assert_eq!(r.outcome, Outcome::Feasible, "n {n} seed {seed}");
        let two = ExactOptions {
            threads: 2,
            ..ExactOptions::default()
        };
        if n == 60 {
            assert_eq!(r, solve(&g.instance, opt, &two), "n {n} seed {seed}");
        }
    }
}

#[test]
fn results_are_deterministic_across_runs_and_thread_counts() {
    let insts = [
        gen::guillotine(60, 1 << 20, 11).instance,
        gen::random(40, 3).instance,
        tiny(TRICKY),
    ];
    for inst in &insts {
        let lb = lower_bound(inst).bytes;
        for cap in [lb, lb + lb / 20] {
            let one = ExactOptions::default();
            let two = ExactOptions {
                threads: 2,
                ..ExactOptions::default()
            };
            let a = solve(inst, cap, &one);
            checked(inst, cap, &a);
            assert_eq!(a, solve(inst, cap, &one));
            assert_eq!(a, solve(inst, cap, &two));
        }
        let a = solve(inst, 1 << 40, &minimize());
        let b = solve(
            inst,
            1 << 40,
            &ExactOptions {
                threads: 2,
                ..minimize()
            },
        );
        assert_eq!(a, b);
        assert!(a.optimal);
    }
}

#[test]
fn fixed_offsets_are_kept() {
    let mut bufs = vec![
        PackBuffer::new("f", 0, 10, 4),
        PackBuffer::new("a", 0, 5, 4),
        PackBuffer::new("b", 2, 8, 2),
        PackBuffer::new("c", 5, 10, 6),
        PackBuffer::new("d", 0, 10, 2),
    ];
    bufs[0].fixed = Some(4); // in the middle: the others must go around it
    let mut aligned = PackBuffer::new("e", 8, 10, 1);
    aligned.align = 2;
    bufs.push(aligned);
    let inst = Instance::new(bufs);
    let r = solve(&inst, 1 << 20, &minimize());
    checked(&inst, 1 << 20, &r);
    let s = r.solution.unwrap();
    assert_eq!(s.offsets[0], 4);
    assert!(r.optimal);
    // the fixed buffer alone decides: nothing fits below its top
    let r = solve(&inst, 7, &ExactOptions::default());
    assert_eq!(r.outcome, Outcome::Infeasible);

    // two fixed buffers that collide: no placement is valid
    let mut x = PackBuffer::new("x", 0, 4, 4);
    let mut y = PackBuffer::new("y", 2, 6, 4);
    x.fixed = Some(0);
    y.fixed = Some(2);
    let r = solve(&Instance::new(vec![x, y]), 100, &ExactOptions::default());
    assert_eq!((r.outcome, r.solution), (Outcome::Infeasible, None));
}

#[test]
fn alignment_and_degenerate_buffers() {
    let mut bufs = vec![
        PackBuffer::new("a", 0, 4, 3),
        PackBuffer::new("b", 0, 4, 3),
        PackBuffer::new("zero", 0, 4, 0),
        PackBuffer::new("empty", 3, 3, 5),
    ];
    bufs[1].align = 4;
    let inst = Instance::new(bufs);
    let r = solve(&inst, 1 << 20, &minimize());
    checked(&inst, 1 << 20, &r);
    assert!(r.optimal);
    assert_eq!(r.solution.unwrap().height, 6); // b (align 4) at 0, a at 3
    assert!(solve(&Instance::default(), 0, &ExactOptions::default()).outcome == Outcome::Feasible);
}

#[test]
fn a_time_limit_returns_the_best_placement_found() {
    // a perfect packing with many pieces: hard enough that 1 ms rarely suffices in debug,
    // but either outcome is checked
    let g = gen::guillotine(300, 1 << 20, 5);
    let cap = 1 << 20;
    let opts = ExactOptions {
        time_limit: Some(Duration::from_millis(1)),
        ..ExactOptions::default()
    };
    let r = solve(&g.instance, cap, &opts);
    checked(&g.instance, cap, &r);
    match r.outcome {
        Outcome::Unknown => {
            // the greedy incumbent is always there below a few thousand buffers
            let s = r.solution.expect("a placement");
            assert!(s.height > cap);
            assert!(!r.optimal);
        }
        Outcome::Feasible => assert!(r.solution.unwrap().height <= cap),
        Outcome::Infeasible => panic!("a guillotine tiling is feasible at its capacity"),
    }
    // minimize with a time limit: a feasible answer, optimality maybe unproven
    let opts = ExactOptions {
        minimize: true,
        ..opts
    };
    let r = solve(&g.instance, 2 * cap, &opts);
    checked(&g.instance, 2 * cap, &r);
    assert_ne!(r.outcome, Outcome::Infeasible);
    if r.optimal {
        assert_eq!(r.solution.unwrap().height, cap);
    }
}
