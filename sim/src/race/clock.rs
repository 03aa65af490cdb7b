//! Vector clocks over the pipes of the cores of a launch.
//!
//! Component `(c, p)` of a clock counts a prefix of pipe p's instructions on core c (in issue
//! order, which is the pipe's start order): `n` means instructions `0..n` of that pipe are
//! known to have completed. Knowledge about a pipe is prefix-closed because everything that
//! tells one pipe about another (a `set_flag`, a `barrier`, `barrier: all`, a `cross_set`)
//! waits for *every* earlier instruction of its pipe; the one exception, an `mmad_l1`'s M part
//! knowing its own MTE1 part, is carried by the access instead (see [`super`]).
//!
//! A [`Clock`] belongs to one core: its own pipes are an inline array (`l`), exactly the
//! one-core clock, and the other cores' pipes, which only cross-core signals teach it, a
//! shared vector (`r`, indexed `core * Pipe::COUNT + pipe`, its own core's entries unused)
//! that is `None` until such a signal arrives, so a one-core run never allocates and copying a
//! clock is cheap. A [`Global`] clock is a flat vector over every core's pipes: what a
//! `cross_set` publishes, and the lower bounds pruning computes.

use std::sync::Arc;

use crate::types::Pipe;

pub(super) const N: usize = Pipe::COUNT;

/// A flat clock over every core's pipes, `core * N + pipe`.
pub(super) type Global = Arc<[u64]>;

/// What one core's instruction knows to have completed (see the module doc).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub(super) struct Clock {
    /// The core's own pipes.
    pub l: [u64; N],
    /// The other cores' pipes, once a cross-core signal told it anything.
    pub r: Option<Global>,
}

impl Clock {
    /// Knows nothing.
    pub const ZERO: Clock = Clock { l: [0; N], r: None };

    /// Componentwise max: knows what either knows (both of the same core).
    #[inline(always)]
    pub fn join(&mut self, other: &Clock) {
        // a branch per component, not a max: vectorised, a u64 max has no SSE2 instruction
        // and costs several times a compare and a store
        for (a, b) in self.l.iter_mut().zip(other.l.iter()) {
            if *b > *a {
                *a = *b;
            }
        }
        if let Some(o) = &other.r {
            join_remote(&mut self.r, o);
        }
    }

    /// Becomes `k`, which knows at least what this clock knows: the remote part is replaced
    /// only when `k` has one (without one, this one has none either), so the common one-core
    /// case is a plain copy.
    #[inline(always)]
    pub fn set_to(&mut self, k: Clock) {
        debug_assert!(k.r.is_some() || self.r.is_none());
        self.l = k.l;
        if k.r.is_some() {
            self.r = k.r;
        }
    }

    /// Whether instruction `idx` of the own core's pipe `p` is known to have completed.
    #[inline(always)]
    pub fn knows(&self, p: usize, idx: u64) -> bool {
        self.l[p] > idx
    }

    /// Whether instruction `idx` of pipe `p` of another core `c` is known to have completed.
    #[inline(always)]
    pub fn knows_remote(&self, c: usize, p: usize, idx: u64) -> bool {
        self.r.as_ref().is_some_and(|r| r[c * N + p] > idx)
    }

    /// Records that instructions `0..n` of the own core's pipe `p` have completed.
    #[inline(always)]
    pub fn advance(&mut self, p: usize, n: u64) {
        self.l[p] = self.l[p].max(n);
    }

    /// The clock as a flat one over `cores` cores, this one being core `me`.
    pub fn publish(&self, me: usize, cores: usize) -> Global {
        let mut g = match &self.r {
            Some(r) => r.to_vec(),
            None => vec![0; cores * N],
        };
        g[me * N..me * N + N].copy_from_slice(&self.l);
        g.into()
    }

    /// Learns what `g` (a published clock) knows, this one being core `me`.
    pub fn take(&mut self, me: usize, g: &Global) {
        for (a, b) in self.l.iter_mut().zip(&g[me * N..me * N + N]) {
            *a = (*a).max(*b);
        }
        if g.len() > N {
            join_remote(&mut self.r, g);
        }
    }

    /// Lowers `floor` (a flat clock over every core) to what this clock of core `me` knows.
    pub fn meet_into(&self, me: usize, floor: &mut [u64]) {
        for (c, chunk) in floor.chunks_mut(N).enumerate() {
            for (p, f) in chunk.iter_mut().enumerate() {
                let v = if c == me {
                    self.l[p]
                } else {
                    self.r.as_ref().map_or(0, |r| r[c * N + p])
                };
                *f = (*f).min(v);
            }
        }
    }
}

/// `a = max(a, b)` componentwise, sharing a vector when one dominates (never in a one-core
/// run: kept out of line).
#[cold]
#[inline(never)]
fn join_remote(a: &mut Option<Global>, b: &Global) {
    let Some(x) = a else {
        *a = Some(b.clone());
        return;
    };
    if Arc::ptr_eq(x, b) {
        return;
    }
    // Which one dominates, without a branch or a compare per component (SSE2 has no 64-bit
    // compare): components count instructions, far below 2^63, so `u < v` is the top bit of
    // `u - v`, and OR-ing the differences tells whether any component is below.
    let (mut x_below, mut b_below) = (0u64, 0u64);
    for (u, v) in x.iter().zip(b.iter()) {
        debug_assert!(*u < 1 << 63 && *v < 1 << 63);
        x_below |= u.wrapping_sub(*v);
        b_below |= v.wrapping_sub(*u);
    }
    let (x_ge, b_ge) = (x_below >> 63 == 0, b_below >> 63 == 0);
    if x_ge {
        return;
    }
    if b_ge {
        *a = Some(b.clone());
        return;
    }
    *a = Some(max_of(x, b));
}

/// The componentwise max of two flat clocks.
pub(super) fn max_of(a: &[u64], b: &[u64]) -> Global {
    a.iter().zip(b).map(|(u, v)| *u.max(v)).collect()
}

/// The componentwise min of two flat clocks.
pub(super) fn min_of(a: &[u64], b: &[u64]) -> Global {
    a.iter().zip(b).map(|(u, v)| *u.min(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(l: [u64; N]) -> Clock {
        Clock { l, r: None }
    }

    #[test]
    fn join_is_componentwise() {
        let mut a = local([1, 5, 0, 3, 0, 0, 9]);
        let b = local([2, 4, 0, 3, 7, 0, 1]);
        a.join(&b);
        assert_eq!(a, local([2, 5, 0, 3, 7, 0, 9]));
        assert!(a.r.is_none(), "a one-core join allocates nothing");
    }

    #[test]
    fn knows_is_a_prefix() {
        let mut c = Clock::ZERO;
        assert!(!c.knows(Pipe::V.index(), 0));
        c.advance(Pipe::V.index(), 3);
        assert!(c.knows(Pipe::V.index(), 0));
        assert!(c.knows(Pipe::V.index(), 2));
        assert!(!c.knows(Pipe::V.index(), 3));
        // advancing never forgets
        c.advance(Pipe::V.index(), 1);
        assert!(c.knows(Pipe::V.index(), 2));
        assert!(!c.knows(Pipe::M.index(), 0));
    }

    #[test]
    fn join_is_idempotent_commutative_and_monotone() {
        let a = local([3, 1, 4, 1, 5, 9, 2]);
        let b = local([2, 7, 1, 8, 2, 8, 1]);
        let mut ab = a.clone();
        ab.join(&b);
        let mut ba = b.clone();
        ba.join(&a);
        assert_eq!(ab, ba);
        let mut abb = ab.clone();
        abb.join(&b);
        assert_eq!(abb, ab);
        for p in 0..N {
            assert!(ab.l[p] >= a.l[p] && ab.l[p] >= b.l[p]);
        }
    }

    #[test]
    fn publish_and_take_carry_knowledge_between_cores() {
        let v = Pipe::V.index();
        let mte3 = Pipe::Mte3.index();
        // core 0 knows 4 of its MTE3 instructions complete and publishes that
        let mut c0 = Clock::ZERO;
        c0.advance(mte3, 4);
        let g = c0.publish(0, 2);
        assert_eq!(g.len(), 2 * N);
        // core 1 learns it: a remote fact, not its own
        let mut c1 = Clock::ZERO;
        c1.advance(v, 2);
        c1.take(1, &g);
        assert!(c1.knows_remote(0, mte3, 3));
        assert!(!c1.knows_remote(0, mte3, 4));
        assert!(!c1.knows(mte3, 0));
        assert!(c1.knows(v, 1));
        // and passes it on: core 0 learns back what it published (and core 1's V)
        let back = c1.publish(1, 2);
        let mut c0b = Clock::ZERO;
        c0b.take(0, &back);
        assert!(c0b.knows(mte3, 3));
        assert!(c0b.knows_remote(1, v, 1));
        // a join of two remote vectors is their max; a dominated one is shared, not copied
        let mut j = c1.clone();
        j.join(&c0b);
        assert!(j.knows_remote(0, mte3, 3));
        let mut s = c1.clone();
        s.join(&c1);
        assert!(Arc::ptr_eq(s.r.as_ref().unwrap(), c1.r.as_ref().unwrap()));
        // the floor of the two is what both know
        let mut floor = vec![u64::MAX; 2 * N];
        c1.meet_into(1, &mut floor);
        c0b.meet_into(0, &mut floor);
        assert_eq!(floor[mte3], 4); // core 0's MTE3: c1 knows 4, c0b knows 4
        assert_eq!(floor[N + v], 2); // core 1's V: c1 knows 2, c0b learnt 2
        assert_eq!(&*max_of(&[1, 5], &[3, 2]), &[3, 5]);
        assert_eq!(&*min_of(&[1, 5], &[3, 2]), &[1, 2]);
    }
}
