//! `npusim diff A B`: what changed between two runs. Both sides are run documents
//! (`run --format json`, docs/json.md), read back from JSON whether they came from a file or
//! from a run made on the spot, so one code path compares them: the totals, each core type,
//! each pipe and cause (summed over a type's cores), each op of the profile (keyed by its YAML
//! path) and the plan (each buffer's scope, size, offsets, level and the buffers it shares
//! bytes with), and the critical path (its cycles by cause) when both sides have one
//! (`run --critical-path`).

use crate::table::{Align, Table};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The run document's figures a diff reads, taken out of its JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDoc {
    pub kernel: String,
    /// `CONFIG/CORE`, as the document's `config`.
    pub config: String,
    pub total_cycles: u64,
    /// `launch_cost.end_to_end_cycles`; `None` without a launch cost.
    pub end_to_end_cycles: Option<u64>,
    /// `syncs_inserted`: set_flags, wait_flags, barriers (`barrier: all` included).
    pub syncs: [u64; 3],
    /// Hazards found; `None` when the race check did not run.
    pub hazards: Option<u64>,
    pub findings: u64,
    pub deadlock: bool,
    pub stopped: bool,
    pub blocks: u64,
    /// Every core of the launch (`launch.cores`), in launch order.
    pub cores: Vec<CoreDoc>,
    /// The profile's rows, most expensive first; `None` when the run had no `--profile`.
    pub profile: Option<Vec<OpDoc>>,
    /// The plan of every part (a mixed kernel's, from `launch.parts`; else the one `plan`).
    pub plans: Vec<PlanDoc>,
    /// The critical path; `None` when the run had no `--critical-path` (or the document is
    /// older than it). Boxed: most documents have none.
    pub critical: Option<Box<CriticalDoc>>,
}

/// A run document's critical path, as a diff reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriticalDoc {
    /// Its cycles by cause, in the document's order.
    pub by_cause: Vec<(String, u64)>,
    /// Its `paced by` line.
    pub summary: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreDoc {
    /// Its core type (`aiv`, `aic`).
    pub ty: String,
    pub end_cycle: u64,
    pub overlap_cycles: u64,
    pub bank_conflict_cycles: Option<u64>,
    pub pipes: Vec<PipeDoc>,
}

/// One pipe of one core: its cycles by state, `busy` first, then every stall reason in the
/// document's order, `starved` and `idle`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipeDoc {
    pub pipe: String,
    pub states: Vec<(String, u64)>,
}

/// One row of the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpDoc {
    /// Its YAML path, the key rows are matched by.
    pub op: String,
    pub name: String,
    pub kind: String,
    pub pipe: String,
    pub figures: OpFigures,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct OpFigures {
    pub count: u64,
    pub cost: u64,
    pub busy: u64,
    pub issue: u64,
    /// Every stall with the op: its pipe's and S's (`s_held`).
    pub stalled: u64,
    /// The part of `stalled` that S waited to send the op (a `queue_full P`); `None` for a
    /// document written before the profile kept it apart.
    pub s_held: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanDoc {
    /// A mixed kernel's part (`aic`, `aiv`); `None` for a single-type program.
    pub part: Option<String>,
    /// Each scope's used bytes, in scope order.
    pub scopes: Vec<(String, u64)>,
    pub buffers: Vec<BufferDoc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferDoc {
    pub name: String,
    pub scope: String,
    pub bytes: u64,
    pub offsets: Vec<u64>,
    /// How it got its offsets: `sequential`, `fixed`, `inplace`, `2`, `1`, `0`.
    pub level: String,
}

/// Reads a run document, or says every way it is not one, each at its JSON path.
pub fn read_run_document(v: &Value) -> Result<RunDoc, Vec<String>> {
    let mut r = Reader::default();
    if !v.is_object() {
        let what = match v {
            Value::Array(_) => {
                "a list (a comparison, `compare --format json`, is a list of run documents; diff takes one run document a side)"
            }
            _ => "not an object",
        };
        return Err(vec![format!("the document is {what}")]);
    }
    if v.get("total_cycles").is_none() || v.get("launch").is_none() {
        let looks = if v.get("buffers").is_some() && v.get("scopes").is_some() {
            " (it looks like a plan document, `plan --format json`)"
        } else if v.get("problems").is_some() {
            " (it looks like a check document, `check --format json`)"
        } else {
            ""
        };
        return Err(vec![format!(
            "the document has no `total_cycles` or no `launch`: not a run document{looks}"
        )]);
    }
    match v.get("schema").and_then(Value::as_u64) {
        Some(s) if s == u64::from(crate::SCHEMA) => {}
        other => r.problems.push(format!(
            "/schema: {} where this npusim reads schema {}",
            other.map_or("missing or not an integer".to_string(), |s| format!(
                "schema {s}"
            )),
            crate::SCHEMA
        )),
    }
    let kernel = r.string(v, "", "kernel");
    let config = r.string(v, "", "config");
    let total_cycles = r.uint(v, "", "total_cycles");
    let end_to_end_cycles = match v.get("launch_cost") {
        Some(Value::Null) | None => None,
        Some(_) => Some(r.uint(v, "", "launch_cost/end_to_end_cycles")),
    };
    let syncs = [
        r.uint(v, "", "syncs_inserted/set_flags"),
        r.uint(v, "", "syncs_inserted/wait_flags"),
        r.uint(v, "", "syncs_inserted/barriers")
            .saturating_add(r.uint(v, "", "syncs_inserted/barrier_alls")),
    ];
    let hazards = match v.get("hazards") {
        Some(Value::Null) => None,
        _ => Some(r.list(v, "", "hazards").len() as u64),
    };
    let findings = r.list(v, "", "findings").len() as u64;
    let deadlock = !v.get("deadlock").is_none_or(Value::is_null);
    let stopped = !v.get("stopped").is_none_or(Value::is_null);
    let blocks = r.uint(v, "", "launch/blocks");
    let mut cores = Vec::new();
    for (k, c) in r.list(v, "", "launch/cores").iter().enumerate() {
        let at = format!("/launch/cores/{k}");
        let bank = match c.get("bank_conflict_cycles") {
            Some(Value::Null) => None,
            _ => Some(r.uint(c, &at, "bank_conflict_cycles")),
        };
        cores.push(CoreDoc {
            ty: r.string(c, &at, "type"),
            end_cycle: r.uint(c, &at, "end_cycle"),
            overlap_cycles: r.uint(c, &at, "overlap_cycles"),
            bank_conflict_cycles: bank,
            pipes: r.pipes(c, &at),
        });
    }
    if cores.is_empty() && r.problems.is_empty() {
        r.problems
            .push("/launch/cores: empty, where a run has at least one core".into());
    }
    let profile = match v.get("profile") {
        Some(Value::Null) => None,
        _ => Some(
            r.list(v, "", "profile")
                .iter()
                .enumerate()
                .map(|(k, row)| {
                    let at = format!("/profile/{k}");
                    let f = |r: &mut Reader, key: &str| r.uint(row, &at, key);
                    OpDoc {
                        op: r.string(row, &at, "op"),
                        name: r.string(row, &at, "name"),
                        kind: r.string(row, &at, "kind"),
                        pipe: r.string(row, &at, "pipe"),
                        figures: OpFigures {
                            count: f(&mut r, "count"),
                            cost: f(&mut r, "cost"),
                            busy: f(&mut r, "busy"),
                            issue: f(&mut r, "issue"),
                            stalled: f(&mut r, "stalled"),
                            // optional: documents before it have S's waits only in `stalled`
                            s_held: row.get("s_held").map(|v| {
                                v.as_u64().unwrap_or_else(|| {
                                    r.wrong(&at, "s_held", v, "a whole number");
                                    0
                                })
                            }),
                        },
                    }
                })
                .collect(),
        ),
    };
    let critical = match v.get("critical_path") {
        Some(Value::Null) | None => None,
        Some(c) => {
            let by_cause = match r.object(c, "/critical_path", "by_cause") {
                Some(m) => m
                    .keys()
                    .map(|k| {
                        (
                            k.clone(),
                            r.uint(&c["by_cause"], "/critical_path/by_cause", k),
                        )
                    })
                    .collect(),
                None => Vec::new(),
            };
            Some(Box::new(CriticalDoc {
                by_cause,
                summary: r.string(c, "/critical_path", "summary"),
            }))
        }
    };
    let mut plans = Vec::new();
    match v.pointer("/launch/parts") {
        Some(Value::Null) | None => {
            if r.object(v, "", "plan").is_some() {
                plans.push(r.plan(&v["plan"], "/plan", None));
            }
        }
        Some(_) => {
            for (k, p) in r.list(v, "", "launch/parts").iter().enumerate() {
                let at = format!("/launch/parts/{k}");
                let part = r.string(p, &at, "core");
                if r.object(p, &at, "plan").is_some() {
                    plans.push(r.plan(&p["plan"], &format!("{at}/plan"), Some(part)));
                }
            }
        }
    }
    if !r.problems.is_empty() {
        return Err(r.problems);
    }
    Ok(RunDoc {
        kernel,
        config,
        total_cycles,
        end_to_end_cycles,
        syncs,
        hazards,
        findings,
        deadlock,
        stopped,
        blocks,
        cores,
        profile,
        plans,
        critical,
    })
}

/// A typed walk over a JSON document that records every problem at its JSON pointer and goes
/// on with a neutral value, so one pass names them all. Each read takes the object it reads
/// from, that object's pointer in the document (for the message) and the key path below it.
#[derive(Default)]
struct Reader {
    problems: Vec<String>,
}

impl Reader {
    fn at<'v>(&mut self, base: &'v Value, at: &str, key: &str, want: &str) -> Option<&'v Value> {
        let found = base.pointer(&format!("/{key}"));
        if found.is_none() {
            self.problems.push(format!(
                "{at}/{key}: missing, where a run document has {want}"
            ));
        }
        found
    }

    fn wrong(&mut self, at: &str, key: &str, v: &Value, want: &str) {
        self.problems.push(format!(
            "{at}/{key}: {} where a run document has {want}",
            kind(v)
        ));
    }

    fn uint(&mut self, base: &Value, at: &str, key: &str) -> u64 {
        const WANT: &str = "a whole number";
        match self.at(base, at, key, WANT) {
            Some(v) => v.as_u64().unwrap_or_else(|| {
                self.wrong(at, key, v, WANT);
                0
            }),
            None => 0,
        }
    }

    fn string(&mut self, base: &Value, at: &str, key: &str) -> String {
        const WANT: &str = "a string";
        match self.at(base, at, key, WANT) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => {
                self.wrong(at, key, v, WANT);
                String::new()
            }
            None => String::new(),
        }
    }

    fn list<'v>(&mut self, base: &'v Value, at: &str, key: &str) -> &'v [Value] {
        const WANT: &str = "a list";
        match self.at(base, at, key, WANT) {
            Some(Value::Array(a)) => a,
            Some(v) => {
                self.wrong(at, key, v, WANT);
                &[]
            }
            None => &[],
        }
    }

    fn object<'v>(
        &mut self,
        base: &'v Value,
        at: &str,
        key: &str,
    ) -> Option<&'v Map<String, Value>> {
        const WANT: &str = "an object";
        match self.at(base, at, key, WANT)? {
            Value::Object(m) => Some(m),
            v => {
                self.wrong(at, key, v, WANT);
                None
            }
        }
    }

    /// A core's `pipes`; `at` is the core's pointer.
    fn pipes(&mut self, core: &Value, at: &str) -> Vec<PipeDoc> {
        let Some(pipes) = self.object(core, at, "pipes") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, p) in pipes {
            let here = format!("{at}/pipes/{name}");
            let mut states = vec![("busy".to_string(), self.uint(p, &here, "busy"))];
            if let Some(stalls) = self.object(p, &here, "stalls") {
                for (reason, c) in stalls {
                    let cycles = c.as_u64().unwrap_or_else(|| {
                        self.wrong(&format!("{here}/stalls"), reason, c, "a whole number");
                        0
                    });
                    states.push((reason.clone(), cycles));
                }
            }
            for state in ["starved", "idle"] {
                states.push((state.into(), self.uint(p, &here, state)));
            }
            out.push(PipeDoc {
                pipe: name.clone(),
                states,
            });
        }
        out
    }

    /// The plan document `plan`, at pointer `at`.
    fn plan(&mut self, plan: &Value, at: &str, part: Option<String>) -> PlanDoc {
        let mut scopes = Vec::new();
        if let Some(m) = self.object(plan, at, "scopes") {
            for (name, s) in m {
                let used = self.uint(s, &format!("{at}/scopes/{name}"), "used");
                scopes.push((name.clone(), used));
            }
        }
        let mut buffers = Vec::new();
        if let Some(m) = self.object(plan, at, "buffers") {
            for (name, b) in m {
                let here = format!("{at}/buffers/{name}");
                let mut offsets = Vec::new();
                for (k, o) in self.list(b, &here, "offsets").iter().enumerate() {
                    match o.as_u64() {
                        Some(o) => offsets.push(o),
                        None => self.wrong(
                            &format!("{here}/offsets"),
                            &k.to_string(),
                            o,
                            "a whole number",
                        ),
                    }
                }
                // `level` is a string, or the number of the reuse level that placed it
                let level = match b.get("level") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    Some(v) => {
                        self.wrong(&here, "level", v, "a string or a number");
                        String::new()
                    }
                    None => {
                        self.problems.push(format!(
                            "{here}/level: missing, where a run document has a string or a number"
                        ));
                        String::new()
                    }
                };
                buffers.push(BufferDoc {
                    name: name.clone(),
                    scope: self.string(b, &here, "scope"),
                    bytes: self.uint(b, &here, "bytes"),
                    offsets,
                    level,
                });
            }
        }
        PlanDoc {
            part,
            scopes,
            buffers,
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() => "a negative number",
        Value::Number(n) if n.is_f64() => "a number that is not a whole one below 2^64",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A figure on both sides; `None` where a side does not have it (no launch cost, no race
/// check, a pipe or an op only the other side has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figure {
    pub a: Option<u64>,
    pub b: Option<u64>,
}

impl Figure {
    pub fn new(a: Option<u64>, b: Option<u64>) -> Figure {
        Figure { a, b }
    }

    pub fn changed(&self) -> bool {
        self.a != self.b
    }

    /// B − A, when both sides have it (saturating at i64's range: figures are at most 2^62).
    pub fn delta(&self) -> Option<i64> {
        let (a, b) = (self.a?, self.b?);
        let d = i128::from(b) - i128::from(a);
        Some(d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }

    /// B / A, when both sides have it and A is not 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.a?, self.b?) {
            (0, _) => None,
            (a, b) => Some(b as f64 / a as f64),
        }
    }
}

/// A figure of the whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Total {
    /// Its key in the JSON (`total_cycles`).
    pub key: &'static str,
    /// How the text names it.
    pub label: &'static str,
    pub figure: Figure,
}

/// One core type, its cores together.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeChange {
    pub ty: String,
    pub cores: Figure,
    /// The cycle its last core ended at.
    pub end_cycle_max: Figure,
    /// Busy and stalled cycles summed over its cores and pipes.
    pub busy: Figure,
    pub stalled: Figure,
}

/// One state of one pipe of a core type, summed over the type's cores.
#[derive(Clone, Debug, PartialEq)]
pub struct PipeChange {
    pub ty: String,
    pub pipe: String,
    /// `busy`, a stall reason, `starved` or `idle`.
    pub cause: String,
    pub figure: Figure,
}

/// One op of the profile on both sides.
#[derive(Clone, Debug, PartialEq)]
pub struct OpChange {
    pub op: String,
    /// B's name for it (A's when only A has the op).
    pub name: String,
    pub kind: String,
    pub pipe: String,
    pub a: Option<OpFigures>,
    pub b: Option<OpFigures>,
}

impl OpChange {
    pub fn cost(&self) -> Figure {
        Figure::new(self.a.map(|f| f.cost), self.b.map(|f| f.cost))
    }

    /// The part of the cost that S waited to send the op, on each side.
    pub fn s_held(&self) -> Figure {
        Figure::new(self.a.and_then(|f| f.s_held), self.b.and_then(|f| f.s_held))
    }
}

/// A buffer as one side planned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferState {
    pub scope: String,
    pub bytes: u64,
    pub offsets: Vec<u64>,
    pub level: String,
    /// The buffers of its part whose bytes overlap its own (reuse and inplace), by name;
    /// `None` when the plan was too large to pair up (see [`REUSE_PAIRS`]).
    pub shares: Option<Vec<String>>,
}

/// A buffer whose plan changed (or that only one side has).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferChange {
    pub part: Option<String>,
    pub name: String,
    pub a: Option<BufferState>,
    pub b: Option<BufferState>,
}

/// What changed from A to B.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    /// What differs beyond the figures, and what could not be compared.
    pub notes: Vec<String>,
    pub totals: Vec<Total>,
    pub types: Vec<TypeChange>,
    /// Every (type, pipe, cause) either side has, changed or not.
    pub pipes: Vec<PipeChange>,
    /// The ops whose profile rows differ, the largest change of cost first (ties: A's
    /// profile order, then B's); `None` when a side has no profile.
    pub ops: Option<Vec<OpChange>>,
    /// Ops in the two profiles together.
    pub ops_total: usize,
    /// Scopes whose used bytes differ: (part, scope, figure).
    pub scopes: Vec<(Option<String>, String, Figure)>,
    pub buffers: Vec<BufferChange>,
    /// The critical path's cycles by cause (every cause either side has, A's order then B's
    /// others) and the two summaries; `None` when a side has no critical path.
    pub critical: Option<CriticalChange>,
}

/// The critical paths of the two sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriticalChange {
    pub by_cause: Vec<(String, Figure)>,
    pub summaries: (String, String),
}

/// The critical paths' change, when both sides have one.
fn diff_critical(a: &RunDoc, b: &RunDoc) -> Option<CriticalChange> {
    let (a, b) = (a.critical.as_ref()?, b.critical.as_ref()?);
    let (ca, sa, cb, sb) = (&a.by_cause, &a.summary, &b.by_cause, &b.summary);
    let mut causes: Vec<&String> = ca.iter().map(|c| &c.0).collect();
    for (c, _) in cb {
        if !causes.contains(&c) {
            causes.push(c);
        }
    }
    let of =
        |v: &[(String, u64)], c: &String| Some(v.iter().find(|e| &e.0 == c).map_or(0, |e| e.1));
    Some(CriticalChange {
        by_cause: causes
            .into_iter()
            .map(|c| (c.clone(), Figure::new(of(ca, c), of(cb, c))))
            .collect(),
        summaries: (sa.clone(), sb.clone()),
    })
}

impl Diff {
    /// What a diff with no change says is the same, after `total`: the sections compared
    /// (per op only when both sides have a profile).
    pub fn same_what(&self, total: &str) -> String {
        let op = if self.ops.is_some() { " per op," } else { "" };
        if self.critical.is_some() {
            format!("{total}, per core type, per pipe and cause,{op} plan and critical path")
        } else {
            format!("{total}, per core type, per pipe and cause,{op} and plan")
        }
    }

    /// Nothing the two documents both hold differs.
    pub fn same(&self) -> bool {
        self.totals.iter().all(|t| !t.figure.changed())
            && self.types.iter().all(|t| {
                !(t.cores.changed()
                    || t.end_cycle_max.changed()
                    || t.busy.changed()
                    || t.stalled.changed())
            })
            && self.pipes.iter().all(|p| !p.figure.changed())
            && self.ops.as_ref().is_none_or(Vec::is_empty)
            && self.scopes.is_empty()
            && self.buffers.is_empty()
            && self
                .critical
                .as_ref()
                .is_none_or(|c| c.by_cause.iter().all(|(_, f)| !f.changed()))
    }
}

/// The most overlapping slot pairs a plan is searched for before its reuse is left out of
/// the comparison: the pairing is a sweep over the slots by offset, and a plan of many
/// buffers stacked on the same bytes could otherwise pair every slot with every other.
pub const REUSE_PAIRS: usize = 1 << 20;

/// Compares two run documents.
pub fn diff(a: &RunDoc, b: &RunDoc) -> Diff {
    let mut notes = Vec::new();
    if a.kernel != b.kernel {
        notes.push(format!(
            "A runs kernel `{}` and B kernel `{}`: the ops and buffers are matched by their paths and names, which may mean different things",
            a.kernel, b.kernel
        ));
    }
    if a.config != b.config {
        notes.push(format!("A ran on {} and B on {}", a.config, b.config));
    }
    if a.blocks != b.blocks || a.cores.len() != b.cores.len() {
        notes.push(format!(
            "A launched {} block{} ({} core{}) and B {} block{} ({} core{}): per core type the figures are sums over different numbers of cores",
            a.blocks,
            plural(a.blocks),
            a.cores.len(),
            plural(a.cores.len() as u64),
            b.blocks,
            plural(b.blocks),
            b.cores.len(),
            plural(b.cores.len() as u64)
        ));
    }
    for (side, d) in [("A", a), ("B", b)] {
        if d.deadlock {
            notes.push(format!(
                "{side} deadlocked: its figures cover the cycles until then"
            ));
        }
        if d.stopped {
            notes.push(format!(
                "{side} stopped at a limit: its figures cover the cycles until then"
            ));
        }
    }
    let ops = match (&a.profile, &b.profile) {
        (Some(pa), Some(pb)) => Some(diff_ops(pa, pb)),
        _ => {
            let missing: Vec<&str> = [("A", &a.profile), ("B", &b.profile)]
                .iter()
                .filter(|(_, p)| p.is_none())
                .map(|(s, _)| *s)
                .collect();
            notes.push(format!(
                "per op: not compared: {} {} no profile (run with --profile)",
                missing.join(" and "),
                if missing.len() == 1 { "has" } else { "have" }
            ));
            None
        }
    };
    let ops_total = {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for p in [&a.profile, &b.profile].into_iter().flatten() {
            names.extend(p.iter().map(|r| r.op.as_str()));
        }
        names.len()
    };
    let (buffers, scopes, unpaired) = diff_plans(&a.plans, &b.plans);
    if unpaired {
        notes.push(format!(
            "plan: the buffers' sharing is not compared: a plan has more than {REUSE_PAIRS} overlapping slot pairs"
        ));
    }
    Diff {
        notes,
        totals: totals(a, b),
        types: diff_types(a, b),
        pipes: diff_pipes(a, b),
        ops,
        ops_total,
        scopes,
        buffers,
        critical: diff_critical(a, b),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A sum over cores, saturating (48 cores of 2^62 cycles would wrap).
fn sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0, u64::saturating_add)
}

fn totals(a: &RunDoc, b: &RunDoc) -> Vec<Total> {
    let both = |f: &dyn Fn(&RunDoc) -> Option<u64>| Figure::new(f(a), f(b));
    // bank conflicts: the cores' that count them, `None` when no core does (no claim)
    let bank = |d: &RunDoc| {
        let counted: Vec<u64> = d
            .cores
            .iter()
            .filter_map(|c| c.bank_conflict_cycles)
            .collect();
        (!counted.is_empty()).then(|| sum(counted.into_iter()))
    };
    vec![
        Total {
            key: "total_cycles",
            label: "total cycles",
            figure: both(&|d| Some(d.total_cycles)),
        },
        Total {
            key: "end_to_end_cycles",
            label: "end to end",
            figure: both(&|d| d.end_to_end_cycles),
        },
        Total {
            key: "overlap_cycles",
            label: "overlap cycles",
            figure: both(&|d| Some(sum(d.cores.iter().map(|c| c.overlap_cycles)))),
        },
        Total {
            key: "bank_conflict_cycles",
            label: "bank conflicts",
            figure: both(&bank),
        },
        Total {
            key: "set_flags_inserted",
            label: "set_flag inserted",
            figure: both(&|d| Some(d.syncs[0])),
        },
        Total {
            key: "wait_flags_inserted",
            label: "wait_flag inserted",
            figure: both(&|d| Some(d.syncs[1])),
        },
        Total {
            key: "barriers_inserted",
            label: "barriers inserted",
            figure: both(&|d| Some(d.syncs[2])),
        },
        Total {
            key: "hazards",
            label: "hazards",
            figure: both(&|d| d.hazards),
        },
        Total {
            key: "findings",
            label: "findings",
            figure: both(&|d| Some(d.findings)),
        },
    ]
}

/// The core types of both sides, A's in its order, then B's new ones.
fn type_order(a: &RunDoc, b: &RunDoc) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    for c in a.cores.iter().chain(&b.cores) {
        if !types.contains(&c.ty) {
            types.push(c.ty.clone());
        }
    }
    types
}

fn diff_types(a: &RunDoc, b: &RunDoc) -> Vec<TypeChange> {
    let of = |d: &RunDoc, ty: &str| -> Option<[u64; 4]> {
        let cores: Vec<&CoreDoc> = d.cores.iter().filter(|c| c.ty == ty).collect();
        if cores.is_empty() {
            return None;
        }
        let states = || cores.iter().flat_map(|c| &c.pipes).flat_map(|p| &p.states);
        let busy = sum(states().filter(|(s, _)| s == "busy").map(|(_, c)| *c));
        let stalled = sum(states()
            .filter(|(s, _)| !matches!(s.as_str(), "busy" | "starved" | "idle"))
            .map(|(_, c)| *c));
        let end = cores.iter().map(|c| c.end_cycle).max().unwrap_or(0);
        Some([cores.len() as u64, end, busy, stalled])
    };
    type_order(a, b)
        .into_iter()
        .map(|ty| {
            let (fa, fb) = (of(a, &ty), of(b, &ty));
            let fig = |k: usize| Figure::new(fa.map(|f| f[k]), fb.map(|f| f[k]));
            TypeChange {
                cores: fig(0),
                end_cycle_max: fig(1),
                busy: fig(2),
                stalled: fig(3),
                ty,
            }
        })
        .collect()
}

/// Every core type's pipes and states, summed over its cores: keyed in the order A lists them
/// (types by first core, pipes and states by first appearance), B's new ones after.
fn diff_pipes(a: &RunDoc, b: &RunDoc) -> Vec<PipeChange> {
    let mut order: Vec<(String, String, String)> = Vec::new();
    let mut index: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    let mut sums: Vec<[Option<u64>; 2]> = Vec::new();
    for ty in type_order(a, b) {
        for (side, d) in [a, b].into_iter().enumerate() {
            for c in d.cores.iter().filter(|c| c.ty == ty) {
                for p in &c.pipes {
                    for (state, cycles) in &p.states {
                        let key = (ty.clone(), p.pipe.clone(), state.clone());
                        let k = *index.entry(key.clone()).or_insert_with(|| {
                            order.push(key);
                            sums.push([None, None]);
                            sums.len() - 1
                        });
                        let s = &mut sums[k][side];
                        *s = Some(s.unwrap_or(0).saturating_add(*cycles));
                    }
                }
            }
        }
    }
    // a state a side's pipe does not list (a stall reason it never had) is 0 cycles there
    // when that side has the type at all; a type a side lacks stays absent
    let has = |d: &RunDoc, ty: &str| d.cores.iter().any(|c| c.ty == ty);
    // the pipes of a type in pipe order as A lists them: S, V, M, MTE1, MTE2, MTE3, FIX
    let pipe_rank = |p: &str| {
        ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"]
            .iter()
            .position(|q| *q == p)
            .unwrap_or(usize::MAX)
    };
    let mut rows: Vec<(usize, PipeChange)> = order
        .into_iter()
        .zip(sums)
        .enumerate()
        .map(|(k, ((ty, pipe, cause), [sa, sb]))| {
            let fa = sa.or(has(a, &ty).then_some(0));
            let fb = sb.or(has(b, &ty).then_some(0));
            (
                k,
                PipeChange {
                    figure: Figure::new(fa, fb),
                    ty,
                    pipe,
                    cause,
                },
            )
        })
        .collect();
    // stable: within a type and pipe, the states keep their order of first appearance
    let types = type_order(a, b);
    rows.sort_by_key(|(k, r)| {
        (
            types.iter().position(|t| *t == r.ty),
            pipe_rank(&r.pipe),
            r.pipe.clone(),
            state_rank(&r.cause),
            *k,
        )
    });
    rows.into_iter().map(|(_, r)| r).collect()
}

/// `busy` first, the stall reasons, then `starved` and `idle`.
fn state_rank(state: &str) -> u8 {
    match state {
        "busy" => 0,
        "starved" => 2,
        "idle" => 3,
        _ => 1,
    }
}

fn diff_ops(pa: &[OpDoc], pb: &[OpDoc]) -> Vec<OpChange> {
    let mut rows: Vec<OpChange> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (side, profile) in [pa, pb].into_iter().enumerate() {
        for r in profile {
            let k = *index.entry(r.op.as_str()).or_insert_with(|| {
                rows.push(OpChange {
                    op: r.op.clone(),
                    name: r.name.clone(),
                    kind: r.kind.clone(),
                    pipe: r.pipe.clone(),
                    a: None,
                    b: None,
                });
                rows.len() - 1
            });
            let row = &mut rows[k];
            if side == 0 {
                row.a = Some(r.figures);
            } else {
                row.b = Some(r.figures);
                // B is the run the user changed to: its name is the one to look up
                row.name = r.name.clone();
            }
        }
    }
    rows.retain(|r| r.a != r.b);
    // the largest change of cost first; an op only one side has counts its whole cost
    let size = |r: &OpChange| {
        let (a, b) = (r.a.map_or(0, |f| f.cost), r.b.map_or(0, |f| f.cost));
        a.abs_diff(b)
    };
    rows.sort_by_key(|r| std::cmp::Reverse(size(r)));
    rows
}

/// The buffers whose plan changed, the scopes whose used bytes changed, and whether some
/// plan had too many overlapping slots to pair up.
#[allow(clippy::type_complexity)]
fn diff_plans(
    pa: &[PlanDoc],
    pb: &[PlanDoc],
) -> (
    Vec<BufferChange>,
    Vec<(Option<String>, String, Figure)>,
    bool,
) {
    let mut unpaired = false;
    let mut states = |plans: &[PlanDoc]| {
        let mut out: Vec<((Option<String>, String), BufferState)> = Vec::new();
        for p in plans {
            let shares = shares(&p.buffers);
            unpaired |= shares.is_none();
            for (k, b) in p.buffers.iter().enumerate() {
                out.push((
                    (p.part.clone(), b.name.clone()),
                    BufferState {
                        scope: b.scope.clone(),
                        bytes: b.bytes,
                        offsets: b.offsets.clone(),
                        level: b.level.clone(),
                        shares: shares.as_ref().map(|s| s[k].clone()),
                    },
                ));
            }
        }
        out
    };
    let (sa, sb) = (states(pa), states(pb));
    let mut changes: Vec<BufferChange> = Vec::new();
    let mut index: BTreeMap<(Option<String>, String), usize> = BTreeMap::new();
    for (side, list) in [sa, sb].into_iter().enumerate() {
        for ((part, name), state) in list {
            let k = *index
                .entry((part.clone(), name.clone()))
                .or_insert_with(|| {
                    changes.push(BufferChange {
                        part,
                        name,
                        a: None,
                        b: None,
                    });
                    changes.len() - 1
                });
            if side == 0 {
                changes[k].a = Some(state);
            } else {
                changes[k].b = Some(state);
            }
        }
    }
    // a side that could not pair its slots makes no claim about sharing
    if unpaired {
        for c in &mut changes {
            for s in [&mut c.a, &mut c.b].into_iter().flatten() {
                s.shares = None;
            }
        }
    }
    changes.retain(|c| c.a != c.b);

    let mut scopes: Vec<(Option<String>, String, Figure)> = Vec::new();
    for (side, plans) in [pa, pb].into_iter().enumerate() {
        for p in plans {
            for (scope, used) in &p.scopes {
                let k = match scopes
                    .iter()
                    .position(|(pt, s, _)| *pt == p.part && s == scope)
                {
                    Some(k) => k,
                    None => {
                        scopes.push((p.part.clone(), scope.clone(), Figure::new(None, None)));
                        scopes.len() - 1
                    }
                };
                if side == 0 {
                    scopes[k].2.a = Some(*used);
                } else {
                    scopes[k].2.b = Some(*used);
                }
            }
        }
    }
    scopes.retain(|(_, _, f)| f.changed());
    (changes, scopes, unpaired)
}

/// For each buffer of a plan, the other buffers of its scope whose bytes overlap one of its
/// slots, by name in declaration order; `None` past [`REUSE_PAIRS`] overlapping pairs.
fn shares(buffers: &[BufferDoc]) -> Option<Vec<Vec<String>>> {
    // every slot as [start, end) with its buffer, swept by start within each scope
    let mut slots: Vec<(&str, u64, u64, usize)> = Vec::new();
    for (k, b) in buffers.iter().enumerate() {
        for &o in &b.offsets {
            if b.bytes > 0 {
                slots.push((b.scope.as_str(), o, o.saturating_add(b.bytes), k));
            }
        }
    }
    slots.sort_unstable();
    let mut with: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); buffers.len()];
    let mut pairs = 0usize;
    let mut active: Vec<(u64, usize)> = Vec::new();
    let mut scope = "";
    for (s, start, end, k) in slots {
        if s != scope {
            active.clear();
            scope = s;
        }
        active.retain(|&(e, _)| e > start);
        for &(_, j) in &active {
            if j != k {
                pairs += 1;
                if pairs > REUSE_PAIRS {
                    return None;
                }
                with[k].insert(j);
                with[j].insert(k);
            }
        }
        active.push((end, k));
    }
    Some(
        with.into_iter()
            .map(|set| set.into_iter().map(|j| buffers[j].name.clone()).collect())
            .collect(),
    )
}

/// One side of a diff as the outputs name it: where it came from (a file, or a program and
/// the options it ran with) and its kernel and config.
#[derive(Clone, Debug)]
pub struct DiffSide<'a> {
    pub label: String,
    pub doc: &'a RunDoc,
}

/// How many changed ops the text lists.
pub const OPS_SHOWN: usize = 10;

/// Why the critical path is not compared (the JSON's `critical_path` is `null`).
pub const NO_CRITICAL_PATH: &str =
    "critical path: not compared: a side has none (run both with --critical-path)";

/// The critical paths' section of the text: by cause, then both summaries.
fn critical_text(c: &CriticalChange) -> String {
    let mut t = Table::new(vec![
        ("critical path by cause".to_string(), Align::Left),
        ("A".to_string(), Align::Right),
        ("B".to_string(), Align::Right),
        ("delta".to_string(), Align::Right),
    ]);
    for (cause, f) in &c.by_cause {
        t.row(vec![cause.clone(), cell(f.a), cell(f.b), delta_cell(f)]);
    }
    let mut out = t.render("");
    out.push_str(&format!(
        "A {}
B {}
",
        c.summaries.0, c.summaries.1
    ));
    out
}

fn cell(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn delta_cell(f: &Figure) -> String {
    match f.delta() {
        Some(d) if d > 0 => format!("+{d}"),
        Some(d) => d.to_string(),
        None => "-".into(),
    }
}

fn ratio_cell(f: &Figure) -> String {
    f.ratio().map_or("-".into(), |r| format!("{r:.3}x"))
}

fn part_name(part: &Option<String>, name: &str) -> String {
    match part {
        Some(p) => format!("{p}: {name}"),
        None => name.to_string(),
    }
}

fn offsets_text(s: &Option<BufferState>) -> String {
    match s {
        None => "-".into(),
        Some(s) => {
            let o: Vec<String> = s.offsets.iter().map(u64::to_string).collect();
            format!("{} {}x[{}]", s.scope, s.bytes, o.join(", "))
        }
    }
}

fn shares_text(s: &Option<BufferState>) -> String {
    match s {
        None => "-".into(),
        Some(s) => match &s.shares {
            None => "?".into(),
            Some(v) if v.is_empty() => "none".into(),
            Some(v) => v.join(", "),
        },
    }
}

/// The diff as text: the sides, then a line saying there is no change, or every section
/// with what changed.
pub fn diff_text(a: &DiffSide, b: &DiffSide, d: &Diff) -> String {
    let mut out = String::new();
    for (side, s) in [("A", a), ("B", b)] {
        out.push_str(&format!(
            "{side}  {}  (kernel {}, {})\n",
            s.label, s.doc.kernel, s.doc.config
        ));
    }
    out.push('\n');
    if d.same() {
        out.push_str(&format!(
            "no change: A and B have the same {}\n",
            d.same_what(&format!("total ({} cycles)", cell(d.totals[0].figure.a)))
        ));
    }
    for n in &d.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    if d.same() {
        if d.critical.is_none() {
            out.push_str(&format!("{NO_CRITICAL_PATH}\n"));
        }
        return out;
    }
    if !d.notes.is_empty() {
        out.push('\n');
    }
    let figure_columns = |first: &[&str]| {
        let mut c: Vec<(String, Align)> =
            first.iter().map(|h| (h.to_string(), Align::Left)).collect();
        for h in ["A", "B", "delta", "B/A"] {
            c.push((h.into(), Align::Right));
        }
        c
    };
    let figure_cells = |f: &Figure| vec![cell(f.a), cell(f.b), delta_cell(f), ratio_cell(f)];

    let mut t = Table::new(figure_columns(&[""]));
    for total in &d.totals {
        if total.figure.a.is_none() && total.figure.b.is_none() {
            continue;
        }
        let mut row = vec![total.label.to_string()];
        row.extend(figure_cells(&total.figure));
        t.row(row);
    }
    out.push_str(&t.render(""));

    out.push_str("\nby core type (busy and stalled: every pipe of every core of the type):\n");
    let mut t = Table::new({
        let mut c = vec![("type".to_string(), Align::Left)];
        for h in [
            "cores A",
            "cores B",
            "end A",
            "end B",
            "delta",
            "busy A",
            "busy B",
            "delta",
            "stalled A",
            "stalled B",
            "delta",
        ] {
            c.push((h.into(), Align::Right));
        }
        c
    });
    for ty in &d.types {
        t.row(vec![
            ty.ty.clone(),
            cell(ty.cores.a),
            cell(ty.cores.b),
            cell(ty.end_cycle_max.a),
            cell(ty.end_cycle_max.b),
            delta_cell(&ty.end_cycle_max),
            cell(ty.busy.a),
            cell(ty.busy.b),
            delta_cell(&ty.busy),
            cell(ty.stalled.a),
            cell(ty.stalled.b),
            delta_cell(&ty.stalled),
        ]);
    }
    out.push_str(&t.render("  "));

    let changed: Vec<&PipeChange> = d.pipes.iter().filter(|p| p.figure.changed()).collect();
    out.push_str(&format!(
        "\nby pipe and cause (summed over each type's cores; {} of {} rows changed):\n",
        changed.len(),
        d.pipes.len()
    ));
    if !changed.is_empty() {
        let mut t = Table::new(figure_columns(&["type", "pipe", "cause"]));
        for p in changed {
            let mut row = vec![p.ty.clone(), p.pipe.clone(), p.cause.clone()];
            row.extend(figure_cells(&p.figure));
            t.row(row);
        }
        out.push_str(&t.render("  "));
    }

    if let Some(ops) = &d.ops {
        let shown = ops.len().min(OPS_SHOWN);
        out.push_str(&format!(
            "\nby op (the profile's cost: busy + issue + stalled, S held the part of it S waited to send the op; {} of {} ops changed{}):\n",
            ops.len(),
            d.ops_total,
            if ops.len() > shown {
                format!(", the {shown} largest changes")
            } else {
                String::new()
            }
        ));
        if !ops.is_empty() {
            let mut t = Table::new({
                let mut c = figure_columns(&["op"]);
                c.push(("S held A".into(), Align::Right));
                c.push(("S held B".into(), Align::Right));
                c.push(("name".into(), Align::Left));
                c
            });
            for o in &ops[..shown] {
                let mut row = vec![o.op.clone()];
                row.extend(figure_cells(&o.cost()));
                let held = o.s_held();
                row.push(cell(held.a));
                row.push(cell(held.b));
                row.push(o.name.clone());
                t.row(row);
            }
            out.push_str(&t.render("  "));
        }
    }

    out.push_str(&format!(
        "\nplan ({} buffer{} changed):\n",
        d.buffers.len(),
        plural(d.buffers.len() as u64)
    ));
    if !d.scopes.is_empty() {
        let mut t = Table::new(figure_columns(&["scope used bytes"]));
        for (part, scope, f) in &d.scopes {
            let mut row = vec![part_name(part, scope)];
            row.extend(figure_cells(f));
            t.row(row);
        }
        out.push_str(&t.render("  "));
    }
    if !d.buffers.is_empty() {
        let mut t = Table::new(
            [
                "buffer",
                "A slots",
                "B slots",
                "A level",
                "B level",
                "A shares bytes with",
                "B shares bytes with",
            ]
            .iter()
            .map(|h| (h.to_string(), Align::Left))
            .collect(),
        );
        for c in &d.buffers {
            let level =
                |s: &Option<BufferState>| s.as_ref().map_or("-".into(), |s| s.level.clone());
            t.row(vec![
                part_name(&c.part, &c.name),
                offsets_text(&c.a),
                offsets_text(&c.b),
                level(&c.a),
                level(&c.b),
                shares_text(&c.a),
                shares_text(&c.b),
            ]);
        }
        out.push_str(&t.render("  "));
    }
    match &d.critical {
        Some(c) => {
            out.push('\n');
            out.push_str(&critical_text(c));
        }
        None => out.push_str(&format!("\n{NO_CRITICAL_PATH}\n")),
    }
    out
}

fn figure_json(f: &Figure) -> Value {
    json!({
        "a": f.a,
        "b": f.b,
        "delta": f.delta(),
        "ratio": f.ratio().map(crate::round4),
    })
}

fn op_figures_json(f: &Option<OpFigures>) -> Value {
    match f {
        None => Value::Null,
        Some(f) => json!({
            "count": f.count,
            "cost": f.cost,
            "busy": f.busy,
            "issue": f.issue,
            "stalled": f.stalled,
            "s_held": f.s_held,
        }),
    }
}

fn buffer_json(s: &Option<BufferState>) -> Value {
    match s {
        None => Value::Null,
        Some(s) => json!({
            "scope": s.scope,
            "bytes": s.bytes,
            "offsets": s.offsets,
            "level": s.level,
            "shares": s.shares,
        }),
    }
}

/// The diff document (docs/cli.md, "npusim diff").
pub fn diff_json(a: &DiffSide, b: &DiffSide, d: &Diff) -> Value {
    let side = |s: &DiffSide| {
        json!({
            "source": s.label,
            "kernel": s.doc.kernel,
            "config": s.doc.config,
        })
    };
    let mut totals = Map::new();
    for t in &d.totals {
        totals.insert(t.key.into(), figure_json(&t.figure));
    }
    json!({
        "schema": crate::SCHEMA,
        "a": side(a),
        "b": side(b),
        "same": d.same(),
        "notes": d.notes,
        "totals": totals,
        "by_type": d.types.iter().map(|t| json!({
            "type": t.ty,
            "cores": figure_json(&t.cores),
            "end_cycle_max": figure_json(&t.end_cycle_max),
            "busy": figure_json(&t.busy),
            "stalled": figure_json(&t.stalled),
        })).collect::<Vec<_>>(),
        "by_pipe": d.pipes.iter().map(|p| {
            let mut v = json!({ "type": p.ty, "pipe": p.pipe, "cause": p.cause });
            if let (Value::Object(m), Value::Object(f)) = (&mut v, figure_json(&p.figure)) {
                m.extend(f);
            }
            v
        }).collect::<Vec<_>>(),
        "by_op": d.ops.as_ref().map(|ops| ops.iter().map(|o| json!({
            "op": o.op,
            "name": o.name,
            "kind": o.kind,
            "pipe": o.pipe,
            "a": op_figures_json(&o.a),
            "b": op_figures_json(&o.b),
            "cost": figure_json(&o.cost()),
        })).collect::<Vec<_>>()),
        "plan": {
            "scopes": d.scopes.iter().map(|(part, scope, f)| json!({
                "part": part,
                "scope": scope,
                "used": figure_json(f),
            })).collect::<Vec<_>>(),
            "buffers": d.buffers.iter().map(|c| json!({
                "part": c.part,
                "name": c.name,
                "a": buffer_json(&c.a),
                "b": buffer_json(&c.b),
            })).collect::<Vec<_>>(),
        },
        "critical_path": d.critical.as_ref().map_or(Value::Null, |c| json!({
            "by_cause": c.by_cause.iter().map(|(cause, f)| {
                let mut v = figure_json(f);
                v["cause"] = json!(cause);
                v
            }).collect::<Vec<_>>(),
            "summary": {"a": c.summaries.0, "b": c.summaries.1},
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    /// The hand-built vec_add's run document (`run_json`), as JSON.
    fn doc_json() -> Value {
        let (program, plan, result) = (program_db(), plan_db(), result_clean());
        crate::run_json(&config(), &crate::Run::new(&program, &plan, &result))
    }

    fn read(v: &Value) -> RunDoc {
        read_run_document(v).unwrap_or_else(|p| panic!("not read: {p:?}"))
    }

    fn sides<'a>(a: &'a RunDoc, b: &'a RunDoc) -> (DiffSide<'a>, DiffSide<'a>) {
        (
            DiffSide {
                label: "a.json".into(),
                doc: a,
            },
            DiffSide {
                label: "b.json".into(),
                doc: b,
            },
        )
    }

    #[test]
    fn reads_the_run_document_it_is_given() {
        let v = doc_json();
        let d = read(&v);
        let result = result_clean();
        assert_eq!(d.total_cycles, result.total_cycles);
        assert_eq!(d.cores.len(), 1);
        assert_eq!(d.cores[0].ty, "aiv");
        let v_pipe = d.cores[0].pipes.iter().find(|p| p.pipe == "V").unwrap();
        assert_eq!(v_pipe.states[0], ("busy".to_string(), 256));
        // every state of a pipe adds up to the run, as the document promises
        for p in &d.cores[0].pipes {
            let total: u64 = p.states.iter().map(|(_, c)| c).sum();
            assert_eq!(total, result.total_cycles, "{}", p.pipe);
        }
        assert_eq!(d.plans.len(), 1);
        assert_eq!(d.plans[0].buffers.len(), 3);
        assert_eq!(d.plans[0].buffers[1].offsets, vec![32768, 131072]);
        assert_eq!(d.profile, None);
    }

    #[test]
    fn a_document_against_itself_is_no_change() {
        let d = read(&doc_json());
        let diff = diff(&d, &d);
        assert!(diff.same());
        let (a, b) = sides(&d, &d);
        let text = diff_text(&a, &b, &diff);
        assert!(
            text.contains("\nno change: A and B have the same total (1000 cycles)"),
            "{text}"
        );
        // the one thing not compared is said, not hidden
        assert!(
            text.contains("note: per op: not compared: A and B have no profile"),
            "{text}"
        );
        let json = diff_json(&a, &b, &diff);
        assert_eq!(json["same"], true);
        assert_eq!(json["critical_path"], Value::Null);
        assert_eq!(json["totals"]["total_cycles"]["delta"], 0);
    }

    #[test]
    fn critical_paths_are_compared_by_cause_when_both_sides_have_one() {
        let path = |work: u64, flag: Option<u64>, summary: &str| {
            let mut v = doc_json();
            let mut by_cause = serde_json::Map::new();
            by_cause.insert("work".into(), json!(work));
            if let Some(f) = flag {
                by_cause.insert("flag".into(), json!(f));
            }
            v["critical_path"] = json!({"by_cause": by_cause, "summary": summary});
            read(&v)
        };
        let (a, b) = (
            path(900, Some(100), "paced by: V"),
            path(1000, None, "paced by: MTE2"),
        );
        let d = diff(&a, &b);
        // A's causes first, then B's others; a cause a side lacks counts 0 there
        let c = d.critical.as_ref().expect("both have a path");
        assert_eq!(
            c.by_cause,
            vec![
                ("work".to_string(), Figure::new(Some(900), Some(1000))),
                ("flag".to_string(), Figure::new(Some(100), Some(0))),
            ]
        );
        assert!(!d.same());
        let (sa, sb) = sides(&a, &b);
        let text = diff_text(&sa, &sb, &d);
        assert!(text.contains("A paced by: V\nB paced by: MTE2\n"), "{text}");
        let j = diff_json(&sa, &sb, &d);
        assert_eq!(j["critical_path"]["by_cause"][1]["delta"], -100);
        // one side without a path: not compared, and said so
        let none = read(&doc_json());
        assert_eq!(diff(&a, &none).critical, None);
        // a mistyped cause is named by its pointer
        let mut bad = doc_json();
        bad["critical_path"] = json!({"by_cause": {"work": "x"}, "summary": "s"});
        let e = read_run_document(&bad).unwrap_err();
        assert!(
            e.iter().any(|p| p.contains("/critical_path/by_cause/work")),
            "{e:?}"
        );
    }

    #[test]
    fn changed_stalls_and_plan_are_reported_with_their_deltas() {
        let va = doc_json();
        let mut vb = va.clone();
        // B: V waits 100 cycles more on MTE2#0 and its run is 100 cycles longer: every other
        // pipe idles 100 more
        vb["total_cycles"] = json!(1100);
        let core = &mut vb["launch"]["cores"][0];
        core["end_cycle"] = json!(1100);
        for (name, pipe) in core["pipes"].as_object_mut().unwrap() {
            if name == "V" {
                let w = &mut pipe["stalls"]["wait_flag MTE2#0"];
                *w = json!(w.as_u64().unwrap() + 100);
            } else {
                let idle = &mut pipe["idle"];
                *idle = json!(idle.as_u64().unwrap() + 100);
            }
        }
        // and its third buffer moved onto the first one's slots
        let buffers = &mut vb["plan"]["buffers"];
        let third = buffers.as_object().unwrap().keys().nth(2).unwrap().clone();
        let first = buffers.as_object().unwrap().keys().next().unwrap().clone();
        buffers[&third]["offsets"] = json!([0, 98304]);
        buffers[&third]["level"] = json!(2);
        let (a, b) = (read(&va), read(&vb));
        let d = diff(&a, &b);
        assert!(!d.same());
        let total = &d.totals[0];
        assert_eq!((total.figure.a, total.figure.b), (Some(1000), Some(1100)));
        assert_eq!(total.figure.delta(), Some(100));
        assert_eq!(total.figure.ratio(), Some(1.1));
        let changed: Vec<(&str, &str, Option<i64>)> = d
            .pipes
            .iter()
            .filter(|p| p.figure.changed())
            .map(|p| (p.pipe.as_str(), p.cause.as_str(), p.figure.delta()))
            .collect();
        let others = a.cores[0].pipes.iter().filter(|p| p.pipe != "V").count();
        assert_eq!(changed.len(), 1 + others, "{changed:?}");
        assert!(changed.contains(&("V", "wait_flag MTE2#0", Some(100))));
        assert!(changed.contains(&("S", "idle", Some(100))));
        let ty = &d.types[0];
        assert_eq!(ty.end_cycle_max.delta(), Some(100));
        assert_eq!(ty.stalled.delta(), Some(100));
        assert_eq!(ty.busy.delta(), Some(0));
        // the moved buffer changed, and so did the sharing of the one it moved onto
        let names: Vec<&str> = d.buffers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, [first.as_str(), third.as_str()]);
        let moved = &d.buffers[1];
        assert_eq!(moved.a.as_ref().unwrap().shares, Some(vec![]));
        assert_eq!(moved.b.as_ref().unwrap().shares, Some(vec![first.clone()]));
        assert_eq!(moved.b.as_ref().unwrap().level, "2");
        let (sa, sb) = sides(&a, &b);
        let text = diff_text(&sa, &sb, &d);
        let line = text
            .lines()
            .find(|l| l.starts_with("total cycles"))
            .unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            words,
            ["total", "cycles", "1000", "1100", "+100", "1.100x"],
            "{text}"
        );
        assert!(!text.contains("no change"), "{text}");
    }

    fn op(path: &str, cost: u64) -> OpDoc {
        OpDoc {
            op: path.into(),
            name: format!("p.yaml:1:1 {path}"),
            kind: "vadd".into(),
            pipe: "V".into(),
            figures: OpFigures {
                count: 1,
                cost,
                busy: cost,
                issue: 0,
                stalled: 0,
                s_held: Some(0),
            },
        }
    }

    #[test]
    fn an_ops_s_held_cycles_are_read_and_shown_beside_its_cost() {
        // a profile row as `run --profile` writes it: S's wait to send the op is part of
        // `stalled`, and `s_held` says how much
        let row = |stalled: u64, s_held: Option<u64>| {
            let mut r = json!({
                "op": "body[4]", "name": "k.yaml:15:5 set_flag V->MTE3", "line": 15,
                "column": 5, "kind": "set_flag", "pipe": "V", "count": 1,
                "cost": 1 + stalled, "busy": 0, "issue": 1, "stalled": stalled,
            });
            if let Some(h) = s_held {
                r["s_held"] = json!(h);
            }
            r
        };
        let with = |r: Value| {
            let mut v = doc_json();
            v["profile"] = json!([r]);
            read(&v)
        };
        // A: written before the split (no s_held); B: 3 of the pipe's, 25 of S's
        let (a, b) = (with(row(20, None)), with(row(28, Some(25))));
        assert_eq!(a.profile.as_ref().unwrap()[0].figures.s_held, None);
        assert_eq!(b.profile.as_ref().unwrap()[0].figures.s_held, Some(25));
        let d = diff(&a, &b);
        let ops = d.ops.as_ref().unwrap();
        assert_eq!(ops[0].cost().delta(), Some(8), "S held is in the cost once");
        assert_eq!(ops[0].s_held(), Figure::new(None, Some(25)));
        let (sa, sb) = sides(&a, &b);
        let text = diff_text(&sa, &sb, &d);
        let head = text
            .lines()
            .find(|l| l.contains("S held A"))
            .expect("S held columns");
        assert!(head.contains("B/A  S held A  S held B  name"), "{head}");
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("body[4]"))
            .unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            words[..7],
            ["body[4]", "21", "29", "+8", "1.381x", "-", "25"],
            "{line}"
        );
        let j = diff_json(&sa, &sb, &d);
        assert_eq!(j["by_op"][0]["a"]["s_held"], Value::Null);
        assert_eq!(j["by_op"][0]["b"]["s_held"], 25);
        // a value that is not a count is a located problem
        let mut bad = doc_json();
        bad["profile"] = json!([row(5, None)]);
        bad["profile"][0]["s_held"] = json!("many");
        let problems = read_run_document(&bad).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("/profile/0/s_held: ")),
            "{problems:?}"
        );
    }

    #[test]
    fn ops_are_matched_by_path_and_sorted_by_the_size_of_their_change() {
        let a = [op("body[0]", 10), op("body[1]", 50), op("body[2]", 7)];
        let b = [op("body[1]", 20), op("body[0]", 15), op("body[3]", 40)];
        let rows = diff_ops(&a, &b);
        let got: Vec<(&str, Option<i64>)> = rows
            .iter()
            .map(|r| (r.op.as_str(), r.cost().delta()))
            .collect();
        // |−30|, 40 (only B), 7 (only A), 5; body[2] and body[3] have no delta
        assert_eq!(
            got,
            [
                ("body[3]", None),
                ("body[1]", Some(-30)),
                ("body[2]", None),
                ("body[0]", Some(5)),
            ]
        );
    }

    #[test]
    fn shares_pairs_overlapping_slots_within_a_scope() {
        let buf = |name: &str, scope: &str, bytes: u64, offsets: &[u64]| BufferDoc {
            name: name.into(),
            scope: scope.into(),
            bytes,
            offsets: offsets.to_vec(),
            level: "2".into(),
        };
        let buffers = [
            buf("a", "ub", 100, &[0, 200]),
            buf("b", "ub", 100, &[100]),
            buf("c", "ub", 50, &[250]),
            buf("d", "l1", 1000, &[0]),
            // a multi-buffer's own slots do not count
            buf("e", "ub", 10, &[400, 405]),
        ];
        let s = shares(&buffers).unwrap();
        let names = |k: usize| s[k].join(",");
        assert_eq!(names(0), "c");
        assert_eq!(names(1), "");
        assert_eq!(names(2), "a");
        assert_eq!(names(3), "");
        assert_eq!(names(4), "");
    }

    #[test]
    fn not_a_run_document_says_what_it_is_and_every_problem() {
        assert!(read_run_document(&json!([])).unwrap_err()[0].contains("a list (a comparison"));
        let plan = json!({ "schema": 1, "scopes": {}, "buffers": {} });
        assert!(read_run_document(&plan).unwrap_err()[0].contains("plan document"));
        let mut v = doc_json();
        v["total_cycles"] = json!("many");
        v["launch"]["cores"][0]["end_cycle"] = json!(-1);
        v["plan"]["buffers"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap()["bytes"] = Value::Null;
        let problems = read_run_document(&v).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert_eq!(
            problems[0],
            "/total_cycles: a string where a run document has a whole number"
        );
        assert_eq!(
            problems[1],
            "/launch/cores/0/end_cycle: a negative number where a run document has a whole number"
        );
        assert!(
            problems[2].starts_with("/plan/buffers/")
                && problems[2].ends_with("/bytes: null where a run document has a whole number"),
            "{problems:?}"
        );
    }

    #[test]
    fn figures_do_not_wrap() {
        let f = Figure::new(Some(u64::MAX), Some(0));
        assert_eq!(f.delta(), Some(i64::MIN));
        assert_eq!(Figure::new(Some(0), Some(5)).ratio(), None);
        assert_eq!(sum([u64::MAX, 1].into_iter()), u64::MAX);
    }

    #[test]
    fn the_page_escapes_what_came_from_input_and_says_no_change() {
        let d = read(&doc_json());
        let a = DiffSide {
            label: "<script>alert(1)</script>.json".into(),
            doc: &d,
        };
        let page = crate::diff_html(&a, &a, &diff(&d, &d));
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;.json"));
        assert!(page.contains("<p class=\"ok\">No change:"));
        // one script: the page's own
        assert_eq!(page.matches("<script>").count(), 1);
        assert_eq!(page, crate::diff_html(&a, &a, &diff(&d, &d)));
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn pipe() -> impl Strategy<Value = PipeDoc> {
            (
                prop::sample::select(vec!["S", "V", "MTE2"]),
                prop::collection::vec((0u64..3, 0u64..1000), 0..4),
            )
                .prop_map(|(pipe, stalls)| {
                    let mut states = vec![("busy".to_string(), 0)];
                    for (id, cycles) in stalls {
                        let reason = format!("wait_flag MTE2#{id}");
                        if !states.iter().any(|(r, _)| *r == reason) {
                            states.push((reason, cycles));
                        }
                    }
                    states.push(("starved".into(), 3));
                    states.push(("idle".into(), 7));
                    PipeDoc {
                        pipe: pipe.into(),
                        states,
                    }
                })
        }

        fn core() -> impl Strategy<Value = CoreDoc> {
            (
                prop::sample::select(vec!["aic", "aiv"]),
                0u64..10_000,
                prop::collection::vec(pipe(), 1..3),
            )
                .prop_map(|(ty, end, mut pipes)| {
                    pipes.dedup_by(|a, b| a.pipe == b.pipe);
                    CoreDoc {
                        ty: ty.into(),
                        end_cycle: end,
                        overlap_cycles: end / 3,
                        bank_conflict_cycles: (ty == "aiv").then_some(end / 5),
                        pipes,
                    }
                })
        }

        fn doc() -> impl Strategy<Value = RunDoc> {
            (
                prop::collection::vec(core(), 1..4),
                prop::collection::vec((0usize..6, 0u64..500), 0..6),
                prop::collection::vec((0usize..5, 0u64..4, 1u64..64), 0..5),
            )
                .prop_map(|(cores, ops, buffers)| {
                    let total = cores.iter().map(|c| c.end_cycle).max().unwrap_or(0);
                    let mut profile: Vec<OpDoc> = Vec::new();
                    for (k, cost) in ops {
                        let op = format!("body[{k}]");
                        if !profile.iter().any(|r| r.op == op) {
                            profile.push(super::op(&op, cost));
                        }
                    }
                    let mut bufs: Vec<BufferDoc> = Vec::new();
                    for (k, at, bytes) in buffers {
                        let name = format!("b{k}");
                        if !bufs.iter().any(|b| b.name == name) {
                            bufs.push(BufferDoc {
                                name,
                                scope: "ub".into(),
                                bytes,
                                offsets: vec![at * 32],
                                level: "2".into(),
                            });
                        }
                    }
                    RunDoc {
                        kernel: "k".into(),
                        config: "c/aiv".into(),
                        total_cycles: total,
                        end_to_end_cycles: None,
                        syncs: [1, 1, 0],
                        hazards: Some(0),
                        findings: 0,
                        deadlock: false,
                        stopped: false,
                        blocks: 1,
                        cores,
                        profile: Some(profile),
                        plans: vec![PlanDoc {
                            part: None,
                            scopes: vec![("ub".into(), 128)],
                            buffers: bufs,
                        }],
                        critical: None,
                    }
                })
        }

        proptest! {
            #[test]
            fn a_run_against_itself_never_changes(a in doc()) {
                let d = diff(&a, &a);
                prop_assert!(d.same(), "{d:?}");
            }

            #[test]
            fn swapping_the_sides_negates_every_delta(a in doc(), b in doc()) {
                let (ab, ba) = (diff(&a, &b), diff(&b, &a));
                prop_assert_eq!(ab.same(), ba.same());
                prop_assert_eq!(ab.pipes.len(), ba.pipes.len());
                let neg = |d: Option<i64>| d.map(|d| -d);
                for p in &ab.pipes {
                    let q = ba.pipes.iter().find(|q| (&q.ty, &q.pipe, &q.cause) == (&p.ty, &p.pipe, &p.cause));
                    prop_assert!(q.is_some(), "{:?} missing after the swap", p);
                    let q = q.unwrap();
                    prop_assert_eq!(q.figure, Figure::new(p.figure.b, p.figure.a));
                    prop_assert_eq!(neg(p.figure.delta()), q.figure.delta());
                }
                let names = |d: &Diff| d.buffers.iter().map(|c| c.name.clone()).collect::<BTreeSet<_>>();
                prop_assert_eq!(names(&ab), names(&ba));
                let ops = |d: &Diff| d.ops.as_ref().unwrap().iter().map(|o| o.op.clone()).collect::<BTreeSet<_>>();
                prop_assert_eq!(ops(&ab), ops(&ba));
            }

            #[test]
            fn pipe_rows_add_up_to_the_cores_states(a in doc(), b in doc()) {
                let d = diff(&a, &b);
                for (side, doc) in [(0, &a), (1, &b)] {
                    let rows: u64 = d.pipes.iter()
                        .map(|p| if side == 0 { p.figure.a } else { p.figure.b })
                        .map(|v| v.unwrap_or(0))
                        .sum();
                    let cores: u64 = doc.cores.iter().flat_map(|c| &c.pipes).flat_map(|p| &p.states).map(|(_, c)| c).sum();
                    prop_assert_eq!(rows, cores);
                }
            }
        }
    }
}
