//! Cross-core ops and mixed kernels (`aic:` and `aiv:` parts): what loads, and where each
//! problem is reported.

use super::*;
use crate::limits;
use crate::program::{CrossMode, OpKind};
use crate::types::Pipe;

fn config() -> Config {
    load_config(crate::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap()
}

fn kernel(text: &str) -> Kernel {
    load_kernel(text, "k.yaml", &config(), &[], None).unwrap_or_else(|e| panic!("{e}"))
}

fn kernel_errors_with(text: &str, cfg: &Config, blocks: Option<u32>) -> Vec<Diagnostic> {
    match load_kernel(text, "k.yaml", cfg, &[], blocks) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.diagnostics,
    }
}

fn kernel_errors(text: &str) -> Vec<Diagnostic> {
    kernel_errors_with(text, &config(), None)
}

/// The only diagnostic: (path, message, hint, line).
fn only(d: Vec<Diagnostic>) -> (String, String, String, u32) {
    assert_eq!(
        d.len(),
        1,
        "{:#?}",
        d.iter().map(|d| d.to_string()).collect::<Vec<_>>()
    );
    let d = &d[0];
    (
        d.path.clone(),
        d.message.clone(),
        d.hint.clone().unwrap_or_default(),
        d.line.expect("located"),
    )
}

/// A single-type program on `core` with `ops` as its body (line 5 is the first op).
fn single(core: &str, sync: &str, ops: &str) -> String {
    format!("kernel: k\ncore: {core}\nsync: {sync}\nbody:\n{ops}")
}

#[test]
fn cross_ops_parse_with_their_pipes() {
    for sync in ["manual", "auto"] {
        let text = single(
            "aiv",
            sync,
            "  - cross_set: { mode: 0, pipe: mte3, id: 3 }\n  - cross_wait: { id: 3 }\n  - cross_set: { mode: 1, pipe: v, id: \"2 + 1\" }\n  - cross_wait: { id: 10, pipe: mte2 }\n",
        );
        let p = load_program(&text, "p.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"));
        let ops: Vec<(&OpKind, Option<Pipe>)> = p.ops.iter().map(|o| (&o.kind, o.pipe)).collect();
        assert!(matches!(
            ops[0],
            (OpKind::CrossSet { mode: CrossMode::All, pipe: Pipe::Mte3, id }, Some(Pipe::Mte3))
                if id.as_const() == Some(3)
        ));
        // cross_wait's pipe is s unless written
        assert!(matches!(
            ops[1],
            (OpKind::CrossWait { pipe: Pipe::S, id }, Some(Pipe::S)) if id.as_const() == Some(3)
        ));
        assert!(matches!(
            ops[2],
            (
                OpKind::CrossSet {
                    mode: CrossMode::Pair,
                    pipe: Pipe::V,
                    ..
                },
                Some(Pipe::V)
            )
        ));
        assert!(matches!(
            ops[3],
            (
                OpKind::CrossWait {
                    pipe: Pipe::Mte2,
                    ..
                },
                Some(Pipe::Mte2)
            )
        ));
    }
}

#[test]
fn cross_op_problems_name_the_field() {
    let bad = |ops: &str, core: &str| only(kernel_errors(&single(core, "manual", ops)));
    let (path, msg, hint, line) = bad("  - cross_set: { mode: 3, pipe: v, id: 0 }\n", "aiv");
    assert_eq!((path.as_str(), line), ("body[0].cross_set.mode", 5));
    assert_eq!(msg, "cross_set mode 3 is not 0, 1 or 2");
    assert!(hint.starts_with("0: every core"), "{hint}");
    let (path, msg, _, line) = bad("  - cross_set: { mode: 1, pipe: m, id: 0 }\n", "aic");
    assert_eq!((path.as_str(), line), ("body[0].cross_set.mode", 5));
    assert!(
        msg.contains("core aic is not the split chip's vector core"),
        "{msg}"
    );
    let (path, msg, hint, _) = bad("  - cross_set: { mode: 2, pipe: s, id: 0 }\n", "aiv");
    assert_eq!(path, "body[0].cross_set.mode");
    assert!(
        msg.contains("mode 2 signals between the aic and aiv parts"),
        "{msg}"
    );
    assert!(msg.contains("runs on core aiv alone"), "{msg}");
    assert!(hint.contains("aic: and aiv: parts"), "{hint}");
    // ids: 0..flag_ids (11 on the 910B), bounded through loop variables
    let (path, msg, hint, line) = bad(
        "  - cross_wait: { id: 4 }\n  - cross_set: { mode: 0, pipe: s, id: 11 }\n",
        "aiv",
    );
    assert_eq!((path.as_str(), line), ("body[1].cross_set.id", 6));
    assert_eq!(
        msg,
        "cross-core flag id 11 is outside 0..11 (cross_core.flag_ids of config ascend910b)"
    );
    assert_eq!(hint, "use ids 0 to 10");
    let (path, msg, ..) = bad(
        "  - for: { var: i, to: 12 }\n    body:\n      - cross_wait: { id: i, pipe: v }\n",
        "aiv",
    );
    assert_eq!(path, "body[0].for.body[0].cross_wait.id");
    assert!(msg.contains("cross-core flag id i (can reach 11)"), "{msg}");
    // the pipe must be the core's; cross_set names it
    let (path, msg, ..) = bad("  - cross_set: { mode: 0, pipe: m, id: 0 }\n", "aiv");
    assert_eq!(path, "body[0].cross_set.pipe");
    assert!(msg.contains("which core aiv does not have"), "{msg}");
    let (path, msg, ..) = bad("  - cross_wait: { id: 0, pipe: mte4 }\n", "aiv");
    assert_eq!(path, "body[0].cross_wait.pipe");
    assert!(msg.contains("unknown pipe \"mte4\""), "{msg}");
    let (path, msg, ..) = bad("  - cross_set: { mode: 0, id: 0 }\n", "aiv");
    assert_eq!(path, "body[0].cross_set");
    assert!(msg.contains("missing required key \"pipe\""), "{msg}");
}

#[test]
fn cross_ops_need_a_cross_core_section_and_every_problem_is_reported() {
    let mut cfg = config();
    cfg.cross_core = None;
    let text = single(
        "aiv",
        "auto",
        "  - cross_set: { mode: 7, pipe: v, id: 0 }\n  - cross_wait: { id: 0 }\n",
    );
    let d = kernel_errors_with(&text, &cfg, None);
    let got: Vec<(&str, u32)> = d
        .iter()
        .map(|d| (d.path.as_str(), d.line.unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            ("body[0].cross_set", 5),
            ("body[0].cross_set.mode", 5),
            ("body[1].cross_wait", 6)
        ]
    );
    assert_eq!(
        d[0].message,
        "cross_set needs cross-core flags, but config ascend910b has no cross_core section"
    );
    assert_eq!(
        d[0].hint.as_deref(),
        Some("add cross_core: { flag_ids, max_pending, latency } to the config")
    );
}

/// A mixed kernel after the documented example (docs/programs.md): the cube part writes `ws`,
/// the vector part adds `d` to it (tests/fixtures/launch/mixed_min.yaml, which the planner's
/// tests run too). Line numbers matter to the tests below.
const MIXED: &str = include_str!("../../../tests/fixtures/launch/mixed_min.yaml");

#[test]
fn a_mixed_kernel_loads_into_an_aic_and_an_aiv_part() {
    let cfg = config();
    let k = kernel(MIXED);
    assert!(k.is_mixed());
    let [aic, aiv] = &k.parts[..] else {
        panic!("{} parts", k.parts.len())
    };
    assert_eq!(aic.core, cfg.core_named("aic").unwrap());
    assert_eq!(aiv.core, cfg.core_named("aiv").unwrap());
    assert_eq!(
        (aic.kernel.as_str(), aiv.kernel.as_str()),
        ("matmul_add", "matmul_add")
    );
    // the shared top level is declared identically in both
    let tensors = |p: &Program| {
        p.tensors
            .iter()
            .map(|t| (t.name.clone(), t.shape.clone(), t.dtype, t.path.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(tensors(aic), tensors(aiv));
    assert_eq!(aic.tensors.len(), 5);
    assert_eq!(aic.params, aiv.params);
    assert_eq!((aic.sync, aic.launch), (aiv.sync, aiv.launch));
    assert_eq!(aic.launch.blocks, 2);
    assert!(aic.launch.block.is_some() && aic.launch.subblock.is_some());
    // each part has its own buffers, with paths under its key
    let names = |p: &Program| p.buffers.iter().map(|b| b.path.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(aic),
        ["aic.buffers.a1", "aic.buffers.b1", "aic.buffers.c0"]
    );
    assert_eq!(names(aiv), ["aiv.buffers.wb", "aiv.buffers.db"]);
    assert_eq!(aiv.ops[0].path, "aiv.body[0]");
    assert!(matches!(
        aic.ops.last().unwrap().kind,
        OpKind::CrossSet {
            mode: CrossMode::Block,
            pipe: Pipe::Fix,
            ..
        }
    ));
    // --blocks counts AI cores: all 24 of the 910B
    let text = MIXED
        .replace("[M, K]", "[M * 12, K]")
        .replace("[M, N]", "[M * 12, N]");
    let k = load_kernel(&text, "k.yaml", &cfg, &[], Some(24)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k.parts[1].launch.blocks, 24);
    // a single-type program is a kernel of one part
    let one = kernel("kernel: k\ncore: aiv\nbody: []\n");
    assert!(!one.is_mixed());
    assert_eq!(one.first().core, cfg.core_named("aiv").unwrap());
}

#[test]
fn subblock_counts_vector_cores_in_the_aiv_part_only() {
    // gm rows 0..2: the aiv part's subblock reaches 1, the aic part's is always 0
    let text = "kernel: k\nlaunch: { blocks: 1 }\ngm:\n  x: { shape: [2, 64], dtype: f32 }\naic:\n  body:\n    - cross_wait: { id: \"subblock + 10\" }\naiv:\n  buffers:\n    xb: { scope: ub, shape: [64], dtype: f32 }\n  body:\n    - load: { src: \"x[subblock]\", dst: xb }\n";
    kernel(text);
    let (path, msg, _, line) = only(kernel_errors(
        &text.replace("x[subblock]", "x[subblock + 1]"),
    ));
    assert_eq!((path.as_str(), line), ("aiv.body[0].load.src", 12));
    assert!(msg.contains("out of bounds"), "{msg}");
    let (path, msg, ..) = only(kernel_errors(
        &text.replace("subblock + 10", "subblock + 11"),
    ));
    assert_eq!(path, "aic.body[0].cross_wait.id");
    assert!(msg.contains("can reach 11"), "{msg}");
}

#[test]
fn part_problems_are_prefixed_and_shared_problems_reported_once() {
    // an unknown buffer in the vector part
    let (path, msg, _, line) = only(kernel_errors(&MIXED.replace("out: wb }", "out: wbb }")));
    assert_eq!((path.as_str(), line), ("aiv.body[3].vadd.out", 30));
    assert!(msg.contains("unknown buffer \"wbb\""), "{msg}");
    // a scope of the other core type
    let (path, msg, _, line) = only(kernel_errors(
        &MIXED.replace("wb: { scope: ub", "wb: { scope: l1"),
    ));
    assert_eq!((path.as_str(), line), ("aiv.buffers.wb.scope", 24));
    assert!(msg.contains("scope l1 is not on core aiv"), "{msg}");
    // mode 1 in the cube part
    let (path, msg, _, line) = only(kernel_errors(&MIXED.replace("mode: 2", "mode: 1")));
    assert_eq!((path.as_str(), line), ("aic.body[4].cross_set.mode", 21));
    assert!(msg.contains("core aic is not"), "{msg}");
    // a bad gm dtype, a bad param override and a bad sync mode: each once, not once a part
    let d = match load_kernel(
        &MIXED
            .replace("dtype: f16 }\n  y:", "dtype: f61 }\n  y:")
            .replace("sync: auto", "sync: sometimes"),
        "k.yaml",
        &config(),
        &[("Q".into(), 1)],
        None,
    ) {
        Ok(_) => panic!("loaded"),
        Err(e) => e.diagnostics,
    };
    let got: Vec<(&str, u32)> = d
        .iter()
        .map(|d| (d.path.as_str(), d.line.unwrap()))
        .collect();
    // (the bad tensor's readers say nothing more: an invalid declaration is skipped)
    assert_eq!(
        got,
        [("sync", 3), ("params", 4), ("gm.d.dtype", 9)],
        "{d:#?}"
    );
}

#[test]
fn mixed_kernel_shape_problems() {
    let errs = |text: &str| -> Vec<(String, String, u32)> {
        kernel_errors(text)
            .into_iter()
            .map(|d| (d.path, d.message, d.line.unwrap()))
            .collect()
    };
    // core: or a top-level body beside the parts
    let d = errs(&MIXED.replace("sync: auto\n", "sync: auto\ncore: aiv\nbody: []\n"));
    assert_eq!(
        d,
        [
            (
                "core".to_string(),
                "core: beside aic:/aiv: in a mixed kernel".to_string(),
                4
            ),
            (
                "body".to_string(),
                "body: beside aic:/aiv: in a mixed kernel".to_string(),
                5
            ),
        ]
    );
    // one part alone
    let aic_only = &MIXED[..MIXED.find("aiv:\n").unwrap()];
    let d = errs(aic_only);
    assert_eq!(
        d,
        [(
            "aic".to_string(),
            "a mixed kernel has aic: but no aiv: part".to_string(),
            12
        )]
    );
    // a part that is not a mapping
    let d = errs(&format!("{aic_only}aiv: [1]\n"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0.as_str(), d[0].2), ("aiv", 22));
    assert!(
        d[0].1.contains("expected the aiv part (a mapping)"),
        "{d:?}"
    );
    // blocks count AI cores
    let e = kernel_errors_with(MIXED, &config(), Some(25));
    let (path, msg, hint, _) = only(e);
    assert_eq!(path, "--blocks");
    assert_eq!(
        msg,
        "25 blocks is out of range: a launch has 1 to 24 blocks"
    );
    assert_eq!(
        hint,
        "config ascend910b has 24 AI cores: at most 24 blocks of a mixed kernel"
    );
}

#[test]
fn a_mixed_kernel_needs_a_split_chip() {
    let mut cfg = config();
    cfg.chip = None;
    let (path, msg, hint, line) = only(kernel_errors_with(MIXED, &cfg, None));
    // (a mapping's place is its first entry's)
    assert_eq!((path.as_str(), line), ("aic", 12));
    assert_eq!(
        msg,
        "a mixed kernel needs a split chip, but config ascend910b is not one"
    );
    assert!(hint.contains("aiv_per_aic of 1 or more"), "{hint}");
    // a config without an aiv core type: reported once, the aiv part's checks skipped
    let mut cfg = config();
    let aiv = cfg.core_named("aiv").unwrap();
    cfg.cores[aiv.index()].name = "vec".into();
    let d = kernel_errors_with(MIXED, &cfg, None);
    assert!(!d.is_empty());
    assert_eq!(d[0].path, "aic");
    assert!(d[0].message.contains("needs a split chip"));
}

#[test]
fn load_program_refuses_a_mixed_kernel() {
    let e = load_program(MIXED, "k.yaml", &config(), &[]).unwrap_err();
    let (path, msg, hint, line) = only(e.diagnostics);
    assert_eq!((path.as_str(), line), ("", 1));
    assert!(msg.contains("mixed kernel"), "{msg}");
    assert_eq!(hint, "load it with load_kernel");
}

/// The built-in 910B config with `chip.aic` and `chip.aiv_per_aic` replaced, and optionally
/// the per-core keys at the largest values the loader admits.
fn chip(aic: u32, per: u32, largest_per_core: bool) -> Config {
    let mut text = crate::builtin::builtin("ascend910b")
        .unwrap()
        .replace("  aic: 24 ", &format!("  aic: {aic} "))
        .replace("  aiv_per_aic: 2 ", &format!("  aiv_per_aic: {per} "));
    if largest_per_core {
        text = text
            .replace("queue_depth: 32 ", "queue_depth: 4096 ")
            .replace("event_ids: 8 ", "event_ids: 1024 ")
            .replace("flag_ids: 11 ", "flag_ids: 1024 ");
    }
    let cfg = load_config(&text, "chip.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.chip.map(|c| (c.aic, c.aiv_per_aic)), Some((aic, per)));
    cfg
}

/// A tiny mixed kernel of `blocks` blocks (no cross-core flags: its size is what matters).
fn tiny_mixed(blocks: u32) -> String {
    format!(
        "kernel: k\nlaunch: {{ blocks: {blocks} }}\naic:\n  body:\n    - scalar: {{ cycles: 1 }}\naiv:\n  body:\n    - scalar: {{ cycles: 1 }}\n"
    )
}

#[test]
fn a_launch_past_the_engine_state_budget_is_refused_at_the_block_it_crosses() {
    let cfg = chip(4096, 8, false);
    // a mixed block is one aic and 8 aiv cores: the budget admits floor(budget / (9 × per
    // core)) blocks and refuses one more
    let per_core = crate::engine::launch_state_bytes(&cfg, 1);
    assert_eq!(crate::engine::launch_state_bytes(&cfg, 9), 9 * per_core);
    let most = (limits::MAX_LAUNCH_STATE_BYTES / (9 * per_core)) as u32;
    assert!(
        (1..4096).contains(&most),
        "the 4096 x 8 chip's full launch must be past the budget: {most}"
    );
    load_kernel(&tiny_mixed(most), "k.yaml", &cfg, &[], None).unwrap_or_else(|e| panic!("{e}"));
    let (path, msg, hint, line) = only(kernel_errors_with(&tiny_mixed(most + 1), &cfg, None));
    assert_eq!((path.as_str(), line), ("launch.blocks", 2));
    let cores = 9 * (most + 1);
    assert!(
        msg.contains(&format!(
            "{cores} cores ({} blocks of 9 cores (aic and chip.aiv_per_aic 8 aiv))",
            most + 1
        )),
        "{msg}"
    );
    for key in [
        "queue_depth 32",
        "sync.event_ids 8",
        "cross_core.flag_ids 11",
    ] {
        assert!(msg.contains(key), "{msg}");
    }
    assert!(hint.contains("--blocks"), "{hint}");
    // --blocks is named when it set the count
    let (path, ..) = only(kernel_errors_with(&tiny_mixed(1), &cfg, Some(most + 1)));
    assert_eq!(path, "--blocks");
    // a single-type program counts one core a block: 4096 of them fit
    let single =
        "kernel: s\ncore: aiv\nlaunch: { blocks: 4096 }\nbody:\n  - scalar: { cycles: 1 }\n";
    load_kernel(single, "s.yaml", &cfg, &[], None).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_shipped_chip_and_the_fuzz_targets_launch_fit_the_budget() {
    // a launch of every core of each built-in chip: its AI cores, each with its vector cores
    for (name, text) in crate::builtin::BUILTIN {
        let cfg = load_config(text, name).unwrap();
        let cores = cfg
            .chip
            .map_or(1, |c| u64::from(c.aic) * (1 + u64::from(c.aiv_per_aic)));
        let bytes = crate::engine::launch_state_bytes(&cfg, cores);
        assert!(
            bytes <= limits::MAX_LAUNCH_STATE_BYTES / 16,
            "{name}: {bytes}"
        );
    }
    // fuzz/fuzz_targets/config.rs runs a 2-block mixed kernel on whatever config it makes:
    // at the largest per-core keys and 8 vector cores that is 18 cores, within the budget
    let cfg = chip(4096, 8, true);
    load_kernel(&tiny_mixed(2), "k.yaml", &cfg, &[], None).unwrap_or_else(|e| panic!("{e}"));
}
