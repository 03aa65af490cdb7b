//! Which parts can conflict, by memory and byte range, so that a part meets only the parts
//! whose bytes it overlaps instead of every earlier part (forward) or every part of its loop
//! (backward).
//!
//! Per memory, pipe and kind (every access, or writes only) a segment tree over the boundaries
//! of the stored byte ranges: each range is stored at the O(log n) nodes that cover it, and each
//! node lists, sorted, the parts stored at it (`own`) and at or below it (`sub`). The parts
//! overlapping a query range are those at the nodes that cover part of it (their `own` lists)
//! and those below the nodes it covers whole (their `sub` lists), so the latest one before a
//! bound costs O(log² n) and all of them in a range of parts O(log² n + k).
//!
//! The index only proposes candidates: every one is checked with the exact rule (`conflict`,
//! `distance`), so it may propose more than conflicts but never misses a conflict.

use sim::footprint::Memory;
use sim::Pipe;

use super::access::{Part, Piece};

const NP: usize = Pipe::COUNT;

/// The byte range a piece is indexed under. The rule `x.lo < y.hi && y.lo < x.hi` is the
/// intersection of half-open ranges when both are non-empty; an empty or inverted range is
/// widened to cover both ends so that every pair the rule accepts still intersects.
fn span(p: &Piece) -> (u64, u64) {
    if p.lo < p.hi {
        (p.lo, p.hi)
    } else {
        (p.lo.min(p.hi), p.lo.max(p.hi).saturating_add(1))
    }
}

/// Sorted part lists per node, stored flat.
#[derive(Default)]
struct Lists {
    range: Vec<(u32, u32)>,
    items: Vec<u32>,
}

impl Lists {
    fn get(&self, node: usize) -> &[u32] {
        let (a, b) = self.range[node];
        &self.items[a as usize..b as usize]
    }
}

/// One memory, pipe and kind: the segment tree over the stored ranges' boundaries.
struct RangeTree {
    /// Sorted distinct boundaries; leaf `i` is bytes `coords[i] .. coords[i + 1]`.
    coords: Vec<u64>,
    /// Leaves rounded up to a power of two; node 1 is the root, leaf `i` is node `size + i`.
    size: usize,
    own: Lists,
    sub: Lists,
}

impl RangeTree {
    /// `ranges`: (lo, hi, part), non-empty, in part order.
    fn new(ranges: &[(u64, u64, u32)]) -> RangeTree {
        let mut coords: Vec<u64> = ranges.iter().flat_map(|&(l, h, _)| [l, h]).collect();
        coords.sort_unstable();
        coords.dedup();
        let size = (coords.len() - 1).next_power_of_two();
        let leaf = |c: u64| coords.partition_point(|&x| x < c);
        let mut at: Vec<(u32, u32)> = Vec::new();
        for &(lo, hi, part) in ranges {
            let (mut l, mut r) = (leaf(lo) + size, leaf(hi) + size);
            while l < r {
                if l & 1 == 1 {
                    at.push((l as u32, part));
                    l += 1;
                }
                if r & 1 == 1 {
                    r -= 1;
                    at.push((r as u32, part));
                }
                l >>= 1;
                r >>= 1;
            }
        }
        at.sort_unstable();
        at.dedup();
        let nodes = 2 * size;
        let mut own = Lists {
            range: vec![(0, 0); nodes],
            items: at.iter().map(|&(_, p)| p).collect(),
        };
        let mut i = 0;
        while i < at.len() {
            let node = at[i].0 as usize;
            let j = i + at[i..].partition_point(|x| x.0 as usize == node);
            own.range[node] = (i as u32, j as u32);
            i = j;
        }
        // bottom up: a node's `sub` merges its own list with its children's
        let mut sub = Lists {
            range: vec![(0, 0); nodes],
            items: Vec::new(),
        };
        let mut merged = Vec::new();
        for node in (1..nodes).rev() {
            merged.clear();
            merged.extend_from_slice(own.get(node));
            if node < size {
                for child in [2 * node, 2 * node + 1] {
                    let c = sub.range[child];
                    if c.0 < c.1 {
                        merge_into(&mut merged, &sub.items[c.0 as usize..c.1 as usize]);
                    }
                }
            }
            let start = sub.items.len() as u32;
            sub.items.extend_from_slice(&merged);
            sub.range[node] = (start, sub.items.len() as u32);
        }
        RangeTree {
            coords,
            size,
            own,
            sub,
        }
    }

    /// The leaves meeting bytes `lo .. hi`.
    fn leaves(&self, (lo, hi): (u64, u64)) -> (usize, usize) {
        let n = self.coords.len() - 1;
        let a = self.coords[1..].partition_point(|&c| c <= lo);
        let b = self.coords[..n].partition_point(|&c| c < hi);
        (a, b)
    }

    /// Calls `f` with the list of every node whose parts overlap the leaves `a .. b`.
    fn visit(&self, (a, b): (usize, usize), f: &mut impl FnMut(&[u32])) {
        if a < b {
            self.visit_node(1, 0, self.size, a, b, f);
        }
    }

    fn visit_node(
        &self,
        node: usize,
        nl: usize,
        nr: usize,
        a: usize,
        b: usize,
        f: &mut impl FnMut(&[u32]),
    ) {
        if nr <= a || b <= nl {
            return;
        }
        if a <= nl && nr <= b {
            f(self.sub.get(node));
            return;
        }
        f(self.own.get(node));
        let mid = (nl + nr) / 2;
        self.visit_node(2 * node, nl, mid, a, b, f);
        self.visit_node(2 * node + 1, mid, nr, a, b, f);
    }
}

/// Merges sorted `b` into sorted `a`, without duplicates.
fn merge_into(a: &mut Vec<u32>, b: &[u32]) {
    if a.is_empty() {
        a.extend_from_slice(b);
        return;
    }
    let old = std::mem::take(a);
    a.reserve(old.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < b.len() {
        let (x, y) = (old[i], b[j]);
        a.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    a.extend_from_slice(&old[i..]);
    a.extend_from_slice(&b[j..]);
}

/// The index of every part's pieces, by memory, pipe and kind. S parts are not indexed: S
/// finishes its ops before sending the next, so nothing waits for them.
pub(super) struct Index {
    /// By `(Memory::index * NP + pipe) * 2 + kind` (kind 0: every access, 1: writes).
    trees: Vec<Option<RangeTree>>,
}

impl Index {
    /// The index of `parts`, the first being part `base`.
    pub fn new(parts: &[Part], base: u32) -> Index {
        let mems = parts
            .iter()
            .flat_map(|p| &p.pieces)
            .map(|x| x.mem.index() + 1)
            .max()
            .unwrap_or(0);
        let mut ranges: Vec<Vec<(u64, u64, u32)>> = vec![Vec::new(); mems * NP * 2];
        for (i, p) in parts.iter().enumerate() {
            if p.pipe == Pipe::S {
                continue;
            }
            let id = base + i as u32;
            for x in &p.pieces {
                let (lo, hi) = span(x);
                let key = Self::key(x.mem, p.pipe, false);
                ranges[key].push((lo, hi, id));
                if x.write {
                    ranges[key + 1].push((lo, hi, id));
                }
            }
        }
        Index {
            trees: ranges
                .iter()
                .map(|r| (!r.is_empty()).then(|| RangeTree::new(r)))
                .collect(),
        }
    }

    fn key(mem: Memory, pipe: Pipe, writes: bool) -> usize {
        (mem.index() * NP + pipe.index()) * 2 + usize::from(writes)
    }

    /// The tree of the pieces on `pipe` that can conflict with `y` (every access for a write,
    /// writes for a read), and the leaves `y` meets in it.
    fn tree(&self, y: &Piece, pipe: Pipe) -> Option<(&RangeTree, (usize, usize))> {
        let t = self.trees.get(Self::key(y.mem, pipe, !y.write))?.as_ref()?;
        Some((t, t.leaves(span(y))))
    }

    /// The latest part before `bound` on `pipe` with a piece that overlaps a piece of `part`,
    /// one of the two writing.
    pub fn latest(&self, part: &Part, pipe: Pipe, bound: u32) -> Option<u32> {
        let mut best: Option<u32> = None;
        for y in &part.pieces {
            let Some((t, leaves)) = self.tree(y, pipe) else {
                continue;
            };
            t.visit(leaves, &mut |list| {
                // sorted: a list whose last part is no later than the best has nothing better
                if list.last().is_none_or(|&l| best.is_some_and(|b| l <= b)) {
                    return;
                }
                let i = list.partition_point(|&p| p < bound);
                if i > 0 && best.is_none_or(|b| list[i - 1] > b) {
                    best = Some(list[i - 1]);
                }
            });
        }
        best
    }

    /// Appends every part in `lo ..= hi` (any pipe but S) with a piece that overlaps a piece
    /// of `part`, one of the two writing; unsorted, possibly repeated.
    pub fn all_in(&self, part: &Part, lo: u32, hi: u32, out: &mut Vec<u32>) {
        for y in &part.pieces {
            for pipe in Pipe::ALL {
                let Some((t, leaves)) = self.tree(y, pipe) else {
                    continue;
                };
                t.visit(leaves, &mut |list| {
                    let i = list.partition_point(|&p| p < lo);
                    out.extend(list[i..].iter().take_while(|&&p| p <= hi));
                });
            }
        }
    }
}
