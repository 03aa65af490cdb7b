//! A growable array kept in fixed-size pages: growing never moves what it holds. A `Vec` that
//! doubles holds its old and its new buffer at once while it copies, so a walker of a million
//! instructions would peak at about three times its records; pages keep the peak at the
//! records and one page.

use std::ops::Index;

/// Elements per page (64 Ki: 4 MiB of 64-byte records).
const PAGE: usize = 1 << 16;

#[derive(Clone, Debug)]
pub(super) struct Pages<T> {
    pages: Vec<Box<[T]>>,
    len: usize,
    /// What a new page is filled with (never read as an element before it is set).
    fill: T,
}

impl<T: Copy> Pages<T> {
    pub(super) fn new(fill: T) -> Pages<T> {
        Pages {
            pages: Vec::new(),
            len: 0,
            fill,
        }
    }

    /// What new pages are filled with.
    pub(super) fn fill(&self) -> T {
        self.fill
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        Some(&self.pages[i / PAGE][i % PAGE])
    }

    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        Some(&mut self.pages[i / PAGE][i % PAGE])
    }

    /// Grows to `len` elements, the new ones `v`.
    pub(super) fn resize(&mut self, len: usize, v: T) {
        while self.len < len {
            self.push(v);
        }
    }

    pub(super) fn push(&mut self, v: T) {
        if self.len == self.pages.len() * PAGE {
            self.pages.push(vec![self.fill; PAGE].into_boxed_slice());
        }
        let i = self.len;
        self.pages[i / PAGE][i % PAGE] = v;
        self.len += 1;
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.pages.iter().flat_map(|p| p.iter()).take(self.len)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let len = self.len;
        self.pages.iter_mut().flat_map(|p| p.iter_mut()).take(len)
    }
}

impl<T: Copy> Index<usize> for Pages<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        self.get(i).expect("an element of the pages")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_hold_what_is_pushed_across_page_boundaries() {
        let mut p = Pages::new(0u32);
        for i in 0..(PAGE as u32 * 2 + 3) {
            p.push(i);
        }
        assert_eq!(p.len(), PAGE * 2 + 3);
        assert_eq!(p[PAGE - 1], PAGE as u32 - 1);
        assert_eq!(p[PAGE], PAGE as u32);
        assert_eq!(p.get(PAGE * 2 + 3), None);
        *p.get_mut(5).unwrap() = 7;
        assert_eq!(p.iter().nth(5), Some(&7));
        assert_eq!(p.iter().count(), PAGE * 2 + 3);
        p.resize(PAGE * 3 + 1, 9);
        assert_eq!(p[PAGE * 3], 9);
        assert_eq!(p.iter_mut().count(), PAGE * 3 + 1);
    }
}
