//! The cycle engine (docs/timing.md): a discrete-event simulation of one core.
//!
//! # Model
//!
//! The scalar unit S walks the program in order from cycle 0. The other pipes of the core
//! (`config.core(&program.core).pipes`) run in-order queues that S fills.
//!
//! **Scalar unit.** S spends `loop_cycles` at the start of every loop iteration (before the body;
//! zero iterations cost nothing), `branch_cycles` before the chosen branch of an `if` (the
//! condition is evaluated per execution), `cycles` for `scalar`, `issue_cycles` for each
//! `sload`/`sstore`; `use` costs nothing. Loop bounds are evaluated once when the loop is
//! entered: a `for` runs ceil((to - from) / step) times (`step` 0 or a negative count is a run-time
//! error), a `while` runs `trips` times (negative: error). Sending an instruction to pipe P at
//! cycle t keeps S busy for [t, t + issue_cycles); it joins P's queue at t + issue_cycles. When P
//! already holds `queue_depth` sent-but-not-started instructions (in transit included), S waits
//! (stall `queue_full P`) until one starts. `barrier: all` is executed by S: it waits (stall
//! `barrier_all`) until every queue is empty and every instruction has completed. A `wait_flag`
//! whose destination is S blocks S (stall `wait_flag`); a `set_flag` whose source is S is executed
//! by S at once (nothing to drain, no cycles) and becomes visible `flag_latency` later like any
//! set. `mmad_l1` is sent as two instructions (2 × issue_cycles), an MTE1 part then an M part,
//! both split into the same chunks of k (`compiled::chunking`: the fewest chunks of whole
//! fractals, as equal as fractals allow, the last taking the rest, whose share of a fits half of
//! L0A and of b half of L0B). MTE1 copies chunk i (work = the move cost of its a bytes on L1→L0A
//! plus that of its b bytes on L1→L0B, startup = the larger of the two startups) into half
//! i mod 2 and starts chunk i + 2 only after M has completed chunk i (stall
//! `wait_flag M#mmad_l1`); M runs chunk i (costed like `mmad` with the chunk's k) after its
//! copies have completed (stall `wait_flag MTE1#mmad_l1`). A part holds its pipe's head from its
//! first chunk to its last and completes with its last chunk; each chunk's work is a `Work`
//! span, and the part's [`Observer::on_start`] comes at its last chunk. The halves are the
//! macro's own: no other sync.
//!
//! **Pipes.** A pipe starts its head instruction at the first cycle at which the instruction has
//! joined the queue, every earlier instruction of the pipe has started and finished its work,
//! and its condition holds; the pipe is busy for `work` cycles from the start and the instruction
//! completes at start + startup + work (pipes are pipelined: the next instruction may start while
//! an earlier one is still completing). `set_flag`, `wait_flag` and `barrier` have no work and no
//! startup: they start and complete in the cycle their condition holds, so several can start in
//! one cycle and the next instruction may start in that same cycle.
//! - `set_flag(src→dst, id)` waits until every earlier src instruction has completed (stall
//!   `drain`); the flag is visible to dst `flag_latency` cycles later. Flags are binary per
//!   (src, dst, id): a set while the flag is set (pending or visible, not yet consumed) is a
//!   [`SyncFinding::DoubleSet`] and does not count twice (the first set's visibility stands).
//! - `wait_flag(src→dst, id)` at the head of dst waits (stall `wait_flag src#id`) until the flag
//!   is visible, then clears it.
//! - `barrier: P` waits until every earlier P instruction has completed (stall `drain`).
//!
//! **Costs.** A move on path P reading S bytes and writing D bytes: work = ceil(D / write
//! rate), or max(ceil(S / read_bytes_per_cycle), that) when P has a read rate (the write rate is
//! P's nz_bytes_per_cycle for a `layout: nz` load when given, else bytes_per_cycle; S and D
//! differ only for a quantising fixpipe), startup = P.startup; the path
//! is `config.path(src.space, dst.space)`. A vector op: repeats = ceil(max bytes over `ins` and
//! `outs` / repeat_bytes) (`tmp` does not count), work = repeats × cycles_per_repeat, startup and
//! cycles_per_repeat from `config.vector_cost(name)`. mmad: work = ceil(m/fractal_m) ×
//! ceil(n/fractal_n) × ceil(k / (fractal_k_bytes / dtype bytes of a)) (dtype bytes at least 1, the
//! quotient at least 1), startup = cube.startup. Operand bytes are static when every slice extent
//! is constant, else computed from the slice bounds at issue.
//!
//! **Vector blocks and UB banks** (optional config keys). With `vector.block_bytes` K, an
//! operand's blocks = Σ over its maximal contiguous runs ([`crate::footprint::runs_at`]) of
//! ceil(run bytes / K), and repeats = ceil(most blocks over `ins` and `outs` / (repeat_bytes /
//! K)). With `ub_banks` too, the block at UB address a (slot in use, from [`run_placed`]'s
//! addresses, else `at:`, else 0) is in group (a / row_bytes) mod groups and bank group +
//! groups × (a / (groups × bank_bytes)); repeat i reads blocks i·b .. i·b+b−1 of each input and
//! writes those of the outputs, costing max(cycles_per_repeat, most input blocks in one group,
//! most output blocks in one group) + 1 if a bank is both read and written; work = Σ repeats.
//! [`CoreRun::bank_conflict_cycles`] sums the work started above repeats × cycles_per_repeat.
//! **GM memory system** (only with `config.memory`; module `memory`). gm tensors are laid out
//! in declaration order, each from a line; an operand's lines come from its maximal contiguous
//! runs ([`crate::footprint::gm_runs_at`]). The L2 holds whole lines, LRU by the cycle of last
//! touch (ties: lower address leaves first), empty at cycle 0 or, with [`L2Start::Warm`],
//! holding the tensors' lines in declaration order until full. HBM (`hbm_bytes_per_cycle`) and
//! the L2 (`l2_chip_bytes_per_cycle`) are the chip's, shared by every core (kept in the run's
//! global state, not a core's) cycle by cycle: a move that starts takes in each cycle the least
//! of its own rate and what the moves started before it leave. A move that reads gm looks its
//! lines up when it starts at t (H hit bytes, m missing lines of M bytes), touches the present
//! ones and brings the missing ones in; startup = path startup + (hbm_read_latency if a line
//! missed, else l2_latency); its work is H from the L2 at up to min(P, l2_read), then m ×
//! line_bytes from HBM at up to P × m × line_bytes / M, each in whole cycles. A move that writes
//! gm allocates its lines at its start and writes its B bytes into the L2 and through to HBM at
//! up to min(P, l2_write) of both; startup = path startup + l2_latency, work = the larger of
//! that and the path's own work. With `scalar.gm_latency`, an `sload`/`sstore` of a gm operand
//! keeps S busy that long instead of issue_cycles. A launch's `launch_cost` is added apart
//! ([`RunResult::launch_cycles`]), not simulated.
//!
//! **Ordering within a cycle.** Events are processed in cycle order; within one cycle the pipes
//! go first, in [`Pipe`] order (V, M, MTE1, MTE2, MTE3, FIX), then S. So a pipe starts what it
//! can before S sends in the same cycle, and a `wait_flag` that becomes startable in the same
//! cycle as a second `set_flag` of the same flag consumes it first only if its pipe comes first.
//! With `flag_latency` 0 a flag set in a cycle can be consumed in that cycle.
//!
//! **Multi-buffer slots.** An operand written `x@k` uses slot k (outside 0..multi is a run-time
//! error). Otherwise a multi-buffer operand uses slot = (iterations completed so far by the op's
//! innermost enclosing loop, counted over the whole run, never reset) mod N; outside loops slot 0.
//! N is the multi of the operand's root buffer (for a `select`, the largest one), or the slot
//! count the caller gives for the buffer ([`run_placed`]). Timing does not depend on
//! slots (except through their addresses with `ub_banks`); the observer reports them.
//!
//! **Accounting.** Every cycle of every pipe of the core, from 0 to the end, is in exactly one
//! state. For a non-S pipe, when it starts an instruction at t, the gap since the end of its
//! previous work is `starved` until the instruction joined the queue, then stalled for the
//! instruction's reason (`wait_flag src#id`, `drain`, `wait_flag MTE1#mmad_l1`); the work is
//! `busy`; the trailing gap after its last work is `idle`. S is `busy` (its own cycles, issue
//! cycles, loop and branch cycles), `queue_full P`, `barrier_all` or `wait_flag`, and `idle` after
//! it has executed the whole program. `instructions` counts, for a non-S pipe, the instructions it
//! started (flags and barriers included); for S, the ops it executed itself: `scalar`, `sload`,
//! `sstore`, S-side `set_flag`/`wait_flag`, `barrier: all`, loop iterations and `if`
//! evaluations. `overlap_cycles` counts cycles with at least two non-S pipes busy. The identity
//! busy + stalls + starved + idle = total is [`RunResult::check_accounting`]; the pipeline
//! library checks it after every run (a violation is an engine bug, reported as such), and the
//! engine's tests check it on every run they make.
//!
//! **End.** The kernel ends when S has executed the whole program and every instruction has
//! completed; total = the latest of S's end and every completion. Flags still set then are
//! reported as [`SyncFinding::UnpairedSet`], one per flag, naming the set_flag that set it.
//!
//! **Deadlock.** When nothing can ever move again and something still waits (a `wait_flag` whose
//! flag is never set, S blocked on a full queue behind it, an M part behind a blocked MTE1 part,
//! a program ending with an unmatched wait), the run stops with [`RunResult::deadlock`] naming
//! every waiting pipe (S first), what it waits on and the op. Its cycle (and the run's total) is
//! the last cycle at which anything happened: the latest of S's stop, every completion and every
//! queue join. Waiting pipes are stalled from their head's join to that cycle; the others idle.
//!
//! **Run-time errors** ([`RunError`], with the op's YAML path, the cycle at which S reached the
//! op and the enclosing loop variables): an expression that fails to evaluate, an index, slice or
//! window offset out of bounds, a slot outside 0..multi, a negative trip count, a `for` step of
//! 0, a flag id outside 0..event_ids, negative scalar cycles or mmad sizes, mmad sizes larger
//! than the operands (a at least m × k elements, b k × n, c m × n, bias n).
//!
//! # Implementation
//!
//! The program is compiled once (`compile.rs`) into a flat S bytecode with dense `u32` ids (loops
//! and ifs as jumps, costs precomputed when static). The machine keeps a fixed-capacity ring
//! queue per pipe (`queue.rs`) and each pipe's head start cycle (cached, recomputed only when
//! something it depends on changed: `pipes.rs`), runs S (`scalar.rs`) while it is strictly
//! earlier than every pipe, and otherwise starts the earliest head; `scheduler.rs` chooses among
//! the cores of a launch. A core's state is `state.rs`, the run's `context.rs`; flags, counters
//! and cross-core signals are `sync.rs`, an instruction's cost `costs.rs`, the end-of-run
//! statistics `accounting.rs` (ARCHITECTURE.md has the map). Accounting is by intervals, never
//! per cycle; memory does not grow with the number of dynamic instructions (the trace is
//! streamed to the [`Observer`], never stored).

mod accounting;
mod bandwidth;
mod banks;
mod code;
mod compile;
mod compile_costs;
mod compile_opnds;
mod compiled;
mod context;
mod costs;
mod gm_runs;
#[cfg(test)]
mod import_cycles;
mod l2_order;
mod ledger;
mod memory;
mod pipes;
mod queue;
mod result;
mod scalar;
mod scheduler;
mod seg_index;
mod state;
mod sync;
#[cfg(test)]
mod tests;
mod work;

pub use compile_opnds::operands;
pub use ledger::Ledger;
pub use result::*;
pub use work::{cube_shape, work_of, Resource, Work};

use crate::addresses::Addresses;
use crate::config::Config;
use crate::ids::OpId;
use crate::program::Program;
use crate::types::Pipe;

/// One dynamic instruction, as S issues it.
#[derive(Clone, Copy, Debug)]
pub struct Issue<'a> {
    /// Dense, increasing sequence number of the dynamic instruction over the whole launch;
    /// [`Observer::on_start`] refers to it.
    pub seq: u64,
    /// The core of the launch that issues it: an index into [`RunResult::cores`] (0 in a
    /// one-core run).
    pub core: u32,
    pub op: OpId,
    /// The pipe that executes it (S for ops S executes itself; MTE1 then M for the two parts
    /// of an `mmad_l1`, which share the op).
    pub pipe: Pipe,
    /// The cycle S sends it (or executes it).
    pub cycle: u64,
    /// Loop-variable values, indexed by [`crate::VarId`].
    pub vars: &'a [i64],
    /// The multi-buffer slot of each operand, in the order of [`operands`] (empty for flags,
    /// barriers and `scalar`).
    pub slots: &'a [u32],
    /// The evaluated id of a `set_flag` / `wait_flag` / `cross_set` / `cross_wait`.
    pub flag_id: Option<u32>,
}

/// Watches a run. Every hook has an empty default body, so an observer implements only what
/// it needs and an unused hook costs nothing (calls are monomorphised).
///
/// Calls come in nondecreasing cycle order of the events they describe. `on_issue` is called
/// for every dynamic op instance S sends or executes itself (`scalar`, `sload`, `sstore`,
/// S-side flags, `barrier: all` included; control ops and `use` excluded); `on_start` follows
/// once the instruction starts, with its start and completion cycles (for S's own ops, right
/// after `on_issue`). The parts of an `mmad_l1` run in chunks: each chunk's work is its own
/// span, and `on_start` comes once, when the last chunk starts (start = that chunk's start,
/// complete = the part's completion).
pub trait Observer {
    #[inline(always)]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let _ = issue;
    }

    /// Whether `on_issue` does anything. When it does not, the engine skips choosing operand
    /// slots that only an [`Issue`] would report (true unless overridden; `()` says false).
    #[inline(always)]
    fn watches_issues(&self) -> bool {
        true
    }

    /// Whether `on_issue` reads [`Issue::slots`]: an observer that watches issues but not the
    /// slots of their operands (gm coverage: gm tensors have none) spares the engine choosing
    /// them ([`Observer::watches_issues`] unless overridden).
    #[inline(always)]
    fn watches_slots(&self) -> bool {
        self.watches_issues()
    }

    /// Whether the observer needs the calls of a launch's cores in one global cycle order
    /// (true unless overridden; `()` says false). When nothing watching does, the engine lets
    /// each core run ahead through events that touch nothing shared, which gives the same
    /// result with far less scheduling (docs/timing.md, "One clock").
    #[inline(always)]
    fn ordered(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        let _ = (seq, start, complete);
    }

    /// Whether `on_bandwidth` does anything. When it does not, the engine skips working out
    /// what a gm move would take alone (false unless overridden).
    #[inline(always)]
    fn watches_bandwidth(&self) -> bool {
        false
    }

    /// Under a `memory` config, the gm move `seq` (about to start) would take `alone` cycles
    /// of work alone on the chip, every phase at its path's rate with the whole of HBM and the
    /// L2's rate; its work span is longer by what it waits for its share of them while other
    /// moves hold them (docs/timing.md, "The memory system"). Called only when
    /// [`Observer::watches_bandwidth`].
    #[inline(always)]
    fn on_bandwidth(&mut self, seq: u64, alone: u64) {
        let _ = (seq, alone);
    }

    /// A span of one pipe's time as the engine accounts it: the spans of a pipe never overlap,
    /// and its `Work`/`Issue`/`Loop`/`Branch` spans add up to its `busy`, its `Stall` spans to
    /// its stalls, reason by reason ([`crate::RunResult`]). Starved and idle time get none.
    #[inline(always)]
    fn on_span(&mut self, span: &Span) {
        let _ = span;
    }

    /// A `wait_flag` consumed the flag a `set_flag` set (both by sequence number).
    #[inline(always)]
    fn on_release(&mut self, release: &Release) {
        let _ = release;
    }

    /// A cross-core counter changed: incremented by the `cross_set`s that completed a signal,
    /// or decremented by a `cross_wait` (docs/timing.md, "Cross-core flags").
    #[inline(always)]
    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        let _ = event;
    }
}

/// A change of a cross-core counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrossEvent<'a> {
    /// Counter `id` of `core` went up by one at `cycle`, because of the `cross_set`s `sets`
    /// (their sequence numbers: one for a cube core's mode-2 set, every setter's for modes 0
    /// and 1 and for the vector cores' mode-2 sets). Increments are consumed in order.
    Signal {
        core: u32,
        id: u32,
        cycle: u64,
        sets: &'a [u64],
    },
    /// The `cross_wait` `wait_seq` of `core` consumed the oldest increment of counter `id`
    /// at `cycle` (its start).
    Take {
        core: u32,
        id: u32,
        cycle: u64,
        wait_seq: u64,
    },
}

/// What a pipe spent a [`Span`] on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// The instruction's own work: `[start, start + work)` on its pipe (zero-length for flags
    /// and barriers, which have no work).
    Work,
    /// S sending the instruction to its pipe (`issue_cycles`).
    Issue,
    /// S starting an iteration of the loop `op` (`loop_cycles`).
    Loop,
    /// S evaluating the `if` `op` (`branch_cycles`).
    Branch,
    /// The pipe waited with `op` at its head (S: with `op` as its next action).
    Stall(Stall),
}

/// `[from, to)` of `pipe`, spent on `what` for `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The core of the launch (an index into [`RunResult::cores`]).
    pub core: u32,
    pub pipe: Pipe,
    pub from: u64,
    pub to: u64,
    pub op: OpId,
    /// The dynamic instruction ([`Issue::seq`]); `None` for loop iterations and `if`s, which
    /// have none.
    pub seq: Option<u64>,
    pub what: Activity,
}

/// A flag handed from a `set_flag` to the `wait_flag` that consumed it, at `cycle` (the wait's
/// start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    /// The core of both (flags never cross cores).
    pub core: u32,
    pub set_seq: u64,
    pub wait_seq: u64,
    pub cycle: u64,
}

/// The observer that watches nothing.
impl Observer for () {
    #[inline(always)]
    fn watches_issues(&self) -> bool {
        false
    }

    #[inline(always)]
    fn ordered(&self) -> bool {
        false
    }
}

/// Two observers watching one run: both see every call, the first one first. Nest pairs for
/// more (`(race, (trace, profile))`); still monomorphised, and `()` parts cost nothing.
impl<A: Observer, B: Observer> Observer for (A, B) {
    #[inline(always)]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        self.0.on_issue(issue);
        self.1.on_issue(issue);
    }

    #[inline(always)]
    fn watches_issues(&self) -> bool {
        self.0.watches_issues() || self.1.watches_issues()
    }

    #[inline(always)]
    fn watches_slots(&self) -> bool {
        self.0.watches_slots() || self.1.watches_slots()
    }

    #[inline(always)]
    fn ordered(&self) -> bool {
        self.0.ordered() || self.1.ordered()
    }

    #[inline(always)]
    fn watches_bandwidth(&self) -> bool {
        self.0.watches_bandwidth() || self.1.watches_bandwidth()
    }

    #[inline(always)]
    fn on_bandwidth(&mut self, seq: u64, alone: u64) {
        self.0.on_bandwidth(seq, alone);
        self.1.on_bandwidth(seq, alone);
    }

    #[inline(always)]
    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        self.0.on_start(seq, start, complete);
        self.1.on_start(seq, start, complete);
    }

    #[inline(always)]
    fn on_span(&mut self, span: &Span) {
        self.0.on_span(span);
        self.1.on_span(span);
    }

    #[inline(always)]
    fn on_release(&mut self, release: &Release) {
        self.0.on_release(release);
        self.1.on_release(release);
    }

    #[inline(always)]
    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        self.0.on_cross(event);
        self.1.on_cross(event);
    }
}

/// An observer the caller may or may not want (`--trace`, `--profile`): watches when `Some`.
impl<O: Observer> Observer for Option<O> {
    #[inline(always)]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        if let Some(o) = self {
            o.on_issue(issue);
        }
    }

    #[inline(always)]
    fn watches_issues(&self) -> bool {
        self.as_ref().is_some_and(|o| o.watches_issues())
    }

    #[inline(always)]
    fn watches_slots(&self) -> bool {
        self.as_ref().is_some_and(|o| o.watches_slots())
    }

    #[inline(always)]
    fn ordered(&self) -> bool {
        self.as_ref().is_some_and(|o| o.ordered())
    }

    #[inline(always)]
    fn watches_bandwidth(&self) -> bool {
        self.as_ref().is_some_and(|o| o.watches_bandwidth())
    }

    #[inline(always)]
    fn on_bandwidth(&mut self, seq: u64, alone: u64) {
        if let Some(o) = self {
            o.on_bandwidth(seq, alone);
        }
    }

    #[inline(always)]
    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        if let Some(o) = self {
            o.on_start(seq, start, complete);
        }
    }

    #[inline(always)]
    fn on_span(&mut self, span: &Span) {
        if let Some(o) = self {
            o.on_span(span);
        }
    }

    #[inline(always)]
    fn on_release(&mut self, release: &Release) {
        if let Some(o) = self {
            o.on_release(release);
        }
    }

    #[inline(always)]
    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        if let Some(o) = self {
            o.on_cross(event);
        }
    }
}

/// An observer lent to a run, so the caller keeps it (and its findings) afterwards.
impl<O: Observer + ?Sized> Observer for &mut O {
    #[inline(always)]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        (**self).on_issue(issue);
    }

    #[inline(always)]
    fn watches_issues(&self) -> bool {
        (**self).watches_issues()
    }

    #[inline(always)]
    fn watches_slots(&self) -> bool {
        (**self).watches_slots()
    }

    #[inline(always)]
    fn ordered(&self) -> bool {
        (**self).ordered()
    }

    #[inline(always)]
    fn watches_bandwidth(&self) -> bool {
        (**self).watches_bandwidth()
    }

    #[inline(always)]
    fn on_bandwidth(&mut self, seq: u64, alone: u64) {
        (**self).on_bandwidth(seq, alone);
    }

    #[inline(always)]
    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        (**self).on_start(seq, start, complete);
    }

    #[inline(always)]
    fn on_span(&mut self, span: &Span) {
        (**self).on_span(span);
    }

    #[inline(always)]
    fn on_release(&mut self, release: &Release) {
        (**self).on_release(release);
    }

    #[inline(always)]
    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        (**self).on_cross(event);
    }
}

/// The bytes of engine state a launch of `cores` cores on `config` allocates before its
/// first cycle, race checker included: what [`crate::limits::MAX_LAUNCH_STATE_BYTES`] bounds.
/// Per core it grows with `queue_depth`, `sync.event_ids` and `cross_core.flag_ids`; the
/// cores are `launch.blocks`, times 1 + `chip.aiv_per_aic` for a mixed kernel.
pub fn launch_state_bytes(config: &Config, cores: u64) -> u64 {
    cores.saturating_mul(state::core_bytes(config).saturating_add(crate::race::core_bytes(config)))
}

/// Runs `program` on the core it names. The program must have been loaded against `config`.
pub fn run(program: &Program, config: &Config) -> Result<RunResult, RunError> {
    run_observed(program, config, &mut ())
}

/// Runs `program`, reporting every issue and start to `observer`.
pub fn run_observed<O: Observer>(
    program: &Program,
    config: &Config,
    observer: &mut O,
) -> Result<RunResult, RunError> {
    run_placed(
        program,
        config,
        &Addresses::default(),
        Limits::default(),
        observer,
    )
}

/// Runs `program` with its buffers at `addresses` (a plan's, [`Addresses`]), reporting every
/// issue and start to `observer`. A buffer's slot count there, when non-zero, replaces its
/// `multi` as the modulus of the automatic slot choice, so an operand without `@k` uses slot =
/// (iterations completed) mod that count (a planner may give a single buffer two addresses).
/// An explicit `@k` is still bounded by the declared `multi`. Without `ub_banks`, timing never
/// depends on slots; only [`Issue::slots`] changes.
///
/// The run stops at `limits` ([`RunResult::stopped`]): nothing happens after cycle
/// `max_cycles`, and no more than `max_instructions` dynamic instructions execute.
pub fn run_placed<O: Observer>(
    program: &Program,
    config: &Config,
    addresses: &Addresses,
    limits: Limits,
    observer: &mut O,
) -> Result<RunResult, RunError> {
    run_launch(&[(program, addresses)], config, limits, observer)
}

/// Runs a launch: every core of `parts` (one program, or a mixed kernel's `aic` and `aiv`
/// parts, each with its addresses), `launch.blocks` blocks of them
/// ([`crate::launch::slots`]), in one event loop. Parts must have been loaded together
/// (the same gm tensors and blocks).
pub fn run_launch<O: Observer>(
    parts: &[(&Program, &Addresses)],
    config: &Config,
    limits: Limits,
    observer: &mut O,
) -> Result<RunResult, RunError> {
    let mut compiled = Vec::with_capacity(parts.len());
    for &(program, addresses) in parts {
        compiled.push(compile::compile(program, config, addresses).map_err(|e| {
            let op = e.op.unwrap_or(OpId(0));
            RunError {
                op,
                path: e.op.map(|o| program.op(o).path.clone()).unwrap_or_default(),
                message: e.message,
                cycle: 0,
                iteration: String::new(),
            }
        })?);
    }
    let programs: Vec<&Program> = parts.iter().map(|p| p.0).collect();
    let slots = crate::launch::slots(&programs, config);
    let cores = u32::try_from(slots.len()).unwrap_or(u32::MAX);
    let with: Vec<(&Program, &compiled::Compiled)> =
        programs.iter().copied().zip(compiled.iter()).collect();
    // without an observer that needs one global order, cores run ahead through their local
    // events; a run that stops early (a limit, a run-time error) is run again in the global
    // order, so which instruction it stops at is the same either way
    let relaxed = slots.len() > 1 && !observer.ordered();
    let result =
        scheduler::Machine::new(&with, slots.clone(), config, limits, observer, relaxed).run();
    let result = match result {
        Ok(r) if !relaxed || r.stopped.is_none() => Ok(r),
        _ if relaxed => {
            scheduler::Machine::new(&with, slots, config, limits, observer, false).run()
        }
        other => other,
    };
    // the launch's start, paid once before every core runs (so added, not simulated), by the
    // cores it starts: a mixed block starts three
    result.map(|mut r| {
        r.launch_cycles = config.launch_cost.map_or(0, |l| l.cycles(cores));
        r
    })
}
