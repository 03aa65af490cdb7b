//! A calibration's results (`npusim calibrate --check`, docs/cli.md): each case's measured and
//! simulated value, their ratio and whether it is within the case's tolerance, the busy shares
//! beside the measured ones, the geometric-mean error and the worst case; as text
//! ([`calibration_text`]), as a JSON document ([`calibration_json`], docs/json.md) and as an
//! HTML page ([`crate::calibration_html`]). Every figure is computed here from the values the
//! command collected, so the three cannot disagree.

use crate::round4;
use crate::table::{Align, Table};
use serde_json::{json, Value};

/// A calibration: the measurements file, the config its cases run on unless they name their
/// own, and every case.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The measurements file, as named on the command line.
    pub file: String,
    /// `--config` (the built-in default when not given).
    pub config: String,
    /// Whether the race checker ran beside the cases.
    pub race_check: bool,
    pub cases: Vec<CaseReport>,
}

/// One case of a calibration.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseReport {
    pub name: String,
    pub kind: CaseKind,
    pub source: Option<String>,
    /// Microseconds; for a derived case, the derived quantity.
    pub measured_us: Option<f64>,
    /// A derived case's measured value computed from its two cases' measured times.
    pub measured_from_cases: bool,
    pub judged: bool,
    pub tolerance_percent: Option<f64>,
    pub outcome: Outcome,
    pub busy: Vec<BusyReport>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CaseKind {
    /// A program run as `npusim run` would run it.
    Run {
        program: String,
        params: Vec<(String, i64)>,
        blocks: Option<u32>,
        config: String,
        l2: String,
    },
    /// (`minuend` − `subtrahend`) / `divide_by`, of two run cases' times.
    Derived {
        minuend: String,
        subtrahend: String,
        divide_by: f64,
    },
}

/// What the simulation gave for a case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Microseconds (the derived quantity for a derived case); a run's total cycles and the
    /// race checker's hazards (`None` when it did not run; always `None` for a derived case).
    Ran {
        us: f64,
        cycles: Option<u64>,
        hazards: Option<usize>,
    },
    /// No value: the run failed (an overflow, a deadlock, a limit, a run-time error), or a
    /// case it derives from did. The message says why.
    Failed(String),
}

/// A pipe's measured busy share beside the simulated one.
#[derive(Clone, Debug, PartialEq)]
pub struct BusyReport {
    /// The core type whose cores the share is the mean over (`aic`).
    pub core: String,
    /// The pipe's report name (`MTE2`).
    pub pipe: String,
    pub measured_percent: f64,
    /// `None` when the case did not run.
    pub simulated_percent: Option<f64>,
    /// `None`: shown, not judged.
    pub tolerance_points: Option<f64>,
}

/// Where a case or a busy share stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Within,
    Outside,
    /// Judged, but no simulated value: counts as outside.
    Failed,
    /// Shown beside the simulation, not judged.
    NotJudged,
    /// A run with nothing measured (a derived case uses it).
    Unmeasured,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Within => "within",
            Verdict::Outside => "outside",
            Verdict::Failed => "failed",
            Verdict::NotJudged => "not judged",
            Verdict::Unmeasured => "-",
        }
    }

    /// Whether it keeps `calibrate --check` from exiting 0.
    pub fn fails(self) -> bool {
        matches!(self, Verdict::Outside | Verdict::Failed)
    }
}

impl CaseReport {
    /// The simulated value, when there is one.
    pub fn simulated_us(&self) -> Option<f64> {
        match self.outcome {
            Outcome::Ran { us, .. } => Some(us),
            Outcome::Failed(_) => None,
        }
    }

    /// simulated / measured.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.simulated_us()? / self.measured_us?)
    }

    /// |ln(simulated / measured)|: the case's error as the fit minimises it; infinite when the
    /// simulated value is not positive or missing.
    pub fn log_error(&self) -> Option<f64> {
        self.measured_us?;
        Some(match self.ratio() {
            Some(r) if r > 0.0 => r.ln().abs(),
            _ => f64::INFINITY,
        })
    }

    pub fn verdict(&self) -> Verdict {
        let Some(measured) = self.measured_us else {
            return Verdict::Unmeasured;
        };
        if !self.judged {
            return Verdict::NotJudged;
        }
        let Some(simulated) = self.simulated_us() else {
            return Verdict::Failed;
        };
        let tolerance = self.tolerance_percent.unwrap_or(0.0) / 100.0;
        if (simulated - measured).abs() <= tolerance * measured {
            Verdict::Within
        } else {
            Verdict::Outside
        }
    }

    /// Whether the case's time counts in the summary (and is what `--fit` minimises).
    pub fn judged_time(&self) -> bool {
        self.judged && self.measured_us.is_some()
    }
}

impl BusyReport {
    pub fn difference_points(&self) -> Option<f64> {
        Some(self.simulated_percent? - self.measured_percent)
    }

    pub fn verdict(&self, judged: bool) -> Verdict {
        match (judged, self.tolerance_points) {
            (false, _) | (true, None) => Verdict::NotJudged,
            (true, Some(t)) => match self.difference_points() {
                None => Verdict::Failed,
                Some(d) if d.abs() <= t => Verdict::Within,
                Some(_) => Verdict::Outside,
            },
        }
    }
}

/// The calibration summed up.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Cases whose time is judged.
    pub judged: usize,
    pub within: usize,
    pub outside: usize,
    pub failed: usize,
    /// Busy shares judged, and how many of them are within their tolerance.
    pub busy_judged: usize,
    pub busy_within: usize,
    /// exp(mean |ln(simulated / measured)|) − 1 over the judged cases; `None` without judged
    /// cases, infinite when one failed.
    pub geomean_error: Option<f64>,
    /// The judged case with the largest |ln(simulated / measured)| (the first among equals).
    pub worst: Option<usize>,
    /// Every judged case and busy share within its tolerance: what `--check` exits 0 for.
    pub all_within: bool,
}

impl Calibration {
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            judged: 0,
            within: 0,
            outside: 0,
            failed: 0,
            busy_judged: 0,
            busy_within: 0,
            geomean_error: None,
            worst: None,
            all_within: true,
        };
        let mut sum = 0.0;
        let mut worst: Option<(usize, f64)> = None;
        for (i, c) in self.cases.iter().enumerate() {
            let v = c.verdict();
            s.all_within &= !v.fails();
            if c.judged_time() {
                s.judged += 1;
                match v {
                    Verdict::Within => s.within += 1,
                    Verdict::Outside => s.outside += 1,
                    _ => s.failed += 1,
                }
                let e = c.log_error().unwrap_or(f64::INFINITY);
                sum += e;
                if worst.is_none_or(|(_, w)| e > w) {
                    worst = Some((i, e));
                }
            }
            for b in &c.busy {
                let v = b.verdict(c.judged);
                s.all_within &= !v.fails();
                if v != Verdict::NotJudged {
                    s.busy_judged += 1;
                    s.busy_within += usize::from(v == Verdict::Within);
                }
            }
        }
        if s.judged > 0 {
            s.geomean_error = Some((sum / s.judged as f64).exp() - 1.0);
        }
        s.worst = worst.map(|(i, _)| i);
        s
    }
}

/// `206.700`: microseconds with 3 decimals.
fn us(x: f64) -> String {
    format!("{x:.3}")
}

/// A number as written in the measurements file: `10`, `86.7`.
fn plain(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `+4.7`, `-16.7`: percentage points with a sign, and no `-0.0`.
pub(crate) fn signed1(d: f64) -> String {
    let r = (d * 10.0).round() / 10.0;
    format!("{:+.1}", if r == 0.0 { 0.0 } else { r })
}

/// `12.3 %`, or `inf` for an error that is not finite.
fn error_percent(e: f64) -> String {
    if e.is_finite() {
        format!("{:.1} %", e * 100.0)
    } else {
        "infinite".into()
    }
}

/// The text report.
pub fn calibration_text(cal: &Calibration) -> String {
    let mut out = format!(
        "calibrate: {} on {}, race check {}\n\n",
        cal.file,
        cal.config,
        if cal.race_check { "on" } else { "off" }
    );
    let mut t = Table::new(vec![
        ("case".into(), Align::Left),
        ("kind".into(), Align::Left),
        ("measured us".into(), Align::Right),
        ("simulated us".into(), Align::Right),
        ("ratio".into(), Align::Right),
        ("tolerance".into(), Align::Right),
        ("verdict".into(), Align::Left),
    ]);
    for c in &cal.cases {
        t.row(vec![
            c.name.clone(),
            match c.kind {
                CaseKind::Run { .. } => "run",
                CaseKind::Derived { .. } => "derived",
            }
            .into(),
            c.measured_us.map_or("-".into(), us),
            c.simulated_us().map_or("-".into(), us),
            c.ratio().map_or("-".into(), |r| format!("{r:.3}")),
            match (c.judged_time(), c.tolerance_percent) {
                (true, Some(t)) => format!("±{} %", plain(t)),
                _ => "-".into(),
            },
            c.verdict().name().into(),
        ]);
    }
    out.push_str(&t.render(""));

    if cal.cases.iter().any(|c| !c.busy.is_empty()) {
        out.push_str(
            "\nbusy shares (percent of the run; the mean over the cores of the type that have the pipe):\n",
        );
        let mut t = Table::new(vec![
            ("case".into(), Align::Left),
            ("core".into(), Align::Left),
            ("pipe".into(), Align::Left),
            ("measured".into(), Align::Right),
            ("simulated".into(), Align::Right),
            ("difference".into(), Align::Right),
            ("tolerance".into(), Align::Right),
            ("verdict".into(), Align::Left),
        ]);
        for c in &cal.cases {
            for b in &c.busy {
                t.row(vec![
                    c.name.clone(),
                    b.core.clone(),
                    b.pipe.clone(),
                    format!("{:.1}", b.measured_percent),
                    b.simulated_percent
                        .map_or("-".into(), |s| format!("{s:.1}")),
                    b.difference_points().map_or("-".into(), signed1),
                    match (c.judged, b.tolerance_points) {
                        (true, Some(t)) => format!("±{} pts", plain(t)),
                        _ => "-".into(),
                    },
                    b.verdict(c.judged).name().into(),
                ]);
            }
        }
        out.push_str(&t.render(""));
    }

    let s = cal.summary();
    out.push('\n');
    out.push_str(&format!(
        "{} judged case{}: {} within tolerance, {} outside, {} failed",
        s.judged,
        if s.judged == 1 { "" } else { "s" },
        s.within,
        s.outside,
        s.failed
    ));
    if s.busy_judged > 0 {
        out.push_str(&format!(
            "; {} of {} judged busy share{} within tolerance",
            s.busy_within,
            s.busy_judged,
            if s.busy_judged == 1 { "" } else { "s" }
        ));
    }
    out.push('\n');
    if let Some(g) = s.geomean_error {
        out.push_str(&format!(
            "geometric-mean error {} (exp(mean |ln(simulated / measured)|) - 1 over the judged cases)\n",
            error_percent(g)
        ));
    }
    if let Some(w) = s.worst {
        let c = &cal.cases[w];
        out.push_str(&format!("worst case: {}: {}\n", c.name, worst_text(c)));
    }
    let notes = notes(cal);
    if !notes.is_empty() {
        out.push_str("\nnotes:\n");
        for n in notes {
            out.push_str(&format!("  {n}\n"));
        }
    }
    out
}

/// `simulated 0.001 us against 20.500 us measured (ratio 0.000)`, or why there is no value.
fn worst_text(c: &CaseReport) -> String {
    match (&c.outcome, c.measured_us) {
        (Outcome::Failed(m), _) => format!("failed: {m}"),
        (Outcome::Ran { us: s, .. }, Some(m)) => format!(
            "simulated {} us against {} us measured (ratio {:.3})",
            us(*s),
            us(m),
            s / m
        ),
        (Outcome::Ran { .. }, None) => "not measured".into(),
    }
}

/// One line per thing a reader should know beside the tables: how a derived case is derived,
/// failures, hazards.
fn notes(cal: &Calibration) -> Vec<String> {
    let mut notes = Vec::new();
    for c in &cal.cases {
        if let CaseKind::Derived {
            minuend,
            subtrahend,
            divide_by,
        } = &c.kind
        {
            notes.push(format!(
                "{} = ({minuend} - {subtrahend}) / {}{}",
                c.name,
                plain(*divide_by),
                if c.measured_from_cases {
                    ", measured from the two cases' measured times"
                } else {
                    ""
                }
            ));
        }
        match &c.outcome {
            Outcome::Failed(m) => {
                notes.push(format!("{}: failed: {}", c.name, m.replace('\n', "; ")))
            }
            Outcome::Ran {
                hazards: Some(n), ..
            } if *n > 0 => notes.push(format!(
                "{}: the race check found {n} hazard{} (`npusim run` of the case lists {}); a hazard does not change the cycles",
                c.name,
                if *n == 1 { "" } else { "s" },
                if *n == 1 { "it" } else { "them" }
            )),
            Outcome::Ran { .. } => {}
        }
    }
    notes
}

/// A number for JSON: rounded to 4 decimals; `null` when it is not finite.
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(round4(x))
    } else {
        Value::Null
    }
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, num)
}

/// The calibration document (docs/json.md, "The calibration document").
pub fn calibration_json(cal: &Calibration) -> Value {
    let cases: Vec<Value> = cal.cases.iter().map(case_json).collect();
    let s = cal.summary();
    json!({
        "schema": crate::SCHEMA,
        "file": cal.file,
        "config": cal.config,
        "race_check": cal.race_check,
        "cases": cases,
        "summary": {
            "judged": s.judged,
            "within": s.within,
            "outside": s.outside,
            "failed": s.failed,
            "busy_judged": s.busy_judged,
            "busy_within": s.busy_within,
            "geomean_error_percent": opt(s.geomean_error.map(|g| g * 100.0)),
            "worst": s.worst.map(|w| &cal.cases[w].name),
            "all_within": s.all_within,
        },
    })
}

fn case_json(c: &CaseReport) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("name".into(), json!(c.name));
    match &c.kind {
        CaseKind::Run {
            program,
            params,
            blocks,
            config,
            l2,
        } => {
            o.insert("kind".into(), json!("run"));
            o.insert("program".into(), json!(program));
            let params: serde_json::Map<String, Value> =
                params.iter().map(|(n, v)| (n.clone(), json!(v))).collect();
            o.insert("params".into(), Value::Object(params));
            o.insert("blocks".into(), json!(blocks));
            o.insert("config".into(), json!(config));
            o.insert("l2".into(), json!(l2));
        }
        CaseKind::Derived {
            minuend,
            subtrahend,
            divide_by,
        } => {
            o.insert("kind".into(), json!("derived"));
            o.insert("difference".into(), json!([minuend, subtrahend]));
            o.insert("divide_by".into(), num(*divide_by));
        }
    }
    o.insert("source".into(), json!(c.source));
    o.insert("judged".into(), json!(c.judged));
    o.insert("measured_us".into(), opt(c.measured_us));
    o.insert("measured_from_cases".into(), json!(c.measured_from_cases));
    o.insert("tolerance_percent".into(), opt(c.tolerance_percent));
    let (status, message, cycles, hazards) = match &c.outcome {
        Outcome::Ran {
            cycles, hazards, ..
        } => ("ok", None, *cycles, *hazards),
        Outcome::Failed(m) => ("failed", Some(m.as_str()), None, None),
    };
    o.insert("status".into(), json!(status));
    o.insert("message".into(), json!(message));
    o.insert("simulated_us".into(), opt(c.simulated_us()));
    o.insert("total_cycles".into(), json!(cycles));
    o.insert("ratio".into(), opt(c.ratio()));
    o.insert(
        "error_percent".into(),
        opt(c.ratio().map(|r| (r - 1.0) * 100.0)),
    );
    o.insert("verdict".into(), json!(c.verdict().name()));
    o.insert("hazards".into(), json!(hazards));
    let busy: Vec<Value> = c
        .busy
        .iter()
        .map(|b| {
            json!({
                "core": b.core,
                "pipe": b.pipe,
                "measured_percent": num(b.measured_percent),
                "simulated_percent": opt(b.simulated_percent),
                "difference_points": opt(b.difference_points()),
                "tolerance_points": opt(b.tolerance_points),
                "verdict": b.verdict(c.judged).name(),
            })
        })
        .collect();
    o.insert("busy".into(), Value::Array(busy));
    Value::Object(o)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A calibration of every kind of case: within, outside, not judged, failed, derived.
    pub(crate) fn sample() -> Calibration {
        let run = |program: &str| CaseKind::Run {
            program: program.into(),
            params: vec![("n".into(), 4)],
            blocks: None,
            config: "ascend910b".into(),
            l2: "cold".into(),
        };
        let case = |name: &str, kind, measured, tol, outcome| CaseReport {
            name: name.into(),
            kind,
            source: Some("a <source> & more".into()),
            measured_us: measured,
            measured_from_cases: false,
            judged: true,
            tolerance_percent: tol,
            outcome,
            busy: Vec::new(),
        };
        let ran = |us, cycles| Outcome::Ran {
            us,
            cycles: Some(cycles),
            hazards: Some(0),
        };
        let mut within = case(
            "within",
            run("a.yaml"),
            Some(100.0),
            Some(10.0),
            ran(105.0, 189_000),
        );
        within.busy = vec![
            BusyReport {
                core: "aic".into(),
                pipe: "M".into(),
                measured_percent: 86.7,
                simulated_percent: Some(70.0),
                tolerance_points: Some(5.0),
            },
            BusyReport {
                core: "aic".into(),
                pipe: "MTE2".into(),
                measured_percent: 95.2,
                simulated_percent: Some(99.9),
                tolerance_points: None,
            },
        ];
        let mut shown = case("shown", run("b.yaml"), Some(50.0), None, ran(20.0, 36_000));
        shown.judged = false;
        let mut derived = case(
            "derived",
            CaseKind::Derived {
                minuend: "within".into(),
                subtrahend: "shown".into(),
                divide_by: 16.0,
            },
            Some(3.125),
            Some(10.0),
            Outcome::Ran {
                us: 85.0 / 16.0,
                cycles: None,
                hazards: None,
            },
        );
        derived.measured_from_cases = true;
        Calibration {
            file: "m.yaml".into(),
            config: "ascend910b".into(),
            race_check: true,
            cases: vec![
                within,
                shown,
                case(
                    "outside",
                    run("c.yaml"),
                    Some(10.0),
                    Some(10.0),
                    ran(5.0, 9_000),
                ),
                derived,
                case(
                    "failed",
                    run("d.yaml"),
                    Some(1.0),
                    Some(10.0),
                    Outcome::Failed("deadlock at cycle 5".into()),
                ),
            ],
        }
    }

    #[test]
    fn verdicts_and_the_summary() {
        let cal = sample();
        let v: Vec<Verdict> = cal.cases.iter().map(CaseReport::verdict).collect();
        assert_eq!(
            v,
            [
                Verdict::Within,
                Verdict::NotJudged,
                Verdict::Outside,
                Verdict::Outside,
                Verdict::Failed
            ]
        );
        assert_eq!(cal.cases[0].busy[0].verdict(true), Verdict::Outside);
        assert_eq!(cal.cases[0].busy[1].verdict(true), Verdict::NotJudged);
        let s = cal.summary();
        assert_eq!((s.judged, s.within, s.outside, s.failed), (4, 1, 2, 1));
        assert_eq!((s.busy_judged, s.busy_within), (1, 0));
        // a failed case is the worst, and makes the mean error infinite
        assert_eq!(s.worst, Some(4));
        assert_eq!(s.geomean_error, Some(f64::INFINITY));
        assert!(!s.all_within);
    }

    #[test]
    fn the_geometric_mean_error_of_ratios_2_and_a_half_is_100_percent() {
        let mut cal = sample();
        cal.cases.truncate(3);
        cal.cases[0].outcome = Outcome::Ran {
            us: 200.0,
            cycles: None,
            hazards: None,
        };
        // ratios 2 and 0.5: |ln| = ln 2 each, exp(ln 2) - 1 = 1
        let s = cal.summary();
        assert!((s.geomean_error.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(s.worst, Some(0), "the first among equals");
    }

    #[test]
    fn text_and_json_say_the_same() {
        let cal = sample();
        let text = calibration_text(&cal);
        assert!(
            text.contains("within   run          100.000       105.000  1.050      ±10 %  within"),
            "{text}"
        );
        assert!(text.contains("±10 %"), "{text}");
        assert!(
            text.contains("worst case: failed: failed: deadlock at cycle 5"),
            "{text}"
        );
        assert!(
            text.contains("derived = (within - shown) / 16, measured from"),
            "{text}"
        );
        let doc = calibration_json(&cal);
        assert_eq!(doc["schema"], 1);
        assert_eq!(doc["cases"][0]["ratio"], 1.05);
        assert_eq!(doc["cases"][0]["busy"][0]["difference_points"], -16.7);
        assert_eq!(doc["cases"][3]["kind"], "derived");
        assert_eq!(doc["cases"][3]["total_cycles"], Value::Null);
        assert_eq!(doc["cases"][4]["status"], "failed");
        assert_eq!(doc["summary"]["geomean_error_percent"], Value::Null);
        assert_eq!(doc["summary"]["worst"], "failed");
        assert_eq!(doc["summary"]["all_within"], false);
    }
}
