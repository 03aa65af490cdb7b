//! The result of planning: a byte offset per buffer slot, per scope.

use crate::liveness::LivenessMode;
use sim::{BufferId, Space};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub kernel: String,
    /// `CONFIG/CORE`, e.g. `ascend910b/aiv`.
    pub config: String,
    /// The highest reuse level the planner was allowed to use.
    pub level: u8,
    /// The loop rule the lifetimes were computed with.
    pub liveness: LivenessMode,
    /// Every on-chip scope of the core, in [`Space`] order.
    pub scopes: Vec<ScopePlan>,
    /// One entry per buffer, indexed by [`BufferId`].
    pub buffers: Vec<BufferPlan>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopePlan {
    pub space: Space,
    pub capacity: u64,
    pub align: u64,
    /// Bytes the scope needs without reuse: every entry's aligned slots added up.
    pub required: u64,
    /// The highest planned address (end of the highest slot).
    pub used: u64,
    /// The most bytes live at one position (every slot of every live storage entry). Only
    /// pairs allowed to touch at one position (inplace, refused multi-buffer inplace) let a
    /// plan use less.
    pub peak_live: u64,
    pub mode: ScopeMode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeMode {
    /// Everything fits: a running sum, no reuse.
    Sequential,
    /// The slots did not all fit: first fit with reuse levels 2/1/0 (docs/planner.md).
    Reuse,
}

impl ScopeMode {
    pub fn name(self) -> &'static str {
        match self {
            ScopeMode::Sequential => "sequential",
            ScopeMode::Reuse => "reuse",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferPlan {
    pub buffer: BufferId,
    pub scope: Space,
    /// Bytes of one slot, rounded up to the scope alignment.
    pub bytes: u64,
    /// One byte offset per slot. More than the declared `multi` when the buffer became a
    /// multi-buffer: inplaced into one, or upgraded at level 1. Slot `k` is used by iteration
    /// `i` of the buffer's loop when `i % offsets.len() == k`.
    pub offsets: Vec<u64>,
    pub placed_by: PlacedBy,
    /// The positions where the buffer's storage entry is live (sorted, inclusive); empty for
    /// a buffer nothing touches.
    pub live: Vec<crate::liveness::Interval>,
}

/// How a buffer got its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacedBy {
    Sequential,
    /// `at:` in the program.
    Fixed,
    /// Took over the address of an input that dies at the op writing it.
    Inplace,
    /// Placed by the reuse planner at this level (2, 1 or 0).
    Level(u8),
}

impl PlacedBy {
    pub fn name(self) -> &'static str {
        match self {
            PlacedBy::Sequential => "sequential",
            PlacedBy::Fixed => "fixed",
            PlacedBy::Inplace => "inplace",
            PlacedBy::Level(2) => "2",
            PlacedBy::Level(1) => "1",
            PlacedBy::Level(_) => "0",
        }
    }
}

impl Plan {
    pub fn buffer(&self, id: BufferId) -> &BufferPlan {
        &self.buffers[id.index()]
    }

    pub fn scope(&self, space: Space) -> Option<&ScopePlan> {
        self.scopes.iter().find(|s| s.space == space)
    }

    /// Every buffer's slot offsets and slot bytes: how the engine and the race checker see
    /// the plan.
    pub fn addresses(&self) -> sim::Addresses {
        let mut a = sim::Addresses::new(self.buffers.len());
        for b in &self.buffers {
            a.set(b.buffer, b.offsets.clone(), b.bytes);
        }
        a
    }
}

/// Why a program could not be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// HIVM's overflow diagnostic (in bits, as HIVM words it, then the same in bytes, which is
    /// what a program's shapes and `--capacity` speak), followed by what needed the space.
    #[error("{} overflow, requires {required_bits} bits while {available_bits} bits available! ({} bytes needed, {} available){}{}{}", .space.hivm_name(), .required_bits / 8, .available_bits / 8, Fragmented(*.required_bits <= *.available_bits), Peak(.peak), Details(.largest))]
    Overflow {
        space: Space,
        required_bits: u64,
        available_bits: u64,
        /// The buffers that needed the space, largest first: (name, bytes with all slots).
        /// With `peak`, only the buffers live at that instant.
        largest: Vec<(String, u64)>,
        /// The instant of peak liveness: (position, the op there as `PATH (NAME)`).
        peak: Option<(usize, String)>,
        /// The op at the peak, so that a report can show where it is in the source.
        peak_op: Option<sim::OpId>,
    },
}

/// HIVM's "requires" is the level-0 peak, which can fit while first fit still fails: say so,
/// or the message reads as a contradiction.
struct Fragmented(bool);

impl fmt::Display for Fragmented {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 {
            write!(f, "\n  the level-0 peak fits, but first fit with rollback found no address for every slot (the lifetimes fragment the space); `--placement exact` searches every placement")?;
        }
        Ok(())
    }
}

struct Peak<'a>(&'a Option<(usize, String)>);

impl fmt::Display for Peak<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((pos, op)) = self.0 {
            write!(f, "\n  peak liveness at position {pos}, {op}; live there:")?;
        }
        Ok(())
    }
}

struct Details<'a>(&'a [(String, u64)]);

impl fmt::Display for Details<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, bytes) in self.0 {
            write!(f, "\n  {name}: {bytes} bytes")?;
        }
        Ok(())
    }
}
