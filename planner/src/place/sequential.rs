//! Sequential placement: every entry gets its own bytes, as a running sum in first-write
//! order, slot 0 of every entry first and the extra multi-buffer slots appended after them
//! (HIVM PlanMemory's sequential mode orders them the same way). [`mod@crate::place`] uses it for
//! every scope that fits; the first-write order is also the order storage entries are built in.
//!
//! It reads only the program and byte sizes, never storage entries, so entry building may use
//! it without a cycle.

use crate::liveness::{Liveness, LivenessMode};
use crate::plan::*;
use sim::program::{Block, ForLoop, OpKind, Program};
use sim::BufferId;

/// The running sum: `entries` are (aligned slot bytes, slots) in placement order; slot
/// 0 of every entry first, then the extra slots, stepping over the `fixed` byte ranges (sorted).
/// Returns every entry's slot offsets and the end of the sum.
pub(super) fn running_sum(
    entries: &[(u64, u32)],
    fixed: &[(u64, u64)],
    align: u64,
) -> (Vec<Vec<u64>>, u64) {
    let mut cursor = 0u64;
    let mut place = |bytes: u64| -> u64 {
        // step over every fixed range the slot would overlap
        while let Some(&(_, end)) = fixed
            .iter()
            .find(|&&(s, e)| s < cursor + bytes && cursor < e && bytes > 0)
        {
            cursor = end.div_ceil(align) * align;
        }
        let at = cursor;
        cursor += bytes;
        at
    };
    let mut offsets: Vec<Vec<u64>> = vec![Vec::new(); entries.len()];
    for (i, &(bytes, _)) in entries.iter().enumerate() {
        offsets[i].push(place(bytes));
    }
    for (i, &(bytes, slots)) in entries.iter().enumerate() {
        for _ in 1..slots {
            offsets[i].push(place(bytes));
        }
    }
    (offsets, cursor)
}

fn share_root(program: &Program, mut b: BufferId) -> BufferId {
    // the loader rejects share cycles; the bound keeps a bad input from looping forever
    for _ in 0..program.buffers.len() {
        match program.buffer(b).share {
            Some(next) => b = next,
            None => break,
        }
    }
    b
}

/// The order storage entries are generated in (HIVM's "gen" order): with precise liveness, the
/// first-write order; with scoped liveness, a buffer is gen'd where its lifetime starts, so one
/// declared outside a loop and first written inside it is gen'd at the loop's begin, before the
/// buffers the loop writes first (HIVM `GenerateStorageEntry`: live-ins at the loop-begin
/// marker). Ties keep the first-write order (HIVM shuffles them).
pub(super) fn gen_order(program: &Program, live: &Liveness) -> Vec<BufferId> {
    let mut order = first_write_order(program);
    if live.mode == LivenessMode::Scoped {
        let start = |b: &BufferId| live.lifetime(*b).first().map_or(usize::MAX, |i| i.first);
        // at one start (a loop's begin), the buffers declared outside the loop come first:
        // HIVM gens the loop's live-ins at its begin marker before the loop's own buffers
        let depth = |b: &BufferId| {
            let mut d = 0usize;
            let mut at = program.buffer(*b).declared_in;
            while let Some(op) = at {
                d += 1;
                at = program.op(op).parent;
            }
            d
        };
        order.sort_by_key(|b| (start(b), depth(b))); // stable: ties keep first-write order
    }
    order
}

/// Buffers in the order of their first write in program order; buffers never written follow
/// in declaration order.
pub(super) fn first_write_order(program: &Program) -> Vec<BufferId> {
    let mut seen = vec![false; program.buffers.len()];
    let mut order = Vec::with_capacity(program.buffers.len());
    walk(program, &program.body, &mut |b| {
        if !seen[b.index()] {
            seen[b.index()] = true;
            order.push(b);
        }
    });
    for (i, s) in seen.iter().enumerate() {
        if !s {
            order.push(BufferId::new(i));
        }
    }
    // a share member's first write counts for its root
    let mut out = Vec::with_capacity(order.len());
    let mut placed = vec![false; program.buffers.len()];
    for b in order {
        let r = share_root(program, b);
        if !placed[r.index()] {
            placed[r.index()] = true;
            out.push(r);
        }
        if !placed[b.index()] {
            placed[b.index()] = true;
            out.push(b);
        }
    }
    out
}

fn walk(program: &Program, block: &Block, f: &mut dyn FnMut(BufferId)) {
    for &id in &block.ops {
        let kind = &program.op(id).kind;
        for w in kind.writes() {
            for b in program.root_buffers(w.base) {
                f(b);
            }
        }
        if let OpKind::For(ForLoop { body, .. }) | OpKind::While { body, .. } = kind {
            walk(program, body, f);
        }
        if let OpKind::If { then, els, .. } = kind {
            walk(program, then, f);
            if let Some(e) = els {
                walk(program, e, f);
            }
        }
    }
}

/// One empty entry per buffer, to be filled scope by scope.
pub(super) fn unplaced_buffers(program: &Program) -> Vec<BufferPlan> {
    program
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| BufferPlan {
            buffer: BufferId::new(i),
            scope: b.scope,
            bytes: 0,
            offsets: Vec::new(),
            placed_by: PlacedBy::Sequential,
            live: Vec::new(),
        })
        .collect()
}
