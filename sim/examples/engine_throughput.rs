//! Engine throughput: runs a double-buffered vector add (the flags Ascend C's queues generate)
//! big enough to execute at least N dynamic instructions, and prints the instruction count,
//! the wall time, instructions per second and the peak resident memory (VmHWM).
//!
//! ```text
//! cargo run --release -p sim --example engine_throughput -- 10000000
//! ```
//!
//! N defaults to 10 000 000 and accepts a `k`/`M` suffix (`1M`). Memory must not depend on N:
//! compare a 1M and a 10M run.
//!
//! The refinements (docs/timing.md: vector blocks, UB banks, the gm memory system and
//! `scalar.gm_latency`) are as the shipped config has them, unless `--refinements off` turns
//! them all off or `--refinements on` turns on every one the config lacks, with these values:
//! `vector.block_bytes: 32`; `ub_banks: { groups: 16, row_bytes: 32, bank_bytes: 4096 }`;
//! `memory: { line_bytes: 512, l2_bytes: 192 MiB, l2_read_bytes_per_cycle: 110,
//! l2_write_bytes_per_cycle: 86, l2_chip_bytes_per_cycle: 3888, l2_latency: 200,
//! hbm_bytes_per_cycle: 32, hbm_read_latency: 1400 }` (an estimate of the 910B's numbers); `scalar.gm_latency: 200`. The finer switches
//! `--banks` (vector blocks and UB banks) and `--memory` (the memory system and
//! `scalar.gm_latency`) turn on just those, after `--refinements`. The config is changed after
//! parsing, so the shipped file may already have any of them. With UB banks on, every slot of
//! every buffer is placed side by side, so every vadd takes its bank cost from its slot
//! combination.
//!
//! ```text
//! cargo run --release -p sim --example engine_throughput -- 10M --refinements off
//! cargo run --release -p sim --example engine_throughput -- 10M --refinements on
//! ```
//!
//! With `--race` it also runs the same kernel under the race checker (every buffer slot side
//! by side) and prints that rate and the checker's overhead (time with / time without).

use std::time::Instant;

const CONFIG: &str = "ascend910b";

fn kernel(tiles: u64) -> String {
    format!(
        r#"
kernel: vec_add_db_throughput
core: aiv
sync: manual
params: {{ tiles: {tiles}, n: 4096 }}
gm:
  x: {{ shape: [tiles, n], dtype: f16 }}
  y: {{ shape: [tiles, n], dtype: f16 }}
  z: {{ shape: [tiles, n], dtype: f16 }}
body:
  - for: {{ var: t, to: tiles }}
    buffers:
      xb: {{ scope: ub, shape: [n], dtype: f16, multi: 2 }}
      yb: {{ scope: ub, shape: [n], dtype: f16, multi: 2 }}
      zb: {{ scope: ub, shape: [n], dtype: f16, multi: 2 }}
    body:
      - if: "t >= 2"
        then:
          - wait_flag: {{ src: v, dst: mte2, id: "t % 2" }}
      - load: {{ src: "x[t]", dst: xb }}
      - load: {{ src: "y[t]", dst: yb }}
      - set_flag: {{ src: mte2, dst: v, id: "t % 2" }}
      - wait_flag: {{ src: mte2, dst: v, id: "t % 2" }}
      - if: "t >= 2"
        then:
          - wait_flag: {{ src: mte3, dst: v, id: "t % 2" }}
      - vadd: {{ ins: [xb, yb], out: zb }}
      - set_flag: {{ src: v, dst: mte2, id: "t % 2" }}
      - set_flag: {{ src: v, dst: mte3, id: "t % 2" }}
      - wait_flag: {{ src: v, dst: mte3, id: "t % 2" }}
      - store: {{ src: zb, dst: "z[t]" }}
      - set_flag: {{ src: mte3, dst: v, id: "t % 2" }}
  - for: {{ var: d, to: "min(tiles, 2)" }}
    body:
      - wait_flag: {{ src: v, dst: mte2, id: d }}
      - wait_flag: {{ src: mte3, dst: v, id: d }}
"#
    )
}

fn parse_count(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1_000),
        'm' | 'M' => (&s[..s.len() - 1], 1_000_000),
        _ => (&s[..], 1),
    };
    num.parse::<u64>().ok().map(|n| n * mul)
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn program(config: &sim::Config, tiles: u64) -> sim::Program {
    let text = kernel(tiles);
    sim::load_program(&text, "throughput.yaml", config, &[])
        .unwrap_or_else(|e| panic!("the generated kernel must load: {e}"))
}

fn run(config: &sim::Config, tiles: u64) -> (sim::RunResult, f64) {
    let program = program(config, tiles);
    let addresses = if config.vector.ub_banks.is_some() {
        side_by_side(&program)
    } else {
        sim::Addresses::default()
    };
    let t0 = Instant::now();
    let result = sim::run_placed(&program, config, &addresses, Default::default(), &mut ())
        .expect("the generated kernel runs");
    (result, t0.elapsed().as_secs_f64())
}

/// Every slot of every buffer side by side, in declaration order.
fn side_by_side(program: &sim::Program) -> sim::Addresses {
    let mut next = [0u64; sim::Space::COUNT];
    let mut offsets = Vec::new();
    let mut sizes = Vec::new();
    for b in &program.buffers {
        let at = &mut next[b.scope.index()];
        offsets.push(
            (0..b.multi)
                .map(|_| {
                    *at += b.bytes;
                    *at - b.bytes
                })
                .collect::<Vec<u64>>(),
        );
        sizes.push(b.bytes);
    }
    sim::Addresses {
        offsets,
        slot_bytes: sizes,
    }
}

/// Runs under the race checker, every slot of every buffer side by side; returns the result,
/// the seconds, the hazards and the checker's peak live records.
fn run_race(config: &sim::Config, tiles: u64) -> (sim::RunResult, f64, usize, usize) {
    let program = program(config, tiles);
    let addresses = side_by_side(&program);
    let t0 = Instant::now();
    let mut checker = sim::race::RaceChecker::new(&program, config, &addresses);
    let result = sim::run_placed(
        &program,
        config,
        &addresses,
        Default::default(),
        &mut checker,
    )
    .expect("the generated kernel runs");
    let secs = t0.elapsed().as_secs_f64();
    let peak = checker.peak_records();
    (result, secs, checker.into_hazards().len(), peak)
}

const USAGE: &str = "usage: engine_throughput [INSTRUCTIONS, e.g. 10M] [--refinements on|off] \
                     [--banks] [--memory] [--race]";

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

/// Turns on vector blocks and UB banks where the config lacks them.
fn banks_on(config: &mut sim::Config) {
    let v = &mut config.vector;
    v.block_bytes.get_or_insert(32);
    v.ub_banks.get_or_insert(sim::config::UbBanks {
        groups: 16,
        row_bytes: 32,
        bank_bytes: 4096,
    });
}

/// Turns on the gm memory system and `scalar.gm_latency` where the config lacks them.
fn memory_on(config: &mut sim::Config) {
    config.memory.get_or_insert(sim::config::MemoryConfig {
        line_bytes: 512,
        l2_bytes: 192 << 20,
        l2_read_bytes_per_cycle: 110,
        l2_write_bytes_per_cycle: 86,
        l2_chip_bytes_per_cycle: 3888,
        l2_latency: 200,
        hbm_bytes_per_cycle: 32,
        hbm_read_latency: 1400,
    });
    config.scalar.gm_latency.get_or_insert(200);
}

/// Which refinements `config` has, for the report.
fn refinements(config: &sim::Config) -> String {
    let mut on = Vec::new();
    if let Some(b) = config.vector.block_bytes {
        on.push(format!("vector.block_bytes {b}"));
    }
    if let Some(u) = config.vector.ub_banks {
        on.push(format!(
            "ub_banks {{ groups {}, row_bytes {}, bank_bytes {} }}",
            u.groups, u.row_bytes, u.bank_bytes
        ));
    }
    if let Some(m) = config.memory {
        on.push(format!(
            "memory {{ line_bytes {}, l2_bytes {} }}",
            m.line_bytes, m.l2_bytes
        ));
    }
    if let Some(g) = config.scalar.gm_latency {
        on.push(format!("scalar.gm_latency {g}"));
    }
    if on.is_empty() {
        "none".to_string()
    } else {
        on.join(", ")
    }
}

fn main() {
    let mut race = false;
    let (mut banks, mut memory) = (false, false);
    let mut all: Option<bool> = None;
    let mut target = 10_000_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--race" => race = true,
            "--banks" => banks = true,
            "--memory" => memory = true,
            "--refinements" => {
                all = match args.next().as_deref() {
                    Some("on") => Some(true),
                    Some("off") => Some(false),
                    _ => usage(),
                }
            }
            _ if a.starts_with("--") => usage(),
            _ => target = parse_count(&a).unwrap_or_else(|| usage()),
        }
    }
    let text = sim::builtin::builtin(CONFIG).expect("a built-in config");
    let mut config = sim::load_config(text, CONFIG).expect("the built-in config loads");
    match all {
        Some(false) => {
            config.vector.block_bytes = None;
            config.vector.ub_banks = None;
            config.memory = None;
            config.scalar.gm_latency = None;
        }
        Some(true) => {
            banks_on(&mut config);
            memory_on(&mut config);
        }
        None => {}
    }
    if banks {
        banks_on(&mut config);
    }
    if memory {
        memory_on(&mut config);
    }
    // calibrate: dynamic instructions per tile
    let (a, _) = run(&config, 100);
    let (b, _) = run(&config, 200);
    let per_tile = (b.instructions() - a.instructions()) / 100;
    let tiles = target.div_ceil(per_tile).max(2);

    let (result, secs) = run(&config, tiles);
    assert!(result.deadlock.is_none() && result.findings.is_empty());
    let n = result.instructions();
    println!("refinements: {}", refinements(&config));
    println!("kernel: vec_add_db, {tiles} tiles, {per_tile} instructions per tile");
    println!("dynamic instructions: {n}");
    println!("simulated cycles:     {}", result.total_cycles);
    let conflicts = result.cores.iter().filter_map(|c| c.bank_conflict_cycles);
    if let Some(c) = conflicts.reduce(|a, b| a + b) {
        println!("bank conflict cycles: {c}");
    }
    if let Some(m) = &result.memory {
        println!(
            "L2 lines:             {} hit, {} missed, {} evicted",
            m.hit_lines, m.miss_lines, m.evicted_lines
        );
    }
    println!("seconds:              {secs:.3}");
    println!("instructions/s:       {:.2} M", n as f64 / secs / 1e6);
    if race {
        let (r, race_secs, hazards, peak) = run_race(&config, tiles);
        assert_eq!(r.instructions(), n);
        assert_eq!(hazards, 0, "the kernel is race-free");
        println!("with race check:");
        println!("  seconds:            {race_secs:.3}");
        println!("  instructions/s:     {:.2} M", n as f64 / race_secs / 1e6);
        println!("  overhead:           {:.2}x", race_secs / secs);
        println!("  peak live accesses: {peak}");
    }
    match peak_rss_kib() {
        Some(k) => println!("peak RSS (VmHWM):     {:.1} MiB", k as f64 / 1024.0),
        None => println!("peak RSS (VmHWM):     unavailable"),
    }
}
