//! Compiler passes over an npusim program. Today: the sequential placement every plan starts
//! from (DESIGN §5, step 1). The reuse planner (levels 2/1/0), liveness and automatic sync
//! build on the same [`Plan`] type.
//!
//! Invariant: nothing here touches files or the terminal.

pub mod inplace;
pub mod liveness;
pub mod place;
mod plan;
mod sequential;
pub mod validate;

pub use inplace::{inplace_pairs, InplacePair, InplaceResult};
pub use liveness::{liveness, Interval, Liveness, LivenessError, LivenessMode};
pub use place::{place, plan, Placement, PlanOptions, StorageEntry};
pub use plan::*;
pub use sequential::plan_sequential;
pub use validate::{validate, validate_with_touch, Violation};
