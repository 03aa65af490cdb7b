//! `program`: arbitrary bytes as a kernel program.
//!
//! bytes → UTF-8 (invalid input is skipped) → `sim::load_kernel` against the built-in default
//! config, as the command line loads it: a single-type program, a launch of many blocks, or a
//! mixed kernel with `aic:` and `aiv:` parts; a program written for another core type (the
//! golden tests' core `t`, the HIVM conformance core `mix`) is loaded against the config it was
//! written for instead, so the seeds from `sim/tests/golden` and `planner/tests/conformance` run
//! too. Every part of a kernel that loads is planned at reuse levels 2, 1 and 0 with the
//! independent validator, planned once more with the exact placement fallback, then the whole
//! launch (every part, every core) is simulated with the race checker and the validator on.
//!
//! Crashes are panics, hangs (-timeout), memory blow-ups (-rss_limit_mb) and the pipeline's own
//! "npusim bug" failures (`Failure::is_internal`: a plan that fails its validator, a run that
//! breaks the accounting identity), which this target turns into panics.
//!
//! Runs are bounded by the engine's own limits (`MAX_INSTRUCTIONS`, `MAX_CYCLES`): a program
//! with a loop of a billion trips stops with `stopped` set, as `npusim run --max-instructions`
//! does, instead of being reported as a hang.

#![no_main]

#[path = "edge_numbers.rs"]
mod edge_numbers;

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use pipeline::{Failure, Options};
use planner::{PlacementMode, PlanOptions};
use sim::engine::Limits;
use sim::Config;
use std::sync::OnceLock;
use std::time::Duration;

/// The engine's limits for one run: far below the 10 s libFuzzer timeout.
const MAX_INSTRUCTIONS: u64 = 20_000;
const MAX_CYCLES: u64 = 1 << 40;

/// The configs a program is tried against, in order: the built-in default first, and last the
/// default on the largest chip the loader accepts (`MAX_BLOCKS` AI cores of `MAX_AIV_PER_AIC`
/// vector cores each), so a launch of more blocks than the 910B has runs too, up to the limits.
fn configs() -> &'static [Config] {
    static CONFIGS: OnceLock<Vec<Config>> = OnceLock::new();
    static MAX_CHIP: OnceLock<String> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let default = sim::builtin::builtin(sim::builtin::DEFAULT).expect("the default config");
        let max_chip = MAX_CHIP.get_or_init(|| {
            let text = default
                .replacen("  aic: 24 ", &format!("  aic: {} ", sim::limits::MAX_BLOCKS), 1)
                .replacen(
                    "  aiv_per_aic: 2 ",
                    &format!("  aiv_per_aic: {} ", sim::limits::MAX_AIV_PER_AIC),
                    1,
                );
            assert_ne!(text, default, "the default config's chip lines moved");
            text
        });
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
            ("max_chip.yaml", max_chip.as_str()),
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
        if let Ok(kernel) = sim::load_kernel(text, "fuzz.yaml", config, &[], None) {
            loaded = Some((kernel, config));
            break;
        }
    }
    let Some((kernel, config)) = loaded else {
        if verbose() {
            for config in configs() {
                if let Err(e) = sim::load_kernel(text, "fuzz.yaml", config, &[], None) {
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
        check(plan(&kernel, config, &opts));
    }
    let exact = PlanOptions {
        placement: PlacementMode::Exact,
        exact_time_limit: Duration::from_millis(20),
        ..Default::default()
    };
    check(plan(&kernel, config, &exact));

    let opts = Options {
        validate: true,
        limits: Limits {
            max_cycles: MAX_CYCLES,
            max_instructions: MAX_INSTRUCTIONS,
            ..Limits::default()
        },
        ..Default::default()
    };
    let r = pipeline::simulate_kernel(&kernel, config, &opts);
    if verbose() {
        match &r {
            Ok(s) => eprintln!(
                "ran on {}: {} cycles, {} cores",
                config.name,
                s.result.total_cycles,
                s.result.cores.len()
            ),
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

/// Every part of `kernel` planned with the validator, as `npusim plan` plans it.
fn plan(kernel: &sim::Kernel, config: &Config, opts: &PlanOptions) -> Result<(), Failure> {
    pipeline::plan_kernel(kernel, config, opts, true)
        .map(drop)
        .map_err(|e| e.failure)
}

/// Bad input may fail; an npusim bug may not.
fn check(r: Result<(), Failure>) {
    if let Err(e) = r {
        if e.is_internal() {
            panic!("internal failure (an npusim bug): {e}");
        }
    }
}

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    edge_numbers::mutate(data, size, max_size, seed)
});
