//! Work a run drops without a word (docs/decisions.md, "Dropped work"): the bytes of a gm tensor
//! the program stores to that no op wrote, and the rows of a gm tensor it loads that no op read
//! while it read others. A loop that stops one tile short (`--param tr=3` on 1,024 rows runs
//! 341 tiles of 3 rows: 1,023 rows) is a correct-looking run that did not do its work.
//!
//! [`Coverage`] is an [`Observer`]: it sees every gm read and write every core of a launch makes
//! and keeps, per tensor, the bytes written and the rows read (all the read rule needs: a read
//! reaches every row of its first dimension's range, one interval however strided) as merged
//! intervals. Its memory is the number of separate stretches a tensor's coverage has at once,
//! which a kernel that walks a tensor tile by tile keeps small: it does not grow with the run's
//! length.

use std::collections::BTreeMap;

use crate::config::Config;
use crate::engine::{Issue, Observer};
use crate::footprint::Sel;
use crate::ids::TensorId;
use crate::program::{Operand, Program, Ref};

/// Bytes (or rows) of one tensor as disjoint, non-adjacent half-open intervals `[start, end)`.
#[derive(Clone, Debug, Default)]
pub struct Intervals {
    /// start → end; no two touch (touching intervals are merged).
    map: BTreeMap<u64, u64>,
    /// The interval the last insert or lookup landed in, as it is in `map` (`(0, 0)`: none).
    /// Kernels stream: the next tile is mostly in it (read again) or right after it.
    last: (u64, u64),
    /// The interval after `last` (`(u64::MAX, u64::MAX)`: none; `(0, 0)`: not known). A
    /// strided tile's rows each join the interval of the row's earlier tiles: the one after.
    next: (u64, u64),
}

/// No interval: [`Intervals::next`] when `last` is the last one.
const NONE: (u64, u64) = (u64::MAX, u64::MAX);

impl Intervals {
    /// Adds `[lo, hi)`, merging it with every interval it overlaps or touches.
    pub fn insert(&mut self, lo: u64, mut hi: u64) {
        if lo >= hi || self.covers(lo, hi) {
            return;
        }
        // the cached neighbours answer the patterns kernels make without a search
        let ((s, e), (ns, ne)) = (self.last, self.next);
        let known = s < e && (ns, ne) != (0, 0);
        if known && s <= lo && lo <= e && hi < ns {
            // the tile right after the last one, short of the next interval: grow it in place
            *self.map.get_mut(&s).expect("`last` is an interval") = hi;
            self.last.1 = hi;
            return;
        }
        if known && e < lo && hi < ns {
            // between the last interval and the next, touching neither (the next row of a
            // strided tile read for the first time): a new interval, nothing to merge
            self.map.insert(lo, hi);
            self.last = (lo, hi);
            return;
        }
        if known && ns != u64::MAX && ns <= lo && lo <= ne {
            // joins the next interval (the next row of a strided tile, after the row's earlier
            // tiles): grow it in place when it stops short of the one after
            let after = self
                .map
                .range(ns + 1..)
                .next()
                .map_or(NONE, |(&a, &b)| (a, b));
            if hi < after.0 {
                let grown = hi.max(ne);
                *self.map.get_mut(&ns).expect("`next` is an interval") = grown;
                (self.last, self.next) = ((ns, grown), after);
                return;
            }
        }
        // the interval it joins on the left (starting at or before `lo`, reaching `lo`), if any
        let joined = match self.map.range(..=lo).next_back() {
            Some((&s, &e)) if e >= lo => {
                hi = hi.max(e);
                Some(s)
            }
            _ => None,
        };
        let start = joined.unwrap_or(lo);
        // swallow the intervals that start inside or right at the end of the new one
        self.next = NONE;
        while let Some((&s, &e)) = self.map.range(start + 1..).next() {
            if s > hi {
                self.next = (s, e);
                break;
            }
            hi = hi.max(e);
            self.map.remove(&s);
        }
        match joined {
            Some(s) => *self.map.get_mut(&s).expect("the interval joined") = hi,
            None => {
                self.map.insert(start, hi);
            }
        }
        self.last = (start, hi);
    }

    /// Whether `[lo, hi)` is known covered without a lookup (the last interval touched).
    #[inline]
    pub fn covers(&self, lo: u64, hi: u64) -> bool {
        self.last.0 <= lo && hi <= self.last.1
    }

    /// Whether every byte of `[lo, hi)` is covered (one interval holds them all).
    pub fn contains(&mut self, lo: u64, hi: u64) -> bool {
        if lo >= hi || self.covers(lo, hi) {
            return true;
        }
        match self.map.range(..=lo).next_back() {
            Some((&s, &e)) if e >= hi => {
                (self.last, self.next) = ((s, e), (0, 0));
                true
            }
            _ => false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The intervals, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    /// The gaps of `[0, end)` the intervals leave, in order.
    pub fn gaps(&self, end: u64) -> Vec<(u64, u64)> {
        complement(self.iter(), end)
    }
}

/// The stretches of `[0, end)` that none of `covered` (sorted, disjoint) holds.
fn complement(covered: impl Iterator<Item = (u64, u64)>, end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for (s, e) in covered {
        if s > at {
            out.push((at, s.min(end)));
        }
        at = at.max(e);
        if at >= end {
            break;
        }
    }
    if at < end {
        out.push((at, end));
    }
    out.retain(|(a, b)| a < b);
    out
}

/// What a run left undone in one gm tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapKind {
    /// The program stores to the tensor, and some of its bytes no op wrote.
    Unwritten,
    /// The program read some of the tensor's rows (its first dimension) and not others.
    Unread,
}

impl GapKind {
    /// The warning's `kind` in reports: `unwritten`, `unread_rows`.
    pub fn name(self) -> &'static str {
        match self {
            GapKind::Unwritten => "unwritten",
            GapKind::Unread => "unread_rows",
        }
    }
}

/// Dropped work in one tensor: its first missing range and how much is missing in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    pub kind: GapKind,
    pub tensor: TensorId,
    /// The first missing range, in elements `[lo, hi)` of the tensor, row-major.
    pub elements: (u64, u64),
    /// The same range in bytes from the tensor's start, `[lo, hi)`.
    pub bytes: (u64, u64),
    /// For [`GapKind::Unread`], the same range in rows (indices of the first dimension).
    pub rows: Option<(u64, u64)>,
    /// How much is missing in all: bytes for [`GapKind::Unwritten`], rows for
    /// [`GapKind::Unread`].
    pub missing: u64,
    /// In how many separate ranges.
    pub ranges: usize,
}

/// A gm operand of an op: the tensor and whether the op writes it.
#[derive(Clone, Copy, Debug)]
struct GmAccess<'a> {
    tensor: TensorId,
    write: bool,
    operand: &'a Operand,
}

/// Watches a run's gm reads and writes, every core of a launch together, and says what work it
/// dropped ([`Coverage::gaps`]).
#[derive(Clone, Debug)]
pub struct Coverage<'a> {
    /// The part each core of the launch runs.
    part_of: Vec<u32>,
    /// Per part, per op: its gm operands (empty for most ops).
    ops: Vec<Vec<Vec<GmAccess<'a>>>>,
    /// Per tensor: its shape, bits per element, elements and bytes.
    tensors: Vec<(&'a [u64], u64, u64, u64)>,
    /// Per tensor: its row-major strides, in elements.
    strides: Vec<Vec<u64>>,
    /// Per tensor: whether an op of some part writes it / reads it.
    stored: Vec<bool>,
    loaded: Vec<bool>,
    /// Per tensor: the bytes written.
    written: Vec<Intervals>,
    /// Per tensor: the rows read (indices of its first dimension; of a scalar, row 0).
    read: Vec<Intervals>,
}

impl<'a> Coverage<'a> {
    /// Coverage of the launch of `parts` (one program, every core of its launch running it, or a mixed kernel's `aic` and `aiv`
    /// parts, which share their gm tensors), the cores as [`crate::launch::slots`] numbers
    /// them.
    pub fn for_launch(parts: &[&'a Program], config: &Config) -> Coverage<'a> {
        let part_of = crate::launch::slots(parts, config)
            .iter()
            .map(|s| s.part)
            .collect();
        let first = parts.first().map_or(&[][..], |p| &p.tensors[..]);
        let n = first.len();
        let mut stored = vec![false; n];
        let mut loaded = vec![false; n];
        let ops = parts
            .iter()
            .map(|p| {
                p.ops
                    .iter()
                    .map(|op| {
                        let gm = |o: &'a Operand, write: bool| match o.base {
                            Ref::Tensor(t) => Some(GmAccess {
                                tensor: t,
                                write,
                                operand: o,
                            }),
                            _ => None,
                        };
                        let v: Vec<GmAccess> = op
                            .kind
                            .reads()
                            .into_iter()
                            .filter_map(|o| gm(o, false))
                            .chain(op.kind.writes().into_iter().filter_map(|o| gm(o, true)))
                            .collect();
                        for a in &v {
                            let seen = if a.write { &mut stored } else { &mut loaded };
                            if let Some(s) = seen.get_mut(a.tensor.index()) {
                                *s = true;
                            }
                        }
                        v
                    })
                    .collect()
            })
            .collect();
        Coverage {
            part_of,
            ops,
            tensors: first
                .iter()
                .map(|t| (&t.shape[..], t.dtype.bits(), t.elements, t.bytes))
                .collect(),
            strides: first
                .iter()
                .map(|t| {
                    let mut st = vec![1u64; t.shape.len()];
                    for d in (0..t.shape.len().saturating_sub(1)).rev() {
                        st[d] = st[d + 1].saturating_mul(t.shape[d + 1]);
                    }
                    st
                })
                .collect(),
            stored,
            loaded,
            written: vec![Intervals::default(); n],
            read: vec![Intervals::default(); n],
        }
    }

    /// The bytes written to tensor `t` so far.
    pub fn written(&self, t: TensorId) -> &Intervals {
        &self.written[t.index()]
    }

    /// The rows (indices of its first dimension) of tensor `t` read so far.
    pub fn read(&self, t: TensorId) -> &Intervals {
        &self.read[t.index()]
    }

    /// What the run dropped, tensor by tensor in declaration order (for each, unwritten bytes
    /// before unread rows): of a tensor an op writes, every byte no op wrote; of a tensor an op
    /// reads, when some of its rows were read, the rows that were not. Only a run that ended
    /// means anything here: not a deadlocked or stopped one.
    pub fn gaps(&self) -> Vec<Gap> {
        let mut out = Vec::new();
        for (i, &(shape, bits, elements, bytes)) in self.tensors.iter().enumerate() {
            let tensor = TensorId::new(i);
            if self.stored[i] {
                let gaps = self.written[i].gaps(bytes);
                if let Some(&(lo, hi)) = gaps.first() {
                    out.push(Gap {
                        kind: GapKind::Unwritten,
                        tensor,
                        // an `i1` byte's spare bits are no element
                        elements: (lo * 8 / bits, (hi * 8).div_ceil(bits).min(elements)),
                        bytes: (lo, hi),
                        rows: None,
                        missing: gaps.iter().map(|(a, b)| b - a).sum(),
                        ranges: gaps.len(),
                    });
                }
            }
            let Some(&rows) = shape.first() else {
                continue; // a scalar tensor has no rows
            };
            if !self.loaded[i] || self.read[i].is_empty() {
                continue;
            }
            let gaps = self.read[i].gaps(rows);
            if let Some(&(r0, r1)) = gaps.first() {
                let per_row = elements / rows;
                out.push(Gap {
                    kind: GapKind::Unread,
                    tensor,
                    elements: (r0 * per_row, r1 * per_row),
                    bytes: (r0 * per_row * bits / 8, (r1 * per_row * bits).div_ceil(8)),
                    rows: Some((r0, r1)),
                    missing: gaps.iter().map(|(a, b)| b - a).sum(),
                    ranges: gaps.len(),
                });
            }
        }
        out
    }
}

impl Observer for Coverage<'_> {
    #[inline]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let part = self.part_of.get(issue.core as usize).copied().unwrap_or(0);
        let Some(accesses) = self
            .ops
            .get(part as usize)
            .and_then(|p| p.get(issue.op.index()))
        else {
            return;
        };
        for a in accesses {
            let t = a.tensor.index();
            let shape = self.tensors[t].0;
            if !a.write {
                // a read reaches every row of its first dimension's range: the other dimensions
                // select something (an empty selection moves nothing, and reads no row)
                let mut rows = (0, 1);
                for (d, &extent) in shape.iter().enumerate() {
                    match Sel::of(a.operand, d, extent).at(issue.vars) {
                        Ok((lo, hi)) if lo < hi => {
                            if d == 0 {
                                rows = (lo as u64, hi as u64);
                            }
                        }
                        _ => {
                            rows = (0, 0);
                            break;
                        }
                    }
                }
                self.read[t].insert(rows.0, rows.1);
                continue;
            }
            let set = &mut self.written[t];
            // the selection's bounding bytes: when the last interval touched holds them, so it
            // holds every run (a tile written again costs one comparison, not a walk of its
            // rows); the engine evaluated these expressions before it issued the op, so they
            // succeed
            let bits = self.tensors[t].1;
            let strides = &self.strides[t];
            let (mut first, mut last) = (0u64, 0u64);
            let mut empty = false;
            for (d, &extent) in shape.iter().enumerate() {
                match Sel::of(a.operand, d, extent).at(issue.vars) {
                    Ok((lo, hi)) if lo < hi => {
                        first += lo as u64 * strides[d];
                        last += (hi - 1) as u64 * strides[d];
                    }
                    _ => {
                        empty = true;
                        break;
                    }
                }
            }
            if empty || set.covers(first * bits / 8, ((last + 1) * bits).div_ceil(8)) {
                continue;
            }
            // the runs of one issue come in order: join the adjacent ones before inserting
            let mut run: Option<(u64, u64)> = None;
            let _ =
                crate::footprint::gm_runs_at(
                    a.operand,
                    shape,
                    issue.vars,
                    |lo, n| match &mut run {
                        Some((_, e)) if *e == lo => *e = lo + n,
                        _ => {
                            if let Some((s, e)) = run.replace((lo, lo + n)) {
                                set.insert(s, e);
                            }
                        }
                    },
                );
            if let Some((s, e)) = run {
                set.insert(s, e);
            }
        }
    }

    /// gm tensors have no slots.
    #[inline(always)]
    fn watches_slots(&self) -> bool {
        false
    }

    /// Coverage is a union: the order the cores' calls come in does not change it.
    #[inline(always)]
    fn ordered(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_what_overlaps_or_touches() {
        let mut s = Intervals::default();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 20), (30, 40)]);
        s.insert(20, 25); // touches the first
        s.insert(12, 18); // inside it
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 25), (30, 40)]);
        s.insert(5, 35); // swallows the first, joins the second
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(5, 40)]);
        s.insert(7, 7); // empty
        assert_eq!(s.gaps(50), vec![(0, 5), (40, 50)]);
        assert_eq!(s.gaps(30), vec![(0, 5)]);
        assert_eq!(Intervals::default().gaps(8), vec![(0, 8)]);
        s.insert(0, 50);
        assert!(s.gaps(50).is_empty());
        // a stream of tiles grows one interval; a tile that reaches the next one joins them
        let mut s = Intervals::default();
        for t in 0..4 {
            s.insert(10 * t, 10 * t + 10);
        }
        s.insert(60, 70);
        s.insert(70, 80);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(0, 40), (60, 80)]);
        assert!(s.contains(0, 40) && !s.contains(30, 61));
        s.insert(35, 60);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(0, 80)]);
    }

    proptest::proptest! {
        /// Any sequence of inserts and lookups covers exactly the bytes a byte set says, as
        /// intervals that neither overlap nor touch, and `contains` agrees with it throughout.
        #[test]
        fn intervals_match_a_byte_set(
            ops in proptest::collection::vec((0u64..200, 0u64..40, proptest::bool::ANY), 0..80),
        ) {
            let mut s = Intervals::default();
            let mut bytes = [false; 240];
            for &(lo, n, lookup) in &ops {
                if lookup {
                    let all = (lo..lo + n).all(|b| bytes[b as usize]);
                    proptest::prop_assert_eq!(s.contains(lo, lo + n), all, "{}+{}", lo, n);
                    continue;
                }
                s.insert(lo, lo + n);
                for b in &mut bytes[lo as usize..(lo + n) as usize] {
                    *b = true;
                }
            }
            let runs: Vec<(u64, u64)> = s.iter().collect();
            for w in runs.windows(2) {
                proptest::prop_assert!(w[0].1 < w[1].0, "{runs:?}");
            }
            let mut from_set = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] {
                    let start = i;
                    while i < bytes.len() && bytes[i] {
                        i += 1;
                    }
                    from_set.push((start as u64, i as u64));
                }
                i += 1;
            }
            proptest::prop_assert_eq!(&runs, &from_set);
        }
    }

    fn config() -> Config {
        crate::load_config(crate::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap()
    }

    /// A 1,024-row copy in tiles of `tr` rows, `rows / tr` of them: the tail is dropped when
    /// `tr` does not divide 1,024.
    fn tiled(tr: i64, blocks: u32) -> Program {
        let text = "kernel: rows\ncore: aiv\nlaunch: { blocks: 1 }\nparams: { rows: 1024, cols: 64, tr: 4 }\ngm:\n  x: { shape: [rows, cols], dtype: f16 }\n  y: { shape: [rows, cols], dtype: f16 }\nbody:\n  - for: { var: t, from: block, to: \"rows / tr\", step: blocks }\n    buffers:\n      b: { scope: ub, shape: [tr, cols], dtype: f16 }\n    body:\n      - load: { src: \"x[t * tr : (t + 1) * tr]\", dst: b }\n      - store: { src: b, dst: \"y[t * tr : (t + 1) * tr]\" }\n";
        crate::load_launched(
            text,
            "rows.yaml",
            &config(),
            &[("tr".into(), tr)],
            Some(blocks),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn gaps(p: &Program) -> Vec<Gap> {
        let config = config();
        let mut c = Coverage::for_launch(&[p], &config);
        let r = crate::run_observed(p, &config, &mut c).expect("runs");
        assert!(r.deadlock.is_none());
        c.gaps()
    }

    #[test]
    fn a_tail_that_no_tile_reaches_is_unwritten_and_unread() {
        assert_eq!(gaps(&tiled(4, 1)), vec![]);
        let g = gaps(&tiled(3, 1));
        // 341 tiles of 3 rows: row 1023 (64 f16 elements, 128 bytes) is never touched
        let row = 1023 * 64;
        assert_eq!(
            g,
            vec![
                Gap {
                    kind: GapKind::Unread,
                    tensor: TensorId::new(0),
                    elements: (row, row + 64),
                    bytes: (2 * row, 2 * row + 128),
                    rows: Some((1023, 1024)),
                    missing: 1,
                    ranges: 1,
                },
                Gap {
                    kind: GapKind::Unwritten,
                    tensor: TensorId::new(1),
                    elements: (row, row + 64),
                    bytes: (2 * row, 2 * row + 128),
                    rows: None,
                    missing: 128,
                    ranges: 1,
                },
            ]
        );
    }

    #[test]
    fn a_store_that_never_runs_leaves_the_whole_tensor_unwritten() {
        // 15 i1 elements in 2 bytes: the range stops at the last element, not the byte's end
        let text = "kernel: k\ncore: aiv\nsync: auto\ngm:\n  y: { shape: [3, 5], dtype: i1 }\nbuffers:\n  b: { scope: ub, shape: [3, 5], dtype: i1 }\nbody:\n  - vdup: { scalar: 0, out: b }\n  - for: { var: t, to: 0 }\n    body:\n      - store: { src: b, dst: y }\n";
        let p =
            crate::load_program(text, "k.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            gaps(&p),
            vec![Gap {
                kind: GapKind::Unwritten,
                tensor: TensorId::new(0),
                elements: (0, 15),
                bytes: (0, 2),
                rows: None,
                missing: 2,
                ranges: 1,
            }]
        );
    }

    #[test]
    fn the_cores_of_a_launch_cover_a_tensor_together() {
        // four blocks take every fourth tile: together they cover every row
        assert_eq!(gaps(&tiled(4, 4)), vec![]);
        let g = gaps(&tiled(3, 4));
        assert_eq!(g.len(), 2);
        assert!(g.iter().all(|g| g.elements == (1023 * 64, 1024 * 64)));
    }
}
