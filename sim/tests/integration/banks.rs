//! Vector blocks and UB banks (docs/timing.md, "Vector blocks" and "UB banks"): goldens derived
//! by hand on the round-number test config (`sim/tests/golden/test_config.yaml`) with the two
//! optional keys added:
//!
//! - `vector.block_bytes: 32`: 256-byte repeats are 8 blocks;
//! - `ub_banks: { groups: 16, row_bytes: 32, bank_bytes: 1024 }`: the block at UB byte a is in
//!   group (a / 32) mod 16 and bank group + 16 × (a / 16384), so [0, 16384) is banks 0..15 and
//!   [16384, 32768) banks 16..31.
//!
//! vadd costs 1 cycle per repeat, startup 3. The programs first write one element of each of
//! their n buffers with an `sstore` (so that the loader sees them written; S busy [0, n)), then
//! S sends the vadd at n: it joins V at n + 1 and starts there, busy [n + 1, n + 1 + work),
//! completes at n + 1 + 3 + work, so the total is n + 4 + work. f16 buffers of 256 elements are
//! 512 bytes = 16 blocks = 2 repeats.

use sim::engine::RunResult;
use sim::{Config, Pipe};

const TEST_CONFIG: &str = include_str!("../golden/test_config.yaml");
const BANKS: &str = "ub_banks: { groups: 16, row_bytes: 32, bank_bytes: 1024 }\n";

/// The test config with `vector.block_bytes: 32`, and `ub_banks` when `banks`.
fn config(banks: bool) -> Config {
    let mut text = TEST_CONFIG.replace(
        "  repeat_bytes: 256             # estimate\n",
        "  repeat_bytes: 256             # estimate\n  block_bytes: 32\n",
    );
    assert_ne!(text, TEST_CONFIG, "the test config's vector section moved");
    if banks {
        text.push_str(BANKS);
    }
    sim::load_config(&text, "banks_config.yaml").expect("the banks config loads")
}

fn plain_config() -> Config {
    sim::load_config(TEST_CONFIG, "test_config.yaml").expect("the test config loads")
}

fn run(config: &Config, text: &str) -> RunResult {
    let program = sim::load_program(text, "t.yaml", config, &[]).unwrap_or_else(|e| panic!("{e}"));
    let r = sim::run(&program, config).unwrap_or_else(|e| panic!("{e}"));
    r.check_accounting().unwrap();
    r
}

fn v_busy(r: &RunResult) -> u64 {
    r.cores[0].pipe(Pipe::V).expect("a V pipe").busy
}

/// One vadd of x and y into `out`, each 256 f16 at a fixed UB offset.
fn add(x: u64, y: u64, z: u64, out: &str) -> String {
    format!(
        r#"
kernel: add
core: t
sync: manual
buffers:
  x: {{ scope: ub, shape: [256], dtype: f16, at: {x} }}
  y: {{ scope: ub, shape: [256], dtype: f16, at: {y} }}
  z: {{ scope: ub, shape: [256], dtype: f16, at: {z} }}
body:
  - sstore: {{ dst: "x[0]" }}
  - sstore: {{ dst: "y[0]" }}
  - sstore: {{ dst: "z[0]" }}
  - vadd: {{ ins: [x, y], out: {out} }}
"#
    )
}

#[test]
fn strided_operands_cost_their_blocks() {
    let text = r#"
kernel: strided
core: t
sync: manual
buffers:
  x: { scope: ub, shape: [32, 64], dtype: f16 }
  z: { scope: ub, shape: [32, 8], dtype: f16 }
body:
  - sstore: { dst: "x[0, 0]" }
  - sstore: { dst: "z[0, 0]" }
  - vadd: { ins: ["x[0:32, 0:8]", "x[0:32, 8:16]"], out: z }
"#;
    // Each input selects 8 of the 64 columns of each of 32 rows: 32 runs of 8 f16 = 16 bytes,
    // each run ceil(16 / 32) = 1 block, so 32 blocks. z is one run of 32 × 8 × 2 = 512 bytes =
    // 16 blocks. repeats = ceil(32 / (256 / 32)) = 4, work 4 × 1 = 4, total 2 + 4 + 4 = 10.
    let r = run(&config(false), text);
    assert_eq!((v_busy(&r), r.total_cycles), (4, 10));
    assert_eq!(r.cores[0].bank_conflict_cycles, None);
    // Without block_bytes: the largest operand is 512 bytes, ceil(512 / 256) = 2 repeats,
    // total 2 + 4 + 2 = 8 (the rule without blocks, unchanged).
    let r = run(&plain_config(), text);
    assert_eq!((v_busy(&r), r.total_cycles), (2, 8));
}

#[test]
fn contiguous_operands_cost_what_their_bytes_cost() {
    // x, y, z whole: 16 blocks each, ceil(16 / 8) = 2 repeats, as ceil(512 / 256) = 2; total
    // 3 + 4 + 2 = 9 either way.
    let text = add(0, 512, 1024, "z");
    assert_eq!(run(&config(false), &text).total_cycles, 9);
    assert_eq!(run(&plain_config(), &text).total_cycles, 9);
}

#[test]
fn bank_conflicting_placement_of_an_add() {
    // x at 0, y at 512, z at 1024. Repeat 0 reads blocks 0..7 of x (bytes 0, 32, .., 224:
    // groups 0..7) and of y (512 .. 736: groups 16..23 mod 16 = 0..7): 2 reads in each of
    // groups 0..7; it writes z's blocks 0..7 (1024 ..: groups 0..7, 1 each). Everything is
    // below 16384, so bank = group: banks 0..7 are read and written, + 1. Cost max(1, 2, 1) + 1
    // = 3. Repeat 1 is the same on groups 8..15: 3. Work 6; conflict-free work 2 × 1, so 4
    // conflict cycles; total 3 + 4 + 6 = 13.
    let r = run(&config(true), &add(0, 512, 1024, "z"));
    assert_eq!((v_busy(&r), r.total_cycles), (6, 13));
    assert_eq!(r.cores[0].bank_conflict_cycles, Some(4));
}

#[test]
fn conflict_free_placement_of_the_same_add() {
    // x at 0, y at 768, z at 16384. Repeat 0 reads x in groups 0..7 and y (768 / 32 = 24) in
    // groups 8..15: one read per group; it writes z in groups 0..7 of the second layer, banks
    // 16..23, none of them read (banks 0..15). Cost max(1, 1, 1) = 1. Repeat 1: x in 8..15, y
    // in 0..7, z in banks 24..31: 1. Work 2, no conflict cycles, total 3 + 4 + 2 = 9.
    let r = run(&config(true), &add(0, 768, 16384, "z"));
    assert_eq!((v_busy(&r), r.total_cycles), (2, 9));
    assert_eq!(r.cores[0].bank_conflict_cycles, Some(0));
    // Same groups as above but z back in the first layer (1024: banks 0..7 in repeat 0, which
    // x reads): the groups are still spread, the shared bank adds 1 per repeat: work 4.
    let r = run(&config(true), &add(0, 768, 1024, "z"));
    assert_eq!((v_busy(&r), r.cores[0].bank_conflict_cycles), (4, Some(2)));
}

#[test]
fn inplace_add_reads_and_writes_one_bank() {
    // x += y with x at 0 and y at 16640 (second layer, 16640 / 32 = 520, 520 mod 16 = 8).
    // Repeat 0 reads x in groups 0..7 (banks 0..7) and y in groups 8..15 (banks 24..31): one
    // read per group; it writes x's blocks 0..7 back: banks 0..7, read in the same repeat, + 1.
    // Cost max(1, 1, 1) + 1 = 2; repeat 1 likewise (x in 8..15, y in 0..7 = banks 16..23).
    // Work 4, conflict 2, total 3 + 4 + 4 = 11.
    let r = run(&config(true), &add(0, 16640, 1024, "x"));
    assert_eq!((v_busy(&r), r.total_cycles), (4, 11));
    assert_eq!(r.cores[0].bank_conflict_cycles, Some(2));
}

#[test]
fn the_slot_in_use_decides_the_banks() {
    // x has two slots, at 0 (groups 0..7 in repeat 0) and at 2304 (2304 / 32 = 72, mod 16 = 8:
    // groups 8..15); y at 1536 (48 mod 16 = 0: groups 0..7); z at 16384 (second layer, never
    // read). Iteration 0 uses slot 0: x and y share groups 0..7 (then 8..15): 2 reads per
    // group, cost 2 per repeat, work 4. Iteration 1 uses slot 1: spread, work 2. V busy 6,
    // conflict cycles 4 − 2 = 2.
    let text = r#"
kernel: slots
core: t
sync: manual
buffers:
  x: { scope: ub, shape: [256], dtype: f16, multi: 2, at: [0, 2304] }
  y: { scope: ub, shape: [256], dtype: f16, at: 1536 }
  z: { scope: ub, shape: [256], dtype: f16, at: 16384 }
body:
  - sstore: { dst: "x@0[0]" }
  - sstore: { dst: "x@1[0]" }
  - sstore: { dst: "y[0]" }
  - sstore: { dst: "z[0]" }
  - for: { var: i, to: 2 }
    body:
      - vadd: { ins: [x, y], out: z }
"#;
    let r = run(&config(true), text);
    assert_eq!((v_busy(&r), r.cores[0].bank_conflict_cycles), (6, Some(2)));
}

#[test]
fn operands_known_at_issue_cost_as_static_ones() {
    // Rows picked by the loop variable (computed at issue) against the same rows written out:
    // the same placements, so the same V busy time. x at 0 and y at 1024 are [2, 256] f16
    // (1024 bytes each); row i of x starts at 512 i, of y at 1024 + 512 i: same groups, cost 2
    // per repeat (2 reads per group, z at 16384 never read), 2 repeats per row: V busy 8,
    // conflict 4.
    let body = |rows: [&str; 2]| {
        format!(
            r#"
kernel: rows
core: t
sync: manual
buffers:
  x: {{ scope: ub, shape: [2, 256], dtype: f16, at: 0 }}
  y: {{ scope: ub, shape: [2, 256], dtype: f16, at: 1024 }}
  z: {{ scope: ub, shape: [256], dtype: f16, at: 16384 }}
body:
  - sstore: {{ dst: "x[0, 0]" }}
  - sstore: {{ dst: "y[0, 0]" }}
  - sstore: {{ dst: "z[0]" }}
{}
"#,
            rows.join("\n")
        )
    };
    let dynamic = body([
        "  - for: { var: i, to: 2 }\n    body:\n      - vadd: { ins: [\"x[i]\", \"y[i]\"], out: z }",
        "",
    ]);
    let fixed = body([
        "  - vadd: { ins: [\"x[0]\", \"y[0]\"], out: z }",
        "  - vadd: { ins: [\"x[1]\", \"y[1]\"], out: z }",
    ]);
    let (a, b) = (run(&config(true), &dynamic), run(&config(true), &fixed));
    assert_eq!((v_busy(&a), a.cores[0].bank_conflict_cycles), (8, Some(4)));
    assert_eq!((v_busy(&b), b.cores[0].bank_conflict_cycles), (8, Some(4)));
}

#[test]
fn keys_are_validated_with_every_problem_located() {
    let text = TEST_CONFIG.replace(
        "  repeat_bytes: 256             # estimate\n",
        "  repeat_bytes: 256\n  block_bytes: 48\n",
    ) + "ub_banks: { groups: 0, row_bytes: 32, bank_bytes: 1024, rows: 3 }\n";
    let e = sim::load_config(&text, "bad.yaml").expect_err("the keys are wrong");
    let all: Vec<String> = e
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.path, d.message))
        .collect();
    let has = |path: &str, words: &str| {
        assert!(
            all.iter()
                .any(|d| d.starts_with(&format!("{path}: ")) && d.contains(words)),
            "no {path} error with {words:?} in {all:#?}"
        )
    };
    has(
        "vector.block_bytes",
        "block_bytes 48 does not divide repeat_bytes 256",
    );
    has("ub_banks.rows", "rows");
    let text = TEST_CONFIG.replace(
        "  repeat_bytes: 256             # estimate\n",
        "  repeat_bytes: 256\n  block_bytes: 0\n",
    ) + "ub_banks: { groups: 0, row_bytes: 32, bank_bytes: 1024 }\n";
    let e = sim::load_config(&text, "bad.yaml").expect_err("the keys are wrong");
    let all: Vec<String> = e
        .diagnostics
        .iter()
        .map(|d| format!("{}: {} ({:?}:{:?})", d.path, d.message, d.line, d.column))
        .collect();
    assert!(
        all.iter().any(|d| d.starts_with("vector.block_bytes: ")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|d| d.starts_with("ub_banks.groups: ")),
        "{all:#?}"
    );
    assert!(e.diagnostics.iter().all(|d| d.line.is_some()), "{all:#?}");
    // banks without blocks
    let text = TEST_CONFIG.to_string() + BANKS;
    let e = sim::load_config(&text, "bad.yaml").expect_err("ub_banks needs block_bytes");
    assert_eq!(e.diagnostics.len(), 1, "{:?}", e.diagnostics);
    assert_eq!(e.diagnostics[0].path, "ub_banks");
    assert!(e.diagnostics[0]
        .message
        .contains("needs vector.block_bytes"));
}

#[test]
fn layouts_met_again_cost_what_they_cost_the_first_time() {
    // Rows of x are 544 bytes apart, so row r starts in group 17 r mod 16 = r mod 16 and its
    // overlap with y's groups, hence its cost, depends on r. A loop cycling through 12 rows (more
    // than the engine remembers per op) three times costs what the 36 adds written out cost.
    let program = |body: String| {
        format!(
            r#"
kernel: rows
core: t
sync: manual
buffers:
  x: {{ scope: ub, shape: [12, 272], dtype: f16, at: 0 }}
  y: {{ scope: ub, shape: [272], dtype: f16, at: 8192 }}
  z: {{ scope: ub, shape: [272], dtype: f16, at: 16384 }}
body:
  - sstore: {{ dst: "x[0, 0]" }}
  - sstore: {{ dst: "y[0]" }}
  - sstore: {{ dst: "z[0]" }}
{body}
"#
        )
    };
    let looped = program(
        "  - for: { var: i, to: 36 }\n    body:\n      - vadd: { ins: [\"x[i % 12]\", y], out: z }"
            .to_string(),
    );
    let unrolled = program(
        (0..36)
            .map(|i| format!("  - vadd: {{ ins: [\"x[{}]\", y], out: z }}", i % 12))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let (a, b) = (run(&config(true), &looped), run(&config(true), &unrolled));
    assert_eq!(
        (v_busy(&a), a.cores[0].bank_conflict_cycles),
        (v_busy(&b), b.cores[0].bank_conflict_cycles)
    );
    // the rows do cost differently
    let row = |r: usize| {
        let one = program(format!("  - vadd: {{ ins: [\"x[{r}]\", y], out: z }}"));
        run(&config(true), &one).cores[0].bank_conflict_cycles
    };
    assert_ne!(row(0), row(8));
}
