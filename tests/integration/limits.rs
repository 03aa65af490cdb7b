//! Resource limits on every input (RELIABILITY.md, "Resource limits"): an input past
//! `--max-input-bytes` (here the standard input, which the bad-input corpus cannot give), a
//! launch whose engine state is past its budget, a dry run of a large grid in flat memory, a
//! trace stopped at `--trace-max-bytes`. The file inputs' `/dev/zero` cases are in the
//! bad-input corpus (`tests/fixtures/bad/input_endless_*.args`).

use crate::root;
use std::process::{Command, Stdio};

/// `npusim ARGS` in the root with `stdin` as its standard input: (exit code, stdout, stderr).
fn npusim_with_stdin(args: &[&str], stdin: Stdio) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .stdin(stdin)
        .output()
        .expect("npusim starts");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn dev_zero() -> Stdio {
    Stdio::from(std::fs::File::open("/dev/zero").expect("/dev/zero opens"))
}

#[test]
fn an_endless_standard_input_is_refused_at_the_limit() {
    // `-` reads the standard input; /dev/zero never ends, so only the cap stops the read. A
    // 1 MiB limit keeps the test fast; the default's own refusal is the corpus's
    let (code, stdout, stderr) =
        npusim_with_stdin(&["--max-input-bytes", "1MiB", "check", "-"], dev_zero());
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stdout, "");
    insta::assert_snapshot!(stderr, @"error: <stdin>: the program file is larger than 1048576 bytes (--max-input-bytes); check that it is the file you meant; a larger one needs --max-input-bytes N (default 268435456, 256 MiB)");
    // the same for a config given as `-`
    let (code, _, stderr) = npusim_with_stdin(
        &[
            "check",
            "programs/vec_add_db.yaml",
            "--config",
            "-",
            "--max-input-bytes",
            "64KiB",
        ],
        dev_zero(),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("<stdin>: the config file is larger than 65536 bytes (--max-input-bytes)"),
        "{stderr}"
    );
}

#[test]
fn a_program_on_the_standard_input_within_the_limit_is_read() {
    let file = std::fs::File::open(root().join("programs/vec_add_db.yaml")).unwrap();
    let (code, stdout, stderr) = npusim_with_stdin(&["check", "-"], Stdio::from(file));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("ok: vec_add_db"), "{stdout}");
    // a limit of exactly the file's size admits it, one byte less refuses it
    let size = std::fs::metadata(root().join("programs/vec_add_db.yaml"))
        .unwrap()
        .len();
    for (limit, expected) in [(size, 0), (size - 1, 2)] {
        let file = std::fs::File::open(root().join("programs/vec_add_db.yaml")).unwrap();
        let limit = limit.to_string();
        let (code, _, stderr) = npusim_with_stdin(
            &["check", "-", "--max-input-bytes", &limit],
            Stdio::from(file),
        );
        assert_eq!(code, Some(expected), "limit {limit}: {stderr}");
    }
}

/// The peak resident memory of process `pid` in KiB (`VmHWM` in /proc), if the system says.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_dry_run_of_a_million_points_streams_in_flat_memory() {
    use std::io::BufRead;
    // 1000 tile counts × 1000 tile sizes of one program on one config: 10^6 points, one CSV
    // row each after the header
    let dir = crate::scratch("limits-dry-run");
    let values: Vec<String> = (1..=1000).map(|i| i.to_string()).collect();
    let values = values.join(", ");
    let program = root().join("programs/vec_add_db.yaml");
    std::fs::write(
        dir.join("grid.yaml"),
        format!(
            "programs: [{}]\nparams: {{ tiles: [{values}], n: [{values}] }}\n",
            program.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(["sweep", "--dry-run"])
        .arg(dir.join("grid.yaml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npusim starts");
    let pid = child.id();
    let reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut rows, mut last, mut peak) = (0u64, String::new(), None);
    for line in reader.lines() {
        let line = line.unwrap();
        rows += 1;
        // 90 % of the way through the process is still alive (its last rows are not yet
        // read): its peak so far covers the rows it has formatted. Listing all of them in memory
        // first (as it once did) peaked at about 150 MB here, streaming at about 19 MB
        if rows == 900_000 {
            peak = peak_kib(pid);
        }
        last = line;
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(rows, 1 + 1_000_000, "the header and a row per point");
    // the last point: index 10^6 - 1, the last tile count and the last tile size
    assert!(last.starts_with("999999,"), "{last}");
    assert!(last.contains(",1000,1000,"), "{last}");
    match peak {
        Some(kib) => assert!(
            kib < 64 * 1024,
            "the dry run of 10^6 points peaked at {kib} KiB: it does not stream"
        ),
        None => eprintln!("skipped: no /proc/PID/status VmHWM here to measure the peak"),
    }
}

#[test]
fn a_trace_past_its_byte_limit_stops_as_a_valid_trace_of_the_cycles_before() {
    use serde_json::Value;
    let dir = crate::scratch("limits-trace-cap");
    let (full, cut) = (dir.join("full.json"), dir.join("cut.json"));
    let run = |trace: &std::path::Path, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_npusim"))
            .args([
                "run",
                "programs/vec_add_db.yaml",
                "--param",
                "tiles=2000",
                "--trace",
            ])
            .arg(trace)
            .args(extra)
            .current_dir(root())
            .env("NO_COLOR", "1")
            .output()
            .expect("npusim starts");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&full, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = run(&cut, &["--trace-max-bytes", "100KiB"]);
    // the run itself is whole: only the trace stops, with a warning saying how to window it
    assert_eq!(code, Some(0), "{stderr}");
    let size = std::fs::metadata(&cut).unwrap().len();
    assert!(size <= 100 * 1024, "{size} bytes");
    let events = |path: &std::path::Path| -> Vec<Value> {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
        doc["traceEvents"].as_array().expect("traceEvents").clone()
    };
    let (all, kept) = (events(&full), events(&cut));
    // the full trace is about 10 MB; the cut one ends with a note of the cut
    assert!(
        all.len() > 10 * kept.len(),
        "{} vs {}",
        all.len(),
        kept.len()
    );
    let note = kept.last().unwrap();
    assert_eq!(note["name"], "trace cut at --trace-max-bytes");
    assert_eq!(note["args"]["max_bytes"], 102400);
    let cycle = note["args"]["cycle"].as_u64().unwrap();
    // everything before the note is the full trace's first events, unchanged (the run is
    // deterministic and the trace written in order), and each starts by the cut's cycle
    let body = &kept[..kept.len() - 1];
    assert!(body.iter().any(|e| e["ph"] == "X"), "slices are kept");
    assert_eq!(body, &all[..body.len()]);
    for e in body {
        assert!(
            e["ts"].as_u64().unwrap_or(0) <= cycle,
            "{e} after cycle {cycle}"
        );
    }
    let shown = stderr.replace(&cut.display().to_string(), "[TRACE]");
    assert!(shown.contains(&format!("at cycle {cycle}:")), "{shown}");
    insta::assert_snapshot!(shown.replace(&cycle.to_string(), "[C]").replace(&(2 * cycle).to_string(), "[2C]"), @"warning: the trace reached --trace-max-bytes (102400 bytes) at cycle [C]: [TRACE] holds the events that start by then; trace a part with --trace-window A:B (e.g. --trace-window [C]:[2C]), or raise --trace-max-bytes");
}
