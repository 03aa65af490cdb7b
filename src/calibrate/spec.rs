//! The measurements file of `npusim calibrate` (docs/calibration.md, "The measurements file"),
//! read with sim's [`Reader`], so that every problem is reported at once with its YAML path,
//! line and column, like a program's.
//!
//! ```yaml
//! cases:
//!   gemm_6144:
//!     program: gemm_performance.yaml      # relative to this file
//!     params: { m: 6144, k: 6144, n: 6144 }
//!     measured_us: 1506.0
//!     tolerance_percent: 10
//!     busy: { m: { percent: 86.7, tolerance_points: 5 }, mte2: 95.2 }
//!     source: pto-isa GEMMPerformance README
//!   fa_marginal:
//!     difference: [fa_8192, fa_4096]       # (first - second) / divide_by
//!     divide_by: 16
//!     tolerance_percent: 10
//!     source: measured.md §3.1
//! ```

use crate::cli::L2Arg;
use sim::load::reader::{index, join, show, suggest, Reader};
use sim::yaml::{Node, Value};
use sim::Pipe;

/// A measurements file as read.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurements {
    pub cases: Vec<Case>,
}

/// One case: a program run or a quantity derived from two runs, and what was measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub name: String,
    pub what: What,
    /// The measured time (µs) or derived quantity; for a derived case without its own, computed
    /// from its two cases' measured times ([`Case::measured_from_cases`]).
    pub measured_us: Option<f64>,
    pub measured_from_cases: bool,
    /// `false`: shown beside the simulation, never judged or fitted.
    pub judged: bool,
    pub tolerance_percent: Option<f64>,
    pub busy: Vec<Busy>,
    pub source: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum What {
    Run(RunCase),
    /// (`cases[minuend]` − `cases[subtrahend]`) / `divide_by`; both are run cases.
    Derived {
        minuend: usize,
        subtrahend: usize,
        divide_by: f64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunCase {
    /// As written: relative to the measurements file's directory.
    pub program: String,
    pub params: Vec<(String, i64)>,
    pub blocks: Option<u32>,
    /// As written (a built-in name or a file relative to the measurements file); `None`: the
    /// command's `--config`.
    pub config: Option<String>,
    pub l2: L2Arg,
}

/// A measured busy share of one pipe: percent of the run, the mean over the cores (of `core`,
/// when given) that have the pipe.
#[derive(Clone, Debug, PartialEq)]
pub struct Busy {
    /// As written (`m`, `aic.mte2`): the key of the entry.
    pub key: String,
    pub core: Option<String>,
    pub pipe: Pipe,
    pub percent: f64,
    /// `None`: shown, not judged.
    pub tolerance_points: Option<f64>,
}

impl Case {
    pub fn run(&self) -> Option<&RunCase> {
        match &self.what {
            What::Run(r) => Some(r),
            What::Derived { .. } => None,
        }
    }

    /// Its YAML path in the file.
    pub fn path(&self) -> String {
        join("cases", &self.name)
    }
}

const CASE_KEYS: [&str; 12] = [
    "program",
    "params",
    "blocks",
    "config",
    "l2",
    "difference",
    "divide_by",
    "measured_us",
    "judged",
    "tolerance_percent",
    "busy",
    "source",
];

/// Only a case that runs a program has these.
const RUN_KEYS: [&str; 5] = ["params", "blocks", "config", "l2", "busy"];

/// Reads a measurements file; `None` when it has problems (each reported into `r`).
pub fn read(r: &mut Reader, root: &Node) -> Option<Measurements> {
    let before = r.count();
    let f = r.map(root, "", "a measurements file", &["cases"], &[])?;
    let node = f.get("cases")?;
    let entries = r.entries(node, "cases", "the cases (name: case)")?;
    if entries.is_empty() {
        r.error_hint(
            "cases",
            "the measurements file has no cases",
            Some("add a case: a program run or a quantity derived from two runs, with its measured value".into()),
        );
        return None;
    }
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    let mut cases = Vec::with_capacity(entries.len());
    // the derived cases' references, resolved once every case is read
    let mut pending: Vec<(usize, [(String, String); 2])> = Vec::new();
    for (name, node) in entries {
        let path = join("cases", name);
        if !r.name_ok(name, &path) {
            // said already, naming the character
        } else if !valid_name(name) {
            r.error_hint(
                &path,
                format!("`{name}` is not a case name"),
                Some("a case name is letters, digits, `_`, `-` and `.`".into()),
            );
        }
        if let Some((case, refs)) = case(r, name, node, &path) {
            if let Some(refs) = refs {
                pending.push((cases.len(), refs));
            }
            cases.push(case);
        }
    }
    if r.count() > before {
        return None;
    }
    for (at, refs) in pending {
        let mut found = [0usize; 2];
        for (k, (name, p)) in refs.iter().enumerate() {
            match names.iter().position(|n| n == name) {
                None => r.error_hint(
                    p,
                    format!("no case is named `{name}`"),
                    suggest(name, &names).or_else(|| Some("name a case of this file".into())),
                ),
                Some(i) if matches!(cases[i].what, What::Derived { .. }) => r.error_hint(
                    p,
                    format!("`{name}` is a derived case; a difference is of two cases that run a program"),
                    None,
                ),
                Some(i) => found[k] = i,
            }
        }
        if found[0] == found[1] && r.count() == before {
            r.error(
                &refs[1].1,
                format!("a difference of `{}` with itself is 0", refs[1].0),
            );
        }
        if r.count() > before {
            continue;
        }
        let path = cases[at].path();
        let What::Derived {
            minuend,
            subtrahend,
            divide_by,
        } = &mut cases[at].what
        else {
            unreachable!("pending holds derived cases")
        };
        (*minuend, *subtrahend) = (found[0], found[1]);
        let divide_by = *divide_by;
        if cases[at].measured_us.is_none() {
            match (cases[found[0]].measured_us, cases[found[1]].measured_us) {
                (Some(a), Some(b)) if a > b => {
                    cases[at].measured_us = Some((a - b) / divide_by);
                    cases[at].measured_from_cases = true;
                }
                (Some(a), Some(b)) => r.error_hint(
                    &join(&path, "difference"),
                    format!(
                        "the measured difference {} - {} us is not positive",
                        fmt_num(a),
                        fmt_num(b)
                    ),
                    Some("put the case with the larger measured time first".into()),
                ),
                _ => r.error_hint(
                    &path,
                    "this derived case has no measured value: give measured_us, or measured_us to both of its cases",
                    None,
                ),
            }
        }
    }
    // a run nothing compares would be run for nothing: most likely a mistake
    for (i, c) in cases.iter().enumerate() {
        let used = cases.iter().any(|d| match d.what {
            What::Derived {
                minuend,
                subtrahend,
                ..
            } => minuend == i || subtrahend == i,
            What::Run(_) => false,
        });
        if c.run().is_some() && c.measured_us.is_none() && c.busy.is_empty() && !used {
            r.error_hint(
                &c.path(),
                format!("case `{}` has nothing to compare: no measured_us, no busy shares, and no derived case uses it", c.name),
                Some("give it measured_us, or name it in a derived case's difference".into()),
            );
        }
    }
    (r.count() == before).then_some(Measurements { cases })
}

/// A name the outputs can show as it is.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `206.7`, `114`: a number as a person wrote it.
pub fn fmt_num(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The unresolved references of a derived case: each name with its YAML path.
type Refs = [(String, String); 2];

fn case(r: &mut Reader, name: &str, node: &Node, path: &str) -> Option<(Case, Option<Refs>)> {
    let before = r.count();
    let f = r.map(node, path, &format!("case {name}"), &[], &CASE_KEYS)?;
    // a key written short or long (`tolerance`, `measured`): the reader's hint lists every key;
    // name the one meant, and count the key as given so that no second problem follows
    let mut meant: Vec<&str> = Vec::new();
    for (k, _) in f.entries {
        if CASE_KEYS.contains(&k.as_str()) {
            continue;
        }
        let close = CASE_KEYS
            .iter()
            .find(|c| c.starts_with(k.as_str()) || k.starts_with(*c));
        if let Some(c) = close {
            let at = join(path, k);
            if let Some(d) = r.diags.iter_mut().rev().find(|d| d.path == at) {
                d.hint = Some(format!("did you mean \"{c}\"?"));
            }
            meant.push(c);
        }
    }
    let given = |key: &str| f.has(key) || meant.contains(&key);
    let derived = f.has("difference");
    if f.has("program") && derived {
        r.error_hint(
            &f.path("difference"),
            "a case runs a program or derives a quantity from two cases, not both",
            Some("drop program or difference".into()),
        );
        return None;
    } else if !given("program") && !given("difference") {
        r.error_hint(
            path,
            format!("case {name} has neither program nor difference"),
            Some("a case runs a program (program: FILE) or derives a quantity from two cases (difference: [A, B])".into()),
        );
        return None;
    }
    if derived {
        for key in RUN_KEYS {
            if f.has(key) {
                r.error_hint(
                    &f.path(key),
                    format!("{key} is only for a case that runs a program"),
                    Some("a derived case takes difference, divide_by, measured_us, judged, tolerance_percent and source".into()),
                );
            }
        }
    } else if f.has("divide_by") {
        r.error_hint(
            &f.path("divide_by"),
            "divide_by is only for a derived case (difference: [A, B])",
            None,
        );
    }

    let measured_us = f
        .get("measured_us")
        .and_then(|n| positive(r, n, &f.path("measured_us"), "a time in microseconds"));
    let judged = match f.get("judged") {
        Some(n) => r.boolean(n, &f.path("judged")).unwrap_or(true),
        None => true,
    };
    let tolerance_percent = f.get("tolerance_percent").and_then(|n| {
        let p = f.path("tolerance_percent");
        let t = positive(r, n, &p, "a tolerance in percent of the measured value")?;
        if t > 100.0 {
            r.error_hint(
                &p,
                format!(
                    "a tolerance of {} % is more than the measured value itself",
                    fmt_num(t)
                ),
                Some(
                    "tolerance_percent is in percent: 10 means within 10 % of the measured value"
                        .into(),
                ),
            );
            return None;
        }
        Some(t)
    });
    let source = f.get("source").and_then(|n| {
        let s = r.string(n, &f.path("source"), "the measurement's source (text)")?;
        if s.trim().is_empty() {
            r.error(&f.path("source"), "the source is empty");
            return None;
        }
        Some(s.to_string())
    });
    let busy = match f.get("busy") {
        Some(n) => busy(r, n, &f.path("busy"), judged),
        None => Vec::new(),
    };

    let (what, refs) = if derived {
        let p = f.path("difference");
        let refs = f.get("difference").and_then(|n| {
            let items = r.seq(n, &p, "the two cases whose difference this is")?;
            if items.len() != 2 {
                r.error_hint(
                    &p,
                    format!("a difference names 2 cases, found {}", items.len()),
                    Some("difference: [A, B] is (A - B) / divide_by".into()),
                );
                return None;
            }
            let a = r.string(&items[0], &index(&p, 0), "a case name")?;
            let b = r.string(&items[1], &index(&p, 1), "a case name")?;
            Some([(a.to_string(), index(&p, 0)), (b.to_string(), index(&p, 1))])
        });
        let divide_by = match f.get("divide_by") {
            Some(n) => positive(r, n, &f.path("divide_by"), "a positive number").unwrap_or(1.0),
            None => 1.0,
        };
        (
            What::Derived {
                minuend: 0,
                subtrahend: 0,
                divide_by,
            },
            refs,
        )
    } else {
        (What::Run(run_case(r, &f)?), None)
    };

    // a measured_us with a problem of its own is still a measured value here
    let measured = given("measured_us") || derived;
    if judged {
        if measured && tolerance_percent.is_none() && !given("tolerance_percent") {
            r.error_hint(
                path,
                format!("case {name} is judged but has no tolerance_percent"),
                Some("give tolerance_percent (e.g. 10: within 10 % of the measured value), or judged: false to show it without judging".into()),
            );
        }
        if !measured && f.has("tolerance_percent") {
            r.error_hint(
                &f.path("tolerance_percent"),
                "a tolerance without measured_us judges nothing",
                Some("give measured_us, or drop tolerance_percent".into()),
            );
        }
    } else {
        if f.has("tolerance_percent") {
            r.error_hint(
                &f.path("tolerance_percent"),
                "a case with judged: false has no tolerance",
                Some("drop tolerance_percent, or judged: false to judge the case".into()),
            );
        }
        if !measured && busy.is_empty() {
            r.error_hint(
                &f.path("judged"),
                "judged: false on a case with nothing measured",
                Some("judged: false shows a measured value without judging it".into()),
            );
        }
    }
    if (measured || !busy.is_empty()) && source.is_none() && !given("source") {
        r.error_hint(
            path,
            format!("case {name} has a measurement but no source"),
            Some("say where the number comes from: source: \"who measured what, where it is published\"".into()),
        );
    }
    if r.count() > before {
        return None;
    }
    let refs = match (derived, refs) {
        (true, Some(refs)) => Some(refs),
        (true, None) => return None,
        (false, _) => None,
    };
    Some((
        Case {
            name: name.to_string(),
            what,
            measured_us,
            measured_from_cases: false,
            judged,
            tolerance_percent,
            busy,
            source,
        },
        refs,
    ))
}

fn run_case(r: &mut Reader, f: &sim::load::reader::Fields) -> Option<RunCase> {
    let before = r.count();
    let program = f.get("program").and_then(|n| {
        r.string(
            n,
            &f.path("program"),
            "a program file (relative to this file)",
        )
        .map(str::to_string)
    });
    let mut params = Vec::new();
    if let Some(n) = f.get("params") {
        let p = f.path("params");
        if let Some(entries) = r.entries(n, &p, "params (name: integer)") {
            for (name, value) in entries {
                if let Some(v) = r.int(value, &join(&p, name)) {
                    params.push((name.clone(), v));
                }
            }
        }
    }
    let blocks = f
        .get("blocks")
        .and_then(|n| r.u32(n, &f.path("blocks"), true));
    let config = f.get("config").and_then(|n| {
        r.string(
            n,
            &f.path("config"),
            "a built-in config name or a config file",
        )
        .map(str::to_string)
    });
    let l2 = match f.get("l2") {
        None => L2Arg::Cold,
        Some(n) => {
            let p = f.path("l2");
            match r.string(n, &p, "an L2 state (cold or warm)") {
                Some("cold") => L2Arg::Cold,
                Some("warm") => L2Arg::Warm,
                Some(other) => {
                    r.error_hint(
                        &p,
                        format!("unknown L2 state \"{other}\""),
                        suggest(other, &["cold", "warm"]),
                    );
                    L2Arg::Cold
                }
                None => L2Arg::Cold,
            }
        }
    };
    (r.count() == before).then_some(RunCase {
        program: program?,
        params,
        blocks,
        config,
        l2,
    })
}

/// `busy: { PIPE: PERCENT, CORE.PIPE: { percent: P, tolerance_points: T } }`.
fn busy(r: &mut Reader, node: &Node, path: &str, judged: bool) -> Vec<Busy> {
    let Some(entries) = r.entries(node, path, "busy shares (pipe: percent)") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, value) in entries {
        let p = join(path, key);
        let (core, pipe_name) = match key.split_once('.') {
            Some((c, p)) => (Some(c.to_string()), p),
            None => (None, key.as_str()),
        };
        let Some(pipe) = Pipe::parse(pipe_name) else {
            r.error_hint(
                &p,
                format!("`{pipe_name}` is not a pipe"),
                suggest(pipe_name, &Pipe::yaml_names())
                    .map(|h| format!("{h} (a key is PIPE or CORE.PIPE, e.g. m or aic.mte2)")),
            );
            continue;
        };
        let (percent, tolerance_points) = match &value.value {
            Value::Map(_) => {
                let Some(g) = r.map(
                    value,
                    &p,
                    &format!("busy share {key}"),
                    &["percent"],
                    &["tolerance_points"],
                ) else {
                    continue;
                };
                let percent = g
                    .get("percent")
                    .and_then(|n| share(r, n, &g.path("percent")));
                let tol = g.get("tolerance_points").and_then(|n| {
                    positive(
                        r,
                        n,
                        &g.path("tolerance_points"),
                        "a tolerance in percentage points",
                    )
                });
                if !judged && g.has("tolerance_points") {
                    r.error_hint(
                        &g.path("tolerance_points"),
                        "a case with judged: false has no tolerance",
                        None,
                    );
                    continue;
                }
                let (Some(percent), true) = (percent, tol.is_some() || !g.has("tolerance_points"))
                else {
                    continue;
                };
                (percent, tol)
            }
            _ => match share(r, value, &p) {
                Some(v) => (v, None),
                None => continue,
            },
        };
        out.push(Busy {
            key: key.clone(),
            core,
            pipe,
            percent,
            tolerance_points,
        });
    }
    out
}

/// A busy share in percent, 0 to 100.
fn share(r: &mut Reader, node: &Node, path: &str) -> Option<f64> {
    let v = number(r, node, path, "a busy share in percent of the run")?;
    if !(0.0..=100.0).contains(&v) {
        r.error_hint(
            path,
            format!("a busy share of {} % is not between 0 and 100", fmt_num(v)),
            Some("busy shares are percent of the run: 86.7, not 0.867".into()),
        );
        return None;
    }
    Some(v)
}

/// A finite number (an integer or a decimal).
fn number(r: &mut Reader, node: &Node, path: &str, what: &str) -> Option<f64> {
    match &node.value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) if x.is_finite() => Some(*x),
        _ => {
            r.error(path, format!("expected {what}, found {}", show(node)));
            None
        }
    }
}

/// A number above 0.
fn positive(r: &mut Reader, node: &Node, path: &str, what: &str) -> Option<f64> {
    let v = number(r, node, path, what)?;
    if v <= 0.0 {
        r.error(
            path,
            format!(
                "{} is out of range: this value must be positive",
                fmt_num(v)
            ),
        );
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Measurements, sim::LoadError> {
        sim::load::read_document(text, "m.yaml", read)
    }

    /// (path, line, message) of every problem.
    fn problems(text: &str) -> Vec<(String, u32, String)> {
        read_text(text)
            .unwrap_err()
            .diagnostics
            .into_iter()
            .map(|d| (d.path, d.line.unwrap_or(0), d.message))
            .collect()
    }

    #[test]
    fn a_run_and_a_derived_case_read() {
        let m = read_text(
            "cases:
  a:
    program: p.yaml
    params: { n: 4 }
    measured_us: 20
    tolerance_percent: 10
    busy: { m: { percent: 86.7, tolerance_points: 5 }, aic.mte2: 95.2 }
    source: here
  b:
    program: p.yaml
    l2: warm
    blocks: 2
    measured_us: 10.5
    judged: false
    source: there
  d:
    difference: [a, b]
    divide_by: 4
    tolerance_percent: 5
    source: both
",
        )
        .unwrap();
        assert_eq!(m.cases.len(), 3);
        let a = &m.cases[0];
        assert_eq!(a.run().unwrap().params, vec![("n".to_string(), 4)]);
        assert_eq!(a.busy[0].pipe, Pipe::M);
        assert_eq!(a.busy[0].tolerance_points, Some(5.0));
        assert_eq!(a.busy[1].core.as_deref(), Some("aic"));
        assert_eq!(a.busy[1].tolerance_points, None);
        assert_eq!(m.cases[1].run().unwrap().l2, L2Arg::Warm);
        assert!(!m.cases[1].judged);
        let d = &m.cases[2];
        assert_eq!(
            d.what,
            What::Derived {
                minuend: 0,
                subtrahend: 1,
                divide_by: 4.0
            }
        );
        // (20 - 10.5) / 4, from the two cases' measured times
        assert_eq!(d.measured_us, Some(2.375));
        assert!(d.measured_from_cases);
    }

    #[test]
    fn every_problem_is_reported_at_its_place() {
        let text = "cases:
  a:
    program: p.yaml
    measured_us: -3
    tolerance_percent: 300
    busy: { mte9: 50, v: 150 }
    source: x
  b:
    program: p.yaml
    difference: [a, zz]
  c:
    measured_us: 3
  e:
    difference: [a, b, a]
    params: { n: 1 }
    source: x
  f:
    program: p.yaml
    measured_us: 3
  g bad:
    program: p.yaml
    measured_us: 3
    judged: false
    tolerance_percent: 4
    source: s
";
        let got = problems(text);
        let paths: Vec<(&str, u32)> = got.iter().map(|(p, l, _)| (p.as_str(), *l)).collect();
        assert_eq!(
            paths,
            [
                ("cases.a.measured_us", 4),
                ("cases.a.tolerance_percent", 5),
                ("cases.a.busy.mte9", 6),
                ("cases.a.busy.v", 6),
                ("cases.b.difference", 10),
                ("cases.c", 12),
                ("cases.e.params", 15),
                ("cases.e.difference", 14),
                ("cases.e", 14),
                ("cases.f", 18),
                ("cases.f", 18),
                ("cases.g bad", 21),
                ("cases.g bad.tolerance_percent", 24),
            ],
            "{got:#?}"
        );
        let message = |path: &str| &got.iter().find(|(p, _, _)| p == path).unwrap().2;
        assert!(message("cases.a.tolerance_percent").contains("300 %"));
        assert!(message("cases.a.busy.v").contains("150 %"));
        assert!(message("cases.b.difference").contains("not both"));
        assert!(message("cases.c").contains("neither program nor difference"));
        assert!(message("cases.e.difference").contains("2 cases, found 3"));
        assert!(message("cases.g bad").contains("not a case name"));
    }

    #[test]
    fn derived_references_are_checked_once_the_cases_are_read() {
        let got = problems(
            "cases:
  a: { program: p.yaml, measured_us: 5, tolerance_percent: 10, source: s }
  d: { difference: [a, aa], tolerance_percent: 10, source: s }
  e: { difference: [a, d], tolerance_percent: 10, source: s }
",
        );
        assert_eq!(got.len(), 2, "{got:#?}");
        assert_eq!(got[0].0, "cases.d.difference[1]");
        assert!(got[0].2.contains("no case is named `aa`"));
        assert_eq!(got[1].0, "cases.e.difference[1]");
        assert!(got[1].2.contains("derived case"));
    }

    #[test]
    fn a_file_that_is_not_a_measurements_file_is_refused() {
        assert!(problems("- a\n")[0]
            .2
            .contains("expected a measurements file"));
        assert!(problems("cases: {}\n")[0].2.contains("no cases"));
        assert!(problems("case: {}\n")[0].2.contains("unknown key \"case\""));
    }
}
