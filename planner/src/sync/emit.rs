//! Writes the inserted instructions into a new program: ops renumbered in pre-order, every id
//! that names an op remapped, buffers/views/tensors/vars unchanged.

use sim::expr::{BinOp, Expr};
use sim::program::{BarrierTarget, Block, ForLoop, Loc, Op, OpKind, Program, Side, SyncMode};
use sim::{OpId, Pipe};

use super::tree::Tree;
use super::walk::Inserts;
use super::{Edge, Ins};

#[derive(Default)]
pub(super) struct Counts {
    pub set_flags: u32,
    pub wait_flags: u32,
    pub barriers: u32,
    pub barrier_alls: u32,
}

struct Emitter<'a> {
    tree: &'a Tree<'a>,
    edges: &'a [Edge],
    inserts: &'a Inserts,
    ops: Vec<Op>,
    /// Old op id → new op id.
    map: Vec<OpId>,
    counts: Counts,
}

pub(super) fn emit(tree: &Tree, edges: &[Edge], inserts: &Inserts) -> (Program, Counts) {
    let old = tree.program;
    let inserted: usize = inserts
        .before
        .iter()
        .chain(&inserts.after)
        .map(Vec::len)
        .sum();
    let mut em = Emitter {
        tree,
        edges,
        inserts,
        ops: Vec::with_capacity(old.ops.len() + inserted + inserts.tail.len()),
        map: vec![OpId::new(0); old.ops.len()],
        counts: Counts::default(),
    };
    let mut body = em.block(&old.body, None, None);
    let (end, end_loc) = match old.body.ops.last() {
        Some(&l) => (
            ("after ", old.op(l).path.as_str()),
            Loc::inserted(&old.op(l).loc, Side::After),
        ),
        None => (("", "body"), Loc::default()),
    };
    for ins in &inserts.tail {
        let id = em.ins(ins, None, None, end, &end_loc);
        body.ops.push(id);
    }
    let map = &em.map;
    // every field but the ops and the body as they were (the old ops are not cloned)
    let mut p = Program {
        kernel: old.kernel.clone(),
        file: old.file.clone(),
        texts: old.texts.clone(),
        core: old.core,
        sync: SyncMode::Manual,
        params: old.params.clone(),
        launch: old.launch,
        tensors: old.tensors.clone(),
        buffers: old.buffers.clone(),
        views: old.views.clone(),
        vars: old.vars.clone(),
        ops: Vec::new(),
        body,
    };
    renumber_declarations(&mut p, map);
    p.ops = em.ops;
    (p, em.counts)
}

/// Op `src` in a program being rebuilt, without its kind yet: pre-order numbering gives an op
/// its id before its children, so the id is taken first and the kind ([`rebuilt`]) set after.
pub(crate) fn placeholder(src: &Op, parent: Option<OpId>, lp: Option<OpId>) -> Op {
    Op {
        kind: OpKind::Scalar {
            cycles: Expr::Const(0),
        },
        path: src.path.clone(),
        loc: src.loc.clone(),
        pipe: src.pipe,
        loop_parent: lp,
        parent,
    }
}

/// Op `kind`, now op `id` of a program being rebuilt, with its blocks (a control op's) rebuilt
/// by `block(old block, parent, innermost loop)`: the blocks of a `for`/`while` sit in that
/// loop, an `if`'s in the loop around it (`lp`). Any other op comes back as it was.
pub(crate) fn rebuilt(
    kind: &OpKind,
    id: OpId,
    lp: Option<OpId>,
    mut block: impl FnMut(&Block, Option<OpId>, Option<OpId>) -> Block,
) -> OpKind {
    let inner = if matches!(kind, OpKind::For(_) | OpKind::While { .. }) {
        Some(id)
    } else {
        lp
    };
    match kind {
        OpKind::For(l) => OpKind::For(ForLoop {
            body: block(&l.body, Some(id), inner),
            ..l.clone()
        }),
        OpKind::While { var, trips, body } => OpKind::While {
            var: *var,
            trips: trips.clone(),
            body: block(body, Some(id), inner),
        },
        OpKind::If { cond, then, els } => OpKind::If {
            cond: cond.clone(),
            then: block(then, Some(id), inner),
            els: els.as_ref().map(|e| block(e, Some(id), inner)),
        },
        other => other.clone(),
    }
}

impl Emitter<'_> {
    fn block(&mut self, b: &Block, parent: Option<OpId>, lp: Option<OpId>) -> Block {
        let program = self.tree.program;
        let mut out = Block {
            ops: Vec::with_capacity(b.ops.len()),
            buffers: b.buffers.clone(),
            views: b.views.clone(),
        };
        for &op in &b.ops {
            let (path, loc) = (&program.op(op).path, &program.op(op).loc);
            for ins in &self.inserts.before[op.index()] {
                let at = Loc::inserted(loc, Side::Before);
                out.ops
                    .push(self.ins(ins, parent, lp, ("before ", path), &at));
            }
            out.ops.push(self.op(op, parent, lp));
            for ins in &self.inserts.after[op.index()] {
                let at = Loc::inserted(loc, Side::After);
                out.ops
                    .push(self.ins(ins, parent, lp, ("after ", path), &at));
            }
        }
        out
    }

    fn op(&mut self, old: OpId, parent: Option<OpId>, lp: Option<OpId>) -> OpId {
        let src = self.tree.program.op(old);
        let id = OpId::new(self.ops.len());
        self.map[old.index()] = id;
        self.ops.push(placeholder(src, parent, lp));
        let kind = rebuilt(&src.kind, id, lp, |b, parent, lp| self.block(b, parent, lp));
        self.ops[id.index()].kind = kind;
        id
    }

    fn id_expr(&self, e: &Edge, fixed: Option<u32>) -> Expr {
        if let Some(j) = fixed {
            return Expr::Const((e.base + j) as i64);
        }
        match (e.rot, e.k) {
            (Some(lp), k) if k > 1 => {
                let slot = self
                    .tree
                    .count_mod(lp, k)
                    .expect("a rotating flag's loop counts");
                if e.base == 0 {
                    return slot;
                }
                Expr::binary(BinOp::Add, Expr::Const(e.base as i64), slot).expect("an id")
            }
            _ => Expr::Const(e.base as i64),
        }
    }

    /// `at`: where, as a prefix and a path (`before `, `body[2]`); `loc`: the same, located.
    fn ins(
        &mut self,
        ins: &Ins,
        parent: Option<OpId>,
        lp: Option<OpId>,
        at: (&str, &str),
        loc: &Loc,
    ) -> OpId {
        let (kind, pipe, what) = match *ins {
            Ins::Set { edge, fixed } => {
                let e = &self.edges[edge as usize];
                self.counts.set_flags += 1;
                let id = self.id_expr(e, fixed);
                let kind = OpKind::SetFlag {
                    src: e.src,
                    dst: e.dst,
                    id,
                };
                (kind, e.src, "set_flag")
            }
            Ins::Wait { edge, fixed } => {
                let e = &self.edges[edge as usize];
                self.counts.wait_flags += 1;
                let id = self.id_expr(e, fixed);
                let kind = OpKind::WaitFlag {
                    src: e.src,
                    dst: e.dst,
                    id,
                };
                (kind, e.dst, "wait_flag")
            }
            Ins::Barrier(p) => {
                self.counts.barriers += 1;
                (OpKind::Barrier(BarrierTarget::Pipe(p)), p, "barrier")
            }
            Ins::BarrierAll => {
                self.counts.barrier_alls += 1;
                (OpKind::Barrier(BarrierTarget::All), Pipe::S, "barrier")
            }
        };
        // `{what} (inserted {at})`, without the formatting machinery (tens of thousands)
        let mut path = String::with_capacity(what.len() + at.0.len() + at.1.len() + 12);
        for x in [what, " (inserted ", at.0, at.1, ")"] {
            path.push_str(x);
        }
        let id = OpId::new(self.ops.len());
        self.ops.push(Op {
            kind,
            path,
            loc: loc.clone(),
            pipe: Some(pipe),
            loop_parent: lp,
            parent,
        });
        id
    }
}

/// Points the ops named by `p`'s buffers, views and variables (where each is declared, a
/// buffer's loop, a variable's loop) at their new ids, `map[old]`, after `p`'s ops were written
/// anew with ops inserted.
pub(crate) fn renumber_declarations(p: &mut Program, map: &[OpId]) {
    let remap = |o: Option<OpId>| o.map(|x| map[x.index()]);
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
}
