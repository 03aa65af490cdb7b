//! `run --critical-path` (docs/critical-path.md): the path's figures on the worked example
//! (derived by hand in docs/timing.md), its cycles adding up to the total on every shipped
//! program and golden, and issue 30's proof on flash attention: the naive order
//! (`programs/flash_attention_serial.yaml`) is paced by the vector cores' wait for O_j, the
//! shipped deferred order by another cross-core wait.

use crate::{json_of, npusim, root, scratch, stderr, stdout};
use serde_json::Value;

const GOLDEN: [&str; 3] = [
    "sim/tests/golden/flag_chain.yaml",
    "--config",
    "sim/tests/golden/test_config.yaml",
];

/// The run document of `args` with `--critical-path`.
fn doc(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--critical-path");
    json_of("run", &all)
}

/// The path's cycles in `map` (an object of cycles) added up.
fn sum(map: &Value) -> u64 {
    map.as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// The path tiles [0, total]: by pipe, by cause and by core it adds up to the run's total,
/// and no cycle is left unexplained.
fn assert_adds_up(d: &Value, what: &str) {
    let total = d["total_cycles"].as_u64().unwrap();
    let c = &d["critical_path"];
    assert_eq!(c["total_cycles"].as_u64(), Some(total), "{what}");
    assert_eq!(sum(&c["by_pipe"]), total, "{what}: {c}");
    assert_eq!(sum(&c["by_cause"]), total, "{what}: {c}");
    let cores: u64 = c["by_core"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cycles"].as_u64().unwrap())
        .sum();
    assert_eq!(cores, total, "{what}: {c}");
    if d["deadlock"].is_null() && d["stopped"].is_null() {
        assert!(c["by_cause"].get("unexplained").is_none(), "{what}: {c}");
    }
}

#[test]
fn the_worked_example_s_path_is_its_load_add_and_store_through_both_flags() {
    // docs/timing.md's worked example: the path is S's first send [0, 1), the load's work
    // [1, 17) and startup [17, 27) on MTE2, the flag's latency [27, 29) and the vadd's work
    // [29, 33) and startup [33, 36) on V, the second flag [36, 38) and the store's work
    // [38, 70) and startup [70, 75) on MTE3.
    let d = doc(&GOLDEN);
    assert_eq!(d["total_cycles"], 75);
    let c = &d["critical_path"];
    assert_eq!(
        c["by_pipe"],
        serde_json::json!({"S": 1, "V": 2 + 4 + 3, "MTE2": 16 + 10, "MTE3": 2 + 32 + 5})
    );
    assert_eq!(
        c["by_cause"],
        serde_json::json!({"work": 16 + 4 + 32, "issue": 1, "startup": 10 + 3 + 5, "flag": 2 + 2})
    );
    // V's wait_flag (line 14) joined at 3 and started at 29: the longest wait, 26 of 75
    let w = &c["waits"][0];
    assert_eq!(
        (w["line"].as_u64(), w["wait"].as_str()),
        (Some(14), Some("wait_flag"))
    );
    assert_eq!(w["cycles"], 26);
    assert_eq!(
        c["summary"],
        "paced by: MTE3, waiting on sim/tests/golden/flag_chain.yaml:14:5 \
         wait_flag { src: mte2, dst: v, id: 0 } 34.7 % of the run"
    );
    assert_adds_up(&d, "flag_chain");
}

#[test]
fn the_text_report_has_the_summary_line_by_default_and_the_section_only_when_asked() {
    let mut args = vec!["run"];
    args.extend_from_slice(&GOLDEN);
    let mut off = args.clone();
    off.push("--no-critical-path");
    let off = npusim(&off);
    assert_eq!(off.status.code(), Some(0), "{}", stderr(&off));
    assert!(!stdout(&off).contains("paced by"));
    let plain = npusim(&args);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    // the default report has the line (the one the section's summary has, below) and not
    // the section
    assert!(
        stdout(&plain).contains("\npaced by: MTE3, waiting on"),
        "{}",
        stdout(&plain)
    );
    assert!(!stdout(&plain).contains("critical path"));
    // and without it, the report is the default one less that line
    let without: String = stdout(&plain)
        .lines()
        .filter(|l| !l.starts_with("paced by: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(without, stdout(&off));
    args.push("--critical-path");
    let o = npusim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    // the summary line sits under the summary table (after `efficiency`), and the section
    // with its legend closes the report
    let eff = text.find("efficiency").unwrap();
    let line = text.find("\npaced by: MTE3, waiting on").unwrap();
    assert!(eff < line, "{text}");
    let section = text.find("critical path: 75 cycles").unwrap();
    assert!(line < section, "{text}");
    assert!(text[section..].contains("  legend:\n"), "{text}");
    assert!(
        text[section..].contains("    flag         a flag's latency"),
        "{text}"
    );
    // without the flag, the document's key is null
    let d = json_of("run", &GOLDEN);
    assert!(d["critical_path"].is_null());
}

#[test]
fn every_shipped_program_and_golden_has_a_path_as_long_as_its_run() {
    let mut checked = 0;
    for dir in ["programs", "sim/tests/golden"] {
        let mut files: Vec<_> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for f in files {
            let name = format!("{dir}/{}", f.file_name().unwrap().to_string_lossy());
            if name.ends_with("_config.yaml") {
                continue;
            }
            let mut args = vec!["run", name.as_str(), "--critical-path", "--format", "json"];
            if dir != "programs" {
                args.extend_from_slice(&["--config", "sim/tests/golden/test_config.yaml"]);
            }
            let o = npusim(&args);
            // a golden that deadlocks or finds a problem on purpose still reports its path
            if o.stdout.is_empty() {
                continue;
            }
            let d: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_adds_up(&d, &name);
            checked += 1;
        }
    }
    // every shipped program runs: 23 YAML programs today, and the goldens
    assert!(checked >= 25, "{checked}");
}

/// The first cross-core wait in a path's waits and the line of its op.
fn top_cross_wait(d: &Value) -> (u64, u64) {
    let w = d["critical_path"]["waits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["wait"] == "cross_wait")
        .unwrap_or_else(|| panic!("no cross_wait on the path: {}", d["critical_path"]));
    (w["line"].as_u64().unwrap(), w["cycles"].as_u64().unwrap())
}

/// The 1-based line of the first line of `file` that contains `text`.
fn line_of(file: &str, text: &str) -> u64 {
    let src = std::fs::read_to_string(root().join(file)).unwrap();
    1 + src.lines().position(|l| l.contains(text)).unwrap() as u64
}

#[test]
fn flash_attention_is_paced_by_the_wait_for_o_only_in_the_naive_order() {
    // the naive order: each vector core reads O_j back in the iteration that stored P_j, so
    // its softmax of block j + 1 waits for the cube core's P·V of block j: the cross_wait the
    // sync pass puts before that read (placed at the read's line) paces the run
    let serial = "programs/flash_attention_serial.yaml";
    let d = doc(&[serial]);
    assert_adds_up(&d, serial);
    let o_read = line_of(serial, "- load: { src: \"ot[(block * 2 + j % 2)");
    let (line, cycles) = top_cross_wait(&d);
    assert_eq!(line, o_read, "{}", d["critical_path"]["summary"]);
    // it waited for more than half of the run
    let total = d["total_cycles"].as_u64().unwrap();
    assert!(2 * cycles > total, "{cycles} of {total}");
    let summary = d["critical_path"]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("flash_attention_serial.yaml:{o_read}:")),
        "{summary}"
    );
    // the shipped order defers the fold of O by a block: the wait for O is off the path's
    // lead, another cross-core wait sets the pace, and the run is shorter
    let shipped = "programs/flash_attention.yaml";
    let e = doc(&[shipped]);
    assert_adds_up(&e, shipped);
    let deferred_read = line_of(shipped, "- load: { src: \"ot[(block * 2 + (j + 1) % 2)");
    let (line, _) = top_cross_wait(&e);
    assert_ne!(line, deferred_read, "{}", e["critical_path"]["summary"]);
    assert!(e["total_cycles"].as_u64().unwrap() < total);
    // and the summary names another wait than the read of O
    let shipped_summary = e["critical_path"]["summary"].as_str().unwrap();
    assert!(
        !shipped_summary.contains(&format!("flash_attention.yaml:{deferred_read}:")),
        "{shipped_summary}"
    );
    // a launch's text section has the path by core, named as the report names cores
    let o = npusim(&["run", serial, "--critical-path"]);
    let text = stdout(&o);
    let at = text.find("critical path: ").unwrap();
    assert!(text[at..].contains("\n  by core "), "{text}");
    assert!(text[at..].contains("\n  block 0 aiv 0 "), "{text}");
}

#[test]
fn the_html_page_has_the_section_with_the_summary() {
    let dir = scratch("critical_html");
    let page = dir.join("run.html");
    let mut args = vec!["run"];
    args.extend_from_slice(&GOLDEN);
    args.extend_from_slice(&["--critical-path", "--html", page.to_str().unwrap()]);
    let o = npusim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let at = html.find("<section id=\"critical-path\">").unwrap();
    assert!(html[at..].contains("paced by: MTE3"), "{html}");
    // the flag's row: 4 cycles, 5.3 % of 75
    assert!(
        html[at..].contains("<tr><td>flag</td><td class=\"n\">4</td><td class=\"n\">5.3</td>"),
        "{html}"
    );
}

#[test]
fn a_run_stopped_by_max_instructions_has_a_path_up_to_where_it_stopped() {
    let mut args = vec!["run"];
    args.extend_from_slice(&GOLDEN);
    args.extend_from_slice(&[
        "--max-instructions",
        "3",
        "--critical-path",
        "--format",
        "json",
    ]);
    // a stopped run is a finding (exit 1); its report is still written
    let o = npusim(&args);
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!d["stopped"].is_null());
    assert_adds_up(&d, "stopped");
}

#[test]
fn diff_of_two_programs_compares_their_critical_paths_by_cause() {
    // both sides run on the spot with the walker: each side's causes add up to its total
    let d = json_of(
        "diff",
        &[
            "programs/flash_attention.yaml",
            "programs/flash_attention_serial.yaml",
        ],
    );
    let c = &d["critical_path"];
    let (a, b): (u64, u64) = c["by_cause"]
        .as_array()
        .unwrap()
        .iter()
        .fold((0, 0), |(a, b), f| {
            (a + f["a"].as_u64().unwrap(), b + f["b"].as_u64().unwrap())
        });
    let serial = doc(&["programs/flash_attention_serial.yaml"]);
    let shipped = doc(&["programs/flash_attention.yaml"]);
    assert_eq!(Some(a), shipped["total_cycles"].as_u64());
    assert_eq!(Some(b), serial["total_cycles"].as_u64());
    assert_eq!(c["summary"]["b"], serial["critical_path"]["summary"]);
    // two run documents without --critical-path: not compared, and said so
    let dir = scratch("critical_diff");
    let one = dir.join("a.json");
    let o = npusim(&[
        "run",
        GOLDEN[0],
        GOLDEN[1],
        GOLDEN[2],
        "--format",
        "json",
        "-o",
        one.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = npusim(&["diff", one.to_str().unwrap(), one.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("critical path: not compared: a side has none"),
        "{}",
        stdout(&o)
    );
}
