//! Work a run drops is reported (docs/decisions.md, "Dropped work"): the 1,024-row kernel of
//! `tests/fixtures/row_tiles.yaml` in tiles of `tr` rows runs `rows / tr` tiles, so
//! `--param tr=3` processes 1,023 rows. The run warns about row 1023 of both tensors, in the
//! text report, the JSON and on stderr, and still exits 0; with a `tr` that divides 1,024 it
//! says nothing.

use crate::{json_of, npusim, stderr, stdout};
use serde_json::{json, Value};

const ROWS: &str = "tests/fixtures/row_tiles.yaml";

/// The run document's dropped-work warnings.
fn dropped(doc: &Value) -> Vec<Value> {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "unwritten" || w["kind"] == "unread_rows")
        .cloned()
        .collect()
}

#[test]
fn a_tile_size_that_divides_the_rows_drops_nothing() {
    for tr in ["1", "4", "16"] {
        let doc = json_of("run", &[ROWS, "--param", &format!("tr={tr}")]);
        assert_eq!(dropped(&doc), Vec::<Value>::new(), "tr={tr}");
    }
}

#[test]
fn the_row_a_short_loop_leaves_out_is_named_in_every_output() {
    // 8 blocks together, and one core alone: the launch's cores cover the rows together
    for blocks in ["8", "1"] {
        let args = [ROWS, "--param", "tr=3", "--blocks", blocks];
        let doc = json_of("run", &args);
        let row = 1023 * 256;
        let bytes = json!([4 * row, 4 * (row + 256)]);
        assert_eq!(
            dropped(&doc)
                .iter()
                .map(|w| (w["kind"].clone(), w["tensor"].clone(), w["range"].clone()))
                .collect::<Vec<_>>(),
            vec![
                (
                    json!("unread_rows"),
                    json!("x"),
                    json!({ "elements": [row, row + 256], "bytes": bytes, "rows": [1023, 1024],
                            "from": [1023, 0], "to": [1023, 255] })
                ),
                (
                    json!("unwritten"),
                    json!("y"),
                    json!({ "elements": [row, row + 256], "bytes": bytes, "rows": null,
                            "from": [1023, 0], "to": [1023, 255] })
                ),
            ],
            "--blocks {blocks}"
        );

        // a warning, not a finding: the exit code stays 0, the text report lists it and stderr
        // names each tensor at its declaration
        let mut run = vec!["run"];
        run.extend(args);
        let o = npusim(&run);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains("  [unwritten] gm tensor `y` [1024, 256] f32 is stored to, but no op wrote elements [261888, 262144) (y[1023, 0] to y[1023, 255], bytes [1047552, 1048576))"),
            "{text}"
        );
        assert!(
            text.contains("  [unread_rows] gm tensor `x` [1024, 256] f32 is loaded, but no op read rows [1023, 1024)"),
            "{text}"
        );
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{ROWS}:13:6: warning: gm.x: [unread_rows]"))
                && err.contains(&format!("{ROWS}:14:6: warning: gm.y: [unwritten]")),
            "{err}"
        );
    }
}

#[test]
fn a_run_that_did_not_finish_claims_nothing_about_its_work() {
    // stopped early, the run left rows undone because of the limit, not the program
    let o = npusim(&[
        "run",
        ROWS,
        "--param",
        "tr=3",
        "--max-instructions",
        "100",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["stopped"].is_object());
    assert_eq!(dropped(&doc), Vec::<Value>::new());
}
