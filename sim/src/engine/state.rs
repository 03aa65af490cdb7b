//! A core's state: everything one core owns (its scalar unit's place and time, its pipes and
//! queues, its flags and counters, its loops, its accounting), how it is built for a launch
//! slot and what it costs in bytes. Nothing here is shared with another core; the rooms that
//! act on it (scalar, sync, pipes, costs, accounting, scheduler) each add methods to [`Core`].

use super::banks::{self, Scratch};
use super::code::Val;
use super::compiled::Compiled;
use super::queue::{Arg, Aux, Entry, MacroSlot, Ring};
use super::result::Stall;
use super::result::{RunError, SyncFinding};
use crate::config::{Config, UbBanks};
use crate::expr::{EvalError, Expr};
use crate::ids::OpId;
use crate::launch::Slot;
use crate::program::{ForLoop, OpKind, Program};
use crate::types::Pipe;
use std::cell::RefCell;
use std::collections::VecDeque;

/// No event (a cycle nothing reaches).
pub(super) const INF: u64 = u64::MAX;
pub(super) const NP: usize = Pipe::COUNT;

/// Bytes the engine allocates for each core of a launch ([`Core::new`], its share of
/// [`super::sync::Cross::new`], its [`super::CoreRun`] and [`Slot`]), from the config keys
/// that size them: a ring of `queue_depth` entries per pipe, a flag per (pipe, pipe,
/// `sync.event_ids`), stall counters per flag and per `cross_core.flag_ids`, the staging slots
/// of `mmad_l1`. What grows with the program (its loops, variables, operands) is left out: the
/// loader bounds that on its own, once per part, not per core.
pub(crate) fn core_bytes(config: &Config) -> u64 {
    use std::mem::size_of;
    let np = NP as u64;
    let depth = u64::from(config.queue_depth).max(1);
    let events = u64::from(config.sync.event_ids);
    let xids = config.cross_core.map_or(0, |x| u64::from(x.flag_ids));
    let bytes = |n: usize| n as u64;
    let pipes = np
        * (bytes(size_of::<PipeState>())
            + depth * bytes(size_of::<Entry>() + size_of::<Aux>())
            + (np * events + xids) * 8);
    let flags = np * np * events * bytes(size_of::<Flag>()) + np * events * 8;
    let cross = xids * (3 * 8 + 3 * bytes(size_of::<VecDeque<(u64, u32)>>()) + 1);
    let macros = (depth + 2) * bytes(size_of::<MacroSlot>());
    bytes(size_of::<Core<'static, 'static>>() + size_of::<super::CoreRun>() + size_of::<Slot>())
        + pipes
        + flags
        + cross
        + macros
}

/// One non-S pipe: its queue, timing state and accounting.
pub(super) struct PipeState {
    pub(super) ring: Ring,
    /// End of the last work interval; everything before it is accounted.
    pub(super) free: u64,
    /// Latest completion of any started instruction.
    pub(super) max_complete: u64,
    pub(super) busy: u64,
    pub(super) starved: u64,
    pub(super) instructions: u64,
    /// The cycles its heads waited, by reason.
    pub(super) stalls: Stalls,
}

/// The cycles a unit (S or a pipe) waited at the head of its work, by reason: what a
/// synchronisation (or an `mmad_l1` part) waiting costs, counted the same way for S and the
/// pipes ([`Stalls::add`]) and listed the same way at the end ([`Stalls::list`]).
pub(super) struct Stalls {
    /// `wait_flag` stalls, indexed `src * event_ids + id`.
    pub(super) wait_flag: Vec<u64>,
    /// `cross_wait` stalls, indexed by id.
    pub(super) cross_wait: Vec<u64>,
    /// Waiting for earlier work to complete: a pipe's set, barrier or cross_set (`drain`), or
    /// S's `barrier: all` (S has no work of its own to drain, so its set never waits).
    pub(super) drain: u64,
    /// An mmad_l1's M part waiting for a chunk's staging (on M).
    pub(super) macro_wait: u64,
    /// An mmad_l1's MTE1 part waiting for M to finish with an L0 half (on the staging pipe).
    pub(super) stage_wait: u64,
}

impl Stalls {
    pub(super) fn new(events: usize, xids: usize) -> Stalls {
        Stalls {
            wait_flag: vec![0; NP * events],
            cross_wait: vec![0; xids],
            drain: 0,
            macro_wait: 0,
            stage_wait: 0,
        }
    }

    /// `cycles` more waited for `reason` (one [`super::sync`] gives for a waiting head).
    #[inline]
    pub(super) fn add(&mut self, reason: Stall, cycles: u64, events: usize) {
        match reason {
            Stall::WaitFlag { src, id } => {
                self.wait_flag[src.index() * events + id as usize] += cycles
            }
            Stall::CrossWait { id } => self.cross_wait[id as usize] += cycles,
            Stall::Drain | Stall::BarrierAll => self.drain += cycles,
            Stall::WaitMacro { src: Pipe::Mte1 } => self.macro_wait += cycles,
            Stall::WaitMacro { .. } => self.stage_wait += cycles,
            Stall::QueueFull(_) => unreachable!("a queue is full only for S, counted apart"),
        }
    }

    /// The non-zero counts, as (reason, cycles); `on_s`: S's (its `drain` is `barrier_all`).
    pub(super) fn list(&self, events: usize, on_s: bool) -> Vec<(Stall, u64)> {
        let mut out = Vec::new();
        let mut push = |s: Stall, c: u64| {
            if c > 0 {
                out.push((s, c))
            }
        };
        for (i, &c) in self.wait_flag.iter().enumerate() {
            let (src, id) = (Pipe::ALL[i / events], (i % events) as u32);
            push(Stall::WaitFlag { src, id }, c);
        }
        for (id, &c) in self.cross_wait.iter().enumerate() {
            push(Stall::CrossWait { id: id as u32 }, c);
        }
        let drain = if on_s {
            Stall::BarrierAll
        } else {
            Stall::Drain
        };
        push(drain, self.drain);
        push(Stall::WaitMacro { src: Pipe::Mte1 }, self.macro_wait);
        push(Stall::WaitMacro { src: Pipe::M }, self.stage_wait);
        out
    }
}

#[derive(Clone, Copy, Default)]
pub(super) struct Flag {
    pub(super) set: bool,
    pub(super) visible: u64,
    pub(super) op: u32,
    /// The dynamic instruction that set it (for [`super::Observer::on_release`]).
    pub(super) seq: u64,
    /// Its source and destination pipe and id (`flag_parts` of its index, kept here so the
    /// hot path divides nothing).
    pub(super) src: u8,
    pub(super) dst: u8,
    pub(super) id: u32,
}

#[derive(Clone, Copy, Default)]
pub(super) struct LoopRt {
    pub(super) trips: u64,
    pub(super) i: u64,
    pub(super) from: i64,
    pub(super) step: i64,
    /// Iterations completed over the whole run (multi-buffer slot counter).
    pub(super) completed: u64,
}

/// An instruction S is about to send: its queue entry (join and seq still open), the
/// evaluated flag id of a set/wait, and how many operand slots the scratch holds for it.
#[derive(Clone, Copy)]
pub(super) struct Outgoing {
    pub(super) pipe: Pipe,
    pub(super) entry: Entry,
    pub(super) aux: Aux,
    pub(super) flag_id: Option<u32>,
    pub(super) nslots: u32,
}

/// What the scalar unit is waiting to do.
#[derive(Clone, Copy)]
pub(super) enum Pending {
    /// Nothing: S executes the op at `pc` when it is the earliest event.
    None,
    Send(Outgoing),
    /// A synchronisation S carries out itself ([`super::sync`]): a `set_flag` from S, a
    /// `wait_flag` to S, `barrier: all` ([`Arg::Barrier`]), a `cross_set` or `cross_wait`;
    /// `id` is its evaluated id, for the observer (none for a barrier).
    Sync {
        op: OpId,
        arg: Arg,
        id: Option<u32>,
    },
    /// S has executed the whole program.
    Done,
}

/// A run-time error before the cycle and loop variables are attached.
pub(super) struct Fail {
    pub(super) op: OpId,
    pub(super) message: String,
}

/// Boxed: errors are rare, and a small `Err` keeps every `R<T>` the hot path returns small.
pub(super) type R<T> = Result<T, Box<Fail>>;

/// A core's hot scheduling state: what choosing and taking its next event reads at every
/// event ([`Core::key`], [`Core::step`], the pipes' refresh, S running ahead and sending).
/// Every event of a run passes through it, so its size is a checked fact (a test): two cache
/// lines, aligned, the first holding the pipes' candidate starts and their minimum (what the
/// refresh scans), the second S's place and time, the core's clocks, the two numbers every
/// send reads and the core's bits. Scattered among the core's cold state (its tables, its
/// configuration, its accounting), these fields cost a line each. `pending` is read as often
/// but holds a whole queue entry; it stays in [`Core`], beside. (The core's size is also part
/// of [`core_bytes`], which bounds a launch's state: with this struct a core is 1,024 bytes.)
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(super) struct Hot {
    /// Cached start cycle of each pipe's head (INF: empty or blocked; S's own is unused), side
    /// by side so that finding the earliest reads one cache line, not one per pipe.
    pub(super) cand: [u64; NP],
    /// The earliest of `cand` (kept with `pmin_pipe`, its pipe, by the refresh).
    pub(super) pmin: u64,
    /// The cycle S reaches the op at `pc` (or carries out its pending action).
    pub(super) s_time: u64,
    /// S runs ahead of the rest of the launch only up to this cycle (exclusive).
    pub(super) horizon: u64,
    /// The cycle of the core's latest event: its own clock when cores run ahead
    /// ([`super::scheduler::Machine::run`], relaxed).
    pub(super) now: u64,
    /// `scalar.issue_cycles` and `queue_depth`, read by every send.
    pub(super) issue: u64,
    pub(super) depth: usize,
    /// The index in the compiled code of the op S reaches next (the code's jumps are `u32`).
    pub(super) pc: u32,
    pub(super) pmin_pipe: u8,
    /// The pipes whose `cand` must be recomputed before the next choice.
    pub(super) dirty: u8,
    /// The pipes whose head was a cross-core wait when their `cand` was computed: the ones a
    /// counter's change can affect.
    pub(super) xheads: u8,
    /// Non-S pipes of the core.
    pub(super) mask: u8,
    /// Set when a signal changed its counters (the machine recomputes its next event).
    pub(super) woken: bool,
    /// Whether the next event [`Core::key`] found is S's (else the earliest pipe's start):
    /// what [`Core::step_keyed`] takes without choosing again.
    pub(super) next_s: bool,
}

/// Everything one core owns: its scalar unit, its pipes and queues, its flags, its loop
/// counters and its accounting. Nothing here is shared with another core.
pub(super) struct Core<'p, 'c> {
    /// What choosing and taking the next event reads (its own cache lines).
    pub(super) hot: Hot,
    pub(super) program: &'p Program,
    pub(super) c: &'c Compiled<'p>,
    /// Its index in the launch (`RunResult::cores`).
    pub(super) slot: u32,
    /// Whether the launch has other cores (run-time errors then name the block).
    pub(super) many: bool,
    /// Cross-core counters per id, the cycle each last went from 0 to 1, and the signal
    /// latency.
    pub(super) xcount: Vec<u32>,
    pub(super) xvisible: Vec<u64>,
    pub(super) xlatency: u64,
    pub(super) loop_cycles: u64,
    pub(super) branch_cycles: u64,
    pub(super) latency: u64,
    pub(super) events: usize,
    pub(super) vars: Vec<i64>,
    pub(super) loops: Vec<LoopRt>,
    /// Indexed by [`Pipe::index`]; a fixed length, so an index below [`NP`] needs no check.
    pub(super) pipes: Box<[PipeState; NP]>,
    pub(super) flags: Vec<Flag>,
    /// Staging state per macro number, modulo its length.
    pub(super) macros: Vec<MacroSlot>,
    /// Macros whose MTE1 part has started its first chunk.
    pub(super) macro_started: u64,
    pub(super) macro_sent: u64,
    /// The macro whose M part M works on (INF: none yet), its chunks started and the
    /// completion of the last two (chunk i's at `m_done[i % 2]`).
    pub(super) m_macro: u64,
    pub(super) m_computed: u32,
    pub(super) m_done: [u64; 2],
    // scalar unit
    pub(super) pending: Pending,
    pub(super) s_busy: u64,
    pub(super) s_instr: u64,
    pub(super) s_queue_full: [u64; NP],
    /// What S's own synchronisations waited.
    pub(super) s_stalls: Stalls,
    pub(super) s_end: u64,
    pub(super) slots: Vec<u32>,
    pub(super) overlap: u64,
    pub(super) overlap_from: u64,
    /// The latest `free` of the core's pipes and the latest of the others' (a pipe's `free`
    /// only grows): what [`Core::sweep_overlap`] needs, kept as they change
    /// ([`Core::set_free`]) rather than found by reading every pipe at every start.
    pub(super) free_top: [u64; 2],
    pub(super) free_top_pipe: u8,
    /// The double sets while the core runs, at most [`super::result::DOUBLE_SETS_KEPT`] and
    /// then one [`SyncFinding::DoubleSetsOmitted`] counting the rest (so its length is the
    /// count kept); the unpaired sets join at the end.
    pub(super) findings: Vec<SyncFinding>,
    /// Byte runs of dynamic gm operands of sent moves, until they start; `pool_free` are
    /// the unused slots (reused, so the hot path does not allocate once warm).
    pub(super) pool: Vec<Vec<(u64, u64)>>,
    pub(super) pool_free: Vec<u32>,
    /// `ub_banks`, and the bank conflict cycles of the vector work started so far.
    pub(super) ub_banks: Option<UbBanks>,
    pub(super) bank_conflict: u64,
    /// Scratch for the bank cost of vector ops whose operands are known only at issue.
    pub(super) scratch: RefCell<Scratch>,
    /// The [`banks::Memo`] of each such op.
    pub(super) memos: RefCell<Vec<banks::Memo>>,
}

impl<'p, 'c> Core<'p, 'c> {
    pub(super) fn new(
        program: &'p Program,
        config: &Config,
        c: &'c Compiled<'p>,
        index: u32,
        slot: &Slot,
        many: bool,
    ) -> Self {
        let events = config.sync.event_ids as usize;
        let xids = config.cross_core.map_or(0, |x| x.flag_ids as usize);
        let mut vars = vec![0; program.vars.len()];
        if let Some(v) = program.launch.block {
            vars[v.index()] = i64::from(slot.block);
        }
        if let Some(v) = program.launch.subblock {
            vars[v.index()] = i64::from(slot.subblock);
        }
        let depth = config.queue_depth as usize;
        let pipes = Box::new(std::array::from_fn(|_| PipeState {
            ring: Ring::new(depth),
            free: 0,
            max_complete: 0,
            busy: 0,
            starved: 0,
            instructions: 0,
            stalls: Stalls::new(events, xids),
        }));
        Core {
            hot: Hot {
                cand: [INF; NP],
                pmin: INF,
                s_time: 0,
                horizon: INF,
                now: 0,
                issue: config.scalar.issue_cycles as u64,
                depth,
                pc: 0,
                pmin_pipe: 0,
                dirty: 0,
                xheads: 0,
                mask: c.pipe_mask & !(1 << Pipe::S.index()),
                woken: false,
                next_s: false,
            },
            program,
            c,
            slot: index,
            many,
            xcount: vec![0; xids],
            xvisible: vec![0; xids],
            xlatency: config.cross_core.map_or(0, |x| u64::from(x.latency)),
            loop_cycles: config.scalar.loop_cycles as u64,
            branch_cycles: config.scalar.branch_cycles as u64,
            latency: config.sync.flag_latency as u64,
            events,
            vars,
            loops: vec![LoopRt::default(); c.loops.len()],
            pipes,
            flags: (0..NP * NP * events)
                .map(|idx| Flag {
                    src: (idx / events / NP) as u8,
                    dst: (idx / events % NP) as u8,
                    id: (idx % events) as u32,
                    ..Flag::default()
                })
                .collect(),
            macros: vec![MacroSlot::default(); depth + 2],
            macro_started: 0,
            macro_sent: 0,
            m_macro: INF,
            m_computed: 0,
            m_done: [0; 2],
            pending: Pending::None,
            s_busy: 0,
            s_instr: 0,
            s_queue_full: [0; NP],
            s_stalls: Stalls::new(events, xids),
            s_end: 0,
            slots: vec![0; c.max_operands],
            overlap: 0,
            overlap_from: 0,
            free_top: [0; 2],
            free_top_pipe: 0,
            findings: Vec::new(),
            pool: Vec::new(),
            pool_free: Vec::new(),
            // a core without a vector unit has no UB banks to conflict in: no claim either way
            ub_banks: config
                .vector
                .ub_banks
                .filter(|_| config.core(program.core).pipes.contains(&Pipe::V)),
            bank_conflict: 0,
            scratch: RefCell::new(Scratch::default()),
            memos: RefCell::new(vec![banks::Memo::default(); c.memos as usize]),
        }
    }

    #[inline(always)]
    pub(super) fn eval(&self, op: OpId, v: &Val<'p>) -> R<i64> {
        v.eval(&self.vars)
            .map_err(|(e, expr)| self.eval_fail(op, e, expr))
    }

    #[cold]
    pub(super) fn eval_fail(&self, op: OpId, e: EvalError, expr: &Expr) -> Box<Fail> {
        let program = self.program;
        let name = |v| program.var_name(v);
        Box::new(Fail {
            op,
            message: format!("cannot evaluate \"{}\": {e}", expr.display(&name)),
        })
    }

    #[cold]
    pub(super) fn error(&self, f: Fail) -> RunError {
        let program = self.program;
        let mut loops = Vec::new();
        let mut at = program.op(f.op).parent;
        while let Some(p) = at {
            let op = program.op(p);
            if let OpKind::For(ForLoop { var, .. }) | OpKind::While { var, .. } = op.kind {
                loops.push(var);
            }
            at = op.parent;
        }
        let mut iteration = String::new();
        if self.many {
            // which core: its launch variables
            for var in [program.launch.subblock, program.launch.block]
                .into_iter()
                .flatten()
            {
                loops.push(var);
            }
        }
        for var in loops.iter().rev() {
            let name = program.var_name(*var);
            if !name.is_empty() {
                iteration += &format!(", {name}={}", self.vars[var.index()]);
            }
        }
        RunError {
            op: f.op,
            path: program.op(f.op).path.clone(),
            message: f.message,
            cycle: self.hot.s_time,
            iteration,
        }
    }
}

/// The pipe indices set in `mask` (a core's pipe mask or dirty bits), lowest first.
#[inline]
pub(super) fn pipes_of(mask: u8) -> Bits {
    Bits(mask)
}

/// The set bits of a pipe mask, lowest first ([`pipes_of`]); each below 8.
pub(super) struct Bits(u8);

impl Iterator for Bits {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let p = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// Every event reads [`Hot`]: the pipes' candidates and their minimum fill exactly the
    /// first cache line (what the refresh and the choice of the next event scan), S's time and
    /// the rest the second. A pipe more, a candidate widened, or the second line outgrowing
    /// its 64 bytes shows here first.
    #[test]
    fn hot_state_is_two_aligned_cache_lines() {
        assert_eq!(align_of::<Hot>(), 64);
        assert_eq!(size_of::<Hot>(), 128);
        assert_eq!(
            offset_of!(Hot, pmin),
            56,
            "the candidates and their minimum: line 0"
        );
        assert_eq!(offset_of!(Hot, s_time), 64, "S's time opens line 1");
        // the core places it on a line of its own
        assert_eq!(align_of::<Core<'static, 'static>>() % 64, 0);
    }
}
