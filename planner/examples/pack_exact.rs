//! Measures the exact mode of the placement core (`planner::pack::exact`).
//!
//! `cargo run --release -p planner --example pack_exact -- [DATA] [threads] [secs]
//! [letters] [family]` (from the workspace root; threads 1 by default; secs: a time limit per
//! call, 0 or absent: none, except 10 s per generated instance; letters: only these challenging
//! instances (`-`: none), and skip the other sections; family: then also run the generated
//! families whose name contains it, one line per seed). Prints, per challenging instance at capacity 1,048,576: n, the
//! lower bound, outcome, height, seconds and nodes; then the tiny oracles (minimised) and the
//! generated families with a known optimum (at capacity = optimum). Every placement is checked
//! with the independent validator.

use planner::pack::exact::{self, ExactOptions, Outcome};
use planner::pack::{csv, gen, validate, Instance};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn load(path: &Path) -> Instance {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    csv::parse(&text)
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
        .0
}

fn run(inst: &Instance, cap: u64, opts: &ExactOptions) -> (exact::ExactResult, f64) {
    let t = Instant::now();
    let r = exact::solve(inst, cap, opts);
    let secs = t.elapsed().as_secs_f64();
    if let Some(s) = &r.solution {
        let limit = (r.outcome == Outcome::Feasible).then_some(cap);
        if let Err(e) = validate(inst, &s.offsets, limit) {
            panic!("invalid placement: {e:?}");
        }
    }
    (r, secs)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // DATA: a directory with minimalloc/ (the challenging suite and tiny oracles); the copy in
    // the repository by default
    let data = PathBuf::from(args.get(1).map_or("planner/tests/data", |s| s.as_str()));
    let threads: usize = args.get(2).map_or(1, |s| s.parse().unwrap());
    let limit = args
        .get(3)
        .map(|s| s.parse::<f64>().unwrap())
        .filter(|&s| s > 0.0)
        .map(Duration::from_secs_f64);
    let subset = args.get(4).cloned();
    let only = subset
        .clone()
        .unwrap_or_else(|| "ABCDEFGHIJK".into())
        .replace('-', "");
    let family = args.get(5).cloned();
    let feas = ExactOptions {
        time_limit: limit,
        threads,
        minimize: false,
    };
    println!("## challenging suite, capacity 1048576, threads {threads}");
    println!("| inst | n | LB | outcome | height | s | nodes |");
    println!("| --- | ---: | ---: | --- | ---: | ---: | ---: |");
    let mut total = 0.0;
    let mut solved = 0;
    for name in only.chars() {
        let path = data.join(format!("minimalloc/challenging/{name}.1048576.csv"));
        let inst = load(&path);
        let (r, secs) = run(&inst, 1 << 20, &feas);
        total += secs;
        solved += (r.outcome == Outcome::Feasible) as usize;
        println!(
            "| {name} | {} | {} | {:?} | {} | {secs:.3} | {} |",
            inst.len(),
            r.lower_bound,
            r.outcome,
            r.solution
                .as_ref()
                .map_or("-".into(), |s| s.height.to_string()),
            r.nodes
        );
    }
    println!(
        "\ntotal: {solved}/{} feasible in {total:.2} s\n",
        only.len()
    );
    if subset.is_some() && family.is_none() {
        return;
    }
    if family.is_none() {
        tiny_oracles(&data, limit, threads, &feas);
    }
    generated(family.as_deref(), limit, &feas);
}

fn tiny_oracles(data: &Path, limit: Option<Duration>, threads: usize, feas: &ExactOptions) {
    let min = ExactOptions {
        time_limit: limit,
        threads,
        minimize: true,
    };
    println!("## tiny oracles (minimize)");
    println!("| instance | n | LB | expected | height | optimal | s | nodes |");
    println!("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |");
    let mut tiny: Vec<(String, u64)> = Vec::new();
    for f in ["a.6", "b.6", "c.8", "d.9", "e.12", "f.14", "g.7"] {
        tiny.push((format!("omnimalloc/small/{f}.csv"), f[2..].parse().unwrap()));
    }
    tiny.push(("minimalloc/derived/tricky.5.csv".into(), 5));
    tiny.push(("minimalloc/examples/input.12.csv".into(), 12));
    for (f, opt) in &tiny {
        let inst = load(&data.join(f));
        let (r, secs) = run(&inst, 1 << 40, &min);
        println!(
            "| {f} | {} | {} | {opt} | {} | {} | {secs:.4} | {} |",
            inst.len(),
            r.lower_bound,
            r.solution.as_ref().map_or(0, |s| s.height),
            r.optimal,
            r.nodes
        );
    }
    let tricky = load(&data.join("minimalloc/derived/tricky.5.csv"));
    let (r, _) = run(&tricky, 4, feas);
    println!("\ntricky.5 at capacity 4: {:?}\n", r.outcome);
}

fn generated(family: Option<&str>, limit: Option<Duration>, feas: &ExactOptions) {
    // a guillotine tiling can take the search into a long tail: cap each instance
    let gen_opts = ExactOptions {
        time_limit: Some(limit.unwrap_or(Duration::from_secs(10))),
        ..feas.clone()
    };
    println!(
        "## generated families (capacity = optimum, {} s limit each)",
        gen_opts.time_limit.unwrap().as_secs_f64()
    );
    println!("| family | instances | n range | at optimum | max s | total s | nodes |");
    println!("| --- | ---: | --- | ---: | ---: | ---: | ---: |");
    type Family = (&'static str, Box<dyn Fn(u64) -> gen::Generated>);
    let families: Vec<Family> = vec![
        (
            "pipeline(2..16 stages, 4..64 iters)",
            Box::new(|s| gen::pipeline(2 + (s as usize * 5) % 15, 4 + (s as usize * 7) % 61, s)),
        ),
        (
            "nested(depth 1..4)",
            Box::new(|s| gen::nested(1 + s as usize % 4, s)),
        ),
        (
            "guillotine(150/300/450)",
            Box::new(|s| gen::guillotine(150 * (1 + s as usize % 3), 1 << 20, s)),
        ),
    ];
    for (name, make) in &families {
        if family.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let (mut ok, mut max, mut sum, mut nodes) = (0, 0f64, 0f64, 0u64);
        let (mut nmin, mut nmax) = (usize::MAX, 0);
        let count = 20;
        for seed in 0..count {
            let g = make(seed);
            let opt = g.optimum.unwrap();
            let (r, secs) = run(&g.instance, opt, &gen_opts);
            if family.is_some() {
                println!(
                    "| seed {seed} | n {} | {:?} | {secs:.3} s | {} nodes |",
                    g.instance.len(),
                    r.outcome,
                    r.nodes
                );
            }
            ok += (r.outcome == Outcome::Feasible) as usize;
            max = max.max(secs);
            sum += secs;
            nodes += r.nodes;
            nmin = nmin.min(g.instance.len());
            nmax = nmax.max(g.instance.len());
        }
        println!(
            "| {name} | {count} | {nmin}–{nmax} | {ok}/{count} | {max:.3} | {sum:.3} | {nodes} |"
        );
    }
}
