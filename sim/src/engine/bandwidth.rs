//! The chip's shared rates under the memory system (docs/timing.md, "The gm memory system").
//!
//! Bandwidth: the chip's HBM and its L2 are each a [`Channel`], the bytes per cycle the moves in
//! progress hold, as steps over the cycles to come. A move, when it starts, takes its bytes in
//! phases (hits from the L2; line fills from HBM; a write into the L2 and through to HBM), each
//! at the most its own rate and the channels' spare rate allow, cycle by cycle ([`plan_phase`]):
//! moves already under way keep what they hold, so no cycle's use ever exceeds a channel's rate.
//! The L2 ([`super::memory`]) plans a move's phases here and holds them when it starts.

use crate::config::MemoryConfig;

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
    /// 0 and lasts for ever (so there is always one). A handful are live at a time (a full
    /// step, then the staircase the moves under way leave as they end): a plain vector
    /// searched forward from `head`, where new moves start, beats a tree or a deque here.
    steps: Vec<(u64, u64)>,
    head: usize,
    /// While stepped: at least what any live step holds (the most held since the channel last
    /// became stepped), so that a move with `cap - peak` to spare is known to fit without a
    /// walk.
    peak: u64,
    /// While stepped: a cycle from which what is held never grows (the staircase the moves
    /// under way leave as they end one by one), so that a walk that finds its whole rate to
    /// spare there has it for ever after.
    calm: u64,
    /// Scratch for turning pieces into steps.
    events: Vec<(u64, i64)>,
}

/// A share of one or two channels a planned move holds: `rate` bytes per cycle over cycles
/// `from..to`, on HBM and / or the L2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) from: u64,
    pub(super) to: u64,
    pub(super) rate: u64,
    pub(super) hbm: bool,
    pub(super) l2: bool,
}

impl Channel {
    pub(super) fn new(cap: u64) -> Channel {
        Channel {
            cap,
            now: 0,
            stepped: false,
            pieces: Vec::new(),
            loose: 0,
            first_end: u64::MAX,
            steps: vec![(0, 0)],
            head: 0,
            peak: 0,
            calm: 0,
            events: Vec::new(),
        }
    }

    /// Nothing will start before `t`: what ends by then goes.
    #[inline(always)]
    pub(super) fn forget(&mut self, t: u64) {
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
            self.peak = 0;
        } else if self.head >= 64 && 2 * self.head >= n {
            self.steps.drain(..self.head);
            self.head = 0;
        }
    }

    /// Whether `cap` bytes per cycle are known to be to spare in every cycle to come, without
    /// a walk (else the steps must be walked).
    #[inline(always)]
    fn roomy(&self, cap: u64) -> bool {
        let held = if self.stepped { self.peak } else { self.loose };
        held + cap <= self.cap
    }

    /// The pieces as steps, from the latest start on.
    #[inline(always)]
    fn step_up(&mut self) {
        if !self.stepped {
            self.step_up_pieces();
        }
    }

    /// [`Channel::step_up`] when not stepped.
    #[cold]
    fn step_up_pieces(&mut self) {
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
        self.peak = self.steps.iter().map(|s| s.1).max().unwrap_or(0);
        let mut k = self.steps.len() - 1;
        while k > 0 && self.steps[k - 1].1 >= self.steps[k].1 {
            k -= 1;
        }
        self.calm = self.steps[k].0;
        self.head = 0;
        self.stepped = true;
        self.pieces.clear();
        self.loose = 0;
        self.first_end = u64::MAX;
    }

    /// What cycle `c` (not before the latest start) holds (tests).
    #[cfg(test)]
    pub(super) fn used_at(&self, c: u64) -> u64 {
        if self.stepped {
            self.steps[self.at(c)].1
        } else {
            let on = self.pieces.iter().filter(|p| p.0 <= c && c < p.1);
            on.map(|p| p.2).sum()
        }
    }

    /// The index of the step holding cycle `t`, searched forward from step `i` (at or before
    /// it): the cycles asked for lie a step or two past the first live one (a move starts
    /// where the channel is full, or just after), where a search from the end would walk the
    /// whole staircase the moves under way leave behind.
    #[inline(always)]
    fn at_from(&self, mut i: usize, t: u64) -> usize {
        while let Some(&(from, _)) = self.steps.get(i + 1) {
            if from > t {
                break;
            }
            i += 1;
        }
        i
    }

    /// [`Channel::at_from`] the first live step.
    #[cfg(test)]
    fn at(&self, t: u64) -> usize {
        self.at_from(self.head, t)
    }

    /// A step boundary at `t` (at or after step `i`'s start): its index.
    #[inline]
    fn split(&mut self, i: usize, t: u64) -> usize {
        let i = self.at_from(i, t);
        let (from, used) = self.steps[i];
        if from == t {
            return i;
        }
        self.steps.insert(i + 1, (t, used));
        i + 1
    }

    /// `rate` more bytes per cycle held over `from..to`. `hint`: a step index at or before
    /// the one holding `from` (0 will do); returns one for a hold starting at `to` or later (a
    /// move's next piece).
    #[inline(always)]
    pub(super) fn hold(&mut self, from: u64, to: u64, rate: u64, hint: usize) -> usize {
        if from >= to || rate == 0 {
            return hint;
        }
        if !self.stepped {
            self.pieces.push((from, to, rate));
            self.loose += rate;
            self.first_end = self.first_end.min(to);
            return 0;
        }
        self.hold_stepped(from, to, rate, hint)
    }

    /// [`Channel::hold`] on the steps.
    fn hold_stepped(&mut self, from: u64, to: u64, rate: u64, hint: usize) -> usize {
        // what is held rises at `from` and falls back at `to`: it never grows from `from` on
        // when it did not from `calm` on
        self.calm = self.calm.max(from);
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
            self.peak = self.peak.max(rate);
            return self.head;
        }
        let a = self.split(hint.max(self.head), from);
        // the steps from `from` up to `to` hold `rate` more, in the walk that finds `to`
        let (mut b, mut peak) = (a, self.peak);
        for s in &mut self.steps[a..] {
            if s.0 >= to {
                break;
            }
            s.1 += rate;
            peak = peak.max(s.1);
            debug_assert!(s.1 <= self.cap, "a channel over its rate");
            b += 1;
        }
        self.peak = peak;
        // a boundary at `to`: the step before it held `rate` less there
        if self.steps.get(b).is_none_or(|s| s.0 > to) {
            let used = self.steps[b - 1].1 - rate;
            self.steps.insert(b, (to, used));
        }
        // steps that now hold the same as their neighbour join it
        if b < self.steps.len() && self.steps[b].1 == self.steps[b - 1].1 {
            self.steps.remove(b);
        }
        if a > self.head && self.steps[a].1 == self.steps[a - 1].1 {
            self.steps.remove(a);
        }
        // the step holding `to` is at `a - 1` or after, whatever joined
        a.saturating_sub(1).max(self.head)
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
pub(super) fn plan_phase(
    hbm: Option<&mut Channel>,
    l2: Option<&mut Channel>,
    start: u64,
    bytes: u64,
    cap: u64,
    out: &mut Vec<Piece>,
) -> u64 {
    if bytes == 0 {
        return start;
    }
    let on = Piece {
        from: start,
        to: start,
        rate: cap,
        hbm: hbm.is_some(),
        l2: l2.is_some(),
    };
    // a channel with `cap` to spare in every cycle to come never bounds the phase: only the
    // others are walked (the common case: none, and the phase is one piece)
    fn binding(c: Option<&mut Channel>, cap: u64) -> Option<&Channel> {
        let c = c.filter(|c| !c.roomy(cap))?;
        c.step_up();
        Some(c)
    }
    match (binding(hbm, cap), binding(l2, cap)) {
        (None, None) => {
            let to = start + bytes.div_ceil(cap);
            out.push(Piece { to, ..on });
            to
        }
        (Some(c), None) | (None, Some(c)) => plan_one(c, on, bytes, out),
        (Some(h), Some(l)) => plan_two(h, l, on, bytes, out),
    }
}

/// A phase's walk over the steps: the piece being built (from `from` at `rate`, none while
/// 0), where the walk is and the bytes left.
struct Walk {
    on: Piece,
    from: u64,
    rate: u64,
    a: u64,
    left: u64,
}

impl Walk {
    fn new(on: Piece, bytes: u64) -> Walk {
        Walk {
            on,
            from: on.from,
            rate: 0,
            a: on.from,
            left: bytes,
        }
    }

    /// The stretch from where the walk is to `b` (`u64::MAX`: for ever) has `spare` a cycle:
    /// the phase takes it, and `Some(end)` when it ends there (its last piece appended to
    /// `out`). A piece goes to `out` when the rate changes. A multiplication rather than a
    /// division per stretch: `ceil(left / spare) <= b - a` is `left <= spare * (b - a)`.
    #[inline(always)]
    fn stretch(&mut self, b: u64, spare: u64, out: &mut Vec<Piece>) -> Option<u64> {
        if spare != self.rate {
            if self.rate > 0 {
                out.push(Piece {
                    from: self.from,
                    to: self.a,
                    rate: self.rate,
                    ..self.on
                });
            }
            (self.from, self.rate) = (self.a, spare);
        }
        if spare > 0 {
            match spare.checked_mul(b - self.a) {
                Some(all) if all < self.left && b != u64::MAX => self.left -= all,
                _ => {
                    let to = self.a + self.left.div_ceil(spare);
                    out.push(Piece {
                        from: self.from,
                        to,
                        rate: spare,
                        ..self.on
                    });
                    return Some(to);
                }
            }
        }
        self.a = b;
        None
    }
}

/// [`plan_phase`] when one channel, `c`, may have less than `cap` to spare from `start` on:
/// the phase walks its steps.
fn plan_one(c: &Channel, on: Piece, bytes: u64, out: &mut Vec<Piece>) -> u64 {
    let steps = &c.steps[c.at_from(c.head, on.from)..];
    let mut w = Walk::new(on, bytes);
    let mut used = steps[0].1;
    for &(next, next_used) in &steps[1..] {
        let spare = on.rate.min(c.cap - used);
        if spare == on.rate && w.a >= c.calm {
            // what is held never grows from here: the whole rate to spare for ever
            break;
        }
        if let Some(to) = w.stretch(next, spare, out) {
            return to;
        }
        used = next_used;
    }
    // the last step, for ever (it holds 0), or the whole rate from here on
    let spare = on.rate.min(c.cap - used);
    let to = w.stretch(u64::MAX, spare, out);
    to.expect("a phase ends in the last step")
}

/// [`plan_phase`] when both channels may have less than `cap` to spare from `start` on: the
/// phase walks the steps of both.
fn plan_two(h: &Channel, l: &Channel, on: Piece, bytes: u64, out: &mut Vec<Piece>) -> u64 {
    let (hs, ls) = (&h.steps[..], &l.steps[..]);
    let (mut i, mut j) = (h.at_from(h.head, on.from), l.at_from(l.head, on.from));
    let mut w = Walk::new(on, bytes);
    loop {
        let hb = hs.get(i + 1).map_or(u64::MAX, |s| s.0);
        let lb = ls.get(j + 1).map_or(u64::MAX, |s| s.0);
        let b = hb.min(lb);
        let spare = on.rate.min(h.cap - hs[i].1).min(l.cap - ls[j].1);
        if let Some(to) = w.stretch(b, spare, out) {
            return to;
        }
        i += usize::from(hb == b);
        j += usize::from(lb == b);
    }
}
