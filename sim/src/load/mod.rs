//! Loading and validating configs (docs/config.md) and programs (docs/programs.md).
//!
//! Nothing stops at the first problem: every step reports into one list of diagnostics and
//! returns what it could build, and the result is rejected at the end if the list is not empty.
//! Diagnostic paths use the logical form (`body[0].for.body[2].vadd.out`), in which a
//! loop's or branch's blocks hang under the op key; [`locate`] maps them back to the YAML
//! layout (`body[0].body[2].vadd.out`) to find line and column.

mod config;
mod loader;
mod operand;
mod ops;
mod program;
pub mod reader;

use crate::config::Config;
use crate::diag::{Diagnostic, LoadError};
use crate::program::{Kernel, Program};
use crate::yaml::{self, Seg};
use reader::Reader;

/// Parses and validates a chip config. `file` names the source in diagnostics.
pub fn load_config(text: &str, file: &str) -> Result<Config, LoadError> {
    let mut r = Reader::new(file);
    let root = parse(text, &mut r)?;
    let cfg = config::config(&mut r, &root);
    finish(&root, r, cfg)
}

/// Parses and validates a kernel program against `config`. `params` are `--param` overrides.
pub fn load_program(
    text: &str,
    file: &str,
    config: &Config,
    params: &[(String, i64)],
) -> Result<Program, LoadError> {
    load_launched(text, file, config, params, None)
}

/// [`load_program`] with `--blocks`: `blocks` replaces the program's `launch.blocks`.
pub fn load_launched(
    text: &str,
    file: &str,
    config: &Config,
    params: &[(String, i64)],
    blocks: Option<u32>,
) -> Result<Program, LoadError> {
    if crate::mlir::looks_like_mlir(file, text) {
        let mut k = crate::mlir::load_kernel(text, file, config, params, blocks)?;
        return Ok(k.parts.remove(0));
    }
    let mut r = Reader::new(file);
    let root = parse(text, &mut r)?;
    if program::is_mixed(&root) {
        r.error_hint(
            "",
            "this is a mixed kernel (aic: and aiv: parts), which loads as a kernel, not a program",
            Some("load it with load_kernel".into()),
        );
        return finish(&root, r, None);
    }
    let prog = program::program(&mut r, &root, config, params, blocks);
    if let Some(p) = &prog {
        program::launch_state(&mut r, &[p], config, blocks.is_some());
    }
    finish(&root, r, prog)
}

/// Parses and validates a kernel against `config`: a single-type program (one part) or a
/// mixed kernel with `aic:` and `aiv:` parts (docs/programs.md, "Mixed kernels"). `params`
/// are `--param` overrides; `blocks` (`--blocks`) replaces `launch.blocks`.
pub fn load_kernel(
    text: &str,
    file: &str,
    config: &Config,
    params: &[(String, i64)],
    blocks: Option<u32>,
) -> Result<Kernel, LoadError> {
    if crate::mlir::looks_like_mlir(file, text) {
        return crate::mlir::load_kernel(text, file, config, params, blocks);
    }
    let mut r = Reader::new(file);
    let root = parse(text, &mut r)?;
    let kernel = program::kernel(&mut r, &root, config, params, blocks);
    finish(&root, r, kernel)
}

/// [`load_kernel`] of a document already in tree form: a program lowered from HIVM MLIR
/// (`crate::mlir`), whose nodes carry the MLIR positions, so every problem is located in the
/// MLIR file.
pub fn load_kernel_tree(
    root: &yaml::Node,
    file: &str,
    config: &Config,
    params: &[(String, i64)],
    blocks: Option<u32>,
    plan_only: bool,
) -> Result<Kernel, LoadError> {
    let mut r = Reader::new(file);
    r.plan_only = plan_only;
    let kernel = program::kernel(&mut r, root, config, params, blocks);
    if plan_only {
        // plan-only (`npusim opt` on lit tests): sizes, shapes and dtypes an op's operands
        // disagree on do not change which buffers it reads and writes, which is all planning
        // and synchronising look at (the op is built all the same)
        r.diags.retain(|d| !plan_only_tolerated(&d.message));
    }
    finish(root, r, kernel)
}

/// The problems a plan-only load drops ([`load_kernel_tree`]): operands disagreeing in size,
/// shape or dtype. An op with only these is built.
pub(crate) fn plan_only_tolerated(m: &str) -> bool {
    m.starts_with("size mismatch")
        || m.starts_with("shape mismatch")
        || m.starts_with("dtype mismatch")
        || (m.starts_with("mmad") && m.contains("is too small"))
}

/// Reads any other YAML input (a sweep file) with the loader's [`Reader`], so its problems
/// read like a program's: `read` walks the parsed document and reports into the reader, and
/// every problem is located at its line and column, collected before the input is rejected.
pub fn read_document<T>(
    text: &str,
    file: &str,
    read: impl FnOnce(&mut Reader, &yaml::Node) -> Option<T>,
) -> Result<T, LoadError> {
    let mut r = Reader::new(file);
    let root = parse(text, &mut r)?;
    let value = read(&mut r, &root);
    finish(&root, r, value)
}

fn parse(text: &str, r: &mut Reader) -> Result<yaml::Node, LoadError> {
    yaml::parse(text).map_err(|e| {
        let mut d = Diagnostic::error(r.file, "", format!("YAML syntax error: {}", e.message));
        d.line = e.line.or(Some(1));
        d.column = e.column.or(Some(1));
        LoadError {
            diagnostics: vec![d],
        }
    })
}

fn finish<T>(root: &yaml::Node, r: Reader, value: Option<T>) -> Result<T, LoadError> {
    let mut diags = r.diags;
    match value {
        Some(v) if diags.is_empty() => Ok(v),
        _ => {
            if diags.is_empty() {
                // every failing step reports; this guards the contract, not a known path
                diags.push(Diagnostic::error(
                    r.file,
                    "",
                    "the input could not be loaded",
                ));
            }
            locate_in(root, &mut diags);
            Err(LoadError { diagnostics: diags })
        }
    }
}

/// Fills in the line and column of every diagnostic without one, from its path in `text`
/// (parsed once). Public so problems found after loading (run errors) are located the way the
/// loader locates its own.
pub fn locate(text: &str, diags: &mut [Diagnostic]) {
    if crate::mlir::looks_like_mlir("", text) {
        let file = diags.first().map(|d| d.file.clone()).unwrap_or_default();
        crate::mlir::locate(text, &file, diags);
        return;
    }
    match yaml::parse(text) {
        Ok(root) => locate_in(&root, diags),
        Err(_) => {
            for d in diags.iter_mut().filter(|d| d.line.is_none()) {
                d.line = Some(1);
                d.column = Some(1);
            }
        }
    }
}

/// [`locate`] in a document already parsed (or lowered from MLIR).
pub fn locate_in_tree(root: &yaml::Node, diags: &mut [Diagnostic]) {
    locate_in(root, diags)
}

/// Locates each path in the tree through its YAML form, falling back to the nearest existing
/// ancestor, and to the document's start.
fn locate_in(root: &yaml::Node, diags: &mut [Diagnostic]) {
    for d in diags.iter_mut().filter(|d| d.line.is_none()) {
        let mut path = yaml_path(&d.path);
        loop {
            if let Some(n) = root.find(&yaml::split_path(&path)) {
                d.line = Some(n.line);
                d.column = Some(n.column);
                break;
            }
            if path.is_empty() {
                // the document itself (e.g. a `--param` naming no param in a file without
                // `params:`): point at its start
                d.line = Some(1);
                d.column = Some(1);
                break;
            }
            path.truncate(path.rfind(['.', '[']).unwrap_or(0));
        }
    }
}

/// The YAML layout of a logical path: `body[0].for.body[2]` -> `body[0].body[2]` (the blocks
/// of `for`/`while` and the branches of `if` are siblings of the op key in the list item).
pub(crate) fn yaml_path(design: &str) -> String {
    let segs = yaml::split_path(design);
    let mut out = String::new();
    for (i, seg) in segs.iter().enumerate() {
        match seg {
            Seg::Key(k) => {
                let after_item = i > 0 && matches!(segs[i - 1], Seg::Index(_));
                let next = match segs.get(i + 1) {
                    Some(Seg::Key(n)) => n.as_str(),
                    _ => "",
                };
                let sibling = match k.as_str() {
                    "for" | "while" => matches!(next, "body" | "buffers" | "views"),
                    "if" => matches!(next, "then" | "else"),
                    _ => false,
                };
                if after_item && sibling {
                    continue;
                }
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(n) => out.push_str(&format!("[{n}]")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_paths_map_to_yaml_paths() {
        assert_eq!(
            yaml_path("body[0].for.body[2].vadd.out"),
            "body[0].body[2].vadd.out"
        );
        assert_eq!(yaml_path("body[0].for.to"), "body[0].for.to");
        assert_eq!(yaml_path("body[1].if.then[0].load"), "body[1].then[0].load");
        assert_eq!(
            yaml_path("body[0].while.buffers.for"),
            "body[0].buffers.for"
        );
        assert_eq!(yaml_path("gm.x.dtype"), "gm.x.dtype");
        assert_eq!(yaml_path(""), "");
    }

    #[test]
    fn builtin_config_loads() {
        let text = crate::builtin::builtin("ascend910b").unwrap();
        let c = load_config(text, "<built-in ascend910b>").unwrap();
        assert_eq!(c.name, "ascend910b");
        assert_eq!(c.cores.len(), 2);
        let aiv = c.core_named("aiv").unwrap();
        assert_eq!(c.core(aiv).pipes.len(), 4);
        assert_eq!(c.paths.len(), 12);
        assert_eq!(c.vector.repeat_bytes, 256);
        assert_eq!(c.vector_cost(crate::VecOp::Vexp).cycles_per_repeat, 2);
        assert_eq!(c.vector_cost(crate::VecOp::Vadd).startup, 6);
        assert!(c.vector.ops[crate::VecOp::Vand.index()].is_none());
        assert_eq!(c.vector_cost(crate::VecOp::Vand), c.vector.default);
        assert_eq!(c.cube.fractal_k_bytes, 32);
    }

    /// A plan-only load (`npusim opt`) builds a move and a vector op whose operands disagree
    /// in dtype or size: they read and write the same buffers all the same. A full load
    /// rejects both.
    #[test]
    fn plan_only_builds_ops_whose_operands_disagree() {
        let text = "kernel: k\ncore: aiv\ngm: { a: { shape: [64], dtype: i16 } }\nbuffers: { x: { scope: ub, shape: [128], dtype: i8 }, y: { scope: ub, shape: [32], dtype: f16 } }\nbody:\n  - load: { src: a, dst: x }\n  - vabs: { ins: [x], out: y }\n";
        let config = load_config(crate::builtin::builtin("ascend910b").unwrap(), "c").unwrap();
        let mut r = Reader::new("p.yaml");
        let root = parse(text, &mut r).unwrap();
        let k = load_kernel_tree(&root, "p.yaml", &config, &[], None, true).unwrap();
        let names: Vec<&str> = k.parts[0].ops.iter().map(|o| o.kind.name()).collect();
        assert_eq!(names, vec!["load", "vabs"]);
        let e = load_kernel_tree(&root, "p.yaml", &config, &[], None, false).unwrap_err();
        assert!(
            e.diagnostics
                .iter()
                .any(|d| d.message.starts_with("dtype mismatch")),
            "{:?}",
            e.diagnostics
        );
    }

    #[test]
    fn syntax_error_is_one_located_diagnostic() {
        let e = load_config("name: [a, b\nclock_mhz: 1\n", "c.yaml").unwrap_err();
        assert_eq!(e.diagnostics.len(), 1);
        assert!(e.diagnostics[0].line.is_some());
        assert!(e.diagnostics[0].message.contains("YAML syntax error"));
    }
}

#[cfg(test)]
mod program_tests;

#[cfg(test)]
mod kernel_tests;
