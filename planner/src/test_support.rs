//! Helpers the planner's unit tests share: the default config and small vector-core programs.

use sim::{Config, Program};

pub fn config() -> Config {
    sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap()
}

/// A `sync: manual` program on the vector core: `rest` follows `kernel`, `core` and `sync`.
pub fn vector_program(rest: &str) -> Program {
    let text = format!("kernel: k\ncore: aiv\nsync: manual\n{rest}");
    sim::load_program(&text, "p.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"))
}
