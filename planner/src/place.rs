//! Storage entries and address assignment with reuse levels 2/1/0 (DESIGN §5 "Placement";
//! `reference/hivm-planmemory.md` §1.8, §1.9).
//!
//! Per scope of the core:
//! 1. **Storage entries.** One per liveness entry (share groups are already one there); then
//!    every inplace pair `(gen, kill)` merges the gen's entry into the kill's (lifetimes unioned,
//!    touching intervals merged, `multi` = the larger); a multi-buffer entry has `multi` slots of
//!    the same size and lifetime. `at:` entries are fixed: they occupy their bytes for their
//!    lifetime and never move. Sizes are rounded up to the scope alignment.
//! 2. **Sequential** (§1.9 A) when the running sum (first-write order, slot 0 of every entry,
//!    then the extra slots, stepping over fixed ranges) fits: [`crate::plan_sequential`]'s code.
//! 3. Otherwise **reuse**, in HIVM planning order (UB: unique, DMA, other, scalar groups, each
//!    entry's slots back to back; other scopes: first-write order, extra slots at the end):
//!    - pass C: every slot at level 2 on an unbounded address line; kept if it fits;
//!    - pass D: bounded; each slot tries levels `max_level` .. 0 and takes the lowest address
//!      that passes the lifetime test (Stage 0) and the level's rule; when every level fails,
//!      HIVM's rollback (§1.9 "Rollback order") lowers the level of an earlier slot and forbids
//!      its old address; when nothing is left to roll back, the scope overflows.
//!
//! Conflict tests are made against the placed slots themselves (each with its own lifetime),
//! not against HIVM's outline bounds, whose lifetimes are unions over everything ever placed on
//! the bound's whole range. This is HIVM's split-outline mode from the start, so HIVM's
//! split-outline restart has nothing left to change and is not repeated.
//!
//! Levels (seed 004; HIVM stage in brackets):
//! - level 2 [stage 3]: no address range may hold a slot of another pipeline class: an entry
//!   touched by DMA or by the scalar unit never shares bytes with another class (two scalar
//!   entries may), vector-only entries share with vector-only entries;
//! - level 1 [stage 1]: only a reuse of slot 0 of a multi-buffer (or of an upgraded single
//!   buffer) in the same innermost loop, taking all its slots: a single buffer is upgraded to a
//!   multi-buffer over them ([`Placement::upgraded`]), a multi-buffer takes the first N of them;
//! - level 0 [stage 0]: lifetimes only.
//!
//! Stage 0, at every level: two entries whose inclusive lifetimes share a position conflict,
//! except a pair listed as touch-allowed sharing exactly one position; a `unique` entry
//! conflicts with everything.

use crate::liveness::{Interval, Liveness, LivenessMode};
use crate::plan::*;
use crate::sequential::{first_write_order, running_sum, unplaced_buffers};
use sim::program::Program;
use sim::{BufferId, Config, OpId, Space};

/// Knobs of [`plan`] and [`crate::plan_program`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// The highest reuse level tried (0..=2; larger values count as 2).
    pub max_level: u8,
    /// Scope capacities in bytes that replace the config's.
    pub capacities: Vec<(Space, u64)>,
    /// The loop rule of liveness ([`crate::plan_program`] only; [`place`] takes a computed
    /// [`Liveness`]).
    pub liveness: LivenessMode,
    /// When inplace pairs are applied.
    pub inplace: InplacePolicy,
    /// What happens when first fit cannot place a scope.
    pub placement: PlacementMode,
    /// The exact search's budget per scope (`PlacementMode::Exact`).
    pub exact_time_limit: std::time::Duration,
}

/// `--placement`: first fit alone, or first fit then the exact search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlacementMode {
    /// HIVM's first fit with levels 2/1/0 and rollback; a scope it cannot place overflows.
    #[default]
    FirstFit,
    /// When first fit fails, the placement core's complete search places the scope by
    /// lifetimes alone ([`crate::pack::exact`]); only a scope no placement fits overflows
    /// (or one the search cannot settle within its time limit).
    Exact,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_level: 2,
            capacities: Vec::new(),
            liveness: LivenessMode::Precise,
            inplace: InplacePolicy::Always,
            placement: PlacementMode::FirstFit,
            exact_time_limit: std::time::Duration::from_secs(10),
        }
    }
}

/// When an op's output may take its dying input's address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InplacePolicy {
    /// Always, as HIVM does: the sync pass orders whatever shares bytes (`sync: auto`).
    #[default]
    Always,
    /// Only in a scope that does not fit without it. A `sync: manual` program's own flags were
    /// written for disjoint buffers, so bytes are shared only when there is no other way.
    WhenNeeded,
}

/// A plan with how it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub plan: Plan,
    /// Single buffers upgraded to multi-buffers at level 1, with every slot offset (also in
    /// the plan's `offsets`).
    pub upgraded: Vec<(BufferId, Vec<u64>)>,
    /// The inplace pairs `(gen, kill)` applied, in the order given.
    pub inplace: Vec<(BufferId, BufferId)>,
}

/// A storage entry: the unit that gets an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageEntry {
    /// Every member buffer: the inplace gens first (HIVM's `inplaceBuffers` order), then the
    /// liveness entry's buffers.
    pub buffers: Vec<BufferId>,
    /// Members that took over an input's address (placed by inplace).
    pub inplace: Vec<BufferId>,
    /// Sorted, merged, inclusive intervals.
    pub lifetime: Vec<Interval>,
    /// Bytes of one slot, aligned.
    pub size: u64,
    /// Slots.
    pub multi: u32,
    /// (dma, scalar) of every liveness entry merged in, in member order.
    pub classes: Vec<(bool, bool)>,
    pub unique: bool,
    /// The innermost loop enclosing the declaration of the entry's first kill-side buffer.
    pub loop_parent: Option<OpId>,
    /// `at:` offsets: the entry is not planned.
    pub fixed: Option<Vec<u64>>,
}

impl StorageEntry {
    /// The name used in diagnostics: the first member that is not an inplace gen.
    fn name<'p>(&self, program: &'p Program) -> &'p str {
        let b = self
            .buffers
            .iter()
            .find(|b| !self.inplace.contains(b))
            .unwrap_or(&self.buffers[0]);
        &program.buffer(*b).name
    }
}

/// The storage entries of one scope, in first-write ("vector") order. `inplace` lists
/// `(gen, kill)` pairs; pairs across scopes, with a fixed side, or already merged are ignored.
pub fn storage_entries(
    program: &Program,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    space: Space,
    align: u64,
) -> Vec<StorageEntry> {
    let order = first_write_order(program);
    entries_in_order(program, live, inplace, space, align, &order)
}

/// [`storage_entries`] with the program's first-write order computed once by the caller.
fn entries_in_order(
    program: &Program,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    space: Space,
    align: u64,
    first_writes: &[BufferId],
) -> Vec<StorageEntry> {
    if !program.buffers.iter().any(|b| b.scope == space) {
        return Vec::new(); // nothing to plan: skip the per-entry work
    }
    let align = align.max(1);
    let aligned = |bytes: u64| bytes.div_ceil(align) * align;
    let n = live.entries.len();
    let mut st: Vec<Option<StorageEntry>> = (0..n)
        .map(|e| {
            let le = &live.entries[e];
            let members: Vec<BufferId> = le
                .buffers
                .iter()
                .copied()
                .filter(|&b| program.buffer(b).scope == space)
                .collect();
            let first = *members.first()?;
            let fixed = members.iter().find_map(|&b| program.buffer(b).at.clone());
            Some(StorageEntry {
                size: members
                    .iter()
                    .map(|&b| aligned(program.buffer(b).bytes))
                    .max()
                    .unwrap_or(0),
                multi: members
                    .iter()
                    .map(|&b| program.buffer(b).multi.max(1))
                    .max()
                    .unwrap_or(1),
                unique: members.iter().any(|&b| program.buffer(b).unique),
                loop_parent: program.buffer(first).loop_parent,
                classes: vec![(le.dma, le.scalar)],
                lifetime: le.lifetime.clone(),
                inplace: Vec::new(),
                buffers: members,
                fixed,
            })
        })
        .collect();
    let mut rep: Vec<usize> = (0..n).collect();
    let find = |rep: &Vec<usize>, mut e: usize| {
        while rep[e] != e {
            e = rep[e];
        }
        e
    };
    for &(gen, kill) in inplace {
        let g = find(&rep, live.entry_of[gen.index()]);
        let k = find(&rep, live.entry_of[kill.index()]);
        let ok = g != k
            && matches!((&st[g], &st[k]), (Some(a), Some(b)) if a.fixed.is_none() && b.fixed.is_none());
        if !ok {
            continue;
        }
        let ge = st[g].take().expect("checked");
        let ke = st[k].as_mut().expect("checked");
        let mut buffers = ge.buffers.clone();
        buffers.extend(ke.buffers.iter().copied());
        ke.buffers = buffers;
        let mut inpl = ge.inplace.clone();
        inpl.extend(ge.buffers.iter().filter(|b| !ge.inplace.contains(b)));
        inpl.extend(ke.inplace.iter().copied());
        ke.inplace = inpl;
        let mut classes = ge.classes.clone();
        classes.extend(ke.classes.iter().copied());
        ke.classes = classes;
        ke.lifetime = union(&ge.lifetime, &ke.lifetime);
        ke.size = ke.size.max(ge.size);
        ke.multi = ke.multi.max(ge.multi);
        ke.unique |= ge.unique;
        rep[g] = k;
    }
    // first-write order of the entries (by their kill-side root)
    let mut out = Vec::new();
    let mut seen = vec![false; n];
    for &b in first_writes {
        let e = find(&rep, live.entry_of[b.index()]);
        if !seen[e] {
            seen[e] = true;
            if let Some(se) = st[e].take() {
                out.push(se);
            }
        }
    }
    out
}

/// Union of two interval lists; intervals that overlap or touch (`next.first <= prev.last + 1`)
/// merge.
fn union(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut all: Vec<Interval> = a.iter().chain(b).copied().collect();
    all.sort();
    let mut out: Vec<Interval> = Vec::new();
    for i in all {
        match out.last_mut() {
            Some(l) if i.first <= l.last + 1 => l.last = l.last.max(i.last),
            _ => out.push(i),
        }
    }
    out
}

/// Number of positions two interval lists share.
fn shared_positions(a: &[Interval], b: &[Interval]) -> usize {
    let mut n = 0;
    for x in a {
        for y in b {
            let first = x.first.max(y.first);
            let last = x.last.min(y.last);
            if first <= last {
                n += last - first + 1;
            }
        }
    }
    n
}

/// HIVM `BufferPipeConflict` over every pair of classes (dma, scalar): the oracle the class
/// unions are tested against.
#[cfg(test)]
fn pipe_conflict(a: &StorageEntry, b: &StorageEntry) -> bool {
    a.classes.iter().any(|&(ad, as_)| {
        b.classes.iter().any(|&(bd, bs)| match (as_, bs) {
            (true, true) => false,
            (true, false) | (false, true) => true,
            (false, false) => ad || bd,
        })
    })
}

/// One planning unit: slot `k` of entry `entry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub entry: usize,
    pub k: u32,
}

/// HIVM's planning order (§1.8): in UB the groups unique, DMA, other, scalar, each entry's
/// slots back to back; elsewhere first-write order with the extra slots at the end. Fixed
/// entries are not planned.
pub fn planning_order(entries: &[StorageEntry], space: Space) -> Vec<Slot> {
    let planned: Vec<usize> = (0..entries.len())
        .filter(|&e| entries[e].fixed.is_none())
        .collect();
    let mut out = Vec::new();
    if space == Space::Ub {
        let group = |e: &StorageEntry| -> u8 {
            if e.unique {
                return 0;
            }
            for &(dma, scalar) in &e.classes {
                if dma {
                    return 1;
                }
                if scalar {
                    return 3;
                }
            }
            2
        };
        for g in 0..4 {
            for &e in planned.iter().filter(|&&e| group(&entries[e]) == g) {
                out.extend((0..entries[e].multi).map(|k| Slot { entry: e, k }));
            }
        }
    } else {
        out.extend(planned.iter().map(|&e| Slot { entry: e, k: 0 }));
        for &e in &planned {
            out.extend((1..entries[e].multi).map(|k| Slot { entry: e, k }));
        }
    }
    out
}

/// A placed slot.
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// Index in the planning order; `usize::MAX` for fixed slots.
    idx: usize,
    entry: usize,
    k: u32,
    offset: u64,
    level: u8,
    /// Placed together with its slot 0 (level 1).
    joint: bool,
    /// No placed or fixed slot held any of its bytes when it was placed.
    fresh: bool,
}

/// The address assignment of one scope.
struct Placer<'a> {
    entries: &'a [StorageEntry],
    order: &'a [Slot],
    align: u64,
    /// `None`: the unbounded outline of passes C and of the level-0 peak.
    cap: Option<u64>,
    fixed: Vec<Rec>,
    records: Vec<Rec>,
    /// Offset per planning-order index, once placed.
    placed: Vec<Option<u64>>,
    /// Extra slot offsets of single entries upgraded at level 1.
    upgraded: Vec<Vec<u64>>,
    /// HIVM `rollbackIdx`/`rollbackAddr`.
    forbid: Option<(usize, u64)>,
    /// Indexes over the fixed and placed slots, so that placing a slot costs about the
    /// number of slots live near it, not the number placed (see [`SlotIndex`]).
    index: SlotIndex,
    /// Every size and fixed offset is a multiple of `align`: then the lowest free address is
    /// always a candidate offset, and first fit may ask the byte unions for it directly.
    aligned: bool,
    /// Per entry: the dense id of its innermost loop ([`SlotIndex::by_loop`]).
    loop_id: Vec<Option<usize>>,
    /// Per entry: [`level2_mask`].
    mask2: Vec<u8>,
    /// Per entry: the planning-order index of each slot.
    slot_at: Vec<Vec<usize>>,
    /// Entry pairs `(a, b)`, both orders, that some touch pair names.
    touch_entries: std::collections::HashSet<(usize, usize)>,
}

/// Positions per time block of [`SlotIndex::blocks`].
const BLOCK: usize = 32;

/// Indexes over the fixed and placed slots, kept in step with them. Slots are keyed by
/// `fixed index` or `fixed.len() + record index`; records are pushed and popped in stack order,
/// which every structure here relies on for its undo.
#[derive(Default)]
struct SlotIndex {
    /// Per block of `BLOCK` positions: the slots whose entry's lifetime hull meets it.
    blocks: Vec<Vec<u32>>,
    /// Per entry: its slots.
    of_entry: Vec<Vec<u32>>,
    /// Per innermost loop (dense id): its placed slot-0 records, the only level-1 candidates.
    by_loop: Vec<Vec<u32>>,
    /// Candidate offsets (0 is implicit): every slot's offset and aligned end, counted.
    cands: std::collections::BTreeMap<u64, u32>,
    /// Bytes of every slot.
    all: Union,
    /// Per mask of pipeline classes (bit c: class c of [`class_flags`]): bytes of `unique`
    /// entries and of entries with one of those classes, so that a slot's level-2 rule is one
    /// union (mask 0: `unique` entries only, for level 0). Only the masks some entry asks for
    /// are kept (`used`).
    mask: [Union; 8],
    used: [bool; 8],
    /// Placed slots by byte range, for level 1's "last slot placed on these bytes".
    last: Option<MaxTree>,
    /// Generation stamps for deduplicating slots met in several blocks.
    seen: Vec<u32>,
    stamp: u32,
    /// Reused buffer of slot keys.
    scratch: Vec<u32>,
    /// Bumped on every slot added or removed.
    version: u64,
    /// The last Stage-0 ranges computed: (entry, version) and the ranges.
    bad: Option<BadRanges>,
}

/// Stage-0 ranges of an entry at an index version.
type BadRanges = ((usize, u64), std::rc::Rc<Vec<(u64, u64)>>);

const NIL: u32 = u32::MAX;

/// A segment of a [`Union`] and its treap node: `min_s`, `last_e` and `gap` are the first start,
/// the last end and the widest gap between consecutive segments of its subtree.
#[derive(Clone, Copy)]
struct Seg {
    s: u64,
    e: u64,
    prio: u32,
    l: u32,
    r: u32,
    min_s: u64,
    last_e: u64,
    gap: u64,
}

/// One insertion into a [`Union`]: the new node, the predecessor segment it swallowed (a single
/// detached node) and the subtree of the segments starting inside it (`NIL` when none).
type Merged = (u32, u32, u32);

/// Byte ranges merged into disjoint segments, with an undo log (insertions are undone in
/// stack order). A treap keyed by segment start in a `Vec` arena, with the widest inner gap per
/// subtree, so that first fit is one descent instead of a walk over every segment.
struct Union {
    nodes: Vec<Seg>,
    root: u32,
    /// Nodes freed by undo, reused first.
    free: Vec<u32>,
    undo: Vec<Option<Merged>>,
    /// xorshift state for the priorities (only the tree's shape depends on it).
    rng: u32,
}

impl Default for Union {
    fn default() -> Self {
        Union {
            nodes: Vec::new(),
            root: NIL,
            free: Vec::new(),
            undo: Vec::new(),
            rng: 0x9e37_79b9,
        }
    }
}

impl Union {
    fn node(&self, t: u32) -> &Seg {
        &self.nodes[t as usize]
    }

    fn pull(&mut self, t: u32) {
        let n = *self.node(t);
        let (mut min_s, mut last_e, mut gap) = (n.s, n.e, 0);
        if n.l != NIL {
            let l = self.node(n.l);
            min_s = l.min_s;
            gap = gap.max(l.gap).max(n.s - l.last_e);
        }
        if n.r != NIL {
            let r = self.node(n.r);
            last_e = r.last_e;
            gap = gap.max(r.gap).max(r.min_s - n.e);
        }
        let m = &mut self.nodes[t as usize];
        (m.min_s, m.last_e, m.gap) = (min_s, last_e, gap);
    }

    /// Splits `t` into the segments starting below `key` and the rest.
    fn split(&mut self, t: u32, key: u64) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let n = *self.node(t);
        if n.s < key {
            let (a, b) = self.split(n.r, key);
            self.nodes[t as usize].r = a;
            self.pull(t);
            (t, b)
        } else {
            let (a, b) = self.split(n.l, key);
            self.nodes[t as usize].l = b;
            self.pull(t);
            (a, t)
        }
    }

    /// Joins two treaps, every segment of `a` before every segment of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.node(a).prio > self.node(b).prio {
            let r = self.merge(self.node(a).r, b);
            self.nodes[a as usize].r = r;
            self.pull(a);
            a
        } else {
            let l = self.merge(a, self.node(b).l);
            self.nodes[b as usize].l = l;
            self.pull(b);
            b
        }
    }

    fn alloc(&mut self, s: u64, e: u64) -> u32 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 17;
        self.rng ^= self.rng << 5;
        let n = Seg {
            s,
            e,
            prio: self.rng,
            l: NIL,
            r: NIL,
            min_s: s,
            last_e: e,
            gap: 0,
        };
        match self.free.pop() {
            Some(t) => {
                self.nodes[t as usize] = n;
                t
            }
            None => {
                self.nodes.push(n);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn insert(&mut self, s: u64, e: u64) {
        if s >= e {
            self.undo.push(None);
            return;
        }
        let (mut a, b) = self.split(self.root, s);
        let (mut start, mut end) = (s, e);
        // the segment before `s` is swallowed when it reaches past `s`
        let mut pred = NIL;
        if a != NIL && self.node(a).last_e > s {
            let mut t = a;
            while self.node(t).r != NIL {
                t = self.node(t).r;
            }
            let ps = self.node(t).s;
            (a, pred) = self.split(a, ps);
            start = ps;
            end = end.max(self.node(pred).e);
        }
        // and so is every segment starting inside [s, e)
        let (inner, b) = self.split(b, e);
        if inner != NIL {
            end = end.max(self.node(inner).last_e);
        }
        let n = self.alloc(start, end);
        let left = self.merge(a, n);
        self.root = self.merge(left, b);
        self.undo.push(Some((n, pred, inner)));
    }

    fn undo(&mut self) {
        if let Some(Some((n, pred, inner))) = self.undo.pop() {
            let s = self.node(n).s;
            let (a, rest) = self.split(self.root, s);
            let (_n, b) = self.split(rest, s + 1);
            self.free.push(n);
            let t = self.merge(a, pred);
            let t = self.merge(t, inner);
            self.root = self.merge(t, b);
        }
    }

    /// The end of the segment meeting [a, b), if one does.
    fn blocker(&self, a: u64, b: u64) -> Option<u64> {
        // the last segment starting below b
        let (mut t, mut best) = (self.root, None);
        while t != NIL {
            let n = self.node(t);
            if n.s < b {
                best = Some(n.e);
                t = n.r;
            } else {
                t = n.l;
            }
        }
        best.filter(|&e| e > a)
    }

    /// The first segment start at or above `x`.
    fn start_from(&self, x: u64) -> Option<u64> {
        let (mut t, mut best) = (self.root, None);
        while t != NIL {
            let n = self.node(t);
            if n.s >= x {
                best = Some(n.s);
                t = n.l;
            } else {
                t = n.r;
            }
        }
        best
    }

    /// The lowest address `y >= x` with [y, y + len) outside every segment.
    fn first_fit(&self, x: u64, len: u64) -> u64 {
        let mut cur = x;
        self.fit_in(self.root, &mut cur, len);
        cur
    }

    /// In-order walk from `cur`: each segment meeting [cur, cur + len) moves `cur` to its end;
    /// a subtree entirely at or above `cur` whose gaps are all too narrow is passed in one step.
    /// True when a gap of `len` at `cur` was found.
    fn fit_in(&self, t: u32, cur: &mut u64, len: u64) -> bool {
        if t == NIL {
            return false;
        }
        let n = *self.node(t);
        if n.last_e <= *cur {
            return false;
        }
        if n.min_s >= *cur && n.min_s < cur.saturating_add(len) && n.gap < len {
            *cur = n.last_e;
            return false;
        }
        if self.fit_in(n.l, cur, len) {
            return true;
        }
        if n.e > *cur {
            if n.s >= cur.saturating_add(len) {
                return true;
            }
            *cur = n.e;
        }
        self.fit_in(n.r, cur, len)
    }
}

/// Placed slots over aligned address units `[0, n)`, answering "the largest key among the slots
/// meeting a range" (a segment tree: a slot is stored on the nodes covering its range, each node
/// keeps the largest key stored in its subtree). Updates are undone in stack order.
struct MaxTree {
    n: usize,
    /// Per node: the top of its stack of stored keys (running maxima) in `stack`.
    top: Vec<u32>,
    /// Per node: the largest key stored in its subtree (0: none).
    sub: Vec<u64>,
    /// (running maximum of the node's stack, previous top).
    stack: Vec<(u64, u32)>,
    /// The lowest stack entry a removal released.
    cut: usize,
}

impl MaxTree {
    fn new(n: usize) -> Self {
        let n = n.max(1).next_power_of_two();
        MaxTree {
            n,
            top: vec![NIL; 2 * n],
            sub: vec![0; 2 * n],
            stack: Vec::new(),
            cut: usize::MAX,
        }
    }

    fn own(&self, node: usize) -> u64 {
        match self.top[node] {
            NIL => 0,
            t => self.stack[t as usize].0,
        }
    }

    fn update(&mut self, node: usize, (nl, nr): (usize, usize), (a, b): (usize, usize), key: u64) {
        if b <= nl || nr <= a {
            return;
        }
        if a <= nl && nr <= b {
            if key == 0 {
                // the slot's entries are the last ones of `stack`: cut there afterwards
                let t = self.top[node] as usize;
                self.top[node] = self.stack[t].1;
                self.cut = self.cut.min(t);
            } else {
                let m = self.own(node).max(key);
                self.stack.push((m, self.top[node]));
                self.top[node] = (self.stack.len() - 1) as u32;
            }
        } else {
            let mid = (nl + nr) / 2;
            self.update(2 * node, (nl, mid), (a, b), key);
            self.update(2 * node + 1, (mid, nr), (a, b), key);
        }
        let kids = if nr - nl > 1 {
            self.sub[2 * node].max(self.sub[2 * node + 1])
        } else {
            0
        };
        self.sub[node] = self.own(node).max(kids);
    }

    fn query(&self, node: usize, (nl, nr): (usize, usize), (a, b): (usize, usize)) -> u64 {
        if b <= nl || nr <= a {
            return 0;
        }
        if a <= nl && nr <= b {
            return self.sub[node];
        }
        let mid = (nl + nr) / 2;
        self.own(node)
            .max(self.query(2 * node, (nl, mid), (a, b)))
            .max(self.query(2 * node + 1, (mid, nr), (a, b)))
    }

    /// Stores `key` (> 0) on [a, b), or with `key == 0` removes the last key stored there.
    fn add(&mut self, (a, b): (usize, usize), key: u64) {
        let (a, b) = (a.min(self.n), b.min(self.n));
        if a < b {
            self.cut = usize::MAX;
            self.update(1, (0, self.n), (a, b), key);
            if key == 0 {
                self.stack.truncate(self.cut);
            }
        }
    }

    fn max_over(&self, (a, b): (usize, usize)) -> u64 {
        let (a, b) = (a.min(self.n), b.min(self.n));
        if a < b {
            self.query(1, (0, self.n), (a, b))
        } else {
            0
        }
    }
}

/// The pipeline classes of an entry's members: [scalar, DMA, vector] (HIVM
/// `BufferPipeConflict`'s three cases).
fn class_flags(e: &StorageEntry) -> [bool; 3] {
    let mut f = [false; 3];
    for &(dma, scalar) in &e.classes {
        f[if scalar {
            0
        } else if dma {
            1
        } else {
            2
        }] = true;
    }
    f
}

/// The class unions a level-2 slot with these flags may not share bytes with (agrees with
/// [`pipe_conflict`]: scalar meets non-scalar; DMA meets everything; vector meets scalar and
/// DMA).
fn conflicting_classes(f: [bool; 3]) -> [bool; 3] {
    [f[1] || f[2], f.iter().any(|&x| x), f[0] || f[1]]
}

/// The [`SlotIndex::mask`] a level-2 slot of `e` may not share bytes with.
fn level2_mask(e: &StorageEntry) -> usize {
    let cc = conflicting_classes(class_flags(e));
    (0..3).filter(|&c| cc[c]).fold(0, |m, c| m | 1 << c)
}

/// The first candidate offset at or above `x` (0 is always one).
fn next_candidate(cands: &std::collections::BTreeMap<u64, u32>, x: u64) -> Option<u64> {
    if x == 0 {
        return Some(0);
    }
    cands.range(x..).next().map(|(&c, _)| c)
}

/// How many rollbacks a scope may take before it is declared full.
const MAX_ROLLBACKS: usize = 10_000;

impl<'a> Placer<'a> {
    fn new(
        entries: &'a [StorageEntry],
        order: &'a [Slot],
        touch: &'a [(BufferId, BufferId)],
        align: u64,
        cap: Option<u64>,
    ) -> Self {
        let mut fixed = Vec::new();
        for (e, se) in entries.iter().enumerate() {
            for (k, &o) in se.fixed.iter().flatten().enumerate() {
                fixed.push(Rec {
                    idx: usize::MAX,
                    entry: e,
                    k: k as u32,
                    offset: o,
                    level: 0,
                    joint: false,
                    fresh: false,
                });
            }
        }
        let align = align.max(1);
        let aligned = entries
            .iter()
            .all(|e| e.size % align == 0 && e.fixed.iter().flatten().all(|&o| o % align == 0));
        let mut loops: Vec<OpId> = entries.iter().filter_map(|e| e.loop_parent).collect();
        loops.sort_unstable();
        loops.dedup();
        let loop_id = entries
            .iter()
            .map(|e| {
                e.loop_parent
                    .map(|l| loops.binary_search(&l).expect("listed"))
            })
            .collect();
        let mut slot_at = vec![Vec::new(); entries.len()];
        for (i, s) in order.iter().enumerate() {
            let v: &mut Vec<usize> = &mut slot_at[s.entry];
            if v.len() <= s.k as usize {
                v.resize(s.k as usize + 1, usize::MAX);
            }
            if v[s.k as usize] == usize::MAX {
                v[s.k as usize] = i;
            }
        }
        let mut entry_of = std::collections::HashMap::new();
        for (e, se) in entries.iter().enumerate() {
            for &b in &se.buffers {
                entry_of.entry(b).or_insert(e);
            }
        }
        let mut touch_entries = std::collections::HashSet::new();
        for (x, y) in touch {
            if let (Some(&a), Some(&b)) = (entry_of.get(x), entry_of.get(y)) {
                touch_entries.insert((a, b));
                touch_entries.insert((b, a));
            }
        }
        // level 1 only runs bounded; a tree over the capacity's address units answers its
        // "last slot on these bytes"
        let last = match cap {
            Some(c) if aligned && c / align <= 1 << 22 => {
                Some(MaxTree::new(c.div_ceil(align) as usize))
            }
            _ => None,
        };
        let mut used = [false; 8];
        used[0] = true;
        for e in entries.iter().filter(|e| !e.unique) {
            used[level2_mask(e)] = true;
        }
        let mut p = Placer {
            entries,
            order,
            align,
            cap,
            fixed: Vec::new(),
            records: Vec::new(),
            placed: vec![None; order.len()],
            upgraded: vec![Vec::new(); entries.len()],
            forbid: None,
            index: SlotIndex {
                of_entry: vec![Vec::new(); entries.len()],
                by_loop: vec![Vec::new(); loops.len()],
                last,
                used,
                ..SlotIndex::default()
            },
            aligned,
            mask2: entries.iter().map(|e| level2_mask(e) as u8).collect(),
            loop_id,
            slot_at,
            touch_entries,
        };
        for r in fixed {
            p.index_add(&r, p.fixed.len());
            p.fixed.push(r);
        }
        p
    }

    /// The lifetime hull of an entry in blocks, `None` for an entry never live.
    fn block_span(&self, e: usize) -> Option<(usize, usize)> {
        let l = &self.entries[e].lifetime;
        Some((l.first()?.first / BLOCK, l.last()?.last / BLOCK))
    }

    fn index_add(&mut self, r: &Rec, key: usize) {
        self.index.version += 1;
        let key = key as u32;
        let size = self.size(r.entry);
        let (o, end) = (r.offset, r.offset + size);
        if let Some((b0, b1)) = self.block_span(r.entry) {
            if self.index.blocks.len() <= b1 {
                self.index.blocks.resize(b1 + 1, Vec::new());
            }
            for b in &mut self.index.blocks[b0..=b1] {
                b.push(key);
            }
        }
        self.index.of_entry[r.entry].push(key);
        let placed = r.idx != usize::MAX;
        if let (true, 0, Some(l)) = (placed, r.k, self.loop_id[r.entry]) {
            self.index.by_loop[l].push(key);
        }
        for c in [o, end.div_ceil(self.align) * self.align] {
            *self.index.cands.entry(c).or_default() += 1;
        }
        let ee = &self.entries[r.entry];
        let flags = class_flags(ee);
        let bits = (0..3).filter(|&c| flags[c]).fold(0, |m, c| m | 1 << c);
        let (o, end) = if size == 0 { (0, 0) } else { (o, end) };
        self.index.all.insert(o, end);
        for (m, u) in self.index.mask.iter_mut().enumerate() {
            if !self.index.used[m] {
                continue;
            }
            let (mo, me) = if ee.unique || m & bits != 0 {
                (o, end)
            } else {
                (0, 0)
            };
            u.insert(mo, me);
        }
        if let (true, Some(t)) = (placed, &mut self.index.last) {
            let units = ((o / self.align) as usize, (end / self.align) as usize);
            t.add(units, ((r.idx as u64 + 1) << 32) | key as u64);
        }
    }

    /// Undoes [`Self::index_add`] for the last record added.
    fn index_remove(&mut self, r: &Rec) {
        self.index.version += 1;
        if let Some((b0, b1)) = self.block_span(r.entry) {
            for b in &mut self.index.blocks[b0..=b1] {
                b.pop();
            }
        }
        self.index.of_entry[r.entry].pop();
        let placed = r.idx != usize::MAX;
        if let (true, 0, Some(l)) = (placed, r.k, self.loop_id[r.entry]) {
            self.index.by_loop[l].pop();
        }
        let size = self.size(r.entry);
        if let (true, Some(t)) = (placed, &mut self.index.last) {
            let (o, end) = if size == 0 {
                (0, 0)
            } else {
                (r.offset, r.offset + size)
            };
            t.add(((o / self.align) as usize, (end / self.align) as usize), 0);
        }
        let end = r.offset + size;
        for c in [r.offset, end.div_ceil(self.align) * self.align] {
            if let Some(n) = self.index.cands.get_mut(&c) {
                *n -= 1;
                if *n == 0 {
                    self.index.cands.remove(&c);
                }
            }
        }
        self.index.all.undo();
        for (m, u) in self.index.mask.iter_mut().enumerate() {
            if self.index.used[m] {
                u.undo();
            }
        }
    }

    fn rec(&self, key: u32) -> &Rec {
        let k = key as usize;
        if k < self.fixed.len() {
            &self.fixed[k]
        } else {
            &self.records[k - self.fixed.len()]
        }
    }

    fn add_record(&mut self, r: Rec) {
        self.index_add(&r, self.fixed.len() + self.records.len());
        self.records.push(r);
    }

    /// The byte ranges of the slots entry `e` may not share bytes with by Stage 0 (its own
    /// slots, and slots live with it), sorted by start.
    fn stage0_ranges(&mut self, e: usize) -> Vec<(u64, u64)> {
        self.index.stamp = self.index.stamp.wrapping_add(1);
        if self.index.stamp == 0 {
            self.index.seen.iter_mut().for_each(|x| *x = 0);
            self.index.stamp = 1;
        }
        let total = self.fixed.len() + self.records.len();
        if self.index.seen.len() < total {
            self.index.seen.resize(total, 0);
        }
        let mut keys = std::mem::take(&mut self.index.scratch);
        keys.clear();
        keys.extend(self.index.of_entry[e].iter().copied());
        if let Some((b0, b1)) = self.block_span(e) {
            for b in b0..=b1.min(self.index.blocks.len().saturating_sub(1)) {
                keys.extend(self.index.blocks.get(b).into_iter().flatten().copied());
            }
        }
        let stamp = self.index.stamp;
        let mut out = Vec::new();
        for &key in &keys {
            if std::mem::replace(&mut self.index.seen[key as usize], stamp) == stamp {
                continue;
            }
            let r = *self.rec(key);
            let size = self.size(r.entry);
            if size > 0 && self.stage0(e, r.entry) {
                out.push((r.offset, r.offset + size));
            }
        }
        self.index.scratch = keys;
        out.sort_unstable();
        out
    }

    /// [`Self::stage0_ranges`], remembered until the next slot is placed or removed (pass D
    /// asks once per level for a slot that does not fit).
    fn bad_ranges(&mut self, e: usize) -> std::rc::Rc<Vec<(u64, u64)>> {
        let now = (e, self.index.version);
        if let Some((at, v)) = &self.index.bad {
            if *at == now {
                return v.clone();
            }
        }
        let v = std::rc::Rc::new(self.stage0_ranges(e));
        self.index.bad = Some((now, v.clone()));
        v
    }

    fn size(&self, e: usize) -> u64 {
        self.entries[e].size
    }

    fn all(&self) -> impl Iterator<Item = &Rec> {
        self.fixed.iter().chain(self.records.iter())
    }

    /// The placed slot on [o, o + size) placed last (largest planning index, then latest
    /// record), if any.
    fn last_on(&self, o: u64, size: u64) -> Option<Rec> {
        if let Some(t) = &self.index.last {
            let units = (
                (o / self.align) as usize,
                (o + size).div_ceil(self.align) as usize,
            );
            return match t.max_over(units) {
                0 => None,
                v => Some(*self.rec(v as u32)),
            };
        }
        self.records
            .iter()
            .filter(|r| {
                let rs = self.size(r.entry);
                size > 0 && rs > 0 && r.offset < o + size && o < r.offset + rs
            })
            .max_by_key(|r| r.idx)
            .copied()
    }

    fn touch_allowed(&self, a: usize, b: usize) -> bool {
        self.touch_entries.contains(&(a, b))
    }

    /// Stage 0 between entry `e` and a placed slot of entry `r`.
    fn stage0(&self, e: usize, r: usize) -> bool {
        if e == r {
            return true; // two slots of one entry never share bytes
        }
        let (ee, re) = (&self.entries[e], &self.entries[r]);
        if ee.unique || re.unique {
            return true;
        }
        match shared_positions(&ee.lifetime, &re.lifetime) {
            0 => false,
            1 => !self.touch_allowed(e, r),
            _ => true,
        }
    }

    fn fits(&self, o: u64, size: u64) -> bool {
        self.cap.is_none_or(|c| o + size <= c)
    }

    /// Tries to place planning-order slot `idx` at `level`; true on success.
    fn try_place(&mut self, idx: usize, level: u8) -> bool {
        let e = self.order[idx].entry;
        let size = self.size(e);
        if size == 0 {
            self.push(idx, 0, level, false);
            return true;
        }
        if level == 1 {
            return self.try_level1(idx);
        }
        // Stage 0's ranges are found through the time index; unique slots and (at level 2)
        // other pipeline classes through one byte union.
        let unique = self.entries[e].unique;
        let bad = if unique {
            Default::default()
        } else {
            self.bad_ranges(e)
        };
        let forbid = self.forbid.filter(|f| f.0 == idx).map(|f| f.1);
        let ix = &self.index;
        let u = if unique {
            &ix.all
        } else if level == 2 {
            &ix.mask[self.mask2[e] as usize]
        } else {
            &ix.mask[0]
        };
        let max_end: Vec<u64> = bad
            .iter()
            .scan(0u64, |m, b| {
                *m = (*m).max(b.1);
                Some(*m)
            })
            .collect();
        // the end of a Stage-0 range meeting [o, o + size), the latest ending one
        let bad_end = |o: u64| {
            let i = bad.partition_point(|b| b.0 < o + size);
            (i > 0 && max_end[i - 1] > o).then(|| max_end[i - 1])
        };
        let found = if self.aligned {
            // The lowest free address is 0 or the end of a blocking slot, so a candidate: first
            // fit in the union (one descent) and past the Stage-0 ranges, in turns; each turn
            // passes a Stage-0 range or ends.
            let fit_from = |mut y: u64| loop {
                y = u.first_fit(y, size);
                match bad_end(y) {
                    Some(e) => y = e,
                    None => break y,
                }
            };
            let mut y = Some(fit_from(0));
            if y == forbid {
                // HIVM's rollback forbids this address only: the next candidate, if it still
                // lies in the same free gap, else the first fit beyond that gap (whose lowest
                // free address is again a blocker's end)
                let f = forbid.unwrap_or(0);
                let next_bad = bad.get(bad.partition_point(|b| b.0 <= f)).map(|b| b.0);
                let g = match (u.start_from(f + 1), next_bad) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                y = next_candidate(&ix.cands, f + 1).map(|c| match g {
                    Some(g) if c.saturating_add(size) > g => fit_from(g),
                    _ => c,
                });
            }
            y
        } else {
            // A candidate blocked by a range ending at E blocks every candidate below E too, so
            // the scan jumps there: first fit at the cost of the blockers met.
            let mut o = 0u64;
            loop {
                if forbid == Some(o) {
                    match next_candidate(&ix.cands, o + 1) {
                        Some(c) => o = c,
                        None => break None,
                    }
                    continue;
                }
                if self.cap.is_some_and(|c| o + size > c) {
                    break None;
                }
                let mut blocked = bad_end(o);
                if let Some(e) = u.blocker(o, o + size) {
                    blocked = Some(blocked.map_or(e, |b: u64| b.max(e)));
                }
                match blocked {
                    Some(end) => match next_candidate(&ix.cands, end.max(o + 1)) {
                        Some(c) => o = c,
                        None => break None,
                    },
                    None => break Some(o),
                }
            }
        };
        let Some(o) = found.filter(|&o| self.fits(o, size)) else {
            return false;
        };
        let fresh = self.index.all.blocker(o, o + size).is_none();
        self.push(idx, o, level, false);
        if let Some(r) = self.records.last_mut() {
            r.fresh = fresh;
        }
        true
    }

    /// Level 1: reuse slot 0 of a multi-buffer (or upgraded single buffer) R of the same
    /// innermost loop and take R's other slots too.
    fn try_level1(&mut self, idx: usize) -> bool {
        let Slot { entry: e, k } = self.order[idx];
        if k != 0 {
            return false;
        }
        let ee = &self.entries[e];
        let size = ee.size;
        let (Some(lp), Some(lid)) = (ee.loop_parent, self.loop_id[e]) else {
            return false;
        };
        // The slot reused must be the last placed on its bytes, at this very offset, a slot 0
        // of this loop: only those slots' offsets can pass.
        let mut cands: Vec<u64> = self.index.by_loop[lid]
            .iter()
            .map(|&key| self.rec(key).offset)
            .collect();
        cands.sort_unstable();
        cands.dedup();
        if cands.is_empty() {
            return false;
        }
        let bad = if ee.unique {
            Default::default()
        } else {
            self.bad_ranges(e)
        };
        let max_end: Vec<u64> = bad
            .iter()
            .scan(0u64, |m, b| {
                *m = (*m).max(b.1);
                Some(*m)
            })
            .collect();
        // whether a slot in Stage-0 conflict with `e` holds a byte of [o, o + size)
        let conflict = |p: &Self, o: u64| {
            if ee.unique {
                return p.index.all.blocker(o, o + size).is_some();
            }
            let i = bad.partition_point(|b| b.0 < o + size);
            (i > 0 && max_end[i - 1] > o) || p.index.mask[0].blocker(o, o + size).is_some()
        };
        for o in cands {
            if self.forbid == Some((idx, o)) || !self.fits(o, size) {
                continue;
            }
            if conflict(self, o) {
                continue;
            }
            // the last placed slot on this range
            let Some(r) = self.last_on(o, size) else {
                continue;
            };
            let re = &self.entries[r.entry];
            if r.k != 0 || r.offset != o || size > re.size || re.loop_parent != Some(lp) {
                continue;
            }
            let others: Vec<u64> = if re.multi > 1 {
                (1..re.multi)
                    .filter_map(|kk| {
                        self.index.of_entry[r.entry]
                            .iter()
                            .map(|&key| self.rec(key))
                            .find(|x| x.k == kk)
                            .map(|x| x.offset)
                    })
                    .collect()
            } else {
                self.upgraded[r.entry].clone()
            };
            let want = if ee.multi > 1 {
                ee.multi as usize - 1
            } else {
                others.len()
            };
            if others.is_empty() || others.len() < want {
                continue;
            }
            let targets = &others[..want];
            let ok = targets
                .iter()
                .all(|&t| self.fits(t, size) && !conflict(self, t));
            if !ok {
                continue;
            }
            let targets = targets.to_vec();
            self.push(idx, o, 1, false);
            if ee.multi > 1 {
                for (j, &t) in targets.iter().enumerate() {
                    let kk = j as u32 + 1;
                    let Some(&ti) = self.slot_at[e]
                        .get(kk as usize)
                        .filter(|&&i| i != usize::MAX)
                    else {
                        continue;
                    };
                    self.push(ti, t, 1, true);
                }
            } else {
                // the upgraded slots occupy their bytes like any slot
                for (j, &t) in targets.iter().enumerate() {
                    self.add_record(Rec {
                        idx,
                        entry: e,
                        k: j as u32 + 1,
                        offset: t,
                        level: 1,
                        joint: true,
                        fresh: false,
                    });
                }
                self.upgraded[e] = targets;
            }
            return true;
        }
        false
    }

    fn push(&mut self, idx: usize, offset: u64, level: u8, joint: bool) {
        let Slot { entry, k } = self.order[idx];
        self.placed[idx] = Some(offset);
        self.add_record(Rec {
            idx,
            entry,
            k,
            offset,
            level,
            joint,
            fresh: false,
        });
    }

    fn pop(&mut self) -> Option<Rec> {
        let r = self.records.pop()?;
        self.index_remove(&r);
        self.placed[r.idx] = None;
        if r.k == 0 {
            self.upgraded[r.entry].clear();
        }
        Some(r)
    }

    /// Every slot at one level, no rollback (passes C and the level-0 peak).
    fn single_level(&mut self, level: u8) -> bool {
        for idx in 0..self.order.len() {
            if self.placed[idx].is_none() && !self.try_place(idx, level) {
                return false;
            }
        }
        true
    }

    /// Pass D: levels `max` .. 0 per slot, with rollback.
    fn multi_level(&mut self, max: u8) -> bool {
        let cap = self.cap.unwrap_or(u64::MAX);
        let n = self.order.len();
        let (mut i, mut spec_level, mut spec_start, mut rollbacks) = (0usize, max, 0usize, 0);
        while i < n {
            if self.placed[i].is_some() {
                i += 1;
                continue;
            }
            if (0..=spec_level).rev().any(|lv| self.try_place(i, lv)) {
                i += 1;
                if i >= spec_start {
                    spec_level = max;
                }
                continue;
            }
            // every level failed: roll back (§1.9)
            rollbacks += 1;
            if rollbacks > MAX_ROLLBACKS {
                return false;
            }
            spec_start = spec_start.max(i);
            let fail_size = self.size(self.order[i].entry);
            let mut landing = None;
            while let Some(r) = self.pop() {
                if r.k > 0 {
                    let first_level = self.index.of_entry[r.entry]
                        .iter()
                        .map(|&key| self.rec(key))
                        .find(|x| x.k == 0)
                        .map(|x| x.level);
                    if r.joint || first_level == Some(r.level) {
                        continue; // popped together with its first slot
                    }
                }
                if r.level == 0 {
                    continue;
                }
                landing = Some(r);
                if r.offset + fail_size <= cap {
                    break;
                }
            }
            let Some(r) = landing else {
                return false;
            };
            // everything placed after the landing slot is popped; retry it one level lower
            self.forbid = Some((r.idx, r.offset));
            i = r.idx;
            spec_level = r.level - 1;
        }
        true
    }

    /// The end of the highest placed or fixed slot.
    fn end(&self) -> u64 {
        self.all()
            .map(|r| r.offset + self.size(r.entry))
            .max()
            .unwrap_or(0)
    }

    /// Offsets per entry (slot order) and the lowest level any slot of the entry was placed at.
    fn result(&self, top: u8) -> (Vec<Vec<u64>>, Vec<u8>) {
        let mut offs: Vec<Vec<Option<u64>>> = self
            .entries
            .iter()
            .map(|e| vec![None; e.multi as usize])
            .collect();
        // A slot placed on bytes nobody else held satisfies every level's rule: report it at
        // the highest level tried, not at the level the search happened to reach.
        let mut level = vec![u8::MAX; self.entries.len()];
        for r in self.all() {
            if let Some(s) = offs[r.entry].get_mut(r.k as usize) {
                *s = Some(r.offset);
            }
            let l = if r.fresh { top } else { r.level };
            level[r.entry] = level[r.entry].min(l);
        }
        let offs = offs
            .into_iter()
            .map(|v| v.into_iter().map(|o| o.unwrap_or(0)).collect())
            .collect();
        (offs, level)
    }
}

/// Plans every on-chip scope of the program's core (module docs). `inplace` lists accepted
/// `(gen, kill)` pairs; `touch` lists pairs whose lifetimes may share one position (refused
/// multi-buffer inplace, HIVM `inplacableBufferPairs`).
pub fn plan(
    program: &Program,
    config: &Config,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    touch: &[(BufferId, BufferId)],
    opts: &PlanOptions,
) -> Result<Plan, PlanError> {
    place(program, config, live, inplace, touch, opts).map(|p| p.plan)
}

/// [`plan`], with the level-1 upgrades.
pub fn place(
    program: &Program,
    config: &Config,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    touch: &[(BufferId, BufferId)],
    opts: &PlanOptions,
) -> Result<Placement, PlanError> {
    let core = config.core(program.core);
    let max = opts.max_level.min(2);
    let mut buffers = unplaced_buffers(program);
    let mut scopes = Vec::new();
    let mut warnings = Vec::new();
    let mut upgraded = Vec::new();
    let mut applied = Vec::new();

    let first_writes = first_write_order(program);
    for sc in &core.scopes {
        let space = sc.space;
        let align = sc.align.max(1);
        let cap = opts
            .capacities
            .iter()
            .find(|c| c.0 == space)
            .map_or(sc.bytes, |c| c.1);
        let in_scope: Vec<(BufferId, BufferId)> = inplace
            .iter()
            .copied()
            .filter(|&(g, k)| program.buffer(g).scope == space && program.buffer(k).scope == space)
            .collect();
        let mut entries = entries_in_order(program, live, &in_scope, space, align, &first_writes);
        let mut with_inplace = true;
        if opts.inplace == InplacePolicy::WhenNeeded {
            // without pairs in this scope, `entries` is already the disjoint set
            let disjoint = (!in_scope.is_empty())
                .then(|| entries_in_order(program, live, &[], space, align, &first_writes));
            let side_by_side = sequential(disjoint.as_deref().unwrap_or(&entries), align).end;
            if side_by_side <= cap {
                if let Some(d) = disjoint {
                    entries = d;
                }
                with_inplace = false;
            } else {
                warnings.push(format!(
                    "{}: the buffers do not fit side by side ({side_by_side} bytes of {cap}), so some share bytes (inplace or reuse); the program's own flags must order every access to shared bytes",
                    space.yaml_name(),
                ));
            }
        }
        if with_inplace {
            applied.extend(in_scope.iter().copied());
        }
        let peak_live = peak_bytes(&entries).map_or(0, |(_, b)| b);
        let planned: Vec<usize> = (0..entries.len())
            .filter(|&e| entries[e].fixed.is_none())
            .collect();
        let required: u64 = planned
            .iter()
            .map(|&e| entries[e].size * entries[e].multi as u64)
            .sum();

        // sequential when the running sum fits
        let Sequential {
            offsets: seq_offs,
            end: seq_used,
            fixed,
        } = sequential(&entries, align);

        let mut offsets: Vec<Vec<u64>> = entries
            .iter()
            .map(|e| e.fixed.clone().unwrap_or_default())
            .collect();
        let mut levels: Vec<Option<u8>> = vec![None; entries.len()];
        let (mode, used) = if seq_used <= cap {
            for (&e, o) in planned.iter().zip(seq_offs) {
                offsets[e] = o;
            }
            (ScopeMode::Sequential, seq_used)
        } else {
            let order = planning_order(&entries, space);
            let slots: usize = order.len() + fixed.len();
            // pass C: no pipe stall
            let mut c = Placer::new(&entries, &order, touch, align, None);
            c.single_level(2);
            let c_end = c.end();
            let chosen = if c_end <= cap && max == 2 {
                Some((c, 2))
            } else {
                let mut d = Placer::new(&entries, &order, touch, align, Some(cap));
                if slots > 1 && d.multi_level(max) {
                    warnings.push(format!(
                        "[hivm-plan-memory] There reused some dma buffers in {} address space, which may stall pipe. Not reusing dma buffer needs {} bits while {} bits available!",
                        space.hivm_name(),
                        c_end * 8,
                        cap * 8
                    ));
                    Some((d, max))
                } else {
                    None
                }
            };
            match chosen {
                None => {
                    let exact = match opts.placement {
                        PlacementMode::FirstFit => None,
                        PlacementMode::Exact => crate::place_exact::exact_offsets(
                            &entries,
                            align,
                            cap,
                            live.positions,
                            opts.exact_time_limit,
                        ),
                    };
                    let Some(offs) = exact else {
                        return Err(overflow(
                            program, live, &entries, &order, touch, align, space, cap, slots,
                        ));
                    };
                    warnings.push(format!(
                    "{}: first fit found no placement; the exact search did (lifetimes only, like level 0: sync must order every access to shared bytes)",
                    space.yaml_name()
                ));
                    let mut end = 0;
                    for &e in &planned {
                        end = offs[e]
                            .iter()
                            .map(|o| o + entries[e].size)
                            .fold(end, u64::max);
                        offsets[e] = offs[e].clone();
                        levels[e] = Some(0);
                    }
                    let fixed_end = fixed.iter().map(|f| f.1).max().unwrap_or(0);
                    (ScopeMode::Reuse, end.max(fixed_end))
                }
                Some((p, top)) => {
                    let (offs, lv) = p.result(top);
                    for &e in &planned {
                        offsets[e] = offs[e].clone();
                        levels[e] = Some(lv[e]);
                        if !p.upgraded[e].is_empty() {
                            for &b in &entries[e].buffers {
                                let mut all = vec![offs[e][0]];
                                all.extend(p.upgraded[e].iter().copied());
                                upgraded.push((b, all));
                            }
                        }
                    }
                    (ScopeMode::Reuse, p.end())
                }
            }
        };

        for (e, se) in entries.iter().enumerate() {
            for &b in &se.buffers {
                let buf = program.buffer(b);
                let bp = &mut buffers[b.index()];
                bp.bytes = se.size;
                bp.live = live.lifetime(b).to_vec();
                if let Some(at) = &buf.at {
                    bp.offsets = at.clone();
                    bp.placed_by = PlacedBy::Fixed;
                    continue;
                }
                // every slot of the entry: a single buffer inplaced into a multi-buffer is one
                bp.offsets = offsets[e].clone();
                if let Some((_, all)) = upgraded.iter().find(|(u, _)| *u == b) {
                    bp.offsets = all.clone();
                }
                bp.placed_by = if se.inplace.contains(&b) {
                    PlacedBy::Inplace
                } else {
                    match levels[e] {
                        None => PlacedBy::Sequential,
                        Some(l) => PlacedBy::Level(l),
                    }
                };
            }
        }
        scopes.push(ScopePlan {
            space,
            capacity: cap,
            align,
            required,
            used,
            peak_live,
            mode,
        });
    }
    scopes.sort_by_key(|s| s.space);
    upgraded.sort();
    Ok(Placement {
        plan: Plan {
            kernel: program.kernel.clone(),
            config: config.core_label(program.core),
            level: max,
            liveness: live.mode,
            scopes,
            buffers,
            warnings,
        },
        upgraded,
        inplace: applied,
    })
}

/// The running sum over a scope's entries (§1.9 A).
struct Sequential {
    /// Per entry that is not fixed, in `entries` order: its slot offsets.
    offsets: Vec<Vec<u64>>,
    /// What the scope needs without any sharing: the end of the sum or of a fixed slot.
    end: u64,
    /// The fixed slots' byte ranges, sorted.
    fixed: Vec<(u64, u64)>,
}

/// Places `entries` side by side, stepping over the fixed ones.
fn sequential(entries: &[StorageEntry], align: u64) -> Sequential {
    let mut fixed: Vec<(u64, u64)> = entries
        .iter()
        .flat_map(|e| e.fixed.iter().flatten().map(move |&o| (o, o + e.size)))
        .collect();
    fixed.sort_unstable();
    let sizes: Vec<(u64, u32)> = entries
        .iter()
        .filter(|e| e.fixed.is_none())
        .map(|e| (e.size, e.multi))
        .collect();
    let (offsets, cursor) = running_sum(&sizes, &fixed, align);
    let end = cursor.max(fixed.iter().map(|f| f.1).max().unwrap_or(0));
    Sequential {
        offsets,
        end,
        fixed,
    }
}

/// The most bytes (every slot) live at one position, and the first position where that
/// happens.
fn peak_bytes(entries: &[StorageEntry]) -> Option<(usize, u64)> {
    crate::liveness::peak_over(
        entries
            .iter()
            .map(|e| (e.lifetime.as_slice(), e.size * e.multi as u64)),
    )
}

/// HIVM's overflow error (§1.13): N is the level-0 peak on an unbounded outline, or the total
/// for a scope with a single slot; then the instant of peak liveness and what is live there.
#[allow(clippy::too_many_arguments)]
fn overflow(
    program: &Program,
    live: &Liveness,
    entries: &[StorageEntry],
    order: &[Slot],
    touch: &[(BufferId, BufferId)],
    align: u64,
    space: Space,
    cap: u64,
    slots: usize,
) -> PlanError {
    let required = if slots <= 1 {
        entries.iter().map(|e| e.size * e.multi as u64).sum::<u64>()
    } else {
        let mut p = Placer::new(entries, order, touch, align, None);
        p.single_level(0);
        p.end()
    };
    let weight = |e: &StorageEntry| e.size * e.multi as u64;
    let live_at =
        |e: &StorageEntry, p: usize| e.lifetime.iter().any(|i| i.first <= p && p <= i.last);
    let peak = peak_bytes(entries);
    let mut largest: Vec<(String, u64)> = entries
        .iter()
        .filter(|e| peak.is_none_or(|(p, _)| live_at(e, p)))
        .map(|e| (e.name(program).to_string(), weight(e)))
        .collect();
    largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let peak = peak.map(|(p, _)| {
        let op = program.op(live.pos_op[p]);
        (p, format!("{} ({})", op.path, op.kind.name()))
    });
    PlanError::Overflow {
        space,
        required_bits: required * 8,
        available_bits: cap * 8,
        largest,
        peak,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: u64 = 1024;

    /// An entry of one slot of `U` bytes living over `[a, b]`.
    fn e(name: usize, a: usize, b: usize) -> StorageEntry {
        StorageEntry {
            buffers: vec![BufferId::new(name)],
            inplace: Vec::new(),
            lifetime: vec![Interval::new(a, b)],
            size: U,
            multi: 1,
            classes: vec![(false, false)],
            unique: false,
            loop_parent: Some(OpId::new(0)),
            fixed: None,
        }
    }

    fn dma(mut x: StorageEntry) -> StorageEntry {
        x.classes = vec![(true, false)];
        x
    }

    fn scalar(mut x: StorageEntry) -> StorageEntry {
        x.classes = vec![(false, true)];
        x
    }

    fn order(entries: &[StorageEntry]) -> Vec<Slot> {
        planning_order(entries, Space::L1)
    }

    /// Places every slot at one level, unbounded; offsets of slot 0 per entry.
    fn at_level(entries: &[StorageEntry], level: u8) -> Vec<u64> {
        let o = order(entries);
        let mut p = Placer::new(entries, &o, &[], 32, None);
        assert!(p.single_level(level));
        p.result(2).0.iter().map(|v| v[0]).collect()
    }

    #[test]
    fn union_merges_touching_intervals() {
        let a = [Interval::new(0, 2), Interval::new(8, 9)];
        let b = [Interval::new(3, 4), Interval::new(6, 6)];
        assert_eq!(
            union(&a, &b),
            [
                Interval::new(0, 4),
                Interval::new(6, 6),
                Interval::new(8, 9)
            ]
        );
    }

    #[test]
    fn first_fit_takes_the_lowest_free_address() {
        // x and z are disjoint; y overlaps both
        let entries = [e(0, 0, 3), e(1, 2, 6), e(2, 5, 8), e(3, 9, 9)];
        assert_eq!(at_level(&entries, 0), [0, U, 0, 0]);
    }

    #[test]
    fn one_shared_position_conflicts_unless_touch_allowed() {
        let entries = [e(0, 0, 2), e(1, 2, 4)];
        assert_eq!(at_level(&entries, 0), [0, U]);
        let o = order(&entries);
        let touch = [(BufferId::new(1), BufferId::new(0))];
        let mut p = Placer::new(&entries, &o, &touch, 32, None);
        assert!(p.single_level(0));
        assert_eq!(p.result(2).0, [vec![0], vec![0]]);
    }

    #[test]
    fn unique_never_shares() {
        let mut u = e(1, 5, 6);
        u.unique = true;
        assert_eq!(at_level(&[e(0, 0, 1), u], 0), [0, U]);
    }

    #[test]
    fn level2_keeps_pipeline_classes_apart() {
        // vector with vector: shared
        assert_eq!(at_level(&[e(0, 0, 1), e(1, 2, 3)], 2), [0, 0]);
        // DMA with anything: apart at level 2, shared at level 0
        assert_eq!(at_level(&[e(0, 0, 1), dma(e(1, 2, 3))], 2), [0, U]);
        assert_eq!(at_level(&[dma(e(0, 0, 1)), dma(e(1, 2, 3))], 2), [0, U]);
        assert_eq!(at_level(&[e(0, 0, 1), dma(e(1, 2, 3))], 0), [0, 0]);
        // scalar with scalar: shared; scalar with vector: apart
        assert_eq!(
            at_level(&[scalar(e(0, 0, 1)), scalar(e(1, 2, 3))], 2),
            [0, 0]
        );
        assert_eq!(at_level(&[scalar(e(0, 0, 1)), e(1, 2, 3)], 2), [0, U]);
    }

    #[test]
    fn level1_upgrades_a_single_buffer_over_a_multi_buffer() {
        let mut a = dma(e(0, 0, 1));
        a.multi = 2;
        let c = e(1, 2, 3);
        let entries = [a, c];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(p.try_place(0, 0));
        assert!(p.try_place(2, 0), "slot 1 of a");
        assert!(!p.try_place(1, 2), "no room at level 2");
        assert!(p.try_place(1, 1));
        assert_eq!(p.result(2).0, [vec![0, U], vec![0]]);
        assert_eq!(p.upgraded[1], [U]);
        assert_eq!(p.result(2).1[1], 1);
    }

    #[test]
    fn level1_needs_the_same_innermost_loop_and_free_other_slots() {
        let mut a = e(0, 0, 1);
        a.multi = 2;
        let mut c = e(1, 2, 3);
        c.loop_parent = Some(OpId::new(7));
        let entries = [a.clone(), c];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, None);
        assert!(p.try_place(0, 0) && p.try_place(2, 0));
        assert!(!p.try_place(1, 1), "different loops");

        // a third entry live with c sits on a's slot 1: the upgrade is refused
        let mut b = e(2, 2, 3);
        b.loop_parent = Some(OpId::new(9));
        let entries = [a, e(1, 2, 3), b];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, None);
        assert!(p.try_place(0, 0) && p.try_place(3, 0));
        assert!(p.try_place(2, 0));
        assert_eq!(p.records.last().unwrap().offset, 0, "b on a's slot 0");
        // move b to a's slot 1 instead
        p.pop();
        p.push(2, U, 0, false);
        assert!(!p.try_place(1, 1));
    }

    #[test]
    fn level1_multi_buffer_takes_the_other_slots() {
        let mut a = dma(e(0, 0, 1));
        a.multi = 2;
        let mut d = dma(e(1, 2, 3));
        d.multi = 2;
        let entries = [a, d];
        let o = planning_order(&entries, Space::Ub);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(p.multi_level(2));
        assert_eq!(p.result(2).0, [vec![0, U], vec![0, U]]);
        assert_eq!(p.result(2).1, [2, 1]);
    }

    #[test]
    fn rollback_lowers_an_earlier_level() {
        // cap 2 slots; w lives throughout. Greedy level 2 puts z (DMA) on fresh bytes, leaving
        // nothing for w; the rollback retries z lower and forbids its old address: z lands on
        // the vector bytes at level 0 and w gets the freed slot.
        let entries = [e(0, 0, 1), e(1, 2, 3), dma(e(2, 4, 5)), e(3, 0, 5)];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(p.multi_level(2));
        let (offs, levels) = p.result(2);
        assert_eq!(offs, [vec![0], vec![0], vec![0], vec![U]]);
        assert_eq!(levels, [2, 2, 0, 2]);
    }

    #[test]
    fn rollback_gives_up_when_nothing_helps() {
        let entries = [e(0, 0, 5), e(1, 0, 5), e(2, 0, 5)];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(!p.multi_level(2));
    }

    #[test]
    fn fixed_slots_are_stepped_over() {
        let mut f = e(0, 0, 9);
        f.fixed = Some(vec![0]);
        assert_eq!(at_level(&[f, e(1, 0, 1)], 0)[1], U);
    }

    #[test]
    fn ub_order_groups_unique_dma_other_scalar() {
        let mut u = e(3, 0, 0);
        u.unique = true;
        let mut d = dma(e(1, 0, 0));
        d.multi = 2;
        let entries = [scalar(e(0, 0, 0)), d, e(2, 0, 0), u];
        let ub: Vec<(usize, u32)> = planning_order(&entries, Space::Ub)
            .iter()
            .map(|s| (s.entry, s.k))
            .collect();
        assert_eq!(ub, [(3, 0), (1, 0), (1, 1), (2, 0), (0, 0)]);
        let l1: Vec<(usize, u32)> = planning_order(&entries, Space::L1)
            .iter()
            .map(|s| (s.entry, s.k))
            .collect();
        assert_eq!(l1, [(0, 0), (1, 0), (2, 0), (3, 0), (1, 1)]);
    }

    #[test]
    fn class_unions_agree_with_pipe_conflict() {
        // every combination of member classes on both sides
        let pairs = [(false, false), (true, false), (false, true), (true, true)];
        let subsets: Vec<Vec<(bool, bool)>> = (1u32..16)
            .map(|m| {
                (0..4)
                    .filter(|i| m & (1 << i) != 0)
                    .map(|i| pairs[i])
                    .collect()
            })
            .collect();
        for a in &subsets {
            for b in &subsets {
                let mut x = e(0, 0, 1);
                x.classes = a.clone();
                let mut y = e(1, 0, 1);
                y.classes = b.clone();
                let cc = conflicting_classes(class_flags(&x));
                let fb = class_flags(&y);
                let via_unions = (0..3).any(|c| cc[c] && fb[c]);
                assert_eq!(via_unions, pipe_conflict(&x, &y), "{a:?} {b:?}");
            }
        }
    }

    /// The treap union against a byte map, through random inserts and stack-order undos.
    #[test]
    fn union_agrees_with_a_byte_map() {
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut u = Union::default();
        let mut log: Vec<(u64, u64)> = Vec::new();
        for _ in 0..3000 {
            if rnd(3) == 0 && !log.is_empty() {
                log.pop();
                u.undo();
            } else {
                let s = rnd(200);
                let e = s + rnd(12);
                log.push((s, e));
                u.insert(s, e);
            }
            let held = |b: u64| log.iter().any(|&(s, e)| s <= b && b < e);
            let a = rnd(220);
            let len = 1 + rnd(20);
            let free = |y: u64| (y..y + len).all(|b| !held(b));
            let want = (a..).find(|&y| free(y)).unwrap();
            assert_eq!(u.first_fit(a, len), want);
            assert_eq!(u.blocker(a, a + len).is_some(), !free(a));
            // from a free byte (as first fit asks), the next segment starts at the next held one
            if !held(a) {
                assert_eq!(u.start_from(a), (a..260).find(|&b| held(b)));
            }
        }
    }

    #[test]
    fn overflow_text_starts_with_hivm_line() {
        let err = PlanError::Overflow {
            space: Space::Ub,
            required_bits: 16,
            available_bits: 8,
            largest: vec![("a".into(), 2)],
            peak: Some((3, "body[0] (load)".into())),
        };
        assert_eq!(
            err.to_string(),
            "ub overflow, requires 16 bits while 8 bits available!\n  peak liveness at position 3, body[0] (load); live there:\n  a: 2 bytes"
        );
    }
}
