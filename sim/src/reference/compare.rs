//! Issue 29's proof: the same input on the engine (`crate::engine`) and on this frozen copy of
//! it (`crate::reference`) gives the same run, field by field, and the same observer stream,
//! call by call. Inputs: random single-core programs (the generator of
//! sim/tests/integration/properties.rs, copied and widened with lone flags, scalar gm accesses
//! and cross-core flags), random mixed and single-type launches with cross-core flags, and every
//! program and fixture shipped in the repository that loads without the planner, each run to its
//! end and stopped early at a limit.
//!
//! Each input runs six times: on both engines with [`Recorder`] (which needs one global order,
//! so a launch's cores are interleaved cycle by cycle), with a recorder that does not read
//! operand slots (the engine may skip choosing them), and with `()` (which lets a launch's
//! cores run ahead: the relaxed scheduler). A difference is reported as the first line at which
//! the two normalised forms differ, with the lines before it and the input.
//!
//! The results are compared through `cores[k]` only (not the first-core copies `pipes`,
//! `overlap_cycles` and `bank_conflict_cycles`, which the rebuilt engine may drop).

use super as old;
use crate::addresses::Addresses;
use crate::config::{Config, MemoryConfig, UbBanks};
use crate::engine as new;
use crate::program::{Kernel, Program};
use crate::types::{Pipe, Space};
use proptest::prelude::*;
use std::fmt::Write as _;

// ----- the two runs, normalised --------------------------------------------------------------

/// Every observer call, in order, one line each with every field.
#[derive(Default)]
struct Recorder {
    lines: Vec<String>,
    /// Says it does not read `Issue::slots` (as gm coverage does), so the engine may skip
    /// choosing the slots it would only report.
    no_slots: bool,
}

/// The same recording for both engines' `Observer` traits (their argument types are distinct
/// copies); every struct is destructured without `..`, so a field added to either side fails
/// to compile here instead of going uncompared.
macro_rules! recorder_for {
    ($m:ident) => {
        impl $m::Observer for Recorder {
            fn watches_slots(&self) -> bool {
                !self.no_slots
            }

            fn on_issue(&mut self, issue: &$m::Issue<'_>) {
                let $m::Issue {
                    seq,
                    core,
                    op,
                    pipe,
                    cycle,
                    vars,
                    slots,
                    flag_id,
                } = *issue;
                self.lines.push(format!(
                    "issue seq {seq} core {core} op {op:?} pipe {pipe:?} cycle {cycle} \
                     vars {vars:?} slots {slots:?} flag_id {flag_id:?}"
                ));
            }

            fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
                self.lines
                    .push(format!("start seq {seq} start {start} complete {complete}"));
            }

            fn on_span(&mut self, span: &$m::Span) {
                let $m::Span {
                    core,
                    pipe,
                    from,
                    to,
                    op,
                    seq,
                    what,
                } = *span;
                self.lines.push(format!(
                    "span core {core} pipe {pipe:?} [{from}, {to}) op {op:?} seq {seq:?} {what:?}"
                ));
            }

            fn on_release(&mut self, release: &$m::Release) {
                let $m::Release {
                    core,
                    set_seq,
                    wait_seq,
                    cycle,
                } = *release;
                self.lines.push(format!(
                    "release core {core} set {set_seq} wait {wait_seq} cycle {cycle}"
                ));
            }

            fn on_cross(&mut self, event: &$m::CrossEvent<'_>) {
                self.lines.push(match *event {
                    $m::CrossEvent::Signal {
                        core,
                        id,
                        cycle,
                        sets,
                    } => format!("cross signal core {core} id {id} cycle {cycle} sets {sets:?}"),
                    $m::CrossEvent::Take {
                        core,
                        id,
                        cycle,
                        wait_seq,
                    } => format!("cross take core {core} id {id} cycle {cycle} wait {wait_seq}"),
                });
            }
        }
    };
}

recorder_for!(old);
recorder_for!(new);

/// A run's outcome as lines: the totals, every core's identity and per-pipe accounting (S's
/// columns included), the findings, deadlock, stop and memory statistics; or the error.
macro_rules! summary_for {
    ($name:ident, $m:ident) => {
        fn $name(run: &Result<$m::RunResult, $m::RunError>) -> Vec<String> {
            let r = match run {
                Ok(r) => r,
                Err(e) => {
                    let $m::RunError {
                        op,
                        path,
                        message,
                        cycle,
                        iteration,
                    } = e;
                    return vec![format!(
                        "error op {op:?} at {path}: {message} (cycle {cycle}{iteration})"
                    )];
                }
            };
            let mut out = vec![
                format!("total_cycles {}", r.total_cycles),
                format!("launch_cycles {}", r.launch_cycles),
                format!("cores {}", r.cores.len()),
            ];
            for (k, c) in r.cores.iter().enumerate() {
                let $m::CoreRun {
                    block,
                    core,
                    index,
                    end_cycle,
                    pipes,
                    overlap_cycles,
                    bank_conflict_cycles,
                } = c;
                out.push(format!(
                    "core {k}: block {block} type {core:?} index {index} end {end_cycle} \
                     overlap {overlap_cycles} bank_conflicts {bank_conflict_cycles:?} \
                     pipes {}",
                    pipes.len()
                ));
                for p in pipes {
                    let $m::PipeStats {
                        pipe,
                        instructions,
                        busy,
                        stalls,
                        starved,
                        idle,
                    } = p;
                    out.push(format!(
                        "core {k} {pipe:?}: instructions {instructions} busy {busy} \
                         stalls {stalls:?} starved {starved} idle {idle}"
                    ));
                }
            }
            out.push(format!("findings {}", r.findings.len()));
            out.extend(r.findings.iter().map(|f| format!("finding {f:?}")));
            out.push(format!("deadlock {:?}", r.deadlock));
            out.push(format!("stopped {:?}", r.stopped));
            out.push(format!("memory {:?}", r.memory));
            out
        }
    };
}

summary_for!(summary_old, old);
summary_for!(summary_new, new);

/// How long a run may go, for both engines' `Limits`.
#[derive(Clone, Copy, Debug)]
struct Lim {
    max_cycles: u64,
    max_instructions: u64,
    warm: bool,
}

impl Lim {
    const NONE: Lim = Lim {
        max_cycles: old::Limits::DEFAULT,
        max_instructions: old::Limits::DEFAULT,
        warm: false,
    };

    fn for_reference(self) -> old::Limits {
        old::Limits {
            max_cycles: self.max_cycles,
            max_instructions: self.max_instructions,
            l2: if self.warm {
                old::L2Start::Warm
            } else {
                old::L2Start::Cold
            },
        }
    }

    fn for_engine(self) -> new::Limits {
        new::Limits {
            max_cycles: self.max_cycles,
            max_instructions: self.max_instructions,
            l2: if self.warm {
                new::L2Start::Warm
            } else {
                new::L2Start::Cold
            },
        }
    }
}

/// `None` when both are equal; else where they first differ, with the lines before it.
fn first_difference(what: &str, reference: &[String], engine: &[String]) -> Option<String> {
    let same = reference
        .iter()
        .zip(engine)
        .take_while(|(a, b)| a == b)
        .count();
    if same == reference.len() && same == engine.len() {
        return None;
    }
    let mut m = format!(
        "{what} differ at line {same} (reference has {} lines, engine {}):\n",
        reference.len(),
        engine.len()
    );
    for l in &reference[same.saturating_sub(4)..same] {
        let _ = writeln!(m, "    both:      {l}");
    }
    let none = "(nothing)".to_string();
    let _ = writeln!(m, "    reference: {}", reference.get(same).unwrap_or(&none));
    let _ = writeln!(m, "    engine:    {}", engine.get(same).unwrap_or(&none));
    Some(m)
}

/// What a compared input did, for the case counts and to choose limits that stop it early.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    total_cycles: u64,
    instructions: u64,
    cores: usize,
    deadlock: bool,
    stopped: bool,
    findings: bool,
    error: bool,
}

/// Runs `parts` on both engines, with the recorder and with `()`, and requires the same
/// outcomes and the same observer stream. `Err` holds the first difference and `what`.
fn compare(
    what: &str,
    parts: &[(&Program, &Addresses)],
    config: &Config,
    lim: Lim,
) -> Result<Seen, String> {
    let mut rec_old = Recorder::default();
    let mut rec_new = Recorder::default();
    let ro = old::run_launch(parts, config, lim.for_reference(), &mut rec_old);
    let rn = new::run_launch(parts, config, lim.for_engine(), &mut rec_new);
    let mut bare_old = Recorder {
        no_slots: true,
        ..Recorder::default()
    };
    let mut bare_new = Recorder {
        no_slots: true,
        ..Recorder::default()
    };
    let bo = old::run_launch(parts, config, lim.for_reference(), &mut bare_old);
    let bn = new::run_launch(parts, config, lim.for_engine(), &mut bare_new);
    let uo = summary_old(&old::run_launch(
        parts,
        config,
        lim.for_reference(),
        &mut (),
    ));
    let un = summary_new(&new::run_launch(parts, config, lim.for_engine(), &mut ()));
    // the observer calls first: their first difference is where the two runs part
    let differences: Vec<String> = [
        first_difference("observer calls", &rec_old.lines, &rec_new.lines),
        first_difference(
            "results (ordered run)",
            &summary_old(&ro),
            &summary_new(&rn),
        ),
        first_difference("results (unobserved, relaxed run)", &uo, &un),
        first_difference(
            "observer calls (slots not watched)",
            &bare_old.lines,
            &bare_new.lines,
        ),
        first_difference(
            "results (slots not watched)",
            &summary_old(&bo),
            &summary_new(&bn),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !differences.is_empty() {
        return Err(format!(
            "{}in {what}\n(limits {lim:?})",
            differences.concat()
        ));
    }
    Ok(match &ro {
        Ok(r) => Seen {
            total_cycles: r.total_cycles,
            instructions: r
                .cores
                .iter()
                .flat_map(|c| &c.pipes)
                .map(|p| p.instructions)
                .sum(),
            cores: r.cores.len(),
            deadlock: r.deadlock.is_some(),
            stopped: r.stopped.is_some(),
            findings: !r.findings.is_empty(),
            error: false,
        },
        Err(_) => Seen {
            error: true,
            ..Seen::default()
        },
    })
}

/// [`compare`] at the default limits, then stopped halfway through by each limit.
fn compare_and_stop(
    what: &str,
    parts: &[(&Program, &Addresses)],
    config: &Config,
    warm: bool,
) -> Result<Vec<Seen>, String> {
    let lim = Lim { warm, ..Lim::NONE };
    let full = compare(what, parts, config, lim)?;
    let mut seen = vec![full];
    if full.total_cycles > 1 {
        let l = Lim {
            max_cycles: full.total_cycles / 2,
            ..lim
        };
        seen.push(compare(what, parts, config, l)?);
    }
    if full.instructions > 1 {
        let l = Lim {
            max_instructions: full.instructions / 2,
            ..lim
        };
        seen.push(compare(what, parts, config, l)?);
    }
    Ok(seen)
}

// ----- configs --------------------------------------------------------------------------------

fn builtin(name: &str) -> Config {
    crate::load_config(crate::builtin::builtin(name).unwrap(), name).expect("built-in config")
}

/// The refinements of docs/timing.md the shipped ascend910b config has, switched per run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Knobs {
    /// `vector.block_bytes` and `ub_banks`.
    banks: bool,
    /// The gm memory system.
    memory: bool,
    /// `scalar.gm_latency`.
    gm_latency: bool,
    queue_depth: u32,
    flag_latency: u32,
    /// `cross_core.max_pending` and `latency`.
    max_pending: u32,
    cross_latency: u32,
}

pub(crate) fn knobs() -> impl Strategy<Value = Knobs> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![1u32..=4, Just(32u32)],
        0u32..=3,
        1u32..=16,
        prop_oneof![Just(0u32), 1u32..=150],
    )
        .prop_map(
            |(banks, memory, gm_latency, queue_depth, flag_latency, max_pending, cross_latency)| {
                Knobs {
                    banks,
                    memory,
                    gm_latency,
                    queue_depth,
                    flag_latency,
                    max_pending,
                    cross_latency,
                }
            },
        )
}

/// ascend910b with `k` applied (the values engine_throughput's `--refinements on` uses where
/// the shipped config has none).
pub(crate) fn config_with(k: Knobs) -> Config {
    let mut c = builtin("ascend910b");
    if k.banks {
        c.vector.block_bytes.get_or_insert(32);
        c.vector.ub_banks.get_or_insert(UbBanks {
            groups: 16,
            row_bytes: 32,
            bank_bytes: 4096,
        });
    } else {
        c.vector.block_bytes = None;
        c.vector.ub_banks = None;
    }
    if k.memory {
        c.memory.get_or_insert(MemoryConfig {
            line_bytes: 512,
            l2_bytes: 192 << 20,
            l2_read_bytes_per_cycle: 110,
            l2_write_bytes_per_cycle: 86,
            l2_chip_bytes_per_cycle: 3888,
            l2_latency: 200,
            hbm_bytes_per_cycle: 32,
            hbm_read_latency: 1400,
        });
    } else {
        c.memory = None;
    }
    c.scalar.gm_latency = if k.gm_latency { Some(200) } else { None };
    c.queue_depth = k.queue_depth;
    c.sync.flag_latency = k.flag_latency;
    if let Some(x) = c.cross_core.as_mut() {
        x.max_pending = k.max_pending;
        x.latency = k.cross_latency;
    }
    c
}

/// How buffers are placed: the default (`at:` or 0), every slot side by side, or at offsets
/// drawn from `draws` (aligned, within the scope; overlaps allowed: the engine does not check),
/// with a list one longer than `multi` when the draw says so.
#[derive(Clone, Debug)]
enum Place {
    Default,
    SideBySide,
    Random(Vec<u32>),
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![
        Just(Place::Default),
        Just(Place::SideBySide),
        prop::collection::vec(any::<u32>(), 16).prop_map(Place::Random),
    ]
}

fn addresses(program: &Program, config: &Config, place: &Place) -> Addresses {
    let mut a = Addresses::new(program.buffers.len());
    let mut next = [0u64; Space::COUNT];
    let mut draw = 0usize;
    for (b, buf) in program.buffers.iter().enumerate() {
        let bytes = buf.bytes.next_multiple_of(32);
        let offsets = match place {
            Place::Default => continue,
            Place::SideBySide => (0..buf.multi)
                .map(|_| {
                    let at = next[buf.scope.index()];
                    next[buf.scope.index()] += bytes;
                    at
                })
                .collect(),
            Place::Random(d) => {
                let cap = config
                    .core(program.core)
                    .scope(buf.scope)
                    .map_or(bytes, |s| s.bytes);
                let room = cap.saturating_sub(bytes) / 32 + 1;
                let mut take = || {
                    draw += 1;
                    u64::from(d[draw % d.len()])
                };
                let extra = u32::from(take() % 4 == 0);
                (0..buf.multi + extra).map(|_| take() % room * 32).collect()
            }
        };
        a.set(crate::ids::BufferId::new(b), offsets, bytes);
    }
    a
}

// ----- random single-core programs (properties.rs's generator, widened) -----------------------

/// A generated op. The first ten are properties.rs's; the rest reach what it leaves out: lone
/// flags (double sets, unpaired sets and deadlocks), scalar gm accesses (`scalar.gm_latency`)
/// and cross-core flags (launches).
#[derive(Clone, Debug)]
pub(crate) enum Item {
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
    /// A set_flag alone.
    Set {
        src: Pipe,
        dst: Pipe,
        id: u32,
    },
    /// A wait_flag alone.
    Wait {
        src: Pipe,
        dst: Pipe,
        id: u32,
    },
    /// `sload` of gm (`tensor`) or of a buffer.
    Sload {
        tensor: Option<usize>,
        buf: usize,
    },
    /// `sstore` to gm or to a buffer.
    Sstore {
        tensor: Option<usize>,
        buf: usize,
    },
    /// A cross_set on `set` then a cross_wait on `wait` (launches only).
    Cross {
        mode: u32,
        id: u32,
        set: Pipe,
        wait: Pipe,
    },
}

pub(crate) const BUFS: usize = 4;
const TENSORS: usize = 2;
const ROWS: u32 = 64;
const FLAG_PIPES: [Pipe; 4] = [Pipe::S, Pipe::V, Pipe::Mte2, Pipe::Mte3];

fn flag_pipes() -> impl Strategy<Value = (Pipe, Pipe)> {
    (0..4usize, 0..4usize)
        .prop_filter("distinct pipes", |(s, d)| s != d)
        .prop_map(|(s, d)| (FLAG_PIPES[s], FLAG_PIPES[d]))
}

fn leaf(cross: bool) -> impl Strategy<Value = Item> {
    let base = prop_oneof![
        (0..TENSORS, 0..BUFS).prop_map(|(tensor, buf)| Item::Load { tensor, buf }),
        (0..BUFS, 0..TENSORS).prop_map(|(buf, tensor)| Item::Store { buf, tensor }),
        (0..BUFS, 0..BUFS, 0..BUFS).prop_map(|(a, b, out)| Item::Vadd { a, b, out }),
        (0..BUFS, 0..BUFS).prop_map(|(a, out)| Item::Vexp { a, out }),
        (0..BUFS, 0..BUFS).prop_map(|(src, dst)| Item::Copy { src, dst }),
        (1u32..20).prop_map(|cycles| Item::Scalar { cycles }),
        (flag_pipes(), 0u32..8).prop_map(|((src, dst), id)| Item::Flag { src, dst, id }),
        prop_oneof![
            Just(None),
            Just(Some(Pipe::V)),
            Just(Some(Pipe::Mte2)),
            Just(Some(Pipe::Mte3))
        ]
        .prop_map(|pipe| Item::Barrier { pipe }),
    ];
    // a lone wait deadlocks most programs it is in, unless a lone set came before: rarer
    let extra = prop_oneof![
        3 => (flag_pipes(), 0u32..3).prop_map(|((src, dst), id)| Item::Set { src, dst, id }),
        1 => (flag_pipes(), 0u32..3).prop_map(|((src, dst), id)| Item::Wait { src, dst, id }),
        2 => (prop::option::of(0..TENSORS), 0..BUFS)
            .prop_map(|(tensor, buf)| Item::Sload { tensor, buf }),
        2 => (prop::option::of(0..TENSORS), 0..BUFS)
            .prop_map(|(tensor, buf)| Item::Sstore { tensor, buf }),
    ];
    let cross_item = (
        0u32..=1,
        0u32..3,
        prop::sample::select(vec![Pipe::S, Pipe::Mte3, Pipe::V]),
        prop::sample::select(vec![Pipe::S, Pipe::Mte2, Pipe::V]),
    )
        .prop_map(|(mode, id, set, wait)| Item::Cross {
            mode,
            id,
            set,
            wait,
        });
    if cross {
        prop_oneof![10 => base, 2 => extra, 2 => cross_item].boxed()
    } else {
        prop_oneof![10 => base, 2 => extra].boxed()
    }
}

pub(crate) fn items(cross: bool) -> impl Strategy<Value = Vec<Item>> {
    let item = leaf(cross).prop_recursive(3, 48, 6, |inner| {
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

/// The program of `items` on rows (and buffers) of `cols` f16.
pub(crate) fn render(items: &[Item], multi: &[u32], cols: u32) -> String {
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
    render_block(&mut s, items, 1, &mut 0, None, cols);
    s
}

fn render_block(
    s: &mut String,
    items: &[Item],
    depth: usize,
    vars: &mut usize,
    var: Option<&str>,
    cols: u32,
) {
    let pad = "  ".repeat(depth);
    let row = var.map_or("0".to_string(), |v| format!("{v} % {ROWS}"));
    let scalar_at = |tensor: &Option<usize>, buf: &usize| match tensor {
        Some(t) => format!("\"g{t}[{row}, {}]\"", cols / 2),
        None => format!("\"b{buf}[1]\""),
    };
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
            Item::Set { src, dst, id } => {
                let (a, b) = (src.yaml_name(), dst.yaml_name());
                *s += &format!("{pad}- set_flag: {{ src: {a}, dst: {b}, id: {id} }}\n");
            }
            Item::Wait { src, dst, id } => {
                let (a, b) = (src.yaml_name(), dst.yaml_name());
                *s += &format!("{pad}- wait_flag: {{ src: {a}, dst: {b}, id: {id} }}\n");
            }
            Item::Sload { tensor, buf } => {
                *s += &format!("{pad}- sload: {{ src: {} }}\n", scalar_at(tensor, buf))
            }
            Item::Sstore { tensor, buf } => {
                *s += &format!("{pad}- sstore: {{ dst: {} }}\n", scalar_at(tensor, buf))
            }
            Item::Cross {
                mode,
                id,
                set,
                wait,
            } => {
                let (a, b) = (set.yaml_name(), wait.yaml_name());
                *s += &format!("{pad}- cross_set: {{ mode: {mode}, pipe: {a}, id: {id} }}\n");
                *s += &format!("{pad}- cross_wait: {{ id: {id}, pipe: {b} }}\n");
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
                render_block(s, body, depth + 2, vars, Some(&v), cols);
            }
            Item::If { m, then, els } => {
                let cond = var.map_or("1".to_string(), |v| format!("{v} % {m} == 0"));
                *s += &format!("{pad}- if: \"{cond}\"\n{pad}  then:\n");
                render_block(s, then, depth + 2, vars, var, cols);
                if !els.is_empty() {
                    *s += &format!("{pad}  else:\n");
                    render_block(s, els, depth + 2, vars, var, cols);
                }
            }
        }
    }
}

/// Loads `text` (a generated program: it must load) and compares it on both engines.
/// `blocks` is `--blocks`.
fn compare_text(
    text: &str,
    blocks: Option<u32>,
    config: &Config,
    place: &Place,
    lim: Lim,
) -> Result<Seen, TestCaseError> {
    let kernel = crate::load_kernel(text, "random.yaml", config, &[], blocks)
        .unwrap_or_else(|e| panic!("a generated program must load: {e}\n{text}"));
    let addrs: Vec<Addresses> = kernel
        .parts
        .iter()
        .map(|p| addresses(p, config, place))
        .collect();
    let parts: Vec<(&Program, &Addresses)> = kernel.parts.iter().zip(&addrs).collect();
    let blocks = blocks.map_or(String::new(), |b| format!(" with --blocks {b}"));
    compare(
        &format!("\n{text}\nplaced {place:?}{blocks}"),
        &parts,
        config,
        lim,
    )
    .map_err(TestCaseError::fail)
}

/// Limits for a random case: none, or a cycle or instruction limit from `cut`.
fn limits() -> impl Strategy<Value = Lim> {
    (any::<bool>(), 0u8..4, 1u64..3000).prop_map(|(warm, which, cut)| match which {
        0 => Lim {
            max_cycles: cut * 10,
            warm,
            ..Lim::NONE
        },
        1 => Lim {
            max_instructions: cut / 20 + 1,
            warm,
            ..Lim::NONE
        },
        _ => Lim { warm, ..Lim::NONE },
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random single-core programs under every combination of the refinements, queue depths,
    /// flag latencies, placements and limits.
    #[test]
    fn random_programs_run_the_same_on_both_engines(
        items in items(false),
        multi in prop::collection::vec(1u32..3, BUFS),
        cols in prop_oneof![Just(256u32), Just(64u32), Just(2048u32)],
        knobs in knobs(),
        place in place(),
        lim in limits(),
    ) {
        let config = config_with(knobs);
        compare_text(&render(&items, &multi, cols), None, &config, &place, lim)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// The same programs, with mode-0 and mode-1 cross-core flags, launched (`--blocks`) on
    /// 1..=6 vector cores that share gm, the L2 and HBM.
    #[test]
    fn random_single_type_launches_run_the_same_on_both_engines(
        items in items(true),
        multi in prop::collection::vec(1u32..3, BUFS),
        cols in prop_oneof![Just(256u32), Just(4096u32)],
        blocks in 1u32..=6,
        knobs in knobs(),
        place in place(),
        lim in limits(),
    ) {
        let config = config_with(Knobs { memory: true, ..knobs });
        let text = render(&items, &multi, cols);
        compare_text(&text, Some(blocks), &config, &place, lim)?;
    }
}

// ----- random mixed launches -------------------------------------------------------------------

/// A mixed kernel after matmul_add_manual.yaml: per block, the cube core makes `tiles` tiles
/// (t = block, block + blocks, ...) and hands each to the block's vector cores through gm with
/// a mode-2 cross_set; every `every` tiles it waits for the vector cores' reverse flag. The
/// vector cores may also meet at a mode-0 or mode-1 barrier each tile.
#[derive(Clone, Debug)]
pub(crate) struct Mixed {
    blocks: u32,
    tiles: u32,
    tm: u32,
    n: u32,
    /// 512 splits the `mmad_l1` into several chunks (its a no longer fits half of L0A), so
    /// MTE1 waits on M (`wait_flag M#mmad_l1`).
    k: u32,
    /// The cube's forward cross_set pipe: fix or s.
    set_pipe: Pipe,
    /// The vector cores' forward cross_wait pipe.
    wait_pipe: Pipe,
    /// Reverse flag every this many tiles (0: none, so the cube runs ahead and may overflow).
    every: u32,
    /// The vector cores set the reverse flag every `every + skew` waits: skew 0 pairs, other
    /// values leave waits unmatched (deadlocks) or sets unpaired.
    skew: u32,
    /// The vector cores' reverse cross_set pipe.
    rev_pipe: Pipe,
    /// A per-tile barrier among the vector cores: (mode, set pipe, wait pipe).
    barrier: Option<(u32, Pipe, Pipe)>,
    /// Scalar cycles each vector tile starts with: slow vector cores let the cube core run
    /// ahead, so its sets pile up (overflows).
    slow: u32,
}

pub(crate) fn mixed() -> impl Strategy<Value = Mixed> {
    (
        (
            1u32..=6,
            1u32..=40,
            prop::sample::select(vec![16u32, 32, 64]),
        ),
        (
            prop::sample::select(vec![32u32, 64, 256]),
            prop::sample::select(vec![32u32, 64, 512]),
        ),
        (
            prop::sample::select(vec![Pipe::Fix, Pipe::S]),
            prop::sample::select(vec![Pipe::Mte2, Pipe::S, Pipe::V]),
            prop_oneof![Just(0u32), 1u32..=20],
            prop_oneof![4 => Just(0u32), 1 => 1u32..=2],
            prop::sample::select(vec![Pipe::Mte2, Pipe::S, Pipe::Mte3]),
        ),
        prop::option::of((
            0u32..=1,
            prop::sample::select(vec![Pipe::S, Pipe::Mte3]),
            prop::sample::select(vec![Pipe::S, Pipe::Mte2]),
        )),
        prop_oneof![Just(0u32), 1u32..3000],
    )
        .prop_map(
            |(
                (blocks, tiles, tm),
                (n, k),
                (set_pipe, wait_pipe, every, skew, rev_pipe),
                barrier,
                slow,
            )| {
                Mixed {
                    blocks,
                    tiles,
                    tm,
                    n,
                    k,
                    set_pipe,
                    wait_pipe,
                    every,
                    skew,
                    rev_pipe,
                    barrier,
                    slow,
                }
            },
        )
}

pub(crate) fn render_mixed(m: &Mixed) -> String {
    let Mixed {
        blocks,
        tiles,
        tm,
        n,
        k,
        ..
    } = *m;
    let half = tm / 2;
    let mut s = format!(
        "kernel: mixed_random\nlaunch: {{ blocks: {blocks} }}\nsync: manual\n\
         params: {{ tm: {tm}, tiles: {tiles}, M: \"tiles * tm\", N: {n}, K: {k}, half: {half} }}\n\
         gm:\n\
         \x20 a:  {{ shape: [M, K], dtype: f16 }}\n\
         \x20 b:  {{ shape: [K, N], dtype: f16 }}\n\
         \x20 x:  {{ shape: [M, N], dtype: f16 }}\n\
         \x20 ws: {{ shape: [M, N], dtype: f16 }}\n\
         \x20 y:  {{ shape: [M, N], dtype: f16 }}\n\
         aic:\n\
         \x20 buffers:\n\
         \x20   b1: {{ scope: l1, shape: [K, N], dtype: f16 }}\n\
         \x20   c0: {{ scope: l0c, shape: [tm, N], dtype: f32 }}\n\
         \x20 body:\n\
         \x20   - load: {{ src: b, dst: b1, layout: nz }}\n\
         \x20   - for: {{ var: t, from: block, to: tiles, step: blocks }}\n\
         \x20     buffers:\n\
         \x20       a1: {{ scope: l1, shape: [tm, K], dtype: f16, multi: 2 }}\n\
         \x20     body:\n\
         \x20       - load: {{ src: \"a[t * tm : (t + 1) * tm]\", dst: a1, layout: nz }}\n\
         \x20       - mmad_l1: {{ a: a1, b: b1, c: c0, m: tm, n: N, k: K, init: 1 }}\n\
         \x20       - fixpipe: {{ src: c0, dst: \"ws[t * tm : (t + 1) * tm]\", quant: true }}\n\
         \x20       - cross_set: {{ mode: 2, pipe: {}, id: 0 }}\n",
        m.set_pipe.yaml_name()
    );
    if m.every > 0 {
        let e = m.every;
        s += &format!(
            "\x20       - if: \"(t - block) / blocks % {e} == {}\"\n\
             \x20         then:\n\
             \x20           - cross_wait: {{ id: 1, pipe: fix }}\n",
            e - 1
        );
    }
    s += &format!(
        "aiv:\n\
         \x20 body:\n\
         \x20   - for: {{ var: t, from: block, to: tiles, step: blocks }}\n\
         \x20     buffers:\n\
         \x20       wb: {{ scope: ub, shape: [half, N], dtype: f16, multi: 2 }}\n\
         \x20       xb: {{ scope: ub, shape: [half, N], dtype: f16, multi: 2 }}\n\
         \x20       yb: {{ scope: ub, shape: [half, N], dtype: f16, multi: 2 }}\n\
         \x20     body:\n\
         \x20       - scalar: {{ cycles: {} }}\n\
         \x20       - load: {{ src: \"x[t * tm + subblock * half : t * tm + (subblock + 1) * half]\", dst: xb }}\n\
         \x20       - cross_wait: {{ id: 0, pipe: {} }}\n",
        m.slow,
        m.wait_pipe.yaml_name()
    );
    if m.every > 0 {
        let e = m.every + m.skew;
        s += &format!(
            "\x20       - if: \"(t - block) / blocks % {e} == {}\"\n\
             \x20         then:\n\
             \x20           - cross_set: {{ mode: 2, pipe: {}, id: 1 }}\n",
            e - 1,
            m.rev_pipe.yaml_name()
        );
    }
    s += "\x20       - load: { src: \"ws[t * tm + subblock * half : t * tm + (subblock + 1) * half]\", dst: wb }\n\
          \x20       - vadd: { ins: [wb, xb], out: yb }\n\
          \x20       - store: { src: yb, dst: \"y[t * tm + subblock * half : t * tm + (subblock + 1) * half]\" }\n";
    if let Some((mode, set, wait)) = m.barrier {
        s += &format!(
            "\x20       - cross_set: {{ mode: {mode}, pipe: {}, id: 2 }}\n\
             \x20       - cross_wait: {{ id: 2, pipe: {} }}\n",
            set.yaml_name(),
            wait.yaml_name()
        );
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Random mixed launches: cube-to-vector hand-offs, reverse flags at random depths (some
    /// above max_pending, some never matched), vector barriers, random limits.
    #[test]
    fn random_mixed_launches_run_the_same_on_both_engines(
        m in mixed(),
        knobs in knobs(),
        place in place(),
        lim in limits(),
    ) {
        let config = config_with(knobs);
        compare_text(&render_mixed(&m), None, &config, &place, lim)?;
    }
}

// ----- every shipped program -------------------------------------------------------------------

/// Every `.yaml` and `.mlir` file under `dir` (recursively), sorted.
fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "mlir") {
            out.push(p);
        }
    }
}

/// Every program and fixture of the repository that loads (without the planner: `sync: auto`
/// programs run with the flags they have, buffers at `at:` or 0) on a built-in config or a test
/// config, at its default params, run to the end and stopped halfway by each limit (and so
/// once more with a warm L2 when the config has one), then with its buffers side by side.
#[test]
fn every_shipped_program_runs_the_same_on_both_engines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "programs",
        "tests/fixtures",
        "sim/tests/golden",
        "sim/tests/fixtures",
    ] {
        files_under(&root.join(dir), &mut files);
    }
    files.sort();
    let golden = root.join("sim/tests/golden");
    let mut configs: Vec<(String, Config)> = crate::builtin::BUILTIN
        .iter()
        .map(|(n, _)| (n.to_string(), builtin(n)))
        .collect();
    for f in [
        "test_config.yaml",
        "two_block_config.yaml",
        "memory_config.yaml",
    ] {
        let text = std::fs::read_to_string(golden.join(f)).expect("a golden config");
        configs.push((f.to_string(), crate::load_config(&text, f).expect(f)));
    }
    let (mut programs, mut runs, mut launches, mut stopped) = (0, 0, 0, 0);
    // deadlocked, with findings, run-time errors
    let mut ended = [0usize; 3];
    let mut problems = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let name = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        let mut loaded = false;
        for (cname, config) in &configs {
            let Ok(kernel): Result<Kernel, _> = crate::load_kernel(&text, &name, config, &[], None)
            else {
                continue;
            };
            loaded = true;
            let none = Addresses::default();
            let parts: Vec<(&Program, &Addresses)> =
                kernel.parts.iter().map(|p| (p, &none)).collect();
            let what = format!("{name} on {cname}");
            let mut warms = vec![false];
            if config.memory.is_some() {
                warms.push(true);
            }
            for warm in warms {
                match compare_and_stop(&what, &parts, config, warm) {
                    Ok(seen) => {
                        runs += seen.len();
                        launches += usize::from(seen[0].cores > 1);
                        stopped += seen.iter().filter(|s| s.stopped).count();
                        ended[0] += seen.iter().filter(|s| s.deadlock).count();
                        ended[1] += seen.iter().filter(|s| s.findings).count();
                        ended[2] += seen.iter().filter(|s| s.error).count();
                    }
                    Err(e) => problems.push(e),
                }
            }
            // every slot of every buffer side by side: other UB bank conflicts than at 0
            let placed: Vec<Addresses> = kernel
                .parts
                .iter()
                .map(|p| addresses(p, config, &Place::SideBySide))
                .collect();
            let parts: Vec<(&Program, &Addresses)> = kernel.parts.iter().zip(&placed).collect();
            let what = format!("{what}, buffers side by side");
            match compare(&what, &parts, config, Lim::NONE) {
                Ok(_) => runs += 1,
                Err(e) => problems.push(e),
            }
        }
        programs += usize::from(loaded);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!(
        "{programs} of {} files load; {runs} inputs compared, each run 3 times on each engine ({launches} launches, \
         {stopped} stopped at a limit, {} deadlocked, {} with findings, {} run-time errors)",
        files.len(),
        ended[0],
        ended[1],
        ended[2]
    );
    // the shipped programs (about 20) and fixtures must be found and loaded, not skipped
    assert!(programs >= 40, "only {programs} programs loaded");
    assert!(stopped >= 40, "only {stopped} runs stopped at a limit");
}

/// Inputs the generators reach rarely or never: more double sets than a run keeps (the
/// omitted count), flags consumed in the cycle they are set (`flag_latency` 0, `issue_cycles`
/// 0), a queue of depth 1, and a run-time error after some cycles.
#[test]
fn edge_programs_run_the_same_on_both_engines() {
    let head = "kernel: edge\ncore: aiv\nsync: manual\n\
                gm:\n  g: { shape: [4, 256], dtype: f16 }\n\
                buffers:\n  b: { scope: ub, shape: [256], dtype: f16, multi: 2 }\nbody:\n";
    let bodies = [
        // 1500 sets of one flag that nothing consumes: 1499 double sets, 1000 kept
        "  - for: { var: i, to: 1500 }\n    body:\n\
         \x20     - set_flag: { src: v, dst: mte3, id: 0 }\n",
        // a ping-pong whose every flag is consumed in the cycle it becomes visible
        "  - load: { src: \"g[0]\", dst: \"b@0\" }\n\
         \x20 - for: { var: i, to: 6 }\n    body:\n\
         \x20     - set_flag: { src: mte2, dst: v, id: \"i % 2\" }\n\
         \x20     - wait_flag: { src: mte2, dst: v, id: \"i % 2\" }\n\
         \x20     - vexp: { ins: [b], out: b }\n\
         \x20     - set_flag: { src: v, dst: s, id: 1 }\n\
         \x20     - wait_flag: { src: v, dst: s, id: 1 }\n\
         \x20     - load: { src: \"g[i % 4]\", dst: b }\n",
        // an index out of bounds on the third iteration, after the first two ran (behind a
        // guard the loader cannot read exactly, so it leaves the check to the engine)
        "  - for: { var: i, to: 5 }\n    body:\n\
         \x20     - if: \"i * i >= 0\"\n        then:\n\
         \x20         - load: { src: \"g[i * 2]\", dst: b }\n\
         \x20         - store: { src: b, dst: \"g[i % 4]\" }\n",
    ];
    let mut config = builtin("ascend910b");
    let mut runs = 0;
    for (k, body) in bodies.iter().enumerate() {
        let text = format!("{head}{body}");
        for (issue, flag, depth) in [(1, 2, 32), (0, 0, 1), (1, 0, 2)] {
            config.scalar.issue_cycles = issue;
            config.sync.flag_latency = flag;
            config.queue_depth = depth;
            let program = crate::load_program(&text, "edge.yaml", &config, &[])
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let none = Addresses::default();
            let what =
                format!("edge.yaml (issue {issue}, flag latency {flag}, depth {depth})\n{text}");
            let seen = compare_and_stop(&what, &[(&program, &none)], &config, false)
                .unwrap_or_else(|e| panic!("{e}"));
            runs += seen.len();
            // each input reaches what it is here for
            let r = old::run(&program, &config);
            match k {
                0 => assert!(r
                    .unwrap()
                    .findings
                    .contains(&old::SyncFinding::DoubleSetsOmitted {
                        core: 0,
                        count: 499
                    })),
                1 => assert!(r.unwrap().findings.is_empty()),
                _ => assert!(r.is_err_and(|e| e.cycle > 0 && e.iteration == ", i=2")),
            }
        }
    }
    assert!(runs >= 9);
}
