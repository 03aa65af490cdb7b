//! An observer that adds up the spans of a run and checks them against its result: the
//! proof that [`Observer::on_span`] reports exactly what the accounting counts, which the
//! timeline and the profile rely on.

use super::{Activity, Observer, Release, RunResult, Span, Stall};
use crate::types::Pipe;

const NP: usize = Pipe::ALL.len();

/// One core's per-pipe sums of the spans it reported.
#[derive(Clone, Debug, Default)]
struct Sums {
    busy: [u64; NP],
    stalls: [Vec<(Stall, u64)>; NP],
    last_end: [u64; NP],
}

/// Per-core, per-pipe sums of the spans a run reported, and the first inconsistency seen.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// Indexed by [`Span::core`]; every core of a launch alike.
    cores: Vec<Sums>,
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

    /// Whether the spans add up to `result`, core by core, pipe by pipe and stall reason by
    /// stall reason, and no two spans of a pipe overlapped.
    pub fn check(&self, result: &RunResult) -> Result<(), String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.cores.len() > result.cores.len() {
            return Err(format!(
                "spans name core {}, the run has {} cores",
                self.cores.len() - 1,
                result.cores.len()
            ));
        }
        let none = Sums::default();
        for (k, core) in result.cores.iter().enumerate() {
            let mine = self.cores.get(k).unwrap_or(&none);
            for p in &core.pipes {
                let i = p.pipe.index();
                if mine.busy[i] != p.busy {
                    return Err(format!(
                        "core {k} pipe {}: busy spans add up to {}, the accounting says {}",
                        p.pipe, mine.busy[i], p.busy
                    ));
                }
                let mut spans = mine.stalls[i].clone();
                spans.sort();
                let mut theirs = p.stalls.clone();
                theirs.retain(|(_, c)| *c > 0);
                theirs.sort();
                if spans != theirs {
                    return Err(format!(
                        "core {k} pipe {}: stall spans {spans:?}, the accounting says {theirs:?}",
                        p.pipe
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Observer for Ledger {
    fn on_span(&mut self, span: &Span) {
        let k = span.core as usize;
        if self.cores.len() <= k {
            // cores are few (a launch's, bounded at load); grown as their spans come
            self.cores.resize_with(k + 1, Sums::default);
        }
        let core = &mut self.cores[k];
        let i = span.pipe.index();
        if span.from < core.last_end[i] || span.to < span.from {
            self.error.get_or_insert_with(|| {
                format!(
                    "core {k} pipe {}: span [{}, {}) overlaps the previous one (ended {})",
                    span.pipe, span.from, span.to, core.last_end[i]
                )
            });
        }
        core.last_end[i] = span.to;
        let len = span.to.saturating_sub(span.from);
        match span.what {
            Activity::Stall(reason) => {
                let s = &mut core.stalls[i];
                match s.iter_mut().find(|(r, _)| *r == reason) {
                    Some(e) => e.1 += len,
                    None => s.push((reason, len)),
                }
            }
            _ => core.busy[i] += len,
        }
    }

    fn on_release(&mut self, release: &Release) {
        // sequence numbers are issue order, and a wait may be issued before its set: nothing
        // orders the two numbers
        let _ = release;
        self.releases += 1;
    }
}
