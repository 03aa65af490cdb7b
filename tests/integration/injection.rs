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
