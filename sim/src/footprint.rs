//! Which elements (and bytes) of its base an operand touches: the one rule behind the loader's
//! bounds checks, the engine's byte counts, the race checker (at the loop variables of an
//! issue) and the sync pass (over every value the loop variables can take).
//!
//! Dimension `d` of an operand selects a half-open index range `[start, end)` of its base's
//! dimension: an index `e` selects `[e, e + 1)`, a slice `a:b` selects `[a, b)` (a missing
//! bound is 0 or the extent), and a missing trailing index selects the whole dimension
//! ([`Sel`]). Elements are numbered row-major in the base's shape; a window chain adds its
//! offsets, in elements of the root buffer. The operand's *bounding range* is
//! `[Σ start·stride, Σ (end − 1)·stride + 1)` plus the window offset: exact for a contiguous
//! selection, the smallest enclosing range of a strided one. Its bytes are
//! `[lo × bits / 8, ceil(hi × bits / 8))` (an `i1` range rounds out to whole bytes).

use crate::expr::{EvalError, Expr};
use crate::ids::{BufferId, OpId, TensorId};
use crate::program::{Buffer, Index, OpKind, Operand, Program, Ref, Tensor, View, ViewKind};
use crate::types::Space;

/// A memory that accesses are compared in: an on-chip scope (byte addresses in the scope) or
/// one gm tensor (bytes from its start: gm accesses conflict only within a tensor). The race
/// checker keeps a record table per memory ([`Memory::index`]); the sync pass compares the
/// byte ranges of one memory.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Memory {
    Scope(Space),
    Tensor(TensorId),
}

impl Memory {
    /// The memory an operand on `base`, in `space`, lands in.
    #[inline]
    pub fn of(base: Ref, space: Space) -> Memory {
        match base {
            Ref::Tensor(t) => Memory::Tensor(t),
            _ => Memory::Scope(space),
        }
    }

    /// A dense index: the scopes by [`Space::index`], then the tensors.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Memory::Scope(s) => s.index(),
            Memory::Tensor(t) => Space::COUNT + t.index(),
        }
    }

    /// The memory at dense index `i` (the inverse of [`Memory::index`]).
    pub fn from_index(i: usize) -> Memory {
        if i < Space::COUNT {
            Memory::Scope(Space::ALL[i])
        } else {
            Memory::Tensor(TensorId::new(i - Space::COUNT))
        }
    }

    /// How many memories `program` has (the length of a table indexed by [`Memory::index`]).
    pub fn count(program: &Program) -> usize {
        Space::COUNT + program.tensors.len()
    }

    /// How reports name it: `UB`, or `GM x` for tensor x.
    pub fn label(self, program: &Program) -> String {
        match self {
            Memory::Scope(s) => s.report_name().to_string(),
            Memory::Tensor(t) => format!("GM {}", program.tensor(t).name),
        }
    }
}

/// The tables an operand's base is looked up in: a loaded [`Program`]'s, or the loader's
/// while it builds one.
#[derive(Clone, Copy, Debug)]
pub struct Bases<'a> {
    pub buffers: &'a [Buffer],
    pub views: &'a [View],
    pub tensors: &'a [Tensor],
}

impl<'a> Bases<'a> {
    pub fn of(program: &'a Program) -> Bases<'a> {
        Bases {
            buffers: &program.buffers,
            views: &program.views,
            tensors: &program.tensors,
        }
    }

    /// The shape indices of an operand on `r` refer to.
    pub fn shape(&self, r: Ref) -> &'a [u64] {
        match r {
            Ref::Buffer(b) => &self.buffers[b.index()].shape,
            Ref::View(v) => &self.views[v.index()].shape,
            Ref::Tensor(t) => &self.tensors[t.index()].shape,
        }
    }

    /// The window chain from `r` down to its root: each window view with the base it is a
    /// window of and its element offset, outermost first; empty for a buffer, a tensor or a
    /// `select`.
    pub fn windows(&self, mut r: Ref) -> Vec<(&'a View, Ref, &'a Expr)> {
        let mut chain = Vec::new();
        while let Ref::View(v) = r {
            let view = &self.views[v.index()];
            let ViewKind::Window { of, offset } = &view.kind else {
                break;
            };
            chain.push((view, *of, offset));
            r = *of;
        }
        chain
    }

    /// The buffers whose storage `r` may touch (a window's root buffer, every buffer of a
    /// `select`); empty for gm tensors.
    pub fn roots(&self, r: Ref) -> Vec<BufferId> {
        match r {
            Ref::Buffer(b) => vec![b],
            Ref::Tensor(_) => vec![],
            Ref::View(v) => match &self.views[v.index()].kind {
                ViewKind::Window { of, .. } => self.roots(*of),
                ViewKind::Select { of } => of.clone(),
            },
        }
    }
}

/// What one dimension of an operand selects: `[start, end)`.
#[derive(Clone, Copy, Debug)]
pub enum Sel<'a> {
    /// No index written: the whole extent.
    Whole(u64),
    /// `e`: `[e, e + 1)`; the dimension is dropped from the operand's shape.
    At(&'a Expr),
    /// `a:b`: `[a, b)`.
    Slice(&'a Expr, &'a Expr),
}

/// The values an expression can take, inclusive; `None` where unknown.
pub type Span = Option<(i64, i64)>;

/// An expression that failed to evaluate, and which one.
pub type EvalFailure<'a> = (EvalError, &'a Expr);

impl<'a> Sel<'a> {
    /// Dimension `d` (of extent `extent`) of operand `o`.
    #[inline]
    pub fn of(o: &'a Operand, d: usize, extent: u64) -> Sel<'a> {
        Sel::new(o.indices.get(d), extent)
    }

    /// What index `index` (`None`: not written) selects in a dimension of `extent`.
    #[inline]
    pub fn new(index: Option<&'a Index>, extent: u64) -> Sel<'a> {
        match index {
            None => Sel::Whole(extent),
            Some(Index::At(e)) => Sel::At(e),
            Some(Index::Slice { start, end }) => Sel::Slice(start, end),
        }
    }

    /// `[start, end)` for the loop variables `vars`.
    #[inline]
    pub fn at(self, vars: &[i64]) -> Result<(i64, i64), EvalFailure<'a>> {
        let ev = |e: &'a Expr| e.eval(vars).map_err(|err| (err, e));
        Ok(match self {
            Sel::Whole(n) => (0, n as i64),
            Sel::At(e) => {
                let v = ev(e)?;
                (v, v.saturating_add(1))
            }
            Sel::Slice(a, b) => (ev(a)?, ev(b)?),
        })
    }

    /// The values `start` and `end` can take (inclusive ranges) when each loop variable `v`
    /// lies in `ranges[v]`; `None` where unknown.
    pub fn over(self, ranges: &[Span]) -> (Span, Span) {
        match self {
            Sel::Whole(n) => (Some((0, 0)), Some((n as i64, n as i64))),
            Sel::At(e) => {
                let b = e.bounds(ranges);
                let end = b.and_then(|(lo, hi)| Some((lo.checked_add(1)?, hi.checked_add(1)?)));
                (b, end)
            }
            Sel::Slice(a, b) => (a.bounds(ranges), b.bounds(ranges)),
        }
    }

    /// `end - start` when it does not depend on the loop variables.
    pub fn const_len(self) -> Option<i64> {
        match self {
            Sel::Whole(n) => Some(n as i64),
            Sel::At(_) => Some(1),
            Sel::Slice(a, b) => Expr::const_difference(b, a),
        }
    }
}

/// Whether no index or slice bound of `o` depends on a loop variable.
pub fn static_indices(o: &Operand) -> bool {
    o.indices.iter().all(|i| match i {
        Index::At(e) => e.as_const().is_some(),
        Index::Slice { start, end } => start.as_const().is_some() && end.as_const().is_some(),
    })
}

/// The shape an operand selects (an index drops its dimension, a slice keeps its length), when
/// every length is constant.
pub fn selected_shape(o: &Operand, shape: &[u64]) -> Option<Vec<u64>> {
    let mut out = Vec::with_capacity(shape.len());
    for (d, &extent) in shape.iter().enumerate() {
        let sel = Sel::of(o, d, extent);
        if !matches!(sel, Sel::At(_)) {
            out.push(sel.const_len()?.max(0) as u64);
        }
    }
    Some(out)
}

/// The number of elements an operand selects, when it does not depend on loop variables
/// (a backwards slice selects nothing).
pub fn static_count(o: &Operand, shape: &[u64]) -> Option<u64> {
    let mut n = 1u64;
    for (d, &extent) in shape.iter().enumerate() {
        let len = Sel::of(o, d, extent).const_len()?;
        n = n.checked_mul(len.max(0) as u64)?;
    }
    Some(n)
}

/// Calls `visit(op, ranges)` for every op of `program` in op order (pre-order), with the values
/// each loop variable in scope there can take (inclusive, by [`crate::VarId`]; `None` where
/// unknown): a `for` from its bounds and step, a `while` from its trip count, narrowed inside an
/// `if` branch by its guard ([`crate::guard::narrow`]), so a guarded access's footprint stays
/// within what the branch can touch.
pub fn walk_ranges(program: &Program, visit: &mut dyn FnMut(OpId, &[Span])) {
    let mut ranges = vec![None; program.vars.len()];
    walk_block(program, &program.body.ops, &mut ranges, visit);
}

fn walk_block(
    program: &Program,
    ops: &[OpId],
    ranges: &mut Vec<Span>,
    visit: &mut dyn FnMut(OpId, &[Span]),
) {
    for &id in ops {
        visit(id, ranges);
        match &program.op(id).kind {
            OpKind::For(l) => {
                let r = Expr::for_range(&l.from, &l.to, &l.step, ranges);
                let outside = std::mem::replace(&mut ranges[l.var.index()], r);
                walk_block(program, &l.body.ops, ranges, visit);
                ranges[l.var.index()] = outside;
            }
            OpKind::While { var, trips, body } => {
                let r = trips
                    .range(ranges)
                    .and_then(|(_, hi)| (hi >= 1).then_some((0, hi - 1)));
                let outside = std::mem::replace(&mut ranges[var.index()], r);
                walk_block(program, &body.ops, ranges, visit);
                ranges[var.index()] = outside;
            }
            OpKind::If { cond, then, els } => {
                for (holds, block) in [(true, Some(then)), (false, els.as_ref())] {
                    let Some(block) = block else { continue };
                    let narrowed = crate::guard::narrow(cond, holds, ranges);
                    walk_block(program, &block.ops, ranges, visit);
                    narrowed.undo(ranges);
                }
            }
            _ => {}
        }
    }
}

/// How many elements operand `o` (on a base of `shape`) selects for the loop variables
/// `vars`, saturating; an expression that fails to evaluate is returned with its error.
#[inline]
pub fn count_at<'a>(o: &'a Operand, shape: &[u64], vars: &[i64]) -> Result<u64, EvalFailure<'a>> {
    let mut n: u64 = 1;
    for (d, &extent) in shape.iter().enumerate() {
        let (a, b) = Sel::of(o, d, extent).at(vars)?;
        n = n.saturating_mul(b.saturating_sub(a).max(0) as u64);
    }
    Ok(n)
}

/// The maximal contiguous runs of the elements an operand selects, in row-major order of its
/// base (the vector block and UB bank costs, docs/timing.md). Every run of one operand has the
/// same length: the innermost dimensions selected whole merge with the first one that is not
/// (its selected length times their extents), and each combination of the outer dimensions'
/// indices starts one run. A whole buffer is one run; `x[0:64, 0:32]` of a `[128, 128]` base is
/// 64 runs of 32 elements; an empty selection has no runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runs {
    pub count: u64,
    /// Elements per run.
    pub len: u64,
}

impl Runs {
    /// The bytes of one run of `bits`-bit elements, rounded up.
    #[inline]
    pub fn run_bytes(self, bits: u64) -> u64 {
        self.len.saturating_mul(bits).div_ceil(8)
    }
}

/// The runs of operand `o` (on a base of `shape`) for the loop variables `vars`, without their
/// starts ([`run_starts`]). Nothing is allocated.
#[inline]
pub fn runs_at<'a>(o: &'a Operand, shape: &[u64], vars: &[i64]) -> Result<Runs, EvalFailure<'a>> {
    let mut len = 1u64;
    let mut count = 1u64;
    let mut merging = true;
    for d in (0..shape.len()).rev() {
        let (a, b) = Sel::of(o, d, shape[d]).at(vars)?;
        let n = b.saturating_sub(a).max(0) as u64;
        if n == 0 {
            return Ok(Runs { count: 0, len: 0 });
        }
        if merging {
            len = len.saturating_mul(n);
            merging = a == 0 && n == shape[d];
        } else {
            count = count.saturating_mul(n);
        }
    }
    Ok(Runs { count, len })
}

/// [`runs_at`], and the first element of every run (row-major in the base, window offsets not
/// included), in run order, appended to `starts`.
pub fn run_starts<'a>(
    o: &'a Operand,
    shape: &[u64],
    vars: &[i64],
    starts: &mut Vec<u64>,
) -> Result<Runs, EvalFailure<'a>> {
    let runs = runs_at(o, shape, vars)?;
    if runs.count > 0 {
        for_each_run(o, shape, vars, |first, _| starts.push(first))?;
    }
    Ok(runs)
}

/// The maximal contiguous byte runs of a gm operand (an operand on a tensor, `shape` the
/// tensor's shape) for the loop variables `vars`, in row-major order: `f(first byte, bytes)`
/// per run, bytes from the tensor's start. A whole tensor is one run; `x[0:64, 0:32]` of a
/// `[128, 128]` tensor is 64 runs of 32 elements. Dimensions after the innermost partial one
/// are whole, so a run is that dimension's selection times the elements below it; every
/// combination of the outer dimensions' indices starts one. Selects nothing: no call. The
/// caller has checked the bounds.
pub fn gm_runs_at<'a>(
    o: &'a Operand,
    shape: &[u64],
    vars: &[i64],
    mut f: impl FnMut(u64, u64),
) -> Result<(), EvalFailure<'a>> {
    let bits = o.dtype.bits();
    for_each_run(o, shape, vars, |start, run| {
        let (x, y) = (
            start * bits / 8,
            (start + run).saturating_mul(bits).div_ceil(8),
        );
        f(x, y - x);
    })
}

/// Every maximal contiguous run of the elements `o` selects, in row-major order of its base:
/// `f(first element, elements)` per run (window offsets not included). Dimensions after the
/// innermost partial one are whole, so a run is that dimension's selection times the elements
/// below it; every combination of the outer dimensions' indices starts one. Selects nothing: no
/// call. The one walk behind [`run_starts`] (vector blocks, UB banks) and [`gm_runs_at`] (gm
/// lines); nothing is allocated for up to 8 dimensions.
fn for_each_run<'a>(
    o: &'a Operand,
    shape: &[u64],
    vars: &[i64],
    mut f: impl FnMut(u64, u64),
) -> Result<(), EvalFailure<'a>> {
    const MAX_DIMS: usize = 8;
    let n = shape.len();
    if n > MAX_DIMS {
        // deeper than kernels write: the same walk on the heap
        return runs_in(
            o,
            shape,
            vars,
            &mut vec![(0, 0); n],
            &mut vec![1; n],
            &mut vec![0; n],
            &mut f,
        );
    }
    runs_in(
        o,
        shape,
        vars,
        &mut [(0, 0); MAX_DIMS],
        &mut [1; MAX_DIMS],
        &mut [0; MAX_DIMS],
        &mut f,
    )
}

/// [`for_each_run`] with scratch of at least `shape.len()` entries.
fn runs_in<'a>(
    o: &'a Operand,
    shape: &[u64],
    vars: &[i64],
    sel: &mut [(u64, u64)],
    strides: &mut [u64],
    idx: &mut [u64],
    f: &mut impl FnMut(u64, u64),
) -> Result<(), EvalFailure<'a>> {
    let n = shape.len();
    for d in (0..n).rev() {
        let (a, b) = Sel::of(o, d, shape[d]).at(vars)?;
        if b <= a {
            return Ok(());
        }
        sel[d] = (a as u64, b as u64);
        if d + 1 < n {
            strides[d] = strides[d + 1].saturating_mul(shape[d + 1]);
        }
    }
    // k: the innermost dimension that is not selected whole (0 when all are)
    let mut k = n.saturating_sub(1);
    while k > 0 && sel[k] == (0, shape[k]) {
        k -= 1;
    }
    let run = if n == 0 {
        1
    } else {
        (sel[k].1 - sel[k].0) * strides[k]
    };
    // odometer over the outer dimensions 0..k
    for d in 0..k {
        idx[d] = sel[d].0;
    }
    loop {
        let mut start = if n == 0 { 0 } else { sel[k].0 * strides[k] };
        for d in 0..k {
            start += idx[d] * strides[d];
        }
        f(start, run);
        let mut d = k;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < sel[d].1 {
                break;
            }
            idx[d] = sel[d].0;
        }
    }
}

/// The most outer dimensions a [`Strided`] selection holds; deeper selections (past every
/// shape kernels write) are [`Selected::Deep`].
pub const STRIDED_DIMS: usize = 8;

/// The elements an operand selects, exactly, as runs of `len` elements on a lattice: one run at
/// `first + Σ i_d × stride_d` for every `i_d < count_d`, `dims[..rank]` = `(count_d, stride_d)`
/// outermost first (elements of the root, window offsets included). Dimensions of count 1 are
/// left out and a dimension that continues the one inside it (`stride = count × stride` of the
/// inner one) is merged into it, so a contiguous selection has rank 0. The runs are in
/// increasing order and never touch: each dimension's stride is larger than the span of what
/// it repeats (a row-major selection inside its base).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub first: u64,
    pub len: u64,
    pub rank: u8,
    pub dims: [(u64, u64); STRIDED_DIMS],
}

impl Strided {
    /// The outer dimensions, outermost first.
    #[inline]
    pub fn dims(&self) -> &[(u64, u64)] {
        &self.dims[..self.rank as usize]
    }
}

/// What [`Footprint::strided_at`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selected {
    /// Nothing.
    Empty,
    Runs(Strided),
    /// More than [`STRIDED_DIMS`] outer dimensions: only the bounding range is known.
    Deep,
}

/// An operand's bounding range over every value of the loop variables.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Over {
    /// It selects nothing, whatever the variables.
    Empty,
    /// Elements `[lo, hi)` of the root cover every selection.
    Range(u64, u64),
    /// Some bound is unknown: assume the whole root.
    Unknown,
}

/// An operand resolved against its base: everything needed to answer which elements it
/// touches, for given loop variables or over their ranges.
#[derive(Clone, Debug)]
pub struct Footprint<'a> {
    pub operand: &'a Operand,
    /// The shape of the operand's base, which its indices refer to.
    pub shape: &'a [u64],
    /// Row-major strides of `shape`, in elements.
    strides: Vec<u64>,
    /// Window offsets that depend on loop variables (elements of the root).
    windows: Vec<&'a Expr>,
    /// The constant part of the window offsets.
    base: u64,
    /// Bits per element.
    pub bits: u64,
}

impl<'a> Footprint<'a> {
    pub fn new(bases: &Bases<'a>, o: &'a Operand) -> Footprint<'a> {
        let shape = bases.shape(o.base);
        let mut base = 0u64;
        let mut windows = Vec::new();
        for (_, _, offset) in bases.windows(o.base) {
            match offset.as_const() {
                Some(c) => base = base.saturating_add(c.max(0) as u64),
                None => windows.push(offset),
            }
        }
        let mut strides = vec![1u64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1].saturating_mul(shape[d + 1]);
        }
        Footprint {
            operand: o,
            shape,
            strides,
            windows,
            base,
            bits: o.dtype.bits(),
        }
    }

    /// Whether no index, slice bound or window offset depends on a loop variable.
    pub fn is_static(&self) -> bool {
        self.windows.is_empty() && static_indices(self.operand)
    }

    /// Dimension `d`'s selection.
    #[inline]
    pub fn sel(&self, d: usize) -> Sel<'a> {
        Sel::of(self.operand, d, self.shape[d])
    }

    /// The bounding element range `[lo, hi)` of the root for the loop variables `vars`, or
    /// `None` when the operand selects nothing. The engine checks bounds before anything
    /// reads this, so an expression that fails to evaluate counts as 0.
    #[inline]
    pub fn elems_at(&self, vars: &[i64]) -> Option<(u64, u64)> {
        let ev = |e: &Expr| e.eval(vars).unwrap_or(0).max(0) as u64;
        let (mut lo, mut last) = (0u64, 0u64);
        for (d, &stride) in self.strides.iter().enumerate() {
            let (a, b) = self.sel(d).at(vars).unwrap_or((0, 0));
            let (a, b) = (a.max(0) as u64, b.max(0) as u64);
            if b <= a {
                return None;
            }
            lo += a * stride;
            last += (b - 1) * stride;
        }
        let mut off = self.base;
        for w in &self.windows {
            off += ev(w);
        }
        Some((lo + off, last + 1 + off))
    }

    /// Whether the operand can select more than one run for some value of the loop variables:
    /// some dimension outside the innermost one that is not selected whole can select more
    /// than one index. When it cannot, [`Footprint::elems_at`] is exact.
    pub fn may_stride(&self) -> bool {
        let n = self.shape.len();
        // the innermost dimension not statically whole; every dimension outside it must pick
        // at most one index
        let whole = |d: usize| match self.sel(d) {
            Sel::Whole(_) => true,
            Sel::At(_) => self.shape[d] == 1,
            Sel::Slice(a, b) => {
                a.as_const() == Some(0) && b.as_const() == Some(self.shape[d] as i64)
            }
        };
        let Some(k) = (0..n).rev().find(|&d| !whole(d)) else {
            return false;
        };
        (0..k).any(|d| match self.sel(d) {
            Sel::Whole(e) => e > 1,
            Sel::At(_) => false,
            Sel::Slice(..) => self.sel(d).const_len().is_none_or(|l| l > 1),
        })
    }

    /// The elements the operand selects for the loop variables `vars`, as runs on a lattice
    /// ([`Strided`]); the runs of [`gm_runs_at`], in elements of the root. The engine checks
    /// bounds before anything reads this, so an expression that fails to evaluate counts as 0.
    pub fn strided_at(&self, vars: &[i64]) -> Selected {
        let n = self.shape.len();
        let ev = |e: &Expr| e.eval(vars).unwrap_or(0).max(0) as u64;
        let mut first = self.base;
        for w in &self.windows {
            first += ev(w);
        }
        let mut len = 1u64;
        let mut merging = true;
        // collected innermost first, then reversed
        let mut dims = [(0u64, 0u64); STRIDED_DIMS];
        let mut rank = 0usize;
        for d in (0..n).rev() {
            let (a, b) = self.sel(d).at(vars).unwrap_or((0, 0));
            let (a, b) = (a.max(0) as u64, b.max(0) as u64);
            if b <= a {
                return Selected::Empty;
            }
            let stride = self.strides[d];
            first += a * stride;
            let count = b - a;
            if merging {
                // the innermost dimensions selected whole and the first one that is not make
                // one run
                len = count * stride;
                merging = a == 0 && b == self.shape[d];
                continue;
            }
            if count == 1 {
                continue;
            }
            if rank > 0 && dims[rank - 1].0 * dims[rank - 1].1 == stride {
                // continues the dimension inside it
                dims[rank - 1].0 *= count;
                continue;
            }
            if rank == STRIDED_DIMS {
                return Selected::Deep;
            }
            dims[rank] = (count, stride);
            rank += 1;
        }
        dims[..rank].reverse();
        Selected::Runs(Strided {
            first,
            len,
            rank: rank as u8,
            dims,
        })
    }

    /// The bounding element range of the root over every value the loop variables can take
    /// (`ranges[v]`, inclusive). Bounds are clamped to each dimension, so a loop whose
    /// variables cannot be bounded still stays inside the base.
    pub fn elems_over(&self, ranges: &[Option<(i64, i64)>]) -> Over {
        // a window that moves with the loop starts at its lowest offset and ends at its highest
        let (mut off_lo, mut off_hi) = (self.base, self.base);
        for w in &self.windows {
            let Some((l, h)) = w.bounds(ranges) else {
                return Over::Unknown;
            };
            off_lo = off_lo.saturating_add(l.max(0) as u64);
            off_hi = off_hi.saturating_add(h.max(0) as u64);
        }
        let (mut lo, mut last) = (0u64, 0u64);
        for (d, (&dim, &stride)) in self.shape.iter().zip(&self.strides).enumerate() {
            let (start, end) = self.sel(d).over(ranges);
            let (Some((a, _)), Some((_, b))) = (start, end) else {
                return Over::Unknown;
            };
            let (a, b) = (a.max(0) as u64, (b.max(0) as u64).min(dim));
            if b <= a {
                return Over::Empty;
            }
            lo += a * stride;
            last += (b - 1) * stride;
        }
        Over::Range(lo + off_lo, last + 1 + off_hi)
    }

    /// The bytes of an element range: `[lo × bits / 8, ceil(hi × bits / 8))`.
    #[inline]
    pub fn bytes(&self, (lo, hi): (u64, u64)) -> (u64, u64) {
        (
            lo.saturating_mul(self.bits) / 8,
            hi.saturating_mul(self.bits).div_ceil(8),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A program with a whole, a strided, a loop-indexed, a windowed, an `i1` and a moving
    /// window operand (the race checker's access table is tested on it too).
    pub(crate) fn program() -> Program {
        let config = crate::load_config(
            crate::builtin::builtin(crate::builtin::DEFAULT).unwrap(),
            "config",
        )
        .unwrap();
        let text = r#"
kernel: ranges
core: aiv
sync: manual
gm:
  x: { shape: [4, 8], dtype: f16 }
buffers:
  a: { scope: ub, shape: [4, 8], dtype: f16 }
  m: { scope: ub, shape: [64], dtype: i1 }
views:
  w: { of: a, offset: 16, shape: [8] }
body:
  - load: { src: x, dst: a }
  - for: { var: i, to: 2 }
    views:
      d: { of: a, offset: "i * 8", shape: [8] }
    body:
      - vadds: { ins: ["a[1:3, 2:4]"], out: "a[i, 0:4]", scalar: 1 }
      - vadds: { ins: ["w[2:4]"], out: "m[8:10]", scalar: 1 }
      - vadds: { ins: ["d[0:4]"], out: "d[4:8]", scalar: 1 }
"#;
        crate::load_program(text, "ranges.yaml", &config, &[]).unwrap()
    }

    fn fp<'p>(p: &'p Program, op: usize, k: usize) -> Footprint<'p> {
        let ops = crate::engine::operands(&p.ops[op].kind);
        Footprint::new(&Bases::of(p), ops[k])
    }

    #[test]
    fn bounding_ranges_at_and_over_the_loop_agree() {
        let p = program();
        // ops in pre-order: load, for, vadds, vadds, vadds
        let whole = fp(&p, 0, 1);
        assert!(whole.is_static());
        assert_eq!(whole.elems_at(&[]), Some((0, 32)));
        assert_eq!(whole.elems_over(&[]), Over::Range(0, 32));
        // a strided slice counts as its bounding range: rows 1..3, columns 2..4
        let strided = fp(&p, 2, 0);
        assert_eq!(strided.elems_at(&[0]), Some((10, 20)));
        assert_eq!(count_at(strided.operand, strided.shape, &[0]), Ok(4));
        // a row picked by the loop variable: one row per iteration, both rows over the loop
        let row = fp(&p, 2, 1);
        assert!(!row.is_static());
        assert_eq!(row.elems_at(&[0]), Some((0, 4)));
        assert_eq!(row.elems_at(&[1]), Some((8, 12)));
        assert_eq!(row.elems_over(&[Some((0, 1))]), Over::Range(0, 12));
        assert_eq!(row.elems_over(&[None]), Over::Unknown);
        // a window adds its offset in elements of its root
        let win = fp(&p, 3, 0);
        assert_eq!(win.elems_at(&[0]), Some((18, 20)));
        // i1: bits, so the byte range rounds out
        let bits = fp(&p, 3, 1);
        assert_eq!(bits.elems_at(&[0]), Some((8, 10)));
        assert_eq!(bits.bytes((8, 10)), (1, 2));
        // a window that moves with the loop: per iteration, and the span of every iteration
        let moving = fp(&p, 4, 1);
        assert_eq!(moving.elems_at(&[1]), Some((12, 16)));
        assert_eq!(moving.elems_over(&[Some((0, 1))]), Over::Range(4, 16));
    }

    #[test]
    fn runs_of_whole_strided_and_picked_selections() {
        let p = program();
        let mut starts = Vec::new();
        // the whole [4, 8] buffer: one run of 32 elements at 0
        let whole = fp(&p, 0, 1);
        let runs = run_starts(whole.operand, whole.shape, &[], &mut starts).unwrap();
        assert_eq!(
            (runs, starts.as_slice()),
            (Runs { count: 1, len: 32 }, &[0][..])
        );
        assert_eq!(runs.run_bytes(16), 64);
        // a[1:3, 2:4]: rows 1 and 2, columns 2..4: two runs of 2, at 1 × 8 + 2 and 2 × 8 + 2
        starts.clear();
        let strided = fp(&p, 2, 0);
        let runs = run_starts(strided.operand, strided.shape, &[0], &mut starts).unwrap();
        assert_eq!(
            (runs, starts.as_slice()),
            (Runs { count: 2, len: 2 }, &[10, 18][..])
        );
        // a[i, 0:4]: one run of 4 at row i
        starts.clear();
        let row = fp(&p, 2, 1);
        let runs = run_starts(row.operand, row.shape, &[1], &mut starts).unwrap();
        assert_eq!(
            (runs, starts.as_slice()),
            (Runs { count: 1, len: 4 }, &[8][..])
        );
        assert_eq!(runs_at(row.operand, row.shape, &[1]), Ok(runs));
        // i1: 2 elements round up to a byte
        let bits = fp(&p, 3, 1);
        let runs = runs_at(bits.operand, bits.shape, &[0]).unwrap();
        assert_eq!((runs.count, runs.run_bytes(1)), (1, 1));
    }

    #[test]
    fn gm_runs_are_maximal_and_row_major() {
        let config = crate::load_config(
            crate::builtin::builtin(crate::builtin::DEFAULT).unwrap(),
            "config",
        )
        .unwrap();
        let text = r#"
kernel: runs
core: aiv
sync: manual
gm:
  x: { shape: [128, 128], dtype: f16 }
buffers:
  a: { scope: ub, shape: [64, 32], dtype: f16 }
  b: { scope: ub, shape: [128, 128], dtype: f16 }
  c: { scope: ub, shape: [64, 128], dtype: f16 }
body:
  - load: { src: "x[0:64, 0:32]", dst: a }
  - load: { src: x, dst: b }
  - load: { src: "x[64:128, 0:128]", dst: c }
  - load: { src: "x[3]", dst: "b[0]" }
"#;
        let p = crate::load_program(text, "runs.yaml", &config, &[]).unwrap();
        let runs = |op: usize| {
            let ops = crate::engine::operands(&p.ops[op].kind);
            let o = ops[0];
            let mut v = Vec::new();
            gm_runs_at(o, &p.tensors[0].shape, &[], |a, n| v.push((a, n))).unwrap();
            v
        };
        // 64 rows of 32 f16 = 64 B, a row of 256 B apart
        let v = runs(0);
        assert_eq!(v.len(), 64);
        assert_eq!((v[0], v[1], v[63]), ((0, 64), (256, 64), (63 * 256, 64)));
        // the whole tensor, and whole rows 64..128: one run each
        assert_eq!(runs(1), [(0, 32768)]);
        assert_eq!(runs(2), [(16384, 16384)]);
        // one row
        assert_eq!(runs(3), [(768, 256)]);
    }

    #[test]
    fn strided_selections_are_their_runs() {
        let p = program();
        let runs = |f: &Footprint, vars: &[i64]| match f.strided_at(vars) {
            Selected::Runs(s) => (s.first, s.len, s.dims().to_vec()),
            other => panic!("{other:?}"),
        };
        // the whole buffer: one run
        let whole = fp(&p, 0, 1);
        assert!(!whole.may_stride());
        assert_eq!(runs(&whole, &[]), (0, 32, vec![]));
        // a[1:3, 2:4]: two runs of 2, a row (8) apart, from element 10
        let strided = fp(&p, 2, 0);
        assert!(strided.may_stride());
        assert_eq!(runs(&strided, &[0]), (10, 2, vec![(2, 8)]));
        // a[i, 0:4]: one run whatever i is
        let row = fp(&p, 2, 1);
        assert!(!row.may_stride());
        assert_eq!(runs(&row, &[1]), (8, 4, vec![]));
        // a window's offset moves the runs
        let win = fp(&p, 3, 0);
        assert_eq!(runs(&win, &[0]), (18, 2, vec![]));

        let config = crate::load_config(
            crate::builtin::builtin(crate::builtin::DEFAULT).unwrap(),
            "config",
        )
        .unwrap();
        let text = r#"
kernel: strided
core: aiv
sync: manual
gm:
  t: { shape: [2, 3, 8], dtype: f16 }
buffers:
  a: { scope: ub, shape: [2, 3, 4], dtype: f16 }
  b: { scope: ub, shape: [2, 1, 4], dtype: f16 }
  c: { scope: ub, shape: [2, 3, 8], dtype: f16 }
body:
  - for: { var: i, to: 2 }
    body:
      - load: { src: "t[:, :, 0:4]", dst: a }
      - load: { src: "t[:, i:i + 1, 4:8]", dst: b }
      - load: { src: "t[0:2, 0:3]", dst: c }
"#;
        let p = crate::load_program(text, "strided.yaml", &config, &[]).unwrap();
        // t[:, :, 0:4]: the two outer dimensions continue each other: 6 runs, 8 apart
        let a = fp(&p, 1, 0);
        assert!(a.may_stride());
        assert_eq!(runs(&a, &[0]), (0, 4, vec![(6, 8)]));
        // t[:, i:i + 1, 4:8]: one run per plane, a plane (24) apart
        let b = fp(&p, 2, 0);
        assert!(b.may_stride());
        assert_eq!(runs(&b, &[1]), (12, 4, vec![(2, 24)]));
        // t[0:2, 0:3]: everything, one run
        let c = fp(&p, 3, 0);
        assert!(!c.may_stride());
        assert_eq!(runs(&c, &[0]), (0, 48, vec![]));
    }

    #[test]
    fn selections() {
        let p = program();
        let row = fp(&p, 2, 1);
        assert!(matches!(row.sel(0), Sel::At(_)));
        assert_eq!(
            row.sel(0).over(&[Some((0, 1))]),
            (Some((0, 1)), Some((1, 2)))
        );
        assert_eq!(row.sel(1).at(&[1]), Ok((0, 4)));
        assert_eq!(row.sel(1).const_len(), Some(4));
        let whole = fp(&p, 0, 1);
        assert!(matches!(whole.sel(1), Sel::Whole(8)));
        assert_eq!(static_count(whole.operand, whole.shape), Some(32));
        assert_eq!(static_count(row.operand, row.shape), Some(4));
    }
}
