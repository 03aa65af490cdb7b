//! One case of a calibration run through the pipeline library as `npusim run` would run it,
//! every failure kept as the case's message, and the cases of a calibration on N workers.

use super::spec::{Case, What};
use super::Inputs;
use crate::cli::{CheckArgs, LevelArg, LivenessArg, PlacementArg, PlanArgs, PlanCommon, RunArgs};
use crate::input::Source;
use crate::progress::{Progress, Tally};
use crate::workers::{self, Sink};
use sim::{Config, Pipe};

/// What one run case's simulation gave.
#[derive(Clone, Debug, PartialEq)]
pub enum RunValue {
    Ran {
        cycles: u64,
        us: f64,
        /// Per busy entry of the case, its simulated share in percent.
        busy: Vec<f64>,
        /// `None` when the race checker did not run.
        hazards: Option<usize>,
    },
    Failed(String),
}

impl RunValue {
    pub fn us(&self) -> Option<f64> {
        match self {
            RunValue::Ran { us, .. } => Some(*us),
            RunValue::Failed(_) => None,
        }
    }
}

/// Where a busy entry's share comes from: the cores of one type, one pipe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusyAt {
    pub core: String,
    pub pipe: Pipe,
}

/// Runs the program of run case `case` (its `src`, on `config`, its busy entries at `busy`).
/// A panic in the pipeline (an npusim bug) is the case's failure, not the command's end.
pub fn run_case(
    case: &Case,
    src: &Source,
    config: &Config,
    busy: &[BusyAt],
    checks: &CheckArgs,
) -> RunValue {
    crate::workers::guarded(
        || run_unguarded(case, src, config, busy, checks),
        RunValue::Failed,
    )
}

/// At most this many problems go into a message; the rest are counted.
const MAX_LINES: usize = 5;

fn lines(all: Vec<String>) -> String {
    let mut text = all[..all.len().min(MAX_LINES)].join("\n");
    if all.len() > MAX_LINES {
        text.push_str(&format!("\n... and {} more", all.len() - MAX_LINES));
    }
    text
}

fn run_unguarded(
    case: &Case,
    src: &Source,
    config: &Config,
    busy: &[BusyAt],
    checks: &CheckArgs,
) -> RunValue {
    let run = case.run().expect("a run case");
    let kernel = match sim::load_kernel(&src.text, &src.name, config, &run.params, run.blocks) {
        Ok(k) => k,
        Err(e) => {
            return RunValue::Failed(lines(e.diagnostics.iter().map(|d| d.to_string()).collect()))
        }
    };
    // the options `npusim run` builds by default
    let plan = PlanArgs {
        level: LevelArg::Fixed(2),
        common: PlanCommon {
            liveness: LivenessArg::Precise,
            capacities: Vec::new(),
            placement: PlacementArg::FirstFit,
        },
    };
    let opts = plan.pipeline(
        &RunArgs {
            checks: checks.clone(),
            l2: run.l2,
        },
        crate::VALIDATE,
    );
    let prepared = match pipeline::prepare_kernel(&kernel, config, &opts) {
        Ok(p) => p,
        Err(e) => {
            let (ds, _) = crate::part_failure_diagnostics(&e, &kernel, config, src);
            return RunValue::Failed(lines(ds.iter().map(|d| d.to_string()).collect()));
        }
    };
    let sim = match pipeline::run_prepared(prepared, config, &opts, &mut ()) {
        Ok(sim) => sim,
        Err(f) => {
            let (ds, _) = crate::failure_diagnostics(&f, kernel.first(), config, src);
            return RunValue::Failed(lines(ds.iter().map(|d| d.to_string()).collect()));
        }
    };
    // a deadlock, a limit or a sync mistake leaves no time worth comparing; a hazard does not
    // change the cycles (the race checker only watches), so it is counted, not a failure
    let problems: Vec<String> = crate::problem_lines(config, &sim, "")
        .into_iter()
        .filter(|l| !l.starts_with("hazard: "))
        .collect();
    if !problems.is_empty() {
        return RunValue::Failed(lines(problems));
    }
    let result = &sim.result;
    let total = result.total_cycles;
    let shares = busy
        .iter()
        .map(|at| {
            let cores: Vec<&sim::engine::CoreRun> = result
                .cores
                .iter()
                .filter(|c| config.core(c.core).name == at.core)
                .collect();
            let busy: Vec<u64> = cores
                .iter()
                .filter_map(|c| c.pipes.iter().find(|p| p.pipe == at.pipe).map(|p| p.busy))
                .collect();
            if busy.is_empty() || total == 0 {
                return 0.0;
            }
            busy.iter().sum::<u64>() as f64 / busy.len() as f64 / total as f64 * 100.0
        })
        .collect();
    // a measured time is the task's, launch included (CATLASS's empty kernel's TaskDuration is
    // its 20 us head overhead); the busy shares are of the cores' own time, as the profiler's are
    let end = total.saturating_add(result.launch_cycles);
    RunValue::Ran {
        cycles: end,
        us: end as f64 / f64::from(config.clock_mhz),
        busy: shares,
        hazards: sim.hazards.as_ref().map(Vec::len),
    }
}

/// Collects the runs' values in order and tells the progress of each.
struct Collect<'a> {
    values: Vec<RunValue>,
    progress: Option<&'a mut Progress>,
}

impl Sink<RunValue> for Collect<'_> {
    type Error = std::convert::Infallible;

    fn take(&mut self, value: RunValue) -> Result<(), Self::Error> {
        if let Some(p) = self.progress.as_deref_mut() {
            p.done(match value {
                RunValue::Ran { .. } => Tally::Ok,
                RunValue::Failed(_) => Tally::Error,
            });
        }
        self.values.push(value);
        Ok(())
    }
}

/// Runs every run case of `inputs` among `cases` (indices into the file's cases) on `jobs`
/// workers, each on `configs[case]`: the values in the order of `cases`.
pub fn run_cases(
    inputs: &Inputs,
    cases: &[usize],
    configs: &[&Config],
    checks: &CheckArgs,
    jobs: usize,
    progress: Option<&mut Progress>,
) -> Vec<RunValue> {
    let mut sink = Collect {
        values: Vec::with_capacity(cases.len()),
        progress,
    };
    let work = |k: u64| {
        let i = cases[k as usize];
        let case = &inputs.measurements.cases[i];
        run_case(
            case,
            inputs.programs[i]
                .as_ref()
                .expect("a run case has its program"),
            configs[i],
            &inputs.busy[i],
            checks,
        )
    };
    let count = cases.len() as u64;
    match workers::in_order(count, 0..count, jobs, work, &mut sink) {
        Ok(()) => {}
        Err(never) => match never {},
    }
    sink.values
}

/// Every case's value: the runs' `values` (by case index; `None` for a derived case), and
/// each derived case's from them.
pub fn derive(cases: &[Case], values: &[Option<RunValue>]) -> Vec<Result<f64, String>> {
    cases
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.what {
            What::Run(_) => match values[i].as_ref() {
                Some(RunValue::Ran { us, .. }) => Ok(*us),
                Some(RunValue::Failed(m)) => Err(m.clone()),
                None => Err("not run".into()),
            },
            What::Derived {
                minuend,
                subtrahend,
                divide_by,
            } => {
                let value = |k: usize| {
                    values[k]
                        .as_ref()
                        .and_then(RunValue::us)
                        .ok_or_else(|| format!("case {} failed", cases[k].name))
                };
                Ok((value(*minuend)? - value(*subtrahend)?) / divide_by)
            }
        })
        .collect()
}
