//! The rules of npusim's one output writer (docs/cli.md, "Output files"; RELIABILITY.md,
//! "Output files"): no planted link is followed, devices and FIFOs are written in place, a
//! symlink is written through, modes are kept, hard-linked files and outputs that are inputs
//! are refused, a signal leaves no temporary file and no partial target, and stdout failures
//! are errors except a broken pipe. Each test works in a scratch directory of its own, with
//! npusim run from there so that the messages name short relative paths.

use std::fs;
use std::io::{BufRead, Read};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PROGRAM: &str = "programs/vec_add_db_manual.yaml";
/// A run long enough to interrupt: 200,000 tiles (about 50 s in a debug build), whose trace
/// file is created as soon as the program is planned.
const LONG: &str = "programs/vec_add_db.yaml";

fn scratch(name: &str) -> PathBuf {
    crate::scratch(&format!("output_safety/{name}"))
}

/// `npusim ARGS` run in `dir`.
fn npusim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("npusim runs")
}

/// The program copied into `dir` as `p.yaml`, and what `run` prints for it.
fn program_in(dir: &Path) -> String {
    fs::copy(crate::root().join(PROGRAM), dir.join("p.yaml")).unwrap();
    let o = npusim_in(dir, &["run", "p.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    crate::stdout(&o)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).unwrap().file_type().is_symlink()
}

#[test]
fn planted_links_at_temporary_names_are_never_followed() {
    let dir = scratch("planted");
    let expected = program_in(&dir);
    let victim = dir.join("victim.txt");
    fs::write(&victim, "keep me\n").unwrap();
    // the names a hand-made temporary file would take (npusim's own old scheme was
    // `.NAME.npusim-PID.tmp`; every pid a run could get is too many to plant, so the names
    // without it), and names of the form tempfile draws at random
    let mut planted = vec![
        ".out.txt.tmp".to_string(),
        "out.txt.tmp".to_string(),
        ".out.txt.npusim.tmp".to_string(),
    ];
    for i in 0..50 {
        planted.push(format!(".out.txt.{i:06}.npusim.tmp"));
    }
    for name in &planted {
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
    }
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "out.txt"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    assert_eq!(fs::read_to_string(dir.join("out.txt")).unwrap(), expected);
    assert!(
        !is_link(&dir.join("out.txt")),
        "the output is a new regular file"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me\n");
    for name in &planted {
        assert!(is_link(&dir.join(name)), "{name} is still the planted link");
    }
    // nothing else appeared: the temporary file was renamed into place
    let mut want: Vec<String> = planted.clone();
    want.extend(["out.txt", "p.yaml", "victim.txt"].map(String::from));
    want.sort();
    assert_eq!(listing(&dir), want);
}

/// A character device made with mknod in `dir` (never the machine's own /dev/null or
/// /dev/full, which a failing test run as root could replace). Not permitted (not root):
/// `None` with one line on stderr, or a failure when `CI` is set.
fn private_device(dir: &Path, name: &str, major: u32, minor: u32, test: &str) -> Option<PathBuf> {
    use std::io::Write;
    let path = dir.join(name);
    let made = Command::new("mknod")
        .arg(&path)
        .arg("c")
        .arg(major.to_string())
        .arg(minor.to_string())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        return Some(path);
    }
    let why = "mknod is not permitted (it needs root, or CAP_MKNOD)";
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {why}, and CI is set: run the tests where mknod works");
    }
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test}: {why}; with CI set this is a failure"
    );
    None
}

#[test]
fn a_device_is_written_in_place_never_replaced() {
    let dir = scratch("device");
    program_in(&dir);
    // the numbers of /dev/null (1, 3) and /dev/full (1, 7) on Linux
    let Some(null) = private_device(&dir, "null", 1, 3, "a_device_is_written_in_place") else {
        return;
    };
    // two outputs on one device are fine: a device is a stream, not a file to clobber
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "null", "--trace", "null"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    assert!(fs::metadata(&null).unwrap().file_type().is_char_device());
    let Some(full) = private_device(&dir, "full", 1, 7, "a_device_is_written_in_place") else {
        return;
    };
    // a failing device is an error: the write is not swallowed, the node stays
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "full"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("full_device", crate::stderr(&o));
    assert!(fs::metadata(&full).unwrap().file_type().is_char_device());
    // so is stdout on it
    let o = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(["run", "p.yaml"])
        .current_dir(&dir)
        .stdout(fs::OpenOptions::new().write(true).open(&full).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("full_stdout", crate::stderr(&o));
    assert_eq!(listing(&dir), ["full", "null", "p.yaml"]);
}

#[test]
fn a_fifo_is_written_in_place() {
    let dir = scratch("fifo");
    let expected = program_in(&dir);
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // the reader opens the FIFO and reads until npusim closes it
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            fs::File::open(fifo)
                .unwrap()
                .read_to_string(&mut s)
                .unwrap();
            s
        })
    };
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "fifo"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    assert_eq!(reader.join().unwrap(), expected);
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(listing(&dir), ["fifo", "p.yaml"]);
}

#[test]
fn a_descriptor_path_is_written_directly() {
    let dir = scratch("descriptor");
    let expected = program_in(&dir);
    // /dev/stdout on a pipe links to `pipe:[N]`, no file: written directly, never a rename
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "/dev/stdout"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    assert_eq!(crate::stdout(&o), expected);
    // on a file the shell opened to append: appended to, the file not replaced under it
    fs::write(dir.join("log.txt"), "before\n").unwrap();
    let o = Command::new("sh")
        .args([
            "-c",
            "exec \"$0\" run p.yaml -o /dev/stdout >> log.txt",
            env!("CARGO_BIN_EXE_npusim"),
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    let log = fs::read_to_string(dir.join("log.txt")).unwrap();
    assert_eq!(log, format!("before\n{expected}"));
    assert_eq!(listing(&dir), ["log.txt", "p.yaml"]);
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let dir = scratch("symlink");
    let expected = program_in(&dir);
    fs::create_dir(dir.join("real")).unwrap();
    fs::write(dir.join("real/out.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink("real/out.txt", dir.join("link")).unwrap();
    // a dangling link: the file it names is created
    std::os::unix::fs::symlink("real/new.txt", dir.join("dangling")).unwrap();
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "link", "--html", "dangling"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    assert!(is_link(&dir.join("link")) && is_link(&dir.join("dangling")));
    assert_eq!(
        fs::read_to_string(dir.join("real/out.txt")).unwrap(),
        expected
    );
    assert!(fs::read_to_string(dir.join("real/new.txt"))
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    // the temporary files were made beside the targets, in real/, and renamed there
    assert_eq!(listing(&dir.join("real")), ["new.txt", "out.txt"]);
    assert_eq!(listing(&dir), ["dangling", "link", "p.yaml", "real"]);
}

#[test]
fn an_existing_file_keeps_its_mode() {
    let dir = scratch("mode");
    let expected = program_in(&dir);
    for (name, mode) in [("private.txt", 0o600), ("group.txt", 0o640)] {
        let path = dir.join(name);
        fs::write(&path, "old\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        let o = npusim_in(&dir, &["run", "p.yaml", "-o", name]);
        assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
        assert_eq!(fs::read_to_string(&path).unwrap(), expected);
        let kept = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(kept, mode, "{name}: {kept:o}");
    }
}

#[test]
fn a_file_with_several_hard_links_is_refused_and_left_alone() {
    let dir = scratch("hardlink");
    program_in(&dir);
    fs::write(dir.join("out.txt"), "old\n").unwrap();
    fs::hard_link(dir.join("out.txt"), dir.join("other.txt")).unwrap();
    let o = npusim_in(&dir, &["run", "p.yaml", "-o", "out.txt"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("hard_link", crate::stderr(&o));
    for name in ["out.txt", "other.txt"] {
        assert_eq!(fs::read_to_string(dir.join(name)).unwrap(), "old\n");
    }
    assert_eq!(listing(&dir), ["other.txt", "out.txt", "p.yaml"]);
}

/// `args` run in `dir` must stop with exit 2 before anything runs, leaving every file as it
/// was; the stderr is returned for its snapshot.
fn refused(dir: &Path, args: &[&str]) -> String {
    let before: Vec<(String, Vec<u8>)> = listing(dir)
        .into_iter()
        .filter(|n| dir.join(n).is_file())
        .map(|n| (n.clone(), fs::read(dir.join(&n)).unwrap()))
        .collect();
    let names = listing(dir);
    let o = npusim_in(dir, args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", crate::stderr(&o));
    assert!(o.stdout.is_empty(), "{args:?}");
    assert_eq!(listing(dir), names, "{args:?}: no file appears");
    for (name, bytes) in before {
        assert_eq!(
            fs::read(dir.join(&name)).unwrap(),
            bytes,
            "{args:?}: {name}"
        );
    }
    crate::stderr(&o)
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_runs() {
    let dir = scratch("same_input");
    program_in(&dir);
    fs::create_dir(dir.join("a")).unwrap();
    std::os::unix::fs::symlink("p.yaml", dir.join("alias.yaml")).unwrap();
    fs::hard_link(dir.join("p.yaml"), dir.join("hard.yaml")).unwrap();
    let config = crate::root().join(crate::IDEAL_CONFIG);
    fs::copy(config, dir.join("c.yaml")).unwrap();
    let pack = crate::root().join("planner/tests/data/minimalloc/examples/input.12.csv");
    fs::copy(pack, dir.join("i.csv")).unwrap();
    let mut all = String::new();
    for args in [
        // the program, spelled four ways, and through a symlink and a hard link
        &["run", "p.yaml", "-o", "p.yaml"][..],
        &["run", "p.yaml", "-o", "./p.yaml"],
        &["run", "p.yaml", "-o", "a/../p.yaml"],
        &["run", "p.yaml", "--trace", "alias.yaml"],
        &["plan", "alias.yaml", "-o", "hard.yaml"],
        &["compare", "p.yaml", "--html", "p.yaml"],
        // the config
        &["run", "p.yaml", "--config", "c.yaml", "--html", "./c.yaml"],
        // pack's instance
        &["pack", "i.csv", "--capacity", "64", "-o", "i.csv"],
        // a sweep's merge part and its summary's results
        &["sweep", "--merge", "p.yaml", "-o", "p.yaml"],
        &["sweep", "--summary", "i.csv", "--html", "i.csv"],
    ] {
        all.push_str(&format!("$ npusim {}\n", args.join(" ")));
        all.push_str(&refused(&dir, args));
    }
    insta::assert_snapshot!("output_is_an_input", all);
}

#[test]
fn a_file_named_by_a_sweep_or_a_measurements_file_is_an_input_too() {
    let dir = scratch("named_inputs");
    program_in(&dir);
    fs::write(
        dir.join("s.yaml"),
        "programs: [p.yaml]\nparams: { tiles: [2] }\nlevels: [2]\n",
    )
    .unwrap();
    let calibrate = crate::root().join("tests/fixtures/calibrate");
    for name in [
        "measurements.yaml",
        "copy.yaml",
        "loads.yaml",
        "stores.yaml",
        "fit_config.yaml",
    ] {
        fs::copy(calibrate.join(name), dir.join(name)).unwrap();
    }
    let mut all = String::new();
    for args in [
        &["sweep", "s.yaml", "-o", "p.yaml"][..],
        &["sweep", "s.yaml", "-o", "s.yaml"],
        &[
            "calibrate",
            "measurements.yaml",
            "--check",
            "-o",
            "copy.yaml",
        ],
        &[
            "calibrate",
            "measurements.yaml",
            "--check",
            "--html",
            "measurements.yaml",
        ],
        // the config --fit edits, written over itself
        &[
            "calibrate",
            "measurements.yaml",
            "--config",
            "fit_config.yaml",
            "--fit",
            "cube.startup",
            "-o",
            "./fit_config.yaml",
        ],
    ] {
        all.push_str(&format!("$ npusim {}\n", args.join(" ")));
        all.push_str(&refused(&dir, args));
    }
    insta::assert_snapshot!("named_inputs", all);
}

#[test]
fn two_outputs_on_one_path_are_refused() {
    let dir = scratch("two_outputs");
    program_in(&dir);
    fs::create_dir(dir.join("a")).unwrap();
    let mut all = String::new();
    for args in [
        &["run", "p.yaml", "--trace", "x", "--html", "x"][..],
        &[
            "run", "p.yaml", "-o", "x", "--trace", "a/../x", "--html", "./x",
        ],
        &["compare", "p.yaml", "-o", "y", "--html", "a/../y"],
    ] {
        all.push_str(&format!("$ npusim {}\n", args.join(" ")));
        all.push_str(&refused(&dir, args));
    }
    insta::assert_snapshot!("two_outputs", all);
}

/// Starts `args` in `dir`, waits until its temporary file for `target` appears, sends
/// `signal` (with the system's `kill`), and returns the exit code once the process ended.
fn interrupted(dir: &Path, args: &[&str], target: &str, signal: &str) -> Option<i32> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let prefix = format!(".{target}.");
    let start = Instant::now();
    while !listing(dir).iter().any(|n| n.starts_with(&prefix)) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{args:?} ended before writing"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{args:?}: no temporary file"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    child.wait().unwrap().code()
}

#[test]
fn a_signal_during_a_traced_run_leaves_no_file() {
    let dir = scratch("signal_run");
    fs::copy(crate::root().join(LONG), dir.join("long.yaml")).unwrap();
    let args = [
        "run",
        "long.yaml",
        "--param",
        "tiles=200000",
        "--param",
        "n=256",
        "--trace",
        "t.json",
    ];
    // 128 + SIGINT (2)
    assert_eq!(interrupted(&dir, &args, "t.json", "INT"), Some(130));
    assert_eq!(listing(&dir), ["long.yaml"], "no trace, no temporary file");
    // 128 + SIGTERM (15); an existing trace is left as it was
    fs::write(dir.join("t.json"), "old\n").unwrap();
    assert_eq!(interrupted(&dir, &args, "t.json", "TERM"), Some(143));
    assert_eq!(listing(&dir), ["long.yaml", "t.json"]);
    assert_eq!(fs::read_to_string(dir.join("t.json")).unwrap(), "old\n");
}

#[test]
fn a_signal_during_a_sweep_leaves_no_partial_output() {
    let dir = scratch("signal_sweep");
    fs::copy(crate::root().join(LONG), dir.join("long.yaml")).unwrap();
    // two points of 100,000 tiles on one worker: seconds each in a debug build
    fs::write(
        dir.join("s.yaml"),
        "programs: [long.yaml]\nparams: { tiles: [100000, 100001], n: [256] }\nlevels: [2]\n",
    )
    .unwrap();
    fs::write(dir.join("r.csv"), "old\n").unwrap();
    let args = ["sweep", "s.yaml", "-j", "1", "-o", "r.csv"];
    assert_eq!(interrupted(&dir, &args, "r.csv", "INT"), Some(130));
    assert_eq!(listing(&dir), ["long.yaml", "r.csv", "s.yaml"]);
    assert_eq!(fs::read_to_string(dir.join("r.csv")).unwrap(), "old\n");
    fs::remove_file(dir.join("r.csv")).unwrap();
    assert_eq!(interrupted(&dir, &args, "r.csv", "TERM"), Some(143));
    assert_eq!(listing(&dir), ["long.yaml", "s.yaml"]);
}

#[test]
fn a_closed_stdout_is_an_error() {
    let dir = scratch("closed_stdout");
    program_in(&dir);
    // `>&-`: descriptor 1 closed before npusim starts
    for command in ["exec \"$0\" run p.yaml >&-", "exec \"$0\" plan p.yaml >&-"] {
        let o = Command::new("sh")
            .args(["-c", command, env!("CARGO_BIN_EXE_npusim")])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{command}");
        assert_eq!(
            crate::stderr(&o),
            "error: cannot write to stdout: it is closed\n",
            "{command}: one line"
        );
    }
}

#[test]
fn a_reader_that_stops_ends_the_output_quietly() {
    let dir = scratch("broken_pipe");
    program_in(&dir);
    // the reader is gone before npusim writes: its first write meets a broken pipe
    let mut child = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(["run", "p.yaml"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(crate::stderr(&o), "");
    // `npusim sweep ... | head -1`: the header read, the sweep's rows then meet the broken
    // pipe; a sweep that ran exits 0
    let sweep = crate::root().join("programs/sweeps/bench64_small.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_npusim"))
        .args(["sweep", "-j", "1"])
        .arg(&sweep)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("index,program,"), "{first}");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    assert!(
        !crate::stderr(&o).contains("error:"),
        "{}",
        crate::stderr(&o)
    );
}
