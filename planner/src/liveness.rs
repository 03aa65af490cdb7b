//! Buffer liveness over the linearised program (docs/planner.md "Liveness"; HIVM PlanMemory's
//! linearisation).
//!
//! The program is flattened in pre-order as HIVM does: every non-control op gets one position,
//! `for`/`while` get a begin position before the body and an end position after it, `if` gets a
//! begin, the then-body, an else marker, the else-body and an end (the marker and the end are
//! emitted even without an `else`). A storage entry is a `share:` group (a buffer and every
//! buffer that shares it); views are transparent (an access through a window touches its root
//! buffer, an access through a `select` touches every buffer it may name). A lifetime is a sorted
//! list of merged, inclusive position intervals.
//!
//! How lifetimes are computed, both modes:
//! 1. A control-flow graph over the positions: an op flows to the next position; a loop's begin
//!    enters the body (and skips to the end when the trip count may be zero); the loop's end is
//!    its latch: it flows back to the body start (the back edge) and out of the loop; an `if`
//!    begin flows to the then-body and to the else marker, which leads to the else-body; both
//!    branches flow to the if's end.
//! 2. A backward live-value analysis per entry whose facts are *slot keys* (which bytes a use
//!    reads: the whole buffer, or one slot of a multi-buffer named by a constant, an `@expr`, or
//!    the implicit per-iteration slot). A write that covers a whole slot kills that key; a
//!    partial write (a window, a slice, an index, an accumulating `mmad`) or a write through a
//!    `select` is a use of the old contents. Crossing a loop's back edge turns the keys that
//!    depend on that loop's iteration (implicit slots of it or of loops inside it, `@expr` keys
//!    of accesses inside it) into an opaque key no write kills: the slot named next iteration is
//!    not the slot written in this one.
//! 3. A forward "some write may have happened" analysis per entry.
//! 4. An entry occupies a position if the op there touches it, or if a value written before is
//!    still needed after it (reached and live-out).
//! 5. Loop rules. `Precise`: an entry live at a loop's body start (a value can flow in across the
//!    back edge, or from before the loop, and is read in the body) is live for the whole loop,
//!    [begin, end]; every other entry keeps the positions of step 4, so a buffer that only carries
//!    values within one iteration is free between iterations wherever it is declared (the
//!    correct form of TVM's shared-memory reuse fix (docs/sources.md, TVM-MSMA), which moved every
//!    touch to the innermost scope and
//!    so also freed loop-carried values). `Scoped` (HIVM): additionally, an entry declared outside
//!    a loop and touched inside it is live for the whole loop, and the lifetime is one interval,
//!    from the first position to the last (HIVM's gen..kill has no holes).
//! 6. Both modes: a `preload: true` buffer is live for its whole innermost enclosing loop.

use sim::expr::Expr;
use sim::program::{Block, ForLoop, OpKind, Operand, Program, Ref};
use sim::{BufferId, OpId, Pipe};

/// Which loop rule to apply (`--liveness`, docs/planner.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LivenessMode {
    /// Loop-carried values are live for the whole loop; the rest stays inside the iteration.
    #[default]
    Precise,
    /// HIVM: a buffer declared outside a loop and used inside it lives for the whole loop.
    Scoped,
}

impl LivenessMode {
    pub fn name(self) -> &'static str {
        match self {
            LivenessMode::Precise => "precise",
            LivenessMode::Scoped => "scoped",
        }
    }
}

/// An inclusive range of positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval {
    pub first: usize,
    pub last: usize,
}

impl Interval {
    pub fn new(first: usize, last: usize) -> Self {
        Interval { first, last }
    }
}

/// Where an op sits in the linear order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpPos {
    /// A non-control op.
    At(usize),
    /// A `for` or `while`: its begin and end markers.
    Loop { begin: usize, end: usize },
    /// An `if`: begin, else marker, end.
    If {
        begin: usize,
        els: usize,
        end: usize,
    },
}

/// A storage entry: buffers that are one piece of storage (a `share:` group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Member buffers, in id order; the first is the share root when there is one.
    pub buffers: Vec<BufferId>,
    /// Sorted, merged, inclusive intervals; empty for an entry nothing touches.
    pub lifetime: Vec<Interval>,
    /// Pipes of the ops that touch the entry, in [`Pipe`] order (`mmad_l1` adds MTE1 and M).
    pub pipes: Vec<Pipe>,
    /// HIVM §1.8 DMA buffer: destination of an MTE2 op, or source of an MTE3 or FIX op.
    pub dma: bool,
    /// The DMA buffer of bishengir-opt 1.2.0's code (`OptMemPlanForDma::build`): destination
    /// of an MTE2 op or source of an MTE3 op; a FIX op's source is not one
    /// ([`crate::PlanOptions::dma_without_fix`]).
    pub dma_mte: bool,
    /// HIVM §1.8 scalar buffer: touched by `sload`/`sstore`.
    pub scalar: bool,
}

/// The result of [`liveness`].
#[derive(Clone, Debug)]
pub struct Liveness {
    pub mode: LivenessMode,
    /// Number of positions.
    pub positions: usize,
    /// Per op ([`OpId`] index).
    pub op_pos: Vec<OpPos>,
    /// Per position: its op (the control op for begin, else and end markers).
    pub pos_op: Vec<OpId>,
    /// Every `for`/`while` with its [begin, end], in pre-order.
    pub loops: Vec<(OpId, Interval)>,
    /// Per buffer ([`BufferId`] index): the index of its entry in `entries`.
    pub entry_of: Vec<usize>,
    pub entries: Vec<Entry>,
}

impl Liveness {
    pub fn entry(&self, b: BufferId) -> &Entry {
        &self.entries[self.entry_of[b.index()]]
    }

    /// The lifetime of a buffer's entry.
    pub fn lifetime(&self, b: BufferId) -> &[Interval] {
        &self.entry(b).lifetime
    }

    /// One lifetime per buffer, indexed by [`BufferId`].
    pub fn buffer_lifetimes(&self) -> Vec<Vec<Interval>> {
        self.entry_of
            .iter()
            .map(|&e| self.entries[e].lifetime.clone())
            .collect()
    }

    /// Whether the entry is live at `pos`.
    pub fn live_at(&self, entry: usize, pos: usize) -> bool {
        self.entries[entry]
            .lifetime
            .iter()
            .any(|i| i.first <= pos && pos <= i.last)
    }

    /// The largest sum of `size(entry)` over entries live at one position, and the first
    /// position where it occurs (`None` when nothing is ever live).
    pub fn peak_live(&self, size: impl Fn(usize) -> u64) -> Option<(usize, u64)> {
        peak_over(
            self.entries
                .iter()
                .enumerate()
                .map(|(e, entry)| (entry.lifetime.as_slice(), size(e))),
        )
    }
}

/// The largest sum of weights live at one position, and the first position where it occurs
/// (`None` when nothing weighs anything): a sweep over interval boundaries, O(n log n).
pub(crate) fn peak_over<'a>(
    items: impl IntoIterator<Item = (&'a [Interval], u64)>,
) -> Option<(usize, u64)> {
    // (position, +weight at first / -weight after last); removals sort before additions
    let mut events: Vec<(usize, bool, u64)> = Vec::new();
    for (lifetime, w) in items {
        for i in lifetime {
            events.push((i.first, true, w));
            events.push((i.last + 1, false, w));
        }
    }
    events.sort_unstable();
    let mut cur = 0u64;
    let mut best: Option<(usize, u64)> = None;
    for (pos, add, w) in events {
        if add {
            cur += w;
            if cur > 0 && best.is_none_or(|(_, b)| cur > b) {
                best = Some((pos, cur));
            }
        } else {
            cur -= w;
        }
    }
    best
}

/// Whether two inclusive interval lists share a position; returns the first shared interval.
pub fn intersection(a: &[Interval], b: &[Interval]) -> Option<Interval> {
    for x in a {
        for y in b {
            let first = x.first.max(y.first);
            let last = x.last.min(y.last);
            if first <= last {
                return Some(Interval { first, last });
            }
        }
    }
    None
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LivenessError {
    #[error("{op} reads buffer {buffer} before its first write")]
    ReadBeforeWrite {
        buffer: BufferId,
        /// The reading op.
        op: OpId,
    },
}

/// Which bytes of an entry an access denotes, for matching full writes against later uses.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    /// A single-slot buffer, or a constant slot.
    Slot(BufferId, i64),
    /// The implicit slot of a multi-buffer accessed directly in the given loop.
    Implicit(BufferId, OpId),
    /// `@expr`, with the innermost loop whose variable it reads.
    Dynamic(BufferId, Expr, OpId),
    /// A value that crossed a back edge: no later write is known to cover it.
    Opaque,
}

impl Key {
    /// The loop whose iteration the key depends on.
    fn scope(&self) -> Option<OpId> {
        match self {
            Key::Implicit(_, l) | Key::Dynamic(_, _, l) => Some(*l),
            _ => None,
        }
    }
}

/// One touch of an entry by the op at a position.
#[derive(Clone, Debug)]
struct Touch {
    entry: usize,
    key: Key,
    /// Reads the old contents (a read, or a partial write).
    uses: bool,
    /// Writes something.
    writes: bool,
    /// Overwrites every byte `key` denotes.
    kills: bool,
}

#[derive(Clone, Copy)]
struct Edge {
    to: usize,
    /// `Some(L)`: the back edge of loop L.
    back: Option<OpId>,
}

struct Builder<'a> {
    program: &'a Program,
    op_pos: Vec<Option<OpPos>>,
    /// Per position, the op it belongs to (the control op for markers).
    pos_op: Vec<OpId>,
    touches: Vec<Vec<Touch>>,
    succ: Vec<Vec<Edge>>,
    entry_of: Vec<usize>,
}

/// Computes positions, storage entries and lifetimes (module docs).
pub fn liveness(program: &Program, mode: LivenessMode) -> Result<Liveness, LivenessError> {
    liveness_with(program, mode, false, &[], false)
}

/// [`liveness`], optionally accepting a read before the first write (`reads_unwritten`);
/// `allocs_after` (sorted `(buffer, loop)` pairs) names the buffers whose alloc comes after a
/// loop in the source, which scoped liveness does not gen at that loop's begin;
/// `fresh_loop_allocs` (scoped only): a buffer declared in a loop is a new value every
/// iteration, as an MLIR alloc in a loop body is, so nothing of it is carried round.
pub fn liveness_with(
    program: &Program,
    mode: LivenessMode,
    reads_unwritten: bool,
    allocs_after: &[(BufferId, OpId)],
    fresh_loop_allocs: bool,
) -> Result<Liveness, LivenessError> {
    let fresh = fresh_loop_allocs && mode == LivenessMode::Scoped;
    let (entry_of, members) = entries(program);
    let mut b = Builder {
        program,
        op_pos: vec![None; program.ops.len()],
        pos_op: Vec::new(),
        touches: Vec::new(),
        succ: Vec::new(),
        entry_of,
    };
    b.number(&program.body);
    // the loader's rule: a loaded program passes it, a program built by hand may not
    if let Some((buffer, op)) =
        sim::written::first_read_before_write(program).filter(|_| !reads_unwritten)
    {
        return Err(LivenessError::ReadBeforeWrite { buffer, op });
    }
    let n = b.pos_op.len();
    b.succ = vec![Vec::new(); n];
    b.touches = vec![Vec::new(); n];
    let end = n; // a virtual exit
    b.link(&program.body, end);
    for p in 0..n {
        if let Some(OpPos::At(_)) = b.op_pos[b.pos_op[p].index()] {
            b.touches[p] = b.op_touches(b.pos_op[p]);
        }
    }

    let op_pos: Vec<OpPos> = b
        .op_pos
        .iter()
        .map(|p| p.expect("every op numbered"))
        .collect();
    let mut loops = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        if let (OpKind::For(_) | OpKind::While { .. }, OpPos::Loop { begin, end }) =
            (&op.kind, op_pos[i])
        {
            loops.push((OpId::new(i), Interval::new(begin, end)));
        }
    }
    // HIVM kills a buffer only at an op whose region holds its alloc (scoped mode): a buffer
    // declared outside an `if` and touched in it lives to the `if`'s end
    let mut ifs = Vec::new();
    if mode == LivenessMode::Scoped {
        for (i, op) in program.ops.iter().enumerate() {
            if let (OpKind::If { .. }, OpPos::If { begin, end, .. }) = (&op.kind, op_pos[i]) {
                ifs.push((OpId::new(i), Interval::new(begin, end)));
            }
        }
    }

    // Per entry, the positions touching it (ascending), the ops touching it and whether a
    // member is `preload`: the per-entry work below then only visits what concerns the entry.
    let mut touch_pos: Vec<Vec<usize>> = vec![Vec::new(); members.len()];
    for (p, ts) in b.touches.iter().enumerate() {
        for t in ts {
            if touch_pos[t.entry].last() != Some(&p) {
                touch_pos[t.entry].push(p);
            }
        }
    }
    let entry_ops = ops_by_entry(program, &b, members.len());
    // The span of the outermost loop around each position (the position itself outside loops).
    // Every CFG path from a write of an entry back to a use of it stays within the outermost
    // loop spans around its touches, so the dataflow of one entry is solved on the window from
    // the first such span to the last: outside it nothing is both reached by a write and
    // live, which is what `occupied` needs.
    let mut outer: Vec<(usize, usize)> = (0..n).map(|p| (p, p)).collect();
    let mut covered_to = None;
    for &(_, span) in &loops {
        if covered_to.is_some_and(|c| span.first <= c) {
            continue; // nested in an outer loop already filled (loops are in pre-order)
        }
        outer[span.first..=span.last].fill((span.first, span.last));
        covered_to = Some(span.last);
    }

    // Loops by begin position, and each loop op's index in `loops`: an entry's loop rules only
    // concern loops beginning in (or just before) its window, and its preload members' loops.
    let mut by_begin: Vec<usize> = (0..loops.len()).collect();
    by_begin.sort_by_key(|&i| loops[i].1.first);
    let mut loop_of_op: Vec<Option<usize>> = vec![None; program.ops.len()];
    for (i, &(l, _)) in loops.iter().enumerate() {
        loop_of_op[l.index()] = Some(i);
    }
    let mut near: Vec<usize> = Vec::new();

    let mut out_entries = Vec::with_capacity(members.len());
    for (e, buffers) in members.into_iter().enumerate() {
        let touched = &touch_pos[e];
        let window = match (touched.first(), touched.last()) {
            (Some(&f), Some(&l)) => Some((outer[f].0, outer[l].1)),
            _ => None,
        };
        let (live_in, reach_in, occupied) = match window {
            Some(w) => {
                let live_in = b.live_in(e, w);
                let reach_in = b.reached_in(e, w);
                let occupied = b.occupied(e, w, &live_in, &reach_in);
                (live_in, reach_in, occupied)
            }
            None => Default::default(),
        };
        let in_window = |p: usize| window.is_some_and(|(lo, hi)| lo <= p && p <= hi);
        let preload_any = buffers.iter().any(|&m| program.buffer(m).preload);
        // loop rules: the spans to fill. Only loops with a body start in the window can carry
        // a value in, and a loop holding a touch lies inside the window; a preload member's
        // loop is added on its own (a span filled twice is the same span).
        near.clear();
        if let Some((wlo, whi)) = window {
            let i = by_begin.partition_point(|&i| loops[i].1.first + 1 < wlo);
            let j = by_begin.partition_point(|&i| loops[i].1.first <= whi);
            near.extend(by_begin[i..j.max(i)].iter().copied());
        }
        if preload_any {
            near.extend(buffers.iter().filter_map(|&m| {
                let buf = program.buffer(m);
                buf.loop_parent
                    .filter(|_| buf.preload)
                    .and_then(|l| loop_of_op[l.index()])
            }));
        }
        let mut fills: Vec<Interval> = Vec::new();
        for &(l, span) in near.iter().map(|&i| &loops[i]) {
            let body_start = span.first + 1;
            // a value (from before the loop or from an earlier iteration) is read in the body
            // (reach_in is false outside the window)
            // fresh loop allocs (MLIR): an alloc inside the loop is a new value every
            // iteration, so nothing of it is carried round (its gen..kill is within the body)
            // (a fresh alloc can only be carried round a loop its declaration is around: one
            // in a sibling loop's body is out of scope there, not live)
            // (nor round a loop inside its own that does not touch it: what the dataflow sees
            // live there came round the outer loop's back edge, which a fresh alloc has not)
            let touched_in = {
                let i = touched.partition_point(|&p| p < span.first);
                touched.get(i).is_some_and(|&p| p <= span.last)
            };
            let carried = body_start < span.last
                && (!fresh
                    || buffers
                        .iter()
                        .any(|&m| match program.buffer(m).declared_in {
                            None => true,
                            Some(d) => d != l && loop_within(program, l, d) && touched_in,
                        }))
                && in_window(body_start)
                && reach_in[body_start - window.map_or(0, |w| w.0)]
                && !live_in[body_start - window.map_or(0, |w| w.0)].is_empty();
            let scoped = mode == LivenessMode::Scoped
                && {
                    // some touched position inside the span
                    let i = touched.partition_point(|&p| p < span.first);
                    touched.get(i).is_some_and(|&p| p <= span.last)
                }
                && buffers
                    .iter()
                    .any(|&m| !declared_within(program, program.buffer(m).declared_in, l));
            let preload = preload_any
                && buffers.iter().any(|&m| {
                    let buf = program.buffer(m);
                    buf.preload && buf.loop_parent == Some(l)
                });
            if carried || scoped || preload {
                fills.push(span);
            }
        }
        // the occupied positions over the window and the filled spans, then their runs
        let lo = fills
            .iter()
            .map(|i| i.first)
            .chain(window.map(|w| w.0))
            .min();
        let mut lifetime = match lo {
            None => Vec::new(),
            Some(lo) => {
                let hi = fills
                    .iter()
                    .map(|i| i.last)
                    .chain(window.map(|w| w.1))
                    .max()
                    .unwrap_or(lo);
                let mut occ = vec![false; hi - lo + 1];
                if let Some((wlo, _)) = window {
                    occ[wlo - lo..wlo - lo + occupied.len()].copy_from_slice(&occupied);
                }
                for span in &fills {
                    occ[span.first - lo..=span.last - lo].fill(true);
                }
                runs(&occ)
                    .into_iter()
                    .map(|i| Interval::new(i.first + lo, i.last + lo))
                    .collect()
            }
        };
        if mode == LivenessMode::Scoped && !lifetime.is_empty() {
            // fresh loop allocs: HIVM's gen..kill runs from the first touch to the last (then
            // the loop and `if` rules), without the dataflow's positions round a back edge
            let touch_lo = touched.first().copied().unwrap_or(usize::MAX);
            let touch_hi = touched.last().copied().unwrap_or(0);
            let fill_lo = fills.iter().map(|i| i.first).min().unwrap_or(usize::MAX);
            let fill_hi = fills.iter().map(|i| i.last).max().unwrap_or(0);
            if fresh && touch_lo != usize::MAX {
                lifetime = vec![Interval::new(touch_lo.min(fill_lo), touch_hi.max(fill_hi))];
            }
            let mut first = lifetime[0].first;
            // HIVM gens, at a loop's begin, every alloc live there (GetLiveBuffersInLoop):
            // one declared outside the loop and touched after it in the loop's block starts
            // at that begin even if the loop never touches it
            for &(l, span) in &loops {
                if span.first >= first {
                    continue;
                }
                // the alloc comes before the loop: in the loop's block or one around it
                let before = buffers.iter().any(|&m| {
                    let around = match program.buffer(m).declared_in {
                        None => true,
                        Some(d) => program
                            .op(l)
                            .parent
                            .is_some_and(|p| loop_within(program, p, d)),
                    };
                    around && allocs_after.binary_search(&(m, l)).is_err()
                });
                let block_end = block_end(program, &op_pos, l, span.first, n);
                let i = touched.partition_point(|&p| p <= span.last);
                if before && touched.get(i).is_some_and(|&p| p <= block_end) {
                    first = span.first;
                }
            }
            let mut last = lifetime.last().unwrap().last;
            for &(l, span) in &ifs {
                let i = touched.partition_point(|&p| p < span.first);
                let inside = touched.get(i).is_some_and(|&p| p <= span.last);
                if inside
                    && span.last > last
                    && buffers
                        .iter()
                        .any(|&m| !declared_within(program, program.buffer(m).declared_in, l))
                {
                    last = span.last;
                }
            }
            lifetime = vec![Interval::new(first, last)];
        }
        let (pipes, (dma, dma_mte), scalar) = classify(program, &entry_ops[e]);
        out_entries.push(Entry {
            buffers,
            lifetime,
            pipes,
            dma,
            dma_mte,
            scalar,
        });
    }

    Ok(Liveness {
        mode,
        positions: n,
        op_pos,
        pos_op: b.pos_op,
        loops,
        entry_of: b.entry_of,
        entries: out_entries,
    })
}

/// Share groups: buffer -> entry index, entry -> members (root first, then id order).
fn entries(program: &Program) -> (Vec<usize>, Vec<Vec<BufferId>>) {
    let n = program.buffers.len();
    let root = |mut b: BufferId| {
        // the loader rejects share cycles; the bound keeps bad input from looping
        for _ in 0..n {
            match program.buffer(b).share {
                Some(next) => b = next,
                None => break,
            }
        }
        b
    };
    let mut members: Vec<Vec<BufferId>> = Vec::new();
    let mut entry_of_root = vec![usize::MAX; n];
    let entry_of = (0..n)
        .map(|i| {
            let r = root(BufferId::new(i));
            if entry_of_root[r.index()] == usize::MAX {
                entry_of_root[r.index()] = members.len();
                members.push(vec![r]);
            }
            let e = entry_of_root[r.index()];
            if r.index() != i {
                members[e].push(BufferId::new(i));
            }
            e
        })
        .collect();
    (entry_of, members)
}

fn declared_within(program: &Program, mut declared_in: Option<OpId>, l: OpId) -> bool {
    while let Some(op) = declared_in {
        if op == l {
            return true;
        }
        declared_in = program.op(op).parent;
    }
    false
}

/// The last position of the block holding op `op` (which begins at `at`): its parent loop's
/// end, its `if`'s else marker (then-block) or end (else-block), or the program's last
/// position (`n - 1`) at the top.
fn block_end(program: &Program, op_pos: &[OpPos], op: OpId, at: usize, n: usize) -> usize {
    match program.op(op).parent.map(|p| op_pos[p.index()]) {
        None => n - 1,
        Some(OpPos::Loop { end, .. }) => end,
        Some(OpPos::If { els, end, .. }) => {
            if at < els {
                els
            } else {
                end
            }
        }
        Some(OpPos::At(p)) => p,
    }
}

/// Whether loop `inner` is `outer` or nested inside it.
fn loop_within(program: &Program, inner: OpId, outer: OpId) -> bool {
    let mut cur = Some(inner);
    while let Some(op) = cur {
        if op == outer {
            return true;
        }
        cur = program.op(op).parent;
    }
    false
}

fn trips_at_least_one(kind: &OpKind) -> bool {
    match kind {
        OpKind::For(ForLoop { from, to, step, .. }) => {
            matches!((from.as_const(), to.as_const(), step.as_const()), (Some(f), Some(t), Some(s)) if s > 0 && t > f)
        }
        OpKind::While { trips, .. } => trips.as_const().is_some_and(|t| t > 0),
        _ => false,
    }
}

impl Builder<'_> {
    /// Assigns positions in pre-order.
    fn number(&mut self, block: &Block) {
        for &id in &block.ops {
            let push = |s: &mut Self| {
                s.pos_op.push(id);
                s.pos_op.len() - 1
            };
            match &self.program.op(id).kind {
                OpKind::For(ForLoop { body, .. }) | OpKind::While { body, .. } => {
                    let begin = push(self);
                    self.number(body);
                    let end = push(self);
                    self.op_pos[id.index()] = Some(OpPos::Loop { begin, end });
                }
                OpKind::If { then, els, .. } => {
                    let begin = push(self);
                    self.number(then);
                    let e = push(self);
                    if let Some(els) = els {
                        self.number(els);
                    }
                    let end = push(self);
                    self.op_pos[id.index()] = Some(OpPos::If { begin, els: e, end });
                }
                _ => {
                    let p = push(self);
                    self.op_pos[id.index()] = Some(OpPos::At(p));
                }
            }
        }
    }

    fn start(&self, id: OpId) -> usize {
        match self.op_pos[id.index()].unwrap() {
            OpPos::At(p) => p,
            OpPos::Loop { begin, .. } | OpPos::If { begin, .. } => begin,
        }
    }

    /// Adds the edges of `block`, whose last op flows to `follow`.
    fn link(&mut self, block: &Block, follow: usize) {
        let starts: Vec<usize> = block.ops.iter().map(|&id| self.start(id)).collect();
        for (i, &id) in block.ops.iter().enumerate() {
            let next = starts.get(i + 1).copied().unwrap_or(follow);
            let kind = &self.program.op(id).kind;
            match (self.op_pos[id.index()].unwrap(), kind) {
                (OpPos::At(p), _) => self.succ[p].push(Edge {
                    to: next,
                    back: None,
                }),
                (
                    OpPos::Loop { begin, end },
                    OpKind::For(ForLoop { body, .. }) | OpKind::While { body, .. },
                ) => {
                    let body_start = body.ops.first().map(|&b| self.start(b)).unwrap_or(end);
                    self.succ[begin].push(Edge {
                        to: body_start,
                        back: None,
                    });
                    if body_start != end && !trips_at_least_one(kind) {
                        self.succ[begin].push(Edge {
                            to: end,
                            back: None,
                        });
                    }
                    self.link(body, end);
                    if body_start != end {
                        self.succ[end].push(Edge {
                            to: body_start,
                            back: Some(id),
                        });
                    }
                    self.succ[end].push(Edge {
                        to: next,
                        back: None,
                    });
                }
                (
                    OpPos::If {
                        begin,
                        els: marker,
                        end,
                    },
                    OpKind::If { then, els, .. },
                ) => {
                    let then_start = then.ops.first().map(|&b| self.start(b)).unwrap_or(end);
                    self.succ[begin].push(Edge {
                        to: then_start,
                        back: None,
                    });
                    self.succ[begin].push(Edge {
                        to: marker,
                        back: None,
                    });
                    self.link(then, end);
                    let empty = Block::default();
                    let els = els.as_ref().unwrap_or(&empty);
                    let else_start = els.ops.first().map(|&b| self.start(b)).unwrap_or(end);
                    self.succ[marker].push(Edge {
                        to: else_start,
                        back: None,
                    });
                    self.link(els, end);
                    self.succ[end].push(Edge {
                        to: next,
                        back: None,
                    });
                }
                _ => unreachable!("positions follow the op kind"),
            }
        }
    }

    fn key(&self, op: OpId, operand: &Operand, b: BufferId) -> Key {
        let buf = self.program.buffer(b);
        if buf.multi <= 1 {
            return Key::Slot(b, 0);
        }
        let lp = self.program.op(op).loop_parent;
        match (&operand.slot, lp) {
            (Some(e), _) => {
                // `@expr` names the same slot throughout one iteration of the innermost loop
                // whose variable it reads (loops are numbered in pre-order, so the enclosing
                // loop with the largest id is the innermost; `block` never changes in a core)
                let mut vars = Vec::new();
                e.vars(&mut vars);
                let scope = vars
                    .iter()
                    .filter_map(|v| self.program.vars[v.index()].loop_op)
                    .max();
                match (e.as_const(), scope) {
                    (Some(k), _) => Key::Slot(b, k),
                    (None, Some(l)) => Key::Dynamic(b, e.clone(), l),
                    (None, None) => Key::Opaque,
                }
            }
            (None, Some(l)) => Key::Implicit(b, l),
            // outside any loop the implicit slot is 0
            (None, None) => Key::Slot(b, 0),
        }
    }

    fn op_touches(&self, id: OpId) -> Vec<Touch> {
        let p = self.program;
        let kind = &p.op(id).kind;
        let mut out = Vec::new();
        for r in kind.reads() {
            for b in p.root_buffers(r.base) {
                out.push(Touch {
                    entry: self.entry_of[b.index()],
                    key: self.key(id, r, b),
                    uses: true,
                    writes: false,
                    kills: false,
                });
            }
        }
        for w in kind.writes() {
            let roots = p.root_buffers(w.base);
            let single = roots.len() == 1;
            for b in roots {
                // a write covering a whole slot replaces the value; anything narrower, or a
                // write through a `select` (which buffer is unknown), keeps old bytes alive
                let full = single && w.elements == Some(p.buffer(b).elements);
                out.push(Touch {
                    entry: self.entry_of[b.index()],
                    key: self.key(id, w, b),
                    uses: !full,
                    writes: true,
                    kills: full,
                });
            }
        }
        out
    }

    /// Backward key liveness for one entry over the window `(lo, hi)` (inclusive); returns
    /// live-in per position of the window (empty beyond it: no use is reachable from there).
    fn live_in(&self, e: usize, (lo, hi): (usize, usize)) -> Vec<Vec<Key>> {
        let mut live_in: Vec<Vec<Key>> = vec![Vec::new(); hi - lo + 1];
        let mut changed = true;
        while changed {
            changed = false;
            for p in (lo..=hi).rev() {
                let mut set = self.live_out_of(p, lo, &live_in);
                let touches = self.touches[p].iter().filter(|t| t.entry == e);
                for t in touches.clone().filter(|t| t.kills) {
                    set.retain(|k| *k != t.key);
                }
                for t in touches.filter(|t| t.uses) {
                    if !set.contains(&t.key) {
                        set.push(t.key.clone());
                    }
                }
                let cur = &live_in[p - lo];
                if set.len() != cur.len() || set.iter().any(|k| !cur.contains(k)) {
                    live_in[p - lo] = set;
                    changed = true;
                }
            }
        }
        live_in
    }

    /// `live_in` holds the window starting at `lo`; positions outside it count as empty.
    fn live_out_of(&self, p: usize, lo: usize, live_in: &[Vec<Key>]) -> Vec<Key> {
        let mut set: Vec<Key> = Vec::new();
        for edge in &self.succ[p] {
            let Some(next) = edge.to.checked_sub(lo).and_then(|i| live_in.get(i)) else {
                continue; // the exit, or beyond the window
            };
            for k in next {
                // the next iteration names another slot: nothing written here covers it
                let k = match (edge.back, k.scope()) {
                    (Some(l), Some(s)) if loop_within(self.program, s, l) => Key::Opaque,
                    _ => k.clone(),
                };
                if !set.contains(&k) {
                    set.push(k);
                }
            }
        }
        set
    }

    /// Forward: whether some write of the entry may have happened before each position of the
    /// window (no path from a write leaves it and comes back).
    fn reached_in(&self, e: usize, (lo, hi): (usize, usize)) -> Vec<bool> {
        let mut reach_in = vec![false; hi - lo + 1];
        let mut changed = true;
        while changed {
            changed = false;
            for p in lo..=hi {
                let out =
                    reach_in[p - lo] || self.touches[p].iter().any(|t| t.entry == e && t.writes);
                if out {
                    for edge in &self.succ[p] {
                        if (lo..=hi).contains(&edge.to) && !reach_in[edge.to - lo] {
                            reach_in[edge.to - lo] = true;
                            changed = true;
                        }
                    }
                }
            }
        }
        reach_in
    }

    /// Step 4 of the module docs, over the window.
    fn occupied(
        &self,
        e: usize,
        (lo, hi): (usize, usize),
        live_in: &[Vec<Key>],
        reach_in: &[bool],
    ) -> Vec<bool> {
        (lo..=hi)
            .map(|p| {
                let touched = self.touches[p].iter().any(|t| t.entry == e);
                let reach_out =
                    reach_in[p - lo] || self.touches[p].iter().any(|t| t.entry == e && t.writes);
                touched || (reach_out && !self.live_out_of(p, lo, live_in).is_empty())
            })
            .collect()
    }
}

fn runs(occupied: &[bool]) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for (p, &o) in occupied.iter().enumerate() {
        if !o {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.last + 1 == p => last.last = p,
            _ => out.push(Interval::new(p, p)),
        }
    }
    out
}

/// Per entry, every op that reads or writes it, with (read, written), in op order.
fn ops_by_entry(program: &Program, b: &Builder, entries: usize) -> Vec<Vec<(OpId, bool, bool)>> {
    let mut out: Vec<Vec<(OpId, bool, bool)>> = vec![Vec::new(); entries];
    let mut seen: Vec<usize> = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        let entries_of = |os: Vec<&Operand>| -> Vec<usize> {
            let mut v: Vec<usize> = os
                .iter()
                .filter(|o| !matches!(o.base, Ref::Tensor(_)))
                .flat_map(|o| program.root_buffers(o.base))
                .map(|x| b.entry_of[x.index()])
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let reads = entries_of(op.kind.reads());
        let writes = entries_of(op.kind.writes());
        seen.clear();
        seen.extend(reads.iter().chain(&writes).copied());
        seen.sort_unstable();
        seen.dedup();
        for &e in &seen {
            let read = reads.binary_search(&e).is_ok();
            let written = writes.binary_search(&e).is_ok();
            out[e].push((OpId::new(i), read, written));
        }
    }
    out
}

/// Pipes touching an entry, HIVM's DMA class (§1.8, and as bishengir-opt 1.2.0's code has it:
/// [`Entry::dma_mte`]) and scalar class, from the entry's ops.
fn classify(program: &Program, ops: &[(OpId, bool, bool)]) -> (Vec<Pipe>, (bool, bool), bool) {
    let mut pipes = Vec::new();
    let (mut dma, mut dma_mte, mut scalar) = (false, false, false);
    for &(id, read, written) in ops {
        let op = program.op(id);
        pipes.extend(op.pipe);
        if matches!(op.kind, OpKind::MmadL1(_)) {
            pipes.extend([Pipe::Mte1, Pipe::M]);
        }
        match op.pipe {
            Some(Pipe::Mte2) if written => (dma, dma_mte) = (true, true),
            Some(Pipe::Mte3) if read => (dma, dma_mte) = (true, true),
            Some(Pipe::Fix) if read => dma = true,
            _ => {}
        }
        if matches!(op.kind, OpKind::Sload { .. } | OpKind::Sstore { .. }) {
            scalar = true;
        }
    }
    pipes.sort();
    pipes.dedup();
    (pipes, (dma, dma_mte), scalar)
}

#[cfg(test)]
mod tests {
    //! Positions in the comments are derived by hand from the module docs' linearisation.
    use super::*;
    use crate::test_support::vector_program;

    fn load(body: &str) -> Program {
        vector_program(&format!(
            "params: {{ n: 256 }}\n\
             gm:\n  x: {{ shape: [4, n], dtype: f16 }}\n  y: {{ shape: [4, n], dtype: f16 }}\n{body}"
        ))
    }

    fn buf(p: &Program, name: &str) -> BufferId {
        BufferId::new(p.buffers.iter().position(|b| b.name == name).unwrap())
    }

    fn life(l: &Liveness, p: &Program, name: &str) -> Vec<(usize, usize)> {
        l.lifetime(buf(p, name))
            .iter()
            .map(|i| (i.first, i.last))
            .collect()
    }

    fn both(p: &Program) -> (Liveness, Liveness) {
        (
            liveness(p, LivenessMode::Precise).unwrap(),
            liveness(p, LivenessMode::Scoped).unwrap(),
        )
    }

    #[test]
    fn straight_line_chain() {
        // 0 load a | 1 vexp a->b | 2 vadd a,b->c | 3 store c
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - vexp: { ins: [a], out: b }
  - vadd: { ins: [a, b], out: c }
  - store: { src: c, dst: "y[0]" }
"#,
        );
        let (l, s) = both(&p);
        assert_eq!(l.positions, 4);
        for l in [&l, &s] {
            assert_eq!(life(l, &p, "a"), [(0, 2)]); // written at 0, last read at 2
            assert_eq!(life(l, &p, "b"), [(1, 2)]);
            assert_eq!(life(l, &p, "c"), [(2, 3)]);
        }
        // classification: a is an MTE2 destination, c an MTE3 source, b vector only
        let e = |n: &str| l.entry(buf(&p, n));
        assert!(e("a").dma && e("c").dma && !e("b").dma);
        assert_eq!(e("a").pipes, [Pipe::V, Pipe::Mte2]);
        assert_eq!(e("b").pipes, [Pipe::V]);
        assert!(!e("a").scalar);
        assert_eq!(l.peak_live(|_| 1), Some((2, 3)));
    }

    #[test]
    fn scoped_gens_at_a_loop_begin_what_is_used_after_it() {
        // 0 for-begin | 1 load b | 2 for-end | 3 if-begin | 4 for-begin | 5 load d | 6 for-end
        // | 7 load c | 8 store c | 9 else | 10 load a | 11 end | 12 store a
        // HIVM (GetLiveBuffersInLoop) gens at a loop's begin every alloc live there, used in
        // it or after it in its block. bishengir-opt on `a` declared at the top, then
        // `for { load b }`, then `load a`: a = 0, b = 512 (a's life starts at the loop).
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
body:
  - for: { var: t, to: 2 }
    buffers:
      b: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: "x[t]", dst: b }
  - if: "1"
    then:
      - for: { var: u, to: 2 }
        buffers:
          d: { scope: ub, shape: [n], dtype: f16 }
        body:
          - load: { src: "x[u]", dst: d }
      - load: { src: "x[0]", dst: c }
      - store: { src: c, dst: "y[0]" }
    else:
      - load: { src: "x[0]", dst: a }
  - store: { src: a, dst: "y[0]" }
"#,
        );
        let (l, s) = both(&p);
        assert_eq!(life(&l, &p, "b"), [(1, 1)]);
        assert_eq!(life(&s, &p, "b"), [(1, 1)]);
        // precise: `a` from its write in the else-block to its store
        assert_eq!(life(&l, &p, "a"), [(10, 12)]);
        // scoped: from the first loop's begin (live there: used after it at the top)
        assert_eq!(life(&s, &p, "a"), [(0, 12)]);
        // `c` too is used after the first loop in the top block (inside the if); scoped, it
        // lives to the if's end (HIVM kills it there)
        assert_eq!(life(&l, &p, "c"), [(7, 8)]);
        assert_eq!(life(&s, &p, "c"), [(0, 11)]);
        // `d` is declared in the inner loop: its alloc is not live at the first loop's begin
        assert_eq!(life(&s, &p, "d"), [(5, 5)]);
    }

    #[test]
    fn fresh_loop_allocs_carry_nothing_round_the_back_edge() {
        // 0 for-begin | 1 load a[0:64] | 2 vexp a -> b | 3 store b | 4 for-end
        // precise: the vexp reads bytes of `a` this iteration did not write, so an earlier
        // iteration's value is carried round: `a` spans the loop. HIVM's alloc in the body is
        // a new value every iteration: `a` from its write (1) to its last use (2), dying
        // where `b` is born, so `b` can take its bytes (bishengir-opt 1.2.0: both at 0).
        let p = load(
            r#"
body:
  - for: { var: t, to: 2 }
    buffers:
      a: { scope: ub, shape: [n], dtype: f16 }
      b: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: "x[t, 0:64]", dst: "a[0:64]" }
      - vexp: { ins: [a], out: b }
      - store: { src: b, dst: "y[t]" }
"#,
        );
        let (l, s) = both(&p);
        assert_eq!(life(&l, &p, "a"), [(0, 4)]);
        // scoped alone keeps what the dataflow carries (a YAML program may mean it)
        assert_eq!(life(&s, &p, "a"), [(0, 4)]);
        let f = liveness_with(&p, LivenessMode::Scoped, false, &[], true).unwrap();
        assert_eq!(life(&f, &p, "a"), [(1, 2)]);
        assert_eq!(life(&f, &p, "b"), [(2, 3)]);
    }

    #[test]
    fn produced_and_consumed_in_one_iteration() {
        // 0 for-begin | 1 load a | 2 store a | 3 load b | 4 store b | 5 for-end
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
body:
  - for: { var: t, to: 4 }
    buffers:
      b: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: "x[t]", dst: a }
      - store: { src: a, dst: "y[t]" }
      - load: { src: "x[t]", dst: b }
      - store: { src: b, dst: "y[t]" }
"#,
        );
        let (l, s) = both(&p);
        assert_eq!(l.op_pos[0], OpPos::Loop { begin: 0, end: 5 });
        assert_eq!(l.loops, [(OpId::new(0), Interval::new(0, 5))]);
        assert_eq!(l.op_pos[1], OpPos::At(1));
        // precise: each value is fully written before it is read in the iteration, so nothing
        // flows around the back edge: both stay inside the iteration, wherever declared
        assert_eq!(life(&l, &p, "a"), [(1, 2)]);
        assert_eq!(life(&l, &p, "b"), [(3, 4)]);
        // scoped: a is declared outside the loop and used inside: the whole loop [0, 5]
        assert_eq!(life(&s, &p, "a"), [(0, 5)]);
        assert_eq!(life(&s, &p, "b"), [(3, 4)]);
    }

    #[test]
    fn scoped_a_buffer_declared_outside_an_if_lives_to_its_end() {
        // 0 load a | 1 if-begin | 2 vexp a->b | 3 store b | 4 else marker | 5 store a |
        // 6 if-end | 7 load c | 8 store c
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - if: "n > 8"
    then:
      buffers:
        b: { scope: ub, shape: [n], dtype: f16 }
      body:
        - vexp: { ins: [a], out: b }
        - store: { src: b, dst: "y[0]" }
    else:
      - store: { src: a, dst: "y[1]" }
  - load: { src: "x[1]", dst: c }
  - store: { src: c, dst: "y[1]" }
"#,
        );
        let (l, s) = both(&p);
        // precise: a dies at its last read on each path: at 2 on the then-path (not live at
        // 3), at 5 on the else-path (live from the else marker at 4)
        assert_eq!(life(&l, &p, "a"), [(0, 2), (4, 5)]);
        // scoped (HIVM kills a buffer only in the region of its alloc): a, declared outside
        // the if and read in it, lives to the if's end at 6; b, declared in the branch, dies
        // at its last read there
        assert_eq!(life(&s, &p, "a"), [(0, 6)]);
        assert_eq!(life(&s, &p, "b"), [(2, 3)]);
        assert_eq!(life(&s, &p, "c"), [(7, 8)]);
    }

    #[test]
    fn loop_carried_accumulator() {
        // 0 vdup acc | 1 for-begin | 2 load xt | 3 vadd acc,xt->acc | 4 for-end | 5 store acc
        let p = load(
            r#"
buffers:
  acc: { scope: ub, shape: [n], dtype: f16 }
  xt: { scope: ub, shape: [n], dtype: f16 }
body:
  - vdup: { scalar: 0, out: acc }
  - for: { var: t, to: 4 }
    body:
      - load: { src: "x[t]", dst: xt }
      - vadd: { ins: [acc, xt], out: acc }
  - store: { src: acc, dst: "y[0]" }
"#,
        );
        let (l, s) = both(&p);
        // acc is read at 3 before its write in the iteration: live at the body start, so the
        // whole loop [1, 4]; with its write at 0 and last read at 5: [0, 5] in both modes
        assert_eq!(life(&l, &p, "acc"), [(0, 5)]);
        assert_eq!(life(&s, &p, "acc"), [(0, 5)]);
        // xt: within the iteration (precise); declared outside, so the whole loop (scoped)
        assert_eq!(life(&l, &p, "xt"), [(2, 3)]);
        assert_eq!(life(&s, &p, "xt"), [(1, 4)]);
    }

    #[test]
    fn partial_write_is_a_use_and_full_write_leaves_a_hole() {
        // 0 load a | 1 load b | 2 for-begin | 3 load a[0:128] | 4 load b | 5 vadd a,b->b
        // | 6 store b | 7 for-end
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1]", dst: b }
  - for: { var: t, to: 2 }
    body:
      - load: { src: "x[t, 0:128]", dst: "a[0:128]" }
      - load: { src: "x[t]", dst: b }
      - vadd: { ins: [a, b], out: b }
      - store: { src: b, dst: "y[t]" }
"#,
        );
        let (l, s) = both(&p);
        // a: the windowed write at 3 keeps a[128:] from before: a use at the body start, so
        // the whole loop [2, 7], joined to its write at 0: [0, 7]
        assert_eq!(life(&l, &p, "a"), [(0, 7)]);
        // b: written at 1 but fully rewritten at 4 before any read: the value of 1 is dead at
        // once ([1, 1]); in the loop it lives [4, 6] within the iteration
        assert_eq!(life(&l, &p, "b"), [(1, 1), (4, 6)]);
        // scoped: b declared outside and used in the loop: [2, 7], hull with 1: [1, 7]
        assert_eq!(life(&s, &p, "a"), [(0, 7)]);
        assert_eq!(life(&s, &p, "b"), [(1, 7)]);
    }

    #[test]
    fn if_else_both_branches() {
        // 0 load a | 1 if-begin | 2 vexp a->b | 3 vadd a,b->d | 4 else | 5 vabs a->c
        // | 6 vadd a,c->d | 7 if-end | 8 store d
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
  d: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - if: "n > 2"
    then:
      - vexp: { ins: [a], out: b }
      - vadd: { ins: [a, b], out: d }
    else:
      - vabs: { ins: [a], out: c }
      - vadd: { ins: [a, c], out: d }
  - store: { src: d, dst: "y[0]" }
"#,
        );
        let (l, s) = both(&p);
        assert_eq!(
            l.op_pos[1],
            OpPos::If {
                begin: 1,
                els: 4,
                end: 7
            }
        );
        // a: read in either branch; its last reads are 3 (then) and 6 (else): [0, 6]
        assert_eq!(life(&l, &p, "a"), [(0, 6)]);
        assert_eq!(life(&l, &p, "b"), [(2, 3)]);
        assert_eq!(life(&l, &p, "c"), [(5, 6)]);
        // d: written at 3 (then) or 6 (else), read at 8. On the else path nothing has written
        // d at 4 and 5, and the then path does not pass there: [3, 3] and [6, 8]
        assert_eq!(life(&l, &p, "d"), [(3, 3), (6, 8)]);
        // scoped: one interval
        assert_eq!(life(&s, &p, "d"), [(3, 8)]);
    }

    #[test]
    fn preload_lives_for_its_loop() {
        // 0 for-begin | 1 load q | 2 load p | 3 vadd p,q->q | 4 store q | 5 for-end
        let p = load(
            r#"
body:
  - for: { var: t, to: 4 }
    buffers:
      p: { scope: ub, shape: [n], dtype: f16, preload: true }
      q: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: "x[t]", dst: q }
      - load: { src: "x[0]", dst: p }
      - vadd: { ins: [p, q], out: q }
      - store: { src: q, dst: "y[t]" }
"#,
        );
        let (l, s) = both(&p);
        for l in [&l, &s] {
            assert_eq!(life(l, &p, "p"), [(0, 5)]); // the whole enclosing loop
            assert_eq!(life(l, &p, "q"), [(1, 4)]);
        }
    }

    #[test]
    fn multi_buffer_slots() {
        // 0 for-begin | 1 load xb | 2 vexp xb->zb | 3 store zb | 4 for-end
        let p = load(
            r#"
body:
  - for: { var: t, to: 4 }
    buffers:
      xb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      zb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
    body:
      - load: { src: "x[t]", dst: xb }
      - vexp: { ins: [xb], out: zb }
      - store: { src: zb, dst: "y[t]" }
"#,
        );
        let (l, _) = both(&p);
        // the implicit slot is the same within one iteration: no value crosses the back edge
        assert_eq!(life(&l, &p, "xb"), [(1, 2)]);
        assert_eq!(life(&l, &p, "zb"), [(2, 3)]);

        // software pipelining: slot (t+1)%2 is loaded for the next iteration while slot t%2
        // (loaded by the previous one) is read.
        // 0 load pb@0 | 1 for-begin | 2 load pb@((t+1)%2) | 3 vexp pb@(t%2)->ob
        // | 4 load qb@(t%2) | 5 vadd ob,qb@(t%2)->ob | 6 store ob | 7 for-end
        let p = load(
            r#"
buffers:
  pb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
  qb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
  ob: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: "pb@0" }
  - for: { var: t, to: 3 }
    body:
      - load: { src: "x[t + 1]", dst: "pb@((t + 1) % 2)" }
      - vexp: { ins: ["pb@(t % 2)"], out: ob }
      - load: { src: "x[t]", dst: "qb@(t % 2)" }
      - vadd: { ins: [ob, "qb@(t % 2)"], out: ob }
      - store: { src: ob, dst: "y[t]" }
"#,
        );
        let (l, _) = both(&p);
        // pb@(t%2) at 3 is not the slot written at 2: a use at the body start, so the whole
        // loop [1, 7], joined to the write at 0: [0, 7]
        assert_eq!(life(&l, &p, "pb"), [(0, 7)]);
        // qb: written and read through the same `@(t % 2)` in one iteration: [4, 5]
        assert_eq!(life(&l, &p, "qb"), [(4, 5)]);
        assert_eq!(life(&l, &p, "ob"), [(3, 6)]);
    }

    #[test]
    fn views_select_and_share_group() {
        // 0 load a | 1 load w (window of a) | 2 load b | 3 load c | 4 vexp pick->s | 5 store s
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
  s: { scope: ub, shape: [n], dtype: f16, share: a }
views:
  w: { of: a, offset: 128, shape: [128] }
  pick: { select: [b, c] }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1, 0:128]", dst: w }
  - load: { src: "x[2]", dst: b }
  - load: { src: "x[3]", dst: c }
  - vexp: { ins: [pick], out: s }
  - store: { src: s, dst: "y[0]" }
"#,
        );
        let (l, _) = both(&p);
        // a and s are one entry; the window write at 1 touches a
        assert_eq!(
            l.entry_of[buf(&p, "a").index()],
            l.entry_of[buf(&p, "s").index()]
        );
        assert_eq!(l.entry(buf(&p, "a")).buffers, [buf(&p, "a"), buf(&p, "s")]);
        assert_eq!(l.entries.len(), 3);
        // entry {a, s}: a is written at 0 and 1 (the window) and never read, so those bytes
        // are dead after 1; s is written at 4 and read at 5. One lifetime for both names:
        assert_eq!(life(&l, &p, "s"), [(0, 1), (4, 5)]);
        assert_eq!(life(&l, &p, "a"), [(0, 1), (4, 5)]);
        // the select read at 4 keeps both b and c alive
        assert_eq!(life(&l, &p, "b"), [(2, 4)]);
        assert_eq!(life(&l, &p, "c"), [(3, 4)]);
    }

    #[test]
    fn select_write_replaces_nothing() {
        // 0 load a | 1 load b | 2 load c | 3 while-begin | 4 vexp a->pick | 5 store c
        // | 6 while-end | 7 store b
        let p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
views:
  pick: { select: [b, c] }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1]", dst: b }
  - load: { src: "x[2]", dst: c }
  - while: { trips: 3 }
    body:
      - vexp: { ins: [a], out: pick }
      - store: { src: c, dst: "y[0]" }
  - store: { src: b, dst: "y[1]" }
"#,
        );
        let (l, _) = both(&p);
        assert_eq!(l.op_pos[3], OpPos::Loop { begin: 3, end: 6 });
        // a: read at 4 every iteration, written before: the whole loop [3, 6], from 0
        assert_eq!(life(&l, &p, "a"), [(0, 6)]);
        // the write through pick may leave either buffer untouched: both keep their old
        // values, so both are live at the body start: whole loop; b is read again at 7
        assert_eq!(life(&l, &p, "b"), [(1, 7)]);
        assert_eq!(life(&l, &p, "c"), [(2, 6)]);
    }

    #[test]
    fn implicit_slot_of_an_inner_loop_is_another_slot() {
        // 0 t-begin | 1 load wb | 2 load vb | 3 j-begin | 4 store wb | 5 store vb | 6 j-end
        // | 7 t-end
        let p = load(
            r#"
body:
  - for: { var: t, to: 2 }
    buffers:
      wb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      vb: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: "x[t]", dst: wb }
      - load: { src: "x[t]", dst: vb }
      - for: { var: j, to: 2 }
        body:
          - store: { src: wb, dst: "y[j]" }
          - store: { src: vb, dst: "y[j]" }
"#,
        );
        let (l, s) = both(&p);
        // wb is written in slot (t iterations) % 2 but read in slot (j iterations) % 2: the
        // read may see a value of an earlier t iteration, so wb spans the whole t loop
        assert_eq!(life(&l, &p, "wb"), [(0, 7)]);
        // vb has one slot: written at 2 before the j loop, read in every j iteration
        // (whole j loop [3, 6]); nothing crosses the t back edge: [2, 6]
        assert_eq!(life(&l, &p, "vb"), [(2, 6)]);
        // scoped: both are declared in the t body, outside the j loop: j loop added
        assert_eq!(life(&s, &p, "wb"), [(0, 7)]);
        assert_eq!(life(&s, &p, "vb"), [(2, 6)]);
        // fresh loop allocs (`opt`): HIVM's gen..kill knows no slots and an alloc in the t
        // body is a new value every t iteration: wb from its write (1) to the j loop's end (6)
        let f = liveness_with(&p, LivenessMode::Scoped, false, &[], true).unwrap();
        assert_eq!(life(&f, &p, "wb"), [(1, 6)]);
        assert_eq!(life(&f, &p, "vb"), [(2, 6)]);
    }

    #[test]
    fn read_before_write_is_an_error() {
        let mut p = load(
            r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - store: { src: a, dst: "y[0]" }
"#,
        );
        // the loader refuses this program, so remove the write after loading
        p.ops[0].kind = OpKind::Scalar {
            cycles: Expr::Const(1),
        };
        let e = liveness(&p, LivenessMode::Precise).unwrap_err();
        assert_eq!(
            e,
            LivenessError::ReadBeforeWrite {
                buffer: BufferId::new(0),
                op: OpId::new(1)
            }
        );
        assert!(e.to_string().contains("before its first write"));
    }
}
