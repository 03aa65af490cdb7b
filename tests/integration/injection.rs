//! Outputs that cannot be turned against their reader (RELIABILITY.md, "Outputs that cannot be
//! turned against their reader"): spreadsheet formulas in CSV cells are neutralised, and a
//! script that got into an HTML page is refused by the page's content security policy.

use crate::html_cli::{browser, load, Loaded};
use crate::{npusim, stderr};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    crate::scratch(&format!("injection/{name}"))
}

/// What the injected markup does when it runs: each part marks `<body>` with its own
/// attribute, so the DOM shows which of them ran.
const INJECTED: &str = "<script>document.title='pwned';\
    document.body.setAttribute('data-pwned-script','1')</script>\
    <svg><rect onclick=\"x\"></rect></svg>\
    <img alt=\"\" onerror=\"document.body.setAttribute('data-pwned-onerror','1')\" src=\"x\">\n";

/// `page` with [`INJECTED`] written into its body past any escaping, as a bug in a renderer
/// (or an edit of the file) would put it there.
fn injected(page: &str) -> String {
    let out = page.replacen("<body>\n", &format!("<body>\n{INJECTED}"), 1);
    assert_ne!(out, page, "the page has no <body>");
    out
}

/// One page of every kind npusim writes: run, compare, the sweep summary's plot and the
/// calibration report.
fn pages(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let results = path("results.csv");
    let commands: Vec<(&str, Vec<String>)> = vec![
        ("run", vec!["run".into(), "programs/vec_add_db.yaml".into()]),
        (
            "compare",
            vec!["compare".into(), "programs/vec_add_db.yaml".into()],
        ),
        (
            "calibration",
            vec![
                "calibrate".into(),
                "--check".into(),
                "tests/fixtures/calibrate/measurements.yaml".into(),
                "--config".into(),
                "tests/fixtures/calibrate/fit_config.yaml".into(),
            ],
        ),
    ];
    let o = npusim(&["sweep", "programs/sweeps/example.yaml", "-o", &results]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut out = Vec::new();
    for (kind, mut args) in commands
        .into_iter()
        .chain([("sweep", vec!["sweep".into(), "--summary".into(), results])])
    {
        let page = dir.join(format!("{kind}.html"));
        args.extend(["--html".to_string(), page.to_string_lossy().into_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = npusim(&args);
        assert_eq!(o.status.code(), Some(0), "{kind}: {}", stderr(&o));
        out.push((kind, page));
    }
    out
}

fn ran_injected(l: &Loaded) -> bool {
    // the attributes as the DOM shows them once set (the injected source text names them too)
    l.dom.contains("data-pwned-script=\"1\"")
        || l.dom.contains("data-pwned-onerror=\"1\"")
        || l.dom.contains("<title>pwned</title>")
}

/// Every page kind, with a `<script>` and an `onerror=` handler injected into its body past the
/// escaping: in Chromium the page's own script runs to its end (`data-ready="1"`) and neither
/// injected script does, the browser saying it refused them. The control is the same injected
/// page under the policy the pages had before (`script-src 'unsafe-inline'`): there the
/// injection runs, so this test can see an injection that runs.
#[test]
fn an_injected_script_does_not_run_in_any_page_while_the_pages_own_does() {
    let dir = scratch("csp");
    let mut files = Vec::new();
    for (kind, page) in pages(&dir) {
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(
            text.contains("script-src 'sha256-") && !text.contains("script-src 'unsafe-inline'"),
            "{kind}: the page's policy does not name its script by hash"
        );
        let bad = dir.join(format!("{kind}-injected.html"));
        std::fs::write(&bad, injected(&text)).unwrap();
        files.push((kind, bad, false));
        if kind == "run" {
            let old = text.split("script-src '").nth(1).unwrap();
            let hash = &old[..old.find('\'').unwrap()];
            let control = dir.join("control-unsafe-inline.html");
            std::fs::write(&control, injected(&text).replacen(hash, "unsafe-inline", 1)).unwrap();
            files.push(("control", control, true));
        }
    }
    let Some(chromium) =
        browser("injection::an_injected_script_does_not_run_in_any_page_while_the_pages_own_does")
    else {
        return;
    };
    let loaded: Vec<Loaded> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|(_, p, _)| {
                let chromium = &chromium;
                s.spawn(move || load(chromium, p))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((kind, page, control), l) in files.iter().zip(&loaded) {
        let name = format!("{kind} ({})", page.display());
        assert!(
            l.dom.contains("data-ready=\"1\""),
            "{name}: the page's own script did not run to its end\n{}",
            l.console.join("\n")
        );
        if *control {
            assert!(
                l.dom.contains("data-pwned-script=\"1\"")
                    && l.dom.contains("data-pwned-onerror=\"1\"")
                    && l.dom.contains("<title>pwned</title>"),
                "{name}: under 'unsafe-inline' the injection should have run"
            );
        } else {
            assert!(!ran_injected(l), "{name}: the injected script ran");
            // the browser refused the inline script and the inline handler, saying why
            let refused = l
                .console
                .iter()
                .filter(|c| c.contains("Content Security Policy"))
                .count();
            assert!(
                refused >= 2,
                "{name}: expected the policy to refuse the script and the handler:\n{}",
                l.console.join("\n")
            );
        }
    }
}

/// A sweep whose program file is named `=1+1.yaml`, swept over a param with negative values
/// (`tests/fixtures/inject/formula_sweep.yaml`): the program cell is neutralised (`'=1+1.yaml`,
/// quoted), the param cells stay numbers (`-5`), and the rows survive sharding, `--merge`
/// and `--summary`: the merged file is the unsharded one byte for byte, and the summary reads the
/// program back as `=1+1.yaml`.
#[test]
fn a_formula_in_a_sweep_cell_is_neutralised_and_reads_back_through_merge() {
    let dir = scratch("sweep");
    let file = "tests/fixtures/inject/formula_sweep.yaml";
    let path = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let run = |args: &[&str]| {
        let o = npusim(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        o
    };
    let all = path("all.csv");
    run(&["sweep", file, "-o", &all]);
    let csv = std::fs::read_to_string(&all).unwrap();
    // the rows by hand: 2 shifts x 2 sizes, shift varying slowest (the file's param order)
    for (shift, n) in [("-5", "256"), ("-5", "512"), ("3", "256"), ("3", "512")] {
        let prefix = format!("\"'=1+1.yaml\",ascend910b,{shift},{n},2,");
        assert!(
            csv.lines().any(|l| l.contains(&prefix)),
            "no row {prefix}:\n{csv}"
        );
    }
    // no cell a spreadsheet would run: each cell starts with a safe character
    let mut r = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let header = r.headers().unwrap().clone();
    let numbers = ["index", "param_shift", "param_n", "level", "cycles"];
    for record in r.records() {
        let record = record.unwrap();
        for (name, cell) in header.iter().zip(record.iter()) {
            if numbers.contains(&name) {
                assert!(
                    cell.parse::<i64>().is_ok(),
                    "{name} {cell:?} is not a number"
                );
            } else {
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "{name} {cell:?} starts a formula"
                );
            }
        }
        assert_eq!(&record[1], "'=1+1.yaml");
        assert_eq!(sim::text::csv_cell_read(&record[1]), "=1+1.yaml");
    }
    insta::assert_snapshot!("formula_sweep_csv", csv);

    // sharded, then merged: the same bytes, the neutralised cell unchanged
    let parts: Vec<String> = (0..2)
        .map(|k| {
            let part = path(&format!("part{k}.csv"));
            run(&["sweep", file, "--shard", &format!("{k}/2"), "-o", &part]);
            part
        })
        .collect();
    let merged = path("merged.csv");
    run(&["sweep", "--merge", &parts[0], &parts[1], "-o", &merged]);
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), csv);

    // the summary reads the program back as it is named
    let text = crate::stdout(&run(&["sweep", "--summary", &merged]));
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("=1+1.yaml ")),
        "{text}"
    );
    assert!(!text.contains("'=1+1.yaml"), "{text}");
}

/// `pack -o` of an instance whose ids a spreadsheet would run
/// (`tests/fixtures/inject/formula_ids.csv`: `=1+2`, `@SUM(A1)`, `-3`, a DDE payload): each id
/// is written `"'ID"`, every number as it was, and packing the output again reads the ids back
/// unchanged.
#[test]
fn a_formula_in_a_pack_id_is_neutralised_and_reads_back() {
    let dir = scratch("pack");
    let out = dir.join("placed.csv");
    let o = npusim(&[
        "pack",
        "tests/fixtures/inject/formula_ids.csv",
        "--capacity",
        "1024",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let placed = std::fs::read_to_string(&out).unwrap();
    assert_eq!(placed.lines().count(), 6, "{placed}");
    for id in [
        "\"'=1+2\",",
        "\"'@SUM(A1)\",",
        "\"'-3\",",
        "\"'+cmd|' /C calc'!A0\",",
        "plain,",
    ] {
        assert!(
            placed.lines().any(|l| l.starts_with(id)),
            "no row for {id}:\n{placed}"
        );
    }
    insta::assert_snapshot!("formula_ids_placed", placed);
    // the output is an instance again (its offsets now fixed): the same ids, the same offsets
    let again = dir.join("again.csv");
    let o = npusim(&[
        "pack",
        &out.to_string_lossy(),
        "--capacity",
        "1024",
        "-o",
        &again.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), placed);
}
