//! The overflow diagnostic of a scope nothing places, and the peak of live bytes.
//!
//! The first line is HIVM PlanMemory's own text (`ub overflow, requires N bits while M bits
//! available!`), so that tools and people who know HIVM's message read ours; N is what the
//! scope needs when only lifetimes limit sharing. Then the instant of peak liveness and the
//! entries live there, largest first: what to shrink.

use super::entries::{Slot, StorageEntry};
use super::first_fit::Placer;
use crate::liveness::Liveness;
use crate::plan::PlanError;
use sim::program::Program;
use sim::{BufferId, Space};

/// The most bytes (every slot) live at one position, and the first position where that
/// happens.
pub(super) fn peak_bytes(entries: &[StorageEntry]) -> Option<(usize, u64)> {
    crate::liveness::peak_over(
        entries
            .iter()
            .map(|e| (e.lifetime.as_slice(), e.size * e.multi as u64)),
    )
}

/// HIVM's overflow error: N is the level-0 peak on an unbounded outline, or the total
/// for a scope with a single slot; then the instant of peak liveness and what is live there.
#[allow(clippy::too_many_arguments)]
pub(super) fn overflow(
    program: &Program,
    live: &Liveness,
    entries: &[StorageEntry],
    order: &[Slot],
    touch: &[(BufferId, BufferId)],
    align: u64,
    space: Space,
    cap: u64,
    slots: usize,
) -> PlanError {
    let required = if slots <= 1 {
        entries.iter().map(|e| e.size * e.multi as u64).sum::<u64>()
    } else {
        let mut p = Placer::new(entries, order, touch, align, None);
        p.single_level(0);
        p.end()
    };
    let weight = |e: &StorageEntry| e.size * e.multi as u64;
    let live_at =
        |e: &StorageEntry, p: usize| e.lifetime.iter().any(|i| i.first <= p && p <= i.last);
    let peak = peak_bytes(entries);
    let mut largest: Vec<(String, u64)> = entries
        .iter()
        .filter(|e| peak.is_none_or(|(p, _)| live_at(e, p)))
        .map(|e| (e.name(program).to_string(), weight(e)))
        .collect();
    largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let peak_op = peak.map(|(p, _)| live.pos_op[p]);
    let peak = peak.map(|(p, _)| {
        let op = program.op(live.pos_op[p]);
        (p, format!("{} ({})", op.path, op.kind.name()))
    });
    PlanError::Overflow {
        space,
        required_bits: required * 8,
        available_bits: cap * 8,
        largest,
        peak,
        peak_op,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_text_starts_with_hivm_line() {
        let err = PlanError::Overflow {
            space: Space::Ub,
            required_bits: 16,
            available_bits: 8,
            largest: vec![("a".into(), 2)],
            peak: Some((3, "body[0] (load)".into())),
            peak_op: None,
        };
        assert_eq!(
            err.to_string(),
            "ub overflow, requires 16 bits while 8 bits available! (2 bytes needed, 1 available)\n  peak liveness at position 3, body[0] (load); live there:\n  a: 2 bytes"
        );
    }
}
