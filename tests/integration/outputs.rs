//! What every command writes, on success, on a finding and on bad input, and that it writes the
//! same bytes every time (docs/cli.md, "What is written when"). Each case runs twice into a
//! fresh directory: the exit code, stdout, stderr and the `-o` file (if any) must be identical,
//! the file must be exactly what stdout holds without `-o`, and nothing else may be left in the
//! directory (outputs go through a temporary file that is renamed, or are not written at all).

use crate::npusim;

const DB: &str = "programs/vec_add_db_manual.yaml";

/// (command line, exit code, whether `-o` writes the file). `-o` is appended to every case
/// except `check` and `configs`, which print to stdout only.
fn cases() -> Vec<(Vec<&'static str>, i32, bool)> {
    vec![
        // success: the output, whole
        (vec!["check", DB], 0, false),
        (vec!["check", DB, "--format", "json"], 0, false),
        (vec!["plan", DB], 0, true),
        (vec!["plan", DB, "--format", "yaml"], 0, true),
        (vec!["plan", DB, "--format", "json"], 0, true),
        (
            vec!["plan", "programs/vec_add_db.yaml", "--show-sync"],
            0,
            true,
        ),
        (
            vec!["plan", "programs/reuse_levels.yaml", "--explain", "C"],
            0,
            true,
        ),
        (vec!["run", DB], 0, true),
        (
            vec!["run", "programs/matmul.yaml", "--format", "json"],
            0,
            true,
        ),
        (vec!["compare", "programs/reuse_levels.yaml"], 0, true),
        (
            vec!["compare", "programs/softmax.yaml", "--format", "json"],
            0,
            true,
        ),
        (
            vec![
                "pack",
                "planner/tests/data/minimalloc/examples/input.12.csv",
                "--capacity",
                "64",
            ],
            0,
            true,
        ),
        (vec!["configs"], 0, false),
        (vec!["configs", "--show", "ascend910b"], 0, false),
        // a finding: a run's report (or a comparison) is complete, so it is written
        (
            vec!["run", "tests/fixtures/deadlock.yaml", "--format", "json"],
            1,
            true,
        ),
        (vec!["run", "tests/fixtures/unpaired.yaml"], 1, true),
        (vec!["run", DB, "--max-instructions", "100"], 1, true),
        (
            vec!["run", DB, "--max-cycles", "1000", "--format", "json"],
            1,
            true,
        ),
        (
            vec![
                "compare",
                "programs/reuse_levels.yaml",
                "--capacity",
                "ub=16KiB",
            ],
            1,
            true,
        ),
        // a finding that leaves nothing to write: a plan that does not fit, a placement over
        // the capacity (`check --format json` prints its document whatever the outcome)
        (
            vec!["check", "tests/fixtures/overflow.yaml", "--format", "json"],
            1,
            false,
        ),
        (vec!["plan", "tests/fixtures/overflow.yaml"], 1, false),
        (vec!["run", "tests/fixtures/overflow.yaml"], 1, false),
        (
            vec![
                "pack",
                "planner/tests/data/minimalloc/examples/input.12.csv",
                "--capacity",
                "8",
            ],
            1,
            false,
        ),
        // bad input: nothing is written
        (
            vec!["check", "tests/fixtures/several_problems.yaml"],
            2,
            false,
        ),
        (
            vec![
                "check",
                "tests/fixtures/several_problems.yaml",
                "--format",
                "json",
            ],
            2,
            false,
        ),
        (vec!["configs", "--show", "no_such_config"], 2, false),
        (
            vec!["run", "tests/fixtures/several_problems.yaml"],
            2,
            false,
        ),
        (
            vec!["plan", "tests/fixtures/several_problems.yaml"],
            2,
            false,
        ),
        (vec!["run", "docs/examples/runtime_error.yaml"], 2, false),
        (vec!["run", DB, "--config", "no_such_config"], 2, false),
        (
            vec!["pack", "docs/examples/bad_instance.csv", "--capacity", "64"],
            2,
            false,
        ),
    ]
}

fn scratch(name: &str) -> std::path::PathBuf {
    crate::scratch(&format!("outputs/{name}"))
}

#[test]
fn every_command_writes_the_same_bytes_every_time_and_only_what_it_promises() {
    for (i, (args, code, writes)) in cases().into_iter().enumerate() {
        let takes_o = !matches!(args[0], "check" | "configs");
        let mut runs = Vec::new();
        for round in 0..2 {
            let dir = scratch(&format!("case{i}-{round}"));
            let target = dir.join("out.txt");
            let t = target.to_string_lossy().into_owned();
            let mut full = args.clone();
            if takes_o {
                full.extend(["-o", &t]);
            }
            let o = npusim(&full);
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert_eq!(o.status.code(), Some(code), "{full:?}\n{err}");
            assert!(!err.contains("panicked"), "{full:?}\n{err}");
            let left: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            let file = std::fs::read(&target).ok();
            if takes_o && writes {
                assert_eq!(left, ["out.txt"], "{full:?}: {left:?}");
                assert!(o.stdout.is_empty(), "{full:?}: -o and stdout");
                // the file is what stdout holds without -o
                let plain = npusim(&args);
                assert_eq!(file.as_deref(), Some(&plain.stdout[..]), "{full:?}");
            } else {
                assert!(left.is_empty(), "{full:?} left {left:?}");
            }
            runs.push((o.stdout, o.stderr, file));
        }
        assert!(runs[0] == runs[1], "{args:?}: two runs differ");
    }
}
