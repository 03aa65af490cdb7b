//! An observer that adds up the spans of a run and checks them against its result: the
//! proof that [`Observer::on_span`] reports exactly what the accounting counts, which the
//! timeline and the profile rely on.

use super::{Activity, Observer, Release, RunResult, Span, Stall};
use crate::types::Pipe;

const NP: usize = Pipe::ALL.len();

/// Per-pipe sums of the spans a run reported, and the first inconsistency seen.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    busy: [u64; NP],
    stalls: [Vec<(Stall, u64)>; NP],
    last_end: [u64; NP],
    releases: u64,
    error: Option<String>,
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }

    /// How many flags were handed from a set to a wait.
    pub fn releases(&self) -> u64 {
        self.releases
    }

    /// Whether the spans add up to `result`, pipe by pipe and stall reason by stall reason,
    /// and no two spans of a pipe overlapped.
    pub fn check(&self, result: &RunResult) -> Result<(), String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        for p in &result.pipes {
            let i = p.pipe.index();
            if self.busy[i] != p.busy {
                return Err(format!(
                    "pipe {}: busy spans add up to {}, the accounting says {}",
                    p.pipe, self.busy[i], p.busy
                ));
            }
            let mut mine = self.stalls[i].clone();
            mine.sort();
            let mut theirs = p.stalls.clone();
            theirs.retain(|(_, c)| *c > 0);
            theirs.sort();
            if mine != theirs {
                return Err(format!(
                    "pipe {}: stall spans {mine:?}, the accounting says {theirs:?}",
                    p.pipe
                ));
            }
        }
        Ok(())
    }
}

impl Observer for Ledger {
    fn on_span(&mut self, span: &Span) {
        let i = span.pipe.index();
        if span.from < self.last_end[i] || span.to < span.from {
            self.error.get_or_insert_with(|| {
                format!(
                    "pipe {}: span [{}, {}) overlaps the previous one (ended {})",
                    span.pipe, span.from, span.to, self.last_end[i]
                )
            });
        }
        self.last_end[i] = span.to;
        let len = span.to.saturating_sub(span.from);
        match span.what {
            Activity::Stall(reason) => {
                let s = &mut self.stalls[i];
                match s.iter_mut().find(|(r, _)| *r == reason) {
                    Some(e) => e.1 += len,
                    None => s.push((reason, len)),
                }
            }
            _ => self.busy[i] += len,
        }
    }

    fn on_release(&mut self, release: &Release) {
        // sequence numbers are issue order, and a wait may be issued before its set: nothing
        // orders the two numbers
        let _ = release;
        self.releases += 1;
    }
}
