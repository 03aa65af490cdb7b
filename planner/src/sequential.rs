//! Sequential placement: every entry gets its own bytes, as a running sum in first-write
//! order, slot 0 of every entry first and the extra multi-buffer slots appended after them
//! (HIVM's order, `reference/hivm-planmemory.md` §1.5 and §2.2 "SEQ").

use crate::plan::*;
use sim::program::{Block, OpKind, Program};
use sim::{BufferId, Config};

/// Places every buffer of `program` without reuse. Fails with HIVM's overflow message when a
/// scope's running sum exceeds its capacity.
pub fn plan_sequential(program: &Program, config: &Config) -> Result<Plan, PlanError> {
    let core = config
        .core(&program.core)
        .expect("a loaded program names a core of its config");
    let order = first_write_order(program);

    let mut buffers = unplaced_buffers(program);

    let mut scopes = Vec::new();
    for scope in &core.scopes {
        let align = scope.align;
        let aligned = |bytes: u64| bytes.div_ceil(align) * align;
        // fixed buffers keep their addresses; the running sum steps over them
        let mut fixed: Vec<(u64, u64)> = Vec::new();
        for (i, b) in program.buffers.iter().enumerate() {
            if b.scope != scope.space {
                continue;
            }
            if let Some(at) = &b.at {
                let bp = &mut buffers[i];
                bp.bytes = aligned(b.bytes);
                bp.offsets = at.clone();
                bp.placed_by = PlacedBy::Fixed;
                fixed.extend(at.iter().map(|&o| (o, o + bp.bytes)));
            }
        }
        fixed.sort_unstable();

        // entries: share chains collapse onto their root; the root's size covers every member
        let entries: Vec<BufferId> = order
            .iter()
            .copied()
            .filter(|&b| {
                let buf = program.buffer(b);
                buf.scope == scope.space && buf.at.is_none() && buf.share.is_none()
            })
            .collect();
        let mut entry_bytes = vec![0u64; program.buffers.len()];
        let mut entry_slots = vec![0u32; program.buffers.len()];
        for (i, b) in program.buffers.iter().enumerate() {
            if b.scope != scope.space || b.at.is_some() {
                continue;
            }
            let root = share_root(program, BufferId::new(i));
            entry_bytes[root.index()] = entry_bytes[root.index()].max(aligned(b.bytes));
            entry_slots[root.index()] = entry_slots[root.index()].max(b.multi);
        }

        let sizes: Vec<(u64, u32)> = entries
            .iter()
            .map(|e| (entry_bytes[e.index()], entry_slots[e.index()]))
            .collect();
        let (entry_offsets, cursor) = running_sum(&sizes, &fixed, align);
        let mut offsets: Vec<Vec<u64>> = vec![Vec::new(); program.buffers.len()];
        for (&e, offs) in entries.iter().zip(entry_offsets) {
            offsets[e.index()] = offs;
        }
        let required: u64 = entries
            .iter()
            .map(|e| entry_bytes[e.index()] * entry_slots[e.index()] as u64)
            .sum();
        let used = cursor.max(fixed.iter().map(|&(_, e)| e).max().unwrap_or(0));

        for (i, b) in program.buffers.iter().enumerate() {
            if b.scope != scope.space || b.at.is_some() {
                continue;
            }
            let root = share_root(program, BufferId::new(i));
            let bp = &mut buffers[i];
            bp.bytes = entry_bytes[root.index()];
            bp.offsets = offsets[root.index()]
                .iter()
                .copied()
                .take(b.multi as usize)
                .collect();
        }

        if used > scope.bytes {
            let mut largest: Vec<(String, u64)> = entries
                .iter()
                .map(|e| {
                    (
                        program.buffer(*e).name.clone(),
                        entry_bytes[e.index()] * entry_slots[e.index()] as u64,
                    )
                })
                .collect();
            largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            return Err(PlanError::Overflow {
                space: scope.space,
                required_bits: used * 8,
                available_bits: scope.bytes * 8,
                largest,
                peak: None,
            });
        }
        scopes.push(ScopePlan {
            space: scope.space,
            capacity: scope.bytes,
            align,
            required,
            used,
            mode: ScopeMode::Sequential,
        });
    }
    scopes.sort_by_key(|s| s.space);

    Ok(Plan {
        kernel: program.kernel.clone(),
        config: format!("{}/{}", config.name, program.core),
        level: 2,
        scopes,
        buffers,
        warnings: Vec::new(),
    })
}

/// The running sum (§1.9 A): `entries` are (aligned slot bytes, slots) in placement order; slot
/// 0 of every entry first, then the extra slots, stepping over the `fixed` byte ranges (sorted).
/// Returns every entry's slot offsets and the end of the sum.
pub(crate) fn running_sum(
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

/// Buffers in the order of their first write in program order; buffers never written follow
/// in declaration order.
pub(crate) fn first_write_order(program: &Program) -> Vec<BufferId> {
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
        if let OpKind::For { body, .. } | OpKind::While { body, .. } = kind {
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
pub(crate) fn unplaced_buffers(program: &Program) -> Vec<BufferPlan> {
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
        })
        .collect()
}
