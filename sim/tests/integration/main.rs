//! Integration tests of the `sim` crate: one binary, one module per scenario.

mod banks;
mod cross_core;
mod golden;
mod guards;
mod load_errors;
mod memory;
mod properties;
mod race;
