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
