//! mmad sizes evaluated at run time are checked against the operands, as the loader checks
//! constant ones: an `mmad` or `mmad_l1` whose m × k, k × n or m × n is larger than `a`, `b` or
//! `c` stops the run with an error naming the op, the iteration and the bound (not a multiply
//! of 10^8 × 8 × 8 elements costed at some 10^14 cycles). On
//! `sim/tests/golden/two_block_config.yaml`: issue_cycles 1, loop_cycles 2, queue_depth 2.

use sim::engine::RunError;
use sim::Config;

const CONFIG: &str = include_str!("../golden/two_block_config.yaml");

/// Runs `op` in a two-iteration loop over `t` on the cube core, after a prologue that writes its
/// operands (the loader refuses reading a buffer nothing wrote). The prologue is S's sends of
/// two loads (gm -> l1) and, for `mmad`, two copies (l1 -> l0a, l1 -> l0b), one cycle each; no
/// queue fills (depth 2, at most two entries a pipe).
fn run(name: &str, op: &str) -> RunError {
    let config: Config = sim::load_config(CONFIG, "two_block_config.yaml").expect("config");
    // a program with mmad_l1 may not declare l0a / l0b buffers: it stages through them itself
    let l1 = op.starts_with("mmad_l1");
    let (l0, copies) = if l1 {
        ("", "")
    } else {
        (
            "  a0: { scope: l0a, shape: [64], dtype: f16 }\n\
             \x20 b0: { scope: l0b, shape: [64], dtype: f16 }\n",
            "  - copy: { src: a1, dst: a0 }\n  - copy: { src: b1, dst: b0 }\n",
        )
    };
    let text = format!(
        "kernel: {name}\ncore: aic\nsync: manual\n\
         gm:\n  x: {{ shape: [64], dtype: f16 }}\n\
         buffers:\n{l0}\
         \x20 a1: {{ scope: l1, shape: [64], dtype: f16 }}\n\
         \x20 b1: {{ scope: l1, shape: [64], dtype: f16 }}\n\
         \x20 c0: {{ scope: l0c, shape: [64], dtype: f32 }}\n\
         body:\n  - load: {{ src: x, dst: a1 }}\n  - load: {{ src: x, dst: b1 }}\n{copies}\
         \x20 - for: {{ var: t, to: 2 }}\n    body:\n      - {op}\n"
    );
    let program = sim::load::load_program(&text, name, &config, &[])
        .unwrap_or_else(|e| panic!("{name} loads: {e}\n{text}"));
    sim::engine::run(&program, &config).expect_err("the run stops")
}

#[test]
fn a_k_beyond_a_is_a_run_time_error_at_its_iteration() {
    // k = 8 at t = 0 (a: 8 × 8 = 64 of 64 elements, b: 8 × 8 of 64, fits), 10^8 at t = 1:
    // a needs m × k = 8 × 10^8 = 800,000,000 elements of 64. S: the prologue's four sends
    // [0, 4), iteration 0's loop cycles [4, 6), sends the mmad [6, 7); iteration 1's loop
    // cycles [7, 9): it reaches the mmad at 9.
    let e = run(
        "mmad_k",
        "mmad: { a: a0, b: b0, c: c0, m: 8, n: 8, k: \"8 + t * 99999992\", init: true }",
    );
    assert_eq!(e.path, "body[4].for.body[0]");
    assert_eq!(e.iteration, ", t=1");
    assert_eq!(e.cycle, 9);
    assert_eq!(
        e.message,
        "mmad a \"a0\" is too small: 64 elements, but m × k = 8 × 100000000 needs 800000000"
    );
}

#[test]
fn an_n_beyond_b_is_found_after_a_fits() {
    // m = 1, k = 8: a needs 8 of 64; n = 8 + 56 t: at t = 1, 64, so b needs k × n = 8 × 64 =
    // 512 of 64 (c, m × n = 64, would fit). Reached at 9 as above.
    let e = run(
        "mmad_n",
        "mmad: { a: a0, b: b0, c: c0, m: 1, n: \"8 + 56 * t\", k: 8, init: true }",
    );
    assert_eq!((e.iteration.as_str(), e.cycle), (", t=1", 9));
    assert_eq!(
        e.message,
        "mmad b \"b0\" is too small: 64 elements, but k × n = 8 × 64 needs 512"
    );
}

#[test]
fn constant_sizes_over_a_slice_that_shrinks_are_checked_when_it_runs() {
    // m = k = 8 need 64 elements of a; a is a0[0 : 64 - 8 t], 64 elements at t = 0 and 56 at
    // t = 1, which the loader cannot know: the run stops at t = 1, cycle 9 (as above).
    let e = run(
        "mmad_slice",
        "mmad: { a: \"a0[0 : 64 - 8 * t]\", b: b0, c: c0, m: 8, n: 8, k: 8, init: true }",
    );
    assert_eq!((e.iteration.as_str(), e.cycle), (", t=1", 9));
    assert_eq!(
        e.message,
        "mmad a \"a0[0 : 64 - 8 * t]\" is too small: 56 elements, but m × k = 8 × 8 needs 64"
    );
}

#[test]
fn an_mmad_l1_k_beyond_its_l1_operand_stops_before_staging() {
    // mmad_l1 is two instructions (MTE1's staging, then M's part). S: the prologue's two sends
    // [0, 2), iteration 0's loop cycles [2, 4), sends [4, 5) and [5, 6); iteration 1's loop
    // cycles [6, 8): it reaches the op at 8 and stops before sending its staging, whose chunks
    // k would set.
    let e = run(
        "mmad_l1_k",
        "mmad_l1: { a: a1, b: b1, c: c0, m: 8, n: 8, k: \"8 + t * 99999992\", init: true }",
    );
    assert_eq!(e.path, "body[2].for.body[0]");
    assert_eq!((e.iteration.as_str(), e.cycle), (", t=1", 8));
    assert_eq!(
        e.message,
        "mmad_l1 a \"a1\" is too small: 64 elements, but m × k = 8 × 100000000 needs 800000000"
    );
}
