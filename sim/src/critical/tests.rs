//! The walk on hand-derived goldens (every segment derived from docs/timing.md's rules, not
//! read from the output), a kernel whose pipes never wait on each other, and random programs.

use super::*;
use crate::addresses::Addresses;
use crate::engine::Limits;
use proptest::prelude::*;

const TEST_CONFIG: &str = include_str!("../../tests/golden/test_config.yaml");
const TWO_BLOCK: &str = include_str!("../../tests/golden/two_block_config.yaml");
const FLAG_CHAIN: &str = include_str!("../../tests/golden/flag_chain.yaml");
const MEMORY_CONFIG: &str = include_str!("../../tests/golden/memory_config.yaml");
const TWO_MISSES: &str = include_str!("../../tests/golden/two_misses.yaml");

/// Runs `text` as a launch on `config` and walks its critical path, segments kept.
fn walk(config: &Config, text: &str) -> (crate::Kernel, RunResult, CriticalPath) {
    walk_limited(config, text, Limits::default())
}

fn walk_limited(
    config: &Config,
    text: &str,
    limits: Limits,
) -> (crate::Kernel, RunResult, CriticalPath) {
    walk_with(config, text, limits, false)
}

/// An observer that watches nothing but asks for one global order of the cores' calls.
struct Ordered;

impl Observer for Ordered {}

/// [`walk_limited`], the launch's cores in one global order when `ordered` (else they may run
/// ahead: the walker does not ask for the order).
fn walk_with(
    config: &Config,
    text: &str,
    limits: Limits,
    ordered: bool,
) -> (crate::Kernel, RunResult, CriticalPath) {
    let kernel = crate::load_kernel(text, "t.yaml", config, &[], None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let none = Addresses::default();
    let parts: Vec<(&Program, &Addresses)> = kernel.parts.iter().map(|p| (p, &none)).collect();
    let programs: Vec<&Program> = kernel.parts.iter().collect();
    let mut c = Critical::for_launch(&programs, config).keep_segments();
    let r = if ordered {
        crate::engine::run_launch(&parts, config, limits, &mut (&mut c, Ordered))
    } else {
        crate::engine::run_launch(&parts, config, limits, &mut c)
    }
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let path = c.finish(&r).expect("no budget: a path");
    (kernel, r, path)
}

/// The segments, earliest first, as (from, to, pipe, cause), zero-length ones left out.
fn chain(p: &CriticalPath) -> Vec<(u64, u64, Pipe, Cause)> {
    let mut v: Vec<_> = p
        .segments
        .as_ref()
        .expect("kept")
        .iter()
        .filter(|s| s.from < s.to)
        .map(|s| (s.from, s.to, s.pipe, s.cause))
        .collect();
    v.reverse();
    v
}

/// The segments tile [0, total]: each ends where the later one starts, the latest ends at
/// the total, the earliest starts at 0.
fn assert_tiles(p: &CriticalPath) {
    let segs = p.segments.as_ref().expect("kept");
    let mut t = p.total;
    for s in segs {
        assert_eq!(s.to, t, "{segs:?}");
        assert!(s.from <= s.to);
        t = s.from;
    }
    assert_eq!(t, 0, "{segs:?}");
    assert!(p.tiles(), "{p:?}");
}

#[test]
fn the_flag_chain_golden_is_its_load_its_add_and_its_store_through_both_flags() {
    // docs/timing.md's worked example (flag_latency 2, issue 1): S sends the load at 0
    // (joins 1); MTE2 works [1, 17), completes 27; the set_flag drains until 27, the flag is
    // visible at 29; V's wait and the vadd start at 29, work [29, 33), complete 36; V's
    // set_flag drains until 36, visible at 38; MTE3's wait and the store start at 38, work
    // [38, 70), complete 75 = the total.
    let config = crate::load_config(TEST_CONFIG, "test_config.yaml").unwrap();
    let (_, r, p) = walk(&config, FLAG_CHAIN);
    assert_eq!(r.total_cycles, 75);
    assert_tiles(&p);
    use Cause::*;
    assert_eq!(
        chain(&p),
        vec![
            (0, 1, Pipe::S, Issue),
            (1, 17, Pipe::Mte2, Work),
            (17, 27, Pipe::Mte2, Startup),
            (27, 29, Pipe::V, Flag),
            (29, 33, Pipe::V, Work),
            (33, 36, Pipe::V, Startup),
            (36, 38, Pipe::Mte3, Flag),
            (38, 70, Pipe::Mte3, Work),
            (70, 75, Pipe::Mte3, Startup),
        ]
    );
    // by pipe: S 1, V 2 + 4 + 3 = 9, MTE2 16 + 10 = 26, MTE3 2 + 32 + 5 = 39
    assert_eq!(p.by_pipe, [1, 9, 0, 0, 26, 39, 0]);
    // by cause: work 16 + 4 + 32 = 52, issue 1, startup 10 + 3 + 5 = 18, flag 2 + 2 = 4 (no
    // memory config: no bandwidth share)
    assert_eq!(p.by_cause, [52, 0, 0, 1, 18, 4, 0, 0, 0]);
    // the waits the path went through, from when each was otherwise ready: V's wait_flag
    // joined at 3 and started at 29 (26); MTE2's set_flag was free at 17, started at 27 (10);
    // MTE3's wait joined at 31, started at 38 (7); V's set_flag free at 33, started at 36 (3)
    let waits: Vec<(u32, Wait, u64)> = p.waits.iter().map(|w| (w.op.0, w.wait, w.cycles)).collect();
    assert_eq!(
        waits,
        vec![
            (2, Wait::Flag, 26),
            (1, Wait::Drain, 10),
            (5, Wait::Flag, 7),
            (4, Wait::Drain, 3),
        ]
    );
    // the store (op 6) is the top op: 32 of work and 5 of startup
    assert_eq!((p.ops[0].op, p.ops[0].cycles), (OpId(6), 37));
}

#[test]
fn a_walker_on_a_budget_gives_up_past_it_and_walks_the_same_path_within_it() {
    // the flag chain issues 7 instructions (load, set, wait, vadd, set, wait, store): a
    // budget of 6 records runs out at the store; 100 is more than its 7 and S's few spans
    let config = crate::load_config(TEST_CONFIG, "test_config.yaml").unwrap();
    let (kernel, r, unbudgeted) = walk(&config, FLAG_CHAIN);
    let none = Addresses::default();
    let programs: Vec<&Program> = kernel.parts.iter().collect();
    let parts: Vec<(&Program, &Addresses)> = programs.iter().map(|&p| (p, &none)).collect();
    let budgeted = |records: u64| {
        let mut c = Critical::for_launch(&programs, &config)
            .keep_segments()
            .with_budget(records);
        let again = crate::engine::run_launch(&parts, &config, Limits::default(), &mut c).unwrap();
        assert_eq!(again.total_cycles, r.total_cycles);
        c.finish(&again)
    };
    assert_eq!(budgeted(6), None);
    assert_eq!(budgeted(100), Some(unbudgeted));
}

#[test]
fn a_move_waiting_for_its_share_of_hbm_is_bandwidth_on_the_path() {
    // sim/tests/integration/memory.rs's `two_missing_loads_share_hbm` (memory_config.yaml,
    // cold L2): load x is sent at [0, 1) and starts on MTE2 at 1, its 2 missing lines holding
    // all of HBM (64 a cycle) over [1, 9); load y is sent at [1, 2) and starts on MTE1 at 2,
    // gets nothing of HBM until 9, then [9, 17): its work span is [2, 17), 15 cycles, of which
    // alone it would take 512 / 64 = 8; it completes at 2 + 110 + 15 = 127, the total. Back
    // from 127: y's startup [17, 127), its work alone [9, 17), its bandwidth share [2, 9), its
    // send [1, 2), x's send [0, 1).
    let config = crate::load_config(MEMORY_CONFIG, "memory_config.yaml").unwrap();
    let (_, r, p) = walk(&config, TWO_MISSES);
    assert_eq!(r.total_cycles, 127);
    assert_tiles(&p);
    use Cause::*;
    assert_eq!(
        chain(&p),
        vec![
            (0, 1, Pipe::S, Issue),
            (1, 2, Pipe::S, Issue),
            (2, 9, Pipe::Mte1, Bandwidth),
            (9, 17, Pipe::Mte1, Work),
            (17, 127, Pipe::Mte1, Startup),
        ]
    );
    assert_eq!(p.cause(Bandwidth), 7);
    // of x only its send is on the path: its move, alone on HBM, is not; y's is, by cause
    let ops: Vec<(u32, Vec<(Cause, u64)>)> =
        p.ops.iter().map(|o| (o.op.0, o.causes.clone())).collect();
    assert_eq!(
        ops,
        vec![
            (
                1,
                vec![(Work, 8), (Bandwidth, 7), (Issue, 1), (Startup, 110)]
            ),
            (0, vec![(Issue, 1)]),
        ]
    );
}

#[test]
fn pipes_that_never_wait_on_each_other_give_the_busiest_pipe() {
    // six loads (MTE2: 1024 B at 64 B/cycle = 16 of work, startup 10) interleaved with six
    // vadds (V: 4 of work), no flags: S sends faster than MTE2 works (queue_depth 2 keeps two
    // loads waiting), so MTE2 works without a gap from 1 (the first load joins at 1) to
    // 1 + 6 × 16 = 97, and the last load completes at 107. The path: the first load's issue
    // [0, 1), MTE2's six loads, the last one's startup: MTE2 106 of 107 cycles.
    let config = crate::load_config(TEST_CONFIG, "test_config.yaml").unwrap();
    let mut text = String::from(
        "kernel: busy\ncore: t\nsync: manual\ngm:\n  x: { shape: [8, 512], dtype: f16 }\n\
         buffers:\n  xb: { scope: ub, shape: [512], dtype: f16 }\n  zb: { scope: ub, shape: [512], dtype: f16 }\nbody:\n",
    );
    for i in 0..6 {
        text += &format!("  - load: {{ src: \"x[{i}]\", dst: xb }}\n");
        text += "  - vadd: { ins: [xb, xb], out: zb }\n";
    }
    let (_, r, p) = walk(&config, &text);
    assert_eq!(r.total_cycles, 107);
    assert_tiles(&p);
    assert_eq!(p.by_pipe[Pipe::Mte2.index()], 106);
    assert_eq!(p.by_pipe[Pipe::S.index()], 1);
    // the pipe with the most cycles on the path is the busiest pipe of the run
    let core = &r.cores[0];
    assert_eq!(p.top_pipe().map(|t| t.0), core.pipe_bound().map(|b| b.0));
    assert!(p.waits.is_empty(), "{:?}", p.waits);
}

#[test]
fn a_cross_core_hand_off_walks_from_the_vector_core_to_the_cube_core() {
    // cross_core.rs's first golden (latency 10): the cube core's S runs scalar [0, 5) and
    // fires a mode-2 cross_set at 5; the vector cores' cross_wait on S takes the increment at
    // 15, then scalar [15, 18) ends the launch at 18. Path: the cube's scalar [0, 5), the
    // cross-core latency [5, 15) (on the vector core that waited), its scalar [15, 18).
    let config = crate::load_config(TWO_BLOCK, "two_block_config.yaml").unwrap();
    let (_, r, p) = walk(
        &config,
        "kernel: handoff\nlaunch: { blocks: 1 }\n\
         aic:\n  body:\n    - scalar: { cycles: 5 }\n    - cross_set: { mode: 2, pipe: s, id: 0 }\n\
         aiv:\n  body:\n    - cross_wait: { id: 0 }\n    - scalar: { cycles: 3 }\n",
    );
    assert_eq!(r.total_cycles, 18);
    assert_tiles(&p);
    use Cause::*;
    assert_eq!(
        chain(&p),
        vec![
            (0, 5, Pipe::S, Scalar),
            (5, 15, Pipe::S, Cross),
            (15, 18, Pipe::S, Scalar)
        ]
    );
    // the first vector core (core 1) ended the launch: 10 + 3 there, 5 on the cube core
    assert_eq!(p.by_core, vec![5, 13, 0]);
    // its cross_wait (aiv op 0) waited from 0 to 15 while the path ran on the cube core
    assert_eq!(
        p.waits
            .iter()
            .map(|w| (w.part, w.op.0, w.wait, w.cycles))
            .collect::<Vec<_>>(),
        vec![(1, 0, Wait::Cross, 15)]
    );
}

#[test]
fn a_full_queue_walks_into_the_head_that_freed_it() {
    // queue_depth 2 (test config): four 16-cycle loads, then S's own 100 cycles. S sends
    // load 0 at 0 (joins 1, MTE2 works [1, 17)), loads 1 and 2 at 1 and 2 (both wait in the
    // queue); the fourth send waits [3, 17) (queue_full MTE2) until load 1 starts at 17.
    let config = crate::load_config(TEST_CONFIG, "test_config.yaml").unwrap();
    let text = "kernel: q\ncore: t\nsync: manual\ngm:\n  x: { shape: [8, 512], dtype: f16 }\n\
         buffers:\n  xb: { scope: ub, shape: [512], dtype: f16 }\nbody:\n\
         - load: { src: \"x[0]\", dst: xb }\n- load: { src: \"x[1]\", dst: xb }\n\
         - load: { src: \"x[2]\", dst: xb }\n- load: { src: \"x[3]\", dst: xb }\n\
         - scalar: { cycles: 100 }\n";
    let (_, r, p) = walk(&config, text);
    // S: sends at 0, 1, 2; the fourth waits [3, 17) for load 1 to start, sends [17, 18);
    // scalar [18, 118): S ends last, at 118. Path: scalar [18, 118), the send [17, 18), the
    // queue_full wait ended by load 1's start at 17: load 1's start is bound by load 0's
    // work [1, 17), whose start by its join: the send [0, 1).
    assert_eq!(r.total_cycles, 118);
    assert_tiles(&p);
    use Cause::*;
    assert_eq!(
        chain(&p),
        vec![
            (0, 1, Pipe::S, Issue),
            (1, 17, Pipe::Mte2, Work),
            (17, 18, Pipe::S, Issue),
            (18, 118, Pipe::S, Scalar),
        ]
    );
    assert_eq!(
        p.waits
            .iter()
            .map(|w| (w.op.0, w.wait, w.cycles))
            .collect::<Vec<_>>(),
        vec![(3, Wait::QueueFull(Pipe::Mte2), 14)]
    );
}

#[test]
fn a_run_stopped_at_a_limit_still_tiles_its_cycles() {
    let config = crate::load_config(TEST_CONFIG, "test_config.yaml").unwrap();
    let limits = Limits {
        max_instructions: 3,
        ..Limits::default()
    };
    let (_, r, p) = walk_limited(&config, FLAG_CHAIN, limits);
    assert!(r.stopped.is_some());
    assert_eq!(p.total, r.total_cycles);
    assert_tiles(&p);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random single-core programs (the reference comparison's generator: lone flags, scalar
    /// gm accesses) under random queue depths, flag latencies, UB banks and the memory
    /// system: the path's segments tile [0, total], and a run that ends normally has no
    /// cycle the rules leave unexplained.
    #[test]
    fn the_path_of_a_random_program_adds_up_to_its_total(
        items in crate::reference::compare::items(false),
        multi in prop::collection::vec(1u32..3, crate::reference::compare::BUFS),
        cols in prop_oneof![Just(256u32), Just(64u32), Just(2048u32)],
        knobs in crate::reference::compare::knobs(),
    ) {
        let config = crate::reference::compare::config_with(knobs);
        let text = crate::reference::compare::render(&items, &multi, cols);
        let limits = Limits { max_cycles: 10_000_000, max_instructions: 100_000, ..Limits::default() };
        let (_, r, p) = walk_limited(&config, &text, limits);
        prop_assert_eq!(p.total, r.total_cycles);
        assert_tiles(&p);
        if r.deadlock.is_none() && r.stopped.is_none() {
            prop_assert_eq!(p.cause(Cause::Unexplained), 0, "{}\n{:?}", text, p.segments);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random mixed launches (the reference comparison's: cube-to-vector hand-offs, reverse
    /// flags, vector barriers, mmads): the path tiles [0, total], nothing is unexplained in a
    /// run that ends normally, and the cores running ahead of each other (the walker's
    /// default) give the same path as one global order.
    #[test]
    fn the_path_of_a_random_launch_adds_up_and_does_not_depend_on_the_order(
        m in crate::reference::compare::mixed(),
        knobs in crate::reference::compare::knobs(),
    ) {
        let config = crate::reference::compare::config_with(knobs);
        let text = crate::reference::compare::render_mixed(&m);
        let limits = Limits { max_cycles: 50_000_000, max_instructions: 200_000, ..Limits::default() };
        let (_, r, p) = walk_with(&config, &text, limits, false);
        prop_assert_eq!(p.total, r.total_cycles);
        assert_tiles(&p);
        if r.deadlock.is_none() && r.stopped.is_none() {
            prop_assert_eq!(p.cause(Cause::Unexplained), 0, "{}\n{:?}", text, p.segments);
            let (_, _, q) = walk_with(&config, &text, limits, true);
            prop_assert_eq!(&p, &q);
        }
    }
}

#[test]
fn a_record_is_64_bytes_and_a_span_32() {
    // the walker's memory per dynamic instruction (docs/critical-path.md, "Cost")
    assert_eq!(std::mem::size_of::<Rec>(), 64);
    assert_eq!(std::mem::size_of::<SSpan>(), 32);
}
