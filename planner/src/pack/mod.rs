//! The placement core (docs/pack.md): dynamic storage allocation on MiniMalloc-format instances.
//! Buffers have half-open lifetimes `[lower, upper)`, sizes, alignments and optional fixed
//! offsets; a placement gives every buffer an offset so that no two buffers live at the same
//! time share a byte.
//!
//! - [`csv`]: the MiniMalloc CSV format, read and written exactly (text in, text out);
//! - [`bound`]: the alignment-aware lower bound (max live bytes) and where it is reached;
//! - [`validate()`]: the independent validator;
//! - [`gen`]: seeded instance families, three with a known optimum;
//! - [`fast`]: best of several orders with best fit plus a short seeded search on the order,
//!   never worse than the classic rules;
//! - [`exact`]: a complete search in the style of MiniMalloc (canonical placements, section
//!   inference, dominance, decomposition, round-robin orderings) with a time budget.
//!
//! Invariant: nothing here reads files or the terminal. `exact` alone reads the clock, for its
//! time limit; with a budget that is not reached its result is deterministic.

pub mod bound;
pub mod csv;
pub mod exact;
pub mod fast;
pub mod gen;
mod validate;

pub use validate::{validate, PackViolation};

/// One buffer of an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackBuffer {
    /// The name from the `id` column.
    pub id: String,
    /// First time step the buffer is live (inclusive).
    pub lower: u64,
    /// First time step it is no longer live (exclusive).
    pub upper: u64,
    pub size: u64,
    /// Every offset must be a multiple of this (≥ 1).
    pub align: u64,
    /// An offset the placement must keep (the `offset` column on input).
    pub fixed: Option<u64>,
    /// Idle sub-intervals of the lifetime (`gaps` column): `(lo, hi, window)`, where the window
    /// `[wlo, whi)` of the buffer's bytes stays occupied during the gap (`None`: none does).
    /// The validator honours gaps; the solvers treat the buffer as live over its whole
    /// lifetime, which only ever costs space, never validity.
    pub gaps: Vec<Gap>,
    /// The `hint` column (-1: none); read, written back, otherwise ignored, as MiniMalloc does.
    pub hint: Option<i64>,
}

/// An idle stretch of a buffer's lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    pub lo: u64,
    pub hi: u64,
    /// The bytes `[wlo, whi)` of the buffer that stay occupied during the gap.
    pub window: Option<(u64, u64)>,
}

impl PackBuffer {
    /// A buffer with no alignment constraint, no fixed offset and no gaps.
    pub fn new(id: impl Into<String>, lower: u64, upper: u64, size: u64) -> PackBuffer {
        PackBuffer {
            id: id.into(),
            lower,
            upper,
            size,
            align: 1,
            fixed: None,
            gaps: Vec::new(),
            hint: None,
        }
    }

    /// Whether the two lifetimes intersect (half-open).
    pub fn overlaps_in_time(&self, other: &PackBuffer) -> bool {
        self.lower < other.upper && other.lower < self.upper
    }
}

/// A placement problem: the buffers, and which optional CSV columns the input had (so the
/// output repeats them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instance {
    pub buffers: Vec<PackBuffer>,
}

impl Instance {
    pub fn new(buffers: Vec<PackBuffer>) -> Instance {
        Instance { buffers }
    }

    pub fn len(&self) -> usize {
        self.buffers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }
}

/// An offset per buffer (instance order) and the height they reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    pub offsets: Vec<u64>,
    /// max(offset + size), 0 for an empty instance.
    pub height: u64,
}

impl Solution {
    /// A solution from offsets, computing its height.
    pub fn from_offsets(inst: &Instance, offsets: Vec<u64>) -> Solution {
        let height = inst
            .buffers
            .iter()
            .zip(&offsets)
            .map(|(b, &o)| o + b.size)
            .max()
            .unwrap_or(0);
        Solution { offsets, height }
    }
}

/// Rounds `x` up to a multiple of `a` (a ≥ 1).
pub(crate) fn align_up(x: u64, a: u64) -> u64 {
    let a = a.max(1);
    x.div_ceil(a) * a
}
