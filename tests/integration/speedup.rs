//! Double buffering pays: the double-buffered vector add overlaps its loads with its adds and
//! finishes well ahead of the single-buffered one doing the same work.
//!
//! The bound, per tile: single buffering serialises the loads (L = 298 cycles of MTE2 work),
//! the set_flag drain (D = 50, the load startup), and the V round trip MTE2 waits for
//! (C = 128 cycles of vadd + 6 startup + 2 × 2 flag latency = 138); double buffering leaves
//! L + D on MTE2. The steady-state speedup is (L + D + C) / (L + D) = 486 / 348 = 1.397, and
//! the pipeline fill and drain of 32 tiles bring it to 1.37. So the test asks for 1.35x.

use crate::{root, simulate};
use sim::Pipe;

#[test]
fn double_buffering_is_at_least_1_35x_faster_with_more_overlap() {
    let (_, db_prog, _, db) = simulate(&root().join("programs/vec_add_db_manual.yaml"));
    let (_, sb_prog, _, sb) = simulate(&root().join("programs/vec_add_sb_manual.yaml"));
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
        speedup >= 1.35,
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
}
