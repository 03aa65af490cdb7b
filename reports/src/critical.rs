//! The critical path (`run --critical-path`, docs/critical-path.md) as text, JSON and an HTML
//! section: the path's cycles by pipe, core and cause, the ops on it and the waits it ran
//! through, and the one-line summary the run report leads with ("paced by: ...").
//!
//! The figures are [`sim::critical::CriticalPath`]'s; this module only names ops
//! (`file:line:column text`) and cores, and lays them out.

use serde_json::{json, Value};
use sim::critical::{Cause, CriticalPath, OpShare, Wait, WaitShare};
use sim::{Config, OpId, Pipe, Program};

use crate::run_report::Run;
use crate::table::{Align, Table};

/// Ops and waits the text lists (the JSON lists up to [`JSON_ROWS`]).
pub const TEXT_ROWS: usize = 10;
/// Ops and waits the JSON and the HTML section list, most first.
pub const JSON_ROWS: usize = 50;

/// What each cause means, for the text's legend and the HTML section.
const LEGEND: [(Cause, &str); 9] = [
    (
        Cause::Work,
        "a pipe's instruction at work (a gm move: what it takes alone on the chip)",
    ),
    (
        Cause::Bandwidth,
        "a gm move waiting for its share of HBM and the L2's rate, which other moves hold",
    ),
    (
        Cause::Scalar,
        "S's own cycles: loops, branches, scalar, sload, sstore",
    ),
    (Cause::Issue, "S sending the instruction (issue_cycles)"),
    (
        Cause::Startup,
        "an instruction's latency from its work's end to its completion, waited for",
    ),
    (Cause::Flag, "a flag's latency, set_flag to wait_flag"),
    (
        Cause::Cross,
        "a cross-core flag's latency, cross_set to cross_wait",
    ),
    (
        Cause::Staging,
        "an mmad_l1 part's waits between its chunks, for the other part's chunks",
    ),
    (
        Cause::Unexplained,
        "no timing rule explains it (an engine rule the walk does not know)",
    ),
];

/// `op` of `program` as findings name it: `file:line:column text`, or for an op without a
/// place its kind and path.
fn op_label(program: &Program, op: OpId) -> String {
    match program.ops.get(op.index()) {
        Some(o) if o.loc.line > 0 => program.locate(op),
        Some(o) => format!("{} {}", o.kind.name(), o.path),
        None => program.locate(op),
    }
}

fn program_of<'a>(run: &Run<'a>, part: u32) -> &'a Program {
    run.parts.get(part as usize).unwrap_or(run.first()).program
}

/// What a wait waited for: the wait's kind (the text of a `wait_flag`, `cross_wait` or
/// `barrier: all` says it already).
fn wait_name(w: &WaitShare) -> String {
    w.wait.to_string()
}

/// A waiting op as the summary names it: the op, or what S waited to send it for.
fn waiting_on(w: &WaitShare, label: &str) -> String {
    match w.wait {
        Wait::QueueFull(p) => format!("a full {p} queue to send {label}"),
        Wait::Drain => format!("the drain before {label}"),
        Wait::Staging => format!("the staging of {label}"),
        Wait::Flag | Wait::Cross | Wait::BarrierAll => label.to_string(),
    }
}

/// The path's cycles per core type ([`Config::cores`] order), nonzero ones.
fn by_type(config: &Config, run: &Run<'_>, path: &CriticalPath) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (k, &c) in path.by_core.iter().enumerate() {
        let Some(core) = run.result.cores.get(k) else {
            continue;
        };
        let name = config.core(core.core).name.clone();
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 += c,
            None => out.push((name, c)),
        }
    }
    out.retain(|(_, c)| *c > 0);
    out
}

/// The wait the summary names: the longest wait the path ran through, or the longest
/// cross-core wait when it waited at least half as long (what couples a launch's cores sets
/// their pace, and a wait on the same core around it waits for it too).
pub fn pace_setter(path: &CriticalPath) -> Option<&WaitShare> {
    let top = path.waits.first()?;
    match path.waits.iter().find(|w| w.wait == Wait::Cross) {
        Some(c) if c.cycles.saturating_mul(2) >= top.cycles => Some(c),
        _ => Some(top),
    }
}

/// The one-line summary: the pipe (and, in a launch, the core type) with the most cycles on
/// the path, and the wait that paced it ([`pace_setter`]).
pub fn critical_summary(config: &Config, run: &Run<'_>, path: &CriticalPath) -> String {
    let total = path.total;
    let mut s = String::from("paced by: ");
    match path.top_pipe() {
        Some((pipe, _)) => s.push_str(pipe.report_name()),
        None => s.push_str("nothing (an empty run)"),
    }
    if run.result.cores.len() > 1 {
        let types = by_type(config, run, path);
        if let Some((name, _)) = types
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        {
            s.push_str(&format!(" on {name} cores"));
        }
    }
    match pace_setter(path) {
        Some(w) => s.push_str(&format!(
            ", waiting on {} {} % of the run",
            waiting_on(w, &op_label(program_of(run, w.part), w.op)),
            crate::percent(w.cycles, total)
        )),
        None => s.push_str(", no waits on the path"),
    }
    s
}

/// The causes of one op's share, `work 32, startup 5`.
fn causes(o: &OpShare) -> String {
    o.causes
        .iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text section.
pub fn critical_text(config: &Config, run: &Run<'_>, path: &CriticalPath) -> String {
    let total = path.total;
    let col = |name: &str, a: Align| (name.to_string(), a);
    let mut out = format!(
        "critical path: {total} cycles, back from the last cycle through what each step waited for ({} steps)\n",
        path.steps
    );
    out.push_str(&format!("  {}\n", critical_summary(config, run, path)));
    let by_pipe = Pipe::ALL
        .iter()
        .map(|p| (p.report_name().to_string(), path.by_pipe[p.index()]));
    out.push_str(&shares("by pipe", by_pipe, total).render("  "));
    let by_cause = Cause::ALL
        .iter()
        .enumerate()
        .map(|(k, c)| (c.name().to_string(), path.by_cause[k]));
    out.push_str(&shares("by cause", by_cause, total).render("  "));
    if run.result.cores.len() > 1 {
        let mut cores: Vec<(usize, u64)> = path
            .by_core
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, c)| *c > 0)
            .collect();
        cores.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let by_core = cores.iter().take(TEXT_ROWS).filter_map(|&(k, c)| {
            let core = run.result.cores.get(k)?;
            Some((crate::core_name(config, core), c))
        });
        out.push_str(&shares("by core", by_core, total).render("  "));
        if cores.len() > TEXT_ROWS {
            out.push_str(&format!("  ... {} more cores\n", cores.len() - TEXT_ROWS));
        }
    }
    let mut t = Table::new(vec![
        col("cycles", Align::Right),
        col("%", Align::Right),
        col("op on the path", Align::Left),
        col("causes", Align::Left),
    ]);
    for o in path.ops.iter().take(TEXT_ROWS) {
        t.row(vec![
            o.cycles.to_string(),
            crate::percent(o.cycles, total),
            op_label(program_of(run, o.part), o.op),
            causes(o),
        ]);
    }
    out.push_str(&t.render("  "));
    if path.ops.len() > TEXT_ROWS {
        out.push_str(&format!(
            "  ... {} more ops (run --format json for more)\n",
            path.ops.len() - TEXT_ROWS
        ));
    }
    if path.waits.is_empty() {
        out.push_str("  no waits on the path\n");
    } else {
        let mut t = Table::new(vec![
            col("waited", Align::Right),
            col("%", Align::Right),
            col("times", Align::Right),
            col("wait", Align::Left),
            col("op", Align::Left),
        ]);
        for w in path.waits.iter().take(TEXT_ROWS) {
            t.row(vec![
                w.cycles.to_string(),
                crate::percent(w.cycles, total),
                w.count.to_string(),
                wait_name(w),
                op_label(program_of(run, w.part), w.op),
            ]);
        }
        out.push_str(&t.render("  "));
        if path.waits.len() > TEXT_ROWS {
            out.push_str(&format!(
                "  ... {} more waits\n",
                path.waits.len() - TEXT_ROWS
            ));
        }
    }
    out.push_str("  legend:\n");
    for (c, what) in LEGEND {
        out.push_str(&format!("    {:<11}  {what}\n", c.name()));
    }
    out.push_str(
        "    waited       cycles a waiter on the path (a wait_flag, cross_wait, drain, barrier: all, or S at a full queue) waited, from when it was otherwise ready, while the path ran through what it waited for\n",
    );
    out
}

/// The run document's `critical_path` object (docs/json.md).
pub fn critical_json(config: &Config, run: &Run<'_>, path: &CriticalPath) -> Value {
    let by_pipe: serde_json::Map<String, Value> = Pipe::ALL
        .iter()
        .filter(|p| path.by_pipe[p.index()] > 0)
        .map(|p| (p.report_name().to_string(), json!(path.by_pipe[p.index()])))
        .collect();
    let by_cause: serde_json::Map<String, Value> = Cause::ALL
        .iter()
        .enumerate()
        .filter(|(k, _)| path.by_cause[*k] > 0)
        .map(|(k, c)| (c.name().to_string(), json!(path.by_cause[k])))
        .collect();
    let by_core: Vec<Value> = path
        .by_core
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .filter_map(|(k, c)| {
            let core = run.result.cores.get(k)?;
            Some(json!({"core": k, "name": crate::core_name(config, core), "cycles": c}))
        })
        .collect();
    let op_doc = |part: u32, op: OpId| {
        let program = program_of(run, part);
        let o = program.ops.get(op.index());
        json!({
            "op": op_label(program, op),
            "op_kind": o.map(|o| o.kind.name()),
            "line": o.map(|o| o.loc.line),
            "column": o.map(|o| o.loc.column),
            "part": part,
        })
    };
    let ops: Vec<Value> = path
        .ops
        .iter()
        .take(JSON_ROWS)
        .map(|o| {
            let mut d = op_doc(o.part, o.op);
            d["cycles"] = json!(o.cycles);
            d["causes"] = Value::Object(
                o.causes
                    .iter()
                    .map(|(c, n)| (c.name().to_string(), json!(n)))
                    .collect(),
            );
            d
        })
        .collect();
    let waits: Vec<Value> = path
        .waits
        .iter()
        .take(JSON_ROWS)
        .map(|w| {
            let mut d = op_doc(w.part, w.op);
            d["wait"] = json!(w.wait.to_string());
            d["cycles"] = json!(w.cycles);
            d["count"] = json!(w.count);
            d
        })
        .collect();
    json!({
        "total_cycles": path.total,
        "summary": critical_summary(config, run, path),
        "steps": path.steps,
        "by_pipe": by_pipe,
        "by_cause": by_cause,
        "by_core": by_core,
        "ops": ops,
        "waits": waits,
    })
}

/// The HTML page's section (`<section id="critical-path">`).
pub fn critical_html(config: &Config, run: &Run<'_>, path: &CriticalPath) -> String {
    use crate::html::esc;
    let total = path.total;
    let mut out = format!(
        "<section id=\"critical-path\">\n<h2>Critical path</h2>\n<p>{} ({total} cycles)</p>\n",
        esc(&critical_summary(config, run, path))
    );
    out.push_str("<table class=\"critical\"><thead><tr><th>by pipe</th><th>cycles</th><th>%</th></tr></thead><tbody>\n");
    for p in Pipe::ALL {
        let c = path.by_pipe[p.index()];
        if c > 0 {
            out.push_str(&format!(
                "<tr><td>{}</td><td class=\"n\">{c}</td><td class=\"n\">{}</td></tr>\n",
                p.report_name(),
                crate::percent(c, total)
            ));
        }
    }
    out.push_str("</tbody></table>\n<table class=\"critical\"><thead><tr><th>by cause</th><th>cycles</th><th>%</th><th>meaning</th></tr></thead><tbody>\n");
    for (k, (c, what)) in LEGEND.iter().enumerate() {
        let n = path.by_cause[k];
        if n > 0 {
            out.push_str(&format!(
                "<tr><td>{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                c.name(),
                crate::percent(n, total),
                esc(what)
            ));
        }
    }
    out.push_str("</tbody></table>\n<table class=\"critical\"><thead><tr><th>cycles</th><th>op on the path</th><th>causes</th></tr></thead><tbody>\n");
    for o in path.ops.iter().take(JSON_ROWS) {
        out.push_str(&format!(
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
            o.cycles,
            esc(&op_label(program_of(run, o.part), o.op)),
            esc(&causes(o))
        ));
    }
    out.push_str("</tbody></table>\n<table class=\"critical\"><thead><tr><th>waited</th><th>times</th><th>wait</th><th>op</th></tr></thead><tbody>\n");
    for w in path.waits.iter().take(JSON_ROWS) {
        out.push_str(&format!(
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
            w.cycles,
            w.count,
            esc(&wait_name(w)),
            esc(&op_label(program_of(run, w.part), w.op))
        ));
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

/// A table of the path's cycles by `what` (its non-zero rows, in the order given) and their
/// share of the run.
fn shares(what: &str, rows: impl Iterator<Item = (String, u64)>, total: u64) -> Table {
    let mut t = Table::new(vec![
        (what.to_string(), Align::Left),
        ("cycles".to_string(), Align::Right),
        ("%".to_string(), Align::Right),
    ]);
    for (name, c) in rows.filter(|&(_, c)| c > 0) {
        t.row(vec![name, c.to_string(), crate::percent(c, total)]);
    }
    t
}
