//! The reuse planner (`planner::place`) on the conformance cases marked `reuse` (and the two
//! overflow cases) and on the reuse-level example of programs/reuse_levels.yaml. Inplace and touch-allowed pairs are written
//! by hand here (the inplace analysis is wired separately).

use crate::buf;
use crate::conformance::{expectations, suite_dir};
use planner::{
    liveness, place, plan, validate, LivenessMode, PlacedBy, Plan, PlanError, PlanOptions,
    ScopeMode,
};
use sim::{BufferId, Program, Space};

fn conformance_config() -> sim::Config {
    let text = std::fs::read_to_string(suite_dir().join("config.yaml")).unwrap();
    sim::load_config(&text, "config.yaml").unwrap()
}

fn case(id: &str) -> Program {
    let c = expectations().into_iter().find(|c| c.id == id).unwrap();
    let file = c.file.unwrap();
    let text = std::fs::read_to_string(suite_dir().join(&file)).unwrap();
    sim::load_program(&text, &file, &conformance_config(), &[]).unwrap()
}

fn pairs(p: &Program, names: &[(&str, &str)]) -> Vec<(BufferId, BufferId)> {
    names.iter().map(|(a, b)| (buf(p, a), buf(p, b))).collect()
}

/// Plans and validates (inplace pairs are allowed to touch, as are the touch pairs).
fn run(
    p: &Program,
    config: &sim::Config,
    inplace: &[(&str, &str)],
    touch: &[(&str, &str)],
    opts: &PlanOptions,
) -> Result<Plan, PlanError> {
    let live = liveness(p, LivenessMode::Precise).unwrap();
    let inplace = pairs(p, inplace);
    let touch = pairs(p, touch);
    let out = plan(p, config, &live, &inplace, &touch, opts)?;
    if let Err(v) = validate(p, config, &out) {
        panic!("{}: invalid plan: {v:#?}\n{out:#?}", p.kernel);
    }
    Ok(out)
}

fn offs(plan: &Plan, p: &Program, name: &str) -> Vec<u64> {
    plan.buffer(buf(p, name)).offsets.clone()
}

fn conf(id: &str, inplace: &[(&str, &str)], touch: &[(&str, &str)]) -> (Program, Plan) {
    let p = case(id);
    let plan = run(
        &p,
        &conformance_config(),
        inplace,
        touch,
        &PlanOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{id}: {e}"));
    (p, plan)
}

#[test]
fn t06_refused_multi_buffer_pair_shares_both_slots() {
    let (p, plan) = conf("T06", &[], &[("a1", "a0")]);
    assert_eq!(plan.scope(Space::Ub).unwrap().mode, ScopeMode::Reuse);
    assert_eq!(offs(&plan, &p, "a0"), [0, 98304]);
    assert_eq!(offs(&plan, &p, "a1"), [0, 98304]);
    assert_eq!(plan.buffer(buf(&p, "a1")).placed_by, PlacedBy::Level(1));
}

#[test]
fn t35_t36_t37_level_reuse_succeeds() {
    let (p, plan) = conf("T35", &[("dst2", "src2")], &[("dst1", "src1")]);
    // the single src2 (with dst2 inplaced into it) is upgraded over src1's four slots
    assert_eq!(plan.buffer(buf(&p, "src2")).placed_by, PlacedBy::Level(1));
    assert_eq!(offs(&plan, &p, "src2")[0], offs(&plan, &p, "src1")[0]);
    assert_eq!(offs(&plan, &p, "dst2"), offs(&plan, &p, "src2"));
    conf("T36", &[], &[("dst1", "src1"), ("dst2", "src2")]);
    conf("T37", &[], &[("dst1", "src1"), ("dst2", "src2")]);
}

#[test]
fn t45_if_else_relations() {
    let (p, plan) = conf("T45", &[("a2", "a0")], &[]);
    assert_eq!(plan.scope(Space::Ub).unwrap().mode, ScopeMode::Reuse);
    assert_eq!(offs(&plan, &p, "a2"), offs(&plan, &p, "a0"));
    assert_eq!(plan.buffer(buf(&p, "a2")).placed_by, PlacedBy::Inplace);
    assert_eq!(offs(&plan, &p, "a4"), offs(&plan, &p, "a1"));
    assert_eq!(offs(&plan, &p, "a6"), offs(&plan, &p, "a1"));
}

#[test]
fn t78_l0c_reuse_keeps_loop_pairs_apart() {
    let (p, plan) = conf("T78", &[], &[]);
    assert_eq!(plan.scope(Space::L0c).unwrap().mode, ScopeMode::Reuse);
    assert_eq!(plan.scope(Space::L1).unwrap().mode, ScopeMode::Sequential);
    assert_ne!(offs(&plan, &p, "c1"), offs(&plan, &p, "c2"));
    assert_ne!(offs(&plan, &p, "c3"), offs(&plan, &p, "c4"));
    assert_eq!(offs(&plan, &p, "alloc"), [0]);
    assert_eq!(offs(&plan, &p, "alloc_0"), [32768]);
}

#[test]
fn t79_dma_reuse_warning() {
    let (p, plan) = conf("T79", &[], &[]);
    let c = expectations().into_iter().find(|c| c.id == "T79").unwrap();
    assert_eq!(plan.warnings, vec![c.warning.unwrap()]);
    assert_eq!(offs(&plan, &p, "alloc"), [0]);
    assert_eq!(offs(&plan, &p, "alloc_0"), [0]);
    assert_eq!(
        plan.buffer(buf(&p, "alloc_0")).placed_by,
        PlacedBy::Level(0)
    );
}

#[test]
fn t43_t44_overflow_texts() {
    for (id, inplace) in [("T43", vec![("res", "arg0_ub")]), ("T44", vec![])] {
        let p = case(id);
        let c = expectations().into_iter().find(|c| c.id == id).unwrap();
        let err = run(
            &p,
            &conformance_config(),
            &inplace,
            &[],
            &PlanOptions::default(),
        )
        .unwrap_err()
        .to_string();
        let want = c.error.unwrap();
        assert!(err.starts_with(&want), "{id}: {err}");
        assert!(err.contains("peak liveness at position"), "{id}: {err}");
    }
}

#[test]
fn t44_lists_the_buffers_live_at_the_peak() {
    let p = case("T44");
    let err = run(&p, &conformance_config(), &[], &[], &PlanOptions::default()).unwrap_err();
    let PlanError::Overflow { largest, peak, .. } = err;
    let names: Vec<&str> = largest.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["b1", "b2"]);
    assert!(peak.unwrap().1.contains("load"));
}

/// Seed 004: A and D double-buffered DMA buffers, vector buffers in one loop. A chain
/// A -> B -> C -> E -> D: a vector buffer touches its input at the op that reads it (Stage 0
/// forbids sharing there), so the vector buffer that can reuse B is E, two ops later.
const SEED_004: &str = r#"
kernel: seed004
core: aiv
sync: manual
gm:
  x: { shape: [4, 1024], dtype: f32 }
  y: { shape: [4, 1024], dtype: f32 }
body:
  - for: { var: i, to: 4 }
    buffers:
      A: { scope: ub, shape: [1024], dtype: f32, multi: 2 }
      B: { scope: ub, shape: [1024], dtype: f32 }
      C: { scope: ub, shape: [1024], dtype: f32 }
      E: { scope: ub, shape: [1024], dtype: f32 }
      D: { scope: ub, shape: [1024], dtype: f32, multi: 2 }
    body:
      - load: { src: "x[i]", dst: A }
      - vexp: { ins: [A], out: B }
      - vexp: { ins: [B], out: C }
      - vexp: { ins: [C], out: E }
      - vexp: { ins: [E], out: D }
      - store: { src: D, dst: "y[i]" }
"#;

const SLOT: u64 = 4096;

fn seed004(cap: u64, max_level: u8) -> Result<(Program, planner::Placement), PlanError> {
    let config = crate::config();
    let p = sim::load_program(SEED_004, "seed004.yaml", &config, &[]).unwrap();
    let live = liveness(&p, LivenessMode::Precise).unwrap();
    let opts = PlanOptions {
        max_level,
        capacities: vec![(Space::Ub, cap)],
        ..Default::default()
    };
    let out = place(&p, &config, &live, &[], &[], &opts)?;
    validate(&p, &config, &out.plan).unwrap_or_else(|v| panic!("{v:#?}"));
    Ok((p, out))
}

#[test]
fn seed004_level2_vector_reuses_vector() {
    // 7 slots need 28672 B; at 6 slots pass C fits: E takes B's bytes, DMA bytes stay alone
    let (p, out) = seed004(6 * SLOT, 2).unwrap();
    let plan = &out.plan;
    assert_eq!(plan.scope(Space::Ub).unwrap().mode, ScopeMode::Reuse);
    assert_eq!(offs(plan, &p, "E"), offs(plan, &p, "B"));
    assert_eq!(plan.buffer(buf(&p, "E")).placed_by, PlacedBy::Level(2));
    let dma: Vec<u64> = ["A", "D"].iter().flat_map(|n| offs(plan, &p, n)).collect();
    for v in ["B", "C", "E"] {
        assert!(
            !dma.contains(&offs(plan, &p, v)[0]),
            "{v} reuses a DMA slot"
        );
    }
    assert!(
        plan.warnings.is_empty(),
        "pass C was enough: {:?}",
        plan.warnings
    );
    assert!(out.upgraded.is_empty());
}

#[test]
fn seed004_level1_upgrades_c_over_a() {
    // at 5 slots C finds no fresh bytes and no vector bytes free: level 1 makes it a double
    // buffer over A's two slots instead of a single buffer on one of them
    let (p, out) = seed004(5 * SLOT, 2).unwrap();
    let plan = &out.plan;
    let a = offs(plan, &p, "A");
    assert_eq!(offs(plan, &p, "C")[0], a[0]);
    assert_eq!(plan.buffer(buf(&p, "C")).placed_by, PlacedBy::Level(1));
    assert_eq!(out.upgraded, vec![(buf(&p, "C"), a)]);
    assert_eq!(offs(plan, &p, "E"), offs(plan, &p, "B"));
    assert_eq!(plan.warnings.len(), 1, "pass D reused DMA bytes");
    assert!(plan.warnings[0].contains("needs 196608 bits while 163840 bits available!"));
}

#[test]
fn seed004_level0_lets_c_reuse_one_slot_of_a() {
    let (p, out) = seed004(5 * SLOT, 0).unwrap();
    let plan = &out.plan;
    let a = offs(plan, &p, "A");
    let c = offs(plan, &p, "C");
    assert!(a.contains(&c[0]), "A {a:?} C {c:?}");
    assert_eq!(plan.buffer(buf(&p, "C")).placed_by, PlacedBy::Level(0));
    assert!(out.upgraded.is_empty());
    // lifetimes only: everything fits in 3 slots
    assert!(plan.scope(Space::Ub).unwrap().used <= 3 * SLOT);
    seed004(3 * SLOT, 0).unwrap();
}

#[test]
fn seed004_too_small_overflows() {
    let err = seed004(2 * SLOT, 2).unwrap_err().to_string();
    // the level-0 peak: three slots (A's, B's and C/E's) = 3 * 4096 B
    assert!(
        err.starts_with("ub overflow, requires 98304 bits while 65536 bits available!"),
        "{err}"
    );
}

#[test]
fn every_conformance_program_plans_validly() {
    // seq cases too: whatever inplace says, no-inplace plans must be valid
    for c in expectations() {
        let Some(file) = &c.file else { continue };
        if c.load_error || c.mode == "err" {
            continue;
        }
        let p = case(&c.id);
        // refused multi-buffer load->store inplace pairs may touch (HIVM inplacableBufferPairs)
        let touch: &[(&str, &str)] = match c.id.as_str() {
            "T06" => &[("a1", "a0")],
            "T35" | "T36" | "T37" => &[("dst1", "src1"), ("dst2", "src2")],
            _ => &[],
        };
        // without inplace these overflow (HIVM inplaces the output into its dying input)
        let inplace: &[(&str, &str)] = match c.id.as_str() {
            "T51" => &[("alloc_1", "alloc")],
            _ => &[],
        };
        run(
            &p,
            &conformance_config(),
            inplace,
            touch,
            &PlanOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn when_everything_fits_the_plan_is_the_sequential_one() {
    let config = conformance_config();
    let mut compared = 0;
    for c in expectations() {
        let Some(_) = &c.file else { continue };
        if c.load_error || c.mode != "seq" {
            continue;
        }
        let p = case(&c.id);
        // without its inplace pairs a case may not fit (T51): nothing to compare
        let Ok(ours) = run(&p, &config, &[], &[], &PlanOptions::default()) else {
            continue;
        };
        // the running sum: every scope sequential, each using exactly what it requires, every
        // buffer's slots back to back in ascending order
        for s in &ours.scopes {
            assert_eq!(s.mode, ScopeMode::Sequential, "{} {:?}", c.id, s.space);
            assert_eq!(s.used, s.required, "{} {:?}", c.id, s.space);
        }
        for b in &ours.buffers {
            for w in b.offsets.windows(2) {
                assert!(w[0] + b.bytes <= w[1], "{}: {:?}", c.id, b);
            }
        }
        compared += 1;
    }
    assert!(compared >= 30, "{compared}");
}

#[test]
fn fixed_buffers_stay_put_and_are_stepped_over() {
    let config = crate::config();
    let text = r#"
kernel: fixed_reuse
core: aiv
sync: manual
gm:
  x: { shape: [1024], dtype: f32 }
buffers:
  F: { scope: ub, shape: [1024], dtype: f32, at: 0 }
  A: { scope: ub, shape: [1024], dtype: f32 }
  B: { scope: ub, shape: [1024], dtype: f32 }
body:
  - load: { src: x, dst: F }
  - load: { src: x, dst: A }
  - store: { src: A, dst: x }
  - load: { src: x, dst: B }
  - store: { src: B, dst: x }
  - store: { src: F, dst: x }
"#;
    let p = sim::load_program(text, "f.yaml", &config, &[]).unwrap();
    let opts = PlanOptions {
        max_level: 2,
        capacities: vec![(Space::Ub, 2 * SLOT)],
        ..Default::default()
    };
    let plan = run(&p, &config, &[], &[], &opts).unwrap();
    assert_eq!(offs(&plan, &p, "F"), [0]);
    assert_eq!(plan.buffer(buf(&p, "F")).placed_by, PlacedBy::Fixed);
    assert_eq!(offs(&plan, &p, "A"), [SLOT]);
    assert_eq!(offs(&plan, &p, "B"), [SLOT]);
    assert_eq!(plan.warnings.len(), 1);
    // roomy: sequential, stepping over F
    let plan = run(&p, &config, &[], &[], &PlanOptions::default()).unwrap();
    assert_eq!(plan.scope(Space::Ub).unwrap().mode, ScopeMode::Sequential);
    assert_eq!(offs(&plan, &p, "A"), [SLOT]);
    assert_eq!(offs(&plan, &p, "B"), [2 * SLOT]);
}
