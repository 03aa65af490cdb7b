//! Multi-buffers in nested loops under automatic sync (issue: "automatic sync that keeps every
//! double buffer overlapping"): the CATLASS-shaped blocked matmul against its hand-synced twin,
//! the N-tiled matmul, a slot that cannot be tied to a loop's count, the rmsnorm whose reuse
//! level 2 serialises a double buffer, and `run --level best`.

use crate::{npusim, stderr, stdout};
use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = npusim(&all);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn cycles(doc: &Value) -> u64 {
    doc["total_cycles"].as_u64().unwrap()
}

fn warnings(doc: &Value, kind: &str) -> Vec<String> {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == kind)
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn blocked_matmul_auto_is_within_five_percent_of_its_hand_synced_twin() {
    let auto = run_json(&["programs/matmul_blocked.yaml"]);
    let manual = run_json(&["programs/matmul_blocked_manual.yaml"]);
    // the same buffers, so the same plan: every offset equal
    let offsets = |d: &Value| {
        let b = d["plan"]["buffers"].as_object().unwrap();
        b.iter()
            .map(|(k, v)| (k.clone(), v["offsets"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(offsets(&auto), offsets(&manual));
    let (a, m) = (cycles(&auto), cycles(&manual));
    assert!(a * 100 <= m * 105, "auto {a} against manual {m}");
    for d in [&auto, &manual] {
        assert_eq!(d["hazards"], serde_json::json!([]));
        assert!(d["findings"].as_array().unwrap().is_empty());
    }
    // the L1 release has one id per slot: `kk % 2`, as written
    let o = npusim(&["plan", "programs/matmul_blocked.yaml", "--show-sync"]);
    let text = stdout(&o);
    assert!(
        text.contains(r#"- wait_flag: { src: mte1, dst: mte2, id: "kk % 2" }"#),
        "{text}"
    );
    assert!(!text.contains("# warning"), "{text}");
    assert!(warnings(&auto, "serialised").is_empty());
}

#[test]
fn n_tiled_matmul_overlaps_its_l0c_and_l1_slots() {
    // 8 output tiles (n) × 2 L1 tiles (kk): 16 L1 tiles, each a 128 × 256 tile of a and a
    // 256 × 128 tile of b, 64 KiB each, loaded `layout: nz` at 96 B/cycle: hits at min(96, 110),
    // misses alone on the core's HBM at 96 too, so ceil(65536 / 96) = 683 cycles of MTE2 work
    // every load, 32 × 683 = 21,856. Auto sync hands each L1 tile to MTE1 with one set_flag
    // after its two loads, which waits for b's load to complete: 37 + 1,400 cycles of startup
    // when it misses (n even: its columns are the first half of their 512-byte lines), 37 when
    // it hits (n odd: the lines n - 1 brought in; a hit adds no latency to the path's startup);
    // a's load starts earlier and completes first. MTE2 drains 8 × 1,437 + 8 × 37 = 11,792.
    let doc = run_json(&["programs/matmul_ntiled.yaml"]);
    let mte2 = &doc["pipes"]["MTE2"];
    assert_eq!(mte2["busy"], 21_856);
    assert_eq!(mte2["stalls"]["drain"], 11_792);
    // S sends six set_flags, loops n (2), sends M's wait_flag, loops kk (2), sends MTE2's
    // wait_flag and the first load at 12, which joins MTE2 at 13. If MTE2 never waits for an
    // L1 slot, its last load completes at 13 + 21,856 + 11,792 = 33,661: the loads of tile
    // i + 2 wait for MTE1's copies of tile i (slot kk % 2). Those take, from tile i's flag (2):
    // each L0 step's copy 16 KiB / 222 + 16 KiB / 121 = 74 + 136 = 210 cycles (+ 30 to
    // complete), each mmad 256 + 21; copies 0 and 1 back to back [0, 420), mmad 0 [240, 496),
    // mmad 1 [496, 752) done at 773, copy 3 (waiting for mmad 1's L0 half) [773, 983), done at
    // 1,013, its release visible at 1,015 + 2: about 1,020 cycles, while MTE2 spends at least
    // 2 × 683 + 37 = 1,403 on tile i + 1. After the last load, at most the last tile's work,
    // serialised: its flag (2), 4 copies (210 + 30 + 2 each), 4 mmads (256 + 21 + 2), the
    // fixpipe (382 + 200) and the last release (2): 2 + 968 + 1,116 + 582 + 2 = 2,670. So the
    // run takes at most 33,661 + 2,670 = 36,331 cycles, which it can only if the copies and
    // mmads of every L1 tile but the last (and each tile's fixpipe, in its own L0C slot) hide
    // under the next loads. Without the second L1 slot MTE2 would also wait for every tile's
    // 4 × 256 cycles of M: 16 × 1,024 = 16,384 more, over 52,000.
    let total = cycles(&doc);
    assert!((33_661..=36_331).contains(&total), "total {total}");
    // the L1 slot written as a count over both loops is the same slot, so the same sync
    let text = std::fs::read_to_string(crate::root().join("programs/matmul_ntiled.yaml"))
        .unwrap()
        .replace("l1a@(kk % 2)", "l1a@((n * (K / kt) + kk) % 2)")
        .replace("l1b@(kk % 2)", "l1b@((n * (K / kt) + kk) % 2)");
    assert!(text.contains("(n * (K / kt) + kk) % 2"));
    let dir = crate::scratch("ntiled");
    let path = dir.join("ntiled_count.yaml");
    std::fs::write(&path, text).unwrap();
    let rewritten = run_json(&[path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(cycles(&rewritten), cycles(&doc));
    assert_eq!(rewritten["syncs_inserted"], doc["syncs_inserted"]);
}

#[test]
fn a_slot_that_restarts_with_each_block_is_reported_serialised() {
    // K / kt = 3 trips: `kk % 2` runs 0 1 0, 0 1 0, ... across blocks, so it follows no
    // loop's whole-run count and the L1 release keeps one id
    let odd = run_json(&["programs/matmul_blocked.yaml", "--param", "K=768"]);
    let w = warnings(&odd, "serialised");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("multi-buffer `l1a` is serialised: the slot of `l1a@(kk % 2)"),
        "{w:?}"
    );
    let o = npusim(&[
        "plan",
        "programs/matmul_blocked.yaml",
        "--param",
        "K=768",
        "--show-sync",
    ]);
    assert!(
        stdout(&o).contains("# warning: multi-buffer `l1a` is serialised"),
        "{}",
        stdout(&o)
    );
    let o = npusim(&["run", "programs/matmul_blocked.yaml", "--param", "K=768"]);
    assert!(stdout(&o).contains("[serialised] multi-buffer `l1a`"));
    // written with the running count, the slots alternate again: no warning, and faster
    let text = std::fs::read_to_string(crate::root().join("programs/matmul_blocked.yaml"))
        .unwrap()
        .replace("@(kk % 2)", "@(((K / kt) * ((N / bn) * mb + nb) + kk) % 2)");
    let dir = crate::scratch("blocked");
    let path = dir.join("blocked_count.yaml");
    std::fs::write(&path, text).unwrap();
    let fixed = run_json(&[path.to_str().unwrap(), "--param", "K=768"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(warnings(&fixed, "serialised").is_empty(), "{fixed}");
    assert!(cycles(&fixed) < cycles(&odd));
}

/// The rmsnorm of tests/fixtures/rmsnorm_blocks.yaml at 128 KiB of UB (its header explains the
/// placements). Sizes: gb 8,192 bytes; xb, sq and yb 32,768 a slot; ss 32 (16 aligned up). The
/// side-by-side sum, 172,064, exceeds 131,072, so first fit places, in UB planning order (DMA
/// entries gb, xb, yb first, then sq, ss):
/// - level 2: gb 0; xb 8,192 and 40,960; yb@0 73,728 (free, level 2); yb@1 finds no level-2
///   room (106,496 + 32,768 > 131,072) and level 1 is for slot 0 only, so level 0 puts it at the
///   lowest address free by lifetime, xb@0's 8,192 (they touch at the vmul that reads xb and
///   writes yb); sq (live before yb) at level 0 on 73,728; ss at level 2 on 106,496;
/// - level 1: yb@0 reuses xb's slot 0 and takes both of xb's slots, 8,192 and 40,960.
#[test]
fn rmsnorm_level_two_serialises_a_double_buffer_and_says_so() {
    let f = "tests/fixtures/rmsnorm_blocks.yaml";
    let at = |level: &str| run_json(&[f, "--capacity", "ub=128KiB", "--level", level]);
    let offsets = |d: &Value, b: &str| d["plan"]["buffers"][b]["offsets"].clone();
    let l2 = at("2");
    assert_eq!(offsets(&l2, "xb"), serde_json::json!([8192, 40960]));
    assert_eq!(offsets(&l2, "yb"), serde_json::json!([73728, 8192]));
    assert_eq!(offsets(&l2, "sq"), serde_json::json!([73728]));
    let l1 = at("1");
    assert_eq!(offsets(&l1, "yb"), serde_json::json!([8192, 40960]));
    let l0 = at("0");
    assert_eq!(offsets(&l0, "yb"), serde_json::json!([8192, 40960]));
    // level 2's loads wait for the previous block's store: nothing overlaps
    assert_eq!(l2["overlap_cycles"], 0);
    assert!(
        cycles(&l2) * 2 > cycles(&l1) * 3,
        "{} {}",
        cycles(&l2),
        cycles(&l1)
    );
    assert_eq!(cycles(&l1), cycles(&l0));
    // and the report says which buffer and why
    let w = warnings(&l2, "serialised");
    assert_eq!(
        w,
        ["multi-buffer `yb` is serialised: slot 1 of `yb` and slot 0 of `xb` share bytes under the plan, so `tests/fixtures/rmsnorm_blocks.yaml:29:9 load { src: \"x[b * blk : (b + 1) * blk]\", dst: xb }` waits for `tests/fixtures/rmsnorm_blocks.yaml:37:9 store { src: yb, dst: \"y[b * blk : (b + 1) * blk]\" }` of the iteration before: their slots cannot overlap the iterations of `tests/fixtures/rmsnorm_blocks.yaml:22:5 for { var: b, to: \"rows / blk\" }`"]
    );
    assert!(warnings(&l1, "serialised").is_empty());
    // --level best keeps level 1 (level 0 ties it: the higher level wins) and warns
    let best = run_json(&[f, "--capacity", "ub=128KiB", "--level", "best"]);
    assert_eq!(best["best_level"]["level"], 1);
    let tried: Vec<u64> = best["best_level"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["total_cycles"].as_u64().unwrap())
        .collect();
    assert_eq!(tried, [cycles(&l2), cycles(&l1), cycles(&l0)]);
    assert_eq!(cycles(&best), cycles(&l1));
    let w = warnings(&best, "slower_level");
    assert_eq!(w.len(), 1);
    assert!(w[0].starts_with("level 2 (the default) takes"), "{w:?}");
    let o = npusim(&["run", f, "--capacity", "ub=128KiB", "--level", "best"]);
    let text = stdout(&o);
    assert!(text.contains("levels  best of 2, 1, 0: level 1"), "{text}");
    assert!(
        text.contains("[slower_level] level 2 (the default)"),
        "{text}"
    );
}

#[test]
fn level_best_is_for_run_only() {
    for cmd in ["plan", "check"] {
        let o = npusim(&[cmd, "programs/vec_add_db.yaml", "--level", "best"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        assert!(
            stderr(&o).contains("use it with `npusim run`"),
            "{}",
            stderr(&o)
        );
    }
    let o = npusim(&["run", "programs/vec_add_db.yaml", "--level", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("use 0, 1, 2 or best"), "{}", stderr(&o));
}

/// `mmad` and `mmad_l1` get the same treatment: two ops accumulating into one L0C are ordered
/// on M by a `barrier: m` unless something already drains M between them (the `set_flag`
/// freeing an L0 slot after each `mmad` in a ping-pong does).
#[test]
fn accumulating_mmad_and_mmad_l1_are_ordered_alike() {
    let program = |op: &str, scopes: &str, feed: &str| {
        format!(
            "kernel: acc\ncore: aic\nsync: auto\n\
             gm:\n  a: {{ shape: [128, 64], dtype: f16 }}\n  b: {{ shape: [64, 128], dtype: f16 }}\n  c: {{ shape: [128, 128], dtype: f16 }}\n\
             buffers:\n  l1a: {{ scope: l1, shape: [128, 64], dtype: f16 }}\n  l1b: {{ scope: l1, shape: [64, 128], dtype: f16 }}\n{scopes}\
             \x20 l0c: {{ scope: l0c, shape: [128, 128], dtype: f32 }}\n\
             body:\n  - load: {{ src: a, dst: l1a }}\n  - load: {{ src: b, dst: l1b }}\n{feed}\
             \x20 - for: {{ var: k, to: 4 }}\n    body:\n\
             \x20     - {op}: {{ a: {a}, b: {b}, c: l0c, m: 128, n: 128, k: 64, init: \"k == 0\" }}\n\
             \x20 - fixpipe: {{ src: l0c, dst: c }}\n",
            a = if op == "mmad" { "l0a" } else { "l1a" },
            b = if op == "mmad" { "l0b" } else { "l1b" },
        )
    };
    let mmad = program(
        "mmad",
        "  l0a: { scope: l0a, shape: [128, 64], dtype: f16 }\n  l0b: { scope: l0b, shape: [64, 128], dtype: f16 }\n",
        "  - copy: { src: l1a, dst: l0a }\n  - copy: { src: l1b, dst: l0b }\n",
    );
    let mmad_l1 = program("mmad_l1", "", "");
    let dir = crate::scratch("acc");
    for (name, text) in [("mmad.yaml", mmad), ("mmad_l1.yaml", mmad_l1)] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let o = npusim(&["plan", path.to_str().unwrap(), "--show-sync"]);
        let synced = stdout(&o);
        let in_loop = synced.split("- for:").nth(1).unwrap_or_default();
        assert!(
            in_loop.contains("- barrier: m"),
            "{name}: no barrier between the accumulating ops:\n{synced}"
        );
        let run = run_json(&[path.to_str().unwrap()]);
        assert_eq!(run["hazards"], serde_json::json!([]), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
