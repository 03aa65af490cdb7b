//! Integration tests of the report renderers on real programs, one module per scenario.

mod documents;
mod mlir;
mod program_yaml;
