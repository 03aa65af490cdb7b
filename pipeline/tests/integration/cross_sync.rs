//! `sync: auto` across cores (planner::cross): the shipped mixed kernels get their cross-core
//! flags inserted, run race-free and deadlock-free, and as fast as the hand-written twin; shapes
//! the pass does not handle are refused with the reason.

use crate::{config, opts, root};
use sim::engine::{Activity, Issue, Observer, Span};
use sim::{Kernel, OpId, Pipe};
use std::collections::BTreeMap;

fn kernel(file: &str) -> Kernel {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    sim::load_kernel(&text, file, &config(), &[], None).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn kernel_text(text: &str) -> Kernel {
    sim::load_kernel(text, "k.yaml", &config(), &[], None).unwrap_or_else(|e| panic!("{e}"))
}

fn clean(file: &str, sim: &pipeline::Simulation) {
    assert_eq!(sim.hazards.as_deref(), Some(&[][..]), "{file}: hazards");
    assert!(
        sim.result.findings.is_empty(),
        "{file}: {:?}",
        sim.result.findings
    );
    for core in &sim.result.cores {
        assert!(core.end_cycle <= sim.result.total_cycles);
    }
}

#[test]
fn matmul_add_with_auto_sync_runs_within_five_percent_of_its_manual_twin() {
    let auto =
        pipeline::simulate_kernel(&kernel("programs/matmul_add.yaml"), &config(), &opts()).unwrap();
    let manual = pipeline::simulate_kernel(
        &kernel("programs/matmul_add_manual.yaml"),
        &config(),
        &opts(),
    )
    .unwrap();
    clean("matmul_add", &auto);
    clean("matmul_add_manual", &manual);
    // one hand-off, gm.ws from the aic part's fixpipe to the aiv part's workspace load; each
    // block's cube core writes 48 / 2 = 24 tiles, more than max_pending (16) sets, so a reverse
    // flag runs back with the full depth of 16 (ws has a row block per tile: never rewritten)
    assert_eq!(auto.handoffs.len(), 1);
    let h = &auto.handoffs[0];
    assert_eq!(h.tensor, "ws");
    assert_eq!((h.producer.0, h.consumer.0), (0, 1));
    assert_eq!(h.count, 24);
    assert_eq!((h.flag, h.reverse), (0, Some((1, 16))));
    // the hand-written twin inserts nothing: its flags are the user's
    assert!(manual.handoffs.is_empty());
    let (a, m) = (auto.result.total_cycles, manual.result.total_cycles);
    assert!(
        a.abs_diff(m) * 20 <= m,
        "auto {a} vs manual {m}: more than 5 % apart"
    );
}

#[test]
fn flash_attention_gets_three_hand_offs_each_with_a_reverse_flag_of_depth_two() {
    let sim =
        pipeline::simulate_kernel(&kernel("programs/flash_attention.yaml"), &config(), &opts())
            .unwrap();
    clean("flash_attention", &sim);
    // s and ot go aic -> aiv, p goes aiv -> aic; each workspace has two slots per block, so
    // write k + 2 reuses the rows of read k: depth 2. Ids: in gm declaration order (s, p, ot),
    // each forward id followed by its reverse id. nkv = 8 blocks of keys: 8 of each per core.
    let got: Vec<_> = sim
        .handoffs
        .iter()
        .map(|h| (h.tensor.as_str(), h.producer.0, h.flag, h.reverse, h.count))
        .collect();
    assert_eq!(
        got,
        [
            ("s", 0, 0, Some((1, 2)), 8),
            ("p", 1, 2, Some((3, 2)), 8),
            ("ot", 0, 4, Some((5, 2)), 8),
        ]
    );
}

#[test]
fn flash_attention_prefetch_has_the_hand_offs_and_the_cycles_of_the_peeled_loop() {
    // the same kernel with its cube loop over every block and its prefetches under guards
    let peeled =
        pipeline::simulate_kernel(&kernel("programs/flash_attention.yaml"), &config(), &opts())
            .unwrap();
    let guarded = pipeline::simulate_kernel(
        &kernel("programs/flash_attention_prefetch.yaml"),
        &config(),
        &opts(),
    )
    .unwrap();
    clean("flash_attention_prefetch", &guarded);
    let handoffs = |sim: &pipeline::Simulation| -> Vec<_> {
        sim.handoffs
            .iter()
            .map(|h| (h.tensor.clone(), h.producer.0, h.flag, h.reverse, h.count))
            .collect()
    };
    assert_eq!(handoffs(&guarded), handoffs(&peeled));
    // the cube core's guarded ops cost its sync pass no fallback to barrier: all
    assert_eq!(guarded.parts[0].auto_sync.map(|s| s.fallbacks), Some(0));
    let (g, p) = (guarded.result.total_cycles, peeled.result.total_cycles);
    assert!(
        g.abs_diff(p) * 100 <= p,
        "guarded {g} vs peeled {p}: more than 1 % apart"
    );
}

/// The cycles each (core, op, value of `j`) kept its pipe working.
#[derive(Default)]
struct Busy {
    /// seq -> (core, op, j)
    issued: BTreeMap<u64, (u32, OpId, i64)>,
    /// (core, op, j, pipe) -> [from, to)
    spans: BTreeMap<(u32, OpId, i64, Pipe), (u64, u64)>,
    /// the VarId index of `j` in each part
    j: Vec<usize>,
    part_of_core: Vec<usize>,
}

impl Observer for Busy {
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let j = issue.vars[self.j[self.part_of_core[issue.core as usize]]];
        self.issued.insert(issue.seq, (issue.core, issue.op, j));
    }

    fn on_span(&mut self, span: &Span) {
        let (Activity::Work, Some(seq)) = (span.what, span.seq) else {
            return;
        };
        let (core, op, j) = self.issued[&seq];
        let e = self
            .spans
            .entry((core, op, j, span.pipe))
            .or_insert((span.from, span.to));
        e.0 = e.0.min(span.from);
        e.1 = e.1.max(span.to);
    }
}

#[test]
fn flash_attention_overlaps_the_qk_of_block_j_plus_1_with_the_softmax_of_block_j() {
    let config = config();
    let k = kernel("programs/flash_attention.yaml");
    let launch = pipeline::prepare_kernel(&k, &config, &opts()).unwrap();
    let programs: Vec<&sim::Program> = launch.parts.iter().map(|p| &p.program).collect();
    let slots = sim::launch::slots(&programs, &config);
    let var = |p: &sim::Program| p.vars.iter().position(|v| v.name == "j").unwrap();
    let find = |p: &sim::Program, path: &str| -> OpId {
        OpId::new(
            p.ops
                .iter()
                .position(|o| o.path == path)
                .unwrap_or_else(|| {
                    panic!(
                        "no op {path} in {:?}",
                        p.ops.iter().map(|o| &o.path).collect::<Vec<_>>()
                    )
                }),
        )
    };
    // the aic loop's first mmad_l1 is S_{j+1} = Q·K_{j+1}ᵀ; the aiv loop's ops from the first
    // vcast (S_j to f32) to the vcast of P_j to f16 are the softmax of block j
    let qk = find(programs[0], "aic.body[5].for.body[0]");
    let soft_first = find(programs[1], "aiv.body[4].for.body[1]");
    let soft_last = find(programs[1], "aiv.body[4].for.body[12]");
    let mut busy = Busy {
        j: programs.iter().map(|p| var(p)).collect(),
        part_of_core: slots.iter().map(|s| s.part as usize).collect(),
        ..Default::default()
    };
    let sim = pipeline::run_prepared(launch, &config, &opts(), &mut busy).unwrap();
    clean("flash_attention", &sim);
    let mut checked = 0;
    for (c, slot) in slots.iter().enumerate().filter(|(_, s)| s.part == 1) {
        let aic = slots
            .iter()
            .position(|s| s.part == 0 && s.block == slot.block)
            .unwrap() as u32;
        // the loop runs j = 0 .. nkv - 2 (S_{j+1} for j + 1 <= nkv - 1 = 7)
        for j in 0..7 {
            // the QK from its staging into L0 on MTE1 to the cube's last cycle on M: with
            // the staging at the fitted L1 -> L0 rates, the cube itself may start just after
            // the (faster) softmax ends; the op still runs beside it
            let qf = busy.spans[&(aic, qk, j, Pipe::Mte1)].0;
            let qt = busy.spans[&(aic, qk, j, Pipe::M)].1;
            let sf = busy.spans[&(c as u32, soft_first, j, Pipe::V)].0;
            let st = busy.spans[&(c as u32, soft_last, j, Pipe::V)].1;
            assert!(
                qf < st && sf < qt,
                "block {} aiv {}: QK of block {} on MTE1 and M [{qf}, {qt}) does not overlap \
                 the softmax of block {j} on V [{sf}, {st})",
                slot.block,
                slot.index,
                j + 1
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * 2 * 7);
}

const HEAD: &str = "kernel: k\nlaunch: { blocks: 2 }\nsync: auto\nparams: { n: 256 }\ngm:\n  x: { shape: [4, n], dtype: f16 }\n  w: { shape: [4, n], dtype: f16 }\n";

/// The cube part: w[0] = x[0]·x[0] as 16 x 16 matrices.
const AIC: &str = "aic:\n  buffers:\n    a1: { scope: l1, shape: [16, 16], dtype: f16 }\n    c: { scope: l0c, shape: [16, 16], dtype: f32 }\n  body:\n    - load: { src: \"x[0]\", dst: a1 }\n    - mmad_l1: { a: a1, b: a1, c: c, m: 16, n: 16, k: 16, init: 1 }\n    - fixpipe: { src: c, dst: \"w[0]\", quant: true }\n";

#[test]
fn a_tensor_written_by_both_core_types_is_refused_with_the_reason() {
    let text = format!(
        "{HEAD}{AIC}\naiv:\n  buffers: {{ u: {{ scope: ub, shape: [n], dtype: f16 }} }}\n  body:\n    - vdup: {{ out: u, scalar: 0 }}\n    - store: {{ src: u, dst: \"w[1 + subblock]\" }}\n"
    );
    let err = pipeline::simulate_kernel(&kernel_text(&text), &config(), &opts()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, pipeline::Failure::CrossSync(_)), "{msg}");
    assert!(
        msg.contains("gm.w is written by both the aic and the aiv part"),
        "{msg}"
    );
    assert!(msg.contains("write the cross-core flags by hand"), "{msg}");
}

#[test]
fn counts_that_differ_between_the_cores_of_a_block_are_refused() {
    // the cube core writes w once; each vector core reads it twice
    let text = format!(
        "{HEAD}{AIC}\naiv:\n  body:\n    - for: {{ var: i, to: 2 }}\n      buffers: {{ u: {{ scope: ub, shape: [n], dtype: f16 }} }}\n      body:\n        - load: {{ src: \"w[0]\", dst: u }}\n        - store: {{ src: u, dst: \"x[block * 2 + subblock]\" }}\n"
    );
    let err = pipeline::simulate_kernel(&kernel_text(&text), &config(), &opts()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("gm.w: in block 0, aic 0 writes it once, aiv 0 reads it 2 times, aiv 1 reads it 2 times"),
        "{msg}"
    );
}

/// A random two-core-type kernel in the shape the pass handles: per block, the cube core turns
/// tile t into the workspace `ws` (slot t % r of the block's r slots); both vector cores read
/// their half of it, compute and store y; with `back`, they also write their half into `ws2`
/// (r2 slots), which the cube core reads back in the same iteration and writes to `res`.
fn random_kernel(blocks: u32, tiles: u32, r: u32, back: Option<u32>, vops: u32) -> String {
    let r2 = back.unwrap_or(1);
    // the first row of the tile's slot in a workspace of n slots per block
    let slot = |n: u32| format!("(block * {n} + (t / blocks) % {n}) * 16");
    let mut s = format!(
        "kernel: prop\nlaunch: {{ blocks: {blocks} }}\nsync: auto\nparams: {{ T: {tiles} }}\ngm:\n  \
         a: {{ shape: [\"T * 16\", 16], dtype: f16 }}\n  \
         ws: {{ shape: [{}, 16], dtype: f16 }}\n  \
         ws2: {{ shape: [{}, 16], dtype: f16 }}\n  \
         y: {{ shape: [\"T * 16\", 16], dtype: f16 }}\n  \
         res: {{ shape: [\"T * 16\", 16], dtype: f16 }}\n",
        blocks * r * 16,
        blocks * r2 * 16
    );
    s += "aic:\n  buffers:\n    b1: { scope: l1, shape: [16, 16], dtype: f16 }\n    \
          c0: { scope: l0c, shape: [16, 16], dtype: f32 }\n    \
          c1: { scope: l0c, shape: [16, 16], dtype: f32 }\n  body:\n    \
          - load: { src: \"a[0:16]\", dst: b1 }\n    \
          - for: { var: t, from: block, to: T, step: blocks }\n      buffers:\n        \
          a1: { scope: l1, shape: [16, 16], dtype: f16, multi: 2 }\n        \
          w1: { scope: l1, shape: [16, 16], dtype: f16 }\n      body:\n        \
          - load: { src: \"a[t * 16 : (t + 1) * 16]\", dst: a1 }\n        \
          - mmad_l1: { a: a1, b: b1, c: c0, m: 16, n: 16, k: 16, init: 1 }\n";
    let ws = slot(r);
    s += &format!("        - fixpipe: {{ src: c0, dst: \"ws[{ws} : {ws} + 16]\", quant: true }}\n");
    if back.is_some() {
        let w2 = slot(r2);
        s += &format!(
            "        - load: {{ src: \"ws2[{w2} : {w2} + 16]\", dst: w1 }}\n        \
             - mmad_l1: {{ a: w1, b: b1, c: c1, m: 16, n: 16, k: 16, init: 1 }}\n        \
             - fixpipe: {{ src: c1, dst: \"res[t * 16 : (t + 1) * 16]\", quant: true }}\n"
        );
    }
    s += "aiv:\n  body:\n    - for: { var: t, from: block, to: T, step: blocks }\n      buffers:\n        \
          wb: { scope: ub, shape: [8, 16], dtype: f16, multi: 2 }\n        \
          yb: { scope: ub, shape: [8, 16], dtype: f16, multi: 2 }\n      body:\n";
    s += &format!(
        "        - load: {{ src: \"ws[{ws} + subblock * 8 : {ws} + subblock * 8 + 8]\", dst: wb }}\n        \
         - vadd: {{ ins: [wb, wb], out: yb }}\n"
    );
    for _ in 0..vops {
        s += "        - vmul: { ins: [yb, wb], out: yb }\n";
    }
    s += "        - store: { src: yb, dst: \"y[t * 16 + subblock * 8 : t * 16 + subblock * 8 + 8]\" }\n";
    if back.is_some() {
        let w2 = slot(r2);
        s += &format!(
            "        - store: {{ src: yb, dst: \"ws2[{w2} + subblock * 8 : {w2} + subblock * 8 + 8]\" }}\n"
        );
    }
    s
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..Default::default()
    })]

    /// Whatever the blocks, tile counts (above and below max_pending), workspace depths and
    /// directions, the inserted cross-core flags leave no race, no deadlock, no overflow.
    #[test]
    fn random_two_core_kernels_with_auto_cross_core_sync_are_race_and_deadlock_free(
        blocks in 1u32..=3,
        tiles in 1u32..=60,
        r in proptest::prop_oneof![1u32..=3, proptest::strategy::Just(64u32)],
        back in proptest::option::of(proptest::prop_oneof![1u32..=2, proptest::strategy::Just(64u32)]),
        vops in 0u32..=3,
        level in 0u8..=2,
    ) {
        let text = random_kernel(blocks, tiles, r, back, vops);
        let k = kernel_text(&text);
        let mut o = opts();
        o.plan.max_level = level;
        let sim = pipeline::simulate_kernel(&k, &config(), &o)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        proptest::prop_assert_eq!(sim.hazards.as_deref(), Some(&[][..]), "{}", text);
        proptest::prop_assert!(sim.result.deadlock.is_none(), "deadlock\n{}", text);
        proptest::prop_assert!(sim.result.findings.is_empty(), "{:?}\n{}", sim.result.findings, text);
        proptest::prop_assert_eq!(sim.handoffs.len(), 1 + usize::from(back.is_some()));
        // every core ran its whole program: blocks x (1 aic + 2 aiv)
        proptest::prop_assert_eq!(sim.result.cores.len() as u32, blocks * 3);
    }
}
