//! The diff page (`npusim diff --html`): the sections of the text diff as tables, each
//! change's delta coloured where lower is better (cycles, stalls, costs).

use super::{esc, facts_html, page, thousands};
use crate::diff::{BufferState, Diff, DiffSide, Figure, NO_CRITICAL_PATH, OPS_SHOWN};

/// How many changed ops the page lists (the JSON has every one).
const OPS_ON_PAGE: usize = 50;

fn num(v: Option<u64>) -> String {
    v.map_or("–".into(), thousands)
}

/// A delta cell; `lower_better` colours a rise red and a fall green.
fn delta(f: &Figure, lower_better: bool) -> String {
    match f.delta() {
        None => "<td>–</td>".into(),
        Some(0) => "<td>0</td>".into(),
        Some(d) => {
            let class = match (lower_better, d > 0) {
                (false, _) => "",
                (true, true) => " class=\"bad\"",
                (true, false) => " class=\"ok\"",
            };
            let sign = if d > 0 { "+" } else { "−" };
            format!("<td{class}>{sign}{}</td>", thousands(d.unsigned_abs()))
        }
    }
}

fn figure_cells(f: &Figure, lower_better: bool) -> String {
    format!(
        "<td>{}</td><td>{}</td>{}<td>{}</td>",
        num(f.a),
        num(f.b),
        delta(f, lower_better),
        f.ratio().map_or("–".into(), |r| format!("{r:.3}×"))
    )
}

const FIGURE_HEAD: &str = "<th>A</th><th>B</th><th>delta</th><th>B/A</th>";

fn buffer_cell(s: &Option<BufferState>) -> String {
    match s {
        None => {
            "<td class=\"text\">–</td><td class=\"text\">–</td><td class=\"text\">–</td>".into()
        }
        Some(s) => {
            let offsets: Vec<String> = s.offsets.iter().map(|o| thousands(*o)).collect();
            let shares = match &s.shares {
                None => "not compared".to_string(),
                Some(v) if v.is_empty() => "none".into(),
                Some(v) => v.join(", "),
            };
            format!(
                "<td class=\"text mono\">{} {} B × [{}]</td><td class=\"text\">{}</td><td class=\"text mono\">{}</td>",
                esc(&s.scope),
                thousands(s.bytes),
                offsets.join(", "),
                esc(&s.level),
                esc(&shares)
            )
        }
    }
}

/// The diff as one self-contained page.
pub fn diff_html(a: &DiffSide, b: &DiffSide, d: &Diff) -> String {
    let mut body = String::from("<header>\n");
    body.push_str(&format!(
        "<h1>{} <span class=\"sub\">· npusim diff</span></h1>\n<dl class=\"facts\">",
        esc(&b.doc.kernel)
    ));
    let facts = vec![
        (
            "A",
            format!("{} ({}, {})", a.label, a.doc.kernel, a.doc.config),
        ),
        (
            "B",
            format!("{} ({}, {})", b.label, b.doc.kernel, b.doc.config),
        ),
    ];
    body.push_str(&facts_html(&facts));
    body.push_str("</dl>\n");
    if d.same() {
        body.push_str(&format!(
            "<p class=\"ok\">No change: A and B have the same {}.</p>\n",
            esc(&d.same_what("total"))
        ));
    }
    for n in &d.notes {
        body.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
    }
    body.push_str("</header>\n<main>\n");

    body.push_str("<section id=\"totals\">\n<h2>Totals</h2>\n<table class=\"summary\">\n");
    body.push_str(&format!("<tr><th></th>{FIGURE_HEAD}</tr>\n"));
    for t in &d.totals {
        if t.figure.a.is_none() && t.figure.b.is_none() {
            continue;
        }
        let lower_better = !matches!(
            t.key,
            "overlap_cycles" | "set_flags_inserted" | "wait_flags_inserted" | "barriers_inserted"
        );
        body.push_str(&format!(
            "<tr><td>{}</td>{}</tr>\n",
            esc(t.label),
            figure_cells(&t.figure, lower_better)
        ));
    }
    body.push_str("</table>\n</section>\n");

    body.push_str("<section id=\"types\">\n<h2>By core type</h2>\n<p class=\"note\">Busy and stalled: every pipe of every core of the type, added up; end: the cycle the type's last core ended.</p>\n<table class=\"summary\">\n");
    body.push_str("<tr><th>type</th><th>what</th>");
    body.push_str(FIGURE_HEAD);
    body.push_str("</tr>\n");
    for t in &d.types {
        for (what, f, lower) in [
            ("cores", &t.cores, false),
            ("end cycle", &t.end_cycle_max, true),
            ("busy", &t.busy, false),
            ("stalled", &t.stalled, true),
        ] {
            body.push_str(&format!(
                "<tr><td>{}</td><td class=\"text\">{what}</td>{}</tr>\n",
                esc(&t.ty),
                figure_cells(f, lower)
            ));
        }
    }
    body.push_str("</table>\n</section>\n");

    let changed: Vec<_> = d.pipes.iter().filter(|p| p.figure.changed()).collect();
    body.push_str(&format!(
        "<section id=\"pipes\">\n<h2>By pipe and cause</h2>\n<p class=\"note\">Summed over each type's cores; {} of {} rows changed (the JSON lists every row).</p>\n",
        changed.len(),
        d.pipes.len()
    ));
    if !changed.is_empty() {
        body.push_str("<table class=\"summary\">\n<tr><th>type</th><th>pipe</th><th>cause</th>");
        body.push_str(FIGURE_HEAD);
        body.push_str("</tr>\n");
        for p in changed {
            let lower = !matches!(p.cause.as_str(), "busy" | "idle");
            body.push_str(&format!(
                "<tr><td>{}</td><td class=\"text\">{}</td><td class=\"text mono\">{}</td>{}</tr>\n",
                esc(&p.ty),
                esc(&p.pipe),
                esc(&p.cause),
                figure_cells(&p.figure, lower)
            ));
        }
        body.push_str("</table>\n");
    }
    body.push_str("</section>\n");

    body.push_str("<section id=\"ops\">\n<h2>By op</h2>\n");
    match &d.ops {
        None => body.push_str(
            "<p class=\"note\">Not compared: a side has no profile (run with --profile).</p>\n",
        ),
        Some(ops) => {
            let shown = ops.len().min(OPS_ON_PAGE.max(OPS_SHOWN));
            body.push_str(&format!(
                "<p class=\"note\">The profile's cost (busy + issue + stalled; S held: the part of it S waited to send the op) of each op whose row changed, the largest change first: {shown} of {} changed ops (of {}).</p>\n",
                ops.len(),
                d.ops_total
            ));
            if shown > 0 {
                body.push_str("<table class=\"summary\">\n<tr><th>op</th>");
                body.push_str(FIGURE_HEAD);
                body.push_str("<th>S held A</th><th>S held B</th><th>name</th></tr>\n");
                for o in &ops[..shown] {
                    let held = o.s_held();
                    body.push_str(&format!(
                        "<tr><td class=\"mono\">{}</td>{}<td>{}</td><td>{}</td><td class=\"text mono\">{}</td></tr>\n",
                        esc(&o.op),
                        figure_cells(&o.cost(), true),
                        num(held.a),
                        num(held.b),
                        esc(&o.name)
                    ));
                }
                body.push_str("</table>\n");
            }
        }
    }
    body.push_str("</section>\n");

    body.push_str(&format!(
        "<section id=\"plan\">\n<h2>Plan</h2>\n<p class=\"note\">{} buffer{} changed: slots (scope, bytes, offsets), how each got its offsets, and the buffers whose bytes overlap its own.</p>\n",
        d.buffers.len(),
        if d.buffers.len() == 1 { "" } else { "s" }
    ));
    if !d.scopes.is_empty() {
        body.push_str("<table class=\"summary\">\n<tr><th>scope used bytes</th>");
        body.push_str(FIGURE_HEAD);
        body.push_str("</tr>\n");
        for (part, scope, f) in &d.scopes {
            let name = part
                .as_ref()
                .map_or(scope.clone(), |p| format!("{p}: {scope}"));
            body.push_str(&format!(
                "<tr><td>{}</td>{}</tr>\n",
                esc(&name),
                figure_cells(f, true)
            ));
        }
        body.push_str("</table>\n");
    }
    if !d.buffers.is_empty() {
        body.push_str("<table class=\"summary\">\n<tr><th>buffer</th><th>A slots</th><th>A level</th><th>A shares bytes with</th><th>B slots</th><th>B level</th><th>B shares bytes with</th></tr>\n");
        for c in &d.buffers {
            let name = c
                .part
                .as_ref()
                .map_or(c.name.clone(), |p| format!("{p}: {}", c.name));
            body.push_str(&format!(
                "<tr><td class=\"mono\">{}</td>{}{}</tr>\n",
                esc(&name),
                buffer_cell(&c.a),
                buffer_cell(&c.b)
            ));
        }
        body.push_str("</table>\n");
    }
    body.push_str("</section>\n");
    match &d.critical {
        None => body.push_str(&format!(
            "<section id=\"critical-path\">\n<h2>Critical path</h2>\n<p class=\"note\">{}</p>\n</section>\n</main>\n",
            esc(NO_CRITICAL_PATH.trim_start_matches("critical path: "))
        )),
        Some(c) => {
            // the two paths by cause, then their summaries
            body.push_str("<section id=\"critical-path\">\n<h2>Critical path</h2>\n<table>\n<tr><th>cause</th><th>A</th><th>B</th></tr>\n");
            for (cause, f) in &c.by_cause {
                let n = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
                body.push_str(&format!(
                    "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                    esc(cause),
                    n(f.a),
                    n(f.b)
                ));
            }
            body.push_str(&format!(
                "</table>\n<p>A {}</p>\n<p>B {}</p>\n</section>\n</main>\n",
                esc(&c.summaries.0),
                esc(&c.summaries.1)
            ));
        }
    }
    page(&format!("npusim diff: {}", b.doc.kernel), &body)
}
