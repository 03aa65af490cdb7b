//! `program`: arbitrary bytes as a kernel program.
//!
//! bytes → UTF-8 (invalid input is skipped) → `sim::load_program` against the built-in default
//! config; a program written for another core type (the golden tests' core `t`, the HIVM
//! conformance core `mix`) is loaded against the config it was written for instead, so the seeds
//! from `sim/tests/golden` and `planner/tests/conformance` run too. A program that loads is
//! planned at reuse levels 2, 1 and 0 with the independent validator, planned once more with
//! the exact placement fallback, then simulated with the race checker and the validator on.
//!
//! Crashes are panics, hangs (-timeout), memory blow-ups (-rss_limit_mb) and the pipeline's own
//! "npusim bug" failures (`Failure::is_internal`: a plan that fails its validator, a run that
//! breaks the accounting identity), which this target turns into panics.
//!
//! The run guard: the engine runs a loaded program to completion, so a program with a loop of
//! a billion trips would run for minutes and be reported as a hang, over and over. Until the
//! engine has run limits of its own (the lead is adding them; delete `dynamic_ops` then), this
//! target runs only programs whose dynamic op count, bounded statically from every loop's trip
//! range (`sim::footprint::var_ranges`), is at most `MAX_DYNAMIC_OPS`, and skips programs with
//! a loop it cannot bound. Loading and planning do not depend on trip counts and always run.

#![no_main]

#[path = "edge_numbers.rs"]
mod edge_numbers;

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use pipeline::{Failure, Options};
use planner::{PlacementMode, PlanOptions};
use sim::program::{Block, OpKind};
use sim::{Config, Program};
use std::sync::OnceLock;
use std::time::Duration;

/// Programs that may execute more ops than this (loop bodies counted once per trip) are not run.
const MAX_DYNAMIC_OPS: u128 = 10_000;

/// The configs a program is tried against, in order: the built-in default first.
fn configs() -> &'static [Config] {
    static CONFIGS: OnceLock<Vec<Config>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let default = sim::builtin::builtin(sim::builtin::DEFAULT).expect("the default config");
        [
            ("default.yaml", default),
            (
                "test_config.yaml",
                include_str!("../../sim/tests/golden/test_config.yaml"),
            ),
            (
                "config.yaml",
                include_str!("../../planner/tests/conformance/config.yaml"),
            ),
        ]
        .iter()
        .map(|(name, text)| sim::load_config(text, name).expect("a shipped config loads"))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut loaded = None;
    for config in configs() {
        if let Ok(program) = sim::load_program(text, "fuzz.yaml", config, &[]) {
            loaded = Some((program, config));
            break;
        }
    }
    let Some((program, config)) = loaded else {
        if verbose() {
            for config in configs() {
                if let Err(e) = sim::load_program(text, "fuzz.yaml", config, &[]) {
                    eprintln!("not loaded against {}: {e}", config.name);
                }
            }
        }
        return;
    };
    for level in [2, 1, 0] {
        let opts = PlanOptions {
            max_level: level,
            ..Default::default()
        };
        check(pipeline::plan(&program, config, &opts, true).map(drop));
    }
    let exact = PlanOptions {
        placement: PlacementMode::Exact,
        exact_time_limit: Duration::from_millis(20),
        ..Default::default()
    };
    check(pipeline::plan(&program, config, &exact, true).map(drop));

    let ops = dynamic_ops(&program);
    if ops.is_none_or(|n| n > MAX_DYNAMIC_OPS) {
        if verbose() {
            eprintln!("not run: dynamic op bound {ops:?} (limit {MAX_DYNAMIC_OPS})");
        }
        return;
    }
    let opts = Options {
        validate: true,
        ..Default::default()
    };
    let r = pipeline::simulate(&program, config, &opts);
    if verbose() {
        match &r {
            Ok(s) => eprintln!("ran on {}: {} cycles", config.name, s.result.total_cycles),
            Err(e) => eprintln!("stopped on {}: {e}", config.name),
        }
    }
    check(r.map(drop));
});

/// `NPUSIM_FUZZ_VERBOSE=1`: say what happened to each input (for triage; slow).
fn verbose() -> bool {
    static VERBOSE: OnceLock<bool> = OnceLock::new();
    *VERBOSE.get_or_init(|| std::env::var_os("NPUSIM_FUZZ_VERBOSE").is_some_and(|v| v == "1"))
}

/// Bad input may fail; an npusim bug may not.
fn check(r: Result<(), Failure>) {
    if let Err(e) = r {
        if e.is_internal() {
            panic!("internal failure (an npusim bug): {e}");
        }
    }
}

/// An upper bound on the ops the program executes (every op once per trip of its enclosing
/// loops, both branches of an `if`), or `None` when some loop's trip count cannot be bounded.
fn dynamic_ops(program: &Program) -> Option<u128> {
    let ranges = sim::footprint::var_ranges(program);
    block_ops(program, &program.body, &ranges)
}

fn block_ops(program: &Program, block: &Block, ranges: &[Option<(i64, i64)>]) -> Option<u128> {
    let mut total: u128 = 0;
    for &id in &block.ops {
        let n = match &program.op(id).kind {
            OpKind::For(l) => {
                let (from_lo, _) = l.from.bounds(ranges)?;
                let (_, to_hi) = l.to.bounds(ranges)?;
                let (step_lo, _) = l.step.bounds(ranges)?;
                // a step that can be 0 or negative is a run-time error, not a long run; the
                // smallest positive step gives the most trips
                let step = step_lo.max(1) as i128;
                let span = (to_hi as i128 - from_lo as i128).max(0);
                let trips = ((span + step - 1) / step) as u128;
                trips
                    .saturating_mul(1 + block_ops(program, &l.body, ranges)?)
                    .saturating_add(1)
            }
            OpKind::While { trips, body, .. } => {
                let (_, hi) = trips.bounds(ranges)?;
                (hi.max(0) as u128)
                    .saturating_mul(1 + block_ops(program, body, ranges)?)
                    .saturating_add(1)
            }
            OpKind::If { then, els, .. } => {
                let e = match els {
                    Some(b) => block_ops(program, b, ranges)?,
                    None => 0,
                };
                1 + block_ops(program, then, ranges)? + e
            }
            _ => 1,
        };
        // clamp well above the limit so no sum or product can overflow
        total = (total + n.min(1 << 64)).min(1 << 64);
    }
    Some(total)
}

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    edge_numbers::mutate(data, size, max_size, seed)
});
