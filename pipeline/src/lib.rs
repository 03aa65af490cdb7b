//! The npusim pipeline as a library: a loaded program and config in, a plan, the synchronised
//! program, the run and its hazards out.
//!
//! ```text
//! Program + Config ──> plan (planner::plan_program; the validator when asked)
//!                  ──> synchronise (planner::synchronize, `sync: auto` programs)
//!                  ──> run (sim::engine, with the race checker and any observers of the caller)
//!                  ──> Simulation { parts (each planned and synchronised), result, hazards }
//! ```
//!
//! Every failure is data ([`Failure`]): an overflow is a finding, a read before the first
//! write or a run-time error is bad input, a plan that fails its validator or a run that
//! breaks the accounting identity is an npusim bug. The command line, the tests, `compare`
//! and sweeps all call these functions; nothing here touches files or the terminal.

use planner::{
    LivenessError, PlanError, PlanFailure, PlanOptions, Planned, Serialised, SyncStats, Violation,
};
use sim::coverage::{Coverage, Gap};
use sim::engine::{Limits, Observer};
use sim::program::SyncMode;
use sim::race::RaceChecker;
use sim::{BufferId, Config, CoreId, Hazard, Kernel, OpId, Program, RunError, RunResult, Space};

/// How to plan, synchronise and run.
#[derive(Clone, Debug)]
pub struct Options {
    pub plan: PlanOptions,
    /// Run the race checker (`run`'s default; `--no-race-check` turns it off).
    pub race_check: bool,
    /// Check every plan with the planner's independent validator (debug builds of the command
    /// line, and tests).
    pub validate: bool,
    /// Where a run stops (`--max-cycles`, `--max-instructions`).
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            plan: PlanOptions::default(),
            race_check: true,
            validate: cfg!(debug_assertions),
            limits: Limits::default(),
        }
    }
}

/// Why the pipeline stopped before a run result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Failure {
    /// A capacity override names scopes the program's core does not have (bad input).
    #[error("capacity overrides name scopes that core {core} does not have: {scopes:?}")]
    NoSuchScope { core: CoreId, scopes: Vec<Space> },
    /// The program reads a buffer before writing it (bad input).
    #[error("{op} reads buffer {buffer} before its first write")]
    ReadBeforeWrite { buffer: BufferId, op: OpId },
    /// A scope does not fit (a finding).
    #[error(transparent)]
    Overflow(PlanError),
    /// The plan fails its validator: an npusim bug.
    #[error("the plan fails its validator: {0:?}")]
    InvalidPlan(Vec<Violation>),
    /// The run stopped: an expression that cannot be evaluated, an index out of bounds ...
    /// (bad input).
    #[error(transparent)]
    Run(RunError),
    /// `sync: auto` cannot place a mixed kernel's cross-core flags (bad input: the user writes
    /// them by hand).
    #[error(transparent)]
    CrossSync(planner::CrossSyncError),
    /// The engine's accounting identity does not hold: an npusim bug.
    #[error("the accounting identity does not hold: {0}")]
    Accounting(String),
}

impl Failure {
    /// Whether the failure is a finding in the program (exit 1) rather than bad input (2) or a
    /// bug.
    pub fn is_finding(&self) -> bool {
        matches!(self, Failure::Overflow(_))
    }

    /// Whether the failure is an npusim bug.
    pub fn is_internal(&self) -> bool {
        matches!(self, Failure::InvalidPlan(_) | Failure::Accounting(_))
    }
}

/// One plan → sync → run of every part of a kernel, all its cores in one launch.
#[derive(Clone, Debug)]
pub struct Simulation {
    /// Every part of the kernel (its index in [`Kernel::parts`]: one for a single-type kernel,
    /// `aic` then `aiv` for a mixed one), each planned and synchronised on its own, with the
    /// program that ran (the synchronised one; original ops keep their paths, so reports name
    /// what the user wrote). No part is special.
    pub parts: Vec<Prepared>,
    /// The cross-core hand-offs `sync: auto` synchronised (a mixed kernel without hand-written
    /// cross-core ops); empty otherwise.
    pub handoffs: Vec<planner::Handoff>,
    pub result: RunResult,
    /// `None` when the race checker did not run.
    pub hazards: Option<Vec<Hazard>>,
    /// The work the run dropped: gm bytes the program stores to that no op wrote, rows of a
    /// loaded tensor no op read while others were ([`Coverage::gaps`]). Warnings, not
    /// findings; empty when the run deadlocked or stopped at a limit, which left work undone
    /// for another reason.
    pub dropped: Vec<Gap>,
}

impl Simulation {
    /// The program core `core` of the launch ran ([`RunResult::cores`] index; the findings
    /// and waiters of a run name only its cores).
    pub fn program_of(&self, config: &Config, core: usize) -> &Program {
        let programs: Vec<&Program> = self.parts.iter().map(|p| &p.program).collect();
        let slots = sim::launch::slots(&programs, config);
        let part = slots.get(core).map_or(0, |s| s.part as usize);
        programs[part.min(programs.len() - 1)]
    }

    /// Whether the run found something a user must fix: a hazard, a sync finding, a deadlock.
    pub fn has_findings(&self) -> bool {
        self.result.has_findings() || self.hazards.as_ref().is_some_and(|h| !h.is_empty())
    }
}

/// Plans every scope of the program's core: checks the capacity overrides, runs the planner
/// and, when `validate`, the independent validator.
pub fn plan(
    program: &Program,
    config: &Config,
    opts: &PlanOptions,
    validate: bool,
) -> Result<Planned, Failure> {
    let core = config.core(program.core);
    let missing: Vec<Space> = opts
        .capacities
        .iter()
        .map(|(space, _)| *space)
        .filter(|space| core.scope(*space).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(Failure::NoSuchScope {
            core: program.core,
            scopes: missing,
        });
    }
    let planned = planner::plan_program(program, config, opts).map_err(|e| match e {
        PlanFailure::Plan(e) => Failure::Overflow(e),
        PlanFailure::Liveness(LivenessError::ReadBeforeWrite { buffer, op }) => {
            Failure::ReadBeforeWrite { buffer, op }
        }
    })?;
    if validate {
        planned
            .validate(program, config)
            .map_err(Failure::InvalidPlan)?;
    }
    Ok(planned)
}

/// Plans, synchronises (`sync: auto`; a `sync: manual` program runs as written) and runs the
/// program, with the race checker when `opts.race_check`.
pub fn simulate(program: &Program, config: &Config, opts: &Options) -> Result<Simulation, Failure> {
    simulate_observed(program, config, opts, &mut ())
}

/// [`simulate`], with `observer` watching the run beside the race checker (a trace, a
/// profile). The observer sees the synchronised program's ops.
pub fn simulate_observed<O: Observer>(
    program: &Program,
    config: &Config,
    opts: &Options,
    observer: &mut O,
) -> Result<Simulation, Failure> {
    let prepared = prepare(program, config, opts)?;
    run_prepared(Launch::from(prepared), config, opts, observer)
}

/// Plans, synchronises and runs every part of a kernel together: one launch of
/// `launch.blocks` blocks, with the race checker across its cores when `opts.race_check`.
/// Each part is planned with [`part_options`].
pub fn simulate_kernel(
    kernel: &Kernel,
    config: &Config,
    opts: &Options,
) -> Result<Simulation, Failure> {
    let launch = prepare_kernel(kernel, config, opts).map_err(|e| e.failure)?;
    run_prepared(launch, config, opts, &mut ())
}

/// A failure of one part of a kernel: the part (its index in [`Kernel::parts`]: 0 for a
/// single-type kernel, 0 = `aic` and 1 = `aiv` in a mixed one) whose program the failure's
/// ids (buffers, ops) belong to, and the failure.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("part {part}: {failure}")]
pub struct PartFailure {
    pub part: usize,
    pub failure: Failure,
}

/// The options part `part` of `kernel` is planned with: `opts`, except that a mixed kernel's
/// capacity overrides apply only to the parts whose core has the scope (`--capacity ub=...`
/// is the vector part's, `--capacity l1=...` the cube part's). A single-type kernel keeps
/// them all, so that one naming a scope its core lacks is refused ([`plan`]).
pub fn part_options(kernel: &Kernel, part: usize, config: &Config, opts: &Options) -> Options {
    let mut o = opts.clone();
    if kernel.is_mixed() {
        let core = config.core(kernel.parts[part].core);
        o.plan
            .capacities
            .retain(|(space, _)| core.scope(*space).is_some());
    }
    o
}

/// The capacity overrides of a mixed kernel that name a scope no part's core has, as the
/// failure of its first part (`NoSuchScope` with the first part's core); `None` when every
/// override is some part's, or for a single-type kernel ([`plan`] checks those).
fn missing_scopes(kernel: &Kernel, config: &Config, opts: &Options) -> Option<PartFailure> {
    if !kernel.is_mixed() {
        return None;
    }
    let missing: Vec<Space> = opts
        .plan
        .capacities
        .iter()
        .map(|(space, _)| *space)
        .filter(|space| {
            kernel
                .parts
                .iter()
                .all(|p| config.core(p.core).scope(*space).is_none())
        })
        .collect();
    (!missing.is_empty()).then(|| PartFailure {
        part: 0,
        failure: Failure::NoSuchScope {
            core: kernel.first().core,
            scopes: missing,
        },
    })
}

/// Inserts a mixed kernel's cross-core flags (`sync: auto`, [`planner::synchronize_kernel`]),
/// then plans and synchronises every part, each with [`part_options`], in order: the first half
/// of [`simulate_kernel`]. The first part that fails stops it, named in the error.
pub fn prepare_kernel(
    kernel: &Kernel,
    config: &Config,
    opts: &Options,
) -> Result<Launch, PartFailure> {
    if let Some(e) = missing_scopes(kernel, config, opts) {
        return Err(e);
    }
    // the cross-core flags first (a mixed kernel with `sync: auto`): each part is then
    // planned and synchronised with its cross-core ops in place
    let crossed = planner::synchronize_kernel(kernel, config).map_err(|e| PartFailure {
        part: 0,
        failure: Failure::CrossSync(e),
    })?;
    let mut parts = Vec::with_capacity(kernel.parts.len());
    for (part, p) in crossed.kernel.parts.iter().enumerate() {
        let o = part_options(kernel, part, config, opts);
        match prepare(p, config, &o) {
            Ok(mut prepared) => {
                if !crossed.handoffs.is_empty() {
                    prepared.planned_program = Some(p.clone());
                }
                parts.push(prepared)
            }
            Err(failure) => {
                // the failure's ids are the crossed program's; the caller names ops of the
                // kernel as loaded, where the same failure (planning ignores cross-core ops)
                // has that program's ids
                let failure = match prepare(&kernel.parts[part], config, &o) {
                    Err(original) if !crossed.handoffs.is_empty() => original,
                    _ => failure,
                };
                return Err(PartFailure { part, failure });
            }
        }
    }
    Ok(Launch {
        parts,
        handoffs: crossed.handoffs,
    })
}

/// Plans every part of a kernel, each with [`part_options`] (the plan options of `opts`),
/// and, when `validate`, checks each plan with the validator: what `npusim plan` and `check`
/// do. The first part that fails stops it, named in the error.
pub fn plan_kernel(
    kernel: &Kernel,
    config: &Config,
    opts: &PlanOptions,
    validate: bool,
) -> Result<Vec<Planned>, PartFailure> {
    let all = Options {
        plan: opts.clone(),
        validate,
        ..Options::default()
    };
    if let Some(e) = missing_scopes(kernel, config, &all) {
        return Err(e);
    }
    let mut out = Vec::with_capacity(kernel.parts.len());
    for (part, p) in kernel.parts.iter().enumerate() {
        let o = part_options(kernel, part, config, &all);
        out.push(
            plan(p, config, &o.plan, validate).map_err(|failure| PartFailure { part, failure })?,
        );
    }
    Ok(out)
}

/// Runs the prepared parts of a launch (a kernel's, in order; one part for a single program)
/// with the race checker across its cores (when `opts.race_check`) and `observer`, and checks
/// the accounting identity: the second half of [`simulate`] and [`simulate_kernel`]. One core
/// is a launch of one part and one block: the same path.
pub fn run_prepared<O: Observer>(
    launch: Launch,
    config: &Config,
    opts: &Options,
    observer: &mut O,
) -> Result<Simulation, Failure> {
    let Launch {
        mut parts,
        handoffs,
    } = launch;
    let addresses: Vec<sim::Addresses> = parts.iter().map(|p| p.planned.plan.addresses()).collect();
    let launch: Vec<(&Program, &sim::Addresses)> =
        parts.iter().map(|p| &p.program).zip(&addresses).collect();
    let programs: Vec<&Program> = launch.iter().map(|p| p.0).collect();
    let mut coverage = Coverage::for_launch(&programs, config);
    let (result, hazards) = if opts.race_check {
        let mut checker = RaceChecker::for_launch(&launch, config);
        let mut all = (&mut checker, (&mut coverage, observer));
        let result = sim::engine::run_launch(&launch, config, opts.limits, &mut all)
            .map_err(Failure::Run)?;
        let mut hazards = checker.into_hazards();
        let slots = sim::launch::slots(&programs, config);
        let manual = |core: u32| {
            slots
                .get(core as usize)
                .is_some_and(|s| parts[s.part as usize].auto_sync.is_none())
        };
        keep_manual_fixes(&mut hazards, manual);
        (result, Some(hazards))
    } else {
        let mut both = (&mut coverage, observer);
        let result = sim::engine::run_launch(&launch, config, opts.limits, &mut both)
            .map_err(Failure::Run)?;
        (result, None)
    };
    result.check_accounting().map_err(Failure::Accounting)?;
    let dropped = dropped(&coverage, &result);
    drop(coverage);
    parts.shrink_to_fit();
    Ok(Simulation {
        parts,
        handoffs,
        result,
        hazards,
        dropped,
    })
}

/// What the run dropped, when it ran to its end.
fn dropped(coverage: &Coverage, result: &RunResult) -> Vec<Gap> {
    if result.deadlock.is_some() || result.stopped.is_some() {
        return Vec::new();
    }
    coverage.gaps()
}

/// Every part of a kernel planned and synchronised, ready to run as one launch
/// ([`run_prepared`]): what [`prepare_kernel`] gives, or one [`Prepared`] program
/// (`Launch::from`).
#[derive(Clone, Debug)]
pub struct Launch {
    /// The parts, in [`Kernel::parts`] order: at least one, as a kernel has.
    pub parts: Vec<Prepared>,
    /// The cross-core hand-offs `sync: auto` synchronised (a mixed kernel without hand-written
    /// cross-core ops); empty otherwise.
    pub handoffs: Vec<planner::Handoff>,
}

impl From<Prepared> for Launch {
    /// The launch of one program: its one part, no hand-offs.
    fn from(part: Prepared) -> Launch {
        Launch {
            parts: vec![part],
            handoffs: Vec::new(),
        }
    }
}

/// A planned and synchronised program, ready to run: what an observer that names ops (a
/// trace, a profile) is built from before the run starts.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub planned: Planned,
    /// What the sync pass inserted, for a `sync: auto` program.
    pub auto_sync: Option<SyncStats>,
    /// The multi-buffers the sync pass serialised (empty for `sync: manual`).
    pub serialised: Vec<Serialised>,
    /// The program that will run (the synchronised one for `sync: auto`).
    pub program: Program,
    /// The program that was planned, when it is not the one loaded: a mixed kernel's part with
    /// the cross-core ops of `sync: auto` in place (the plan's op positions are its).
    pub planned_program: Option<Program>,
}

/// Plans and synchronises the program: the first half of [`simulate`].
pub fn prepare(program: &Program, config: &Config, opts: &Options) -> Result<Prepared, Failure> {
    let planned = plan(program, config, &opts.plan, opts.validate)?;
    let synced = planner::synchronize(program, config, &planned.plan);
    Ok(Prepared {
        planned,
        auto_sync: (program.sync == SyncMode::Auto).then_some(synced.stats),
        serialised: synced.serialised,
        program: synced.program,
        planned_program: None,
    })
}

/// Keeps a hazard's suggested synchronisation (`Hazard::fix`) only when the cores of both its
/// sides run `sync: manual` parts (`manual(core)`): in a `sync: auto` part the flags are the
/// sync pass's to place, so a hazard there is not the user's to fix by hand.
fn keep_manual_fixes(hazards: &mut [Hazard], manual: impl Fn(u32) -> bool) {
    for h in hazards {
        if !(manual(h.first.core) && manual(h.second.core)) {
            h.fix = None;
        }
    }
}

/// What one level of a comparison gave.
#[derive(Clone, Debug)]
pub struct Level {
    pub level: u8,
    /// The kernel part an overflow is of (its index in [`Kernel::parts`]); 0 for a level
    /// that ran, and for a single program.
    pub part: usize,
    pub outcome: LevelOutcome,
}

#[derive(Clone, Debug)]
pub enum LevelOutcome {
    Ran(Box<Simulation>),
    /// The plan did not fit at this level: a finding of this level, not the comparison's end.
    Overflow(PlanError),
}

/// Plans, synchronises and runs the program once per reuse level in `levels` (in that order,
/// `opts.plan.max_level` replaced by each). An overflow is recorded for its level and the
/// comparison goes on; any other failure stops it.
pub fn compare(
    program: &Program,
    config: &Config,
    levels: &[u8],
    opts: &Options,
) -> Result<Vec<Level>, Failure> {
    let mut out = Vec::with_capacity(levels.len());
    for &level in levels {
        let mut o = opts.clone();
        o.plan.max_level = level;
        let outcome = match simulate(program, config, &o) {
            Ok(s) => LevelOutcome::Ran(Box::new(s)),
            Err(Failure::Overflow(e)) => LevelOutcome::Overflow(e),
            Err(e) => return Err(e),
        };
        out.push(Level {
            level,
            part: 0,
            outcome,
        });
    }
    Ok(out)
}

/// [`compare`] of a kernel: every part planned and synchronised ([`prepare_kernel`]), then
/// all run together as one launch ([`run_prepared`]), once per level. An overflow of
/// any part is that level's outcome (with the part); any other failure stops the comparison.
pub fn compare_kernel(
    kernel: &Kernel,
    config: &Config,
    levels: &[u8],
    opts: &Options,
) -> Result<Vec<Level>, PartFailure> {
    compare_kernel_observed(kernel, config, levels, opts, |_| ())
}

/// [`compare_kernel`] with `observer(level)` watching that level's run (a progress line),
/// dropped when the run ends.
pub fn compare_kernel_observed<O: Observer>(
    kernel: &Kernel,
    config: &Config,
    levels: &[u8],
    opts: &Options,
    mut observer: impl FnMut(u8) -> O,
) -> Result<Vec<Level>, PartFailure> {
    let mut out = Vec::with_capacity(levels.len());
    for &level in levels {
        let mut o = opts.clone();
        o.plan.max_level = level;
        let (part, outcome) = match prepare_kernel(kernel, config, &o) {
            Ok(launch) => {
                let sim = run_prepared(launch, config, &o, &mut observer(level))
                    .map_err(|failure| PartFailure { part: 0, failure })?;
                (0, LevelOutcome::Ran(Box::new(sim)))
            }
            Err(PartFailure {
                part,
                failure: Failure::Overflow(e),
            }) => (part, LevelOutcome::Overflow(e)),
            Err(e) => return Err(e),
        };
        out.push(Level {
            level,
            part,
            outcome,
        });
    }
    Ok(out)
}
