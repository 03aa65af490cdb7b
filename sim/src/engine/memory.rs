//! The gm memory system (docs/timing.md, "The gm memory system"): an L2 of whole lines in front
//! of HBM, shared by every core of a run.
//!
//! gm tensors are laid out in declaration order, each starting on a line. A gm operand's bytes
//! are its maximal contiguous runs in that layout ([`runs_of`]: one for a row or a whole
//! tensor, whatever its size; [`OneRun`] finds that one without walking the selection), and the
//! L2 cuts them into `(line, bytes in that line)` pairs as it walks them ([`for_each_line`]), in
//! increasing line order, a line two runs share once with both runs' bytes: no per-line list is
//! ever built.
//!
//! The L2 keeps its present lines ordered by (stamp of the last touch, line): the first one
//! leaves when a line must come in and the L2 is full (least recently touched, lower address
//! first on a tie). Lines sit in that order in segments, runs of consecutive lines touched in
//! the same cycle (a move's lines are one), kept in a doubly linked list: a move that streams
//! its lines in behind the last ones evicts from the first segment and appends a segment, at a
//! cost per segment, not per line. A touched line leaves its segment (which splits when it was
//! inside, the smaller part taking a new segment) and goes after the last line with a smaller
//! key, walking back from the end (several moves starting in one cycle, the later touching
//! lower lines). A [`SegIndex`] maps each line of the layout to the segment that last held it,
//! in chunks that exist only while they hold a present line (memory follows the L2's contents,
//! not the tensors' size); an entry may be stale, recognised by its segment not covering the
//! line now.
//!
//! Bandwidth: the chip's HBM and its L2 are each a [`Channel`], the bytes per cycle the moves in
//! progress hold, as steps over the cycles to come. A move, when it starts, takes its bytes in
//! phases (hits from the L2; line fills from HBM; a write into the L2 and through to HBM), each
//! at the most its own rate and the channels' spare rate allow, cycle by cycle: moves already
//! under way keep what they hold, so no cycle's use ever exceeds a channel's rate.

use super::code::Val;
use super::result::MemoryStats;
use crate::config::MemoryConfig;
use crate::footprint::{self, EvalFailure, Sel};
use crate::program::Operand;

/// "No segment": in a [`SegIndex`], and at an end of the list.
const NONE: u32 = u32::MAX;

/// Which segment last held each line of the layout, kept in chunks of 2^shift lines that exist
/// only while one of their lines is present: memory follows what the L2 holds, not the layout,
/// so a kernel streaming through gigabytes of tensors touches a few chunks at a time and never
/// faults in pages for the rest. An evicted line's entry is left stale ([`L2::seg`] checks the
/// segment covers the line), so an eviction writes nothing but its chunk's count.
#[derive(Clone, Debug)]
struct SegIndex {
    shift: u32,
    /// 2^shift - 1.
    mask: u64,
    /// Per chunk of the layout: its block in `store`, or [`NONE`].
    dir: Vec<u32>,
    /// Per chunk of the layout: how many of its lines are present.
    present: Vec<u32>,
    /// Per chunk of the layout: 1 + the highest line offset written since it got its block;
    /// the entries from there on are [`NONE`] (a streaming kernel's next run is always there,
    /// so its lookup need not read them).
    high: Vec<u32>,
    /// Blocks of 2^shift entries.
    store: Vec<u32>,
    /// Blocks no chunk uses.
    free: Vec<u32>,
}

impl SegIndex {
    /// 2^14 lines a chunk: 64 KiB of entries.
    const SHIFT: u32 = 14;

    fn new(lines: u64, shift: u32) -> SegIndex {
        let chunks = (lines >> shift) as usize + 1;
        SegIndex {
            shift,
            mask: (1 << shift) - 1,
            dir: vec![NONE; chunks],
            present: vec![0; chunks],
            high: vec![0; chunks],
            store: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The segment that last held `line` (possibly stale), or [`NONE`].
    #[inline(always)]
    fn get(&self, line: u64) -> u32 {
        match self.dir[(line >> self.shift) as usize] {
            NONE => NONE,
            b => self.store[((b as usize) << self.shift) | (line & self.mask) as usize],
        }
    }

    /// The entries of chunk `c` that may hold a segment (up to its high mark), when it
    /// exists.
    #[inline(always)]
    fn chunk(&self, c: u64) -> Option<&[u32]> {
        match self.dir[c as usize] {
            NONE => None,
            b => {
                let at = (b as usize) << self.shift;
                Some(&self.store[at..at + self.high[c as usize] as usize])
            }
        }
    }

    /// `n` lines of chunk `c` come in: makes the chunk exist; returns where its entries start
    /// in `store` (see [`SegIndex::set`]).
    #[inline(always)]
    fn claim(&mut self, c: u64, n: u32) -> usize {
        let c = c as usize;
        let mut b = self.dir[c];
        if b == NONE {
            b = self.block();
            self.dir[c] = b;
            self.high[c] = 0;
        }
        self.present[c] += n;
        (b as usize) << self.shift
    }

    /// Segment `f` holds `line`, of the chunk [`SegIndex::claim`] returned `at` for.
    #[inline(always)]
    fn set(&mut self, at: usize, line: u64, f: u32) {
        let i = at | (line & self.mask) as usize;
        self.store[i] = f;
    }

    /// `line` comes in, into segment `f`.
    #[inline(always)]
    fn enter(&mut self, line: u64, f: u32) {
        let c = line >> self.shift;
        let at = self.claim(c, 1);
        self.set(at, line, f);
        let h = &mut self.high[c as usize];
        *h = (*h).max((line & self.mask) as u32 + 1);
    }

    /// `line`, present, now is in segment `f`.
    #[inline(always)]
    fn update(&mut self, line: u64, f: u32) {
        let b = self.dir[(line >> self.shift) as usize];
        debug_assert!(b != NONE, "a present line's chunk exists");
        let i = ((b as usize) << self.shift) | (line & self.mask) as usize;
        self.store[i] = f;
    }

    /// Lines `l0..l1`, present, leave; a chunk goes when its last present line does.
    fn leave_range(&mut self, l0: u64, l1: u64) {
        let mut a = l0;
        while a < l1 {
            let c = a >> self.shift;
            let b = l1.min((c + 1) << self.shift);
            let n = (b - a) as u32;
            let c = c as usize;
            self.present[c] -= n;
            if self.present[c] == 0 {
                self.free.push(self.dir[c]);
                self.dir[c] = NONE;
            }
            a = b;
        }
    }

    /// Lines `l0..l1`, absent, come in, into segment `f`.
    fn enter_range(&mut self, l0: u64, l1: u64, f: u32) {
        let mut a = l0;
        while a < l1 {
            let c = a >> self.shift;
            let b = l1.min((c + 1) << self.shift);
            let at = self.claim(c, (b - a) as u32);
            let (from, to) = ((a & self.mask) as usize, ((b - 1) & self.mask) as usize);
            self.store[at + from..=at + to].fill(f);
            let h = &mut self.high[c as usize];
            *h = (*h).max(to as u32 + 1);
            a = b;
        }
    }

    /// A block for a chunk: a freed one, else a new one. A freed one is cleared: its stale
    /// entries would be harmless, but each would cost a lookup a visit to a segment.
    fn block(&mut self) -> u32 {
        if let Some(b) = self.free.pop() {
            let at = (b as usize) << self.shift;
            self.store[at..at + (1 << self.shift)].fill(NONE);
            return b;
        }
        let b = (self.store.len() >> self.shift) as u32;
        self.store
            .resize(self.store.len() + (1 << self.shift), NONE);
        b
    }
}

/// Lines `lo..hi` of the layout, all present and all last touched at `stamp` (cycle + 1; 0:
/// there from a warm start), next to each other in the L2's order: a node of its list. A free
/// segment has `lo == hi`.
#[derive(Clone, Copy, Debug)]
struct Seg {
    stamp: u64,
    lo: u32,
    hi: u32,
    /// Neighbours in the L2's order, or [`NONE`].
    prev: u32,
    next: u32,
}

impl Seg {
    /// The key of its last line.
    #[inline(always)]
    fn last(&self) -> (u64, u32) {
        (self.stamp, self.hi - 1)
    }
}

/// Appends the non-empty contiguous byte runs `[from, to)` of operand `o` (on a tensor of
/// `shape` whose first byte is at `base`) in the gm layout, for the loop variables `vars`, to
/// `out`, in increasing order.
pub(super) fn runs_of<'a>(
    o: &'a Operand,
    shape: &[u64],
    vars: &[i64],
    base: u64,
    out: &mut Vec<(u64, u64)>,
) -> Result<(), EvalFailure<'a>> {
    footprint::gm_runs_at(o, shape, vars, |first, bytes| {
        if bytes > 0 {
            out.push((base + first, base + first + bytes));
        }
    })
}

/// The run of a gm operand whose selection is one contiguous run whatever the loop variables:
/// indices on the outer dimensions, then an index or a slice, then whole dimensions (`x[t]`,
/// `x[i, j, a:b]`). Its first element is a sum of index × stride, so [`OneRun::at`] finds it
/// without walking the selection as [`runs_of`] does, with the same result.
#[derive(Clone, Debug)]
pub(super) struct OneRun<'p> {
    /// (index, stride in elements) of each outer dimension, then the partial dimension's
    /// start.
    terms: Vec<(Val<'p>, u64)>,
    /// The partial dimension's end when it is a slice (an index ends at start + 1), and its
    /// stride.
    end: Option<Val<'p>>,
    stride: u64,
    bits: u64,
}

impl<'p> OneRun<'p> {
    /// The pattern of operand `o` on a tensor of `shape`, when it has that form.
    pub fn of(o: &'p Operand, shape: &[u64]) -> Option<OneRun<'p>> {
        let n = shape.len();
        if o.indices.len() > n || shape.contains(&0) {
            return None;
        }
        // the innermost dimension not selected whole, whatever the variables
        let whole = |d: usize| match Sel::of(o, d, shape[d]) {
            Sel::Whole(_) => true,
            Sel::Slice(a, b) => a.as_const() == Some(0) && b.as_const() == Some(shape[d] as i64),
            Sel::At(_) => false,
        };
        let k = (0..n).rev().find(|&d| !whole(d))?;
        let stride = |d: usize| shape[d + 1..].iter().product::<u64>();
        let mut terms = Vec::with_capacity(k + 1);
        for (d, &extent) in shape.iter().enumerate().take(k) {
            let Sel::At(e) = Sel::of(o, d, extent) else {
                return None;
            };
            terms.push((Val::new(e), stride(d)));
        }
        let end = match Sel::of(o, k, shape[k]) {
            Sel::At(e) => {
                terms.push((Val::new(e), stride(k)));
                None
            }
            Sel::Slice(a, b) => {
                terms.push((Val::new(a), stride(k)));
                Some(Val::new(b))
            }
            Sel::Whole(_) => return None,
        };
        Some(OneRun {
            terms,
            end,
            stride: stride(k),
            bits: o.dtype.bits(),
        })
    }

    /// Its byte run `[from, to)` in the gm layout (the tensor's first byte at `base`) for the
    /// loop variables `vars`, as [`runs_of`] finds it (bounds already checked): `Some(None)`
    /// when it selects no byte, `None` when an expression fails to evaluate (the caller then
    /// asks [`runs_of`] for the error).
    #[inline]
    pub fn at(&self, vars: &[i64], base: u64) -> Option<Option<(u64, u64)>> {
        let last = self.terms.len() - 1;
        let (mut start, mut empty, mut first) = (0u64, false, 0i64);
        for (i, &(v, stride)) in self.terms.iter().enumerate() {
            first = v.eval(vars).ok()?;
            // an index at i64::MAX selects [MAX, MAX) (`Sel::at` saturates): nothing
            empty |= first == i64::MAX && (i < last || self.end.is_none());
            start = start.wrapping_add((first as u64).wrapping_mul(stride));
        }
        let end = match self.end {
            Some(e) => e.eval(vars).ok()?,
            None => first.saturating_add(1),
        };
        if empty || end <= first {
            return Some(None);
        }
        let run = (end as u64).wrapping_sub(first as u64) * self.stride;
        let (x, y) = (
            start * self.bits / 8,
            (start + run).saturating_mul(self.bits).div_ceil(8),
        );
        Some((y > x).then_some((base + x, base + y)))
    }
}

/// Calls `f(line, bytes in that line)` for the lines of `runs` (from [`runs_of`]) in
/// increasing line order; a line two consecutive runs share comes once, with both runs' bytes.
#[inline(always)]
pub(super) fn for_each_line(runs: &[(u64, u64)], line_bytes: u64, mut f: impl FnMut(u64, u64)) {
    // the last line seen, held back until a different one comes
    let (mut held, mut held_bytes) = (u64::MAX, 0);
    for &(a, end) in runs {
        for line in a / line_bytes..=(end - 1) / line_bytes {
            let from = a.max(line * line_bytes);
            let to = end.min((line + 1) * line_bytes);
            if line == held {
                held_bytes += to - from;
            } else {
                if held != u64::MAX {
                    f(held, held_bytes);
                }
                (held, held_bytes) = (line, to - from);
            }
        }
    }
    if held != u64::MAX {
        f(held, held_bytes);
    }
}

/// A shared rate of the chip (HBM's bytes per cycle, or the L2's): what the moves under way
/// hold of it, cycle by cycle from the earliest start that can still come. Moves start in
/// cycle order over the whole launch (the engine puts gm moves in its global order), so the
/// past is forgotten as they come.
///
/// Two forms, the same rule. While what is held adds up to no more than the rate with room for
/// the next move (one core's loads and stores, say), the channel keeps just the pieces held and
/// their sum: a move that fits under the sum gets its own rate throughout, and nothing needs the
/// cycle-by-cycle picture. When a move might have to wait, the pieces become steps (what is held
/// per stretch of cycles), kept until the channel is idle again.
#[derive(Clone, Debug)]
pub(super) struct Channel {
    /// Bytes per cycle.
    cap: u64,
    /// The latest start: nothing will start before it.
    now: u64,
    /// Whether `steps` is the picture (else `pieces`).
    stepped: bool,
    /// `(from, to, rate)` held, in no order; `loose` is their rates' sum, at least what any
    /// cycle to come holds (more when they do not overlap: a move's phases), and `first_end`
    /// the earliest `to`.
    pieces: Vec<(u64, u64, u64)>,
    loose: u64,
    first_end: u64,
    /// `(from, used)`: bytes per cycle held from cycle `from` until the next step's `from`, in
    /// increasing `from`, from index `head` on (the ones before are past); the last step holds
    /// 0 and lasts for ever (so there is always one). A handful are live at a time: a plain
    /// vector searched from the end, where new moves start, beats a tree or a deque here.
    steps: Vec<(u64, u64)>,
    head: usize,
    /// Scratch for turning pieces into steps.
    events: Vec<(u64, i64)>,
}

/// A share of one or two channels a planned move holds: `rate` bytes per cycle over cycles
/// `from..to`, on HBM and / or the L2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    from: u64,
    to: u64,
    rate: u64,
    hbm: bool,
    l2: bool,
}

impl Channel {
    fn new(cap: u64) -> Channel {
        Channel {
            cap,
            now: 0,
            stepped: false,
            pieces: Vec::new(),
            loose: 0,
            first_end: u64::MAX,
            steps: vec![(0, 0)],
            head: 0,
            events: Vec::new(),
        }
    }

    /// Nothing will start before `t`: what ends by then goes.
    #[inline(always)]
    fn forget(&mut self, t: u64) {
        self.now = t;
        if !self.stepped {
            if self.first_end <= t {
                // one pass: keep what has not ended, with its sum and earliest end
                let (mut k, mut sum, mut first) = (0, 0, u64::MAX);
                for i in 0..self.pieces.len() {
                    let p = self.pieces[i];
                    if p.1 > t {
                        self.pieces[k] = p;
                        k += 1;
                        sum += p.2;
                        first = first.min(p.1);
                    }
                }
                self.pieces.truncate(k);
                (self.loose, self.first_end) = (sum, first);
            }
            return;
        }
        let n = self.steps.len();
        if self.head + 1 == n || self.steps[self.head + 1].0 > t {
            return;
        }
        while self.head + 1 < n && self.steps[self.head + 1].0 <= t {
            self.head += 1;
        }
        if self.head + 1 == n {
            // idle from here on: back to pieces
            self.stepped = false;
            self.steps.clear();
            self.steps.push((t, 0));
            self.head = 0;
        } else if self.head >= 64 && 2 * self.head >= n {
            self.steps.drain(..self.head);
            self.head = 0;
        }
    }

    /// Whether `cap` bytes per cycle are to spare in every cycle from `start` on.
    #[inline(always)]
    fn fits(&self, start: u64, cap: u64) -> bool {
        if !self.stepped {
            return self.loose + cap <= self.cap;
        }
        let i = self.at(start);
        self.steps[i..]
            .iter()
            .all(|&(_, used)| self.cap - used >= cap)
    }

    /// The pieces as steps, from the latest start on.
    fn step_up(&mut self) {
        if self.stepped {
            return;
        }
        let t = self.now;
        self.events.clear();
        for &(from, to, rate) in &self.pieces {
            self.events.push((from.max(t), rate as i64));
            self.events.push((to, -(rate as i64)));
        }
        self.events.sort_unstable();
        self.steps.clear();
        self.steps.push((t, 0));
        let mut used = 0i64;
        for &(at, delta) in &self.events {
            used += delta;
            let last = self.steps.len() - 1;
            if self.steps[last].0 == at {
                self.steps[last].1 = used as u64;
            } else {
                self.steps.push((at, used as u64));
            }
        }
        self.steps.dedup_by(|b, a| a.1 == b.1);
        self.head = 0;
        self.stepped = true;
        self.pieces.clear();
        self.loose = 0;
        self.first_end = u64::MAX;
    }

    /// What cycle `c` (not before the latest start) holds (tests).
    #[cfg(test)]
    fn used_at(&self, c: u64) -> u64 {
        if self.stepped {
            self.steps[self.at(c)].1
        } else {
            let on = self.pieces.iter().filter(|p| p.0 <= c && c < p.1);
            on.map(|p| p.2).sum()
        }
    }

    /// The index of the step holding cycle `t` (not before the first live step).
    #[inline]
    fn at(&self, t: u64) -> usize {
        let mut i = self.steps.len() - 1;
        while i > self.head && self.steps[i].0 > t {
            i -= 1;
        }
        i
    }

    /// The first cycle after step `i` (`u64::MAX` for the last).
    #[inline]
    fn end_of(&self, i: usize) -> u64 {
        self.steps.get(i + 1).map_or(u64::MAX, |&(from, _)| from)
    }

    /// A step boundary at `t`: its index.
    #[inline]
    fn split(&mut self, t: u64) -> usize {
        let i = self.at(t);
        let (from, used) = self.steps[i];
        if from == t {
            return i;
        }
        self.steps.insert(i + 1, (t, used));
        i + 1
    }

    /// `rate` more bytes per cycle held over `from..to`.
    #[inline(always)]
    fn hold(&mut self, from: u64, to: u64, rate: u64) {
        if from >= to || rate == 0 {
            return;
        }
        if !self.stepped {
            self.pieces.push((from, to, rate));
            self.loose += rate;
            self.first_end = self.first_end.min(to);
            return;
        }
        self.hold_stepped(from, to, rate);
    }

    /// [`Channel::hold`] on the steps.
    fn hold_stepped(&mut self, from: u64, to: u64, rate: u64) {
        let last = self.steps.len() - 1;
        if self.steps[last].0 <= from {
            // after everything held (the last step holds 0): a step of `rate`, then 0 again
            if self.steps[last].0 == from {
                self.steps[last].1 = rate;
            } else {
                self.steps.push((from, rate));
            }
            self.steps.push((to, 0));
            let n = self.steps.len();
            if n - 2 > self.head && self.steps[n - 3].1 == rate {
                self.steps.remove(n - 2);
            }
            return;
        }
        let a = self.split(from);
        let b = self.split(to);
        for k in a..b {
            self.steps[k].1 += rate;
            debug_assert!(self.steps[k].1 <= self.cap, "a channel over its rate");
        }
        // steps that now hold the same as their neighbour join it
        if b < self.steps.len() && self.steps[b].1 == self.steps[b - 1].1 {
            self.steps.remove(b);
        }
        if a > self.head && self.steps[a].1 == self.steps[a - 1].1 {
            self.steps.remove(a);
        }
    }
}

/// The most L2 bytes per cycle the cores of `slots` can ask for at once: each pipe of a core
/// moves one instruction at a time, at most its fastest gm path's rate (a read's bounded by
/// `l2_read_bytes_per_cycle`, a write's by `l2_write_bytes_per_cycle`), summed over every pipe
/// of every core.
pub(super) fn l2_demand(
    config: &crate::Config,
    m: &MemoryConfig,
    slots: &[crate::launch::Slot],
) -> u64 {
    use crate::types::Space;
    let mut per_type = vec![0u64; config.cores.len()];
    for (k, core) in config.cores.iter().enumerate() {
        for &pipe in &core.pipes {
            let fastest = config
                .paths
                .iter()
                .filter(|p| p.pipe == pipe && (p.from == Space::Gm || p.to == Space::Gm))
                .map(|p| {
                    let rate = u64::from(p.bytes_per_cycle.max(p.nz_bytes_per_cycle.unwrap_or(0)));
                    let l2 = if p.from == Space::Gm {
                        m.l2_read_bytes_per_cycle
                    } else {
                        m.l2_write_bytes_per_cycle
                    };
                    rate.min(l2)
                })
                .max()
                .unwrap_or(0);
            per_type[k] += fastest;
        }
    }
    slots
        .iter()
        .map(|s| per_type[s.core.index()])
        .fold(0, u64::saturating_add)
}

/// Plans `bytes` on the channels `hbm` and / or `l2` from cycle `start`, at most `cap` bytes
/// per cycle: in each cycle the phase takes the least of `cap` and the channels' spare rate
/// (moves planned before keep theirs). Appends the pieces to `out` and returns the cycle the
/// phase ends (its last cycle may not be full: the rate stays held for the whole cycle).
#[inline(always)]
fn plan_phase(
    mut hbm: Option<&mut Channel>,
    mut l2: Option<&mut Channel>,
    start: u64,
    bytes: u64,
    cap: u64,
    out: &mut Vec<Piece>,
) -> u64 {
    if bytes == 0 {
        return start;
    }
    // the common case: every channel has `cap` to spare from `start` on; one piece
    let fits = |c: &Option<&mut Channel>| c.as_ref().is_none_or(|c| c.fits(start, cap));
    if fits(&hbm) && fits(&l2) {
        let to = start + bytes.div_ceil(cap);
        out.push(Piece {
            from: start,
            to,
            rate: cap,
            hbm: hbm.is_some(),
            l2: l2.is_some(),
        });
        return to;
    }
    for c in [hbm.as_deref_mut(), l2.as_deref_mut()]
        .into_iter()
        .flatten()
    {
        c.step_up();
    }
    plan_shared(hbm.as_deref(), l2.as_deref(), start, bytes, cap, out)
}

/// [`plan_phase`] when a channel has less than `cap` to spare somewhere from `start` on: the
/// phase walks the steps of both.
fn plan_shared(
    hbm: Option<&Channel>,
    l2: Option<&Channel>,
    start: u64,
    bytes: u64,
    cap: u64,
    out: &mut Vec<Piece>,
) -> u64 {
    let chans = [hbm, l2];
    let mut at = [0usize; 2];
    for (k, c) in chans.iter().enumerate() {
        if let Some(c) = c {
            at[k] = c.at(start);
        }
    }
    let (mut a, mut left) = (start, bytes);
    loop {
        let (mut b, mut spare) = (u64::MAX, cap);
        for (k, c) in chans.iter().enumerate() {
            if let Some(c) = c {
                b = b.min(c.end_of(at[k]));
                spare = spare.min(c.cap - c.steps[at[k]].1);
            }
        }
        if spare > 0 {
            let need = left.div_ceil(spare);
            let to = if need <= b - a { a + need } else { b };
            match out.last_mut() {
                Some(p)
                    if (p.to, p.rate, p.hbm, p.l2) == (a, spare, hbm.is_some(), l2.is_some()) =>
                {
                    p.to = to
                }
                _ => out.push(Piece {
                    from: a,
                    to,
                    rate: spare,
                    hbm: hbm.is_some(),
                    l2: l2.is_some(),
                }),
            }
            if need <= b - a {
                return to;
            }
            // b - a < need, so this is below `left`
            left -= spare * (b - a);
        }
        a = b;
        for (k, c) in chans.iter().enumerate() {
            if let Some(c) = c {
                if c.end_of(at[k]) == b {
                    at[k] += 1;
                }
            }
        }
    }
}

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
    capacity: u64,
    /// Per line of the layout: the segment that last held it ([`L2::seg`] checks it still
    /// does).
    seg_of: SegIndex,
    /// The segments, in use and free.
    segs: Vec<Seg>,
    free: Vec<u32>,
    /// First (leaves first) and last segment in the L2's order, or [`NONE`].
    head: u32,
    tail: u32,
    /// Present lines.
    live: u64,
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
                // the line bytes per cycle that bring the move's own bytes in at P
                let pace = if fill == l.miss_bytes {
                    bpc
                } else {
                    (u128::from(bpc) * u128::from(fill) / u128::from(l.miss_bytes.max(1)))
                        .clamp(1, u128::from(u64::MAX)) as u64
                };
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
    /// ([`l2_demand`]). At or below the L2's rate, no move can ever wait for the L2, so it is not
    /// kept (a one-core run: a sixth of the 910B's rate).
    pub fn set_l2_demand(&mut self, demand: u64) {
        self.l2_binds = demand > self.cfg.l2_chip_bytes_per_cycle;
    }

    /// The move [`L2::move_cost`] planned last starts: it holds its share of the channels.
    pub fn reserve(&mut self) {
        for p in &self.planned {
            if p.hbm {
                self.hbm.hold(p.from, p.to, p.rate);
            }
            if p.l2 {
                self.l2_rate.hold(p.from, p.to, p.rate);
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

    /// Brings lines `l0..=l1`, all absent, in at `t`: what touching them one by one in line
    /// order does. When they go behind the last line and evict only lines that were there
    /// before (a streaming kernel), that is: the first lines leave, as many as the L2 has no
    /// room for, and the run goes to the end as one segment.
    fn bring_in(&mut self, t: u64, l0: u64, l1: u64) {
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
    fn touch_range(&mut self, t: u64, f: u32, l0: u64, l1: u64) {
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
    fn touch_line(&mut self, t: u64, line: u64) {
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
    fn absent(&self, l0: u64, l1: u64) -> bool {
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
    fn covers(&self, f: u32, line: u64) -> bool {
        let s = &self.segs[f as usize];
        s.lo as u64 <= line && line < s.hi as u64
    }

    /// The segment holding `line`, or [`NONE`] when it is absent.
    #[inline(always)]
    fn seg(&self, line: u64) -> u32 {
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
    fn place(&mut self, stamp: u64, line: u64, entering: bool) {
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

    #[test]
    fn one_run_finds_what_the_walk_finds() {
        let config = crate::load_config(
            crate::builtin::builtin(crate::builtin::DEFAULT).unwrap(),
            "config",
        )
        .unwrap();
        let text = r#"
kernel: one_run
core: aiv
sync: manual
gm:
  x: { shape: [4, 8, 16], dtype: f16 }
  y: { shape: [6, 10], dtype: i1 }
body:
  - for: { var: i, to: 4 }
    body:
      - for: { var: j, to: 8 }
        body:
          - use: ["x[i]", "x[i, j]", "x[i, j, 0:j]", "x[i, 0:j]", "x[i, j:8]", "x[0:i]",
                  "x[i, 0:8]", "x[i, j, j:16]", "y[i, j:10]", "y[i, 1:j]", "x[i, j, 3]",
                  "x[i, 0:4, 2]", "x[0:2, j]"]
"#;
        let p = crate::load_program(text, "one_run.yaml", &config, &[]).unwrap();
        let ops = crate::engine::operands(&p.ops[2].kind);
        let mut patterns = 0;
        for o in ops {
            let crate::program::Ref::Tensor(t) = o.base else {
                unreachable!()
            };
            let shape = &p.tensors[t.index()].shape;
            let Some(one) = OneRun::of(o, shape) else {
                continue;
            };
            patterns += 1;
            for i in 0..4 {
                for j in 0..8 {
                    let mut want = Vec::new();
                    runs_of(o, shape, &[i, j], 1000, &mut want).unwrap();
                    let got: Vec<_> = one.at(&[i, j], 1000).unwrap().into_iter().collect();
                    assert_eq!(got, want, "{} at i={i} j={j}", o.text);
                }
            }
        }
        // all but the last two, which select several runs (a partial dimension outside an
        // index)
        assert_eq!(patterns, 11);
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
        let miss = Lookup {
            miss_bytes: 512,
            miss_lines: 2,
            ..Lookup::default()
        };
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
        let hit = Lookup {
            hit_bytes: 512,
            hit_lines: 2,
            ..Lookup::default()
        };
        assert_eq!(l2.move_cost(20, 64, Some(&hit), 0), (16, 20));
        l2.reserve();
        // a second hit read at 20 gets what is left of the L2: 16 a cycle for [20, 36), 256
        // bytes, then 32: 8 cycles more
        assert_eq!(l2.move_cost(20, 64, Some(&hit), 0), (24, 20));
        // mixed at 40: 100 B of hits: ceil(100 / 32) = 4 cycles; then 2 whole lines (512 B)
        // from HBM at the pace of 300 bytes at 64 (64 × 512 / 300 = 109), HBM's 64 at most:
        // 8 cycles
        let mixed = Lookup {
            hit_bytes: 100,
            hit_lines: 1,
            miss_bytes: 300,
            miss_lines: 2,
        };
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
                let l = Lookup {
                    hit_bytes: hits,
                    hit_lines: hits.div_ceil(256),
                    miss_bytes: misses * 200,
                    miss_lines: misses,
                };
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
