//! The command line as a user meets it: exit codes, messages on stderr, `-o` files, `configs`,
//! determinism.

use crate::{npusim, root, stderr, stdout};

const DB: &str = "programs/vec_add_db_manual.yaml";

fn scratch(name: &str) -> std::path::PathBuf {
    crate::scratch(&format!("cli/{name}"))
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn good_program_exits_0() {
    for args in [
        vec!["check", DB],
        vec!["plan", DB],
        vec!["plan", DB, "--format", "yaml"],
        vec!["plan", DB, "--format", "json"],
        vec!["run", DB],
        vec!["run", DB, "--format", "json"],
        vec!["run", DB, "--config", "ascend910b"],
        vec!["run", DB, "--config", "configs/ascend910b.yaml"],
    ] {
        let o = npusim(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    let o = npusim(&["check", DB]);
    let out = stdout(&o);
    assert!(out.starts_with("ok: vec_add_db ("), "{out}");
    assert!(out.contains(" ops, ") && out.contains(" buffers)"), "{out}");
}

#[test]
fn run_json_is_a_document_with_the_promised_keys() {
    let o = npusim(&["run", DB, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "kernel",
        "config",
        "sync",
        "total_cycles",
        "microseconds",
        "pipes",
        "overlap",
        "pipe_bound",
        "efficiency",
        "findings",
        "deadlock",
        "syncs_inserted",
        "plan",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["config"], "ascend910b/aiv");
    assert_eq!(v["sync"], "manual");
    assert_eq!(
        v["syncs_inserted"],
        serde_json::json!({"dependencies": 0, "set_flags": 0, "wait_flags": 0, "barriers": 0,
                           "barrier_alls": 0, "merged": 0, "fallbacks": 0})
    );
}

#[test]
fn params_override_and_malformed_params_are_rejected() {
    let small = npusim(&["run", DB, "--param", "tiles=4", "--format", "json"]);
    assert_eq!(small.status.code(), Some(0), "{}", stderr(&small));
    let full = npusim(&["run", DB, "--format", "json"]);
    let cycles = |o: &std::process::Output| {
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["total_cycles"]
            .as_u64()
            .unwrap()
    };
    assert!(cycles(&small) < cycles(&full));

    for bad in ["tiles", "tiles=four", "=4"] {
        let o = npusim(&["run", DB, "--param", bad]);
        assert_eq!(o.status.code(), Some(2), "--param {bad}");
        assert!(stderr(&o).contains("--param"), "{}", stderr(&o));
    }
}

#[test]
fn bad_program_exits_2_naming_the_file() {
    let file = "tests/fixtures/several_problems.yaml";
    for cmd in ["check", "plan", "run"] {
        let o = npusim(&[cmd, file]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        assert!(o.stdout.is_empty(), "{cmd}: {}", stdout(&o));
        assert!(stderr(&o).contains(file), "{cmd}: {}", stderr(&o));
    }
}

#[test]
fn check_prints_every_problem_of_a_file() {
    let file = "tests/fixtures/several_problems.yaml";
    let o = npusim(&["check", file]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("error: {file} rejected: 3 problems\n")),
        "{err}"
    );
    // each problem once: its message, its place (`[file:line:col]`) with a snippet, its hint
    for (message, place) in [
        ("unknown dtype \"f17\"", ":10:39]"),
        ("unknown buffer \"zbb\"", ":16:29]"),
        ("unknown op \"vfoo\"", ":17:11]"),
    ] {
        assert_eq!(err.matches(message).count(), 1, "{message}:\n{err}");
        assert!(err.contains(&format!("[{file}{place}")), "{place}:\n{err}");
    }
    assert_eq!(err.matches("did you mean").count(), 2, "{err}");
    assert!(err.contains("vfoo: { ins: [zb], out: zb }"), "{err}");
    // the unknown op may have meant to write zb: no follow-on "read before first write"
    assert!(!err.contains("read before first write"), "{err}");
}

#[test]
fn missing_program_file_exits_2() {
    let o = npusim(&["check", "tests/fixtures/no_such_program.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("tests/fixtures/no_such_program.yaml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unknown_config_exits_2() {
    // one letter more than ascend910b, two more than ascend910
    let o = npusim(&["run", DB, "--config", "ascend910bx"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("unknown config `ascend910bx`"), "{err}");
    assert!(err.contains("did you mean `ascend910b`"), "{err}");

    let o = npusim(&["run", DB, "--config", "configs/no_such.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("configs/no_such.yaml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_config_file_is_reported_like_a_bad_program() {
    let dir = scratch("bad_config");
    let cfg = dir.join("broken.yaml");
    let text = sim::builtin::builtin("ascend910b")
        .unwrap()
        .replace("queue_depth: 32", "queue_depht: 32");
    std::fs::write(&cfg, text).unwrap();
    let cfg = cfg.to_string_lossy().into_owned();
    let o = npusim(&["check", DB, "--config", &cfg]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("unknown key \"queue_depht\""), "{err}");
    assert!(err.contains(&format!("[{cfg}:")), "{err}");
}

#[test]
fn a_guarded_access_is_proven_refused_or_checked_at_run_time_as_its_guard_says() {
    // the fixture prefetches tile j + 2 under j != n - 2: a hole, not a range, so the loader
    // leaves the load to the engine, which stops at j = 15 naming the op, j and the bound
    const FIXTURE: &str = "tests/fixtures/bad/run_guarded_access_out_of_bounds.yaml";
    let o = npusim(&["run", FIXTURE]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(stdout(&o).is_empty());
    for want in [
        "the run stopped",
        "slice 2176:2304 out of bounds for dimension 0 (size 2048)",
        "j=15)",
        "run_guarded_access_out_of_bounds.yaml:19:13]",
        "body[2].for.body[0].if.then[0]",
    ] {
        assert!(err.contains(want), "no {want:?} in\n{err}");
    }
    let text = std::fs::read_to_string(root().join(FIXTURE)).unwrap();
    let dir = scratch("guards");
    let with = |guard: &str| {
        let path = dir.join(format!("{}.yaml", guard.replace(' ', "")));
        std::fs::write(&path, text.replace("j != n - 2", guard)).unwrap();
        npusim(&["run", path.to_str().unwrap()])
    };
    // the guard it meant narrows j to 0 .. 13: proven, and it runs
    let o = with("j + 2 < n");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // one that narrows j exactly but still lets it reach 14 is refused when loading
    let o = with("j + 2 <= n");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("rejected: 1 problem"), "{err}");
    assert!(
        err.contains("slice end (j + 3) * 128 (can reach 2176) is out of bounds"),
        "{err}"
    );
}

#[test]
fn deadlocking_program_exits_1_with_a_deadlock_report() {
    let o = npusim(&["run", "tests/fixtures/deadlock.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("DEADLOCK"), "{out}");
    assert!(out.contains("flag MTE2->V#0"), "{out}");
    assert!(out.contains("body[1] wait_flag"), "{out}");
    assert!(stderr(&o).contains("deadlock") || stderr(&o).contains("DEADLOCK"));

    let o = npusim(&["run", "tests/fixtures/deadlock.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let waiters = v["deadlock"]["waiters"].as_array().unwrap();
    assert!(waiters
        .iter()
        .any(|w| w["pipe"] == "V" && w["waits_on"] == "flag MTE2->V#0" && w["op"] == "body[1]"));
}

#[test]
fn unpaired_set_flag_exits_1() {
    let o = npusim(&["run", "tests/fixtures/unpaired.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("unpaired set_flag"), "{out}");
    assert!(out.contains("body[4] set_flag"), "{out}");
}

#[test]
fn overflow_exits_1_with_hivm_message() {
    let o = npusim(&["plan", "tests/fixtures/overflow.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("ub overflow, requires 2097152 bits while 1572864 bits available!"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn sync_auto_programs_are_synchronised_and_run() {
    let file = "tests/fixtures/auto_sync.yaml";
    assert_eq!(npusim(&["check", file]).status.code(), Some(0));
    assert_eq!(npusim(&["plan", file]).status.code(), Some(0));
    // `run` plans, synchronises and runs it: never refused as bad input, and the document says
    // what the sync pass inserted (whether the run is clean is the sync pass's test)
    let o = npusim(&["run", file, "--format", "json"]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sync"], "auto");
    let syncs = v["syncs_inserted"].as_object().expect("an object");
    let keys: Vec<&String> = syncs.keys().collect();
    assert_eq!(
        keys,
        [
            "dependencies",
            "set_flags",
            "wait_flags",
            "barriers",
            "barrier_alls",
            "merged",
            "fallbacks"
        ]
    );
    let o = npusim(&["run", file]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\nsync    auto\n"), "{out}");
    assert!(out.contains("\nsyncs   inserted "), "{out}");
}

#[test]
fn output_file_is_written_whole_on_success_and_not_at_all_on_failure() {
    let dir = scratch("output");
    let target = dir.join("report.json");
    let t = target.to_string_lossy().into_owned();

    // failures: bad program, unknown config, overflow: nothing is written
    for args in [
        vec!["run", "tests/fixtures/several_problems.yaml", "-o", &t],
        vec!["run", DB, "--config", "nope", "-o", &t],
        vec!["plan", "tests/fixtures/overflow.yaml", "-o", &t],
    ] {
        let o = npusim(&args);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(
            files_in(&dir).is_empty(),
            "{args:?} left {:?}",
            files_in(&dir)
        );
    }

    // success: the file holds exactly what stdout would
    let o = npusim(&["run", DB, "--format", "json", "-o", &t]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let stdout_run = npusim(&["run", DB, "--format", "json"]);
    assert_eq!(std::fs::read(&target).unwrap(), stdout_run.stdout);
    assert_eq!(files_in(&dir), ["report.json"]);

    let plan = dir.join("plan.yaml");
    let p = plan.to_string_lossy().into_owned();
    let o = npusim(&["plan", DB, "--format", "yaml", "-o", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&plan).unwrap(),
        npusim(&["plan", DB, "--format", "yaml"]).stdout
    );

    // a failing run does not clobber an existing file
    let before = std::fs::read(&target).unwrap();
    let o = npusim(&["run", "tests/fixtures/several_problems.yaml", "-o", &t]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert_eq!(files_in(&dir), ["plan.yaml", "report.json"]);
}

#[test]
fn configs_lists_the_built_in_configs() {
    let o = npusim(&["configs"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("ascend910b"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("(default)"), "{line}");
    assert!(line.contains("aiv, aic"), "{line}");
}

#[test]
fn output_is_byte_identical_across_runs() {
    for args in [
        vec!["run", DB],
        vec!["run", DB, "--format", "json"],
        vec!["plan", DB, "--format", "yaml"],
        vec![
            "run",
            "programs/matmul_pingpong_manual.yaml",
            "--format",
            "json",
        ],
    ] {
        let a = npusim(&args);
        let b = npusim(&args);
        assert_eq!(a.status.code(), Some(0), "{args:?}: {}", stderr(&a));
        assert_eq!(a.stdout, b.stdout, "{args:?}");
        assert_eq!(a.stderr, b.stderr, "{args:?}");
    }
}

#[test]
fn a_run_with_findings_still_writes_its_report() {
    // the report is where the finding is explained: it is complete, so it is written (exit 1)
    let dir = scratch("findings");
    let target = dir.join("deadlock.json");
    let t = target.to_string_lossy().into_owned();
    let o = npusim(&[
        "run",
        "tests/fixtures/deadlock.yaml",
        "--format",
        "json",
        "-o",
        &t,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("finding: deadlock at cycle"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();
    assert!(v["deadlock"].is_object());
    assert_eq!(files_in(&dir), ["deadlock.json"]);
}

/// `--l2` on `run` and `compare`, on the memory test config: the golden single load (1024 B,
/// the 4 lines of the L2) costs 1 + (10 + 100) + 1024 / 64 = 127 cold (every line misses) and
/// 1 + (10 + 20) + 1024 / min(64, 32) = 63 warm (every line hits), as derived in
/// sim/tests/integration/memory.rs.
#[test]
fn l2_warm_and_cold_from_the_command_line() {
    let prog = "sim/tests/golden/single_load.yaml";
    let cfg = "sim/tests/golden/memory_config.yaml";
    for (l2, total, hits) in [
        (None, 127, 0),
        (Some("cold"), 127, 0),
        (Some("warm"), 63, 1024),
    ] {
        let mut args = vec!["run", prog, "--config", cfg, "--format", "json"];
        if let Some(l2) = l2 {
            args.extend(["--l2", l2]);
        }
        let o = npusim(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["total_cycles"], total, "{args:?}");
        assert_eq!(v["memory"]["l2_start"], l2.unwrap_or("cold"));
        assert_eq!(v["memory"]["hit_bytes"], hits);
        assert_eq!(v["memory"]["miss_bytes"], 1024 - hits);
    }
    let o = npusim(&["run", prog, "--config", cfg, "--l2", "warm"]);
    let out = stdout(&o);
    assert!(
        out.contains("memory      L2 warm: 1 reads hit 1024 B (4 lines), missed 0 B (0 lines), HBM 0 B; 0 writes 0 B; 0 lines evicted"),
        "{out}"
    );
    let o = npusim(&[
        "compare", prog, "--config", cfg, "--l2", "warm", "--format", "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for level in v.as_array().unwrap() {
        assert_eq!(level["total_cycles"], 63);
    }
    // without a memory section the key is null and nothing changes
    let o = npusim(&[
        "run",
        prog,
        "--config",
        "sim/tests/golden/test_config.yaml",
        "--l2",
        "warm",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["total_cycles"], 27);
    assert!(v["memory"].is_null());
    let o = npusim(&["run", prog, "--config", cfg, "--l2", "hot"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
