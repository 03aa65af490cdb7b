//! The comparison of one program run at several reuse levels (`npusim compare`): one summary row
//! per level, then every level's stalls by pipe and cause, then a legend.

use crate::run_report::Run;
use crate::table::{Align, Table};
use planner::{Plan, SyncStats};
use serde_json::{json, Map, Value};
use sim::{Config, Program, Space};
use std::collections::BTreeSet;

/// One level of a comparison, in the order the rows are printed.
pub struct CompareLevel<'a> {
    pub level: u8,
    pub outcome: CompareOutcome<'a>,
}

/// What one level gave: a run, or the overflow message of its plan.
pub enum CompareOutcome<'a> {
    Ran(Run<'a>),
    /// HIVM's overflow message (its first line is shown).
    Overflow(String),
}

/// The levels of a comparison the pipeline ran, as the reports read them.
pub fn compare_levels(levels: &[pipeline::Level]) -> Vec<CompareLevel<'_>> {
    levels
        .iter()
        .map(|l| CompareLevel {
            level: l.level,
            outcome: match &l.outcome {
                pipeline::LevelOutcome::Ran(s) => CompareOutcome::Ran(Run::from(&**s)),
                pipeline::LevelOutcome::Overflow(e) => CompareOutcome::Overflow(e.to_string()),
            },
        })
        .collect()
}

/// `compare --format json`: one [`compare_entry`] per level, in order.
pub fn compare_json(program: &Program, config: &Config, levels: &[CompareLevel]) -> Value {
    Value::Array(
        levels
            .iter()
            .map(|l| compare_entry(program, config, l))
            .collect(),
    )
}

/// One level of `compare --format json`. Every entry has the same keys in the same order:
/// `schema`, `level` (the level asked for), `overflow` (`null`, or HIVM's message when the
/// level's plan overflowed), then the keys of the run document ([`crate::RUN_KEYS`]). A level that
/// ran holds its run document's values (the entry is `run --level L --format json` with `level`
/// and `overflow` added); a level that overflowed did not plan or run: its `kernel`, `config` and
/// `sync` are the program's, `race_check` is `false`, and every other run key is `null`.
pub fn compare_entry(program: &Program, config: &Config, level: &CompareLevel) -> Value {
    let mut entry = Map::new();
    entry.insert("schema".into(), json!(crate::SCHEMA));
    entry.insert("level".into(), json!(level.level));
    match &level.outcome {
        CompareOutcome::Ran(run) => {
            entry.insert("overflow".into(), Value::Null);
            let Value::Object(doc) = crate::run_json(config, run) else {
                unreachable!("a run document is an object")
            };
            entry.extend(doc.into_iter().filter(|(k, _)| k != "schema"));
        }
        CompareOutcome::Overflow(message) => {
            entry.insert("overflow".into(), json!(message));
            for key in crate::RUN_KEYS {
                let value = match key {
                    "kernel" => json!(program.kernel),
                    "config" => json!(config.core_label(program.core)),
                    "sync" => json!(program.sync.name()),
                    // the race checker did not run, as with --no-race-check
                    "race_check" => json!(false),
                    _ => Value::Null,
                };
                entry.insert(key.into(), value);
            }
        }
    }
    Value::Object(entry)
}

/// The comparison as text. `program` is the program as loaded (its `sync` mode is the user's).
pub fn compare_text(program: &Program, config: &Config, levels: &[CompareLevel]) -> String {
    kernel_compare_text(&[program], config, levels)
}

/// Every part's plan and sync-pass statistics in a run, in part order.
fn part_plans<'r>(r: &Run<'r>) -> Vec<(&'r Plan, Option<&'r SyncStats>)> {
    r.parts.iter().map(|p| (p.plan, p.auto_sync)).collect()
}

/// The comparison of a kernel as text: `parts` are the kernel's parts as loaded (one for a
/// single-type program; their `sync` mode is the user's). For a mixed kernel, every part's
/// scopes get a column (`aic L1 bytes`, `aiv UB bytes`) and `reused`, `set/wait` and
/// `barriers` add up the parts. For a launch of more than one core, `cycles` is the launch's
/// (until its last core ends), `overlap %` the first core's, and the stalls table shows the
/// first core of each core type, with a `core` column.
pub fn kernel_compare_text(parts: &[&Program], config: &Config, levels: &[CompareLevel]) -> String {
    let Some(&program) = parts.first() else {
        return String::new();
    };
    let mixed = parts.len() > 1;
    let cores = sim::launch::slots(parts, config).len();
    let launch = cores > 1;
    let runs: Vec<&Run> = levels
        .iter()
        .filter_map(|l| match &l.outcome {
            CompareOutcome::Ran(r) => Some(r),
            CompareOutcome::Overflow(_) => None,
        })
        .collect();
    let mut out = crate::run_report::header(program, config);
    for p in &parts[1..] {
        out.push_str(&format!(
            "config  {} (part {})\n",
            config.core_label(p.core),
            config.core(p.core).name
        ));
    }
    out.push_str(&format!("sync    {}\n", program.sync.name()));
    if launch {
        let blocks = program.launch.blocks;
        out.push_str(&format!(
            "launch  {blocks} block{}, {cores} cores\n",
            if blocks == 1 { "" } else { "s" }
        ));
    }
    out.push_str(&format!(
        "levels  {}\n\n",
        levels
            .iter()
            .map(|l| l.level.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));

    // (part, scope) of every scope any level uses, in part and then scope order
    let scopes: Vec<(usize, Space)> = runs
        .iter()
        .flat_map(|r| {
            part_plans(r)
                .into_iter()
                .enumerate()
                .flat_map(|(i, (plan, _))| {
                    plan.scopes
                        .iter()
                        .filter(|s| s.used > 0)
                        .map(move |s| (i, s.space))
                })
                .collect::<Vec<_>>()
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // the fewest cycles of a level that finished (a deadlocked run stopped early)
    let best = runs
        .iter()
        .filter(|r| r.result.deadlock.is_none())
        .map(|r| r.result.total_cycles)
        .min();

    let mut columns = vec![("level".to_string(), Align::Left)];
    columns.extend(scopes.iter().map(|&(part, s)| {
        let name = if mixed {
            let core = parts.get(part).map_or(program.core, |p| p.core);
            format!("{} {} bytes", config.core(core).name, s.report_name())
        } else {
            format!("{} bytes", s.report_name())
        };
        (name, Align::Right)
    }));
    columns.extend([
        ("reused".to_string(), Align::Right),
        ("set/wait".to_string(), Align::Right),
        ("barriers".to_string(), Align::Right),
        ("cycles".to_string(), Align::Right),
        ("vs best".to_string(), Align::Right),
        ("overlap %".to_string(), Align::Right),
        ("note".to_string(), Align::Left),
    ]);
    let n_columns = columns.len();
    let mut table = Table::new(columns);
    for l in levels {
        let mut row = vec![l.level.to_string()];
        match &l.outcome {
            CompareOutcome::Overflow(message) => {
                row.resize(n_columns - 1, "-".to_string());
                let first = message.lines().next().unwrap_or_default();
                row.push(format!("overflow: {first}"));
            }
            CompareOutcome::Ran(r) => {
                let plans = part_plans(r);
                row.extend(scopes.iter().map(|&(part, s)| {
                    plans
                        .get(part)
                        .and_then(|(plan, _)| plan.scope(s))
                        .map_or(0, |sp| sp.used)
                        .to_string()
                }));
                let mut stats = SyncStats::default();
                for (_, st) in &plans {
                    let st = st.copied().unwrap_or_default();
                    stats.set_flags += st.set_flags;
                    stats.wait_flags += st.wait_flags;
                    stats.barriers += st.barriers;
                    stats.barrier_alls += st.barrier_alls;
                }
                let reused: usize = plans.iter().map(|(plan, _)| reused_buffers(plan)).sum();
                let total = r.result.total_cycles;
                row.extend([
                    reused.to_string(),
                    format!("{}/{}", stats.set_flags, stats.wait_flags),
                    (stats.barriers + stats.barrier_alls).to_string(),
                    total.to_string(),
                    match best {
                        Some(b) if b > 0 && r.result.deadlock.is_none() => {
                            format!("{:.3}x", total as f64 / b as f64)
                        }
                        _ => "-".to_string(),
                    },
                    // the first core's (a one-core run's only core), as the run report's
                    crate::percent(r.result.cores[0].overlap_cycles, total),
                    note(r),
                ]);
            }
        }
        table.row(row);
    }
    out.push_str(&table.render(""));

    let mut stall_columns = vec![("level".to_string(), Align::Left)];
    if launch {
        stall_columns.push(("core".to_string(), Align::Left));
    }
    stall_columns.extend([
        ("pipe".to_string(), Align::Left),
        ("cause".to_string(), Align::Left),
        ("cycles".to_string(), Align::Right),
        ("% of total".to_string(), Align::Right),
    ]);
    let mut stalls = Table::new(stall_columns);
    let mut any = false;
    for l in levels {
        let CompareOutcome::Ran(r) = &l.outcome else {
            continue;
        };
        // a launch: the first core of each core type; one core: its pipes
        let mut shown: Vec<(Option<String>, &[sim::engine::PipeStats])> = Vec::new();
        if launch {
            let mut types = Vec::new();
            for c in &r.result.cores {
                if !types.contains(&c.core) {
                    types.push(c.core);
                    shown.push((Some(crate::core_name(config, c)), &c.pipes));
                }
            }
        } else {
            shown.extend(r.result.cores.iter().map(|c| (None, &c.pipes[..])));
        }
        for (core, pipes) in shown {
            let mut pipes: Vec<_> = pipes.iter().collect();
            pipes.sort_by_key(|p| p.pipe);
            for p in pipes {
                let mut causes: Vec<_> = p.stalls.iter().filter(|(_, c)| *c > 0).collect();
                causes.sort_by_key(|(s, _)| *s);
                for (cause, cycles) in causes {
                    any = true;
                    let mut row = vec![l.level.to_string()];
                    row.extend(core.clone());
                    row.extend([
                        p.pipe.report_name().to_string(),
                        cause.to_string(),
                        cycles.to_string(),
                        crate::percent(*cycles, r.result.total_cycles),
                    ]);
                    stalls.row(row);
                }
            }
        }
    }
    out.push('\n');
    if any {
        out.push_str("stalls by pipe and cause:\n");
        out.push_str(&stalls.render("  "));
    } else {
        out.push_str("stalls by pipe and cause: none\n");
    }
    out.push('\n');
    out.push_str(&legend(!scopes.is_empty(), mixed, launch));
    out
}

/// What went wrong in a run, for the `note` column: empty when nothing did.
pub(crate) fn note(r: &Run) -> String {
    let mut parts = Vec::new();
    match r.hazards {
        None => parts.push("no race check".to_string()),
        Some([]) => {}
        Some(hs) => parts.push(plural(hs.len(), "hazard")),
    }
    if !r.result.findings.is_empty() {
        parts.push(plural(r.result.findings.len(), "sync finding"));
    }
    if let Some(d) = &r.result.deadlock {
        parts.push(format!("deadlock at cycle {}", d.cycle));
    }
    parts.join(", ")
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The buffers whose bytes overlap another buffer's bytes in the plan (same scope, some slot of
/// one overlapping some slot of the other): reuse and inplace both count, a multi-buffer's own
/// slots do not. `O(n log n)` in the number of slots.
pub fn reused_buffers(plan: &Plan) -> usize {
    // (scope, lo, hi, buffer index) of every non-empty slot
    let mut slots: Vec<(Space, u64, u64, usize)> = plan
        .buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| b.bytes > 0)
        .flat_map(|(i, b)| b.offsets.iter().map(move |&o| (b.scope, o, o + b.bytes, i)))
        .collect();
    slots.sort_unstable();
    let mut reused = vec![false; plan.buffers.len()];
    // per scope, the slot reaching highest so far, and the highest of another buffer
    let mut scope = None;
    let mut top: Option<(u64, usize)> = None;
    let mut second: Option<(u64, usize)> = None;
    for (space, lo, hi, b) in slots {
        if scope != Some(space) {
            scope = Some(space);
            top = None;
            second = None;
        }
        // the furthest-reaching slot of a buffer other than `b` among those starting earlier
        let other = match top {
            Some((_, tb)) if tb == b => second,
            t => t,
        };
        if let Some((ohi, ob)) = other {
            if lo < ohi {
                reused[b] = true;
                reused[ob] = true;
            }
        }
        // top: the furthest-reaching slot so far; second: the furthest of another buffer
        match top {
            None => top = Some((hi, b)),
            Some((thi, tb)) if tb == b => top = Some((thi.max(hi), b)),
            Some(t) if hi > t.0 => {
                second = Some(t);
                top = Some((hi, b));
            }
            Some(_) => match second {
                Some((shi, _)) if shi >= hi => {}
                _ => second = Some((hi, b)),
            },
        }
    }
    reused.iter().filter(|r| **r).count()
}

fn legend(has_scopes: bool, mixed: bool, launch: bool) -> String {
    let mut lines: Vec<(&str, &str)> =
        vec![("level", "the highest reuse level the planner may use")];
    if has_scopes && mixed {
        lines.push((
            "P X bytes",
            "bytes used in scope X of part P: the end of its highest planned slot",
        ));
    } else if has_scopes {
        lines.push((
            "X bytes",
            "bytes used in scope X: the end of its highest planned slot",
        ));
    }
    lines.extend([
        (
            "reused",
            "buffers whose bytes overlap another buffer's bytes in the plan (reuse or inplace; \
             a multi-buffer's own slots do not count)",
        ),
        (
            "set/wait",
            "set_flag / wait_flag ops the sync pass inserted (0/0 for sync: manual)",
        ),
        (
            "barriers",
            "barrier ops the sync pass inserted, `barrier: all` included",
        ),
        ("cycles", "total cycles of the run"),
        (
            "vs best",
            "cycles / the fewest cycles of any level (1.000x = the fastest level; 1.250x = 25 % \
             slower)",
        ),
        (
            "overlap %",
            "cycles with at least two non-S pipes busy / total cycles",
        ),
        (
            "note",
            "an overflow, hazards, sync findings or a deadlock (exit code 1); `no race check` \
             with --no-race-check",
        ),
        (
            "stalls",
            "cycles a pipe waited, per cause (busy, starved and idle cycles are not stalls)",
        ),
    ]);
    if mixed {
        lines.push((
            "parts",
            "reused, set/wait and barriers add up the parts; each part is planned and \
             synchronised on its own",
        ));
    }
    if launch {
        lines.push((
            "launch",
            "cycles: the whole launch, until its last core ends; overlap % and the stalls: the \
             first core (stalls: of each core type); `npusim run --core B:TYPE:I` shows any core",
        ));
    }
    crate::table::legend(&lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use planner::{BufferPlan, PlacedBy};
    use sim::BufferId;

    fn buffer(i: usize, scope: Space, bytes: u64, offsets: &[u64]) -> BufferPlan {
        BufferPlan {
            buffer: BufferId::new(i),
            scope,
            bytes,
            offsets: offsets.to_vec(),
            placed_by: PlacedBy::Level(0),
            live: vec![],
        }
    }

    fn with_buffers(buffers: Vec<BufferPlan>) -> Plan {
        Plan {
            buffers,
            ..plan_db()
        }
    }

    #[test]
    fn reused_counts_buffers_sharing_bytes() {
        // side by side: none
        assert_eq!(reused_buffers(&plan_db()), 0);
        // a multi-buffer's own slots are adjacent, not shared
        let p = with_buffers(vec![
            buffer(0, Space::Ub, 100, &[0, 100]),
            buffer(1, Space::Ub, 100, &[200]),
        ]);
        assert_eq!(reused_buffers(&p), 0);
        // 1 overlaps 0's second slot; 2 sits at the same offset in another scope
        let p = with_buffers(vec![
            buffer(0, Space::Ub, 100, &[0, 100]),
            buffer(1, Space::Ub, 50, &[150]),
            buffer(2, Space::L1, 100, &[0]),
        ]);
        assert_eq!(reused_buffers(&p), 2);
        // a long buffer reaching over several: the furthest-reaching slot of another buffer
        // counts even when the top slot is the buffer's own
        let p = with_buffers(vec![
            buffer(0, Space::Ub, 1000, &[0]),
            buffer(1, Space::Ub, 100, &[10, 2000]),
            buffer(2, Space::Ub, 100, &[3000]),
            buffer(3, Space::Ub, 10, &[2050]),
        ]);
        assert_eq!(reused_buffers(&p), 3);
        // touching is not overlapping; zero-byte buffers never overlap
        let p = with_buffers(vec![
            buffer(0, Space::Ub, 100, &[0]),
            buffer(1, Space::Ub, 100, &[100]),
            buffer(2, Space::Ub, 0, &[50]),
        ]);
        assert_eq!(reused_buffers(&p), 0);
    }

    #[test]
    fn reused_matches_the_quadratic_definition() {
        // a small deterministic pseudo-random sweep against the definition
        let mut seed = 12345u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..300 {
            let n = 1 + next(6) as usize;
            let buffers: Vec<BufferPlan> = (0..n)
                .map(|i| {
                    let scope = if next(3) == 0 { Space::L1 } else { Space::Ub };
                    let bytes = next(40);
                    let slots = 1 + next(3);
                    // slots of one buffer never overlap each other
                    let mut o = next(100);
                    let offsets: Vec<u64> = (0..slots)
                        .map(|_| {
                            let x = o;
                            o += bytes + next(30);
                            x
                        })
                        .collect();
                    buffer(i, scope, bytes, &offsets)
                })
                .collect();
            let overlap = |a: &BufferPlan, b: &BufferPlan| {
                a.scope == b.scope
                    && a.bytes > 0
                    && b.bytes > 0
                    && a.offsets.iter().any(|&x| {
                        b.offsets
                            .iter()
                            .any(|&y| x < y + b.bytes && y < x + a.bytes)
                    })
            };
            let expected = (0..n)
                .filter(|&i| (0..n).any(|j| j != i && overlap(&buffers[i], &buffers[j])))
                .count();
            let p = with_buffers(buffers);
            assert_eq!(reused_buffers(&p), expected, "{:?}", p.buffers);
        }
    }

    #[test]
    fn text_has_a_row_per_level_overflows_and_stalls() {
        let program = program_db();
        let plan = plan_db();
        let mut slow = result_clean();
        slow.total_cycles = 1250;
        for p in &mut slow.cores[0].pipes {
            p.idle += 250;
        }
        let stats = SyncStats {
            set_flags: 3,
            wait_flags: 3,
            barriers: 1,
            barrier_alls: 1,
            ..SyncStats::default()
        };
        let fast = result_clean();
        fn synced<'a>(mut run: Run<'a>, stats: &'a SyncStats) -> Run<'a> {
            run.parts[0].auto_sync = Some(stats);
            run
        }
        let levels = [
            CompareLevel {
                level: 0,
                outcome: CompareOutcome::Ran(synced(Run::new(&program, &plan, &slow), &stats)),
            },
            CompareLevel {
                level: 2,
                outcome: CompareOutcome::Ran(synced(
                    Run {
                        hazards: None,
                        ..Run::new(&program, &plan, &fast)
                    },
                    &stats,
                )),
            },
            CompareLevel {
                level: 1,
                outcome: CompareOutcome::Overflow(
                    "ub overflow, requires 2097152 bits while 1572864 bits available!\n  x: 1 bytes"
                        .into(),
                ),
            },
        ];
        let text = compare_text(&program, &config(), &levels);
        assert!(text.contains("1.250x"), "{text}");
        assert!(text.contains("1.000x"), "{text}");
        assert!(
            text.contains(
                "overflow: ub overflow, requires 2097152 bits while 1572864 bits available!\n"
            ),
            "{text}"
        );
        assert!(!text.contains("x: 1 bytes"), "{text}");
        assert!(text.contains("V     wait_flag MTE2#0"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn every_entry_has_the_same_keys() {
        let (program, plan, result) = (program_db(), plan_db(), result_clean());
        let run = Run::new(&program, &plan, &result);
        let levels = [
            CompareLevel {
                level: 2,
                outcome: CompareOutcome::Ran(run.clone()),
            },
            CompareLevel {
                level: 1,
                outcome: CompareOutcome::Overflow("ub overflow".into()),
            },
        ];
        let list = compare_json(&program, &config(), &levels);
        let [ran, overflow] = list.as_array().unwrap().as_slice() else {
            panic!("two entries: {list}")
        };
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(ran), keys(overflow));
        assert_eq!(keys(ran)[..3], ["schema", "level", "overflow"]);
        assert_eq!(keys(ran)[3..], crate::RUN_KEYS);

        assert_eq!(ran["schema"], crate::SCHEMA);
        assert_eq!(ran["level"], 2);
        assert_eq!(ran["overflow"], Value::Null);
        // the rest of a ran entry is its run document
        let mut doc = ran.clone();
        let m = doc.as_object_mut().unwrap();
        m.shift_remove("level");
        m.shift_remove("overflow");
        assert_eq!(doc, crate::run_json(&config(), &run));

        assert_eq!(overflow["schema"], crate::SCHEMA);
        assert_eq!(overflow["level"], 1);
        assert_eq!(overflow["overflow"], "ub overflow");
        assert_eq!(overflow["kernel"], "vec_add_db");
        assert_eq!(overflow["config"], "ascend910b/aiv");
        assert_eq!(overflow["sync"], "manual");
        assert_eq!(overflow["race_check"], false);
        for key in [
            "total_cycles",
            "pipes",
            "hazards",
            "findings",
            "warnings",
            "plan",
        ] {
            assert_eq!(overflow[key], Value::Null, "{key}");
        }
        insta::assert_json_snapshot!(overflow);
    }
}
