//! Integration tests of the planner crate, one module per scenario.

mod compat;
mod conformance;
mod inplace;
mod liveness;
mod nested_buffers;
mod oracle;
mod pack_exact;
mod pack_fast;
mod place;
mod properties;
mod reuse_levels;
mod sync;
mod tvm_lesson;
mod validate;

use sim::{Config, Program};
use std::path::PathBuf;

pub fn config() -> Config {
    sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap()
}

pub fn load(text: &str) -> Program {
    sim::load_program(text, "p.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Every shipped program: (file name, text).
pub fn shipped_programs() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../programs");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no programs in {}", dir.display());
    out
}

/// Every part of every shipped program, loaded: (`file` for a single-type program, `file aic`
/// and `file aiv` for a mixed kernel's parts, program). Each part is planned and synchronised
/// on its own, so what holds per program holds per part.
pub fn shipped_parts() -> Vec<(String, Program)> {
    let mut out = Vec::new();
    for (name, text) in shipped_programs() {
        for (name, p) in kernel_parts(&name, &text) {
            out.push((name, p));
        }
    }
    out
}

/// A program file's parts, named as [`shipped_parts`] names them.
pub fn kernel_parts(name: &str, text: &str) -> Vec<(String, Program)> {
    let config = config();
    let k = sim::load_kernel(text, name, &config, &[], None).unwrap_or_else(|e| panic!("{e}"));
    let mixed = k.parts.len() > 1;
    k.parts
        .into_iter()
        .map(|p| {
            let n = if mixed {
                format!("{name} {}", config.core(p.core).name)
            } else {
                name.to_string()
            };
            (n, p)
        })
        .collect()
}

pub fn buf(p: &Program, name: &str) -> sim::BufferId {
    sim::BufferId::new(p.buffers.iter().position(|b| b.name == name).unwrap())
}
