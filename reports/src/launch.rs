//! The launch sections of the run report and document (docs/cli.md, "Launches in the text
//! report"; docs/json.md, "`launch`"): for a launch of more than one core, per core type the
//! min / max / mean over its cores of each pipe's busy and stalled cycles and of the cores' end
//! cycles, and in JSON every core.

use crate::table::{Align, Table};
use serde_json::{json, Map, Value};
use sim::engine::{CoreRun, PipeStats};
use sim::{Config, CoreId, Pipe, RunResult};

/// The name of core `k` of a launch: `block 3 aiv 1`.
pub fn core_name(config: &Config, c: &CoreRun) -> String {
    format!("block {} {} {}", c.block, config.core(c.core).name, c.index)
}

/// Min, max and mean of some values (none: zeros).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) mean: f64,
}

pub(crate) fn spread(values: impl Iterator<Item = u64>) -> Spread {
    let (mut min, mut max, mut sum, mut n) = (u64::MAX, 0, 0u128, 0u64);
    for v in values {
        min = min.min(v);
        max = max.max(v);
        sum += u128::from(v);
        n += 1;
    }
    if n == 0 {
        return Spread {
            min: 0,
            max: 0,
            mean: 0.0,
        };
    }
    Spread {
        min,
        max,
        mean: sum as f64 / n as f64,
    }
}

/// The core types of a launch in the order their first core appears.
pub(crate) fn types(result: &RunResult) -> Vec<CoreId> {
    let mut out: Vec<CoreId> = Vec::new();
    for c in &result.cores {
        if !out.contains(&c.core) {
            out.push(c.core);
        }
    }
    out
}

pub(crate) fn pipe_of(c: &CoreRun, pipe: Pipe) -> Option<&PipeStats> {
    c.pipes.iter().find(|p| p.pipe == pipe)
}

/// The text section: per core type, its cores and blocks, their end cycles, and per pipe the
/// spread of busy and stalled cycles.
pub fn launch_text(config: &Config, result: &RunResult, blocks: u32) -> String {
    let mut out = format!(
        "launch  {blocks} block{}, {} cores\n\n",
        if blocks == 1 { "" } else { "s" },
        result.cores.len()
    );
    for ty in types(result) {
        let cores: Vec<&CoreRun> = result.cores.iter().filter(|c| c.core == ty).collect();
        let end = spread(cores.iter().map(|c| c.end_cycle));
        out.push_str(&format!(
            "{} x {}: end cycle min {} / max {} / mean {:.1}\n",
            cores.len(),
            config.core(ty).name,
            end.min,
            end.max,
            end.mean
        ));
        let mut t = Table::new(vec![
            ("pipe".into(), Align::Left),
            ("busy min".into(), Align::Right),
            ("max".into(), Align::Right),
            ("mean".into(), Align::Right),
            ("stalled min".into(), Align::Right),
            ("max".into(), Align::Right),
            ("mean".into(), Align::Right),
            ("util % mean".into(), Align::Right),
        ]);
        let mut pipes: Vec<Pipe> = cores[0].pipes.iter().map(|p| p.pipe).collect();
        pipes.sort();
        for pipe in pipes {
            let busy = spread(
                cores
                    .iter()
                    .filter_map(|c| pipe_of(c, pipe))
                    .map(|p| p.busy),
            );
            let stalled = spread(
                cores
                    .iter()
                    .filter_map(|c| pipe_of(c, pipe))
                    .map(PipeStats::stalled),
            );
            let util = if result.total_cycles == 0 {
                0.0
            } else {
                100.0 * busy.mean / result.total_cycles as f64
            };
            t.row(vec![
                pipe.report_name().to_string(),
                busy.min.to_string(),
                busy.max.to_string(),
                format!("{:.1}", busy.mean),
                stalled.min.to_string(),
                stalled.max.to_string(),
                format!("{:.1}", stalled.mean),
                format!("{util:.1}"),
            ]);
        }
        out.push_str(&t.render("  "));
        out.push('\n');
    }
    let last = result
        .cores
        .iter()
        .max_by_key(|c| (c.end_cycle, std::cmp::Reverse((c.block, c.core, c.index))));
    if let Some(c) = last {
        out.push_str(&format!(
            "last core: {} ends at cycle {}; one core's detail: --core {}:{}:{}\n\n",
            core_name(config, c),
            c.end_cycle,
            c.block,
            config.core(c.core).name,
            c.index
        ));
    }
    out
}

fn spread_json(s: Spread) -> Value {
    json!({ "min": s.min, "max": s.max, "mean": crate::round4(s.mean) })
}

/// One core's pipes, as the run document's `pipes`.
pub(crate) fn pipes_json(pipes: &[PipeStats], total: u64) -> Value {
    let mut sorted: Vec<&PipeStats> = pipes.iter().collect();
    sorted.sort_by_key(|p| p.pipe);
    let mut out = Map::new();
    for p in sorted {
        let mut stalls = Map::new();
        let mut own = p.stalls.clone();
        own.sort_by_key(|(s, _)| *s);
        for (reason, cycles) in own {
            stalls.insert(reason.to_string(), json!(cycles));
        }
        out.insert(
            p.pipe.report_name().to_string(),
            json!({
                "busy": p.busy,
                "stalls": stalls,
                "starved": p.starved,
                "idle": p.idle,
                "instructions": p.instructions,
                "utilisation": crate::round4(p.utilisation(total)),
            }),
        );
    }
    Value::Object(out)
}

/// The run document's `launch`: the blocks, per core type the spread over its cores, and
/// every core with its own pipes.
pub fn launch_json(config: &Config, result: &RunResult, blocks: u32, plans: Value) -> Value {
    let total = result.total_cycles;
    let mut by_type = Map::new();
    for ty in types(result) {
        let cores: Vec<&CoreRun> = result.cores.iter().filter(|c| c.core == ty).collect();
        let mut pipes = Map::new();
        let mut names: Vec<Pipe> = cores[0].pipes.iter().map(|p| p.pipe).collect();
        names.sort();
        for pipe in names {
            let of = || cores.iter().filter_map(move |c| pipe_of(c, pipe));
            pipes.insert(
                pipe.report_name().to_string(),
                json!({
                    "busy": spread_json(spread(of().map(|p| p.busy))),
                    "stalled": spread_json(spread(of().map(PipeStats::stalled))),
                }),
            );
        }
        by_type.insert(
            config.core(ty).name.clone(),
            json!({
                "cores": cores.len(),
                "end_cycle": spread_json(spread(cores.iter().map(|c| c.end_cycle))),
                "pipes": pipes,
            }),
        );
    }
    let cores: Vec<Value> = result
        .cores
        .iter()
        .map(|c| {
            json!({
                "name": core_name(config, c),
                "block": c.block,
                "type": config.core(c.core).name,
                "index": c.index,
                "end_cycle": c.end_cycle,
                "pipes": pipes_json(&c.pipes, total),
                "overlap_cycles": c.overlap_cycles,
                "bank_conflict_cycles": c.bank_conflict_cycles,
            })
        })
        .collect();
    json!({
        "blocks": blocks,
        "parts": plans,
        "by_type": by_type,
        "cores": cores,
    })
}

/// A view of a launch's result as one core's run: that core's pipes and figures, the
/// launch's total, its findings and deadlock waiters for that core only.
pub fn core_view(result: &RunResult, k: usize) -> RunResult {
    let c = &result.cores[k];
    let mut r = result.clone();
    r.cores = vec![c.clone()];
    let k = k as u32;
    r.findings.retain(|f| f.core() == k);
    if let Some(d) = &mut r.deadlock {
        d.waiters.retain(|w| w.core == k);
        if d.waiters.is_empty() {
            r.deadlock = None;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_min_max_and_mean() {
        let s = spread([4u64, 10, 1].into_iter());
        assert_eq!((s.min, s.max), (1, 10));
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert_eq!(spread(std::iter::empty()).max, 0);
    }
}
