//! The npusim machine: chip configs, kernel programs and the cycle engine.
//!
//! ```text
//! config.yaml + program.yaml ──> load (parse + validate, every problem at once)
//!                            ──> Program (typed ids, folded params) + Config
//!                            ──> engine::run ──> RunResult (per-pipe accounting, findings)
//! ```
//!
//! Nothing here touches files or the terminal: callers pass text in and get values out.

pub mod addresses;
pub mod builtin;
pub mod config;
pub mod coverage;
pub mod critical;
pub mod diag;
pub mod engine;
pub mod expr;
pub mod footprint;
pub mod guard;
pub mod ids;
pub mod launch;
pub mod limits;
pub mod load;
pub mod mlir;
pub mod program;
pub mod race;
// issue 29's frozen copy of the engine, which the rebuilt engine is compared against
#[cfg(test)]
mod reference;
pub mod text;
pub mod types;
pub mod written;
pub mod yaml;

pub use addresses::Addresses;
pub use config::Config;
pub use diag::{Diagnostic, LoadError};
pub use engine::{run, run_observed, run_placed, Observer, RunError, RunResult};
pub use ids::{BufferId, CoreId, OpId, TensorId, VarId, ViewId};
pub use load::{load_config, load_kernel, load_launched, load_program};
pub use program::{Kernel, Program};
pub use race::{Hazard, HazardKind};
pub use types::{Dtype, Pipe, Space, VecOp};
