//! The run report: where every cycle of every pipe went, the derived metrics with their
//! definitions, and what the run found (sync mistakes, a deadlock).

use crate::table::{Align, Table};
use planner::{Plan, Serialised, SyncStats};
use serde_json::{json, Map, Value};
use sim::coverage::{Gap, GapKind};
use sim::engine::{CoreRun, Deadlock, PipeStats, Stall, SyncFinding, WaitOn, DOUBLE_SETS_KEPT};
use sim::race::{Hazard, HazardAccess};
use sim::{Config, OpId, Program, RunResult};
use std::collections::BTreeSet;

/// One part of a kernel as the reports read it: its program and plan, and what the sync pass
/// did to it.
#[derive(Clone, Copy, Debug)]
pub struct RunPart<'a> {
    /// The program that ran (the synchronised one for `sync: auto`).
    pub program: &'a Program,
    pub plan: &'a Plan,
    /// What the sync pass inserted, when the program was `sync: auto`.
    pub auto_sync: Option<&'a SyncStats>,
    /// The multi-buffers the sync pass serialised.
    pub serialised: &'a [Serialised],
}

impl<'a> From<&'a pipeline::Prepared> for RunPart<'a> {
    fn from(p: &'a pipeline::Prepared) -> RunPart<'a> {
        RunPart {
            program: &p.program,
            plan: &p.planned.plan,
            auto_sync: p.auto_sync.as_ref(),
            serialised: &p.serialised,
        }
    }
}

/// What a run report shows of the run's critical path.
#[derive(Clone, Copy, Debug, Default)]
pub enum PathView<'a> {
    /// Nothing (`--no-critical-path`, or a report of a run nothing walked).
    #[default]
    Off,
    /// The default: the "paced by" line of the summary ([`crate::critical_summary`]).
    Line(&'a sim::critical::CriticalPath),
    /// `--critical-path`: the line, the path's section and its JSON object.
    Full(&'a sim::critical::CriticalPath),
    /// The default walker gave up: the run kept more than this many records
    /// ([`sim::critical::Critical::with_budget`]).
    TooLong(u64),
}

impl<'a> PathView<'a> {
    /// The path, when it was walked.
    pub fn path(self) -> Option<&'a sim::critical::CriticalPath> {
        match self {
            PathView::Line(p) | PathView::Full(p) => Some(p),
            PathView::Off | PathView::TooLong(_) => None,
        }
    }

    /// The path, when its whole section is shown (`--critical-path`).
    pub fn full(self) -> Option<&'a sim::critical::CriticalPath> {
        match self {
            PathView::Full(p) => Some(p),
            _ => None,
        }
    }
}

/// One plan → sync → run of every part of a kernel, as the reports read it.
#[derive(Clone, Debug)]
pub struct Run<'a> {
    /// Every part of the kernel, in launch order (one for a single-type kernel); no part is
    /// special. The report's header names the kernel as its first part was loaded (every part
    /// has the kernel's name and launch).
    pub parts: Vec<RunPart<'a>>,
    pub result: &'a RunResult,
    /// `None` when the race checker was skipped.
    pub hazards: Option<&'a [Hazard]>,
    /// With `--level best`: every level tried and which one this run is.
    pub best: Option<&'a BestLevel>,
    /// With `--profile`: the per-op profile, most expensive first.
    pub profile: Option<&'a [crate::ProfileRow]>,
    /// What the report says of the run's critical path (docs/critical-path.md): by default
    /// its "paced by" line, with `--critical-path` its section too.
    pub critical: PathView<'a>,
    /// With `--roofline`: the run against its config's bounds (docs/roofline.md).
    pub roofline: Option<&'a crate::RooflineReport>,
    /// The cross-core hand-offs `sync: auto` synchronised in a mixed kernel (empty otherwise).
    pub handoffs: &'a [planner::Handoff],
    /// `--core`: the launch core whose detail the text report shows.
    pub core: Option<usize>,
    /// The work the run dropped ([`pipeline::Simulation::dropped`]).
    pub dropped: &'a [Gap],
}

impl<'a> Run<'a> {
    /// The kernel's first part: the header's kernel name, core label and sync mode, and the
    /// plan and program of the one-core views (`--level best`, the HTML page, a comparison)
    /// are its. A run always has a part.
    pub fn first(&self) -> &RunPart<'a> {
        &self.parts[0]
    }

    /// The program core `core` of the launch ran.
    pub fn program_of(&self, config: &Config, core: u32) -> &'a Program {
        let programs: Vec<&Program> = self.parts.iter().map(|p| p.program).collect();
        let slots = sim::launch::slots(&programs, config);
        let part = slots.get(core as usize).map_or(0, |s| s.part as usize);
        self.parts.get(part).unwrap_or(self.first()).program
    }

    /// The core type part `part` of the kernel runs on.
    fn part_core<'c>(&self, config: &'c Config, part: usize) -> &'c str {
        let program = self.parts.get(part).unwrap_or(self.first()).program;
        &config.core(program.core).name
    }

    /// Whether the launch has more than one core.
    pub fn is_launch(&self) -> bool {
        self.result.cores.len() > 1
    }

    /// How a finding or waiter of core `core` is named: nothing in a one-core run.
    fn who(&self, config: &Config, core: u32) -> String {
        match self.result.cores.get(core as usize) {
            Some(c) if self.is_launch() => format!("{}: ", crate::core_name(config, c)),
            _ => String::new(),
        }
    }
}

/// `run --level best`: levels 2, 1 and 0 planned, synchronised and run; the report shows the
/// fastest (the highest level among equals).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BestLevel {
    pub chosen: u8,
    /// Per level tried, in order: its total cycles, or the overflow message.
    pub levels: Vec<(u8, Result<u64, String>)>,
}

impl BestLevel {
    fn line(&self) -> String {
        let tried: Vec<String> = self
            .levels
            .iter()
            .map(|(l, r)| match r {
                Ok(c) => format!("level {l}: {c} cycles"),
                Err(_) => format!("level {l}: overflow"),
            })
            .collect();
        let order: Vec<String> = self.levels.iter().map(|(l, _)| l.to_string()).collect();
        format!(
            "best of {}: level {} ({})",
            order.join(", "),
            self.chosen,
            tried.join(", ")
        )
    }

    fn json(&self) -> Value {
        json!({
            "level": self.chosen,
            "levels": self.levels.iter().map(|(l, r)| match r {
                Ok(c) => json!({ "level": l, "total_cycles": c, "overflow": Value::Null }),
                Err(e) => json!({ "level": l, "total_cycles": Value::Null, "overflow": e }),
            }).collect::<Vec<_>>(),
        })
    }

    /// The default level (2) is slower than the chosen one, or does not fit.
    fn warning(&self) -> Option<Warning> {
        let chosen = self
            .levels
            .iter()
            .find(|l| l.0 == self.chosen)?
            .1
            .clone()
            .ok()?;
        let (_, default) = self.levels.iter().find(|l| l.0 == 2)?;
        if self.chosen == 2 {
            return None;
        }
        let message = match default {
            Ok(c) => format!(
                "level 2 (the default) takes {c} cycles, {:.2}x the {chosen} of level {}, which this report shows",
                *c as f64 / chosen.max(1) as f64,
                self.chosen
            ),
            Err(_) => format!(
                "level 2 (the default) does not fit; this report shows level {} ({chosen} cycles)",
                self.chosen
            ),
        };
        Some(Warning::new("slower_level", message))
    }
}

impl<'a> Run<'a> {
    /// A run of `program` under `plan` with `result` (one part), race-checked with no hazards,
    /// nothing inserted or serialised by the sync pass, no `--level best`, no profile: set the
    /// fields that differ.
    pub fn new(program: &'a Program, plan: &'a Plan, result: &'a RunResult) -> Run<'a> {
        Run {
            parts: vec![RunPart {
                program,
                plan,
                auto_sync: None,
                serialised: &[],
            }],
            result,
            hazards: Some(&[]),
            best: None,
            profile: None,
            critical: PathView::Off,
            roofline: None,
            handoffs: &[],
            core: None,
            dropped: &[],
        }
    }
}

impl<'a> From<&'a pipeline::Simulation> for Run<'a> {
    fn from(s: &'a pipeline::Simulation) -> Run<'a> {
        Run {
            parts: s.parts.iter().map(RunPart::from).collect(),
            result: &s.result,
            hazards: s.hazards.as_deref(),
            best: None,
            profile: None,
            critical: PathView::Off,
            roofline: None,
            handoffs: &s.handoffs,
            core: None,
            dropped: &s.dropped,
        }
    }
}

/// Something the user should know about a run that does not stop it: work the run dropped, the
/// planner's warnings, a multi-buffer the sync pass serialised, a wait that sets the pace of the
/// busiest pipe. Warnings never change the exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// `unwritten`, `unread_rows`, `plan`, `serialised`, `dominant_wait` or `slower_level`.
    pub kind: &'static str,
    /// The gm tensor a dropped-work warning is about.
    pub tensor: Option<String>,
    /// Its first missing range.
    pub range: Option<GapRange>,
    pub message: String,
}

impl Warning {
    /// A warning about no tensor.
    pub fn new(kind: &'static str, message: String) -> Warning {
        Warning {
            kind,
            tensor: None,
            range: None,
            message,
        }
    }

    /// The warning about the work a run dropped in one tensor ([`Gap`]).
    pub fn dropped(program: &Program, gap: &Gap) -> Warning {
        let t = program.tensor(gap.tensor);
        let range = GapRange::of(t, gap);
        let at = |index: &[u64]| {
            let i: Vec<String> = index.iter().map(u64::to_string).collect();
            format!("{}[{}]", t.name, i.join(", "))
        };
        let shape: Vec<String> = t.shape.iter().map(u64::to_string).collect();
        let tensor = format!("gm tensor `{}` [{}] {}", t.name, shape.join(", "), t.dtype);
        let (e, b) = (range.elements, range.bytes);
        let ranges = match gap.ranges {
            1 => "1 range".to_string(),
            n => format!("{n} ranges"),
        };
        let message = match (gap.kind, gap.rows) {
            (GapKind::Unread, Some((r0, r1))) => format!(
                "{tensor} is loaded, but no op read rows [{r0}, {r1}) ({} to {}, elements [{}, {}), bytes [{}, {})) while others were read; rows never read: {} of {}, in {ranges}",
                at(&range.from),
                at(&range.to),
                e.0,
                e.1,
                b.0,
                b.1,
                gap.missing,
                t.shape.first().copied().unwrap_or(1),
            ),
            _ => format!(
                "{tensor} is stored to, but no op wrote elements [{}, {}) ({} to {}, bytes [{}, {})); bytes never written: {} of {}, in {ranges}",
                e.0,
                e.1,
                at(&range.from),
                at(&range.to),
                b.0,
                b.1,
                gap.missing,
                t.bytes,
            ),
        };
        Warning {
            kind: gap.kind.name(),
            tensor: Some(t.name.clone()),
            range: Some(range),
            message,
        }
    }
}

/// The first range of a tensor a run left undone, as the run document's `warnings[].range`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GapRange {
    /// Elements `[lo, hi)`, row-major.
    pub elements: (u64, u64),
    /// Bytes `[lo, hi)` from the tensor's start.
    pub bytes: (u64, u64),
    /// Rows `[lo, hi)` (indices of the first dimension), for unread rows.
    pub rows: Option<(u64, u64)>,
    /// The indices of the range's first and last element.
    pub from: Vec<u64>,
    pub to: Vec<u64>,
}

impl GapRange {
    fn of(t: &sim::program::Tensor, gap: &Gap) -> GapRange {
        // the elements a byte range reaches, clipped to the tensor (an `i1` byte holds eight)
        let (lo, hi) = (
            gap.elements.0.min(t.elements.saturating_sub(1)),
            gap.elements.1.min(t.elements),
        );
        GapRange {
            elements: (lo, hi),
            bytes: gap.bytes,
            rows: gap.rows,
            from: unravel(lo, &t.shape),
            to: unravel(hi.saturating_sub(1).max(lo), &t.shape),
        }
    }

    fn json(&self) -> Value {
        json!({
            "elements": [self.elements.0, self.elements.1],
            "bytes": [self.bytes.0, self.bytes.1],
            "rows": self.rows.map_or(Value::Null, |(a, b)| json!([a, b])),
            "from": self.from,
            "to": self.to,
        })
    }
}

/// The index of row-major element `e` of `shape`.
fn unravel(mut e: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        out[d] = e % n.max(1);
        e /= n.max(1);
    }
    out
}

/// A wait on one flag that takes at least this share of the run on the busiest pipe ...
const DOMINANT_SHARE: f64 = 0.2;

/// The run's warnings, in a fixed order: dropped work (tensor by tensor), plan, serialised
/// buffers, dominant waits, a slower default level.
pub fn warnings(run: &Run) -> Vec<Warning> {
    // the parts share their gm tensors (one table, the same ids): any part names them
    let first = run.first();
    let mut out: Vec<Warning> = run
        .dropped
        .iter()
        .map(|g| Warning::dropped(first.program, g))
        .collect();
    // the plan and sync warnings of the first part (the one-core report's; a mixed kernel's
    // other part's are in its plan document)
    out.extend(
        first
            .plan
            .warnings
            .iter()
            .map(|w| Warning::new("plan", w.clone())),
    );
    out.extend(first.serialised.iter().map(|s| {
        Warning::new(
            "serialised",
            format!("multi-buffer `{}` is serialised: {}", s.buffer, s.message),
        )
    }));
    // the first core's pace, in the program it runs: core 0 is block 0's first part
    if let Some(core) = run.result.cores.first() {
        out.extend(dominant_waits(first.program, core, run.result.total_cycles));
    }
    out.extend(run.best.and_then(BestLevel::warning));
    out
}

/// The busiest pipe (the pipe bound) spending at least [`DOMINANT_SHARE`] of the run, and more
/// than all its other stalls together, waiting for the flags of one source pipe: that wait, not
/// the pipe's work, sets the pace.
fn dominant_waits(program: &Program, core: &CoreRun, total: u64) -> Vec<Warning> {
    let Some((bound, _)) = core.pipe_bound() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in sorted_pipes(core).into_iter().filter(|p| p.pipe == bound) {
        let stalled: u64 = p.stalls.iter().map(|(_, c)| c).sum();
        // one wait_flag op rotating over ids counts once: group by the flag's source pipe
        let mut by_src: Vec<(sim::Pipe, u64, Vec<u32>)> = Vec::new();
        for &(s, c) in &p.stalls {
            if let Stall::WaitFlag { src, id } = s {
                match by_src.iter_mut().find(|w| w.0 == src) {
                    Some(w) => {
                        w.1 += c;
                        w.2.push(id);
                    }
                    None => by_src.push((src, c, vec![id])),
                }
            }
        }
        by_src.sort_by_key(|w| (std::cmp::Reverse(w.1), w.0));
        let Some((src, c, mut ids)) = by_src.into_iter().next() else {
            continue;
        };
        if (c as f64) < DOMINANT_SHARE * total as f64 || 2 * c <= stalled {
            continue;
        }
        ids.sort_unstable();
        let ops: Vec<String> = program
            .ops
            .iter()
            .enumerate()
            .filter(|(_, o)| match &o.kind {
                sim::program::OpKind::WaitFlag { src: s, dst, id: e } => {
                    *s == src
                        && *dst == p.pipe
                        && e.as_const().is_none_or(|v| ids.contains(&(v as u32)))
                }
                _ => false,
            })
            .map(|(i, _)| format!("`{}`", program.locate(OpId::new(i))))
            .collect();
        let shown = match ops.len() {
            0 => String::new(),
            1..=3 => format!(" at {}", ops.join(", ")),
            n => format!(" at {} and {} more", ops[..3].join(", "), n - 3),
        };
        let ids: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
        let id = ids.join(", ");
        out.push(Warning::new(
            "dominant_wait",
            format!(
                "{pipe}, the busiest pipe, waits {c} cycles ({pct} % of the run) for flags {src}->{pipe} ({id}){shown}: that wait, more than {pipe}'s own work, sets the pace",
                pipe = p.pipe,
                pct = crate::percent(c, total),
            ),
        ));
    }
    out
}

/// The warnings as the run document's `warnings`: [{`kind`, `tensor`, `range`, `message`}]
/// (`tensor` and `range` `null` but for dropped work).
pub fn warnings_json(warnings: &[Warning]) -> Value {
    Value::Array(
        warnings
            .iter()
            .map(|w| {
                json!({
                    "kind": w.kind,
                    "tensor": w.tensor,
                    "range": w.range.as_ref().map_or(Value::Null, GapRange::json),
                    "message": w.message,
                })
            })
            .collect(),
    )
}

/// The warnings as text lines (nothing when there are none).
pub fn warnings_text(warnings: &[Warning]) -> String {
    if warnings.is_empty() {
        return String::new();
    }
    let mut out = format!("\nwarnings ({}):\n", warnings.len());
    for w in warnings {
        out.push_str(&format!("  [{}] {}\n", w.kind, w.message));
    }
    out
}

/// The run report as text: header, per-pipe table, totals and derived metrics, a legend, then
/// the sync findings and the deadlock, if any.
///
/// `auto_sync` is `Some` when the program was `sync: auto` and `program` is what the sync pass
/// made of it (`sync: manual` with the inserted ops): the header then says `sync auto` and what
/// was inserted, and one `cross` line per cross-core hand-off of a mixed kernel.
pub fn run_text(config: &Config, run: &Run) -> String {
    let first = run.first();
    let (program, plan, launch) = (first.program, first.plan, run.result);
    let (hazards, auto_sync) = (run.hazards, first.auto_sync);
    let total = launch.total_cycles;
    // a launch of many cores: its summary, then one core's detail when `--core` asks
    let view = run
        .core
        .filter(|_| run.is_launch())
        .map(|k| crate::core_view(launch, k));
    let result = view.as_ref().unwrap_or(launch);
    let detail = !run.is_launch() || view.is_some();
    let mut out = header(program, config);
    // the header names the first part's core; every other part's follows
    for p in &run.parts[1..] {
        out.push_str(&format!(
            "config  {} (part {})\n",
            config.core_label(p.program.core),
            config.core(p.program.core).name
        ));
    }
    out.push_str(&format!("sync    {}\n", sync_name(program, auto_sync)));
    if let Some(stats) = auto_sync {
        out.push_str(&format!("syncs   {}\n", syncs_summary(stats)));
    }
    for h in run.handoffs {
        out.push_str(&format!("cross   {}\n", handoff_text(config, run, h)));
    }
    if let Some(best) = run.best {
        out.push_str(&format!("levels  {}\n", best.line()));
    }
    let mut scopes: Vec<_> = plan.scopes.iter().collect();
    scopes.sort_by_key(|s| s.space);
    // scopes the program does not use are in the plan document, not here
    let used: Vec<String> = scopes
        .iter()
        .filter(|s| s.used > 0)
        .map(|s| {
            format!(
                "{} {} of {} bytes ({})",
                s.space.report_name(),
                s.used,
                s.capacity,
                s.mode.name()
            )
        })
        .collect();
    if used.is_empty() {
        out.push_str("plan    no on-chip buffers\n");
    }
    for line in used {
        out.push_str(&format!("plan    {line}\n"));
    }
    for p in &run.parts[1..] {
        let core = &config.core(p.program.core).name;
        for s in p.plan.scopes.iter().filter(|s| s.used > 0) {
            out.push_str(&format!(
                "plan    {core}: {} {} of {} bytes ({})\n",
                s.space.report_name(),
                s.used,
                s.capacity,
                s.mode.name()
            ));
        }
    }
    out.push('\n');
    if run.is_launch() {
        out.push_str(&crate::launch_text(config, launch, program.launch.blocks));
    }
    if let (Some(k), true) = (run.core, run.is_launch()) {
        out.push_str(&format!(
            "core    {}\n\n",
            crate::core_name(config, &launch.cores[k])
        ));
    }
    // the core the detail shows: the run's only core, `--core`'s, or a launch's first (whose
    // stall reasons head the summary's table)
    let shown = &result.cores[0];
    let pipes = if detail {
        sorted_pipes(shown)
    } else {
        Vec::new()
    };
    let reasons = stall_reasons(shown);
    let mut columns = vec![
        ("pipe".to_string(), Align::Left),
        ("instr".to_string(), Align::Right),
        ("busy".to_string(), Align::Right),
    ];
    // a column is headed by the reason's one name, the JSON key (`wait_flag V#0`), as in every
    // other report
    columns.extend(reasons.iter().map(|r| (r.to_string(), Align::Right)));
    columns.extend([
        ("starved".to_string(), Align::Right),
        ("idle".to_string(), Align::Right),
        ("util %".to_string(), Align::Right),
    ]);
    let mut table = Table::new(columns);
    for p in &pipes {
        let mut row = vec![
            p.pipe.report_name().to_string(),
            p.instructions.to_string(),
            p.busy.to_string(),
        ];
        row.extend(reasons.iter().map(|r| stall_cycles(p, *r).to_string()));
        row.extend([
            p.starved.to_string(),
            p.idle.to_string(),
            crate::percent(p.busy, total),
        ]);
        table.row(row);
    }
    if detail {
        out.push_str(&table.render(""));
        out.push('\n');
    }

    let mut summary = Table::new(vec![
        (String::new(), Align::Left),
        (String::new(), Align::Right),
        (String::new(), Align::Left),
    ]);
    summary.row(vec![
        "total".into(),
        total.to_string(),
        format!(
            "cycles = {} us at {} MHz",
            fmt_micros(total, config.clock_mhz),
            config.clock_mhz
        ),
    ]);
    if let Some(cost) = config.launch_cost {
        let (cores, cycles) = (launch.cores.len(), launch.launch_cycles);
        summary.row(vec![
            "launch cost".into(),
            cycles.to_string(),
            format!(
                "cycles = {} us: {} fixed + {cores} core{} x {}",
                fmt_micros(cycles, config.clock_mhz),
                cost.fixed_cycles,
                if cores == 1 { "" } else { "s" },
                cost.per_core_cycles
            ),
        ]);
        let end = total.saturating_add(cycles);
        summary.row(vec![
            "end to end".into(),
            end.to_string(),
            format!(
                "cycles = {} us: the launch cost, then the cores",
                fmt_micros(end, config.clock_mhz)
            ),
        ]);
    }
    if detail {
        summary_detail(&mut summary, shown, total);
    }
    // the header row of this table is empty; drop it
    let rendered = summary.render("");
    out.push_str(rendered.split_once('\n').map_or("", |(_, rest)| rest));
    if let (Some(m), Some(mc)) = (&result.memory, &config.memory) {
        out.push_str(&memory_line(m));
        out.push_str(&bandwidth_line(config, mc, m, total));
    }
    if let Some(line) = paced_by(config, run) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');

    if detail {
        out.push_str(&legend(&reasons));
    }

    match hazards {
        None => out.push_str("\nrace check: not run (--no-race-check)\n"),
        Some([]) => out.push_str("\nrace check: no hazards\n"),
        Some(hs) => {
            out.push_str(&format!("\nhazards ({}):\n", hs.len()));
            for h in hs {
                out.push_str(&format!("  {h}\n"));
                if let Some(fix) = &h.fix {
                    out.push_str(&format!("    fix: {fix}\n"));
                }
            }
        }
    }
    if !launch.findings.is_empty() {
        out.push('\n');
        out.push_str(&format!("sync findings ({}):\n", launch.findings.len()));
        for f in &launch.findings {
            // the op is in the program of the core that made it (a cross-core set: maybe the
            // other part's)
            out.push_str(&format!(
                "  {}{}\n",
                run.who(config, f.core()),
                finding_text(run.program_of(config, f.op_core()), f)
            ));
        }
    }
    if let Some(d) = &launch.deadlock {
        out.push('\n');
        out.push_str(&deadlock_text_of(config, run, d));
    }
    out.push_str(&warnings_text(&warnings(run)));
    if let Some(stopped) = &result.stopped {
        out.push_str(&format!(
            "\nstopped: {stopped}; the figures above cover the cycles up to there\n"
        ));
    }
    if let Some(rows) = run.profile {
        out.push('\n');
        out.push_str(&crate::profile_text(rows, total, launch.cores.len(), 0));
    }
    if let Some(path) = run.critical.full() {
        out.push('\n');
        out.push_str(&crate::critical_text(config, run, path));
    }
    if let Some(r) = run.roofline {
        out.push('\n');
        out.push_str(&crate::roofline_text(r));
    }
    out
}

/// The summary's "paced by" line, when the critical path was followed (or gave up).
pub fn paced_by(config: &Config, run: &Run<'_>) -> Option<String> {
    match run.critical {
        PathView::Off => None,
        PathView::Line(p) | PathView::Full(p) => Some(crate::critical_summary(config, run, p)),
        PathView::TooLong(records) => Some(format!(
            "paced by: not followed (the run kept more than {records} instructions and scalar spans; \
             run --critical-path follows a run of any length)"
        )),
    }
}

/// The per-core rows of the summary: overlap, pipe bound, efficiency, bank conflicts.
fn summary_detail(summary: &mut Table, core: &CoreRun, total: u64) {
    summary.row(vec![
        "overlap".into(),
        format!("{} %", crate::percent(core.overlap_cycles, total)),
        format!("({} cycles)", core.overlap_cycles),
    ]);
    match core.pipe_bound() {
        Some((pipe, cycles)) => {
            summary.row(vec![
                "pipe bound".into(),
                cycles.to_string(),
                format!("cycles ({pipe})"),
            ]);
            summary.row(vec![
                "efficiency".into(),
                format!("{} %", crate::percent(cycles, total)),
                String::new(),
            ]);
        }
        None => summary.row(vec![
            "pipe bound".into(),
            "-".into(),
            "(no pipe besides S)".into(),
        ]),
    }
    if let Some(c) = core.bank_conflict_cycles {
        summary.row(vec![
            "bank conflicts".into(),
            c.to_string(),
            "cycles of V busy (ub_banks)".into(),
        ]);
    }
}

/// One hazard: its kind, memory, overlapping bytes, both accesses and the one-line message.
pub fn hazard_json(h: &Hazard) -> Value {
    let access = |a: &HazardAccess| {
        let mut vars = Map::new();
        for (k, v) in &a.vars {
            vars.insert(k.clone(), json!(v));
        }
        json!({
            "core": a.core,
            "core_name": a.core_name,
            "pipe": a.pipe.report_name(),
            "access": if a.write { "write" } else { "read" },
            "op": a.path,
            "op_kind": a.name,
            "line": line_json(a.line),
            "column": line_json(a.column),
            "vars": vars,
        })
    };
    json!({
        "kind": h.kind.name(),
        "memory": h.memory_label,
        "bytes": [h.lo, h.hi],
        "first": access(&h.first),
        "second": access(&h.second),
        "message": h.to_string(),
        "conservative": h.conservative,
        "fix": h.fix.as_ref().map_or(Value::Null, fix_json),
    })
}

/// A hazard's suggested synchronisation: the ops to insert, each with where, and the line.
fn fix_json(fix: &sim::race::Fix) -> Value {
    let ops: Vec<Value> = fix
        .ops
        .iter()
        .map(|o| {
            json!({
                "insert": o.yaml,
                "place": if o.after { "after" } else { "before" },
                "op": o.path,
                "op_kind": o.name,
                "line": line_json(o.line),
                "column": line_json(o.column),
            })
        })
        .collect();
    json!({ "ops": ops, "message": fix.to_string() })
}

/// The run report as a JSON document with a stable key order: `schema`, then [`RUN_KEYS`] (see
/// the crate docs).
/// `auto_sync` as in [`run_text`]: `sync` is then `auto` and `syncs_inserted` its counts
/// (all zero otherwise).
pub fn run_json(config: &Config, run: &Run) -> Value {
    let first = run.first();
    let (program, plan, result) = (first.program, first.plan, run.result);
    let (hazards, auto_sync) = (run.hazards, first.auto_sync);
    let total = result.total_cycles;
    // the document's top-level figures are the first core's (a one-core run's only core); its
    // `launch` lists every core alike
    let core = &result.cores[0];
    let pipes = crate::launch::pipes_json(&core.pipes, total);
    let pipe_bound = match core.pipe_bound() {
        Some((pipe, cycles)) => json!({ "pipe": pipe.report_name(), "cycles": cycles }),
        None => Value::Null,
    };
    let name = |core: u32| {
        result
            .cores
            .get(core as usize)
            .map_or(String::new(), |c| crate::core_name(config, c))
    };
    let findings: Vec<Value> = result
        .findings
        .iter()
        .map(|f| {
            let mut v = finding_json(run.program_of(config, f.op_core()), f);
            if let Value::Object(m) = &mut v {
                m.insert("core".into(), json!(name(f.core())));
                if m.contains_key("set_core") {
                    m.insert("set_core".into(), json!(name(f.op_core())));
                }
            }
            v
        })
        .collect();
    let deadlock = match &result.deadlock {
        Some(d) => json!({
            "cycle": d.cycle,
            "waiters": d.waiters.iter().map(|w| {
                let p = run.program_of(config, w.core);
                json!({
                    "core": name(w.core),
                    "pipe": w.pipe.report_name(),
                    "waits_on": w.on.to_string(),
                    "op": op_path(p, w.op),
                    "op_kind": op_kind(p, w.op),
                    "line": op_line(p, w.op),
                    "column": op_column(p, w.op),
                })
            }).collect::<Vec<_>>(),
        }),
        None => Value::Null,
    };
    // a mixed kernel's parts: each core type's plan
    let parts = if run.parts.len() == 1 {
        Value::Null
    } else {
        let v = run.parts.iter().map(|p| {
            json!({
                "core": config.core(p.program.core).name,
                "plan": crate::plan_json(p.program, p.plan),
            })
        });
        Value::Array(v.collect())
    };
    let doc = json!({
        "schema": crate::SCHEMA,
        "kernel": program.kernel,
        "config": config.core_label(program.core),
        "sync": sync_name(program, auto_sync),
        "total_cycles": total,
        "microseconds": micros(total, config.clock_mhz),
        "launch_cost": launch_cost_json(config, result),
        "pipes": pipes,
        "overlap": crate::round4(core.overlap(total)),
        "overlap_cycles": core.overlap_cycles,
        "pipe_bound": pipe_bound,
        "efficiency": crate::round4(core.efficiency(total)),
        "bank_conflict_cycles": core.bank_conflict_cycles,
        "memory": match (&result.memory, &config.memory) {
            (Some(m), Some(mc)) => memory_json(config, mc, m, total),
            _ => Value::Null,
        },
        // `null`, not `[]`, when no race check ran: no claim that none was found
        "race_check": hazards.is_some(),
        "hazards": hazards.map_or(Value::Null, |hs| Value::Array(hs.iter().map(hazard_json).collect())),
        "findings": findings,
        "deadlock": deadlock,
        "stopped": result.stopped.map_or(Value::Null, |s| stopped_json(&s)),
        "syncs_inserted": syncs_json(&auto_sync.copied().unwrap_or_default()),
        "cross_sync": cross_sync_json(config, run),
        "best_level": run.best.map_or(Value::Null, BestLevel::json),
        "warnings": warnings_json(&warnings(run)),
        "profile": run.profile.map_or(Value::Null, crate::profile_json),
        "paced_by": paced_by(config, run).map_or(Value::Null, Value::from),
        "critical_path": run.critical.full().map_or(Value::Null, |p| crate::critical_json(config, run, p)),
        "roofline": run.roofline.map_or(Value::Null, crate::roofline_json),
        "plan": crate::plan_json(program, plan),
        "launch": crate::launch_json(config, result, program.launch.blocks, parts),
    });
    debug_assert!(doc
        .as_object()
        .is_some_and(|m| m.keys().skip(1).eq(RUN_KEYS.iter())));
    doc
}

/// The keys of the run document after `schema`, in order. A `compare --format json` entry has
/// these keys whether its level ran or overflowed ([`crate::compare_entry`]).
pub const RUN_KEYS: [&str; 28] = [
    "kernel",
    "config",
    "sync",
    "total_cycles",
    "microseconds",
    "launch_cost",
    "pipes",
    "overlap",
    "overlap_cycles",
    "pipe_bound",
    "efficiency",
    "bank_conflict_cycles",
    "memory",
    "race_check",
    "hazards",
    "findings",
    "deadlock",
    "stopped",
    "syncs_inserted",
    "cross_sync",
    "best_level",
    "warnings",
    "profile",
    "paced_by",
    "critical_path",
    "roofline",
    "plan",
    "launch",
];

/// The run document's `launch_cost`: what starting the launch cost, apart from the cores'
/// `total_cycles`, and the two together; `null` when the config has no `launch_cost`.
fn launch_cost_json(config: &Config, result: &RunResult) -> Value {
    let Some(cost) = config.launch_cost else {
        return Value::Null;
    };
    let end = result.total_cycles.saturating_add(result.launch_cycles);
    json!({
        "cycles": result.launch_cycles,
        "fixed_cycles": cost.fixed_cycles,
        "per_core_cycles": cost.per_core_cycles,
        "cores": result.cores.len(),
        "end_to_end_cycles": end,
        "end_to_end_microseconds": micros(end, config.clock_mhz),
    })
}

/// `bytes` moved in `cycles` at `clock_mhz`, in GB/s.
fn gb_per_s(bytes: u64, cycles: u64, clock_mhz: u32) -> f64 {
    if cycles == 0 {
        return 0.0;
    }
    bytes as f64 * f64::from(clock_mhz) / cycles as f64 / 1000.0
}

/// One shared rate's achieved bandwidth over the run: {bytes, gb_per_s, peak_gb_per_s,
/// of_peak}.
fn bandwidth_json(bytes: u64, peak: u64, cycles: u64, clock_mhz: u32) -> Value {
    let of_peak = if cycles == 0 {
        0.0
    } else {
        bytes as f64 / (peak as f64 * cycles as f64)
    };
    json!({
        "bytes": bytes,
        "gb_per_s": (gb_per_s(bytes, cycles, clock_mhz) * 1000.0).round() / 1000.0,
        "peak_gb_per_s": (gb_per_s(peak, 1, clock_mhz) * 1000.0).round() / 1000.0,
        "of_peak": crate::round4(of_peak),
    })
}

/// The report's `bandwidth` line: what HBM and the chip's L2 moved over the run, as GB/s and
/// a share of their peak.
fn bandwidth_line(
    config: &Config,
    mc: &sim::config::MemoryConfig,
    m: &sim::engine::MemoryStats,
    total: u64,
) -> String {
    let clock = config.clock_mhz;
    let one = |bytes: u64, peak: u64| {
        format!(
            "{:.1} GB/s ({} % of {:.1})",
            gb_per_s(bytes, total, clock),
            crate::percent(bytes, peak.saturating_mul(total)),
            gb_per_s(peak, 1, clock)
        )
    };
    format!(
        "bandwidth   HBM {}, L2 {}\n",
        one(m.hbm_traffic(), mc.hbm_bytes_per_cycle),
        one(m.l2_traffic(), mc.l2_chip_bytes_per_cycle)
    )
}

/// What the gm moves found in L2 and HBM, and the bandwidth they drew (docs/json.md,
/// `memory`).
fn memory_json(
    config: &Config,
    mc: &sim::config::MemoryConfig,
    m: &sim::engine::MemoryStats,
    total: u64,
) -> Value {
    let clock = config.clock_mhz;
    json!({
        "l2_start": m.start.name(),
        "warm_lines": m.warm_lines,
        "reads": m.reads,
        "hit_bytes": m.hit_bytes,
        "hit_lines": m.hit_lines,
        "miss_bytes": m.miss_bytes,
        "miss_lines": m.miss_lines,
        "hbm_bytes": m.hbm_bytes,
        "writes": m.writes,
        "write_bytes": m.write_bytes,
        "evicted_lines": m.evicted_lines,
        "hbm": bandwidth_json(m.hbm_traffic(), mc.hbm_bytes_per_cycle, total, clock),
        "l2": bandwidth_json(m.l2_traffic(), mc.l2_chip_bytes_per_cycle, total, clock),
    })
}

/// The report's `memory` line.
fn memory_line(m: &sim::engine::MemoryStats) -> String {
    format!(
        "memory      L2 {}: {} reads hit {} B ({} lines), missed {} B ({} lines), HBM {} B; \
         {} writes {} B; {} lines evicted\n",
        m.start.name(),
        m.reads,
        m.hit_bytes,
        m.hit_lines,
        m.miss_bytes,
        m.miss_lines,
        m.hbm_bytes,
        m.writes,
        m.write_bytes,
        m.evicted_lines
    )
}

/// A run that reached a limit: {`limit` (`max_cycles` or `max_instructions`), `value`, `cycle`}.
fn stopped_json(s: &sim::engine::Stopped) -> Value {
    let (limit, value) = match s.limit {
        sim::engine::Limit::Cycles(n) => ("max_cycles", n),
        sim::engine::Limit::Instructions(n) => ("max_instructions", n),
    };
    json!({ "limit": limit, "value": value, "cycle": s.cycle })
}

/// The first lines of a report: the kernel and where it ran.
pub(crate) fn header(program: &Program, config: &Config) -> String {
    format!(
        "kernel  {}\nconfig  {} ({} MHz)\n",
        program.kernel,
        config.core_label(program.core),
        config.clock_mhz
    )
}

/// `auto` when the sync pass synchronised the program, else the program's own mode.
pub(crate) fn sync_name(program: &Program, auto_sync: Option<&SyncStats>) -> &'static str {
    match auto_sync {
        Some(_) => sim::program::SyncMode::Auto.name(),
        None => program.sync.name(),
    }
}

/// What the sync pass inserted, as the run document's `syncs_inserted` object.
pub fn syncs_json(stats: &SyncStats) -> Value {
    json!({
        "dependencies": stats.dependencies,
        "set_flags": stats.set_flags,
        "wait_flags": stats.wait_flags,
        "barriers": stats.barriers,
        "barrier_alls": stats.barrier_alls,
        "merged": stats.merged,
        "fallbacks": stats.fallbacks,
    })
}

/// A list of op paths for text: `a`, `a and b`, `a, b and c`.
fn op_list(paths: &[&str]) -> String {
    match paths {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The ops of one side of a hand-off, as [`planner::Handoff`] joins them (`, `).
fn handoff_ops(paths: &str) -> Vec<&str> {
    paths.split(", ").filter(|p| !p.is_empty()).collect()
}

/// One hand-off the cross-core pass inserted, in one line of the report's header: `gm.ws aic
/// -> aiv: flag #0 after aic.body[1].for.body[2], wait before aiv.body[0].for.body[1]; reverse
/// flag #1, depth 16; 24 times per core`.
fn handoff_text(config: &Config, run: &Run, h: &planner::Handoff) -> String {
    let reverse = match h.reverse {
        Some((id, depth)) => format!("; reverse flag #{id}, depth {depth}"),
        None => String::new(),
    };
    let times = if h.count == 1 {
        "once".to_string()
    } else {
        format!("{} times", h.count)
    };
    format!(
        "gm.{} {} -> {}: flag #{} after {}, wait before {}{reverse}; {times} per core",
        h.tensor,
        run.part_core(config, h.producer.0),
        run.part_core(config, h.consumer.0),
        h.flag,
        op_list(&handoff_ops(&h.producer.1)),
        op_list(&handoff_ops(&h.consumer.1)),
    )
}

/// The run document's `cross_sync`: one object per hand-off the cross-core pass inserted, in
/// the order of the gm tensors (`[]` when it inserted none).
fn cross_sync_json(config: &Config, run: &Run) -> Value {
    let side = |(part, paths): &(usize, String)| {
        json!({
            "core": run.part_core(config, *part),
            "ops": handoff_ops(paths),
        })
    };
    Value::Array(
        run.handoffs
            .iter()
            .map(|h| {
                json!({
                    "tensor": h.tensor,
                    "producer": side(&h.producer),
                    "consumer": side(&h.consumer),
                    "flag": h.flag,
                    "reverse": h.reverse.map_or(Value::Null, |(flag, depth)| {
                        json!({ "flag": flag, "depth": depth })
                    }),
                    "count": h.count,
                })
            })
            .collect(),
    )
}

/// What the sync pass inserted, in one line: `inserted 4 set_flag, 4 wait_flag, 1 barrier,
/// 1 barrier: all for 5 dependencies (0 merged, 0 fell back to barrier: all)`.
pub fn syncs_summary(stats: &SyncStats) -> String {
    format!(
        "inserted {} set_flag, {} wait_flag, {} barrier, {} barrier: all for {} dependenc{} \
         ({} merged, {} fell back to barrier: all)",
        stats.set_flags,
        stats.wait_flags,
        stats.barriers,
        stats.barrier_alls,
        stats.dependencies,
        if stats.dependencies == 1 { "y" } else { "ies" },
        stats.merged,
        stats.fallbacks,
    )
}

/// One line describing a sync finding: what happened, the flag, and the op that did it.
pub fn finding_text(program: &Program, f: &SyncFinding) -> String {
    match f {
        SyncFinding::DoubleSet {
            src,
            dst,
            id,
            op,
            cycle,
            ..
        } => format!(
            "double set: flag {src}->{dst}#{id} set again at cycle {cycle} before a wait_flag \
             consumed it; the second set is lost ({})",
            op_ref(program, *op)
        ),
        SyncFinding::DoubleSetsOmitted { count, .. } => format!(
            "double set: {count} more on this core, not listed (a run keeps the first \
             {DOUBLE_SETS_KEPT} of each core)"
        ),
        SyncFinding::UnpairedSet {
            src, dst, id, op, ..
        } => format!(
            "unpaired set_flag: flag {src}->{dst}#{id} was still set when the kernel ended; \
             no wait_flag consumed it ({})",
            op_ref(program, *op)
        ),
        SyncFinding::CrossOverflow {
            id,
            count,
            op,
            cycle,
            ..
        } => format!(
            "cross-core flag overflow: counter cross#{id} reached {count} at cycle {cycle}, \
             above max_pending; the set that raised it: {}",
            op_ref(program, *op)
        ),
        SyncFinding::UnpairedCrossSet { id, count, op, .. } => format!(
            "unpaired cross_set: counter cross#{id} was still {count} when the kernel ended; \
             no cross_wait took {}; the last set that raised it: {}",
            if *count == 1 { "it" } else { "them" },
            op_ref(program, *op)
        ),
    }
}

/// The deadlock section of a run, whose waiters may be on different cores.
fn deadlock_text_of(config: &Config, run: &Run, d: &Deadlock) -> String {
    if !run.is_launch() {
        return deadlock_text(run.first().program, d);
    }
    let core =
        |w: &sim::engine::Waiter| crate::core_name(config, &run.result.cores[w.core as usize]);
    deadlock_section(d, Some(&core), |w| run.program_of(config, w.core))
}

/// The deadlock section: the cycle, then one line per waiting pipe.
pub fn deadlock_text(program: &Program, d: &Deadlock) -> String {
    deadlock_section(d, None, |_| program)
}

/// The deadlock section, with a core column when `core` names each waiter's core (a launch
/// of many cores); `program` gives the program a waiter's op belongs to.
fn deadlock_section<'p>(
    d: &Deadlock,
    core: Option<&dyn Fn(&sim::engine::Waiter) -> String>,
    program: impl Fn(&sim::engine::Waiter) -> &'p Program,
) -> String {
    let mut out = format!(
        "DEADLOCK at cycle {}: nothing can move, and {} pipe{} wait{}:\n",
        d.cycle,
        d.waiters.len(),
        if d.waiters.len() == 1 { "" } else { "s" },
        if d.waiters.len() == 1 { "s" } else { "" },
    );
    let mut columns = vec![
        ("pipe".into(), Align::Left),
        ("waits on".into(), Align::Left),
        ("op".into(), Align::Left),
    ];
    if core.is_some() {
        columns.insert(0, ("core".into(), Align::Left));
    }
    let mut t = Table::new(columns);
    for w in &d.waiters {
        let mut row = vec![
            w.pipe.report_name().to_string(),
            w.on.to_string(),
            op_ref(program(w), w.op),
        ];
        if let Some(name) = core {
            row.insert(0, name(w));
        }
        t.row(row);
    }
    out.push_str(&t.render("  "));
    if d.waiters
        .iter()
        .any(|w| matches!(w.on, WaitOn::Flag { .. }))
    {
        out.push_str(
            "hint: a wait_flag on SRC->DST#id completes only after a set_flag with the same \
             src, dst and id; check that every wait has a set earlier in program order\n",
        );
    }
    if d.waiters
        .iter()
        .any(|w| matches!(w.on, WaitOn::Cross { .. }))
    {
        out.push_str(
            "hint: a cross_wait on #id completes only after the cross_set that signals this \
             core's counter id: check the other core type's sets, their mode and id\n",
        );
    }
    out
}

fn finding_json(program: &Program, f: &SyncFinding) -> Value {
    match f {
        SyncFinding::DoubleSet {
            src,
            dst,
            id,
            op,
            cycle,
            ..
        } => json!({
            "kind": "double_set",
            "flag": format!("{src}->{dst}#{id}"),
            "op": op_path(program, *op),
            "op_kind": op_kind(program, *op),
            "line": op_line(program, *op),
            "column": op_column(program, *op),
            "cycle": cycle,
        }),
        SyncFinding::DoubleSetsOmitted { count, .. } => json!({
            "kind": "double_sets_omitted",
            "count": count,
            "kept": DOUBLE_SETS_KEPT,
        }),
        SyncFinding::UnpairedSet {
            src, dst, id, op, ..
        } => json!({
            "kind": "unpaired_set_flag",
            "flag": format!("{src}->{dst}#{id}"),
            "op": op_path(program, *op),
            "op_kind": op_kind(program, *op),
            "line": op_line(program, *op),
            "column": op_column(program, *op),
        }),
        SyncFinding::CrossOverflow {
            core,
            id,
            count,
            set_core,
            op,
            cycle,
        } => json!({
            "kind": "cross_core_overflow",
            "core": core,
            "flag": format!("cross#{id}"),
            "count": count,
            "set_core": set_core,
            "op": op_path(program, *op),
            "op_kind": op_kind(program, *op),
            "line": op_line(program, *op),
            "column": op_column(program, *op),
            "cycle": cycle,
        }),
        SyncFinding::UnpairedCrossSet {
            core,
            id,
            count,
            set_core,
            op,
        } => json!({
            "kind": "unpaired_cross_set",
            "core": core,
            "flag": format!("cross#{id}"),
            "count": count,
            "set_core": set_core,
            "op": op_path(program, *op),
            "op_kind": op_kind(program, *op),
            "line": op_line(program, *op),
            "column": op_column(program, *op),
        }),
    }
}

/// How a finding names op `op`: its file, line, column and text, or its YAML path and kind
/// when it has no location ([`Program::locate`]).
pub fn op_ref(program: &Program, op: OpId) -> String {
    program.locate(op)
}

/// A line or column in JSON: `null` when unknown (0).
pub(crate) fn line_json(n: u32) -> Value {
    if n == 0 {
        Value::Null
    } else {
        json!(n)
    }
}

/// The line op `op` is written at, in JSON (`null` when unknown).
pub(crate) fn op_line(program: &Program, op: OpId) -> Value {
    line_json(program.ops.get(op.index()).map_or(0, |o| o.loc.line))
}

/// The column op `op` is written at, in JSON (`null` when unknown).
pub(crate) fn op_column(program: &Program, op: OpId) -> Value {
    line_json(program.ops.get(op.index()).map_or(0, |o| o.loc.column))
}

fn op_path(program: &Program, op: OpId) -> String {
    program
        .ops
        .get(op.index())
        .map_or_else(|| op.to_string(), |o| o.path.clone())
}

fn op_kind(program: &Program, op: OpId) -> &'static str {
    program.ops.get(op.index()).map_or("?", |o| o.kind.name())
}

pub(crate) fn sorted_pipes(core: &CoreRun) -> Vec<&PipeStats> {
    let mut v: Vec<&PipeStats> = core.pipes.iter().collect();
    v.sort_by_key(|p| p.pipe);
    v
}

/// Every stall reason with cycles on some pipe, in [`Stall`] order.
fn stall_reasons(core: &CoreRun) -> Vec<Stall> {
    let set: BTreeSet<Stall> = core
        .pipes
        .iter()
        .flat_map(|p| p.stalls.iter().filter(|(_, c)| *c > 0).map(|(s, _)| *s))
        .collect();
    set.into_iter().collect()
}

fn stall_cycles(p: &PipeStats, reason: Stall) -> u64 {
    p.stalls
        .iter()
        .filter(|(s, _)| *s == reason)
        .map(|(_, c)| c)
        .sum()
}

/// Microseconds at the config clock, rounded to the nanosecond.
pub(crate) fn micros(total: u64, clock_mhz: u32) -> f64 {
    if clock_mhz == 0 {
        return 0.0;
    }
    (total as f64 / clock_mhz as f64 * 1000.0).round() / 1000.0
}

pub(crate) fn fmt_micros(total: u64, clock_mhz: u32) -> String {
    format!("{:.3}", micros(total, clock_mhz))
}

fn legend(reasons: &[Stall]) -> String {
    let mut lines: Vec<(String, String)> = vec![
        (
            "instr".into(),
            "instructions the pipe started, flags and barriers included (S: its own ops, loop \
             iterations and `if` evaluations, not what it sends to other pipes)"
                .into(),
        ),
        ("busy".into(), "cycles the pipe did instruction work".into()),
    ];
    let mut kinds = BTreeSet::new();
    for r in reasons {
        let (key, text) = match r {
            Stall::WaitFlag { .. } => (
                "wait_flag P#i",
                "a wait_flag at the head of the queue waited for the flag from pipe P with id i",
            ),
            Stall::CrossWait { .. } => (
                "cross_wait #i",
                "a cross_wait at the head of the queue waited for its core's cross-core counter i",
            ),
            Stall::WaitMacro { .. } => (
                "wait_flag P#mmad_l1",
                "a part of an mmad_l1 waited for the other on pipe P (M: a chunk's copies; MTE1: M to free an L0 half)",
            ),
            Stall::Drain => (
                "drain",
                "a set_flag or barrier waited for earlier instructions of its pipe to complete",
            ),
            Stall::QueueFull(_) => (
                "queue_full P",
                "S waited because the queue of pipe P was full (queue_depth instructions not started)",
            ),
            Stall::BarrierAll => (
                "barrier_all",
                "S waited in `barrier: all` for every pipe to finish",
            ),
        };
        if kinds.insert(key) {
            lines.push((key.into(), text.into()));
        }
    }
    lines.extend([
        ("starved".into(), "queue empty, more work will come".into()),
        (
            "idle".into(),
            "no more work will come (after the pipe's last instruction)".into(),
        ),
        (
            "util %".into(),
            "busy / total cycles; busy + stalls + starved + idle = total for every pipe".into(),
        ),
        (
            "overlap".into(),
            "cycles with at least two non-S pipes busy / total cycles".into(),
        ),
        (
            "pipe bound".into(),
            "the most busy cycles of one non-S pipe: no schedule of this work is shorter".into(),
        ),
        (
            "efficiency".into(),
            "pipe bound / total cycles (100 % = the busiest pipe never waited)".into(),
        ),
    ]);
    crate::table::legend(&lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `render` of the hand-built vec_add with `r` as its result.
    fn of<T>(
        render: fn(&Config, &Run) -> T,
        r: &RunResult,
        hazards: Option<&[Hazard]>,
        auto_sync: Option<&SyncStats>,
    ) -> T {
        let (program, plan) = (program_db(), plan_db());
        let mut run = Run {
            hazards,
            ..Run::new(&program, &plan, r)
        };
        run.parts[0].auto_sync = auto_sync;
        render(&config(), &run)
    }

    fn run_text_of(r: &RunResult, h: Option<&[Hazard]>, a: Option<&SyncStats>) -> String {
        of(run_text, r, h, a)
    }

    fn run_json_of(r: &RunResult, h: Option<&[Hazard]>, a: Option<&SyncStats>) -> Value {
        of(run_json, r, h, a)
    }
    use crate::testutil::*;
    use sim::engine::Waiter;
    use sim::Pipe;

    #[test]
    fn a_walker_that_gave_up_says_so_in_the_line_and_the_json() {
        let (program, plan, r) = (program_db(), plan_db(), result_clean());
        let run = Run {
            critical: PathView::TooLong(5),
            ..Run::new(&program, &plan, &r)
        };
        let line = "paced by: not followed (the run kept more than 5 instructions and scalar \
                    spans; run --critical-path follows a run of any length)";
        // under the summary, and no section
        let text = run_text(&config(), &run);
        assert!(text.contains(&format!("\n{line}\n")), "{text}");
        assert!(!text.contains("critical path"), "{text}");
        let j = run_json(&config(), &run);
        assert_eq!(j["paced_by"], line);
        assert_eq!(j["critical_path"], Value::Null);
        // nothing walked: no line, `null`
        let off = Run::new(&program, &plan, &r);
        assert!(!run_text(&config(), &off).contains("paced by"));
        assert_eq!(run_json(&config(), &off)["paced_by"], Value::Null);
    }

    #[test]
    fn text_report_of_a_clean_run() {
        let text = run_text_of(&result_clean(), Some(&[]), None);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn text_report_with_findings_and_deadlock() {
        let mut r = result_clean();
        r.findings = vec![
            SyncFinding::DoubleSet {
                core: 0,
                src: Pipe::Mte2,
                dst: Pipe::V,
                id: 0,
                op: OpId::new(3),
                cycle: 700,
            },
            SyncFinding::UnpairedSet {
                core: 0,
                src: Pipe::V,
                dst: Pipe::Mte3,
                id: 1,
                op: OpId::new(5),
            },
        ];
        r.deadlock = Some(Deadlock {
            cycle: 900,
            waiters: vec![
                Waiter {
                    core: 0,
                    pipe: Pipe::S,
                    op: OpId::new(0),
                    on: WaitOn::QueueFull(Pipe::V),
                },
                Waiter {
                    core: 0,
                    pipe: Pipe::V,
                    op: OpId::new(4),
                    on: WaitOn::Flag {
                        src: Pipe::Mte2,
                        dst: Pipe::V,
                        id: 0,
                    },
                },
            ],
        });
        let text = run_text_of(&r, None, None);
        assert!(text.contains("body[0].for.body[3] set_flag"), "{text}");
        assert!(text.contains("flag MTE2->V#0"), "{text}");
        assert!(text.contains("full queue of V"), "{text}");
        insta::assert_snapshot!(text);

        let j = run_json_of(&r, None, None);
        assert_eq!(j["findings"][0]["kind"], "double_set");
        assert_eq!(j["findings"][0]["flag"], "MTE2->V#0");
        assert_eq!(j["findings"][1]["kind"], "unpaired_set_flag");
        assert_eq!(j["deadlock"]["waiters"][1]["op"], "body[0].for.body[4]");
        assert_eq!(j["deadlock"]["waiters"][1]["op_kind"], "wait_flag");
        assert_eq!(j["deadlock"]["waiters"][1]["waits_on"], "flag MTE2->V#0");
    }

    /// The double sets a run did not keep are one line (and one JSON object) with their count,
    /// after the kept ones.
    #[test]
    fn omitted_double_sets_are_one_finding_with_their_count() {
        let mut r = result_clean();
        r.findings = vec![
            SyncFinding::DoubleSet {
                core: 0,
                src: Pipe::Mte2,
                dst: Pipe::V,
                id: 0,
                op: OpId::new(3),
                cycle: 700,
            },
            SyncFinding::DoubleSetsOmitted { core: 0, count: 41 },
        ];
        let text = run_text_of(&r, None, None);
        assert!(text.contains("sync findings (2):"), "{text}");
        assert!(
            text.contains(
                "double set: 41 more on this core, not listed (a run keeps the first 1000 of \
                 each core)"
            ),
            "{text}"
        );
        let j = run_json_of(&r, None, None);
        assert_eq!(j["findings"][1]["kind"], "double_sets_omitted");
        assert_eq!(j["findings"][1]["count"], 41);
        assert_eq!(j["findings"][1]["kept"], 1000);
        assert_eq!(j["findings"][1]["core"], j["findings"][0]["core"]);
    }

    #[test]
    fn json_key_order_and_values() {
        let r = result_clean();
        let j = run_json_of(&r, None, None);
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "schema",
                "kernel",
                "config",
                "sync",
                "total_cycles",
                "microseconds",
                "launch_cost",
                "pipes",
                "overlap",
                "overlap_cycles",
                "pipe_bound",
                "efficiency",
                "bank_conflict_cycles",
                "memory",
                "race_check",
                "hazards",
                "findings",
                "deadlock",
                "stopped",
                "syncs_inserted",
                "cross_sync",
                "best_level",
                "warnings",
                "profile",
                "paced_by",
                "critical_path",
                "roofline",
                "plan",
                "launch",
            ]
        );
        let pipes: Vec<&String> = j["pipes"].as_object().unwrap().keys().collect();
        assert_eq!(keys[1..], RUN_KEYS);
        assert_eq!(j["schema"], crate::SCHEMA);
        assert_eq!(pipes, ["S", "V", "MTE2", "MTE3"]);
        let stalls: Vec<&String> = j["pipes"]["V"]["stalls"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(stalls, ["wait_flag MTE2#0", "wait_flag MTE2#1"]);
        assert_eq!(j["config"], "ascend910b/aiv");
        assert_eq!(j["microseconds"], json!(0.556));
        assert_eq!(j["pipe_bound"], json!({"pipe": "MTE2", "cycles": 700}));
        assert_eq!(j["efficiency"], json!(0.7));
        assert_eq!(j["deadlock"], Value::Null);
        insta::assert_json_snapshot!(j);
    }

    #[test]
    fn auto_sync_is_named_with_what_was_inserted() {
        let stats = SyncStats {
            dependencies: 5,
            set_flags: 4,
            wait_flags: 4,
            barriers: 1,
            barrier_alls: 1,
            merged: 0,
            fallbacks: 0,
        };
        let r = result_clean();
        let text = run_text_of(&r, Some(&[]), Some(&stats));
        assert!(text.contains("sync    auto\n"), "{text}");
        assert!(
            text.contains(
                "syncs   inserted 4 set_flag, 4 wait_flag, 1 barrier, 1 barrier: all for 5 \
                 dependencies (0 merged, 0 fell back to barrier: all)\n"
            ),
            "{text}"
        );
        let manual = run_text_of(&r, None, None);
        assert!(manual.contains("sync    manual\n") && !manual.contains("syncs "));

        let j = run_json_of(&r, None, Some(&stats));
        assert_eq!(j["sync"], "auto");
        assert_eq!(
            j["syncs_inserted"],
            json!({"dependencies": 5, "set_flags": 4, "wait_flags": 4, "barriers": 1,
                   "barrier_alls": 1, "merged": 0, "fallbacks": 0})
        );
        let j = run_json_of(&r, None, None);
        assert_eq!(j["sync"], "manual");
        assert_eq!(j["syncs_inserted"]["set_flags"], 0);
        assert_eq!(j["syncs_inserted"].as_object().unwrap().len(), 7);
    }

    #[test]
    fn legend_defines_only_the_reasons_that_occur() {
        let text = run_text_of(&result_clean(), Some(&[]), None);
        assert!(text.contains("wait_flag P#i"));
        assert!(!text.contains("queue_full P"));
        assert!(text.contains("overlap"));
    }

    /// One name per stall reason: the text table's columns are the JSON document's keys (and so
    /// compare's, the profile's and the trace's, which all print the reason as it displays).
    #[test]
    fn text_columns_are_named_as_the_json_keys() {
        let r = result_clean();
        let text = run_text_of(&r, Some(&[]), None);
        let header = text.lines().find(|l| l.starts_with("pipe ")).unwrap();
        let j = run_json_of(&r, None, None);
        let mut keys = 0;
        for p in j["pipes"].as_object().unwrap().values() {
            for key in p["stalls"].as_object().unwrap().keys() {
                assert!(header.contains(key.as_str()), "{key} not in {header}");
                keys += 1;
            }
        }
        assert!(keys > 0 && header.contains("wait_flag "), "{header}");
    }

    #[test]
    fn reports_survive_unknown_op_ids() {
        let mut r = result_clean();
        r.findings = vec![SyncFinding::UnpairedSet {
            core: 0,
            src: Pipe::V,
            dst: Pipe::Mte3,
            id: 1,
            op: OpId::new(999),
        }];
        let text = run_text_of(&r, None, None);
        assert!(text.contains("op999 ?"), "{text}");
    }

    #[test]
    fn dropped_work_names_the_tensor_and_its_range_clipped_to_its_elements() {
        // 15 i1 elements in 2 bytes: the second byte holds elements 8..15 and 7 bits of nothing
        let text = "kernel: k\ncore: aiv\ngm:\n  m: { shape: [3, 5], dtype: i1 }\nbody: []\n";
        let program = sim::load_program(text, "k.yaml", &config(), &[]).unwrap();
        let gap = Gap {
            kind: GapKind::Unwritten,
            tensor: sim::TensorId::new(0),
            elements: (8, 16),
            bytes: (1, 2),
            rows: None,
            missing: 1,
            ranges: 1,
        };
        let w = Warning::dropped(&program, &gap);
        assert_eq!((w.kind, w.tensor.as_deref()), ("unwritten", Some("m")));
        assert_eq!(
            w.range,
            Some(GapRange {
                elements: (8, 15),
                bytes: (1, 2),
                rows: None,
                from: vec![1, 3],
                to: vec![2, 4],
            })
        );
        assert_eq!(
            w.message,
            "gm tensor `m` [3, 5] i1 is stored to, but no op wrote elements [8, 15) (m[1, 3] to m[2, 4], bytes [1, 2)); bytes never written: 1 of 2, in 1 range"
        );
        let j = warnings_json(&[w]);
        assert_eq!(
            j[0]["range"],
            json!({ "elements": [8, 15], "bytes": [1, 2], "rows": null, "from": [1, 3], "to": [2, 4] })
        );
        // other warnings have no tensor
        let j = warnings_json(&[Warning::new("plan", "p".into())]);
        assert_eq!(
            j,
            json!([{ "kind": "plan", "tensor": null, "range": null, "message": "p" }])
        );
    }
}
