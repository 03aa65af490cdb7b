//! Double buffering pays where compute and moves are balanced: on the idealised config (the
//! built-in one without its refinements: gm reads at the L2 rate) the double-buffered vector add
//! overlaps its loads with its adds and finishes at least 1.2x ahead of the single-buffered one
//! doing the same work. On the built-in config one core's cold add waits on HBM's latency, and
//! overlap buys little; a launch of 48 cores streaming at once shares the chip's HBM rate.
//!
//! The bound, per 32 KiB tile on the idealised config: double buffering leaves MTE2 with its
//! loads (2 × ceil(32768 / 110) = 596 cycles) plus the EnQue set_flag's drain (50, the load
//! startup) = 646; single buffering adds the V round trip MTE2 waits for (128 repeats × 1 cycle
//! of vadd + 6 startup + 2 × 2 flag latency = 138). Steady state: 784 / 646 = 1.21, every tile's
//! 138 cycles showing up as MTE2 `wait_flag V#0` (128 × 138 = 17,664).
use crate::{ideal_config, root, simulate, simulate_on};
use sim::Pipe;

#[test]
fn double_buffering_is_at_least_1_2x_faster_with_more_overlap() {
    let (_, db) = simulate_on(
        &root().join("programs/vec_add_db_manual.yaml"),
        ideal_config(),
    );
    let (_, sb) = simulate_on(
        &root().join("programs/vec_add_sb_manual.yaml"),
        ideal_config(),
    );
    let (db_prog, sb_prog) = (&db.parts[0].program, &sb.parts[0].program);
    let (db, sb) = (&db.result, &sb.result);
    // one core each
    let (db_core, sb_core) = (&db.cores[0], &sb.cores[0]);
    // same work: the same number of instructions on every data pipe
    for pipe in [Pipe::V, Pipe::Mte2, Pipe::Mte3] {
        assert_eq!(
            db_core.pipe(pipe).unwrap().busy,
            sb_core.pipe(pipe).unwrap().busy,
            "{pipe}: {} vs {} do different work",
            db_prog.kernel,
            sb_prog.kernel
        );
    }
    let speedup = sb.total_cycles as f64 / db.total_cycles as f64;
    assert!(
        speedup >= 1.2,
        "double buffering: {} cycles vs single: {} cycles = {speedup:.2}x",
        db.total_cycles,
        sb.total_cycles
    );
    assert!(
        db_core.overlap_cycles > sb_core.overlap_cycles,
        "overlap: db {} cycles, sb {} cycles",
        db_core.overlap_cycles,
        sb_core.overlap_cycles
    );
    assert!(db_core.overlap(db.total_cycles) > sb_core.overlap(sb.total_cycles));
    // the why: single buffering's extra cycles are MTE2 waiting for V to free x and y
    let waits = |r: &sim::RunResult| -> u64 {
        r.cores[0]
            .pipe(Pipe::Mte2)
            .unwrap()
            .stalls
            .iter()
            .filter(|(s, _)| matches!(s, sim::engine::Stall::WaitFlag { src: Pipe::V, .. }))
            .map(|(_, c)| c)
            .sum()
    };
    let extra = sb.total_cycles - db.total_cycles;
    assert!(
        waits(sb) - waits(db) >= extra * 9 / 10,
        "MTE2 waits on V: sb {} db {}, extra cycles {extra}",
        waits(sb),
        waits(db)
    );
}

#[test]
fn on_the_built_in_config_both_adds_wait_on_hbm_latency() {
    // The built-in config's gm memory system: every tile's 32 KiB of x and of y is new to the
    // cold L2, and one core's MTE2 runs one load at a time, so each load misses alone and has
    // the chip's HBM to itself: min(110, 768 / 1) = 110 bytes a cycle, ceil(32768 / 110) = 298
    // cycles of work, 256 loads = 76,288 busy cycles on MTE2 for both programs. What the misses
    // cost is latency: each tile's EnQue set_flag on MTE2 waits for the y load to complete,
    // 50 + 1,400 cycles of startup after its work, so MTE2 drains 128 × 1,450 = 185,600 cycles.
    // Per tile, double buffering leaves MTE2 with 2 × 298 + 1,450 = 2,046 cycles; single
    // buffering adds V's round trip (2 flag hops of 2 and the add's 6 + 256: 128 repeats of
    // 2 cycles, each repeat's two inputs in one bank group in the sequential plan): 2,312. The
    // steady-state ratio 2,312 / 2,046 = 1.13: the latency neither program can hide dominates.
    let (_, db) = simulate(&root().join("programs/vec_add_db_manual.yaml"));
    let (_, sb) = simulate(&root().join("programs/vec_add_sb_manual.yaml"));
    let drain = |r: &sim::RunResult| -> u64 {
        r.cores[0]
            .pipe(Pipe::Mte2)
            .unwrap()
            .stalls
            .iter()
            .filter(|(s, _)| matches!(s, sim::engine::Stall::Drain))
            .map(|(_, c)| c)
            .sum()
    };
    for r in [&db.result, &sb.result] {
        assert_eq!(r.cores[0].pipe(Pipe::Mte2).unwrap().busy, 76_288);
        assert_eq!(drain(r), 185_600);
        let m = r.memory.as_ref().unwrap();
        assert_eq!((m.reads, m.hit_bytes, m.miss_bytes), (256, 0, 256 * 32768));
    }
    // MTE2's chain alone: 128 × 2,046 = 261,888 cycles; single buffering's also waits for V
    // before every tile but the first: + 127 × 266 = 295,670
    assert!(
        db.result.total_cycles >= 261_888,
        "{}",
        db.result.total_cycles
    );
    assert!(
        sb.result.total_cycles >= 295_670,
        "{}",
        sb.result.total_cycles
    );
    let speedup = sb.result.total_cycles as f64 / db.result.total_cycles as f64;
    assert!((1.1..1.2).contains(&speedup), "{speedup:.3}");
}

#[test]
fn a_launch_of_48_blocks_shares_hbm() {
    // programs/vec_add_blocks.yaml on 48 blocks (every vector core of the 24 AI cores): the
    // 256 loads of the single-core add spread over 48 cores, all cold. At the start every core
    // sends its first load of x at the same cycle, so the 48 start together, in core order,
    // each to bring in 64 whole lines (32,768 B) at up to the path's 110 bytes a cycle, of what
    // HBM's 768 the loads before it leave, cycle by cycle (t: cycles from their start):
    // - loads 1-6 take 110 each (660): ceil(32,768 / 110) = 298 cycles, [0, 298);
    // - load 7 takes the other 108 over [0, 298) (32,184 B), then the last 584 B at 110 once
    //   1-6 are done: 6 cycles, [298, 304): 304;
    // - loads 8-12 get nothing until 298, then 110 a cycle: 298 cycles, ending at 596;
    // - load 13 gets 768 - 110 - 5 × 110 = 108 over [298, 304) (648 B) while load 7 ends,
    //   then 110 over [304, 596) (292 × 110 = 32,120 B): 32,768 B exactly at 596;
    // - load 14 gets 108 over [304, 596) (31,536 B), then 1,232 B at 110: 12 cycles, 608;
    // - load 15 gets nothing until 596, 110 over [596, 608) (1,320 B) and the last 31,448 B
    //   at 110: 286 cycles more, ending at 894.
    // A later load never ends before an earlier one (those hold what they took), and no cycle
    // carries more than 768 bytes of HBM: the launch's 8 MiB of reads and 4 MiB of writes (the
    // L2 writes through) need at least 12 MiB / 768 = 16,384 cycles.
    let file = crate::scratch("hbm-48").join("run.json");
    let o = crate::npusim(&[
        "run",
        "programs/vec_add_blocks.yaml",
        "--blocks",
        "48",
        "--no-race-check",
        "--format",
        "json",
        "--trace",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    std::fs::remove_file(&file).ok();
    let events = trace["traceEvents"].as_array().unwrap();
    // each core's process is named after it; its first load is its earliest
    let mut first: Vec<(u64, u64, u64)> = Vec::new(); // (core, start, work)
    for p in events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
    {
        let name = p["args"]["name"].as_str().unwrap();
        let block: u64 = name.split(' ').nth(1).unwrap().parse().unwrap();
        let load = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == "load" && e["pid"] == p["pid"])
            .min_by_key(|e| e["ts"].as_u64().unwrap())
            .unwrap();
        first.push((
            block,
            load["ts"].as_u64().unwrap(),
            load["dur"].as_u64().unwrap(),
        ));
    }
    first.sort();
    assert_eq!(first.len(), 48);
    assert!(first.iter().all(|f| f.1 == first[0].1), "{first:?}");
    let work: Vec<u64> = first.iter().map(|f| f.2).collect();
    let mut expected = vec![298; 6];
    expected.extend([304, 596, 596, 596, 596, 596, 596, 608, 894]);
    assert_eq!(work[..15], expected);
    assert!(work.windows(2).all(|w| w[0] <= w[1]), "{work:?}");
    let total = doc["total_cycles"].as_u64().unwrap();
    let hbm = doc["memory"]["hbm"]["bytes"].as_u64().unwrap();
    assert_eq!(hbm, 12 << 20);
    assert!(total >= 16_384 && hbm <= 768 * total, "{total}");
    let m = &doc["memory"];
    assert_eq!(
        (&m["reads"], &m["miss_bytes"]),
        (&256.into(), &(256 * 32768).into())
    );
}

#[test]
fn flash_attention_on_24_blocks_takes_longer_per_block_than_on_one() {
    // programs/flash_attention.yaml: every block does the same work on its own q tile, so a
    // launch of 24 takes as long as one block unless the blocks slow each other down. They
    // share the L2's chip-wide rate (K and V, and the s, p and ot workspaces, are L2 hits
    // after their first touch) and HBM (the first touches, and every write): on 24 blocks
    // each block's cores end later than the lone block's.
    let run = |blocks: &str| -> serde_json::Value {
        let o = crate::npusim(&[
            "run",
            "programs/flash_attention.yaml",
            "--blocks",
            blocks,
            "--no-race-check",
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (one, many) = (run("1"), run("24"));
    let mean_end = |doc: &serde_json::Value| -> f64 {
        let cores = doc["launch"]["cores"].as_array().unwrap();
        let ends: Vec<u64> = cores
            .iter()
            .map(|c| c["end_cycle"].as_u64().unwrap())
            .collect();
        ends.iter().sum::<u64>() as f64 / ends.len() as f64
    };
    let (a, b) = (
        one["total_cycles"].as_u64().unwrap(),
        many["total_cycles"].as_u64().unwrap(),
    );
    assert!(b > a, "24 blocks {b}, one block {a}");
    assert!(mean_end(&many) > mean_end(&one));
    // and neither rate goes above its peak
    for doc in [&one, &many] {
        for rate in ["hbm", "l2"] {
            let share = doc["memory"][rate]["of_peak"].as_f64().unwrap();
            assert!(share <= 1.0, "{rate}: {share}");
        }
    }
}

#[test]
fn the_48_core_copy_of_the_calibration_suite_stays_under_hbm_peak() {
    // calibration/copy_gm_ub_gm.yaml: 48 vector cores copy a 64 MiB f16 tensor GM -> UB -> GM.
    // Every read misses (a cold L2) and every write goes through to HBM, so HBM carries
    // 64 MiB of line fills + 64 MiB of writes = 134,217,728 B; at the chip's 768 B a cycle that
    // needs at least 134,217,728 / 768 = 174,763 cycles (the board: about 114 us with its
    // launch, 1.2 TB/s). Before issue 26 the run took about 91,000 cycles (2.65 TB/s reported).
    let o = crate::npusim(&[
        "run",
        "calibration/copy_gm_ub_gm.yaml",
        "--no-race-check",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let total = doc["total_cycles"].as_u64().unwrap();
    let hbm = &doc["memory"]["hbm"];
    assert_eq!(hbm["bytes"].as_u64().unwrap(), 128 << 20);
    assert!(total >= 174_763, "{total}");
    let share = hbm["of_peak"].as_f64().unwrap();
    assert!(share <= 1.0, "{share}");
    assert_eq!(hbm["peak_gb_per_s"].as_f64().unwrap(), 1382.4); // 768 B x 1.8 GHz
}
