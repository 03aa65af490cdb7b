//! Property tests over random structured programs on the built-in config: whatever the program
//! does (overlap, stalls, double sets, deadlocks), every run accounts for every cycle of every
//! pipe exactly once, is deterministic, and starts exactly the instructions the program sends
//! (counted here by an independent walk of the generated program).

use proptest::prelude::*;
use sim::engine::RunResult;
use sim::Pipe;

/// A generated op; rendered to YAML and counted independently of the engine.
#[derive(Clone, Debug)]
enum Item {
    Load {
        tensor: usize,
        buf: usize,
    },
    Store {
        buf: usize,
        tensor: usize,
    },
    Vadd {
        a: usize,
        b: usize,
        out: usize,
    },
    Vexp {
        a: usize,
        out: usize,
    },
    Copy {
        src: usize,
        dst: usize,
    },
    Scalar {
        cycles: u32,
    },
    /// A set_flag immediately followed by its wait_flag.
    Flag {
        src: Pipe,
        dst: Pipe,
        id: u32,
    },
    Barrier {
        pipe: Option<Pipe>,
    },
    For {
        trips: u32,
        body: Vec<Item>,
    },
    /// `if: "VAR % m == 0"` over the innermost loop variable (or `1` outside loops).
    If {
        m: u32,
        then: Vec<Item>,
        els: Vec<Item>,
    },
}

const BUFS: usize = 4;
const TENSORS: usize = 2;
const ROWS: u32 = 64;
const FLAG_PIPES: [Pipe; 4] = [Pipe::S, Pipe::V, Pipe::Mte2, Pipe::Mte3];

fn leaf() -> impl Strategy<Value = Item> {
    prop_oneof![
        (0..TENSORS, 0..BUFS).prop_map(|(tensor, buf)| Item::Load { tensor, buf }),
        (0..BUFS, 0..TENSORS).prop_map(|(buf, tensor)| Item::Store { buf, tensor }),
        (0..BUFS, 0..BUFS, 0..BUFS).prop_map(|(a, b, out)| Item::Vadd { a, b, out }),
        (0..BUFS, 0..BUFS).prop_map(|(a, out)| Item::Vexp { a, out }),
        (0..BUFS, 0..BUFS).prop_map(|(src, dst)| Item::Copy { src, dst }),
        (1u32..20).prop_map(|cycles| Item::Scalar { cycles }),
        (0..4usize, 0..4usize, 0u32..8)
            .prop_filter("distinct pipes", |(s, d, _)| s != d)
            .prop_map(|(s, d, id)| Item::Flag {
                src: FLAG_PIPES[s],
                dst: FLAG_PIPES[d],
                id
            }),
        prop_oneof![
            Just(None),
            Just(Some(Pipe::V)),
            Just(Some(Pipe::Mte2)),
            Just(Some(Pipe::Mte3))
        ]
        .prop_map(|pipe| Item::Barrier { pipe }),
    ]
}

fn items() -> impl Strategy<Value = Vec<Item>> {
    let item = leaf().prop_recursive(3, 48, 6, |inner| {
        prop_oneof![
            (1u32..5, prop::collection::vec(inner.clone(), 1..6))
                .prop_map(|(trips, body)| Item::For { trips, body }),
            (
                1u32..4,
                prop::collection::vec(inner.clone(), 1..4),
                prop::collection::vec(inner, 0..3)
            )
                .prop_map(|(m, then, els)| Item::If { m, then, els }),
        ]
    });
    prop::collection::vec(item, 1..10)
}

fn render(items: &[Item], multi: &[u32]) -> String {
    render_rows(items, multi, 256)
}

/// [`render`] with rows (and buffers) of `cols` f16.
fn render_rows(items: &[Item], multi: &[u32], cols: u32) -> String {
    let mut s = String::from("kernel: random\ncore: aiv\nsync: manual\ngm:\n");
    for t in 0..TENSORS {
        s += &format!("  g{t}: {{ shape: [{ROWS}, {cols}], dtype: f16 }}\n");
    }
    s += "buffers:\n";
    for (b, m) in multi.iter().enumerate() {
        s += &format!("  b{b}: {{ scope: ub, shape: [{cols}], dtype: f16, multi: {m} }}\n");
    }
    s += "body:\n";
    // write every buffer (every slot) first, so nothing is read before it is written
    for (b, m) in multi.iter().enumerate() {
        for k in 0..*m {
            s += &format!("  - load: {{ src: \"g0[{k}]\", dst: \"b{b}@{k}\" }}\n");
        }
    }
    render_block(&mut s, items, 1, &mut 0, None);
    s
}

fn render_block(s: &mut String, items: &[Item], depth: usize, vars: &mut usize, var: Option<&str>) {
    let pad = "  ".repeat(depth);
    let row = var.map_or("0".to_string(), |v| format!("{v} % {ROWS}"));
    for it in items {
        match it {
            Item::Load { tensor, buf } => {
                *s += &format!("{pad}- load: {{ src: \"g{tensor}[{row}]\", dst: b{buf} }}\n")
            }
            Item::Store { buf, tensor } => {
                *s += &format!("{pad}- store: {{ src: b{buf}, dst: \"g{tensor}[{row}]\" }}\n")
            }
            Item::Vadd { a, b, out } => {
                *s += &format!("{pad}- vadd: {{ ins: [b{a}, b{b}], out: b{out} }}\n")
            }
            Item::Vexp { a, out } => {
                *s += &format!("{pad}- vexp: {{ ins: [b{a}], out: b{out} }}\n")
            }
            Item::Copy { src, dst } => {
                *s += &format!("{pad}- copy: {{ src: b{src}, dst: b{dst} }}\n")
            }
            Item::Scalar { cycles } => *s += &format!("{pad}- scalar: {{ cycles: {cycles} }}\n"),
            Item::Flag { src, dst, id } => {
                let (a, b) = (src.yaml_name(), dst.yaml_name());
                *s += &format!("{pad}- set_flag: {{ src: {a}, dst: {b}, id: {id} }}\n");
                *s += &format!("{pad}- wait_flag: {{ src: {a}, dst: {b}, id: {id} }}\n");
            }
            Item::Barrier { pipe } => {
                *s += &format!(
                    "{pad}- barrier: {}\n",
                    pipe.map_or("all", |p| p.yaml_name())
                )
            }
            Item::For { trips, body } => {
                let v = format!("i{}", *vars);
                *vars += 1;
                *s += &format!("{pad}- for: {{ var: {v}, to: {trips} }}\n{pad}  body:\n");
                render_block(s, body, depth + 2, vars, Some(&v));
            }
            Item::If { m, then, els } => {
                let cond = var.map_or("1".to_string(), |v| format!("{v} % {m} == 0"));
                *s += &format!("{pad}- if: \"{cond}\"\n{pad}  then:\n");
                render_block(s, then, depth + 2, vars, var);
                if !els.is_empty() {
                    *s += &format!("{pad}  else:\n");
                    render_block(s, els, depth + 2, vars, var);
                }
            }
        }
    }
}

/// Instructions each pipe must start: walks the generated tree with concrete loop values.
fn expected_counts(items: &[Item], multi: &[u32]) -> [u64; Pipe::COUNT] {
    let mut c = [0u64; Pipe::COUNT];
    let slots: u32 = multi.iter().sum();
    c[Pipe::Mte2.index()] += slots as u64;
    count(items, None, &mut c);
    c
}

fn count(items: &[Item], var: Option<u32>, c: &mut [u64; Pipe::COUNT]) {
    for it in items {
        match it {
            Item::Load { .. } => c[Pipe::Mte2.index()] += 1,
            Item::Store { .. } => c[Pipe::Mte3.index()] += 1,
            Item::Vadd { .. } | Item::Vexp { .. } | Item::Copy { .. } => c[Pipe::V.index()] += 1,
            Item::Scalar { .. } => c[Pipe::S.index()] += 1,
            Item::Flag { src, dst, .. } => {
                c[src.index()] += 1;
                c[dst.index()] += 1;
            }
            Item::Barrier { pipe } => c[pipe.unwrap_or(Pipe::S).index()] += 1,
            Item::For { trips, body } => {
                for i in 0..*trips {
                    c[Pipe::S.index()] += 1; // one loop iteration
                    count(body, Some(i), c);
                }
            }
            Item::If { m, then, els } => {
                c[Pipe::S.index()] += 1; // the branch
                let taken = var.is_none_or(|v| v % m == 0);
                count(if taken { then } else { els }, var, c);
            }
        }
    }
}

fn run(yaml: &str) -> RunResult {
    let config = sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "ascend910b")
        .expect("built-in config loads");
    let program = sim::load_program(yaml, "random.yaml", &config, &[])
        .unwrap_or_else(|e| panic!("generated program must load: {e}\n{yaml}"));
    // the spans an observer sees must add up to the accounting, on every random program
    let mut ledger = sim::engine::Ledger::new();
    let r = sim::engine::run_observed(&program, &config, &mut ledger)
        .unwrap_or_else(|e| panic!("run failed: {e}\n{yaml}"));
    if let Err(e) = ledger.check(&r) {
        panic!("spans do not add up: {e}\n{yaml}");
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_cycle_is_accounted_once_and_runs_repeat(
        items in items(),
        multi in prop::collection::vec(1u32..3, BUFS),
    ) {
        let yaml = render(&items, &multi);
        let a = run(&yaml);
        prop_assert!(a.check_accounting().is_ok(), "{:?}\n{yaml}", a.check_accounting());
        for c in &a.cores {
            for p in &c.pipes {
                prop_assert!(p.busy <= a.total_cycles);
            }
            prop_assert!(c.overlap_cycles <= a.total_cycles);
        }
        let b = run(&yaml);
        prop_assert_eq!(&a, &b, "same input, different result");
        if a.deadlock.is_none() {
            let want = expected_counts(&items, &multi);
            // a one-core run: its only core ran the whole program
            prop_assert_eq!(a.cores.len(), 1);
            for p in &a.cores[0].pipes {
                prop_assert_eq!(p.instructions, want[p.pipe.index()], "pipe {} in\n{}", p.pipe, yaml);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The same random programs, on rows of up to 16 KiB, launched on up to every vector core
    /// of the chip, all reading and writing the same rows of gm: however the moves overlap, no
    /// run reports more HBM or L2 traffic than the chip's rates allow over its cycles
    /// (docs/timing.md, "The gm memory system": a move takes only what the moves before it
    /// leave, cycle by cycle). Without that rule most of these launches would report several
    /// times the peak.
    #[test]
    fn no_launch_draws_more_than_the_chips_bandwidth(
        items in items(),
        multi in prop::collection::vec(1u32..3, BUFS),
        blocks in prop_oneof![1u32..=4, Just(24u32), Just(48u32)],
        cols in prop_oneof![Just(256u32), Just(8192u32)],
    ) {
        let yaml = render_rows(&items, &multi, cols).replacen(
            "core: aiv\n",
            &format!("core: aiv\nlaunch: {{ blocks: {blocks} }}\n"),
            1,
        );
        let config = sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "ascend910b")
            .expect("built-in config loads");
        let kernel = sim::load_kernel(&yaml, "random.yaml", &config, &[], None)
            .unwrap_or_else(|e| panic!("generated program must load: {e}\n{yaml}"));
        let none = sim::Addresses::default();
        let parts: Vec<(&sim::Program, &sim::Addresses)> =
            kernel.parts.iter().map(|p| (p, &none)).collect();
        let r = sim::engine::run_launch(&parts, &config, sim::engine::Limits::default(), &mut ())
            .unwrap_or_else(|e| panic!("run failed: {e}\n{yaml}"));
        prop_assert!(r.check_accounting().is_ok(), "{:?}\n{yaml}", r.check_accounting());
        let (m, mc) = (r.memory.unwrap(), config.memory.unwrap());
        let total = r.total_cycles;
        prop_assert!(
            m.hbm_traffic() <= mc.hbm_bytes_per_cycle * total,
            "HBM {} B in {total} cycles\n{yaml}",
            m.hbm_traffic()
        );
        prop_assert!(
            m.l2_traffic() <= mc.l2_chip_bytes_per_cycle * total,
            "L2 {} B in {total} cycles\n{yaml}",
            m.l2_traffic()
        );
        prop_assert_eq!(r.cores.len(), blocks as usize); // one vector core a block
        prop_assert_eq!(r.launch_cycles, config.launch_cost.unwrap().cycles(blocks));
    }
}
