//! Vector clocks over the core's pipes.
//!
//! Component `p` of a clock counts a prefix of pipe p's instructions (in issue order, which is
//! the pipe's start order): `c[p] = n` means instructions `0..n` of p are known to have
//! completed. Knowledge about a pipe is prefix-closed because everything that tells one pipe
//! about another (a `set_flag`, a `barrier`, `barrier: all`) waits for *every* earlier
//! instruction of its pipe; the one exception, an `mmad_l1`'s M part knowing its own MTE1 part,
//! is carried by the access instead (see [`super`]).

use crate::types::Pipe;

const N: usize = Pipe::COUNT;

/// What is known to have completed, per pipe (see the module doc).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(super) struct Clock(pub [u64; N]);

impl Clock {
    /// Knows nothing.
    pub const ZERO: Clock = Clock([0; N]);

    /// Componentwise max: knows what either knows.
    #[inline(always)]
    pub fn join(&mut self, other: &Clock) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = (*a).max(*b);
        }
    }

    /// Componentwise min: knows what both know.
    #[inline(always)]
    pub fn meet(&mut self, other: &Clock) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = (*a).min(*b);
        }
    }

    /// Whether instruction `idx` of pipe `p` is known to have completed.
    #[inline(always)]
    pub fn knows(&self, p: usize, idx: u64) -> bool {
        self.0[p] > idx
    }

    /// Records that instructions `0..n` of pipe `p` have completed.
    #[inline(always)]
    pub fn advance(&mut self, p: usize, n: u64) {
        self.0[p] = self.0[p].max(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_and_meet_are_componentwise() {
        let mut a = Clock([1, 5, 0, 3, 0, 0, 9]);
        let b = Clock([2, 4, 0, 3, 7, 0, 1]);
        let mut c = a;
        a.join(&b);
        assert_eq!(a, Clock([2, 5, 0, 3, 7, 0, 9]));
        c.meet(&b);
        assert_eq!(c, Clock([1, 4, 0, 3, 0, 0, 1]));
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
        let a = Clock([3, 1, 4, 1, 5, 9, 2]);
        let b = Clock([2, 7, 1, 8, 2, 8, 1]);
        let mut ab = a;
        ab.join(&b);
        let mut ba = b;
        ba.join(&a);
        assert_eq!(ab, ba);
        let mut abb = ab;
        abb.join(&b);
        assert_eq!(abb, ab);
        for p in 0..N {
            assert!(ab.0[p] >= a.0[p] && ab.0[p] >= b.0[p]);
        }
    }
}
