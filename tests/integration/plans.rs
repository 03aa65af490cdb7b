//! The plan of every program in `programs/` at reuse levels 2, 1 and 0, and at a reduced
//! capacity that forces reuse (not for a program that pins its buffers with `at:`): snapshots,
//! each checked by the independent validator first.
//!
//! The reduced capacity is chosen per scope from the program's own plan, not by hand: halfway
//! between the scope's peak live bytes and what its default plan uses,
//! rounded down to the alignment (but not below the peak). A scope whose default plan already
//! uses only its peak (e.g. all double buffers live at once) cannot do better: it gets one
//! alignment unit less, and the snapshot holds the overflow report a user would see.

use crate::load_default;
use planner::{plan_program, PlanError, PlanFailure, PlanOptions, Planned, ScopeMode};
use sim::{Config, Program};

fn planned(program: &Program, config: &Config, opts: &PlanOptions) -> Result<Planned, String> {
    let p = plan_program(program, config, opts).map_err(|e| e.to_string())?;
    if let Err(v) = p.validate(program, config) {
        panic!("{}: invalid plan {opts:?}: {v:#?}", program.kernel);
    }
    Ok(p)
}

/// The plan document, or the error text a user would see.
fn document(program: &Program, config: &Config, opts: &PlanOptions) -> String {
    match planned(program, config, opts) {
        Ok(p) => reports::plan_yaml(program, &p.plan),
        Err(e) => format!("error: {e}\n"),
    }
}

#[test]
fn plans_at_every_level_and_at_a_reduced_capacity() {
    insta::glob!("../../programs", "*.yaml", |path| {
        let (config, program) = load_default(path);
        for level in [2u8, 1, 0] {
            let opts = PlanOptions {
                max_level: level,
                ..PlanOptions::default()
            };
            insta::assert_snapshot!(format!("level{level}"), document(&program, &config, &opts));
        }

        // a program that pins its buffers (`at:`) has nothing for the planner to reuse
        if program.buffers.iter().all(|b| b.at.is_none()) {
            let opts = reduced(&program, &config);
            insta::assert_snapshot!("reduced", document(&program, &config, &opts));
        }
    });
}

/// The reduced capacities (module docs) for every scope that holds something.
fn reduced(program: &Program, config: &Config) -> PlanOptions {
    let full = planned(program, config, &PlanOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", program.kernel))
        .plan;
    let capacities = full
        .scopes
        .iter()
        .filter(|s| s.used > 0)
        .map(|s| {
            let upper = s.used;
            let mid = (s.peak_live + upper.saturating_sub(s.peak_live) / 2) / s.align * s.align;
            let cap = mid.max(s.peak_live.div_ceil(s.align) * s.align);
            let cap = if cap < upper { cap } else { upper - s.align };
            (s.space, cap)
        })
        .collect();
    PlanOptions {
        capacities,
        ..PlanOptions::default()
    }
}

#[test]
fn the_reduced_capacity_reuses_where_it_can_and_overflows_where_it_cannot() {
    let mut reused = 0;
    insta::glob!("../../programs", "*.yaml", |path| {
        let (config, program) = load_default(path);
        if program.buffers.iter().any(|b| b.at.is_some()) {
            return;
        }
        let opts = reduced(&program, &config);
        match plan_program(&program, &config, &opts) {
            Ok(p) => {
                // every reduced scope shares bytes: by reuse, or by inplace (which a manual
                // program gets only when its buffers do not fit side by side)
                let full = planned(&program, &config, &PlanOptions::default()).unwrap();
                for &(space, cap) in &opts.capacities {
                    let s = p.plan.scope(space).unwrap();
                    let before = full.plan.scope(space).unwrap();
                    assert!(s.used <= cap, "{} {space:?}", path.display());
                    assert!(s.used < before.used, "{} {space:?}", path.display());
                    assert!(
                        s.mode == ScopeMode::Reuse
                            || p.plan
                                .buffers
                                .iter()
                                .any(|b| b.scope == space
                                    && b.placed_by == planner::PlacedBy::Inplace),
                        "{} {space:?}",
                        path.display()
                    );
                }
                reused += 1;
            }
            Err(PlanFailure::Plan(PlanError::Overflow {
                required_bits,
                available_bits,
                ..
            })) => assert!(required_bits > available_bits, "{}", path.display()),
            Err(e) => panic!("{}: {e}", path.display()),
        }
    });
    assert!(reused >= 2, "only {reused} programs could reuse");
}
