//! `run --trace`: the timeline of every shipped program is well formed (every slice on a
//! declared track of a named process, no two slices of a track overlapping, every flow with
//! both ends, each from a set_flag to a wait_flag of the same flag or from a cross_set to a
//! cross_wait of the same counter), its slices add up to the run report's busy and stall
//! figures pipe by pipe and core by core, a window keeps only its cycles, and the file is
//! byte-identical across runs. A launch has a process per core and an arrow per cross_wait.
//! `run --profile`: the rows add up to the report (over every core of a launch).

use crate::{npusim, root, stderr, stdout};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn programs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

/// A file in a directory of its own. Tests run in parallel and several trace the same program,
/// so each call gets a fresh directory (a shared one was removed under a running trace).
fn tmp(name: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::scratch(&format!("trace/{n}/{name}")).join(name)
}

/// Runs `npusim run PROGRAM --format json --trace FILE EXTRA...`: the report and the trace.
fn traced(program: &Path, extra: &[&str]) -> (Value, Value, String) {
    let name = program.file_stem().unwrap().to_string_lossy().into_owned();
    let file = tmp(&format!("{name}{}.json", extra.join("_").replace(':', "-")));
    let mut args = vec![
        "run",
        program.to_str().unwrap(),
        "--format",
        "json",
        "--trace",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = npusim(&args);
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let trace: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{name}: the trace is not JSON: {e}"));
    (report, trace, text)
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().expect("traceEvents")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// What a trace holds per process (core): its name, and per track name its busy cycles and
/// its stalls by cause.
struct Traced {
    processes: BTreeMap<u64, String>,
    sums: BTreeMap<(u64, String), (u64, BTreeMap<String, u64>)>,
    /// Flows from a cross_set (to each cross_wait it released).
    cross_flows: usize,
}

/// `"... #3"`: the id a flag or cross-core op's slice name ends with.
fn id_of(name: &str) -> &str {
    name.rsplit_once(" #").map_or("", |(_, id)| id)
}

/// The checks every trace must pass.
fn check_well_formed(name: &str, trace: &Value) -> Traced {
    let evs = events(trace);
    let mut processes: BTreeMap<u64, String> = BTreeMap::new();
    for e in evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
    {
        let name = e["args"]["name"].as_str().unwrap().to_string();
        assert!(processes.insert(u(&e["pid"]), name).is_none(), "two names");
    }
    let mut tracks: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for e in evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        let pid = u(&e["pid"]);
        assert!(
            processes.contains_key(&pid),
            "{name}: a thread of no process"
        );
        tracks.insert(
            (pid, u(&e["tid"])),
            e["args"]["name"].as_str().unwrap().to_string(),
        );
    }
    // the pipes in the order the issue asks: S, V, M, MTE1, MTE2, MTE3, FIX (those present)
    let order = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"];
    for &pid in processes.keys() {
        let names: Vec<&str> = tracks
            .iter()
            .filter(|((p, _), _)| *p == pid)
            .map(|(_, s)| s.as_str())
            .collect();
        let mut expected: Vec<&str> = order.to_vec();
        expected.retain(|n| names.contains(n));
        assert_eq!(
            names, expected,
            "{name}: tracks of process {pid} out of order"
        );
    }

    let mut per_track: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut sums: BTreeMap<(u64, String), (u64, BTreeMap<String, u64>)> = BTreeMap::new();
    let mut outs: BTreeMap<String, &Value> = BTreeMap::new();
    let mut ins: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for e in evs.iter().filter(|e| e["ph"] == "X") {
        let key = (u(&e["pid"]), u(&e["tid"]));
        let track = tracks
            .get(&key)
            .unwrap_or_else(|| panic!("{name}: a slice on an undeclared track: {e}"));
        let (ts, dur) = (u(&e["ts"]), u(&e["dur"]));
        per_track.entry(key).or_default().push((ts, dur));
        let s = sums.entry((key.0, track.clone())).or_default();
        match e["cat"].as_str().unwrap() {
            "op" | "scalar" => s.0 += dur,
            "stall" => *s.1.entry(e["name"].as_str().unwrap().into()).or_default() += dur,
            c => panic!("{name}: unknown category {c}"),
        }
        if let Some(id) = e.get("bind_id") {
            let id = id.as_str().unwrap().to_string();
            if e.get("flow_out") == Some(&Value::Bool(true)) {
                assert!(outs.insert(id, e).is_none(), "{name}: two flows out");
            } else {
                assert_eq!(e.get("flow_in"), Some(&Value::Bool(true)), "{name}: {e}");
                ins.entry(id).or_default().push(e);
            }
        }
    }
    for (key, mut slices) in per_track {
        slices.sort();
        for w in slices.windows(2) {
            assert!(
                w[0].0 + w[0].1 <= w[1].0,
                "{name}: slices {:?} and {:?} overlap on track {key:?}",
                w[0],
                w[1]
            );
        }
    }
    let out_ids: BTreeSet<&String> = outs.keys().collect();
    let in_ids: BTreeSet<&String> = ins.keys().collect();
    assert_eq!(out_ids, in_ids, "{name}: a flow without both ends");
    let mut cross_flows = 0;
    for (id, set) in &outs {
        let s = set["name"].as_str().unwrap();
        for wait in &ins[id] {
            let w = wait["name"].as_str().unwrap();
            if s.starts_with("cross_set ") {
                // `cross_set mode 2 #0` released counter 0 of the core of `cross_wait #0`,
                // maybe another core's
                assert_eq!(w, format!("cross_wait #{}", id_of(s)), "{name}: flow {id}");
                cross_flows += 1;
            } else {
                // `set_flag V->MTE2 #0` hands the flag to `wait_flag V->MTE2 #0`, on its core
                assert!(s.starts_with("set_flag "), "{name}: flow from {s}");
                assert_eq!(
                    s.replacen("set_flag", "wait_flag", 1),
                    w,
                    "{name}: flow {id} joins different flags"
                );
                assert_eq!(set["pid"], wait["pid"], "{name}: flow {id} joins two cores");
                assert_eq!(ins[id].len(), 1, "{name}: a flag consumed twice");
            }
            assert!(
                u(&set["ts"]) <= u(&wait["ts"]),
                "{name}: flow {id} goes back in time"
            );
        }
    }
    Traced {
        processes,
        sums,
        cross_flows,
    }
}

/// The run document's cores (one for a one-core run).
fn cores(report: &Value) -> &Vec<Value> {
    report["launch"]["cores"].as_array().expect("launch.cores")
}

#[test]
fn every_program_trace_is_well_formed_and_adds_up_to_the_report() {
    let mut launches = 0;
    for program in programs() {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let (report, trace, _) = traced(&program, &[]);
        let t = check_well_formed(&name, &trace);
        let cores = cores(&report);
        assert_eq!(t.processes.len(), cores.len(), "{name}: a process per core");
        launches += usize::from(cores.len() > 1);
        if cores.len() == 1 {
            // a one-core run's pipes are its only core's
            assert_eq!(report["pipes"], cores[0]["pipes"], "{name}");
        }
        for (k, core) in cores.iter().enumerate() {
            let pid = k as u64;
            let who = format!("{name} {}", core["name"]);
            assert_eq!(t.processes[&pid], core["name"], "{who}: process name");
            let pipes = core["pipes"].as_object().unwrap();
            for (pipe, stats) in pipes {
                let (busy, stalls) = t
                    .sums
                    .get(&(pid, pipe.clone()))
                    .cloned()
                    .unwrap_or_default();
                assert_eq!(busy, u(&stats["busy"]), "{who}: {pipe} busy");
                let want: BTreeMap<String, u64> = stats["stalls"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), u(v)))
                    .filter(|(_, v)| *v > 0)
                    .collect();
                assert_eq!(stalls, want, "{who}: {pipe} stalls");
            }
            // one slice per instruction a pipe started, besides S's issue/loop/branch slices
            // and the earlier chunks of an mmad_l1 part (`chunk` in their args)
            let started: u64 = pipes
                .iter()
                .filter(|(p, _)| p.as_str() != "S")
                .map(|(_, s)| u(&s["instructions"]))
                .sum();
            let op_slices = events(&trace)
                .iter()
                .filter(|e| e["cat"] == "op" && e["tid"] != 0 && u(&e["pid"]) == pid)
                .filter(|e| e["args"].get("chunk").is_none())
                .count() as u64;
            assert_eq!(op_slices, started, "{who}: one slice per instruction");
            assert!(
                events(&trace)
                    .iter()
                    .any(|e| e["ph"] == "C" && u(&e["pid"]) == pid),
                "{who}: no live-bytes counters"
            );
        }
        let flows = events(&trace)
            .iter()
            .filter(|e| e.get("flow_out").is_some())
            .count();
        assert!(flows > 0, "{name}: no set_flag -> wait_flag flows");
        // one arrow per cross_wait that took an increment: here every wait ran
        let cross_waits = events(&trace)
            .iter()
            .filter(|e| e["cat"] == "op" && e["name"].as_str().unwrap().starts_with("cross_wait"))
            .count();
        assert_eq!(
            t.cross_flows, cross_waits,
            "{name}: an arrow per cross_wait"
        );
        assert_eq!(trace["metadata"]["clock_mhz"], 1800, "{name}");
    }
    assert!(launches >= 2, "the shipped launches were not traced");
}

#[test]
fn a_window_keeps_only_its_cycles_and_reruns_are_identical() {
    let program = root().join("programs/vec_add_db.yaml");
    let (_, full, full_text) = traced(&program, &[]);
    let (_, win, text) = traced(&program, &["--trace-window", "20000:30000"]);
    check_well_formed("vec_add_db window", &win);
    assert_eq!(win["metadata"]["window"], serde_json::json!([20000, 30000]));
    for e in events(&win)
        .iter()
        .filter(|e| e["ph"] == "X" || e["ph"] == "C")
    {
        let (ts, dur) = (u(&e["ts"]), e.get("dur").map_or(0, u));
        assert!(ts >= 20000 && ts + dur <= 30000, "outside the window: {e}");
        if dur > 0 {
            assert!(ts < 30000);
        }
    }
    // a slice cut by the window keeps its real cycles in its args
    assert!(events(&win)
        .iter()
        .any(|e| e["ph"] == "X" && u(&e["args"]["start"]) < 20000));
    assert!(
        text.len() * 4 < full_text.len(),
        "the window did not shrink the trace"
    );
    let busy_in_window: u64 = events(&win)
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| u(&e["dur"]))
        .sum();
    assert!(busy_in_window > 0);
    assert!(events(&full).len() > events(&win).len());
    let (_, _, again) = traced(&program, &["--trace-window", "20000:30000"]);
    assert_eq!(text, again, "the same run gave a different trace");
}

#[test]
fn a_small_trace_snapshot() {
    // matmul.yaml: one cube tile, 168 instructions; the whole timeline is reviewable
    let (_, _, text) = traced(&root().join("programs/matmul.yaml"), &[]);
    insta::assert_snapshot!(text);
}

/// Loads a shipped program (or mixed kernel) on the default config and plans, synchronises
/// and runs every part of it as one launch, with the race checker and the plan validator.
fn simulate_kernel(path: &Path) -> pipeline::Simulation {
    let config = crate::default_config();
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let kernel = sim::load_kernel(&text, &name, &config, &[], None)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let opts = pipeline::Options {
        validate: true,
        ..Default::default()
    };
    pipeline::simulate_kernel(&kernel, &config, &opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_live_bytes_counters_peak_at_the_plans_peak() {
    for program in programs() {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let sim = simulate_kernel(&program);
        for (part, prepared) in sim.parts.iter().enumerate() {
            let planned = &prepared.planned;
            let plan = &planned.plan;
            let scopes: Vec<sim::Space> = plan.scopes.iter().map(|s| s.space).collect();
            let live = reports::live_bytes(planned, &scopes);
            for (i, s) in plan.scopes.iter().enumerate() {
                let peak = live.iter().skip(i).step_by(scopes.len()).max().copied();
                assert_eq!(
                    peak.unwrap_or(0),
                    s.peak_live,
                    "{name} part {part}: {:?}",
                    s.space
                );
            }
        }
        // in the trace, each core counts its own part's scopes, never above their peaks
        let (report, trace, _) = traced(&program, &[]);
        for (k, core) in cores(&report).iter().enumerate() {
            let plan = match report["launch"]["parts"].as_array() {
                Some(parts) => &parts
                    .iter()
                    .find(|p| p["core"] == core["type"])
                    .expect("the core's part")["plan"],
                None => &report["plan"],
            };
            let want: BTreeMap<String, u64> = plan["scopes"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, s)| u(&s["peak_live"]) > 0)
                .map(|(scope, s)| (format!("{scope} live bytes"), u(&s["peak_live"])))
                .collect();
            let mut seen: BTreeMap<String, u64> = BTreeMap::new();
            for e in events(&trace)
                .iter()
                .filter(|e| e["ph"] == "C" && u(&e["pid"]) == k as u64)
            {
                let top = seen
                    .entry(e["name"].as_str().unwrap().to_string())
                    .or_default();
                *top = (*top).max(u(&e["args"]["bytes"]));
            }
            assert_eq!(
                seen.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{name} {}: counters",
                core["name"]
            );
            for (counter, top) in &seen {
                assert!(top <= &want[counter], "{name} {}: {counter}", core["name"]);
            }
        }
    }
}

#[test]
fn a_failed_run_leaves_no_trace_file_and_bad_windows_are_refused() {
    let file = tmp("never.json");
    let out = npusim(&[
        "run",
        "tests/fixtures/overflow.yaml",
        "--trace",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!file.exists(), "a trace of a run that never ran");
    let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("never.json"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    for bad in ["5", "9:3", "1:1", "a:b"] {
        let out = npusim(&[
            "run",
            "programs/vec_add_db.yaml",
            "--trace",
            file.to_str().unwrap(),
            "--trace-window",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr(&out).contains(bad), "{bad}: {}", stderr(&out));
    }
}

#[test]
fn the_profile_adds_up_to_the_report() {
    for program in programs() {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let out = npusim(&[
            "run",
            program.to_str().unwrap(),
            "--format",
            "json",
            "--profile",
        ]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = report["profile"].as_array().expect("a profile");
        // every core's pipes (a one-core run's are the report's `pipes`)
        let pipes = || {
            cores(&report)
                .iter()
                .flat_map(|c| c["pipes"].as_object().unwrap().values())
        };
        let busy: u64 = pipes().map(|p| u(&p["busy"])).sum();
        let stalled: u64 = pipes()
            .flat_map(|p| p["stalls"].as_object().unwrap().values().map(u))
            .sum();
        let row_busy: u64 = rows.iter().map(|r| u(&r["busy"]) + u(&r["issue"])).sum();
        let row_stalled: u64 = rows.iter().map(|r| u(&r["stalled"])).sum();
        assert_eq!(row_busy, busy, "{name}: busy");
        assert_eq!(row_stalled, stalled, "{name}: stalls");
        // cause by cause too
        let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
        for p in pipes() {
            for (cause, c) in p["stalls"].as_object().unwrap() {
                *by_cause.entry(cause.clone()).or_default() += u(c);
            }
        }
        by_cause.retain(|_, c| *c > 0);
        let mut row_causes: BTreeMap<String, u64> = BTreeMap::new();
        for r in rows {
            for (cause, c) in r["stalls"].as_object().unwrap() {
                *row_causes.entry(cause.clone()).or_default() += u(c);
            }
        }
        assert_eq!(row_causes, by_cause, "{name}: stalls by cause");
        let costs: Vec<u64> = rows.iter().map(|r| u(&r["cost"])).collect();
        assert!(
            costs.windows(2).all(|w| w[0] >= w[1]),
            "{name}: not sorted by cost"
        );
        for r in rows {
            let parts = u(&r["busy"]) + u(&r["issue"]) + u(&r["stalled"]);
            assert_eq!(u(&r["cost"]), parts, "{name}: {r}");
            // `stalled` splits into the op's pipe's and S's waits to send it, cause by cause
            let (own, held) = (u(&r["pipe_stalled"]), u(&r["s_held"]));
            assert_eq!(own + held, u(&r["stalled"]), "{name}: {r}");
            let mut split: BTreeMap<String, u64> = BTreeMap::new();
            for key in ["pipe_stalls", "s_stalls"] {
                for (cause, c) in r[key].as_object().unwrap() {
                    *split.entry(cause.clone()).or_default() += u(c);
                }
            }
            let whole: BTreeMap<String, u64> = r["stalls"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), u(v)))
                .collect();
            assert_eq!(split, whole, "{name}: {r}");
            let sums = |key: &str| -> u64 { r[key].as_object().unwrap().values().map(u).sum() };
            assert_eq!(sums("pipe_stalls"), own, "{name}: {r}");
            assert_eq!(sums("s_stalls"), held, "{name}: {r}");
            // S waits to send an op of another pipe: an op S runs has none
            if r["pipe"] == "S" {
                assert_eq!(held, 0, "{name}: {r}");
            }
            let sync = [
                "set_flag",
                "wait_flag",
                "barrier",
                "cross_set",
                "cross_wait",
            ]
            .contains(&r["kind"].as_str().unwrap());
            assert_eq!(
                r["group"],
                if sync { "sync" } else { "compute" },
                "{name}: {r}"
            );
        }
        // S's stalls are the S held cycles and the waits of the ops S runs itself
        let s_pipes: u64 = cores(&report)
            .iter()
            .filter_map(|c| c["pipes"].get("S"))
            .flat_map(|p| p["stalls"].as_object().unwrap().values().map(u))
            .sum();
        let held: u64 = rows.iter().map(|r| u(&r["s_held"])).sum();
        let on_s: u64 = rows
            .iter()
            .filter(|r| r["pipe"] == "S")
            .map(|r| u(&r["pipe_stalled"]))
            .sum();
        assert_eq!(held + on_s, s_pipes, "{name}: S's stalls");
    }
    // without --profile the key is there, null
    let out = npusim(&["run", "programs/matmul.yaml", "--format", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["profile"], Value::Null);
}

#[test]
fn a_launch_profile_sums_an_op_over_its_cores() {
    // vec_add_blocks.yaml: 8 blocks of the same program; block b runs rows b, b + 8, ... of
    // 128, so 16 iterations each: the loop's row counts 8 x 16 = 128 iterations and each of
    // its four ops 128 executions
    let report = crate::json_of("run", &["programs/vec_add_blocks.yaml", "--profile"]);
    let rows = report["profile"].as_array().unwrap();
    let count = |op: &str| u(&rows.iter().find(|r| r["op"] == op).expect(op)["count"]);
    assert_eq!(count("body[0]"), 128, "the loop");
    for k in 0..4 {
        assert_eq!(count(&format!("body[0].for.body[{k}]")), 128);
    }
    // a mixed kernel's parts: their ops are apart, named by part
    let report = crate::json_of(
        "run",
        &[
            "tests/fixtures/launch/matmul_add_one_tile.yaml",
            "--profile",
        ],
    );
    let rows = report["profile"].as_array().unwrap();
    let of = |op: &str| rows.iter().find(|r| r["op"] == op).expect(op);
    // one cube core per block, two vector cores per block, 2 blocks
    assert_eq!(u(&of("aic.body[4]")["count"]), 2);
    assert_eq!(u(&of("aiv.body[1]")["count"]), 4);
    assert_eq!(of("aiv.body[1]")["kind"], "cross_wait");
    let text = stdout(&npusim(&[
        "run",
        "tests/fixtures/launch/matmul_add_one_tile.yaml",
        "--profile",
    ]));
    assert!(
        text.contains("cycles summed over the launch's 6 cores; % of 6 x the run"),
        "{text}"
    );
}

#[test]
fn a_launch_takes_every_view() {
    let file = tmp("launch.html");
    let html = file.to_str().unwrap();
    // --html and --level best, refused for launches once, run them whole (html_cli's
    // launch_pages checks what the pages hold)
    for (program, args) in [
        ("programs/vec_add_blocks.yaml", vec!["--html", html]),
        (
            "tests/fixtures/launch/matmul_add_one_tile.yaml",
            vec!["--level", "best"],
        ),
    ] {
        let mut all = vec!["run", program];
        all.extend(args);
        let out = npusim(&all);
        assert_eq!(out.status.code(), Some(0), "{program}: {}", stderr(&out));
    }
    assert!(file.exists());
    std::fs::remove_file(&file).unwrap();
    // a single-type kernel's one block is one core: the views it has
    let out = npusim(&[
        "run",
        "programs/vec_add_blocks.yaml",
        "--blocks",
        "1",
        "--html",
        html,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(file.exists());
    let trace = tmp("accepted.json");
    let out = npusim(&[
        "run",
        "programs/vec_add_blocks.yaml",
        "--trace",
        trace.to_str().unwrap(),
        "--profile",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(trace.exists());
}

#[test]
fn a_mixed_launch_has_a_process_per_core_and_an_arrow_per_cross_wait() {
    let program = root().join("tests/fixtures/launch/matmul_add_one_tile.yaml");
    let (_, trace, text) = traced(&program, &[]);
    let t = check_well_formed("matmul_add_one_tile", &trace);
    let names: Vec<&str> = t.processes.values().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "block 0 aic 0",
            "block 0 aiv 0",
            "block 0 aiv 1",
            "block 1 aic 0",
            "block 1 aiv 0",
            "block 1 aiv 1"
        ]
    );
    // counted by hand: the program has no loops; each of its 2 blocks (`launch: { blocks: 2
    // }`) is one cube core and 2 vector cores. The cube core's one mode-2 cross_set
    // (aic.body[4]) increments counter 0 of both vector cores of its block, and each vector
    // core takes one increment with its one `cross_wait: { id: 0, pipe: mte2 }`
    // (aiv.body[1]): 2 blocks x 2 vector cores x 1 wait = 4 takes, so 4 arrows, two out of
    // each cube core's set
    assert_eq!(t.cross_flows, 4);
    let block = |pid: &Value| {
        let name = &t.processes[&u(pid)];
        name.split(' ').nth(1).unwrap().to_string()
    };
    let sets: Vec<&Value> = events(&trace)
        .iter()
        .filter(|e| e["name"] == "cross_set mode 2 #0")
        .collect();
    assert_eq!(sets.len(), 2);
    for set in sets {
        assert_eq!(t.processes[&u(&set["pid"])].split(' ').nth(2), Some("aic"));
        assert_eq!(set["tid"], 6, "on FIX");
        let waits: Vec<&Value> = events(&trace)
            .iter()
            .filter(|e| e["flow_in"] == true && e["bind_id"] == set["bind_id"])
            .collect();
        assert_eq!(waits.len(), 2, "{set}");
        for w in waits {
            assert_eq!(w["name"], "cross_wait #0");
            assert_eq!(w["tid"], 4, "on MTE2");
            assert_eq!(block(&w["pid"]), block(&set["pid"]), "within a block");
        }
    }
    let (_, _, again) = traced(&program, &[]);
    assert_eq!(text, again, "the same run gave a different trace");
}

#[test]
fn a_launch_window_keeps_only_its_cycles() {
    // vec_add_blocks.yaml: 8 vector cores, 16 rows each. Per row a core's MTE2 does two
    // 32 KiB loads (at most min(110, 768 / 1) = 110 B/cycle: 298 cycles each) and its EnQue
    // set_flag waits for the second to complete (50 + 1,400 after its work), so MTE2 needs
    // at least 596 + 1,450 = 2,046 cycles a row (the double buffer overlaps the add and the
    // store with the next row's loads, not this wait): every core runs at least 16 × 2,046 =
    // 32,736 cycles, and a row takes at most about 3,000 (loads of 342 at the least share,
    // 768 / 8 = 96, plus the latency). A window of 5,000 cycles from 10,000 holds ops of every
    // core, and less than a sixth of the run
    let program = root().join("programs/vec_add_blocks.yaml");
    let (_, full, _) = traced(&program, &[]);
    let (_, win, text) = traced(&program, &["--trace-window", "10000:15000"]);
    let t = check_well_formed("vec_add_blocks window", &win);
    assert_eq!(t.processes.len(), 8);
    for e in events(&win)
        .iter()
        .filter(|e| e["ph"] == "X" || e["ph"] == "C")
    {
        let (ts, dur) = (u(&e["ts"]), e.get("dur").map_or(0, u));
        assert!(ts >= 10000 && ts + dur <= 15000, "outside the window: {e}");
    }
    // every core is busy in the window
    for pid in 0..8u64 {
        assert!(
            events(&win)
                .iter()
                .any(|e| e["ph"] == "X" && e["cat"] == "op" && u(&e["pid"]) == pid),
            "core {pid}"
        );
    }
    assert!(events(&full).len() > 4 * events(&win).len());
    let (_, _, again) = traced(&program, &["--trace-window", "10000:15000"]);
    assert_eq!(text, again, "the same run gave a different trace");
}

#[test]
fn a_small_two_core_trace_snapshot() {
    // tests/fixtures/launch/cross_blocks.yaml: two blocks meeting at a mode-0 cross-core
    // barrier, 73 lines; one arrow into each block's cross_wait, both from block 1's
    // cross_set, the later of the two sets (block 0's has none)
    let program = root().join("tests/fixtures/launch/cross_blocks.yaml");
    let (_, trace, text) = traced(&program, &[]);
    let t = check_well_formed("cross_blocks", &trace);
    assert_eq!(t.cross_flows, 2);
    insta::assert_snapshot!(text);
}

#[test]
fn the_profile_document_snapshot() {
    // softmax.yaml: 25 ops; every row's figures add up to the report (tested above), the
    // snapshot fixes their order and shape
    let out = npusim(&[
        "run",
        "programs/softmax.yaml",
        "--profile",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    insta::assert_json_snapshot!(report["profile"]);
}
