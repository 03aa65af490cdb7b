//! `npusim plan --show-sync`: the synchronised program is a valid `sync: manual` kernel, pinned
//! to the plan's addresses, and running it gives the same cycles as running the original, at
//! every reuse level: a launch keeps its `launch: { blocks }` (the `--blocks` given included)
//! and every core ends at the same cycle, a mixed kernel prints its `aic:` and `aiv:` parts.
//! And the auto-synchronised double-buffered add keeps the manual one's overlap.

use crate::{npusim, root, stderr, stdout};

/// The launch's total cycles and every core's end cycle, from `run --format json`.
fn cycles(json: &str) -> (u64, Vec<u64>) {
    let v: serde_json::Value = serde_json::from_str(json).expect("run --format json");
    let ends = v["launch"]["cores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["end_cycle"].as_u64().unwrap())
        .collect();
    (v["total_cycles"].as_u64().unwrap(), ends)
}

/// Prints `program` with `--show-sync` (and `extra` options) at every level, writes the text
/// to `dir` and runs both with the same options (and `run_extra`): the same cycles on every
/// core. Returns the text printed at level 2.
fn round_trip(
    program: &std::path::Path,
    extra: &[&str],
    run_extra: &[&str],
    dir: &std::path::Path,
) -> String {
    let name = program.file_stem().unwrap().to_string_lossy().into_owned();
    let p = program.to_string_lossy().into_owned();
    let mut at_2 = String::new();
    for level in ["2", "1", "0"] {
        let mut args = vec!["plan", &p, "--level", level, "--show-sync"];
        args.extend_from_slice(extra);
        let shown = npusim(&args);
        assert!(shown.status.success(), "{name}: {}", stderr(&shown));
        let text = stdout(&shown);
        assert!(text.contains("\nsync: manual\n"), "{name}:\n{text}");
        let file = dir.join(format!("{name}{}-L{level}.yaml", extra.join("")));
        std::fs::write(&file, &text).unwrap();
        let f = file.to_string_lossy().into_owned();
        let run = |what: &str| {
            let mut args = vec!["run", what, "--level", level, "--format", "json"];
            args.extend_from_slice(extra);
            args.extend_from_slice(run_extra);
            npusim(&args)
        };
        let (original, printed) = (run(&p), run(&f));
        assert!(original.status.success(), "{name}: {}", stderr(&original));
        assert!(
            printed.status.success(),
            "{name} level {level}: the printed program fails:\n{}\n{text}",
            stderr(&printed)
        );
        assert_eq!(
            cycles(&stdout(&original)),
            cycles(&stdout(&printed)),
            "{name} {extra:?} level {level}"
        );
        if level == "2" {
            at_2 = text;
        }
    }
    at_2
}

#[test]
fn show_sync_runs_with_the_cycles_of_the_original_at_every_level() {
    let dir = crate::scratch("show-sync");
    let mut programs: Vec<_> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    programs.sort();
    for path in programs {
        let source = std::fs::read_to_string(&path).unwrap();
        let text = round_trip(&path, &[], &[], &dir);
        // a launch prints its blocks; a mixed kernel its two parts, and no `core:`
        let launch = source.lines().find(|l| l.starts_with("launch:"));
        if let Some(line) = launch {
            assert!(text.contains(&format!("\n{line}\n")), "{path:?}:\n{text}");
        }
        let mixed = source.lines().any(|l| l.starts_with("aic:"));
        assert_eq!(text.contains("\naic:\n"), mixed, "{path:?}:\n{text}");
        assert_eq!(text.contains("\naiv:\n"), mixed, "{path:?}:\n{text}");
        assert_eq!(text.contains("\ncore: "), !mixed, "{path:?}:\n{text}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn show_sync_keeps_the_blocks_given_on_the_command_line() {
    let dir = crate::scratch("show-blocks");
    // a launch with other blocks than it declares, a program without `launch:` (whose blocks
    // all write the same rows: a race, which is not what this test is about), and a mixed
    // kernel on one AI core
    for (program, blocks, run) in [
        ("programs/vec_add_blocks.yaml", "3", &[][..]),
        ("programs/vec_add_db.yaml", "2", &["--no-race-check"][..]),
        ("programs/matmul_add_manual.yaml", "1", &[][..]),
    ] {
        let text = round_trip(&root().join(program), &["--blocks", blocks], run, &dir);
        assert!(
            text.contains(&format!("\nlaunch: {{ blocks: {blocks} }}\n")),
            "{program}:\n{text}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn show_sync_conflicts_with_explain() {
    let out = npusim(&[
        "plan",
        "programs/vec_add_db.yaml",
        "--show-sync",
        "--explain",
        "xb",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn auto_sync_matches_the_hand_written_double_buffered_add() {
    let run = |p: &str| {
        let out = npusim(&["run", p, "--format", "json"]);
        assert!(out.status.success(), "{p}: {}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()
    };
    let auto = run("programs/vec_add_db.yaml");
    let manual = run("programs/vec_add_db_manual.yaml");
    let (a, m) = (
        auto["total_cycles"].as_u64().unwrap(),
        manual["total_cycles"].as_u64().unwrap(),
    );
    // the same schedule; the pass adds only its final `barrier: all` (S waits for the last store)
    assert!(a >= m && a - m <= 16, "auto {a} vs manual {m} cycles");
    assert!(auto["overlap"].as_f64().unwrap() >= manual["overlap"].as_f64().unwrap() - 0.001);
    assert_eq!(auto["hazards"].as_array().unwrap().len(), 0);
    assert_eq!(auto["syncs_inserted"]["fallbacks"], 0);
}
