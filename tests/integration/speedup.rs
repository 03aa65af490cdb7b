//! Double buffering pays: the double-buffered vector add overlaps its loads with its adds and
//! finishes at least 1.4x ahead of the single-buffered one doing the same work.
//!
//! The bound, per 32 KiB tile on the default config: double buffering leaves MTE2 with its
//! loads (2 × ceil(32768 / 110) = 596 cycles) plus the EnQue set_flag's drain (50, the load
//! startup) = 646; single buffering adds the V round trip MTE2 waits for (256 cycles of vadd +
//! 6 startup + 2 × 2 flag latency = 266). Steady state: 912 / 646 = 1.41; the pipeline fill and
//! drain of 128 tiles bring it to 1.40. The extra cycles show up as MTE2 `wait_flag V#0`.
use crate::{root, simulate};
use sim::Pipe;

#[test]
fn double_buffering_is_at_least_1_4x_faster_with_more_overlap() {
    let (_, db) = simulate(&root().join("programs/vec_add_db_manual.yaml"));
    let (_, sb) = simulate(&root().join("programs/vec_add_sb_manual.yaml"));
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
