//! `scripts/conformance`, the runner of AscendNPU-IR's lit tests (docs/conformance.md), checked
//! on its own: `--self-test` runs it on a synthetic lit file with a fake tool and asserts the
//! counts per case (a passing and a failing CHECK with its line, expected-error met and missed,
//! the unsupported convention, REQUIRES, `--whole-only`, `--min`, `--filter`); and without the
//! lit tests it skips in one line with status 0, as on any clone. The self-test needs LLVM's
//! FileCheck: without it the test skips with one line, unless CI is set (`.ci/run` installs it
//! with scripts/install-filecheck first), where that is a failure.

use crate::{root, scratch};
use std::io::Write;
use std::process::Command;

#[test]
fn the_runner_counts_cases_on_a_synthetic_lit_file() {
    let out = Command::new(root().join("scripts/conformance"))
        .arg("--self-test")
        .output()
        .expect("scripts/conformance runs (it needs python3)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => assert!(
            stdout.starts_with("conformance --self-test: ok"),
            "unexpected output:\n{stdout}{stderr}"
        ),
        Some(3) => {
            let why = "LLVM's FileCheck is not installed (scripts/install-filecheck installs it)";
            if std::env::var_os("CI").is_some() {
                panic!("conformance --self-test: {why}, and CI is set:\n{stdout}");
            }
            let _ = writeln!(
                std::io::stderr(),
                "skipped: conformance --self-test: {why}; with CI set this is a failure"
            );
        }
        _ => panic!(
            "conformance --self-test failed ({}):\n{stdout}{stderr}",
            out.status
        ),
    }
}

#[test]
fn without_the_lit_tests_the_runner_skips_in_one_line() {
    let empty = scratch("conformance_without_suite");
    let out = Command::new(root().join("scripts/conformance"))
        .env("NPUSIM_CONFORMANCE_DIR", &empty)
        .output()
        .expect("scripts/conformance runs (it needs python3)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}: {stdout}", out.status);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("conformance: skipped: no ")
            && stdout.contains(&empty.join("ascendnpu-ir-v1.2.0").display().to_string()),
        "{stdout}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
