//! A caller's observer watches the run beside the race checker: it sees every instruction the
//! run counts, and neither it nor the race checker changes a cycle.

use crate::{config, load, opts};
use sim::engine::{Issue, Observer};

#[derive(Default)]
struct Count {
    issued: u64,
    started: u64,
    last_start: u64,
}

impl Observer for Count {
    fn on_issue(&mut self, _: &Issue<'_>) {
        self.issued += 1;
    }

    fn on_start(&mut self, _: u64, start: u64, _: u64) {
        assert!(start >= self.last_start, "starts come in time order");
        self.last_start = start;
        self.started += 1;
    }
}

#[test]
fn an_observer_sees_every_instruction_with_or_without_the_race_checker() {
    for file in [
        "programs/vec_add_db.yaml",
        "programs/matmul.yaml",
        "programs/softmax.yaml",
    ] {
        let p = load(file);
        let mut seen = Count::default();
        let checked = pipeline::simulate_observed(&p, &config(), &opts(), &mut seen).unwrap();
        // control ops are not instructions S sends; everything else the run counts is seen
        let loops_and_ifs: u64 = checked.result.cores[0]
            .pipe(sim::Pipe::S)
            .unwrap()
            .instructions;
        assert_eq!(seen.issued, seen.started, "{file}");
        assert!(seen.issued > 0);
        assert!(seen.issued <= checked.result.instructions(), "{file}");
        assert!(
            seen.issued + loops_and_ifs >= checked.result.instructions(),
            "{file}"
        );
        assert_eq!(checked.hazards.as_deref(), Some(&[][..]), "{file}");

        let mut o = opts();
        o.race_check = false;
        let mut seen2 = Count::default();
        let plain = pipeline::simulate_observed(&p, &config(), &o, &mut seen2).unwrap();
        assert!(plain.hazards.is_none());
        assert_eq!(
            plain.result, checked.result,
            "{file}: the checker changed the run"
        );
        assert_eq!(seen2.issued, seen.issued, "{file}");
    }
}

/// Watches nothing but asks for the global order: the engine then schedules a launch core
/// by core in cycle order instead of letting cores run ahead through local events.
struct Ordered;

impl Observer for Ordered {
    fn watches_issues(&self) -> bool {
        false
    }
}

#[test]
fn a_launch_runs_the_same_whether_its_cores_run_ahead_or_go_in_one_global_order() {
    let config = config();
    for (file, blocks) in [
        ("programs/vec_add_blocks.yaml", [1, 8, 48]),
        ("programs/matmul_add.yaml", [1, 2, 24]),
        ("programs/matmul_add_manual.yaml", [1, 2, 24]),
        ("programs/flash_attention.yaml", [1, 2, 24]),
        ("programs/flash_attention_prefetch.yaml", [1, 2, 24]),
    ] {
        let text = std::fs::read_to_string(crate::root().join(file)).unwrap();
        for b in blocks {
            let k = sim::load_kernel(&text, file, &config, &[], Some(b)).unwrap();
            let parts = pipeline::prepare_kernel(&k, &config, &opts())
                .unwrap()
                .parts;
            let addresses: Vec<sim::Addresses> =
                parts.iter().map(|p| p.planned.plan.addresses()).collect();
            let launch: Vec<(&sim::Program, &sim::Addresses)> =
                parts.iter().map(|p| &p.program).zip(&addresses).collect();
            let ahead =
                sim::engine::run_launch(&launch, &config, Default::default(), &mut ()).unwrap();
            let ordered =
                sim::engine::run_launch(&launch, &config, Default::default(), &mut Ordered)
                    .unwrap();
            assert_eq!(ahead, ordered, "{file} --blocks {b}");
            assert!(
                ahead.findings.is_empty() && ahead.deadlock.is_none(),
                "{file}"
            );
        }
    }
}
