//! The placer's data structures: byte unions that answer first fit in one descent, a
//! segment tree for level 1's "last slot placed on these bytes", and the `SlotIndex` that
//! keeps them (and a time index of the placed slots) in step with the placement.
//!
//! Every structure is undone in stack order, because HIVM PlanMemory's rollback (AscendNPU-IR)
//! pops the slots placed last: undo is a log, never a rebuild. They are what keeps placing a
//! slot near the number of slots live around it rather than the number placed.

/// Positions per time block of [`SlotIndex::blocks`].
pub(super) const BLOCK: usize = 32;

/// Indexes over the fixed and placed slots, kept in step with them. Slots are keyed by
/// `fixed index` or `fixed.len() + record index`; records are pushed and popped in stack order,
/// which every structure here relies on for its undo.
#[derive(Default)]
pub(super) struct SlotIndex {
    /// Per block of `BLOCK` positions: the slots whose entry's lifetime hull meets it.
    pub(super) blocks: Vec<Vec<u32>>,
    /// Per entry: its slots.
    pub(super) of_entry: Vec<Vec<u32>>,
    /// Per innermost loop (dense id): its placed slot-0 records, the only level-1 candidates.
    pub(super) by_loop: Vec<Vec<u32>>,
    /// Candidate offsets (0 is implicit): every slot's offset and aligned end, counted.
    pub(super) cands: std::collections::BTreeMap<u64, u32>,
    /// Bytes of every slot.
    pub(super) all: Union,
    /// Per mask of pipeline classes (bit c: class c of [`super::entries::class_flags`]):
    /// bytes of `unique` entries and of entries with one of those classes, so that a slot's
    /// level-2 rule is one union (mask 0: `unique` entries only, for level 0). Only the masks
    /// some entry asks for are kept (`used`).
    pub(super) mask: [Union; 8],
    pub(super) used: [bool; 8],
    /// Placed slots by byte range, for level 1's "last slot placed on these bytes".
    pub(super) last: Option<MaxTree>,
    /// Generation stamps for deduplicating slots met in several blocks.
    pub(super) seen: Vec<u32>,
    pub(super) stamp: u32,
    /// Reused buffer of slot keys.
    pub(super) scratch: Vec<u32>,
    /// Bumped on every slot added or removed.
    pub(super) version: u64,
    /// The last Stage-0 ranges computed: (entry, version) and the ranges.
    pub(super) bad: Option<BadRanges>,
}

/// Stage-0 ranges of an entry at an index version.
pub(super) type BadRanges = ((usize, u64), std::rc::Rc<Vec<(u64, u64)>>);

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
pub(super) struct Union {
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

    pub(super) fn insert(&mut self, s: u64, e: u64) {
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

    pub(super) fn undo(&mut self) {
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
    pub(super) fn blocker(&self, a: u64, b: u64) -> Option<u64> {
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
    pub(super) fn start_from(&self, x: u64) -> Option<u64> {
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
    pub(super) fn first_fit(&self, x: u64, len: u64) -> u64 {
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
pub(super) struct MaxTree {
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
    pub(super) fn new(n: usize) -> Self {
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
    pub(super) fn add(&mut self, (a, b): (usize, usize), key: u64) {
        let (a, b) = (a.min(self.n), b.min(self.n));
        if a < b {
            self.cut = usize::MAX;
            self.update(1, (0, self.n), (a, b), key);
            if key == 0 {
                self.stack.truncate(self.cut);
            }
        }
    }

    pub(super) fn max_over(&self, (a, b): (usize, usize)) -> u64 {
        let (a, b) = (a.min(self.n), b.min(self.n));
        if a < b {
            self.query(1, (0, self.n), (a, b))
        } else {
            0
        }
    }
}

/// The first candidate offset at or above `x` (0 is always one).
pub(super) fn next_candidate(cands: &std::collections::BTreeMap<u64, u32>, x: u64) -> Option<u64> {
    if x == 0 {
        return Some(0);
    }
    cands.range(x..).next().map(|(&c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
