//! Engine goldens: tiny programs on a round-number config (`sim/tests/golden/test_config.yaml`),
//! with total cycles and per-pipe accounting derived by hand from the timing rules (docs/timing.md, `sim::engine`).
//!
//! The config: issue_cycles 1, loop_cycles 2, branch_cycles 1, flag_latency 2, queue_depth 2;
//! gm->ub 64 B/cycle + 10 startup, ub->gm 32 B/cycle + 5, gm->l0a/l0b 64 + 10, l0c->gm 32 + 6;
//! vadd 1 cycle per 256 B repeat + 3; cube 16 x 16, k 32 bytes per fractal, + 5.
//!
//! Rules used below: S sends at t, busy [t, t+1), the instruction joins its queue at t+1; a pipe
//! starts its head at max(join, end of the previous work, condition); busy for `work`; complete
//! at start + startup + work. Within one cycle pipes start before S sends. A gap before a start
//! is starved until the head joined, then the head's stall; the gap after the last work is idle.

use sim::engine::{PipeStats, RunResult, Stall, SyncFinding, WaitOn};
use sim::{Pipe, Program};

const CONFIG: &str = include_str!("../golden/test_config.yaml");

fn load(name: &str, text: &str) -> Program {
    let config = sim::load_config(CONFIG, "test_config.yaml").expect("test config loads");
    sim::load_program(text, name, &config, &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run(name: &str, text: &str) -> (Program, RunResult) {
    let config = sim::load_config(CONFIG, "test_config.yaml").expect("test config loads");
    let program = load(name, text);
    let r = sim::run(&program, &config).unwrap_or_else(|e| panic!("{name}: {e}"));
    r.check_accounting().unwrap();
    (program, r)
}

fn pipe(r: &RunResult, p: Pipe) -> &PipeStats {
    r.cores[0].pipe(p).unwrap_or_else(|| panic!("no pipe {p}"))
}

/// Asserts one pipe's whole accounting: (instructions, busy, stalls, starved, idle).
fn expect(
    r: &RunResult,
    p: Pipe,
    instructions: u64,
    busy: u64,
    stalls: &[(Stall, u64)],
    starved: u64,
    idle: u64,
) {
    let s = pipe(r, p);
    assert_eq!(
        (
            s.instructions,
            s.busy,
            s.stalls.as_slice(),
            s.starved,
            s.idle
        ),
        (instructions, busy, stalls, starved, idle),
        "pipe {p}"
    );
}

fn idle_pipes(r: &RunResult, pipes: &[Pipe]) {
    for &p in pipes {
        expect(r, p, 0, 0, &[], 0, r.total_cycles);
    }
}

#[test]
fn golden_1_single_load() {
    let (_, r) = run(
        "single_load.yaml",
        include_str!("../golden/single_load.yaml"),
    );
    // S sends the load at 0 (busy [0,1)); it joins MTE2 at 1 and starts at once.
    // work = ceil(1024 B / 64) = 16: busy [1,17); complete = 1 + 10 + 16 = 27 = total.
    assert_eq!(r.total_cycles, 27);
    // S: busy 1, idle [1,27) = 26; it executed nothing itself.
    expect(&r, Pipe::S, 0, 1, &[], 0, 26);
    // MTE2: starved [0,1), busy 16, idle [17,27) = 10.
    expect(&r, Pipe::Mte2, 1, 16, &[], 1, 10);
    idle_pipes(&r, &[Pipe::V, Pipe::M, Pipe::Mte1, Pipe::Mte3, Pipe::Fix]);
    assert_eq!(r.cores[0].overlap_cycles, 0);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
}

#[test]
fn golden_2_two_loads() {
    let (_, r) = run("two_loads.yaml", include_str!("../golden/two_loads.yaml"));
    // load0: sent 0, joins 1, busy [1,17), completes 27.
    // load1: sent 1 (load0 started at 1 first: queue has room), joins 2; waits for load0's work:
    //   starts 17, busy [17,33), completes 17 + 10 + 16 = 43 = total.
    assert_eq!(r.total_cycles, 43);
    // S: two sends, idle [2,43) = 41.
    expect(&r, Pipe::S, 0, 2, &[], 0, 41);
    // MTE2: starved [0,1), busy 32, idle [33,43) = 10 (load1 joined before load0's work ended).
    expect(&r, Pipe::Mte2, 2, 32, &[], 1, 10);
    idle_pipes(&r, &[Pipe::V, Pipe::M, Pipe::Mte1, Pipe::Mte3, Pipe::Fix]);
    assert_eq!(r.cores[0].overlap_cycles, 0);
}

#[test]
fn golden_3_flag_chain() {
    let (_, r) = run("flag_chain.yaml", include_str!("../golden/flag_chain.yaml"));
    // S: load at 0 (joins MTE2 1); set MTE2->V at 1 (joins 2); wait at 2 (joins V 3); vadd at 3
    //   (joins 4). set V->MTE3 at 4: V holds wait + vadd, neither started = queue_depth 2, so S
    //   stalls until V starts them.
    // MTE2: load [1,17), completes 27; set joins 2, waits for it: starts 27 (drain [17,27) = 10);
    //   the flag is visible at 29.
    // V: wait starts 29 (starved [0,3), wait_flag MTE2#0 [3,29) = 26); vadd starts 29 too:
    //   1024 B = 4 repeats x 1 = 4, busy [29,33), completes 29 + 3 + 4 = 36.
    // S: queue_full V [4,29) = 25, sends set at 29 (joins V 30), wait at 30 (joins MTE3 31),
    //   store at 31 (joins 32); S is done at 32.
    // V: set joins 30, waits for the vadd to complete: starts 36 (drain [33,36) = 3), visible 38.
    // MTE3: wait starts 38 (starved [0,31), wait_flag V#0 [31,38) = 7); store starts 38:
    //   1024 / 32 = 32, busy [38,70), completes 70 + 5 = 75 = total.
    assert_eq!(r.total_cycles, 75);
    // S: 7 sends, queue_full V 25, idle [32,75) = 43.
    expect(&r, Pipe::S, 0, 7, &[(Stall::QueueFull(Pipe::V), 25)], 0, 43);
    // MTE2: starved 1, busy 16, drain 10, idle [27,75) = 48.
    expect(&r, Pipe::Mte2, 2, 16, &[(Stall::Drain, 10)], 1, 48);
    // V: starved 3, wait 26, busy 4, drain 3, idle [36,75) = 39.
    expect(
        &r,
        Pipe::V,
        3,
        4,
        &[
            (
                Stall::WaitFlag {
                    src: Pipe::Mte2,
                    id: 0,
                },
                26,
            ),
            (Stall::Drain, 3),
        ],
        3,
        39,
    );
    // MTE3: starved 31, wait 7, busy 32, idle 5.
    expect(
        &r,
        Pipe::Mte3,
        2,
        32,
        &[(
            Stall::WaitFlag {
                src: Pipe::V,
                id: 0,
            },
            7,
        )],
        31,
        5,
    );
    idle_pipes(&r, &[Pipe::M, Pipe::Mte1, Pipe::Fix]);
    // The flags serialise everything: no two pipes are ever busy together.
    assert_eq!(r.cores[0].overlap_cycles, 0);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
}

#[test]
fn golden_4_loop_of_loads() {
    let (_, r) = run("loop_loads.yaml", include_str!("../golden/loop_loads.yaml"));
    // Iteration t (0..4): loop cycles [3t, 3t+2), send [3t+2, 3t+3), joins 3t+3.
    // 128 B / 64 = 2 work: MTE2 busy [3t+3, 3t+5); the last starts 12, completes 12 + 10 + 2 = 24.
    // S is done at 12 (the exit check costs nothing).
    assert_eq!(r.total_cycles, 24);
    // S: 4 x (2 + 1) = 12 busy, 4 loop iterations executed, idle [12,24) = 12.
    expect(&r, Pipe::S, 4, 12, &[], 0, 12);
    // MTE2: starved [0,3) + [5,6) + [8,9) + [11,12) = 6, busy 8, idle [14,24) = 10.
    expect(&r, Pipe::Mte2, 4, 8, &[], 6, 10);
    idle_pipes(&r, &[Pipe::V, Pipe::M, Pipe::Mte1, Pipe::Mte3, Pipe::Fix]);
}

#[test]
fn golden_5_queue_fills() {
    let (_, r) = run("queue_full.yaml", include_str!("../golden/queue_full.yaml"));
    // L0: sent 0, joins 1, busy [1,17). L1: sent 1 (L0 started at 1), joins 2. L2: sent 2 (queue
    // holds L1 only), joins 3. L3 at 3: the queue holds L1 and L2 unstarted = queue_depth 2;
    // L1 starts at 17 (after L0's work), so S sends L3 at 17 (queue_full MTE2 [3,17) = 14) and
    // is done at 18. L2 starts 33, L3 starts 49, busy [49,65), completes 65 + 10 = 75 = total.
    assert_eq!(r.total_cycles, 75);
    // S: 4 sends, stall 14, idle [18,75) = 57.
    expect(
        &r,
        Pipe::S,
        0,
        4,
        &[(Stall::QueueFull(Pipe::Mte2), 14)],
        0,
        57,
    );
    // MTE2: starved [0,1), busy 4 x 16 = 64 without a gap, idle [65,75) = 10.
    expect(&r, Pipe::Mte2, 4, 64, &[], 1, 10);
    idle_pipes(&r, &[Pipe::V, Pipe::M, Pipe::Mte1, Pipe::Mte3, Pipe::Fix]);
}

#[test]
fn golden_6_mmad_fixpipe() {
    let (_, r) = run(
        "mmad_fixpipe.yaml",
        include_str!("../golden/mmad_fixpipe.yaml"),
    );
    // S: load a at 0 (joins MTE2 1), load b at 1 (a started at 1; joins 2), set MTE2->M at 2
    //   (queue holds b: joins 3), wait at 3 (joins M 4), mmad at 4 (joins 5). set M->FIX at 5: M
    //   holds wait + mmad = queue_depth, S stalls.
    // MTE2: a [1,17) completes 27; b starts 17, busy [17,33), completes 43; set joins 3, starts
    //   at 43 when both loads completed (drain [33,43) = 10); visible 45.
    // M: wait starts 45 (starved [0,4), wait_flag MTE2#0 [4,45) = 41); mmad starts 45:
    //   work = ceil(16/16) x ceil(16/16) x ceil(32 / (32 B / 2 B)) = 2, busy [45,47),
    //   completes 45 + 5 + 2 = 52.
    // S: queue_full M [5,45) = 40; set at 45 (joins M 46), wait at 46 (joins FIX 47), fixpipe
    //   at 47 (joins 48); done at 48.
    // M: set joins 46, starts 52 when the mmad completed (drain [47,52) = 5); visible 54.
    // FIX: wait starts 54 (starved [0,47), wait_flag M#0 [47,54) = 7); fixpipe starts 54:
    //   1024 B / 32 = 32, busy [54,86), completes 86 + 6 = 92 = total.
    assert_eq!(r.total_cycles, 92);
    expect(&r, Pipe::S, 0, 8, &[(Stall::QueueFull(Pipe::M), 40)], 0, 44);
    // MTE2: starved 1, busy 32, drain 10, idle [43,92) = 49.
    expect(&r, Pipe::Mte2, 3, 32, &[(Stall::Drain, 10)], 1, 49);
    // M: starved 4, wait 41, busy 2, drain 5, idle [52,92) = 40.
    expect(
        &r,
        Pipe::M,
        3,
        2,
        &[
            (
                Stall::WaitFlag {
                    src: Pipe::Mte2,
                    id: 0,
                },
                41,
            ),
            (Stall::Drain, 5),
        ],
        4,
        40,
    );
    // FIX: starved 47, wait 7, busy 32, idle [86,92) = 6.
    expect(
        &r,
        Pipe::Fix,
        2,
        32,
        &[(
            Stall::WaitFlag {
                src: Pipe::M,
                id: 0,
            },
            7,
        )],
        47,
        6,
    );
    idle_pipes(&r, &[Pipe::V, Pipe::Mte1, Pipe::Mte3]);
    assert_eq!(r.cores[0].overlap_cycles, 0);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
}

#[test]
fn golden_deadlock_names_pipe_flag_and_op() {
    let (program, r) = run("deadlock.yaml", include_str!("../golden/deadlock.yaml"));
    // load: sent 0, joins 1, busy [1,17), completes 27. wait MTE2->V #1: sent 1, joins V 2, never
    // satisfied. vadd: sent 2, joins V 3 (behind the wait). store: sent 3, joins MTE3 4 and,
    // having no flag, starts at 4: busy [4,36), completes 41. S is done at 4.
    // Nothing moves after 41: the deadlock cycle and the total are 41.
    let d = r.deadlock.as_ref().expect("a deadlock");
    assert_eq!(d.cycle, 41);
    assert_eq!(r.total_cycles, 41);
    assert_eq!(d.waiters.len(), 1);
    let w = &d.waiters[0];
    assert_eq!(w.pipe, Pipe::V);
    assert_eq!(
        w.on,
        WaitOn::Flag {
            src: Pipe::Mte2,
            dst: Pipe::V,
            id: 1
        }
    );
    assert_eq!(program.op(w.op).path, "body[1]");
    assert_eq!(program.op(w.op).kind.name(), "wait_flag");
    // V: starved [0,2), wait_flag MTE2#1 [2,41) = 39; it started nothing.
    expect(
        &r,
        Pipe::V,
        0,
        0,
        &[(
            Stall::WaitFlag {
                src: Pipe::Mte2,
                id: 1,
            },
            39,
        )],
        2,
        0,
    );
    // MTE3: starved [0,4), busy 32, idle [36,41) = 5.
    expect(&r, Pipe::Mte3, 1, 32, &[], 4, 5);
    // S: 4 sends, idle [4,41) = 37.
    expect(&r, Pipe::S, 0, 4, &[], 0, 37);
    // MTE2 [1,17) and MTE3 [4,36) overlap on [4,17).
    assert_eq!(r.cores[0].overlap_cycles, 13);
    assert!(r.has_findings());
}

#[test]
fn golden_double_and_unpaired_set() {
    let (program, r) = run(
        "set_findings.yaml",
        include_str!("../golden/set_findings.yaml"),
    );
    // load: [1,17), completes 27. set#1 (sent 1, joins 2) and set#2 (sent 2, joins 3) both wait
    // for the load to complete and start at 27: set#1 sets MTE2->V #0 (visible 29); set#2 finds
    // it still set: a double set at cycle 27, lost. wait (sent 3, joins V 4) starts 29 and
    // clears it. set V->MTE3 #1 (sent 4, joins V 5) has nothing earlier on V to drain: starts
    // at 29 right after the wait; nobody waits for it: unpaired. S is done at 5; total = 29.
    assert_eq!(r.total_cycles, 29);
    assert!(r.deadlock.is_none());
    let path = |op| program.op(op).path.clone();
    assert_eq!(r.findings.len(), 2, "{:?}", r.findings);
    match &r.findings[0] {
        SyncFinding::DoubleSet {
            core: 0,
            src,
            dst,
            id,
            op,
            cycle,
        } => {
            assert_eq!((*src, *dst, *id, *cycle), (Pipe::Mte2, Pipe::V, 0, 27));
            assert_eq!(path(*op), "body[2]");
        }
        f => panic!("expected a double set, got {f:?}"),
    }
    match &r.findings[1] {
        SyncFinding::UnpairedSet {
            core: 0,
            src,
            dst,
            id,
            op,
        } => {
            assert_eq!((*src, *dst, *id), (Pipe::V, Pipe::Mte3, 1));
            assert_eq!(path(*op), "body[4]");
        }
        f => panic!("expected an unpaired set, got {f:?}"),
    }
    // MTE2: starved 1, busy 16, drain [17,27) = 10, idle [27,29) = 2.
    expect(&r, Pipe::Mte2, 3, 16, &[(Stall::Drain, 10)], 1, 2);
    // V: starved [0,4), wait_flag MTE2#0 [4,29) = 25, no idle (its last start is at 29).
    expect(
        &r,
        Pipe::V,
        2,
        0,
        &[(
            Stall::WaitFlag {
                src: Pipe::Mte2,
                id: 0,
            },
            25,
        )],
        4,
        0,
    );
    expect(&r, Pipe::S, 0, 5, &[], 0, 24);
    assert!(r.has_findings());
}

/// Runs `text` on the test config with `from` (a line of it) replaced by `to`.
fn run_on(name: &str, text: &str, from: &str, to: &str) -> RunResult {
    assert!(CONFIG.contains(from), "the test config has {from:?}");
    let config = CONFIG.replace(from, to);
    let config = sim::load_config(&config, "test_config.yaml").expect("config loads");
    let program =
        sim::load_program(text, name, &config, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    let r = sim::run(&program, &config).unwrap_or_else(|e| panic!("{name}: {e}"));
    r.check_accounting().unwrap();
    r
}

/// One quantising fixpipe: 256 f32 of L0C (1024 B) to 256 f16 of gm (512 B).
const QUANT_FIXPIPE: &str = "
kernel: quant_fixpipe
core: t
sync: manual
gm:
  c: { shape: [256], dtype: f16 }
buffers:
  lc: { scope: l0c, shape: [256], dtype: f32 }
body:
  - sstore: { dst: \"lc[0]\" }
  - fixpipe: { src: lc, dst: c, quant: true }
";

const FIX_PATH: &str = "{ from: l0c, to: gm,  pipe: fix,  bytes_per_cycle: 32,  startup: 6 }";

#[test]
fn golden_7_quantising_fixpipe_moves_its_destination_bytes() {
    let (_, r) = run("quant_fixpipe.yaml", QUANT_FIXPIPE);
    // A move's bytes are its destination's: 256 f16 = 512 B (the source is 1024 B of f32).
    // S: the sstore (which only marks lc written) [0,1); sends the fixpipe at 1 (busy [1,2)); it
    // joins FIX at 2 and starts: work = ceil(512 / 32) = 16, busy [2,18), completes 2 + 6 + 16
    // = 24 = total (with the source's 1024 B it would be 2 + 6 + 32 = 40).
    assert_eq!(r.total_cycles, 24);
    // S: busy 2 (one instruction of its own, the sstore), idle [2,24) = 22.
    expect(&r, Pipe::S, 1, 2, &[], 0, 22);
    // FIX: starved [0,2), busy 16, idle [18,24) = 6.
    expect(&r, Pipe::Fix, 1, 16, &[], 2, 6);
    idle_pipes(&r, &[Pipe::V, Pipe::M, Pipe::Mte1, Pipe::Mte2, Pipe::Mte3]);
}

#[test]
fn golden_8_read_rate_bounds_a_move_by_its_source_bytes() {
    // As golden 7, with l0c -> gm reading at 16 B/cycle: work = max(ceil(1024 / 16),
    // ceil(512 / 32)) = max(64, 16) = 64; busy [2,66), completes 2 + 6 + 64 = 72 = total.
    let slow = FIX_PATH.replace("startup: 6", "startup: 6, read_bytes_per_cycle: 16");
    let r = run_on("quant_fixpipe.yaml", QUANT_FIXPIPE, FIX_PATH, &slow);
    assert_eq!(r.total_cycles, 72);
    expect(&r, Pipe::Fix, 1, 64, &[], 2, 6);
    // Reading at 64 B/cycle: max(ceil(1024 / 64), 16) = max(16, 16) = 16: the write side
    // bounds it again, 2 + 6 + 16 = 24.
    let fast = FIX_PATH.replace("startup: 6", "startup: 6, read_bytes_per_cycle: 64");
    let r = run_on("quant_fixpipe.yaml", QUANT_FIXPIPE, FIX_PATH, &fast);
    assert_eq!(r.total_cycles, 24);
    expect(&r, Pipe::Fix, 1, 16, &[], 2, 6);
}

#[test]
fn golden_9_nz_load_uses_the_nz_rate() {
    let program = "
kernel: nz_load
core: t
sync: manual
gm:
  x: { shape: [16, 32], dtype: f16 }
buffers:
  nd: { scope: l1, shape: [16, 32], dtype: f16 }
  nz: { scope: l1, shape: [16, 32], dtype: f16 }
body:
  - load: { src: x, dst: nd }
  - load: { src: x, dst: nz, layout: nz }
";
    let from = "{ from: gm,  to: l1,  pipe: mte2, bytes_per_cycle: 64,  startup: 10 }";
    let to = "{ from: gm,  to: l1,  pipe: mte2, bytes_per_cycle: 64,  startup: 10, nz_bytes_per_cycle: 16 }";
    let r = run_on("nz_load.yaml", program, from, to);
    // Both loads move 512 f16 = 1024 B on gm -> l1.
    // nd: sent 0, joins 1, work ceil(1024 / 64) = 16, busy [1,17), completes 1 + 10 + 16 = 27.
    // nz: sent 1, joins 2, starts 17 after the nd load's work: work ceil(1024 / 16) = 64, busy
    //   [17,81), completes 17 + 10 + 64 = 91 = total (at 64 B/cycle it would be 43).
    assert_eq!(r.total_cycles, 91);
    // MTE2: starved [0,1), busy 16 + 64 = 80, idle [81,91) = 10.
    expect(&r, Pipe::Mte2, 2, 80, &[], 1, 10);
    expect(&r, Pipe::S, 0, 2, &[], 0, 89);
    // Without the key an nz load costs what an nd load does: 17 + 10 + 16 = 43.
    let r = run_on("nz_load.yaml", program, from, from);
    assert_eq!(r.total_cycles, 43);
}

#[test]
fn golden_10_mmad_l1_stages_k_in_chunks_that_fit_half_of_l0() {
    let program = "
kernel: mmad_l1_chunks
core: t
sync: manual
buffers:
  a: { scope: l1, shape: [16, 512], dtype: f16 }
  b: { scope: l1, shape: [512, 32], dtype: f16 }
  c: { scope: l0c, shape: [16, 32], dtype: f32 }
body:
  - sstore: { dst: \"a[0, 0]\" }
  - sstore: { dst: \"b[0, 0]\" }
  - mmad_l1: { a: a, b: b, c: c, m: 16, n: 32, k: 512, init: 1 }
";
    let (_, r) = run("mmad_l1_chunks.yaml", program);
    // a = 16 x 512 f16 = 16384 B, b = 512 x 32 f16 = 32768 B (more than half of L0B, 8192 B);
    // kf = 32 B / 2 = 16, so k = 512 is 32 fractals. A chunk of kc of k holds 16384 x kc / 512
    // B of a (fits 8192 up to kc = 256: 16 fractals) and 32768 x kc / 512 of b (up to 128: 8
    // fractals): 4 chunks of 128.
    // MTE1 chunk: 4096 / 128 + 8192 / 64 = 32 + 128 = 160, startup max(4, 3) = 4.
    // M chunk: ceil(16/16) x ceil(32/16) x ceil(128/16) = 1 x 2 x 8 = 16, startup 5.
    // S: sstores [0,1), [1,2); MTE1 part sent 2 (joins 3), M part sent 3 (joins 4); done at 4.
    // MTE1: c0 [3,163) -> 167; c1 [163,323) -> 327; c2 may reuse c0's half once M completed
    //   c0 (188, below): [323,483) -> 487; c3 after M's c1 (348): [483,643) -> 647.
    // M: c0 at 167 [167,183) -> 188; c1 at 327 [327,343) -> 348; c2 at 487 [487,503) -> 508;
    //   c3 at 647 [647,663) -> 668 = total.
    // (Unchunked, as before: MTE1 128 + 512 = 640 [3,643) -> 647, M 64 [647,711) -> 716.)
    assert_eq!(r.total_cycles, 668);
    expect(&r, Pipe::S, 2, 4, &[], 0, 664);
    // MTE1: starved [0,3), busy 640, never waits for M here, idle [643,668) = 25.
    expect(&r, Pipe::Mte1, 1, 640, &[], 3, 25);
    // M: starved [0,4); waits for copies [4,167) + [183,327) + [343,487) + [503,647)
    //   = 163 + 3 x 144 = 595; busy 4 x 16 = 64; idle [663,668) = 5.
    expect(
        &r,
        Pipe::M,
        1,
        64,
        &[(Stall::WaitMacro { src: Pipe::Mte1 }, 595)],
        4,
        5,
    );
    idle_pipes(&r, &[Pipe::V, Pipe::Mte2, Pipe::Mte3, Pipe::Fix]);
    // MTE1 [3,643) overlaps M's first three chunks: 3 x 16 = 48.
    assert_eq!(r.cores[0].overlap_cycles, 48);
}

#[test]
fn golden_11_a_launch_pays_its_fixed_and_per_core_cost_outside_the_cores_cycles() {
    // the test config as a chip of 4 AI cores of type t, whose launches cost 100 cycles plus 7
    // a core started; a block of this one-core-type kernel is one core
    let text = format!(
        "{CONFIG}chip: {{ aic: 4, aiv_per_aic: 0 }}\n\
         launch_cost: {{ fixed_cycles: 100, per_core_cycles: 7 }}\n"
    );
    let config = sim::load_config(&text, "test_config.yaml").expect("config loads");
    let program = include_str!("../golden/flag_chain.yaml");
    for (blocks, launch) in [(1, 100 + 7), (3, 100 + 3 * 7)] {
        let kernel =
            sim::load_kernel(program, "flag_chain.yaml", &config, &[], Some(blocks)).unwrap();
        let none = sim::Addresses::default();
        let parts: Vec<(&Program, &sim::Addresses)> =
            kernel.parts.iter().map(|p| (p, &none)).collect();
        let r = sim::engine::run_launch(&parts, &config, Default::default(), &mut ()).unwrap();
        r.check_accounting().unwrap();
        // every core runs the worked example of docs/timing.md (no memory system: the cores
        // share nothing), 75 cycles; the launch cost is 100 + blocks x 7, apart from them
        assert_eq!(r.cores.len(), blocks as usize);
        assert!(r.cores.iter().all(|c| c.end_cycle == 75));
        assert_eq!((r.total_cycles, r.launch_cycles), (75, launch));
    }
    // without launch_cost (the test config as it is) a launch costs nothing
    let (_, r) = run("flag_chain.yaml", include_str!("../golden/flag_chain.yaml"));
    assert_eq!((r.total_cycles, r.launch_cycles), (75, 0));
}
