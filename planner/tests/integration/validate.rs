//! The independent plan validator: every shipped program's sequential plan passes; hand-made
//! bad plans are each rejected with the right violation.

use crate::{buf, config, load, shipped_programs};
use planner::{
    liveness, plan_program, validate, validate_with_touch, Interval, LivenessMode, Plan, Violation,
};
use sim::{Program, Space};

const HEAD: &str = "kernel: k\ncore: aiv\nsync: manual\nparams: { n: 256 }\n\
gm:\n  x: { shape: [4, n], dtype: f16 }\n  y: { shape: [4, n], dtype: f16 }\n";

fn program(rest: &str) -> Program {
    load(&format!("{HEAD}{rest}"))
}

fn lifetimes(p: &Program, mode: LivenessMode) -> Vec<Vec<Interval>> {
    liveness(p, mode).unwrap().buffer_lifetimes()
}

fn check(p: &Program, plan: &Plan) -> Result<(), Vec<Violation>> {
    validate(p, &config(), plan, &lifetimes(p, LivenessMode::Precise))
}

fn set(plan: &mut Plan, p: &Program, name: &str, offsets: &[u64]) {
    plan.buffers[buf(p, name).index()].offsets = offsets.to_vec();
}

/// a [0, 1], b [1, 2], c [3, 4]; 512 bytes each; sequential offsets 0, 512, 1024.
fn chain() -> (Program, Plan) {
    // 0 load a | 1 vexp a->b | 2 store b | 3 load c | 4 store c
    let p = program(
        r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - vexp: { ins: [a], out: b }
  - store: { src: b, dst: "y[0]" }
  - load: { src: "x[1]", dst: c }
  - store: { src: c, dst: "y[1]" }
"#,
    );
    let plan = plan_program(&p, &config(), &Default::default())
        .unwrap()
        .plan;
    assert_eq!(plan.buffer(buf(&p, "c")).offsets, [1024]);
    (p, plan)
}

#[test]
fn every_shipped_sequential_plan_validates() {
    for (name, text) in shipped_programs() {
        let p = sim::load_program(&text, &name, &config(), &[]).unwrap();
        let plan = plan_program(&p, &config(), &Default::default())
            .unwrap()
            .plan;
        for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
            let r = validate(&p, &config(), &plan, &lifetimes(&p, mode));
            assert_eq!(r, Ok(()), "{name} {mode:?}");
        }
    }
}

#[test]
fn reuse_between_disjoint_lifetimes_is_accepted() {
    let (p, mut plan) = chain();
    set(&mut plan, &p, "c", &[0]); // c [3, 4] takes a's bytes, a died at 1
    assert_eq!(check(&p, &plan), Ok(()));
}

#[test]
fn overlapping_lifetimes_sharing_bytes_are_rejected() {
    let (p, mut plan) = chain();
    set(&mut plan, &p, "b", &[256]); // b [1, 2] over the top half of a [0, 1]
    assert_eq!(
        check(&p, &plan),
        Err(vec![Violation::LiveOverlap {
            a: "a".into(),
            slot_a: 0,
            b: "b".into(),
            slot_b: 0,
            start: 256,
            end: 512,
            positions: Interval::new(1, 1),
        }])
    );
    let msg = check(&p, &plan).unwrap_err()[0].to_string();
    assert!(msg.contains("[256, 512)") && msg.contains("1..=1"), "{msg}");
}

#[test]
fn a_single_shared_position_is_allowed_only_for_listed_pairs() {
    let (p, mut plan) = chain();
    set(&mut plan, &p, "b", &[0]); // a [0, 1] and b [1, 2] touch at 1: an inplace pair
    let l = lifetimes(&p, LivenessMode::Precise);
    assert!(validate(&p, &config(), &plan, &l).is_err());
    let pair = [(buf(&p, "b"), buf(&p, "a"))];
    assert_eq!(validate_with_touch(&p, &config(), &plan, &l, &pair), Ok(()));
}

#[test]
fn misaligned_offset_is_rejected() {
    let (p, mut plan) = chain();
    set(&mut plan, &p, "c", &[1536 + 16]); // ub aligns to 32
    assert_eq!(
        check(&p, &plan),
        Err(vec![Violation::Misaligned {
            buffer: "c".into(),
            slot: 0,
            offset: 1552,
            align: 32,
        }])
    );
}

#[test]
fn slot_outside_the_capacity_is_rejected() {
    let (p, mut plan) = chain();
    set(&mut plan, &p, "c", &[196608 - 256]);
    assert_eq!(
        check(&p, &plan),
        Err(vec![Violation::OutOfCapacity {
            buffer: "c".into(),
            slot: 0,
            start: 196352,
            end: 196864,
            capacity: 196608,
        }])
    );
    // the plan's capacity is what counts (it may be overridden)
    let (p, mut plan) = chain();
    plan.scopes
        .iter_mut()
        .find(|s| s.space == Space::Ub)
        .unwrap()
        .capacity = 1024;
    assert_eq!(
        check(&p, &plan),
        Err(vec![Violation::OutOfCapacity {
            buffer: "c".into(),
            slot: 0,
            start: 1024,
            end: 1536,
            capacity: 1024,
        }])
    );
}

#[test]
fn overlapping_slots_of_a_multi_buffer_are_rejected() {
    let p = program(
        r#"
body:
  - for: { var: t, to: 4 }
    buffers:
      xb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
    body:
      - load: { src: "x[t]", dst: xb }
      - store: { src: xb, dst: "y[t]" }
"#,
    );
    let mut plan = plan_program(&p, &config(), &Default::default())
        .unwrap()
        .plan;
    assert_eq!(check(&p, &plan), Ok(()));
    set(&mut plan, &p, "xb", &[0, 256]);
    assert_eq!(
        check(&p, &plan),
        Err(vec![Violation::SlotsOverlap {
            buffer: "xb".into(),
            a: 0,
            b: 1,
            start: 256,
            end: 512,
        }])
    );
    set(&mut plan, &p, "xb", &[0]);
    assert_eq!(
        check(&p, &plan),
        Err(vec![Violation::SlotCount {
            buffer: "xb".into(),
            got: 1,
            want: 2,
        }])
    );
}

#[test]
fn unique_buffers_never_share_and_share_members_are_exempt() {
    // 0 load a | 1 store a | 2 load u | 3 store u | 4 load s | 5 store s
    let p = program(
        r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  u: { scope: ub, shape: [n], dtype: f16, unique: true }
  s: { scope: ub, shape: [n], dtype: f16, share: a }
body:
  - load: { src: "x[0]", dst: a }
  - store: { src: a, dst: "y[0]" }
  - load: { src: "x[1]", dst: u }
  - store: { src: u, dst: "y[1]" }
  - load: { src: "x[2]", dst: s }
  - store: { src: s, dst: "y[2]" }
"#,
    );
    let mut plan = plan_program(&p, &config(), &Default::default())
        .unwrap()
        .plan;
    // s has a's address by design: one entry, no overlap violation
    assert_eq!(
        plan.buffer(buf(&p, "s")).offsets,
        plan.buffer(buf(&p, "a")).offsets
    );
    assert_eq!(check(&p, &plan), Ok(()));
    // u's lifetime [2, 3] is disjoint from a's, but unique forbids sharing anyway
    set(&mut plan, &p, "u", &[0]);
    assert_eq!(
        check(&p, &plan),
        Err(vec![
            Violation::UniqueShared {
                a: "u".into(),
                slot_a: 0,
                b: "a".into(),
                slot_b: 0,
                start: 0,
                end: 512,
            },
            Violation::UniqueShared {
                a: "u".into(),
                slot_a: 0,
                b: "s".into(),
                slot_b: 0,
                start: 0,
                end: 512,
            },
        ])
    );
    // a share member away from its target
    let mut plan = plan_program(&p, &config(), &Default::default())
        .unwrap()
        .plan;
    set(&mut plan, &p, "s", &[4096]);
    assert!(matches!(
        check(&p, &plan).unwrap_err()[..],
        [Violation::ShareMismatch { .. }]
    ));
}

#[test]
fn the_liveness_mode_decides_what_may_share() {
    // 0 for-begin | 1 load a | 2 store a | 3 load b | 4 store b | 5 for-end
    let p = program(
        r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
body:
  - for: { var: t, to: 4 }
    body:
      - load: { src: "x[t]", dst: a }
      - store: { src: a, dst: "y[t]" }
      - load: { src: "x[t]", dst: b }
      - store: { src: b, dst: "y[t]" }
"#,
    );
    let mut plan = plan_program(&p, &config(), &Default::default())
        .unwrap()
        .plan;
    set(&mut plan, &p, "b", &[0]);
    // precise: a [1, 2], b [3, 4] within the iteration: sharing is fine
    let precise = lifetimes(&p, LivenessMode::Precise);
    assert_eq!(validate(&p, &config(), &plan, &precise), Ok(()));
    // scoped: both declared outside the loop, both [0, 5]
    let scoped = lifetimes(&p, LivenessMode::Scoped);
    let errs = validate(&p, &config(), &plan, &scoped).unwrap_err();
    assert!(matches!(
        &errs[..],
        [Violation::LiveOverlap { positions, .. }] if *positions == Interval::new(0, 5)
    ));
}
