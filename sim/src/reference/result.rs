//! What a run produces: per-pipe cycle accounting, sync findings and, if the kernel hung, the
//! deadlock. Plain data; reports render it.

use crate::ids::{CoreId, OpId};
use crate::types::Pipe;
use std::fmt;

/// The outcome of one run. Cycle counts are exact integers; ratios are derived on demand.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// Cycles from 0 until every core is done: its S has executed the whole program and every
    /// instruction has completed (or, after a deadlock, until the cycle the engine found
    /// nothing could move).
    pub total_cycles: u64,
    /// The first core's pipes (`cores[0].pipes`: the only core of a one-core run), one entry
    /// per pipe of the core, in [`Pipe`] order (S first).
    pub pipes: Vec<PipeStats>,
    /// The first core's cycles in which at least two non-S pipes were busy.
    pub overlap_cycles: u64,
    /// The first core's vector work started above its conflict-free work: the cycles UB bank
    /// conflicts added to V's busy time (docs/timing.md, "UB banks"). `None` when the config has
    /// no `ub_banks` or the core has no vector pipe.
    pub bank_conflict_cycles: Option<u64>,
    /// Every core of the launch, in (block, core type, index) order; one for a one-core run.
    /// Each core's accounting covers the whole run, `0..total_cycles`.
    pub cores: Vec<CoreRun>,
    /// `double set`, `unpaired set_flag` and `cross-core flag overflow` reports, in the order
    /// they were found (core by core for the first two; at most [`DOUBLE_SETS_KEPT`] double
    /// sets of a core, then one [`SyncFinding::DoubleSetsOmitted`] with the rest's count).
    pub findings: Vec<SyncFinding>,
    pub deadlock: Option<Deadlock>,
    /// The run reached a limit and stopped there: what had not started by then never runs.
    pub stopped: Option<Stopped>,
    /// What the gm moves found in L2 and HBM; `None` when the config has no `memory`.
    pub memory: Option<MemoryStats>,
    /// What starting the launch cost, before its cores ran (docs/timing.md, "Launch cost"):
    /// not in `total_cycles` or any core's accounting; 0 when the config has no `launch_cost`.
    pub launch_cycles: u64,
}

/// One core of a launch: which it is and its accounting.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreRun {
    /// `block`: 0..blocks.
    pub block: u32,
    /// Its core type (the part of a mixed kernel it runs).
    pub core: CoreId,
    /// Its index among the block's cores of that type: `subblock` for a mixed kernel's vector
    /// cores, else 0.
    pub index: u32,
    /// The cycle its S finished and its last instruction completed (the deadlock cycle for
    /// a core still waiting then).
    pub end_cycle: u64,
    /// One entry per pipe of the core, in [`Pipe`] order (S first), over `0..total_cycles`.
    pub pipes: Vec<PipeStats>,
    pub overlap_cycles: u64,
    pub bank_conflict_cycles: Option<u64>,
}

/// The L2 at cycle 0 (`--l2 cold|warm`), when the config has a `memory` section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum L2Start {
    /// Empty.
    #[default]
    Cold,
    /// Holding every gm tensor's lines in declaration order, until full.
    Warm,
}

impl L2Start {
    pub fn name(self) -> &'static str {
        match self {
            L2Start::Cold => "cold",
            L2Start::Warm => "warm",
        }
    }
}

/// What a run's gm moves found in L2 and HBM (docs/timing.md, "The gm memory system"). Bytes
/// are the moves' own bytes; lines are counted once per move that touched them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// The L2 at cycle 0.
    pub start: L2Start,
    /// Lines present at cycle 0 (0 when cold).
    pub warm_lines: u64,
    /// Moves that read gm.
    pub reads: u64,
    /// Bytes those moves found in present lines.
    pub hit_bytes: u64,
    /// Bytes they found in missing lines.
    pub miss_bytes: u64,
    /// Present lines they looked up.
    pub hit_lines: u64,
    /// Missing lines they looked up (each then became present).
    pub miss_lines: u64,
    /// Bytes read from HBM: missing lines × line bytes.
    pub hbm_bytes: u64,
    /// Moves that wrote gm.
    pub writes: u64,
    /// Bytes they wrote (into the L2, and through it to HBM).
    pub write_bytes: u64,
    /// Lines that left the L2 to make room.
    pub evicted_lines: u64,
}

impl MemoryStats {
    /// Bytes HBM moved: the missing lines brought in, and every byte written (the L2 writes
    /// through).
    pub fn hbm_traffic(&self) -> u64 {
        self.hbm_bytes + self.write_bytes
    }

    /// Bytes the L2's chip-wide rate carried: the hits, and every byte written.
    pub fn l2_traffic(&self) -> u64 {
        self.hit_bytes + self.write_bytes
    }
}

/// How long a run may go on (`--max-cycles`, `--max-instructions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nothing happens after this cycle: an instruction that would complete later, or an S
    /// step that would end later, is not executed.
    pub max_cycles: u64,
    /// Dynamic instructions: every instruction S sends or executes itself, loop iterations and
    /// `if` evaluations included.
    pub max_instructions: u64,
    /// Not a limit but the other run-time choice: the L2's state at cycle 0 (`--l2`), used when
    /// the config has a `memory` section.
    pub l2: L2Start,
}

impl Limits {
    /// The default of both limits (about 10 minutes of engine time on the instruction side).
    pub const DEFAULT: u64 = 10_000_000_000;
    /// The largest `max_cycles` allowed: every cycle count, plus any one cost, then fits in 64
    /// bits.
    pub const MAX_CYCLES_CEILING: u64 = 1 << 62;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_cycles: Limits::DEFAULT,
            max_instructions: Limits::DEFAULT,
            l2: L2Start::Cold,
        }
    }
}

/// Where a run that reached a limit stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    pub limit: Limit,
    /// The cycle at which the step that would pass the limit was to begin.
    pub cycle: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `--max-cycles N`.
    Cycles(u64),
    /// `--max-instructions N`.
    Instructions(u64),
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::Cycles(n) => write!(
                f,
                "the run stopped at cycle {}: its next step would end after the cycle limit \
                 (--max-cycles {n}); raise the limit to see the rest",
                self.cycle
            ),
            Limit::Instructions(n) => write!(
                f,
                "the run stopped at cycle {} after {n} dynamic instructions (--max-instructions \
                 {n}); raise the limit to see the rest",
                self.cycle
            ),
        }
    }
}

/// Where every cycle of one pipe went: busy + Σ stalls + starved + idle = total cycles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipeStats {
    pub pipe: Pipe,
    /// Instructions this pipe started. For S: the work it executed itself (scalar ops, S-side
    /// flags, `barrier: all`, loop iterations, `if` evaluations); what it sends is counted on
    /// the pipe that runs it.
    pub instructions: u64,
    pub busy: u64,
    /// Non-zero stall cycles by reason, sorted by reason.
    pub stalls: Vec<(Stall, u64)>,
    /// Queue empty, more work will come.
    pub starved: u64,
    /// No more work will come.
    pub idle: u64,
}

/// Why a pipe (or the scalar unit) could not make progress in a cycle.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Stall {
    /// The head `wait_flag` waits for a flag from `src` with this id.
    WaitFlag { src: Pipe, id: u32 },
    /// The M part of an `mmad_l1` waits for its MTE1 staging to complete.
    WaitMacro { src: Pipe },
    /// A `set_flag` or `barrier` waits for earlier instructions of its pipe to complete.
    Drain,
    /// S: the queue of this pipe holds `queue_depth` instructions that have not started.
    QueueFull(Pipe),
    /// S: `barrier: all` waits for every pipe to finish.
    BarrierAll,
    /// The head `cross_wait` waits for its core's cross-core counter `id` to be above 0.
    CrossWait { id: u32 },
}

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stall::WaitFlag { src, id } => write!(f, "wait_flag {src}#{id}"),
            Stall::CrossWait { id } => write!(f, "cross_wait #{id}"),
            Stall::WaitMacro { src } => write!(f, "wait_flag {src}#mmad_l1"),
            Stall::Drain => f.write_str("drain"),
            Stall::QueueFull(p) => write!(f, "queue_full {p}"),
            Stall::BarrierAll => f.write_str("barrier_all"),
        }
    }
}

/// How many [`SyncFinding::DoubleSet`]s a run keeps of each core: a double set can happen once
/// per iteration, and a run's memory must not grow with its length (the engine streams); the
/// rest are counted in one [`SyncFinding::DoubleSetsOmitted`]. Far above what a kernel whose
/// flags went out of step shows in practice (the race fixture `vec_add_db_no_dequeue_z`: 128,
/// one a tile), so every double set of such a run is still listed.
pub const DOUBLE_SETS_KEPT: u64 = 1000;

/// A synchronisation mistake that does not stop the run (msSanitizer's synccheck).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncFinding {
    /// A `set_flag` on a flag that was already set and not yet consumed; the second set is
    /// lost (flags are binary).
    DoubleSet {
        /// The core ([`RunResult::cores`] index).
        core: u32,
        src: Pipe,
        dst: Pipe,
        id: u32,
        op: OpId,
        cycle: u64,
    },
    /// The double sets of core `core` after its first [`DOUBLE_SETS_KEPT`]: `count` more,
    /// not stored. It follows the core's last kept double set.
    DoubleSetsOmitted { core: u32, count: u64 },
    /// A flag still set when the kernel ended; `op` is the set_flag that set it.
    UnpairedSet {
        core: u32,
        src: Pipe,
        dst: Pipe,
        id: u32,
        op: OpId,
    },
    /// A cross-core counter went above `cross_core.max_pending` (`count`): the hardware's
    /// counter would overflow. `op` is the `cross_set` of core `set_core` that completed the
    /// signal; reported once per core and id.
    CrossOverflow {
        core: u32,
        id: u32,
        count: u32,
        set_core: u32,
        op: OpId,
        cycle: u64,
    },
    /// A cross-core counter still above 0 (`count`) when the kernel ended: sets that no
    /// `cross_wait` took. `op` is the `cross_set` of core `set_core` that completed the last
    /// signal incrementing it; reported once per core and id.
    UnpairedCrossSet {
        core: u32,
        id: u32,
        count: u32,
        set_core: u32,
        op: OpId,
    },
}

impl SyncFinding {
    /// The core the finding is about ([`RunResult::cores`] index): for a cross-core finding,
    /// the core whose counter it is.
    pub fn core(&self) -> u32 {
        match self {
            SyncFinding::DoubleSet { core, .. }
            | SyncFinding::DoubleSetsOmitted { core, .. }
            | SyncFinding::UnpairedSet { core, .. }
            | SyncFinding::CrossOverflow { core, .. }
            | SyncFinding::UnpairedCrossSet { core, .. } => *core,
        }
    }

    /// The core whose program holds the finding's op: the core it is about, but for a
    /// cross-core finding the core that made the set (in a mixed kernel, a core of the other
    /// part, whose program numbers its ops differently).
    pub fn op_core(&self) -> u32 {
        match self {
            SyncFinding::CrossOverflow { set_core, .. }
            | SyncFinding::UnpairedCrossSet { set_core, .. } => *set_core,
            _ => self.core(),
        }
    }
}

/// Nothing could move while something still waited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    pub cycle: u64,
    /// Every waiting pipe, core by core, in [`Pipe`] order.
    pub waiters: Vec<Waiter>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The core ([`RunResult::cores`] index).
    pub core: u32,
    pub pipe: Pipe,
    /// The op at the head of the pipe's queue (for S: the op it is executing).
    pub op: OpId,
    pub on: WaitOn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOn {
    Flag {
        src: Pipe,
        dst: Pipe,
        id: u32,
    },
    QueueFull(Pipe),
    BarrierAll,
    Macro {
        src: Pipe,
    },
    /// A `cross_wait` on the core's counter `id`.
    Cross {
        id: u32,
    },
}

impl fmt::Display for WaitOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitOn::Flag { src, dst, id } => write!(f, "flag {src}->{dst}#{id}"),
            WaitOn::QueueFull(p) => write!(f, "full queue of {p}"),
            WaitOn::BarrierAll => f.write_str("barrier: all"),
            WaitOn::Macro { src } => write!(f, "mmad_l1 staging on {src}"),
            WaitOn::Cross { id } => write!(f, "cross-core flag #{id}"),
        }
    }
}

impl PipeStats {
    pub fn stalled(&self) -> u64 {
        self.stalls.iter().map(|(_, c)| c).sum()
    }

    /// busy + stalls + starved + idle; equals the run's total cycles.
    pub fn accounted(&self) -> u64 {
        self.busy + self.stalled() + self.starved + self.idle
    }

    pub fn utilisation(&self, total_cycles: u64) -> f64 {
        ratio(self.busy, total_cycles)
    }
}

impl RunResult {
    pub fn pipe(&self, pipe: Pipe) -> Option<&PipeStats> {
        self.pipes.iter().find(|p| p.pipe == pipe)
    }

    /// Cycles with at least two non-S pipes busy, over total cycles.
    pub fn overlap(&self) -> f64 {
        ratio(self.overlap_cycles, self.total_cycles)
    }

    /// The non-S pipe with the most busy cycles, and that count (ties: the first in pipe order).
    pub fn pipe_bound(&self) -> Option<(Pipe, u64)> {
        self.pipes.iter().filter(|p| p.pipe != Pipe::S).fold(
            None,
            |best: Option<(Pipe, u64)>, p| match best {
                Some((_, b)) if b >= p.busy => best,
                _ => Some((p.pipe, p.busy)),
            },
        )
    }

    /// Pipe bound over total cycles: 1.0 means the busiest pipe never waited.
    pub fn efficiency(&self) -> f64 {
        ratio(self.pipe_bound().map_or(0, |(_, b)| b), self.total_cycles)
    }

    pub fn instructions(&self) -> u64 {
        self.pipes.iter().map(|p| p.instructions).sum()
    }

    /// The accounting identity: every cycle of every pipe is in exactly one state.
    pub fn check_accounting(&self) -> Result<(), String> {
        let cores = self.cores.iter().map(|c| (c.block, c.index, &c.pipes[..]));
        for (block, index, pipes) in std::iter::once((0, 0, &self.pipes[..])).chain(cores) {
            for p in pipes {
                if p.accounted() == self.total_cycles {
                    continue;
                }
                return Err(format!(
                    "block {block} core {index} pipe {}: busy {} + stalls {} + starved {} + idle {} = {} != total {}",
                    p.pipe,
                    p.busy,
                    p.stalled(),
                    p.starved,
                    p.idle,
                    p.accounted(),
                    self.total_cycles
                ));
            }
        }
        Ok(())
    }

    /// Whether the run found something a user must fix, or stopped at a limit (exit code 1).
    pub fn has_findings(&self) -> bool {
        self.deadlock.is_some() || !self.findings.is_empty() || self.stopped.is_some()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A failure while executing: an expression that cannot be evaluated for some iteration, an
/// index out of bounds, a negative trip count, a flag id out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message} (cycle {cycle}{iteration})")]
pub struct RunError {
    pub op: OpId,
    pub path: String,
    pub message: String,
    pub cycle: u64,
    /// Loop variables at the failure, formatted `, t=3, k=1`; empty outside loops.
    pub iteration: String,
}
