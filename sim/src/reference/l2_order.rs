//! The L2's replacement order ([`super::memory`]'s [`L2`]): which lines are present and which
//! leaves first, kept as a doubly linked list of segments ([`super::seg_index`]).
//!
//! The L2 keeps its present lines ordered by (stamp of the last touch, line): the first one
//! leaves when a line must come in and the L2 is full (least recently touched, lower address
//! first on a tie). Lines sit in that order in segments, runs of consecutive lines touched in
//! the same cycle (a move's lines are one), kept in a doubly linked list: a move that streams
//! its lines in behind the last ones evicts from the first segment and appends a segment, at a
//! cost per segment, not per line. A touched line leaves its segment (which splits when it was
//! inside, the smaller part taking a new segment) and goes after the last line with a smaller
//! key, walking back from the end (several moves starting in one cycle, the later touching
//! lower lines).

use super::memory::L2;
use super::seg_index::{Seg, NONE};

impl L2 {
    /// Brings lines `l0..=l1`, all absent, in at `t`: what touching them one by one in line
    /// order does. When they go behind the last line and evict only lines that were there
    /// before (a streaming kernel), that is: the first lines leave, as many as the L2 has no
    /// room for, and the run goes to the end as one segment.
    pub(super) fn bring_in(&mut self, t: u64, l0: u64, l1: u64) {
        let stamp = t + 1;
        let k = l1 - l0 + 1;
        let behind = self.tail == NONE || self.segs[self.tail as usize].last() < (stamp, l0 as u32);
        // one by one, each line evicts one once the L2 is full
        let evict = k.saturating_sub(self.capacity.saturating_sub(self.live));
        if !behind || self.capacity == 0 || evict > self.live {
            for line in l0..l1 + 1 {
                self.touch_line(t, line);
            }
            return;
        }
        self.evict(evict);
        let t = self.tail;
        let f = if t != NONE
            && self.segs[t as usize].stamp == stamp
            && self.segs[t as usize].hi as u64 == l0
        {
            self.segs[t as usize].hi = l1 as u32 + 1;
            t
        } else {
            let f = self.new_seg(stamp, l0, l1 + 1);
            self.link_after(f, self.tail);
            f
        };
        self.seg_of.enter_range(l0, l1 + 1, f);
        self.live += k;
    }

    /// Marks lines `l0..=l1`, all present in segment `f`, touched at `t`: what touching them
    /// one by one in line order does ([`L2::touch_line`]), as one range.
    pub(super) fn touch_range(&mut self, t: u64, f: u32, l0: u64, l1: u64) {
        let stamp = t + 1;
        let Seg {
            stamp: old, lo, hi, ..
        } = self.segs[f as usize];
        if old == stamp {
            return;
        }
        let (lo, hi) = (lo as u64, hi as u64);
        // the range leaves f: f keeps what is left of it (splitting when the range is inside),
        // or the range keeps f when it is all of f
        let moving = if l0 == lo && l1 + 1 == hi {
            self.unlink(f);
            Some(f)
        } else {
            if l0 == lo {
                self.segs[f as usize].lo = l1 as u32 + 1;
            } else if l1 + 1 == hi {
                self.segs[f as usize].hi = l0 as u32;
            } else {
                // the part after the range becomes a segment of its own, right after f
                self.split_after(f, l1 + 1, hi, old);
                self.segs[f as usize].hi = l0 as u32;
            }
            None
        };
        // its place: after the last line with a smaller key (no line of another segment lies
        // between its own keys, which are (stamp, l0..=l1))
        let (p, next) = self.position((stamp, l0 as u32));
        // as line by line: the first line joins the segment before it when it continues it
        // (the others follow it there), or the one after it only when it is the only line
        let target = if p != NONE
            && self.segs[p as usize].stamp == stamp
            && self.segs[p as usize].hi as u64 == l0
        {
            self.segs[p as usize].hi = l1 as u32 + 1;
            if let Some(f) = moving {
                self.free_seg(f);
            }
            p
        } else if l0 == l1
            && next != NONE
            && self.segs[next as usize].stamp == stamp
            && self.segs[next as usize].lo as u64 == l1 + 1
        {
            self.segs[next as usize].lo -= 1;
            if let Some(f) = moving {
                self.free_seg(f);
            }
            next
        } else {
            let g = match moving {
                Some(f) => {
                    let s = &mut self.segs[f as usize];
                    s.stamp = stamp;
                    return self.link_after(f, p); // its lines already name it
                }
                None => self.new_seg(stamp, l0, l1 + 1),
            };
            self.link_after(g, p);
            g
        };
        for l in l0..=l1 {
            self.seg_of.update(l, target);
        }
    }

    /// Marks `line` touched at `t`, bringing it in (and the least recently touched line out
    /// when full) if absent.
    #[inline(always)]
    pub(super) fn touch_line(&mut self, t: u64, line: u64) {
        let stamp = t + 1;
        let s = self.seg(line);
        if s != NONE {
            if self.segs[s as usize].stamp == stamp {
                return;
            }
            self.take_out(s, line);
            return self.place(stamp, line, false);
        }
        if self.live >= self.capacity && self.live > 0 {
            self.evict(1);
        }
        self.place(stamp, line, true);
    }

    /// Whether lines `l0..=l1` are all absent.
    pub(super) fn absent(&self, l0: u64, l1: u64) -> bool {
        let shift = self.seg_of.shift;
        if l0 >> shift != l1 >> shift {
            return (l0..l1 + 1).all(|line| self.seg(line) == NONE);
        }
        let Some(chunk) = self.seg_of.chunk(l0 >> shift) else {
            return true;
        };
        let m = self.seg_of.mask;
        let to = ((l1 & m) as usize + 1).min(chunk.len());
        let from = ((l0 & m) as usize).min(to);
        chunk[from..to]
            .iter()
            .zip(l0..)
            .all(|(&f, line)| f == NONE || !self.covers(f, line))
    }

    /// Whether segment `f` holds `line`.
    #[inline(always)]
    pub(super) fn covers(&self, f: u32, line: u64) -> bool {
        let s = &self.segs[f as usize];
        s.lo as u64 <= line && line < s.hi as u64
    }

    /// The segment holding `line`, or [`NONE`] when it is absent.
    #[inline(always)]
    pub(super) fn seg(&self, line: u64) -> u32 {
        match self.seg_of.get(line) {
            f if f != NONE && self.covers(f, line) => f,
            _ => NONE,
        }
    }

    /// A new segment of lines `lo..hi` touched at `stamp` (not linked).
    fn new_seg(&mut self, stamp: u64, lo: u64, hi: u64) -> u32 {
        let s = Seg {
            stamp,
            lo: lo as u32,
            hi: hi as u32,
            prev: NONE,
            next: NONE,
        };
        match self.free.pop() {
            Some(f) => {
                self.segs[f as usize] = s;
                f
            }
            None => {
                self.segs.push(s);
                self.segs.len() as u32 - 1
            }
        }
    }

    /// Links segment `f` after `p` ([`NONE`]: first).
    fn link_after(&mut self, f: u32, p: u32) {
        let next = match p {
            NONE => std::mem::replace(&mut self.head, f),
            p => std::mem::replace(&mut self.segs[p as usize].next, f),
        };
        match next {
            NONE => self.tail = f,
            n => self.segs[n as usize].prev = f,
        }
        let s = &mut self.segs[f as usize];
        (s.prev, s.next) = (p, next);
    }

    /// Unlinks segment `f` (its lines still name it).
    fn unlink(&mut self, f: u32) {
        let Seg { prev, next, .. } = self.segs[f as usize];
        match prev {
            NONE => self.head = next,
            p => self.segs[p as usize].next = next,
        }
        match next {
            NONE => self.tail = prev,
            n => self.segs[n as usize].prev = prev,
        }
    }

    /// Frees unlinked segment `f`.
    fn free_seg(&mut self, f: u32) {
        let s = &mut self.segs[f as usize];
        s.hi = s.lo;
        self.free.push(f);
    }

    /// Unlinks segment `f` and frees it.
    fn drop_seg(&mut self, f: u32) {
        self.unlink(f);
        self.free_seg(f);
    }

    /// The first `n` present lines leave (n <= live).
    fn evict(&mut self, mut n: u64) {
        self.live -= n;
        self.stats.evicted_lines += n;
        while n > 0 {
            let h = self.head;
            let Seg { lo, hi, .. } = self.segs[h as usize];
            let m = n.min((hi - lo) as u64);
            self.seg_of.leave_range(lo as u64, lo as u64 + m);
            n -= m;
            if m == (hi - lo) as u64 {
                self.drop_seg(h);
            } else {
                self.segs[h as usize].lo += m as u32;
            }
        }
    }

    /// Takes present `line` out of its segment `f`, to be placed again: a segment inside
    /// which it was splits, the smaller part moving to a new segment.
    fn take_out(&mut self, f: u32, line: u64) {
        let Seg { stamp, lo, hi, .. } = self.segs[f as usize];
        let (lo, hi) = (lo as u64, hi as u64);
        if hi - lo == 1 {
            self.drop_seg(f);
        } else if line == lo {
            self.segs[f as usize].lo += 1;
        } else if line + 1 == hi {
            self.segs[f as usize].hi -= 1;
        } else if line - lo < hi - line {
            // the left part moves to a segment before f
            let g = self.new_seg(stamp, lo, line);
            let prev = self.segs[f as usize].prev;
            self.link_after(g, prev);
            self.segs[f as usize].lo = line as u32 + 1;
            for l in lo..line {
                self.seg_of.update(l, g);
            }
        } else {
            self.split_after(f, line + 1, hi, stamp);
            self.segs[f as usize].hi = line as u32;
        }
    }

    /// Lines `from..hi` of segment `f` (touched at `stamp`) move to a new segment right after
    /// it; the caller then ends `f` before them.
    #[inline]
    fn split_after(&mut self, f: u32, from: u64, hi: u64, stamp: u64) {
        let g = self.new_seg(stamp, from, hi);
        self.link_after(g, f);
        for l in from..hi {
            self.seg_of.update(l, g);
        }
    }

    /// Where a line with `key` goes in the order: the segment whose last key is the largest
    /// below it ([`NONE`]: first) and the one after that, found walking back from the end.
    #[inline(always)]
    fn position(&self, key: (u64, u32)) -> (u32, u32) {
        let mut p = self.tail;
        while p != NONE && self.segs[p as usize].last() > key {
            p = self.segs[p as usize].prev;
        }
        let next = match p {
            NONE => self.head,
            p => self.segs[p as usize].next,
        };
        (p, next)
    }

    /// Puts `line` (absent from every segment) with `stamp` at its place: after the last line
    /// with a smaller key, found walking back from the end (a segment's keys are together,
    /// so it lies wholly before or after). It joins the segment before it or after it when it
    /// continues it. `entering`: it comes in (else it moves).
    pub(super) fn place(&mut self, stamp: u64, line: u64, entering: bool) {
        let (p, next) = self.position((stamp, line as u32));
        let f = if p != NONE
            && self.segs[p as usize].stamp == stamp
            && self.segs[p as usize].hi as u64 == line
        {
            self.segs[p as usize].hi += 1;
            p
        } else if next != NONE
            && self.segs[next as usize].stamp == stamp
            && self.segs[next as usize].lo as u64 == line + 1
        {
            self.segs[next as usize].lo -= 1;
            next
        } else {
            let f = self.new_seg(stamp, line, line + 1);
            self.link_after(f, p);
            f
        };
        if entering {
            self.live += 1;
            self.seg_of.enter(line, f);
        } else {
            self.seg_of.update(line, f);
        }
    }

    /// The present lines, least recently touched first (tests).
    #[cfg(test)]
    pub fn order(&self) -> Vec<u64> {
        let mut v = Vec::new();
        let mut f = self.head;
        while f != NONE {
            let s = &self.segs[f as usize];
            v.extend(s.lo as u64..s.hi as u64);
            f = s.next;
        }
        v
    }
}
