//! The plan of every program in `programs/` at reuse levels 2, 1 and 0, and at a reduced
//! capacity that forces reuse (not for a program that pins its buffers with `at:`): snapshots,
//! each checked by the independent validator first. A mixed kernel plans part by part: its
//! snapshot is the document `npusim plan --format yaml` prints, with every part's plan.
//!
//! The reduced capacity is chosen per scope from the program's own plan, not by hand: halfway
//! between the scope's peak live bytes and what its default plan uses,
//! rounded down to the alignment (but not below the peak). A scope whose default plan already
//! uses only its peak (e.g. all double buffers live at once) cannot do better: it gets one
//! alignment unit less, and the snapshot holds the overflow report a user would see.

use crate::load_kernel_default;
use planner::{plan_program, PlanError, PlanFailure, PlanOptions, Planned, ScopeMode};
use sim::{Config, Kernel, Program, Space};

fn planned(program: &Program, config: &Config, opts: &PlanOptions) -> Result<Planned, PlanFailure> {
    let p = plan_program(program, config, opts)?;
    if let Err(v) = p.validate(program, config) {
        panic!("{}: invalid plan {opts:?}: {v:#?}", program.kernel);
    }
    Ok(p)
}

/// The options part `part` is planned with: `opts` narrowed to its core's scopes, as the
/// command line narrows a mixed kernel's `--capacity`.
fn part_options(kernel: &Kernel, part: usize, config: &Config, opts: &PlanOptions) -> PlanOptions {
    let all = pipeline::Options {
        plan: opts.clone(),
        ..Default::default()
    };
    pipeline::part_options(kernel, part, config, &all).plan
}

/// Every part planned, or the first failure with the part's prefix (`aiv: ` in a mixed
/// kernel), as the command line shows it.
fn plan_parts(
    kernel: &Kernel,
    config: &Config,
    opts: &PlanOptions,
) -> Result<Vec<Planned>, (String, PlanFailure)> {
    let mut out = Vec::new();
    for (i, p) in kernel.parts.iter().enumerate() {
        let prefix = if kernel.is_mixed() {
            format!("{}: ", config.core(p.core).name)
        } else {
            String::new()
        };
        let o = part_options(kernel, i, config, opts);
        out.push(planned(p, config, &o).map_err(|e| (prefix, e))?);
    }
    Ok(out)
}

/// The plan document, or the error text a user would see.
fn document(kernel: &Kernel, config: &Config, opts: &PlanOptions) -> String {
    match plan_parts(kernel, config, opts) {
        Ok(planned) => {
            let parts: Vec<reports::PlanPart> = kernel
                .parts
                .iter()
                .zip(&planned)
                .map(|(program, p)| reports::PlanPart {
                    core: &config.core(program.core).name,
                    program,
                    plan: &p.plan,
                })
                .collect();
            reports::kernel_plan_yaml(&parts)
        }
        Err((prefix, e)) => format!("error: {prefix}{e}\n"),
    }
}

/// Whether some part pins a buffer (`at:`).
fn pins(kernel: &Kernel) -> bool {
    kernel
        .parts
        .iter()
        .any(|p| p.buffers.iter().any(|b| b.at.is_some()))
}

#[test]
fn plans_at_every_level_and_at_a_reduced_capacity() {
    insta::glob!("../../programs", "*.yaml", |path| {
        let (config, kernel) = load_kernel_default(path);
        for level in [2u8, 1, 0] {
            let opts = PlanOptions {
                max_level: level,
                ..PlanOptions::default()
            };
            insta::assert_snapshot!(format!("level{level}"), document(&kernel, &config, &opts));
        }

        // a program that pins its buffers (`at:`) has nothing for the planner to reuse
        if !pins(&kernel) {
            let opts = reduced(&kernel, &config);
            insta::assert_snapshot!("reduced", document(&kernel, &config, &opts));
        }
    });
}

/// The reduced capacities (module docs) for every scope of every part that holds something.
fn reduced(kernel: &Kernel, config: &Config) -> PlanOptions {
    let mut capacities: Vec<(Space, u64)> = Vec::new();
    for p in &kernel.parts {
        let full = planned(p, config, &PlanOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.kernel))
            .plan;
        for s in full.scopes.iter().filter(|s| s.used > 0) {
            let upper = s.used;
            let mid = (s.peak_live + upper.saturating_sub(s.peak_live) / 2) / s.align * s.align;
            let cap = mid.max(s.peak_live.div_ceil(s.align) * s.align);
            let cap = if cap < upper { cap } else { upper - s.align };
            // the parts of a mixed kernel run on core types with scopes of their own
            assert!(
                capacities.iter().all(|(space, _)| *space != s.space),
                "{}: two parts plan {:?}",
                p.kernel,
                s.space
            );
            capacities.push((s.space, cap));
        }
    }
    PlanOptions {
        capacities,
        ..PlanOptions::default()
    }
}

#[test]
fn the_reduced_capacity_reuses_where_it_can_and_overflows_where_it_cannot() {
    let mut reused = 0;
    insta::glob!("../../programs", "*.yaml", |path| {
        let (config, kernel) = load_kernel_default(path);
        if pins(&kernel) {
            return;
        }
        let opts = reduced(&kernel, &config);
        match plan_parts(&kernel, &config, &opts) {
            Ok(parts) => {
                // every reduced scope shares bytes: by reuse, or by inplace (which a manual
                // program gets only when its buffers do not fit side by side)
                for (i, (program, p)) in kernel.parts.iter().zip(&parts).enumerate() {
                    let full = planned(program, &config, &PlanOptions::default()).unwrap();
                    let own = part_options(&kernel, i, &config, &opts);
                    for &(space, cap) in &own.capacities {
                        let s = p.plan.scope(space).unwrap();
                        let before = full.plan.scope(space).unwrap();
                        assert!(s.used <= cap, "{} {space:?}", path.display());
                        assert!(s.used < before.used, "{} {space:?}", path.display());
                        assert!(
                            s.mode == ScopeMode::Reuse
                                || p.plan.buffers.iter().any(|b| b.scope == space
                                    && b.placed_by == planner::PlacedBy::Inplace),
                            "{} {space:?}",
                            path.display()
                        );
                    }
                }
                reused += 1;
            }
            Err((
                _,
                PlanFailure::Plan(PlanError::Overflow {
                    required_bits,
                    available_bits,
                    ..
                }),
            )) => assert!(required_bits > available_bits, "{}", path.display()),
            Err((_, e)) => panic!("{}: {e}", path.display()),
        }
    });
    assert!(reused >= 2, "only {reused} programs could reuse");
}
