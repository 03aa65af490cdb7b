//! `npusim compare`: one plan → sync → run per reuse level, as a table or a list of run
//! documents.

use crate::{npusim, stderr, stdout};
use serde_json::Value;

const DB: &str = "programs/vec_add_db_manual.yaml";

/// The rows of the summary table: the lines after its header up to the first blank line.
fn summary_rows(text: &str) -> Vec<&str> {
    let table = text
        .split("\n\n")
        .find(|block| block.starts_with("level "))
        .unwrap_or_else(|| panic!("no summary table in\n{text}"));
    table.lines().skip(1).collect()
}

fn json_list(o: &std::process::Output) -> Vec<Value> {
    match serde_json::from_slice::<Value>(&o.stdout) {
        Ok(Value::Array(docs)) => docs,
        other => panic!("not a JSON list: {other:?}"),
    }
}

#[test]
fn compare_manual_program_prints_a_row_per_level() {
    let o = npusim(&["compare", DB]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let rows = summary_rows(&out);
    assert_eq!(rows.len(), 3, "{out}");
    let levels: Vec<&str> = rows
        .iter()
        .map(|r| r.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(levels, ["2", "1", "0"]);
    // a manual program fits side by side: every level plans and runs the same
    for r in &rows {
        assert!(r.contains("1.000x"), "{out}");
        assert!(r.contains(" 0/0 "), "{out}");
    }
    assert!(out.contains("stalls by pipe and cause"), "{out}");
    assert!(out.contains("legend:"), "{out}");
}

#[test]
fn compare_text_snapshot() {
    let o = npusim(&["compare", DB]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn compare_json_is_a_list_of_run_documents() {
    let o = npusim(&["compare", DB, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let docs = json_list(&o);
    assert_eq!(docs.len(), 3);
    let run = npusim(&["run", DB, "--format", "json"]);
    let run: Value = serde_json::from_slice(&run.stdout).unwrap();
    for (doc, level) in docs.iter().zip([2, 1, 0]) {
        assert!(doc["total_cycles"].as_u64().unwrap() > 0);
        assert_eq!(doc["total_cycles"], run["total_cycles"]);
        assert_eq!(doc["syncs_inserted"]["set_flags"], 0, "{doc}");
        assert_eq!(doc["plan"]["level"], level);
        // the same document `run --format json --level N` prints
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        let run_keys: Vec<&String> = run.as_object().unwrap().keys().collect();
        assert_eq!(keys, run_keys);
    }
    let level0 = npusim(&["run", DB, "--level", "0", "--format", "json"]);
    let level0: Value = serde_json::from_slice(&level0.stdout).unwrap();
    assert_eq!(docs[2], level0);
}

#[test]
fn compare_levels_keeps_the_order_given() {
    let o = npusim(&["compare", DB, "--levels", "0,2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let levels: Vec<&str> = summary_rows(&out)
        .iter()
        .map(|r| r.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(levels, ["0", "2"], "{out}");

    let o = npusim(&["compare", DB, "--levels", "1", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let docs = json_list(&o);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["plan"]["level"], 1);
}

#[test]
fn compare_bad_levels_exit_2() {
    for (levels, words) in [
        ("3", "`3` is not a reuse level; the levels are 0, 1 and 2"),
        ("2,2", "level 2 is listed twice"),
        ("", "expected comma-separated reuse levels"),
    ] {
        let o = npusim(&["compare", DB, "--levels", levels]);
        assert_eq!(o.status.code(), Some(2), "--levels {levels:?}");
        assert!(stderr(&o).contains(words), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    // `--level` belongs to `plan` and `run`; compare takes `--levels`
    let o = npusim(&["compare", DB, "--level", "1"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn compare_overflow_is_a_row_and_exit_1() {
    let o = npusim(&["compare", "tests/fixtures/overflow.yaml", "--levels", "2,0"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    let rows = summary_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    for r in rows {
        assert!(
            r.contains(
                "overflow: ub overflow, requires 2097152 bits while 1572864 bits available!"
            ),
            "{out}"
        );
    }
    let err = stderr(&o);
    assert!(err.contains("level 0: ub overflow"), "{err}");
    assert!(err.contains("2 problems at levels 2, 0"), "{err}");

    let o = npusim(&[
        "compare",
        "tests/fixtures/overflow.yaml",
        "--levels",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let docs = json_list(&o);
    assert_eq!(docs[0]["level"], 1);
    assert!(docs[0]["overflow"]
        .as_str()
        .unwrap()
        .starts_with("ub overflow"));
}

#[test]
fn compare_bad_input_exits_2() {
    let o = npusim(&["compare", "tests/fixtures/several_problems.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let o = npusim(&["compare", DB, "--capacity", "l1=1KiB"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("core aiv has no l1 scope"),
        "{}",
        stderr(&o)
    );
}

/// Needs the automatic sync pass (`planner::synchronize`): until it inserts flags, the
/// reuse_levels program runs unsynchronised and the race checker finds hazards (exit 1).
#[test]
fn compare_reuse_levels_level_0_is_slower_than_levels_1_and_2() {
    let o = npusim(&["compare", "programs/reuse_levels.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let docs = json_list(&o);
    assert_eq!(docs.len(), 3);
    // docs are in --levels order: 2, 1, 0
    let cycles = |i: usize| docs[i]["total_cycles"].as_u64().unwrap();
    assert!(
        cycles(2) > cycles(0) && cycles(2) > cycles(1),
        "level 0 ({}) should be slower than levels 2 ({}) and 1 ({})",
        cycles(2),
        cycles(0),
        cycles(1)
    );
    // the why: C in A's slot makes the load of every tile wait for the vector unit
    let mte2_waits_on_v = |i: usize| -> u64 {
        docs[i]["pipes"]["MTE2"]["stalls"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("wait_flag V#"))
            .map(|(_, v)| v.as_u64().unwrap())
            .sum()
    };
    assert!(
        mte2_waits_on_v(2) > mte2_waits_on_v(0) + (cycles(2) - cycles(0)) / 2,
        "MTE2 waits on V: level 0 {} level 2 {}",
        mte2_waits_on_v(2),
        mte2_waits_on_v(0)
    );
    for doc in &docs {
        assert_eq!(doc["sync"], "auto");
        assert_eq!(doc["hazards"], serde_json::json!([]));
        assert!(doc["syncs_inserted"]["set_flags"].as_u64().unwrap() > 0);
    }
    let o = npusim(&["compare", "programs/reuse_levels.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary_rows(&stdout(&o)).len(), 3);
}
