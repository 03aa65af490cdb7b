//! The recent accesses of one memory (an on-chip scope, or one gm tensor) by byte range.
//!
//! Records are kept sorted by their start byte, together with the longest record's length, so
//! the records overlapping a query range are found by a binary search for the first record
//! starting at or after the query's end and a backward scan that stops as soon as a record
//! starts more than the longest length before the query's start. The live set is small (the
//! accesses no pipe is yet known to have passed), so a sorted `Vec` beats a tree here.

/// "No second epoch" in [`Rec::alt`].
pub(super) const NO_ALT: u64 = u64::MAX;

/// [`Shape::approx`]: a strided access whose runs could not be kept (an `i1` selection whose
/// rows start on different bits, or one of more than [`crate::footprint::STRIDED_DIMS`]
/// dimensions), compared by its byte range.
pub(super) const HULL: u8 = 1;
/// [`Shape::approx`]: an access through a `select`, recorded on each of its buffers.
pub(super) const SELECT: u8 = 2;

/// What an access's byte range stands for: its bytes, or a strided access's hull whose runs
/// are a region of the checker's slab; and why it may stand for more bytes than the access
/// touches ([`HULL`], [`SELECT`]). Packed in 32 bits (an id of 30, two flags) so that a record
/// stays 56 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Shape(u32);

impl Default for Shape {
    fn default() -> Shape {
        Shape::RANGE
    }
}

impl Shape {
    /// The id bits' value for "no region".
    const NONE: u32 = (1 << 30) - 1;

    /// The access is exactly its byte range.
    pub const RANGE: Shape = Shape(Self::NONE);

    /// Strided, its runs region `id` of the slab.
    #[inline]
    pub fn region(id: u32) -> Shape {
        assert!(id < Self::NONE, "race checker: more than 2^30 regions live");
        Shape(id)
    }

    /// The region, if strided.
    #[inline(always)]
    pub fn id(self) -> Option<u32> {
        let id = self.0 & Self::NONE;
        (id != Self::NONE).then_some(id)
    }

    /// [`HULL`] and [`SELECT`], or 0 when exact.
    #[inline(always)]
    pub fn approx(self) -> u8 {
        (self.0 >> 30) as u8
    }

    /// The same with flags `approx` added.
    #[inline(always)]
    pub fn with(self, approx: u8) -> Shape {
        Shape(self.0 | (approx as u32) << 30)
    }

    /// Whether the access is exactly its byte range (the common case: one test).
    #[inline(always)]
    pub fn is_exact_range(self) -> bool {
        self.0 == Self::NONE
    }
}

/// One recorded access: the bytes `[lo, hi)` read or written by one dynamic instruction (a
/// strided access: its byte hull, and its runs in the checker's region slab).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rec {
    pub lo: u64,
    pub hi: u64,
    /// The instruction's issue sequence number (program order).
    pub seq: u64,
    /// The instruction's index on its pipe (its clock epoch).
    pub idx: u64,
    /// The index of the M part of the same `mmad_l1` for the MTE1 part's accesses (knowing the
    /// M part completed implies knowing the MTE1 part completed), else [`NO_ALT`].
    pub alt: u64,
    pub op: u32,
    /// The loop-variable values, a slot of the checker's variable slab.
    pub vars: u32,
    /// What `[lo, hi)` stands for ([`Shape`]).
    pub shape: Shape,
    /// The core of the launch that made it (gm is shared by every core); a launch has fewer
    /// than 2^16 cores (`limits`).
    pub core: u16,
    pub pipe: u8,
    pub write: bool,
}

// what keeps a record at 56 bytes: the core fits 16 bits
const _: () = assert!(
    crate::limits::MAX_BLOCKS as u64 * (1 + crate::limits::MAX_AIV_PER_AIC as u64) <= 1 << 16
);

/// The recent accesses of one memory (of one core, or gm's, shared by the cores).
#[derive(Clone, Debug)]
pub(super) struct Table {
    recs: Vec<Rec>,
    /// The longest `hi - lo` of any record present (an upper bound after removals).
    max_len: u64,
    /// Prune when the table reaches this many records (amortised: twice the live size).
    pub prune_at: usize,
    /// The pipes that can access this memory at all (a bit set over `Pipe::index`).
    pub pipes: u8,
    /// Whether any op writes this memory; a read-only memory never has a hazard.
    pub written: bool,
}

/// The smallest pruning threshold.
pub(super) const PRUNE_MIN: usize = 32;

impl Table {
    pub fn new() -> Table {
        Table {
            recs: Vec::new(),
            max_len: 0,
            prune_at: PRUNE_MIN,
            pipes: 0,
            written: false,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    #[inline]
    pub fn get(&self, i: usize) -> &Rec {
        &self.recs[i]
    }

    /// The indices `lo_i..hi_i` of the slice of records that may overlap `[lo, hi)`: every
    /// overlapping record is in it, and no record before or after it overlaps. Callers still
    /// test each one ([`Rec::overlaps`]).
    #[cfg(test)]
    pub fn candidates(&self, lo: u64, hi: u64) -> (usize, usize) {
        let end = self.recs.partition_point(|r| r.lo < hi);
        // sorted by lo: every record before one ending by lo + max_len ends by then too
        let start = self.recs[..end]
            .iter()
            .rposition(|r| r.lo.saturating_add(self.max_len) <= lo)
            .map_or(0, |i| i + 1);
        (start, end)
    }

    /// The records starting before `hi` (every record that may overlap a range ending there
    /// is among them), and the longest length of any record: scanned backwards, the records
    /// overlapping `[lo, hi)` end where one starts `max_len` or more before `lo` (the rule of
    /// [`Table::candidates`]).
    #[inline]
    pub fn upto(&self, hi: u64) -> (&[Rec], u64) {
        // an access past every record (a stream of tiles, each after the last) needs no search
        let end = match self.recs.last() {
            Some(r) if r.lo < hi => self.recs.len(),
            _ => self.recs.partition_point(|r| r.lo < hi),
        };
        (&self.recs[..end], self.max_len)
    }

    /// Adds a record, after the ones starting at the same byte.
    #[cfg(test)]
    pub fn insert(&mut self, rec: Rec) {
        let at = self.recs.partition_point(|r| r.lo <= rec.lo);
        self.insert_at(at, rec);
    }

    /// Adds a record at index `at`, which must be after the ones starting at or before its
    /// start and before the others (what [`Table::insert`] finds by a search).
    #[inline]
    pub fn insert_at(&mut self, at: usize, rec: Rec) {
        debug_assert_eq!(at, self.recs.partition_point(|r| r.lo <= rec.lo));
        self.max_len = self.max_len.max(rec.hi - rec.lo);
        self.recs.insert(at, rec);
    }

    /// Replaces record `i` by `rec`, which starts at the same byte.
    #[inline]
    pub fn replace(&mut self, i: usize, rec: Rec) {
        debug_assert_eq!(self.recs[i].lo, rec.lo);
        self.max_len = self.max_len.max(rec.hi - rec.lo);
        self.recs[i] = rec;
    }

    /// Keeps the records for which `keep` holds, calling `dropped` on the others, and
    /// recomputes the longest length. (A plain compaction: `Vec::retain` with these closures
    /// inside is not inlined, at a call per record.)
    #[inline]
    pub fn retain(&mut self, mut keep: impl FnMut(&Rec) -> bool, mut dropped: impl FnMut(&Rec)) {
        let mut kept = 0;
        let mut max_len = 0;
        for i in 0..self.recs.len() {
            let r = self.recs[i];
            if keep(&r) {
                self.recs[kept] = r;
                kept += 1;
                max_len = max_len.max(r.hi - r.lo);
            } else {
                dropped(&r);
            }
        }
        self.recs.truncate(kept);
        self.max_len = max_len;
    }
}

impl Rec {
    #[inline(always)]
    pub fn overlaps(&self, lo: u64, hi: u64) -> bool {
        self.lo < hi && lo < self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(lo: u64, hi: u64, seq: u64) -> Rec {
        Rec {
            lo,
            hi,
            seq,
            idx: seq,
            alt: NO_ALT,
            op: 0,
            vars: 0,
            shape: Shape::RANGE,
            core: 0,
            pipe: 0,
            write: true,
        }
    }

    fn overlapping(t: &Table, lo: u64, hi: u64) -> Vec<u64> {
        let (a, b) = t.candidates(lo, hi);
        let mut v: Vec<u64> = (a..b)
            .map(|i| t.get(i))
            .filter(|r| r.overlaps(lo, hi))
            .map(|r| r.seq)
            .collect();
        v.sort();
        v
    }

    /// The checker's one-pass scan: backwards over [`Table::upto`] until a record starts
    /// `max_len` or more before `lo`; also where a record starting at `lo` would go.
    fn scanned(t: &Table, lo: u64, hi: u64) -> (Vec<u64>, usize) {
        let (recs, max_len) = t.upto(hi);
        let (mut v, mut at) = (Vec::new(), 0);
        for (i, r) in recs.iter().enumerate().rev() {
            if r.lo.saturating_add(max_len) <= lo {
                at += i + 1;
                break;
            }
            at += usize::from(r.lo <= lo);
            if r.overlaps(lo, hi) {
                v.push(r.seq);
            }
        }
        v.sort();
        (v, at)
    }

    /// Brute force over every record.
    fn brute(recs: &[Rec], lo: u64, hi: u64) -> Vec<u64> {
        let mut v: Vec<u64> = recs
            .iter()
            .filter(|r| r.overlaps(lo, hi))
            .map(|r| r.seq)
            .collect();
        v.sort();
        v
    }

    #[test]
    fn finds_exactly_the_overlapping_records() {
        let mut t = Table::new();
        let recs = [
            rec(0, 0x8000, 0),
            rec(0x8000, 0x10000, 1),
            rec(0x100, 0x200, 2),
            rec(0x10000, 0x10004, 3),
            rec(0x7fff, 0x8001, 4),
            rec(0, 0x8000, 5),
        ];
        for r in recs {
            t.insert(r);
        }
        assert_eq!(overlapping(&t, 0, 0x8000), vec![0, 2, 4, 5]);
        assert_eq!(overlapping(&t, 0x8000, 0x8001), vec![1, 4]);
        assert_eq!(overlapping(&t, 0x10000, 0x20000), vec![3]);
        assert_eq!(overlapping(&t, 0x20000, 0x20010), Vec::<u64>::new());
        // half-open: touching ranges do not overlap
        assert_eq!(overlapping(&t, 0x10004, 0x10008), Vec::<u64>::new());
        for lo in (0..0x10010u64).step_by(0x7f1) {
            for len in [1u64, 0x10, 0x800, 0x8000] {
                assert_eq!(
                    overlapping(&t, lo, lo + len),
                    brute(&recs, lo, lo + len),
                    "[{lo:#x}, {:#x})",
                    lo + len
                );
            }
        }
    }

    #[test]
    fn pseudo_random_tables_agree_with_brute_force() {
        // a fixed linear congruential sequence: deterministic, no dependency
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        for _ in 0..20 {
            let mut t = Table::new();
            let mut recs = Vec::new();
            for s in 0..60 {
                let lo = next(4096);
                let r = rec(lo, lo + 1 + next(300), s);
                recs.push(r);
                t.insert(r);
            }
            // remove a third, as pruning does
            t.retain(|r| r.seq % 3 != 0, |_| {});
            recs.retain(|r| r.seq % 3 != 0);
            for _ in 0..200 {
                let lo = next(4500);
                let hi = lo + 1 + next(500);
                assert_eq!(overlapping(&t, lo, hi), brute(&recs, lo, hi));
                let at = (0..t.len()).filter(|&i| t.get(i).lo <= lo).count();
                assert_eq!(scanned(&t, lo, hi), (brute(&recs, lo, hi), at));
            }
        }
    }

    #[test]
    fn a_record_is_56_bytes_and_its_shape_packs_id_and_flags() {
        assert_eq!(std::mem::size_of::<Rec>(), 56);
        let s = Shape::region(7).with(SELECT);
        assert_eq!((s.id(), s.approx()), (Some(7), SELECT));
        assert!(!s.is_exact_range());
        let r = Shape::RANGE.with(HULL | SELECT);
        assert_eq!((r.id(), r.approx()), (None, HULL | SELECT));
        assert!(Shape::RANGE.is_exact_range() && !r.is_exact_range());
    }

    #[test]
    fn sorted_by_start_with_stable_ties_and_replace_in_place() {
        let mut t = Table::new();
        t.insert(rec(10, 20, 0));
        t.insert(rec(5, 6, 1));
        t.insert(rec(10, 12, 2));
        let order: Vec<u64> = (0..t.len()).map(|i| t.get(i).seq).collect();
        assert_eq!(order, vec![1, 0, 2]);
        t.replace(1, rec(10, 30, 3));
        assert_eq!(overlapping(&t, 25, 26), vec![3]);
        let mut dropped = Vec::new();
        t.retain(|r| r.seq != 3, |r| dropped.push(r.seq));
        assert_eq!(dropped, vec![3]);
        assert_eq!(overlapping(&t, 0, 100), vec![1, 2]);
        // the longest length shrinks with the records: a far query scans nothing
        assert_eq!(t.candidates(1000, 1001), (2, 2));
    }
}
