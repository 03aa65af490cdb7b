//! The views of a launch (docs/html.md, "A launch's page"; docs/cli.md): `run --html`,
//! `--profile`, `--level best` and `compare --html` on a launch of many cores and on a mixed
//! kernel. What the pages must hold is counted here from the kernel (its cores from the launch's
//! slots, its cross-core flags and spans from the engine's own calls to a counting observer),
//! never read back from the page; the browser checks load the pages in headless Chromium as
//! `html_cli` does (skipped with one line without it, outside CI).

use crate::html_cli::{assert_clean, browser, load, load_at, scratch, Loaded};
use crate::{default_config, npusim, root, stderr};
use sim::engine::{CrossEvent, Observer, Span};
use std::path::Path;

const MIXED: &str = "programs/matmul_add.yaml";

/// What the engine reported for a kernel's launch: its cores' names in launch order, every
/// span with cycles (core, from, to) and every take of a cross-core flag (setter's core is not
/// reported by a take, so the takes are counted per taking core).
struct Counted {
    cores: Vec<(u32, String)>,
    spans: Vec<(u32, u64, u64)>,
    takes: Vec<(u32, u64)>,
    total: u64,
}

#[derive(Default)]
struct Counter {
    spans: Vec<(u32, u64, u64)>,
    takes: Vec<(u32, u64)>,
}

impl Observer for Counter {
    fn on_span(&mut self, s: &Span) {
        if s.to > s.from {
            self.spans.push((s.core, s.from, s.to));
        }
    }

    fn on_cross(&mut self, e: &CrossEvent<'_>) {
        if let CrossEvent::Take { core, cycle, .. } = *e {
            self.takes.push((core, cycle));
        }
    }
}

/// Runs `program` with `--blocks blocks` at `--level level` as `npusim run` does, counting what
/// the engine reports.
fn count(program: &str, blocks: u32, level: u8) -> Counted {
    let config = default_config();
    let text = std::fs::read_to_string(root().join(program)).unwrap();
    let kernel = sim::load_kernel(&text, program, &config, &[], Some(blocks)).unwrap();
    let mut opts = pipeline::Options {
        validate: true,
        ..Default::default()
    };
    opts.plan.max_level = level;
    let prepared = pipeline::prepare_kernel(&kernel, &config, &opts).unwrap();
    let mut counter = Counter::default();
    let sim = pipeline::run_prepared(prepared, &config, &opts, &mut counter).unwrap();
    Counted {
        cores: sim
            .result
            .cores
            .iter()
            .map(|c| (c.block, config.core(c.core).name.clone()))
            .collect(),
        spans: counter.spans,
        takes: counter.takes,
        total: sim.result.total_cycles,
    }
}

/// `name="value"` of the first element with `class="tlv"` in `dom`.
fn tlv_attr(dom: &str, name: &str) -> String {
    let tag = dom
        .split("<div class=\"tlv\"")
        .nth(1)
        .and_then(|t| t.split('>').next())
        .expect("the page has its timeline");
    tag.split(&format!(" {name}=\""))
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap_or_else(|| panic!("the timeline has no {name}: {tag}"))
        .to_string()
}

fn run_page(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let page = dir.join(name);
    let path = page.to_string_lossy().into_owned();
    let mut all = vec!["run"];
    all.extend(args);
    all.extend(["--html", &path]);
    let o = npusim(&all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    page
}

#[test]
fn a_24_block_mixed_kernel_page_has_a_lane_group_per_core_and_an_arrow_per_flag() {
    let dir = scratch("launch/browser");
    // matmul_add.yaml: 48 tiles of 128 rows, tile t on block t % blocks. With 24 blocks each
    // block has one cube core and the 910B's 2 vector cores (72 cores), and each vector core
    // takes one cross-core flag per tile of its block (2 tiles): 24 x 2 x 2 = 96 flags, all
    // consumed (2 tiles per block are fewer than the 16 pending sets a counter holds, so the
    // sync pass adds no reverse flag)
    let c = count(MIXED, 24, 2);
    assert_eq!(c.cores.len(), 24 * 3);
    assert_eq!(c.takes.len(), 24 * 2 * 2);
    let full = run_page(&dir, "full.html", &[MIXED, "--blocks", "24"]);
    // a window: the middle third of the run
    let (a, b) = (c.total / 3, 2 * c.total / 3);
    let window = format!("{a}:{b}");
    let windowed = run_page(
        &dir,
        "window.html",
        &[MIXED, "--blocks", "24", "--html-window", &window],
    );
    // a subset: block 0's cube core and blocks 0 to 3's vector cores
    let subset = run_page(
        &dir,
        "subset.html",
        &[MIXED, "--blocks", "24", "--html-cores", "aic0,aiv0-3"],
    );
    let text = std::fs::read_to_string(&full).unwrap();
    assert!(text.len() < 5 << 20, "{} bytes", text.len());
    let of = |ty: &str| c.cores.iter().filter(|(_, t)| t == ty).count();
    assert!(text.contains(&format!(
        "<dt>launch</dt><dd>24 blocks, {} aic + {} aiv cores</dd>",
        of("aic"),
        of("aiv")
    )));
    // one summary per core type, with its cores counted
    for ty in ["aic", "aiv"] {
        assert!(text.contains(&format!("data-type=\"{ty}\" data-cores=\"{}\"", of(ty))));
    }
    // every span is kept (far below the budget) and none is summarised
    assert_eq!(tlv_attr(&text, "data-spans"), c.spans.len().to_string());
    assert_eq!(tlv_attr(&text, "data-summary-columns"), "0");
    // the windowed page keeps the spans that overlap the window, the flags taken in it
    let wtext = std::fs::read_to_string(&windowed).unwrap();
    let in_window = |f: u64, t: u64| f < b && t > a;
    let wspans = c.spans.iter().filter(|s| in_window(s.1, s.2)).count();
    assert_eq!(tlv_attr(&wtext, "data-spans"), wspans.to_string());
    assert_eq!(
        (tlv_attr(&wtext, "data-from"), tlv_attr(&wtext, "data-to")),
        (a.to_string(), b.to_string())
    );
    let wtakes = c.takes.iter().filter(|t| t.1 >= a && t.1 < b).count();
    assert_eq!(tlv_attr(&wtext, "data-arrows"), wtakes.to_string());
    // the subset: 1 + 4 x 2 cores; arrows only between shown cores: block 0's cube core to its
    // 2 vector cores, 2 tiles each
    let stext = std::fs::read_to_string(&subset).unwrap();
    let shown = c
        .cores
        .iter()
        .filter(|(blk, ty)| (ty == "aic" && *blk == 0) || (ty == "aiv" && *blk <= 3))
        .count();
    assert_eq!(shown, 9);
    assert_eq!(tlv_attr(&stext, "data-groups"), shown.to_string());
    assert_eq!(tlv_attr(&stext, "data-arrows"), (2 * 2).to_string());

    let Some(chromium) = browser(
        "launch_html::a_24_block_mixed_kernel_page_has_a_lane_group_per_core_and_an_arrow_per_flag",
    ) else {
        return;
    };
    // the zoomed view: the first tenth of the run, opened with `#window=A:B`
    let zoom_to = c.total / 10;
    let zoom = format!("#window=0:{zoom_to}");
    let pages: Vec<(String, &Path, &str)> = vec![
        ("full".into(), &full, ""),
        ("zoomed".into(), &full, &zoom),
        // the page drives its wheel, a drag and the op search and checks each
        ("interaction".into(), &full, "#check-interaction"),
        ("window".into(), &windowed, ""),
        ("subset".into(), &subset, ""),
    ];
    let loaded: Vec<Loaded> = std::thread::scope(|s| {
        let handles: Vec<_> = pages
            .iter()
            .map(|(_, p, f)| {
                let chromium = &chromium;
                s.spawn(move || load_at(chromium, p, f))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((name, _, _), l) in pages.iter().zip(&loaded) {
        assert_clean(name, l);
    }
    let groups = |l: &Loaded| l.dom.matches("<div class=\"lane-group\"").count();
    let arrows = |l: &Loaded| l.dom.matches("<line class=\"arrow\"").count();
    let visible = |l: &Loaded| {
        tlv_attr(&l.dom, "data-visible-spans")
            .parse::<usize>()
            .unwrap()
    };
    let (f, z, w, s) = (&loaded[0], &loaded[1], &loaded[3], &loaded[4]);
    assert_eq!(
        tlv_attr(&loaded[2].dom, "data-checked"),
        "wheel drag search"
    );
    // one lane group per core, one arrow per consumed flag, every span in view
    assert_eq!(groups(f), c.cores.len());
    assert_eq!(arrows(f), c.takes.len());
    assert_eq!(visible(f), c.spans.len());
    // zoomed in: the spans that overlap the view, fewer than all
    let zspans = c.spans.iter().filter(|s| s.1 < zoom_to && s.2 > 0).count();
    assert_eq!(visible(z), zspans);
    assert!(visible(z) < visible(f));
    assert_eq!(tlv_attr(&z.dom, "data-view"), format!("0:{zoom_to}"));
    assert_eq!(arrows(w), wtakes);
    assert_eq!(visible(w), wspans);
    assert_eq!(groups(s), shown);
    assert_eq!(arrows(s), 4);
}

#[test]
fn run_views_of_a_launch_are_derived_from_the_whole_launch() {
    let dir = scratch("launch/views");
    let program = "programs/vec_add_blocks.yaml";
    // --profile with --html: the page carries the profile table, one row per row of the JSON
    // report's profile (summed over the launch's cores)
    let page = run_page(&dir, "p.html", &[program, "--profile"]);
    let text = std::fs::read_to_string(&page).unwrap();
    let o = npusim(&["run", program, "--profile", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["profile"].as_array().unwrap().len();
    let table = text
        .split("<table class=\"profile\">")
        .nth(1)
        .expect("a profile table")
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(table.matches("<tr>").count(), rows + 1);
    // the page's launch summary: one table per core type, with its cores counted
    let blocks = doc["launch"]["blocks"].as_u64().unwrap();
    assert!(
        text.contains(&format!("data-type=\"aiv\" data-cores=\"{blocks}\"")),
        "no aiv summary"
    );

    // --level best on a mixed kernel: every level of the whole launch, the fastest kept (the
    // highest level among equals), as `compare` measures them
    let o = npusim(&["compare", MIXED, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let levels: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs: Vec<(u64, u64)> = levels
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["level"].as_u64().unwrap(),
                l["total_cycles"].as_u64().unwrap(),
            )
        })
        .collect();
    let fewest = runs.iter().map(|r| r.1).min().unwrap();
    let chosen = runs
        .iter()
        .filter(|r| r.1 == fewest)
        .map(|r| r.0)
        .max()
        .unwrap();
    let o = npusim(&["run", MIXED, "--level", "best", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["total_cycles"].as_u64(), Some(fewest));
    let page = run_page(&dir, "b.html", &[MIXED, "--level", "best"]);
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains(&format!("{chosen} (the fastest of --level best)")));
    // and the page's timeline is that level's run: its spans are the launch's
    assert_eq!(
        tlv_attr(&text, "data-spans"),
        count(MIXED, 2, chosen as u8).spans.len().to_string()
    );
}

#[test]
fn compare_html_of_a_launch_draws_every_part_at_every_level() {
    let dir = scratch("launch/compare");
    let page = dir.join("c.html");
    let path = page.to_string_lossy().into_owned();
    let o = npusim(&["compare", MIXED, "--blocks", "24", "--html", &path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&page).unwrap();
    // per level, the slot rects of both parts' plans (counted from the plans)
    let config = default_config();
    let src = std::fs::read_to_string(root().join(MIXED)).unwrap();
    let kernel = sim::load_kernel(&src, MIXED, &config, &[], Some(24)).unwrap();
    let opts = pipeline::Options {
        validate: true,
        ..Default::default()
    };
    let levels = pipeline::compare_kernel(&kernel, &config, &[2, 1, 0], &opts).unwrap();
    let parts: Vec<&sim::Program> = kernel.parts.iter().collect();
    let slots = sim::launch::slots(&parts, &config);
    let of = |ty: &str| {
        slots
            .iter()
            .filter(|s| config.core(s.core).name == ty)
            .count()
    };
    assert!(text.contains(&format!(
        "<dt>launch</dt><dd>24 blocks, {} aic + {} aiv cores</dd>",
        of("aic"),
        of("aiv")
    )));
    let columns: Vec<&str> = text
        .split("<div class=\"level\" data-level=\"")
        .skip(1)
        .collect();
    assert_eq!(columns.len(), levels.len());
    for (column, l) in columns.iter().zip(&levels) {
        let pipeline::LevelOutcome::Ran(sim) = &l.outcome else {
            panic!("level {} overflowed", l.level);
        };
        let slots: usize = sim
            .parts
            .iter()
            .map(|p| reports::slot_rects(&p.planned.plan))
            .sum();
        let column = column.split("<div class=\"level").next().unwrap();
        assert_eq!(
            column.matches("<rect class=\"slot\"").count(),
            slots,
            "level {}",
            l.level
        );
        // a bar chart per core type: its last core
        assert_eq!(
            column.matches("<svg class=\"bars\"").count(),
            2,
            "level {}",
            l.level
        );
    }

    let Some(chromium) =
        browser("launch_html::compare_html_of_a_launch_draws_every_part_at_every_level")
    else {
        return;
    };
    assert_clean("compare of a launch", &load(&chromium, &page));
}

#[test]
fn a_bad_core_list_is_refused_with_what_the_launch_has() {
    let dir = scratch("launch/bad");
    let page = dir.join("x.html");
    let path = page.to_string_lossy().into_owned();
    for (list, says) in [
        ("aix0", "`aix0` names no core type of the launch (aic, aiv)"),
        ("aiv24", "`aiv24`: the launch has blocks 0..24 (0 to 23)"),
        ("aiv3-1", "`aiv3-1` is not TYPE, TYPE<B> or TYPE<B>-<C>"),
    ] {
        let o = npusim(&[
            "run",
            MIXED,
            "--blocks",
            "24",
            "--html",
            &path,
            "--html-cores",
            list,
        ]);
        assert_eq!(o.status.code(), Some(2), "{list}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--html-cores {list}: {MIXED}: {says}")),
            "{err}"
        );
        assert!(!page.exists());
    }
    // --html-window without --html is a usage error
    let o = npusim(&["run", MIXED, "--html-window", "0:100"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_long_launch_page_is_summarised_past_its_budgets_and_stays_under_5_mb() {
    let dir = scratch("launch/long");
    // 10,800 tiles on 24 blocks: 450 tiles per block, each vector core taking one flag per
    // tile (2 x 450); and since 450 tiles are more than the 16 pending sets a counter holds,
    // the sync pass adds the reverse flag (matmul_add.yaml's header): the block's two vector
    // cores' mode-2 sets together release one flag of the cube core's, which it takes once per
    // tile and 16 times at its end (450 + 16). 24 x (900 + 466) = 32,784 flags, past the page's
    // 20,000 arrows; and far more spans than the 100,000 it draws one by one
    let tiles = 10_800;
    let per_block = tiles / 24;
    let flags = 24 * (2 * per_block + per_block + 16);
    let param = format!("tiles={tiles}");
    let page = run_page(
        &dir,
        "long.html",
        &[MIXED, "--blocks", "24", "--param", &param],
    );
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.len() < 5 << 20, "{} bytes", text.len());
    assert!(text.contains("<b>Summarised:</b>"));
    assert!(text.contains(&format!(
        "{} cross-core flags were consumed in the window; the page draws the first 20,000.",
        thousands(flags)
    )));
    assert_eq!(tlv_attr(&text, "data-arrows"), "20000");
    assert_eq!(tlv_attr(&text, "data-groups"), "72");
    let spans: usize = tlv_attr(&text, "data-spans").parse().unwrap();
    assert!(spans > 0 && spans <= 100_000, "{spans}");
    let columns: usize = tlv_attr(&text, "data-summary-columns").parse().unwrap();
    assert!(columns > 0);

    let Some(chromium) = browser(
        "launch_html::a_long_launch_page_is_summarised_past_its_budgets_and_stays_under_5_mb",
    ) else {
        return;
    };
    let to: u64 = tlv_attr(&text, "data-to").parse().unwrap();
    // the last tenth of the run lies past the cut: summarised, no span drawn one by one
    let tail = format!("#window={}:{to}", to - to / 10);
    let loaded: Vec<Loaded> = std::thread::scope(|s| {
        let a = s.spawn(|| load(&chromium, &page));
        let b = s.spawn(|| load_at(&chromium, &page, &tail));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    assert_clean("long", &loaded[0]);
    assert_clean("long, its last tenth", &loaded[1]);
    assert_eq!(
        tlv_attr(&loaded[0].dom, "data-visible-spans"),
        spans.to_string()
    );
    assert_eq!(
        loaded[0].dom.matches("<line class=\"arrow\"").count(),
        20_000
    );
    assert_eq!(tlv_attr(&loaded[1].dom, "data-visible-spans"), "0");
}

/// `21,600`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_launch_of_more_cores_than_the_default_shows_the_first_and_says_so() {
    let dir = scratch("launch/many");
    // vec_add_blocks.yaml: one vector core per block, so 300 blocks are 300 cores (on the
    // largest chip a config may describe: the 910B has 48 AI cores)
    let program = "programs/vec_add_blocks.yaml";
    let chip = "tests/fixtures/bad/support/chip_4096x8.yaml";
    let page = run_page(
        &dir,
        "many.html",
        &[program, "--config", chip, "--blocks", "300"],
    );
    let text = std::fs::read_to_string(&page).unwrap();
    assert_eq!(tlv_attr(&text, "data-groups"), "256");
    assert!(text.contains(
        "The timeline shows 256 of the launch's 300 cores (by default, the first 256 in launch order)"
    ));
    // the last core's lane group is block 255's
    assert!(text.contains("<div class=\"lane-group\" data-core=\"255\">"));
    assert!(!text.contains("data-core=\"256\""));
    // a list chooses any of them
    let page = run_page(
        &dir,
        "chosen.html",
        &[
            program,
            "--config",
            chip,
            "--blocks",
            "300",
            "--html-cores",
            "aiv290-299",
        ],
    );
    let text = std::fs::read_to_string(&page).unwrap();
    assert_eq!(tlv_attr(&text, "data-groups"), "10");
    assert!(text.contains("The timeline shows 10 of the launch's 300 cores;"));
}
