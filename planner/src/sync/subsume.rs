//! Dropping the synchronisation another one implies ([`subsume`]), in O(n log² n): an edge
//! is compared only with the edges of its block and source pipe, and within a large group each
//! question ("the first live edge that implies this one") is a query on points.
//!
//! Edges are visited in creation order and an edge only changes state when it is visited, so
//! when edge `i` is visited the live edges before it are final and those after it are as
//! they started. The first live edge before `i` in a region comes from a structure that grows
//! as edges are visited ([`Earlier`]); the first one after `i` from a fixed one ([`Later`]).
//! Every rule is a region `x >= a, y <= b` over a point per edge: a range of one coordinate is
//! the point `(c, c)`.

use sim::{OpId, Pipe};

use super::tree::BlockRef;
use super::{Edge, EdgeState};

/// Groups up to this size compare every pair (as fast, and no structures to build).
const SMALL_GROUP: usize = 64;

/// Drops every barrier a later set or barrier of its pipe between the same two ops implies,
/// and every flag pair another live pair of the same pipes already implies: the other's set
/// follows this one's producer in the same block (a set waits for every earlier instruction
/// of its pipe) and its wait comes no later than this one's, on the same iterations (for a
/// backward pair, the same loop and no more iterations back). Pairs are added one dependency
/// at a time, so the load of `b` after the load of `a`, both read by one loop, first gets a
/// pair of its own and then makes the pair of `a` redundant. Of the edges implying one, the
/// first created is kept for good (the rules are not transitive for barriers). Returns how
/// many were dropped.
pub(super) fn subsume(edges: &mut [Edge]) -> u32 {
    let mut keep = vec![false; edges.len()];
    // only edges of the same block and source pipe can imply each other
    let group: Vec<(BlockRef, Pipe)> = edges.iter().map(|e| (e.block, e.src)).collect();
    let mut order: Vec<usize> = (0..edges.len()).collect();
    order.sort_unstable_by_key(|&i| (group[i], i));
    let mut dropped = 0;
    for same in order.chunk_by(|&a, &b| group[a] == group[b]) {
        dropped += if same.len() <= SMALL_GROUP {
            group_pairs(edges, same, &mut keep)
        } else {
            group_points(edges, same, &mut keep)
        };
    }
    dropped
}

/// Whether live edge `o` (index `j`) implies edge `e` (index `i`) of the same block and
/// source pipe: the rule.
fn implies(e: &Edge, i: usize, o: &Edge, j: usize) -> bool {
    j != i
        && o.state == EdgeState::Live
        && if e.src == e.dst {
            // a barrier: any set or barrier of its pipe between the two ops drains the pipe
            // as well
            e.back.is_none()
                && if o.dst == o.src {
                    o.back.is_none()
                        && e.set_after < o.wait_before
                        && o.wait_before <= e.wait_before
                        && (o.wait_before != e.wait_before || j < i)
                } else {
                    e.set_after <= o.set_after && o.set_after < e.wait_before
                }
        } else {
            o.dst == e.dst
                && o.back.map(|b| b.lp) == e.back.map(|b| b.lp)
                && (e.back.is_none() || o.k <= e.k)
                && o.set_after >= e.set_after
                && o.wait_before <= e.wait_before
                // of two identical pairs, the later one goes
                && ((o.set_after, o.wait_before) != (e.set_after, e.wait_before) || j < i)
        }
}

/// One group (indices ascending) by comparing every pair.
fn group_pairs(edges: &mut [Edge], same: &[usize], keep: &mut [bool]) -> u32 {
    let mut dropped = 0;
    for &i in same {
        let e = &edges[i];
        if e.state != EdgeState::Live || keep[i] {
            continue;
        }
        let by = same.iter().copied().find(|&j| implies(e, i, &edges[j], j));
        if let Some(j) = by {
            keep[j] = true;
            edges[i].state = EdgeState::Merged;
            dropped += 1;
        }
    }
    dropped
}

/// Which point set an edge belongs to, and its point there. Barriers without a loop are
/// their wait (`(w, w)`); flags are their set (`(s, s)`, for the barriers they imply) and
/// `(set, wait)` among the flags of their destination, loop and id count.
fn point(e: &Edge) -> Option<(Kind, i64, i64)> {
    let (s, w) = (pos(e.set_after), pos(e.wait_before));
    match (e.src == e.dst, e.back) {
        (true, None) => Some((Kind::Barrier, w, w)),
        (true, Some(_)) => None,
        (false, back) => Some((Kind::Flag(e.dst, back.map(|b| b.lp), e.k), s, w)),
    }
}

fn pos(op: OpId) -> i64 {
    op.index() as i64
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Barrier,
    /// destination, loop of a backward pair, ids
    Flag(Pipe, Option<OpId>, u32),
}

/// The points of one set, both ways.
struct Set {
    kind: Kind,
    earlier: Earlier,
    later: Later,
}

/// One group (indices ascending) by queries on points; the same answers as [`group_pairs`].
fn group_points(edges: &mut [Edge], same: &[usize], keep: &mut [bool]) -> u32 {
    // per kind: the live edges' points; every flag also as `(s, s)` for the barriers
    let mut pts: Vec<(Kind, i64, i64, u32)> = Vec::new();
    let mut sets_of_flags: Vec<(i64, i64, u32)> = Vec::new();
    for &i in same {
        let e = &edges[i];
        if e.state != EdgeState::Live {
            continue;
        }
        if let Some((kind, x, y)) = point(e) {
            pts.push((kind, x, y, i as u32));
            if kind != Kind::Barrier {
                sets_of_flags.push((x, x, i as u32));
            }
        }
    }
    pts.sort_by_key(|&(kind, .., i)| (kind, i));
    let mut sets: Vec<Set> = pts
        .chunk_by(|a, b| a.0 == b.0)
        .map(|c| {
            let p: Vec<(i64, i64, u32)> = c.iter().map(|&(_, x, y, i)| (x, y, i)).collect();
            Set {
                kind: c[0].0,
                earlier: Earlier::new(&p),
                later: Later::new(&p),
            }
        })
        .collect();
    let mut flag_sets = Set {
        kind: Kind::Barrier, // unused: the flags' sets as points `(s, s)`
        earlier: Earlier::new(&sets_of_flags),
        later: Later::new(&sets_of_flags),
    };
    let find = |kind: Kind, sets: &[Set]| sets.binary_search_by_key(&kind, |s| s.kind).ok();
    let mut dropped = 0;
    for &i in same {
        let e = &edges[i];
        if e.state != EdgeState::Live {
            continue;
        }
        let me = point(e);
        let mut by: Option<u32> = None;
        let mut best = |j: Option<u32>| {
            if let Some(j) = j {
                by = Some(by.map_or(j, |b| b.min(j)));
            }
        };
        if !keep[i] {
            let (s, w) = (pos(e.set_after), pos(e.wait_before));
            match (e.src == e.dst, e.back) {
                (true, None) => {
                    // barriers waiting in (s, w]; one waiting at w only if created before
                    if let Some(b) = find(Kind::Barrier, &sets) {
                        let b = &sets[b];
                        best(b.earlier.first(s + 1, w));
                        best(b.later.first_after(i, s + 1, w - 1));
                    }
                    // flags set in [s, w)
                    best(flag_sets.earlier.first(s, w - 1));
                    best(flag_sets.later.first_after(i, s, w - 1));
                }
                (true, Some(_)) => {}
                (false, back) => {
                    let lp = back.map(|b| b.lp);
                    for set in &sets {
                        let Kind::Flag(dst, l, k) = set.kind else {
                            continue;
                        };
                        if dst != e.dst || l != lp || (back.is_some() && k > e.k) {
                            continue;
                        }
                        // set at or after s, wait at or before w; the same two ops only if
                        // created before
                        best(set.earlier.first(s, w));
                        best(set.later.first_after(i, s + 1, w));
                        best(set.later.first_after(i, s, w - 1));
                    }
                }
            }
        }
        if let Some(j) = by {
            keep[j as usize] = true;
            edges[i].state = EdgeState::Merged;
            dropped += 1;
            continue;
        }
        // still live: a candidate for the edges after it
        if let Some((kind, x, y)) = me {
            let set = find(kind, &sets).expect("every live edge's set");
            sets[set].earlier.insert(x, y, i as u32);
            if kind != Kind::Barrier {
                flag_sets.earlier.insert(x, x, i as u32);
            }
        }
    }
    dropped
}

/// Points inserted in increasing index; the first inserted in a region `x >= a, y <= b`.
/// A segment tree over the points' distinct `x`; each node lists the points inserted below
/// it with the running minimum of their `y`, so the first one at most `b` is found by
/// bisection.
struct Earlier {
    xs: Vec<i64>,
    size: usize,
    /// Per node: (running minimum of y, index of the point inserted there).
    nodes: Vec<Vec<(i64, u32)>>,
}

impl Earlier {
    /// Room for `points` (inserted later, in increasing index).
    fn new(points: &[(i64, i64, u32)]) -> Earlier {
        let mut xs: Vec<i64> = points.iter().map(|p| p.0).collect();
        xs.sort_unstable();
        xs.dedup();
        let size = xs.len().max(1).next_power_of_two();
        Earlier {
            xs,
            size,
            nodes: vec![Vec::new(); 2 * size],
        }
    }

    fn insert(&mut self, x: i64, y: i64, i: u32) {
        let mut node = self.size + self.xs.binary_search(&x).expect("a point of the set");
        while node >= 1 {
            let list = &mut self.nodes[node];
            let min = list.last().map_or(y, |&(m, _)| m.min(y));
            list.push((min, i));
            node /= 2;
        }
    }

    fn first(&self, a: i64, b: i64) -> Option<u32> {
        let (mut l, mut r) = (
            self.size + self.xs.partition_point(|&x| x < a),
            self.size + self.xs.len(),
        );
        let mut best: Option<u32> = None;
        let mut take = |node: usize| {
            let list = &self.nodes[node];
            let t = list.partition_point(|&(m, _)| m > b);
            if let Some(&(_, i)) = list.get(t) {
                best = Some(best.map_or(i, |x| x.min(i)));
            }
        };
        while l < r {
            if l & 1 == 1 {
                take(l);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                take(r);
            }
            l >>= 1;
            r >>= 1;
        }
        best
    }
}

/// Fixed points; the first after an index in a region `x >= a, y <= b`. A segment tree over
/// the points in index order; each node holds its points by `x` descending with the running
/// minimum of their `y`, which says by bisection whether the region has a point there.
struct Later {
    index: Vec<u32>,
    size: usize,
    /// Per node: its range in `xs` and `min_y`.
    range: Vec<(u32, u32)>,
    xs: Vec<i64>,
    min_y: Vec<i64>,
}

impl Later {
    /// `points` in increasing index.
    fn new(points: &[(i64, i64, u32)]) -> Later {
        let size = points.len().max(1).next_power_of_two();
        let mut range = vec![(0, 0); 2 * size];
        let (mut xs, mut min_y) = (Vec::new(), Vec::new());
        // bottom up: a node's points are its children's, merged
        let mut by_node: Vec<Vec<(i64, i64)>> = vec![Vec::new(); 2 * size];
        for (p, &(x, y, _)) in points.iter().enumerate() {
            by_node[size + p].push((x, y));
        }
        for node in (1..size).rev() {
            let (a, b) = (&by_node[2 * node], &by_node[2 * node + 1]);
            let mut merged = Vec::with_capacity(a.len() + b.len());
            let (mut i, mut j) = (0, 0);
            while i < a.len() || j < b.len() {
                if j == b.len() || (i < a.len() && a[i].0 >= b[j].0) {
                    merged.push(a[i]);
                    i += 1;
                } else {
                    merged.push(b[j]);
                    j += 1;
                }
            }
            by_node[node] = merged;
        }
        for (node, list) in by_node.iter().enumerate().skip(1) {
            let start = xs.len() as u32;
            let mut m = i64::MAX;
            for &(x, y) in list {
                m = m.min(y);
                xs.push(x);
                min_y.push(m);
            }
            range[node] = (start, xs.len() as u32);
        }
        Later {
            index: points.iter().map(|p| p.2).collect(),
            size,
            range,
            xs,
            min_y,
        }
    }

    /// Whether node `node` holds a point with `x >= a, y <= b`.
    fn holds(&self, node: usize, a: i64, b: i64) -> bool {
        let (s, e) = self.range[node];
        let (s, e) = (s as usize, e as usize);
        let t = self.xs[s..e].partition_point(|&x| x >= a);
        t > 0 && self.min_y[s + t - 1] <= b
    }

    /// The first point after index `i` with `x >= a, y <= b`.
    fn first_after(&self, i: usize, a: i64, b: i64) -> Option<u32> {
        let from = self.index.partition_point(|&j| j as usize <= i);
        self.find(1, 0, self.size, from, a, b)
            .map(|p| self.index[p])
    }

    fn find(
        &self,
        node: usize,
        nl: usize,
        nr: usize,
        from: usize,
        a: i64,
        b: i64,
    ) -> Option<usize> {
        if nr <= from || !self.holds(node, a, b) {
            return None;
        }
        if nr - nl == 1 {
            return Some(nl);
        }
        let mid = (nl + nr) / 2;
        self.find(2 * node, nl, mid, from, a, b)
            .or_else(|| self.find(2 * node + 1, mid, nr, from, a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Back;
    use super::*;

    /// Random groups: the point queries drop exactly what comparing every pair drops.
    #[test]
    fn points_agree_with_every_pair() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut r = |n: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % n
        };
        let mut dropped = [0usize; 2];
        for case in 0..400 {
            let n = 1 + r(if case % 4 == 0 { 400 } else { 120 }) as usize;
            let span = 2 + r(60);
            let pipes = [Pipe::Mte2, Pipe::V, Pipe::Mte3];
            let edges: Vec<Edge> = (0..n)
                .map(|_| {
                    let src = Pipe::Mte2;
                    let dst = pipes[r(3) as usize];
                    let a = r(span) as usize;
                    let b = r(span) as usize;
                    let back = (r(3) == 0).then(|| Back {
                        lp: OpId::new(r(2) as usize),
                        hoist: OpId::new(0),
                    });
                    Edge {
                        src,
                        dst,
                        set_after: OpId::new(a),
                        wait_before: OpId::new(if back.is_some() { b } else { a.max(b) }),
                        block: (None, 0),
                        back,
                        rot: None,
                        k: 1 + r(3) as u32,
                        base: 0,
                        allocated: true,
                        banned: 0,
                        state: match r(8) {
                            0 => EdgeState::Merged,
                            1 => EdgeState::Fallback,
                            _ => EdgeState::Live,
                        },
                    }
                })
                .collect();
            let same: Vec<usize> = (0..n).collect();
            let before = edges.clone();
            let (mut a, mut b) = (edges.clone(), edges);
            let (mut ka, mut kb) = (vec![false; n], vec![false; n]);
            let da = group_pairs(&mut a, &same, &mut ka);
            let db = group_points(&mut b, &same, &mut kb);
            assert_eq!(da, db, "case {case}");
            for (x, before) in a.iter().zip(&before) {
                if x.state != before.state {
                    dropped[usize::from(x.src != x.dst)] += 1;
                }
            }
            let states = |v: &[Edge]| v.iter().map(|e| e.state).collect::<Vec<_>>();
            assert_eq!(states(&a), states(&b), "case {case}");
            assert_eq!(ka, kb, "case {case}");
        }
        // both rules were exercised
        assert!(dropped.iter().all(|&d| d > 500), "{dropped:?}");
    }
}
