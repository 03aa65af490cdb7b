//! The race checker (docs/race.md): finds every pair of accesses to overlapping
//! bytes of one memory, at least one a write, that the program's synchronisation does not
//! order, and reports each in the style of the CANN sanitizer's racecheck:
//!
//! ```text
//! RAW hazard in UB [0x0000, 0x8000): V write (body[0].for.body[2] vadd, t=3) / MTE3 read (body[0].for.body[3] store, t=3)
//! ```
//!
//! # Model
//!
//! **Accesses.** Every operand of every issued op, in [`crate::engine::operands`] order, read
//! or written per [`crate::program::OpKind::reads`] / `writes` (a vector op's `tmp` is written;
//! an `mmad`'s `c` is read only when `init` evaluates to 0 at that iteration). An `mmad_l1`'s
//! `a` and `b` are read by its MTE1 part, `c` by its M part; its own L0A/L0B staging is not an
//! access. An access covers exactly the bytes of its selection's contiguous runs of elements,
//! each `[offset + first element × bits / 8, offset + (last element + 1) × bits / 8)` of its
//! memory (`i1` runs rounded out to whole bytes), where the memory is the buffer's scope
//! (offset: the placed address of the slot the engine chose) or, for gm, the tensor (offset 0:
//! gm conflicts are per tensor); so `y[:, 0:64]` and `y[:, 64:128]` do not conflict. Index
//! lists and window offsets are evaluated with the loop variables of the issue.
//! **Conservative** (said at the end of the hazard, [`Hazard::conservative`]): an access
//! counted as its bounding range (an `i1` selection whose rows start on different bits of a
//! byte, one of more than [`crate::footprint::STRIDED_DIMS`] dimensions, or two strided
//! accesses whose lattices do not line up and whose runs the walk could not settle within its
//! budget), and an operand through a `select` view, which counts as an access to every buffer of
//! the select; both may report hazards that cannot occur. A buffer with no address (an empty
//! offset list, or a slot past its list) is not checked. A memory nothing writes is never
//! checked.
//!
//! **Happens-before.** Access A happens before access B when A's instruction is known to have
//! completed when B's instruction starts, through:
//! - program order on S: everything S did (its own `sload`/`sstore`, which complete before S
//!   moves on) or learned (an S-side `wait_flag`, `barrier: all`) before sending an instruction;
//! - `barrier: P`: every earlier P instruction completes before any later P instruction starts;
//! - `set_flag` on P: it too waits for every earlier P instruction, so it orders them before
//!   later P instructions and, through the `wait_flag` that consumes that set, before every
//!   later instruction of the destination pipe (with everything the set knew);
//! - `barrier: all` on S: everything issued before it completes before anything after it;
//! - an `mmad_l1`'s M part starts after its MTE1 part completes.
//!
//! - across the cores of a launch, only cross-core flags: a `cross_set` on P waits for every
//!   earlier P instruction of its core, so it orders them (and what P knew) before the counter
//!   increments its signal makes (`CrossEvent::Signal`: for modes 0 and 1, every set the signal
//!   gathered), and an increment before the `cross_wait` that takes it (`CrossEvent::Take`,
//!   oldest first), which orders it before every later instruction of the wait's pipe (or of S).
//!   Launch start orders nothing (no access precedes it) and launch end nothing after it.
//!
//! Pipe order alone orders nothing: a pipe is pipelined, so two instructions on one pipe with
//! no barrier or set_flag between them are concurrent. A pair within one instruction (an
//! in-place vector op) is never a hazard.
//!
//! **Cores.** Each core of a launch has its own on-chip memories, so only gm accesses of two
//! cores can conflict (per tensor, as above). A hazard's sides name their cores
//! ([`HazardAccess::core`], an index into [`RunResult::cores`]; `core_name` in a launch of more
//! than one core).
//!
//! **Hazards.** Of two unordered conflicting accesses of one core, the one issued first
//! (program order) is "first"; of two cores, which have no common program order, the lower
//! core's: write then read is RAW, read then write WAR, write then write WAW. Each ordered pair
//! of ops (and parts) of a kernel part is reported once, at the first dynamic occurrence found,
//! with both ops' loop variables, the memory and the first bytes both touch: once within a core
//! and once across cores (not once per pair of cores). Hazards come in the order found, which
//! is the engine's deterministic order. Each carries the synchronisation that would order it
//! ([`Fix`], `fix.rs`), placed where the sync pass would place it.
//!
//! # Implementation and invariants
//!
//! Vector clocks (`clock.rs`): component (c, p) counts a prefix of core c's pipe p's
//! instructions (in issue order, which is p's start order) known complete; a core's clock
//! keeps its own pipes inline and the other cores' as a shared vector that exists only once a
//! cross-core signal brought news of them, so a one-core run costs what it did. Knowledge about a pipe is always a prefix
//! because every instruction that publishes it (barrier, set_flag, barrier all) waits for all
//! earlier instructions of its pipe; the one non-prefix fact (an M part knows its own MTE1 part)
//! rides on the MTE1 part's accesses as a second epoch: they are known complete once the M part
//! is. An instruction's clock is its pipe's accumulated knowledge joined with what S knew when
//! it sent it; knowledge accumulates along a pipe because a pipe starts its instructions in
//! order. A `set_flag` stores its clock in its flag, the matching `wait_flag` joins it. A
//! `cross_set` publishes its clock (flat, over every core) until its signal is delivered; each
//! counter keeps the join of its signals' sets per outstanding increment, in order (past 64
//! outstanding, the newest entry stands for the rest and knows only what all of them know:
//! conservative); a `cross_wait` joins the one it takes.
//!
//! Accesses are checked and recorded when their instruction starts ([`Observer::on_start`]),
//! which the engine calls in nondecreasing cycle order: if A happens before B, A's start was
//! reported before B's, and a `set_flag`'s start before its `wait_flag`'s (checked). Every
//! unordered pair is therefore seen when its later-starting access is checked against the
//! records of its memory (`table.rs`: byte ranges sorted by start; a strided access's range is
//! its hull, and its runs, a lattice of `region.rs`, decide whether a record whose range
//! overlaps it shares a byte).
//!
//! Memory is bounded by what is live: a memory's records are pruned (amortised, when the table
//! doubles) of every access that all pipes able to access that memory are known to have passed
//! (a lower bound on the clock of every instruction not yet started); a new access of the same
//! op, pipe and direction covering an old one at the same start replaces it when everything
//! issued before it has started (it then reports every hazard the old one would, in the same
//! program order). With several cores, a gm record every pipe of its own core has passed
//! matters only to the other cores, so of those with the same core, op, pipe, direction and
//! bytes only the newest is kept (whoever does not know an older one does not know it either).
//! Nothing grows with the number of dynamic instructions; across cores that never learn of
//! each other's accesses, gm records are bounded by the distinct byte ranges each core's ops
//! touch (what a shadow memory would hold), not by how often they touch them.
//!
//! [`Observer::on_start`]: crate::engine::Observer::on_start

mod checker;
mod clock;
mod fix;
mod plan;
mod region;
mod ring;
mod table;

use std::fmt;

pub(crate) use checker::core_bytes;
pub use checker::RaceChecker;
pub use fix::{Fix, FixOp};

use crate::addresses::Addresses;
use crate::config::Config;
use crate::engine::{run_launch, run_placed, Limits, RunError, RunResult};
pub use crate::footprint::Memory;
use crate::ids::OpId;
use crate::program::Program;
use crate::types::Pipe;

/// The class of a hazard, by program order of its two accesses.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum HazardKind {
    /// The first writes, the second reads.
    Raw,
    /// The first reads, the second writes.
    War,
    /// Both write.
    Waw,
}

impl HazardKind {
    pub fn name(self) -> &'static str {
        match self {
            HazardKind::Raw => "RAW",
            HazardKind::War => "WAR",
            HazardKind::Waw => "WAW",
        }
    }
}

impl fmt::Display for HazardKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One side of a hazard: a dynamic instance of an op's access.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HazardAccess {
    /// The core of the launch that made it: an index into [`RunResult::cores`] (and
    /// [`crate::launch::slots`]); `op` is an op of that core's part.
    pub core: u32,
    /// How reports name the core (`block 1 aiv 0`), in a launch of more than one core.
    pub core_name: Option<String>,
    /// The dynamic instruction's sequence number ([`crate::engine::Issue::seq`]).
    pub seq: u64,
    pub op: OpId,
    /// The pipe that executed it (MTE1 or M for the parts of an `mmad_l1`).
    pub pipe: Pipe,
    pub write: bool,
    /// The op's YAML path.
    pub path: String,
    /// The op's YAML key (`vadd`, `store`).
    pub name: &'static str,
    /// Where the op is written (0 when unknown: a program built in code).
    pub line: u32,
    pub column: u32,
    /// How messages name the op: file, line, column and text ([`Program::locate`]).
    pub at: String,
    /// The enclosing named loop variables and their values, outermost first.
    pub vars: Vec<(String, i64)>,
}

impl fmt::Display for HazardAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rw = if self.write { "write" } else { "read" };
        if let Some(core) = &self.core_name {
            write!(f, "{core} ")?;
        }
        write!(f, "{} {rw} ({}", self.pipe.report_name(), self.at)?;
        for (name, v) in &self.vars {
            write!(f, ", {name}={v}")?;
        }
        f.write_str(")")
    }
}

/// Two conflicting accesses that happens-before does not order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Hazard {
    pub kind: HazardKind,
    /// The memory: an on-chip scope (byte ranges are scope offsets) or a gm tensor (byte
    /// ranges are offsets in the tensor).
    pub memory: Memory,
    /// How reports name the memory (`UB`, `GM x`).
    pub memory_label: String,
    /// The overlapping bytes `[lo, hi)` at the occurrence reported.
    pub lo: u64,
    pub hi: u64,
    /// The access issued first (program order).
    pub first: HazardAccess,
    pub second: HazardAccess,
    /// Why the two accesses may not really share a byte, when the checker could not compare
    /// them exactly (`compared by byte hull`); `None` when they do.
    pub conservative: Option<&'static str>,
    /// The synchronisation that would order the two accesses, where `sync: auto` would put it
    /// ([`Fix`]); `None` when no single one does (a cube and a vector core of different AI
    /// cores). The pipeline keeps it only for `sync: manual` parts.
    pub fix: Option<Fix>,
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} hazard in {} [{:#06x}, {:#06x}): {} / {}",
            self.kind, self.memory_label, self.lo, self.hi, self.first, self.second
        )?;
        // said apart from the rest of the message
        if let Some(why) = self.conservative {
            write!(f, " (conservative: {why})")?;
        }
        Ok(())
    }
}

/// A run with the race check.
#[derive(Clone, Debug)]
pub struct RaceRun {
    pub result: RunResult,
    /// In the order found (deterministic).
    pub hazards: Vec<Hazard>,
}

/// Runs `program` with its buffers at `addresses` (every core of its launch) and checks it for
/// races.
pub fn check(
    program: &Program,
    config: &Config,
    addresses: &Addresses,
) -> Result<RaceRun, RunError> {
    let mut checker = RaceChecker::new(program, config, addresses);
    let result = run_placed(program, config, addresses, Limits::default(), &mut checker)?;
    Ok(RaceRun {
        result,
        hazards: checker.into_hazards(),
    })
}

/// Runs a launch of `parts` (one program, or a mixed kernel's `aic` and `aiv` parts, each with
/// its addresses; see [`crate::engine::run_launch`]) and checks it for races, within a core
/// and across its cores.
pub fn check_launch(
    parts: &[(&Program, &Addresses)],
    config: &Config,
    limits: Limits,
) -> Result<RaceRun, RunError> {
    let mut checker = RaceChecker::for_launch(parts, config);
    let result = run_launch(parts, config, limits, &mut checker)?;
    Ok(RaceRun {
        result,
        hazards: checker.into_hazards(),
    })
}
