//! The HIVM MLIR kernels shipped in `programs/` and their YAML twins: the MLIR form, read by
//! npusim's reader and lowering, must simulate exactly as the YAML program it mirrors (the same
//! cycles, per pipe busy and stall figures, no hazard), and, where the real compiler is
//! installed, `bishengir-opt` must read it too (without it: one skip line, a failure with CI set).

use crate::{npusim, root, stderr, stdout};
use std::io::Write;
use std::process::Command;

/// (MLIR kernel, its YAML twin, the arguments both run with). An MLIR function has no launch
/// size of its own (the host gives it), so a launched kernel's blocks are given to both.
const TWINS: &[(&str, &str, &[&str])] = &[
    ("programs/vec_add_db.mlir", "programs/vec_add_db.yaml", &[]),
    ("programs/matmul_l1.mlir", "programs/matmul_l1.yaml", &[]),
    (
        "programs/matmul_epilogue.mlir",
        "programs/matmul_epilogue.yaml",
        &["--blocks", "2"],
    ),
];

fn run_json(program: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", program, "--format", "json"];
    args.extend(extra);
    let out = npusim(&args);
    assert!(
        out.status.success(),
        "npusim run {program} failed:\n{}",
        stderr(&out)
    );
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{program}: {e}"))
}

#[test]
fn each_mlir_kernel_runs_as_its_yaml_twin() {
    for (mlir, yaml, extra) in TWINS {
        let (a, b) = (run_json(mlir, extra), run_json(yaml, extra));
        for key in [
            "total_cycles",
            "pipes",
            "hazards",
            "syncs_inserted",
            "findings",
        ] {
            assert_eq!(a[key], b[key], "{mlir} and {yaml} differ in {key}");
        }
        assert!(a["total_cycles"].as_u64().unwrap() > 0);
        assert_eq!(a["hazards"], serde_json::json!([]), "{mlir} races");
    }
}

/// The real compiler's `bishengir-opt`: `NPUSIM_BISHENGIR_OPT`, else the venv that
/// `scripts/install-hivm` makes under `target/`.
fn bishengir_opt() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("NPUSIM_BISHENGIR_OPT") {
        return Some(p.into());
    }
    let out = Command::new(root().join("scripts/install-hivm"))
        .arg("--check")
        .output()
        .ok()?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !dir.is_empty())
        .then(|| std::path::Path::new(&dir).join("bishengir-opt"))
}

#[test]
fn the_real_compiler_reads_each_mlir_kernel() {
    let Some(opt) = bishengir_opt() else {
        let why = "bishengir-opt is not installed (scripts/install-hivm installs it)";
        assert!(std::env::var_os("CI").is_none(), "{why}, and CI is set");
        let _ = writeln!(std::io::stderr(), "skipped: {why}");
        return;
    };
    for (mlir, _, extra) in TWINS {
        let out = Command::new(&opt)
            .args(["-hivm-plan-memory", "-hivm-inject-sync"])
            .arg(root().join(mlir))
            .output()
            .expect("bishengir-opt runs");
        assert!(
            out.status.success(),
            "bishengir-opt {mlir}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // what the compiler made of it, its plan and its flags (for the MIX kernel also its
        // cross-core flags), runs race-free: the compiler's IR enters npusim as it leaves the
        // compiler (InjectSync's mmadL1 events included, docs/mlir.md)
        let mut passes = vec!["-hivm-plan-memory", "-hivm-inject-sync"];
        if mlir.contains("epilogue") {
            passes.push("-hivm-inject-block-sync");
        }
        let synced = Command::new(&opt)
            .args(&passes)
            .arg(root().join(mlir))
            .output()
            .expect("bishengir-opt runs");
        assert!(synced.status.success(), "bishengir-opt {passes:?} {mlir}");
        let dir = crate::scratch("mlir_kernels_compiled");
        let file = dir.join(std::path::Path::new(mlir).file_name().unwrap());
        std::fs::write(&file, &synced.stdout).unwrap();
        let compiled = run_json(file.to_str().unwrap(), extra);
        assert_eq!(
            compiled["hazards"],
            serde_json::json!([]),
            "{passes:?} {mlir} races"
        );
        assert_eq!(
            compiled["sync"], "manual",
            "{mlir}: the compiler's own flags"
        );
        // InjectSync's flags are never faster than npusim's own on these kernels (docs/sync.md,
        // "What the differences cost")
        let own = run_json(mlir, extra);
        assert!(
            compiled["total_cycles"].as_u64() >= own["total_cycles"].as_u64(),
            "{mlir}: {} with the compiler's flags, {} with npusim's",
            compiled["total_cycles"],
            own["total_cycles"]
        );
    }
}

/// `npusim opt -hivm-inject-block-sync` on the MIX kernel: the flags npusim's cross-core pass
/// puts around the hand-off through `ws`, printed as HIVM's block sync ops, and what it prints
/// runs race-free.
#[test]
fn opt_inserts_the_cross_core_flags_of_a_mix_function() {
    let out = npusim(&[
        "opt",
        "programs/matmul_epilogue.mlir",
        "-hivm-inject-block-sync",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("hivm.hir.sync_block"))
        .collect();
    // By docs/sync.md, "Across cores": `opt` reads the function plan-only, so every fixpipe
    // writes ws from element 0 and every load reads it from 0: write k + 1 overlaps read k
    // (reuse distance 1), and the forward flag (0: FIX after the fixpipe, MTE2 before the
    // load) gets a reverse flag (1) of depth 1: one grant set at the start of the vector
    // cores' body on the reading pipe, a wait before each write, a grant after each read, and
    // the one grant left taken back at the end of the cube core's body (after the loop).
    assert_eq!(
        lines,
        [
            "hivm.hir.sync_block_set[<VECTOR>, <PIPE_MTE2>, <PIPE_FIX>] flag = 1",
            "hivm.hir.sync_block_wait[<CUBE>, <PIPE_MTE2>, <PIPE_FIX>] flag = 1",
            "hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_MTE2>] flag = 0",
            "hivm.hir.sync_block_wait[<VECTOR>, <PIPE_FIX>, <PIPE_MTE2>] flag = 0",
            "hivm.hir.sync_block_set[<VECTOR>, <PIPE_MTE2>, <PIPE_FIX>] flag = 1",
            "hivm.hir.sync_block_wait[<CUBE>, <PIPE_MTE2>, <PIPE_FIX>] flag = 1",
        ],
        "{text}"
    );
    let dir = crate::scratch("mlir_kernels_block_sync");
    let file = dir.join("epilogue_block_sync.mlir");
    std::fs::write(&file, &text).unwrap();
    let run = run_json(file.to_str().unwrap(), &["--blocks", "2"]);
    assert_eq!(run["hazards"], serde_json::json!([]), "{text}");
    // the printed flags are the run's: no cross-core pass ran on top of them
    assert!(
        run["cross_sync"].as_array().is_none_or(|h| h.is_empty()),
        "{}",
        run["cross_sync"]
    );
}
