//! Pure functions from npusim results to text tables, JSON/YAML documents and HTML pages.
//!
//! Nothing here does IO, reads the clock or iterates a hash map: the same inputs always give
//! byte-identical outputs. Cycle counts are reported as exact integers; ratios are derived
//! from them (rounded to 4 decimals in JSON, shown as percentages with one decimal in text).
//!
//! Every document starts with `schema` ([`SCHEMA`]); docs/json.md describes each key by key,
//! with the stability promise of `schema`.
//!
//! | document | function | printed by |
//! |---|---|---|
//! | run | [`run_json`] | `run --format json` |
//! | plan | [`plan_json`], [`plan_yaml`]; of a kernel [`kernel_plan_json`], [`kernel_plan_yaml`] | `plan --format json\|yaml`; also the `plan` of a run and of a check document, `schema` included |
//! | comparison | [`compare_json`], a list of [`compare_entry`] | `compare --format json` |
//! | check | [`check_json`], problems by [`diagnostic_json`] | `check --format json` |
//! | calibration | [`calibration_json`] | `calibrate --check --format json` |
//! | diff | [`diff_json`] of [`diff`] of two [`read_run_document`]s | `diff --format json` |
//!
//! Run document ([`run_json`]), keys in this order (`schema`, then [`RUN_KEYS`]):
//!
//! | key | meaning |
//! |---|---|
//! | `schema` | [`SCHEMA`] |
//! | `kernel`, `config` (`ascend910b/aiv`), `sync` | what ran where (`sync` is the program's mode as written: `auto` when the sync pass synchronised it) |
//! | `total_cycles`, `microseconds` | length of the run; µs = cycles / clock MHz |
//! | `launch_cost` | null without a `launch_cost` config section, else what starting the launch cost, apart from `total_cycles`: {`cycles`, `fixed_cycles`, `per_core_cycles`, `cores` (the cores it started), `end_to_end_cycles`, `end_to_end_microseconds`} |
//! | `pipes` | per pipe (report name, pipe order): `busy`, `stalls` {reason: cycles}, `starved`, `idle`, `instructions`, `utilisation` (busy / total) |
//! | `overlap`, `overlap_cycles` | cycles with ≥ 2 non-S pipes busy (/ total) |
//! | `pipe_bound` | {`pipe`, `cycles`}: the non-S pipe with the most busy cycles |
//! | `efficiency` | pipe bound / total |
//! | `bank_conflict_cycles` | the cycles UB bank conflicts added to V's busy time; `null` when the config has no `ub_banks` |
//! | `memory` | null without a `memory` config section, else what the gm moves found in L2 and HBM: {`l2_start`, `warm_lines`, `reads`, `hit_bytes`, `hit_lines`, `miss_bytes`, `miss_lines`, `hbm_bytes`, `writes`, `write_bytes`, `evicted_lines`, `hbm`, `l2`}; `hbm` and `l2` are the bandwidth drawn on the chip's two rates: {`bytes`, `gb_per_s`, `peak_gb_per_s`, `of_peak`} |
//! | `race_check`, `hazards` | whether the race checker ran; `null`, or its hazards: {`kind` RAW/WAR/WAW, `memory`, `bytes` [lo, hi), `first`/`second`: {`core` (its index among the launch's cores, `sim::launch::slots` order), `core_name` (`block 1 aiv 0`, `null` for a one-core run), `pipe`, `access`, `op`, `op_kind`, `line`, `column`, `vars`}, `message`} |
//! | `findings` | sync mistakes: `double_set`, `unpaired_set_flag`, `cross_core_overflow`, `unpaired_cross_set` |
//! | `deadlock` | null, or {`cycle`, `waiters`: [{`core`, `pipe`, `waits_on`, `op`, `op_kind`, `line`, `column`}]} |
//! | `stopped` | null, or {`limit`, `value`, `cycle`}: the run reached `--max-cycles` or `--max-instructions` |
//! | `syncs_inserted` | what the sync pass inserted ([`syncs_json`]): {`dependencies`, `set_flags`, `wait_flags`, `barriers`, `barrier_alls`, `merged`, `fallbacks`}, all 0 for `sync: manual` |
//! | `cross_sync` | the cross-core hand-offs `sync: auto` inserted in a mixed kernel ([`planner::Handoff`]): [{`tensor`, `producer` and `consumer` {`core`, `ops`}, `flag`, `reverse` (`null` or {`flag`, `depth`}), `count`}]; `[]` when it inserted none |
//! | `best_level` | `null`, or with `run --level best` {`level` (the one reported), `levels`: [{`level`, `total_cycles`, `overflow`}]} |
//! | `warnings` | [{`kind`, `tensor`, `range`, `message`}]: `unwritten` and `unread_rows` (work the run dropped in gm tensor `tensor`, its first missing `range` {`elements`, `bytes`, `rows`, `from`, `to`}; `sim::coverage`), `plan` (the planner's warnings), `serialised` (a multi-buffer the sync pass serialised), `dominant_wait` (the busiest pipe waits ≥ 20 % of the run on one flag, more than on everything else), `slower_level` (`--level best`) |
//! | `profile` | `null`, or with `--profile` the per-op rows ([`profile_json`]): `op`, `name`, `line`, `column`, `kind`, `pipe`, `count`, `cost`, `busy`, `issue`, `stalled`, `stalls` (every stall with the op), `group`, `pipe_stalled`, `pipe_stalls` (its pipe's), `s_held`, `s_stalls` (S's waits to send it) |
//! | `paced_by` | the summary's "paced by" line (a string), or `null` with `--no-critical-path` |
//! | `critical_path` | `null`, or with `--critical-path` the run's critical path ([`critical_json`]): {`total_cycles`, `summary`, `steps`, `by_pipe`, `by_cause`, `by_core`, `ops`, `waits`} |
//! | `roofline` | `null`, or with `--roofline` the run against its config's bounds ([`roofline_json`]): {`total_cycles`, `nearest`, `rows`: [{`resource`, `unit`, `core_type`, `cores`, `work`, `achieved_per_cycle`, `peak_per_cycle`, `utilisation`, `min_cycles`, `busiest_core_utilisation`}]} |
//! | `plan` | the plan document ([`plan_json`]) |
//! | `launch` | the launch ([`launch_json`]): `blocks`, `parts` (a mixed kernel's `{core, plan}` per part, else `null`), `by_type` (per core type: `cores`, `end_cycle` and per pipe `busy`/`stalled` as {`min`, `max`, `mean`}), `cores` (every core: `name`, `block`, `type`, `index`, `end_cycle`, `pipes`, `overlap_cycles`, `bank_conflict_cycles`) |
//!
//! For every pipe, busy + Σ stalls + starved + idle = `total_cycles`.
//!
//! Plan document ([`plan_json`]): `schema`, `kernel`, `config`, `level`, `liveness`, `scopes`
//! {scope: {`capacity`, `required`, `used`, `peak_live`, `mode`}}, `buffers` {name: {`scope`,
//! `bytes`, `offsets`, `level`}}, `warnings`. A mixed kernel's ([`kernel_plan_json`]):
//! `schema`, `kernel`, `level`, `liveness`, `parts` [{`core`, `plan`: the part's plan
//! document}]; a single-type kernel's is the plan document.
//!
//! Comparison entry ([`compare_entry`]), one shape for every level: `schema`, `level`,
//! `overflow` (`null`, or HIVM's message when the level's plan overflowed), then the run
//! document's keys ([`RUN_KEYS`]): the level's run document, or for an overflowed level the
//! program's `kernel`, `config`, `sync`, `race_check` `false` and `null` for the rest.
//!
//! Check document ([`check_json`]): `schema`, `file`, `ok`, `kernel`, `ops`, `buffers`
//! (`null` when the program did not load; a mixed kernel's: both parts'), `problems`
//! [{`severity`, `file`, `line`, `column`, `path`, `message`, `help`}], `plan` (the kernel's
//! plan document; `null` when it did not plan).

mod background;
mod calibrate;
mod check_doc;
mod compare;
mod critical;
mod diff;
mod explain;
mod html;
mod launch;
mod mlir;
mod plan_doc;
mod profile;
mod program_yaml;
mod roofline;
mod run_report;
mod sweep;
pub mod table;
mod trace;
mod untaken;

pub use background::Background;
pub use calibrate::{
    calibration_json, calibration_text, BusyReport, Calibration, CaseKind, CaseReport, Outcome,
    Summary, Verdict,
};
pub use check_doc::{check_json, diagnostic_json, Check};
pub use compare::{
    compare_entry, compare_json, compare_levels, compare_text, kernel_compare_text, reused_buffers,
    CompareLevel, CompareOutcome,
};
pub use critical::{critical_html, critical_json, critical_summary, critical_text, pace_setter};
pub use diff::{
    diff, diff_json, diff_text, read_run_document, BufferChange, BufferDoc, BufferState, CoreDoc,
    CriticalChange, CriticalDoc, Diff, DiffSide, Figure, OpChange, OpDoc, OpFigures, PipeChange,
    PipeDoc, PlanDoc, RunDoc, Total, TypeChange, NO_CRITICAL_PATH, OPS_SHOWN, REUSE_PAIRS,
};
pub use explain::plan_explain;
pub use html::{
    calibration_html, compare_html, diff_html, run_html, slot_rects, sweep_html, Arrow, Timeline,
    TimelineSpec,
};
pub use launch::{core_name, core_view, launch_json, launch_text};
pub use mlir::{hivm_space, kernel_mlir, MlirPart};
pub use plan_doc::{
    kernel_plan_json, kernel_plan_text, kernel_plan_yaml, plan_json, plan_text, plan_yaml, PlanPart,
};
pub use profile::{profile_html, profile_json, profile_text, OpGroup, ProfileRow, Profiler};
pub use program_yaml::{kernel_yaml, program_yaml};
pub use roofline::{roofline_json, roofline_text, Bound, Roofline, RooflineReport, RooflineRow};
pub use run_report::{
    deadlock_text, finding_text, hazard_json, op_ref, paced_by, run_json, run_text, syncs_json,
    syncs_summary, warnings, warnings_json, warnings_text, BestLevel, GapRange, PathView, Run,
    Warning, RUN_KEYS,
};
pub use sweep::{short_name, sweep_summary_text, Best, PipeCycles, Pivot, SweepTable, SweepView};
pub use trace::{live_bytes, Trace, TraceCut, TracePart, TraceWindow, DEFAULT_TRACE_MAX_BYTES};

/// The version of the layout of every JSON and YAML document npusim prints (run, plan, compare
/// entry, check): the value of their first key, `schema`. It changes when a change could break a
/// reader: a key removed or renamed, a value whose type, unit or meaning changes, a document
/// whose shape changes. Added keys, and new values of open sets (stall reasons, warning and
/// finding kinds), do not change it (docs/json.md, "Stability").
pub const SCHEMA: u32 = 1;

/// `a / b` as a percentage with one decimal (`0.0` when `b` is 0).
pub(crate) fn percent(a: u64, b: u64) -> String {
    if b == 0 {
        return "0.0".into();
    }
    format!("{:.1}", a as f64 * 100.0 / b as f64)
}

/// A ratio rounded to 4 decimals, for JSON.
pub(crate) fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
pub(crate) mod testutil {
    //! A hand-built double-buffered vec_add: program, config, plan and run result.

    use planner::{BufferPlan, Interval, LivenessMode, PlacedBy, Plan, ScopeMode, ScopePlan};
    use sim::config::*;
    use sim::engine::{PipeStats, Stall};
    use sim::expr::Expr;
    use sim::program::*;
    use sim::*;

    pub fn config() -> Config {
        Config {
            name: "ascend910b".into(),
            description: "test".into(),
            clock_mhz: 1800,
            cores: vec![CoreConfig {
                name: "aiv".into(),
                scopes: vec![ScopeConfig {
                    space: Space::Ub,
                    bytes: 196608,
                    align: 32,
                    plan_align: 32,
                }],
                pipes: vec![Pipe::S, Pipe::V, Pipe::Mte2, Pipe::Mte3],
            }],
            queue_depth: 32,
            scalar: ScalarConfig {
                issue_cycles: 1,
                loop_cycles: 2,
                branch_cycles: 1,
                gm_latency: None,
            },
            sync: SyncConfig {
                event_ids: 8,
                flag_latency: 2,
            },
            paths: vec![],
            vector: VectorConfig {
                repeat_bytes: 256,
                block_bytes: None,
                ub_banks: None,
                default: VecCost {
                    cycles_per_repeat: 2,
                    startup: 10,
                },
                ops: [None; VecOp::COUNT],
            },
            cube: CubeConfig {
                fractal_m: 16,
                fractal_n: 16,
                fractal_k_bytes: 32,
                startup: 21,
            },
            memory: None,
            chip: None,
            cross_core: None,
            launch_cost: None,
        }
    }

    fn buffer(name: &str) -> Buffer {
        Buffer {
            name: name.into(),
            scope: Space::Ub,
            shape: vec![16384],
            dtype: Dtype::F16,
            elements: 16384,
            bytes: 32768,
            multi: 2,
            inplace: true,
            unique: false,
            share: None,
            preload: false,
            at: None,
            path: format!("body[0].for.buffers.{name}"),
            declared_in: Some(OpId::new(0)),
            loop_parent: Some(OpId::new(0)),
        }
    }

    fn op(kind: OpKind, path: &str, pipe: Option<Pipe>) -> Op {
        Op {
            kind,
            path: path.into(),
            loc: Default::default(),
            pipe,
            loop_parent: Some(OpId::new(0)),
            parent: Some(OpId::new(0)),
        }
    }

    pub fn program_db() -> Program {
        let c = Expr::Const;
        let mut ops = vec![Op {
            kind: OpKind::For(ForLoop {
                var: VarId::new(0),
                from: c(0),
                to: c(16),
                step: c(1),
                body: Block {
                    ops: (1..=5).map(OpId::new).collect(),
                    buffers: (0..3).map(BufferId::new).collect(),
                    views: vec![],
                },
            }),
            path: "body[0]".into(),
            loc: Default::default(),
            pipe: Some(Pipe::S),
            loop_parent: None,
            parent: None,
        }];
        ops.push(op(
            OpKind::Scalar { cycles: c(1) },
            "body[0].for.body[1]",
            Some(Pipe::S),
        ));
        ops.push(op(
            OpKind::Scalar { cycles: c(1) },
            "body[0].for.body[2]",
            Some(Pipe::S),
        ));
        ops.push(op(
            OpKind::SetFlag {
                src: Pipe::Mte2,
                dst: Pipe::V,
                id: c(0),
            },
            "body[0].for.body[3]",
            Some(Pipe::Mte2),
        ));
        ops.push(op(
            OpKind::WaitFlag {
                src: Pipe::Mte2,
                dst: Pipe::V,
                id: c(0),
            },
            "body[0].for.body[4]",
            Some(Pipe::V),
        ));
        ops.push(op(
            OpKind::SetFlag {
                src: Pipe::V,
                dst: Pipe::Mte3,
                id: c(1),
            },
            "body[0].for.body[5]",
            Some(Pipe::V),
        ));
        Program {
            kernel: "vec_add_db".into(),
            file: String::new(),
            texts: Default::default(),
            core: CoreId::new(0),
            sync: SyncMode::Manual,
            params: vec![("tiles".into(), 16), ("n".into(), 16384)],
            launch: sim::program::Launch::SINGLE,
            tensors: vec![],
            buffers: vec![buffer("xb"), buffer("yb"), buffer("zb")],
            views: vec![],
            vars: vec![Var {
                name: "t".into(),
                loop_op: Some(OpId::new(0)),
            }],
            ops,
            body: Block {
                ops: vec![OpId::new(0)],
                buffers: vec![],
                views: vec![],
            },
        }
    }

    pub fn plan_db() -> Plan {
        let b = |i: usize, offsets: [u64; 2]| BufferPlan {
            buffer: BufferId::new(i),
            scope: Space::Ub,
            bytes: 32768,
            offsets: offsets.to_vec(),
            placed_by: PlacedBy::Sequential,
            live: vec![Interval::new(1, 14)],
        };
        Plan {
            kernel: "vec_add_db".into(),
            config: "ascend910b/aiv".into(),
            level: 2,
            liveness: LivenessMode::Precise,
            scopes: vec![ScopePlan {
                space: Space::Ub,
                capacity: 196608,
                align: 32,
                required: 196608,
                used: 196608,
                peak_live: 196608,
                mode: ScopeMode::Sequential,
            }],
            buffers: vec![
                b(0, [0, 98304]),
                b(1, [32768, 131072]),
                b(2, [65536, 163840]),
            ],
            warnings: vec![],
        }
    }

    pub fn result_clean() -> RunResult {
        // the one core of the run
        let core = sim::engine::CoreRun {
            block: 0,
            core: sim::CoreId(0),
            index: 0,
            end_cycle: 1000,
            pipes: vec![
                PipeStats {
                    pipe: Pipe::S,
                    instructions: 40,
                    busy: 120,
                    stalls: vec![],
                    starved: 0,
                    idle: 880,
                },
                PipeStats {
                    pipe: Pipe::V,
                    instructions: 16,
                    busy: 256,
                    stalls: vec![
                        (
                            Stall::WaitFlag {
                                src: Pipe::Mte2,
                                id: 0,
                            },
                            150,
                        ),
                        (
                            Stall::WaitFlag {
                                src: Pipe::Mte2,
                                id: 1,
                            },
                            100,
                        ),
                    ],
                    starved: 94,
                    idle: 400,
                },
                PipeStats {
                    pipe: Pipe::Mte2,
                    instructions: 32,
                    busy: 700,
                    stalls: vec![],
                    starved: 100,
                    idle: 200,
                },
                PipeStats {
                    pipe: Pipe::Mte3,
                    instructions: 16,
                    busy: 300,
                    stalls: vec![(
                        Stall::WaitFlag {
                            src: Pipe::V,
                            id: 0,
                        },
                        200,
                    )],
                    starved: 300,
                    idle: 200,
                },
            ],
            overlap_cycles: 450,
            bank_conflict_cycles: None,
        };
        RunResult {
            total_cycles: core.end_cycle,
            cores: vec![core],
            findings: vec![],
            deadlock: None,
            stopped: None,
            memory: None,
            launch_cycles: 0,
        }
    }

    #[test]
    fn fixtures_are_consistent() {
        assert_eq!(result_clean().check_accounting(), Ok(()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_and_rounding() {
        assert_eq!(percent(1, 3), "33.3");
        assert_eq!(percent(5, 0), "0.0");
        assert_eq!(round4(2.0 / 3.0), 0.6667);
    }
}
