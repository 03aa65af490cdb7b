//! Every program in `programs/`: it loads, plans, synchronises (`sync: auto`) and runs on the
//! default config, race-free, its accounting adds up (in the result and in the JSON a user
//! reads), and its reports are snapshots. Plans at every level are snapshots in `plans.rs`;
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

        let json = reports::run_json(&config, &(&sim).into());
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

        insta::assert_snapshot!("report", reports::run_text(&config, &(&sim).into()));
        insta::assert_json_snapshot!("json", json);
    });
}
