//! Cross-core synchronisation of a mixed kernel (`sync: auto`, docs/sync.md "Across cores"): the
//! counterpart of HIVM's InjectBlockSync. A gm tensor written by one core type and read by the
//! other (the workspace hand-off) gets a mode-2 `cross_set` after its writing op and a
//! `cross_wait` before its reading op. When a producer could run far enough ahead to overflow a
//! counter, or to overwrite workspace its consumer has not read yet, a reverse flag runs the
//! other way: the consumer grants `depth` writes up front and one more after each read, and the
//! producer waits for a grant before each write, and takes the last `depth` grants back at the
//! end of its body (so every grant is waited for).
//!
//! The pass handles one shape: each hand-off tensor is written by ops of one part only, and every
//! core of a block executes as many writes of it (producer cores) as reads (consumer cores). It
//! counts them by walking each core's control flow with the core's `block` and `subblock`, so
//! loops, `if`s and `while`s may surround the ops. Anything else is refused with the reason, and
//! the user writes the flags by hand. Invariant: the k-th read on a consumer core pairs with the
//! k-th write on its block's producer core(s), in execution order; whether that is what the
//! program means is the race checker's to prove (a hand-off whose reads do not follow its writes
//! in that order is a hazard at run time).

use sim::expr::Expr;
use sim::footprint::{Bases, Footprint};
use sim::program::{Block, CrossMode, Kernel, Loc, Op, OpKind, Program, Ref, Side, SyncMode};
use sim::{Config, OpId, Pipe, TensorId};

/// What the pass inserted for one hand-off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The gm tensor handed over.
    pub tensor: String,
    /// Part (index into the kernel's parts) whose op writes it, and that op's YAML path.
    pub producer: (usize, String),
    /// Part whose op reads it, and that op's YAML path.
    pub consumer: (usize, String),
    /// The forward flag id.
    pub flag: u32,
    /// The reverse flag id and the depth (writes the producer may run ahead), when needed.
    pub reverse: Option<(u32, u32)>,
    /// Writes per producer core (the same on every core of the launch, or the first block's).
    pub count: u64,
}

/// The kernel with its cross-core flags, and what was inserted.
#[derive(Clone, Debug)]
pub struct CrossSynced {
    pub kernel: Kernel,
    pub handoffs: Vec<Handoff>,
}

/// Why the pass cannot synchronise the kernel: every reason found, each naming the tensor and
/// ops concerned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "sync: auto cannot place the cross-core flags of this kernel:\n  - {}\n  write the \
     cross-core flags by hand (cross_set / cross_wait, docs/programs.md \"Cross-core flags\"): \
     the pass leaves a kernel that has any to you",
    problems.join("\n  - ")
)]
pub struct CrossSyncError {
    pub problems: Vec<String>,
}

/// Steps of the walk (control ops entered, hand-off ops counted) over every core of the launch
/// before the pass gives up: about as many as the run itself would execute of those ops, so a
/// kernel too long to count is one too long to simulate in reasonable time anyway.
const ENUMERATION_LIMIT: u64 = 1 << 23;

/// Whether the pass applies: a mixed kernel with `sync: auto` and no cross-core op written by
/// hand.
pub fn applies(kernel: &Kernel) -> bool {
    kernel.parts.len() == 2
        && kernel.parts.iter().all(|p| p.sync == SyncMode::Auto)
        && !kernel.parts.iter().any(|p| {
            p.ops
                .iter()
                .any(|o| matches!(o.kind, OpKind::CrossSet { .. } | OpKind::CrossWait { .. }))
        })
}

/// One gm access of a part: (tensor, op, write).
fn gm_accesses(p: &Program) -> Vec<(TensorId, OpId, bool)> {
    let mut out = Vec::new();
    for (i, op) in p.ops.iter().enumerate() {
        for (ops, write) in [(op.kind.reads(), false), (op.kind.writes(), true)] {
            for o in ops {
                if let Ref::Tensor(t) = o.base {
                    out.push((t, OpId::new(i), write));
                }
            }
        }
    }
    out.sort_by_key(|&(t, op, w)| (t.index(), op.index(), w));
    out.dedup();
    out
}

/// Inserts the kernel's cross-core flags (see the module doc). A kernel the pass does not apply
/// to comes back unchanged.
pub fn synchronize_kernel(kernel: &Kernel, config: &Config) -> Result<CrossSynced, CrossSyncError> {
    synchronize_within(kernel, config, ENUMERATION_LIMIT)
}

/// [`synchronize_kernel`] with a walk budget of `limit` steps (tests use small ones).
fn synchronize_within(
    kernel: &Kernel,
    config: &Config,
    limit: u64,
) -> Result<CrossSynced, CrossSyncError> {
    if !applies(kernel) {
        return Ok(CrossSynced {
            kernel: kernel.clone(),
            handoffs: Vec::new(),
        });
    }
    let mut problems = Vec::new();
    let (max_pending, flag_ids) = config
        .cross_core
        .map_or((16, 16), |c| (c.max_pending.max(1), c.flag_ids));
    let access: Vec<_> = kernel.parts.iter().map(gm_accesses).collect();
    let tensors = &kernel.parts[0].tensors;
    let part_name = |i: usize| config.core(kernel.parts[i].core).name.clone();
    // (tensor, producer part, writing op, consumer part, reading op)
    let mut found = Vec::new();
    for (t, tensor) in tensors.iter().enumerate() {
        let t = TensorId::new(t);
        let ops = |part: usize, write: bool| -> Vec<OpId> {
            access[part]
                .iter()
                .filter(|a| a.0 == t && a.2 == write)
                .map(|a| a.1)
                .collect()
        };
        let writers = [ops(0, true), ops(1, true)];
        let readers = [ops(0, false), ops(1, false)];
        if !writers[0].is_empty() && !writers[1].is_empty() {
            problems.push(format!(
                "gm.{} is written by both the {} and the {} part",
                tensor.name,
                part_name(0),
                part_name(1)
            ));
            continue;
        }
        let Some(p) = (0..2).find(|&p| !writers[p].is_empty()) else {
            continue;
        };
        let c = 1 - p;
        if readers[c].is_empty() {
            continue;
        }
        let mut ok = true;
        for (part, ops) in [(p, &writers[p]), (c, &readers[c])] {
            for &op in ops.iter() {
                if kernel.parts[part].op(op).pipe.is_none() {
                    problems.push(format!(
                        "{}.{} (gm.{}) runs on no pipe, so no flag can order it",
                        part_name(part),
                        kernel.parts[part].op(op).path,
                        tensor.name
                    ));
                    ok = false;
                }
            }
        }
        if ok {
            found.push((t, p, writers[p].clone(), c, readers[c].clone()));
        }
    }
    if !problems.is_empty() {
        return Err(CrossSyncError { problems });
    }

    let slots = sim::launch::slots(&kernel.parts.iter().collect::<Vec<_>>(), config);
    let blocks = kernel.parts[0].launch.blocks;
    let mut handoffs = Vec::new();
    let mut next_id = 0u32;
    let mut steps = 0u64;
    for (t, p, w, c, r) in &found {
        let (t, p, c) = (*t, *p, *c);
        let name = &tensors[t.index()].name;
        // per block: the write ranges of each producer core and the read ranges of each consumer
        let mut count: Option<u64> = None;
        let mut distance = u64::MAX;
        let mut block_ok = true;
        for b in 0..blocks {
            let cores = |part: usize, ops: &'_ [OpId]| {
                slots
                    .iter()
                    .filter(|s| s.block == b && s.part as usize == part)
                    .map(|s| {
                        let walk = Execs::new(&kernel.parts[part], ops, t, s.block, s.subblock);
                        (part, s.index, walk)
                    })
                    .collect::<Vec<_>>()
            };
            match pair_block(cores(p, w), cores(c, r), max_pending, &mut steps, limit) {
                Ok(Paired::Counts(n, d)) => {
                    count.get_or_insert(n);
                    distance = distance.min(d);
                }
                Ok(Paired::Disagree(counts)) => {
                    let list: Vec<String> = counts
                        .iter()
                        .map(|&(part, i, k)| {
                            let verb = if part == p { "writes" } else { "reads" };
                            let n = if k == 1 {
                                "once".to_string()
                            } else {
                                format!("{k} times")
                            };
                            format!("{} {i} {verb} it {n}", part_name(part))
                        })
                        .collect();
                    problems.push(format!(
                        "gm.{name}: in block {b}, {}; the pass pairs the k-th write with the k-th \
                         read on every core of the block, so the counts must agree",
                        list.join(", ")
                    ));
                    block_ok = false;
                    break;
                }
                Err((part, index, why)) => {
                    // the first reason is enough (an exhausted budget fails every core)
                    problems.push(format!("block {b} {} {index}: {why}", part_name(part)));
                    block_ok = false;
                    break;
                }
            }
        }
        if !block_ok {
            continue;
        }
        let n = count.unwrap_or(0);
        let flag = next_id;
        next_id += 1;
        let reverse = if n > u64::from(max_pending) || distance != u64::MAX {
            let depth = distance.min(u64::from(max_pending)) as u32;
            let id = next_id;
            next_id += 1;
            Some((id, depth))
        } else {
            None
        };
        handoffs.push(Handoff {
            tensor: name.clone(),
            producer: (p, paths(&kernel.parts[p], w)),
            consumer: (c, paths(&kernel.parts[c], r)),
            flag,
            reverse,
            count: n,
        });
    }
    if next_id > flag_ids {
        problems.push(format!(
            "the hand-offs need {next_id} cross-core flag ids and the config has {flag_ids} \
             (cross_core.flag_ids)"
        ));
    }
    if !problems.is_empty() {
        return Err(CrossSyncError { problems });
    }

    let mut inserts: Vec<Inserts> = kernel
        .parts
        .iter()
        .map(|p| Inserts::new(p.ops.len()))
        .collect();
    for (h, (_, p, ws, c, rs)) in handoffs.iter().zip(&found) {
        let (p, c) = (*p, *c);
        let set = |pipe: Pipe, id: u32| {
            (
                OpKind::CrossSet {
                    mode: CrossMode::Block,
                    pipe,
                    id: Expr::Const(id.into()),
                },
                pipe,
            )
        };
        let wait = |pipe: Pipe, id: u32| {
            (
                OpKind::CrossWait {
                    pipe,
                    id: Expr::Const(id.into()),
                },
                pipe,
            )
        };
        for &w in ws {
            let pipe = kernel.parts[p].op(w).pipe.unwrap_or(Pipe::S);
            inserts[p].after[w.index()].push(set(pipe, h.flag));
            if let Some((id, _)) = h.reverse {
                inserts[p].before[w.index()].push(wait(pipe, id));
            }
        }
        for &r in rs {
            let pipe = kernel.parts[c].op(r).pipe.unwrap_or(Pipe::S);
            inserts[c].before[r.index()].push(wait(pipe, h.flag));
            if let Some((id, _)) = h.reverse {
                inserts[c].after[r.index()].push(set(pipe, id));
            }
        }
        if let Some((id, depth)) = h.reverse {
            // the first reader's pipe grants the producer its first `depth` writes
            let pipe = kernel.parts[c].op(rs[0]).pipe.unwrap_or(Pipe::S);
            for _ in 0..depth {
                inserts[c].head.push(set(pipe, id));
            }
            // the producer takes the last `depth` grants back at its end: every grant is
            // waited for, so no counter is left above 0 (an unpaired cross_set finding)
            let pipe = kernel.parts[p].op(ws[0]).pipe.unwrap_or(Pipe::S);
            for _ in 0..depth {
                inserts[p].tail.push(wait(pipe, id));
            }
        }
    }
    let parts = kernel
        .parts
        .iter()
        .zip(&inserts)
        .map(|(p, ins)| emit(p, ins))
        .collect();
    Ok(CrossSynced {
        kernel: Kernel {
            parts,
            findings: kernel.findings.clone(),
        },
        handoffs,
    })
}

/// The ops' YAML paths, comma-separated.
fn paths(p: &Program, ops: &[OpId]) -> String {
    ops.iter()
        .map(|&o| p.op(o).path.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What [`pair_block`] found for one block: the count every core agrees on and the reuse
/// distance (`u64::MAX`: none within `max_pending`), or each core's count when they differ.
enum Paired {
    Counts(u64, u64),
    Disagree(Vec<(usize, u32, u64)>),
}

/// Walks one block's producer cores (`writers`: part, core index, walk) and consumer cores in
/// step, holding for each producer only its writes k..=k + max_pending while the consumers make
/// their k-th read: the per-block counts, and the reuse distance, the least d <= max_pending such
/// that write k + d of a producer overlaps read k of a consumer. Memory stays flat in the
/// number of executions. An error names the core whose walk failed.
fn pair_block(
    mut writers: Vec<(usize, u32, Execs<'_>)>,
    mut readers: Vec<(usize, u32, Execs<'_>)>,
    max_pending: u32,
    steps: &mut u64,
    limit: u64,
) -> Result<Paired, (usize, u32, String)> {
    let ahead = max_pending as usize;
    let mut windows: Vec<std::collections::VecDeque<(u64, u64)>> =
        vec![std::collections::VecDeque::with_capacity(ahead + 1); writers.len()];
    let mut counts = vec![0u64; writers.len() + readers.len()];
    let mut distance = u64::MAX;
    let mut read = Vec::with_capacity(readers.len());
    loop {
        // every producer's window holds its writes k..=k + max_pending (fewer at its end)
        for (i, (part, index, walk)) in writers.iter_mut().enumerate() {
            while windows[i].len() <= ahead {
                match walk.next(steps, limit).map_err(|e| (*part, *index, e))? {
                    Some(range) => {
                        windows[i].push_back(range);
                        counts[i] += 1;
                    }
                    None => break,
                }
            }
        }
        read.clear();
        for (j, (part, index, walk)) in readers.iter_mut().enumerate() {
            if let Some(range) = walk.next(steps, limit).map_err(|e| (*part, *index, e))? {
                counts[writers.len() + j] += 1;
                read.push(range);
            }
        }
        if read.is_empty() {
            break;
        }
        for &(rlo, rhi) in &read {
            for window in &windows {
                // write k + d is window[d]; window[0] is write k
                let hit = window
                    .iter()
                    .skip(1)
                    .position(|&(wlo, whi)| wlo < rhi && rlo < whi);
                if let Some(d) = hit {
                    distance = distance.min(d as u64 + 1);
                }
            }
        }
        for window in &mut windows {
            window.pop_front();
        }
        if read.len() < readers.len() {
            break; // the counts differ: finish counting below
        }
    }
    // the rest of each core's executions, counted only
    for (i, (part, index, walk)) in writers.iter_mut().enumerate() {
        while walk
            .next(steps, limit)
            .map_err(|e| (*part, *index, e))?
            .is_some()
        {
            counts[i] += 1;
        }
    }
    for (j, (part, index, walk)) in readers.iter_mut().enumerate() {
        while walk
            .next(steps, limit)
            .map_err(|e| (*part, *index, e))?
            .is_some()
        {
            counts[writers.len() + j] += 1;
        }
    }
    let n = counts.first().copied().unwrap_or(0);
    if counts.iter().all(|&k| k == n) {
        return Ok(Paired::Counts(n, distance));
    }
    let cores = writers
        .iter()
        .map(|w| (w.0, w.1))
        .chain(readers.iter().map(|r| (r.0, r.1)));
    Ok(Paired::Disagree(
        cores.zip(counts).map(|((p, i), k)| (p, i, k)).collect(),
    ))
}

/// The element ranges of `tensor` the executions of `ops` touch on one core (`block`,
/// `subblock`), one at a time in execution order: the core's control flow walked with an
/// explicit stack, so only the current loop nest is held.
struct Execs<'a> {
    p: &'a Program,
    footprints: Vec<Option<Footprint<'a>>>,
    /// A control op is entered only when something below it is wanted.
    wanted: Vec<bool>,
    vars: Vec<i64>,
    stack: Vec<Frame<'a>>,
}

enum Frame<'a> {
    /// The next op of a block.
    Block { ops: &'a [OpId], i: usize },
    /// A `for` whose body has just run for `v`.
    For {
        var: usize,
        v: i64,
        to: i64,
        step: i64,
        body: &'a Block,
    },
    /// A `while` whose body has just run for iteration `i` of `n`.
    While {
        var: usize,
        i: i64,
        n: i64,
        body: &'a Block,
    },
}

impl<'a> Execs<'a> {
    fn new(p: &'a Program, ops: &[OpId], tensor: TensorId, block: u32, subblock: u32) -> Self {
        let bases = Bases::of(p);
        let mut footprints: Vec<Option<Footprint>> = vec![None; p.ops.len()];
        let mut wanted = vec![false; p.ops.len()];
        for &op in ops {
            let kind = &p.op(op).kind;
            let operand = kind
                .writes()
                .into_iter()
                .chain(kind.reads())
                .find(|o| o.base == Ref::Tensor(tensor))
                .expect("the op touches the tensor");
            footprints[op.index()] = Some(Footprint::new(&bases, operand));
            let mut at = Some(op);
            while let Some(a) = at {
                wanted[a.index()] = true;
                at = p.op(a).parent;
            }
        }
        let mut vars = vec![0i64; p.vars.len()];
        if let Some(v) = p.launch.block {
            vars[v.index()] = i64::from(block);
        }
        if let Some(v) = p.launch.subblock {
            vars[v.index()] = i64::from(subblock);
        }
        Execs {
            p,
            footprints,
            wanted,
            vars,
            stack: vec![Frame::Block {
                ops: &p.body.ops,
                i: 0,
            }],
        }
    }

    fn eval(&self, e: &Expr, op: OpId) -> Result<i64, String> {
        e.eval(&self.vars)
            .map_err(|e| format!("{}: cannot be evaluated: {e}", self.p.op(op).path))
    }

    /// The next execution's range, `None` after the last. `steps` counts the control ops
    /// entered and the executions over every core walked; past `limit` the walk fails.
    fn next(&mut self, steps: &mut u64, limit: u64) -> Result<Option<(u64, u64)>, String> {
        let p = self.p;
        while let Some(top) = self.stack.last_mut() {
            match top {
                Frame::Block { ops, i } => {
                    let Some(&op) = ops.get(*i) else {
                        self.stack.pop();
                        continue;
                    };
                    *i += 1;
                    if !self.wanted[op.index()] {
                        continue;
                    }
                    *steps += 1;
                    if *steps > limit {
                        return Err(format!(
                            "counting the hand-offs' executions takes more than {limit} steps \
                             over the launch's cores (near {})",
                            p.op(op).path
                        ));
                    }
                    match &p.op(op).kind {
                        OpKind::For(l) => {
                            let (from, to) = (self.eval(&l.from, op)?, self.eval(&l.to, op)?);
                            let step = self.eval(&l.step, op)?;
                            if step <= 0 {
                                return Err(format!(
                                    "{}: step {step} is not positive",
                                    p.op(op).path
                                ));
                            }
                            if from < to {
                                self.vars[l.var.index()] = from;
                                self.stack.push(Frame::For {
                                    var: l.var.index(),
                                    v: from,
                                    to,
                                    step,
                                    body: &l.body,
                                });
                                self.stack.push(Frame::Block {
                                    ops: &l.body.ops,
                                    i: 0,
                                });
                            }
                        }
                        OpKind::While { var, trips, body } => {
                            let n = self.eval(trips, op)?;
                            if n > 0 {
                                self.vars[var.index()] = 0;
                                self.stack.push(Frame::While {
                                    var: var.index(),
                                    i: 0,
                                    n,
                                    body,
                                });
                                self.stack.push(Frame::Block {
                                    ops: &body.ops,
                                    i: 0,
                                });
                            }
                        }
                        OpKind::If { cond, then, els } => {
                            let taken = if self.eval(cond, op)? != 0 {
                                Some(then)
                            } else {
                                els.as_ref()
                            };
                            if let Some(b) = taken {
                                self.stack.push(Frame::Block { ops: &b.ops, i: 0 });
                            }
                        }
                        _ => {
                            let fp = self.footprints[op.index()].as_ref().expect("a wanted op");
                            return Ok(Some(fp.elems_at(&self.vars).unwrap_or((0, 0))));
                        }
                    }
                }
                Frame::For {
                    var,
                    v,
                    to,
                    step,
                    body,
                } => {
                    // the loop ends when the next value would pass `to` (or i64)
                    match v.checked_add(*step).filter(|n| n < to) {
                        Some(n) => {
                            *v = n;
                            let (var, body) = (*var, *body);
                            self.vars[var] = n;
                            self.stack.push(Frame::Block {
                                ops: &body.ops,
                                i: 0,
                            });
                        }
                        None => {
                            self.stack.pop();
                        }
                    }
                }
                Frame::While { var, i, n, body } => {
                    if *i + 1 < *n {
                        *i += 1;
                        let (var, i, body) = (*var, *i, *body);
                        self.vars[var] = i;
                        self.stack.push(Frame::Block {
                            ops: &body.ops,
                            i: 0,
                        });
                    } else {
                        self.stack.pop();
                    }
                }
            }
        }
        Ok(None)
    }
}

/// Ops to insert into one part: before / after an op (by old id), and at the body's head and
/// end.
struct Inserts {
    before: Vec<Vec<(OpKind, Pipe)>>,
    after: Vec<Vec<(OpKind, Pipe)>>,
    head: Vec<(OpKind, Pipe)>,
    tail: Vec<(OpKind, Pipe)>,
}

impl Inserts {
    fn new(ops: usize) -> Inserts {
        Inserts {
            before: vec![Vec::new(); ops],
            after: vec![Vec::new(); ops],
            head: Vec::new(),
            tail: Vec::new(),
        }
    }
}

/// The part with its inserts: ops renumbered in pre-order, every op id remapped.
fn emit(old: &Program, ins: &Inserts) -> Program {
    let mut e = Emitter {
        old,
        ins,
        ops: Vec::with_capacity(old.ops.len() + 8),
        map: vec![OpId::new(0); old.ops.len()],
    };
    let mut body = Block {
        ops: Vec::new(),
        buffers: old.body.buffers.clone(),
        views: old.body.views.clone(),
    };
    // the head's ops point at the body's first op, which they precede
    let head = match old.body.ops.first() {
        Some(&f) => Loc::inserted(&old.op(f).loc, Side::Before),
        None => Loc::default(),
    };
    for (kind, pipe) in &ins.head {
        body.ops
            .push(e.inserted(kind, *pipe, None, None, "at the start of the body", &head));
    }
    let rest = e.block(&old.body, None, None);
    body.ops.extend(rest.ops);
    // the tail's ops point at the body's last op, which they follow
    let tail = match old.body.ops.last() {
        Some(&l) => Loc::inserted(&old.op(l).loc, Side::After),
        None => Loc::default(),
    };
    for (kind, pipe) in &ins.tail {
        body.ops
            .push(e.inserted(kind, *pipe, None, None, "at the end of the body", &tail));
    }
    let mut p = Program {
        ops: e.ops,
        body,
        ..old.clone()
    };
    crate::sync::emit::renumber_declarations(&mut p, &e.map);
    p
}

struct Emitter<'a> {
    old: &'a Program,
    ins: &'a Inserts,
    ops: Vec<Op>,
    map: Vec<OpId>,
}

impl Emitter<'_> {
    fn block(&mut self, b: &Block, parent: Option<OpId>, lp: Option<OpId>) -> Block {
        let mut out = Block {
            ops: Vec::with_capacity(b.ops.len()),
            buffers: b.buffers.clone(),
            views: b.views.clone(),
        };
        for &op in &b.ops {
            let loc = &self.old.op(op).loc;
            for (kind, pipe) in &self.ins.before[op.index()] {
                let at = format!("before {}", self.old.op(op).path);
                let l = Loc::inserted(loc, Side::Before);
                out.ops
                    .push(self.inserted(kind, *pipe, parent, lp, &at, &l));
            }
            out.ops.push(self.op(op, parent, lp));
            for (kind, pipe) in &self.ins.after[op.index()] {
                let at = format!("after {}", self.old.op(op).path);
                let l = Loc::inserted(loc, Side::After);
                out.ops
                    .push(self.inserted(kind, *pipe, parent, lp, &at, &l));
            }
        }
        out
    }

    fn op(&mut self, old: OpId, parent: Option<OpId>, lp: Option<OpId>) -> OpId {
        let src = self.old.op(old);
        let id = OpId::new(self.ops.len());
        self.map[old.index()] = id;
        self.ops
            .push(crate::sync::emit::placeholder(src, parent, lp));
        let kind = crate::sync::emit::rebuilt(&src.kind, id, lp, |b, parent, lp| {
            self.block(b, parent, lp)
        });
        self.ops[id.index()].kind = kind;
        id
    }

    fn inserted(
        &mut self,
        kind: &OpKind,
        pipe: Pipe,
        parent: Option<OpId>,
        lp: Option<OpId>,
        at: &str,
        loc: &Loc,
    ) -> OpId {
        let what = match kind {
            OpKind::CrossSet { .. } => "cross_set",
            _ => "cross_wait",
        };
        let id = OpId::new(self.ops.len());
        self.ops.push(Op {
            kind: kind.clone(),
            path: format!("{what} (inserted {at})"),
            loc: loc.clone(),
            pipe: Some(pipe),
            loop_parent: lp,
            parent,
        });
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(params: &[(&str, i64)], blocks: u32) -> (Kernel, Config) {
        let config = crate::test_support::config();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../programs/matmul_add.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        let params: Vec<(String, i64)> = params.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        let kernel = sim::load_kernel(&text, "matmul_add.yaml", &config, &params, Some(blocks))
            .unwrap_or_else(|e| panic!("{e}"));
        (kernel, config)
    }

    #[test]
    fn the_walk_gives_up_past_its_budget_and_names_the_core() {
        // the cube core of block 0 is walked first (it fills its window of 1 + 16 writes before
        // any read), so it is the one that passes a budget of 10 steps
        let (k, config) = kernel(&[], 2);
        let err = synchronize_within(&k, &config, 10).unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert!(
            err.problems[0].starts_with(
                "block 0 aic 0: counting the hand-offs' executions takes more than 10 steps"
            ),
            "{err}"
        );
        // the shipped budget is ample for the same kernel
        let ok = synchronize_within(&k, &config, ENUMERATION_LIMIT).unwrap();
        // 48 tiles over 2 blocks: 24 hand-offs per core, more than 16 pending, so a reverse
        // flag of depth 16 (ws tiles never overlap, so the depth is max_pending's)
        assert_eq!(ok.handoffs.len(), 1);
        assert_eq!(ok.handoffs[0].count, 24);
        assert_eq!(ok.handoffs[0].reverse, Some((1, 16)));
    }

    #[test]
    fn a_reuse_distance_within_max_pending_sets_the_depth() {
        // each core's i-th tile (t = block + i * blocks) goes through workspace slot i % 3 of
        // its block, so write k + 3 of the cube core lands where read k of its vector cores
        // read, and writes k + 1, k + 2 do not: the producer may run 3 writes ahead
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../programs/matmul_add.yaml"),
        )
        .unwrap();
        let slot = "(block * 3 + (t - block) / blocks % 3) * tm";
        let text = text
            .replace(
                "ws: { shape: [M, N]",
                "ws: { shape: [\"blocks * 3 * tm\", N]",
            )
            .replace(
                "dst: \"ws[t * tm : (t + 1) * tm]\"",
                &format!("dst: \"ws[{slot} : {slot} + tm]\""),
            )
            .replace(
                "src: \"ws[t * tm + subblock * half : t * tm + (subblock + 1) * half]\"",
                &format!("src: \"ws[{slot} + subblock * half : {slot} + (subblock + 1) * half]\""),
            );
        assert_eq!(text.matches("% 3").count(), 4, "both ws operands rewritten");
        let config = crate::test_support::config();
        let k = sim::load_kernel(&text, "k.yaml", &config, &[], Some(2))
            .unwrap_or_else(|e| panic!("{e}"));
        let ok = synchronize_within(&k, &config, ENUMERATION_LIMIT).unwrap();
        assert_eq!(ok.handoffs[0].count, 24);
        assert_eq!(ok.handoffs[0].reverse, Some((1, 3)));
    }

    #[test]
    fn inserted_cross_core_ops_point_at_the_op_beside_them() {
        let (k, config) = kernel(&[], 2);
        let ok = synchronize_within(&k, &config, ENUMERATION_LIMIT).unwrap();
        let mut seen = 0;
        for (part, p) in ok.kernel.parts.iter().enumerate() {
            for (i, op) in p.ops.iter().enumerate() {
                let Some(side) = op.loc.inserted else {
                    continue;
                };
                seen += 1;
                // the op it went beside is an op of the part as loaded, at that line and column
                let beside = k.parts[part]
                    .ops
                    .iter()
                    .position(|o| (o.loc.line, o.loc.column) == (op.loc.line, op.loc.column))
                    .expect("an op at the inserted op's location");
                assert_eq!(
                    p.op_text(OpId::new(i)),
                    k.parts[part].op_text(OpId::new(beside))
                );
                let side = if side == Side::Before {
                    "before"
                } else {
                    "after"
                };
                // the body's head goes before its first op, its tail after its last
                assert!(
                    op.path.contains(side)
                        || (side == "before" && op.path.contains("at the start of the body"))
                        || (side == "after" && op.path.contains("at the end of the body")),
                    "{} / {side}",
                    op.path
                );
                let at = p.locate(OpId::new(i));
                assert!(
                    at.starts_with("matmul_add.yaml:")
                        && at.contains(&format!("(inserted {side} ")),
                    "{at}"
                );
            }
        }
        assert!(seen >= 2, "a cross_set and a cross_wait at least");
    }

    #[test]
    fn the_producer_takes_the_last_grants_back_at_its_end() {
        // matmul_add: the cube part writes ws (24 tiles a block, reverse flag #1 of depth 16,
        // max_pending's): the vector part grants 16 at its head and one after each read, the cube
        // part waits once before each write, so 16 grants are left; its body ends with 16
        // cross_waits on #1, on the writing op's pipe (FIX), and the vector part's with none.
        let (k, config) = kernel(&[], 2);
        let ok = synchronize_within(&k, &config, ENUMERATION_LIMIT).unwrap();
        assert_eq!(ok.handoffs[0].reverse, Some((1, 16)));
        let tail = |p: &Program| -> Vec<(Pipe, i64)> {
            p.body
                .ops
                .iter()
                .filter(|&&o| p.op(o).path.contains("at the end of the body"))
                .map(|&o| match &p.op(o).kind {
                    OpKind::CrossWait { pipe, id } => (*pipe, id.as_const().unwrap()),
                    other => panic!("a cross_wait, not {}", other.name()),
                })
                .collect()
        };
        assert_eq!(tail(&ok.kernel.parts[0]), vec![(Pipe::Fix, 1); 16]);
        assert!(tail(&ok.kernel.parts[1]).is_empty());
        // and they are the body's last ops
        let cube = &ok.kernel.parts[0];
        let last = *cube.body.ops.last().unwrap();
        assert!(cube.op(last).path.contains("at the end of the body"));
    }
}
