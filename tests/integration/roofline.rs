//! The roofline bounds docs/calibration.md quotes, derived by hand from the built-in configs'
//! rates: the busy cycles of the bounding pipes of the vector add and the 1024³ matmul, cold
//! and warm.

use serde_json::Value;

fn run(args: &[&str]) -> Value {
    crate::json_of("run", args)
}

fn busy(doc: &Value, pipe: &str) -> u64 {
    doc["pipes"][pipe]["busy"].as_u64().unwrap()
}

#[test]
fn the_vector_add_is_bound_by_its_loads() {
    // 128 tiles, two 32 KiB loads each. Warm: every line hits, 256 × ceil(32768 /
    // min(110, 110)) = 256 × 298 = 76,288 busy cycles on MTE2. Cold: every line misses, but
    // one core's MTE2 runs one load at a time, so each reads HBM alone at min(110, 768 / 1):
    // the path's rate, the same 76,288 (the misses cost latency, not busy cycles).
    let warm = run(&["programs/vec_add_db.yaml", "--l2", "warm"]);
    assert_eq!(busy(&warm, "MTE2"), 76_288);
    assert_eq!(warm["memory"]["miss_bytes"], 0);
    let cold = run(&["programs/vec_add_db.yaml"]);
    assert_eq!(busy(&cold, "MTE2"), 76_288);
    assert_eq!(cold["memory"]["miss_bytes"], 256 * 32768);
    // the store side: 128 × 32768 / min(64, 86) = 65,536 on MTE3 either way. V: 128 adds of
    // 128 repeats × 1 = 16,384, plus the bank conflicts of the sequential plan: every slot
    // starts on a multiple of 512 B, so each add's xb and yb blocks fall in the same bank
    // groups, 2 input blocks a group: 2 cycles a repeat, + 128 × 128 = 16,384; and slot 1's yb
    // (131072) and zb (163840) are both in layer 2 (of 64 KiB), so each of the 64 odd tiles'
    // adds reads a bank it writes, + 1 a repeat: 64 × 128 = 8,192. 40,960 in all, below
    // MTE2's 76,288: the loads bound the add, cold or warm.
    assert_eq!(busy(&cold, "MTE3"), 65_536);
    assert_eq!(busy(&cold, "V"), 40_960);
}

#[test]
fn the_blocked_matmul_reads_24_mib_and_keeps_the_cube_busy_for_262144_cycles() {
    // 1024³ f16 on a 16 × 16 × 16 cube: 64³ fractal steps = 262,144 cycles on M. 32 output
    // blocks × 4 L1 tiles, each a 128 × 256 tile of A (64 KiB) and a 256 × 256 tile of B
    // (128 KiB), loaded `layout: nz` at 96 B/cycle when they hit: warm, 128 × (ceil(65536 / 96)
    // + ceil(131072 / 96)) = 128 × (683 + 1366) = 262,272 on MTE2. Cold, the first touch of
    // each of A's and B's 2 MiB misses: 4 MiB of misses, 20 MiB of hits; the misses, alone on
    // the core's HBM, stream at min(96, 768 / 1) on the 910B, min(96, 1024 / 1) on the 910:
    // the same 262,272.
    for (program, config) in [
        ("programs/matmul_blocked.yaml", "ascend910b"),
        ("docs/examples/matmul_blocked_910.yaml", "ascend910"),
    ] {
        let warm = run(&[program, "--config", config, "--l2", "warm"]);
        assert_eq!(busy(&warm, "M"), 262_144, "{program}");
        assert_eq!(busy(&warm, "MTE2"), 262_272, "{program}");
        assert_eq!(warm["hazards"], serde_json::json!([]), "{program}");
        let cold = run(&[program, "--config", config]);
        let m = &cold["memory"];
        assert_eq!(m["miss_bytes"], 4 << 20, "{program}");
        assert_eq!(m["hit_bytes"], 20 << 20, "{program}");
        assert_eq!(busy(&cold, "MTE2"), 262_272, "{program}");
    }
}
