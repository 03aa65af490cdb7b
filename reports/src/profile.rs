//! The per-op profile (`run --profile`): for every static op (YAML path), how often it ran,
//! the cycles its pipe was busy with it, the cycles S spent sending it, and the cycles a pipe
//! stalled with it at the head, by cause; sorted by cost. It answers "which op should I
//! change", where the run report answers "which pipe".
//!
//! Built from the engine's spans ([`sim::engine::Span`]), so its figures reconcile exactly
//! with the run report: over all rows, busy + issue = the pipes' busy cycles added up, and the
//! stalls add up to the pipes' stalls, cause by cause. In a launch of many cores an op's row
//! sums what every core that runs it did (a mixed kernel's two parts have ops of their own,
//! their paths prefixed `aic.` / `aiv.`), so the rows add up to the pipes of every core.

use serde_json::{json, Map, Value};
use sim::engine::{Activity, Issue, Observer, Span, Stall};
use sim::program::{OpKind, Program};
use sim::{Config, OpId, Pipe};

/// Collects the profile while the engine runs: dense per-op counters, no strings.
#[derive(Clone, Debug)]
pub struct Profiler {
    /// The part each core of the launch runs (empty: every core runs part 0).
    part_of: Vec<u32>,
    /// Per part, the index of its first op in the counters below (parts' ops one after the
    /// other).
    base: Vec<usize>,
    count: Vec<u64>,
    busy: Vec<u64>,
    issue: Vec<u64>,
    stalls: Vec<Vec<(Stall, u64)>>,
    /// Ops that are `mmad_l1` (their MTE1 part is not a second execution).
    macro_op: Vec<bool>,
}

impl Profiler {
    /// A profile of the launch of `parts` (one program, or a mixed kernel's `aic` and `aiv`
    /// parts, in order), the cores as [`sim::launch::slots`] numbers them.
    pub fn for_launch(parts: &[&Program], config: &Config) -> Profiler {
        let part_of = sim::launch::slots(parts, config)
            .iter()
            .map(|s| s.part)
            .collect();
        Profiler::of_parts(parts, part_of)
    }

    fn of_parts(parts: &[&Program], part_of: Vec<u32>) -> Profiler {
        let mut base = Vec::with_capacity(parts.len());
        let mut n = 0;
        for p in parts {
            base.push(n);
            n += p.ops.len();
        }
        Profiler {
            part_of,
            base,
            count: vec![0; n],
            busy: vec![0; n],
            issue: vec![0; n],
            stalls: vec![Vec::new(); n],
            macro_op: parts
                .iter()
                .flat_map(|p| p.ops.iter())
                .map(|op| matches!(op.kind, OpKind::MmadL1(_)))
                .collect(),
        }
    }

    /// The counters' index of `op` of the part core `core` runs.
    #[inline(always)]
    fn at(&self, core: u32, op: OpId) -> usize {
        let part = self.part_of.get(core as usize).map_or(0, |&p| p as usize);
        self.base.get(part).copied().unwrap_or(0) + op.index()
    }

    /// The rows of ops that ran or cost anything in a launch of `parts` (as given to
    /// [`Profiler::for_launch`]; one program is a launch of one part), most expensive first
    /// (ties in part order, then program order).
    pub fn rows(&self, parts: &[&Program]) -> Vec<ProfileRow> {
        let mut rows = Vec::new();
        for (part, program) in parts.iter().enumerate() {
            let base = self.base.get(part).copied().unwrap_or(0);
            for (i, op) in program.ops.iter().enumerate() {
                let k = base + i;
                if k >= self.count.len() {
                    break;
                }
                if self.count[k] == 0 && self.busy[k] == 0 && self.stalls[k].is_empty() {
                    continue;
                }
                let mut stalls = self.stalls[k].clone();
                stalls.sort();
                let label = if op.loc.line > 0 {
                    program.locate(OpId::new(i))
                } else {
                    // a flag names its pipes; an inserted op's path already starts with its kind
                    let kind = op.kind.title();
                    match op.path.strip_prefix(op.kind.name()) {
                        Some(rest) => format!("{kind}{rest}"),
                        None => format!("{kind} {}", op.path),
                    }
                };
                rows.push(ProfileRow {
                    part: part as u32,
                    op: OpId(i as u32),
                    label,
                    path: op.path.clone(),
                    line: op.loc.line,
                    column: op.loc.column,
                    kind: op.kind.name(),
                    pipe: op.pipe.unwrap_or(Pipe::S),
                    count: self.count[k],
                    busy: self.busy[k],
                    issue: self.issue[k],
                    stalls,
                });
            }
        }
        rows.sort_by(|a, b| {
            b.cost()
                .cmp(&a.cost())
                .then(a.part.cmp(&b.part))
                .then(a.op.cmp(&b.op))
        });
        rows
    }
}

impl Observer for Profiler {
    #[inline]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let i = self.at(issue.core, issue.op);
        if !(self.macro_op[i] && issue.pipe == Pipe::Mte1) {
            self.count[i] += 1;
        }
    }

    #[inline]
    fn on_span(&mut self, span: &Span) {
        let i = self.at(span.core, span.op);
        let len = span.to - span.from;
        match span.what {
            Activity::Work => self.busy[i] += len,
            Activity::Issue => self.issue[i] += len,
            Activity::Loop | Activity::Branch => {
                self.count[i] += 1;
                self.busy[i] += len;
            }
            Activity::Stall(reason) => {
                let s = &mut self.stalls[i];
                match s.iter_mut().find(|(r, _)| *r == reason) {
                    Some(e) => e.1 += len,
                    None => s.push((reason, len)),
                }
            }
        }
    }
}

/// One static op's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileRow {
    /// The part of the kernel the op is in (0 for a single-type kernel; 0 = `aic`, 1 = `aiv`
    /// in a mixed one).
    pub part: u32,
    /// The op, in its part's program.
    pub op: OpId,
    /// How the text table names it: where it is written and its text
    /// (`programs/softmax.yaml:23:9 vexp { ins: [xb], out: xb }`, [`Program::locate`]); without
    /// a location, its kind and path (`vadd body[2]`, `set_flag V->MTE2 (inserted after ...)`).
    pub label: String,
    pub path: String,
    /// Where the op is written (0 when unknown).
    pub line: u32,
    pub column: u32,
    /// The op's YAML key (`vadd`, `load`, `for`).
    pub kind: &'static str,
    /// The pipe that executes it (S for scalar and control ops; `mmad_l1` is M, with its
    /// MTE1 staging in `busy` too).
    pub pipe: Pipe,
    /// Dynamic executions (loop iterations for a loop, evaluations for an `if`), summed over
    /// the cores that run it.
    pub count: u64,
    /// Cycles its pipe was busy with it (S's loop or branch cycles for control ops).
    pub busy: u64,
    /// Cycles S spent sending it to its pipe (`issue_cycles` per send).
    pub issue: u64,
    /// Cycles a pipe stalled with it at the head (S: with it as its next action), by cause.
    pub stalls: Vec<(Stall, u64)>,
}

impl ProfileRow {
    pub fn stalled(&self) -> u64 {
        self.stalls.iter().map(|(_, c)| c).sum()
    }

    /// What the row is sorted by: every cycle spent on or waiting with the op.
    pub fn cost(&self) -> u64 {
        self.busy + self.issue + self.stalled()
    }
}

/// The profile as JSON: a list of rows, most expensive first.
pub fn profile_json(rows: &[ProfileRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                let mut stalls = Map::new();
                for (reason, c) in &r.stalls {
                    stalls.insert(reason.to_string(), json!(c));
                }
                json!({
                    "op": r.path,
                    "name": r.label,
                    "line": crate::run_report::line_json(r.line),
                    "column": crate::run_report::line_json(r.column),
                    "kind": r.kind,
                    "pipe": r.pipe.report_name(),
                    "count": r.count,
                    "cost": r.cost(),
                    "busy": r.busy,
                    "issue": r.issue,
                    "stalled": r.stalled(),
                    "stalls": stalls,
                })
            })
            .collect(),
    )
}

/// The profile as a text table (the `limit` most expensive rows; 0: all). Percentages are of
/// the cycles of the run's `cores` cores: `cores` × the run's `total_cycles` (a row of a
/// launch sums over its cores).
pub fn profile_text(rows: &[ProfileRow], total_cycles: u64, cores: usize, limit: usize) -> String {
    let all = total_cycles.saturating_mul(cores.max(1) as u64);
    let shown = if limit == 0 {
        rows.len()
    } else {
        limit.min(rows.len())
    };
    use crate::table::{Align, Table};
    let col = |name: &str, a: Align| (name.to_string(), a);
    let mut t = Table::new(vec![
        col("cost", Align::Right),
        col("busy", Align::Right),
        col("issue", Align::Right),
        col("stalled", Align::Right),
        col("count", Align::Right),
        col("pipe", Align::Left),
        col("op", Align::Left),
        col("top stall", Align::Left),
    ]);
    for r in &rows[..shown] {
        let top = r
            .stalls
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(s, c)| format!("{s} {c}"))
            .unwrap_or_else(|| "-".into());
        t.row(vec![
            format!("{} ({}%)", r.cost(), crate::percent(r.cost(), all)),
            r.busy.to_string(),
            r.issue.to_string(),
            r.stalled().to_string(),
            r.count.to_string(),
            r.pipe.report_name().to_string(),
            r.label.clone(),
            top,
        ]);
    }
    let mut out = if cores > 1 {
        format!(
            "profile: {} ops, most expensive first (cost = busy + issue + stalled, cycles summed over the launch's {cores} cores; % of {cores} x the run)\n",
            rows.len()
        )
    } else {
        format!(
            "profile: {} ops, most expensive first (cost = busy + issue + stalled, cycles; % of the run)\n",
            rows.len()
        )
    };
    out.push_str(&t.render("  "));
    if shown < rows.len() {
        out.push_str(&format!(
            "... {} more ops (run --format json for all)\n",
            rows.len() - shown
        ));
    }
    out
}

/// The profile as an HTML table (for the HTML report's profile section).
pub fn profile_html(rows: &[ProfileRow]) -> String {
    use crate::html::esc;
    let mut out = String::from(
        "<table class=\"profile\"><thead><tr><th>cost</th><th>busy</th><th>issue</th>\
         <th>stalled</th><th>count</th><th>pipe</th><th>op</th><th>stalls by cause</th></tr>\
         </thead><tbody>\n",
    );
    for r in rows {
        let stalls: Vec<String> = r
            .stalls
            .iter()
            .map(|(s, c)| format!("{} {c}", esc(&s.to_string())))
            .collect();
        out.push_str(&format!(
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            r.cost(),
            r.busy,
            r.issue,
            r.stalled(),
            r.count,
            r.pipe.report_name(),
            esc(&r.label),
            stalls.join(", ")
        ));
    }
    out.push_str("</tbody></table>\n");
    out
}
