//! An observer that watches a run on another thread: the engine's calls are recorded into
//! batches and replayed, in the same order, to the inner observer on a thread of its own. The
//! trace uses it so formatting and writing hundreds of megabytes overlap the run instead of
//! adding to it. A bounded channel of recycled batches keeps memory flat.

use crossbeam::channel::{bounded, Receiver, Sender};
use sim::engine::{CrossEvent, Issue, Observer, Release, Span};
use sim::{OpId, Pipe};
use std::thread::{Scope, ScopedJoinHandle};

/// Calls per batch.
const BATCH: usize = 8192;
/// Batches in flight: the recorder waits when the replaying thread is this far behind.
const IN_FLIGHT: usize = 4;

#[derive(Clone, Copy)]
enum Call {
    Issue {
        seq: u64,
        core: u32,
        op: OpId,
        pipe: Pipe,
        cycle: u64,
        flag_id: Option<u32>,
        /// `vars[vars_at..slots_at]` and `slots[slots_at..slots_end]` of the batch.
        vars: (u32, u32),
        slots: (u32, u32),
    },
    Start {
        seq: u64,
        start: u64,
        complete: u64,
    },
    Span(Span),
    Release(Release),
    /// A counter increment: its sets are `sets[sets.0..sets.1]` of the batch.
    Signal {
        core: u32,
        id: u32,
        cycle: u64,
        sets: (u32, u32),
    },
    Take {
        core: u32,
        id: u32,
        cycle: u64,
        wait_seq: u64,
    },
}

#[derive(Default)]
struct Batch {
    calls: Vec<Call>,
    vars: Vec<i64>,
    slots: Vec<u32>,
    sets: Vec<u64>,
}

impl Batch {
    fn clear(&mut self) {
        self.calls.clear();
        self.vars.clear();
        self.slots.clear();
        self.sets.clear();
    }
}

/// Records the calls of a run and replays them to `O` on a scoped thread.
pub struct Background<'scope, O: Observer + Send + 'scope> {
    batch: Batch,
    tx: Option<Sender<Batch>>,
    recycled: Receiver<Batch>,
    thread: Option<ScopedJoinHandle<'scope, O>>,
}

impl<'scope, O: Observer + Send + 'scope> Background<'scope, O> {
    /// Starts the thread that replays to `inner`, within `scope`.
    pub fn spawn<'env>(scope: &'scope Scope<'scope, 'env>, mut inner: O) -> Self {
        let (tx, rx) = bounded::<Batch>(IN_FLIGHT);
        let (back, recycled) = bounded::<Batch>(IN_FLIGHT + 1);
        let thread = scope.spawn(move || {
            for mut batch in rx {
                replay(&batch, &mut inner);
                batch.clear();
                let _ = back.try_send(batch);
            }
            inner
        });
        Background {
            batch: Batch::default(),
            tx: Some(tx),
            recycled,
            thread: Some(thread),
        }
    }

    #[inline]
    fn push(&mut self, call: Call) {
        self.batch.calls.push(call);
        if self.batch.calls.len() >= BATCH {
            self.send();
        }
    }

    fn send(&mut self) {
        let next = self.recycled.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.batch, next);
        if let Some(tx) = &self.tx {
            // the thread stops only after the channel closes; a panic there shows at the join
            let _ = tx.send(full);
        }
    }

    /// Replays what is left, waits for the thread and hands back the inner observer.
    pub fn finish(mut self) -> O {
        self.send();
        self.tx = None;
        match self.thread.take().expect("finished once").join() {
            Ok(inner) => inner,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

fn replay<O: Observer>(batch: &Batch, inner: &mut O) {
    for call in &batch.calls {
        match *call {
            Call::Issue {
                seq,
                core,
                op,
                pipe,
                cycle,
                flag_id,
                vars,
                slots,
            } => inner.on_issue(&Issue {
                seq,
                core,
                op,
                pipe,
                cycle,
                vars: &batch.vars[vars.0 as usize..vars.1 as usize],
                slots: &batch.slots[slots.0 as usize..slots.1 as usize],
                flag_id,
            }),
            Call::Start {
                seq,
                start,
                complete,
            } => inner.on_start(seq, start, complete),
            Call::Span(s) => inner.on_span(&s),
            Call::Release(r) => inner.on_release(&r),
            Call::Signal {
                core,
                id,
                cycle,
                sets,
            } => inner.on_cross(&CrossEvent::Signal {
                core,
                id,
                cycle,
                sets: &batch.sets[sets.0 as usize..sets.1 as usize],
            }),
            Call::Take {
                core,
                id,
                cycle,
                wait_seq,
            } => inner.on_cross(&CrossEvent::Take {
                core,
                id,
                cycle,
                wait_seq,
            }),
        }
    }
}

impl<'scope, O: Observer + Send + 'scope> Observer for Background<'scope, O> {
    #[inline]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let v0 = self.batch.vars.len() as u32;
        self.batch.vars.extend_from_slice(issue.vars);
        let s0 = self.batch.slots.len() as u32;
        self.batch.slots.extend_from_slice(issue.slots);
        let call = Call::Issue {
            seq: issue.seq,
            core: issue.core,
            op: issue.op,
            pipe: issue.pipe,
            cycle: issue.cycle,
            flag_id: issue.flag_id,
            vars: (v0, self.batch.vars.len() as u32),
            slots: (s0, self.batch.slots.len() as u32),
        };
        self.push(call);
    }

    #[inline]
    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        self.push(Call::Start {
            seq,
            start,
            complete,
        });
    }

    #[inline]
    fn on_span(&mut self, span: &Span) {
        self.push(Call::Span(*span));
    }

    #[inline]
    fn on_release(&mut self, release: &Release) {
        self.push(Call::Release(*release));
    }

    #[inline]
    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        let call = match *event {
            CrossEvent::Signal {
                core,
                id,
                cycle,
                sets,
            } => {
                let s0 = self.batch.sets.len() as u32;
                self.batch.sets.extend_from_slice(sets);
                Call::Signal {
                    core,
                    id,
                    cycle,
                    sets: (s0, self.batch.sets.len() as u32),
                }
            }
            CrossEvent::Take {
                core,
                id,
                cycle,
                wait_seq,
            } => Call::Take {
                core,
                id,
                cycle,
                wait_seq,
            },
        };
        self.push(call);
    }
}

impl<'scope, O: Observer + Send + 'scope> Drop for Background<'scope, O> {
    fn drop(&mut self) {
        // not finished (the run failed): close the channel so the scope's join ends
        self.tx = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::engine::Activity;

    /// Records every call as text.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl Observer for Log {
        fn on_issue(&mut self, i: &Issue<'_>) {
            self.0.push(format!(
                "issue {} {:?} {:?} {:?}",
                i.seq, i.op, i.vars, i.slots
            ));
        }
        fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
            self.0.push(format!("start {seq} {start} {complete}"));
        }
        fn on_span(&mut self, s: &Span) {
            self.0.push(format!("span {s:?}"));
        }
        fn on_release(&mut self, r: &Release) {
            self.0.push(format!("release {r:?}"));
        }
    }

    fn feed<O: Observer>(o: &mut O, n: u64) {
        for k in 0..n {
            let vars = [k as i64, -(k as i64)];
            let slots = [(k % 3) as u32];
            o.on_issue(&Issue {
                core: 0,
                seq: k,
                op: OpId(k as u32 % 5),
                pipe: Pipe::V,
                cycle: k,
                vars: &vars[..(k % 3) as usize],
                slots: &slots[..(k % 2) as usize],
                flag_id: (k % 4 == 0).then_some(k as u32),
            });
            o.on_span(&Span {
                core: 0,
                pipe: Pipe::V,
                from: k,
                to: k + 1,
                op: OpId(0),
                seq: Some(k),
                what: Activity::Work,
            });
            o.on_release(&Release {
                core: 0,
                set_seq: k,
                wait_seq: k + 1,
                cycle: k,
            });
            o.on_start(k, k, k + 2);
        }
    }

    #[test]
    fn replays_every_call_in_order_across_batches() {
        let mut direct = Log::default();
        // more than two batches, and a partial last one
        let n = (BATCH as u64 * 5) / 4 * 2 + 17;
        feed(&mut direct, n);
        let replayed = std::thread::scope(|s| {
            let mut bg = Background::spawn(s, Log::default());
            feed(&mut bg, n);
            bg.finish()
        });
        assert_eq!(replayed.0.len(), direct.0.len());
        assert_eq!(replayed.0, direct.0);
    }
}
