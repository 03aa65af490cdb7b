//! Compiler passes over an npusim program (docs/planner.md): liveness, HIVM's inplace rules, and
//! placement with reuse levels 2/1/0 into a [`Plan`], checked by an independent validator.
//! [`plan_program`] runs them all.
//!
//! Invariant: nothing here touches files or the terminal.

pub mod cross;
pub mod inplace;
pub mod liveness;
pub mod pack;
mod pipeline;
pub mod place;
mod plan;
pub mod sync;
#[cfg(test)]
mod test_support;
pub mod validate;

pub use cross::{synchronize_kernel, CrossSyncError, CrossSynced, Handoff};
pub use inplace::{inplace_pairs, AsWritten, InplacePair, InplaceResult};
pub use liveness::{liveness, Interval, Liveness, LivenessError, LivenessMode};
pub use pipeline::{plan_program, PlanFailure, Planned};
pub use place::{place, plan, InplacePolicy, Placement, PlacementMode, PlanOptions, StorageEntry};
pub use plan::*;
pub use sync::compat::{
    synchronize_compat, synchronize_compat_detailed, CompatOptions, CompatSynced, MmadSyncArgs,
};
pub use sync::{synchronize, synchronize_with, Serialised, SyncOptions, SyncStats, Synced};
pub use validate::{validate, Violation};
