//! Conformance read: every AscendNPU-IR v1.2.0 lit test input under Dialect/HIVM and
//! bishengir-compile/hfusion goes through the MLIR reader. The files are not in the repository
//! (they are AscendNPU-IR's); the test reads them from `NPUSIM_CONFORMANCE_DIR` or
//! `../shared/conformance` next to the workspace and skips with one line without them.

use sim::mlir::ast::OpKind;
use std::path::{Path, PathBuf};

fn conformance_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("NPUSIM_CONFORMANCE_DIR") {
        let p = PathBuf::from(d);
        return p.is_dir().then_some(p);
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    p.is_dir().then_some(p)
}

fn mlir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            mlir_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "mlir") {
            out.push(p);
        }
    }
}

/// Files that do not read, each with why. Empty: every input is syntactically valid MLIR. The
/// five `-verify-diagnostics` files (plan-memory, plan-work-space-memory, mark-multi-buffer,
/// sync-solver-cross-core and -2) expect errors from the passes (`ub overflow, requires ...
/// bits`, `read before first write`), not from the parser, so they read too.
const EXPECTED_FAILURES: &[(&str, &str)] = &[];

/// What v1.2.0's two folders hold: 45 files, 202 `// -----` chunks (counting the empty chunk a
/// trailing separator leaves).
const FILES_READ: usize = 45;
const CHUNKS_READ: usize = 202;

/// Op names whose every occurrence outside comments is one op.
const CROSS_CHECKED: &[&str] = &[
    "hivm.hir.load",
    "hivm.hir.store",
    "hivm.hir.vadd",
    "hivm.hir.pointer_cast",
    "hivm.hir.set_flag",
    "hivm.hir.wait_flag",
    "hivm.hir.pipe_barrier",
    "hivm.hir.sync_block_set",
    "hivm.hir.sync_block_wait",
    "hivm.hir.mmadL1",
    "hivm.hir.fixpipe",
    "memref.alloc",
    "memref.subview",
    "annotation.mark",
    "arith.constant",
    "scf.for",
    "scf.if",
    "scf.while",
    "scf.yield",
    "func.func",
    "tensor.empty",
    "linalg.elemwise_binary",
];

/// Occurrences of `word` (not inside a longer name) in `text` with `//` comments removed.
fn count_words(text: &str, word: &str) -> usize {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .map(|l| {
            l.match_indices(word)
                .filter(|(i, _)| {
                    let before = l[..*i].chars().next_back();
                    let after = l[i + word.len()..].chars().next();
                    !before.is_some_and(is_name) && !after.is_some_and(is_name)
                })
                .count()
        })
        .sum()
}

#[test]
fn every_hivm_and_hfusion_test_input_reads() {
    let Some(root) = conformance_dir() else {
        println!(
            "skipped: no ../shared/conformance (AscendNPU-IR's tests are not in the repository)"
        );
        return;
    };
    let base = root.join("ascendnpu-ir-v1.2.0/bishengir/test");
    let mut files = Vec::new();
    mlir_files(&base.join("Dialect/HIVM"), &mut files);
    mlir_files(&base.join("bishengir-compile/hfusion"), &mut files);
    assert!(
        files.len() >= 40,
        "found only {} files under {}",
        files.len(),
        base.display()
    );
    let mut failed = Vec::new();
    let mut chunks = 0;
    let mut opaque = std::collections::BTreeMap::<String, u32>::new();
    let mut miscounted = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&base).unwrap_or(f).display().to_string();
        let text = std::fs::read_to_string(f).expect("readable test file");
        match sim::mlir::parse_file(&text, &rel) {
            Ok(c) => {
                let mut ops = 0;
                let mut by_name = std::collections::BTreeMap::<String, usize>::new();
                for chunk in &c {
                    chunk.walk(&mut |op| {
                        ops += 1;
                        *by_name.entry(op.name.clone()).or_insert(0) += 1;
                        if matches!(op.kind, OpKind::Opaque { .. }) {
                            *opaque.entry(op.name.clone()).or_insert(0) += 1;
                        }
                    });
                }
                // Op boundaries come from the grammar, not lines: cross-check them against a
                // count of the op names in the text outside comments (each is written once per op).
                for name in CROSS_CHECKED {
                    let written = count_words(&text, name);
                    let read = by_name.get(*name).copied().unwrap_or(0);
                    if written != read {
                        miscounted.push(format!(
                            "{rel}: {name} written {written} times, read {read}"
                        ));
                    }
                }
                println!("ok   {rel}: {} chunks, {ops} ops", c.len());
                chunks += c.len();
            }
            Err(e) => {
                println!("FAIL {rel}: {e}");
                failed.push(rel);
            }
        }
    }
    println!(
        "{} of {} files read ({chunks} chunks)",
        files.len() - failed.len(),
        files.len()
    );
    println!("read opaquely: {opaque:?}");
    assert!(miscounted.is_empty(), "{}", miscounted.join("\n"));
    assert_eq!(files.len() - failed.len(), FILES_READ);
    assert_eq!(chunks, CHUNKS_READ);
    let expected: Vec<&str> = EXPECTED_FAILURES.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        failed, expected,
        "files that do not read (see the FAIL lines above)"
    );
}

/// The fuzz seeds are hand-written modules of every family: the good ones read, and the bad
/// one reports the first error of each of its two broken chunks.
#[test]
fn fuzz_seed_modules_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/mlir");
    let mut files = Vec::new();
    mlir_files(&dir, &mut files);
    assert!(
        files.len() >= 10,
        "{} seeds in {}",
        files.len(),
        dir.display()
    );
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(f).unwrap();
        let r = sim::mlir::parse_file(&text, &name);
        if name.starts_with("bad_") {
            let e = r.expect_err("a bad seed");
            let got: Vec<String> = e.diagnostics.iter().map(|d| d.to_string()).collect();
            assert_eq!(
                got,
                vec![
                    "bad_unbalanced.mlir:3:1: error: in `hivm.hir.load`: expected `,` or `:`, found `}` (hint: write `outs(%a : type)`: each operand of `outs` needs its type)",
                    "bad_unbalanced.mlir:6:20: error: in `op`: unterminated string (hint: close the string with `\"` on the same line)",
                ]
            );
        } else if let Err(e) = r {
            panic!("{e}");
        }
    }
}
