//! A FIFO of small `Copy` entries in a power-of-two ring: the checker's per-pipe queues
//! (instructions issued and not started, their accesses), pushed and popped once per
//! instruction or access, where `VecDeque`'s general wrap-around costs several times a mask.

/// A FIFO of `T`s; grows by doubling, never shrinks (it holds what one pipe has queued). As
/// small as a `VecDeque` (positions in 32 bits: a pipe's queue is the engine's queue depth,
/// far below that), which keeps the checker's per-core state, and so a launch's budget, as
/// it was.
#[derive(Clone, Debug)]
pub(super) struct Ring<T> {
    buf: Vec<T>,
    /// The front's position (in `buf`, modulo its length).
    head: u32,
    len: u32,
}

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy + Default> Ring<T> {
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        // the buffer's length is a power of two (or zero, with nothing in it)
        (self.head as usize + i) & (self.buf.len().wrapping_sub(1))
    }

    #[inline(always)]
    pub fn push_back(&mut self, v: T) {
        if self.len as usize == self.buf.len() {
            self.grow();
        }
        let at = self.at(self.len as usize);
        self.buf[at] = v;
        self.len += 1;
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head as usize];
        self.head = self.at(1) as u32;
        self.len -= 1;
        Some(v)
    }

    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    #[inline(always)]
    pub fn back(&self) -> Option<&T> {
        (self.len as usize).checked_sub(1).and_then(|i| self.get(i))
    }

    /// The `i`th entry from the front.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len as usize).then(|| &self.buf[self.at(i)])
    }

    /// The `i`th entry from the front, which must exist.
    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len as usize, "ring index past its length");
        let at = self.at(i);
        &mut self.buf[at]
    }

    /// Doubles the buffer, the entries in order from its start.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (2 * self.buf.len()).max(8);
        assert!(
            cap <= 1 << 31,
            "race checker: a pipe queue of 2^31 instructions"
        );
        let mut buf = Vec::with_capacity(cap);
        buf.extend((0..self.len()).map(|i| self.buf[self.at(i)]));
        buf.resize(cap, T::default());
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use std::collections::VecDeque;

    #[test]
    fn behaves_as_a_fifo_across_wraps_and_growth() {
        // a fixed mix of pushes and pops against VecDeque, wrapping and growing many times
        let mut ring: Ring<u64> = Ring::default();
        let mut model: VecDeque<u64> = VecDeque::new();
        let mut x: u64 = 12345;
        for n in 0..20_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            if (x >> 60) < 9 {
                ring.push_back(n);
                model.push_back(n);
            } else {
                assert_eq!(ring.pop_front(), model.pop_front());
            }
            assert_eq!(ring.len(), model.len());
            assert_eq!(ring.front(), model.front());
            assert_eq!(ring.back(), model.back());
            if let Some(i) = model.len().checked_sub(3) {
                assert_eq!(ring.get(i), model.get(i));
                *ring.get_mut(i) += 1;
                model[i] += 1;
            }
        }
        assert!(ring.len() > 1000, "the mix grew it: {}", ring.len());
        while let Some(v) = model.pop_front() {
            assert_eq!(ring.pop_front(), Some(v));
        }
        assert!(ring.len() == 0 && ring.pop_front().is_none() && ring.front().is_none());
        assert_eq!(ring.get(0), None);
    }
}
