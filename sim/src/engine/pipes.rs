//! The pipes: when each pipe's head can start (its candidate cycle, cached per pipe and
//! refreshed only for the pipes marked dirty), and a head starting: its work interval, the
//! stall before it, a gm move's L2 lookup and commitment, and what its kind does (a flag set
//! or taken, a counter fired or taken, a macro chunk staged or computed).

use super::compiled::{GmSide, NO_MEM};
use super::context::Cx;
use super::queue::{chunks_started, Arg, Aux};
use super::state::{pipes_of, Core, INF};
use super::{Activity, Observer};
use crate::ids::OpId;
use crate::types::Pipe;

impl<'p, 'c> Core<'p, 'c> {
    #[inline(always)]
    pub(super) fn refresh(&mut self) {
        let dirty = self.hot.dirty & self.hot.mask;
        self.hot.dirty = 0;
        for p in pipes_of(dirty) {
            self.hot.cand[p] = self.head_start(p);
            let ring = &self.pipes[p].ring;
            let bit = 1u8 << p;
            if ring.len > 0 && matches!(ring.front().arg, Arg::CrossWait { .. }) {
                self.hot.xheads |= bit;
            } else {
                self.hot.xheads &= !bit;
            }
        }
        // S's candidate and those of pipes the core lacks stay INF, so the minimum over the
        // whole fixed array is the minimum over the core's pipes: a branch-free scan with a
        // known trip count instead of a walk of the mask's bits (ties: the lowest pipe)
        let mut best = INF;
        let mut at = 0;
        for (p, &c) in self.hot.cand.iter().enumerate().skip(1) {
            if c < best {
                best = c;
                at = p;
            }
        }
        self.hot.pmin = best;
        self.hot.pmin_pipe = at as u8;
    }

    /// The cycle the head of pipe `p` can start, or INF when the queue is empty or the head
    /// waits for something that has not happened yet.
    #[inline(always)]
    fn head_start(&self, p: usize) -> u64 {
        let ps = &self.pipes[p];
        if ps.ring.len == 0 {
            return INF;
        }
        let e = ps.ring.front();
        let base = e.join.max(ps.free);
        match e.arg {
            Arg::Work { .. } | Arg::GmMove { .. } => base,
            Arg::Stage { macro_no } => {
                // chunk i + 2 goes into the L0 half chunk i used: after M has completed chunk i
                let i = chunks_started(ps.ring.front_aux());
                if i < 2 {
                    base
                } else if self.m_macro == macro_no.get() && self.m_computed > i - 2 {
                    base.max(self.m_done[(i % 2) as usize])
                } else {
                    INF
                }
            }
            Arg::SetFlag { .. }
            | Arg::Barrier
            | Arg::CrossSet { .. }
            | Arg::CrossWait { .. }
            | Arg::WaitFlag { .. } => self.sync_ready(e.arg, base, ps.max_complete),
            Arg::MacroM { macro_no } => {
                // chunk i runs once its copies have completed
                let i = chunks_started(ps.ring.front_aux());
                let m = macro_no.get();
                if m < self.macro_started {
                    let slot = &self.macros[(m % self.macros.len() as u64) as usize];
                    if slot.staged > i {
                        base.max(slot.done[(i % 2) as usize])
                    } else {
                        INF
                    }
                } else {
                    INF
                }
            }
        }
    }

    /// Pipe `p` starts its head instruction at cycle `t`.
    #[inline]
    pub(super) fn start<O: Observer>(&mut self, p: usize, t: u64, cx: &mut Cx<'_, O>) {
        debug_assert!(t >= cx.now);
        let ring = &self.pipes[p].ring;
        let head = *ring.front();
        // the parts of an mmad_l1 start once per chunk; the entry leaves the queue at its last
        let (mut last, mut next, mut work) = (true, 0, head.work);
        let mut gm = None;
        match head.arg {
            Arg::Stage { .. } | Arg::MacroM { .. } => {
                if let Aux::Chunks {
                    last: last_work,
                    chunks,
                    next: started,
                } = ring.front_aux()
                {
                    (last, next) = (started + 1 >= chunks, started);
                    if last {
                        work = last_work;
                    }
                }
            }
            Arg::GmMove { .. } => {
                if let Aux::Gm { mem, rl, wl } = ring.front_aux() {
                    gm = Some((mem, rl, wl));
                }
            }
            _ => {}
        }
        let mut startup = head.startup;
        let mut lookup = None;
        // what the move would take alone on the chip, when an observer asks
        let mut alone = None;
        let watch = gm.is_some() && cx.obs.watches_bandwidth();
        if let (Some((mem, rl, wl)), Some(l2)) = (gm, &mut cx.l2) {
            // a gm move (one chunk): its cost is known once the L2 is looked up and the
            // chip's HBM and L2 rates are shared out at its start
            let spec = &self.c.mems[mem as usize];
            let l = spec.read.as_ref().map(|r| l2.lookup(self.side_runs(r, rl)));
            let written = spec.write.as_ref().map_or(0, |w| {
                self.side_runs(w, wl).iter().map(|&(a, b)| b - a).sum()
            });
            let (w, extra) = l2.move_cost(t, spec.bpc, l.as_ref(), written);
            let a = watch.then(|| l2.move_alone(spec.bpc, l.as_ref(), written));
            if l.is_some() {
                (work, startup) = (w, spec.startup + extra);
                alone = a;
            } else {
                // a write's path work (its read side, the L2 write rate) is the least it takes
                alone = a.map(|a| work.max(a));
                work = work.max(w);
            }
            lookup = l;
        }
        let complete = t.checked_add(startup).and_then(|c| c.checked_add(work));
        if !cx.in_time(t, complete) {
            return;
        }
        cx.now = t;
        if let Some(gm) = gm {
            self.commit_mem(t, gm, lookup, cx);
        }
        if let Some(a) = alone {
            cx.obs.on_bandwidth(head.seq, a);
        }
        self.sweep_overlap(t);
        let events = self.events;
        let ps = &mut self.pipes[p];
        if last {
            ps.ring.drop_front();
        } else if let Aux::Chunks { next, .. } = ps.ring.front_aux_mut() {
            *next += 1;
        }
        let mut e = head;
        (e.work, e.startup) = (work, startup);
        let gap = ps.free;
        if t > gap {
            let j = e.join.clamp(gap, t);
            ps.starved += j - gap;
            let stall = t - j;
            if stall > 0 {
                debug_assert!(
                    !matches!(e.arg, Arg::Work { .. } | Arg::GmMove { .. }),
                    "an unconditional instruction cannot stall"
                );
                let reason = self.stall_of(e.arg, false);
                self.pipes[p].stalls.add(reason, stall, events);
                self.head_stall(cx, p, (j, t), &e, reason);
            }
        }
        self.set_free(p, t + work);
        let ps = &mut self.pipes[p];
        ps.busy += work;
        if last {
            ps.instructions += 1;
        }
        let complete = t + e.startup + work; // checked against the limit above
        ps.max_complete = ps.max_complete.max(complete);
        self.hot.dirty |= 1 << p;
        self.span(
            cx,
            Pipe::ALL[p],
            (t, t + work),
            OpId(e.op),
            Some(e.seq),
            Activity::Work,
        );
        match e.arg {
            Arg::Stage { macro_no } => {
                let cap = self.macros.len() as u64;
                let slot = &mut self.macros[(macro_no.get() % cap) as usize];
                if next == 0 {
                    self.macro_started += 1;
                }
                slot.done[(next % 2) as usize] = complete;
                slot.staged = next + 1;
                self.hot.dirty |= 1 << Pipe::M.index();
            }
            Arg::MacroM { macro_no } => {
                self.m_macro = macro_no.get();
                self.m_computed = next + 1;
                self.m_done[(next % 2) as usize] = complete;
                // the staging pipe may wait for this chunk
                self.hot.dirty |= self.hot.mask;
            }
            Arg::Work { conflict } | Arg::GmMove { conflict } => {
                self.bank_conflict += conflict.get()
            }
            arg => self.sync_go(arg, e.op, t, e.seq, cx),
        }
        if last {
            cx.obs.on_start(e.seq, t, complete);
        }
    }

    /// The runs of a gm side: the spec's static ones, or pool slot `slot`.
    #[inline]
    fn side_runs<'s>(&'s self, side: &'s GmSide, slot: u32) -> &'s [(u64, u64)] {
        match &side.runs {
            Some(v) => v,
            None => &self.pool[slot as usize],
        }
    }

    /// A gm move starts at `t`: it holds its planned share of HBM and the L2's rate, the L2
    /// takes its read (what `lookup` found) and its write, and its pool slots are freed.
    #[inline]
    fn commit_mem<O: Observer>(
        &mut self,
        t: u64,
        (mem, rl, wl): (u32, u32, u32),
        lookup: Option<super::memory::Lookup>,
        cx: &mut Cx<'_, O>,
    ) {
        let c = self.c;
        let spec = &c.mems[mem as usize];
        if let Some(l2) = &mut cx.l2 {
            l2.reserve();
            if let (Some(side), Some(l)) = (&spec.read, lookup) {
                l2.commit_read(t, self.side_runs(side, rl), &l);
            }
            if let Some(side) = &spec.write {
                l2.commit_write(t, self.side_runs(side, wl));
            }
        }
        for slot in [rl, wl] {
            if slot != NO_MEM {
                self.pool[slot as usize].clear();
                self.pool_free.push(slot);
            }
        }
    }
}
