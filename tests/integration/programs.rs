//! Every program in `programs/`: it loads, plans and runs on the default config, race-free, its
//! accounting adds up (in the result and in the JSON a user reads), and its reports are
//! snapshots. Plans
//! at every level are snapshots in `plans.rs`.
//!
//! `sync: auto` programs are planned (`plans.rs`) but not run here: `run` refuses them until
//! the sync pass exists (issue 5), which `cli::sync_auto_is_refused_by_run_only` checks.

use crate::simulate;
use sim::program::SyncMode;

#[test]
fn every_program_runs_and_accounts_for_every_cycle() {
    insta::glob!("../../programs", "*.yaml", |path| {
        if crate::load_default(path).1.sync == SyncMode::Auto {
            return;
        }
        let (config, program, plan, result, hazards) = simulate(path);
        assert!(
            hazards.is_empty(),
            "{}: a shipped program must be race-free: {:#?}",
            path.display(),
            hazards.iter().map(|h| h.to_string()).collect::<Vec<_>>()
        );
        result
            .check_accounting()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(result.total_cycles > 0, "{}", path.display());
        assert!(
            result.deadlock.is_none() && result.findings.is_empty(),
            "{}: a shipped program must run clean: {:?} {:?}",
            path.display(),
            result.deadlock,
            result.findings
        );

        let json = reports::run_json(&program, &config, &plan, &result, Some(&hazards));
        let total = json["total_cycles"].as_u64().unwrap();
        let pipes = json["pipes"].as_object().unwrap();
        assert_eq!(pipes.len(), result.pipes.len());
        for (name, p) in pipes {
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
            assert_eq!(sum, total, "{}: pipe {name}", path.display());
        }

        insta::assert_snapshot!(
            "report",
            reports::run_text(&program, &config, &plan, &result, Some(&hazards))
        );
        insta::assert_json_snapshot!("json", json);
    });
}
