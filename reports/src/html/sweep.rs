//! The sweep page (`npusim sweep --summary FILE --html PAGE`): per program a plot of cycles
//! against one input (`--x`), one line per value of another (`--by`), each point the fewest
//! cycles of the ok points with those inputs; its pivot table below it; then every point that
//! failed, with its message.

use super::{esc, f2, page, style, thousands};
use crate::sweep::{Pivot, SweepView};

/// The plot's drawing width: the page's content width (`main`'s 1,400 px less its padding). The
/// SVG is `width="100%"`, so on a narrower window it scales to the page's width.
const WIDTH: f64 = 1352.0;
const HEIGHT: f64 = 340.0;
/// Room for the y labels (left), the x labels (bottom) and the top.
const LEFT: f64 = 78.0;
const BOTTOM: f64 = 40.0;
const TOP: f64 = 12.0;
const RIGHT: f64 = 16.0;

/// How many failed points the page lists (the CSV has every one).
const FAILED_SHOWN: usize = 1000;

/// The page: the statuses, the best point per program, per program its plot and pivot, then
/// the failed points.
pub fn sweep_html(view: &SweepView) -> String {
    let [ok, finding, error, other] = view.statuses();
    let failed = view.failed();
    let mut body = String::from(
        "<header>\n<h1>Sweep <span class=\"sub\">· npusim sweep</span></h1>\n<dl class=\"facts\">",
    );
    let mut facts = vec![
        ("points", thousands(view.table.rows.len() as u64)),
        ("ok", thousands(ok as u64)),
        ("finding", thousands(finding as u64)),
        ("error", thousands(error as u64)),
    ];
    if other > 0 {
        facts.push(("other status", thousands(other as u64)));
    }
    body.push_str(&super::facts_html(&facts));
    body.push_str("</dl>\n");
    if !failed.is_empty() {
        body.push_str(&format!(
            "<p class=\"note\"><a href=\"#failed\">{} failed point{}</a> (a finding or an error) listed below the plots, with {} message{}.</p>\n",
            thousands(failed.len() as u64),
            if failed.len() == 1 { "" } else { "s" },
            if failed.len() == 1 { "its" } else { "their" },
            if failed.len() == 1 { "" } else { "s" },
        ));
    }
    body.push_str("</header>\n<main>\n");

    body.push_str("<section id=\"best\">\n<h2>Best point per program</h2>\n<p class=\"note\">The ok point with the fewest cycles (the first in the grid among equals), with the inputs that vary in the sweep.</p>\n");
    body.push_str("<table class=\"summary\"><thead><tr><th>program</th><th>index</th><th>cycles</th><th>inputs</th></tr></thead><tbody>\n");
    for (program, rows) in &view.programs {
        match view.best(rows) {
            Some(b) => body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"text mono\">{}</td></tr>\n",
                esc(program),
                esc(view.index_of(b.row)),
                thousands(b.cycles),
                esc(&view.inputs_of(b.row))
            )),
            None => body.push_str(&format!(
                "<tr><td>{}</td><td>-</td><td>-</td><td class=\"text bad\">no point ran without findings</td></tr>\n",
                esc(program)
            )),
        }
    }
    body.push_str("</tbody></table>\n</section>\n");

    body.push_str("<section id=\"plots\">\n<h2>Cycles</h2>\n");
    body.push_str("<p class=\"note\">y = cycles, from 0 (or on a log scale: tick the box above a plot). Each point is the fewest cycles of the ok points with its inputs, over every other input; a missing point had none. Every line has its own marker shape and dash pattern, so lines with equal cycles stay visible on each other (the legend says which are equal; the table below each plot gives every value). Hover a point for its cycles, the best point's index and inputs, and where its cycles went per pipe.</p>\n");
    for (k, (program, rows)) in view.programs.iter().enumerate() {
        let p = view.pivot(rows);
        body.push_str(&format!(
            "<div class=\"plot\">\n<h3>{}</h3>\n",
            esc(program)
        ));
        if p.x.is_none() {
            body.push_str("<p class=\"note\">No input varies among this program's points: nothing to plot.</p>\n");
        } else {
            body.push_str(&plot(view, &p, k));
            body.push_str(&pivot_table(view, &p));
        }
        body.push_str("</div>\n");
    }
    body.push_str("</section>\n");
    body.push_str(&failed_section(view, &failed));
    body.push_str("</main>\n");
    page("npusim sweep", &body)
}

/// Every point that did not run ok: its index, program, status, the inputs that vary and its
/// message, in the table's order (the first [`FAILED_SHOWN`]).
fn failed_section(view: &SweepView, failed: &[usize]) -> String {
    let mut out = String::from("<section id=\"failed\">\n<h2>Failed points</h2>\n");
    if failed.is_empty() {
        out.push_str("<p>Every point ran <span class=\"ok\">ok</span>.</p>\n</section>\n");
        return out;
    }
    let shown = failed.len().min(FAILED_SHOWN);
    out.push_str(&format!(
        "<p class=\"note\">The points that found a problem (<code>finding</code>: an overflow, a hazard, a deadlock, a limit) or could not run (<code>error</code>), with the message the CSV gives for each.</p>\n<table class=\"summary failed\" data-failed=\"{shown}\"><thead><tr><th>index</th><th>program</th><th>status</th><th>inputs</th><th>message</th></tr></thead><tbody>\n"
    ));
    for &r in &failed[..shown] {
        let message = view.message_of(r);
        out.push_str(&format!(
            "<tr class=\"failed\"><td>{}</td><td>{}</td><td class=\"bad\">{}</td><td class=\"text mono\">{}</td><td class=\"text\">{}</td></tr>\n",
            esc(view.index_of(r)),
            esc(view.program_of(r)),
            esc(view.status_of(r)),
            esc(&view.inputs_of(r)),
            if message.is_empty() {
                "<span class=\"dim\">(no message)</span>".to_string()
            } else {
                format!("<pre>{}</pre>", esc(message))
            }
        ));
    }
    out.push_str("</tbody></table>\n");
    if failed.len() > shown {
        out.push_str(&format!(
            "<p class=\"note\">and {} more: the CSV lists every one.</p>\n",
            thousands((failed.len() - shown) as u64)
        ));
    }
    out.push_str("</section>\n");
    out
}

/// A `nice` step for about `ticks` ticks up to `max`: 1, 2 or 5 times a power of ten.
fn step(max: u64, ticks: u64) -> u64 {
    let raw = (max / ticks.max(1)).max(1);
    let mut p = 1u64;
    while p.saturating_mul(10) <= raw {
        p *= 10;
    }
    [1, 2, 5, 10]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10 * p)
}

/// The decades a log axis spans for cycles from `min` to `max` (both taken as at least 1):
/// `(lo, hi)` with `10^lo <= min` and `max <= 10^hi`, `lo < hi`.
fn decades(min: u64, max: u64) -> (u32, u32) {
    // floor(log10 n) = digits - 1; the ceiling is one more unless n is a power of ten
    let floor = |n: u64| n.max(1).ilog10();
    let ceil = |n: u64| {
        let f = floor(n);
        if 10u64.pow(f) == n.max(1) {
            f
        } else {
            f + 1
        }
    };
    let (lo, hi) = (floor(min), ceil(max));
    (lo, hi.max(lo + 1))
}

/// The y of a plot, on either scale: `lin` from 0 to `top`, `log` over decades `lo..hi`.
struct Scales {
    top: u64,
    step: u64,
    lo: u32,
    hi: u32,
}

impl Scales {
    fn new(min: u64, max: u64) -> Scales {
        let step = step(max, 5);
        let (lo, hi) = decades(min, max);
        Scales {
            // saturating: a top past u64 (cycles near its end) stays the largest value
            top: max.div_ceil(step).max(1).saturating_mul(step),
            step,
            lo,
            hi,
        }
    }

    fn lin(&self, c: u64) -> f64 {
        TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - c as f64 / self.top as f64)
    }

    fn log(&self, c: u64) -> f64 {
        let at = ((c.max(1) as f64).log10() - self.lo as f64) / (self.hi - self.lo) as f64;
        TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - at)
    }

    /// The log axis' ticks: every power of ten, and 2 and 5 times it when it spans at most
    /// two decades (a value past `u64` is left out).
    fn log_ticks(&self) -> Vec<u64> {
        let mut ticks = Vec::new();
        for e in self.lo..=self.hi {
            let Some(p) = 10u64.checked_pow(e) else { break };
            ticks.push(p);
            if self.hi - self.lo <= 2 && e < self.hi {
                ticks.extend([2, 5].iter().filter_map(|m| p.checked_mul(*m)));
            }
        }
        ticks
    }
}

/// The series' colours, in turn.
const SERIES: [&str; 10] = style::BUFFER_COLOURS;

/// The series' dash patterns, in turn: solid, dashed, dotted, dash-dot, long gaps. A line
/// drawn over an equal one leaves the one below visible in its gaps.
const DASHES: [&str; 5] = ["", "9 4", "2 4", "12 4 2 4", "5 8"];

/// The series' marker shapes, in turn (paths around 0,0): circle, square, triangle, diamond,
/// triangle down. Markers are translucent with an outline, so equal points show every shape.
const MARKERS: [&str; 5] = [
    "M-4.5,0a4.5,4.5 0 1,0 9,0a4.5,4.5 0 1,0 -9,0z",
    "M-4,-4h8v8h-8z",
    "M0,-5.5L5,3.5H-5z",
    "M0,-6L6,0L0,6L-6,0z",
    "M0,5.5L5,-3.5H-5z",
];

/// The stroke attributes of series `j`: its colour and dash pattern.
fn stroke(j: usize) -> String {
    let dash = DASHES[j % DASHES.len()];
    if dash.is_empty() {
        format!("stroke=\"{}\"", SERIES[j % SERIES.len()])
    } else {
        format!(
            "stroke=\"{}\" stroke-dasharray=\"{dash}\"",
            SERIES[j % SERIES.len()]
        )
    }
}

/// `-` for an input that does not apply.
fn value(v: &str) -> &str {
    if v.is_empty() {
        "-"
    } else {
        v
    }
}

/// For each series, the first earlier series with the same cycles at every x (`None`: none, or
/// the series has no point).
fn same_as(p: &Pivot) -> Vec<Option<usize>> {
    let column = |j: usize| p.cells.iter().map(move |row| row[j].map(|b| b.cycles));
    (0..p.bys.len())
        .map(|j| {
            if column(j).all(|c| c.is_none()) {
                return None;
            }
            (0..j).find(|&e| column(e).eq(column(j)))
        })
        .collect()
}

/// One program's plot: `<svg class="sweep" data-points=N>` with N `.point` markers, drawn on
/// the linear scale, each carrying its place on both scales (`data-lin`, `data-log`) for the
/// page's script to switch between.
fn plot(view: &SweepView, p: &Pivot, k: usize) -> String {
    let all = || p.cells.iter().flatten().flatten().map(|b| b.cycles);
    let sc = Scales::new(all().min().unwrap_or(1), all().max().unwrap_or(0));
    let pw = WIDTH - LEFT - RIGHT;
    let x_of = |i: usize| LEFT + pw * (i as f64 + 0.5) / p.xs.len().max(1) as f64;
    let points = all().count();
    let x_name = p.x.map_or("", |x| view.name(x));
    let mut out = format!(
        "<label class=\"controls\"><input type=\"checkbox\" class=\"logy\" data-plot=\"plot-{k}\"> log scale (y)</label>\n<svg class=\"sweep\" id=\"plot-{k}\" data-points=\"{points}\" data-scale=\"lin\" viewBox=\"0 0 {w} {h}\" width=\"100%\" role=\"img\" aria-label=\"cycles against {x}\">\n",
        w = f2(WIDTH),
        h = f2(HEIGHT),
        x = esc(x_name)
    );
    let gridline = |y: f64, label: u64| {
        let y = f2(y);
        format!(
            "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\"/><text class=\"dim\" x=\"{}\" y=\"{y}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
            f2(LEFT),
            f2(LEFT + pw),
            f2(LEFT - 6.0),
            thousands(label)
        )
    };
    out.push_str("<g class=\"lin\">\n");
    let mut tick = Some(0u64);
    while let Some(t) = tick.filter(|t| *t <= sc.top) {
        out.push_str(&gridline(sc.lin(t), t));
        tick = t.checked_add(sc.step);
    }
    out.push_str("</g>\n<g class=\"log\">\n");
    for tick in sc.log_ticks() {
        out.push_str(&gridline(sc.log(tick), tick));
    }
    out.push_str("</g>\n");
    out.push_str(&format!(
        "<line class=\"axis\" x1=\"{l}\" x2=\"{l}\" y1=\"{t}\" y2=\"{b}\"/><line class=\"axis\" x1=\"{l}\" x2=\"{r}\" y1=\"{b}\" y2=\"{b}\"/>\n",
        l = f2(LEFT),
        r = f2(LEFT + pw),
        t = f2(TOP),
        b = f2(HEIGHT - BOTTOM)
    ));
    for (i, xv) in p.xs.iter().enumerate() {
        out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            f2(x_of(i)),
            f2(HEIGHT - BOTTOM + 16.0),
            esc(value(xv))
        ));
    }
    out.push_str(&format!(
        "<text class=\"dim\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        f2(LEFT + pw / 2.0),
        f2(HEIGHT - 4.0),
        esc(x_name)
    ));
    let xy = |x: f64, y: f64| format!("{},{}", f2(x), f2(y));
    for (j, by) in p.bys.iter().enumerate() {
        let (colour, attrs) = (SERIES[j % SERIES.len()], stroke(j));
        // a line through consecutive points; a missing point breaks it
        let mut runs: Vec<Vec<(f64, u64)>> = vec![Vec::new()];
        for (i, row) in p.cells.iter().enumerate() {
            match row[j] {
                Some(b) => runs
                    .last_mut()
                    .expect("one run at least")
                    .push((x_of(i), b.cycles)),
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| r.len() > 1) {
            let on = |y: &dyn Fn(u64) -> f64| {
                run.iter()
                    .map(|(x, c)| xy(*x, y(*c)))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let lin = on(&|c| sc.lin(c));
            out.push_str(&format!(
                "<polyline class=\"line\" {attrs} points=\"{lin}\" data-lin=\"{lin}\" data-log=\"{}\"/>\n",
                on(&|c| sc.log(c))
            ));
        }
        let series = match p.by {
            Some(c) => format!(", {} {}", view.name(c), value(by)),
            None => String::new(),
        };
        for (i, row) in p.cells.iter().enumerate() {
            let Some(b) = row[j] else { continue };
            let lin = xy(x_of(i), sc.lin(b.cycles));
            out.push_str(&format!(
                "<path class=\"point\" d=\"{}\" transform=\"translate({lin})\" data-lin=\"{lin}\" data-log=\"{}\" fill=\"{colour}\" stroke=\"{colour}\"><title>{}</title></path>\n",
                MARKERS[j % MARKERS.len()],
                xy(x_of(i), sc.log(b.cycles)),
                esc(&tooltip(view, b.row, b.cycles, &format!("{x_name} {}{series}", value(&p.xs[i]))))
            ));
        }
    }
    out.push_str("</svg>\n");
    if let Some(c) = p.by {
        let same = same_as(p);
        out.push_str("<ul class=\"legend\">");
        for (j, by) in p.bys.iter().enumerate() {
            let note = same[j].map_or(String::new(), |e| {
                format!(
                    " (the same cycles as {} {})",
                    view.name(c),
                    value(&p.bys[e])
                )
            });
            out.push_str(&format!(
                "<li><svg class=\"key\" width=\"36\" height=\"14\" viewBox=\"0 0 36 14\" aria-hidden=\"true\"><line x1=\"1\" x2=\"35\" y1=\"7\" y2=\"7\" stroke-width=\"2\" {}/><path d=\"{}\" transform=\"translate(18,7)\" fill=\"{}\" fill-opacity=\".35\" stroke=\"{1}\" stroke-width=\"1.5\"/></svg>{} {}{}</li>",
                stroke(j),
                MARKERS[j % MARKERS.len()],
                SERIES[j % SERIES.len()],
                esc(view.name(c)),
                esc(value(by)),
                esc(&note)
            ));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// A point's hover text: where it is, its cycles and its point, then per pipe its busy cycles
/// and costliest stall with their shares of the point's cycles.
fn tooltip(view: &SweepView, row: usize, cycles: u64, at: &str) -> String {
    let mut out = format!(
        "{at}: {} cycles\npoint {}: {}",
        thousands(cycles),
        view.index_of(row),
        view.inputs_of(row)
    );
    for pipe in view.breakdown(row) {
        out.push_str(&format!(
            "\n{}: busy {} ({} %)",
            pipe.pipe,
            thousands(pipe.busy),
            crate::percent(pipe.busy, cycles)
        ));
        if let Some((reason, stalled)) = &pipe.top_stall {
            out.push_str(&format!(
                ", top stall {reason} {} ({} %)",
                thousands(*stalled),
                crate::percent(*stalled, cycles)
            ));
        }
    }
    out
}

/// The pivot as a table: x down, by across.
fn pivot_table(view: &SweepView, p: &Pivot) -> String {
    let x = p.x.map_or("", |x| view.name(x));
    let mut out = String::from("<table class=\"summary\"><thead><tr>");
    match p.by {
        Some(b) => {
            out.push_str(&format!("<th>{} \\ {}</th>", esc(x), esc(view.name(b))));
            for by in &p.bys {
                out.push_str(&format!("<th>{}</th>", esc(value(by))));
            }
        }
        None => out.push_str(&format!("<th>{}</th><th>cycles</th>", esc(x))),
    }
    out.push_str("</tr></thead><tbody>\n");
    for (xv, row) in p.xs.iter().zip(&p.cells) {
        out.push_str(&format!("<tr><td>{}</td>", esc(value(xv))));
        for cell in row {
            match cell {
                Some(b) => out.push_str(&format!(
                    "<td title=\"point {}\">{}</td>",
                    esc(view.index_of(b.row)),
                    thousands(b.cycles)
                )),
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Best;

    #[test]
    fn steps_are_nice() {
        assert_eq!(step(500, 5), 100);
        assert_eq!(step(263_024, 5), 100_000);
        assert_eq!(step(120_000, 5), 50_000);
        assert_eq!(step(0, 5), 1);
        assert_eq!(step(7, 5), 1);
        assert_eq!(step(15, 5), 5);
    }

    #[test]
    fn decades_cover_the_points() {
        assert_eq!(decades(400, 900), (2, 3));
        assert_eq!(decades(100, 1000), (2, 3));
        assert_eq!(decades(101, 1001), (2, 4));
        // one value, or none: one decade at least
        assert_eq!(decades(70, 70), (1, 2));
        assert_eq!(decades(1000, 1000), (3, 4));
        assert_eq!(decades(0, 0), (0, 1));
        assert_eq!(decades(1, u64::MAX), (0, 20));
        let s = Scales::new(400, 900);
        assert_eq!(s.log_ticks(), [100, 200, 500, 1000]);
        // the decades' ends are the plot's bottom and top
        assert_eq!(s.log(100), HEIGHT - BOTTOM);
        assert_eq!(s.log(1000), TOP);
        assert!(s.log(400) > s.log(900));
        // wide spans: powers of ten only; 10^20 is past u64 and left out
        assert_eq!(
            Scales::new(5, 50_000).log_ticks(),
            [1, 10, 100, 1000, 10_000, 100_000]
        );
        assert_eq!(Scales::new(1, u64::MAX).log_ticks().len(), 20);
        // the linear scale's top saturates rather than wraps
        assert_eq!(Scales::new(1, u64::MAX).top, u64::MAX);
    }

    #[test]
    fn one_marker_per_pivot_cell_with_a_point() {
        let t = crate::sweep::tests::table();
        let v = SweepView::new(&t, None, None).unwrap();
        let page = sweep_html(&v);
        // a: 3 cells with an ok point (128 at level 0 found an overflow); b: 2
        assert_eq!(page.matches("<path class=\"point\"").count(), 5);
        assert!(page.contains("id=\"plot-0\" data-points=\"3\""));
        assert!(page.contains("id=\"plot-1\" data-points=\"2\""));
        // one log-scale box per plot
        assert_eq!(
            page.matches("<input type=\"checkbox\" class=\"logy\"")
                .count(),
            2
        );
        assert_eq!(page, sweep_html(&v), "deterministic");
    }

    #[test]
    fn a_point_tells_where_its_cycles_went() {
        let t = crate::sweep::tests::table();
        let v = SweepView::new(&t, None, None).unwrap();
        let page = sweep_html(&v);
        // point 0: 500 cycles, V busy 300 (60 %), its top stall 150 (30 %)
        assert!(
            page.contains("<title>tiles 64, level 2: 500 cycles\npoint 0: tiles=64 level=2\nV: busy 300 (60.0 %), top stall wait_flag MTE2#0 150 (30.0 %)</title>"),
            "{page}"
        );
        // point 1 names no stall: busy only
        assert!(page.contains("point 1: tiles=64 level=0\nV: busy 300 (75.0 %)</title>"));
    }

    #[test]
    fn failed_points_are_listed_with_their_messages() {
        let t = crate::sweep::tests::table();
        let v = SweepView::new(&t, None, None).unwrap();
        let page = sweep_html(&v);
        assert!(page.contains("<a href=\"#failed\">1 failed point</a>"));
        assert!(page.contains("data-failed=\"1\""));
        assert_eq!(page.matches("<tr class=\"failed\">").count(), 1);
        assert!(page.contains("<tr class=\"failed\"><td>3</td><td>a</td><td class=\"bad\">finding</td><td class=\"text mono\">tiles=128 level=0</td><td class=\"text\"><pre>a.yaml:3:5: ub overflow &lt;needs 2 KiB&gt;</pre></td></tr>"), "{page}");
        // none failed: the section says so, and there is no table
        let mut all_ok = crate::sweep::tests::table();
        all_ok.rows.remove(3);
        let page = sweep_html(&SweepView::new(&all_ok, None, None).unwrap());
        assert!(page.contains("Every point ran <span class=\"ok\">ok</span>."));
        assert!(!page.contains("data-failed=\"") && !page.contains("href=\"#failed\""));
    }

    #[test]
    fn many_failed_points_are_cut_at_the_limit() {
        let mut t = crate::sweep::tests::table();
        let failed = t.rows[3].clone();
        for i in 0..FAILED_SHOWN + 4 {
            let mut r = failed.clone();
            r[0] = (10 + i).to_string();
            t.rows.push(r);
        }
        let page = sweep_html(&SweepView::new(&t, None, None).unwrap());
        assert_eq!(page.matches("<tr class=\"failed\">").count(), FAILED_SHOWN);
        assert!(page.contains(&format!("data-failed=\"{FAILED_SHOWN}\"")));
        // 1 + FAILED_SHOWN + 4 failed in all
        assert!(page.contains("and 5 more: the CSV lists every one."));
    }

    #[test]
    fn cycles_at_the_end_of_u64_are_plotted() {
        let t = crate::sweep::tests::table();
        let v = SweepView::new(&t, None, None).unwrap();
        let best = |cycles| Some(Best { cycles, row: 0 });
        let p = Pivot {
            x: Some(3),
            by: None,
            xs: vec!["64".into(), "128".into()],
            bys: vec![String::new()],
            cells: vec![vec![best(1)], vec![best(u64::MAX)]],
        };
        let html = plot(&v, &p, 0);
        assert_eq!(html.matches("<path class=\"point\"").count(), 2);
        // the linear axis' last tick is below the top; the log axis reaches 10^19
        assert!(html.contains(">10,000,000,000,000,000,000</text>"));
    }

    #[test]
    fn equal_lines_are_named_in_the_legend() {
        let best = |cycles| Some(Best { cycles, row: 0 });
        let p = Pivot {
            x: Some(3),
            by: Some(4),
            xs: vec!["64".into(), "128".into()],
            bys: vec!["2".into(), "1".into(), "0".into(), "3".into()],
            cells: vec![
                vec![best(5), best(5), best(4), None],
                vec![best(9), best(9), best(9), None],
            ],
        };
        // level 1 equals level 2; level 0 differs at 64; level 3 has no point
        assert_eq!(same_as(&p), [None, Some(0), None, None]);
        let t = crate::sweep::tests::table();
        let v = SweepView::new(&t, None, None).unwrap();
        let html = plot(&v, &p, 0);
        assert!(
            html.contains("level 1 (the same cycles as level 2)</li>"),
            "{html}"
        );
        // every series its own dash pattern and marker
        for marker in &MARKERS[..4] {
            assert!(html.contains(marker), "{marker}");
        }
        for dash in &DASHES[1..4] {
            assert!(
                html.contains(&format!("stroke-dasharray=\"{dash}\"")),
                "{dash}"
            );
        }
    }
}
