//! The reuse-level example of HIVM's PlanMemory design as shipped in `programs/reuse_levels.yaml`: DMA double
//! buffers A and D, vector buffers B and C in a loop, six slots in a UB that holds five.

use planner::{plan_program, PlacedBy, PlanOptions, Planned, ScopeMode};
use sim::{Program, Space};

fn program() -> Program {
    let (name, text) = crate::shipped_programs()
        .into_iter()
        .find(|(n, _)| n == "reuse_levels.yaml")
        .expect("programs/reuse_levels.yaml is shipped");
    sim::load_program(&text, &name, &crate::config(), &[]).unwrap()
}

fn at_level(p: &Program, max_level: u8) -> Planned {
    let opts = PlanOptions {
        max_level,
        ..PlanOptions::default()
    };
    let planned = plan_program(p, &crate::config(), &opts).unwrap();
    planned
        .validate(p, &crate::config())
        .unwrap_or_else(|v| panic!("level {max_level}: {v:#?}"));
    let ub = planned.plan.scope(Space::Ub).unwrap();
    assert_eq!(ub.mode, ScopeMode::Reuse, "the example must need reuse");
    assert!(ub.required > ub.capacity);
    planned
}

fn offs(planned: &Planned, p: &Program, name: &str) -> Vec<u64> {
    planned.plan.buffer(crate::buf(p, name)).offsets.clone()
}

fn placed(planned: &Planned, p: &Program, name: &str) -> PlacedBy {
    planned.plan.buffer(crate::buf(p, name)).placed_by
}

#[test]
fn level2_c_reuses_b() {
    let p = program();
    let planned = at_level(&p, 2);
    assert_eq!(offs(&planned, &p, "C"), offs(&planned, &p, "B"));
    assert_eq!(placed(&planned, &p, "C"), PlacedBy::Level(2));
    // no DMA bytes are shared: A and D keep four slots of their own
    let dma: Vec<u64> = ["A", "D"]
        .iter()
        .flat_map(|n| offs(&planned, &p, n))
        .collect();
    for v in ["B", "C"] {
        assert!(!dma.contains(&offs(&planned, &p, v)[0]), "{v}");
    }
    assert!(planned.upgraded.is_empty());
}

#[test]
fn level1_upgrades_c_to_a_double_buffer_over_a() {
    let p = program();
    let planned = at_level(&p, 1);
    let a = offs(&planned, &p, "A");
    assert_eq!(a.len(), 2);
    assert_eq!(offs(&planned, &p, "C"), a, "C takes both of A's slots");
    assert_eq!(placed(&planned, &p, "C"), PlacedBy::Level(1));
    assert_eq!(planned.upgraded, vec![crate::buf(&p, "C")]);
    assert_ne!(offs(&planned, &p, "C"), offs(&planned, &p, "B"));
}

#[test]
fn level0_c_reuses_one_slot_of_a() {
    let p = program();
    let planned = at_level(&p, 0);
    let c = offs(&planned, &p, "C");
    assert_eq!(c.len(), 1, "C stays a single buffer");
    assert!(offs(&planned, &p, "A").contains(&c[0]));
    assert_eq!(placed(&planned, &p, "C"), PlacedBy::Level(0));
    assert!(planned.upgraded.is_empty());
}
