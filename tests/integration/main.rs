//! Integration tests of the `npusim` command line and of the whole pipeline
//! (load -> plan -> run -> report) on the shipped programs. One module per scenario.

mod bad_inputs;
mod calibrate_cli;
mod check_cli;
mod cli;
mod compare_cli;
mod compiled_kernels;
mod conformance_script;
mod critical_cli;
mod diff;
mod docs;
mod double_buffers;
mod dropped_work;
mod hostile;
mod html_cli;
mod injection;
mod kernel_cli;
mod launch_html;
mod limits;
mod mlir_cli;
mod mlir_kernels;
mod opt_cli;
mod opt_sync;
mod output_safety;
mod outputs;
mod pack_cli;
mod plan_cli;
mod plans;
mod programs;
mod race_cli;
mod roofline;
mod roofline_run;
mod shipped_configs;
mod speedup;
mod sweep_cli;
mod sync_cli;
mod trace_cli;

use sim::{Config, Kernel, Program};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh empty directory for one test's files: under cargo's target directory
/// (`CARGO_TARGET_TMPDIR`, which follows `CARGO_TARGET_DIR`), never in the source tree, and
/// named by the test so that tests running in parallel never share one.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The workspace root (where `programs/` and `tests/fixtures/` live).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn default_config() -> Config {
    let text =
        sim::builtin::builtin(sim::builtin::DEFAULT).expect("the default config is built in");
    sim::load_config(text, "<built-in>").unwrap_or_else(|e| panic!("default config: {e}"))
}

/// The built-in config with its optional refinements (vector blocks, UB banks, the gm memory
/// system, scalar gm latency) off: the basic timing rules alone.
pub const IDEAL_CONFIG: &str = "docs/examples/ascend910b_ideal.yaml";

pub fn ideal_config() -> Config {
    let text = std::fs::read_to_string(root().join(IDEAL_CONFIG)).unwrap();
    sim::load_config(&text, IDEAL_CONFIG).unwrap_or_else(|e| panic!("{IDEAL_CONFIG}: {e}"))
}

/// Loads a program on the default config.
pub fn load_default(path: &Path) -> (Config, Program) {
    load_on(path, default_config())
}

/// Loads a program on `config`.
pub fn load_on(path: &Path, config: Config) -> (Config, Program) {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let program =
        sim::load_program(&text, &name, &config, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    (config, program)
}

/// Loads a kernel (a single-type program, or a mixed kernel's parts) on the default config.
pub fn load_kernel_default(path: &Path) -> (Config, Kernel) {
    load_kernel_on(path, default_config())
}

/// Loads a kernel on `config`, as the command line does (`launch:` as written).
pub fn load_kernel_on(path: &Path, config: Config) -> (Config, Kernel) {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let kernel = sim::load_kernel(&text, &name, &config, &[], None)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (config, kernel)
}

/// Loads a kernel on the default config and plans, synchronises and runs every part of it as
/// one launch (every core), with the race checker and the plan validator, as `npusim run` does.
pub fn simulate_kernel(path: &Path) -> (Config, Kernel, pipeline::Simulation) {
    let (config, kernel) = load_kernel_default(path);
    let name = path.file_name().unwrap().to_string_lossy();
    let opts = pipeline::Options {
        validate: true,
        ..Default::default()
    };
    let sim = pipeline::simulate_kernel(&kernel, &config, &opts)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (config, kernel, sim)
}

/// Loads a program on the default config and plans, synchronises and runs it with the race
/// checker and the plan validator, through the pipeline library the command line uses.
pub fn simulate(path: &Path) -> (Config, pipeline::Simulation) {
    simulate_on(path, default_config())
}

/// [`simulate`] on `config`.
pub fn simulate_on(path: &Path, config: Config) -> (Config, pipeline::Simulation) {
    let (config, program) = load_on(path, config);
    let name = path.file_name().unwrap().to_string_lossy();
    let opts = pipeline::Options {
        validate: true,
        ..Default::default()
    };
    let sim =
        pipeline::simulate(&program, &config, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    (config, sim)
}

/// The keys of a JSON object, in the document's order.
pub fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// `npusim COMMAND ARGS... --format json`, which must succeed, parsed.
pub fn json_of(command: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec![command];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = npusim(&all);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{command} {args:?}: {}",
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
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
