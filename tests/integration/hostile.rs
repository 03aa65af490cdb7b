//! The hostile inputs that once panicked, hung, wrapped or wrote stray files, one test each.
//! The bad-input corpus (`bad_inputs.rs`) covers the ones a fixture file can hold; these need
//! generated text, a run limit, a closed pipe or a look at the files left behind.

use crate::{npusim, root, stderr, stdout};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> std::path::PathBuf {
    crate::scratch(&format!("hostile/{name}"))
}

/// Writes `text` to a scratch file and returns its path (as a string for the command line).
fn file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const HEAD: &str = "kernel: k\ncore: aiv\nsync: auto\n";

#[test]
fn a_diagnostic_past_column_65535_is_reported_without_a_snippet() {
    // miette panicked on a span past column 65,535 (exit 101)
    let dir = scratch("column");
    let text = format!("{HEAD}body: [{}{{nosuchop: 1}}]\n", " ".repeat(65_536));
    file(&dir, "wide.yaml", &text);
    // named relative to its directory: miette wraps a long path (a clone's deep directory)
    // across lines, and what this test checks must not depend on where the clone lives
    let o = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(["check", "wide.yaml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // line 4, a column past the 7 characters of "body: [" and the spaces (the message may be
    // wrapped, so it is compared without whitespace)
    let flat: String = err.split_whitespace().collect();
    assert!(flat.contains("wide.yaml:4:655"), "{err}");
    assert!(flat.contains("nosuchop:unknownop"), "{err}");
}

#[test]
fn scalar_cycles_that_would_pass_2_63_stop_at_the_cycle_limit() {
    // two ops of 2^62 cycles (the most one may have) and a load: the total would be past 2^63,
    // where the engine once panicked, and three such ops wrapped past 2^64 and exited 0. The
    // run stops at --max-cycles: the first op alone reaches it.
    let dir = scratch("scalar");
    let text = format!(
        "{HEAD}gm: {{ x: {{ shape: [64], dtype: f32 }} }}\n\
         buffers: {{ a: {{ scope: ub, shape: [64], dtype: f32 }} }}\n\
         body:\n\
         \x20 - scalar: {{ cycles: 4611686018427387904 }}\n\
         \x20 - scalar: {{ cycles: 4611686018427387904 }}\n\
         \x20 - scalar: {{ cycles: 4611686018427387904 }}\n\
         \x20 - load: {{ src: x, dst: a }}\n\
         \x20 - store: {{ src: a, dst: x }}\n"
    );
    let f = file(&dir, "scalar.yaml", &text);
    let o = npusim(&["run", &f, "--format", "json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // the default limit is 1e10 cycles; a step that would end after the limit is not taken,
    // so the run stops at cycle 0, before the first op of 2^62 cycles
    assert_eq!(doc["stopped"]["limit"], "max_cycles");
    assert_eq!(doc["stopped"]["cycle"], 0);
    assert_eq!(doc["total_cycles"], 0);
    // at the largest limit, 2^62, the first op ends exactly there (S busy all of it), the
    // second is not started, and nothing wraps
    let o = npusim(&[
        "run",
        &f,
        "--max-cycles",
        "4611686018427387904",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["stopped"]["cycle"], 1u64 << 62);
    assert_eq!(doc["total_cycles"], 1u64 << 62);
    assert_eq!(doc["pipes"]["S"]["busy"], 1u64 << 62);
    assert_eq!(doc["pipes"]["S"]["instructions"], 1);
}

#[test]
fn a_loop_of_a_trillion_trips_stops_at_the_instruction_limit_quickly() {
    let dir = scratch("trillion");
    let text = format!(
        "{HEAD}buffers: {{ a: {{ scope: ub, shape: [64], dtype: f32 }} }}\n\
         body:\n\
         \x20 - for: {{ var: i, from: 0, to: 1000000000000 }}\n\
         \x20   body:\n\
         \x20     - vdup: {{ scalar: 1, out: a }}\n\
         \x20 - while: {{ trips: 100000000000000 }}\n\
         \x20   body:\n\
         \x20     - vdup: {{ scalar: 2, out: a }}\n"
    );
    let f = file(&dir, "trillion.yaml", &text);
    let start = Instant::now();
    let o = npusim(&["run", &f, "--max-instructions", "1e5"]);
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("after 100000 dynamic instructions (--max-instructions 100000)"),
        "{}",
        stdout(&o)
    );
    // a loop count known at load past 2^48 is refused there, at its place
    let huge = text.replace("to: 1000000000000 }", "to: 281474976710657 }");
    let g = file(&dir, "huge.yaml", &huge);
    let o = npusim(&["check", &g]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("huge.yaml:6:") && err.contains("2^48"),
        "{err}"
    );
}

#[test]
fn diagnostics_into_a_closed_pipe_never_panic() {
    // `npusim run bad.yaml 2>&1 | head -1`: stderr closes after the first line; npusim once
    // panicked with "failed printing to stderr" (exit 101) now and then
    let dir = scratch("pipe");
    let mut text = String::from(HEAD);
    text.push_str("body:\n");
    for i in 0..2000 {
        text.push_str(&format!("  - nosuchop{i}: {{}}\n"));
    }
    let f = file(&dir, "bad.yaml", &text);
    for _ in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_npusim"))
            .args(["check", &f])
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = child.stderr.take().unwrap();
        let mut first = [0u8; 16];
        let _ = std::io::Read::read(&mut err, &mut first);
        drop(err); // the reader goes away
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(2), "exit {status:?}");
    }
}

#[test]
fn pack_with_nothing_that_fits_writes_no_file() {
    let dir = scratch("pack");
    let csv = file(&dir, "i.csv", "id,lower,upper,size\na,0,10,8\nb,0,10,8\n");
    let out = dir.join("out.csv");
    let o = npusim(&[
        "pack",
        &csv,
        "--capacity",
        "8",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists(), "a placement that does not fit was written");
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(names.len(), 1, "only the input is left: {names:?}");
    // with -o nothing goes to stdout either; without it, what did not fit is shown there
    assert!(stdout(&o).is_empty());
    let o = npusim(&["pack", &csv, "--capacity", "8"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).starts_with("id,lower,upper,size,offset\n"));
}

#[test]
fn pack_refuses_a_capacity_and_sizes_that_would_wrap() {
    // --capacity 2^64 - 1 with two buffers of that size once "fit" with a wrapped lower bound
    let dir = scratch("wrap");
    let big = u64::MAX;
    let csv = file(
        &dir,
        "w.csv",
        &format!("id,lower,upper,size\na,0,10,{big}\nb,0,10,{big}\n"),
    );
    let o = npusim(&["pack", &csv, "--capacity", &big.to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("at most 2^62"), "{}", stderr(&o));
    let o = npusim(&["pack", &csv, "--capacity", "1024"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(stdout(&o).is_empty());
    assert!(
        err.contains("w.csv:2:") && err.contains("w.csv:3:"),
        "{err}"
    );
}

#[test]
fn a_huge_multi_is_refused_at_once() {
    // multi: 2147483648 allocated gigabytes; multi: 16384 planned for 20 s
    let dir = scratch("multi");
    for multi in ["2147483648", "16384"] {
        let text = format!(
            "{HEAD}buffers: {{ a: {{ scope: ub, shape: [8], dtype: f32, multi: {multi} }} }}\nbody:\n  - vdup: {{ scalar: 1, out: a }}\n"
        );
        let f = file(&dir, "m.yaml", &text);
        let start = Instant::now();
        let o = npusim(&["check", &f]);
        assert!(start.elapsed() < Duration::from_secs(5));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("m.yaml:4:") && err.contains("256"), "{err}");
    }
}

#[test]
fn a_loop_at_the_edges_of_64_bits_runs_its_three_trips() {
    // found by fuzzing: from -2^63 to 2^63 - 1 in steps of 2^63 - 1 wrapped the loop variable.
    // Its values are -2^63, -1 and 2^63 - 2; the next, 2^64 - 3, is past the end: 3 trips, so 3
    // loads of the same 64 f32 = 256 bytes (one 512-byte L2 line) on the default config: the
    // first misses the cold L2 and reads from HBM alone, ceil(256 / min(110, 768 / 1)) = 3 busy
    // cycles on MTE2; the other two hit, ceil(256 / min(110, 110)) = 3 each: 3 + 3 + 3 = 9.
    let dir = scratch("edges");
    let text = "kernel: k\ncore: aiv\ngm:\n  x: { shape: [64], dtype: f32 }\nbuffers:\n  \
                xb: { scope: ub, shape: [64], dtype: f32 }\nbody:\n  - for: { var: i, from: \
                -9223372036854775808, to: 9223372036854775807, step: 9223372036854775807 }\n    \
                body:\n      - load: { src: \"x\", dst: xb }\n";
    let f = file(&dir, "edges.yaml", text);
    let o = npusim(&["run", &f, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["pipes"]["MTE2"]["busy"], 9);
}
