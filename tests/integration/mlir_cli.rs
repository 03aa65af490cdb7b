//! HIVM MLIR on the command line (docs/mlir.md): `npusim opt PROGRAM [-hivm-plan-memory]
//! [-hivm-inject-sync]` and `plan --format mlir [--show-sync]`. Every shipped program at
//! every stage is parsed by `bishengir-opt` when it is installed (env
//! `NPUSIM_BISHENGIR_OPT`, or `target/hivm-venv` from `scripts/install-hivm`); without it the
//! check says it is skipped, and fails under `CI`.

use crate::{npusim, root, scratch, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bishengir_opt() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NPUSIM_BISHENGIR_OPT") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "NPUSIM_BISHENGIR_OPT={} is not a file",
            p.display()
        );
        return Some(p);
    }
    let found = std::fs::read_dir(root().join("target/hivm-venv/lib"))
        .ok()
        .and_then(|dir| {
            dir.flatten().find_map(|e| {
                let p = e.path().join("site-packages/ascendnpuir/bin/bishengir-opt");
                p.is_file().then_some(p)
            })
        });
    if found.is_none() {
        println!("skipped: bishengir-opt not installed (scripts/install-hivm)");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but bishengir-opt is not installed: run scripts/install-hivm"
        );
    }
    found
}

fn shipped() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| format!("programs/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

fn ok(args: &[&str]) -> String {
    let o = npusim(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

fn parses(opt: &Path, file: &Path) -> Result<(), String> {
    let o = Command::new(opt).arg(file).output().unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// The three stages of `opt`, each the same text as the `plan` spelling of that stage, and
/// every one parsed by the real compiler.
#[test]
fn opt_writes_every_shipped_program_at_every_stage() {
    let opt = bishengir_opt();
    let dir = scratch("mlir_cli_stages");
    let mut failures = Vec::new();
    for p in shipped() {
        let written = ok(&["opt", &p]);
        let planned = ok(&["opt", &p, "-hivm-plan-memory"]);
        let synced = ok(&["opt", &p, "-hivm-plan-memory", "-hivm-inject-sync"]);
        assert!(written.contains("memref.alloc()"), "{p}");
        assert!(
            !planned.contains("memref.alloc()") && planned.contains("pointer_cast("),
            "{p}"
        );
        assert_eq!(planned, ok(&["plan", &p, "--format", "mlir"]), "{p}");
        assert_eq!(
            synced,
            ok(&["plan", &p, "--show-sync", "--format", "mlir"]),
            "{p}"
        );
        // the two-dash spelling is the same flag
        assert_eq!(planned, ok(&["opt", &p, "--hivm-plan-memory"]), "{p}");
        if let Some(opt) = &opt {
            let stem = Path::new(&p)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .to_string();
            for (stage, text) in [("1", &written), ("2", &planned), ("3", &synced)] {
                let f = dir.join(format!("{stem}.{stage}.mlir"));
                std::fs::write(&f, text).unwrap();
                if let Err(e) = parses(opt, &f) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn opt_flags_are_checked() {
    let p = "programs/softmax.yaml";
    // -hivm-inject-sync needs the plan, as in bishengir-opt
    let o = npusim(&["opt", p, "-hivm-inject-sync"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--hivm-plan-memory"), "{}", stderr(&o));
    // an unknown one-dash pass is not taken for a cluster of short flags silently
    let o = npusim(&["opt", p, "-hivm-graph-sync-solver"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // the one-dash words are rewritten only after `opt`: elsewhere clap reads them as it
    // always did (`-h...`: the help), never as the pass
    let o = npusim(&["plan", p, "-hivm-plan-memory"]);
    assert!(!stdout(&o).contains("module {"), "{}", stdout(&o));
    // `-o` writes the same text
    let dir = scratch("mlir_cli_output");
    let out = dir.join("k.mlir");
    ok(&["opt", p, "-hivm-plan-memory", "-o", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        ok(&["opt", p, "-hivm-plan-memory"])
    );
}

#[test]
fn show_sync_takes_only_the_mlir_format() {
    let o = npusim(&[
        "plan",
        "programs/softmax.yaml",
        "--show-sync",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--format mlir"), "{}", stderr(&o));
    // without --format it is the YAML kernel, as before
    assert!(ok(&["plan", "programs/softmax.yaml", "--show-sync"]).contains("sync: manual"));
}

#[test]
fn what_has_no_hivm_form_is_refused_with_the_reason() {
    let dir = scratch("mlir_cli_refused");
    let f = dir.join("bt.yaml");
    std::fs::write(
        &f,
        "kernel: t\ncore: aic\nsync: auto\ngm:\n  a: { shape: [64, 64], dtype: f16 }\n\
         buffers:\n  bias: { scope: bt, shape: [64], dtype: f32 }\n\
         \x20 l1: { scope: l1, shape: [64, 64], dtype: f16 }\n\
         body:\n  - load: { src: a, dst: l1, layout: nz }\n",
    )
    .unwrap();
    for args in [vec!["opt"], vec!["plan", "--format", "mlir"]] {
        let mut a = args.clone();
        a.insert(1, f.to_str().unwrap());
        let o = npusim(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        assert!(stderr(&o).contains("buffer `bias`"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
}
