//! Measures the fast placement mode against the lower bound and the classic rules on the
//! benchmark data sets. Run in release mode:
//!
//! ```text
//! cargo run --release -p planner --example pack_fast -- DATA
//! ```
//!
//! `DATA` (default `planner/tests/data`, which holds the MiniMalloc and OmniMalloc instances)
//! is a directory with `minimalloc/`, `omnimalloc/` and, for the real traces, idealloc's
//! `idealloc/iopddl` and `idealloc/somas_tensors` (BENCHMARKS.md says where to get them); a set
//! whose folders are missing is reported as skipped.
//!
//! Per instance: buffers, lower bound, fast height, ratio, winning order, the best classic
//! rule's ratio, and the fast mode's time (median of 5 runs; parsing and validation excluded).
//! Then the geomean per set, and the generated families with a known optimum (20 seeds each,
//! as the exact example). Every placement is validated.

use planner::pack::{bound, csv, fast, gen, validate, Instance};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn main() {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "planner/tests/data".to_string()),
    );
    let sets: [(&str, &[&str]); 4] = [
        ("challenging", &["minimalloc/challenging"]),
        (
            "real traces",
            &["idealloc/iopddl", "idealloc/somas_tensors"],
        ),
        ("omnimalloc small", &["omnimalloc/small"]),
        (
            "minimalloc tiny",
            &["minimalloc/examples", "minimalloc/derived"],
        ),
    ];
    println!(
        "| set | instance | n | LB | fast height | fast / LB | order | best classic / LB | classic rule | fast ms |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: |");
    let mut summary = Vec::new();
    for (set, dirs) in sets {
        let mut files: Vec<PathBuf> = dirs.iter().flat_map(|d| csv_files(&root.join(d))).collect();
        files.sort();
        if files.is_empty() {
            println!(
                "| {set} | skipped: no instances under {} | | | | | | | | |",
                root.display()
            );
            continue;
        }
        let (mut logf, mut logc, mut count, mut worst, mut max_ms) = (0f64, 0f64, 0, 0f64, 0f64);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let (inst, _) = csv::parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}", f.display()));
            let lb = bound::lower_bound(&inst).bytes.max(1);
            let (res, ms) = timed(&inst);
            validate(&inst, &res.solution.offsets, None)
                .unwrap_or_else(|e| panic!("{}: invalid: {:?}", f.display(), &e[..1]));
            let (crule, cheight) = fast::Classic::ALL
                .iter()
                .map(|&r| (r, fast::classic(&inst, r).height))
                .min_by_key(|&(_, h)| h)
                .unwrap();
            assert!(
                res.solution.height <= cheight,
                "{}: worse than {crule:?}",
                f.display()
            );
            let ratio = res.solution.height as f64 / lb as f64;
            let cratio = cheight as f64 / lb as f64;
            logf += ratio.ln();
            logc += cratio.ln();
            count += 1;
            worst = f64::max(worst, ratio);
            max_ms = f64::max(max_ms, ms);
            println!(
                "| {set} | {} | {} | {} | {} | {:.4} | {} | {:.4} | {} | {:.3} |",
                f.file_stem().unwrap().to_string_lossy(),
                inst.len(),
                lb,
                res.solution.height,
                ratio,
                res.order,
                cratio,
                crule.name(),
                ms
            );
        }
        if count > 0 {
            summary.push((
                set,
                count,
                (logf / count as f64).exp(),
                worst,
                (logc / count as f64).exp(),
                max_ms,
            ));
        }
    }
    println!();
    println!(
        "| set | instances | fast geomean | fast worst | best-classic geomean | max fast ms |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (set, count, g, w, c, ms) in summary {
        println!("| {set} | {count} | {g:.4} | {w:.4} | {c:.4} | {ms:.3} |");
    }

    // generated families with a known optimum (the same seeds as the exact example)
    println!();
    println!("| family | seeds | at optimum | fast / optimum geomean | worst | max ms |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    type Family = (&'static str, fn(u64) -> gen::Generated);
    let families: [Family; 3] = [
        ("pipeline(2..16 stages, 4..64 iters)", |s| {
            gen::pipeline(2 + (s as usize * 5) % 15, 4 + (s as usize * 7) % 61, s)
        }),
        ("nested(depth 1..4)", |s| gen::nested(1 + s as usize % 4, s)),
        ("guillotine(150/300/450)", |s| {
            gen::guillotine(150 * (1 + s as usize % 3), 1 << 20, s)
        }),
    ];
    for (name, make) in families {
        let (mut hit, mut log, mut worst, mut max_ms) = (0, 0.0f64, 1.0f64, 0.0f64);
        for seed in 0..20 {
            let g = make(seed);
            let (r, ms) = timed(&g.instance);
            validate(&g.instance, &r.solution.offsets, None).expect("valid placement");
            let opt = g.optimum.expect("a family with a known optimum");
            let ratio = r.solution.height as f64 / opt as f64;
            hit += (r.solution.height == opt) as usize;
            log += ratio.ln();
            worst = worst.max(ratio);
            max_ms = max_ms.max(ms);
        }
        println!(
            "| {name} | 20 | {hit} | {:.4} | {worst:.4} | {max_ms:.3} |",
            (log / 20.0).exp()
        );
    }
}

fn csv_files(dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect(),
        Err(e) => {
            eprintln!("skipping {}: {e}", dir.display());
            Vec::new()
        }
    }
}

/// The result and the median wall time of 5 runs, in ms (1 run for instances over 10k buffers).
fn timed(inst: &Instance) -> (fast::FastResult, f64) {
    let runs = if inst.len() > 10_000 { 1 } else { 5 };
    let mut times: Vec<Duration> = Vec::new();
    let mut res = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = fast::solve(inst);
        times.push(t.elapsed());
        if let Some(prev) = &res {
            assert_eq!(prev, &r, "not deterministic");
        }
        res = Some(r);
    }
    times.sort();
    (res.unwrap(), times[times.len() / 2].as_secs_f64() * 1e3)
}
