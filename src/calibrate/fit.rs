//! `npusim calibrate --fit KEY,KEY,... MEASUREMENTS -o FITTED.yaml`: the named config numbers
//! fitted to the judged cases, each within its plausible range ([`super::keys::RANGES`]).
//!
//! The fit minimises the sum over the judged cases of ln(simulated / measured)², the error a
//! ratio of 2 and of 1/2 count alike. The minimiser is argmin's Nelder-Mead (derivative-free:
//! the simulated times are step functions of whole-number config values), on each key's value
//! scaled to [0, 1] over its range: a point outside the range is clamped to it and pays a
//! penalty, so the simplex stays inside. Each distinct set of values is simulated once (the
//! runs are cached), on `-j` workers, with the race checker off (it only watches: the cycles
//! are the same without it).
//!
//! Then, for each judged case, the fit again without that case, from the same start: the
//! case's error there is its leave-one-out error, what the fit predicts for a measurement it
//! was not fitted on. The config is written with the fitted values edited in at their
//! places, each with a comment saying how it was fitted.

use super::keys::{self, Located};
use super::run::{self, RunValue};
use super::spec::What;
use super::Inputs;
use crate::cli::{CalibrateArgs, CheckArgs, RunFormat};
use crate::{output, Exit};
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The error of a case that failed, or whose simulated value is not positive: as if it were
/// e^10 times off, so the fit moves away from it without the sum becoming infinite.
const FAILED: f64 = 10.0;

/// The cost of a point the budget no longer lets the fit simulate.
const OUT_OF_BUDGET: f64 = 1e30;

/// Each key's first step: a tenth of its range.
const STEP: f64 = 0.1;

/// Nelder-Mead runs one fit may chain, each from the best point of the one before.
const RESTARTS: usize = 4;

/// Every case's value (µs, or why it has none) at one set of key values.
type Values = Rc<Vec<Result<f64, String>>>;

/// The fit's state: what it simulates and what it has simulated.
struct Fitter<'a> {
    inputs: &'a Inputs,
    located: Vec<Located>,
    /// The run cases the judged cases need.
    runs: Vec<usize>,
    checks: CheckArgs,
    jobs: usize,
    cache: RefCell<BTreeMap<Vec<i64>, Values>>,
    /// Simulations the current fit may still run.
    budget: Cell<u32>,
    /// Simulations run so far (all fits).
    simulations: Cell<u32>,
}

impl Fitter<'_> {
    /// The whole-number values of the keys at a point of the unit cube (clamped to it).
    fn values_of(&self, u: &[f64]) -> Vec<i64> {
        self.located
            .iter()
            .zip(u)
            .map(|(l, x)| {
                let span = (l.range.max - l.range.min) as f64;
                l.range.min + (x.clamp(0.0, 1.0) * span).round() as i64
            })
            .collect()
    }

    fn unit_of(&self, values: &[i64]) -> Vec<f64> {
        self.located
            .iter()
            .zip(values)
            .map(|(l, v)| (v - l.range.min) as f64 / (l.range.max - l.range.min) as f64)
            .collect()
    }

    /// Every case's value with the keys at `values`: simulated once per distinct `values`;
    /// `None` when it was not simulated yet and the budget is spent.
    fn evaluate(&self, values: &[i64]) -> Option<Values> {
        if let Some(v) = self.cache.borrow().get(values) {
            return Some(v.clone());
        }
        if self.budget.get() == 0 {
            return None;
        }
        self.budget.set(self.budget.get() - 1);
        self.simulations.set(self.simulations.get() + 1);
        let base = &self.inputs.configs[0];
        let text = keys::with_values(&base.source.text, &self.located, values);
        let cases = &self.inputs.measurements.cases;
        let result: Vec<Result<f64, String>> = match sim::load_config(&text, &base.source.name) {
            Ok(config) => {
                let configs = vec![&config; cases.len()];
                let ran = run::run_cases(
                    self.inputs,
                    &self.runs,
                    &configs,
                    &self.checks,
                    self.jobs,
                    None,
                );
                let mut by_case: Vec<Option<RunValue>> = vec![None; cases.len()];
                for (i, v) in self.runs.iter().zip(ran) {
                    by_case[*i] = Some(v);
                }
                run::derive(cases, &by_case)
            }
            // a value the config refuses (a rate of 0 cannot be in a range, but a future key
            // might): every case fails at that point
            Err(e) => vec![Err(e.to_string()); cases.len()],
        };
        let result = Rc::new(result);
        self.cache
            .borrow_mut()
            .insert(values.to_vec(), result.clone());
        Some(result)
    }

    /// ln(simulated / measured) of case `i` in `values`.
    fn log_ratio(&self, values: &[Result<f64, String>], i: usize) -> f64 {
        let measured = self.inputs.measurements.cases[i]
            .measured_us
            .expect("a judged case is measured");
        match &values[i] {
            Ok(s) if *s > 0.0 => (s / measured).ln(),
            _ => FAILED,
        }
    }

    /// Fits the keys to `cases` from the point `start` (key values), with `max_evals`
    /// simulations at most: the fitted values.
    fn fit(&self, cases: &[usize], start: &[i64], max_evals: u32) -> Result<Vec<i64>, String> {
        self.budget.set(max_evals);
        let problem = Problem {
            fitter: self,
            cases: cases.to_vec(),
        };
        let cost = |values: &[i64]| {
            problem
                .cost(&self.unit_of(values))
                .expect("the cost never fails")
        };
        // a simplex collapses along a key whose whole-number steps it cannot resolve while
        // another key still improves the fit; started again from its best point, with full
        // steps, it can move along that key again. Restarts stop when one finds nothing better.
        let mut best = start.to_vec();
        let mut best_cost = cost(&best);
        for _ in 0..RESTARTS {
            let found = self.simplex(cases, &best, max_evals)?;
            let c = cost(&found);
            if c >= best_cost || self.budget.get() == 0 {
                if c < best_cost {
                    best = found;
                }
                break;
            }
            (best, best_cost) = (found, c);
        }
        Ok(best)
    }

    /// One Nelder-Mead run from `start`, each key's first step a tenth of its range.
    fn simplex(&self, cases: &[usize], start: &[i64], max_evals: u32) -> Result<Vec<i64>, String> {
        let u0 = self.unit_of(start);
        let mut vertices = vec![u0.clone()];
        for k in 0..u0.len() {
            let mut v = u0.clone();
            // step inwards: a value at the top of its range steps down
            v[k] += if u0[k] + STEP <= 1.0 { STEP } else { -STEP };
            vertices.push(v);
        }
        let solver = NelderMead::new(vertices)
            .with_sd_tolerance(1e-12)
            .map_err(|e| e.to_string())?;
        let problem = Problem {
            fitter: self,
            cases: cases.to_vec(),
        };
        let result = Executor::new(problem, solver)
            // each iteration simulates at least one new point, or the simplex has collapsed
            // onto points simulated already
            .configure(|s| s.max_iters(u64::from(max_evals) * 2))
            .run()
            .map_err(|e| e.to_string())?;
        let best = result.state().get_best_param().cloned().unwrap_or(u0);
        Ok(self.values_of(&best))
    }
}

/// The fit's objective on some of the judged cases.
struct Problem<'f, 'a> {
    fitter: &'f Fitter<'a>,
    cases: Vec<usize>,
}

impl CostFunction for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, u: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let f = self.fitter;
        // outside the unit cube the values are clamped; the penalty leads the simplex back
        let penalty: f64 = u
            .iter()
            .map(|x| {
                let out = (-x).max(0.0) + (x - 1.0).max(0.0);
                out * out * 1e3
            })
            .sum();
        let Some(values) = f.evaluate(&f.values_of(u)) else {
            return Ok(OUT_OF_BUDGET);
        };
        let sum: f64 = self
            .cases
            .iter()
            .map(|&i| f.log_ratio(&values, i).powi(2))
            .sum();
        Ok(sum + penalty)
    }
}

/// One case's errors: at the start, with every case fitted, and left out of the fit.
struct CaseFit {
    case: usize,
    before: Result<f64, String>,
    fitted: Result<f64, String>,
    left_out: Result<f64, String>,
    /// The values the fit without this case found.
    left_out_values: Vec<i64>,
}

pub fn fit(inputs: &Inputs, keys: &[String], args: &CalibrateArgs) -> Result<(), Exit> {
    let out = args.output.as_deref().expect("clap: --fit requires -o");
    let base = &inputs.configs[0];
    let mut problems = Vec::new();
    let mut located = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        if key.is_empty() {
            problems.push("--fit: an empty key (two commas, or a comma at the end)".to_string());
        } else if keys[..i].contains(key) {
            problems.push(format!("--fit {key}: the key is named twice"));
        } else {
            match keys::locate(&base.source.text, &base.label, key) {
                Ok(l) => located.push(l),
                Err((message, hint)) => {
                    problems.push(format!("--fit {key}: {message} (hint: {hint})"))
                }
            }
        }
    }
    let cases = &inputs.measurements.cases;
    let judged: Vec<usize> = (0..cases.len())
        .filter(|&i| cases[i].judged && cases[i].measured_us.is_some())
        .collect();
    if judged.is_empty() {
        problems.push(format!(
            "{}: no judged case with a measured value: nothing to fit to",
            inputs.file.name
        ));
    }
    let mut runs: Vec<usize> = Vec::new();
    for &i in &judged {
        match cases[i].what {
            What::Run(_) => runs.push(i),
            What::Derived {
                minuend,
                subtrahend,
                ..
            } => runs.extend([minuend, subtrahend]),
        }
    }
    runs.sort_unstable();
    runs.dedup();
    for &i in &runs {
        if inputs.config_of[i] != 0 {
            problems.push(format!(
                "{}: case {} runs on its own config ({}); --fit changes the numbers of --config {} and fits the cases that run on it: drop the case's config",
                inputs.file.name, cases[i].name, inputs.configs[inputs.config_of[i]].label, base.label
            ));
        }
    }
    if !problems.is_empty() {
        for p in &problems {
            err_line!("error: {p}");
        }
        return Err(Exit(2));
    }

    let fitter = Fitter {
        inputs,
        located,
        runs,
        checks: CheckArgs {
            no_race_check: true,
            ..args.checks.clone()
        },
        jobs: super::jobs(args.jobs, judged.len()),
        cache: RefCell::new(BTreeMap::new()),
        budget: Cell::new(0),
        simulations: Cell::new(0),
    };
    let start: Vec<i64> = fitter.located.iter().map(|l| l.value).collect();
    let max_evals = args.max_evals;
    let failed = |e: String| Exit::input(format!("--fit: the minimiser failed: {e}"));
    err_line!(
        "calibrate: fitting {} key{} to {} judged case{} ({} run{} per simulation), then once leaving out each case",
        fitter.located.len(),
        if fitter.located.len() == 1 { "" } else { "s" },
        judged.len(),
        if judged.len() == 1 { "" } else { "s" },
        fitter.runs.len(),
        if fitter.runs.len() == 1 { "" } else { "s" },
    );
    // a fit of the real suite takes minutes: a line on stderr after each fit says how far it is
    let started = std::time::Instant::now();
    let said = |what: &str, values: &[i64]| {
        let shown: Vec<String> = fitter
            .located
            .iter()
            .zip(values)
            .map(|(l, v)| format!("{} {v}", l.key))
            .collect();
        err_line!(
            "calibrate: {what}: {} ({} simulations, {:.1} s){}",
            shown.join(", "),
            fitter.simulations.get(),
            started.elapsed().as_secs_f64(),
            if fitter.budget.get() == 0 {
                format!("; it spent all of --max-evals {max_evals}: raise it for a finer fit")
            } else {
                String::new()
            }
        );
    };
    let fitted = fitter.fit(&judged, &start, max_evals).map_err(failed)?;
    said("fitted on every case", &fitted);
    let at = |values: &[i64]| {
        fitter.budget.set(1);
        fitter.evaluate(values).expect("a budget of one")
    };
    let (v_start, v_fitted) = (at(&start), at(&fitted));
    let mut per_case = Vec::new();
    for &j in &judged {
        let others: Vec<usize> = judged.iter().copied().filter(|&i| i != j).collect();
        // from the config's values, not the full fit's: started there, a key only the left-out
        // case moves would keep the value that case gave it, and the case would look predicted
        let loo = fitter.fit(&others, &start, max_evals).map_err(failed)?;
        said(&format!("without {}", cases[j].name), &loo);
        let v_loo = at(&loo);
        per_case.push(CaseFit {
            case: j,
            before: v_start[j].clone(),
            fitted: v_fitted[j].clone(),
            left_out: v_loo[j].clone(),
            left_out_values: loo,
        });
    }
    err_line!(
        "calibrate: {} simulation{} of the cases",
        fitter.simulations.get(),
        if fitter.simulations.get() == 1 {
            ""
        } else {
            "s"
        }
    );

    let report = FitReport {
        inputs,
        fitter: &fitter,
        keys: &fitter.located,
        start: &start,
        fitted: &fitted,
        cases: &per_case,
        file: &out.display().to_string(),
    };
    let config_text = keys::edit(
        &base.source.text,
        &fitter.located,
        &fitted,
        &report.key_comments(),
    );
    let config_text = format!("{}{config_text}", report.header());
    // the fitted config must load: it is what the user runs next
    if let Err(e) = sim::load_config(&config_text, &out.display().to_string()) {
        return Err(Exit::input(format!(
            "internal: the fitted config does not load (a bug; please report it): {e}"
        )));
    }
    let text = match args.format {
        RunFormat::Text => report.text(),
        RunFormat::Json => crate::pretty(&report.json()),
    };
    output::emit(Some(out), &config_text)?;
    output::emit(None, &text)
}

/// What the fit found, for the report and the config's comments.
struct FitReport<'r, 'a> {
    inputs: &'r Inputs,
    fitter: &'r Fitter<'a>,
    keys: &'r [Located],
    start: &'r [i64],
    fitted: &'r [i64],
    cases: &'r [CaseFit],
    /// The fitted config's path, as given.
    file: &'r str,
}

/// |simulated / measured − 1| in percent, or why there is none.
fn error_text(value: &Result<f64, String>, measured: f64) -> String {
    match value {
        Ok(s) if *s > 0.0 => format!("{:.1} %", (s / measured - 1.0).abs() * 100.0),
        Ok(_) => "not positive".into(),
        Err(_) => "failed".into(),
    }
}

/// exp(mean |ln(simulated / measured)|) − 1 in percent, over `values` (failed: e^10).
fn geomean(f: &Fitter, values: impl Iterator<Item = (usize, Result<f64, String>)>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for (i, v) in values {
        let measured = f.inputs.measurements.cases[i].measured_us.unwrap();
        sum += match &v {
            Ok(s) if *s > 0.0 => (s / measured).ln().abs(),
            _ => FAILED,
        };
        n += 1;
    }
    ((sum / n.max(1) as f64).exp() - 1.0) * 100.0
}

impl FitReport<'_, '_> {
    fn name(&self, i: usize) -> &str {
        &self.inputs.measurements.cases[i].name
    }

    fn measured(&self, i: usize) -> f64 {
        self.inputs.measurements.cases[i].measured_us.unwrap()
    }

    fn case_names(&self) -> String {
        let names: Vec<&str> = self.cases.iter().map(|c| self.name(c.case)).collect();
        names.join(", ")
    }

    fn key_names(&self) -> String {
        let names: Vec<&str> = self.keys.iter().map(|l| l.key.as_str()).collect();
        names.join(", ")
    }

    fn geomeans(&self) -> (f64, f64, f64) {
        let f = self.fitter;
        (
            geomean(f, self.cases.iter().map(|c| (c.case, c.before.clone()))),
            geomean(f, self.cases.iter().map(|c| (c.case, c.fitted.clone()))),
            geomean(f, self.cases.iter().map(|c| (c.case, c.left_out.clone()))),
        )
    }

    /// The comment block at the top of the fitted config: the command, what changed, and every
    /// case's error fitted and left out. No date and no absolute path: the same fit writes the
    /// same bytes.
    fn header(&self) -> String {
        let mut lines = vec![format!(
            "Fitted by `npusim calibrate --fit {} {}` (config {}):",
            self.keys
                .iter()
                .map(|l| l.key.as_str())
                .collect::<Vec<_>>()
                .join(","),
            self.inputs.file.name,
            self.inputs.configs[0].label
        )];
        lines.push(format!(
            "{} judged case{} ({}), minimising the sum of ln(simulated / measured)^2.",
            self.cases.len(),
            if self.cases.len() == 1 { "" } else { "s" },
            self.case_names()
        ));
        for (k, l) in self.keys.iter().enumerate() {
            lines.push(format!(
                "  {}: {} -> {} (range {}..{} {})",
                l.key, self.start[k], self.fitted[k], l.range.min, l.range.max, l.range.unit
            ));
        }
        lines.push("error per case: before / fitted on every case / left out of the fit:".into());
        for c in self.cases {
            let m = self.measured(c.case);
            lines.push(format!(
                "  {}: {} / {} / {}",
                self.name(c.case),
                error_text(&c.before, m),
                error_text(&c.fitted, m),
                error_text(&c.left_out, m)
            ));
        }
        let (b, f, l) = self.geomeans();
        lines.push(format!(
            "geometric-mean error: {b:.1} % before, {f:.1} % fitted, {l:.1} % left out"
        ));
        let mut out: String = lines.iter().map(|l| format!("# {l}\n")).collect();
        out.push_str("#\n");
        out
    }

    /// Per key, the lines of its comment: its old and new value, the fit it came from and the
    /// largest leave-one-out error.
    fn key_comments(&self) -> Vec<Vec<String>> {
        let m = |c: &CaseFit| self.measured(c.case);
        let loo: Vec<String> = self
            .cases
            .iter()
            .map(|c| format!("{} {}", self.name(c.case), error_text(&c.left_out, m(c))))
            .collect();
        self.keys
            .iter()
            .enumerate()
            .map(|(k, l)| {
                vec![
                    format!(
                        "{}: fitted by npusim calibrate --fit {} on {}: {} -> {} (range {}..{} {}); the comment on the line is about the value before the fit",
                        l.key,
                        self.key_names(),
                        self.inputs.file.name,
                        self.start[k],
                        self.fitted[k],
                        l.range.min,
                        l.range.max,
                        l.range.unit
                    ),
                    format!(
                        "fitted on {}; leave-one-out error {}",
                        self.case_names(),
                        loo.join(", ")
                    ),
                ]
            })
            .collect()
    }

    fn text(&self) -> String {
        use reports::table::{Align, Table};
        let mut out = format!(
            "fit: {} key{} on {} judged case{} of {}; {} simulations; wrote {}\n\n",
            self.keys.len(),
            if self.keys.len() == 1 { "" } else { "s" },
            self.cases.len(),
            if self.cases.len() == 1 { "" } else { "s" },
            self.inputs.file.name,
            self.fitter.simulations.get(),
            self.file
        );
        let mut t = Table::new(vec![
            ("key".into(), Align::Left),
            ("range".into(), Align::Right),
            ("unit".into(), Align::Left),
            ("was".into(), Align::Right),
            ("fitted".into(), Align::Right),
        ]);
        for (k, l) in self.keys.iter().enumerate() {
            t.row(vec![
                l.key.clone(),
                format!("{}..{}", l.range.min, l.range.max),
                l.range.unit.into(),
                self.start[k].to_string(),
                self.fitted[k].to_string(),
            ]);
        }
        out.push_str(&t.render(""));
        out.push('\n');
        let mut t = Table::new(vec![
            ("case".into(), Align::Left),
            ("measured us".into(), Align::Right),
            ("before us".into(), Align::Right),
            ("fitted us".into(), Align::Right),
            ("left out us".into(), Align::Right),
            ("error before".into(), Align::Right),
            ("fitted".into(), Align::Right),
            ("left out".into(), Align::Right),
        ]);
        let us = |v: &Result<f64, String>| match v {
            Ok(x) => format!("{x:.3}"),
            Err(_) => "failed".into(),
        };
        for c in self.cases {
            let m = self.measured(c.case);
            t.row(vec![
                self.name(c.case).into(),
                format!("{m:.3}"),
                us(&c.before),
                us(&c.fitted),
                us(&c.left_out),
                error_text(&c.before, m),
                error_text(&c.fitted, m),
                error_text(&c.left_out, m),
            ]);
        }
        out.push_str(&t.render(""));
        let (b, f, l) = self.geomeans();
        out.push_str(&format!(
            "\ngeometric-mean error: {b:.1} % before, {f:.1} % fitted on every case, {l:.1} % left out (each case's error when the fit did not see it)\n"
        ));
        out.push_str("the left-out error is what the fit predicts for a measurement it was not fitted on: check a fitted number against measurements outside the fit before it ships (docs/calibration.md)\n");
        out
    }

    fn json(&self) -> serde_json::Value {
        let v = |x: &Result<f64, String>| match x {
            Ok(s) => json!((s * 10_000.0).round() / 10_000.0),
            Err(_) => serde_json::Value::Null,
        };
        let keys: Vec<serde_json::Value> = self
            .keys
            .iter()
            .enumerate()
            .map(|(k, l)| {
                json!({
                    "key": l.key,
                    "min": l.range.min,
                    "max": l.range.max,
                    "unit": l.range.unit,
                    "was": self.start[k],
                    "fitted": self.fitted[k],
                })
            })
            .collect();
        let cases: Vec<serde_json::Value> = self
            .cases
            .iter()
            .map(|c| {
                json!({
                    "case": self.name(c.case),
                    "measured_us": self.measured(c.case),
                    "before_us": v(&c.before),
                    "fitted_us": v(&c.fitted),
                    "left_out_us": v(&c.left_out),
                    "left_out_values": c.left_out_values,
                })
            })
            .collect();
        let (b, f, l) = self.geomeans();
        let r = |x: f64| (x * 100.0).round() / 100.0;
        json!({
            "schema": reports::SCHEMA,
            "file": self.inputs.file.name,
            "config": self.inputs.configs[0].label,
            "output": self.file,
            "simulations": self.fitter.simulations.get(),
            "keys": keys,
            "cases": cases,
            "geomean_error_percent": { "before": r(b), "fitted": r(f), "left_out": r(l) },
        })
    }
}
