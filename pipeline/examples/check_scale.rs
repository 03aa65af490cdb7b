//! How `npusim check` scales with the size of a program: generates a program text, then times
//! loading it (YAML parse + validation) and planning it (what `check` does), and prints the
//! peak resident memory of the process.
//!
//! ```text
//! cargo run --release -p pipeline --example check_scale -- buffers 100000
//! cargo run --release -p pipeline --example check_scale -- ops 1000000
//! ```
//!
//! With a third argument, the program is written to that file instead (to time `npusim check
//! FILE` or `npusim run FILE` themselves).
//!
//! `buffers N`: N UB buffers declared at the top, each loaded and stored once (2N ops), the
//! buffers far larger together than the UB, so the planner reuses bytes. `ops N`: N ops on a
//! few double-buffered buffers in a loop-free body (a long straight-line kernel, as a code
//! generator unrolling a loop would write it).

use std::time::Instant;

// the allocator of the npusim binary, so that the figures are the binary's
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn buffers(n: usize) -> String {
    let mut s = String::from(
        "kernel: many_buffers\ncore: aiv\nsync: auto\ngm:\n  x: { shape: [1024, 16], dtype: f16 }\nbuffers:\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "  b{i}: {{ scope: ub, shape: [16], dtype: f16 }}\n"
        ));
    }
    s.push_str("body:\n");
    for i in 0..n {
        let row = i % 1024;
        s.push_str(&format!("  - load: {{ src: \"x[{row}]\", dst: b{i} }}\n"));
        s.push_str(&format!("  - store: {{ src: b{i}, dst: \"x[{row}]\" }}\n"));
    }
    s
}

fn ops(n: usize) -> String {
    let mut s = String::from(
        "kernel: many_ops\ncore: aiv\nsync: auto\ngm:\n  x: { shape: [1024, 64], dtype: f16 }\n\
         buffers:\n  a: { scope: ub, shape: [64], dtype: f16 }\n  \
         b: { scope: ub, shape: [64], dtype: f16 }\nbody:\n",
    );
    let mut i = 0;
    while i < n {
        let row = (i / 3) % 1024;
        s.push_str(&format!("  - load: {{ src: \"x[{row}]\", dst: a }}\n"));
        s.push_str("  - vexp: { ins: [a], out: b }\n");
        s.push_str(&format!("  - store: {{ src: b, dst: \"x[{row}]\" }}\n"));
        i += 3;
    }
    s
}

/// A memory figure of this process from /proc/self/status, in MiB: `VmRSS` now, `VmHWM` the
/// peak.
fn status_mib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn rss_mib() -> f64 {
    status_mib("VmRSS")
}

fn peak_rss_mib() -> f64 {
    status_mib("VmHWM")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("buffers", |s| s.as_str());
    let n: usize = args.get(2).map_or(100_000, |s| s.parse().expect("a count"));
    let text = match kind {
        "buffers" => buffers(n),
        "ops" => ops(n),
        other => panic!("unknown kind {other}: buffers or ops"),
    };
    if let Some(path) = args.get(3) {
        std::fs::write(path, &text).expect("the program file is written");
        println!("{path}: {:.1} MB", text.len() as f64 / 1e6);
        return;
    }
    let name = sim::builtin::DEFAULT;
    let config = sim::load_config(sim::builtin::builtin(name).unwrap(), name).unwrap();
    let t = Instant::now();
    let tree = sim::yaml::parse(&text).expect("it parses");
    let parse = t.elapsed().as_secs_f64();
    let with_tree = rss_mib();
    let t = Instant::now();
    drop(tree);
    let drop_tree = t.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let program = sim::load_program(&text, "generated.yaml", &config, &[]).expect("it loads");
    let load = t0.elapsed().as_secs_f64();
    println!("(of the load: YAML parse alone {parse:.3} s, dropping its tree {drop_tree:.3} s; RSS with the tree {with_tree:.0} MiB, with the program {:.0} MiB)", rss_mib());
    let t1 = Instant::now();
    let planned = pipeline::plan(&program, &config, &Default::default(), false);
    let plan = t1.elapsed().as_secs_f64();
    println!(
        "{kind} {n}: {:.1} MB of YAML, {} ops, {} buffers; load {load:.3} s, plan {plan:.3} s ({}), total {:.3} s; peak RSS {:.0} MiB",
        text.len() as f64 / 1e6,
        program.ops.len(),
        program.buffers.len(),
        if planned.is_ok() { "planned" } else { "overflow" },
        load + plan,
        peak_rss_mib()
    );
}
