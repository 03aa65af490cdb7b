//! What each op accesses, resolved once before the run: per op, one entry per operand and
//! direction (read, write), with the memory table it lands in and its element range relative
//! to the root buffer or tensor, precomputed when it does not depend on loop variables.

use super::table::{Shape, SELECT};
use crate::expr::Expr;
use crate::footprint::{Bases, Footprint, Memory, Selected};
use crate::ids::{BufferId, VarId};
use crate::program::{ForLoop, OpKind, Operand, Program};
use crate::types::Pipe;

/// The elements an operand selects, relative to its root buffer or tensor: their bounding
/// range, and their runs when they may be more than one.
#[derive(Clone, Debug)]
pub(super) enum Elems<'p> {
    /// `[lo, hi)`, or nothing when `lo == hi`: one run.
    Static(u64, u64),
    /// A static selection of several runs: its bounding range and its runs.
    StaticRuns(u64, u64, Box<Selected>),
    /// Evaluated per issue, one run whatever the loop variables.
    Dyn(Footprint<'p>),
    /// Evaluated per issue, possibly several runs.
    DynRuns(Footprint<'p>),
}

/// One access of an op: an operand, read or written.
#[derive(Clone, Debug)]
pub(super) struct AccPlan<'p> {
    /// The operand's position in [`crate::engine::operands`] (its entry in `Issue::slots`).
    pub k: usize,
    pub write: bool,
    /// An accumulating `mmad`'s read of `c` happens only when `init` evaluates to 0.
    pub read_if_zero: Option<&'p Expr>,
    /// Done by the MTE1 part of an `mmad_l1` (`a`, `b`); the M part does the rest.
    pub stage: bool,
    /// The memory it lands in, as a [`Memory::index`].
    pub table: u32,
    /// The buffers whose slots it touches (every buffer of a `select`); empty for gm.
    pub roots: Vec<BufferId>,
    pub bits: u64,
    pub elems: Elems<'p>,
    /// Whether it may be more than one run (`elems.may_stride()`, kept at hand).
    pub strided: bool,
    /// Its record's shape unless it is strided: its range, standing for every buffer of a
    /// `select`.
    pub shape: Shape,
}

/// What an op does to the happens-before relation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Ctl {
    /// Accesses only (moves, vector ops, mmad, sload/sstore, scalar).
    Work,
    SetFlag {
        src: Pipe,
        dst: Pipe,
    },
    WaitFlag {
        src: Pipe,
        dst: Pipe,
    },
    Barrier,
    BarrierAll,
    /// Two instructions: an MTE1 part, then an M part.
    MmadL1,
    /// A `cross_set`: drains its pipe and publishes what it knows to the counters it
    /// increments.
    CrossSet,
    /// A `cross_wait`: learns what the increment it takes carries.
    CrossWait,
}

#[derive(Clone, Debug)]
pub(super) struct OpPlan {
    pub ctl: Ctl,
    /// The op's accesses, `lo..hi` in [`Plans::accs`].
    pub lo: u32,
    pub hi: u32,
    /// The variables of the enclosing loops, outermost first (for reports).
    pub loop_vars: Vec<VarId>,
}

pub(super) struct Plans<'p> {
    pub ops: Vec<OpPlan>,
    pub accs: Vec<AccPlan<'p>>,
    /// Per table: the pipes that may access it and whether anything writes it.
    pub table_pipes: Vec<u8>,
    pub table_written: Vec<bool>,
    /// The deepest loop nesting of an op (the width of a variable snapshot).
    pub depth: usize,
}

pub(super) fn plans(program: &Program) -> Plans<'_> {
    let mut out = Plans {
        ops: Vec::with_capacity(program.ops.len()),
        accs: Vec::new(),
        table_pipes: vec![0; Memory::count(program)],
        table_written: vec![false; Memory::count(program)],
        depth: 0,
    };
    for op in &program.ops {
        let mut loop_vars = Vec::new();
        let mut at = op.parent;
        while let Some(p) = at {
            let parent = program.op(p);
            if let OpKind::For(ForLoop { var, .. }) | OpKind::While { var, .. } = parent.kind {
                loop_vars.push(var);
            }
            at = parent.parent;
        }
        loop_vars.reverse();
        out.depth = out.depth.max(loop_vars.len());
        let ctl = match &op.kind {
            OpKind::SetFlag { src, dst, .. } => Ctl::SetFlag {
                src: *src,
                dst: *dst,
            },
            OpKind::WaitFlag { src, dst, .. } => Ctl::WaitFlag {
                src: *src,
                dst: *dst,
            },
            OpKind::Barrier(crate::program::BarrierTarget::All) => Ctl::BarrierAll,
            OpKind::Barrier(_) => Ctl::Barrier,
            OpKind::MmadL1(_) => Ctl::MmadL1,
            OpKind::CrossSet { .. } => Ctl::CrossSet,
            OpKind::CrossWait { .. } => Ctl::CrossWait,
            _ => Ctl::Work,
        };
        let lo = out.accs.len() as u32;
        // `use` is never issued; control ops have no operands
        if !matches!(op.kind, OpKind::Use { .. }) {
            let reads = op.kind.reads();
            let writes = op.kind.writes();
            for (k, o) in crate::engine::operands(&op.kind).into_iter().enumerate() {
                let stage = matches!(op.kind, OpKind::MmadL1(_)) && k < 2;
                let pipe = if stage {
                    Pipe::Mte1
                } else {
                    op.pipe.unwrap_or(Pipe::S)
                };
                let read_if_zero = match &op.kind {
                    OpKind::Mmad(m) | OpKind::MmadL1(m) if std::ptr::eq(o, &m.c) => {
                        m.init.as_const().is_none().then_some(&m.init)
                    }
                    _ => None,
                };
                for (write, listed) in [(false, &reads), (true, &writes)] {
                    if !listed.iter().any(|x| std::ptr::eq(*x, o)) {
                        continue;
                    }
                    let acc = access(program, o, k, write, stage, read_if_zero);
                    let t = acc.table as usize;
                    out.table_pipes[t] |= 1 << pipe.index();
                    out.table_written[t] |= write;
                    out.accs.push(acc);
                }
            }
        }
        out.ops.push(OpPlan {
            ctl,
            lo,
            hi: out.accs.len() as u32,
            loop_vars,
        });
    }
    out
}

fn access<'p>(
    program: &'p Program,
    o: &'p Operand,
    k: usize,
    write: bool,
    stage: bool,
    read_if_zero: Option<&'p Expr>,
) -> AccPlan<'p> {
    let bases = Bases::of(program);
    let fp = Footprint::new(&bases, o);
    let elems = match (fp.is_static(), fp.may_stride()) {
        (true, strided) => {
            let (lo, hi) = fp.elems_at(&[]).unwrap_or((0, 0));
            match fp.strided_at(&[]) {
                Selected::Runs(r) if strided && r.rank > 0 => {
                    Elems::StaticRuns(lo, hi, Box::new(Selected::Runs(r)))
                }
                Selected::Deep => Elems::StaticRuns(lo, hi, Box::new(Selected::Deep)),
                _ => Elems::Static(lo, hi),
            }
        }
        (false, false) => Elems::Dyn(fp),
        (false, true) => Elems::DynRuns(fp),
    };
    let roots = bases.roots(o.base);
    AccPlan {
        k,
        write,
        read_if_zero: if write { None } else { read_if_zero },
        stage,
        table: Memory::of(o.base, o.space).index() as u32,
        shape: Shape::RANGE.with(if roots.len() > 1 { SELECT } else { 0 }),
        roots,
        bits: o.dtype.bits(),
        strided: elems.may_stride(),
        elems,
    }
}

impl Elems<'_> {
    /// The bounding element range for the current loop variables.
    #[inline]
    pub fn eval(&self, vars: &[i64]) -> Option<(u64, u64)> {
        match self {
            Elems::Static(lo, hi) | Elems::StaticRuns(lo, hi, _) => (lo < hi).then_some((*lo, *hi)),
            Elems::Dyn(fp) | Elems::DynRuns(fp) => fp.elems_at(vars),
        }
    }

    /// Whether the selection may be more than one run ([`Elems::runs`] then says which).
    #[inline]
    pub fn may_stride(&self) -> bool {
        matches!(self, Elems::StaticRuns(..) | Elems::DynRuns(_))
    }

    /// The runs for the current loop variables, when they may be more than one (`None`: the
    /// bounding range is exact).
    #[inline]
    pub fn runs(&self, vars: &[i64]) -> Option<Selected> {
        match self {
            Elems::Static(..) | Elems::Dyn(_) => None,
            Elems::StaticRuns(_, _, r) => Some(**r),
            Elems::DynRuns(fp) => Some(fp.strided_at(vars)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Space;

    fn accs<'p>(plans: &'p Plans<'p>, op: usize) -> &'p [AccPlan<'p>] {
        let o = &plans.ops[op];
        &plans.accs[o.lo as usize..o.hi as usize]
    }

    #[test]
    fn ranges_are_bounding_element_ranges_of_the_root() {
        // the footprint tests' program: load, for { vadds, vadds, vadds through a moving window }
        let p = crate::footprint::tests::program();
        let plans = plans(&p);
        let load = accs(&plans, 0);
        assert_eq!(load.len(), 2);
        assert!(!load[0].write && load[1].write);
        assert_eq!(load[0].table as usize, Space::COUNT); // gm tensor x
        assert_eq!(load[1].table as usize, Space::Ub.index());
        assert!(matches!(load[1].elems, Elems::Static(0, 32)));

        let v = accs(&plans, 2);
        // a strided slice: its bounding range, rows 1..3, columns 2..4, and its two runs
        assert!(matches!(v[0].elems, Elems::StaticRuns(10, 20, _)));
        match v[0].elems.runs(&[]) {
            Some(Selected::Runs(r)) => {
                assert_eq!((r.first, r.len, r.dims()), (10, 2, &[(2, 8)][..]))
            }
            other => panic!("{other:?}"),
        }
        // a slice indexed by a loop variable is evaluated per issue
        assert_eq!(v[1].elems.eval(&[0]), Some((0, 4)));
        assert_eq!(v[1].elems.eval(&[1]), Some((8, 12)));
        // one run whatever the variable: nothing more to evaluate
        assert!(v[1].elems.runs(&[1]).is_none());
        assert_eq!(plans.ops[2].loop_vars.len(), 1);
        assert_eq!(plans.depth, 1);

        let w = accs(&plans, 3);
        // a window adds its offset in elements of its root
        assert!(matches!(w[0].elems, Elems::Static(18, 20)));
        assert_eq!(w[0].roots.len(), 1);
        // i1: bits, so the byte range is rounded out by the checker
        assert_eq!(w[1].bits, 1);
        assert!(matches!(w[1].elems, Elems::Static(8, 10)));
        // x is only read; a is read and written, by V and MTE2
        assert!(!plans.table_written[Space::COUNT]);
        assert!(plans.table_written[Space::Ub.index()]);
        let ub = plans.table_pipes[Space::Ub.index()];
        assert_eq!(
            ub,
            (1 << crate::Pipe::V.index()) | (1 << crate::Pipe::Mte2.index())
        );
    }
}
