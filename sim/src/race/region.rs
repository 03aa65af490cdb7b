//! The bytes a strided access touches, and where two of them first meet.
//!
//! A contiguous access is its byte range alone (the checker's records carry `[lo, hi)`); a
//! strided one is also a [`Region`]: runs of `len` bytes at `base + Σ i_d × stride_d`, `i_d <
//! count_d`, a [`Strided`] selection scaled to bytes. The table finds records by their byte
//! hulls; [`first_common`] then decides whether two accesses whose hulls overlap share a byte,
//! in time independent of their number of runs wherever the two lattices line up (the same
//! row pitch, or one fitting inside a row of the other: two selections of one tensor or
//! buffer always do), and by walking runs, alternately skipping each lattice's gaps, otherwise
//! (at most a budget of steps, after which the answer is unknown and the caller stays
//! conservative).

use crate::footprint::{Strided, STRIDED_DIMS};

/// A strided access's bytes: runs of `len` bytes at `base + Σ i_d × stride_d` for `i_d <
/// count_d`, `dims[..rank]` = `(count_d, stride_d)` outermost first; runs in increasing order
/// and never overlapping (each stride at least the span of what it repeats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Region {
    pub base: u64,
    pub len: u64,
    pub rank: u8,
    pub dims: [(u64, u64); STRIDED_DIMS],
}

impl Region {
    /// The bytes of selection `s` of `bits`-bit elements whose root starts at byte `at`, or
    /// `None` when they are no such lattice: an `i1` selection whose runs do not start on the
    /// same bit of a byte, or whose rounded-out runs overlap other than in its innermost
    /// dimension. A selection that turns out contiguous in bytes has rank 0.
    pub fn of(s: &Strided, bits: u64, at: u64) -> Option<Region> {
        let dims = s.dims();
        let mut out = [(0u64, 0u64); STRIDED_DIMS];
        let (base, mut len) = if bits.is_multiple_of(8) {
            let b = bits / 8;
            for (o, &(c, st)) in out.iter_mut().zip(dims) {
                *o = (c, st * b);
            }
            (at + s.first * b, s.len * b)
        } else {
            // every run must start on the same bit of its byte for the rounded-out runs to
            // repeat at a byte stride
            for (o, &(c, st)) in out.iter_mut().zip(dims) {
                if !(st * bits).is_multiple_of(8) {
                    return None;
                }
                *o = (c, st * bits / 8);
            }
            let bit = s.first * bits;
            let end = (bit + s.len * bits).div_ceil(8);
            (at + bit / 8, end - bit / 8)
        };
        let mut rank = dims.len();
        // rounding out can make runs touch or overlap: in the innermost dimension they then
        // merge into one run; further out the lattice would interleave
        while rank > 0 && out[rank - 1].1 <= len {
            let (c, st) = out[rank - 1];
            len += (c - 1) * st;
            rank -= 1;
        }
        // canonical: equal regions compare equal
        out[rank..].fill((0, 0));
        let mut span = len;
        for &(c, st) in out[..rank].iter().rev() {
            if st < span {
                return None;
            }
            span += (c - 1) * st;
        }
        Some(Region {
            base,
            len,
            rank: rank as u8,
            dims: out,
        })
    }

    #[inline]
    pub fn runs(&self) -> Runs<'_> {
        Runs {
            base: self.base,
            len: self.len,
            dims: &self.dims[..self.rank as usize],
        }
    }
}

/// A lattice of byte runs, borrowed ([`Region::runs`], or one run with no dimensions).
#[derive(Clone, Copy, Debug)]
pub(super) struct Runs<'a> {
    pub base: u64,
    pub len: u64,
    pub dims: &'a [(u64, u64)],
}

/// What [`first_common`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Common {
    /// No byte in both.
    Disjoint,
    /// `[lo, hi)`: bytes in both, `lo` the lowest such byte.
    At(u64, u64),
    /// The step budget ran out before an answer.
    Unknown,
}

/// Steps the walk of two lattices that do not line up may take per pair of accesses; past
/// them the pair is compared by byte hull (conservative, and said so in the hazard).
pub(super) const WALK_BUDGET: u32 = 1 << 14;

impl<'a> Runs<'a> {
    /// One contiguous run `[lo, hi)`.
    pub fn range(lo: u64, hi: u64) -> Runs<'static> {
        Runs {
            base: lo,
            len: hi - lo,
            dims: &[],
        }
    }

    /// How far past `base` the lattice reaches: its hull is `[base, base + span)`.
    #[inline]
    fn span(&self) -> u64 {
        span(self.len, self.dims)
    }

    /// The first run, or part of one, at or after byte `x`: `[max(x, start), end)`.
    fn next(&self, x: u64) -> Option<(u64, u64)> {
        if x <= self.base {
            // the first run of a lattice is at its base
            return Some((self.base, self.base + self.len));
        }
        let Some((&(n, s), inner)) = self.dims.split_first() else {
            let end = self.base + self.len;
            return (x < end).then_some((x, end));
        };
        // the repetition x falls in (or the last), then the first run of the one after it: a
        // repetition spans at most its stride, so no earlier one reaches x
        let i = ((x - self.base) / s).min(n - 1);
        let sub = Runs {
            base: self.base + i * s,
            len: self.len,
            dims: inner,
        };
        sub.next(x).or_else(|| {
            (i + 1 < n).then(|| {
                let at = self.base + (i + 1) * s;
                (at, at + self.len)
            })
        })
    }

    /// This lattice as repetitions of pitch `s`: `(count, one repetition from its own base)`,
    /// when its outermost stride is `s`, or it fits in a span of `s` (one repetition).
    fn rows(self, s: u64) -> Option<(u64, Runs<'a>)> {
        match self.dims.split_first() {
            Some((&(n, st), inner)) if st == s => Some((
                n,
                Runs {
                    base: self.base,
                    len: self.len,
                    dims: inner,
                },
            )),
            _ if self.span() <= s => Some((1, self)),
            _ => None,
        }
    }
}

#[inline]
fn span(len: u64, dims: &[(u64, u64)]) -> u64 {
    dims.iter().fold(len, |acc, &(n, s)| acc + (n - 1) * s)
}

/// The lowest bytes two lattices share. Where they line up, row by row: with `s` the larger
/// outermost stride, each is rows of pitch `s` (or fits in one), and measured from a common
/// origin each row's bytes lie inside one pitch; then a byte `o + r·s + c` is in both exactly
/// when row `r` is in both row ranges and column `c` in both rows, which recurses on the rows'
/// lattices. Otherwise the runs are walked, each step jumping to the next run of one lattice
/// at or after the current run of the other (`budget` steps at most, shared by the recursion).
pub(super) fn first_common<'a>(a: Runs<'a>, b: Runs<'a>, budget: &mut u32) -> Common {
    if a.dims.is_empty() {
        return in_run(b, a.base, a.base + a.len);
    }
    if b.dims.is_empty() {
        return in_run(a, b.base, b.base + b.len);
    }
    let s = a.dims[0].1.max(b.dims[0].1);
    if let (Some((na, ra)), Some((nb, rb))) = (a.rows(s), b.rows(s)) {
        // an origin from which both rows stay inside one pitch: either lattice's base
        for o in [a.base, b.base] {
            let place = |r: &Runs| {
                let off = r.base as i128 - o as i128;
                let (q, c) = (off.div_euclid(s as i128), off.rem_euclid(s as i128) as u64);
                (c + r.span() <= s).then_some((q, c))
            };
            let (Some((qa, ca)), Some((qb, cb))) = (place(&ra), place(&rb)) else {
                continue;
            };
            let (from, to) = (qa.max(qb), (qa + na as i128).min(qb + nb as i128));
            if from >= to {
                return Common::Disjoint;
            }
            let cols = |r: Runs<'a>, c| Runs { base: c, ..r };
            return match first_common(cols(ra, ca), cols(rb, cb), budget) {
                Common::At(lo, hi) => {
                    // from >= the origin's own row, 0
                    let row = o + from as u64 * s;
                    Common::At(row + lo, row + hi)
                }
                other => other,
            };
        }
    }
    walk(a, b, budget)
}

/// The first bytes of `r` inside `[lo, hi)`.
#[inline]
fn in_run(r: Runs, lo: u64, hi: u64) -> Common {
    match r.next(lo) {
        Some((x, y)) if x < hi => Common::At(x, y.min(hi)),
        _ => Common::Disjoint,
    }
}

/// [`first_common`] by walking: the next run of `a` at or after `x`, then the next run of `b`
/// at or after its start; they share bytes when that starts inside it, and otherwise nothing
/// before it is in both.
fn walk(a: Runs, b: Runs, budget: &mut u32) -> Common {
    let mut x = a.base.max(b.base);
    loop {
        if *budget == 0 {
            return Common::Unknown;
        }
        *budget -= 1;
        let Some((a0, a1)) = a.next(x) else {
            return Common::Disjoint;
        };
        let Some((b0, b1)) = b.next(a0) else {
            return Common::Disjoint;
        };
        if b0 < a1 {
            return Common::At(b0, a1.min(b1));
        }
        x = b0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(base: u64, len: u64, dims: &[(u64, u64)]) -> Region {
        let mut d = [(0, 0); STRIDED_DIMS];
        d[..dims.len()].copy_from_slice(dims);
        Region {
            base,
            len,
            rank: dims.len() as u8,
            dims: d,
        }
    }

    fn bytes(r: Runs) -> Vec<u64> {
        let mut out = Vec::new();
        fn rec(base: u64, len: u64, dims: &[(u64, u64)], out: &mut Vec<u64>) {
            match dims.split_first() {
                None => out.extend(base..base + len),
                Some((&(n, s), inner)) => {
                    for i in 0..n {
                        rec(base + i * s, len, inner, out);
                    }
                }
            }
        }
        rec(r.base, r.len, r.dims, &mut out);
        out
    }

    /// The brute-force answer: the lowest common byte, if any.
    fn lowest_common(a: Runs, b: Runs) -> Option<u64> {
        let bb: std::collections::HashSet<u64> = bytes(b).into_iter().collect();
        bytes(a).into_iter().filter(|x| bb.contains(x)).min()
    }

    fn check(a: Runs, b: Runs) -> Common {
        let mut budget = WALK_BUDGET;
        let got = first_common(a, b, &mut budget);
        let (ab, bb) = (bytes(a), bytes(b));
        match (got, lowest_common(a, b)) {
            (Common::Disjoint, None) => {}
            (Common::At(lo, hi), Some(x)) => {
                assert_eq!(lo, x, "{a:?} {b:?}");
                assert!(hi > lo);
                assert!((lo..hi).all(|y| ab.contains(&y) && bb.contains(&y)));
            }
            (got, want) => panic!("{a:?} / {b:?}: got {got:?}, want lowest {want:?}"),
        }
        // symmetric
        let mut budget = WALK_BUDGET;
        assert_eq!(
            first_common(b, a, &mut budget),
            got,
            "{a:?} / {b:?} swapped"
        );
        got
    }

    #[test]
    fn column_blocks_of_the_same_rows_do_not_meet() {
        // y[:, 0:64] and y[:, 64:128] of a [16, 256] f32 tensor: rows of 1024 bytes
        let a = region(0, 256, &[(16, 1024)]);
        let b = region(256, 256, &[(16, 1024)]);
        assert_eq!(check(a.runs(), b.runs()), Common::Disjoint);
        // y[:, 32:96] meets both, first in row 0
        let c = region(128, 256, &[(16, 1024)]);
        assert_eq!(check(a.runs(), c.runs()), Common::At(128, 256));
        assert_eq!(check(b.runs(), c.runs()), Common::At(256, 384));
        // a contiguous row meets a column block in that row only
        assert_eq!(
            check(a.runs(), Runs::range(3 * 1024 + 300, 3 * 1024 + 1000)),
            Common::Disjoint
        );
        assert_eq!(
            check(a.runs(), Runs::range(3 * 1024 + 200, 4 * 1024 + 8)),
            Common::At(3 * 1024 + 200, 3 * 1024 + 256)
        );
    }

    #[test]
    fn three_dimensional_blocks_and_different_pitches() {
        // t[:, 0:4, 0:8] and t[:, 4:8, 0:8] of a [3, 8, 16] i8 tensor: disjoint planes of rows
        let a = region(0, 8, &[(3, 128), (4, 16)]);
        let b = region(64, 8, &[(3, 128), (4, 16)]);
        assert_eq!(check(a.runs(), b.runs()), Common::Disjoint);
        // one row of one plane inside another's rows
        let c = region(128 + 4 * 16 + 4, 2, &[]);
        assert_eq!(check(b.runs(), c.runs()), Common::At(196, 198));
        // lattices of unrelated pitches are walked
        let d = region(5, 3, &[(40, 7)]);
        let e = region(0, 2, &[(30, 11)]);
        check(d.runs(), e.runs());
        let f = region(1, 1, &[(50, 2)]);
        let g = region(2, 1, &[(50, 2)]);
        assert_eq!(check(f.runs(), g.runs()), Common::Disjoint);
    }

    #[test]
    fn a_walk_past_its_budget_is_unknown() {
        // odd and even bytes, in lattices that do not line up: a step per run
        let a = region(1, 1, &[(100_000, 2)]);
        let b = region(0, 1, &[(50_000, 4)]);
        let mut budget = 10;
        assert_eq!(
            first_common(a.runs(), b.runs(), &mut budget),
            Common::Unknown
        );
        let mut budget = WALK_BUDGET * 16;
        assert_eq!(
            first_common(a.runs(), b.runs(), &mut budget),
            Common::Disjoint
        );
    }

    #[test]
    fn random_lattices_agree_with_their_byte_sets() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let lattice = |next: &mut dyn FnMut(u64) -> u64, pitch: Option<u64>| {
            let len = 1 + next(6);
            let rank = next(3) as usize;
            let mut dims = Vec::new();
            let mut span = len;
            for k in 0..rank {
                let s = match pitch {
                    Some(p) if k + 1 == rank => p.max(span),
                    _ => span + next(6),
                };
                let n = 1 + next(5);
                dims.push((n, s));
                span += s * (n - 1);
            }
            dims.reverse();
            region(next(40), len, &dims)
        };
        for i in 0..3000 {
            // half the pairs share their outermost pitch, as two selections of one tensor do
            let pitch = (i % 2 == 0).then(|| 8 + next(24));
            let a = lattice(&mut next, pitch);
            let b = lattice(&mut next, pitch);
            assert_ne!(check(a.runs(), b.runs()), Common::Unknown);
        }
    }

    #[test]
    fn bytes_of_selections() {
        use crate::footprint::Strided;
        let mut dims = [(0, 0); STRIDED_DIMS];
        dims[0] = (4, 16);
        let s = Strided {
            first: 2,
            len: 4,
            rank: 1,
            dims,
        };
        // f32 at byte 100: 16 bytes every 64
        let r = Region::of(&s, 32, 100).unwrap();
        assert_eq!((r.base, r.len, r.runs().dims), (108, 16, &[(4, 64)][..]));
        // i1: 4 bits from bit 2 of every other byte: one byte each, 2 apart
        let r = Region::of(&s, 1, 0).unwrap();
        assert_eq!((r.base, r.len, r.runs().dims), (0, 1, &[(4, 2)][..]));
        // i1 rows not on the same bit: no byte lattice
        let mut odd = s;
        odd.dims[0] = (4, 12);
        assert_eq!(Region::of(&odd, 1, 0), None);
        // i1 runs that round out to touching bytes merge into one
        let mut tight = s;
        tight.dims[0] = (4, 8);
        tight.first = 6;
        let r = Region::of(&tight, 1, 0).unwrap();
        assert_eq!((r.base, r.len, r.rank), (0, 5, 0));
    }
}
