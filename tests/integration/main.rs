//! Integration tests of the `npusim` command line and of the whole pipeline
//! (load -> plan -> run -> report) on the shipped programs. One module per scenario.

mod cli;
mod compare_cli;
mod pack_cli;
mod plan_cli;
mod plans;
mod programs;
mod race_cli;
mod speedup;
mod sync_cli;

use planner::Plan;
use sim::{Config, Program, RunResult};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (where `programs/` and `tests/fixtures/` live).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn default_config() -> Config {
    let text =
        sim::builtin::builtin(sim::builtin::DEFAULT).expect("the default config is built in");
    sim::load_config(text, "<built-in>").unwrap_or_else(|e| panic!("default config: {e}"))
}

/// Loads a program on the default config.
pub fn load_default(path: &Path) -> (Config, Program) {
    let config = default_config();
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let program =
        sim::load_program(&text, &name, &config, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    (config, program)
}

/// Loads, plans and runs a program on the default config, with the race checker.
pub fn simulate(path: &Path) -> Simulated {
    let (config, program) = load_default(path);
    let name = path.file_name().unwrap().to_string_lossy();
    let plan = planner::plan_program(&program, &config, &Default::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .plan;
    let synced = planner::synchronize(&program, &config, &plan);
    let auto_sync = (program.sync == sim::program::SyncMode::Auto).then_some(synced.stats);
    let (offsets, slot_bytes) = plan.addresses();
    let placement = sim::race::Placement {
        offsets: &offsets,
        slot_bytes: &slot_bytes,
    };
    let r = sim::race::check(&synced.program, &config, &placement)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    Simulated {
        config,
        program: synced.program,
        plan,
        result: r.result,
        hazards: r.hazards,
        auto_sync,
    }
}

/// What [`simulate`] produced: the program that ran is the synchronised one.
pub struct Simulated {
    pub config: Config,
    pub program: Program,
    pub plan: Plan,
    pub result: RunResult,
    pub hazards: Vec<sim::Hazard>,
    /// What the sync pass inserted, for a `sync: auto` program.
    pub auto_sync: Option<planner::SyncStats>,
}

/// Runs the `npusim` binary in the workspace root.
pub fn npusim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("npusim runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
