//! Every program in `programs/`: it loads, plans, synchronises (`sync: auto`) and runs on the
//! default config, race-free and clean (the pipeline checks its accounting), and its reports
//! are snapshots. Plans at every level are snapshots in `plans.rs`;
//! auto sync at every level and under memory pressure is `planner`'s `sync` test.

use crate::simulate;

#[test]
fn every_program_runs_and_accounts_for_every_cycle() {
    insta::glob!("../../programs", "*.yaml", |path| {
        let (config, sim) = simulate(path);
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

        // the documents' accounting and determinism: reports' integration tests
        let json = reports::run_json(&config, &(&sim).into());
        insta::assert_snapshot!("report", reports::run_text(&config, &(&sim).into()));
        insta::assert_json_snapshot!("json", json);
    });
}
