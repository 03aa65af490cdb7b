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
        let loops_and_ifs: u64 = checked.result.pipe(sim::Pipe::S).unwrap().instructions;
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
