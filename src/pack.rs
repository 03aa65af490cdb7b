//! `npusim pack`: the placement core on a MiniMalloc CSV instance (docs/pack.md). The placement
//! goes to `-o FILE` or stdout as CSV with an `offset` column; the summary goes to stderr, so a
//! pipe gets only the CSV.

use crate::cli::PackMode;
use crate::{output, Exit};
use planner::pack::exact::{ExactOptions, Outcome};
use planner::pack::{self, bound::lower_bound, csv, Instance, Solution};
use std::path::Path;
use std::time::{Duration, Instant};

pub struct PackArgs<'a> {
    pub instance: &'a Path,
    pub capacity: u64,
    pub mode: PackMode,
    pub time_limit: f64,
    pub minimize: bool,
    pub timing: bool,
    pub output: Option<&'a Path>,
}

pub fn pack(a: &PackArgs) -> Result<(), Exit> {
    let name = crate::input::name(a.instance);
    let text = crate::input::read_text(a.instance)
        .map_err(|e| Exit::input(e.describe(&name, "instance")))?;
    let (inst, columns) = csv::parse(&text).map_err(|errs| {
        for e in &errs {
            err_line!("error: {name}:{}: {}", e.line, e.message);
        }
        err_line!(
            "error: {name}: {} problem{}; the format is MiniMalloc's CSV: id,lower,upper,size[,alignment][,hint][,gaps][,offset]",
            errs.len(),
            if errs.len() == 1 { "" } else { "s" }
        );
        Exit(2)
    })?;
    if !a.time_limit.is_finite() || a.time_limit <= 0.0 {
        return Err(Exit::input(format!(
            "--time-limit {}: give a positive number of seconds",
            a.time_limit
        )));
    }
    let mut bad_fixed = Vec::new();
    // a parsed instance has one row per line after the header (parsing stops at the first
    // empty line and fails on any bad row), so buffer i is on line i + 2
    for (i, b) in inst.buffers.iter().enumerate() {
        if let Some(f) = b.fixed {
            if f.saturating_add(b.size) > a.capacity {
                bad_fixed.push(format!(
                    "{name}:{}: buffer `{}` is fixed at {f}, but its {} bytes end past the capacity {} (lower the offset or raise --capacity)",
                    i + 2,
                    b.id,
                    b.size,
                    a.capacity
                ));
            }
        }
    }
    if !bad_fixed.is_empty() {
        for m in &bad_fixed {
            err_line!("error: {m}");
        }
        return Err(Exit(2));
    }

    let lb = lower_bound(&inst);
    let start = Instant::now();
    let (solution, verdict, mode_text) = match a.mode {
        PackMode::Fast => {
            let r = pack::fast::solve(&inst);
            let feasible = r.solution.height <= a.capacity;
            let verdict = if feasible {
                Verdict::Feasible
            } else if lb.bytes > a.capacity {
                Verdict::Infeasible
            } else {
                Verdict::NotFound
            };
            (
                Some(r.solution),
                verdict,
                format!("fast (order: {})", r.order),
            )
        }
        PackMode::Exact => {
            let opts = ExactOptions {
                time_limit: Some(Duration::from_secs_f64(a.time_limit)),
                threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(2)),
                minimize: a.minimize,
            };
            let spinner = spinner(&opts);
            let r = pack::exact::solve(&inst, a.capacity, &opts);
            spinner.finish_and_clear();
            let verdict = match r.outcome {
                Outcome::Feasible if r.optimal => Verdict::Optimal,
                Outcome::Feasible => Verdict::Feasible,
                Outcome::Infeasible => Verdict::Infeasible,
                Outcome::Unknown => Verdict::TimedOut,
            };
            (
                r.solution,
                verdict,
                format!(
                    "exact ({} thread{}, time limit {} s{}; {} nodes)",
                    opts.threads,
                    if opts.threads == 1 { "" } else { "s" },
                    a.time_limit,
                    if a.minimize { ", minimize" } else { "" },
                    r.nodes
                ),
            )
        }
    };
    let seconds = start.elapsed().as_secs_f64();

    if let Some(s) = &solution {
        // the independent validator checks every placement before anyone sees it
        let cap = matches!(verdict, Verdict::Feasible | Verdict::Optimal).then_some(a.capacity);
        if let Err(v) = pack::validate(&inst, &s.offsets, cap) {
            err_line!("error: internal: the placement fails its validator (an npusim bug; please report it):");
            for x in v.iter().take(10) {
                err_line!("  {x}");
            }
            return Err(Exit(1));
        }
    }

    err_text!(
        "{}",
        summary(
            &name,
            &inst,
            &lb,
            solution.as_ref(),
            a.capacity,
            verdict,
            &mode_text,
            a.timing.then_some(seconds)
        )
    );
    // a placement that does not fit is shown (stdout) but never written to a file: -o means a
    // placement the capacity holds
    let fits = matches!(verdict, Verdict::Feasible | Verdict::Optimal);
    if let Some(s) = solution.as_ref().filter(|_| fits || a.output.is_none()) {
        output::emit(a.output, &csv::write(&inst, columns, s))?;
    }
    match verdict {
        Verdict::Feasible | Verdict::Optimal => Ok(()),
        _ => Err(Exit(1)),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Optimal,
    Feasible,
    Infeasible,
    NotFound,
    TimedOut,
}

#[allow(clippy::too_many_arguments)]
fn summary(
    name: &str,
    inst: &Instance,
    lb: &pack::bound::LowerBound,
    solution: Option<&Solution>,
    capacity: u64,
    verdict: Verdict,
    mode: &str,
    seconds: Option<f64>,
) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<12}{v}\n"));
    line("instance", format!("{name} ({} buffers)", inst.len()));
    line("mode", mode.to_string());
    line(
        "lower bound",
        if lb.bytes == 0 {
            "0".to_string()
        } else {
            format!(
                "{} (max live bytes, alignment-aware; reached at time {} by {} buffers)",
                lb.bytes,
                lb.at,
                lb.live.len()
            )
        },
    );
    match solution {
        Some(s) => line(
            "height",
            if lb.bytes > 0 {
                format!(
                    "{} ({:.4} × lower bound)",
                    s.height,
                    s.height as f64 / lb.bytes as f64
                )
            } else {
                s.height.to_string()
            },
        ),
        None => line("height", "no placement found".into()),
    }
    let verdict_text = match verdict {
        Verdict::Optimal => "fits (height proven minimal)".to_string(),
        Verdict::Feasible => "fits".to_string(),
        Verdict::Infeasible if lb.bytes > capacity => format!(
            "does not fit: the lower bound {} exceeds it (at time {})",
            lb.bytes, lb.at
        ),
        Verdict::Infeasible => "does not fit (proven: no placement exists)".to_string(),
        Verdict::NotFound => {
            "fast mode found no placement that fits (try --mode exact)".to_string()
        }
        Verdict::TimedOut => {
            "unknown: the time limit ran out first (the best placement found is printed; -o \
             writes only a placement that fits)"
                .to_string()
        }
    };
    line("capacity", format!("{capacity}: {verdict_text}"));
    if let Some(s) = seconds {
        line("seconds", format!("{s:.3}"));
    }
    out
}

/// A spinner on stderr while the search runs (hidden when stderr is not a terminal).
fn spinner(opts: &ExactOptions) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(format!(
        "searching (time limit {:?})",
        opts.time_limit.unwrap_or_default()
    ));
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}
