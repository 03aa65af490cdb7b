//! The gm memory system and scalar gm latency (docs/timing.md, "The gm memory system"), on
//! `sim/tests/golden/memory_config.yaml`: the golden test core with
//!
//! - `memory`: lines of 256 B, an L2 of 1024 B (4 lines), L2 read 32 B/cycle and write
//!   16 B/cycle per move, the chip's L2 48 B/cycle, l2_latency 20, HBM 64 B/cycle,
//!   hbm_read_latency 100;
//! - gm->ub on MTE2 at 64 B/cycle + 10, gm->l1 on MTE1 at 64 B/cycle + 10 (so two gm reads can
//!   run at once), ub->gm on MTE3 at 32 B/cycle + 5;
//! - issue_cycles 1, `scalar.gm_latency` 50.
//!
//! Rules used (docs/timing.md, "The gm memory system"): HBM (64 B/cycle) and the chip's L2
//! (48 B/cycle) are shared cycle by cycle: a move that starts takes, in each cycle, the least of
//! its own rate and what the moves started before it leave. A gm read starting at t on a path
//! of P B/cycle has startup = path startup + (100 if any line missed, else 20); its work is its
//! hit bytes from the L2 at up to min(P, 32), then its missing lines, whole (256 B each), from
//! HBM at up to P (for whole lines), each part in whole cycles. A gm write has startup = path
//! startup + 20, allocates its lines, and writes its B bytes into the L2 and through to HBM at
//! up to min(P, 16) of both. Every number below is derived by hand in the comment above it.

use sim::engine::{L2Start, Limits, MemoryStats, RunResult};
use sim::Config;

const CONFIG: &str = include_str!("../golden/memory_config.yaml");

fn config() -> Config {
    sim::load_config(CONFIG, "memory_config.yaml").expect("the memory test config loads")
}

fn run_with(text: &str, l2: L2Start) -> RunResult {
    let config = config();
    let program =
        sim::load_program(text, "memory.yaml", &config, &[]).unwrap_or_else(|e| panic!("{e}"));
    let limits = Limits {
        l2,
        ..Limits::default()
    };
    let r = sim::engine::run_placed(
        &program,
        &config,
        &sim::Addresses::default(),
        limits,
        &mut (),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    r.check_accounting().unwrap();
    r
}

fn mem(r: &RunResult) -> MemoryStats {
    r.memory.expect("the config has a memory section")
}

/// x: 512 f16 = 1024 B = lines 0..4, the whole L2.
const ONE_LOAD: &str = r#"
kernel: one_load
core: t
sync: manual
gm:
  x: { shape: [1, 512], dtype: f16 }
buffers:
  xb: { scope: ub, shape: [512], dtype: f16 }
body:
  - load: { src: "x[0]", dst: xb }
"#;

#[test]
fn cold_load_misses_every_line() {
    let r = run_with(ONE_LOAD, L2Start::Cold);
    // sent at 0, joins MTE2 at 1 and starts there. Cold: 4 lines, 1024 B miss; n = 1, share =
    // 64 / 1 = 64, min(P 64, 64) = 64: work = ceil(1024 / 64) = 16; startup = 10 + 100 = 110;
    // complete = 1 + 110 + 16 = 127.
    assert_eq!(r.total_cycles, 127);
    let m = mem(&r);
    assert_eq!(m.start, L2Start::Cold);
    assert_eq!((m.reads, m.hit_bytes, m.hit_lines), (1, 0, 0));
    // HBM bytes = 4 missing lines × 256
    assert_eq!((m.miss_bytes, m.miss_lines, m.hbm_bytes), (1024, 4, 1024));
    assert_eq!((m.writes, m.evicted_lines, m.warm_lines), (0, 0, 0));
}

#[test]
fn warm_load_hits_every_line() {
    let r = run_with(ONE_LOAD, L2Start::Warm);
    // warm: x's 4 lines fill the L2. Start 1; 1024 B hit: work = ceil(1024 / min(64, 32)) =
    // 32; startup = 10 + 20 = 30; complete = 1 + 30 + 32 = 63.
    assert_eq!(r.total_cycles, 63);
    let m = mem(&r);
    assert_eq!(m.warm_lines, 4);
    assert_eq!(
        (m.hit_bytes, m.hit_lines, m.miss_bytes, m.hbm_bytes),
        (1024, 4, 0, 0)
    );
}

#[test]
fn warm_fills_in_declaration_order_until_full() {
    // y (declared first) takes lines 0..3 (768 B), x lines 3..7: warm holds lines 0..4, so
    // x's line 3 (its first 256 B) is present and lines 4..7 (768 B) are not.
    let text = r#"
kernel: partly_warm
core: t
sync: manual
gm:
  y: { shape: [384], dtype: f16 }
  x: { shape: [512], dtype: f16 }
buffers:
  xb: { scope: ub, shape: [512], dtype: f16 }
body:
  - load: { src: x, dst: xb }
"#;
    let r = run_with(text, L2Start::Warm);
    // start 1: a miss, so n = 1, share 64: work = ceil(256 / 32 + 768 / 64) = 8 + 12 = 20;
    // startup = 10 + 100 = 110; complete = 1 + 110 + 20 = 131.
    assert_eq!(r.total_cycles, 131);
    let m = mem(&r);
    assert_eq!(
        (m.hit_bytes, m.hit_lines, m.miss_bytes, m.miss_lines),
        (256, 1, 768, 3)
    );
    // bringing 3 lines into a full L2 evicts 3 lines
    assert_eq!(m.evicted_lines, 3);
}

#[test]
fn two_missing_loads_share_hbm() {
    let text = include_str!("../golden/two_misses.yaml");
    let r = run_with(text, L2Start::Cold);
    // load x: sent 0, starts on MTE2 at 1; HBM is free: 2 lines = 512 B at min(P 64, 64) =
    // 64 a cycle, work 8, holding all of HBM over [1, 9); complete 1 + 110 + 8 = 119.
    // load y: sent 1, starts on MTE1 at 2; x holds all of HBM until 9, so y gets nothing in
    // [2, 9), then 64 a cycle: 512 / 64 = 8 cycles [9, 17): work 17 - 2 = 15; complete 2 +
    // 110 + 15 = 127.
    assert_eq!(r.total_cycles, 127);
    assert_eq!(r.cores[0].pipe(sim::Pipe::Mte2).unwrap().busy, 8);
    assert_eq!(r.cores[0].pipe(sim::Pipe::Mte1).unwrap().busy, 15);
    let m = mem(&r);
    assert_eq!((m.reads, m.miss_lines, m.hbm_bytes), (2, 4, 1024));
}

#[test]
fn a_store_allocates_lines_a_later_load_hits() {
    let text = r#"
kernel: store_then_load
core: t
sync: manual
gm:
  z: { shape: [512], dtype: f16 }
buffers:
  zb: { scope: ub, shape: [512], dtype: f16 }
  xb: { scope: ub, shape: [512], dtype: f16 }
body:
  - sstore: { dst: "zb[0]" }
  - store: { src: zb, dst: z }
  - barrier: all
  - load: { src: z, dst: xb }
"#;
    let r = run_with(text, L2Start::Cold);
    // the sstore to ub (so zb is written) takes issue_cycles: [0, 1).
    // store: sent 1, starts on MTE3 at 2, allocating z's 4 lines; it writes 1024 B into the
    // L2 and through to HBM at min(P 32, 16) = 16 a cycle (both have room): work = 1024 / 16
    // = 64, startup = 5 + 20 = 25: complete 2 + 25 + 64 = 91.
    // barrier: all at 2 waits until 91; the load is sent at 91, starts at 92 and hits all
    // 1024 B: work = ceil(1024 / 32) = 32, startup 10 + 20 = 30: complete 92 + 30 + 32 = 154.
    assert_eq!(r.total_cycles, 154);
    let m = mem(&r);
    assert_eq!((m.writes, m.write_bytes), (1, 1024));
    assert_eq!((m.hit_bytes, m.hit_lines, m.miss_bytes), (1024, 4, 0));
}

#[test]
fn a_write_through_to_hbm_slows_a_read_that_misses() {
    // x and z: 256 f16 = 512 B = 2 lines each (4 lines in all, the whole L2).
    let text = r#"
kernel: write_and_read
core: t
sync: manual
gm:
  x: { shape: [256], dtype: f16 }
  z: { shape: [256], dtype: f16 }
buffers:
  zb: { scope: ub, shape: [256], dtype: f16 }
  xb: { scope: ub, shape: [256], dtype: f16 }
body:
  - sstore: { dst: "zb[0]" }
  - store: { src: zb, dst: z }
  - load: { src: x, dst: xb }
"#;
    let r = run_with(text, L2Start::Cold);
    // sstore to ub: S [0, 1). store: sent 1, starts on MTE3 at 2: 512 B into the L2 and
    // through to HBM at min(P 32, L2 write 16) = 16 a cycle, which both have (L2 48, HBM 64):
    // 32 cycles [2, 34), holding 16 of HBM; startup 5 + 20 = 25: complete 2 + 25 + 32 = 59.
    // load: sent 2, starts on MTE2 at 3: 2 lines miss (512 B); HBM has 64 - 16 = 48 a cycle
    // left while the write lasts: ceil(512 / 48) = 11 cycles [3, 14) (alone it would be 8);
    // startup 10 + 100 = 110: complete 3 + 110 + 11 = 124.
    assert_eq!(r.total_cycles, 124);
    assert_eq!(r.cores[0].pipe(sim::Pipe::Mte3).unwrap().busy, 32);
    assert_eq!(r.cores[0].pipe(sim::Pipe::Mte2).unwrap().busy, 11);
    let m = mem(&r);
    // HBM moved 512 B of line fills and 512 B of writes
    assert_eq!((m.hbm_bytes, m.write_bytes, m.miss_lines), (512, 512, 2));
}

/// [`CONFIG`] as a chip of two AI cores of type `t`, for launches of two blocks.
fn two_core_config() -> Config {
    let text = format!("{CONFIG}chip: {{ aic: 2, aiv_per_aic: 0 }}\n");
    sim::load_config(&text, "memory_config.yaml").expect("the two-core memory config loads")
}

fn run_launch(text: &str, l2: L2Start) -> RunResult {
    let config = two_core_config();
    let kernel = sim::load::load_kernel(text, "launch.yaml", &config, &[], None)
        .unwrap_or_else(|e| panic!("{e}"));
    let none = sim::Addresses::default();
    let parts: Vec<(&sim::Program, &sim::Addresses)> =
        kernel.parts.iter().map(|p| (p, &none)).collect();
    let limits = Limits {
        l2,
        ..Limits::default()
    };
    let r =
        sim::engine::run_launch(&parts, &config, limits, &mut ()).unwrap_or_else(|e| panic!("{e}"));
    r.check_accounting().unwrap();
    r
}

#[test]
fn two_cores_share_hbm_and_the_l2_rate() {
    // two blocks, each loading its own row of x: 256 f16 = 512 B = 2 lines; x is 4 lines,
    // the whole L2.
    let text = r#"
kernel: two_rows
launch: { blocks: 2 }
core: t
sync: manual
gm:
  x: { shape: [2, 256], dtype: f16 }
buffers:
  xb: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: "x[block]", dst: xb }
"#;
    let ends = |r: &RunResult| -> Vec<u64> { r.cores.iter().map(|c| c.end_cycle).collect() };
    let mte2 = |r: &RunResult| -> Vec<u64> {
        r.cores
            .iter()
            .map(|c| {
                c.pipes
                    .iter()
                    .find(|p| p.pipe == sim::Pipe::Mte2)
                    .unwrap()
                    .busy
            })
            .collect()
    };
    // Cold, HBM: both loads are sent at 0 and start at 1, block 0's first (core order). Block
    // 0 misses 2 lines and takes all of HBM, 64 a cycle: 512 / 64 = 8 cycles [1, 9); complete
    // 1 + 110 + 8 = 119. Block 1 gets nothing of HBM until 9, then 64 a cycle: [9, 17), work
    // 16; complete 1 + 110 + 16 = 127.
    let r = run_launch(text, L2Start::Cold);
    assert_eq!(ends(&r), [119, 127]);
    assert_eq!(mte2(&r), [8, 16]);
    assert_eq!(r.total_cycles, 127);
    // Warm, the L2: both rows are present. Block 0 reads at min(P 64, L2 read 32) = 32 of the
    // chip's 48: 16 cycles [1, 17); complete 1 + 30 + 16 = 47. Block 1 gets the other 16 a
    // cycle over [1, 17), 256 B, then 32 a cycle for the other 256 B: [17, 25), work 24;
    // complete 1 + 30 + 24 = 55.
    let r = run_launch(text, L2Start::Warm);
    assert_eq!(ends(&r), [47, 55]);
    assert_eq!(mte2(&r), [16, 24]);
    let m = mem(&r);
    assert_eq!((m.hit_bytes, m.miss_bytes), (1024, 0));
}

#[test]
fn least_recently_touched_line_leaves_first() {
    // a..e: one line each (128 f16 = 256 B): lines 0..5; the L2 holds 4.
    let text = r#"
kernel: lru
core: t
sync: manual
gm:
  a: { shape: [128], dtype: f16 }
  b: { shape: [128], dtype: f16 }
  c: { shape: [128], dtype: f16 }
  d: { shape: [128], dtype: f16 }
  e: { shape: [128], dtype: f16 }
buffers:
  t: { scope: ub, shape: [128], dtype: f16 }
body:
  - load: { src: a, dst: t }
  - load: { src: b, dst: t }
  - load: { src: c, dst: t }
  - load: { src: d, dst: t }
  - load: { src: a, dst: t }
  - load: { src: e, dst: t }
  - load: { src: b, dst: t }
  - load: { src: a, dst: t }
"#;
    let r = run_with(text, L2Start::Cold);
    // a, b, c, d miss (4 lines, full). a hits and is touched again. e misses: the least
    // recently touched is b (a was touched after it): b leaves. b misses: c leaves. a still
    // hits. Hits: a twice; misses: a b c d e b.
    let m = mem(&r);
    assert_eq!((m.reads, m.hit_lines, m.miss_lines), (8, 2, 6));
    assert_eq!(m.evicted_lines, 2);
}

#[test]
fn scalar_gm_access_takes_gm_latency() {
    let text = r#"
kernel: scalar_gm
core: t
sync: manual
gm:
  x: { shape: [16], dtype: f32 }
buffers:
  s: { scope: ub, shape: [16], dtype: f32 }
body:
  - sload: { src: "x[3]" }
  - sstore: { dst: "x[4]" }
  - sstore: { dst: "s[0]" }
"#;
    let r = run_with(text, L2Start::Cold);
    // gm sload 50 + gm sstore 50 + ub sstore issue_cycles 1 = 101 cycles of S, nothing else.
    assert_eq!(r.total_cycles, 101);
    let s = r.cores[0].pipe(sim::Pipe::S).unwrap();
    assert_eq!((s.busy, s.instructions), (101, 3));
}

#[test]
fn without_memory_the_report_has_none() {
    let config = sim::load_config(include_str!("../golden/test_config.yaml"), "t.yaml").unwrap();
    let program = sim::load_program(ONE_LOAD, "memory.yaml", &config, &[]).unwrap();
    let r = sim::run(&program, &config).unwrap();
    // the golden single load: 1 + 10 + 16 = 27, warm or not
    assert_eq!(r.total_cycles, 27);
    assert_eq!(r.memory, None);
}

#[test]
fn memory_config_errors_are_located_and_collected() {
    let bad = CONFIG
        .replace("line_bytes: 256", "line_bytes: 0")
        .replace("hbm_bytes_per_cycle: 64", "hbm_bytes_per_cycle: -1")
        .replace("l2_latency: 20", "l2_latency: fast")
        .replace("gm_latency: 50", "gm_latency: -2");
    let e = sim::load_config(&bad, "bad.yaml").unwrap_err().to_string();
    for want in [
        "scalar.gm_latency: -2 is out of range: this value must not be negative",
        "memory.line_bytes: 0 is out of range: this value must be positive",
        "memory.hbm_bytes_per_cycle: -1 is out of range: this value must be positive",
        "memory.l2_latency:",
    ] {
        assert!(e.contains(want), "missing {want:?} in:\n{e}");
    }
    let small = CONFIG.replace("l2_bytes: 1024", "l2_bytes: 100");
    let e = sim::load_config(&small, "bad.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("memory.l2_bytes: the L2 (100 bytes) is smaller than one line (256 bytes)"),
        "{e}"
    );
    let slow = CONFIG.replace("l2_chip_bytes_per_cycle: 48", "l2_chip_bytes_per_cycle: 20");
    let e = sim::load_config(&slow, "bad.yaml").unwrap_err();
    let d = &e.diagnostics[0];
    assert_eq!(d.path, "memory.l2_chip_bytes_per_cycle");
    assert!(
        d.message
            .contains("the chip's L2 rate (20 bytes per cycle) is below one core's (32)"),
        "{e}"
    );
    assert!(d
        .hint
        .as_deref()
        .unwrap()
        .contains("every core of a launch shares"));
    let cost = format!("{CONFIG}launch_cost: {{ fixed_cycles: -1, per_cor_cycles: 3 }}\n");
    let e = sim::load_config(&cost, "bad.yaml").unwrap_err().to_string();
    for want in [
        "launch_cost.fixed_cycles: -1 is out of range: this value must not be negative",
        "unknown key \"per_cor_cycles\" in the launch cost",
        "did you mean \"per_core_cycles\"?",
    ] {
        assert!(e.contains(want), "missing {want:?} in:\n{e}");
    }
    let missing = CONFIG.replace("  hbm_read_latency: 100\n", "");
    let e = sim::load_config(&missing, "bad.yaml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("hbm_read_latency"), "{e}");
    let unknown = CONFIG.replace(
        "  hbm_read_latency: 100\n",
        "  hbm_read_latency: 100\n  l3: 1\n",
    );
    let e = sim::load_config(&unknown, "bad.yaml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("memory.l3: unknown key"), "{e}");
}
