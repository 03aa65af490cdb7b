//! The scalar unit (S): it walks the compiled code ([`SOp`]) at its own time, executes its
//! own ops (loops, `if`, `scalar`, `sload`/`sstore`), and sends the rest to the pipes' queues
//! or holds them pending ([`Pending`]) until it can carry them out: a full queue, its own
//! flag and counter waits, a barrier. It runs ahead only while nothing else can go first.

use super::compiled::{Cost, Kind, SOp, NO_MEM};
use super::context::Cx;
use super::queue::{Arg, Aux, Entry, Wide};
use super::result::Stall;
use super::state::{pipes_of, Core, Fail, Outgoing, Pending, INF, R};
use super::{Activity, Issue, Observer};
use crate::ids::OpId;
use crate::program::ForLoop;
use crate::types::Pipe;

impl<'p, 'c> Core<'p, 'c> {
    /// The cycle S can carry out its pending action (INF: blocked, nothing pending, or done).
    /// Never earlier than `now`: S may have been unblocked by the event just processed.
    #[inline]
    pub(super) fn s_cand(&self, now: u64) -> u64 {
        let c = self.s_cand_raw();
        if c == INF {
            INF
        } else {
            c.max(now)
        }
    }

    #[inline(always)]
    fn s_cand_raw(&self) -> u64 {
        match self.pending {
            Pending::None | Pending::Done => INF,
            Pending::Send(Outgoing { pipe, .. }) => {
                if self.pipes[pipe.index()].ring.len < self.hot.depth {
                    self.hot.s_time
                } else {
                    INF
                }
            }
            Pending::Sync {
                arg: Arg::Barrier, ..
            } => {
                // `barrier: all`: every pipe's queue empty and its work complete
                let mut done = self.hot.s_time;
                for p in pipes_of(self.hot.mask) {
                    let ps = &self.pipes[p];
                    if ps.ring.len > 0 {
                        return INF;
                    }
                    done = done.max(ps.max_complete);
                }
                done
            }
            // S has no work of its own to drain
            Pending::Sync { arg, .. } => self.sync_ready(arg, self.hot.s_time, self.hot.s_time),
        }
    }

    /// S sends `out` at cycle `t` (>= s_time; the wait before it is a `queue_full` stall), or
    /// leaves it pending when that is past the cycle limit (and the run stops).
    #[inline(always)]
    fn send<O: Observer>(&mut self, t: u64, out: Outgoing, cx: &mut Cx<'_, O>) {
        debug_assert!(t >= cx.now);
        if !cx.in_time(t, t.checked_add(self.hot.issue)) {
            self.pending = Pending::Send(out);
            return;
        }
        cx.now = t;
        let stall = t - self.hot.s_time;
        let Outgoing {
            pipe,
            mut entry,
            aux,
            flag_id,
            nslots,
        } = out;
        if stall > 0 {
            // the instruction gets the next sequence number
            self.span(
                cx,
                Pipe::S,
                (self.hot.s_time, t),
                OpId(entry.op),
                Some(cx.seq),
                Activity::Stall(Stall::QueueFull(pipe)),
            );
        }
        self.s_queue_full[pipe.index()] += stall;
        let seq = cx.next_seq();
        entry.join = t + self.hot.issue;
        entry.seq = seq;
        if let Arg::Stage { macro_no } = &mut entry.arg {
            *macro_no = Wide(self.macro_sent);
            self.macro_sent += 1;
        }
        let ring = &mut self.pipes[pipe.index()].ring;
        // only a new head changes when the pipe can start next
        if ring.len == 0 {
            self.hot.dirty |= 1 << pipe.index();
        }
        ring.push(entry, aux);
        // (the guard spares the slots' bounds check when nothing watches)
        if cx.obs.watches_issues() {
            cx.obs.on_issue(&Issue {
                core: self.slot,
                seq,
                op: OpId(entry.op),
                pipe,
                cycle: t,
                vars: &self.vars,
                slots: &self.slots[..nslots as usize],
                flag_id,
            });
        }
        self.span(
            cx,
            Pipe::S,
            (t, t + self.hot.issue),
            OpId(entry.op),
            Some(seq),
            Activity::Issue,
        );
        self.s_busy += self.hot.issue;
        self.hot.s_time = t + self.hot.issue;
    }

    /// S carries out its pending action at cycle `t` (>= s_time); the wait before it is a stall.
    #[inline]
    pub(super) fn fire<O: Observer>(&mut self, t: u64, cx: &mut Cx<'_, O>) {
        if let Pending::Send(out) = self.pending {
            self.pending = Pending::None;
            return self.send(t, out, cx);
        }
        debug_assert!(t >= cx.now);
        if !cx.in_time(t, t.checked_add(self.hot.issue)) {
            return;
        }
        cx.now = t;
        let stall = t - self.hot.s_time;
        let Pending::Sync { op, arg, id } = std::mem::replace(&mut self.pending, Pending::None)
        else {
            unreachable!("fire without a pending action")
        };
        if stall > 0 {
            // the pending action's instruction gets the next sequence number
            let reason = self.stall_of(arg, true);
            self.s_stalls.add(reason, stall, self.events);
            self.span(
                cx,
                Pipe::S,
                (self.hot.s_time, t),
                op,
                Some(cx.seq),
                Activity::Stall(reason),
            );
        }
        self.s_instr += 1;
        self.hot.s_time = t;
        // its effect ([`Core::sync_go`]: a wait's hand-off, a take) is observed before its
        // issue and start, as the instruction is numbered then; a set's observes nothing
        let seq = cx.seq;
        self.sync_go(arg, op.0, t, seq, cx);
        self.observe_s(cx, op, t, t, 0, id);
    }

    /// Observer calls for an op S executes itself: `nslots` slots from the scratch (its
    /// operands, if any) and the evaluated flag id of an S-side flag.
    #[inline(always)]
    fn observe_s<O: Observer>(
        &mut self,
        cx: &mut Cx<'_, O>,
        op: OpId,
        start: u64,
        complete: u64,
        nslots: usize,
        flag_id: Option<u32>,
    ) -> u64 {
        let seq = cx.next_seq();
        if cx.obs.watches_issues() {
            cx.obs.on_issue(&Issue {
                core: self.slot,
                seq,
                op,
                pipe: Pipe::S,
                cycle: start,
                vars: &self.vars,
                slots: &self.slots[..nslots],
                flag_id,
            });
        }
        self.span(
            cx,
            Pipe::S,
            (start, complete),
            op,
            Some(seq),
            Activity::Work,
        );
        cx.obs.on_start(seq, start, complete);
        seq
    }

    /// S executes ops for as long as the event loop would let it without doing anything else:
    /// while nothing is pending, it is strictly earlier than every pipe and no pipe's start
    /// cycle needs refreshing (which only its sends and sets can cause).
    #[inline]
    pub(super) fn run_s<O: Observer>(&mut self, cx: &mut Cx<'_, O>) -> R<()> {
        loop {
            self.arrive(cx)?;
            if self.hot.dirty != 0
                || !matches!(self.pending, Pending::None)
                || self.hot.s_time >= self.hot.pmin
                || self.hot.s_time >= self.hot.horizon
                || cx.stopped.is_some()
            {
                return Ok(());
            }
        }
    }

    /// S reaches the op at `pc` at `s_time`: executes it if it is its own, else makes it pending.
    #[inline]
    fn arrive<O: Observer>(&mut self, cx: &mut Cx<'_, O>) -> R<()> {
        let c = self.c;
        match c.code[self.hot.pc as usize] {
            SOp::LoopEnter { lp } => {
                self.enter_loop(lp as usize)?;
                self.hot.pc += 1;
            }
            SOp::LoopHead { lp, exit } => {
                let l = self.loops[lp as usize];
                if l.i >= l.trips {
                    self.hot.pc = exit;
                } else {
                    let op = self.c.loops[lp as usize].op;
                    if !self.s_control(self.loop_cycles, op, Activity::Loop, cx) {
                        return Ok(());
                    }
                    // from + i × step lies between from and to (i < trips), so it fits in i64;
                    // the product alone may not
                    let v = (l.from as i128 + l.i as i128 * l.step as i128) as i64;
                    let var = self.c.loops[lp as usize].var;
                    self.vars[var.index()] = v;
                    self.hot.pc += 1;
                }
            }
            SOp::LoopBack { lp, head } => {
                let l = &mut self.loops[lp as usize];
                l.i += 1;
                l.completed += 1;
                self.hot.pc = head;
            }
            SOp::If { op, cond, els } => {
                let v = self.eval(op, &cond)?;
                if !self.s_control(self.branch_cycles, op, Activity::Branch, cx) {
                    return Ok(());
                }
                self.hot.pc = if v != 0 { self.hot.pc + 1 } else { els };
            }
            SOp::Jump { to } => self.hot.pc = to,
            SOp::Scalar { op, cycles } => {
                let n = self.eval(op, &cycles)?;
                if n < 0 {
                    return Err(Box::new(Fail {
                        op,
                        message: format!("scalar cycles {n} is negative"),
                    }));
                }
                let (n, at) = (n as u64, self.hot.s_time);
                if !self.s_advance(n, cx) {
                    return Ok(());
                }
                self.observe_s(cx, op, at, at + n, 0, None);
                self.hot.pc += 1;
            }
            SOp::SMem { op, lo, hi, cycles } => {
                let n = self.prepare_operands(op, lo, hi)?;
                let at = self.hot.s_time;
                if !self.s_advance(cycles, cx) {
                    return Ok(());
                }
                self.observe_s(cx, op, at, at + cycles, n, None);
                self.hot.pc += 1;
            }
            SOp::Check { op, lo, hi } => {
                self.prepare_operands(op, lo, hi)?;
                self.hot.pc += 1;
            }
            SOp::SetFlag { op, dst, id } => {
                if !cx.count(self.hot.s_time) {
                    return Ok(());
                }
                let (flag, id) = self.flag_index(op, Pipe::S, dst, &id)?;
                self.reach_local_sync(op, Arg::SetFlag { flag }, Some(id), cx);
            }
            SOp::WaitFlag { op, src, id } => {
                if !cx.count(self.hot.s_time) {
                    return Ok(());
                }
                let (flag, id) = self.flag_index(op, src, Pipe::S, &id)?;
                self.reach_local_sync(op, Arg::WaitFlag { flag }, Some(id), cx);
            }
            SOp::BarrierAll { op } => {
                if !cx.count(self.hot.s_time) {
                    return Ok(());
                }
                self.reach_local_sync(op, Arg::Barrier, None, cx);
            }
            SOp::CrossSet { op, mode, id } => {
                if !cx.count(self.hot.s_time) {
                    return Ok(());
                }
                let id = self.cross_id(op, &id)?;
                self.pending = Pending::Sync {
                    op,
                    arg: Arg::CrossSet { mode, id },
                    id: Some(id),
                };
                self.hot.pc += 1;
            }
            SOp::CrossWait { op, id } => {
                if !cx.count(self.hot.s_time) {
                    return Ok(());
                }
                let id = self.cross_id(op, &id)?;
                self.pending = Pending::Sync {
                    op,
                    arg: Arg::CrossWait { counter: id },
                    id: Some(id),
                };
                self.hot.pc += 1;
            }
            SOp::Send { spec } => {
                if !cx.count(self.hot.s_time) {
                    return Ok(());
                }
                let out = self.prepare_send(spec as usize, cx.obs.watches_slots())?;
                self.hot.pc += 1;
                // what the next turn of the event loop would do: nothing has changed the pipes
                // since their start cycles were refreshed, so S sends now if it still goes first
                let sc = if self.pipes[out.pipe.index()].ring.len < self.hot.depth {
                    self.hot.s_time.max(cx.now)
                } else {
                    INF
                };
                if self.goes_first(sc, cx) {
                    self.send(sc, out, cx);
                } else {
                    self.pending = Pending::Send(out);
                }
            }
            SOp::End => {
                self.pending = Pending::Done;
                self.s_end = self.hot.s_time;
            }
        }
        Ok(())
    }

    /// S reaches a synchronisation that only its own core sees (a `set_flag` from S, a
    /// `wait_flag` to S, `barrier: all`): when it is ready before every pipe's next start and
    /// within S's horizon, it goes at once, as the next turn of the event loop would have it
    /// go, without being an event of its own; else it waits there (pending) until it is the
    /// earliest event. (A cross-core op stays an event: it goes in the launch's order.)
    #[inline(always)]
    fn reach_local_sync<O: Observer>(
        &mut self,
        op: OpId,
        arg: Arg,
        id: Option<u32>,
        cx: &mut Cx<'_, O>,
    ) {
        self.pending = Pending::Sync { op, arg, id };
        self.hot.pc += 1;
        let sc = self.s_cand(cx.now);
        if self.goes_first(sc, cx) {
            self.fire(sc, cx);
        }
    }

    /// Whether S, running ahead, may carry out at `sc` what it has just reached instead of
    /// leaving it to the next turn of the event loop: nothing has changed the pipes since their
    /// starts were refreshed, so it may when it is still before every pipe's next start and
    /// within its horizon, and the run has not stopped.
    #[inline(always)]
    fn goes_first<O: Observer>(&self, sc: u64, cx: &Cx<'_, O>) -> bool {
        sc < self.hot.pmin && sc < self.hot.horizon && cx.stopped.is_none()
    }

    /// S spends `n` cycles on a loop iteration or an `if` of `op` ([`Core::s_advance`]), seen
    /// by the observer as a span of `what`; false when that reaches a limit.
    #[inline(always)]
    fn s_control<O: Observer>(
        &mut self,
        n: u64,
        op: OpId,
        what: Activity,
        cx: &mut Cx<'_, O>,
    ) -> bool {
        let at = self.hot.s_time;
        if !self.s_advance(n, cx) {
            return false;
        }
        if n > 0 {
            self.span(cx, Pipe::S, (at, self.hot.s_time), op, None, what);
        }
        true
    }

    /// S executes one of its own instructions that keeps it busy `n` cycles (a loop
    /// iteration, an `if`, `scalar`, `sload`/`sstore`); false when that reaches a limit (the
    /// instruction does not happen).
    #[inline(always)]
    fn s_advance<O: Observer>(&mut self, n: u64, cx: &mut Cx<'_, O>) -> bool {
        if !cx.count(self.hot.s_time)
            || !cx.in_time(self.hot.s_time, self.hot.s_time.checked_add(n))
        {
            return false;
        }
        self.hot.s_time += n;
        self.s_busy += n;
        self.s_instr += 1;
        true
    }

    fn enter_loop(&mut self, lp: usize) -> R<()> {
        let spec = &self.c.loops[lp];
        let op = spec.op;
        let (from, step, trips) = match spec.bounds {
            super::compiled::Bounds::For { from, to, step } => {
                let f = self.eval(op, &from)?;
                let t = self.eval(op, &to)?;
                let s = self.eval(op, &step)?;
                let Some(q) = ForLoop::trips(f, t, s) else {
                    return Err(Box::new(Fail {
                        op,
                        message: "for step is 0".to_string(),
                    }));
                };
                if q < 0 {
                    return Err(Box::new(Fail {
                        op,
                        message: format!("negative trip count {q} (from {f} to {t} step {s})"),
                    }));
                }
                // |to - from| < 2^64, so a non-negative count fits in u64
                (f, s, q as u64)
            }
            super::compiled::Bounds::While { trips } => {
                let n = self.eval(op, &trips)?;
                if n < 0 {
                    return Err(Box::new(Fail {
                        op,
                        message: format!("negative trip count {n}"),
                    }));
                }
                (0, 1, n as u64)
            }
        };
        let l = &mut self.loops[lp];
        l.trips = trips;
        l.i = 0;
        l.from = from;
        l.step = step;
        Ok(())
    }

    /// [`Core::prepare_send`] of a [`super::compiled::Spec::fast`] spec: its entry is its
    /// fixed cost and, for a set or a wait, the flag its id names.
    #[inline(always)]
    fn prepare_fast(&self, sp: &super::compiled::Spec<'p>) -> R<Outgoing> {
        let Cost::Fixed { work, startup } = sp.cost else {
            unreachable!("a fast spec has a fixed cost")
        };
        let (mut flag_id, mut flag) = (None, 0);
        if let Some((src, dst, ref id)) = sp.flag {
            let v = self.event_id(sp.op, src, dst, id)?;
            // below NP² × MAX_EVENT_IDS, far inside u32
            flag = sp.flag_base as u32 + v;
            flag_id = Some(v);
        }
        let arg = match sp.kind {
            Kind::SetFlag => Arg::SetFlag { flag },
            Kind::WaitFlag => Arg::WaitFlag { flag },
            Kind::Barrier => Arg::Barrier,
            _ => Arg::Work { conflict: Wide(0) },
        };
        Ok(Outgoing {
            pipe: sp.pipe,
            entry: Entry::unsent(sp.op.0, work, startup, arg),
            aux: Aux::None,
            flag_id,
            nslots: 0,
        })
    }

    #[inline(always)]
    fn prepare_send(&mut self, spec: usize, watched: bool) -> R<Outgoing> {
        let c = self.c;
        let sp = &c.specs[spec];
        let op = sp.op;
        // an op without operands (a flag, a barrier) has no slots for an observer to watch
        if sp.fast && (!watched || sp.lo == sp.hi) {
            return self.prepare_fast(sp);
        }
        // the slots only matter to an observer and to a bank cost; choosing them can fail only
        // on an explicit slot or a bounds check
        let nslots = if watched || !sp.plain || sp.costed_by_slots {
            self.prepare_operands(op, sp.lo, sp.hi)? as u32
        } else {
            0
        };
        let (work, startup, chunks, last, conflict) = match sp.cost {
            Cost::Fixed { work, startup } => (work, startup, 1, work, 0),
            ref cost => self.cost(op, cost)?,
        };
        // a flag's or counter's id: only the sync kinds have `flag`
        let mut flag_id = None;
        let mut flag = 0;
        if let Some((src, dst, ref id)) = sp.flag {
            if matches!(sp.kind, Kind::CrossSet | Kind::CrossWait) {
                flag_id = Some(self.cross_id(op, id)?);
            } else {
                let v = self.event_id(op, src, dst, id)?;
                // below NP² × MAX_EVENT_IDS, far inside u32
                flag = sp.flag_base as u32 + v;
                flag_id = Some(v);
            }
        }
        let arg = match sp.kind {
            Kind::Work => Arg::Work {
                conflict: Wide(conflict),
            },
            Kind::GmMove => Arg::GmMove {
                conflict: Wide(conflict),
            },
            Kind::SetFlag => Arg::SetFlag { flag },
            Kind::WaitFlag => Arg::WaitFlag { flag },
            Kind::Barrier => Arg::Barrier,
            Kind::CrossSet => Arg::CrossSet {
                mode: sp.flag_base as u8,
                id: flag_id.unwrap_or(0),
            },
            Kind::CrossWait => Arg::CrossWait {
                counter: flag_id.unwrap_or(0),
            },
            // numbered when sent ([`Core::send`])
            Kind::Stage => Arg::Stage { macro_no: Wide(0) },
            Kind::MacroM => {
                debug_assert!(self.macro_sent > 0);
                Arg::MacroM {
                    macro_no: Wide(self.macro_sent - 1),
                }
            }
        };
        debug_assert_eq!(arg.kind(), sp.kind);
        let (mut rl, mut wl) = (NO_MEM, NO_MEM);
        if sp.mem != NO_MEM {
            let m = &self.c.mems[sp.mem as usize];
            if let Some(side) = &m.read {
                rl = self.dynamic_runs(op, side)?;
            }
            if let Some(side) = &m.write {
                wl = self.dynamic_runs(op, side)?;
            }
        }
        let aux = match sp.kind {
            Kind::Stage | Kind::MacroM => Aux::Chunks {
                last,
                chunks: chunks.min(u32::MAX as u64) as u32,
                next: 0,
            },
            Kind::GmMove => Aux::Gm {
                mem: sp.mem,
                rl,
                wl,
            },
            _ => Aux::None,
        };
        Ok(Outgoing {
            pipe: sp.pipe,
            entry: Entry::unsent(op.0, work, startup, arg),
            aux,
            flag_id,
            nslots,
        })
    }
}
