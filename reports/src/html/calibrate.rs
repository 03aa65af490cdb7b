//! The calibration page (`npusim calibrate --check FILE --html PAGE`): per case its measured
//! and simulated value as two bars on the case's own scale (the cases span microseconds to
//! milliseconds), the table of ratios and verdicts, the busy shares and the notes.

use super::{esc, f2, facts_html, page};
use crate::calibrate::{Calibration, CaseReport, Verdict};

const WIDTH: f64 = 760.0;
/// Room for the case names (left) and the ratio (right).
const LEFT: f64 = 190.0;
const RIGHT: f64 = 90.0;
const ROW: f64 = 40.0;
const BAR: f64 = 13.0;

/// The page: the summary, the bars, the tables.
pub fn calibration_html(cal: &Calibration) -> String {
    let s = cal.summary();
    let mut body = String::from(
        "<header>\n<h1>Calibration <span class=\"sub\">· npusim calibrate</span></h1>\n<dl class=\"facts\">",
    );
    let mut facts = vec![
        ("measurements", cal.file.clone()),
        ("config", cal.config.clone()),
        ("judged cases", s.judged.to_string()),
        ("within tolerance", s.within.to_string()),
        ("outside", s.outside.to_string()),
        ("failed", s.failed.to_string()),
    ];
    if let Some(g) = s.geomean_error {
        facts.push((
            "geometric-mean error",
            if g.is_finite() {
                format!("{:.1} %", g * 100.0)
            } else {
                "infinite".into()
            },
        ));
    }
    if let Some(w) = s.worst {
        facts.push(("worst case", cal.cases[w].name.clone()));
    }
    body.push_str(&facts_html(&facts));
    body.push_str("</dl>\n</header>\n<main>\n");

    body.push_str("<section id=\"calibration\">\n<h2>Measured and simulated</h2>\n");
    body.push_str("<p class=\"note\">Per case, the measured value (grey) and the simulated one (green: within the case's tolerance; red: outside; blue: shown, not judged), both on the scale of the larger of the two: the cases span microseconds to milliseconds. The ratio is simulated / measured. Hover a bar for its value.</p>\n");
    body.push_str(&bars(cal));
    body.push_str(&cases_table(cal));
    body.push_str(&busy_table(cal));
    body.push_str("</section>\n</main>\n");
    page("npusim calibrate", &body)
}

/// One row per case with both values: `<svg class="calib" data-cases=N>` with N `g.case`.
fn bars(cal: &Calibration) -> String {
    let shown: Vec<&CaseReport> = cal
        .cases
        .iter()
        .filter(|c| c.measured_us.is_some() && c.simulated_us().is_some())
        .collect();
    let height = ROW * shown.len() as f64 + 8.0;
    let span = WIDTH - LEFT - RIGHT;
    let mut out = format!(
        "<svg class=\"calib\" data-cases=\"{}\" viewBox=\"0 0 {w} {h}\" width=\"100%\" style=\"max-width:{w}px\" role=\"img\" aria-label=\"measured and simulated value per case\">\n",
        shown.len(),
        w = f2(WIDTH),
        h = f2(height)
    );
    for (i, c) in shown.iter().enumerate() {
        let (m, sim) = (
            c.measured_us.expect("filtered"),
            c.simulated_us().expect("filtered"),
        );
        let top = 4.0 + ROW * i as f64;
        let scale = m.max(sim).max(f64::MIN_POSITIVE);
        let class = match c.verdict() {
            Verdict::Within => "sim within",
            Verdict::Outside | Verdict::Failed => "sim outside",
            Verdict::NotJudged | Verdict::Unmeasured => "sim shown",
        };
        let w_of = |x: f64| f2((x.max(0.0) / scale * span).max(1.0));
        out.push_str(&format!(
            "<g class=\"case\" data-case=\"{name}\"><text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\" dominant-baseline=\"middle\">{name}</text>\
<rect class=\"measured\" x=\"{x}\" y=\"{y1}\" width=\"{wm}\" height=\"{bh}\"><title>measured {mt} us</title></rect>\
<rect class=\"{class}\" x=\"{x}\" y=\"{y2}\" width=\"{ws}\" height=\"{bh}\"><title>simulated {st} us</title></rect>\
<text class=\"dim\" x=\"{rx}\" y=\"{ty}\" dominant-baseline=\"middle\">{ratio}</text></g>\n",
            name = esc(&c.name),
            lx = f2(LEFT - 8.0),
            ty = f2(top + BAR + 1.0),
            x = f2(LEFT),
            y1 = f2(top),
            y2 = f2(top + BAR + 2.0),
            bh = f2(BAR),
            wm = w_of(m),
            ws = w_of(sim),
            mt = format_args!("{m:.3}"),
            st = format_args!("{sim:.3}"),
            rx = f2(WIDTH - RIGHT + 8.0),
            ratio = esc(&format!("× {:.3}", sim / m)),
        ));
    }
    out.push_str("</svg>\n");
    out
}

fn cell(x: Option<f64>, decimals: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

fn verdict_cell(v: Verdict) -> String {
    let class = match v {
        Verdict::Within => "ok",
        Verdict::Outside | Verdict::Failed => "bad",
        Verdict::NotJudged | Verdict::Unmeasured => "dim",
    };
    format!("<td class=\"text {class}\">{}</td>", esc(v.name()))
}

fn cases_table(cal: &Calibration) -> String {
    let mut out = String::from("<h3>Cases</h3>\n<table class=\"summary\"><thead><tr><th>case</th><th>measured µs</th><th>simulated µs</th><th>ratio</th><th>tolerance %</th><th>verdict</th><th>source</th></tr></thead><tbody>\n");
    for c in &cal.cases {
        let note = match &c.outcome {
            crate::calibrate::Outcome::Failed(m) => format!("failed: {m}"),
            _ => c.source.clone().unwrap_or_default(),
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td class=\"text src\">{}</td></tr>\n",
            esc(&c.name),
            cell(c.measured_us, 3),
            cell(c.simulated_us(), 3),
            cell(c.ratio(), 3),
            if c.judged_time() {
                cell(c.tolerance_percent, 1)
            } else {
                "-".into()
            },
            verdict_cell(c.verdict()),
            esc(&note),
        ));
    }
    out.push_str("</tbody></table>\n");
    out
}

fn busy_table(cal: &Calibration) -> String {
    if cal.cases.iter().all(|c| c.busy.is_empty()) {
        return String::new();
    }
    let mut out = String::from("<h3>Busy shares</h3>\n<p class=\"note\">Percent of the run each pipe was busy: the mean over the cores of the type that have the pipe.</p>\n<table class=\"summary\"><thead><tr><th>case</th><th>core</th><th>pipe</th><th>measured %</th><th>simulated %</th><th>difference (points)</th><th>tolerance (points)</th><th>verdict</th></tr></thead><tbody>\n");
    for c in &cal.cases {
        for b in &c.busy {
            out.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>\n",
                esc(&c.name),
                esc(&b.core),
                esc(&b.pipe),
                b.measured_percent,
                cell(b.simulated_percent, 1),
                b.difference_points()
                    .map_or("-".into(), crate::calibrate::signed1),
                if c.judged {
                    cell(b.tolerance_points, 1)
                } else {
                    "-".into()
                },
                verdict_cell(b.verdict(c.judged)),
            ));
        }
    }
    out.push_str("</tbody></table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_and_announces_its_bars() {
        let page = calibration_html(&crate::calibrate::tests::sample());
        // the failed case has no simulated value: 4 rows of bars
        assert!(page.contains("data-cases=\"4\""), "{page}");
        assert_eq!(page.matches("<g class=\"case\"").count(), 4);
        assert!(page.contains("a &lt;source&gt; &amp; more"));
        assert!(!page.contains("<source>"));
        assert!(page.contains("class=\"sim within\""));
        assert!(page.contains("class=\"sim outside\""));
        assert!(page.contains("class=\"sim shown\""));
        assert!(page.contains("failed: deadlock at cycle 5"));
        assert!(page.contains("Content-Security-Policy"));
    }
}
