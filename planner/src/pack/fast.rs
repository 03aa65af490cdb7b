//! The fast mode of the placement core: greedy best fit over a portfolio of buffer orders,
//! then a short seeded local search on the order (iterated greedy).
//!
//! - A *pass* places the buffers one by one in a given order. Fixed buffers go first, at their
//!   offsets. Each other buffer sees the free byte ranges over its whole lifetime (the address
//!   space minus the ranges of placed buffers that overlap it in time, including the gap from
//!   0) and takes the smallest one that fits at an aligned offset (best fit; ties: the lowest),
//!   or the lowest one (first fit); if none fits, it goes on top of the highest overlapping
//!   buffer, aligned. Gaps in lifetimes are ignored (the buffer is live throughout: valid).
//! - [`classic`] runs the published rules (TFLite greedy-by-size, XLA spatial/temporal,
//!   first fit in start order: the classic rules, docs/pack.md) with this pass.
//! - [`solve`] runs the "congestion" order (the buffers of the most loaded instants first),
//!   the four classic rules and two "big first" orders (the largest buffers by size, then the
//!   rest by lifetime or start), then more orders with both fits while the budget allows, then
//!   improves the best two: it moves a buffer that reaches the peak earlier, or swaps two
//!   buffers close in the order, re-places from the first changed position and keeps changes
//!   that do not raise the height. A placement at the lower bound stops everything (nothing
//!   can beat it, so the classic rules need not run). Deterministic: fixed seeds and a budget
//!   counted in work units (entries scanned), not time. Above [`LARGE`] buffers, one pass of
//!   first fit by start and no search, so a million buffers are placed in seconds.
//!
//! Two interchangeable packers find the placed buffers that overlap in time; they place
//! identically. Up to `SCAN_MAX` (4000) buffers, a list sorted by offset is scanned whole (the
//! TFLite loop; cheap when buffers overlap a good part of the others). Beyond, a segment tree
//! over the compressed time steps: each node keeps the union of the byte ranges of the buffers
//! stored at it ("own", buffers covering the node) and of those stored below it ("sub"). A
//! query for `[lo, hi)` heap-merges `sub` of its canonical nodes with `own` of their strict
//! ancestors, so it costs about the number of free holes times O(log T), not one entry per
//! overlapping buffer (the 62k-buffer trace has ~180M overlapping pairs). Unions only grow
//! within a pass, so merging on insert is amortised. Both stop early once the answer is known
//! (first fit: the first range that fits; best fit: an exact fit).

use super::{align_up, Instance, Solution};
use std::cmp::Reverse;

/// A classic rule, for comparison and as part of the portfolio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Classic {
    /// TFLite: size descending, best fit including the gap from 0.
    GreedyBySize,
    /// XLA `kSpatial`: size descending, then lifetime descending; best fit.
    XlaSpatial,
    /// XLA `kTemporal`: lifetime descending, then size descending; best fit.
    XlaTemporal,
    /// Lower ascending, size descending; first fit.
    FirstFitByStart,
}

impl Classic {
    pub const ALL: [Classic; 4] = [
        Classic::GreedyBySize,
        Classic::XlaSpatial,
        Classic::XlaTemporal,
        Classic::FirstFitByStart,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Classic::GreedyBySize => "greedy-by-size",
            Classic::XlaSpatial => "xla-spatial",
            Classic::XlaTemporal => "xla-temporal",
            Classic::FirstFitByStart => "first-fit-by-start",
        }
    }

    fn order(self) -> Order {
        match self {
            Classic::GreedyBySize => Order::Size,
            Classic::XlaSpatial => Order::SizeLife,
            Classic::XlaTemporal => Order::LifeSize,
            Classic::FirstFitByStart => Order::Start,
        }
    }

    fn fit(self) -> Fit {
        match self {
            Classic::FirstFitByStart => Fit::First,
            _ => Fit::Best,
        }
    }
}

/// The result of [`solve`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FastResult {
    pub solution: Solution,
    /// The order that won, e.g. "size", "area", "xla-spatial"; "+search" when the local search
    /// improved on it.
    pub order: &'static str,
}

/// Runs one classic rule.
pub fn classic(inst: &Instance, rule: Classic) -> Solution {
    let prep = Prepared::new(inst);
    let mut packer = Packer::new(&prep);
    let order = prep.order(rule.order());
    let mut offsets = vec![0; inst.len()];
    packer.run_from(&prep, &order, rule.fit(), 0, &mut offsets);
    Solution::from_offsets(inst, offsets)
}

/// Best of several orders with best and first fit, then a local search on the best two.
/// Deterministic; honours alignment and fixed offsets; never worse than any [`Classic`] rule
/// (they are in the portfolio; only a placement at the lower bound, which no rule can beat,
/// ends the portfolio early).
pub fn solve(inst: &Instance) -> FastResult {
    let prep = Prepared::new(inst);
    let lb = super::bound::lower_bound(inst).bytes;
    let mut packer = Packer::new(&prep);
    let mut found: Vec<Candidate> = Vec::new();
    let mut passes: Vec<(Order, Fit, &'static str)> = Vec::new();
    if inst.len() > LARGE {
        // a pass over a million overlapping buffers takes tens of seconds: one, the cheapest
        let c = Classic::FirstFitByStart;
        passes.push((c.order(), c.fit(), c.name()));
    } else {
        passes.push((Order::Congestion, Fit::Best, "congestion"));
        passes.extend(Classic::ALL.iter().map(|c| (c.order(), c.fit(), c.name())));
        passes.extend_from_slice(BIG_FIRST);
    }
    let required = passes.len();
    if inst.len() <= LARGE {
        passes.extend_from_slice(PORTFOLIO);
    }
    let mut pass_work = 0;
    for (i, &(key, fit, name)) in passes.iter().enumerate() {
        if found.iter().any(|b| b.height <= lb) {
            break; // optimal: nothing can beat it
        }
        // the extra orders only while the budget allows a whole pass
        if i >= required && packer.work() + pass_work > budget(pass_work) {
            break;
        }
        let before = packer.work();
        let order = prep.order(key);
        let mut offsets = vec![0; inst.len()];
        let height = packer.run_from(&prep, &order, fit, 0, &mut offsets);
        pass_work = pass_work.max(packer.work() - before);
        found.push(Candidate {
            height,
            offsets,
            order,
            fit,
            name,
        });
    }
    // the best first; ties keep the portfolio order
    found.sort_by_key(|c| c.height);
    let limit = if inst.len() > LARGE {
        0
    } else {
        budget(pass_work)
    };
    // search from the best few starts, splitting what is left of the budget
    let starts = found.len().min(SEARCH_STARTS);
    let mut names: Vec<&'static str> = found.iter().map(|c| c.name).collect();
    for j in 0..starts {
        if found[0].height <= lb || packer.work() >= limit {
            break;
        }
        let share = packer.work() + (limit - packer.work()) / (starts - j) as u64;
        if search(&prep, &mut packer, &mut found[j], lb, share, j as u64) {
            names[j] = search_name(names[j]);
        }
    }
    let (k, _) = found
        .iter()
        .enumerate()
        .min_by_key(|(k, c)| (c.height, *k))
        .expect("at least one pass ran");
    FastResult {
        order: names[k],
        solution: Solution::from_offsets(inst, std::mem::take(&mut found[k].offsets)),
    }
}

/// Always run after the classic rules: cheap, and the only good orders on some traces.
const BIG_FIRST: &[(Order, Fit, &str)] = &[
    (
        Order::Big {
            shift: 4,
            by_start: false,
        },
        Fit::Best,
        "big16-lifetime",
    ),
    (
        Order::Big {
            shift: 6,
            by_start: true,
        },
        Fit::Best,
        "big64-start",
    ),
];

/// Above this many buffers fast mode runs one pass (first fit by start) and no search: the
/// whole portfolio would take minutes (a million densely overlapping buffers: one pass about
/// 20 s on the benchmark machine, BENCHMARKS.md).
pub const LARGE: usize = 250_000;

/// How many of the best portfolio results the search starts from.
const SEARCH_STARTS: usize = 2;

/// The work (entries scanned or merged, see [`Packer::work`]) the portfolio and the search may
/// spend together: a fixed amount, so small instances get many passes, or a few passes when
/// one pass alone is larger than that. Counted, not timed, so results do not depend on the
/// machine; ~3 ns per unit in release on the build machine.
fn budget(pass_work: u64) -> u64 {
    WORK_BUDGET.max(3 * pass_work)
}

const WORK_BUDGET: u64 = 1_500_000;

/// A placement and how it was made.
struct Candidate {
    height: u64,
    offsets: Vec<u64>,
    order: Vec<u32>,
    fit: Fit,
    name: &'static str,
}

/// Extra orders after the classic rules, in the order they are tried.
const PORTFOLIO: &[(Order, Fit, &str)] = &[
    (Order::Area, Fit::Best, "area"),
    (Order::Size, Fit::First, "size/first"),
    (Order::Start, Fit::Best, "start"),
    (Order::End, Fit::Best, "end"),
    (Order::Congestion, Fit::First, "congestion/first"),
    (Order::Area, Fit::First, "area/first"),
    (Order::SizeLifeAsc, Fit::Best, "size-short"),
    (Order::LifeSize, Fit::First, "lifetime/first"),
    (Order::End, Fit::First, "end/first"),
];

fn search_name(name: &'static str) -> &'static str {
    match name {
        "congestion" => "congestion+search",
        "greedy-by-size" => "greedy-by-size+search",
        "xla-spatial" => "xla-spatial+search",
        "xla-temporal" => "xla-temporal+search",
        "first-fit-by-start" => "first-fit-by-start+search",
        "area" => "area+search",
        "size/first" => "size/first+search",
        "start" => "start+search",
        "end" => "end+search",
        "congestion/first" => "congestion/first+search",
        "area/first" => "area/first+search",
        "size-short" => "size-short+search",
        "lifetime/first" => "lifetime/first+search",
        "end/first" => "end/first+search",
        "big16-lifetime" => "big16-lifetime+search",
        "big64-start" => "big64-start+search",
        _ => "search",
    }
}

/// Iterated greedy on the order of `best` until the packer's work reaches `limit`: move a
/// buffer that reaches the height earlier (it gets first choice of the low offsets), or swap
/// two buffers close in the order; re-place from the first changed position (the prefix keeps
/// its offsets) and keep the change if the height does not grow (equal heights are accepted so
/// the search can cross plateaus). Returns whether the height went down.
fn search(
    prep: &Prepared,
    packer: &mut Packer,
    best: &mut Candidate,
    lb: u64,
    limit: u64,
    seed: u64,
) -> bool {
    let n = best.order.len();
    if n < 2 {
        return false;
    }
    let start_height = best.height;
    let mut rng = SplitMix(0x9e37_79b9_7f4a_7c15 ^ ((n as u64) << 8) ^ seed);
    let mut order = best.order.clone();
    let (mut cur_h, mut cur_off) = (best.height, best.offsets.clone());
    let mut peak = Vec::new();
    let mut next = order.clone();
    let mut off = cur_off.clone();
    // tiny instances would otherwise spin through many cheap passes
    let mut iterations = 100 * n + 1000;
    while packer.work() < limit && best.height > lb && iterations > 0 {
        iterations -= 1;
        // the bookkeeping below is O(n) per iteration
        packer.charge(n as u64);
        peak.clear();
        peak.extend((0..n).filter(|&p| {
            let b = order[p] as usize;
            cur_off[b] + prep.size[b] == cur_h
        }));
        next.clone_from(&order);
        let from = if !peak.is_empty() && rng.below(4) != 0 {
            let p = peak[rng.below(peak.len())];
            if p == 0 {
                continue;
            }
            let to = rng.below(p);
            let v = next.remove(p);
            next.insert(to, v);
            to
        } else {
            let i = rng.below(n - 1);
            let span = (n / 8).max(2);
            let j = (i + 1 + rng.below(span)).min(n - 1);
            next.swap(i, j);
            i
        };
        off.clone_from(&cur_off);
        let h = packer.run_from(prep, &next, best.fit, from, &mut off);
        if h <= cur_h {
            cur_h = h;
            std::mem::swap(&mut cur_off, &mut off);
            std::mem::swap(&mut order, &mut next);
            if h < best.height {
                best.height = h;
                best.offsets.clone_from(&cur_off);
                best.order.clone_from(&order);
            }
        }
    }
    best.height < start_height
}

/// A small, fixed pseudo-random generator: the search must not depend on a crate's algorithm.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-enough in [0, k) for k ≥ 1.
    fn below(&mut self, k: usize) -> usize {
        (self.next() % k as u64) as usize
    }
}

/// How a buffer picks among the free ranges that fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fit {
    /// The smallest free range (ties: the lowest).
    Best,
    /// The lowest free range.
    First,
}

/// Buffer orders; every one ends with the instance index as the final tie-break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Size descending.
    Size,
    /// Size descending, then lifetime descending.
    SizeLife,
    /// Size descending, then lifetime ascending.
    SizeLifeAsc,
    /// Lifetime descending, then size descending.
    LifeSize,
    /// Lower ascending, then size descending.
    Start,
    /// Upper descending, then size descending.
    End,
    /// Size × lifetime descending, then size descending.
    Area,
    /// The big buffers (at least the largest size >> `shift`) by size descending, then the
    /// others by lifetime descending (`by_start`: by lower ascending): the big ones shape the
    /// layout, the small ones fill the holes. On the S_1 trace (sizes 2^k + 1) this gets
    /// within 0.35% of the bound where every plain order stays ≥ 2.5% above it.
    Big { shift: u8, by_start: bool },
    /// The most bytes live at any instant of the lifetime descending, then size descending:
    /// the buffers of the peak first.
    Congestion,
}

/// The instance in the form a pass needs: lifetimes as leaf ranges of the time tree.
struct Prepared {
    /// Leaf range `[lo, hi)` per buffer (compressed time).
    lo: Vec<u32>,
    hi: Vec<u32>,
    size: Vec<u64>,
    align: Vec<u64>,
    /// The fixed buffers (placed first, in index order) and the others.
    fixed: Vec<(u32, u64)>,
    free: Vec<u32>,
    /// Lifetime length and the congestion key per buffer (original time units).
    life: Vec<u64>,
    congestion: Vec<u64>,
    leaves: usize,
}

impl Prepared {
    fn new(inst: &Instance) -> Prepared {
        let bs = &inst.buffers;
        let mut times: Vec<u64> = bs.iter().flat_map(|b| [b.lower, b.upper]).collect();
        times.sort_unstable();
        times.dedup();
        let idx = |t: u64| times.partition_point(|&x| x < t) as u32;
        let lo: Vec<u32> = bs.iter().map(|b| idx(b.lower)).collect();
        let hi: Vec<u32> = bs.iter().map(|b| idx(b.upper.max(b.lower))).collect();
        let leaves = times.len().saturating_sub(1).max(1);
        // load per leaf, then the range maximum over each lifetime (sparse table)
        let mut diff = vec![0i128; leaves + 1];
        for (i, b) in bs.iter().enumerate() {
            if hi[i] > lo[i] {
                diff[lo[i] as usize] += b.size as i128;
                diff[hi[i] as usize] -= b.size as i128;
            }
        }
        let mut load = Vec::with_capacity(leaves);
        let mut run = 0i128;
        for d in &diff[..leaves] {
            run += d;
            load.push(run as u64);
        }
        let table = SparseMax::new(load);
        let congestion = (0..bs.len())
            .map(|i| table.max(lo[i] as usize, hi[i] as usize))
            .collect();
        let mut fixed = Vec::new();
        let mut free = Vec::new();
        for (i, b) in bs.iter().enumerate() {
            match b.fixed {
                Some(o) => fixed.push((i as u32, o)),
                None => free.push(i as u32),
            }
        }
        Prepared {
            lo,
            hi,
            size: bs.iter().map(|b| b.size).collect(),
            align: bs.iter().map(|b| b.align.max(1)).collect(),
            fixed,
            free,
            life: bs.iter().map(|b| b.upper.saturating_sub(b.lower)).collect(),
            congestion,
            leaves,
        }
    }

    /// The non-fixed buffers in the given order.
    fn order(&self, key: Order) -> Vec<u32> {
        let mut v = self.free.clone();
        let (s, l, c) = (&self.size, &self.life, &self.congestion);
        match key {
            Order::Size => v.sort_by_key(|&i| (Reverse(s[i as usize]), i)),
            Order::SizeLife => {
                v.sort_by_key(|&i| (Reverse(s[i as usize]), Reverse(l[i as usize]), i))
            }
            Order::SizeLifeAsc => v.sort_by_key(|&i| (Reverse(s[i as usize]), l[i as usize], i)),
            Order::LifeSize => {
                v.sort_by_key(|&i| (Reverse(l[i as usize]), Reverse(s[i as usize]), i))
            }
            Order::Start => v.sort_by_key(|&i| (self.lo[i as usize], Reverse(s[i as usize]), i)),
            Order::End => {
                v.sort_by_key(|&i| (Reverse(self.hi[i as usize]), Reverse(s[i as usize]), i))
            }
            Order::Area => v.sort_by_key(|&i| {
                let a = s[i as usize] as u128 * l[i as usize] as u128;
                (Reverse(a), Reverse(s[i as usize]), i)
            }),
            Order::Congestion => {
                v.sort_by_key(|&i| (Reverse(c[i as usize]), Reverse(s[i as usize]), i))
            }
            Order::Big { shift, by_start } => {
                let big = s.iter().max().copied().unwrap_or(0) >> shift;
                v.sort_by_key(|&i| {
                    let z = s[i as usize];
                    let k = if z >= big { z } else { 0 };
                    let then = if by_start {
                        self.lo[i as usize] as u64
                    } else {
                        u64::MAX - l[i as usize]
                    };
                    (Reverse(k), then, Reverse(z), i)
                })
            }
        }
        v
    }
}

/// Range maximum in O(1) after O(n log n) preparation.
struct SparseMax {
    levels: Vec<Vec<u64>>,
}

impl SparseMax {
    fn new(base: Vec<u64>) -> SparseMax {
        let mut levels = vec![base];
        let mut w = 1;
        while 2 * w <= levels[0].len() {
            let prev = levels.last().unwrap();
            let next = (0..prev.len() - w)
                .map(|i| prev[i].max(prev[i + w]))
                .collect();
            levels.push(next);
            w *= 2;
        }
        SparseMax { levels }
    }

    /// max over `[a, b)`; 0 when empty.
    fn max(&self, a: usize, b: usize) -> u64 {
        if b <= a {
            return 0;
        }
        let k = (usize::BITS - 1 - (b - a).leading_zeros()) as usize;
        self.levels[k][a].max(self.levels[k][b - (1 << k)])
    }
}

/// Instances up to this many buffers use the scan packer (cheaper per placement when each
/// buffer overlaps a good part of the others); larger ones the time tree.
const SCAN_MAX: usize = 4000;

/// Places buffers one pass at a time; two interchangeable structures with identical results.
enum Packer {
    Scan(ScanPacker),
    Tree(TreePacker),
}

impl Packer {
    fn new(prep: &Prepared) -> Packer {
        if prep.size.len() <= SCAN_MAX {
            Packer::Scan(ScanPacker::default())
        } else {
            Packer::Tree(TreePacker::new(prep))
        }
    }

    /// Places fixed buffers at their offsets, keeps `offsets` of `order[..k]`, and places
    /// `order[k..]`, writing `offsets` (instance order). Returns the height.
    fn run_from(
        &mut self,
        prep: &Prepared,
        order: &[u32],
        fit: Fit,
        k: usize,
        offsets: &mut [u64],
    ) -> u64 {
        match self {
            Packer::Scan(p) => run_from(p, prep, order, fit, k, offsets),
            Packer::Tree(p) => run_from(p, prep, order, fit, k, offsets),
        }
    }

    /// Counts work done outside the packer.
    fn charge(&mut self, units: u64) {
        match self {
            Packer::Scan(p) => p.work += units,
            Packer::Tree(p) => p.work += units,
        }
    }

    /// Work done so far, deterministic: placed entries scanned (scan) or list entries merged
    /// (tree), plus one per placement.
    fn work(&self) -> u64 {
        match self {
            Packer::Scan(p) => p.work,
            Packer::Tree(p) => p.work,
        }
    }
}

/// Whether a buffer takes part in placement (it occupies some bytes at some time); the others
/// get offset 0, which is always valid.
fn occupies(prep: &Prepared, b: usize) -> bool {
    prep.size[b] > 0 && prep.hi[b] > prep.lo[b]
}

/// The placed buffers sorted by offset, scanned whole for each placement: the TFLite loop.
#[derive(Default)]
struct ScanPacker {
    /// (offset, end, leaf lo, leaf hi)
    placed: Vec<(u64, u64, u32, u32)>,
    work: u64,
}

impl Occupancy for ScanPacker {
    fn reset(&mut self) {
        self.placed.clear();
    }

    fn restore(&mut self, lo: u32, hi: u32, s: u64, e: u64) {
        self.placed.push((s, e, lo, hi));
    }

    fn restored(&mut self) {
        self.placed.sort_unstable();
        // rebuilding the prefix is work too (it keeps the budget honest for cheap passes)
        self.work += 2 * self.placed.len() as u64;
    }

    fn fit(&mut self, lo: u32, hi: u32, gaps: &mut Gaps) {
        for (i, &(s, e, plo, phi)) in self.placed.iter().enumerate() {
            if plo < hi && lo < phi && gaps.occupied(s, e) {
                self.work += i as u64;
                break;
            }
        }
        if !gaps.done {
            self.work += self.placed.len() as u64;
        }
    }

    fn place(&mut self, lo: u32, hi: u32, s: u64, e: u64) {
        let entry = (s, e, lo, hi);
        let at = self.placed.partition_point(|x| *x < entry);
        self.placed.insert(at, entry);
    }

    fn work(&mut self) -> &mut u64 {
        &mut self.work
    }
}

/// What a pass needs of the placed buffers: the scan list or the time tree.
trait Occupancy {
    /// Forgets every placed buffer.
    fn reset(&mut self);
    /// Re-adds a buffer of the kept prefix; [`Occupancy::restored`] follows the last one.
    fn restore(&mut self, lo: u32, hi: u32, s: u64, e: u64);
    fn restored(&mut self) {}
    /// Feeds `gaps` the occupied ranges of the buffers live in `[lo, hi)`, by start.
    fn fit(&mut self, lo: u32, hi: u32, gaps: &mut Gaps);
    /// Adds a newly placed buffer.
    fn place(&mut self, lo: u32, hi: u32, s: u64, e: u64);
    fn work(&mut self) -> &mut u64;
}

/// Places fixed buffers at their offsets, keeps `offsets` of `order[..k]`, and places
/// `order[k..]`, writing `offsets` (instance order). Returns the height.
fn run_from(
    occ: &mut impl Occupancy,
    prep: &Prepared,
    order: &[u32],
    fit: Fit,
    k: usize,
    offsets: &mut [u64],
) -> u64 {
    occ.reset();
    let mut height = 0;
    for &(b, o) in &prep.fixed {
        offsets[b as usize] = o;
    }
    let prefix = prep
        .fixed
        .iter()
        .map(|&(b, _)| b)
        .chain(order[..k].iter().copied());
    for b in prefix {
        let b = b as usize;
        let o = offsets[b];
        height = height.max(o + prep.size[b]);
        if occupies(prep, b) {
            occ.restore(prep.lo[b], prep.hi[b], o, o + prep.size[b]);
        }
    }
    occ.restored();
    for &b in &order[k..] {
        let b = b as usize;
        let (lo, hi, size) = (prep.lo[b], prep.hi[b], prep.size[b]);
        *occ.work() += 1;
        if !occupies(prep, b) {
            offsets[b] = 0;
            height = height.max(size);
            continue;
        }
        let mut gaps = Gaps::new(size, prep.align[b], fit);
        occ.fit(lo, hi, &mut gaps);
        let o = gaps.offset();
        offsets[b] = o;
        occ.place(lo, hi, o, o + size);
        height = height.max(o + size);
    }
    height
}

/// Best or first fit over occupied ranges fed in order of their start (overlaps allowed).
struct Gaps {
    size: u64,
    align: u64,
    fit: Fit,
    /// The end of the occupied bytes seen so far: the next free range starts here.
    prev_end: u64,
    /// (free range length, offset)
    best: Option<(u64, u64)>,
    /// The answer is known (first fit found a range, or best fit an exact one); the rest can
    /// be skipped.
    done: bool,
}

impl Gaps {
    fn new(size: u64, align: u64, fit: Fit) -> Gaps {
        Gaps {
            size,
            align,
            fit,
            prev_end: 0,
            best: None,
            done: false,
        }
    }

    /// Feeds the next occupied range; true when the answer is known.
    fn occupied(&mut self, s: u64, e: u64) -> bool {
        if s > self.prev_end {
            let o = align_up(self.prev_end, self.align);
            if o + self.size <= s {
                let len = s - self.prev_end;
                if self.fit == Fit::First {
                    self.best = Some((len, o));
                    self.done = true;
                    return true;
                }
                if self.best.is_none_or(|(l, _)| len < l) {
                    self.best = Some((len, o));
                    // an exact fit cannot be beaten, and later ones would lose the tie
                    if len == self.size {
                        self.done = true;
                        return true;
                    }
                }
            }
        }
        self.prev_end = self.prev_end.max(e);
        false
    }

    /// The chosen offset: the free range found, else the top, aligned.
    fn offset(&self) -> u64 {
        match self.best {
            Some((_, o)) => o,
            None => align_up(self.prev_end, self.align),
        }
    }
}

/// The offset for a buffer given occupied ranges sorted by start (tests use this directly).
#[cfg(test)]
fn choose(occupied: &[(u64, u64)], size: u64, align: u64, fit: Fit) -> u64 {
    let mut g = Gaps::new(size, align, fit);
    for &(s, e) in occupied {
        if g.occupied(s, e) {
            break;
        }
    }
    g.offset()
}

impl Occupancy for TreePacker {
    fn reset(&mut self) {
        self.clear();
    }

    fn restore(&mut self, lo: u32, hi: u32, s: u64, e: u64) {
        self.insert(lo, hi, s, e);
        self.work += 4;
    }

    fn fit(&mut self, lo: u32, hi: u32, gaps: &mut Gaps) {
        self.query(lo, hi, gaps);
    }

    fn place(&mut self, lo: u32, hi: u32, s: u64, e: u64) {
        self.insert(lo, hi, s, e);
    }

    fn work(&mut self) -> &mut u64 {
        &mut self.work
    }
}

/// The time tree (module docs).
struct TreePacker {
    /// Leaves rounded up to a power of two; node 1 is the root, leaf i is node `width + i`.
    width: usize,
    own: Vec<Vec<(u64, u64)>>,
    sub: Vec<Vec<(u64, u64)>>,
    touched: Vec<u32>,
    /// The merged occupied ranges of the last query.
    scratch: Vec<(u64, u64)>,
    /// The lists a query reads: (node, whether `own`), and the merge heap.
    lists: Vec<(u32, bool)>,
    /// Keys `start << 64 | list << 32 | position`: one comparison, same order as the tuple.
    heap: std::collections::BinaryHeap<Reverse<u128>>,
    work: u64,
}

impl TreePacker {
    fn new(prep: &Prepared) -> TreePacker {
        let width = prep.leaves.next_power_of_two();
        TreePacker {
            width,
            own: vec![Vec::new(); 2 * width],
            sub: vec![Vec::new(); 2 * width],
            touched: Vec::new(),
            scratch: Vec::new(),
            lists: Vec::new(),
            heap: Default::default(),
            work: 0,
        }
    }

    fn clear(&mut self) {
        for &t in &self.touched {
            self.own[t as usize].clear();
            self.sub[t as usize].clear();
        }
        self.touched.clear();
    }

    /// Records bytes `[s, e)` as occupied over leaves `[lo, hi)`.
    fn insert(&mut self, lo: u32, hi: u32, s: u64, e: u64) {
        let w = self.width;
        let (mut l, mut r) = (lo as usize + w, hi as usize + w);
        while l < r {
            if l & 1 == 1 {
                self.add(l, true, s, e);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                self.add(r, true, s, e);
            }
            l >>= 1;
            r >>= 1;
        }
        let mut anc = std::mem::take(&mut self.lists);
        anc.clear();
        self.ancestors(lo, hi, |x| anc.push((x as u32, false)));
        for &(x, _) in &anc {
            self.add(x as usize, false, s, e);
        }
        self.lists = anc;
    }

    /// Calls `f` once for each strict ancestor of the canonical nodes of `[lo, hi)`: the nodes
    /// on the two boundary paths whose range is not inside `[lo, hi)` (all such ancestors lie
    /// on those paths).
    fn ancestors(&self, lo: u32, hi: u32, mut f: impl FnMut(usize)) {
        let w = self.width;
        let (lo, hi) = (lo as usize, hi as usize);
        let inside = |x: usize, h: u32| (x << h) - w >= lo && ((x + 1) << h) - w <= hi;
        let (mut a, mut b, mut h) = (lo + w, hi - 1 + w, 0u32);
        loop {
            if !inside(a, h) {
                f(a);
            }
            if b != a && !inside(b, h) {
                f(b);
            }
            if a == 1 {
                break;
            }
            a >>= 1;
            b >>= 1;
            h += 1;
        }
    }

    fn add(&mut self, node: usize, own: bool, s: u64, e: u64) {
        if self.own[node].is_empty() && self.sub[node].is_empty() {
            self.touched.push(node as u32);
        }
        if own {
            union_insert(&mut self.own[node], s, e);
        }
        union_insert(&mut self.sub[node], s, e);
    }

    /// Feeds the occupied byte ranges over leaves `[lo, hi)` to `gaps`, merged and in order,
    /// until it has its answer, and leaves those fed in `scratch`:
    /// a heap merge of the sorted lists that skips, in each list, the ranges that end inside
    /// the range being built (they add nothing).
    fn query(&mut self, lo: u32, hi: u32, gaps: &mut Gaps) {
        self.scratch.clear();
        self.lists.clear();
        let w = self.width;
        let (mut l, mut r) = (lo as usize + w, hi as usize + w);
        while l < r {
            if l & 1 == 1 {
                self.lists.push((l as u32, false));
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                self.lists.push((r as u32, false));
            }
            l >>= 1;
            r >>= 1;
        }
        let mut lists = std::mem::take(&mut self.lists);
        self.ancestors(lo, hi, |x| lists.push((x as u32, true)));
        self.lists = lists;
        let (own, sub) = (&self.own, &self.sub);
        let list = |i: u32| -> &[(u64, u64)] {
            let (node, is_own) = self.lists[i as usize];
            if is_own {
                &own[node as usize]
            } else {
                &sub[node as usize]
            }
        };
        self.heap.clear();
        for i in 0..self.lists.len() as u32 {
            if let Some(&(s, _)) = list(i).first() {
                self.heap.push(Reverse(key(s, i, 0)));
            }
        }
        let mut cur: Option<(u64, u64)> = None;
        while let Some(mut top) = self.heap.peek_mut() {
            let Reverse(k) = *top;
            let (s, i, pos) = ((k >> 64) as u64, (k >> 32) as u32, k as u32);
            self.work += 1;
            let v = list(i);
            let e = v[pos as usize].1;
            let end = match &mut cur {
                Some((_, ce)) if s <= *ce => {
                    *ce = (*ce).max(e);
                    *ce
                }
                _ => {
                    if let Some(c) = cur {
                        self.scratch.push(c);
                        if gaps.occupied(c.0, c.1) {
                            return; // the ranges above cannot change the answer
                        }
                    }
                    cur = Some((s, e));
                    e
                }
            };
            // take further ranges of this list while they extend the current one (the union
            // does not depend on the order), then skip those that end inside it; only then
            // touch the heap
            let mut end = end;
            let mut next = pos as usize + 1;
            loop {
                if v.get(next).is_some_and(|x| x.1 <= end) {
                    next += v[next..].partition_point(|x| x.1 <= end);
                }
                match v.get(next) {
                    Some(&(ns, ne)) if ns <= end => {
                        self.work += 1;
                        end = ne;
                        next += 1;
                    }
                    _ => break,
                }
            }
            if let Some(c) = &mut cur {
                c.1 = end;
            }
            match v.get(next) {
                // replacing the top sifts once instead of a pop and a push
                Some(&(ns, _)) => *top = Reverse(key(ns, i, next as u32)),
                None => {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
        if let Some(c) = cur {
            self.scratch.push(c);
            gaps.occupied(c.0, c.1);
        }
    }
}

/// A heap key for the merge in [`TreePacker::query`].
fn key(start: u64, list: u32, pos: u32) -> u128 {
    (start as u128) << 64 | (list as u128) << 32 | pos as u128
}

/// Adds `[s, e)` to a sorted list of disjoint, non-touching ranges.
fn union_insert(list: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    let i = list.partition_point(|r| r.1 < s);
    let j = list.partition_point(|r| r.0 <= e);
    if i == j {
        list.insert(i, (s, e));
    } else {
        let merged = (s.min(list[i].0), e.max(list[j - 1].1));
        list[i] = merged;
        list.drain(i + 1..j);
    }
}

/// Sorts and merges overlapping or touching ranges in place.
#[cfg(test)]
fn merge_ranges(v: &mut Vec<(u64, u64)>) {
    if v.len() < 2 {
        return;
    }
    v.sort_unstable();
    let mut k = 0;
    for i in 1..v.len() {
        if v[i].0 <= v[k].1 {
            v[k].1 = v[k].1.max(v[i].1);
        } else {
            k += 1;
            v[k] = v[i];
        }
    }
    v.truncate(k + 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::PackBuffer;

    #[test]
    fn best_fit_takes_the_smallest_gap_that_fits_including_the_one_from_zero() {
        // free: [0, 4) len 4, [10, 13) len 3, [20, 30) len 10, top from 40
        let occ = [(4, 10), (13, 20), (30, 40)];
        assert_eq!(choose(&occ, 3, 1, Fit::Best), 10);
        assert_eq!(choose(&occ, 4, 1, Fit::Best), 0);
        assert_eq!(choose(&occ, 5, 1, Fit::Best), 20);
        assert_eq!(choose(&occ, 11, 1, Fit::Best), 40);
        assert_eq!(choose(&occ, 3, 1, Fit::First), 0);
        assert_eq!(choose(&[], 7, 1, Fit::Best), 0);
        // unmerged, overlapping input (the scan packer's) gives the same gaps
        assert_eq!(
            choose(
                &[(4, 8), (5, 10), (13, 20), (14, 16), (30, 40)],
                3,
                1,
                Fit::Best
            ),
            10
        );
    }

    #[test]
    fn best_fit_ties_go_to_the_lowest_and_alignment_is_respected() {
        let occ = [(3, 10), (13, 20)];
        // both gaps have length 3: the lower one wins
        assert_eq!(choose(&occ, 3, 1, Fit::Best), 0);
        // aligned to 4: [0,3) fits 2 at 0; [10,13) starts at 12, only 1 byte
        assert_eq!(choose(&occ, 2, 4, Fit::Best), 0);
        assert_eq!(choose(&[(0, 3), (13, 20)], 3, 8, Fit::Best), 8);
        // nothing fits aligned: the top, rounded up
        assert_eq!(choose(&[(0, 3), (5, 21)], 2, 8, Fit::Best), 24);
    }

    #[test]
    fn union_lists_merge_touching_and_overlapping_ranges() {
        let mut l = Vec::new();
        union_insert(&mut l, 10, 20);
        union_insert(&mut l, 30, 40);
        union_insert(&mut l, 0, 5);
        assert_eq!(l, [(0, 5), (10, 20), (30, 40)]);
        union_insert(&mut l, 20, 30);
        assert_eq!(l, [(0, 5), (10, 40)]);
        union_insert(&mut l, 3, 50);
        assert_eq!(l, [(0, 50)]);
        let mut v = vec![(5, 7), (0, 2), (2, 3), (6, 9)];
        merge_ranges(&mut v);
        assert_eq!(v, [(0, 3), (5, 9)]);
    }

    /// The tree query against a direct scan of the placed buffers.
    #[test]
    fn tree_query_matches_a_scan() {
        let g = crate::pack::gen::random(150, 7);
        let prep = Prepared::new(&g.instance);
        let mut tree = TreePacker::new(&prep);
        let order = prep.order(Order::Start);
        let mut placed: Vec<(usize, u64)> = Vec::new();
        for (k, &b) in order.iter().enumerate() {
            let b = b as usize;
            // a size that never fits: every range is fed
            tree.query(
                prep.lo[b],
                prep.hi[b],
                &mut Gaps::new(1 << 62, 1, Fit::Best),
            );
            let mut direct: Vec<(u64, u64)> = placed
                .iter()
                .filter(|&&(p, _)| prep.lo[p] < prep.hi[b] && prep.lo[b] < prep.hi[p])
                .map(|&(p, o)| (o, o + prep.size[p]))
                .collect();
            merge_ranges(&mut direct);
            assert_eq!(tree.scratch, direct, "buffer {b}");
            let o = (k as u64 * 977) % 50_000; // arbitrary, overlaps allowed here
            tree.insert(prep.lo[b], prep.hi[b], o, o + prep.size[b]);
            placed.push((b, o));
        }
    }

    /// The two packers place identically, from scratch and from a kept prefix.
    #[test]
    fn scan_and_tree_packers_agree() {
        let mut inst = crate::pack::gen::random(200, 3).instance;
        inst.buffers[5].fixed = Some(4096);
        inst.buffers[9].align = 256;
        let prep = Prepared::new(&inst);
        let mut scan = ScanPacker::default();
        let mut tree = TreePacker::new(&prep);
        for (key, fit) in [
            (Order::Size, Fit::Best),
            (Order::Start, Fit::First),
            (Order::Congestion, Fit::Best),
        ] {
            let order = prep.order(key);
            let (mut a, mut b) = (vec![0; inst.len()], vec![0; inst.len()]);
            let ha = run_from(&mut scan, &prep, &order, fit, 0, &mut a);
            let hb = run_from(&mut tree, &prep, &order, fit, 0, &mut b);
            assert_eq!((ha, &a), (hb, &b), "{key:?} {fit:?}");
            assert_eq!(ha, Solution::from_offsets(&inst, a.clone()).height);
            // re-placing the second half from the kept first half changes nothing
            let hc = run_from(&mut scan, &prep, &order, fit, order.len() / 2, &mut a);
            let hd = run_from(&mut tree, &prep, &order, fit, order.len() / 2, &mut b);
            assert_eq!((hc, &a), (ha, &b));
            assert_eq!(hd, ha);
        }
    }

    #[test]
    fn big_first_orders_put_the_large_buffers_first_then_by_lifetime_or_start() {
        let inst = Instance::new(vec![
            PackBuffer::new("small-long", 0, 10, 1),
            PackBuffer::new("big", 4, 6, 64),
            PackBuffer::new("small-late", 5, 7, 2),
            PackBuffer::new("bigger", 0, 2, 100),
        ]);
        let prep = Prepared::new(&inst);
        let by_life = Order::Big {
            shift: 4,
            by_start: false,
        };
        let by_start = Order::Big {
            shift: 4,
            by_start: true,
        };
        // 100 >> 4 = 6: the two large ones by size, then the rest
        assert_eq!(prep.order(by_life), [3, 1, 0, 2]);
        assert_eq!(prep.order(by_start), [3, 1, 0, 2]);
        let late_first = Instance::new(vec![
            PackBuffer::new("a", 5, 9, 1),
            PackBuffer::new("b", 0, 2, 2),
            PackBuffer::new("big", 0, 9, 100),
        ]);
        let prep = Prepared::new(&late_first);
        assert_eq!(prep.order(by_life), [2, 0, 1]);
        assert_eq!(prep.order(by_start), [2, 1, 0]);
    }

    #[test]
    fn fixed_buffers_stay_and_others_avoid_them() {
        let mut f = PackBuffer::new("f", 0, 10, 4);
        f.fixed = Some(2);
        let mut a = PackBuffer::new("a", 0, 10, 3);
        a.align = 4;
        let inst = Instance::new(vec![f, a, PackBuffer::new("b", 5, 8, 2)]);
        let r = solve(&inst);
        assert_eq!(r.solution.offsets[0], 2);
        assert_eq!(r.solution.offsets[1] % 4, 0);
        assert_eq!(
            crate::pack::validate(&inst, &r.solution.offsets, None),
            Ok(())
        );
        // b fits in the gap [0, 2) under the fixed buffer
        assert_eq!(r.solution.offsets[2], 0);
    }
}
