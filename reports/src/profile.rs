//! The per-op profile (`run --profile`): for every static op (YAML path), how often it ran,
//! the cycles its pipe was busy with it, the cycles S spent sending it, the cycles its own pipe
//! stalled with it at the head, and, apart, the cycles S was held trying to send it (`queue_full
//! P`: P's queue was full), each by cause. It answers "which op should I change", where the
//! run report answers "which pipe".
//!
//! S's stalls are the one place where a stall belongs to a pipe other than the op's: S waits
//! with the op as its next action, not the op's pipe. They are kept apart (`s_stalls`) so that
//! S's wait to send a `vadd` is never read as V's stall. S's waits in ops it executes itself
//! (`barrier: all`, an S-side `wait_flag`) are that op's own pipe's stalls.
//!
//! The rows come in two groups ([`OpGroup`]): compute and moves (what does the work), and sync
//! (flags, barriers, cross-core flags: what orders it).
//!
//! Built from the engine's spans ([`sim::engine::Span`]), so its figures reconcile exactly
//! with the run report: over all rows, busy + issue = the pipes' busy cycles added up, and
//! pipe stalls + S held add up to the pipes' stalls, cause by cause (S held: S's stalls,
//! `queue_full P` among them). In a launch of many cores an op's row sums what every core that
//! runs it did (a mixed kernel's two parts have ops of their own, their paths prefixed `aic.` /
//! `aiv.`), so the rows add up to the pipes of every core.

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
    /// The stalls of the op's own pipe(s) with it at the head.
    pipe_stalls: Vec<Vec<(Stall, u64)>>,
    /// S's stalls with the op as its next action, for an op S sends to another pipe.
    s_stalls: Vec<Vec<(Stall, u64)>>,
    /// Ops that are `mmad_l1` (their MTE1 part is not a second execution).
    macro_op: Vec<bool>,
    /// Ops S executes itself (scalar, control, `barrier: all`, S-side flags): S's stalls in
    /// them are their own pipe's.
    on_s: Vec<bool>,
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
            pipe_stalls: vec![Vec::new(); n],
            s_stalls: vec![Vec::new(); n],
            macro_op: parts
                .iter()
                .flat_map(|p| p.ops.iter())
                .map(|op| matches!(op.kind, OpKind::MmadL1(_)))
                .collect(),
            on_s: parts
                .iter()
                .flat_map(|p| p.ops.iter())
                .map(|op| op.pipe.unwrap_or(Pipe::S) == Pipe::S)
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
                if self.count[k] == 0
                    && self.busy[k] == 0
                    && self.pipe_stalls[k].is_empty()
                    && self.s_stalls[k].is_empty()
                {
                    continue;
                }
                let mut pipe_stalls = self.pipe_stalls[k].clone();
                pipe_stalls.sort();
                let mut s_stalls = self.s_stalls[k].clone();
                s_stalls.sort();
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
                    group: OpGroup::of(&op.kind),
                    pipe: op.pipe.unwrap_or(Pipe::S),
                    count: self.count[k],
                    busy: self.busy[k],
                    issue: self.issue[k],
                    pipe_stalls,
                    s_stalls,
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
                // S waiting to send the op is S's stall, not the op's pipe's
                let s = if span.pipe == Pipe::S && !self.on_s[i] {
                    &mut self.s_stalls[i]
                } else {
                    &mut self.pipe_stalls[i]
                };
                match s.iter_mut().find(|(r, _)| *r == reason) {
                    Some(e) => e.1 += len,
                    None => s.push((reason, len)),
                }
            }
        }
    }
}

/// The two groups of the profile's rows: what does the work, and what orders it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpGroup {
    /// Loads, stores, copies, fixpipes, cube and vector ops, the ops S executes (`scalar`,
    /// `sload`, `sstore`, `use`) and control flow (`for`, `while`, `if`).
    Compute,
    /// `set_flag`, `wait_flag`, `barrier` (of a pipe, or `all`), `cross_set`, `cross_wait`.
    Sync,
}

impl OpGroup {
    pub const ALL: [OpGroup; 2] = [OpGroup::Compute, OpGroup::Sync];

    pub fn of(kind: &OpKind) -> OpGroup {
        match kind {
            OpKind::SetFlag { .. }
            | OpKind::WaitFlag { .. }
            | OpKind::Barrier(_)
            | OpKind::CrossSet { .. }
            | OpKind::CrossWait { .. } => OpGroup::Sync,
            OpKind::Load { .. }
            | OpKind::Store { .. }
            | OpKind::Copy { .. }
            | OpKind::Fixpipe { .. }
            | OpKind::Mmad(_)
            | OpKind::MmadL1(_)
            | OpKind::Vector(_)
            | OpKind::Sload { .. }
            | OpKind::Sstore { .. }
            | OpKind::Scalar { .. }
            | OpKind::Use { .. }
            | OpKind::For(_)
            | OpKind::If { .. }
            | OpKind::While { .. } => OpGroup::Compute,
        }
    }

    /// Its JSON value (`compute`, `sync`).
    pub fn name(self) -> &'static str {
        match self {
            OpGroup::Compute => "compute",
            OpGroup::Sync => "sync",
        }
    }

    /// How the text and HTML tables head it.
    pub fn title(self) -> &'static str {
        match self {
            OpGroup::Compute => "compute and moves",
            OpGroup::Sync => "sync",
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
    pub group: OpGroup,
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
    /// Cycles its own pipe stalled with it at the head, by cause (an `mmad_l1`: M's and
    /// MTE1's; an op S executes: S's).
    pub pipe_stalls: Vec<(Stall, u64)>,
    /// Cycles S was held with it as its next action, unable to send it, by cause (`queue_full
    /// P`: P's queue was full). Empty for the ops S executes itself.
    pub s_stalls: Vec<(Stall, u64)>,
}

impl ProfileRow {
    /// The sum of [`ProfileRow::pipe_stalls`].
    pub fn pipe_stalled(&self) -> u64 {
        self.pipe_stalls.iter().map(|(_, c)| c).sum()
    }

    /// The sum of [`ProfileRow::s_stalls`].
    pub fn s_held(&self) -> u64 {
        self.s_stalls.iter().map(|(_, c)| c).sum()
    }

    /// Every stall cycle with the op: its pipe's and S's.
    pub fn stalled(&self) -> u64 {
        self.pipe_stalled() + self.s_held()
    }

    /// Both stall lists merged, cause by cause (the JSON's `stalls`).
    pub fn stalls(&self) -> Vec<(Stall, u64)> {
        let mut all = self.pipe_stalls.clone();
        for &(reason, c) in &self.s_stalls {
            match all.iter_mut().find(|(r, _)| *r == reason) {
                Some(e) => e.1 += c,
                None => all.push((reason, c)),
            }
        }
        all.sort();
        all
    }

    /// What the row is sorted by: every cycle spent on or waiting with the op.
    pub fn cost(&self) -> u64 {
        self.busy + self.issue + self.stalled()
    }

    /// Its largest stall cause and cycles, `S: ` before a cause of S's: (text, cycles).
    fn top_stall(&self) -> Option<(String, u64)> {
        top_of(&self.pipe_stalls, &self.s_stalls)
    }
}

/// The largest of `pipe` and `s` stall causes (ties: a pipe's before S's, then the first
/// cause), as the text shows it.
fn top_of(pipe: &[(Stall, u64)], s: &[(Stall, u64)]) -> Option<(String, u64)> {
    pipe.iter()
        .map(|&(r, c)| (r, c, false))
        .chain(s.iter().map(|&(r, c)| (r, c, true)))
        .filter(|&(_, c, _)| c > 0)
        .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)).then(b.0.cmp(&a.0)))
        .map(|(r, c, by_s)| (format!("{}{r}", if by_s { "S: " } else { "" }), c))
}

fn stalls_json(stalls: &[(Stall, u64)]) -> Value {
    let mut m = Map::new();
    for (reason, c) in stalls {
        m.insert(reason.to_string(), json!(c));
    }
    Value::Object(m)
}

/// The profile as JSON: a list of rows, most expensive first (both groups together; `group`
/// tells them apart). `stalled` and `stalls` are every stall with the op, as before the split
/// (`pipe_stalled` + `s_held`, and the two lists merged), so a reader of the earlier rows reads
/// these the same.
pub fn profile_json(rows: &[ProfileRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
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
                    "stalls": stalls_json(&r.stalls()),
                    "group": r.group.name(),
                    "pipe_stalled": r.pipe_stalled(),
                    "pipe_stalls": stalls_json(&r.pipe_stalls),
                    "s_held": r.s_held(),
                    "s_stalls": stalls_json(&r.s_stalls),
                })
            })
            .collect(),
    )
}

/// A group's rows added up.
#[derive(Default)]
struct Subtotal {
    ops: usize,
    cost: u64,
    busy: u64,
    issue: u64,
    pipe_stalled: u64,
    s_held: u64,
    pipe_stalls: Vec<(Stall, u64)>,
    s_stalls: Vec<(Stall, u64)>,
}

impl Subtotal {
    fn of<'r>(rows: impl Iterator<Item = &'r ProfileRow>) -> Subtotal {
        let mut t = Subtotal::default();
        let add = |to: &mut Vec<(Stall, u64)>, from: &[(Stall, u64)]| {
            for &(reason, c) in from {
                match to.iter_mut().find(|(r, _)| *r == reason) {
                    Some(e) => e.1 += c,
                    None => to.push((reason, c)),
                }
            }
        };
        for r in rows {
            t.ops += 1;
            t.cost += r.cost();
            t.busy += r.busy;
            t.issue += r.issue;
            t.pipe_stalled += r.pipe_stalled();
            t.s_held += r.s_held();
            add(&mut t.pipe_stalls, &r.pipe_stalls);
            add(&mut t.s_stalls, &r.s_stalls);
        }
        t.pipe_stalls.sort();
        t.s_stalls.sort();
        t
    }
}

fn ops(n: usize) -> String {
    format!("{n} op{}", if n == 1 { "" } else { "s" })
}

/// What each column of the profile means, for the text's legend and the HTML table's header
/// (`of`: what the cost column's cycles are of).
fn legend_lines(of: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "cost",
            format!("busy + issue + pipe stalled + S held: every cycle spent on the op or waiting with it ({of})"),
        ),
        (
            "busy",
            "cycles the op's pipe worked on it (a loop or `if`: S's loop_cycles or branch_cycles)".into(),
        ),
        ("issue", "cycles S spent sending it to its pipe (issue_cycles a send)".into()),
        (
            "pipe stalled",
            "cycles the op's own pipe (the pipe column) stalled with it at the head: its wait, its drain (S's own ops: barrier_all, an S-side wait_flag)".into(),
        ),
        (
            "S held",
            "cycles S waited with the op as its next action, unable to send it (queue_full P: the queue of pipe P was full): S's stall, not the op's pipe's".into(),
        ),
        (
            "count",
            "executions: instructions sent (an mmad_l1 once), loop iterations, `if` evaluations".into(),
        ),
        (
            "pipe",
            "the pipe that executes the op (S: scalar and control ops, barrier all)".into(),
        ),
        (
            "top stall",
            "the row's largest stall cause and its cycles; `S: cause` when it is S's wait to send the op".into(),
        ),
        (
            "compute and moves",
            "loads, stores, copies, fixpipes, cube and vector ops, scalar and control ops".into(),
        ),
        (
            "sync",
            "set_flag, wait_flag, barrier (of a pipe or all), cross_set, cross_wait".into(),
        ),
        (
            "subtotal",
            "a group's figures added up over all its ops, shown or not (its % can pass 100: the pipes work at once)".into(),
        ),
    ]
}

/// The profile as a text table: compute and moves, then sync, each most expensive first (at
/// most `limit` rows a group; 0: all) and added up in a subtotal row, then a legend.
/// Percentages are of the cycles of the run's `cores` cores: `cores` × the run's
/// `total_cycles` (a row of a launch sums over its cores).
pub fn profile_text(rows: &[ProfileRow], total_cycles: u64, cores: usize, limit: usize) -> String {
    let all = total_cycles.saturating_mul(cores.max(1) as u64);
    let pct = |c: u64| format!("{c} ({}%)", crate::percent(c, all));
    use crate::table::{Align, Table};
    let col = |name: &str, a: Align| (name.to_string(), a);
    let mut t = Table::new(vec![
        col("cost", Align::Right),
        col("busy", Align::Right),
        col("issue", Align::Right),
        col("pipe stalled", Align::Right),
        col("S held", Align::Right),
        col("count", Align::Right),
        col("pipe", Align::Left),
        col("op", Align::Left),
        col("top stall", Align::Left),
    ]);
    let top = |t: Option<(String, u64)>| t.map_or_else(|| "-".into(), |(s, c)| format!("{s} {c}"));
    // per group: (its title, its rows, the rows shown)
    let mut groups = Vec::new();
    for g in OpGroup::ALL {
        let of: Vec<&ProfileRow> = rows.iter().filter(|r| r.group == g).collect();
        let shown = if limit == 0 {
            of.len()
        } else {
            limit.min(of.len())
        };
        for r in &of[..shown] {
            t.row(vec![
                pct(r.cost()),
                r.busy.to_string(),
                r.issue.to_string(),
                r.pipe_stalled().to_string(),
                r.s_held().to_string(),
                r.count.to_string(),
                r.pipe.report_name().to_string(),
                r.label.clone(),
                top(r.top_stall()),
            ]);
        }
        if !of.is_empty() {
            let s = Subtotal::of(of.iter().copied());
            t.row(vec![
                pct(s.cost),
                s.busy.to_string(),
                s.issue.to_string(),
                s.pipe_stalled.to_string(),
                s.s_held.to_string(),
                String::new(),
                String::new(),
                format!("subtotal: {}, {}", g.title(), ops(s.ops)),
                top(top_of(&s.pipe_stalls, &s.s_stalls)),
            ]);
        }
        groups.push((g, of.len(), shown));
    }
    let mut out = if cores > 1 {
        format!(
            "profile: {}, compute and moves apart from sync, each most expensive first (cost = busy + issue + pipe stalled + S held, cycles summed over the launch's {cores} cores; % of {cores} x the run)\n",
            ops(rows.len())
        )
    } else {
        format!(
            "profile: {}, compute and moves apart from sync, each most expensive first (cost = busy + issue + pipe stalled + S held, cycles; % of the run)\n",
            ops(rows.len())
        )
    };
    // the groups share one table, so their columns line up: its lines, each group's under a
    // title line
    let rendered = t.render("  ");
    let mut lines = rendered.lines();
    let mut line = |out: &mut String| {
        out.push_str(lines.next().unwrap_or(""));
        out.push('\n');
    };
    line(&mut out);
    for (g, n, shown) in groups {
        if n == 0 {
            out.push_str(&format!("  {}: none\n", g.title()));
            continue;
        }
        out.push_str(&format!("  {}: {}\n", g.title(), ops(n)));
        for _ in 0..shown {
            line(&mut out);
        }
        if shown < n {
            out.push_str(&format!(
                "  ... {} more {} of {} (run --format json for all)\n",
                n - shown,
                if n - shown == 1 { "op" } else { "ops" },
                g.title()
            ));
        }
        line(&mut out);
    }
    let of = if cores > 1 {
        format!("summed over the launch's {cores} cores; % of {cores} x the run's cycles")
    } else {
        "% of the run's cycles".into()
    };
    out.push_str(&crate::table::legend(&legend_lines(&of)));
    out
}

/// The profile as an HTML table (for the HTML report's profile section): the groups of the
/// text table, each under a heading row and closed by its subtotal; each column's header says
/// what it means (its hover text: the text's legend). An op's row is a plain `<tr>`; the
/// heading and subtotal rows have a class.
pub fn profile_html(rows: &[ProfileRow]) -> String {
    use crate::html::esc;
    let stalls = |pipe: &[(Stall, u64)], s: &[(Stall, u64)]| {
        pipe.iter()
            .map(|(r, c)| format!("{} {c}", esc(&r.to_string())))
            .chain(
                s.iter()
                    .map(|(r, c)| format!("S: {} {c}", esc(&r.to_string()))),
            )
            .collect::<Vec<_>>()
            .join(", ")
    };
    let legend = legend_lines("cycles, summed over the cores that run the op");
    let meaning = |key: &str| {
        legend
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(String::new(), |(_, t)| esc(t))
    };
    let mut out = String::from("<table class=\"profile\"><thead><tr>");
    for (head, key) in [
        ("cost", "cost"),
        ("busy", "busy"),
        ("issue", "issue"),
        ("pipe stalled", "pipe stalled"),
        ("S held", "S held"),
        ("count", "count"),
        ("pipe", "pipe"),
        ("op", ""),
        ("stalls by cause", ""),
    ] {
        let title = match key {
            "" if head == "op" => "where the op is written and its text".to_string(),
            "" => "the pipe's stalls with the op at the head, by cause, then S's (`S: queue_full P`) while it waited to send the op".to_string(),
            k => meaning(k),
        };
        out.push_str(&format!("<th title=\"{}\">{head}</th>", esc(&title)));
    }
    out.push_str("</tr></thead>\n");
    for g in OpGroup::ALL {
        let of: Vec<&ProfileRow> = rows.iter().filter(|r| r.group == g).collect();
        out.push_str(&format!(
            "<tbody data-group=\"{}\"><tr class=\"group\"><th colspan=\"9\" title=\"{}\">{}: {}</th></tr>\n",
            g.name(),
            meaning(g.title()),
            g.title(),
            if of.is_empty() {
                "none".into()
            } else {
                ops(of.len())
            }
        ));
        for r in &of {
            out.push_str(&format!(
                "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td></tr>\n",
                r.cost(),
                r.busy,
                r.issue,
                r.pipe_stalled(),
                r.s_held(),
                r.count,
                r.pipe.report_name(),
                esc(&r.label),
                stalls(&r.pipe_stalls, &r.s_stalls)
            ));
        }
        if !of.is_empty() {
            let s = Subtotal::of(of.iter().copied());
            out.push_str(&format!(
                "<tr class=\"subtotal\"><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td></td>\
                 <td></td><td>subtotal: {}, {}</td><td>{}</td></tr>\n",
                s.cost,
                s.busy,
                s.issue,
                s.pipe_stalled,
                s.s_held,
                g.title(),
                ops(s.ops),
                stalls(&s.pipe_stalls, &s.s_stalls)
            ));
        }
        out.push_str("</tbody>\n");
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::engine::RunResult;

    /// The engine's round-number golden core: `issue_cycles` 1, `queue_depth` 2 (so S's queue
    /// to V fills after two unstarted sends), `flag_latency` 2; `gm → ub` 64 B/cycle, startup
    /// 10; `ub → gm` 32 B/cycle, startup 5; `vadd` 1 cycle a 256-byte repeat, startup 3.
    const CONFIG: &str = include_str!("../../sim/tests/golden/test_config.yaml");

    const HEAD: &str = "\
kernel: k
core: t
sync: manual
gm:
  x: { shape: [1, 512], dtype: f16 }
  z: { shape: [1, 512], dtype: f16 }
buffers:
  xb: { scope: ub, shape: [512], dtype: f16 }
  zb: { scope: ub, shape: [512], dtype: f16 }
body:
";

    /// The profile's rows of `body` (ops under [`HEAD`]) run on [`CONFIG`], and the run.
    fn profile(body: &str) -> (Vec<ProfileRow>, RunResult) {
        profile_at(body, 2)
    }

    /// [`profile`] with [`CONFIG`]'s `queue_depth` set to `depth`.
    fn profile_at(body: &str, depth: u32) -> (Vec<ProfileRow>, RunResult) {
        let text = CONFIG.replace("queue_depth: 2", &format!("queue_depth: {depth}"));
        let config = sim::load_config(&text, "golden.yaml").unwrap();
        let program = sim::load_program(&format!("{HEAD}{body}"), "k.yaml", &config, &[]).unwrap();
        let mut p = Profiler::for_launch(&[&program], &config);
        let result = sim::engine::run_observed(&program, &config, &mut p).unwrap();
        (p.rows(&[&program]), result)
    }

    fn row<'r>(rows: &'r [ProfileRow], path: &str) -> &'r ProfileRow {
        rows.iter().find(|r| r.path == path).expect(path)
    }

    /// Over all rows: busy + issue = the pipes' busy cycles; pipe stalls and S held together
    /// are the pipes' stalls, cause by cause; and S held is S's stalls, nothing else.
    fn reconciles(rows: &[ProfileRow], result: &RunResult) {
        let pipes = || result.cores.iter().flat_map(|c| c.pipes.iter());
        let busy: u64 = pipes().map(|p| p.busy).sum();
        assert_eq!(rows.iter().map(|r| r.busy + r.issue).sum::<u64>(), busy);
        let mut want: Vec<(Stall, u64)> = Vec::new();
        let mut have: Vec<(Stall, u64)> = Vec::new();
        let add = |to: &mut Vec<(Stall, u64)>, from: &[(Stall, u64)]| {
            for &(s, c) in from {
                match to.iter_mut().find(|(r, _)| *r == s) {
                    Some(e) => e.1 += c,
                    None => to.push((s, c)),
                }
            }
        };
        for p in pipes() {
            add(&mut want, &p.stalls);
        }
        for r in rows {
            add(&mut have, &r.pipe_stalls);
            add(&mut have, &r.s_stalls);
            assert_eq!(r.stalls().iter().map(|(_, c)| c).sum::<u64>(), r.stalled());
            assert_eq!(r.cost(), r.busy + r.issue + r.pipe_stalled() + r.s_held());
        }
        want.sort();
        have.sort();
        assert_eq!(have, want);
        let s_stalled: u64 = pipes()
            .filter(|p| p.pipe == Pipe::S)
            .flat_map(|p| p.stalls.iter().map(|(_, c)| c))
            .sum();
        let on_s: u64 = rows
            .iter()
            .filter(|r| r.pipe == Pipe::S)
            .map(|r| r.pipe_stalled())
            .sum();
        assert_eq!(
            rows.iter().map(|r| r.s_held()).sum::<u64>() + on_s,
            s_stalled
        );
    }

    /// `vdup` into xb (4 repeats of 2 cycles: work 8), then `n` vadds of xb into zb (4
    /// repeats of 1 cycle: work 4 each), then `tail`.
    fn vadds(n: usize, tail: &str) -> String {
        format!(
            "  - vdup: {{ out: xb, scalar: 1 }}\n{}{tail}",
            "  - vadd: { ins: [xb, xb], out: zb }\n".repeat(n)
        )
    }

    #[test]
    fn s_waiting_to_send_a_vadd_is_s_held_not_v_stalled() {
        // By the rules of docs/timing.md: S sends the vdup and vadds 1, 2 at cycles 0, 1, 2,
        // each joining V a cycle later; V runs them back to back from the vdup's join: vdup
        // [1, 9), then the vadds [9, 13), [13, 17), [17, 21), [21, 25), [25, 29). At 3 V's
        // queue holds vadds 1 and 2, neither started (queue_depth 2): S waits to send vadd 3
        // until V starts vadd 1 at 9 (pipes act before S in a cycle): queue_full V [3, 9) = 6.
        // Vadd 3 joins at 10; S waits for vadd 4 until V starts vadd 2 at 13: [10, 13) = 3;
        // vadd 4 joins at 14, and vadd 5 waits for vadd 3's start at 17: [14, 17) = 3. It
        // joins at 18, where S reaches the barrier, which waits until vadd 5 completes at
        // 29 + startup 3 = 32: barrier_all [18, 32) = 14. V never stalls with a vadd at its
        // head: each starts when the previous one's work ends.
        let (rows, result) = profile(&vadds(5, "  - barrier: all\n"));
        assert_eq!(result.total_cycles, 32);
        let d = row(&rows, "body[0]");
        assert_eq!((d.count, d.busy, d.issue, d.stalled()), (1, 8, 1, 0));
        for (k, held) in [(1, 0), (2, 0), (3, 6), (4, 3), (5, 3)] {
            let r = row(&rows, &format!("body[{k}]"));
            assert_eq!((r.count, r.busy, r.issue), (1, 4, 1), "body[{k}]");
            assert_eq!(r.pipe, Pipe::V);
            assert_eq!(r.group, OpGroup::Compute);
            assert!(r.pipe_stalls.is_empty(), "body[{k}]: {:?}", r.pipe_stalls);
            let want: Vec<(Stall, u64)> = if held > 0 {
                vec![(Stall::QueueFull(Pipe::V), held)]
            } else {
                vec![]
            };
            assert_eq!(r.s_stalls, want, "body[{k}]");
            assert_eq!(r.cost(), 5 + held);
        }
        // the barrier is S's own op: its wait is its pipe's, in the sync group
        let b = row(&rows, "body[6]");
        assert_eq!((b.pipe, b.group), (Pipe::S, OpGroup::Sync));
        assert_eq!(b.pipe_stalls, vec![(Stall::BarrierAll, 14)]);
        assert!(b.s_stalls.is_empty());
        assert_eq!(
            row(&rows, "body[3]").top_stall(),
            Some(("S: queue_full V".into(), 6))
        );
        assert_eq!(b.top_stall(), Some(("barrier_all".into(), 14)));
        reconciles(&rows, &result);
    }

    #[test]
    fn a_set_flag_s_could_not_send_has_both_kinds_of_stall() {
        // docs/timing.md's worked example (flag_chain): S waits [4, 29) to send the
        // set_flag V->MTE3 (V's queue holds the wait_flag and the vadd, unstarted), queue_full
        // V 25; on V the set_flag then drains [33, 36) for the vadd to complete, drain 3
        let (rows, result) = profile(
            "  - load: { src: \"x[0]\", dst: xb }
  - set_flag: { src: mte2, dst: v, id: 0 }
  - wait_flag: { src: mte2, dst: v, id: 0 }
  - vadd: { ins: [xb, xb], out: zb }
  - set_flag: { src: v, dst: mte3, id: 0 }
  - wait_flag: { src: v, dst: mte3, id: 0 }
  - store: { src: zb, dst: \"z[0]\" }
",
        );
        assert_eq!(result.total_cycles, 75);
        let set = row(&rows, "body[4]");
        assert_eq!((set.pipe, set.group), (Pipe::V, OpGroup::Sync));
        assert_eq!(set.pipe_stalls, vec![(Stall::Drain, 3)]);
        assert_eq!(set.s_stalls, vec![(Stall::QueueFull(Pipe::V), 25)]);
        assert_eq!(set.cost(), 1 + 3 + 25);
        assert_eq!(
            row(&rows, "body[2]").pipe_stalls,
            vec![(
                Stall::WaitFlag {
                    src: Pipe::Mte2,
                    id: 0
                },
                26
            )]
        );
        assert_eq!(
            row(&rows, "body[5]").pipe_stalls,
            vec![(
                Stall::WaitFlag {
                    src: Pipe::V,
                    id: 0
                },
                7
            )]
        );
        assert_eq!(row(&rows, "body[1]").pipe_stalls, vec![(Stall::Drain, 10)]);
        // load, vadd, store compute; the four flags sync
        let groups: Vec<(&str, OpGroup)> = {
            let mut g: Vec<_> = rows.iter().map(|r| (r.path.as_str(), r.group)).collect();
            g.sort();
            g
        };
        use OpGroup::*;
        assert_eq!(
            groups,
            [
                ("body[0]", Compute),
                ("body[1]", Sync),
                ("body[2]", Sync),
                ("body[3]", Compute),
                ("body[4]", Sync),
                ("body[5]", Sync),
                ("body[6]", Compute)
            ]
        );
        // the JSON keeps `stalled` and `stalls` whole and splits them beside
        let j = profile_json(&rows);
        let s = j
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["op"] == "body[4]")
            .unwrap();
        assert_eq!(s["group"], "sync");
        assert_eq!(s["stalled"], 28);
        assert_eq!(s["stalls"], json!({ "drain": 3, "queue_full V": 25 }));
        assert_eq!(s["pipe_stalled"], 3);
        assert_eq!(s["pipe_stalls"], json!({ "drain": 3 }));
        assert_eq!(s["s_held"], 25);
        assert_eq!(s["s_stalls"], json!({ "queue_full V": 25 }));
        assert_eq!(s["cost"], 29);
        reconciles(&rows, &result);
    }

    #[test]
    fn the_text_groups_sync_apart_adds_each_group_up_and_has_a_legend() {
        // the run of s_waiting_to_send_a_vadd_is_s_held_not_v_stalled: 32 cycles
        let (rows, result) = profile(&vadds(5, "  - barrier: all\n"));
        let text = profile_text(&rows, result.total_cycles, 1, 0);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("profile: 7 ops, compute and moves apart from sync"));
        assert!(lines[1].trim_start().starts_with("cost"), "{text}");
        assert!(lines[1].contains("pipe stalled  S held"), "{text}");
        assert_eq!(lines[2], "  compute and moves: 6 ops");
        // most expensive first: vadd 3 (5 + 6), the vdup (9), vadds 4 and 5 (5 + 3), vadds
        // 1 and 2 (5); ties in program order. body[k] is on line 11 + k
        let place = |l: &str| -> String {
            l.split_whitespace()
                .find(|w| w.starts_with("k.yaml:"))
                .unwrap_or("")
                .into()
        };
        let order: Vec<String> = lines[3..9].iter().map(|l| place(l)).collect();
        assert_eq!(
            order,
            [
                "k.yaml:14:5",
                "k.yaml:11:5",
                "k.yaml:15:5",
                "k.yaml:16:5",
                "k.yaml:12:5",
                "k.yaml:13:5"
            ]
        );
        assert!(lines[3].ends_with("S: queue_full V 6"), "{}", lines[3]);
        // the subtotal: busy 8 + 5 x 4, issue 6, S held 6 + 3 + 3
        let sub: Vec<&str> = lines[9].split_whitespace().collect();
        let share = format!("({}%)", crate::percent(46, 32));
        assert_eq!(
            sub,
            [
                "46",
                &share,
                "28",
                "6",
                "0",
                "12",
                "subtotal:",
                "compute",
                "and",
                "moves,",
                "6",
                "ops",
                "S:",
                "queue_full",
                "V",
                "12"
            ]
        );
        assert_eq!(lines[10], "  sync: 1 op");
        assert!(lines[11].ends_with("barrier_all 14"), "{}", lines[11]);
        assert!(lines[12].contains("subtotal: sync, 1 op"));
        assert_eq!(lines[13], "legend:");
        for key in [
            "cost",
            "busy",
            "issue",
            "pipe stalled",
            "S held",
            "count",
            "pipe",
            "top stall",
            "compute and moves",
            "sync",
            "subtotal",
        ] {
            assert!(
                lines[14..].iter().any(|l| l.trim_start().starts_with(key)),
                "legend: no {key}\n{text}"
            );
        }
        // a limit applies per group, each says what it left out
        let short = profile_text(&rows, result.total_cycles, 1, 2);
        assert!(
            short.contains("  ... 4 more ops of compute and moves (run --format json for all)\n"),
            "{short}"
        );
        assert_eq!(
            short.matches("subtotal: compute and moves, 6 ops").count(),
            1
        );
        assert!(short.contains("subtotal: sync, 1 op"));
        assert!(!short.contains("more op of sync"));
        // a launch says the rows sum over its cores
        let launch = profile_text(&rows, result.total_cycles, 6, 0);
        assert!(launch.contains("cycles summed over the launch's 6 cores; % of 6 x the run"));
    }

    #[test]
    fn the_html_table_has_the_s_held_column_and_a_body_per_group() {
        // vadd 3 waits [3, 9) to be sent, as in s_waiting_to_send_a_vadd_is_s_held_not_v_stalled
        let (rows, _) = profile(&vadds(3, ""));
        let html = profile_html(&rows);
        assert!(
            html.contains(">pipe stalled</th><th title=\"cycles S waited"),
            "{html}"
        );
        assert!(html.contains("<tbody data-group=\"compute\"><tr class=\"group\">"));
        assert!(html.contains(">compute and moves: 4 ops</th>"));
        assert!(html.contains(">sync: none</th>"));
        // vadd 3's row: cost 5 + 6, busy 4, issue 1, pipe stalled 0, S held 6
        assert!(
            html.contains(
                "<tr><td class=\"n\">11</td><td class=\"n\">4</td><td class=\"n\">1</td><td class=\"n\">0</td><td class=\"n\">6</td>"
            ),
            "{html}"
        );
        assert!(html.contains("S: queue_full V 6</td></tr>"));
        // one plain <tr> per op and the header's
        assert_eq!(html.matches("<tr>").count(), rows.len() + 1);
        assert_eq!(html.matches("<tr class=\"subtotal\">").count(), 1);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            /// Whatever the queue depth and however the ops mix, the rows add up to the
            /// pipes (busy, stalls cause by cause, S's stalls), and a vector op never carries
            /// a stall of V's that is S's wait to send it: V starts each as soon as the one
            /// before it is done.
            #[test]
            fn the_split_adds_up_and_s_holds_only_what_it_sends(
                depth in 1u32..5,
                ops in proptest::collection::vec(0u8..4, 1..14),
                barrier in any::<bool>(),
            ) {
                let mut body = String::from("  - vdup: { out: xb, scalar: 1 }\n");
                for k in &ops {
                    body.push_str(match k {
                        0 => "  - vadd: { ins: [xb, xb], out: zb }\n",
                        1 => "  - vmul: { ins: [xb, xb], out: zb }\n",
                        2 => "  - barrier: v\n",
                        _ => "  - scalar: { cycles: 3 }\n",
                    });
                }
                if barrier {
                    body.push_str("  - barrier: all\n");
                }
                let (rows, result) = profile_at(&body, depth);
                reconciles(&rows, &result);
                for r in &rows {
                    if r.pipe == Pipe::V && r.group == OpGroup::Compute {
                        prop_assert!(r.pipe_stalls.is_empty(), "{r:?}");
                    }
                    for (s, _) in &r.s_stalls {
                        prop_assert_eq!(*s, Stall::QueueFull(Pipe::V));
                    }
                    if r.pipe == Pipe::S {
                        prop_assert!(r.s_stalls.is_empty());
                    }
                }
            }
        }
    }
}
