//! `run --trace`: the timeline of every shipped program is well formed (every slice on a
//! declared track, no two slices of a track overlapping, every flow with both ends, each from
//! a set_flag to a wait_flag of the same flag), its slices add up to the run report's busy and
//! stall figures pipe by pipe, a window keeps only its cycles, and the file is byte-identical
//! across runs. `run --profile`: the rows add up to the report.

use crate::{npusim, root, stderr};
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

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("npusim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
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

/// The checks every trace must pass; returns per track name: (busy, {stall: cycles}).
fn check_well_formed(name: &str, trace: &Value) -> BTreeMap<String, (u64, BTreeMap<String, u64>)> {
    let evs = events(trace);
    let mut tracks: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for e in evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        tracks.insert(
            (u(&e["pid"]), u(&e["tid"])),
            e["args"]["name"].as_str().unwrap().to_string(),
        );
    }
    // the pipes in the order the issue asks: S, V, M, MTE1, MTE2, MTE3, FIX (those present)
    let order = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"];
    let names: Vec<&str> = tracks.values().map(|s| s.as_str()).collect();
    let mut expected: Vec<&str> = order.to_vec();
    expected.retain(|n| names.contains(n));
    assert_eq!(names, expected, "{name}: tracks out of order");

    let mut per_track: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut sums: BTreeMap<String, (u64, BTreeMap<String, u64>)> = BTreeMap::new();
    let mut outs: BTreeMap<String, &Value> = BTreeMap::new();
    let mut ins: BTreeMap<String, &Value> = BTreeMap::new();
    for e in evs.iter().filter(|e| e["ph"] == "X") {
        let key = (u(&e["pid"]), u(&e["tid"]));
        let track = tracks
            .get(&key)
            .unwrap_or_else(|| panic!("{name}: a slice on an undeclared track: {e}"));
        let (ts, dur) = (u(&e["ts"]), u(&e["dur"]));
        per_track.entry(key).or_default().push((ts, dur));
        let s = sums.entry(track.clone()).or_default();
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
                assert!(ins.insert(id, e).is_none(), "{name}: two flows in");
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
    for (id, set) in &outs {
        let wait = ins[id];
        let (s, w) = (
            set["name"].as_str().unwrap(),
            wait["name"].as_str().unwrap(),
        );
        // `set_flag V->MTE2 #0` hands the flag to `wait_flag V->MTE2 #0`
        assert!(s.starts_with("set_flag "), "{name}: flow from {s}");
        assert_eq!(
            s.replacen("set_flag", "wait_flag", 1),
            w,
            "{name}: flow {id} joins different flags"
        );
        assert!(
            u(&set["ts"]) <= u(&wait["ts"]),
            "{name}: flow {id} goes back in time"
        );
    }
    sums
}

#[test]
fn every_program_trace_is_well_formed_and_adds_up_to_the_report() {
    for program in programs() {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let (report, trace, _) = traced(&program, &[]);
        let sums = check_well_formed(&name, &trace);
        let pipes = report["pipes"].as_object().unwrap();
        for (pipe, stats) in pipes {
            let (busy, stalls) = sums.get(pipe).cloned().unwrap_or_default();
            assert_eq!(busy, u(&stats["busy"]), "{name}: {pipe} busy");
            let want: BTreeMap<String, u64> = stats["stalls"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), u(v)))
                .filter(|(_, v)| *v > 0)
                .collect();
            assert_eq!(stalls, want, "{name}: {pipe} stalls");
        }
        // one slice per instruction a pipe started, besides S's issue/loop/branch slices
        let started: u64 = pipes
            .iter()
            .filter(|(p, _)| p.as_str() != "S")
            .map(|(_, s)| u(&s["instructions"]))
            .sum();
        let op_slices = events(&trace)
            .iter()
            .filter(|e| e["cat"] == "op" && e["tid"] != 0)
            .count() as u64;
        assert_eq!(op_slices, started, "{name}: one slice per instruction");
        let flows = events(&trace)
            .iter()
            .filter(|e| e.get("flow_out").is_some())
            .count();
        assert!(flows > 0, "{name}: no set_flag -> wait_flag flows");
        assert!(
            events(&trace).iter().any(|e| e["ph"] == "C"),
            "{name}: no live-bytes counters"
        );
        assert_eq!(trace["metadata"]["clock_mhz"], 1800, "{name}");
    }
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

#[test]
fn the_live_bytes_counters_peak_at_the_plans_peak() {
    for program in programs() {
        let (_, sim) = crate::simulate(&program);
        let plan = &sim.planned.plan;
        let scopes: Vec<sim::Space> = plan.scopes.iter().map(|s| s.space).collect();
        let live = reports::live_bytes(&sim.planned, &scopes);
        for (i, s) in plan.scopes.iter().enumerate() {
            let peak = live.iter().skip(i).step_by(scopes.len()).max().copied();
            assert_eq!(
                peak.unwrap_or(0),
                s.peak_live,
                "{}: {:?}",
                program.display(),
                s.space
            );
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
        let busy: u64 = report["pipes"]
            .as_object()
            .unwrap()
            .values()
            .map(|p| u(&p["busy"]))
            .sum();
        let stalled: u64 = report["pipes"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|p| p["stalls"].as_object().unwrap().values().map(u))
            .sum();
        let row_busy: u64 = rows.iter().map(|r| u(&r["busy"]) + u(&r["issue"])).sum();
        let row_stalled: u64 = rows.iter().map(|r| u(&r["stalled"])).sum();
        assert_eq!(row_busy, busy, "{name}: busy");
        assert_eq!(row_stalled, stalled, "{name}: stalls");
        let costs: Vec<u64> = rows.iter().map(|r| u(&r["cost"])).collect();
        assert!(
            costs.windows(2).all(|w| w[0] >= w[1]),
            "{name}: not sorted by cost"
        );
        for r in rows {
            let parts = u(&r["busy"]) + u(&r["issue"]) + u(&r["stalled"]);
            assert_eq!(u(&r["cost"]), parts, "{name}: {r}");
        }
    }
    // without --profile the key is there, null
    let out = npusim(&["run", "programs/matmul.yaml", "--format", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["profile"], Value::Null);
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
