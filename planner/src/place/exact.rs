//! `--placement exact`: a scope that first fit cannot place is handed to the placement core's
//! complete search ([`crate::pack::exact`]), so a kernel whose buffers fit is not rejected
//! because of first fit's fragmentation.
//!
//! Every slot of every storage entry becomes one MiniMalloc buffer: size the entry's aligned
//! size, alignment the scope's, lifetime the hull of the entry's lifetime as the half-open
//! `[first, last + 1)`, so two entries conflict when their inclusive lifetimes share a position
//! (Stage 0). Conservative, so every placement found is valid for the validator: gaps in a
//! lifetime are filled, the one-position touch HIVM allows refused multi-buffer pairs is
//! refused, a `unique` entry is live for the whole program, and the slots of one entry share a
//! lifetime, so they get distinct bytes. `at:` entries are fixed buffers. The level rules (2
//! and 1) are not applied: the result is a level-0 plan.

use super::entries::StorageEntry;
use crate::pack::exact::{solve, ExactOptions, Outcome};
use crate::pack::{Instance, PackBuffer};
use std::time::Duration;

/// Offsets for every slot of every entry (`entries` order), or `None` when the search finds no
/// placement under `cap` within `time_limit`.
pub(super) fn exact_offsets(
    entries: &[StorageEntry],
    align: u64,
    cap: u64,
    positions: usize,
    time_limit: Duration,
) -> Option<Vec<Vec<u64>>> {
    let mut buffers = Vec::new();
    let mut owner = Vec::new();
    for (e, se) in entries.iter().enumerate() {
        let (lower, upper) = if se.unique {
            (0, positions.max(1) as u64)
        } else {
            match (se.lifetime.first(), se.lifetime.last()) {
                (Some(f), Some(l)) => (f.first as u64, l.last as u64 + 1),
                // never live: any bytes do; give it one position so it gets some
                _ => (0, 1),
            }
        };
        for k in 0..se.multi as usize {
            let mut b = PackBuffer::new(format!("e{e}s{k}"), lower, upper, se.size);
            b.align = align.max(1);
            b.fixed = se.fixed.as_ref().and_then(|f| f.get(k).copied());
            buffers.push(b);
            owner.push(e);
        }
    }
    let inst = Instance::new(buffers);
    let opts = ExactOptions {
        time_limit: Some(time_limit),
        threads: 1,
        minimize: false,
    };
    let r = solve(&inst, cap, &opts);
    if r.outcome != Outcome::Feasible {
        return None;
    }
    let sol = r.solution?;
    let mut out: Vec<Vec<u64>> = entries.iter().map(|_| Vec::new()).collect();
    for (i, &e) in owner.iter().enumerate() {
        out[e].push(sol.offsets[i]);
    }
    Some(out)
}
