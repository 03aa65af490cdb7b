//! The increments of a cross-core counter not taken yet, oldest first, each with the set
//! behind it: what the trace and the page's timeline pair a `cross_wait` with to draw its
//! arrow. Bounded: past a cap, increments are remembered only as a count.

use std::collections::VecDeque;

/// One counter's untaken increments, oldest first: the set behind each (`None`: not
/// remembered), a run of `None`s kept as one entry with its count.
#[derive(Clone, Debug)]
pub(crate) struct Untaken<T> {
    q: VecDeque<(Option<T>, u32)>,
}

impl<T> Default for Untaken<T> {
    fn default() -> Self {
        Untaken { q: VecDeque::new() }
    }
}

impl<T: Copy> Untaken<T> {
    /// One more increment, by `set`; remembered only while fewer than `cap` entries are held,
    /// so a runaway producer does not make the memory grow. Whether it was remembered.
    pub(crate) fn push(&mut self, set: Option<T>, cap: usize) -> bool {
        let set = if self.q.len() < cap { set } else { None };
        match self.q.back_mut() {
            Some((None, n)) if set.is_none() => *n = n.saturating_add(1),
            _ => self.q.push_back((set, 1)),
        }
        set.is_some()
    }

    /// The oldest increment, taken: `None` when there is none, else the set behind it
    /// (`Some(None)`: not remembered).
    pub(crate) fn take(&mut self) -> Option<Option<T>> {
        let front = self.q.front_mut()?;
        let set = front.0;
        front.1 -= 1;
        if front.1 == 0 {
            self.q.pop_front();
        }
        Some(set)
    }

    /// Entries held (a run of increments not remembered is one).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.q.len()
    }

    /// The newest entry and its count.
    #[cfg(test)]
    pub(crate) fn newest(&self) -> Option<&(Option<T>, u32)> {
        self.q.back()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Below the cap every increment keeps its own set and they are taken oldest first; past
    /// it, the rest are one counted run, taken as "not remembered", then nothing is left.
    #[test]
    fn first_in_first_out_and_bounded() {
        let mut u = Untaken::default();
        assert!(u.push(Some(7u64), 2));
        assert!(u.push(Some(8), 2));
        assert!(!u.push(Some(9), 2));
        assert!(!u.push(None, 2));
        assert_eq!(u.entries(), 3);
        assert_eq!(u.newest(), Some(&(None, 2)));
        assert_eq!(u.take(), Some(Some(7)));
        assert_eq!(u.take(), Some(Some(8)));
        assert_eq!(u.take(), Some(None));
        assert_eq!(u.take(), Some(None));
        assert_eq!(u.take(), None);
        assert!(u.is_empty());
    }
}
