//! `npusim compare`: one plan → sync → run per reuse level, as a table or a list of entries of
//! one shape (`schema`, `level`, `overflow`, then the run document's keys).

use crate::{npusim, stderr, stdout, IDEAL_CONFIG};
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

/// The keys of a JSON object, in order.
fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

#[test]
fn compare_json_is_a_list_of_run_documents_with_their_level() {
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
        assert_eq!(doc["schema"], 1);
        assert_eq!(doc["level"], level);
        assert_eq!(doc["overflow"], Value::Null);
        assert_eq!(doc["plan"]["level"], level);
        // the keys of the document `run --format json` prints, with `level` and `overflow`
        // after `schema`
        let mut expected = keys(&run);
        expected.splice(1..1, ["level".to_string(), "overflow".to_string()]);
        assert_eq!(keys(doc), expected);
    }
    // an entry is the run document of its level, plus `level` and `overflow`
    // (compare does not follow the critical path: no "paced by")
    let level0 = npusim(&[
        "run",
        DB,
        "--level",
        "0",
        "--format",
        "json",
        "--no-critical-path",
    ]);
    let level0: Value = serde_json::from_slice(&level0.stdout).unwrap();
    let mut entry = docs[2].clone();
    let m = entry.as_object_mut().unwrap();
    assert_eq!(m.shift_remove("level"), Some(Value::from(0)));
    assert_eq!(m.shift_remove("overflow"), Some(Value::Null));
    assert_eq!(entry, level0);
}

/// A level that overflows and levels that run: every entry has the same keys in the same order,
/// an overflow entry has `null` for everything the level did not compute.
#[test]
fn every_compare_entry_has_the_same_keys_when_a_level_overflows() {
    // at 5088 bytes of UB, level 2's first fit finds no address for every slot; levels 1 and 0
    // place it (and their runs find the races the hand-written flags leave: exit 1)
    let args = [
        "compare",
        "tests/fixtures/fragmented_peak_fits.yaml",
        "--capacity",
        "ub=5088",
        "--format",
        "json",
    ];
    let o = npusim(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let docs = json_list(&o);
    assert_eq!(docs.len(), 3);
    let first = keys(&docs[0]);
    assert_eq!(first[..3], ["schema", "level", "overflow"]);
    for doc in &docs {
        assert_eq!(keys(doc), first, "{doc}");
        assert_eq!(doc["schema"], 1);
        assert_eq!(doc["kernel"], "fragmented_peak_fits");
        assert_eq!(doc["config"], "ascend910b/aiv");
        assert_eq!(doc["sync"], "manual");
    }
    let (overflow, ran) = (&docs[0], &docs[1..]);
    assert_eq!(overflow["level"], 2);
    assert!(
        overflow["overflow"]
            .as_str()
            .unwrap()
            .starts_with("ub overflow, requires 36864 bits while 40704 bits available!"),
        "{overflow}"
    );
    assert_eq!(overflow["race_check"], false);
    for (key, value) in overflow.as_object().unwrap().iter().skip(6) {
        if key != "race_check" {
            assert_eq!(value, &Value::Null, "{key}");
        }
    }
    for (doc, level) in ran.iter().zip([1, 0]) {
        assert_eq!(doc["level"], level);
        assert_eq!(doc["overflow"], Value::Null);
        assert_eq!(doc["plan"]["level"], level);
        assert!(doc["total_cycles"].as_u64().unwrap() > 0);
        assert!(!doc["hazards"].as_array().unwrap().is_empty());
    }

    // the same list without the race check (null hazards), levels 2 and 1: the snapshot
    let mut short = args.to_vec();
    short.extend(["--levels", "2,1", "--no-race-check"]);
    let o = npusim(&short);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let docs = json_list(&o);
    assert_eq!(keys(&docs[0]), keys(&docs[1]));
    insta::assert_snapshot!(stdout(&o));
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
    assert_eq!(docs[0]["total_cycles"], Value::Null);
    assert_eq!(docs[0]["plan"], Value::Null);
    insta::assert_snapshot!(stdout(&o));
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

/// V's busy cycles per level of `compare --format json`, in row order.
fn v_busy_by_level(args: &[&str]) -> Vec<(i64, u64)> {
    let o = npusim(args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json_list(&o)
        .iter()
        .map(|e| {
            (
                e["level"].as_i64().unwrap(),
                e["pipes"]["V"]["busy"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn reuse_levels_that_differ_only_in_addresses_differ_in_vector_time_with_banks() {
    // Levels 2 and 1 of reuse_levels run the same instructions with the same syncs; only where
    // C lives differs (B's bytes, or A's two slots). Without ub_banks V's time depends on bytes
    // alone, so the two levels' V busy time is equal; with ub_banks (the built-in config) the
    // blocks of vabs D -> C and vadd D, C -> D fall in other bank groups, so it differs.
    let plain = v_busy_by_level(&[
        "compare",
        "programs/reuse_levels.yaml",
        "--config",
        IDEAL_CONFIG,
        "--format",
        "json",
    ]);
    let banks = v_busy_by_level(&["compare", "programs/reuse_levels.yaml", "--format", "json"]);
    assert_eq!((plain[0].0, plain[1].0), (2, 1));
    assert_eq!(plain[0].1, plain[1].1, "{plain:?}");
    assert_eq!((banks[0].0, banks[1].0), (2, 1));
    assert_ne!(banks[0].1, banks[1].1, "{banks:?}");
    // banks only ever add cycles
    assert!(banks[0].1 > plain[0].1 && banks[1].1 >= plain[1].1);
}

#[test]
fn bank_conflict_program_reports_its_conflict_cycles() {
    // programs/bank_conflict.yaml (vadd 1 cycle per repeat): add a (both inputs in the same 8
    // groups, the output in read banks) costs max(1, 2, 1) + 1 = 3 per repeat × 32 repeats = 96
    // cycles; add b (spread, the output in the next layer of banks) 1 × 32 = 32. Conflict
    // cycles: 96 + 32 − 2 × 32 = 64.
    let o = npusim(&["run", "programs/bank_conflict.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["bank_conflict_cycles"], 64);
    // V busy: 96 + 32 (flags have no work)
    assert_eq!(doc["pipes"]["V"]["busy"], 128);
    let o = npusim(&["run", "programs/bank_conflict.yaml"]);
    assert!(
        stdout(&o).contains("bank conflicts     64  cycles of V busy (ub_banks)"),
        "{}",
        stdout(&o)
    );
    // without ub_banks: no claim, and both adds cost 32
    let o = npusim(&[
        "run",
        "programs/bank_conflict.yaml",
        "--config",
        IDEAL_CONFIG,
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["bank_conflict_cycles"], Value::Null);
    assert_eq!(doc["pipes"]["V"]["busy"], 64);
    assert!(!stdout(&npusim(&[
        "run",
        "programs/bank_conflict.yaml",
        "--config",
        IDEAL_CONFIG
    ]))
    .contains("bank conflicts"));
}
