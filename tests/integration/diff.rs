//! `npusim diff A B` (docs/cli.md, "npusim diff"): a program against itself is no change; two
//! levels of `reuse_levels.yaml` give the bank-conflict cycles the README quotes; run
//! documents written by `run --format json` diff as the same runs made on the spot; bad inputs
//! are refused with every problem and nothing written; the page loads in a browser.

use crate::html_cli::{assert_clean, browser, load};
use crate::{npusim, root, scratch, stderr, stdout};
use serde_json::Value;
use std::path::Path;

const REUSE: &str = "programs/reuse_levels.yaml";

/// The words of the line of `text` that starts with `label`.
fn row<'a>(text: &'a str, label: &str) -> Vec<&'a str> {
    text.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` line in\n{text}"))
        .split_whitespace()
        .collect()
}

/// A whole number as the README writes it (`7,936`), read back.
fn readme_number(s: &str) -> u64 {
    s.trim_matches(|c: char| !c.is_ascii_digit())
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s}"))
}

/// The bank-conflict cycles of levels 2 and 1 of reuse_levels.yaml as the README quotes
/// them: "... colliding bank groups for 7,936 cycles of V time, C on A's slots for 7,424".
fn readme_bank_cycles() -> (u64, u64) {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = flat
        .find("colliding bank groups for ")
        .expect("the README quotes the bank conflicts of reuse_levels.yaml");
    let words: Vec<&str> = flat[at..].split(' ').collect();
    // "colliding bank groups for N cycles of V time, C on A's slots for M"
    assert_eq!(
        words[5..8],
        ["cycles", "of", "V"],
        "{}",
        &flat[at..at + 120]
    );
    (readme_number(words[4]), readme_number(words[14]))
}

#[test]
fn a_program_against_itself_is_no_change() {
    let o = npusim(&["diff", REUSE, REUSE]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("\nno change: A and B have the same total"),
        "{text}"
    );
    insta::assert_snapshot!("diff_itself", text);
    // B left out is A again, with the same options: the same diff
    let again = npusim(&["diff", REUSE]);
    assert_eq!(stdout(&again), text);
    let o = npusim(&["diff", REUSE, "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["same"], true);
    assert_eq!(v["by_op"], Value::Array(vec![]));
    assert_eq!(v["plan"]["buffers"], Value::Array(vec![]));
    // two programs' paths are compared: the same path, cause by cause
    let causes = v["critical_path"]["by_cause"].as_array().unwrap();
    assert!(!causes.is_empty());
    assert!(
        causes.iter().all(|c| c["delta"] == 0 && c["a"] == c["b"]),
        "{causes:?}"
    );
}

#[test]
fn two_levels_of_reuse_levels_give_the_readmes_bank_cycles() {
    let (level2, level1) = readme_bank_cycles();
    let o = npusim(&["diff", REUSE, "--level", "2", "--vs-level", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let delta = format!("-{}", level2 - level1);
    assert_eq!(
        row(&text, "bank conflicts")[2..5],
        [level2.to_string(), level1.to_string(), delta]
    );
    assert!(!text.contains("no change"), "{text}");
    insta::assert_snapshot!("diff_reuse_levels_2_vs_1", text);
}

/// `run --format json -o FILE` of `program` with `args`.
fn document(dir: &Path, name: &str, program: &str, args: &[&str]) -> String {
    let path = dir.join(name).to_string_lossy().into_owned();
    let mut all = vec!["run", program, "--format", "json", "-o", &path];
    all.extend_from_slice(args);
    let o = npusim(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    path
}

/// A diff document without the sides' labels (a document's is its file name).
fn without_sources(mut v: Value) -> Value {
    for side in ["a", "b"] {
        v[side]["source"] = Value::Null;
    }
    v
}

#[test]
fn documents_diff_as_the_runs_made_on_the_spot() {
    let dir = scratch("diff/documents");
    // a program side runs with --profile's and --critical-path's observers
    let a = document(
        &dir,
        "a.json",
        REUSE,
        &["--level", "2", "--profile", "--critical-path"],
    );
    let b = document(
        &dir,
        "b.json",
        REUSE,
        &["--level", "0", "--profile", "--critical-path"],
    );
    let from_files = npusim(&["diff", &a, &b, "--format", "json"]);
    assert_eq!(from_files.status.code(), Some(0), "{}", stderr(&from_files));
    let spot = npusim(&[
        "diff",
        REUSE,
        "--level",
        "2",
        "--vs-level",
        "0",
        "--format",
        "json",
    ]);
    let parse = |o: &std::process::Output| -> Value { serde_json::from_slice(&o.stdout).unwrap() };
    let (files, spot) = (parse(&from_files), parse(&spot));
    assert_eq!(without_sources(files.clone()), without_sources(spot));
    assert_eq!(files["a"]["source"], a.as_str());
    assert_eq!(files["same"], false);
    // level 0 is the 1.602x run of the README: its total against level 2's
    let total = &files["totals"]["total_cycles"];
    let (ta, tb) = (total["a"].as_u64().unwrap(), total["b"].as_u64().unwrap());
    assert_eq!(total["delta"].as_i64().unwrap(), tb as i64 - ta as i64);
    assert!(tb > ta, "{total}");
    // the ops come largest change first
    let deltas: Vec<u64> = files["by_op"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let c = |s: &str| o[s]["cost"].as_u64().unwrap_or(0);
            c("a").abs_diff(c("b"))
        })
        .collect();
    assert!(!deltas.is_empty());
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]), "{deltas:?}");

    // a document without --profile: the ops are not compared, and the diff says so
    let plain = document(&dir, "plain.json", REUSE, &[]);
    let o = npusim(&["diff", &plain, &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("note: per op: not compared: A has no profile (run with --profile)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn documents_of_different_kernels_are_still_diffed_with_a_note() {
    let dir = scratch("diff/kernels");
    let a = document(&dir, "a.json", REUSE, &[]);
    let b = document(&dir, "b.json", "programs/vec_add_db.yaml", &[]);
    let o = npusim(&["diff", &a, &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("note: A runs kernel `reuse_levels` and B kernel `vec_add_db`"),
        "{text}"
    );
    assert_eq!(row(&text, "total cycles").len(), 6, "{text}");
}

#[test]
fn bad_inputs_are_every_one_refused_and_nothing_is_written() {
    let dir = scratch("diff/bad");
    let out = dir.join("out.txt");
    let out_arg = out.to_string_lossy().into_owned();
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{\n  \"schema\": 1,\n  \"kernel\": \n}\n").unwrap();
    let plan = dir.join("plan.json");
    let o = npusim(&[
        "plan",
        REUSE,
        "--format",
        "json",
        "-o",
        &plan.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = npusim(&[
        "diff",
        &broken.to_string_lossy(),
        &plan.to_string_lossy(),
        "-o",
        &out_arg,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    // both sides' problems, the first at its line and column
    assert!(
        err.contains(&format!(
            "error: {}:4:1: not a JSON document",
            broken.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("not a run document: the document has no `total_cycles` or no `launch`: not a run document (it looks like a plan document"),
        "{err}"
    );
    assert!(!out.exists());

    // a document that lost keys: each one named by its JSON pointer
    let a = document(&dir, "a.json", REUSE, &[]);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    v["total_cycles"] = Value::from("many");
    v["launch"]["cores"][0]
        .as_object_mut()
        .unwrap()
        .remove("end_cycle");
    let damaged = dir.join("damaged.json");
    std::fs::write(&damaged, serde_json::to_string(&v).unwrap()).unwrap();
    let o = npusim(&["diff", &a, &damaged.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("/total_cycles: a string where a run document has a whole number"),
        "{err}"
    );
    assert!(
        err.contains("/launch/cores/0/end_cycle: missing, where a run document has a whole number"),
        "{err}"
    );

    // options that would run a program, given for documents: refused, not ignored
    let o = npusim(&["diff", &a, &a, "--level", "1", "--vs-param", "tiles=4"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("error: --level: A and B are run documents"),
        "{err}"
    );
    assert!(
        err.contains("error: --vs-param: B is a run document"),
        "{err}"
    );
    let o = npusim(&["diff", REUSE, "--level", "best"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--level best: diff compares two chosen levels"));
    // an input that is an output
    let o = npusim(&["diff", &a, REUSE, "-o", &a]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_mixed_launch_diffs_by_core_type() {
    let o = npusim(&[
        "diff",
        "programs/matmul_add.yaml",
        "--blocks",
        "1",
        "--vs-blocks",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("note: A launched 1 block (3 cores) and B 2 blocks (6 cores)"),
        "{text}"
    );
    // a block is one cube and two vector cores
    assert_eq!(row(&text, "aic")[1..3], ["1", "2"], "{text}");
    assert_eq!(row(&text, "aiv")[1..3], ["2", "4"], "{text}");
}

#[test]
fn the_page_is_written_whole_and_loads_in_a_browser() {
    let dir = scratch("diff/html");
    let page = dir.join("diff.html");
    let path = page.to_string_lossy().into_owned();
    let args = [
        "diff",
        REUSE,
        "--level",
        "2",
        "--vs-level",
        "0",
        "--html",
        &path,
    ];
    let o = npusim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    // the same inputs give the same page
    let o = npusim(&args);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);
    for id in ["totals", "types", "pipes", "ops", "plan", "critical-path"] {
        assert_eq!(
            html.matches(&format!("<section id=\"{id}\">")).count(),
            1,
            "section {id}"
        );
    }
    // every table is closed, every row too
    assert_eq!(
        html.matches("<table").count(),
        html.matches("</table>").count()
    );
    assert_eq!(html.matches("<tr>").count(), html.matches("</tr>").count());
    assert!(!html.contains("http://") && !html.contains("https://"));
    if let Some(chromium) = browser("the diff page") {
        let loaded = load(&chromium, &page);
        assert_clean("diff.html", &loaded);
        assert!(loaded.dom.contains("npusim diff"));
    }
}
