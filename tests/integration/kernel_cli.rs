//! `plan`, `check` and `compare` on a mixed kernel (tests/fixtures/launch/matmul_add_one_tile.yaml: an `aic`
//! part that multiplies and an `aiv` part that adds, two blocks) and on a launch of many
//! vector cores (programs/vec_add_blocks.yaml, eight blocks): every part planned on its own,
//! failures located in their part, the launch run whole. Expected values come from the
//! programs' text (shapes, dtypes, params) or from another command (`run`, `plan
//! --show-sync`), never from the output under test.

use crate::{json_of, keys, npusim, root, stderr, stdout};
use serde_json::Value;

const MIXED: &str = "tests/fixtures/launch/matmul_add_one_tile.yaml";
const BLOCKS: &str = "programs/vec_add_blocks.yaml";

/// The 1-based line of `programs/FILE` that contains `needle`.
fn line_of(file: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{file} has no `{needle}`"))
        + 1
}

// the mixed kernel's params: tm 128, N 256, K 256, half = tm / 2; a1 [tm, K] f16, b1 [K, N]
// f16, c0 [tm, N] f32; wb, xb, yb [half, N] f16
const A1: u64 = 128 * 256 * 2;
const B1: u64 = 256 * 256 * 2;
const C0: u64 = 128 * 256 * 4;
const HALF_TILE: u64 = 64 * 256 * 2;

#[test]
fn plan_json_lists_each_part_with_its_own_plan() {
    let doc = json_of("plan", &[MIXED]);
    assert_eq!(
        keys(&doc),
        ["schema", "kernel", "level", "liveness", "parts"]
    );
    assert_eq!(doc["kernel"], "matmul_add_one_tile");
    let parts = doc["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    let (aic, aiv) = (&parts[0], &parts[1]);
    assert_eq!((&aic["core"], &aiv["core"]), (&"aic".into(), &"aiv".into()));
    // each part's plan is a whole plan document of its core
    for (part, core) in [(aic, "aic"), (aiv, "aiv")] {
        let plan = &part["plan"];
        assert_eq!(plan["schema"], 1);
        assert_eq!(plan["config"], format!("ascend910b/{core}"));
        assert_eq!(plan["level"], 2);
    }
    assert_eq!(keys(&aic["plan"]["buffers"]), ["a1", "b1", "c0"]);
    assert_eq!(aic["plan"]["buffers"]["a1"]["bytes"], A1);
    assert_eq!(aic["plan"]["buffers"]["b1"]["bytes"], B1);
    assert_eq!(aic["plan"]["buffers"]["c0"]["bytes"], C0);
    assert_eq!(aic["plan"]["scopes"]["l1"]["required"], A1 + B1);
    assert_eq!(keys(&aiv["plan"]["buffers"]), ["wb", "xb", "yb"]);
    for b in ["wb", "xb", "yb"] {
        assert_eq!(aiv["plan"]["buffers"][b]["bytes"], HALF_TILE);
    }
    assert!(aiv["plan"]["scopes"].get("l1").is_none(), "{aiv}");

    // --level and --liveness apply to every part
    let doc = json_of("plan", &[MIXED, "--level", "0", "--liveness", "scoped"]);
    assert_eq!(
        (doc["level"].as_u64(), &doc["liveness"]),
        (Some(0), &"scoped".into())
    );
    for part in doc["parts"].as_array().unwrap() {
        assert_eq!(part["plan"]["level"], 0);
        assert_eq!(part["plan"]["liveness"], "scoped");
    }
}

#[test]
fn a_capacity_applies_to_the_parts_whose_core_has_the_scope() {
    let doc = json_of(
        "plan",
        &[MIXED, "--capacity", "l1=300000", "--capacity", "ub=100000"],
    );
    let parts = doc["parts"].as_array().unwrap();
    assert_eq!(parts[0]["plan"]["scopes"]["l1"]["capacity"], 300000);
    assert_eq!(parts[1]["plan"]["scopes"]["ub"]["capacity"], 100000);
    assert!(parts[1]["plan"]["scopes"].get("l1").is_none());
    assert!(parts[0]["plan"]["scopes"].get("ub").is_none());

    // too little UB for the vector part: its overflow, at its fullest op, names the part
    let err = aiv_ub_overflow("plan");
    assert!(err.contains("aiv.body[2]"), "{err}");
}

#[test]
fn a_capacity_no_part_has_is_bad_input_naming_each_parts_scopes() {
    // the built-in config without the cube core's BT: neither part has one
    let text = sim::builtin::builtin("ascend910b").unwrap();
    let config: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("bt:") && !l.contains("to: bt"))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = crate::scratch("kernel/no-bt");
    let file = dir.join("no_bt.yaml");
    std::fs::write(&file, config).unwrap();
    let f = file.to_string_lossy().into_owned();
    let o = npusim(&["plan", MIXED, "--config", &f, "--capacity", "bt=512"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "error: --capacity bt=...: no part of the mixed kernel has a bt scope \
         (aic has l1, l0a, l0b, l0c, fp; aiv has ub)\n"
    );
    // the check document: one problem of the argument, no file
    let o = npusim(&[
        "check",
        MIXED,
        "--config",
        &f,
        "--capacity",
        "bt=512",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{doc}");
    assert_eq!(problems[0]["file"], Value::Null);
    assert!(problems[0]["message"]
        .as_str()
        .unwrap()
        .contains("no part of the mixed kernel has a bt scope"));
}

#[test]
fn plan_text_has_a_section_per_part_and_explain_finds_the_part() {
    let o = npusim(&["plan", MIXED]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("== aic ==\n\n"), "{text}");
    let aiv = text.find("\n== aiv ==\n\n").expect("an aiv section");
    let (aic_part, aiv_part) = text.split_at(aiv);
    assert!(aic_part.contains("config   ascend910b/aic\n"), "{text}");
    assert!(aiv_part.contains("config   ascend910b/aiv\n"), "{text}");
    for b in ["a1", "b1", "c0"] {
        assert!(aic_part.contains(&format!(" {b} ")), "{b}: {text}");
    }
    assert!(
        aiv_part.contains(&format!("UB     wb      {HALF_TILE}")),
        "{text}"
    );
    // the legend once, after both parts
    assert_eq!(
        text.matches("\ncapacity   bytes the scope holds\n").count(),
        1
    );
    assert!(text.find("\ncapacity ").unwrap() > aiv, "{text}");

    let o = npusim(&["plan", MIXED, "--explain", "wb"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("== aiv ==\n\nbuffer   wb (ub, "), "{text}");
    assert!(text.contains("declared at aiv.buffers.wb"), "{text}");
    let o = npusim(&["plan", MIXED, "--explain", "wbb"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!("error: --explain wbb: {MIXED} has no buffer `wbb`; did you mean `wb`?\n")
    );
}

#[test]
fn check_says_ok_per_part_and_its_document_holds_the_kernels_plan() {
    let o = npusim(&["check", MIXED]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // five ops in each part's body; the l1 and l0c buffers of aic side by side
    assert_eq!(
        stdout(&o),
        format!(
            "ok: matmul_add_one_tile (mixed kernel, 2 blocks)\n  aic: 5 ops, 3 buffers; plan: \
             l1 {} of 524288 bytes (sequential), l0c {C0} of 131072 bytes (sequential)\n  aiv: 5 \
             ops, 3 buffers; plan: ub {} of 196608 bytes (sequential)\n",
            A1 + B1,
            2 * HALF_TILE
        )
    );
    let o = npusim(&["check", MIXED, "--blocks", "1"]);
    assert!(stdout(&o).starts_with("ok: matmul_add_one_tile (mixed kernel, 1 block)\n"));

    let doc = json_of("check", &[MIXED]);
    assert_eq!(
        (doc["ops"].as_u64(), doc["buffers"].as_u64()),
        (Some(10), Some(6))
    );
    assert_eq!(doc["plan"], json_of("plan", &[MIXED]));

    // an overflow of the aiv part: one problem, at that part's op
    let o = npusim(&["check", MIXED, "--capacity", "ub=40000", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &doc["problems"][0];
    assert_eq!(p["path"], "aiv.body[2]");
    assert_eq!(p["line"].as_u64(), Some(line_of(MIXED, "dst: wb }") as u64));
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .starts_with("aiv: ub overflow"),
        "{p}"
    );
    assert_eq!(doc["plan"], Value::Null);
}

/// The total cycles of `run PROGRAM ARGS --format json`.
fn run_cycles(program: &str, args: &[&str]) -> u64 {
    let mut all = vec![program];
    all.extend_from_slice(args);
    json_of("run", &all)["total_cycles"].as_u64().unwrap()
}

/// The rows of the summary table of `compare`'s text.
fn summary_rows(text: &str) -> Vec<Vec<&str>> {
    let table = text
        .split("\n\n")
        .find(|block| block.starts_with("level "))
        .unwrap_or_else(|| panic!("no summary table in\n{text}"));
    table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

#[test]
fn compare_runs_a_mixed_kernel_whole_at_every_level() {
    let o = npusim(&["compare", MIXED]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(
            "kernel  matmul_add_one_tile\nconfig  ascend910b/aic (1800 MHz)\nconfig  \
             ascend910b/aiv (part aiv)\nsync    auto\nlaunch  2 blocks, 6 cores\n"
        ),
        "{text}"
    );
    let rows = summary_rows(&text);
    // every scope of every part that holds something, named by its part
    let header = rows[0].join(" ");
    assert!(
        header.starts_with("level aic L1 bytes aic L0C bytes aiv UB bytes reused set/wait"),
        "{header}"
    );
    for (row, level) in rows[1..].iter().zip(["2", "1", "0"]) {
        assert_eq!(row[0], level);
        let plan = json_of("plan", &[MIXED, "--level", level]);
        let used = |part: usize, scope: &str| {
            plan["parts"][part]["plan"]["scopes"][scope]["used"]
                .as_u64()
                .unwrap()
                .to_string()
        };
        assert_eq!(row[1..4], [used(0, "l1"), used(0, "l0c"), used(1, "ub")]);
        // set/wait: every flag the sync pass put in either part (the kernel has none of its own)
        let shown = stdout(&npusim(&["plan", MIXED, "--level", level, "--show-sync"]));
        let sets = shown.matches("- set_flag:").count();
        let waits = shown.matches("- wait_flag:").count();
        assert!(sets > 0, "{shown}");
        assert_eq!(row[5], format!("{sets}/{waits}"));
        // cycles: the whole launch, as `run` reports it
        assert_eq!(row[7], run_cycles(MIXED, &["--level", level]).to_string());
    }
    // the stalls of the first core of each core type
    assert!(text.contains("  level  core           pipe"), "{text}");
    assert!(text.contains("  2      block 0 aic 0  "), "{text}");
    assert!(text.contains("  2      block 0 aiv 0  "), "{text}");
    assert!(!text.contains("block 1 "), "{text}");

    // JSON: each entry is the level's run document, the whole launch in it
    let o = npusim(&["compare", MIXED, "--levels", "2,0", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let Value::Array(entries) = serde_json::from_slice(&o.stdout).unwrap() else {
        panic!("not a list")
    };
    for (entry, level) in entries.iter().zip(["2", "0"]) {
        // (compare does not follow the critical path: no "paced by")
        let run = json_of("run", &[MIXED, "--level", level, "--no-critical-path"]);
        let mut doc = entry.clone();
        let m = doc.as_object_mut().unwrap();
        assert_eq!(
            m.shift_remove("level").unwrap(),
            level.parse::<u64>().unwrap()
        );
        assert_eq!(m.shift_remove("overflow").unwrap(), Value::Null);
        assert_eq!(doc, run, "level {level}");
        assert_eq!(entry["launch"]["cores"].as_array().unwrap().len(), 2 * 3);
    }
}

#[test]
fn compare_names_the_part_that_overflows_and_draws_html_for_a_launch() {
    let o = npusim(&["compare", MIXED, "--capacity", "ub=40000", "--levels", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(" overflow: aiv: ub overflow, requires "),
        "{text}"
    );
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!(
            "error: {MIXED}: level 2: aiv: ub overflow, requires "
        )),
        "{err}"
    );

    // a launch's comparison page: one column per level (html_cli's launch_pages checks the
    // rest of what it holds)
    for program in [MIXED, BLOCKS] {
        let page = crate::html_cli::scratch("kernel-compare").join("c.html");
        let path = page.to_string_lossy();
        let o = npusim(&["compare", program, "--levels", "2,0", "--html", &path]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = std::fs::read_to_string(&page).unwrap();
        assert_eq!(text.matches("<div class=\"level\" data-level=").count(), 2);
    }
}

#[test]
fn compare_of_a_launch_reports_the_launch_total() {
    let o = npusim(&["compare", BLOCKS, "--levels", "2", "--blocks", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("\nlaunch  4 blocks, 4 cores\n"), "{text}");
    let rows = summary_rows(&text);
    // level, UB bytes, reused, set/wait, barriers, cycles
    assert_eq!(
        rows[0][..8],
        ["level", "UB", "bytes", "reused", "set/wait", "barriers", "cycles", "vs"]
    );
    assert_eq!(
        rows[1][5],
        run_cycles(BLOCKS, &["--blocks", "4"]).to_string()
    );
    // one core type: block 0's stalls only
    assert!(text.contains(" block 0 aiv 0 "), "{text}");
    assert!(!text.contains(" block 1 aiv 0 "), "{text}");
}

#[test]
fn run_locates_a_parts_overflow_in_that_part() {
    aiv_ub_overflow("run");
}

/// `npusim COMMAND MIXED --capacity ub=40000`: the vector part's UB overflow, a finding whose
/// message names the part and points at the op where its UB is fullest; its stderr.
fn aiv_ub_overflow(command: &str) -> String {
    let o = npusim(&[command, MIXED, "--capacity", "ub=40000"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("error: {MIXED}: aiv: ub overflow, requires")),
        "{err}"
    );
    let line = line_of(MIXED, "dst: wb }");
    assert!(err.contains(&format!("{MIXED}:{line}:7]")), "{err}");
    err
}

#[test]
fn a_deadlock_names_each_waiting_core_and_its_parts_op() {
    // the mixed kernel without its cross_set: the vector cores wait for a tile never announced
    let text = std::fs::read_to_string(root().join(MIXED)).unwrap();
    let dead: String = text
        .lines()
        .filter(|l| !l.contains("cross_set"))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = crate::scratch("kernel/no-cross-set");
    let file = dir.join("no_cross_set.yaml");
    std::fs::write(&file, dead).unwrap();
    let f = file.to_string_lossy().into_owned();
    for (command, context) in [("run", ""), ("compare", "level 2: ")] {
        let mut args = vec![command, f.as_str(), "--blocks", "1"];
        if command == "compare" {
            args.extend(["--levels", "2"]);
        }
        let o = npusim(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("finding: {context}deadlock at cycle ")))
            .unwrap_or_else(|| panic!("{command}: no deadlock line in\n{err}"));
        // aiv.body[1], line 37, is the vector part's cross_wait; both vector cores of block 0
        // wait there
        for core in ["block 0 aiv 0", "block 0 aiv 1"] {
            assert!(
                line.contains(&format!(
                    "{core}: MTE2 waits on cross-core flag #0 ({f}:37:7 cross_wait {{ id: 0, pipe: mte2 }})"
                )),
                "{command}: {line}"
            );
        }
        assert!(!line.contains("aic.body"), "{command}: {line}");
    }
}
