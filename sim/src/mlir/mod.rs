//! HIVM MLIR in (docs/mlir.md): the reader builds the located tree of [`ast`]; the lowering
//! turns a function into the program model the planner, sync pass and engine read.

pub mod ast;
