//! The stall breakdown: one horizontal stacked bar per pipe (busy, each stall reason, starved,
//! idle), exact numbers in each segment's `<title>`.

use super::style::Kind;
use super::{esc, f2, thousands};
use sim::engine::CoreRun;
use sim::RunResult;

const ROW: f64 = 24.0;
const BAR: f64 = 16.0;

/// Every kind the bars of `result`'s cores show, in legend order.
pub(super) fn kinds(result: &RunResult) -> Vec<Kind> {
    let mut kinds = Vec::new();
    for p in result
        .cores
        .iter()
        .flat_map(crate::run_report::sorted_pipes)
    {
        if p.busy > 0 {
            kinds.push(Kind::Busy(p.pipe));
        }
        for (s, c) in &p.stalls {
            if *c > 0 {
                kinds.push(Kind::of_stall(*s));
            }
        }
        if p.starved > 0 {
            kinds.push(Kind::Starved);
        }
        if p.idle > 0 {
            kinds.push(Kind::Idle);
        }
    }
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The bars of `core` (of a run of `total` cycles) as one SVG `width` pixels wide. A bar's
/// full length stands for `scale` cycles (the run's total, or the longest level's on the
/// comparison page), so bars of runs drawn with the same scale compare by length.
pub(super) fn stall_bars(core: &CoreRun, total: u64, scale: u64, width: f64) -> String {
    let pipes = crate::run_report::sorted_pipes(core);
    let (label, note) = (44.0, 84.0);
    let bar = width - label - note;
    let height = ROW * pipes.len() as f64 + 4.0;
    let x_of = |c: u64| bar * c as f64 / scale.max(1) as f64;
    let mut out = format!(
        "<svg class=\"bars\" viewBox=\"0 0 {w} {h}\" width=\"100%\" style=\"max-width:{w}px\" role=\"img\" aria-label=\"cycles of every pipe by state\">\n",
        w = f2(width),
        h = f2(height)
    );
    for (row, p) in pipes.iter().enumerate() {
        let y = 2.0 + ROW * row as f64;
        out.push_str(&format!(
            "<text x=\"0\" y=\"{}\" font-weight=\"600\">{}</text>\n",
            f2(y + BAR - 3.5),
            p.pipe
        ));
        let mut stalls = p.stalls.clone();
        stalls.retain(|(_, c)| *c > 0);
        stalls.sort_by_key(|(s, _)| *s);
        let mut segments: Vec<(Kind, String, u64)> =
            vec![(Kind::Busy(p.pipe), "busy".into(), p.busy)];
        segments.extend(
            stalls
                .iter()
                .map(|(s, c)| (Kind::of_stall(*s), s.to_string(), *c)),
        );
        segments.push((Kind::Starved, "starved".into(), p.starved));
        segments.push((Kind::Idle, "idle".into(), p.idle));
        let mut at = 0u64;
        for (kind, name, cycles) in segments {
            if cycles == 0 {
                continue;
            }
            let x0 = label + x_of(at);
            let x1 = label + x_of(at + cycles);
            out.push_str(&format!(
                "<rect class=\"seg {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{BAR}\"><title>{}: {} {} cycles ({} % of {})</title></rect>\n",
                kind.class(),
                f2(x0),
                f2(y),
                f2(x1 - x0),
                p.pipe,
                esc(&name),
                thousands(cycles),
                crate::percent(cycles, total),
                thousands(total),
            ));
            at += cycles;
        }
        out.push_str(&format!(
            "<text class=\"dim\" x=\"{}\" y=\"{}\" text-anchor=\"end\"><title>busy / total cycles</title>{} % busy</text>\n",
            f2(width - 2.0),
            f2(y + BAR - 3.5),
            crate::percent(p.busy, total)
        ));
    }
    out.push_str("</svg>\n");
    out
}
