//! Kernels part by part: a mixed kernel (tests/fixtures/launch/matmul_add_one_tile.yaml: `aic` then `aiv`)
//! plans, synchronises and compares every part on its own with the options that are its own,
//! a failure names the part its ids belong to, and a comparison runs the whole launch at each
//! level exactly as `simulate_kernel` does.

use crate::{config, load, load_kernel, opts};
use pipeline::{Failure, LevelOutcome, PartFailure};
use sim::Space;

const MIXED: &str = "tests/fixtures/launch/matmul_add_one_tile.yaml";

#[test]
fn a_mixed_kernels_capacities_go_to_the_parts_whose_core_has_the_scope() {
    let k = load_kernel(MIXED);
    let config = config();
    let mut o = opts();
    o.plan.capacities = vec![(Space::Ub, 100_000), (Space::L1, 300_000)];
    let aic = pipeline::part_options(&k, 0, &config, &o);
    let aiv = pipeline::part_options(&k, 1, &config, &o);
    assert_eq!(aic.plan.capacities, [(Space::L1, 300_000)]);
    assert_eq!(aiv.plan.capacities, [(Space::Ub, 100_000)]);
    let planned = pipeline::plan_kernel(&k, &config, &o.plan, true).unwrap();
    assert_eq!(planned[0].plan.scope(Space::L1).unwrap().capacity, 300_000);
    assert_eq!(planned[1].plan.scope(Space::Ub).unwrap().capacity, 100_000);

    // a single-type kernel keeps them all: one its core lacks is refused
    let single = load_kernel("programs/vec_add_db.yaml");
    assert_eq!(
        pipeline::part_options(&single, 0, &config, &o)
            .plan
            .capacities,
        o.plan.capacities
    );
    let e = pipeline::plan_kernel(&single, &config, &o.plan, true).unwrap_err();
    assert_eq!(
        e,
        PartFailure {
            part: 0,
            failure: Failure::NoSuchScope {
                core: single.first().core,
                scopes: vec![Space::L1],
            },
        }
    );
}

#[test]
fn a_scope_no_part_has_is_refused_before_anything_is_planned() {
    let k = load_kernel(MIXED);
    // the chip without the cube core's BT: neither part has one
    let mut config = config();
    let aic = config.core_named("aic").unwrap();
    config.cores[aic.index()]
        .scopes
        .retain(|s| s.space != Space::Bt);
    let mut o = opts();
    o.plan.capacities = vec![(Space::Ub, 100_000), (Space::Bt, 512)];
    let expected = PartFailure {
        part: 0,
        failure: Failure::NoSuchScope {
            core: aic,
            scopes: vec![Space::Bt],
        },
    };
    assert_eq!(
        pipeline::prepare_kernel(&k, &config, &o).unwrap_err(),
        expected
    );
    assert_eq!(
        pipeline::plan_kernel(&k, &config, &o.plan, true).unwrap_err(),
        expected
    );
    assert_eq!(
        pipeline::simulate_kernel(&k, &config, &o).unwrap_err(),
        expected.failure
    );
}

#[test]
fn an_overflow_names_its_part_and_its_op_in_that_part() {
    let k = load_kernel(MIXED);
    let config = config();
    let mut o = opts();
    // the vector part needs two live 32 KiB tiles; the cube part is untouched
    o.plan.capacities = vec![(Space::Ub, 40_000)];
    let e = pipeline::prepare_kernel(&k, &config, &o).unwrap_err();
    assert_eq!(e.part, 1);
    let Failure::Overflow(planner::PlanError::Overflow { peak_op, .. }) = &e.failure else {
        panic!("{e:?}")
    };
    let op = peak_op.expect("the overflow names its fullest op");
    assert_eq!(k.parts[1].op(op).path, "aiv.body[2]");

    // every level of a comparison overflows in that part, and the comparison goes on
    let levels = pipeline::compare_kernel(&k, &config, &[2, 0], &o).unwrap();
    assert_eq!(levels.len(), 2);
    for l in &levels {
        assert_eq!(l.part, 1);
        assert!(matches!(l.outcome, LevelOutcome::Overflow(_)), "{l:?}");
    }
    // too little L1: the cube part's
    o.plan.capacities = vec![(Space::L1, 64 * 1024)];
    assert_eq!(
        pipeline::prepare_kernel(&k, &config, &o).unwrap_err().part,
        0
    );
}

#[test]
fn a_comparison_runs_the_whole_launch_at_each_level() {
    let k = load_kernel(MIXED);
    let config = config();
    let parts: Vec<&sim::Program> = k.parts.iter().collect();
    let cores = sim::launch::slots(&parts, &config).len();
    let levels = pipeline::compare_kernel(&k, &config, &[1, 2], &opts()).unwrap();
    assert_eq!(levels.iter().map(|l| l.level).collect::<Vec<_>>(), [1, 2]);
    for l in &levels {
        let LevelOutcome::Ran(sim) = &l.outcome else {
            panic!("level {}: {:?}", l.level, l.outcome)
        };
        assert_eq!((l.part, sim.parts.len()), (0, 2));
        for part in &sim.parts {
            assert_eq!(part.planned.plan.level, l.level);
        }
        assert_eq!(sim.result.cores.len(), cores);
        assert_eq!(sim.hazards.as_deref(), Some(&[][..]));
        let mut o = opts();
        o.plan.max_level = l.level;
        let alone = pipeline::simulate_kernel(&k, &config, &o).unwrap();
        assert_eq!(sim.result, alone.result, "level {}", l.level);
    }

    // a single program: the same levels as `compare`
    let p = load("programs/reuse_levels.yaml");
    let single = sim::Kernel::single(p.clone());
    let a = pipeline::compare(&p, &config, &[0, 2], &opts()).unwrap();
    let b = pipeline::compare_kernel(&single, &config, &[0, 2], &opts()).unwrap();
    for (x, y) in a.iter().zip(&b) {
        let (LevelOutcome::Ran(x), LevelOutcome::Ran(y)) = (&x.outcome, &y.outcome) else {
            panic!("{x:?} {y:?}")
        };
        assert_eq!(x.result, y.result);
    }
}

#[test]
fn one_block_of_the_block_cyclic_add_runs_exactly_as_the_one_core_add() {
    // vec_add_blocks.yaml with one block is vec_add_db.yaml: `t` from `block` = 0 by `blocks`
    // = 1 over the same rows, the same double-buffered tiles. Its loop start is an expression
    // of `block`, and the sync pass counts such a loop as (t - block) / blocks, so it rotates
    // the same two event ids per pair: every pipe of the one core must account the same cycles
    let config = config();
    let text = std::fs::read_to_string(crate::root().join("programs/vec_add_blocks.yaml")).unwrap();
    let one = sim::load_kernel(&text, "vec_add_blocks.yaml", &config, &[], Some(1)).unwrap();
    let launched = pipeline::simulate_kernel(&one, &config, &opts()).unwrap();
    let plain = pipeline::simulate(&load("programs/vec_add_db.yaml"), &config, &opts()).unwrap();
    assert_eq!(launched.result.total_cycles, plain.result.total_cycles);
    assert_eq!(launched.result.cores, plain.result.cores);
    assert_eq!(launched.parts[0].auto_sync, plain.parts[0].auto_sync);
}

#[test]
fn every_core_of_a_run_names_the_program_of_its_part_and_one_program_is_a_launch_of_one() {
    let config = config();
    // a mixed kernel at two blocks: the cube core then the vector cores of each block
    let text = std::fs::read_to_string(crate::root().join(MIXED)).unwrap();
    let k = sim::load_kernel(&text, MIXED, &config, &[], Some(2)).unwrap();
    let sim = pipeline::simulate_kernel(&k, &config, &opts()).unwrap();
    assert_eq!(sim.parts.len(), 2);
    let aic = config.core(k.parts[0].core).name.as_str();
    let mut per_part = [0; 2];
    for (core, run) in sim.result.cores.iter().enumerate() {
        let program = sim.program_of(&config, core);
        // the core runs its own type's part, whatever its place in the launch
        assert_eq!(program.core, run.core, "core {core}");
        let part = usize::from(config.core(run.core).name != aic);
        assert!(
            std::ptr::eq(program, &sim.parts[part].program),
            "core {core}"
        );
        per_part[part] += 1;
    }
    // one cube core and its vector cores per block
    assert_eq!(per_part[0], 2);
    assert_eq!(
        per_part[1],
        2 * config.chip.as_ref().unwrap().aiv_per_aic as usize
    );

    // one program: prepared alone and run as a launch of one part, or as a kernel of one
    // part, the same run
    let p = load("programs/vec_add_db.yaml");
    let prepared = pipeline::prepare(&p, &config, &opts()).unwrap();
    let alone = pipeline::run_prepared(prepared.into(), &config, &opts(), &mut ()).unwrap();
    let kernel = pipeline::simulate_kernel(&sim::Kernel::single(p), &config, &opts()).unwrap();
    assert_eq!(alone.parts.len(), 1);
    assert_eq!(alone.result, kernel.result);
    assert_eq!(alone.hazards, kernel.hazards);
    assert_eq!(alone.dropped, kernel.dropped);
    assert!(std::ptr::eq(
        alone.program_of(&config, 0),
        &alone.parts[0].program
    ));
}
