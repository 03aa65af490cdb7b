//! Cross-core goldens: launches on a two-AI-core round-number config
//! (`sim/tests/golden/two_block_config.yaml`), every cycle derived by hand from the rules of
//! docs/timing.md ("Launches" and "Cross-core flags").
//!
//! The config: issue_cycles 1, loop_cycles 2, flag ids 0..4, max_pending 2, cross-core latency
//! 10; two AI cores of one aic and two aivs. Rules used below: S executes `scalar` for its cycles
//! and a `cross_set`/`cross_wait` on S in 0 cycles; a set fired at t takes effect at t + 10; a
//! wait blocked on a counter of 0 fires in the cycle the counter becomes positive (signals are
//! processed before the cores' events of the same cycle); the launch ends at the last core's
//! end, and every core accounts for 0..total (a core done early is idle until then).

use sim::engine::{CoreRun, Limits, RunResult, Stall, SyncFinding, WaitOn};
use sim::{Addresses, Config, Kernel, Pipe};

const CONFIG: &str = include_str!("../golden/two_block_config.yaml");

fn config() -> Config {
    sim::load_config(CONFIG, "two_block_config.yaml").expect("test config loads")
}

fn run(name: &str, text: &str) -> (Kernel, RunResult) {
    run_on(&config(), name, text)
}

/// Loads and runs `text` as one launch on `config`, its accounting checked.
fn run_on(config: &Config, name: &str, text: &str) -> (Kernel, RunResult) {
    let kernel = sim::load::load_kernel(text, name, config, &[], None)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let none = Addresses::default();
    let parts: Vec<(&sim::Program, &Addresses)> = kernel.parts.iter().map(|p| (p, &none)).collect();
    let r = sim::engine::run_launch(&parts, config, Limits::default(), &mut ())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    r.check_accounting().unwrap();
    (kernel, r)
}

/// The first `cross_set` of the kernel's first part.
fn first_cross_set(k: &Kernel) -> usize {
    k.first()
        .ops
        .iter()
        .position(|o| o.kind.name() == "cross_set")
        .unwrap()
}

/// S of one core: (instructions, busy, stalls, idle).
fn s_of(c: &CoreRun) -> (u64, u64, Vec<(Stall, u64)>, u64) {
    let s = c.pipes.iter().find(|p| p.pipe == Pipe::S).expect("S");
    (s.instructions, s.busy, s.stalls.clone(), s.idle)
}

fn wait(id: u32, cycles: u64) -> Vec<(Stall, u64)> {
    vec![(Stall::CrossWait { id }, cycles)]
}

#[test]
fn a_mode_2_hand_off_from_the_cube_core_releases_both_vector_cores() {
    // aic: scalar [0,5), cross_set mode 2 at 5 -> takes effect at 15 on both aivs' counter 0;
    // done at 5 (S busy 5, 2 instructions, idle 15..18 = 13).
    // aiv 0 and 1: cross_wait at 0 blocks until 15 (stall 15), then scalar [15,18): end 18.
    let (_, r) = run(
        "handoff.yaml",
        "kernel: handoff\nlaunch: { blocks: 1 }\n\
         aic:\n  body:\n    - scalar: { cycles: 5 }\n    - cross_set: { mode: 2, pipe: s, id: 0 }\n\
         aiv:\n  body:\n    - cross_wait: { id: 0 }\n    - scalar: { cycles: 3 }\n",
    );
    assert_eq!(r.total_cycles, 18);
    assert_eq!(r.cores.len(), 3);
    let names: Vec<(u32, u32, u32)> = r
        .cores
        .iter()
        .map(|c| (c.block, c.core.0, c.index))
        .collect();
    let (aic, aiv) = (r.cores[0].core, r.cores[1].core);
    assert_eq!(names, vec![(0, aic.0, 0), (0, aiv.0, 0), (0, aiv.0, 1)]);
    assert_eq!(s_of(&r.cores[0]), (2, 5, vec![], 13));
    for c in &r.cores[1..] {
        assert_eq!(s_of(c), (2, 3, wait(0, 15), 0));
        assert_eq!(c.end_cycle, 18);
    }
    assert_eq!(r.cores[0].end_cycle, 5);
    assert!(r.findings.is_empty() && r.deadlock.is_none());
}

#[test]
fn a_mode_0_barrier_waits_for_every_block() {
    // two vector cores (blocks 0 and 1 of a single-type launch): scalar 2 and 6 cycles, then
    // cross_set mode 0 at 2 and 6 (in effect at 12 and 16): the barrier completes at 16, when
    // the last set arrives, and both counters go to 1. Each wait then fires at 16 (stalls 14
    // and 10), scalar [16,17): both end at 17. S: 4 instructions each, busy 3 and 7.
    let (_, r) = run(
        "barrier.yaml",
        "kernel: barrier\ncore: aiv\nlaunch: { blocks: 2 }\nbody:\n\
         \x20 - scalar: { cycles: \"block * 4 + 2\" }\n\
         \x20 - cross_set: { mode: 0, pipe: s, id: 1 }\n\
         \x20 - cross_wait: { id: 1 }\n\
         \x20 - scalar: { cycles: 1 }\n",
    );
    assert_eq!(r.total_cycles, 17);
    assert_eq!(s_of(&r.cores[0]), (4, 3, wait(1, 14), 0));
    assert_eq!(s_of(&r.cores[1]), (4, 7, wait(1, 10), 0));
}

#[test]
fn a_mode_1_set_pairs_the_two_vector_cores_of_an_ai_core() {
    // four vector cores = two AI cores; core b runs scalar 10b + 1 and sets mode 1 at 10b + 1
    // (in effect at 10b + 11: 11, 21, 31, 41). Pair (0, 1) completes at 21, pair (2, 3) at 41,
    // independently (mode 0 would hold everyone to 41). Waits: core 0 stalls 21 - 1 = 20,
    // core 1 21 - 11 = 10, core 2 41 - 21 = 20, core 3 41 - 31 = 10. Ends 21, 21, 41, 41;
    // total 41, so cores 0 and 1 idle 20.
    let (_, r) = run(
        "pair.yaml",
        "kernel: pair\ncore: aiv\nlaunch: { blocks: 4 }\nbody:\n\
         \x20 - scalar: { cycles: \"block * 10 + 1\" }\n\
         \x20 - cross_set: { mode: 1, pipe: s, id: 2 }\n\
         \x20 - cross_wait: { id: 2 }\n",
    );
    assert_eq!(r.total_cycles, 41);
    let ends: Vec<u64> = r.cores.iter().map(|c| c.end_cycle).collect();
    assert_eq!(ends, vec![21, 21, 41, 41]);
    assert_eq!(s_of(&r.cores[0]), (3, 1, wait(2, 20), 20));
    assert_eq!(s_of(&r.cores[1]), (3, 11, wait(2, 10), 20));
    assert_eq!(s_of(&r.cores[2]), (3, 21, wait(2, 20), 0));
    assert_eq!(s_of(&r.cores[3]), (3, 31, wait(2, 10), 0));
}

#[test]
fn a_counter_above_max_pending_is_an_overflow_finding() {
    // one core: three mode-0 sets in a loop (each iteration 2 loop cycles: sets at 2, 4, 6, in
    // effect at 12, 14, 16; a launch of one core completes mode 0 at once), then scalar
    // [6, 26), so nothing takes an increment before 26: the counter reaches 3 > max_pending 2 at
    // 16. The three waits fire at 26. S: 3 iterations + 3 sets + scalar + 3 waits = 10
    // instructions, busy 6 + 20 = 26.
    let (k, r) = run(
        "overflow.yaml",
        "kernel: overflow\ncore: aiv\nlaunch: { blocks: 1 }\nbody:\n\
         \x20 - for: { var: i, to: 3 }\n\
         \x20   body:\n\
         \x20     - cross_set: { mode: 0, pipe: s, id: 3 }\n\
         \x20 - scalar: { cycles: 20 }\n\
         \x20 - cross_wait: { id: 3 }\n\
         \x20 - cross_wait: { id: 3 }\n\
         \x20 - cross_wait: { id: 3 }\n",
    );
    assert_eq!(r.total_cycles, 26);
    assert_eq!(s_of(&r.cores[0]), (10, 26, vec![], 0));
    let set = first_cross_set(&k);
    assert_eq!(
        r.findings,
        vec![SyncFinding::CrossOverflow {
            core: 0,
            id: 3,
            count: 3,
            set_core: 0,
            op: sim::OpId::new(set),
            cycle: 16,
        }]
    );
}

#[test]
fn two_cores_waiting_for_each_other_deadlock_naming_both() {
    // each vector core waits for counter 0 before its own mode-1 set: neither set ever fires.
    // Core 0 waits from 1, core 1 from 2 (scalar block + 1); nothing moves after 2.
    let (k, r) = run(
        "deadlock.yaml",
        "kernel: deadlock\ncore: aiv\nlaunch: { blocks: 2 }\nbody:\n\
         \x20 - scalar: { cycles: \"block + 1\" }\n\
         \x20 - cross_wait: { id: 0 }\n\
         \x20 - cross_set: { mode: 1, pipe: s, id: 0 }\n",
    );
    assert_eq!(r.total_cycles, 2);
    let d = r.deadlock.as_ref().expect("a deadlock");
    assert_eq!(d.cycle, 2);
    let wait_op = k
        .first()
        .ops
        .iter()
        .position(|o| o.kind.name() == "cross_wait")
        .unwrap();
    let who: Vec<(u32, Pipe, usize, WaitOn)> = d
        .waiters
        .iter()
        .map(|w| (w.core, w.pipe, w.op.index(), w.on))
        .collect();
    assert_eq!(
        who,
        vec![
            (0, Pipe::S, wait_op, WaitOn::Cross { id: 0 }),
            (1, Pipe::S, wait_op, WaitOn::Cross { id: 0 }),
        ]
    );
    assert_eq!(s_of(&r.cores[0]), (1, 1, wait(0, 1), 0));
    assert_eq!(s_of(&r.cores[1]), (1, 2, vec![], 0));
}

#[test]
fn a_mixed_launch_pays_its_launch_cost_by_the_cores_it_starts() {
    // two_block_config.yaml's chip, whose AI cores have 2 vector cores each, with launches
    // costing 40 cycles plus 3 a core started. The hand-off kernel above on 2 blocks starts
    // 2 x (1 aic + 2 aiv) = 6 cores: 40 + 6 x 3 = 58, beside the cores' own 18 cycles (each
    // block runs the hand-off above by itself). A vector-only kernel of 2 blocks starts 2
    // cores: 40 + 2 x 3 = 46.
    let text = format!("{CONFIG}launch_cost: {{ fixed_cycles: 40, per_core_cycles: 3 }}\n");
    let config = sim::load_config(&text, "two_block_config.yaml").expect("config loads");
    let launch = |name: &str, program: &str| run_on(&config, name, program).1;
    let mixed = launch(
        "handoff.yaml",
        "kernel: handoff\nlaunch: { blocks: 2 }\n\
         aic:\n  body:\n    - scalar: { cycles: 5 }\n    - cross_set: { mode: 2, pipe: s, id: 0 }\n\
         aiv:\n  body:\n    - cross_wait: { id: 0 }\n    - scalar: { cycles: 3 }\n",
    );
    assert_eq!(mixed.cores.len(), 6);
    assert_eq!((mixed.total_cycles, mixed.launch_cycles), (18, 58));
    let vector = launch(
        "scalar.yaml",
        "kernel: scalar\ncore: aiv\nlaunch: { blocks: 2 }\nbody:\n  - scalar: { cycles: 3 }\n",
    );
    assert_eq!(vector.cores.len(), 2);
    assert_eq!((vector.total_cycles, vector.launch_cycles), (3, 46));
}

#[test]
fn findings_do_not_grow_with_the_run_a_counter_overflows_once_per_core_and_id() {
    // every iteration: three mode-0 sets (the counter reaches 3 > max_pending 2, an overflow
    // each time), 20 cycles of scalar, three waits taking them back to 0, and a set_flag of
    // a flag nothing waits on (a double set from the second iteration on). The run's findings
    // must not grow with its trip count: one overflow per core and id however many
    // iterations overflow, one unpaired set per flag, and double sets kept up to
    // DOUBLE_SETS_KEPT then counted in one entry.
    let text = |trips: u64| {
        format!(
            "kernel: many\ncore: aiv\nsync: manual\nlaunch: {{ blocks: 2 }}\nbody:\n\
             \x20 - for: {{ var: t, to: {trips} }}\n\
             \x20   body:\n\
             \x20     - cross_set: {{ mode: 1, pipe: s, id: 3 }}\n\
             \x20     - cross_set: {{ mode: 1, pipe: s, id: 3 }}\n\
             \x20     - cross_set: {{ mode: 1, pipe: s, id: 3 }}\n\
             \x20     - scalar: {{ cycles: 20 }}\n\
             \x20     - cross_wait: {{ id: 3 }}\n\
             \x20     - cross_wait: {{ id: 3 }}\n\
             \x20     - cross_wait: {{ id: 3 }}\n\
             \x20     - set_flag: {{ src: s, dst: v, id: 0 }}\n"
        )
    };
    let kinds = |r: &RunResult| {
        let mut n = [0u64; 4];
        for f in &r.findings {
            match f {
                SyncFinding::CrossOverflow { .. } => n[0] += 1,
                SyncFinding::UnpairedSet { .. } => n[1] += 1,
                SyncFinding::DoubleSet { .. } => n[2] += 1,
                SyncFinding::DoubleSetsOmitted { count, .. } => n[3] += count,
                SyncFinding::UnpairedCrossSet { .. } => panic!("every set is taken: {f:?}"),
            }
        }
        n
    };
    let kept = sim::engine::DOUBLE_SETS_KEPT;
    let (_, short) = run("many.yaml", &text(4));
    // two cores: each overflows its counter 3 and leaves its flag set; 3 double sets each
    assert_eq!(kinds(&short), [2, 2, 6, 0], "{:?}", short.findings);
    let trips = kept + 500;
    let (_, long) = run("many.yaml", &text(trips));
    assert_eq!(
        kinds(&long),
        [2, 2, 2 * kept, 2 * (trips - 1 - kept)],
        "every iteration overflows and double-sets, the findings stay bounded"
    );
    assert_eq!(long.findings.len() as u64, 2 + 2 + 2 * kept + 2);
    assert!(long.deadlock.is_none() && long.stopped.is_none());
}

#[test]
fn a_mixed_kernel_overflow_names_the_cube_cores_set_and_lies_within_the_run() {
    // one block: aic 0 (core 0), aiv 0 and aiv 1 (cores 1, 2). The cube core sets mode 2 on S
    // three times in a loop (2 loop cycles an iteration: sets at 2, 4, 6; S done at 6); each
    // arrives 10 later, at 12, 14, 16, on both vector cores' counter 0, which nothing takes
    // (the vector part runs scalar [0, 1) and ends). At 16 each counter reaches 3 > max_pending
    // 2: one overflow per vector core, at 16, naming the cube part's cross_set (core 0's op,
    // aic.body[0].for.body[0]: op 1 of the aic program, which the one-op aiv program lacks). The
    // launch lasts until that last arrival: total 16, not the cores' latest end, 6. At the end
    // both counters are still 3: one unpaired cross_set per vector core, naming the same set.
    // Accounting: aic S 6 instructions (3 iterations, 3 sets), busy 6, idle 16 - 6 = 10; each
    // aiv S 1 instruction, busy 1, idle 15.
    let (k, r) = run(
        "mixed_overflow.yaml",
        "kernel: mixed_overflow\nlaunch: { blocks: 1 }\n\
         aic:\n  body:\n    - for: { var: i, to: 3 }\n      body:\n\
         \x20       - cross_set: { mode: 2, pipe: s, id: 0 }\n\
         aiv:\n  body:\n    - scalar: { cycles: 1 }\n",
    );
    assert_eq!(r.total_cycles, 16);
    assert_eq!(s_of(&r.cores[0]), (6, 6, vec![], 10));
    assert_eq!(s_of(&r.cores[1]), (1, 1, vec![], 15));
    assert_eq!(s_of(&r.cores[2]), (1, 1, vec![], 15));
    let aic = &k.parts[0];
    let set = aic
        .ops
        .iter()
        .position(|o| o.kind.name() == "cross_set")
        .unwrap();
    assert_eq!(aic.op(sim::OpId::new(set)).path, "aic.body[0].for.body[0]");
    // the op is not one of the vector part's: looked up there it would name nothing
    assert!(k.parts[1].ops.len() <= set);
    let op = sim::OpId::new(set);
    let overflow = |core| SyncFinding::CrossOverflow {
        core,
        id: 0,
        count: 3,
        set_core: 0,
        op,
        cycle: 16,
    };
    let unpaired = |core| SyncFinding::UnpairedCrossSet {
        core,
        id: 0,
        count: 3,
        set_core: 0,
        op,
    };
    assert_eq!(
        r.findings,
        vec![overflow(1), overflow(2), unpaired(1), unpaired(2)]
    );
    for f in &r.findings {
        assert_eq!(f.op_core(), 0);
        if let SyncFinding::CrossOverflow { cycle, .. } = f {
            assert!(*cycle <= r.total_cycles);
        }
    }
}

#[test]
fn a_set_no_cross_wait_takes_is_an_unpaired_cross_set() {
    // two vector cores (blocks 0 and 1 of one AI core): both set mode 1 on S at 0 (the pair
    // completes when the second arrives, at 10: both counters go to 1); core 0 then takes its
    // count (cross_wait fires at 10, stall 10), core 1 runs scalar [0, 20) and takes nothing.
    // At the end (20) core 1's counter is still 1: one finding, naming core 1's own set, the
    // one that completed the pair (the later of the two in the launch's order). Core 0's counter
    // is 0: nothing.
    let (k, r) = run(
        "unpaired_cross.yaml",
        "kernel: unpaired_cross\ncore: aiv\nlaunch: { blocks: 2 }\nbody:\n\
         \x20 - cross_set: { mode: 1, pipe: s, id: 1 }\n\
         \x20 - if: \"block == 0\"\n\
         \x20   then:\n\
         \x20     - cross_wait: { id: 1 }\n\
         \x20   else:\n\
         \x20     - scalar: { cycles: 20 }\n",
    );
    let set = first_cross_set(&k);
    assert_eq!(
        r.findings,
        vec![SyncFinding::UnpairedCrossSet {
            core: 1,
            id: 1,
            count: 1,
            set_core: 1,
            op: sim::OpId::new(set),
        }]
    );
    assert!(r.deadlock.is_none());
}
