//! The TVM lesson (docs/sources.md, TVM-MSMA): TVM's shared-memory reuse pass kept every buffer declared outside
//! a loop live for the whole loop, so a GEMM's large reduction buffer could never take the bytes
//! of the A/B tiles it follows, and the kernel stopped fitting. `--liveness precise` must reuse
//! those bytes; `--liveness scoped` (HIVM's rule, the same mistake) overflows, or with room to
//! spare plans the same program without reusing anything.

use planner::{
    liveness, plan_program, LivenessMode, PlacedBy, PlanError, PlanFailure, PlanOptions, Planned,
};
use sim::{Program, Space};

/// A batched GEMM in the shape of the seed's Stream-K kernel: per batch, a K loop multiplies
/// A/B tiles into an accumulator; then a large reduction buffer (stored to a workspace, as
/// Stream-K's partial tiles are) is reduced into an output tile. Every buffer is declared at the
/// kernel's top. 5 buffers need 256 KiB side by side; UB holds 192 KiB.
const PROGRAM: &str = r#"
kernel: batched_gemm_reduce
core: aiv
sync: auto
params: { batches: 4, ksteps: 4, n: 8192 }
gm:
  a:  { shape: [batches, ksteps, n], dtype: f32 }
  b:  { shape: [batches, ksteps, n], dtype: f32 }
  ws: { shape: [batches, 4, n], dtype: f32 }
  o:  { shape: [batches, n], dtype: f32 }
buffers:
  At:  { scope: ub, shape: [n], dtype: f32 }
  Bt:  { scope: ub, shape: [n], dtype: f32 }
  acc: { scope: ub, shape: [n], dtype: f32 }
  red: { scope: ub, shape: [4, n], dtype: f32 }
  ob:  { scope: ub, shape: [n], dtype: f32 }
body:
  - for: { var: bi, to: batches }
    body:
      - vdup: { out: acc, scalar: 0 }
      - for: { var: k, to: ksteps }
        body:
          - load: { src: "a[bi, k]", dst: At }
          - load: { src: "b[bi, k]", dst: Bt }
          - vmul: { ins: [At, Bt], out: At }
          - vadd: { ins: [acc, At], out: acc }
      - vbrc: { ins: [acc], out: red }
      - store: { src: red, dst: "ws[bi]" }
      - vreduce_sum: { ins: [red], out: ob, dims: [0] }
      - store: { src: ob, dst: "o[bi]" }
"#;

fn program() -> Program {
    crate::load(PROGRAM)
}

fn plan(p: &Program, mode: LivenessMode, ub: Option<u64>) -> Result<Planned, PlanFailure> {
    let opts = PlanOptions {
        liveness: mode,
        capacities: ub.map(|c| vec![(Space::Ub, c)]).unwrap_or_default(),
        ..PlanOptions::default()
    };
    let planned = plan_program(p, &crate::config(), &opts)?;
    planned
        .validate(p, &crate::config())
        .unwrap_or_else(|v| panic!("{mode:?}: invalid plan: {v:#?}"));
    Ok(planned)
}

/// Whether two buffers' slots share a byte.
fn overlap(planned: &Planned, p: &Program, a: &str, b: &str) -> bool {
    let (pa, pb) = (
        planned.plan.buffer(crate::buf(p, a)),
        planned.plan.buffer(crate::buf(p, b)),
    );
    pa.offsets.iter().any(|&x| {
        pb.offsets
            .iter()
            .any(|&y| x < y + pb.bytes && y < x + pa.bytes)
    })
}

#[test]
fn precise_liveness_lets_the_reduction_buffer_take_the_tiles_bytes() {
    let p = program();
    let planned = plan(&p, LivenessMode::Precise, None).expect("fits under precise liveness");
    let ub = planned.plan.scope(Space::Ub).unwrap();
    assert!(ub.required > ub.capacity, "the program must need reuse");
    assert!(ub.used <= ub.capacity);
    assert!(overlap(&planned, &p, "red", "At"), "red does not reuse At");
    assert!(overlap(&planned, &p, "red", "Bt"), "red does not reuse Bt");
    // DMA buffers of different ops share bytes only at level 0
    assert_eq!(
        planned.plan.buffer(crate::buf(&p, "red")).placed_by,
        PlacedBy::Level(0)
    );
    // the tiles only carry values within one K step, the reduction buffer within one batch
    let live = liveness(&p, LivenessMode::Precise).unwrap();
    let (at, red) = (crate::buf(&p, "At"), crate::buf(&p, "red"));
    assert!(planner::liveness::intersection(live.lifetime(at), live.lifetime(red)).is_none());
}

#[test]
fn scoped_liveness_keeps_everything_live_for_the_batch_loop_and_overflows() {
    let p = program();
    let Err(PlanFailure::Plan(e)) = plan(&p, LivenessMode::Scoped, None) else {
        panic!("scoped liveness must not fit");
    };
    let PlanError::Overflow {
        required_bits,
        available_bits,
        ref largest,
        ..
    } = e;
    // every buffer is live at the batch loop's start: 256 KiB
    assert_eq!(required_bits, 262_144 * 8);
    assert_eq!(available_bits, 196_608 * 8);
    let names: Vec<&str> = largest.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[0], "red");
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(e
        .to_string()
        .starts_with("ub overflow, requires 2097152 bits while 1572864 bits available!"));
}

#[test]
fn scoped_liveness_with_room_reuses_nothing() {
    let p = program();
    let planned = plan(&p, LivenessMode::Scoped, Some(256 * 1024)).unwrap();
    for (i, a) in p.buffers.iter().enumerate() {
        for b in &p.buffers[i + 1..] {
            assert!(
                !overlap(&planned, &p, &a.name, &b.name),
                "{} and {} share bytes under scoped liveness",
                a.name,
                b.name
            );
        }
    }
}
