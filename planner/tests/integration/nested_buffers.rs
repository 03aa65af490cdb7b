//! Property: multi-buffers in nested loops under automatic sync. Random pipelines (load, one or
//! two vector ops, store) over an outer and an inner loop, with multi-buffers declared at the
//! top or in the outer loop, their slots implicit or written as expressions that do or do not
//! follow a loop's count (`i % n`, `(o * I + i) % n`, `(i + 1) % n`, `o % n`, `(o + i) % n`), an
//! optional ping-pong loop inside, at every reuse level and at reduced capacities. The auto
//! synchronised run must be race-free and deadlock-free, and never slower than the same plan
//! synchronised with one event id per pair (every multi-buffer id collapsed to one), which is
//! what the ids per slot exist to beat, beyond the issue cycle of each balancing flag op the
//! extra ids add.

use crate::config;
use planner::{plan_program, synchronize, synchronize_with, PlanOptions, SyncOptions};
use proptest::prelude::*;

/// The knobs of one generated pipeline.
#[derive(Clone, Debug)]
struct Shape {
    outer: u32,
    inner: u32,
    /// Slot counts of the input and output buffers.
    nx: u32,
    ny: u32,
    /// Slot expression choices (see [`slot`]) for the input and output buffers.
    sx: u8,
    sy: u8,
    /// Declare the buffers in the outer loop (else at the top).
    in_outer: bool,
    /// A second vector op through a temporary.
    temp: bool,
    /// An inner ping-pong loop of vector ops on a double buffer.
    pingpong: bool,
    level: u8,
    /// UB capacity in per mille of the side-by-side total.
    cap: u32,
}

/// The slot operand suffix for choice `c` of an `n`-slot buffer.
fn slot(c: u8, n: u32, inner: u32) -> String {
    if n == 1 {
        return String::new();
    }
    match c {
        0 => String::new(),
        1 => format!("@(i % {n})"),
        2 => format!("@((o * {inner} + i) % {n})"),
        3 => format!("@((i + 1) % {n})"),
        4 => format!("@(o % {n})"),
        _ => format!("@((o + i) % {n})"),
    }
}

const W: u32 = 2048;

fn program(s: &Shape) -> (String, u64) {
    let rows = s.outer * s.inner;
    let (sx, sy) = (slot(s.sx, s.nx, s.inner), slot(s.sy, s.ny, s.inner));
    let decl = |ind: &str| {
        let mut d = format!(
            "{ind}xb: {{ scope: ub, shape: [{W}], dtype: f16, multi: {} }}\n\
             {ind}yb: {{ scope: ub, shape: [{W}], dtype: f16, multi: {} }}\n",
            s.nx, s.ny
        );
        if s.temp {
            d.push_str(&format!(
                "{ind}tb: {{ scope: ub, shape: [{W}], dtype: f16 }}\n"
            ));
        }
        if s.pingpong {
            d.push_str(&format!(
                "{ind}pb: {{ scope: ub, shape: [{}], dtype: f16, multi: 2 }}\n",
                W / 4
            ));
        }
        d
    };
    let mut t = format!(
        "kernel: nested\ncore: aiv\nsync: auto\n\
         gm:\n  x: {{ shape: [{rows}, {W}], dtype: f16 }}\n  y: {{ shape: [{rows}, {W}], dtype: f16 }}\n"
    );
    if !s.in_outer {
        t.push_str("buffers:\n");
        t.push_str(&decl("  "));
    }
    t.push_str(&format!("body:\n  - for: {{ var: o, to: {} }}\n", s.outer));
    if s.in_outer {
        t.push_str("    buffers:\n");
        t.push_str(&decl("      "));
    }
    t.push_str(&format!(
        "    body:\n      - for: {{ var: i, to: {} }}\n        body:\n",
        s.inner
    ));
    let op = "          - ";
    t.push_str(&format!(
        "{op}load: {{ src: \"x[o * {} + i]\", dst: \"xb{sx}\" }}\n",
        s.inner
    ));
    let src = if s.temp {
        t.push_str(&format!("{op}vexp: {{ ins: [\"xb{sx}\"], out: tb }}\n"));
        "tb".to_string()
    } else {
        format!("xb{sx}")
    };
    if s.pingpong {
        t.push_str(&format!(
            "{op}for: {{ var: j, to: 4 }}\n            body:\n\
             \x20             - vadds: {{ ins: [\"{src}[j * {q} : (j + 1) * {q}]\"], out: pb, scalar: 1 }}\n\
             \x20             - vmuls: {{ ins: [pb], out: \"yb{sy}[j * {q} : (j + 1) * {q}]\", scalar: 2 }}\n",
            q = W / 4
        ));
    } else {
        t.push_str(&format!(
            "{op}vmuls: {{ ins: [\"{src}\"], out: \"yb{sy}\", scalar: 2 }}\n"
        ));
    }
    t.push_str(&format!(
        "{op}store: {{ src: \"yb{sy}\", dst: \"y[o * {} + i]\" }}\n",
        s.inner
    ));
    let total =
        2 * W as u64 * (s.nx + s.ny + s.temp as u32) as u64 + if s.pingpong { W as u64 } else { 0 };
    (t, total)
}

fn shapes() -> impl Strategy<Value = Shape> {
    (
        (1u32..=3, 1u32..=5, 1u32..=3, 1u32..=3),
        (0u8..6, 0u8..6, any::<bool>(), any::<bool>(), any::<bool>()),
        (0u8..=2, prop_oneof![Just(1000u32), 500u32..1000]),
    )
        .prop_map(
            |((outer, inner, nx, ny), (sx, sy, in_outer, temp, pingpong), (level, cap))| Shape {
                outer,
                inner,
                nx,
                ny,
                sx,
                sy,
                in_outer,
                temp,
                pingpong,
                level,
                cap,
            },
        )
}

/// Checks one shape; returns (cycles with ids per slot, cycles with one id), or `None` when
/// the plan overflowed.
fn check(s: &Shape) -> Result<Option<(u64, u64)>, TestCaseError> {
    let (text, total) = program(s);
    let config = config();
    let p = sim::load_program(&text, "nested.yaml", &config, &[])
        .unwrap_or_else(|e| panic!("generator bug: {e}\n{text}"));
    let cap = (total * s.cap as u64 / 1000).max(32).div_ceil(32) * 32;
    let opts = PlanOptions {
        max_level: s.level,
        capacities: vec![(sim::Space::Ub, cap.min(196_608))],
        ..Default::default()
    };
    let Ok(planned) = plan_program(&p, &config, &opts) else {
        return Ok(None); // an overflow: nothing to run
    };
    let addresses = planned.plan.addresses();
    let run = |synced: &planner::Synced| {
        sim::race::check(&synced.program, &config, &addresses)
            .unwrap_or_else(|e| panic!("run error {e:?}\n{text}"))
    };
    let synced = synchronize(&p, &config, &planned.plan);
    let auto = run(&synced);
    prop_assert!(
        auto.hazards.is_empty() && !auto.result.has_findings(),
        "{:?}\nhazards {:#?}\nfindings {:?}\ndeadlock {:?}\n{}",
        s,
        auto.hazards,
        auto.result.findings,
        auto.result.deadlock,
        text
    );
    let one = SyncOptions {
        ids_per_slot: false,
    };
    let serial = synchronize_with(&p, &config, &planned.plan, &one);
    let collapsed = run(&serial);
    prop_assert!(collapsed.hazards.is_empty() && !collapsed.result.has_findings());
    // k ids of a pair need k balancing sets before and k waits after the outermost loop: S
    // issues each in a cycle, which a loop too short to overlap anything does not win back
    let flags = |st: &planner::SyncStats| (st.set_flags + st.wait_flags) as u64;
    let extra = flags(&synced.stats).saturating_sub(flags(&serial.stats));
    prop_assert!(
        auto.result.total_cycles <= collapsed.result.total_cycles + extra,
        "{:?}: {} cycles with ids per slot ({} more flag ops), {} with one id\n{}",
        s,
        auto.result.total_cycles,
        extra,
        collapsed.result.total_cycles,
        text
    );
    Ok(Some((
        auto.result.total_cycles,
        collapsed.result.total_cycles,
    )))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn ids_per_slot_are_race_free_and_never_slower(s in shapes()) {
        check(&s)?;
    }
}

/// The shapes of the issue: `i % 2` slots in a block loop with an even and an odd inner trip
/// count, a running count, `(i + 1) % 2` and an outer-loop slot. Where the slot follows a count
/// the double buffer overlaps iterations and beats one id; `i % 2` over 3 trips follows none and
/// is no faster.
#[test]
fn block_loop_slots() {
    for (inner, sx, faster) in [(4, 1, true), (3, 1, false), (3, 2, true), (4, 3, true)] {
        let s = Shape {
            outer: 3,
            inner,
            nx: 2,
            ny: 2,
            sx,
            sy: 0,
            in_outer: false,
            temp: false,
            pingpong: false,
            level: 2,
            cap: 1000,
        };
        let (auto, one) = check(&s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .expect("fits side by side");
        assert_eq!(auto < one, faster, "{s:?}: {auto} against {one}");
    }
}
