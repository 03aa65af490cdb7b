//! The independent plan validator: every shipped program's plans pass, at every level, in both
//! liveness modes and at a capacity that forces reuse; hand-made bad plans of small programs are
//! each rejected with the right violation.

use crate::{buf, config, load, shipped_parts};
use planner::validate::Occurrence;
use planner::{plan_program, validate, LivenessMode, Plan, PlanOptions, Violation};
use sim::{Program, Space};

const HEAD: &str = "kernel: k\ncore: aiv\nsync: manual\nparams: { n: 256 }\n\
gm:\n  x: { shape: [4, n], dtype: f16 }\n  y: { shape: [4, n], dtype: f16 }\n";

fn program(rest: &str) -> Program {
    load(&format!("{HEAD}{rest}"))
}

fn check(p: &Program, plan: &Plan) -> Result<(), Vec<Violation>> {
    validate(p, &config(), plan)
}

fn planned(p: &Program) -> Plan {
    plan_program(p, &config(), &Default::default())
        .unwrap()
        .plan
}

fn set(plan: &mut Plan, p: &Program, name: &str, offsets: &[u64]) {
    plan.buffers[buf(p, name).index()].offsets = offsets.to_vec();
}

fn at(path: &str, iteration: &str) -> Occurrence {
    Occurrence {
        path: path.into(),
        iteration: iteration.into(),
    }
}

/// a, b, c of 512 bytes each, sequential offsets 0, 512, 1024.
fn chain() -> (Program, Plan) {
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
    let plan = planned(&p);
    assert_eq!(plan.buffer(buf(&p, "c")).offsets, [1024]);
    (p, plan)
}

#[test]
fn every_shipped_plan_validates_at_every_level_and_under_reuse() {
    let config = config();
    let mut reused = 0;
    for (name, p) in shipped_parts() {
        for liveness in [LivenessMode::Precise, LivenessMode::Scoped] {
            for max_level in [2u8, 1, 0] {
                let opts = PlanOptions {
                    max_level,
                    liveness,
                    ..Default::default()
                };
                let plan = plan_program(&p, &config, &opts).unwrap().plan;
                assert_eq!(check(&p, &plan), Ok(()), "{name} {liveness:?} {max_level}");
                // halfway between the peak and the sequential plan: first fit must reuse
                // (not for a program that pins its buffers with `at:`: nothing to reuse)
                let pinned = p.buffers.iter().any(|b| b.at.is_some());
                let capacities: Vec<(Space, u64)> = plan
                    .scopes
                    .iter()
                    .filter(|s| !pinned && s.peak_live < s.used)
                    .map(|s| {
                        let c = (s.peak_live + (s.used - s.peak_live) / 2) / s.align * s.align;
                        (s.space, c.max(s.peak_live))
                    })
                    .collect();
                if capacities.is_empty() {
                    continue;
                }
                let opts = PlanOptions { capacities, ..opts };
                if let Ok(p2) = plan_program(&p, &config, &opts) {
                    reused += 1;
                    assert_eq!(check(&p, &p2.plan), Ok(()), "{name} {opts:?}");
                }
            }
        }
    }
    assert!(reused > 0, "no shipped program was planned with reuse");
}

#[test]
fn reuse_between_disjoint_lifetimes_is_accepted() {
    let (p, mut plan) = chain();
    set(&mut plan, &p, "c", &[0]); // c is written after a's last read
    assert_eq!(check(&p, &plan), Ok(()));
}

#[test]
fn an_op_overwriting_the_input_it_reads_is_accepted() {
    // inplace: vexp reads a and writes b over it in the same op
    let (p, mut plan) = chain();
    set(&mut plan, &p, "b", &[0]);
    assert_eq!(check(&p, &plan), Ok(()));
}

#[test]
fn a_live_value_overwritten_by_another_buffer_is_rejected() {
    let p = program(
        r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1]", dst: b }
  - vadd: { ins: [a, b], out: c }
  - store: { src: c, dst: "y[0]" }
"#,
    );
    let mut plan = planned(&p);
    assert_eq!(check(&p, &plan), Ok(()));
    set(&mut plan, &p, "b", &[256]); // over the top half of a, while a waits for the vadd
    let want = Violation::Clobbered {
        value: "a".into(),
        value_slot: 0,
        by: "b".into(),
        by_slot: 0,
        start: 256,
        end: 512,
        written: at("body[0]", ""),
        overwritten: at("body[1]", ""),
        read: at("body[2]", ""),
    };
    assert_eq!(check(&p, &plan), Err(vec![want]));
    let msg = check(&p, &plan).unwrap_err()[0].to_string();
    assert_eq!(
        msg,
        "buffer a slot 0, written by body[0], is overwritten at bytes [256, 512) by b slot 0 in body[1] before body[2] reads it"
    );
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
    let mut plan = planned(&p);
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
    let mut plan = planned(&p);
    // s has a's address by design: one entry, no overlap violation
    assert_eq!(
        plan.buffer(buf(&p, "s")).offsets,
        plan.buffer(buf(&p, "a")).offsets
    );
    assert_eq!(check(&p, &plan), Ok(()));
    // u's value is never live with a's, but unique forbids sharing anyway
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
    let mut plan = planned(&p);
    set(&mut plan, &p, "s", &[4096]);
    assert!(matches!(
        check(&p, &plan).unwrap_err()[..],
        [Violation::ShareMismatch { .. }]
    ));
}

#[test]
fn values_within_one_iteration_may_share_a_value_carried_around_the_loop_may_not() {
    let p = program(
        r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  acc: { scope: ub, shape: [n], dtype: f16 }
body:
  - vdup: { scalar: 0, out: acc }
  - for: { var: t, to: 4 }
    body:
      - load: { src: "x[t]", dst: a }
      - store: { src: a, dst: "y[t]" }
      - load: { src: "x[t]", dst: b }
      - vadd: { ins: [acc, b], out: acc }
  - store: { src: acc, dst: "y[0]" }
"#,
    );
    let mut plan = planned(&p);
    let offset = |plan: &Plan, name: &str| plan.buffer(buf(&p, name)).offsets[0];
    // a and b live one after the other in every iteration (what precise liveness shares)
    let a = offset(&plan, "a");
    set(&mut plan, &p, "b", &[a]);
    assert_eq!(check(&p, &plan), Ok(()));
    // acc carries its value from one iteration to the next: a over it clobbers it at t = 0,
    // and the vadd of the same iteration reads it
    let acc = offset(&plan, "acc");
    set(&mut plan, &p, "a", &[acc]);
    let errs = check(&p, &plan).unwrap_err();
    assert_eq!(
        errs[0],
        Violation::Clobbered {
            value: "acc".into(),
            value_slot: 0,
            by: "a".into(),
            by_slot: 0,
            start: acc,
            end: acc + 512,
            written: at("body[0]", ""),
            overwritten: at("body[1].for.body[0]", "t=0"),
            read: at("body[1].for.body[3]", "t=0"),
        },
        "{errs:#?}"
    );
}
