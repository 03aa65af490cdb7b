//! Cross-core synchronisation of a mixed kernel (`sync: auto`, docs/sync.md "Across cores"): the
//! counterpart of HIVM's InjectBlockSync. A gm tensor written by one core type and read by the
//! other (the workspace hand-off) gets a mode-2 `cross_set` after its writing op and a
//! `cross_wait` before its reading op. When a producer could run far enough ahead to overflow a
//! counter, or to overwrite workspace its consumer has not read yet, a reverse flag runs the
//! other way: the consumer grants `depth` writes up front and one more after each read, and the
//! producer waits for a grant before each write.
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
use sim::program::{Block, CrossMode, Kernel, Op, OpKind, Program, Ref, SyncMode};
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
            let cores = |part: usize| {
                slots
                    .iter()
                    .filter(move |s| s.block == b && s.part as usize == part)
            };
            let mut writes = Vec::new();
            let mut reads = Vec::new();
            for s in cores(p) {
                writes.push((
                    s.index,
                    enumerate(&kernel.parts[p], w, t, s.block, s.subblock, &mut steps),
                ));
            }
            for s in cores(c) {
                reads.push((
                    s.index,
                    enumerate(&kernel.parts[c], r, t, s.block, s.subblock, &mut steps),
                ));
            }
            let mut counts = Vec::new();
            'cores: for (part, list) in [(p, &writes), (c, &reads)] {
                for (index, e) in list.iter() {
                    match e {
                        Ok(v) => counts.push((part, *index, v.len() as u64)),
                        Err(why) => {
                            // the first reason is enough (an exhausted budget fails every core)
                            problems.push(format!("block {b} {} {index}: {why}", part_name(part)));
                            block_ok = false;
                            break 'cores;
                        }
                    }
                }
            }
            if !block_ok {
                break;
            }
            let n = counts[0].2;
            if counts.iter().any(|x| x.2 != n) {
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
            if count.is_none() {
                count = Some(n);
            }
            // the reuse distance: the least d such that write k + d overlaps read k
            for (_, wr) in &writes {
                let wr = wr.as_ref().expect("checked above");
                for (_, rd) in &reads {
                    let rd = rd.as_ref().expect("checked above");
                    for (k, &(rlo, rhi)) in rd.iter().enumerate() {
                        let top = (max_pending as usize).min(wr.len().saturating_sub(k + 1));
                        for d in 1..=top {
                            let (wlo, whi) = wr[k + d];
                            if wlo < rhi && rlo < whi {
                                distance = distance.min(d as u64);
                                break;
                            }
                        }
                    }
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
        }
    }
    let parts = kernel
        .parts
        .iter()
        .zip(&inserts)
        .map(|(p, ins)| emit(p, ins))
        .collect();
    Ok(CrossSynced {
        kernel: Kernel { parts },
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

/// The element range of `tensor` each execution of one of `ops` touches on the core
/// (`block`, `subblock`), in execution order.
fn enumerate(
    p: &Program,
    ops: &[OpId],
    tensor: TensorId,
    block: u32,
    subblock: u32,
    steps: &mut u64,
) -> Result<Vec<(u64, u64)>, String> {
    let bases = Bases::of(p);
    let mut footprints: Vec<Option<Footprint>> = vec![None; p.ops.len()];
    // a control op is entered only when something below it is wanted
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
    let mut w = Walker {
        p,
        footprints,
        wanted,
        vars,
        steps: *steps,
        out: Vec::new(),
    };
    let r = w.block(&p.body);
    *steps = w.steps;
    r.map(|()| w.out)
}

struct Walker<'a> {
    p: &'a Program,
    footprints: Vec<Option<Footprint<'a>>>,
    wanted: Vec<bool>,
    vars: Vec<i64>,
    steps: u64,
    out: Vec<(u64, u64)>,
}

impl Walker<'_> {
    fn eval(&self, e: &Expr, op: OpId) -> Result<i64, String> {
        e.eval(&self.vars)
            .map_err(|e| format!("{}: cannot be evaluated: {e}", self.p.op(op).path))
    }

    fn block(&mut self, b: &Block) -> Result<(), String> {
        for &op in &b.ops {
            if !self.wanted[op.index()] {
                continue;
            }
            self.steps += 1;
            if self.steps > ENUMERATION_LIMIT {
                return Err(format!(
                    "counting the hand-offs' executions takes more than {ENUMERATION_LIMIT} \
                     steps over the launch's cores (near {})",
                    self.p.op(op).path
                ));
            }
            let p = self.p;
            match &p.op(op).kind {
                OpKind::For(l) => {
                    let (from, to) = (self.eval(&l.from, op)?, self.eval(&l.to, op)?);
                    let step = self.eval(&l.step, op)?;
                    if step <= 0 {
                        return Err(format!("{}: step {step} is not positive", p.op(op).path));
                    }
                    let mut v = from;
                    while v < to {
                        self.vars[l.var.index()] = v;
                        self.block(&l.body)?;
                        v += step;
                    }
                }
                OpKind::While { var, trips, body } => {
                    for i in 0..self.eval(trips, op)? {
                        self.vars[var.index()] = i;
                        self.block(body)?;
                    }
                }
                OpKind::If { cond, then, els } => {
                    if self.eval(cond, op)? != 0 {
                        self.block(then)?;
                    } else if let Some(e) = els {
                        self.block(e)?;
                    }
                }
                _ => {
                    let fp = self.footprints[op.index()].as_ref().expect("a wanted op");
                    self.out.push(fp.elems_at(&self.vars).unwrap_or((0, 0)));
                }
            }
        }
        Ok(())
    }
}

/// Ops to insert into one part: before / after an op (by old id), and at the body's head.
struct Inserts {
    before: Vec<Vec<(OpKind, Pipe)>>,
    after: Vec<Vec<(OpKind, Pipe)>>,
    head: Vec<(OpKind, Pipe)>,
}

impl Inserts {
    fn new(ops: usize) -> Inserts {
        Inserts {
            before: vec![Vec::new(); ops],
            after: vec![Vec::new(); ops],
            head: Vec::new(),
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
    for (kind, pipe) in &ins.head {
        body.ops
            .push(e.inserted(kind, *pipe, None, None, "at the start of the body"));
    }
    let rest = e.block(&old.body, None, None);
    body.ops.extend(rest.ops);
    let map = e.map;
    let remap = |o: Option<OpId>| o.map(|x| map[x.index()]);
    let mut p = Program {
        ops: e.ops,
        body,
        ..old.clone()
    };
    for b in &mut p.buffers {
        b.declared_in = remap(b.declared_in);
        b.loop_parent = remap(b.loop_parent);
    }
    for v in &mut p.views {
        v.declared_in = remap(v.declared_in);
    }
    for v in &mut p.vars {
        v.loop_op = remap(v.loop_op);
    }
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
            for (kind, pipe) in &self.ins.before[op.index()] {
                let at = format!("before {}", self.old.op(op).path);
                out.ops.push(self.inserted(kind, *pipe, parent, lp, &at));
            }
            out.ops.push(self.op(op, parent, lp));
            for (kind, pipe) in &self.ins.after[op.index()] {
                let at = format!("after {}", self.old.op(op).path);
                out.ops.push(self.inserted(kind, *pipe, parent, lp, &at));
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
    ) -> OpId {
        let what = match kind {
            OpKind::CrossSet { .. } => "cross_set",
            _ => "cross_wait",
        };
        let id = OpId::new(self.ops.len());
        self.ops.push(Op {
            kind: kind.clone(),
            path: format!("{what} (inserted {at})"),
            pipe: Some(pipe),
            loop_parent: lp,
            parent,
        });
        id
    }
}
