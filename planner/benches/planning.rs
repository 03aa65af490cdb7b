//! Planning time (`plan_program`, end to end and per phase) on generated vector-core programs of
//! 100, 1,000 and 10,000 buffers: stages of tiled loops, each a load → vector ops → store chain
//! over multi-buffers, with accumulators that live across a window of stages. UB is reduced so
//! the scope is planned by first fit with reuse; the sequential case (everything fits) is
//! measured too, and the sync pass on the reuse plan. Figures are recorded in BENCHMARKS.md.
//!
//! `cargo bench -p planner --bench planning`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use planner::{
    inplace_pairs, liveness, place, plan_program, synchronize, LivenessMode, PlanOptions, ScopeMode,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sim::{Config, Program, Space};
use std::fmt::Write;

const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// A program with about `n` UB buffers. Stages are grouped into outer tile loops; each outer
/// iteration initialises a few accumulators that the stages of its window read, so lifetimes
/// overlap across stages and not only within one.
fn program(n: usize, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut s = String::from(
        "kernel: bench\ncore: aiv\nsync: auto\ngm:\n  x: { shape: [16, 2048], dtype: f16 }\n  y: { shape: [16, 2048], dtype: f16 }\nbody:\n",
    );
    let (mut bufs, mut stage, mut outer) = (0usize, 0usize, 0usize);
    while bufs < n {
        // an outer tile loop with its accumulators and a window of stages
        let acc: Vec<String> = (0..2).map(|i| format!("a{outer}_{i}")).collect();
        let _ = writeln!(s, "  - for: {{ var: o{outer}, to: 4 }}\n    buffers:");
        for a in &acc {
            let _ = writeln!(s, "      {a}: {{ scope: ub, shape: [256], dtype: f16 }}");
        }
        s += "    body:\n";
        for a in &acc {
            let _ = writeln!(s, "      - vdup: {{ scalar: 0, out: {a} }}");
        }
        bufs += acc.len();
        for _ in 0..rng.gen_range(4..10) {
            if bufs >= n {
                break;
            }
            let len = [256, 512, 1024, 2048][rng.gen_range(0..4)];
            let k = rng.gen_range(3..9).min(n - bufs).max(2);
            let names: Vec<String> = (0..k).map(|i| format!("s{stage}_{i}")).collect();
            let v = format!("t{stage}");
            let _ = writeln!(s, "      - for: {{ var: {v}, to: 8 }}\n        buffers:");
            for (i, b) in names.iter().enumerate() {
                // the loaded and the stored buffer are double-buffered, as in a real pipeline
                let multi = if i == 0 || i == k - 1 {
                    ", multi: 2"
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "          {b}: {{ scope: ub, shape: [{len}], dtype: f16{multi} }}"
                );
            }
            s += "        body:\n";
            let _ = writeln!(
                s,
                "          - load: {{ src: \"x[{v} % 16, 0:{len}]\", dst: {} }}",
                names[0]
            );
            for i in 1..k {
                let a = &names[i - 1];
                let b = &names[rng.gen_range(0..i)];
                let op = match rng.gen_range(0..4) {
                    0 => format!("vexp: {{ ins: [{a}], out: {} }}", names[i]),
                    1 => format!("vmuls: {{ ins: [{a}], out: {}, scalar: 3 }}", names[i]),
                    _ => format!("vadd: {{ ins: [{a}, {b}], out: {} }}", names[i]),
                };
                let _ = writeln!(s, "          - {op}");
            }
            // fold the stage's result into an accumulator of the outer loop
            let acc_in = &acc[rng.gen_range(0..acc.len())];
            let _ = writeln!(
                s,
                "          - vadd: {{ ins: [{acc_in}, \"{}[0:256]\"], out: {acc_in} }}",
                names[k - 1]
            );
            let _ = writeln!(
                s,
                "          - store: {{ src: {}, dst: \"y[{v} % 16, 0:{len}]\" }}",
                names[k - 1]
            );
            bufs += k;
            stage += 1;
        }
        for a in &acc {
            let _ = writeln!(s, "      - store: {{ src: \"{a}\", dst: \"y[0, 0:256]\" }}");
        }
        outer += 1;
    }
    s
}

fn config() -> Config {
    sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap()
}

/// The program, and options for reuse mode (UB a fraction of what no reuse needs) and for
/// sequential mode (UB as large as that).
fn setup(n: usize) -> (Program, PlanOptions, PlanOptions) {
    let config = config();
    let text = program(n, 42 + n as u64);
    let p = sim::load_program(&text, "bench.yaml", &config, &[]).unwrap();
    let big = PlanOptions {
        capacities: vec![(Space::Ub, u64::MAX / 4)],
        ..Default::default()
    };
    let planned = plan_program(&p, &config, &big).unwrap();
    let ub = planned.plan.scope(Space::Ub).unwrap();
    assert_eq!(ub.mode, ScopeMode::Sequential);
    // room for twice the peak, and never more than a tenth of the running sum: first fit
    let cap = (ub.peak_live * 2).min(ub.required / 10).max(ub.peak_live) / 32 * 32 + 32;
    let reuse = PlanOptions {
        capacities: vec![(Space::Ub, cap)],
        ..Default::default()
    };
    let planned = plan_program(&p, &config, &reuse).unwrap_or_else(|e| panic!("n={n}: {e}"));
    assert_eq!(
        planned.plan.scope(Space::Ub).unwrap().mode,
        ScopeMode::Reuse
    );
    (p, reuse, big)
}

fn bench(c: &mut Criterion) {
    let config = config();
    let mut g = c.benchmark_group("plan_program");
    g.sample_size(10);
    for n in SIZES {
        let (p, reuse, seq) = setup(n);
        g.bench_with_input(BenchmarkId::new("reuse", n), &n, |b, _| {
            b.iter(|| plan_program(&p, &config, &reuse).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("sequential", n), &n, |b, _| {
            b.iter(|| plan_program(&p, &config, &seq).unwrap())
        });
    }
    g.finish();

    // the phases of the reuse case
    let mut g = c.benchmark_group("phase");
    g.sample_size(10);
    for n in SIZES {
        let (p, reuse, _) = setup(n);
        let live = liveness(&p, LivenessMode::Precise).unwrap();
        let inplace = inplace_pairs(&p, &live);
        let pairs: Vec<_> = inplace.pairs.iter().map(|q| (q.gen, q.kill)).collect();
        let touch: Vec<_> = inplace.touch.iter().map(|q| (q.gen, q.kill)).collect();
        g.bench_with_input(BenchmarkId::new("liveness", n), &n, |b, _| {
            b.iter(|| liveness(&p, LivenessMode::Precise).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("inplace_pairs", n), &n, |b, _| {
            b.iter(|| inplace_pairs(&p, &live))
        });
        g.bench_with_input(BenchmarkId::new("place", n), &n, |b, _| {
            b.iter(|| place(&p, &config, &live, &pairs, &touch, &reuse).unwrap())
        });
    }
    g.finish();

    // the sync pass on the reuse plan (what `run` does after planning a `sync: auto` program)
    let mut g = c.benchmark_group("synchronize");
    g.sample_size(10);
    for n in SIZES {
        let (p, reuse, _) = setup(n);
        let plan = plan_program(&p, &config, &reuse).unwrap().plan;
        g.bench_with_input(BenchmarkId::new("reuse", n), &n, |b, _| {
            b.iter(|| synchronize(&p, &config, &plan))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
