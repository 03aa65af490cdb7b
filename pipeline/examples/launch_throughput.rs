//! Engine throughput on a launch: `programs/matmul_add.yaml` (CATLASS's matmul + epilogue: a cube
//! core and two vector cores per block, cross-core flags inserted by `sync: auto`) on 24 blocks,
//! 72 cores, of the built-in 910B config, with `tiles` row tiles (default 24 000: 1 000 per block).
//! Plans and synchronises every part first (not timed), then times one run of the launch without
//! the race checker, and prints the dynamic instructions of all cores, the wall time,
//! instructions per second and the peak resident memory (VmHWM).
//!
//! ```text
//! cargo run --release -p pipeline --example launch_throughput -- 24000
//! cargo run --release -p pipeline --example launch_throughput -- 2400   # memory must match
//! ```

use std::time::Instant;

// the allocator of the npusim binary, so that the figures are the binary's
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let tiles: i64 = std::env::args()
        .nth(1)
        .map(|s| s.replace('_', "").parse().expect("a tile count"))
        .unwrap_or(24_000);
    let blocks: u32 = std::env::args()
        .nth(2)
        .map(|s| s.parse().expect("a block count"))
        .unwrap_or(24);
    let tm: i64 = std::env::args()
        .nth(3)
        .map(|s| s.parse().expect("rows per tile"))
        .unwrap_or(16);
    let config = sim::load_config(
        sim::builtin::builtin(sim::builtin::DEFAULT).expect("built in"),
        "<built-in>",
    )
    .expect("the built-in config loads");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("programs/matmul_add.yaml")).expect("shipped");
    let kernel = sim::load_kernel(
        &text,
        "matmul_add.yaml",
        &config,
        &[("tiles".to_string(), tiles), ("tm".to_string(), tm)],
        Some(blocks),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    let parts = pipeline::prepare_kernel(&kernel, &config, &pipeline::Options::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .parts;
    let prepare = t0.elapsed().as_secs_f64();
    let addresses: Vec<sim::Addresses> = parts.iter().map(|p| p.planned.plan.addresses()).collect();
    let launch: Vec<(&sim::Program, &sim::Addresses)> =
        parts.iter().map(|p| &p.program).zip(&addresses).collect();
    let t0 = Instant::now();
    let result = sim::engine::run_launch(&launch, &config, Default::default(), &mut ())
        .expect("the launch runs");
    let secs = t0.elapsed().as_secs_f64();
    assert!(result.findings.is_empty() && result.deadlock.is_none());
    let instructions = result.instructions();
    println!(
        "tiles {tiles} of {tm} rows, blocks {blocks} cores {} instructions {instructions} cycles {} \
         prepare {prepare:.3} s run {secs:.3} s rate {:.2} M instr/s peak_rss {} KiB",
        result.cores.len(),
        result.total_cycles,
        instructions as f64 / secs / 1e6,
        peak_rss_kib().unwrap_or(0)
    );
}
