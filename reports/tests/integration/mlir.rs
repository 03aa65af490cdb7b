//! The HIVM MLIR writer (`reports::kernel_mlir`): every shipped program is written at each
//! stage (as written, planned, planned and synchronised), deterministically, and each output
//! is parsed by the real compiler, `bishengir-opt` 1.2.0, when it is installed (env
//! `NPUSIM_BISHENGIR_OPT`, or `target/hivm-venv` as `scripts/install-hivm` makes it; without
//! it the check says it is skipped, and fails under `CI`). Snapshots of two small programs at
//! each stage; what HIVM cannot express is refused by name.

use planner::PlanOptions;
use reports::{kernel_mlir, MlirPart};
use sim::{Config, Kernel, Program};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn config() -> Config {
    let name = sim::builtin::DEFAULT;
    sim::load_config(sim::builtin::builtin(name).unwrap(), name).unwrap()
}

fn kernel(path: &Path, config: &Config) -> Kernel {
    let text = std::fs::read_to_string(path).unwrap();
    sim::load_kernel(&text, &path.display().to_string(), config, &[], None)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn kernel_of(text: &str, config: &Config) -> Kernel {
    sim::load_kernel(text, "t.yaml", config, &[], None).unwrap_or_else(|e| panic!("{e}"))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Written,
    Planned,
    Synced,
}

/// The kernel at `stage`, as `npusim opt` writes it.
fn write(kernel: &Kernel, config: &Config, stage: Stage) -> Result<String, Vec<String>> {
    if stage == Stage::Written {
        let parts: Vec<MlirPart> = kernel
            .parts
            .iter()
            .map(|program| MlirPart {
                program,
                plan: None,
            })
            .collect();
        return kernel_mlir(&parts, config);
    }
    let kernel = if stage == Stage::Synced {
        planner::synchronize_kernel(kernel, config).unwrap().kernel
    } else {
        kernel.clone()
    };
    let planned = pipeline::plan_kernel(&kernel, config, &PlanOptions::default(), true).unwrap();
    let programs: Vec<Program> = kernel
        .parts
        .iter()
        .zip(&planned)
        .map(|(p, pl)| {
            if stage == Stage::Synced {
                planner::synchronize(p, config, &pl.plan).program
            } else {
                p.clone()
            }
        })
        .collect();
    let parts: Vec<MlirPart> = programs
        .iter()
        .zip(&planned)
        .map(|(program, p)| MlirPart {
            program,
            plan: Some(&p.plan),
        })
        .collect();
    kernel_mlir(&parts, config)
}

/// `bishengir-opt`, if installed: `NPUSIM_BISHENGIR_OPT`, else the venv `scripts/install-hivm`
/// makes under the workspace's `target/`.
pub fn bishengir_opt() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NPUSIM_BISHENGIR_OPT") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "NPUSIM_BISHENGIR_OPT={} is not a file",
            p.display()
        );
        return Some(p);
    }
    let lib = root().join("target/hivm-venv/lib");
    let found = std::fs::read_dir(lib).ok().and_then(|dir| {
        dir.flatten().find_map(|e| {
            let p = e.path().join("site-packages/ascendnpuir/bin/bishengir-opt");
            p.is_file().then_some(p)
        })
    });
    if found.is_none() {
        no_opt();
    }
    found
}

fn no_opt() {
    println!("skipped: bishengir-opt not installed (scripts/install-hivm)");
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but bishengir-opt is not installed: run scripts/install-hivm"
    );
}

/// Runs `bishengir-opt FILE` (no pass: it parses, verifies and prints back) on `text`.
fn parses(opt: &Path, text: &str, name: &str) -> Result<(), String> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mlir_writer");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.mlir"));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(opt).arg(&file).output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{name}: bishengir-opt refused it:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_program_is_written_at_every_stage_and_bishengir_opt_parses_it() {
    let config = config();
    let opt = bishengir_opt();
    let mut failures = Vec::new();
    let mut written = 0;
    for path in shipped() {
        let k = kernel(&path, &config);
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        for stage in [Stage::Written, Stage::Planned, Stage::Synced] {
            let text = write(&k, &config, stage)
                .unwrap_or_else(|e| panic!("{name} {stage:?}: {}", e.join("\n")));
            assert_eq!(
                text,
                write(&k, &config, stage).unwrap(),
                "{name} {stage:?}: not deterministic"
            );
            assert!(
                text.starts_with("module {\n") && text.ends_with("}\n"),
                "{name}"
            );
            // one function per part, with its core type
            assert_eq!(text.matches("func.func @").count(), k.parts.len(), "{name}");
            // stage 1 has allocs and no pointer_casts, the planned stages the opposite
            let allocs = text.matches("memref.alloc()").count();
            let casts = text.matches("hivm.hir.pointer_cast(").count();
            let buffers: usize = k.parts.iter().map(|p| p.buffers.len()).sum();
            match stage {
                Stage::Written => assert_eq!((allocs, casts), (buffers, 0), "{name}"),
                _ => assert_eq!((allocs, casts), (0, buffers), "{name} {stage:?}"),
            }
            if let Some(opt) = &opt {
                if let Err(e) = parses(opt, &text, &format!("{name}.{stage:?}")) {
                    failures.push(e);
                }
            }
            written += 1;
        }
    }
    assert_eq!(written, shipped().len() * 3);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What the sync pass inserted is in the third stage's text, one line per inserted op, and
/// nothing of it in the second.
#[test]
fn the_synchronised_stage_writes_every_inserted_flag() {
    let config = config();
    let k = kernel(&root().join("programs/softmax.yaml"), &config);
    let planned = write(&k, &config, Stage::Planned).unwrap();
    let synced = write(&k, &config, Stage::Synced).unwrap();
    assert!(!planned.contains("set_flag") && !planned.contains("pipe_barrier"));
    let plan = pipeline::plan_kernel(&k, &config, &PlanOptions::default(), true).unwrap();
    let s = planner::synchronize(k.first(), &config, &plan[0].plan).program;
    let count = |f: fn(&sim::program::OpKind) -> bool| s.ops.iter().filter(|o| f(&o.kind)).count();
    use sim::program::OpKind;
    assert_eq!(
        synced.matches("hivm.hir.set_flag[").count(),
        count(|k| matches!(k, OpKind::SetFlag { .. }))
    );
    assert_eq!(
        synced.matches("hivm.hir.wait_flag[").count(),
        count(|k| matches!(k, OpKind::WaitFlag { .. }))
    );
    assert_eq!(
        synced.matches("hivm.hir.pipe_barrier[").count(),
        count(|k| matches!(k, OpKind::Barrier(_)))
    );
    // softmax's slot-dependent MTE3->MTE2 event is an i64 value, not a literal id
    assert!(
        synced.contains("hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, %ev]"),
        "{synced}"
    );
}

#[test]
fn snapshots_of_two_small_programs_at_every_stage() {
    let config = config();
    for name in ["vec_add_db", "matmul"] {
        let k = kernel(&root().join(format!("programs/{name}.yaml")), &config);
        for stage in [Stage::Written, Stage::Planned, Stage::Synced] {
            let text = write(&k, &config, stage).unwrap();
            insta::assert_snapshot!(format!("mlir_{name}_{stage:?}"), text);
        }
    }
}

/// The planned stage lays constants and pointer_casts out as AllocToPointerCast does:
/// one constant per distinct offset, newest first in the order the allocs are written, and
/// a loop's multi-buffers moved to its front, the last one first.
#[test]
fn planned_layout_follows_alloc_to_pointer_cast() {
    let config = config();
    let text = "kernel: t\ncore: aiv\nsync: auto\ngm:\n  x: { shape: [4, 256], dtype: f16 }\n\
                body:\n  - for: { var: i, to: 4 }\n    buffers:\n\
                \x20     s: { scope: ub, shape: [256], dtype: f16 }\n\
                \x20     a: { scope: ub, shape: [256], dtype: f16, multi: 2 }\n\
                \x20     b: { scope: ub, shape: [256], dtype: f16, multi: 2 }\n\
                \x20   body:\n\
                \x20     - load: { src: \"x[i]\", dst: a }\n\
                \x20     - load: { src: \"x[i]\", dst: b }\n\
                \x20     - vadd: { ins: [a, b], out: s }\n\
                \x20     - store: { src: s, dst: \"x[i]\" }\n";
    let k = kernel_of(text, &config);
    let out = write(&k, &config, Stage::Planned).unwrap();
    let plan = pipeline::plan_kernel(&k, &config, &PlanOptions::default(), true).unwrap();
    let offs = |name: &str| {
        let b = k
            .first()
            .buffers
            .iter()
            .position(|b| b.name == name)
            .unwrap();
        plan[0].plan.buffers[b].offsets.clone()
    };
    // constants: in written order s, a, b, each slot in order; printed newest first
    let mut order = Vec::new();
    for n in ["s", "a", "b"] {
        for o in offs(n) {
            if !order.contains(&o) {
                order.push(o);
            }
        }
    }
    let consts: Vec<u64> = out
        .lines()
        .filter_map(|l| l.trim().strip_suffix(" : i64"))
        .filter_map(|l| l.split(" = arith.constant ").nth(1))
        .map(|v| v.parse().unwrap())
        .collect();
    order.reverse();
    assert_eq!(consts, order, "{out}");
    let casts: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("pointer_cast"))
        .map(|l| l.trim().split(' ').next().unwrap())
        .collect();
    assert_eq!(casts, ["%b", "%a", "%s"], "{out}");
}

#[test]
fn what_hivm_cannot_express_is_refused_by_name() {
    let config = config();
    let text = "kernel: t\ncore: aic\nsync: auto\ngm:\n  a: { shape: [64, 64], dtype: f16 }\n\
                buffers:\n  bias: { scope: bt, shape: [64], dtype: f32 }\n\
                \x20 l1: { scope: l1, shape: [64, 64], dtype: f16 }\n\
                body:\n  - load: { src: a, dst: l1, layout: nz }\n";
    let k = kernel_of(text, &config);
    let e = write(&k, &config, Stage::Written).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("buffer `bias`") && e[0].contains("no address space for BT"),
        "{e:?}"
    );
}

/// Loop-variable expressions are index arithmetic with floor semantics; `if` conditions are
/// `i1`; `use` is an `annotation.mark` (a use to PlanMemory); scalar work is left out.
#[test]
fn expressions_branches_and_uses() {
    let config = config();
    let text = "kernel: t\ncore: aiv\nsync: manual\ngm:\n  x: { shape: [8, 256], dtype: f16 }\n\
                buffers:\n  u: { scope: ub, shape: [256], dtype: f16 }\n\
                body:\n  - for: { var: i, to: 8 }\n    body:\n\
                \x20     - if: \"(i - 3) % 2 == 1 && i > 0\"\n\
                \x20       then:\n\
                \x20         - load: { src: \"x[(i - 3) / 2 + 1]\", dst: u }\n\
                \x20       else:\n\
                \x20         - scalar: { cycles: 5 }\n\
                \x20     - use: [u]\n";
    let k = kernel_of(text, &config);
    let out = write(&k, &config, Stage::Written).unwrap();
    assert!(out.contains("arith.floordivsi"), "{out}");
    assert!(
        !out.contains("arith.remsi") && !out.contains("arith.divsi"),
        "{out}"
    );
    assert!(
        out.contains("arith.andi") && out.contains("scf.if"),
        "{out}"
    );
    assert!(out.contains("} else {"), "{out}");
    assert!(
        out.contains("annotation.mark %u : memref<256xf16, #hivm.address_space<ub>>"),
        "{out}"
    );
    assert!(!out.contains("scalar"), "{out}");
    if let Some(opt) = bishengir_opt() {
        parses(&opt, &out, "expressions").unwrap();
    }
}

/// A slice with constant bounds keeps its offset static in the subview's type, as npusim's
/// inplace rule sees it: HIVM's PlanMemory lets an output take an input's address only when
/// their static offsets agree (`isReusableByOffset`), and `offset: ?` never agrees with an
/// alloc's 0. A slice that moves with a loop variable is `offset: ?`.
#[test]
fn constant_slices_have_static_offsets() {
    let config = config();
    let text = "kernel: t\ncore: aiv\nsync: auto\ngm:\n  x: { shape: [4, 8192], dtype: f16 }\n\
                buffers:\n  b0: { scope: ub, shape: [4, 512], dtype: f16 }\n\
                \x20 b1: { scope: ub, shape: [256], dtype: f16 }\n\
                body:\n  - load: { src: \"x[0, 0:2048]\", dst: b0 }\n\
                \x20 - vmuls: { ins: [\"b0[0, 0:256]\"], out: b1, scalar: 2 }\n\
                \x20 - vmuls: { ins: [\"b0[2, 256:512]\"], out: b1, scalar: 2 }\n\
                \x20 - for: { var: i, to: 4 }\n    body:\n\
                \x20     - store: { src: \"b0[i]\", dst: \"x[i, 0:512]\" }\n";
    let k = kernel_of(text, &config);
    let out = write(&k, &config, Stage::Written).unwrap();
    let ub = "#hivm.address_space<ub>";
    // row 0 from column 0: offset 0, printed without `offset:` as MLIR infers it
    assert!(out.contains(&format!("%b0[0, 0] [1, 256] [1, 1] : memref<4x512xf16, {ub}> to memref<256xf16, strided<[1]>, {ub}>")), "{out}");
    // row 2 from column 256: 2 * 512 + 256
    assert!(out.contains(&format!("%b0[2, 256] [1, 256] [1, 1] : memref<4x512xf16, {ub}> to memref<256xf16, strided<[1], offset: 1280>, {ub}>")), "{out}");
    assert!(out.contains(&format!("%b0[%i, 0] [1, 512] [1, 1] : memref<4x512xf16, {ub}> to memref<512xf16, strided<[1], offset: ?>, {ub}>")), "{out}");
    // the load of 2048 elements into a 4 x 512 buffer: HIVM's DMA wants equal shapes, so the
    // buffer is seen as 2048 elements
    assert!(out.contains(&format!("memref.collapse_shape %b0 [[0, 1]] : memref<4x512xf16, {ub}> into memref<2048xf16, {ub}>")), "{out}");
    if let Some(opt) = bishengir_opt() {
        parses(&opt, &out, "static_offsets").unwrap();
    }
}
