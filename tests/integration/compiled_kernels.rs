//! npusim on the real compiler's IR (docs/conformance.md, "npusim on the compiler's IR"): every
//! HFusion input of AscendNPU-IR's bishengir-compile tests that the compiler compiles goes
//! through `scripts/compile-ir`, and per device function
//! - the plan: `npusim opt before-plan.mlir -hivm-plan-memory` against the compiler's own
//!   `after-plan.mlir`, pointer_cast offsets in op order. A difference is reported on stderr,
//!   not failed: the classes left (the compiler's inplace ties and orders, an overflow HIVM
//!   fits after a reuse) are being worked on elsewhere; the figure is printed.
//! - the run: `npusim run after-sync.mlir` (the compiler's plan and InjectSync flags, `sync:
//!   manual`), with the sizes of a kernel of dynamic shape given by `--param` and its tiling
//!   struct computed from the host tiling function compile-ir appends, must finish race-free;
//!   the functions npusim refuses are listed in [`REFUSED`] with the reason each must give.
//!
//! It needs the compiler (scripts/install-hivm) and the lit tests outside the repository
//! (`NPUSIM_CONFORMANCE_DIR`, else `../shared/conformance` beside the main worktree). Without
//! the lit tests (a fresh clone has none) it skips in one line; without the compiler it skips
//! in one line unless CI is set, where that is a failure.

use crate::{npusim, root, scratch, stderr, stdout};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The inputs of `bishengir/test/bishengir-compile/hfusion/` whose device functions the
/// compiler compiles and places (compile-singlecube-hfusion.mlir compiles but places no local
/// buffer; the others fail to compile with v1.2.0's open pipeline).
const INPUTS: &[&str] = &[
    "compile-any-pb-2d-aligned-lir",
    "compile-any-pb-2d-aligned",
    "compile-any-pb-dynamic",
    "compile-any-pbr",
    "compile-bisheng-hfusion-basic-powf",
    "compile-bisheng-hfusion-modified-host",
    "compile-bisheng-unit-reshape",
    "compile-concat",
    "compile-pure-elemwise-1d-no-outline",
    "compile-pure-elemwise-2d-no-outline",
    "compile-pure-elemwise-dynamic-dims",
    "compile-pure-elemwise-dynamic",
    "compile-pure-elemwise-with-foldable-transpose",
    "compile-reduce-broadcast-reduce",
    "compile-reduce-to-rank0",
    "compile-return-arg",
    "compile-rms-norm-fp16-split-n",
    "compile-rms-norm-fp32-split-d",
    "compile-rms-norm-fp32-split-n",
    "compile-shallow-cv",
];

/// The functions (input/function) the compile makes: 25.
const FUNCTIONS: usize = 25;

/// The sizes a kernel of dynamic shape runs with (`--param argN_dimK`, and scalar arguments):
/// chosen to take several tiles and a tail where the tiling allows, consistent between the
/// arguments the kernel reads and writes.
const SIZES: &[(&str, &[&str])] = &[
    (
        "compile-any-pb-dynamic/test_dynamic_shape_single_output_0",
        &[
            "arg0_dim0=64",
            "arg1_dim1=1000",
            "arg2_dim0=64",
            "arg2_dim1=1000",
        ],
    ),
    (
        "compile-any-pb-dynamic/test_dynamic_shape_single_output_1",
        &[
            "arg0_dim0=64",
            "arg1_dim1=1000",
            "arg2_dim0=64",
            "arg2_dim1=1000",
        ],
    ),
    (
        "compile-bisheng-hfusion-modified-host/Fused_Mul_Add_fusion_3414230412939713453_0_0",
        &[
            "arg0_dim1=5000",
            "arg1_dim1=5000",
            "arg2_dim1=5000",
            "arg3_dim1=5000",
        ],
    ),
    (
        // arg1 is the end of the slice of arg0's rows the kernel copies
        "compile-bisheng-unit-reshape/mlir_fused__to_copy_npu_dynamic_quant_118_0_0",
        &["arg0_dim1=40", "arg1=40", "arg2_dim0=40", "arg3_dim1=40"],
    ),
    (
        "compile-pure-elemwise-dynamic-dims/test_reshape_multi_dynamic_dims_0_0",
        &[
            "arg0_dim1=24",
            "arg0_dim2=1000",
            "arg1_dim1=24",
            "arg1_dim2=1000",
            "arg2_dim1=24",
            "arg2_dim2=1000",
        ],
    ),
    (
        "compile-pure-elemwise-dynamic-dims/test_reshape_multi_dynamic_dims_0_1",
        &[
            "arg0_dim1=24",
            "arg0_dim2=1000",
            "arg1_dim1=24",
            "arg1_dim2=1000",
            "arg2_dim1=24",
            "arg2_dim2=1000",
        ],
    ),
    (
        "compile-pure-elemwise-dynamic/model_0",
        &["arg0_dim0=100000", "arg1_dim0=100000", "arg2_dim0=100000"],
    ),
    (
        "compile-reduce-to-rank0/reduce_to_rank0_0_0",
        &["arg0_dim0=5000"],
    ),
];

/// The functions npusim does not run, and what its error must say.
const REFUSED: &[(&str, &str)] = &[
    // the compiler's vadd reads a gm subview directly (its own IR, after InjectSync): vector
    // units read UB only, so npusim refuses the op rather than time it
    (
        "compile-return-arg/return_arg_directly_after_optimize",
        "is in gm; vector ops read and write ub only",
    ),
    // arg0 is 16x32x4096x5120 f32 (40 GiB): beyond the 2^26 lines of the L2 model
    (
        "compile-reduce-broadcast-reduce/reduce_broadcast_reduce",
        "more than the memory system models",
    ),
];

/// The lit tests' directory, or why there is none.
fn suite() -> Result<PathBuf, String> {
    let base = match std::env::var_os("NPUSIM_CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            // ../shared/conformance beside the repository, or beside the main worktree
            let beside = root().join("../shared/conformance");
            if beside.is_dir() {
                beside
            } else {
                let out = Command::new("git")
                    .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
                    .current_dir(root())
                    .output()
                    .map_err(|e| format!("git: {e}"))?;
                let common = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
                common.join("../../shared/conformance")
            }
        }
    };
    let dir = base.join("ascendnpu-ir-v1.2.0/bishengir/test/bishengir-compile/hfusion");
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(format!("no {} (set NPUSIM_CONFORMANCE_DIR)", dir.display()))
    }
}

/// The compiler's directory, when installed (nothing is installed here).
fn compiler() -> Result<PathBuf, String> {
    let out = Command::new(root().join("scripts/install-hivm"))
        .arg("--check")
        .output()
        .map_err(|e| format!("scripts/install-hivm: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !dir.is_empty() {
        Ok(PathBuf::from(dir))
    } else {
        Err("the HIVM compiler is not installed (scripts/install-hivm installs it)".into())
    }
}

/// The pointer_cast offsets of a file, in op order (`%c1536_i64` and `%c1536_i64_npu` alike).
fn offsets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in text.split("pointer_cast(").skip(1) {
        let args = piece.split(')').next().unwrap_or("");
        let nums: Vec<&str> = args
            .split(',')
            .map(|a| {
                a.trim()
                    .trim_start_matches("%c")
                    .split("_i64")
                    .next()
                    .unwrap_or("")
            })
            .collect();
        out.push(nums.join(","));
    }
    out
}

#[test]
fn offsets_read_both_spellings_in_op_order() {
    let text = "%0 = hivm.hir.pointer_cast(%c0_i64) : T\n%a = hivm.hir.pointer_cast(%c1536_i64_npu, %c64_i64_0) : T";
    assert_eq!(offsets(text), ["0", "1536,64"]);
}

#[test]
fn each_compiled_kernel_plans_as_the_compiler_and_runs_race_free() {
    // the lit tests are data outside the repository, absent on a fresh clone (CI's too): a
    // skip anywhere; the compiler is a tool CI installs: a skip outside CI only
    let dir = match suite() {
        Ok(d) => d,
        Err(why) => {
            let _ = writeln!(
                std::io::stderr(),
                "skipped: npusim on the compiler's IR: {why}"
            );
            return;
        }
    };
    let bin = match compiler() {
        Ok(b) => b,
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "{why}, and CI is set");
            let _ = writeln!(
                std::io::stderr(),
                "skipped: npusim on the compiler's IR: {why}"
            );
            return;
        }
    };
    let out_dir = scratch("compiled_kernels");
    let mut seen = BTreeSet::new();
    let (mut plans_equal, mut runs) = (0, 0);
    let mut problems = Vec::new();
    for input in INPUTS {
        let out = Command::new(root().join("scripts/compile-ir"))
            .arg(dir.join(format!("{input}.mlir")))
            .arg(out_dir.join(input))
            .env("BISHENGIR_BIN", &bin)
            .output()
            .expect("scripts/compile-ir runs");
        assert!(
            out.status.success(),
            "compile-ir {input}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut funcs: Vec<PathBuf> = std::fs::read_dir(out_dir.join(input))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("after-sync.mlir").is_file())
            .collect();
        funcs.sort();
        for f in funcs {
            let name = format!("{input}/{}", f.file_name().unwrap().to_string_lossy());
            seen.insert(name.clone());
            if plan_equal(&f, &name) {
                plans_equal += 1;
            }
            match run(&f, &name) {
                Ok(true) => runs += 1,
                Ok(false) => {}
                Err(e) => problems.push(e),
            }
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "npusim on the compiler's IR: plans equal {plans_equal} of {}, runs {runs} of {} ({} refused as listed)",
        seen.len(),
        seen.len(),
        REFUSED.len()
    );
    assert_eq!(
        seen.len(),
        FUNCTIONS,
        "the functions compile-ir made: {seen:?}"
    );
    for name in SIZES
        .iter()
        .map(|(n, _)| n)
        .chain(REFUSED.iter().map(|(n, _)| n))
    {
        assert!(
            seen.contains(*name),
            "{name} is listed but was not compiled"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Whether npusim's plan of `f` places every buffer where the compiler did; says so when not.
fn plan_equal(f: &Path, name: &str) -> bool {
    let expected = std::fs::read_to_string(f.join("after-plan.mlir")).unwrap();
    let before = f.join("before-plan.mlir");
    let out = npusim(&["opt", before.to_str().unwrap(), "-hivm-plan-memory"]);
    let (want, got) = (offsets(&expected), offsets(&stdout(&out)));
    if out.status.success() && want == got {
        return true;
    }
    let first = want.iter().zip(&got).position(|(a, b)| a != b);
    let _ = writeln!(
        std::io::stderr(),
        "plan differs: {name}: {}",
        match first {
            _ if !out.status.success() => stderr(&out).lines().next().unwrap_or("").to_string(),
            Some(i) => format!(
                "pointer_cast #{i}: the compiler {}, npusim {}",
                want[i], got[i]
            ),
            None => format!("{} pointer_casts, npusim {}", want.len(), got.len()),
        }
    );
    false
}

/// Runs `f`'s after-sync IR: `Ok(true)` race-free, `Ok(false)` refused as [`REFUSED`] says.
fn run(f: &Path, name: &str) -> Result<bool, String> {
    let file = f.join("after-sync.mlir");
    let mut args = vec!["run", file.to_str().unwrap(), "--format", "json"];
    for (n, ps) in SIZES {
        if *n == name {
            for p in *ps {
                args.extend(["--param", p]);
            }
        }
    }
    let out = npusim(&args);
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
        // the report wraps its lines: compare the words
        let words = stderr(&out)
            .replace('│', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if out.status.code() == Some(2) && words.contains(why) {
            return Ok(false);
        }
        return Err(format!(
            "{name}: listed as refused ({why}), but npusim run says ({}):\n{}",
            out.status,
            stderr(&out)
        ));
    }
    if !out.status.success() {
        return Err(format!("{name}: npusim run failed:\n{}", stderr(&out)));
    }
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&out)).map_err(|e| format!("{name}: {e}"))?;
    if v["hazards"] != serde_json::json!([]) {
        return Err(format!("{name}: hazards {}", v["hazards"]));
    }
    if v["total_cycles"].as_u64().unwrap_or(0) == 0 {
        return Err(format!("{name}: no cycles"));
    }
    Ok(true)
}

/// A vector op reading gm (as the compiler's own IR for compile-return-arg.mlir has one):
/// `opt` plans it as HIVM does, a run refuses it.
#[test]
fn a_vector_op_reading_gm_plans_as_hivm_and_does_not_run() {
    let dir = scratch("vector_op_reading_gm");
    let file = dir.join("gm_vadd.mlir");
    let gm = "#hivm.address_space<gm>";
    let ub = "#hivm.address_space<ub>";
    std::fs::write(
        &file,
        format!(
            "func.func @gmadd(%x: memref<64xf16, {gm}>, %y: memref<64xf16, {gm}>) {{
  %a = memref.alloc() : memref<64xf16, {ub}>
  hivm.hir.load ins(%x : memref<64xf16, {gm}>) outs(%a : memref<64xf16, {ub}>)
  %c = memref.alloc() : memref<64xf16, {ub}>
  hivm.hir.vadd ins(%x, %a : memref<64xf16, {gm}>, memref<64xf16, {ub}>) outs(%c : memref<64xf16, {ub}>)
  hivm.hir.store ins(%c : memref<64xf16, {ub}>) outs(%y : memref<64xf16, {gm}>)
  return
}}
"
        ),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    // a is dead after the vadd and as wide as c: HIVM's inplace puts c on a, at 0 (as
    // bishengir-opt -hivm-plan-memory does with this function)
    let out = npusim(&["opt", path, "-hivm-plan-memory"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(offsets(&stdout(&out)), ["0", "0"]);
    let out = npusim(&["run", path]);
    assert_eq!(out.status.code(), Some(2));
    let words = stderr(&out)
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("is in gm; vector ops read and write ub only"),
        "{words}"
    );
}
