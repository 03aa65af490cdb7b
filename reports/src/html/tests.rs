use super::*;
use crate::testutil::{config, plan_db, program_db, result_clean};
use planner::Interval;
use sim::engine::{Activity, Observer, Span, Stall};
use sim::{OpId, Pipe};

fn run_page(program: &Program, plan: &planner::Plan, tl: Option<&Timeline>) -> String {
    let result = result_clean();
    let run = Run::new(program, plan, &result);
    run_html(&config(), &run, tl, None)
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// A few spans of the fixture's run, as the engine would report them.
fn timeline() -> Timeline {
    let mut t = Timeline::new(100);
    let span = |pipe, from, to, what| Span {
        core: 0,
        pipe,
        from,
        to,
        op: OpId::new(3),
        seq: Some(1),
        what,
    };
    t.on_span(&span(Pipe::S, 0, 1, Activity::Issue));
    t.on_span(&span(Pipe::Mte2, 2, 300, Activity::Work));
    t.on_span(&span(
        Pipe::V,
        2,
        300,
        Activity::Stall(Stall::WaitFlag {
            src: Pipe::Mte2,
            id: 0,
        }),
    ));
    t.on_span(&span(Pipe::V, 300, 556, Activity::Work));
    t
}

#[test]
fn one_slot_rect_per_slot_and_live_interval() {
    let program = program_db();
    let mut plan = plan_db();
    // xb lives in two intervals: both slots get a rect for each
    plan.buffers[0].live = vec![Interval::new(1, 4), Interval::new(9, 14)];
    // zb is never touched: no rect
    plan.buffers[2].live.clear();
    let page = run_page(&program, &plan, None);
    assert_eq!(slot_rects(&plan), 2 * 2 + 2);
    assert_eq!(count(&page, "<rect class=\"slot\""), slot_rects(&plan));
    assert_eq!(count(&page, "data-buffer=\"xb\""), 4);
    assert_eq!(count(&page, "data-buffer=\"yb\" data-slot=\"1\""), 1);
    assert_eq!(count(&page, "data-buffer=\"zb\""), 0);
    assert!(page.contains("data-slots=\"6\""));
    // the capacity line and the scope's heading
    assert!(page.contains("capacity 192 KiB (196,608 bytes)"));
    assert!(
        page.contains("<h4>UB: 196,608 of 196,608 bytes (sequential) · 3 buffers, 6 slots</h4>")
    );
}

#[test]
fn names_are_escaped() {
    let mut program = program_db();
    program.kernel = "k<script>alert('x')</script>".into();
    program.buffers[0].name = "a&b\"<i>".into();
    let page = run_page(&program, &plan_db(), Some(&timeline()));
    assert!(!page.contains("<script>alert"));
    assert!(page.contains("k&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(page.contains("data-buffer=\"a&amp;b&quot;&lt;i&gt;\""));
    assert!(!page.contains("a&b"));
    // exactly the page's own script
    assert_eq!(count(&page, "<script>"), 1);
}

#[test]
fn pages_are_self_contained_and_deterministic() {
    let program = program_db();
    let plan = plan_db();
    let tl = timeline();
    let page = run_page(&program, &plan, Some(&tl));
    assert_eq!(page, run_page(&program, &plan, Some(&tl)));
    for banned in [
        "http:", "https:", "src=", "href=", "<link", "@import", "url(",
    ] {
        assert!(!page.contains(banned), "the page contains `{banned}`");
    }
    assert!(page.contains("default-src 'none'"));
}

/// The timeline's data, as the page's script reads it (the text of `<pre id="tl-data">`).
fn tl_data(page: &str) -> serde_json::Value {
    let text = page
        .split("<pre id=\"tl-data\" hidden>")
        .nth(1)
        .and_then(|t| t.split("</pre>").next())
        .expect("the page has the timeline's data");
    let text = text
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).expect("the timeline's data is JSON")
}

/// The spans of the data as (lane name, from, cycles, what, op): per lane (`counts`), each
/// span's gap after the previous one of its lane, its cycles, kind and op.
fn tl_spans(d: &serde_json::Value) -> Vec<(String, u64, u64, String, String)> {
    let s: Vec<u64> = d["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let mut rows = s.chunks(4);
    let mut out = Vec::new();
    for (lane, count) in d["counts"].as_array().unwrap().iter().enumerate() {
        let mut end = 0;
        for _ in 0..count.as_u64().unwrap() {
            let r = rows.next().unwrap();
            let from = end + r[0];
            end = from + r[1];
            out.push((
                d["lanes"][lane][0].as_str().unwrap().to_string(),
                from,
                r[1],
                d["kinds"][r[2] as usize][1].as_str().unwrap().to_string(),
                d["ops"][r[3] as usize][0].as_str().unwrap().to_string(),
            ));
        }
    }
    assert!(rows.next().is_none(), "spans past the lane counts");
    out
}

#[test]
fn timeline_hands_every_kept_span_to_the_page_in_its_lane() {
    let program = program_db();
    let page = run_page(&program, &plan_db(), Some(&timeline()));
    assert!(page.contains("data-spans=\"4\""));
    assert!(page.contains("data-groups=\"1\""));
    let d = tl_data(&page);
    // one lane per pipe of the core, in report order
    let lanes: Vec<&str> = d["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l[0].as_str().unwrap())
        .collect();
    let pipes: Vec<String> = crate::run_report::sorted_pipes(&result_clean().cores[0])
        .iter()
        .map(|p| p.pipe.to_string())
        .collect();
    assert_eq!(lanes, pipes);
    let op = program.ops[3].kind.name().to_string();
    let spans = tl_spans(&d);
    // by lane, then start; V's wait on MTE2 with its reason
    assert!(spans.contains(&("V".into(), 2, 298, "wait_flag MTE2#0".into(), op.clone())));
    assert!(spans.contains(&("S".into(), 0, 1, "busy sending to MTE2".into(), op)));
    assert_eq!(spans.len(), 4);
    assert!(page.contains("the whole run): 4 spans"));
    assert!(d["summary"].is_null());
    let none = run_page(&program, &plan_db(), None);
    assert!(none.contains("Not collected"));
}

#[test]
fn a_timeline_past_its_budget_summarises_the_rest_per_column() {
    let mut t = Timeline::new(2);
    for (pipe, from, to) in [(Pipe::V, 0, 10), (Pipe::Mte2, 0, 50), (Pipe::V, 20, 30)] {
        t.on_span(&Span {
            core: 0,
            pipe,
            from,
            to,
            op: OpId::new(3),
            seq: None,
            what: Activity::Work,
        });
    }
    let page = run_page(&program_db(), &plan_db(), Some(&t));
    assert!(page.contains(
        "<b>Summarised:</b> the window had 3 spans; the page draws the 2 that start before cycle 20 one by one (0 to 20 is complete)"
    ));
    let d = tl_data(&page);
    assert_eq!(d["cut"], 20);
    // the spans before the cut, MTE2's clipped to it
    let spans = tl_spans(&d);
    assert_eq!(spans.len(), 2);
    assert!(spans.iter().any(|s| s.0 == "MTE2" && s.1 == 0 && s.2 == 20));
    // from the cut to the run's end (1,000 cycles), one-cycle columns: MTE2 busy in [20, 50),
    // V busy in [20, 30), nothing stalled
    let sum = &d["summary"];
    assert_eq!(sum["width"], 1);
    assert_eq!(sum["first"], 20);
    let lane = |name: &str| {
        let k = d["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .position(|l| l[0] == name)
            .unwrap();
        sum["lanes"][k].as_str().unwrap().to_string()
    };
    let (mte2, v) = (lane("MTE2"), lane("V"));
    assert_eq!(mte2.len(), 2 * 980);
    assert_eq!(&mte2[..60], "_0".repeat(30));
    assert_eq!(&mte2[60..62], "00");
    assert_eq!(&v[..20], "_0".repeat(10));
    assert_eq!(&v[20..22], "00");
    assert!(page.contains("data-summary-columns=\"980\""));
}

#[test]
fn stall_bars_add_up_to_the_run() {
    let result = result_clean();
    let bars = bars::stall_bars(
        &result.cores[0],
        result.total_cycles,
        result.total_cycles,
        1100.0,
    );
    // one segment per non-zero state: S busy, idle; V busy, 2 waits, starved, idle; MTE2 busy,
    // starved, idle; MTE3 busy, wait, starved, idle
    assert_eq!(count(&bars, "<rect class=\"seg"), 2 + 5 + 3 + 4);
    assert!(bars.contains("<title>V: wait_flag MTE2#1 100 cycles (10.0 % of 1,000)</title>"));
    assert!(bars.contains(">25.6 % busy</text>"));
}

#[test]
fn the_comparison_shows_an_overflowed_level() {
    let program = program_db();
    let plan = plan_db();
    let result = result_clean();
    let run = Run::new(&program, &plan, &result);
    let levels = vec![
        CompareLevel {
            level: 2,
            outcome: CompareOutcome::Ran(run),
        },
        CompareLevel {
            level: 0,
            outcome: CompareOutcome::Overflow("ub overflow, requires <many> bits".into()),
        },
    ];
    let page = compare_html(&program, &config(), &levels);
    assert!(page.contains("<h3>level 0: overflow</h3>"));
    assert!(page.contains("overflow: ub overflow, requires &lt;many&gt; bits"));
    assert_eq!(count(&page, "<rect class=\"slot\""), slot_rects(&plan));
    assert!(page.contains("id=\"l2-mem-ub\""));
    assert_eq!(count(&page, "data-level="), 2);
}

#[test]
fn the_profile_goes_in_its_section() {
    let program = program_db();
    let plan = plan_db();
    let result = result_clean();
    let run = Run {
        hazards: None,
        ..Run::new(&program, &plan, &result)
    };
    let page = run_html(&config(), &run, None, Some("<table id=\"ops\"></table>"));
    assert!(page
        .contains("<section id=\"profile\">\n<h2>Per-op profile</h2>\n<table id=\"ops\"></table>"));
    assert!(page.contains("race check: not run"));
    let empty = run_page(&program, &plan, None);
    assert!(empty.contains("<section id=\"profile\" hidden></section>"));
}

#[test]
fn numbers() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(83_496), "83,496");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(f2(12.5), "12.5");
    assert_eq!(f2(40.0), "40");
    assert_eq!(f2(0.004), "0");
    assert_eq!(f2(-0.001), "0");
    assert_eq!(f2(1.23456), "1.23");
}

#[test]
fn snapshot_of_a_small_run_page() {
    let page = run_page(&program_db(), &plan_db(), Some(&timeline()));
    insta::assert_snapshot!(page);
}

#[test]
fn a_config_with_a_launch_cost_shows_it_and_the_end_to_end_time() {
    // the fixture's run is 1,000 cycles; a launch cost of 12,840 makes 13,840 end to end,
    // 13,840 / 1,800 MHz = 7.689 µs
    let (program, plan) = (program_db(), plan_db());
    let mut result = result_clean();
    result.launch_cycles = 12_840;
    let mut cfg = config();
    cfg.launch_cost = Some(sim::config::LaunchCost {
        fixed_cycles: 12_500,
        per_core_cycles: 340,
    });
    let page = run_html(&cfg, &Run::new(&program, &plan, &result), None, None);
    assert!(page.contains("12,840 cycles"), "{page}");
    assert!(page.contains("13,840 cycles = 7.689 µs"));
    // without one, neither fact
    let plain = run_page(&program, &plan, None);
    assert!(!plain.contains("launch cost") && !plain.contains("end to end"));
}

#[test]
fn script_hash_is_the_csp_hash_source() {
    // SHA-256("abc") is FIPS 180-2's first example, ba7816bf...f20015ad; its 32 bytes in
    // base64 (RFC 4648, padded) are the value below
    assert_eq!(
        script_hash("abc"),
        "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
    );
}

#[test]
fn the_policy_allows_exactly_the_pages_own_script() {
    let page = run_page(&program_db(), &plan_db(), Some(&timeline()));
    // the script as it stands in the page, cut out of the page (not taken from the renderer)
    let script = page
        .split("<script>")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .unwrap();
    let policy = page
        .split("Content-Security-Policy\" content=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap();
    assert_eq!(
        policy,
        format!(
            "default-src 'none'; style-src 'unsafe-inline'; script-src '{}'",
            script_hash(script)
        )
    );
    assert!(!policy.contains("script-src 'unsafe-inline'"));
}

#[test]
fn a_page_past_its_byte_budget_draws_fewer_spans_and_summarises_the_rest() {
    // every span kept by the timeline (no span budget), far more than the page's data may
    // hold: V busy 5 cycles of every 10
    let mut t = Timeline::new(usize::MAX);
    let n = 600_000u64;
    for i in 0..n {
        t.on_span(&Span {
            core: 0,
            pipe: Pipe::V,
            from: 10 * i,
            to: 10 * i + 5,
            op: OpId::new(3),
            seq: Some(i),
            what: Activity::Work,
        });
    }
    assert_eq!(t.cut(), None);
    let page = run_page(&program_db(), &plan_db(), Some(&t));
    let data = page
        .split("<pre id=\"tl-data\" hidden>")
        .nth(1)
        .unwrap()
        .split("</pre>")
        .next()
        .unwrap();
    assert!(data.len() <= 4_000_000, "{} bytes", data.len());
    let d = tl_data(&page);
    let cut = d["cut"].as_u64().expect("the page cut the spans");
    let spans = tl_spans(&d);
    // the spans drawn are exactly those that start before the cut
    assert_eq!(spans.len() as u64, cut.div_ceil(10));
    assert!(spans.len() as u64 >= n / 8, "{} spans", spans.len());
    // past the cut, V's columns are half busy (31 or 32 of 63), never stalled
    let k = d["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| l[0] == "V")
        .unwrap();
    let cols = d["summary"]["lanes"][k].as_str().unwrap().as_bytes();
    let w = d["summary"]["width"].as_u64().unwrap();
    assert!(w >= 10 && (cols.len() as u64 / 2) * w >= 10 * n - cut);
    // the first column (the cut's) and the last (the run's end) may be partial
    for c in cols.chunks(2).skip(1).take(cols.len() / 2 - 2) {
        assert!(matches!(c, b"V0" | b"W0"), "{}", String::from_utf8_lossy(c));
    }
}
