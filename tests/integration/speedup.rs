//! Double buffering pays where compute and moves are balanced: on the idealised config (the
//! built-in one without its refinements: gm reads at the L2 rate) the double-buffered vector add
//! overlaps its loads with its adds and finishes at least 1.4x ahead of the single-buffered one
//! doing the same work. On the built-in config the add is bound by HBM, and overlap buys little.
//!
//! The bound, per 32 KiB tile on the idealised config: double buffering leaves MTE2 with its
//! loads (2 × ceil(32768 / 110) = 596 cycles) plus the EnQue set_flag's drain (50, the load
//! startup) = 646; single buffering adds the V round trip MTE2 waits for (256 cycles of vadd +
//! 6 startup + 2 × 2 flag latency = 266). Steady state: 912 / 646 = 1.41; the pipeline fill and
//! drain of 128 tiles bring it to 1.40. The extra cycles show up as MTE2 `wait_flag V#0`.
use crate::{ideal_config, root, simulate, simulate_on};
use sim::Pipe;

#[test]
fn double_buffering_is_at_least_1_4x_faster_with_more_overlap() {
    let (_, db) = simulate_on(
        &root().join("programs/vec_add_db_manual.yaml"),
        ideal_config(),
    );
    let (_, sb) = simulate_on(
        &root().join("programs/vec_add_sb_manual.yaml"),
        ideal_config(),
    );
    let (db_prog, db, sb_prog, sb) = (db.program, db.result, sb.program, sb.result);
    // same work: the same number of instructions on every data pipe
    for pipe in [Pipe::V, Pipe::Mte2, Pipe::Mte3] {
        assert_eq!(
            db.pipe(pipe).unwrap().busy,
            sb.pipe(pipe).unwrap().busy,
            "{pipe}: {} vs {} do different work",
            db_prog.kernel,
            sb_prog.kernel
        );
    }
    let speedup = sb.total_cycles as f64 / db.total_cycles as f64;
    assert!(
        speedup >= 1.4,
        "double buffering: {} cycles vs single: {} cycles = {speedup:.2}x",
        db.total_cycles,
        sb.total_cycles
    );
    assert!(
        db.overlap_cycles > sb.overlap_cycles,
        "overlap: db {} cycles, sb {} cycles",
        db.overlap_cycles,
        sb.overlap_cycles
    );
    assert!(db.overlap() > sb.overlap());
    // the why: single buffering's extra cycles are MTE2 waiting for V to free x and y
    let waits = |r: &sim::RunResult| -> u64 {
        r.pipe(Pipe::Mte2)
            .unwrap()
            .stalls
            .iter()
            .filter(|(s, _)| matches!(s, sim::engine::Stall::WaitFlag { src: Pipe::V, .. }))
            .map(|(_, c)| c)
            .sum()
    };
    let extra = sb.total_cycles - db.total_cycles;
    assert!(
        waits(&sb) - waits(&db) >= extra * 9 / 10,
        "MTE2 waits on V: sb {} db {}, extra cycles {extra}",
        waits(&sb),
        waits(&db)
    );
}

#[test]
fn on_the_built_in_config_both_adds_are_bound_by_hbm() {
    // The built-in config's gm memory system: every tile's 32 KiB of x and of y is new to the
    // cold L2, and MTE2 runs one load at a time, so each load misses alone and reads at
    // min(110, 32 / 1) = 32 bytes a cycle: 1024 cycles of work, 256 loads = 262,144 busy cycles
    // on MTE2 for both programs. The adds still take 256 cycles a tile, so double buffering can
    // hide little: it stays ahead, by less than the idealised 1.4x.
    let (_, db) = simulate(&root().join("programs/vec_add_db_manual.yaml"));
    let (_, sb) = simulate(&root().join("programs/vec_add_sb_manual.yaml"));
    for r in [&db.result, &sb.result] {
        assert_eq!(r.pipe(Pipe::Mte2).unwrap().busy, 262_144);
        let m = r.memory.as_ref().unwrap();
        assert_eq!((m.reads, m.hit_bytes, m.miss_bytes), (256, 0, 256 * 32768));
    }
    let speedup = sb.result.total_cycles as f64 / db.result.total_cycles as f64;
    assert!((1.0..1.4).contains(&speedup), "{speedup:.3}");
}
