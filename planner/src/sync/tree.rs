//! Where each op sits in the block tree: the block that holds it, its subtree's extent, its
//! ancestors. Ops are stored in pre-order, so an op's index is its program-order position and
//! its subtree is the index range `id ..= end[id]`.

use sim::expr::{BinOp, Expr};
use sim::program::{ForLoop, OpKind, Program};
use sim::OpId;

/// A block: the kernel body (`None`) or block `branch` of a control op (0: a loop body or
/// `then`, 1: `else`).
pub(super) type BlockRef = (Option<OpId>, u8);

pub(super) struct Tree<'p> {
    pub program: &'p Program,
    /// The block holding each op.
    pub block: Vec<BlockRef>,
    /// The last op of each op's subtree.
    pub end: Vec<OpId>,
    /// How many control ops enclose each op.
    depth: Vec<u32>,
    /// Per loop op: its whole-run iteration count as an expression, when it can be written
    /// (see [`count_expr`]); `None` for other ops.
    pub counts: Vec<Option<Expr>>,
}

impl<'p> Tree<'p> {
    pub fn new(program: &'p Program) -> Self {
        let n = program.ops.len();
        let mut t = Tree {
            program,
            block: vec![(None, 0); n],
            end: (0..n).map(OpId::new).collect(),
            depth: vec![0; n],
            counts: vec![None; n],
        };
        t.fill(&program.body.ops, (None, 0));
        // pre-order: an outer loop's count is there before an inner loop builds on it
        for i in 0..n {
            t.counts[i] = count_expr(program, OpId::new(i), &t.counts);
        }
        t
    }

    fn fill(&mut self, ops: &[OpId], at: BlockRef) {
        for &op in ops {
            self.block[op.index()] = at;
            self.depth[op.index()] = at.0.map_or(0, |o| self.depth[o.index()] + 1);
            for (i, b) in self.program.blocks(op).into_iter().enumerate() {
                self.fill(&b.ops, (Some(op), i as u8));
            }
        }
        // pre-order: an op's subtree ends where its last child's subtree ends
        for &op in ops.iter().rev() {
            let last = self
                .program
                .blocks(op)
                .iter()
                .filter_map(|b| b.ops.last())
                .map(|&c| self.end[c.index()])
                .max();
            if let Some(last) = last {
                self.end[op.index()] = last;
            }
        }
    }

    /// The ancestor of `op` (or `op` itself) that sits directly in block `b`.
    pub fn anchor_in(&self, op: OpId, b: BlockRef) -> OpId {
        let mut at = op;
        while self.block[at.index()] != b {
            at = self.block[at.index()]
                .0
                .expect("anchor_in: the block encloses the op");
        }
        at
    }

    /// The deepest block enclosing both ops, or `None` when they sit in different branches of
    /// one `if` (they never run in the same pass).
    pub fn common_block(&self, a: OpId, b: OpId) -> Option<BlockRef> {
        let up = |x: OpId| self.block[x.index()].0.expect("a nested op has an owner");
        let (mut x, mut y) = (a, b);
        while self.depth[x.index()] > self.depth[y.index()] {
            x = up(x);
        }
        while self.depth[y.index()] > self.depth[x.index()] {
            y = up(y);
        }
        // same depth: their blocks are at one level; climb until they are one block
        while self.block[x.index()] != self.block[y.index()] {
            if self.block[x.index()].0 == self.block[y.index()].0 {
                return None; // one `if`, different branches
            }
            x = up(x);
            y = up(y);
        }
        Some(self.block[x.index()])
    }

    /// Whether `anc` is a proper ancestor of `op`.
    pub fn contains(&self, anc: OpId, op: OpId) -> bool {
        anc < op && op <= self.end[anc.index()]
    }

    /// The innermost `for`/`while` whose body holds block `b` (at any depth).
    pub fn loop_of_block(&self, b: BlockRef) -> Option<OpId> {
        let owner = b.0?;
        if self.is_loop(owner) {
            Some(owner)
        } else {
            self.program.op(owner).loop_parent
        }
    }

    pub fn is_loop(&self, op: OpId) -> bool {
        matches!(
            self.program.op(op).kind,
            OpKind::For(_) | OpKind::While { .. }
        )
    }

    /// The outermost loop enclosing `lp`, or `lp` itself.
    pub fn outermost_loop(&self, lp: OpId) -> OpId {
        let mut at = lp;
        while let Some(up) = self.program.op(at).loop_parent {
            at = up;
        }
        at
    }

    /// `count(lp) % k` written with only the terms that matter modulo `k`: the count of `kk`
    /// inside block loops of 4 `kk` trips modulo 2 is `kk % 2`, as a user writes it.
    pub fn count_mod(&self, lp: OpId, k: u32) -> Option<Expr> {
        let mut sum: Option<Expr> = None;
        for (f, w) in count_terms(self.program, &self.counts, lp, k)? {
            if w == 0 {
                continue;
            }
            let step = f.step.as_const()?;
            let v = Expr::Var(f.var);
            // a non-constant start is launch-invariant ([`count_expr`] allowed it)
            let local = if f.from.as_const() == Some(0) && step == 1 {
                v
            } else {
                let shifted = Expr::binary(BinOp::Sub, v, f.from.clone()).ok()?;
                Expr::binary(BinOp::Div, shifted, Expr::Const(step)).ok()?
            };
            let term = match w {
                1 => local,
                c => Expr::binary(BinOp::Mul, Expr::Const(c as i64), local).ok()?,
            };
            sum = Some(match sum {
                None => term,
                Some(s) => Expr::binary(BinOp::Add, term, s).ok()?,
            });
        }
        Expr::binary(
            BinOp::Rem,
            sum.unwrap_or(Expr::Const(0)),
            Expr::Const(k as i64),
        )
        .ok()
    }

    /// Whether the loop's body runs at least once whenever the loop is reached.
    pub fn runs_once(&self, lp: OpId) -> bool {
        match &self.program.op(lp).kind {
            OpKind::For(ForLoop { from, to, .. }) => matches!(
                (from.as_const(), to.as_const()),
                (Some(f), Some(t)) if t > f
            ),
            OpKind::While { trips, .. } => trips.as_const().is_some_and(|t| t >= 1),
            _ => true,
        }
    }
}

/// Whether `e` depends on no loop variable: only on the launch's `block` and `subblock`,
/// fixed for a core's whole run.
fn launch_invariant(program: &Program, e: &Expr) -> bool {
    match e {
        Expr::Const(_) => true,
        Expr::Var(v) => program.vars[v.index()].loop_op.is_none(),
        Expr::Unary(_, a) => launch_invariant(program, a),
        Expr::Binary(_, a, b) => launch_invariant(program, a) && launch_invariant(program, b),
    }
}

/// The whole-run iteration count of loop `lp` as an expression over loop variables (the
/// counter the engine picks multi-buffer slots with), when it can be written: a `for` with a
/// constant start and step, nested only in such loops with constant trip counts and no `if`
/// between them.
fn count_expr(program: &Program, lp: OpId, counts: &[Option<Expr>]) -> Option<Expr> {
    let op = program.op(lp);
    let OpKind::For(ForLoop {
        var,
        from,
        to,
        step,
        ..
    }) = &op.kind
    else {
        return None;
    };
    let s = step.as_const()?;
    if s <= 0 {
        return None;
    }
    let v = Expr::Var(*var);
    let local = match from.as_const() {
        Some(0) if s == 1 => v,
        // a start fixed for the whole run: a constant, or (outermost loops only) an
        // expression of the launch's `block`/`subblock`, as in `from: block, step: blocks`
        Some(_) | None if op.loop_parent.is_none() || from.as_const().is_some() => {
            if from.as_const().is_none() && !launch_invariant(program, from) {
                return None;
            }
            let shifted = Expr::binary(BinOp::Sub, v, from.clone()).ok()?;
            Expr::binary(BinOp::Div, shifted, Expr::Const(s)).ok()?
        }
        _ => return None,
    };
    match op.loop_parent {
        None => Some(local),
        Some(outer) => {
            let f = from.as_const()?;
            if op.parent != Some(outer) {
                return None; // inside an `if`: the count does not advance every outer iteration
            }
            let trips = (to.as_const()? - f).max(0).div_euclid(s)
                + i64::from((to.as_const()? - f).max(0) % s != 0);
            let above = counts[outer.index()].clone()?;
            let scaled = Expr::binary(BinOp::Mul, Expr::Const(trips), above).ok()?;
            Expr::binary(BinOp::Add, scaled, local).ok()
        }
    }
}

/// The whole-run count of loop `lp` ([`count_expr`]) as terms modulo `m`: per loop from `lp`
/// outwards, its `for` and the weight of its own iteration counter (1 for `lp`, times the trips
/// of every loop inside it), modulo `m`. `None` when the count cannot be written.
pub(super) fn count_terms<'p>(
    program: &'p Program,
    counts: &[Option<Expr>],
    lp: OpId,
    m: u32,
) -> Option<Vec<(&'p ForLoop, i128)>> {
    counts[lp.index()].as_ref()?;
    let m = m as i128;
    let mut out = Vec::new();
    let (mut at, mut w) = (Some(lp), 1i128);
    while let Some(x) = at {
        let OpKind::For(f) = &program.op(x).kind else {
            return None;
        };
        out.push((f, w.rem_euclid(m)));
        at = program.op(x).loop_parent;
        if at.is_some() {
            // a count exists: every loop inside the outermost has constant bounds
            let (a, b, c) = (f.from.as_const()?, f.to.as_const()?, f.step.as_const()?);
            w = (w * ForLoop::trips(a, b, c)?.max(0).rem_euclid(m)).rem_euclid(m);
        }
    }
    Some(out)
}
