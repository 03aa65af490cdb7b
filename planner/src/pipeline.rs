//! The whole planner in one call: liveness → inplace → placement → (in debug builds) the
//! independent validator. What the command line and the snapshot tests use.

use crate::inplace::{inplace_pairs_with, InplaceResult};
use crate::liveness::{Liveness, LivenessError};
use crate::place::{place, InplacePolicy, PlanOptions};
use crate::plan::{Plan, PlanError};
use crate::validate::{validate, Violation};
use sim::program::{Program, SyncMode};
use sim::{BufferId, Config};

/// A plan with everything that decided it, for `--explain` and for the sync pass.
#[derive(Clone, Debug)]
pub struct Planned {
    pub plan: Plan,
    pub live: Liveness,
    /// Every inplace candidate pair HIVM's rules accept (applied or not: see `applied`).
    pub inplace: InplaceResult,
    /// The `(gen, kill)` pairs that took effect.
    pub applied: Vec<(BufferId, BufferId)>,
    /// Single buffers upgraded to multi-buffers at level 1.
    pub upgraded: Vec<BufferId>,
}

impl Planned {
    /// The pairs whose lifetimes may share one position: applied inplace pairs and refused
    /// multi-buffer load→store pairs.
    pub fn touch_pairs(&self) -> Vec<(BufferId, BufferId)> {
        let mut v = self.applied.clone();
        v.extend(self.inplace.touch.iter().map(|p| (p.gen, p.kill)));
        v
    }

    /// Runs the independent validator on the plan. It derives what is live from the program
    /// itself, so neither `live` nor the touch pairs are handed to it.
    pub fn validate(&self, program: &Program, config: &Config) -> Result<(), Vec<Violation>> {
        validate(program, config, &self.plan)
    }
}

/// Why [`plan_program`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanFailure {
    /// The program reads a buffer before writing it: bad input.
    #[error(transparent)]
    Liveness(#[from] LivenessError),
    /// A scope does not fit: a finding.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Plans every on-chip scope of the program. `opts.inplace` is overridden by the program's
/// sync mode: `sync: manual` programs get [`InplacePolicy::WhenNeeded`] (docs/decisions.md).
pub fn plan_program(
    program: &Program,
    config: &Config,
    opts: &PlanOptions,
) -> Result<Planned, PlanFailure> {
    let mut live = crate::liveness::liveness_with(
        program,
        opts.liveness,
        opts.reads_unwritten,
        &opts.allocs_after,
        opts.fresh_loop_allocs,
    )?;
    if opts.dma_without_fix {
        for e in &mut live.entries {
            e.dma = e.dma_mte;
        }
    }
    let inplace = inplace_pairs_with(
        program,
        &live,
        opts.inplace_last_input_first,
        &opts.kill_order,
        opts.inplace_through_select,
        &opts.as_written,
    );
    let pairs: Vec<(BufferId, BufferId)> = inplace.pairs.iter().map(|p| (p.gen, p.kill)).collect();
    let touch: Vec<(BufferId, BufferId)> = inplace.touch.iter().map(|p| (p.gen, p.kill)).collect();
    let mut opts = opts.clone();
    if program.sync == SyncMode::Manual {
        opts.inplace = InplacePolicy::WhenNeeded;
    }
    let placement = place(program, config, &live, &pairs, &touch, &opts)?;
    Ok(Planned {
        plan: placement.plan,
        live,
        inplace,
        applied: placement.inplace,
        upgraded: placement.upgraded.into_iter().map(|(b, _)| b).collect(),
    })
}
