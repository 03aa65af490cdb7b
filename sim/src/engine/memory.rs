//! The gm memory system (docs/timing.md, "The gm memory system"): an L2 of whole lines in front
//! of HBM, shared by every core of a run. This room is its face: what a gm move finds in the L2
//! ([`L2::lookup`]), what it costs ([`L2::move_cost`]) and what it leaves ([`L2::commit_read`],
//! [`L2::commit_write`]). The rest is in rooms of their own: the gm layout's runs and lines
//! ([`super::gm_runs`]), the chip's shared rates ([`super::bandwidth`]), the replacement order
//! ([`super::l2_order`]) and the data it is kept in ([`super::seg_index`]).

use super::bandwidth::{plan_phase, Channel, Piece};
use super::gm_runs::for_each_line;
use super::result::MemoryStats;
use super::seg_index::{Seg, SegIndex, NONE};
use crate::config::MemoryConfig;

/// What a gm read found at its start: bytes and lines present (hits) and missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Lookup {
    pub hit_bytes: u64,
    pub miss_bytes: u64,
    pub hit_lines: u64,
    pub miss_lines: u64,
}

/// The L2 and HBM state of a run, and what the run's moves found in them.
pub(super) struct L2 {
    cfg: MemoryConfig,
    /// Lines the L2 holds.
    pub(super) capacity: u64,
    /// Per line of the layout: the segment that last held it ([`L2::seg`] checks it still
    /// does).
    pub(super) seg_of: SegIndex,
    /// The segments, in use and free.
    pub(super) segs: Vec<Seg>,
    pub(super) free: Vec<u32>,
    /// First (leaves first) and last segment in the L2's order, or [`NONE`].
    pub(super) head: u32,
    pub(super) tail: u32,
    /// Present lines.
    pub(super) live: u64,
    /// The chip's HBM and L2 rates, and what the moves under way hold of them.
    hbm: Channel,
    l2_rate: Channel,
    /// Whether the launch's cores could ever ask more of the L2 than its rate at once: when
    /// not, `l2_rate` is never consulted (nothing would wait on it).
    l2_binds: bool,
    /// The pieces of the move [`L2::move_cost`] planned last, for [`L2::reserve`].
    planned: Vec<Piece>,
    pub stats: MemoryStats,
}

impl L2 {
    /// An empty L2 over a layout of `lines` lines (at most [`crate::limits::MAX_GM_LINES`], so
    /// a line fits a `u32`); `warm`: filled with lines `0..` (the tensors' lines in
    /// declaration order) until full, as if touched before cycle 0.
    pub fn new(cfg: MemoryConfig, lines: u64, warm_lines: &[(u64, u64)]) -> L2 {
        L2::with_chunks(cfg, lines, warm_lines, SegIndex::SHIFT)
    }

    /// [`L2::new`] with chunks of 2^`shift` lines in its [`SegIndex`] (tests use small ones).
    fn with_chunks(cfg: MemoryConfig, lines: u64, warm_lines: &[(u64, u64)], shift: u32) -> L2 {
        debug_assert!(lines <= crate::limits::MAX_GM_LINES);
        let capacity = cfg.l2_lines();
        let mut l2 = L2 {
            cfg,
            capacity,
            seg_of: SegIndex::new(lines, shift),
            segs: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
            live: 0,
            hbm: Channel::new(cfg.hbm_bytes_per_cycle),
            l2_rate: Channel::new(cfg.l2_chip_bytes_per_cycle),
            l2_binds: true,
            planned: Vec::new(),
            stats: MemoryStats::default(),
        };
        'fill: for &(lo, hi) in warm_lines {
            for line in lo..hi {
                if l2.live >= capacity {
                    break 'fill;
                }
                if l2.seg(line) == NONE {
                    l2.place(0, line, true);
                }
            }
        }
        l2.stats.warm_lines = l2.live;
        l2
    }

    /// Looks the lines of `runs` up without changing anything.
    #[inline]
    pub fn lookup(&self, runs: &[(u64, u64)]) -> Lookup {
        let lb = self.cfg.line_bytes;
        if let [(a, end)] = *runs {
            // one run (a row, a whole tensor): its lines are a range, the misses what is left
            let (l0, l1) = (a / lb, (end - 1) / lb);
            let mut r = Lookup::default();
            let shift = self.seg_of.shift;
            if l0 >> shift == l1 >> shift {
                // one chunk: none of its lines present when it does not exist, or beyond its
                // high mark
                if let Some(chunk) = self.seg_of.chunk(l0 >> shift) {
                    let m = self.seg_of.mask;
                    let to = ((l1 & m) as usize + 1).min(chunk.len());
                    let from = ((l0 & m) as usize).min(to);
                    for (i, &f) in chunk[from..to].iter().enumerate() {
                        let line = l0 + i as u64;
                        if f != NONE && self.covers(f, line) {
                            r.hit_lines += 1;
                            r.hit_bytes += end.min((line + 1) * lb) - a.max(line * lb);
                        }
                    }
                }
                r.miss_lines = l1 - l0 + 1 - r.hit_lines;
                r.miss_bytes = end - a - r.hit_bytes;
                return r;
            }
            for line in l0..l1 + 1 {
                if self.seg(line) != NONE {
                    r.hit_lines += 1;
                    r.hit_bytes += end.min((line + 1) * lb) - a.max(line * lb);
                }
            }
            r.miss_lines = (end - 1) / lb - l0 + 1 - r.hit_lines;
            r.miss_bytes = end - a - r.hit_bytes;
            return r;
        }
        let mut r = Lookup::default();
        for_each_line(runs, self.cfg.line_bytes, |line, bytes| {
            if self.seg(line) != NONE {
                r.hit_bytes += bytes;
                r.hit_lines += 1;
            } else {
                r.miss_bytes += bytes;
                r.miss_lines += 1;
            }
        });
        r
    }

    /// (work, extra startup) of a gm move starting at `t` on a path of `bpc` bytes per cycle
    /// that reads what `read` found and / or writes `write` bytes; planned for
    /// [`L2::reserve`]. Its phases come one after the other, each in whole cycles: the hits
    /// from the L2 at up to min(P, l2 read); the missing lines, whole, from HBM, at the pace
    /// the move takes their bytes at up to P (missing lines × line_bytes / miss bytes × P);
    /// the write into the L2 and through to HBM at up to min(P, l2 write). The extra startup
    /// is a read's: `hbm_read_latency` with a miss, else `l2_latency` (a write's `l2_latency`
    /// is in its path's startup).
    /// The work of the same move as [`L2::move_cost`]'s alone on the chip: each phase at
    /// its rate capped by the whole of the channels it takes (HBM's, and the L2's rate when
    /// that can bind), as `move_cost` gives it when nothing else holds them (a test checks).
    pub fn move_alone(&self, bpc: u64, read: Option<&Lookup>, write: u64) -> u64 {
        let hbm = self.cfg.hbm_bytes_per_cycle;
        let l2 = if self.l2_binds {
            self.cfg.l2_chip_bytes_per_cycle
        } else {
            u64::MAX
        };
        let phase = |bytes: u64, rate: u64| bytes.div_ceil(rate.max(1));
        let mut work = 0;
        if let Some(l) = read {
            if l.hit_bytes > 0 {
                let cap = bpc.min(self.cfg.l2_read_bytes_per_cycle);
                work += phase(l.hit_bytes, cap.min(l2));
            }
            if l.miss_lines > 0 {
                let fill = l.miss_lines * self.cfg.line_bytes;
                work += phase(fill, pace(bpc, fill, l.miss_bytes).min(hbm));
            }
        }
        if write > 0 {
            let cap = bpc.min(self.cfg.l2_write_bytes_per_cycle);
            work += phase(write, cap.min(hbm).min(l2));
        }
        work
    }

    pub fn move_cost(&mut self, t: u64, bpc: u64, read: Option<&Lookup>, write: u64) -> (u64, u64) {
        self.hbm.forget(t);
        self.planned.clear();
        let mut l2 = if self.l2_binds {
            self.l2_rate.forget(t);
            Some(&mut self.l2_rate)
        } else {
            None
        };
        let (hbm, out) = (&mut self.hbm, &mut self.planned);
        let mut at = t;
        let mut extra = 0;
        if let Some(l) = read {
            if l.hit_bytes > 0 {
                let cap = bpc.min(self.cfg.l2_read_bytes_per_cycle);
                at = match l2.as_deref_mut() {
                    Some(l2) => plan_phase(None, Some(l2), at, l.hit_bytes, cap, out),
                    None => at + l.hit_bytes.div_ceil(cap),
                };
            }
            if l.miss_lines > 0 {
                let fill = l.miss_lines * self.cfg.line_bytes;
                let pace = pace(bpc, fill, l.miss_bytes);
                at = plan_phase(Some(&mut *hbm), None, at, fill, pace, out);
                extra = self.cfg.hbm_read_latency;
            } else {
                extra = self.cfg.l2_latency;
            }
        }
        if write > 0 {
            let cap = bpc.min(self.cfg.l2_write_bytes_per_cycle);
            at = plan_phase(Some(hbm), l2, at, write, cap, out);
        }
        (at - t, extra)
    }

    /// `demand`: the most L2 bytes per cycle the launch's cores can ask for at once
    /// ([`super::bandwidth::l2_demand`]). At or below the L2's rate, no move can ever wait for the L2, so it is not
    /// kept (a one-core run: a sixth of the 910B's rate).
    pub fn set_l2_demand(&mut self, demand: u64) {
        self.l2_binds = demand > self.cfg.l2_chip_bytes_per_cycle;
    }

    /// The move [`L2::move_cost`] planned last starts: it holds its share of the channels.
    pub fn reserve(&mut self) {
        // a move's pieces on a channel come in increasing order (its phases one after the
        // other): each hold's search for its start begins where the last one ended
        let (mut h, mut l) = (0, 0);
        for p in &self.planned {
            if p.hbm {
                h = self.hbm.hold(p.from, p.to, p.rate, h);
            }
            if p.l2 {
                l = self.l2_rate.hold(p.from, p.to, p.rate, l);
            }
        }
    }

    /// A read starting at `t` found `l` on the lines of `runs`: counts it, touches the present
    /// lines and brings the missing ones in.
    pub fn commit_read(&mut self, t: u64, runs: &[(u64, u64)], l: &Lookup) {
        let s = &mut self.stats;
        s.reads += 1;
        s.hit_bytes += l.hit_bytes;
        s.miss_bytes += l.miss_bytes;
        s.hit_lines += l.hit_lines;
        s.miss_lines += l.miss_lines;
        s.hbm_bytes += l.miss_lines * self.cfg.line_bytes;
        // present lines first, so that bringing the missing ones in cannot evict them
        let lb = self.cfg.line_bytes;
        if let ([(a, end)], 0) = (runs, l.hit_lines) {
            // one run, every line missing (`l` was looked up in this state)
            return self.bring_in(t, a / lb, (end - 1) / lb);
        }
        if let ([(a, end)], 0) = (runs, l.miss_lines) {
            // one run, every line present: in one segment, it moves as a range
            let (l0, l1) = (a / lb, (end - 1) / lb);
            let f = self.seg(l0);
            if f == self.seg(l1) {
                return self.touch_range(t, f, l0, l1);
            }
        }
        if l.hit_lines > 0 {
            for_each_line(runs, lb, |line, _| {
                if self.seg(line) != NONE {
                    self.touch_line(t, line);
                }
            });
        }
        for_each_line(runs, lb, |line, _| {
            if self.seg(line) == NONE {
                self.touch_line(t, line);
            }
        });
    }

    /// A write starting at `t` allocates the lines of `runs`.
    pub fn commit_write(&mut self, t: u64, runs: &[(u64, u64)]) {
        self.stats.writes += 1;
        let lb = self.cfg.line_bytes;
        if let [(a, end)] = *runs {
            let (l0, l1) = (a / lb, (end - 1) / lb);
            if self.absent(l0, l1) {
                self.stats.write_bytes += end - a;
                return self.bring_in(t, l0, l1);
            }
        }
        for_each_line(runs, self.cfg.line_bytes, |line, bytes| {
            self.stats.write_bytes += bytes;
            self.touch_line(t, line);
        });
    }
}

/// The line bytes per cycle that bring a move's own `miss` bytes of `fill` line bytes in at
/// its path's `bpc` (the lines it misses are whole; the move wants only part of them).
fn pace(bpc: u64, fill: u64, miss: u64) -> u64 {
    if fill == miss {
        bpc
    } else {
        (u128::from(bpc) * u128::from(fill) / u128::from(miss.max(1)))
            .clamp(1, u128::from(u64::MAX)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The L2's replacement order as first written: stamps per line and the present lines in a
    /// B-tree by (stamp, line). The reference the linked list is checked against.
    struct Reference {
        capacity: u64,
        touch: Vec<u64>,
        lru: BTreeSet<(u64, u64)>,
        evicted: u64,
    }

    impl Reference {
        const ABSENT: u64 = u64::MAX;

        fn new(capacity: u64, lines: u64, warm: &[(u64, u64)]) -> Reference {
            let mut r = Reference {
                capacity,
                touch: vec![Self::ABSENT; lines as usize],
                lru: BTreeSet::new(),
                evicted: 0,
            };
            'fill: for &(lo, hi) in warm {
                for line in lo..hi {
                    if r.lru.len() as u64 >= capacity {
                        break 'fill;
                    }
                    r.touch[line as usize] = 0;
                    r.lru.insert((0, line));
                }
            }
            r
        }

        fn touch_line(&mut self, t: u64, line: u64) {
            let stamp = t + 1;
            let old = self.touch[line as usize];
            if old == stamp {
                return;
            }
            if old != Self::ABSENT {
                self.lru.remove(&(old, line));
            } else if self.lru.len() as u64 >= self.capacity {
                if let Some((_, out)) = self.lru.pop_first() {
                    self.touch[out as usize] = Self::ABSENT;
                    self.evicted += 1;
                }
            }
            self.touch[line as usize] = stamp;
            self.lru.insert((stamp, line));
        }

        fn read(&mut self, t: u64, lines: &[(u64, u64)]) {
            for &(line, _) in lines {
                if self.touch[line as usize] != Self::ABSENT {
                    self.touch_line(t, line);
                }
            }
            for &(line, _) in lines {
                if self.touch[line as usize] == Self::ABSENT {
                    self.touch_line(t, line);
                }
            }
        }

        fn order(&self) -> Vec<u64> {
            self.lru.iter().map(|&(_, l)| l).collect()
        }
    }

    /// The `(line, bytes)` list of `runs` as first written: a line two runs share once, with
    /// both runs' bytes. The reference [`for_each_line`] is checked against.
    fn reference_lines(runs: &[(u64, u64)], line_bytes: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &(a, end) in runs {
            for line in a / line_bytes..=(end - 1) / line_bytes {
                let from = a.max(line * line_bytes);
                let to = end.min((line + 1) * line_bytes);
                match out.last_mut() {
                    Some((l, b)) if *l == line => *b += to - from,
                    _ => out.push((line, to - from)),
                }
            }
        }
        out
    }

    /// Byte runs of whole lines `lines` (256 B each).
    fn whole(lines: &[u64]) -> Vec<(u64, u64)> {
        lines.iter().map(|&l| (l * 256, l * 256 + 256)).collect()
    }

    /// Increasing non-empty byte runs within 24 lines of 256 B, from (gap, length) pairs: gaps
    /// of 0 make runs meet inside a line.
    fn runs_strategy() -> impl Strategy<Value = Vec<(u64, u64)>> {
        proptest::collection::vec((0u64..600, 1u64..700), 0..5).prop_map(|parts| {
            let mut runs = Vec::new();
            let mut at = 0;
            for (gap, len) in parts {
                let a = at + gap;
                let end = (a + len).min(24 * 256);
                if a >= end {
                    break;
                }
                runs.push((a, end));
                at = end;
            }
            runs
        })
    }

    proptest! {
        /// Random reads and writes of random runs at random cycles (out of order, many in one
        /// cycle) find what the reference finds and leave the list in the reference's order,
        /// evicting the same lines.
        #[test]
        fn lru_list_matches_the_btree_reference(
            capacity in 0u64..12,
            warm in any::<bool>(),
            // chunks of 2, 4 or 16384 lines in the frame index: small ones come and go
            shift in prop_oneof![Just(1u32), Just(2), Just(14)],
            moves in proptest::collection::vec((any::<bool>(), 0u64..40, runs_strategy()), 0..60),
        ) {
            const LINES: u64 = 24;
            let cfg = MemoryConfig { l2_bytes: 256 * capacity, ..cfg(1) };
            let warm_lines: &[(u64, u64)] = if warm { &[(0, LINES)] } else { &[] };
            let mut l2 = L2::with_chunks(cfg, LINES, warm_lines, shift);
            let mut r = Reference::new(capacity, LINES, warm_lines);
            prop_assert_eq!(l2.order(), r.order());
            let mut write_bytes = 0;
            for (read, t, runs) in moves {
                let lines = reference_lines(&runs, 256);
                let mut walked = Vec::new();
                for_each_line(&runs, 256, |l, b| walked.push((l, b)));
                prop_assert_eq!(&walked, &lines);
                if read {
                    let l = l2.lookup(&runs);
                    let mut want = Lookup::default();
                    for &(x, b) in &lines {
                        if r.touch[x as usize] != Reference::ABSENT {
                            (want.hit_lines, want.hit_bytes) = (want.hit_lines + 1, want.hit_bytes + b);
                        } else {
                            (want.miss_lines, want.miss_bytes) = (want.miss_lines + 1, want.miss_bytes + b);
                        }
                    }
                    prop_assert_eq!(l, want);
                    l2.commit_read(t, &runs, &l);
                    r.read(t, &lines);
                } else {
                    l2.commit_write(t, &runs);
                    for &(line, b) in &lines {
                        r.touch_line(t, line);
                        write_bytes += b;
                    }
                }
                prop_assert_eq!(l2.order(), r.order());
                prop_assert_eq!(l2.stats.evicted_lines, r.evicted);
                prop_assert_eq!(l2.stats.write_bytes, write_bytes);
            }
        }
    }

    /// What a read found: (bytes, lines) of hits and of misses.
    fn lookup(hits: (u64, u64), misses: (u64, u64)) -> Lookup {
        Lookup {
            hit_bytes: hits.0,
            hit_lines: hits.1,
            miss_bytes: misses.0,
            miss_lines: misses.1,
        }
    }

    fn cfg(lines: u64) -> MemoryConfig {
        MemoryConfig {
            line_bytes: 256,
            l2_bytes: 256 * lines,
            l2_read_bytes_per_cycle: 32,
            l2_write_bytes_per_cycle: 16,
            l2_chip_bytes_per_cycle: 48,
            l2_latency: 20,
            hbm_bytes_per_cycle: 64,
            hbm_read_latency: 100,
        }
    }

    proptest! {
        /// Alone on the chip, a move's planned work is what `move_alone` says.
        #[test]
        fn a_move_alone_takes_what_move_alone_says(
            bpc in 1u64..300,
            hbm in 1u64..200,
            chip in 1u64..200,
            read_rate in 1u64..100,
            write_rate in 1u64..100,
            hits in 0u64..4,
            misses in 0u64..4,
            part in 1u64..=256,
            write in 0u64..3000,
            is_read in any::<bool>(),
        ) {
            let cfg = MemoryConfig {
                hbm_bytes_per_cycle: hbm,
                l2_chip_bytes_per_cycle: chip,
                l2_read_bytes_per_cycle: read_rate,
                l2_write_bytes_per_cycle: write_rate,
                ..cfg(8)
            };
            let mut l2 = L2::new(cfg, 16, &[]);
            // a read's misses want `part` bytes of each missing line
            let read = lookup((hits * 256, hits), (misses * part, misses));
            let read = is_read.then_some(&read);
            let write = if is_read { 0 } else { write };
            let (work, _) = l2.move_cost(5, bpc, read, write);
            prop_assert_eq!(work, l2.move_alone(bpc, read, write));
        }
    }

    #[test]
    fn a_move_that_shares_hbm_takes_longer_than_alone() {
        // sim/tests/integration/memory.rs, `two_missing_loads_share_hbm`: x's 2 missing lines
        // hold all of HBM (64 a cycle) over [1, 9); y's 2 lines then get nothing until 9 and
        // take [9, 17) from 2: 15 cycles, where alone they take 512 / 64 = 8
        let mut l2 = L2::new(cfg(8), 16, &[]);
        let miss = lookup((0, 0), (512, 2));
        assert_eq!(l2.move_cost(1, 64, Some(&miss), 0).0, 8);
        l2.reserve();
        assert_eq!(l2.move_cost(2, 64, Some(&miss), 0).0, 15);
        assert_eq!(l2.move_alone(64, Some(&miss), 0), 8);
    }

    #[test]
    fn ties_leave_lower_address_first_and_touches_refresh() {
        let mut l2 = L2::new(cfg(2), 16, &[]);
        // lines 5 then 3 written in the same cycle 7: same stamp, so 3 (lower) leaves first
        l2.commit_write(7, &whole(&[5]));
        l2.commit_write(7, &whole(&[3]));
        assert_eq!(l2.order(), [3, 5]);
        l2.commit_write(8, &whole(&[9]));
        assert_eq!(l2.order(), [5, 9]);
        // a read at 9 touching 5 makes 9 the oldest; a miss on 1 then evicts 9
        let lines = whole(&[5]);
        let l = l2.lookup(&lines);
        assert_eq!((l.hit_lines, l.miss_lines), (1, 0));
        l2.commit_read(9, &lines, &l);
        assert_eq!(l2.order(), [9, 5]);
        // 100 bytes of line 1
        let lines = [(256, 356)];
        let l = l2.lookup(&lines);
        l2.commit_read(10, &lines, &l);
        assert_eq!(l2.order(), [5, 1]);
        assert_eq!(l2.stats.evicted_lines, 2);
    }

    #[test]
    fn touches_split_segments_and_runs_join_them() {
        let mut l2 = L2::new(cfg(8), 16, &[]);
        // lines 0..6 written at 1: one segment
        l2.commit_write(1, &[(0, 6 * 256)]);
        assert_eq!(l2.order(), [0, 1, 2, 3, 4, 5]);
        // line 4 read at 3 leaves from inside its segment (the right part, smaller, splits off)
        let read = |l2: &mut L2, t: u64, line: u64| {
            let runs = whole(&[line]);
            let l = l2.lookup(&runs);
            l2.commit_read(t, &runs, &l);
        };
        read(&mut l2, 3, 4);
        assert_eq!(l2.order(), [0, 1, 2, 3, 5, 4]);
        // line 1 at 5: the left part splits off
        read(&mut l2, 5, 1);
        assert_eq!(l2.order(), [0, 2, 3, 5, 4, 1]);
        // lines 2 and 3 at 7, one by one: 2 then 3 join at the end
        read(&mut l2, 7, 2);
        read(&mut l2, 7, 3);
        assert_eq!(l2.order(), [0, 5, 4, 1, 2, 3]);
        // a run of 8..12 at 9 fills the L2 (8 lines) and evicts the first two
        l2.commit_write(9, &[(8 * 256, 12 * 256)]);
        assert_eq!(l2.order(), [4, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(l2.stats.evicted_lines, 2);
        // line 7 at 9 (same cycle, lower than 8): before the run, whose segment it joins
        l2.commit_write(9, &whole(&[7]));
        assert_eq!(l2.order(), [1, 2, 3, 7, 8, 9, 10, 11]);
    }

    #[test]
    fn warm_fills_from_line_0_until_full() {
        let l2 = L2::new(cfg(3), 5, &[(0, 5)]);
        assert_eq!(l2.order(), [0, 1, 2]);
        assert_eq!(l2.stats.warm_lines, 3);
    }

    #[test]
    fn moves_share_hbm_and_the_l2_rate_cycle_by_cycle() {
        // cfg: HBM 64 B/cycle, L2 48 B/cycle for the chip, 32 per read, 16 per write
        let mut l2 = L2::new(cfg(64), 64, &[]);
        let miss = lookup((0, 0), (512, 2));
        // alone: 2 whole lines = 512 B at min(P 64, HBM's spare 64): 8 cycles [0, 8);
        // startup + hbm latency 100
        assert_eq!(l2.move_cost(0, 64, Some(&miss), 0), (8, 100));
        l2.reserve();
        l2.commit_read(0, &whole(&[0, 1]), &miss);
        // at 7 the first holds all of HBM until 8: nothing in cycle 7, then 8 cycles [8, 16)
        assert_eq!(l2.move_cost(7, 64, Some(&miss), 0), (9, 100));
        // a slow path is its own bound: from 8 at 16: 32 cycles, ends at 40
        assert_eq!(l2.move_cost(7, 16, Some(&miss), 0), (33, 100));
        // at 8 it is over: alone again
        assert_eq!(l2.move_cost(8, 64, Some(&miss), 0), (8, 100));
        // hits only: min(64, 32) = 32 of the L2's 48: 16 cycles, l2 latency
        let hit = lookup((512, 2), (0, 0));
        assert_eq!(l2.move_cost(20, 64, Some(&hit), 0), (16, 20));
        l2.reserve();
        // a second hit read at 20 gets what is left of the L2: 16 a cycle for [20, 36), 256
        // bytes, then 32: 8 cycles more
        assert_eq!(l2.move_cost(20, 64, Some(&hit), 0), (24, 20));
        // mixed at 40: 100 B of hits: ceil(100 / 32) = 4 cycles; then 2 whole lines (512 B)
        // from HBM at the pace of 300 bytes at 64 (64 × 512 / 300 = 109), HBM's 64 at most:
        // 8 cycles
        let mixed = lookup((100, 1), (300, 2));
        assert_eq!(l2.move_cost(40, 64, Some(&mixed), 0), (12, 100));
        // a write of 512 B at min(64, l2 write 16) on HBM and the L2 together: 32 cycles
        assert_eq!(l2.move_cost(40, 64, None, 512), (32, 0));
        l2.reserve();
        // a miss at 41 gets HBM's 64 - 16 = 48 while the write lasts: ceil(512 / 48) = 11
        assert_eq!(l2.move_cost(41, 64, Some(&miss), 0), (11, 100));
        // a hit read at 41: the L2's 48 - 16 = 32: 16 cycles
        assert_eq!(l2.move_cost(41, 64, Some(&hit), 0), (16, 20));
    }

    /// The reference the channels are checked against: what every cycle holds, cycle by cycle.
    struct Cycles {
        hbm: Vec<u64>,
        l2: Vec<u64>,
    }

    impl Cycles {
        /// A phase from `start`: each cycle takes the least of `cap` and the spare rates.
        fn phase(&mut self, start: u64, bytes: u64, cap: u64, hbm: bool, l2: bool) -> u64 {
            let (mut c, mut left) = (start as usize, bytes);
            while left > 0 {
                let mut r = cap;
                if hbm {
                    r = r.min(64 - self.hbm[c]);
                }
                if l2 {
                    r = r.min(48 - self.l2[c]);
                }
                if hbm {
                    self.hbm[c] += r;
                }
                if l2 {
                    self.l2[c] += r;
                }
                left = left.saturating_sub(r);
                c += 1;
            }
            c as u64
        }
    }

    proptest! {
        /// Random moves in cycle order (reads with hits and misses, writes, on paths of
        /// random rates) cost what the cycle-by-cycle reference gives, and no cycle holds more
        /// than a channel's rate.
        #[test]
        fn channels_match_the_cycle_by_cycle_reference(
            moves in proptest::collection::vec(
                (0u64..6, 1u64..100, 0u64..700, 0u64..4, any::<bool>(), 0u64..900),
                1..40,
            ),
        ) {
            let mut l2 = L2::new(cfg(64), 64, &[]);
            let mut r = Cycles { hbm: vec![0; 1 << 17], l2: vec![0; 1 << 17] };
            let mut t = 0;
            for (gap, bpc, hits, misses, read, written) in moves {
                t += gap;
                let l = lookup((hits, hits.div_ceil(256)), (misses * 200, misses));
                let got = l2.move_cost(t, bpc, read.then_some(&l), written);
                l2.reserve();
                let mut at = t;
                let mut extra = 0;
                if read {
                    at = r.phase(at, hits, bpc.min(32), false, true);
                    if misses > 0 {
                        // 256-byte lines for 200 bytes each: 256 / 200 × P
                        at = r.phase(at, misses * 256, (bpc * 256 / 200).max(1), true, false);
                        extra = 100;
                    } else {
                        extra = 20;
                    }
                }
                at = r.phase(at, written, bpc.min(16), true, true);
                prop_assert_eq!(got, (at - t, extra));
            }
            prop_assert!(r.hbm.iter().all(|&u| u <= 64) && r.l2.iter().all(|&u| u <= 48));
            // the channels hold what the reference holds, cycle by cycle
            for (c, (&h, &u)) in r.hbm.iter().zip(&r.l2).enumerate().skip(t as usize) {
                let c = c as u64;
                prop_assert_eq!(l2.hbm.used_at(c), h, "HBM at {}", c);
                prop_assert_eq!(l2.l2_rate.used_at(c), u, "L2 at {}", c);
            }
        }
    }
}
