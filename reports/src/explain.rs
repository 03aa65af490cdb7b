//! `npusim plan --explain BUFFER`: why a buffer got its address. Everything said here is read
//! back from the finished plan and the liveness that decided it, so the explanation cannot
//! disagree with the plan it explains.

use crate::plan_doc::live_range;
use crate::run_report::op_ref;
use planner::{Interval, PlacedBy, Planned};
use sim::{BufferId, Program};

/// The explanation of buffer `b`'s placement, as text lines.
pub fn plan_explain(program: &Program, planned: &Planned, b: BufferId) -> String {
    let plan = &planned.plan;
    let buf = program.buffer(b);
    let bp = plan.buffer(b);
    let space = buf.scope.yaml_name();
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<9}{v}\n"));

    line(
        "buffer",
        format!(
            "{} ({space}, {} bytes a slot; declared at {})",
            buf.name, bp.bytes, buf.path
        ),
    );
    let declared = buf.multi.max(1) as usize;
    let slots = if bp.offsets.len() > declared {
        format!(
            " ({} slots, {declared} declared: it became a multi-buffer)",
            bp.offsets.len()
        )
    } else if bp.offsets.len() > 1 {
        format!(" ({} slots)", bp.offsets.len())
    } else {
        String::new()
    };
    line("offsets", format!("{}{slots}", join(&bp.offsets)));
    line("live", live_text(program, planned, &bp.live));
    let entry = planned.live.entry(b);
    let class = if entry.scalar {
        "scalar (touched by sload/sstore)"
    } else if entry.dma {
        "DMA (an MTE2 destination, or an MTE3 or FIX source)"
    } else {
        "vector (touched by no DMA or scalar op)"
    };
    line("class", class.into());

    let scope = plan.scope(buf.scope);
    let why = match bp.placed_by {
        PlacedBy::Fixed => "fixed: `at:` in the program; the planner steps around it".to_string(),
        PlacedBy::Sequential => match scope {
            Some(s) => format!(
                "sequential: every {space} buffer fits side by side ({} of {} bytes), so each has its own bytes, in first-write order",
                s.required, s.capacity
            ),
            None => "sequential".into(),
        },
        PlacedBy::Inplace => inplace_text(program, planned, b),
        PlacedBy::Level(2) => format!(
            "level 2: {space} did not fit side by side, so it took the lowest address free over its whole lifetime, sharing bytes only with buffers of its own pipeline class"
        ),
        PlacedBy::Level(1) => {
            let before = if plan.level > 1 {
                "no bytes were free at level 2; "
            } else {
                "--level 1 allows no level-2 sharing; "
            };
            let what = if planned.upgraded.contains(&b) {
                "it would have reused one slot of a multi-buffer in the same loop, so it was upgraded to a multi-buffer over all that buffer's slots and alternates between them by iteration"
            } else {
                "it took the slots of a multi-buffer in the same loop, one for one"
            };
            format!("level 1: {before}{what}")
        }
        PlacedBy::Level(_) => {
            let before = if plan.level > 0 {
                "no bytes were free at a higher level"
            } else {
                "--level 0 allows sharing by lifetime alone"
            };
            format!("level 0: {before}; it may share bytes with another pipeline class, so the accesses on either side must be ordered by sync")
        }
    };
    line("placed", why);
    if bp.placed_by != PlacedBy::Inplace {
        if let Some(g) = planned
            .applied
            .iter()
            .find(|(_, k)| *k == b)
            .map(|(g, _)| *g)
        {
            line(
                "inplace",
                format!(
                    "`{}` takes this buffer's address (it dies where `{}` is written)",
                    program.buffer(g).name,
                    program.buffer(g).name
                ),
            );
        }
    }
    if let Some(s) = scope {
        line(
            "scope",
            format!(
                "{space}: planned {}; {} of {} bytes used; {} without reuse; peak live {}",
                s.mode.name(),
                s.used,
                s.capacity,
                s.required,
                s.peak_live
            ),
        );
    }

    // every other buffer with bytes in common, and why that is allowed
    let group = storage_groups(planned);
    let mut sharers = Vec::new();
    for (i, other) in program.buffers.iter().enumerate() {
        let o = BufferId::new(i);
        if o == b || other.scope != buf.scope {
            continue;
        }
        let op = plan.buffer(o);
        let common: Vec<(usize, usize)> = bp
            .offsets
            .iter()
            .enumerate()
            .flat_map(|(sa, &a)| {
                op.offsets.iter().enumerate().filter_map(move |(sb, &x)| {
                    (a < x + op.bytes && x < a + bp.bytes).then_some((sa, sb))
                })
            })
            .collect();
        if common.is_empty() {
            continue;
        }
        let reason = if group[b.index()] == group[o.index()] {
            "the same storage (share or inplace)".to_string()
        } else {
            format!(
                "lifetimes apart ({} live {}, {} live {})",
                buf.name,
                live_range(&bp.live),
                other.name,
                live_range(&op.live)
            )
        };
        let slots: Vec<String> = common
            .iter()
            .map(|(sa, sb)| format!("slot {sa} = its slot {sb}"))
            .collect();
        sharers.push(format!("  {} ({}): {reason}", other.name, slots.join(", ")));
    }
    if sharers.is_empty() {
        out.push_str("shares   no bytes with any other buffer\n");
    } else {
        out.push_str("shares bytes with:\n");
        for s in sharers {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

/// Why an inplace buffer took its partner's address.
fn inplace_text(program: &Program, planned: &Planned, b: BufferId) -> String {
    match planned.inplace.pairs.iter().find(|p| p.gen == b) {
        Some(p) => format!(
            "inplace: takes the address of `{}`, an input of {} that dies there (elementwise, same view offset, no wider than its input: the inplace rules of docs/planner.md)",
            program.buffer(p.kill).name,
            op_ref(program, p.op)
        ),
        None => "inplace".into(),
    }
}

/// Per buffer, a representative of its storage: the liveness entry (share groups, windows),
/// merged along the applied inplace pairs.
fn storage_groups(planned: &Planned) -> Vec<usize> {
    let live = &planned.live;
    let mut rep: Vec<usize> = (0..live.entries.len()).collect();
    fn find(rep: &mut [usize], mut x: usize) -> usize {
        while rep[x] != x {
            rep[x] = rep[rep[x]];
            x = rep[x];
        }
        x
    }
    for &(g, k) in &planned.applied {
        let (rg, rk) = (
            find(&mut rep, live.entry_of[g.index()]),
            find(&mut rep, live.entry_of[k.index()]),
        );
        rep[rg] = rk;
    }
    live.entry_of.iter().map(|&e| find(&mut rep, e)).collect()
}

fn live_text(program: &Program, planned: &Planned, live: &[Interval]) -> String {
    if live.is_empty() {
        return "never (nothing touches it)".into();
    }
    let at = |p: usize| {
        planned
            .live
            .pos_op
            .get(p)
            .map_or_else(String::new, |&op| op_ref(program, op))
    };
    let first = live[0].first;
    let last = live[live.len() - 1].last;
    format!(
        "positions {} (from {} to {})",
        live_range(live),
        at(first),
        at(last)
    )
}

fn join(v: &[u64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
