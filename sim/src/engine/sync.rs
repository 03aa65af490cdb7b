//! Synchronisation: a core's flags (`set_flag`/`wait_flag` between pipes and S: their index,
//! a set, a double set) and cross-core counters (`cross_set`/`cross_wait`: a set firing, a
//! wait taking a count), and the launch's signals between cores ([`Cross`], [`deliver`]).
//! When a waiting head or S can go is decided by the pipes and the scalar unit; what a set
//! or a take changes is here.

use super::code::Val;
use super::context::{Cx, Signal};
use super::queue::Arg;
use super::result::{Stall, SyncFinding, WaitOn, DOUBLE_SETS_KEPT};
use super::state::{Core, Fail, INF, NP, R};
use super::{CrossEvent, Observer, Release};
use crate::config::Config;
use crate::ids::OpId;
use crate::launch::Slot;
use crate::types::Pipe;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The cross-core signals of a launch (docs/timing.md, "Cross-core flags"): those in flight,
/// and the sets that arrived and wait for their partners' (modes 0 and 1, a vector core's
/// mode 2). The counters themselves are the cores'.
pub(super) struct Cross {
    pub(super) ids: usize,
    pub(super) max_pending: u32,
    pub(super) in_flight: BinaryHeap<Reverse<Signal>>,
    /// Arrived sets not yet part of a signal, per (core, mode, id): (seq, op).
    pub(super) arrived: Vec<VecDeque<(u64, u32)>>,
    /// Per (part, id): the part's cores with a mode-0 set arrived.
    pub(super) ready: Vec<u32>,
    /// The cores of each part.
    pub(super) part_cores: Vec<Vec<u32>>,
    /// Per AI core: its cube core and its vector cores in the launch.
    pub(super) cube_of: Vec<Option<u32>>,
    pub(super) vectors_of: Vec<Vec<u32>>,
    /// Whether a core's counter has been reported above `max_pending`.
    pub(super) overflowed: Vec<bool>,
    /// Per (core, id): the setting core and the cross_set op of the last signal that
    /// incremented the counter (named when the counter is left above 0 at the end).
    pub(super) last_set: Vec<(u32, u32)>,
    /// Scratch: the sets of the signal being delivered.
    pub(super) sets: Vec<u64>,
    /// Scratch: the cores whose counters a signal increments, and the cores it groups.
    pub(super) targets: Vec<u32>,
    pub(super) group: Vec<u32>,
    /// Cores whose counters changed since the machine last looked (their next event moves).
    pub(super) woken: Vec<u32>,
}

impl Cross {
    pub(super) fn new(config: &Config, slots: &[Slot], parts: usize) -> Cross {
        let (ids, max_pending) = config
            .cross_core
            .map_or((0, 0), |x| (x.flag_ids as usize, x.max_pending));
        let ai_cores = slots.iter().map(|s| s.ai_core + 1).max().unwrap_or(0) as usize;
        let mut part_cores = vec![Vec::new(); parts];
        let mut cube_of = vec![None; ai_cores];
        let mut vectors_of = vec![Vec::new(); ai_cores];
        for (k, s) in slots.iter().enumerate() {
            part_cores[s.part as usize].push(k as u32);
            if s.vector {
                vectors_of[s.ai_core as usize].push(k as u32);
            } else {
                cube_of[s.ai_core as usize] = Some(k as u32);
            }
        }
        Cross {
            ids,
            max_pending,
            in_flight: BinaryHeap::new(),
            arrived: vec![VecDeque::new(); slots.len() * 3 * ids],
            ready: vec![0; parts * ids],
            part_cores,
            cube_of,
            vectors_of,
            overflowed: vec![false; slots.len() * ids],
            last_set: vec![(0, 0); slots.len() * ids],
            sets: Vec::new(),
            targets: Vec::new(),
            group: Vec::new(),
            woken: Vec::new(),
        }
    }

    pub(super) fn next_at(&self) -> u64 {
        self.in_flight.peek().map_or(INF, |Reverse(s)| s.at)
    }

    pub(super) fn queue(&mut self, core: u32, mode: u8, id: u32) -> &mut VecDeque<(u64, u32)> {
        &mut self.arrived[(core as usize * 3 + mode as usize) * self.ids + id as usize]
    }
}

/// One implementation of synchronisation for S and the pipes: a set, wait, barrier or
/// cross-core op ([`Arg`]) at the head of a unit (S's pending action or a pipe's queue head)
/// is ready ([`Core::sync_ready`]), waits for a reason ([`Core::stall_of`], [`Core::wait_on`]),
/// and takes effect ([`Core::sync_go`]) the same way on either; the units differ only in what
/// "earlier work complete" means (a pipe's completions; for S's `barrier: all`, every
/// pipe's) and in where the waiting is counted ([`super::state::Stalls`]).
impl<'p, 'c> Core<'p, 'c> {
    /// The cycle a synchronisation `arg` can go on a unit free at `base` whose earlier work
    /// has completed by `drained`; INF while it waits for what has not happened.
    #[inline(always)]
    pub(super) fn sync_ready(&self, arg: Arg, base: u64, drained: u64) -> u64 {
        match arg {
            Arg::SetFlag { .. } | Arg::Barrier | Arg::CrossSet { .. } => base.max(drained),
            Arg::CrossWait { counter } => {
                let id = counter as usize;
                if self.xcount[id] > 0 {
                    base.max(self.xvisible[id])
                } else {
                    INF
                }
            }
            Arg::WaitFlag { flag } => {
                let f = &self.flags[flag as usize];
                if f.set {
                    base.max(f.visible)
                } else {
                    INF
                }
            }
            Arg::Work { .. } | Arg::GmMove { .. } | Arg::Stage { .. } | Arg::MacroM { .. } => base,
        }
    }

    /// Why a head `arg` on S (`on_s`) or a pipe waits: S's barrier waits for every pipe
    /// (`barrier_all`), a pipe's for its own work (`drain`), as its sets do.
    #[inline]
    pub(super) fn stall_of(&self, arg: Arg, on_s: bool) -> Stall {
        match arg {
            Arg::WaitFlag { flag } => {
                let f = &self.flags[flag as usize];
                Stall::WaitFlag {
                    src: Pipe::ALL[f.src as usize],
                    id: f.id,
                }
            }
            Arg::CrossWait { counter } => Stall::CrossWait { id: counter },
            Arg::MacroM { .. } => Stall::WaitMacro { src: Pipe::Mte1 },
            Arg::Stage { .. } => Stall::WaitMacro { src: Pipe::M },
            Arg::Barrier if on_s => Stall::BarrierAll,
            _ => Stall::Drain,
        }
    }

    /// What a head `arg` that can never go waits on (a deadlock's waiter); `None` for what
    /// always goes in the end (a set, a barrier on a pipe, work).
    pub(super) fn wait_on(&self, arg: Arg, on_s: bool) -> Option<WaitOn> {
        Some(match arg {
            Arg::WaitFlag { flag } => {
                let (src, dst, id) = self.flag_parts(flag);
                WaitOn::Flag { src, dst, id }
            }
            Arg::CrossWait { counter } => WaitOn::Cross { id: counter },
            Arg::MacroM { .. } => WaitOn::Macro { src: Pipe::Mte1 },
            Arg::Stage { .. } => WaitOn::Macro { src: Pipe::M },
            Arg::Barrier if on_s => WaitOn::BarrierAll,
            _ => return None,
        })
    }

    /// A synchronisation `arg` of op `op`, dynamic instruction `seq`, goes at `t`: a set
    /// sets its flag, a wait takes it (the hand-off is observed), a cross_set fires, a
    /// cross_wait takes one increment. Anything else does nothing here.
    #[inline(always)]
    pub(super) fn sync_go<O: Observer>(
        &mut self,
        arg: Arg,
        op: u32,
        t: u64,
        seq: u64,
        cx: &mut Cx<'_, O>,
    ) {
        match arg {
            Arg::SetFlag { flag } => self.set_flag(flag, op, t, seq),
            Arg::WaitFlag { flag } => {
                let f = &mut self.flags[flag as usize];
                f.set = false;
                cx.obs.on_release(&Release {
                    core: self.slot,
                    set_seq: f.seq,
                    wait_seq: seq,
                    cycle: t,
                });
            }
            Arg::CrossSet { mode, id } => self.cross_set(mode, id, op, t, seq, cx),
            Arg::CrossWait { counter } => self.cross_take(counter, t, seq, cx),
            Arg::Barrier
            | Arg::Work { .. }
            | Arg::GmMove { .. }
            | Arg::Stage { .. }
            | Arg::MacroM { .. } => {}
        }
    }

    #[inline]
    pub(super) fn set_flag(&mut self, idx: u32, op: u32, t: u64, seq: u64) {
        let latency = self.latency;
        let f = &mut self.flags[idx as usize];
        if f.set {
            self.double_set(idx, op, t);
        } else {
            f.set = true;
            f.visible = t + latency;
            f.op = op;
            f.seq = seq;
        }
        self.hot.dirty |= 1 << self.flags[idx as usize].dst;
    }

    /// A `set_flag` at `t` found flag `idx` set: kept as a finding while fewer than
    /// [`DOUBLE_SETS_KEPT`] are, else counted, so a long run's findings stay bounded.
    #[cold]
    pub(super) fn double_set(&mut self, idx: u32, op: u32, t: u64) {
        let kept = self.findings.len() as u64;
        match self.findings.last_mut() {
            Some(SyncFinding::DoubleSetsOmitted { count, .. }) => *count += 1,
            _ if kept >= DOUBLE_SETS_KEPT => self.findings.push(SyncFinding::DoubleSetsOmitted {
                core: self.slot,
                count: 1,
            }),
            _ => {
                let (src, dst, id) = self.flag_parts(idx);
                self.findings.push(SyncFinding::DoubleSet {
                    core: self.slot,
                    src,
                    dst,
                    id,
                    op: OpId(op),
                    cycle: t,
                });
            }
        }
    }

    /// A `cross_set` of counter `id` in `mode` fires at `t`: it takes effect `latency` later.
    #[inline]
    pub(super) fn cross_set<O: Observer>(
        &mut self,
        mode: u8,
        id: u32,
        op: u32,
        t: u64,
        seq: u64,
        cx: &mut Cx<'_, O>,
    ) {
        cx.fired.push(Signal {
            at: t + self.xlatency,
            seq,
            core: self.slot,
            mode,
            id,
            op,
        });
    }

    /// A `cross_wait` on counter `id` starts at `t`: it takes one increment.
    #[inline]
    pub(super) fn cross_take<O: Observer>(
        &mut self,
        id: u32,
        t: u64,
        seq: u64,
        cx: &mut Cx<'_, O>,
    ) {
        self.xcount[id as usize] -= 1;
        cx.obs.on_cross(&CrossEvent::Take {
            core: self.slot,
            id,
            cycle: t,
            wait_seq: seq,
        });
        // another wait on the same counter may be at the head of another pipe
        self.hot.dirty |= self.hot.xheads;
    }

    pub(super) fn flag_parts(&self, idx: u32) -> (Pipe, Pipe, u32) {
        let e = self.events as u32;
        let id = idx % e;
        let pair = (idx / e) as usize;
        (Pipe::ALL[pair / NP], Pipe::ALL[pair % NP], id)
    }

    /// The evaluated id of a `src`→`dst` flag op, checked against `sync.event_ids`.
    #[inline(always)]
    pub(super) fn event_id(&self, op: OpId, src: Pipe, dst: Pipe, id: &Val<'p>) -> R<u32> {
        let v = self.eval(op, id)?;
        if v < 0 || v as u64 >= self.events as u64 {
            return Err(self.bad_flag(op, src, dst, v));
        }
        Ok(v as u32)
    }

    /// A `src`→`dst` flag op's flag index and evaluated id.
    #[inline]
    pub(super) fn flag_index(&self, op: OpId, src: Pipe, dst: Pipe, id: &Val<'p>) -> R<(u32, u32)> {
        let v = self.event_id(op, src, dst, id)?;
        // below NP² × MAX_EVENT_IDS, far inside u32
        let idx = ((src.index() * NP + dst.index()) * self.events) as u32 + v;
        Ok((idx, v))
    }

    /// The evaluated id of a cross-core op, checked against `cross_core.flag_ids`.
    #[inline]
    pub(super) fn cross_id(&self, op: OpId, id: &Val<'p>) -> R<u32> {
        let v = self.eval(op, id)?;
        let ids = self.xcount.len();
        if v < 0 || v as u64 >= ids as u64 {
            return Err(Box::new(Fail {
                op,
                message: format!("cross-core flag id {v} is outside 0..{ids}"),
            }));
        }
        Ok(v as u32)
    }

    #[cold]
    pub(super) fn bad_flag(&self, op: OpId, src: Pipe, dst: Pipe, v: i64) -> Box<Fail> {
        Box::new(Fail {
            op,
            message: format!("flag id {v} of {src}->{dst} is outside 0..{}", self.events),
        })
    }
}

/// Signal `sig` takes effect at `cx.now`: its set arrives, and every counter whose
/// condition it completes increments.
pub(super) fn deliver<O: Observer>(
    cores: &mut [Core<'_, '_>],
    slots: &[Slot],
    cross: &mut Cross,
    cx: &mut Cx<'_, O>,
    sig: Signal,
) {
    let me = slots[sig.core as usize];
    let id = sig.id;
    cx.last_arrival = cx.now;
    cross.sets.clear();
    // scratch lists kept in `cross` (no allocation per signal)
    let mut targets = std::mem::take(&mut cross.targets);
    targets.clear();
    let mut group = std::mem::take(&mut cross.group);
    group.clear();
    match sig.mode {
        0 => {
            let part = me.part as usize;
            let n = cross.part_cores[part].len() as u32;
            let r = part * cross.ids + id as usize;
            if cross.queue(sig.core, 0, id).is_empty() {
                cross.ready[r] += 1;
            }
            cross.queue(sig.core, 0, id).push_back((sig.seq, sig.op));
            if cross.ready[r] == n {
                group.extend_from_slice(&cross.part_cores[part]);
                for &j in &group {
                    let (seq, _) = cross.queue(j, 0, id).pop_front().expect("ready");
                    cross.sets.push(seq);
                    if cross.queue(j, 0, id).is_empty() {
                        cross.ready[r] -= 1;
                    }
                    targets.push(j);
                }
            }
        }
        1 => {
            group.extend_from_slice(&cross.vectors_of[me.ai_core as usize]);
            cross.queue(sig.core, 1, id).push_back((sig.seq, sig.op));
            if group.len() > 1 && group.iter().all(|&j| !cross.queue(j, 1, id).is_empty()) {
                for &j in &group {
                    let (seq, _) = cross.queue(j, 1, id).pop_front().expect("arrived");
                    cross.sets.push(seq);
                }
                targets.extend_from_slice(&group);
            }
        }
        _ if !me.vector => {
            cross.sets.push(sig.seq);
            targets.extend_from_slice(&cross.vectors_of[me.ai_core as usize]);
        }
        _ => {
            group.extend_from_slice(&cross.vectors_of[me.ai_core as usize]);
            cross.queue(sig.core, 2, id).push_back((sig.seq, sig.op));
            if let Some(cube) = cross.cube_of[me.ai_core as usize] {
                if group.iter().all(|&j| !cross.queue(j, 2, id).is_empty()) {
                    for &j in &group {
                        let (seq, _) = cross.queue(j, 2, id).pop_front().expect("arrived");
                        cross.sets.push(seq);
                    }
                    targets.push(cube);
                }
            }
        }
    }
    cross.group = group;
    for &j in &targets {
        let core = &mut cores[j as usize];
        let c = &mut core.xcount[id as usize];
        if *c == 0 {
            core.xvisible[id as usize] = cx.now;
        }
        *c += 1;
        let count = *c;
        if !core.hot.woken {
            cross.woken.push(j);
        }
        core.hot.woken = true;
        // only a pipe whose head is a cross-core wait can start earlier now
        core.hot.dirty |= core.hot.xheads;
        cx.obs.on_cross(&CrossEvent::Signal {
            core: j,
            id,
            cycle: cx.now,
            sets: &cross.sets,
        });
        let o = j as usize * cross.ids + id as usize;
        cross.last_set[o] = (sig.core, sig.op);
        if count > cross.max_pending && !cross.overflowed[o] {
            cross.overflowed[o] = true;
            cx.findings_late.push(SyncFinding::CrossOverflow {
                core: j,
                id,
                count,
                set_core: sig.core,
                op: OpId(sig.op),
                cycle: cx.now,
            });
        }
    }
    cross.targets = targets;
}
