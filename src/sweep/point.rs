//! One point of a sweep: loaded with its params and blocks, then planned, synchronised and run
//! through the pipeline library exactly as `npusim run` would, every failure kept as the
//! point's status and message instead of ending the sweep.

use super::spec::Point;
use super::Inputs;
use crate::cli::{CheckArgs, LevelArg, LivenessArg, PlacementArg, PlanArgs, PlanCommon, RunArgs};
use pipeline::Simulation;
use sim::Diagnostic;

/// How a point ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It ran without findings.
    Ok,
    /// What `run` exits 1 for: an overflow, a hazard, a sync finding, a deadlock, a limit.
    Finding,
    /// What `run` exits 2 for (the point's params or blocks do not load, a run-time error), or
    /// an npusim bug (a plan that fails its validator, a panic).
    Error,
}

impl Status {
    /// How the progress counts it.
    pub fn tally(self) -> crate::progress::Tally {
        match self {
            Status::Ok => crate::progress::Tally::Ok,
            Status::Finding => crate::progress::Tally::Finding,
            Status::Error => crate::progress::Tally::Error,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Finding => "finding",
            Status::Error => "error",
        }
    }
}

/// A point's result: the run, when there was one, and what went wrong, if anything.
pub struct Outcome {
    pub status: Status,
    /// Empty for `ok`; otherwise the problems, one a line, as `run` prints them.
    pub message: String,
    pub sim: Option<Box<Simulation>>,
}

/// The options every point of a sweep shares.
#[derive(Clone, Debug)]
pub struct Shared {
    pub checks: CheckArgs,
    pub liveness: LivenessArg,
    pub placement: PlacementArg,
}

/// At most this many problems go into a message (a racy kernel can have thousands of
/// hazards); the rest are counted.
const MAX_LINES: usize = 10;

/// `lines`, one a line, the ones past [`MAX_LINES`] counted.
fn message(lines: impl IntoIterator<Item = String>) -> String {
    let lines: Vec<String> = lines.into_iter().collect();
    let mut text = lines[..lines.len().min(MAX_LINES)].join("\n");
    if lines.len() > MAX_LINES {
        text.push_str(&format!("\n... and {} more", lines.len() - MAX_LINES));
    }
    text
}

fn diagnostics(ds: &[Diagnostic]) -> String {
    message(ds.iter().map(Diagnostic::to_string))
}

/// Runs `point`. A panic in the pipeline (an npusim bug) is the point's error, not the
/// sweep's end.
pub fn run(inputs: &Inputs, shared: &Shared, point: &Point) -> Outcome {
    crate::workers::guarded(
        || run_unguarded(inputs, shared, point),
        |message| Outcome {
            status: Status::Error,
            message,
            sim: None,
        },
    )
}

fn run_unguarded(inputs: &Inputs, shared: &Shared, point: &Point) -> Outcome {
    let src = &inputs.programs[point.program];
    let config = &inputs.configs[point.config].config;
    let params = inputs.grid.overrides(point);
    let failed = |status, message| Outcome {
        status,
        message,
        sim: None,
    };
    let kernel = match sim::load_kernel(&src.text, &src.name, config, &params, point.blocks) {
        Ok(k) => k,
        Err(e) => return failed(Status::Error, diagnostics(&e.diagnostics)),
    };
    // the options `npusim run --level L --capacity ... --l2 ...` would build
    let plan = PlanArgs {
        level: LevelArg::Fixed(point.level),
        common: PlanCommon {
            liveness: shared.liveness,
            capacities: point.capacities.to_vec(),
            placement: shared.placement,
        },
    };
    let run = RunArgs {
        checks: shared.checks.clone(),
        l2: point.l2,
    };
    let opts = plan.pipeline(&run, crate::VALIDATE);
    let status_of = |f: &pipeline::Failure| {
        if f.is_finding() {
            Status::Finding
        } else {
            Status::Error
        }
    };
    let prepared = match pipeline::prepare_kernel(&kernel, config, &opts) {
        Ok(p) => p,
        Err(e) => {
            let (ds, _) = crate::part_failure_diagnostics(&e, &kernel, config, src);
            return failed(status_of(&e.failure), diagnostics(&ds));
        }
    };
    match pipeline::run_prepared(prepared, config, &opts, &mut ()) {
        Ok(sim) => {
            let lines = crate::problem_lines(config, &sim, "");
            Outcome {
                status: if lines.is_empty() {
                    Status::Ok
                } else {
                    Status::Finding
                },
                message: message(lines),
                sim: Some(Box::new(sim)),
            }
        }
        Err(f) => {
            let (ds, _) = crate::failure_diagnostics(&f, kernel.first(), config, src);
            failed(status_of(&f), diagnostics(&ds))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_and_counted() {
        let lines = (0..13).map(|i| format!("hazard {i}"));
        let m = message(lines);
        assert_eq!(m.lines().count(), MAX_LINES + 1);
        assert!(m.starts_with("hazard 0\n"));
        assert!(m.ends_with("hazard 9\n... and 3 more"));
        assert_eq!(message(["one".to_string()]), "one");
        assert_eq!(message(Vec::new()), "");
    }
}
