//! Integration tests of the pipeline library on the shipped programs and fixtures: what the
//! command line, `compare` and the tests of the other crates all call. One module per scenario.

mod compare;
mod cross_sync;
mod failures;
mod kernels;
mod observers;
mod properties;

use sim::{Config, Program};
use std::path::PathBuf;

/// The workspace root (where `programs/` and `tests/fixtures/` live).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn config() -> Config {
    let text =
        sim::builtin::builtin(sim::builtin::DEFAULT).expect("the default config is built in");
    sim::load_config(text, "<built-in>").unwrap_or_else(|e| panic!("default config: {e}"))
}

/// Loads `file` (relative to the workspace root) on the default config.
pub fn load(file: &str) -> Program {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    sim::load_program(&text, file, &config(), &[]).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Loads `file` (relative to the workspace root) on the default config as a kernel: a
/// single-type program, or a mixed kernel's parts.
pub fn load_kernel(file: &str) -> sim::Kernel {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    sim::load_kernel(&text, file, &config(), &[], None).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The options tests use: the race checker and the plan validator on.
pub fn opts() -> pipeline::Options {
    pipeline::Options {
        validate: true,
        ..Default::default()
    }
}
