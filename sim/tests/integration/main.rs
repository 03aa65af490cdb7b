//! Integration tests of the `sim` crate: one binary, one module per scenario.

mod banks;
mod cross_core;
mod golden;
mod guards;
mod load_errors;
mod memory;
mod mlir_read;
mod mmad_sizes;
mod properties;
mod race;
mod race_strided;
