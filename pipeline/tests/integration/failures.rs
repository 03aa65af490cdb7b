//! Every way the pipeline can stop is a value the caller inspects, never a panic or a print:
//! an overflow (a finding), a read before the first write, a capacity for a scope the core
//! lacks and a run-time error (bad input), each with typed ids.

use crate::{config, load, opts};
use pipeline::Failure;
use sim::expr::Expr;
use sim::program::OpKind;
use sim::{OpId, Space};

#[test]
fn an_overflow_is_a_finding_with_hivms_message() {
    let p = load("tests/fixtures/overflow.yaml");
    let e = pipeline::simulate(&p, &config(), &opts()).unwrap_err();
    assert!(e.is_finding() && !e.is_internal());
    let Failure::Overflow(plan_error) = &e else {
        panic!("{e:?}")
    };
    // xb and yb (128 KiB each) are live together at the vadd, whose zb can take a dying
    // input's bytes: 256 KiB = 2,097,152 bits needed, 192 KiB = 1,572,864 available
    assert!(plan_error
        .to_string()
        .starts_with("ub overflow, requires 2097152 bits while 1572864 bits available!"));
}

#[test]
fn a_read_before_the_first_write_names_the_buffer_and_op() {
    let mut p = load("programs/vec_add_sb_manual.yaml");
    // the loader refuses such a program: remove the first load after loading
    let first_load = p
        .ops
        .iter()
        .position(|o| matches!(o.kind, OpKind::Load { .. }))
        .unwrap();
    let OpKind::Load { dst, .. } = &p.ops[first_load].kind else {
        unreachable!()
    };
    let sim::program::Ref::Buffer(buffer) = dst.base else {
        panic!("a load into a buffer")
    };
    p.ops[first_load].kind = OpKind::Scalar {
        cycles: Expr::Const(1),
    };
    let e = pipeline::simulate(&p, &config(), &opts()).unwrap_err();
    let Failure::ReadBeforeWrite { buffer: b, op } = e else {
        panic!("{e:?}")
    };
    assert_eq!(b, buffer);
    assert_eq!(p.buffer(b).name, "xb");
    // the vadd reads xb
    assert_eq!(p.op(op).kind.name(), "vadd");
    assert!(op > OpId::new(first_load));
}

#[test]
fn a_capacity_for_a_missing_scope_is_bad_input() {
    let p = load("programs/vec_add_db.yaml");
    let mut o = opts();
    o.plan.capacities = vec![(Space::L1, 1024), (Space::Ub, 131072), (Space::L0c, 64)];
    let e = pipeline::simulate(&p, &config(), &o).unwrap_err();
    assert!(!e.is_finding() && !e.is_internal());
    assert_eq!(
        e,
        Failure::NoSuchScope {
            core: p.core,
            scopes: vec![Space::L1, Space::L0c]
        }
    );
}

#[test]
fn a_run_time_error_names_its_op_and_iteration() {
    let p = load("docs/examples/runtime_error.yaml");
    let e = pipeline::simulate(&p, &config(), &opts()).unwrap_err();
    let Failure::Run(run) = e else {
        panic!("{e:?}")
    };
    assert_eq!(p.op(run.op).kind.name(), "for");
    assert_eq!(run.path, "body[0].for.body[0]");
    assert!(
        run.message.contains("negative trip count"),
        "{}",
        run.message
    );
    assert_eq!(run.iteration, ", t=3");
}

#[test]
fn a_plan_is_checked_by_the_validator_when_asked() {
    // every shipped program's plan passes the independent validator at every level
    for entry in std::fs::read_dir(crate::root().join("programs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension() != Some(std::ffi::OsStr::new("yaml")) {
            continue; // programs/sweeps/ holds sweep files
        }
        let file = format!("programs/{}", path.file_name().unwrap().to_string_lossy());
        let k = crate::load_kernel(&file);
        for level in [2, 1, 0] {
            let mut o = opts().plan;
            o.max_level = level;
            let planned = pipeline::plan_kernel(&k, &config(), &o, true)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(planned.len(), k.parts.len(), "{file}");
        }
    }
}

#[test]
fn buffers_the_program_pins_on_the_same_bytes_are_not_a_planner_bug() {
    // bank_conflict.yaml pins every buffer with `at:`; pinning ya onto xa's bytes makes the
    // second load overwrite the first before the add reads it. The validator sees xa's value
    // clobbered, but the planner only honoured the pins: the run goes on, as without the
    // validator (found by the mutation property test)
    let text = std::fs::read_to_string(crate::root().join("programs/bank_conflict.yaml")).unwrap();
    let moved = text.replacen("at: 8192 }", "at: 0 }", 1);
    assert_ne!(moved, text, "bank_conflict.yaml pins ya at 8192");
    let p = sim::load_program(&moved, "pinned.yaml", &config(), &[]).unwrap();
    let sim = pipeline::simulate(&p, &config(), &opts()).unwrap_or_else(|e| panic!("{e}"));
    assert!(sim.result.total_cycles > 0);
    // the same overlap of buffers the planner placed would still be its bug: the validator
    // runs on every other shipped plan in a_plan_is_checked_by_the_validator_when_asked
}

#[test]
fn a_hazard_suggests_its_synchronisation_only_in_a_manual_part() {
    // two blocks store the same row: a WAW across cores. Written with its own flags, the
    // hazard says which cross-core flags order it; in a sync: auto part the flags are the
    // sync pass's, and nothing is suggested
    let body = "gm:\n  x: { shape: [64], dtype: f32 }\n  y: { shape: [2, 64], dtype: f32 }\nbuffers:\n  b: { scope: ub, shape: [64], dtype: f32 }\nbody:\n  - load: { src: x, dst: b }\n";
    let manual = format!(
        "kernel: k\ncore: aiv\nsync: manual\nlaunch: {{ blocks: 2 }}\n{body}  - set_flag: {{ src: mte2, dst: mte3, id: 0 }}\n  - wait_flag: {{ src: mte2, dst: mte3, id: 0 }}\n  - store: {{ src: b, dst: \"y[0]\" }}\n"
    );
    let auto = format!(
        "kernel: k\ncore: aiv\nlaunch: {{ blocks: 2 }}\n{body}  - store: {{ src: b, dst: \"y[0]\" }}\n"
    );
    let hazards = |text: &str| {
        let k = sim::load_kernel(text, "k.yaml", &config(), &[], None).unwrap();
        let sim = pipeline::simulate_kernel(&k, &config(), &opts()).unwrap();
        sim.hazards.unwrap()
    };
    let h = hazards(&manual);
    assert_eq!(h.len(), 1, "{h:#?}");
    assert_eq!(
        h[0].fix.as_ref().map(|f| f.to_string()).as_deref(),
        Some(
            "cross_set: { mode: 0, pipe: mte3, id: 0 } after k.yaml:14:5 store { src: b, dst: \
             \"y[0]\" }; cross_wait: { pipe: mte3, id: 0 } before k.yaml:14:5 store { src: b, \
             dst: \"y[0]\" }"
        )
    );
    let h = hazards(&auto);
    assert_eq!(h.len(), 1, "{h:#?}");
    assert_eq!(h[0].kind, sim::race::HazardKind::Waw);
    assert_eq!(h[0].fix, None);
}
