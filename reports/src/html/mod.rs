//! The HTML report (`run --html`, `compare --html`): one self-contained page (inline CSS, SVG
//! and a small script; no network, no external file, the system's fonts) with the stall
//! breakdown, the pipe timeline and the memory map of every on-chip scope
//! (docs/html.md). Pure functions: the same inputs give byte-identical pages.

mod bars;
mod calibrate;
mod diff;
mod memory;
mod style;
mod sweep;
mod timeline;

pub use calibrate::calibration_html;
pub use diff::diff_html;
pub use memory::slot_rects;
pub use sweep::sweep_html;
pub use timeline::{Arrow, Timeline, TimelineSpec};

use crate::compare::{CompareLevel, CompareOutcome};
use crate::run_report::{fmt_micros, sync_name, Run};
use sim::{Config, Program, RunResult, Space};
use std::collections::BTreeSet;
use style::Kind;

/// The header's first facts: the config (with a launch, the chip's name: its parts may run
/// on more than one core type) and, for a launch (`result`), its blocks and cores.
fn chip_facts(
    program: &Program,
    config: &Config,
    launch: Option<&RunResult>,
) -> Vec<(&'static str, String)> {
    let Some(result) = launch else {
        return vec![("config", config_label(program, config))];
    };
    let blocks = program.launch.blocks;
    vec![
        (
            "config",
            format!("{} · {} MHz", config.name, config.clock_mhz),
        ),
        (
            "launch",
            format!(
                "{blocks} block{}, {}",
                if blocks == 1 { "" } else { "s" },
                core_counts(config, result)
            ),
        ),
    ]
}

/// The run page: header, stall bars (a launch of many cores: per core type, the spread over
/// its cores and the bars of its last core), timeline (`None`: not collected), memory maps
/// (per part), the per-op profile (`profile`: a pre-rendered HTML fragment, placed as is in
/// `<section id="profile">`; `None` leaves the section empty and hidden), and the findings.
pub fn run_html(
    config: &Config,
    run: &Run,
    timeline: Option<&Timeline>,
    profile: Option<&str>,
) -> String {
    let first = run.first();
    let (program, plan, result) = (first.program, first.plan, run.result);
    let launch = result.cores.len() > 1 || run.parts.len() > 1;
    let total = result.total_cycles;
    let mut body = String::new();
    body.push_str("<header>\n");
    body.push_str(&format!(
        "<h1>{} <span class=\"sub\">· npusim run</span></h1>\n<dl class=\"facts\">",
        esc(&program.kernel)
    ));
    let mut level = format!("{} ({} liveness)", plan.level, plan.liveness.name());
    if let Some(best) = run.best {
        level = format!("{} (the fastest of --level best)", best.chosen);
    }
    let mut facts = chip_facts(program, config, launch.then_some(result));
    facts.extend([
        ("sync", sync_name(program, first.auto_sync).to_string()),
        ("level", level),
        ("total", format!("{} cycles", thousands(total))),
        (
            "time",
            format!("{} µs", fmt_micros(total, config.clock_mhz)),
        ),
    ]);
    if !launch {
        let core = &result.cores[0];
        facts.push((
            "overlap",
            format!("{} %", crate::percent(core.overlap_cycles, total)),
        ));
        if let Some((pipe, cycles)) = core.pipe_bound() {
            facts.push(("pipe bound", format!("{pipe} {} cycles", thousands(cycles))));
            facts.push(("efficiency", format!("{} %", crate::percent(cycles, total))));
        }
    }
    // the launch's start, apart from the cores' cycles, as the text report's two lines
    if config.launch_cost.is_some() {
        let end = total.saturating_add(result.launch_cycles);
        facts.push((
            "launch cost",
            format!("{} cycles", thousands(result.launch_cycles)),
        ));
        facts.push((
            "end to end",
            format!(
                "{} cycles = {} µs",
                thousands(end),
                fmt_micros(end, config.clock_mhz)
            ),
        ));
    }
    body.push_str(&facts_html(&facts));
    body.push_str("</dl>\n");
    for (k, part) in run.parts.iter().enumerate() {
        if let Some(stats) = part.auto_sync {
            let who = if run.parts.len() > 1 {
                format!("{}: ", config.core(run.parts[k].program.core).name)
            } else {
                String::new()
            };
            body.push_str(&format!(
                "<p class=\"note\">{}sync pass: {}</p>\n",
                esc(&who),
                esc(&crate::syncs_summary(stats))
            ));
        }
    }
    // the text report's "paced by" line, which the critical path's section (when asked for)
    // explains
    if let Some(line) = crate::run_report::paced_by(config, run) {
        body.push_str(&format!("<p class=\"note paced\">{}</p>\n", esc(&line)));
    }
    body.push_str("</header>\n<main>\n");

    body.push_str("<section id=\"stalls\">\n<h2>Where the cycles went</h2>\n");
    if launch {
        body.push_str(&launch_summary(config, result));
    } else {
        body.push_str(
            "<p class=\"note\">Every cycle of every pipe is in one state; each bar is the whole run. Hover a segment for its exact cycles.</p>\n",
        );
        body.push_str(&style::legend(&bars::kinds(result)));
        body.push_str(&bars::stall_bars(&result.cores[0], total, total, 1100.0));
    }
    body.push_str("</section>\n");

    body.push_str("<section id=\"timeline\">\n<h2>Pipe timeline</h2>\n");
    let parts: Vec<&Program> = run.parts.iter().map(|p| p.program).collect();
    body.push_str(&timeline::timeline_html(config, &parts, result, timeline));
    body.push_str("</section>\n");

    body.push_str("<section id=\"memory\">\n<h2>Memory map</h2>\n");
    body.push_str(MEMORY_NOTE);
    for (k, part) in run.parts.iter().enumerate() {
        if run.parts.len() > 1 {
            body.push_str(&format!(
                "<h3>{} (every {} core)</h3>\n",
                esc(&config.core(part.program.core).name),
                esc(&config.core(part.program.core).name)
            ));
        }
        let id = if run.parts.len() > 1 {
            format!("p{k}-")
        } else {
            String::new()
        };
        body.push_str(&memory::memory_maps(
            part.program,
            part.plan,
            660.0,
            300.0,
            &id,
        ));
    }
    body.push_str("</section>\n");

    body.push_str(&profile_section(profile));
    // `run --critical-path`: its section, only when asked for
    if let Some(path) = run.critical.full() {
        body.push_str(&crate::critical_html(config, run, path));
    }
    // `run --roofline`: its section, only when asked for
    if let Some(r) = run.roofline {
        body.push_str(&crate::roofline::roofline_html(r));
    }

    body.push_str("<section id=\"findings\">\n<h2>Findings</h2>\n");
    body.push_str(&findings_html(config, run));
    body.push_str("</section>\n</main>\n");
    page(&format!("npusim run: {}", program.kernel), &body)
}

/// `24 aic + 48 aiv cores`.
fn core_counts(config: &Config, result: &RunResult) -> String {
    let counts: Vec<String> = crate::launch::types(result)
        .into_iter()
        .map(|ty| {
            let n = result.cores.iter().filter(|c| c.core == ty).count();
            format!("{n} {}", config.core(ty).name)
        })
        .collect();
    format!(
        "{} core{}",
        counts.join(" + "),
        if result.cores.len() == 1 { "" } else { "s" }
    )
}

/// A launch's stall section: per core type, the min / mean / max over its cores of their end
/// cycle and of each pipe's busy and stalled cycles (with the stall reasons' means), then the
/// stall bars of the type's last core to end.
fn launch_summary(config: &Config, result: &RunResult) -> String {
    use crate::launch::{pipe_of, spread, types};
    let total = result.total_cycles;
    let mut out = String::from(
        "<p class=\"note\">Per core type, over its cores (one per block, or a block's vector cores): min / mean / max of the cycle each core ended and of each pipe's busy and stalled cycles; then the bars of the type's last core to end, where every cycle of each of its pipes is in one state.</p>\n",
    );
    out.push_str(&style::legend(&bars::kinds(result)));
    for ty in types(result) {
        let cores: Vec<&sim::engine::CoreRun> =
            result.cores.iter().filter(|c| c.core == ty).collect();
        let name = &config.core(ty).name;
        let end = spread(cores.iter().map(|c| c.end_cycle));
        out.push_str(&format!(
            "<div class=\"core-type\" data-type=\"{0}\" data-cores=\"{1}\">\n<h3>{1} × {0}</h3>\n<p>end cycle: min {2} / mean {3:.1} / max {4}</p>\n",
            esc(name),
            cores.len(),
            thousands(end.min),
            end.mean,
            thousands(end.max)
        ));
        out.push_str("<table class=\"summary\"><thead><tr><th>pipe</th><th>busy min</th><th>mean</th><th>max</th><th>stalled min</th><th>mean</th><th>max</th><th>busy % mean</th><th class=\"text\">stalls, mean cycles per core</th></tr></thead><tbody>\n");
        let mut pipes: Vec<sim::Pipe> = cores[0].pipes.iter().map(|p| p.pipe).collect();
        pipes.sort();
        for pipe in pipes {
            let of = || cores.iter().filter_map(move |c| pipe_of(c, pipe));
            let busy = spread(of().map(|p| p.busy));
            let stalled = spread(of().map(sim::engine::PipeStats::stalled));
            let mut reasons: std::collections::BTreeMap<sim::engine::Stall, u64> =
                std::collections::BTreeMap::new();
            for p in of() {
                for (s, c) in &p.stalls {
                    *reasons.entry(*s).or_default() += c;
                }
            }
            let reasons: Vec<String> = reasons
                .iter()
                .filter(|(_, c)| **c > 0)
                .map(|(s, c)| format!("{s} {:.1}", *c as f64 / cores.len() as f64))
                .collect();
            let util = if total == 0 {
                0.0
            } else {
                100.0 * busy.mean / total as f64
            };
            out.push_str(&format!(
                "<tr><td>{pipe}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{util:.1}</td><td class=\"text\">{}</td></tr>\n",
                thousands(busy.min),
                busy.mean,
                thousands(busy.max),
                thousands(stalled.min),
                stalled.mean,
                thousands(stalled.max),
                esc(&reasons.join(", ")),
            ));
        }
        out.push_str("</tbody></table>\n");
        let last = cores
            .iter()
            .max_by_key(|c| (c.end_cycle, std::cmp::Reverse((c.block, c.index))));
        if let Some(c) = last {
            out.push_str(&format!(
                "<h4>{}, the last {name} to end (cycle {})</h4>\n",
                esc(&crate::core_name(config, c)),
                thousands(c.end_cycle)
            ));
            out.push_str(&bars::stall_bars(c, total, total, 1100.0));
        }
        out.push_str("</div>\n");
    }
    out
}

/// The comparison page: one column per level (its cycles, stall bars and memory maps; an
/// overflowed level shows its message). `program` is the program as loaded.
pub fn compare_html(program: &Program, config: &Config, levels: &[CompareLevel]) -> String {
    let runs: Vec<(u8, &Run)> = levels
        .iter()
        .filter_map(|l| match &l.outcome {
            CompareOutcome::Ran(r) => Some((l.level, r)),
            CompareOutcome::Overflow(_) => None,
        })
        .collect();
    let best = runs
        .iter()
        .filter(|(_, r)| r.result.deadlock.is_none())
        .map(|(_, r)| r.result.total_cycles)
        .min();
    let longest = runs
        .iter()
        .map(|(_, r)| r.result.total_cycles)
        .max()
        .unwrap_or(0);
    // (part, scope) with bytes at some level: a mixed kernel's parts plan their own scopes
    let scopes: Vec<(usize, Space)> = runs
        .iter()
        .flat_map(|(_, r)| {
            r.parts.iter().enumerate().flat_map(|(k, part)| {
                part.plan
                    .scopes
                    .iter()
                    .filter(|s| s.used > 0)
                    .map(move |s| (k, s.space))
            })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mixed = runs.iter().any(|(_, r)| r.parts.len() > 1);
    let part_name = |k: usize| -> String {
        runs.iter()
            .find_map(|(_, r)| r.parts.get(k))
            .map_or(String::new(), |p| {
                format!("{} ", config.core(p.program.core).name)
            })
    };

    let mut body = String::from("<header>\n");
    body.push_str(&format!(
        "<h1>{} <span class=\"sub\">· npusim compare</span></h1>\n<dl class=\"facts\">",
        esc(&program.kernel)
    ));
    let order: Vec<String> = levels.iter().map(|l| l.level.to_string()).collect();
    // a launch: the chip's name (its parts run on more than one core type) and its cores
    let launch = runs
        .iter()
        .find(|(_, r)| r.result.cores.len() > 1 || r.parts.len() > 1)
        .map(|(_, r)| r.result);
    let mut facts = chip_facts(program, config, launch);
    facts.push(("sync", program.sync.name().to_string()));
    facts.push(("levels", order.join(", ")));
    body.push_str(&facts_html(&facts));
    body.push_str("</dl>\n</header>\n<main>\n");

    body.push_str("<section id=\"summary\">\n<h2>Levels</h2>\n<table class=\"summary\"><thead><tr><th>level</th>");
    for (k, s) in &scopes {
        let who = if mixed { part_name(*k) } else { String::new() };
        body.push_str(&format!("<th>{}{} bytes</th>", esc(&who), s.report_name()));
    }
    body.push_str("<th>reused</th><th>set/wait</th><th>barriers</th><th>cycles</th><th>vs best</th><th>overlap %</th><th>note</th></tr></thead><tbody>\n");
    for l in levels {
        body.push_str(&format!("<tr><td>{}</td>", l.level));
        match &l.outcome {
            CompareOutcome::Overflow(message) => {
                for _ in 0..scopes.len() + 6 {
                    body.push_str("<td>-</td>");
                }
                body.push_str(&format!(
                    "<td class=\"text bad\">overflow: {}</td>",
                    esc(message.lines().next().unwrap_or_default())
                ));
            }
            CompareOutcome::Ran(r) => {
                for (k, s) in &scopes {
                    let used = r
                        .parts
                        .get(*k)
                        .and_then(|p| p.plan.scope(*s))
                        .map_or(0, |sp| sp.used);
                    body.push_str(&format!("<td>{}</td>", thousands(used)));
                }
                // every part's inserted flags together
                let mut stats = sim_sync_stats();
                for p in &r.parts {
                    let s = p.auto_sync.copied().unwrap_or_default();
                    stats.set_flags += s.set_flags;
                    stats.wait_flags += s.wait_flags;
                    stats.barriers += s.barriers;
                    stats.barrier_alls += s.barrier_alls;
                }
                let total = r.result.total_cycles;
                body.push_str(&format!(
                    "<td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td>",
                    r.parts
                        .iter()
                        .map(|p| crate::reused_buffers(p.plan))
                        .sum::<usize>(),
                    stats.set_flags,
                    stats.wait_flags,
                    stats.barriers + stats.barrier_alls,
                    thousands(total),
                    vs_best(r.result, best),
                    overlap(r.result),
                    esc(&crate::compare::note(r)),
                ));
            }
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</tbody></table>\n</section>\n");

    body.push_str("<section id=\"levels\">\n<h2>Side by side</h2>\n");
    body.push_str(&format!(
        "<p class=\"note\">Stall bars share one scale: a full bar is the longest level's {} cycles, so bars compare by length. Memory maps: x = program position, y = address; one rect per buffer slot per live interval.</p>\n",
        thousands(longest)
    ));
    let kinds: Vec<Kind> = runs
        .iter()
        .flat_map(|(_, r)| bars::kinds(r.result))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    body.push_str(&style::legend(&kinds));
    body.push_str("<div class=\"levels\">\n");
    for l in levels {
        match &l.outcome {
            CompareOutcome::Overflow(message) => {
                body.push_str(&format!(
                    "<div class=\"level overflow\" data-level=\"{0}\">\n<h3>level {0}: overflow</h3>\n<p class=\"note\">The plan does not fit at this level: nothing ran.</p>\n<pre>{1}</pre>\n</div>\n",
                    l.level,
                    esc(message)
                ));
            }
            CompareOutcome::Ran(r) => {
                let total = r.result.total_cycles;
                body.push_str(&format!(
                    "<div class=\"level\" data-level=\"{0}\">\n<h3>level {0}</h3>\n<dl class=\"facts\">",
                    l.level
                ));
                body.push_str(&facts_html(&[
                    ("cycles", thousands(total)),
                    (
                        "time",
                        format!("{} µs", fmt_micros(total, config.clock_mhz)),
                    ),
                    ("vs best", vs_best(r.result, best)),
                    ("overlap", format!("{} %", overlap(r.result))),
                ]));
                body.push_str("</dl>\n");
                let note = crate::compare::note(r);
                if !note.is_empty() {
                    body.push_str(&format!("<p class=\"bad\">{}</p>\n", esc(&note)));
                }
                body.push_str("<h4>Where the cycles went</h4>\n");
                if r.result.cores.len() == 1 {
                    body.push_str(&bars::stall_bars(&r.result.cores[0], total, longest, 440.0));
                } else {
                    // a launch: per core type, its last core to end
                    for ty in crate::launch::types(r.result) {
                        let last = r
                            .result
                            .cores
                            .iter()
                            .filter(|c| c.core == ty)
                            .max_by_key(|c| (c.end_cycle, std::cmp::Reverse((c.block, c.index))));
                        if let Some(c) = last {
                            body.push_str(&format!(
                                "<p class=\"note\">{}, the last {} to end (cycle {})</p>\n",
                                esc(&crate::core_name(config, c)),
                                esc(&config.core(ty).name),
                                thousands(c.end_cycle)
                            ));
                            body.push_str(&bars::stall_bars(c, total, longest, 440.0));
                        }
                    }
                }
                for (k, part) in r.parts.iter().enumerate() {
                    if r.parts.len() > 1 {
                        body.push_str(&format!(
                            "<h4>{} memory</h4>\n",
                            esc(&config.core(part.program.core).name)
                        ));
                    }
                    body.push_str(&memory::memory_maps(
                        part.program,
                        part.plan,
                        440.0,
                        270.0,
                        &if r.parts.len() > 1 {
                            format!("l{}-p{k}-", l.level)
                        } else {
                            format!("l{}-", l.level)
                        },
                    ));
                }
                body.push_str("</div>\n");
            }
        }
    }
    body.push_str("</div>\n</section>\n</main>\n");
    page(&format!("npusim compare: {}", program.kernel), &body)
}

/// What the sync pass inserted, none yet.
fn sim_sync_stats() -> planner::SyncStats {
    planner::SyncStats::default()
}

/// The overlap share of the first core, as the text comparison's `overlap %` (a launch's
/// block 0 core of its first part).
fn overlap(result: &RunResult) -> String {
    let first = result.cores.first().map_or(0, |c| c.overlap_cycles);
    crate::percent(first, result.total_cycles)
}

const MEMORY_NOTE: &str = "<p class=\"note\">x = program position (the planner's linear op order, in which lifetimes are computed), y = address. One rect per buffer slot per live interval: rects of different buffers at the same addresses at different positions are reuse or inplace sharing. Hover a slot for its bytes and addresses; the buffer's other slots light up.</p>\n";

/// `ascend910b/aiv · 1800 MHz`.
fn config_label(program: &Program, config: &Config) -> String {
    format!(
        "{} · {} MHz",
        config.core_label(program.core),
        config.clock_mhz
    )
}

fn vs_best(result: &RunResult, best: Option<u64>) -> String {
    match best {
        Some(b) if b > 0 && result.deadlock.is_none() => {
            format!("{:.3}x", result.total_cycles as f64 / b as f64)
        }
        _ => "-".into(),
    }
}

fn facts_html(facts: &[(&str, String)]) -> String {
    facts
        .iter()
        .map(|(k, v)| format!("<div><dt>{}</dt><dd>{}</dd></div>", esc(k), esc(v)))
        .collect()
}

/// The lead's per-op profile table goes here; without one the section is an empty, hidden
/// placeholder.
fn profile_section(profile: Option<&str>) -> String {
    match profile {
        Some(table) => {
            format!("<section id=\"profile\">\n<h2>Per-op profile</h2>\n{table}\n</section>\n")
        }
        None => "<section id=\"profile\" hidden></section>\n".into(),
    }
}

/// How many hazards the page lists (the text report lists them all).
const HAZARDS_SHOWN: usize = 100;

fn findings_html(config: &Config, run: &Run) -> String {
    let (program, result) = (run.first().program, run.result);
    let mut out = String::new();
    match run.hazards {
        None => out.push_str("<p>race check: not run (--no-race-check)</p>\n"),
        Some([]) => out.push_str("<p>race check: <span class=\"ok\">no hazards</span></p>\n"),
        Some(hs) => {
            out.push_str(&format!(
                "<p>race check: <span class=\"bad\">{} hazard{}</span></p>\n<ul class=\"findings mono\">",
                hs.len(),
                if hs.len() == 1 { "" } else { "s" }
            ));
            for h in hs.iter().take(HAZARDS_SHOWN) {
                out.push_str(&format!("<li>{}</li>", esc(&h.to_string())));
            }
            if hs.len() > HAZARDS_SHOWN {
                out.push_str(&format!(
                    "<li>and {} more (the text report lists every one)</li>",
                    hs.len() - HAZARDS_SHOWN
                ));
            }
            out.push_str("</ul>\n");
        }
    }
    if !result.findings.is_empty() {
        out.push_str(&format!(
            "<p class=\"bad\">sync findings ({}):</p>\n<ul class=\"findings mono\">",
            result.findings.len()
        ));
        for f in &result.findings {
            // a launch's finding names its core and that core's part's op
            let who = match result.cores.get(f.core() as usize) {
                Some(c) if result.cores.len() > 1 => format!("{}: ", crate::core_name(config, c)),
                _ => String::new(),
            };
            out.push_str(&format!(
                "<li>{}{}</li>",
                esc(&who),
                esc(&crate::finding_text(run.program_of(config, f.core()), f))
            ));
        }
        out.push_str("</ul>\n");
    }
    if let Some(d) = &result.deadlock {
        out.push_str(&format!(
            "<pre class=\"bad\">{}</pre>\n",
            esc(&crate::deadlock_text(program, d))
        ));
    }
    if let Some(stopped) = &result.stopped {
        out.push_str(&format!(
            "<p class=\"bad\">stopped: {}; the figures above cover the cycles up to there</p>\n",
            esc(&stopped.to_string())
        ));
    }
    let warnings = crate::warnings(run);
    if !warnings.is_empty() {
        out.push_str(&format!(
            "<p>warnings ({}):</p>\n<ul class=\"findings\">",
            warnings.len()
        ));
        for w in &warnings {
            out.push_str(&format!(
                "<li><code>[{}]</code> {}</li>",
                esc(w.kind),
                esc(&w.message)
            ));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The whole document around `body`. The content security policy forbids every load: a page
/// that tried one would show a console error in the browser test. Scripts run only when their
/// text hashes to [`script_hash`]: the page's own script does, while one that got into the page
/// some other way (an inline `<script>`, an `onerror=` attribute) is refused by the browser.
fn page(title: &str, body: &str) -> String {
    let script = script_text();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{}'\">\n\
         <title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n{body}\
         <footer>Written by npusim. Self-contained: no network, no external files.</footer>\n\
         <script>{script}</script>\n</body>\n</html>\n",
        script_hash(&script),
        esc(title),
        style::css(),
    )
}

/// The text between the page's `<script>` and `</script>`, byte for byte what is hashed.
fn script_text() -> String {
    format!("\n{}", style::SCRIPT)
}

/// The CSP source naming `script`: `sha256-` and the base64 of its SHA-256 digest (CSP Level 2,
/// "hash-source"), over the script's UTF-8 bytes exactly as they stand in the page.
fn script_hash(script: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(script.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Escapes text for HTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most two decimals, trailing zeros dropped (`12.5`, `40`).
fn f2(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// `1 cycle`, `83,496 cycles`.
fn cycles(n: u64) -> String {
    format!("{} cycle{}", thousands(n), if n == 1 { "" } else { "s" })
}

/// `83,496`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
