//! `run --html` and `compare --html` (docs/html.md): the page is written like `-o` (whole, only
//! when the report is, the same bytes every time), and it works in a real browser: headless
//! Chromium loads it with no console message (a script error, or a load the page's content
//! security policy refused), its script runs to the end (`<body data-ready="1">`), and the
//! rendered DOM has exactly one slot rect per buffer slot per live interval of the plan.
//!
//! The browser test needs Debian's `chromium` package (`apt-get install -y chromium`; `.ci/run`
//! installs it): without it the test skips its browser checks with one line saying so, unless
//! `NPUSIM_REQUIRE_BROWSER=1` (as `.ci/run` sets), where it fails.

use crate::{load_default, npusim, root, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh empty directory for this module's (and the sweep page's) files.
pub(crate) fn scratch(name: &str) -> PathBuf {
    crate::scratch(&format!("html/{name}"))
}

pub(crate) fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Σ slots × live intervals over the buffers of `plan`: the slot rects its memory maps must
/// draw (counted here from the plan, not by the renderer).
fn expected_slots(plan: &planner::Plan) -> usize {
    plan.buffers
        .iter()
        .map(|b| b.offsets.len() * b.live.len())
        .sum()
}

/// The slot rects of `run PROGRAM` at the default level.
fn run_slots(program: &str) -> usize {
    let (_, sim) = crate::simulate(&root().join(program));
    expected_slots(&sim.parts[0].planned.plan)
}

/// The slot rects of each level of `compare PROGRAM` (levels 2, 1, 0), `None` for an overflow.
fn compare_slots(program: &str) -> Vec<(u8, Option<usize>)> {
    let (config, program) = load_default(&root().join(program));
    let opts = pipeline::Options {
        validate: true,
        ..Default::default()
    };
    pipeline::compare(&program, &config, &[2, 1, 0], &opts)
        .unwrap()
        .iter()
        .map(|l| match &l.outcome {
            pipeline::LevelOutcome::Ran(s) => {
                (l.level, Some(expected_slots(&s.parts[0].planned.plan)))
            }
            pipeline::LevelOutcome::Overflow(_) => (l.level, None),
        })
        .collect()
}

/// Chromium for a browser test: `chromium` on the PATH. Without it the test skips with one
/// line on the terminal saying what to install (written past cargo's capture, so it shows in
/// the test run's output), unless `NPUSIM_REQUIRE_BROWSER=1` (set by `.ci/run`), where a
/// missing browser fails the test: CI can never skip it silently.
pub(crate) fn browser(test: &str) -> Option<PathBuf> {
    use std::io::Write;
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    });
    if found.is_some() {
        return found;
    }
    let install = "install Debian's package with `apt-get install -y chromium`";
    if std::env::var_os("NPUSIM_REQUIRE_BROWSER").is_some_and(|v| v == "1") {
        panic!("chromium is not on the PATH and NPUSIM_REQUIRE_BROWSER=1: {install}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test}'s browser checks: chromium is not on the PATH ({install}; \
         NPUSIM_REQUIRE_BROWSER=1 makes this a failure)"
    );
    None
}

/// What the browser made of a page.
pub(crate) struct Loaded {
    /// The DOM after the page loaded and its script ran.
    pub dom: String,
    /// Every console message (script errors, refused loads, console calls).
    pub console: Vec<String>,
}

/// Loads `page` in headless Chromium (its own profile directory, a 60 s limit) and dumps the
/// DOM. Chromium writes console messages to stderr as `...:CONSOLE...] "message", source: ...`.
pub(crate) fn load(chromium: &Path, page: &Path) -> Loaded {
    load_at(chromium, page, "")
}

/// [`load`] of `page` with `fragment` after its URL (`#log`), in a profile of its own.
pub(crate) fn load_at(chromium: &Path, page: &Path, fragment: &str) -> Loaded {
    let dir = page.with_extension(format!("{}chromium", fragment.trim_start_matches('#')));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (out, err) = (dir.join("dom.html"), dir.join("stderr.txt"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--no-first-run",
            &format!("--user-data-dir={}", dir.join("profile").display()),
            "--dump-dom",
            &format!("file://{}{fragment}", page.display()),
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish loading {} in 60 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(
        status.success(),
        "chromium failed on {}: {status}\n{stderr}",
        page.display()
    );
    Loaded {
        dom: std::fs::read_to_string(&out).unwrap(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
            .map(str::to_string)
            .collect(),
    }
}

/// `<rect class="slot"` in `dom`.
fn slot_rects(dom: &str) -> usize {
    dom.matches("<rect class=\"slot\"").count()
}

pub(crate) fn assert_clean(name: &str, l: &Loaded) {
    assert!(
        l.console.is_empty(),
        "{name}: console messages:\n{}",
        l.console.join("\n")
    );
    assert!(
        l.dom.contains("<body data-ready=\"1\">"),
        "{name}: the page's script did not finish"
    );
}

#[test]
fn pages_load_in_chromium_without_errors_and_draw_every_slot() {
    let dir = scratch("browser");
    let mut pages = Vec::new();
    for program in ["programs/reuse_levels.yaml", "programs/vec_add_db.yaml"] {
        let stem = Path::new(program).file_stem().unwrap().to_string_lossy();
        for command in ["run", "compare"] {
            let page = dir.join(format!("{command}-{stem}.html"));
            let path = page.to_string_lossy();
            // a run page also carries the profile table
            let mut args = vec![command, program, "--html", &path];
            if command == "run" {
                args.push("--profile");
            }
            let o = npusim(&args);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            pages.push((command, program, page));
        }
    }
    // the control: a page whose script throws and which asks for an image from the network;
    // the check must see both, or it could not see them in the real pages
    let control = dir.join("broken.html");
    let real = std::fs::read_to_string(&pages[0].2).unwrap();
    let broken = real.replacen(
        "<script>\n",
        "<img src=\"http://example.invalid/x.png\" alt=\"\">\n<script>\nno_such_function();\n",
        1,
    );
    assert_ne!(broken, real);
    // the policy allows only the page's own script by its hash; the changed script must run to
    // throw, so the control allows inline scripts as the pages once did
    let hash = real
        .split("script-src '")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    let broken = broken.replacen(hash, "unsafe-inline", 1);
    std::fs::write(&control, broken).unwrap();

    let Some(chromium) =
        browser("html_cli::pages_load_in_chromium_without_errors_and_draw_every_slot")
    else {
        return;
    };
    // one browser per page, side by side: a few seconds in all
    let loaded: Vec<Loaded> = std::thread::scope(|s| {
        let handles: Vec<_> = pages
            .iter()
            .map(|(_, _, p)| p.clone())
            .chain([control.clone()])
            .map(|p| {
                let chromium = &chromium;
                s.spawn(move || load(chromium, &p))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (pages_loaded, control_loaded) = loaded.split_at(pages.len());

    let c = &control_loaded[0];
    assert!(
        c.console.iter().any(|l| l.contains("Uncaught")),
        "the control's script error was not seen: {:?}",
        c.console
    );
    assert!(
        c.console
            .iter()
            .any(|l| l.contains("Content Security Policy")),
        "the control's network load was not refused: {:?}",
        c.console
    );
    assert!(!c.dom.contains("data-ready=\"1\""));

    for ((command, program, page), l) in pages.iter().zip(pages_loaded) {
        let name = format!("{command} {program} ({})", page.display());
        assert_clean(&name, l);
        match *command {
            "run" => {
                assert_eq!(slot_rects(&l.dom), run_slots(program), "{name}");
                // one table row per profile row of the JSON report, under its header row
                let o = npusim(&["run", program, "--profile", "--format", "json"]);
                let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                let rows = doc["profile"].as_array().unwrap().len();
                let table = l
                    .dom
                    .split("<table class=\"profile\">")
                    .nth(1)
                    .unwrap_or_else(|| panic!("{name}: no profile table"));
                let table = table.split("</table>").next().unwrap();
                assert_eq!(table.matches("<tr>").count(), rows + 1, "{name}");
            }
            _ => {
                let levels = compare_slots(program);
                // each level's column holds its own plan's slots
                let columns: Vec<&str> = l.dom.split("data-level=\"").skip(1).collect();
                assert_eq!(columns.len(), levels.len(), "{name}");
                for (column, (level, slots)) in columns.iter().zip(&levels) {
                    assert!(
                        column.starts_with(&format!("{level}\"")),
                        "{name}: level {level}"
                    );
                    assert_eq!(
                        slot_rects(column),
                        slots.unwrap_or(0),
                        "{name}: level {level}"
                    );
                }
                let total: usize = levels.iter().filter_map(|(_, s)| *s).sum();
                assert_eq!(slot_rects(&l.dom), total, "{name}");
            }
        }
    }
}

#[test]
fn the_page_is_written_whole_only_with_the_report_and_the_same_every_time() {
    let db = "programs/vec_add_db.yaml";
    let mut pages = Vec::new();
    for round in 0..2 {
        let dir = scratch(&format!("written-{round}"));
        let page = dir.join("r.html");
        let o = npusim(&["run", db, "--html", &page.to_string_lossy()]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // stdout is the text report, as without --html
        assert_eq!(stdout(&o), stdout(&npusim(&["run", db])));
        assert_eq!(files_in(&dir), ["r.html"]);
        pages.push(std::fs::read(&page).unwrap());
    }
    assert!(pages[0] == pages[1], "two runs wrote different pages");
    let page = String::from_utf8(pages.pop().unwrap()).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    for banned in ["http:", "https:", "src=", "href=", "<link", "url("] {
        assert!(!page.contains(banned), "the page refers outside: {banned}");
    }

    // with -o and --format json too, each file gets its own output
    let dir = scratch("both");
    let (page, json) = (dir.join("r.html"), dir.join("r.json"));
    let o = npusim(&[
        "run",
        db,
        "--format",
        "json",
        "-o",
        &json.to_string_lossy(),
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert_eq!(files_in(&dir), ["r.html", "r.json"]);
    assert!(std::fs::read_to_string(&json).unwrap().starts_with('{'));

    // a finding: the report is written, so is the page, which shows it
    let dir = scratch("deadlock");
    let page = dir.join("d.html");
    let o = npusim(&[
        "run",
        "tests/fixtures/deadlock.yaml",
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("DEADLOCK at cycle"));

    // an overflow in `run`, bad input: no report, no page
    for (args, code) in [
        (vec!["run", "tests/fixtures/overflow.yaml"], 1),
        (vec!["run", "tests/fixtures/several_problems.yaml"], 2),
        (vec!["compare", "tests/fixtures/several_problems.yaml"], 2),
    ] {
        let dir = scratch("nothing");
        let page = dir.join("x.html");
        let mut full = args.clone();
        let p = page.to_string_lossy().into_owned();
        full.extend(["--html", &p]);
        let o = npusim(&full);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(
            files_in(&dir).is_empty(),
            "{args:?} wrote {:?}",
            files_in(&dir)
        );
    }

    // a comparison with an overflowed level is complete: written, the level shown as such
    let dir = scratch("compare-overflow");
    let page = dir.join("c.html");
    let o = npusim(&[
        "compare",
        "programs/reuse_levels.yaml",
        "--capacity",
        "ub=16KiB",
        "--html",
        &page.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&page).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(text.contains("overflow</h3>"), "no overflowed level");
}

#[test]
fn level_best_shows_the_chosen_level_with_its_timeline() {
    let dir = scratch("best");
    let page = dir.join("b.html");
    let o = npusim(&[
        "run",
        "programs/reuse_levels.yaml",
        "--level",
        "best",
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains("(the fastest of --level best)"));
    assert!(text.contains("(the whole run): "));
}
