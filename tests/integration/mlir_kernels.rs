//! The HIVM MLIR kernels shipped in `programs/` and their YAML twins: the MLIR form, read by
//! npusim's reader and lowering, must simulate exactly as the YAML program it mirrors (the same
//! cycles, per pipe busy and stall figures, no hazard), and, where the real compiler is
//! installed, `bishengir-opt` must read it too (without it: one skip line, a failure with CI set).

use crate::{npusim, root, stderr, stdout};
use std::io::Write;
use std::process::Command;

/// (MLIR kernel, its YAML twin).
const TWINS: &[(&str, &str)] = &[
    ("programs/vec_add_db.mlir", "programs/vec_add_db.yaml"),
    ("programs/matmul_l1.mlir", "programs/matmul_l1.yaml"),
];

fn run_json(program: &str) -> serde_json::Value {
    let out = npusim(&["run", program, "--format", "json"]);
    assert!(
        out.status.success(),
        "npusim run {program} failed:\n{}",
        stderr(&out)
    );
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{program}: {e}"))
}

#[test]
fn each_mlir_kernel_runs_as_its_yaml_twin() {
    for (mlir, yaml) in TWINS {
        let (a, b) = (run_json(mlir), run_json(yaml));
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
    for (mlir, _) in TWINS {
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
    }
}
