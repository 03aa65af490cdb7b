//! The InjectSync compatibility mode on the shipped programs: what it inserts keeps every
//! program free of races and deadlocks under npusim's race checker (InjectSync orders whole
//! buffers, so it may order more than npusim's pass, never less than the bytes need), except
//! where InjectSync leaves the order to HIVM's template library: two `mmadL1`s accumulating into
//! one L0C tile, which the library orders with its own `pipe_barrier(PIPE_M)` (docs/sync.md,
//! "InjectSync compatibility"), and which npusim's race checker therefore reports.

use super::{config, shipped_programs};
use planner::{plan_program, synchronize_compat, CompatOptions, PlanOptions};
use sim::program::SyncMode;

#[test]
fn compat_sync_is_race_free_on_shipped_programs() {
    let config = config();
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, text) in shipped_programs() {
        let kernel = sim::load_kernel(&text, &name, &config, &[], None).unwrap();
        // a mixed kernel's parts wait for each other across cores: InjectSync handles one core
        let [program] = &kernel.parts[..] else {
            continue;
        };
        if program.sync != SyncMode::Auto {
            continue;
        }
        let planned = plan_program(program, &config, &PlanOptions::default()).unwrap();
        let opts = CompatOptions { device_entry: true };
        let synced = synchronize_compat(program, &planned.plan, &opts);
        assert_eq!(synced.program.sync, SyncMode::Manual, "{name}");
        let addresses = planned.plan.addresses();
        match sim::race::check(&synced.program, &config, &addresses) {
            Ok(run) => {
                // the library's M -> M order: an mmad_l1 against its own next instance on M
                let left: Vec<_> = run
                    .hazards
                    .iter()
                    .filter(|h| {
                        !(h.first.op == h.second.op
                            && h.first.pipe == sim::Pipe::M
                            && h.second.pipe == sim::Pipe::M
                            && h.first.name == "mmad_l1")
                    })
                    .collect();
                if let Some(h) = left.first() {
                    failures.push(format!("{name}: {} hazards, first {h:?}", left.len()));
                }
            }
            Err(e) => failures.push(format!("{name}: {e:?}")),
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 5, "{checked}");
}
