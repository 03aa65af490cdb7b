//! `npusim plan --show-sync`: the synchronised program is a valid `sync: manual` kernel, pinned
//! to the plan's addresses, and running it gives the same cycles as running the original, at
//! every reuse level. And the auto-synchronised double-buffered add keeps the manual one's
//! overlap.

use crate::{npusim, root, stderr, stdout};

fn cycles(json: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(json).expect("run --format json");
    v["total_cycles"].as_u64().unwrap()
}

#[test]
fn show_sync_runs_with_the_cycles_of_the_original_at_every_level() {
    let dir = std::env::temp_dir().join(format!("npusim-show-sync-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut programs: Vec<_> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    programs.sort();
    for path in programs {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let p = path.to_string_lossy().into_owned();
        for level in ["2", "1", "0"] {
            let shown = npusim(&["plan", &p, "--level", level, "--show-sync"]);
            assert!(shown.status.success(), "{name}: {}", stderr(&shown));
            let text = stdout(&shown);
            assert!(text.contains("\nsync: manual\n"), "{name}:\n{text}");
            let file = dir.join(format!("{name}-L{level}.yaml"));
            std::fs::write(&file, &text).unwrap();
            let f = file.to_string_lossy().into_owned();
            let original = npusim(&["run", &p, "--level", level, "--format", "json"]);
            let printed = npusim(&["run", &f, "--level", level, "--format", "json"]);
            assert!(original.status.success(), "{name}: {}", stderr(&original));
            assert!(
                printed.status.success(),
                "{name} level {level}: the printed program fails:\n{}\n{text}",
                stderr(&printed)
            );
            assert_eq!(
                cycles(&stdout(&original)),
                cycles(&stdout(&printed)),
                "{name} level {level}"
            );
        }
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
