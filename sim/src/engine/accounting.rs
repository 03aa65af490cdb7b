//! Accounting: the cycles with two pipes busy (overlap), and at the end of a run each core's
//! end cycle, per-pipe statistics (busy, stalls by reason, starved, idle), its unpaired-set
//! findings, the stall spans of what still waits, and the waiters of a deadlock. Reads the
//! core's state; changes only its accounting (and empties what a stopped run never started).

use super::context::Cx;
use super::queue::Entry;
use super::result::{CoreRun, PipeStats, Stall, SyncFinding, WaitOn, Waiter};
use super::state::{pipes_of, Core, Outgoing, Pending, NP};
use super::{Activity, Observer, Span};
use crate::ids::OpId;
use crate::launch::Slot;
use crate::types::Pipe;

fn push_stall(stalls: &mut Vec<(Stall, u64)>, s: Stall, c: u64) {
    if c > 0 {
        stalls.push((s, c));
    }
}

fn add_stall(stalls: &mut Vec<(Stall, u64)>, s: Stall, c: u64) {
    if c == 0 {
        return;
    }
    if let Some(e) = stalls.iter_mut().find(|(r, _)| *r == s) {
        e.1 += c;
    } else {
        stalls.push((s, c));
    }
}

impl<'p, 'c> Core<'p, 'c> {
    /// Reports the head `e` of pipe `p` waiting over `from..to` for `reason`.
    #[inline]
    pub(super) fn head_stall<O: Observer>(
        &self,
        cx: &mut Cx<'_, O>,
        p: usize,
        span: (u64, u64),
        e: &Entry,
        reason: Stall,
    ) {
        let what = Activity::Stall(reason);
        self.span(cx, Pipe::ALL[p], span, OpId(e.op), Some(e.seq), what);
    }

    /// Reports a span of this core's unit `pipe` over `from..to` to the observer ([`Span`]:
    /// work, S's own cycles, or a stall with its cause): the one place the core's spans are
    /// made, which the accounting's totals add up to (`super::ledger`).
    #[inline(always)]
    pub(super) fn span<O: Observer>(
        &self,
        cx: &mut Cx<'_, O>,
        pipe: Pipe,
        (from, to): (u64, u64),
        op: OpId,
        seq: Option<u64>,
        what: Activity,
    ) {
        cx.obs.on_span(&Span {
            core: self.slot,
            pipe,
            from,
            to,
            op,
            seq,
            what,
        });
    }

    /// Counts the cycles in [overlap_from, t) with at least two non-S pipes busy. Every busy
    /// interval known so far started at or before `overlap_from`, and the ones that start later
    /// start at or after `t`, so only each pipe's latest interval matters.
    #[inline]
    pub(super) fn sweep_overlap(&mut self, t: u64) {
        if t <= self.overlap_from {
            return;
        }
        debug_assert_eq!(self.free_top, self.free_top_scan());
        let b = self.free_top[1];
        let second = b.min(t);
        if second > self.overlap_from {
            self.overlap += second - self.overlap_from;
        }
        self.overlap_from = t;
    }

    /// Pipe `p`'s work now ends at `free`, no earlier than before: the two latest ends
    /// ([`Core::free_top`]) follow.
    #[inline(always)]
    pub(super) fn set_free(&mut self, p: usize, free: u64) {
        debug_assert!(free >= self.pipes[p].free, "a pipe's free only grows");
        self.pipes[p].free = free;
        let [a, b] = self.free_top;
        if p == self.free_top_pipe as usize {
            self.free_top[0] = free;
        } else if free > a {
            // the old latest is now another pipe's: the latest of the others
            self.free_top = [free, a];
            self.free_top_pipe = p as u8;
        } else if free > b {
            self.free_top[1] = free;
        }
    }

    /// [`Core::free_top`] found by reading every pipe (what it must always equal).
    fn free_top_scan(&self) -> [u64; 2] {
        let (mut a, mut b) = (0u64, 0u64);
        for p in pipes_of(self.hot.mask) {
            let w = self.pipes[p].free;
            if w > a {
                b = a;
                a = w;
            } else if w > b {
                b = w;
            }
        }
        [a, b]
    }

    /// The cycle this core is done (or, deadlocked, stood still): the latest of S's stop,
    /// every completion and every queue join. A stopped run's unstarted work is dropped first.
    pub(super) fn end<O: Observer>(&mut self, cx: &Cx<'_, O>) -> u64 {
        if cx.stopped.is_some() {
            // what had not started at the limit never runs: S is done where it stood, and the
            // queues are empty (their pipes idle after their last work)
            for p in 0..NP {
                self.pipes[p].ring.len = 0;
            }
            self.pending = Pending::Done;
            self.s_end = self.hot.s_time;
        }
        let s_done = matches!(self.pending, Pending::Done);
        let mut end = if s_done { self.s_end } else { self.hot.s_time };
        for p in self.pipe_list() {
            let ps = &self.pipes[p];
            end = end.max(ps.max_complete).max(ps.free);
            for e in ps.ring.iter() {
                end = end.max(e.join);
            }
        }
        end
    }

    /// The core's accounting over `0..total` (the launch's end), its findings and, if it is
    /// still waiting, its waiters.
    pub(super) fn finish<O: Observer>(
        mut self,
        total: u64,
        end: u64,
        slot: &Slot,
        cx: &mut Cx<'_, O>,
    ) -> (CoreRun, Vec<SyncFinding>, Vec<Waiter>) {
        let stopped = cx.stopped;
        let s_done = matches!(self.pending, Pending::Done);
        let queued = self.pipe_list().any(|p| self.pipes[p].ring.len > 0);
        let waiters = if s_done && !queued {
            Vec::new()
        } else {
            self.deadlock()
        };
        self.sweep_overlap(total);
        let events = self.events as u64;
        // a stopped run's flags may still be waited on by what never ran
        for (idx, f) in self.flags.iter().enumerate().filter(|_| stopped.is_none()) {
            if f.set {
                let id = (idx as u64 % events) as u32;
                let pair = idx / self.events;
                self.findings.push(SyncFinding::UnpairedSet {
                    core: self.slot,
                    src: Pipe::ALL[pair / NP],
                    dst: Pipe::ALL[pair % NP],
                    id,
                    op: OpId(f.op),
                });
            }
        }

        let mut pipes = Vec::new();
        // S
        let mut stalls = self.s_stalls.list(self.events, true);
        for p in Pipe::ALL {
            push_stall(
                &mut stalls,
                Stall::QueueFull(p),
                self.s_queue_full[p.index()],
            );
        }
        let mut s_idle = 0;
        if s_done {
            s_idle = total - self.s_end;
        } else {
            let stall = total - self.hot.s_time;
            let (op, reason) = match self.pending {
                Pending::Send(Outgoing { pipe, entry, .. }) => {
                    (OpId(entry.op), Stall::QueueFull(pipe))
                }
                Pending::Sync { op, arg, .. } => (op, self.stall_of(arg, true)),
                _ => unreachable!("S deadlocked without waiting"),
            };
            add_stall(&mut stalls, reason, stall);
            if stall > 0 {
                self.span(
                    cx,
                    Pipe::S,
                    (self.hot.s_time, total),
                    op,
                    None,
                    Activity::Stall(reason),
                );
            }
        }
        stalls.sort();
        pipes.push(PipeStats {
            pipe: Pipe::S,
            instructions: self.s_instr,
            busy: self.s_busy,
            stalls,
            starved: 0,
            idle: s_idle,
        });
        for p in self.pipe_list() {
            let ps = &self.pipes[p];
            let mut stalls = ps.stalls.list(self.events, false);
            let mut starved = ps.starved;
            let mut idle = 0;
            if ps.ring.len > 0 {
                let head = ps.ring.front();
                let j = head.join.clamp(ps.free, total);
                starved += j - ps.free;
                let reason = self.stall_of(head.arg, false);
                add_stall(&mut stalls, reason, total - j);
                if total > j {
                    self.head_stall(cx, p, (j, total), head, reason);
                }
            } else {
                idle = total - ps.free;
            }
            stalls.sort();
            pipes.push(PipeStats {
                pipe: Pipe::ALL[p],
                instructions: ps.instructions,
                busy: ps.busy,
                stalls,
                starved,
                idle,
            });
        }
        let run = CoreRun {
            block: slot.block,
            core: slot.core,
            index: slot.index,
            end_cycle: end,
            pipes,
            overlap_cycles: self.overlap,
            bank_conflict_cycles: self.ub_banks.map(|_| self.bank_conflict),
        };
        (run, self.findings, waiters)
    }

    fn pipe_list(&self) -> impl Iterator<Item = usize> {
        let mask = self.hot.mask;
        (1..NP).filter(move |p| mask & (1 << p) != 0)
    }

    fn deadlock(&self) -> Vec<Waiter> {
        let core = self.slot;
        let mut waiters = Vec::new();
        match self.pending {
            Pending::Send(Outgoing { pipe, entry, .. }) => waiters.push(Waiter {
                core,
                pipe: Pipe::S,
                op: OpId(entry.op),
                on: WaitOn::QueueFull(pipe),
            }),
            Pending::Sync { op, arg, .. } => {
                if let Some(on) = self.wait_on(arg, true) {
                    waiters.push(Waiter {
                        core,
                        pipe: Pipe::S,
                        op,
                        on,
                    });
                }
            }
            _ => {}
        }
        for p in self.pipe_list() {
            let ps = &self.pipes[p];
            if ps.ring.len == 0 {
                continue;
            }
            let head = ps.ring.front();
            let on = self
                .wait_on(head.arg, false)
                .expect("only flag, cross-core and macro waits can block forever");
            waiters.push(Waiter {
                core,
                pipe: Pipe::ALL[p],
                op: OpId(head.op),
                on,
            });
        }
        waiters
    }
}
