//! The planner's command-line options as a user meets them: `--level`, `--liveness`,
//! `--capacity`, `plan --explain`, and what `check` and `run` say about the plan.

use crate::{npusim, stderr, stdout};
use serde_json::Value;

const LEVELS: &str = "programs/reuse_levels.yaml";
const DB: &str = "programs/vec_add_db_manual.yaml";
const SB: &str = "programs/vec_add_sb_manual.yaml";

fn plan_json(args: &[&str]) -> Value {
    crate::json_of("plan", args)
}

#[test]
fn level_caps_the_reuse_level() {
    let l2 = plan_json(&[LEVELS]);
    assert_eq!(l2["level"], 2);
    assert_eq!(l2["buffers"]["C"]["offsets"], l2["buffers"]["B"]["offsets"]);
    let l1 = plan_json(&[LEVELS, "--level", "1"]);
    assert_eq!(l1["buffers"]["C"]["offsets"], l1["buffers"]["A"]["offsets"]);
    assert_eq!(l1["buffers"]["C"]["level"], "1");
    let l0 = plan_json(&[LEVELS, "--level", "0"]);
    assert_eq!(l0["buffers"]["C"]["offsets"].as_array().unwrap().len(), 1);
    let o = npusim(&["plan", LEVELS, "--level", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--level"), "{}", stderr(&o));
}

#[test]
fn liveness_mode_is_chosen_and_reported() {
    assert_eq!(plan_json(&[DB])["liveness"], "precise");
    assert_eq!(
        plan_json(&[DB, "--liveness", "scoped"])["liveness"],
        "scoped"
    );
    let o = npusim(&["plan", DB, "--liveness", "loose"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn capacity_overrides_a_scope_for_what_if_studies() {
    let doc = plan_json(&[SB, "--capacity", "ub=80KiB"]);
    let ub = &doc["scopes"]["ub"];
    assert_eq!(ub["capacity"], 80 * 1024);
    assert!(ub["used"].as_u64().unwrap() <= 80 * 1024);
    // the manual program's three buffers no longer fit side by side: zb takes xb's bytes
    // inplace, and the plan says the program's flags must order that
    assert_eq!(doc["buffers"]["zb"]["level"], "inplace");
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("the program's own flags must order")),
        "{warnings:?}"
    );
    // bytes are the default unit, and units other than KiB/MiB are refused with the fix
    assert_eq!(
        plan_json(&[SB, "--capacity", "ub=163840"])["scopes"]["ub"]["capacity"],
        163840
    );
    let o = npusim(&["plan", SB, "--capacity", "ub=160KB"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("KiB or MiB"), "{}", stderr(&o));
}

#[test]
fn a_fixed_slot_past_a_shrunk_capacity_is_an_overflow_not_an_internal_error() {
    // bank_conflict.yaml fixes zb (n = 4096 f16: 8192 bytes) at 98304: it ends at 106496,
    // inside the config's 192 KiB UB but past `--capacity ub=96KiB` (98304). The loader checks
    // `at:` against the config only, so the planner must refuse it: 106496 bytes needed, 98304
    // available, in HIVM's bits (851968 and 786432) first.
    for cmd in ["plan", "run"] {
        let o = npusim(&[cmd, "programs/bank_conflict.yaml", "--capacity", "ub=96KiB"]);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("ub overflow, requires 851968 bits while 786432 bits available! (106496 bytes needed, 98304 available)"),
            "{cmd}: {err}"
        );
        assert!(
            err.contains("zb (fixed by `at:`, ends at byte 106496): 8192 bytes"),
            "{err}"
        );
        assert!(!err.contains("internal"), "{err}");
    }
}

#[test]
fn capacity_for_a_scope_the_core_lacks_is_bad_input() {
    let o = npusim(&[
        "plan",
        DB,
        "--capacity",
        "l1=1KiB",
        "--capacity",
        "l0c=1KiB",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    // both problems, each with the scopes the core has
    assert!(
        err.contains("--capacity l1=...: core aiv has no l1 scope; its scopes are ub"),
        "{err}"
    );
    assert!(err.contains("core aiv has no l0c scope"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_capacity_too_small_is_an_overflow_everywhere() {
    for cmd in ["check", "plan", "run"] {
        let o = npusim(&[cmd, DB, "--capacity", "ub=64KiB"]);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            // N is the level-0 peak: xb and yb, two 32 KiB slots each, live at the vadd
            err.contains("ub overflow, requires 1048576 bits while 524288 bits available!"),
            "{cmd}: {err}"
        );
        assert!(err.contains("peak liveness at position"), "{cmd}: {err}");
        assert!(o.stdout.is_empty(), "{cmd}");
    }
}

#[test]
fn check_summarises_the_plan() {
    let o = npusim(&["check", LEVELS]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("ok: reuse_levels (")
            && out.contains("plan: ub 184320 of 196608 bytes (reuse)"),
        "{out}"
    );
    // level 2 reuses only vector bytes here: no DMA-reuse warning
    assert!(!out.contains("warning:"), "{out}");
    let o = npusim(&["check", LEVELS, "--level", "0"]);
    assert!(
        stdout(&o).contains("warning: [hivm-plan-memory] There reused some dma buffers in ub"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn explain_says_why_a_buffer_got_its_address() {
    let o = npusim(&["plan", LEVELS, "--level", "1", "--explain", "C"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "buffer   C (ub, 36864 bytes a slot",
        "(2 slots, 1 declared: it became a multi-buffer)",
        "placed   level 1:",
        "class    vector",
        "shares bytes with:",
        "  A (slot 0 = its slot 0, slot 1 = its slot 1)",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }

    let o = npusim(&["plan", SB, "--capacity", "ub=80KiB", "--explain", "zb"]);
    let out = stdout(&o);
    assert!(
        out.contains("placed   inplace: takes the address of `xb`, an input of"),
        "{out}"
    );
    assert!(out.contains("the same storage (share or inplace)"), "{out}");

    let o = npusim(&["plan", DB, "--explain", "xb"]);
    let out = stdout(&o);
    assert!(
        out.contains("placed   sequential: every ub buffer fits side by side"),
        "{out}"
    );
    assert!(
        out.contains("shares   no bytes with any other buffer"),
        "{out}"
    );
}

#[test]
fn explain_of_an_unknown_buffer_suggests_one() {
    let o = npusim(&["plan", DB, "--explain", "xbb"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("--explain xbb: programs/vec_add_db_manual.yaml has no buffer `xbb`; did you mean `xb`?"),
        "{err}"
    );
}

#[test]
fn an_overflow_whose_peak_fits_says_why() {
    let f = "tests/fixtures/fragmented_peak_fits.yaml";
    let o = npusim(&["plan", f, "--capacity", "ub=5088"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    // the level-0 peak: b0 (2 slots of 1,024 bytes) + b5 (2,048) + b4 (512) = 4,608 bytes
    assert!(
        err.contains("ub overflow, requires 36864 bits while 40704 bits available! (4608 bytes needed, 5088 available)\n  the level-0 peak fits, but first fit with rollback found no address for every slot"),
        "{err}"
    );
    assert!(err.contains("help: plan with `--placement exact`"), "{err}");
    let doc = plan_json(&[f, "--capacity", "ub=5088", "--placement", "exact"]);
    assert!(
        doc["scopes"]["ub"]["used"].as_u64().unwrap() <= 5088,
        "{doc}"
    );
}

#[test]
fn placement_exact_places_what_first_fit_fragments() {
    let f = "tests/fixtures/first_fit_fragments.yaml";
    // first fit: 224 KiB for a peak of 160 KiB, in a 192 KiB UB
    let o = npusim(&["plan", f]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("ub overflow, requires 1835008 bits while 1572864 bits available!"),
        "{}",
        stderr(&o)
    );
    let doc = plan_json(&[f, "--placement", "exact"]);
    let ub = &doc["scopes"]["ub"];
    assert_eq!(ub["peak_live"], 163840);
    assert!(ub["used"].as_u64().unwrap() <= 196608, "{ub}");
    assert_eq!(ub["mode"], "reuse");
    assert_eq!(doc["buffers"]["red"]["level"], "0");
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with("ub: first fit found no placement; the exact search did")),
        "{warnings:?}"
    );
    // a scope that fits under first fit is not touched by --placement exact
    assert_eq!(plan_json(&[DB, "--placement", "exact"]), plan_json(&[DB]));
    // and a scope nothing fits still overflows, with the same text
    let o = npusim(&["plan", f, "--placement", "exact", "--capacity", "ub=150KiB"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("ub overflow, requires"),
        "{}",
        stderr(&o)
    );
}
