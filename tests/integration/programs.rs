//! Every program in `programs/`: it loads as a kernel, plans, synchronises (`sync: auto`) and
//! runs on the default config as the command line runs it (a mixed kernel's every part, a
//! launch's every core), race-free and clean, dropping no work, every core of it accounting for
//! every cycle; its reports are snapshots. Plans at every level are snapshots in `plans.rs`; auto sync at
//! every level and under memory pressure is `planner`'s `sync` test.

use crate::simulate_kernel;
use serde_json::Value;

/// Asserts the accounting identity of one core's `pipes` (a run document's `pipes`, or a
/// `launch.cores` entry's): for every pipe, busy + the stalls + starved + idle = `total`.
fn accounts_for_every_cycle(pipes: &Value, total: u64, what: &str) {
    let pipes = pipes.as_object().unwrap();
    assert!(!pipes.is_empty(), "{what}: no pipes");
    for (pipe, p) in pipes {
        let stalls: u64 = p["stalls"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let sum = p["busy"].as_u64().unwrap()
            + stalls
            + p["starved"].as_u64().unwrap()
            + p["idle"].as_u64().unwrap();
        assert_eq!(sum, total, "{what} {pipe}: busy + stalls + starved + idle");
    }
}

#[test]
fn every_program_runs_and_accounts_for_every_cycle() {
    insta::glob!("../../programs", "*.yaml", |path| {
        let (config, kernel, sim) = simulate_kernel(path);
        let (result, hazards) = (&sim.result, sim.hazards.as_deref().unwrap());
        assert!(
            hazards.is_empty(),
            "{}: a shipped program must be race-free: {:#?}",
            path.display(),
            hazards.iter().map(|h| h.to_string()).collect::<Vec<_>>()
        );
        assert!(result.total_cycles > 0, "{}", path.display());
        assert!(
            result.deadlock.is_none() && result.findings.is_empty(),
            "{}: a shipped program must run clean: {:?} {:?}",
            path.display(),
            result.deadlock,
            result.findings
        );
        // every shipped program does all its work: nothing stored to is left unwritten, no
        // row of what it loads left unread
        assert!(
            sim.dropped.is_empty(),
            "{}: a shipped program drops work: {:?}",
            path.display(),
            sim.dropped
        );

        let json = reports::run_json(&config, &(&sim).into());
        let total = json["total_cycles"].as_u64().unwrap();
        assert_eq!(total, result.total_cycles, "{}", path.display());
        accounts_for_every_cycle(&json["pipes"], total, &path.display().to_string());
        // every core of the launch: as many as the kernel's parts and blocks make, each ending
        // by the launch's end and accounting for all of it
        let parts: Vec<&sim::Program> = kernel.parts.iter().collect();
        let slots = sim::launch::slots(&parts, &config);
        let cores = json["launch"]["cores"].as_array().unwrap();
        assert_eq!(cores.len(), slots.len(), "{}", path.display());
        let mut last = 0;
        for (core, slot) in cores.iter().zip(&slots) {
            let what = format!("{} {}", path.display(), core["name"]);
            assert_eq!(
                core["block"].as_u64(),
                Some(u64::from(slot.block)),
                "{what}"
            );
            assert_eq!(core["type"], config.core(slot.core).name.as_str(), "{what}");
            let end = core["end_cycle"].as_u64().unwrap();
            assert!(
                end <= total,
                "{what}: ends at {end}, after the launch's {total}"
            );
            last = last.max(end);
            accounts_for_every_cycle(&core["pipes"], total, &what);
        }
        // the launch ends with its last core
        assert_eq!(last, total, "{}", path.display());

        // the documents' determinism: reports' integration tests
        insta::assert_snapshot!("report", reports::run_text(&config, &(&sim).into()));
        insta::assert_json_snapshot!("json", json);
    });
}
