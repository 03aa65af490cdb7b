//! The sweep page (`npusim sweep --summary FILE --html PAGE`): per program a plot of cycles
//! against one input (`--x`), one line per value of another (`--by`), each point the fewest
//! cycles of the ok points with those inputs; its pivot table below it.

use super::{esc, f2, page, style, thousands};
use crate::sweep::{Pivot, SweepView};

const WIDTH: f64 = 660.0;
const HEIGHT: f64 = 300.0;
/// Room for the y labels (left), the x labels (bottom) and the top.
const LEFT: f64 = 78.0;
const BOTTOM: f64 = 40.0;
const TOP: f64 = 12.0;
const RIGHT: f64 = 16.0;

/// The page: the statuses, the best point per program, then per program its plot and pivot.
pub fn sweep_html(view: &SweepView) -> String {
    let [ok, finding, error, other] = view.statuses();
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
    body.push_str("</dl>\n</header>\n<main>\n");

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
    body.push_str("<p class=\"note\">y = cycles (from 0). Each point is the fewest cycles of the ok points with its inputs, over every other input; a missing point had none. Lines with equal cycles lie on each other (the table below each plot gives every value). Hover a point for its cycles and the best point's index and inputs.</p>\n");
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
    body.push_str("</section>\n</main>\n");
    page("npusim sweep", &body)
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

/// The series' colours, in turn.
const SERIES: [&str; 10] = style::BUFFER_COLOURS;

/// One program's plot: `<svg class="sweep" data-points=N>` with N `<circle class="point">`.
fn plot(view: &SweepView, p: &Pivot, k: usize) -> String {
    let max = p
        .cells
        .iter()
        .flatten()
        .flatten()
        .map(|b| b.cycles)
        .max()
        .unwrap_or(0);
    let s = step(max, 5);
    let top = max.div_ceil(s).max(1) * s;
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let x_of = |i: usize| LEFT + pw * (i as f64 + 0.5) / p.xs.len().max(1) as f64;
    let y_of = |c: u64| TOP + ph * (1.0 - c as f64 / top as f64);
    let points = p.cells.iter().flatten().flatten().count();
    let mut out = format!(
        "<svg class=\"sweep\" id=\"plot-{k}\" data-points=\"{points}\" viewBox=\"0 0 {w} {h}\" width=\"100%\" style=\"max-width:{w}px\" role=\"img\" aria-label=\"cycles against {x}\">\n",
        w = f2(WIDTH),
        h = f2(HEIGHT),
        x = esc(p.x.map_or("", |x| view.name(x)))
    );
    let mut tick = 0;
    while tick <= top {
        let y = f2(y_of(tick));
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\"/><text class=\"dim\" x=\"{}\" y=\"{y}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
            f2(LEFT),
            f2(LEFT + pw),
            f2(LEFT - 6.0),
            thousands(tick)
        ));
        tick += s;
    }
    out.push_str(&format!(
        "<line class=\"axis\" x1=\"{l}\" x2=\"{l}\" y1=\"{t}\" y2=\"{b}\"/><line class=\"axis\" x1=\"{l}\" x2=\"{r}\" y1=\"{b}\" y2=\"{b}\"/>\n",
        l = f2(LEFT),
        r = f2(LEFT + pw),
        t = f2(TOP),
        b = f2(TOP + ph)
    ));
    for (i, xv) in p.xs.iter().enumerate() {
        out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            f2(x_of(i)),
            f2(TOP + ph + 16.0),
            esc(if xv.is_empty() { "-" } else { xv })
        ));
    }
    out.push_str(&format!(
        "<text class=\"dim\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        f2(LEFT + pw / 2.0),
        f2(HEIGHT - 4.0),
        esc(p.x.map_or("", |x| view.name(x)))
    ));
    for (j, by) in p.bys.iter().enumerate() {
        let colour = SERIES[j % SERIES.len()];
        // a line through consecutive points; a missing point breaks it
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (i, row) in p.cells.iter().enumerate() {
            match row[j] {
                Some(b) => runs
                    .last_mut()
                    .expect("one run at least")
                    .push((x_of(i), y_of(b.cycles))),
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| r.len() > 1) {
            let pts: Vec<String> = run
                .iter()
                .map(|(x, y)| format!("{},{}", f2(*x), f2(*y)))
                .collect();
            out.push_str(&format!(
                "<polyline class=\"line\" stroke=\"{colour}\" points=\"{}\"/>\n",
                pts.join(" ")
            ));
        }
        for (i, row) in p.cells.iter().enumerate() {
            if let Some(b) = row[j] {
                let series = match p.by {
                    Some(c) => format!(
                        ", {} {}",
                        view.name(c),
                        if by.is_empty() { "-" } else { by }
                    ),
                    None => String::new(),
                };
                out.push_str(&format!(
                    "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{colour}\"><title>{} {}{series}: {} cycles (point {}: {})</title></circle>\n",
                    f2(x_of(i)),
                    f2(y_of(b.cycles)),
                    esc(p.x.map_or("", |x| view.name(x))),
                    esc(if p.xs[i].is_empty() { "-" } else { &p.xs[i] }),
                    thousands(b.cycles),
                    esc(view.index_of(b.row)),
                    esc(&view.inputs_of(b.row))
                ));
            }
        }
    }
    out.push_str("</svg>\n");
    if let Some(c) = p.by {
        out.push_str("<ul class=\"legend\">");
        for (j, by) in p.bys.iter().enumerate() {
            out.push_str(&format!(
                "<li><span class=\"sw\" style=\"background:{}\"></span>{} {}</li>",
                SERIES[j % SERIES.len()],
                esc(view.name(c)),
                esc(if by.is_empty() { "-" } else { by })
            ));
        }
        out.push_str("</ul>\n");
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
                out.push_str(&format!(
                    "<th>{}</th>",
                    esc(if by.is_empty() { "-" } else { by })
                ));
            }
        }
        None => out.push_str(&format!("<th>{}</th><th>cycles</th>", esc(x))),
    }
    out.push_str("</tr></thead><tbody>\n");
    for (xv, row) in p.xs.iter().zip(&p.cells) {
        out.push_str(&format!(
            "<tr><td>{}</td>",
            esc(if xv.is_empty() { "-" } else { xv })
        ));
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
    fn one_circle_per_pivot_cell_with_a_point() {
        let t = crate::sweep::tests::table();
        let v = SweepView::new(&t, None, None).unwrap();
        let page = sweep_html(&v);
        // a: 3 cells with an ok point (128 at level 0 found an overflow); b: 2
        assert_eq!(page.matches("<circle class=\"point\"").count(), 5);
        assert!(page.contains("id=\"plot-0\" data-points=\"3\""));
        assert!(page.contains("id=\"plot-1\" data-points=\"2\""));
        assert_eq!(page, sweep_html(&v), "deterministic");
    }
}
