//! The race checker as `npusim run` uses it: on by default, hazards in the report, on stderr
//! and in the exit code; `--no-race-check` skips it.

use crate::{npusim, stderr, stdout};
use serde_json::Value;

const SB: &str = "programs/vec_add_sb_manual.yaml";

fn json(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = npusim(&all);
    (
        o.status.code(),
        serde_json::from_slice(&o.stdout).unwrap(),
        stderr(&o),
    )
}

#[test]
fn shipped_manual_programs_run_race_free() {
    let (code, doc, err) = json(&[SB]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["race_check"], true);
    assert_eq!(doc["hazards"], serde_json::json!([]));
    let o = npusim(&["run", SB]);
    assert!(
        stdout(&o).contains("race check: no hazards"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bytes_shared_under_manual_flags_are_a_hazard() {
    // too little UB: zb takes xb's bytes inplace, and the program's flags do not order the
    // next tile's load of xb after the store of zb (docs/decisions.md, "sync: manual")
    let (code, doc, err) = json(&[SB, "--capacity", "ub=80KiB"]);
    assert_eq!(code, Some(1));
    let hazards = doc["hazards"].as_array().unwrap();
    assert_eq!(hazards.len(), 1, "{hazards:#?}");
    let h = &hazards[0];
    assert_eq!(h["kind"], "WAR");
    assert_eq!(h["memory"], "UB");
    assert_eq!(h["bytes"], serde_json::json!([0, 32768]));
    assert_eq!(h["first"]["op"], "body[0].for.body[10]");
    assert_eq!(h["first"]["op_kind"], "store");
    assert_eq!(
        (&h["first"]["line"], &h["first"]["column"]),
        (&Value::from(36), &Value::from(9))
    );
    assert_eq!(h["second"]["op_kind"], "load");
    assert_eq!(h["second"]["vars"]["t"], 1);
    assert!(
        err.contains("hazard: WAR hazard in UB [0x0000, 0x8000): MTE3 read (programs/vec_add_sb_manual.yaml:36:9 store { src: zb, dst: \"z[t]\" }, t=0) / MTE2 write (programs/vec_add_sb_manual.yaml:25:9 load { src: \"x[t]\", dst: xb }, t=1)"),
        "{err}"
    );
}

#[test]
fn a_missing_wait_is_reported_by_its_two_ops() {
    // vec_add_db_manual without DeQue(z): the store may read zb before the vadd wrote it
    let (code, doc, _) = json(&["sim/tests/fixtures/race/vec_add_db_no_dequeue_z.yaml"]);
    assert_eq!(code, Some(1));
    let msgs: Vec<&str> = doc["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        msgs,
        ["RAW hazard in UB [0x10000, 0x18000): V write (sim/tests/fixtures/race/vec_add_db_no_dequeue_z.yaml:44:9 vadd { ins: [xb, yb], out: zb }, t=0) / MTE3 read (sim/tests/fixtures/race/vec_add_db_no_dequeue_z.yaml:47:9 store { src: zb, dst: \"z[t]\" }, t=0)"]
    );
}

#[test]
fn no_race_check_skips_it_and_says_so() {
    let (code, doc, err) = json(&[SB, "--capacity", "ub=80KiB", "--no-race-check"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["race_check"], false);
    assert_eq!(doc["hazards"], Value::Null);
    let o = npusim(&["run", SB, "--no-race-check"]);
    assert!(stdout(&o).contains("race check: not run (--no-race-check)"));
}

#[test]
fn a_multi_core_gemm_that_splits_n_runs_race_free() {
    // every block writes the same rows of c, its own columns only: the byte ranges of the
    // blocks' fixpipes overlap, the bytes they write do not
    for blocks in ["4", "2"] {
        let (code, doc, err) = json(&["programs/matmul_splitn.yaml", "--blocks", blocks]);
        assert_eq!(code, Some(0), "--blocks {blocks}: {err}");
        assert_eq!(doc["race_check"], true);
        assert_eq!(doc["hazards"], serde_json::json!([]), "--blocks {blocks}");
        assert!(!err.contains("hazard"), "{err}");
    }
    let o = npusim(&["run", "programs/matmul_splitn.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("race check: no hazards"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_manual_hazard_comes_with_the_synchronisation_that_orders_it() {
    // the WAR of the squeezed single-buffered add: the store of tile t must finish before the
    // load of tile t + 1 overwrites its bytes, a dependency across iterations of the loop
    let (code, doc, err) = json(&[SB, "--capacity", "ub=80KiB"]);
    assert_eq!(code, Some(1));
    let h = &doc["hazards"][0];
    assert_eq!(h["conservative"], Value::Null);
    let fix = &h["fix"];
    let ops: Vec<(&str, &str, &str, &str)> = fix["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["insert"].as_str().unwrap(),
                o["place"].as_str().unwrap(),
                o["op"].as_str().unwrap(),
                o["op_kind"].as_str().unwrap(),
            )
        })
        .collect();
    let set = "set_flag: { src: mte3, dst: mte2, id: 0 }";
    let wait = "wait_flag: { src: mte3, dst: mte2, id: 0 }";
    assert_eq!(
        ops,
        [
            (set, "after", "body[0].for.body[10]", "store"),
            (wait, "before", "body[0].for.body[1]", "load"),
            (set, "before", "body[0]", "for"),
            (wait, "after", "body[0]", "for"),
        ]
    );
    assert_eq!(
        (&fix["ops"][0]["line"], &fix["ops"][0]["column"]),
        (&Value::from(36), &Value::from(9))
    );
    // stderr and the text report give it on a line of its own under the hazard
    // each op by where it is written and its text, as hazards name them
    let (store, load, lp) = (
        "programs/vec_add_sb_manual.yaml:36:9 store { src: zb, dst: \"z[t]\" }",
        "programs/vec_add_sb_manual.yaml:25:9 load { src: \"x[t]\", dst: xb }",
        "programs/vec_add_sb_manual.yaml:16:5 for { var: t, to: tiles }",
    );
    let line = format!(
        "fix: {set} after {store}; {wait} before {load}; {set} before {lp}; {wait} after {lp}"
    );
    assert_eq!(fix["message"], line.strip_prefix("fix: ").unwrap());
    let lines: Vec<&str> = err.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("hazard: "))
        .unwrap();
    assert_eq!(lines[at + 1], line, "{err}");
    let o = npusim(&["run", SB, "--capacity", "ub=80KiB"]);
    assert!(
        stdout(&o).contains(&format!("\n    {line}\n")),
        "{}",
        stdout(&o)
    );
}
