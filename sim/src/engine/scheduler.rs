//! The scheduler: the discrete-event machine of a launch ([`Machine`]), one loop for one core
//! and for many. The earliest event goes next: a signal taking effect, then the cores in
//! launch order, and within a core its pipes in [`crate::types::Pipe`] order, then S
//! ([`Core::key`]). The cores' next events are kept in a tournament tree ([`MinTree`]); the
//! earliest core takes a turn ([`Machine::turn`]) and runs on while the global order allows,
//! or, when no observer needs one global order, ahead through its local events (relaxed).
//! A lone core's turn lasts until it fires a signal due before its next event. Nothing on
//! the hot path allocates; the dynamic trace is never stored.

use super::compiled::Compiled;
use super::context::Cx;
use super::memory::L2;
use super::queue::Arg;
use super::result::{Deadlock, Limits, RunError, RunResult, SyncFinding};
use super::state::{pipes_of, Core, Pending, INF, R};
use super::sync::{deliver, Cross};
use super::Observer;
use crate::config::Config;
use crate::ids::OpId;
use crate::launch::Slot;
use crate::program::Program;
use std::cmp::Reverse;

/// The machine: the cores of the launch, the cross-core signals between them and the run's
/// global state.
pub(super) struct Machine<'p, 'c, 'o, O: Observer> {
    cores: Vec<Core<'p, 'c>>,
    slots: Vec<Slot>,
    cross: Cross,
    cx: Cx<'o, O>,
    /// Cores run ahead through local events ([`Machine::run`]); only without an observer that
    /// needs one global order.
    relaxed: bool,
}

impl<'p, 'c, 'o, O: Observer> Machine<'p, 'c, 'o, O> {
    /// A machine for the cores `slots`, core k running part `slots[k].part` of `parts`.
    pub(super) fn new(
        parts: &[(&'p Program, &'c Compiled<'p>)],
        slots: Vec<Slot>,
        config: &Config,
        limits: Limits,
        obs: &'o mut O,
        relaxed: bool,
    ) -> Self {
        let gm_lines = parts.first().map_or(0, |p| p.1.gm_lines);
        let l2_demand = config
            .memory
            .map_or(0, |m| super::bandwidth::l2_demand(config, &m, &slots));
        let many = slots.len() > 1;
        let cores = slots
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let (program, c) = parts[s.part as usize];
                Core::new(program, config, c, k as u32, s, many)
            })
            .collect();
        Machine {
            cores,
            relaxed,
            cross: Cross::new(config, &slots, parts.len()),
            slots,
            cx: Cx {
                obs,
                seq: 0,
                now: 0,
                limits,
                executed: 0,
                stopped: None,
                l2: config.memory.map(|m| {
                    let warm: &[(u64, u64)] = match limits.l2 {
                        super::L2Start::Warm => &[(0, gm_lines)],
                        super::L2Start::Cold => &[],
                    };
                    let mut l2 = L2::new(m, gm_lines, warm);
                    l2.stats.start = limits.l2;
                    l2.set_l2_demand(l2_demand);
                    l2
                }),
                fired: Vec::new(),
                findings_late: Vec::new(),
                last_arrival: 0,
            },
        }
    }

    /// Runs to the end (or to a deadlock). The earliest event of the launch goes first:
    /// signals taking effect, then the cores in launch order; within a core, pipes in
    /// [`crate::types::Pipe`] order, then S.
    pub(super) fn run(self) -> Result<RunResult, RunError> {
        let Machine {
            mut cores,
            slots,
            mut cross,
            mut cx,
            relaxed,
        } = self;
        let mut tree = MinTree::new(cores.len());
        for (k, core) in cores.iter_mut().enumerate() {
            tree.set(k, core.key(0));
        }
        // one loop for one core and for many: the earliest of the next signal and the
        // cores' next events goes; a core given its turn runs on while the order allows
        loop {
            if cx.stopped.is_some() {
                break;
            }
            let (key, k) = tree.min();
            let at = cross.next_at();
            if at != INF && at <= key {
                if !Self::deliver_due(&mut cores, &slots, &mut cross, &mut cx, at) {
                    break;
                }
                for &j in &cross.woken {
                    let core = &mut cores[j as usize];
                    core.hot.woken = false;
                    core.hot.now = core.hot.now.max(at);
                    tree.set(j as usize, core.key(at));
                }
                cross.woken.clear();
                continue;
            }
            if key == INF {
                break;
            }
            let next = Self::turn(&mut cores[k], &tree, k, relaxed, &mut cross, &mut cx)?;
            tree.set(k, next);
        }
        // every core accounts up to the launch's end: the last core's end, or the last signal's
        // arrival if later (only a set nothing consumed, or a deadlock, arrives after every core
        // stood still), so that every event of the run, an overflow included, lies within it
        let ends: Vec<u64> = cores.iter_mut().map(|c| c.end(&cx)).collect();
        let total = ends.iter().copied().max().unwrap_or(0).max(cx.last_arrival);
        // counters left above 0: sets no cross_wait took (a stopped run's may still be waited on
        // by what never ran)
        if cx.stopped.is_none() {
            for (j, core) in cores.iter().enumerate() {
                for (id, &count) in core.xcount.iter().enumerate() {
                    if count > 0 {
                        let (set_core, op) = cross.last_set[j * cross.ids + id];
                        cx.findings_late.push(SyncFinding::UnpairedCrossSet {
                            core: j as u32,
                            id: id as u32,
                            count,
                            set_core,
                            op: OpId(op),
                        });
                    }
                }
            }
        }
        let mut findings = Vec::new();
        let mut waiters = Vec::new();
        let mut runs = Vec::new();
        for ((core, slot), end) in cores.into_iter().zip(&slots).zip(ends) {
            let (run, f, w) = core.finish(total, end, slot, &mut cx);
            findings.extend(f);
            waiters.extend(w);
            runs.push(run);
        }
        findings.append(&mut cx.findings_late);
        Ok(RunResult {
            total_cycles: total,
            cores: runs,
            findings,
            deadlock: (!waiters.is_empty()).then_some(Deadlock {
                cycle: total,
                waiters,
            }),
            stopped: cx.stopped,
            memory: cx.l2.as_ref().map(|l2| l2.stats),
            launch_cycles: 0,
        })
    }

    /// Core `k` (the earliest) takes its turn: it processes its events in its own time order
    /// for as long as the order allows, and returns its next event's cycle (its key in the
    /// tree). In the global order (`relaxed` false: an observer sees every event in one
    /// order, or a lone core) that is while its next event comes before every lower core's,
    /// not after a higher one's, and before any signal due; S runs ahead within the core up
    /// to the earliest of those.
    ///
    /// Relaxed, an event that touches shared state (a gm move: the L2 and HBM; a cross-core
    /// set or wait: the counters) still goes only in the global order; any other event goes
    /// at once, unless the core waits on a cross-core counter that a signal not yet fired
    /// could raise before that event (the earliest such signal arrives `latency` after the
    /// earliest other core's next event).
    #[inline]
    fn turn(
        core: &mut Core<'p, 'c>,
        tree: &MinTree,
        k: usize,
        relaxed: bool,
        cross: &mut Cross,
        cx: &mut Cx<'_, O>,
    ) -> Result<u64, RunError> {
        let (lower, upper) = tree.min_split(k);
        let others = lower.min(upper);
        let reach = others.saturating_add(core.xlatency);
        if relaxed {
            // the core's own clock: the launch's may be ahead of it
            cx.now = core.hot.now;
        }
        // the next signal due changes only when the core fires one
        let mut due = cross.next_at();
        let next = loop {
            let t = core.key(cx.now);
            if cx.stopped.is_some() || t == INF {
                break t;
            }
            // the global order allows it (the first event always is)
            let exact = t < lower && t <= upper && t < due;
            let horizon = if !relaxed {
                if !exact {
                    break t;
                }
                others.min(due)
            } else {
                let running_s = core.hot.next_s && matches!(core.pending, Pending::None);
                // a pipe start or S action the global order allows needs no more checks; S
                // running ahead and any event the order does not allow yet do
                let waits = (!exact || running_s) && core.waits_on_cross();
                let ok = exact || (!core.next_is_global() && (!waits || (t < reach && t < due)));
                if !ok {
                    break t;
                }
                if waits {
                    reach.min(due)
                } else {
                    INF
                }
            };
            if let Err(f) = core.step_keyed(t, horizon, cx) {
                return Err(core.error(*f));
            }
            if !cx.fired.is_empty() {
                for sig in cx.fired.drain(..) {
                    cross.in_flight.push(Reverse(sig));
                }
                due = cross.next_at();
            }
        };
        if relaxed {
            core.hot.now = core.hot.now.max(cx.now);
        }
        Ok(next)
    }

    /// The earliest signal in flight, due at `at`, takes effect ([`deliver`]); false
    /// when `at` is past the cycle limit (the run stops there).
    fn deliver_due(
        cores: &mut [Core<'p, 'c>],
        slots: &[Slot],
        cross: &mut Cross,
        cx: &mut Cx<'_, O>,
        at: u64,
    ) -> bool {
        if !cx.in_time(at, Some(at)) {
            return false;
        }
        cx.now = at;
        let Some(Reverse(sig)) = cross.in_flight.pop() else {
            unreachable!("a signal was due")
        };
        deliver(cores, slots, cross, cx, sig);
        true
    }
}

/// The cores' next event cycles with the earliest (ties: the lowest core) found in O(1) and
/// updated in O(log cores): a tournament tree over a power-of-two number of leaves.
struct MinTree {
    leaves: usize,
    keys: Vec<u64>,
    /// `win[i]`: the winning leaf of node i (1 is the root; leaves at `leaves..`).
    win: Vec<u32>,
}

impl MinTree {
    fn new(n: usize) -> MinTree {
        let leaves = n.next_power_of_two().max(1);
        let mut win = vec![0; 2 * leaves];
        for (i, w) in win.iter_mut().enumerate().skip(leaves) {
            *w = (i - leaves) as u32;
        }
        let mut t = MinTree {
            leaves,
            keys: vec![INF; leaves],
            win,
        };
        for i in (1..leaves).rev() {
            t.win[i] = t.better(t.win[2 * i], t.win[2 * i + 1]);
        }
        t
    }

    #[inline(always)]
    fn better(&self, a: u32, b: u32) -> u32 {
        if self.keys[b as usize] < self.keys[a as usize] {
            b
        } else {
            a
        }
    }

    #[inline]
    fn set(&mut self, k: usize, key: u64) {
        self.keys[k] = key;
        let mut i = (k + self.leaves) / 2;
        while i >= 1 {
            self.win[i] = self.better(self.win[2 * i], self.win[2 * i + 1]);
            i /= 2;
        }
    }

    #[inline(always)]
    fn min(&self) -> (u64, usize) {
        let w = self.win[1] as usize;
        (self.keys[w], w)
    }

    /// The earliest keys of the cores before `k` and of those after it.
    #[inline]
    fn min_split(&self, k: usize) -> (u64, u64) {
        let (mut lower, mut upper) = (INF, INF);
        let mut i = k + self.leaves;
        while i > 1 {
            let sib = i ^ 1;
            let key = self.keys[self.win[sib] as usize];
            // the left sibling's leaves come before k's, the right one's after
            if sib < i {
                lower = lower.min(key);
            } else {
                upper = upper.min(key);
            }
            i /= 2;
        }
        (lower, upper)
    }
}

impl<'p, 'c> Core<'p, 'c> {
    // ----- the core's events -------------------------------------------------------------

    /// The cycle of the core's next event (INF: none until a signal arrives, or done).
    #[inline(always)]
    fn key(&mut self, now: u64) -> u64 {
        if self.hot.dirty != 0 {
            self.refresh();
        }
        let s = match self.pending {
            Pending::None => self.hot.s_time,
            _ => self.s_cand(now),
        };
        // a pipe goes before S in the same cycle
        self.hot.next_s = s < self.hot.pmin;
        if self.hot.next_s {
            s
        } else {
            self.hot.pmin
        }
    }

    /// Whether the core's next event (after [`Core::key`]) touches what other cores share: a
    /// gm move starting (the L2, HBM), a cross-core set firing or a wait taking a count.
    fn next_is_global(&self) -> bool {
        // as [`Core::key`] chose
        if self.hot.next_s {
            return matches!(
                self.pending,
                Pending::Sync {
                    arg: Arg::CrossSet { .. } | Arg::CrossWait { .. },
                    ..
                }
            );
        }
        if self.hot.pmin == INF {
            return false;
        }
        let ps = &self.pipes[self.hot.pmin_pipe as usize];
        matches!(
            ps.ring.front().arg,
            Arg::GmMove { .. } | Arg::CrossSet { .. } | Arg::CrossWait { .. }
        )
    }

    /// Whether a pipe's head or S waits on a cross-core counter that is 0: a signal not yet
    /// delivered could let it go before the core's next event.
    fn waits_on_cross(&self) -> bool {
        if let Pending::Sync {
            arg: Arg::CrossWait { counter },
            ..
        } = self.pending
        {
            if self.xcount[counter as usize] == 0 {
                return true;
            }
        }
        for p in pipes_of(self.hot.mask) {
            let ps = &self.pipes[p];
            if ps.ring.len > 0 {
                if let Arg::CrossWait { counter } = ps.ring.front().arg {
                    if self.xcount[counter as usize] == 0 {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// Processes the event [`Core::key`] has just found at `t` (not INF), with
    /// nothing changed since: the choice it made is taken, not made again.
    #[inline(always)]
    fn step_keyed<O: Observer>(&mut self, t: u64, horizon: u64, cx: &mut Cx<'_, O>) -> R<()> {
        debug_assert!(t != INF && self.hot.dirty == 0);
        if !self.hot.next_s {
            self.start(self.hot.pmin_pipe as usize, t, cx);
            Ok(())
        } else if matches!(self.pending, Pending::None) {
            self.hot.horizon = horizon;
            self.run_s(cx)
        } else {
            self.fire(t, cx);
            Ok(())
        }
    }

    // ----- pipes -------------------------------------------------------------------------

    // ----- scalar unit -------------------------------------------------------------------

    // ----- the end -----------------------------------------------------------------------
}
