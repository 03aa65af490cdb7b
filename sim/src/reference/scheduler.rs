//! The scheduler: the discrete-event machine of a launch ([`Machine`]). The earliest event goes
//! next: a signal taking effect, then the cores in launch order, and within a core its pipes in
//! [`crate::types::Pipe`] order, then S ([`Core::key`], [`Core::step`]). One core runs alone
//! until it fires a signal; several are ordered by a tournament tree ([`MinTree`]), or run
//! ahead through local events when no observer needs one global order ([`Machine::run`],
//! relaxed). Nothing on the hot path allocates; the dynamic trace is never stored.

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
        // one core (every single-core run): no tree to keep, S runs ahead to the next signal
        while cores.len() == 1 && cx.stopped.is_none() {
            let core = &mut cores[0];
            if cross.in_flight.is_empty() {
                // nothing due from outside: the core's own order is the whole order, until it
                // fires a signal (at itself: a one-block launch's mode-0 set)
                loop {
                    match core.step_one(INF, &mut cx) {
                        Ok(true) => {}
                        Ok(false) => break,
                        Err(f) => return Err(core.error(*f)),
                    }
                    if !cx.fired.is_empty() || cx.stopped.is_some() {
                        break;
                    }
                }
                if cx.fired.is_empty() {
                    break;
                }
                for sig in cx.fired.drain(..) {
                    cross.in_flight.push(Reverse(sig));
                }
                continue;
            }
            let key = core.key(cx.now);
            let at = cross.next_at();
            if at != INF && at <= key {
                if !Self::deliver_due(&mut cores, &slots, &mut cross, &mut cx, at) {
                    break;
                }
                cores[0].hot.woken = false;
                cross.woken.clear();
                continue;
            }
            if key == INF {
                break;
            }
            if let Err(f) = core.step(at, &mut cx) {
                return Err(core.error(*f));
            }
            for sig in cx.fired.drain(..) {
                cross.in_flight.push(Reverse(sig));
            }
        }
        loop {
            if cores.len() == 1 {
                break; // done above
            }
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
            if relaxed {
                let core = &mut cores[k];
                let next = Self::run_ahead(core, &tree, k, &mut cross, &mut cx)?;
                tree.set(k, next);
                continue;
            }
            // S may run ahead within its core only while no other core or signal is due
            let horizon = tree.min_except(k).min(at);
            let core = &mut cores[k];
            if let Err(f) = core.step(horizon, &mut cx) {
                return Err(core.error(*f));
            }
            for sig in cx.fired.drain(..) {
                cross.in_flight.push(Reverse(sig));
            }
            tree.set(k, core.key(cx.now));
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
        let first = runs.first().cloned();
        Ok(RunResult {
            total_cycles: total,
            pipes: first.as_ref().map(|c| c.pipes.clone()).unwrap_or_default(),
            overlap_cycles: first.as_ref().map_or(0, |c| c.overlap_cycles),
            bank_conflict_cycles: first.and_then(|c| c.bank_conflict_cycles),
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

    /// Relaxed scheduling: core `k` (the earliest) processes its events in its own time order
    /// for as long as that cannot change what another core sees. An event that touches shared
    /// state (a gm move: the L2 and HBM; a cross-core set or wait: the counters) goes only in
    /// the global order (before every lower core's next event, not after a higher one's, and
    /// before any signal due); any other event goes at once, unless the core waits on a
    /// cross-core counter that a signal not yet fired could raise before that event (the
    /// earliest such signal arrives `latency` after the earliest other core's next event).
    fn run_ahead(
        core: &mut Core<'p, 'c>,
        tree: &MinTree,
        k: usize,
        cross: &mut Cross,
        cx: &mut Cx<'_, O>,
    ) -> Result<u64, RunError> {
        let (lower, upper) = tree.min_split(k);
        let others = lower.min(upper);
        let reach = others.saturating_add(core.xlatency);
        cx.now = core.hot.now;
        // the core's next event when it stops: its key in the tree
        let next = loop {
            let t = core.key(cx.now);
            if cx.stopped.is_some() || t == INF {
                break t;
            }
            let due = cross.next_at();
            // the global order allows it (the first event always is)
            let exact = t < lower && t <= upper && t < due;
            let running_s =
                matches!(core.pending, Pending::None) && core.hot.s_time < core.hot.pmin;
            // a pipe start or S action the global order allows needs no more checks; S running
            // ahead and any event the order does not allow yet do
            let waits = (!exact || running_s) && core.waits_on_cross();
            let ok = exact || (!core.next_is_global(cx.now) && (!waits || (t < reach && t < due)));
            if !ok {
                break t;
            }
            // S runs ahead within the core up to the next bound on its local events
            let horizon = if waits { reach.min(due) } else { INF };
            if let Err(f) = core.step(horizon, cx) {
                return Err(core.error(*f));
            }
            core.hot.now = cx.now;
            for sig in cx.fired.drain(..) {
                cross.in_flight.push(Reverse(sig));
            }
        };
        core.hot.now = core.hot.now.max(cx.now);
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

    /// The earliest key of every core but `k`.
    #[inline]
    fn min_except(&self, k: usize) -> u64 {
        let mut best = INF;
        let mut i = k + self.leaves;
        while i > 1 {
            let sib = self.win[i ^ 1] as usize;
            best = best.min(self.keys[sib]);
            i /= 2;
        }
        best
    }
}

impl<'p, 'c> Core<'p, 'c> {
    // ----- the core's events -------------------------------------------------------------

    /// The cycle of the core's next event (INF: none until a signal arrives, or done).
    #[inline]
    fn key(&mut self, now: u64) -> u64 {
        if self.hot.dirty != 0 {
            self.refresh();
        }
        let s = match self.pending {
            Pending::None => self.hot.s_time,
            _ => self.s_cand(now),
        };
        // a pipe goes before S in the same cycle
        if s < self.hot.pmin {
            s
        } else {
            self.hot.pmin
        }
    }

    /// Whether the core's next event (after [`Core::key`]) touches what other cores share: a
    /// gm move starting (the L2, HBM), a cross-core set firing or a wait taking a count.
    fn next_is_global(&self, now: u64) -> bool {
        // as [`Core::step`] chooses
        match self.pending {
            Pending::None if self.hot.s_time < self.hot.pmin => return false,
            Pending::None => {}
            Pending::CrossSet { .. } | Pending::CrossWait { .. }
                if self.s_cand(now) < self.hot.pmin =>
            {
                return true
            }
            _ if self.s_cand(now) < self.hot.pmin => return false,
            _ => {}
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
        if let Pending::CrossWait { id, .. } = self.pending {
            if self.xcount[id as usize] == 0 {
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

    /// Processes the core's next event: S runs (ahead until `horizon`, the next event
    /// elsewhere in the launch, at most), S carries out its pending action, or the earliest
    /// pipe starts its head.
    #[inline]
    fn step<O: Observer>(&mut self, horizon: u64, cx: &mut Cx<'_, O>) -> R<()> {
        self.step_one(horizon, cx).map(|_| ())
    }

    /// [`Core::step`], saying whether anything happened (nothing: the core is done or stuck,
    /// its next event is at INF).
    #[inline]
    fn step_one<O: Observer>(&mut self, horizon: u64, cx: &mut Cx<'_, O>) -> R<bool> {
        if self.hot.dirty != 0 {
            self.refresh();
        }
        if matches!(self.pending, Pending::None) {
            if self.hot.s_time < self.hot.pmin {
                self.hot.horizon = horizon;
                return self.run_s(cx).map(|()| true);
            }
        } else {
            let sc = self.s_cand(cx.now);
            if sc < self.hot.pmin {
                self.fire(sc, cx);
                return Ok(true);
            }
        }
        if self.hot.pmin != INF {
            self.start(self.hot.pmin_pipe as usize, self.hot.pmin, cx);
            return Ok(true);
        }
        Ok(false)
    }

    // ----- pipes -------------------------------------------------------------------------

    // ----- scalar unit -------------------------------------------------------------------

    // ----- the end -----------------------------------------------------------------------
}
