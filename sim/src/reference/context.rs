//! What is global to a run rather than to one core ([`Cx`]): the observer, the dynamic
//! instruction numbering, the time of the last event, the limits and where the run stopped,
//! the shared memory system, and the cross-core signals a step fired ([`Signal`]).

use super::memory::L2;
use super::result::{Limit, Limits, Stopped, SyncFinding};
use super::Observer;

/// What is global to a run rather than to one core: the observer, the dynamic instruction
/// numbering and the time of the last event. A launch of several cores shares one.
pub(super) struct Cx<'o, O: Observer> {
    pub(super) obs: &'o mut O,
    pub(super) seq: u64,
    /// The cycle of the last event processed; nothing can happen before it any more.
    pub(super) now: u64,
    pub(super) limits: Limits,
    /// Dynamic instructions so far (sent or executed by S, loop iterations and `if`
    /// evaluations included), against `limits.max_instructions`.
    pub(super) executed: u64,
    /// Set when the run reached a limit: nothing happens after it.
    pub(super) stopped: Option<Stopped>,
    /// The gm memory system, shared by every core (with a `memory` config section).
    pub(super) l2: Option<L2>,
    /// Cross-core signals fired by the step just taken, for the machine to schedule.
    pub(super) fired: Vec<Signal>,
    /// Findings of the launch rather than of one core (cross-core overflows).
    pub(super) findings_late: Vec<SyncFinding>,
    /// The cycle the last cross-core signal took effect: the launch lasts at least until then
    /// (a set no core waits for still changes a counter, maybe overflowing it, when it lands).
    pub(super) last_arrival: u64,
}

impl<O: Observer> Cx<'_, O> {
    #[inline(always)]
    pub(super) fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    /// Counts one dynamic instruction, about to begin at `cycle`; false (and the run stops)
    /// past the limit.
    #[inline(always)]
    pub(super) fn count(&mut self, cycle: u64) -> bool {
        self.executed += 1;
        if self.executed > self.limits.max_instructions {
            self.stop(Limit::Instructions(self.limits.max_instructions), cycle);
            return false;
        }
        true
    }

    /// Whether a step beginning at cycle `at` and ending at `end` (`None`: past 2^64) stays
    /// within the cycle limit; false (and the run stops) when it does not.
    #[inline(always)]
    pub(super) fn in_time(&mut self, at: u64, end: Option<u64>) -> bool {
        match end {
            Some(t) if t <= self.limits.max_cycles => true,
            _ => {
                self.stop(Limit::Cycles(self.limits.max_cycles), at);
                false
            }
        }
    }

    #[cold]
    fn stop(&mut self, limit: Limit, cycle: u64) {
        if self.stopped.is_none() {
            self.stopped = Some(Stopped { limit, cycle });
        }
    }
}

/// A `cross_set` that has fired and takes effect at `at`, ordered by (at, seq).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Signal {
    pub(super) at: u64,
    pub(super) seq: u64,
    pub(super) core: u32,
    pub(super) mode: u8,
    pub(super) id: u32,
    pub(super) op: u32,
}
