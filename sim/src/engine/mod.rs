//! The cycle engine (DESIGN §7). OWNED BY THE ENGINE HELPER: replace this file.

mod result;

pub use result::*;

use crate::config::Config;
use crate::program::Program;

/// Runs `program` on the core it names. The program must have been loaded against `config`.
pub fn run(program: &Program, config: &Config) -> Result<RunResult, RunError> {
    let _ = (program, config);
    todo!("engine")
}
