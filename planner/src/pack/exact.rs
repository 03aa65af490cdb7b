//! The exact mode of the placement core: a complete depth-first search in the style of
//! MiniMalloc (Moffitt, ASPLOS 2023; docs/sources.md, MINIMALLOC).
//!
//! **Search.** Every unplaced buffer carries a `min_offset`: the lowest aligned offset above
//! every placed buffer it overlaps in time that also clears the fixed buffers it overlaps. A
//! node tries the unplaced buffers in order of `(min_offset, rank)` (rank: a static
//! preordering) and places the chosen one exactly at its `min_offset`. This is complete: in any
//! feasible placement let every buffer drop to its lowest feasible offset; sorted by offset,
//! each then sits at its `min_offset` given the buffers before it (a later buffer that
//! overlaps it in time lies above its top, so it cannot block the drop).
//!
//! **Pruning** (each keeps completeness):
//! - *canonical only*: the placement sequence is non-decreasing in `(offset, rank)`, so each
//!   placement has exactly one search path;
//! - *dominance*: no buffer goes at or above `min(min_offset + size)` over the unplaced ones:
//!   the gap left below would hold that buffer, whose canonical position is then lower;
//! - *section inference*: time is cut into sections (maximal constant live sets). Per section
//!   we keep a floor (the top of the placed buffers there, raised to the smallest `min_offset`
//!   of its unplaced buffers and to the current offset, since later placements never go lower)
//!   and the total size of its unplaced buffers; `floor + total > capacity` prunes;
//! - *valleys* (full instances only: the live total is the same at every instant and equals
//!   the capacity, as in a perfect tiling): after placing `b`, for the sections at `b`'s top
//!   and beside it, with floor `f`: the maximal run of sections with floor ≤ `f` around one
//!   (bounded by higher floors or part bounds) must be covered at exactly `f`, in every
//!   section with floor `f` and no slack left (floor + total = capacity, total > 0), by
//!   unplaced buffers with `min_offset ≤ f` whose lifetimes lie inside the run and are
//!   disjoint: a 1-D exact-cover reachability over the run's sections (`valley_ok`). Such a
//!   section's point `f` must be covered by a buffer placed at `f` (nothing goes below the
//!   floor, and there is no room to waste), which cannot cross a higher floor;
//! - *decomposition*: per section boundary, the count of unplaced buffers crossing it. When a
//!   count drops to 0 the rest splits into independent subproblems, each searched alone (with
//!   the canonical order restarted); time-disjoint parts are split up front the same way.
//!
//! **Full instances at their live total** (perfect tilings) search differently, because no
//! byte may be wasted: at every node each section's placed bytes fill `[0, floor)` exactly
//! (`floor + total = capacity`, or section inference prunes), so the state of a part is a
//! function of its set of unplaced buffers alone, and every point above the skyline must be
//! covered by a buffer placed exactly on it.
//! - *point branching* (replaces canonical order and dominance): take the *wells*, maximal
//!   runs of sections at one floor `f` whose neighbours are higher (or outside the part). The
//!   point `f` of a well's first section must be covered by a buffer at `f` that starts
//!   there (it cannot cross the higher neighbour, nor sit lower, there being no hole), and
//!   likewise at its last section by one that ends there; such a buffer's `min_offset` is
//!   `f`. A node picks the edge of any well with the fewest such buffers (none: prune) and
//!   branches on which one covers it. Every placement keeps the sections hole-free, and every
//!   tiling has exactly one path, so this is complete (the lowest run is always a well). The
//!   offsets are then not in order, so section inference drops its current-offset term;
//! - *twins*: buffers with the same lifetime, size and alignment are interchangeable; one
//!   goes only after its twin of lower index (in any tiling, swap twins so that offsets
//!   follow indices: twins are stacked, so the lower is placed first on every path);
//! - *failed states*: a part (its sections and unplaced buffers, as a 128-bit Zobrist key)
//!   proven to have no completion is remembered (up to `FAILED_CAP` per ordering) and pruned
//!   when it recurs. The twin rule depends only on that set, so the table stays exact (up to a
//!   key collision, ~2⁻¹²⁸ per pair). Job `(round, ordering)` hands its table to the same
//!   ordering's next round, so restarts resume instead of redoing work.
//!
//! **Orderings.** The ranks come from three static preorderings, WAT, TAW and TWA (W lifetime
//! width, A area, T the largest section total the buffer touches; all descending, ties by
//! index); a full instance adds five seeded random orders (perfect tilings have heavy-tailed
//! searches, and restarting with other tie-breaks cuts the tail; there the ranks order the
//! buffers that may cover the chosen point). They run round-robin as jobs `(round, ordering)`
//! with a node budget of `2n · 2^round`.
//! The answer is that of the first job (in that order) that ends without exhausting its budget,
//! so it does not depend on timing; with two threads the jobs run two at a time and jobs after a
//! conclusive one are cancelled, which gives the same answer (a job waits for its ordering's
//! table from the previous round, so it starts from the same one either way).
//!
//! **Scope.** Gaps are ignored (a buffer occupies its bytes over its whole lifetime), which
//! only costs space. Fixed buffers are obstacles placed before the search; they are left out of
//! the section totals and floors, which only weakens the pruning. Buffers of size 0 or with an
//! empty lifetime go at offset 0 (or their fixed offset).
//!
//! **Incumbent and minimising.** The first placement comes from one greedy descent per
//! ordering (the search without a capacity never backtracks; if even that runs out of time,
//! from `fast::solve`). If it fits, feasibility is settled. Otherwise the round-robin search
//! runs at the capacity. With `minimize`, the capacity is then probed at the lower bound and by
//! bisection between it and the best height, each probe a complete search (under a time limit,
//! a third of the time left, a probe that runs out counting as "no" without proof). Heights
//! are multiples of the gcd of sizes, alignments and fixed offsets, so the probes step by it.
//!
//! The hot loop uses dense `u32` ids, flat arrays and undo trails; a node allocates nothing
//! (the candidate lists live in one arena, truncated on return).

use super::{align_up, bound::lower_bound, Instance, PackBuffer, Solution};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtOrd};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Budget and mode of [`solve`].
#[derive(Clone, Debug)]
pub struct ExactOptions {
    /// Wall-clock limit for the whole call (`None`: none).
    pub time_limit: Option<Duration>,
    /// 1 or 2: with 2, two orderings are searched at a time (same answer as with 1).
    pub threads: usize,
    /// Search for the smallest feasible height, not just one at most the capacity.
    pub minimize: bool,
}

impl Default for ExactOptions {
    fn default() -> ExactOptions {
        ExactOptions {
            time_limit: None,
            threads: 1,
            minimize: false,
        }
    }
}

/// What the search established about the capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A placement of height ≤ capacity was found.
    Feasible,
    /// Proven: no placement fits the capacity.
    Infeasible,
    /// The time limit ran out first.
    Unknown,
}

/// The answer of [`solve`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactResult {
    pub outcome: Outcome,
    /// The best placement found: height ≤ capacity when `Feasible`; otherwise (greedy, may
    /// exceed the capacity) for the caller to report; `None` only when nothing was found.
    pub solution: Option<Solution>,
    /// With `minimize`: the height was proven minimal.
    pub optimal: bool,
    /// Search nodes visited (deterministic when the budget is not hit).
    pub nodes: u64,
    /// The alignment-aware lower bound (`bound::lower_bound`), for the gap.
    pub lower_bound: u64,
}

/// Solves `inst` at `capacity` (see the module docs).
pub fn solve(inst: &Instance, capacity: u64, opts: &ExactOptions) -> ExactResult {
    let deadline = opts.time_limit.map(|d| Instant::now() + d);
    let lb = lower_bound(inst).bytes;
    let mut res = ExactResult {
        outcome: Outcome::Infeasible,
        solution: None,
        optimal: false,
        nodes: 0,
        lower_bound: lb,
    };
    let Some(prep) = Prep::new(inst) else {
        return res; // fixed buffers that collide: nothing is valid
    };
    let threads = opts.threads.clamp(1, 2);
    let ctl = Control {
        deadline,
        stop: AtomicBool::new(false),
    };
    // the incumbent: one greedy descent per ordering, the lowest wins. They never backtrack
    // (O(n²) in all), so below a few thousand buffers they ignore the deadline: even a call
    // that runs out of time returns a placement.
    let greedy_ctl = Control {
        deadline: if prep.search.len() <= 5000 {
            None
        } else {
            deadline
        },
        stop: AtomicBool::new(false),
    };
    let mut best: Option<Solution> = None;
    for heur in HEURISTICS {
        if greedy_ctl.expired() {
            break;
        }
        let (r, nodes, _) = run_job(
            &prep,
            INF_CAP,
            heur,
            u64::MAX,
            &greedy_ctl,
            None,
            FailedSet::default(),
        );
        res.nodes += nodes;
        if let JobRes::Found(offs) = r {
            let s = Solution::from_offsets(inst, offs);
            if best.as_ref().is_none_or(|b| s.height < b.height) {
                best = Some(s);
            }
        }
    }
    if best.is_none() {
        // out of time on a large instance: the fast mode's placement, checked
        let s = super::fast::solve(inst).solution;
        if super::validate(inst, &s.offsets, None).is_ok() {
            best = Some(s);
        }
    }
    res.solution = best.clone();
    if !prep.may_fit(capacity, lb) {
        return res;
    }
    let feasible = match best.as_ref().filter(|b| b.height <= capacity) {
        Some(b) => b.clone(),
        None => {
            let (r, nodes) = portfolio(&prep, capacity, threads, &ctl);
            res.nodes += nodes;
            match r {
                JobRes::Found(offs) => Solution::from_offsets(inst, offs),
                JobRes::Infeasible => return res,
                _ => {
                    res.outcome = Outcome::Unknown;
                    return res;
                }
            }
        }
    };
    res.outcome = Outcome::Feasible;
    res.solution = Some(feasible);
    if !opts.minimize {
        return res;
    }
    // bisection on the capacity, the lower bound probed first. Under a time limit each probe
    // gets a third of the time left, and one that runs out counts as "no" without proof, so
    // an instance whose bound is hard to refute still improves its height.
    let g = prep.granule;
    let mut lo = align_up(lb, g);
    let mut hi = res.solution.as_ref().map_or(0, |s| s.height);
    let mut first = true;
    let mut proven = true;
    while lo < hi {
        let probe = if first {
            lo
        } else {
            lo + (hi - lo) / g / 2 * g
        };
        first = false;
        if !prep.may_fit(probe, lb) {
            lo = probe + g;
            continue;
        }
        let probe_ctl = Control {
            deadline: deadline.map(|d| {
                let now = Instant::now();
                now + d.saturating_duration_since(now) / 3
            }),
            stop: AtomicBool::new(false),
        };
        let (r, nodes) = portfolio(&prep, probe, threads, &probe_ctl);
        res.nodes += nodes;
        match r {
            JobRes::Found(offs) => {
                let s = Solution::from_offsets(inst, offs);
                hi = s.height;
                res.solution = Some(s);
            }
            JobRes::Infeasible => lo = probe + g,
            _ if ctl.expired() => return res, // feasible, optimality unproven
            _ => {
                proven = false;
                lo = probe + g;
            }
        }
    }
    res.optimal = proven;
    res
}

/// A capacity no search sum can reach, for the greedy descent.
const INF_CAP: u64 = u64::MAX / 4;
const NONE: u64 = u64::MAX;
/// The static preorderings, in round-robin order: W width, A area, T section total.
const HEURISTICS: [&[u8]; 3] = [b"WAT", b"TAW", b"TWA"];
/// For full instances (perfect tilings), whose searches have heavy tails: the static
/// preorderings and five seeded random ones (a digit names the seed), so the round robin
/// restarts with other tie-breaks instead of deepening one unlucky order.
const FULL_HEURISTICS: [&[u8]; 8] = [b"WAT", b"TAW", b"TWA", b"0", b"1", b"2", b"3", b"4"];
const STACK: usize = 256 << 20;

/// Instance data shared by every job, in dense arrays indexed by buffer (`u32`).
struct Prep {
    size: Vec<u64>,
    align: Vec<u64>,
    /// Placement of the buffers outside the search (fixed, empty, zero-sized).
    preset: Vec<Option<u64>>,
    /// The searched buffers.
    search: Vec<u32>,
    /// Section range `[s_lo, s_hi)` of each searched buffer.
    s_lo: Vec<u32>,
    s_hi: Vec<u32>,
    /// Time-overlapping searched neighbours (CSR).
    adj_start: Vec<u32>,
    adj: Vec<u32>,
    /// Time-overlapping fixed buffers of a searched buffer (CSR, by offset).
    fadj_start: Vec<u32>,
    fadj: Vec<u32>,
    /// Searched buffers live in each section (CSR).
    sec_start: Vec<u32>,
    sec_live: Vec<u32>,
    total0: Vec<u64>,
    cuts0: Vec<u32>,
    /// Searched buffers by first section (CSR), for the valley test.
    first_start: Vec<u32>,
    first: Vec<u32>,
    /// Searched buffers by end section `s_hi` (CSR), for the point branching.
    last_start: Vec<u32>,
    last: Vec<u32>,
    /// The previous buffer (by index) with the same lifetime, size and alignment, `u32::MAX`
    /// for the first of its class: interchangeable buffers, placed in index order.
    twin_prev: Vec<u32>,
    /// A random 128-bit key per buffer, for the table of failed states (Zobrist hashing).
    zob: Vec<u128>,
    /// Lifetime width and area (width × size), for the preorderings.
    width: Vec<u64>,
    area: Vec<u64>,
    /// Every height is a multiple of this.
    granule: u64,
    /// Largest top of a fixed buffer and size of a searched or empty-lifetime buffer.
    need: u64,
    /// The live total of every instant at which a searched buffer is live, when it is the
    /// same at all of them (a *full* instance, such as a perfect tiling).
    full: Option<u64>,
}

impl Prep {
    /// `None` when two fixed buffers collide, or one is misaligned.
    fn new(inst: &Instance) -> Option<Prep> {
        let bufs = &inst.buffers;
        let n = bufs.len();
        let live = |b: &PackBuffer| b.size > 0 && b.upper > b.lower;
        let fixed: Vec<usize> = (0..n)
            .filter(|&i| bufs[i].fixed.is_some() && live(&bufs[i]))
            .collect();
        let fixed_inst = Instance::new(fixed.iter().map(|&i| bufs[i].clone()).collect());
        let fixed_offs: Vec<u64> = fixed.iter().map(|&i| bufs[i].fixed.unwrap()).collect();
        if super::validate(&fixed_inst, &fixed_offs, None).is_err() {
            return None;
        }
        let mut preset = vec![None; n];
        let mut search = Vec::new();
        let mut need = 0u64;
        let mut granule = 0u64;
        for (i, b) in bufs.iter().enumerate() {
            granule = gcd(gcd(granule, b.size), b.align.max(1));
            if let Some(f) = b.fixed {
                preset[i] = Some(f);
                granule = gcd(granule, f);
                need = need.max(f + b.size);
            } else if live(b) {
                search.push(i as u32);
                need = need.max(b.size);
            } else {
                preset[i] = Some(0);
                need = need.max(b.size);
            }
        }
        // sections: a new one when a buffer ends after time advanced (maximal live sets)
        let mut events: Vec<(u64, u8, u32)> = Vec::with_capacity(2 * search.len());
        for &b in &search {
            let pb = &bufs[b as usize];
            events.push((pb.lower, 1, b));
            events.push((pb.upper, 0, b));
        }
        events.sort_unstable();
        let mut s_lo = vec![0u32; n];
        let mut s_hi = vec![0u32; n];
        let mut sections: Vec<Vec<u32>> = Vec::new();
        let mut active: Vec<u32> = Vec::new();
        let mut pos = vec![usize::MAX; n];
        let mut last_time: Option<u64> = None;
        for &(t, kind, b) in &events {
            if kind == 0 {
                if last_time.is_none_or(|l| l < t) {
                    last_time = Some(t);
                    sections.push(active.clone());
                }
                let p = pos[b as usize];
                let last = *active.last().unwrap();
                active.swap_remove(p);
                if last != b {
                    pos[last as usize] = p;
                }
                s_hi[b as usize] = sections.len() as u32;
            } else {
                pos[b as usize] = active.len();
                active.push(b);
                s_lo[b as usize] = sections.len() as u32;
            }
        }
        let n_sec = sections.len();
        let mut sec_start = vec![0u32];
        let mut sec_live = Vec::new();
        let mut total0 = vec![0u64; n_sec];
        for (s, live) in sections.iter_mut().enumerate() {
            live.sort_unstable();
            total0[s] = live.iter().map(|&b| bufs[b as usize].size).sum();
            sec_live.extend_from_slice(live);
            sec_start.push(sec_live.len() as u32);
        }
        let mut cuts0 = vec![0u32; n_sec.saturating_sub(1)];
        for &b in &search {
            for c in &mut cuts0[s_lo[b as usize] as usize..s_hi[b as usize] as usize - 1] {
                *c += 1;
            }
        }
        // overlaps, by a sweep over starts
        let mut by_start = search.clone();
        by_start.sort_unstable_by_key(|&b| (bufs[b as usize].lower, b));
        let mut adj_lists: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (k, &a) in by_start.iter().enumerate() {
            let ua = bufs[a as usize].upper;
            for &b in &by_start[k + 1..] {
                if bufs[b as usize].lower >= ua {
                    break;
                }
                adj_lists[a as usize].push(b);
                adj_lists[b as usize].push(a);
            }
        }
        let mut adj_start = vec![0u32];
        let mut adj = Vec::new();
        let mut fadj_start = vec![0u32];
        let mut fadj = Vec::new();
        for i in 0..n {
            adj_lists[i].sort_unstable();
            adj.extend_from_slice(&adj_lists[i]);
            adj_start.push(adj.len() as u32);
            if preset[i].is_none() {
                let mut fs: Vec<u32> = fixed
                    .iter()
                    .filter(|&&f| bufs[f].overlaps_in_time(&bufs[i]))
                    .map(|&f| f as u32)
                    .collect();
                fs.sort_unstable_by_key(|&f| (bufs[f as usize].fixed, f));
                fadj.extend_from_slice(&fs);
            }
            fadj_start.push(fadj.len() as u32);
        }
        let size: Vec<u64> = bufs.iter().map(|b| b.size).collect();
        let width: Vec<u64> = bufs
            .iter()
            .map(|b| b.upper.saturating_sub(b.lower))
            .collect();
        let area = width
            .iter()
            .zip(&size)
            .map(|(w, s)| w.saturating_mul(*s))
            .collect();
        let mut by_first: Vec<u32> = search.clone();
        by_first.sort_unstable_by_key(|&b| (s_lo[b as usize], b));
        let mut first_start = vec![0u32; n_sec + 1];
        for &b in &by_first {
            first_start[s_lo[b as usize] as usize + 1] += 1;
        }
        for s in 0..n_sec {
            first_start[s + 1] += first_start[s];
        }
        let mut by_last: Vec<u32> = search.clone();
        by_last.sort_unstable_by_key(|&b| (s_hi[b as usize], b));
        let mut last_start = vec![0u32; n_sec + 2];
        for &b in &by_last {
            last_start[s_hi[b as usize] as usize + 1] += 1;
        }
        for s in 0..=n_sec {
            last_start[s + 1] += last_start[s];
        }
        let mut twin_prev = vec![u32::MAX; n];
        let twin_key = |b: u32| {
            let pb = &bufs[b as usize];
            (pb.lower, pb.upper, pb.size, pb.align.max(1))
        };
        let mut by_kind = search.clone();
        by_kind.sort_unstable_by_key(|&b| (twin_key(b), b));
        for w in by_kind.windows(2) {
            if twin_key(w[0]) == twin_key(w[1]) {
                twin_prev[w[1] as usize] = w[0];
            }
        }
        let mut prep = Prep {
            first_start,
            first: by_first,
            last_start,
            last: by_last,
            twin_prev,
            zob: (0..n as u64)
                .map(|i| (splitmix(2 * i) as u128) << 64 | splitmix(2 * i + 1) as u128)
                .collect(),
            align: bufs.iter().map(|b| b.align.max(1)).collect(),
            size,
            preset,
            search,
            s_lo,
            s_hi,
            adj_start,
            adj,
            fadj_start,
            fadj,
            sec_start,
            sec_live,
            total0,
            cuts0,
            width,
            area,
            granule: granule.max(1),
            need,
            full: None,
        };
        prep.full = full_total(inst, &prep);
        Some(prep)
    }

    /// Cheap necessary conditions for a placement within `cap`.
    fn may_fit(&self, cap: u64, lb: u64) -> bool {
        lb <= cap && self.need <= cap
    }

    /// The lowest offset ≥ `v` aligned for `u` that clears the fixed buffers it overlaps.
    #[inline(always)]
    fn bump(&self, u: u32, v: u64) -> u64 {
        let a = self.align[u as usize];
        let v = if a == 1 { v } else { align_up(v, a) };
        if self.fadj_start[u as usize] == self.fadj_start[u as usize + 1] {
            return v;
        }
        self.bump_fixed(u, v)
    }

    #[cold]
    fn bump_fixed(&self, u: u32, mut v: u64) -> u64 {
        let a = self.align[u as usize];
        let fs = &self.fadj
            [self.fadj_start[u as usize] as usize..self.fadj_start[u as usize + 1] as usize];
        let s = self.size[u as usize];
        loop {
            let mut moved = false;
            for &f in fs {
                let fo = self.preset[f as usize].unwrap_or(0);
                let ft = fo + self.size[f as usize];
                if v < ft && fo < v + s {
                    v = align_up(ft, a);
                    moved = true;
                }
            }
            if !moved {
                return v;
            }
        }
    }
}

/// The common live total of the searched buffers over every instant at which one is live;
/// `None` when it varies or a fixed buffer is live (fixed buffers are left out of the totals).
fn full_total(inst: &Instance, prep: &Prep) -> Option<u64> {
    if !prep.fadj.is_empty() {
        return None;
    }
    let mut ev: Vec<(u64, bool, u64)> = Vec::with_capacity(2 * prep.search.len());
    for &b in &prep.search {
        let pb = &inst.buffers[b as usize];
        ev.push((pb.lower, true, pb.size));
        ev.push((pb.upper, false, pb.size));
    }
    ev.sort_unstable();
    let (mut live, mut full, mut i) = (0u64, None, 0);
    while i < ev.len() {
        let t = ev[i].0;
        while i < ev.len() && ev[i].0 == t {
            if ev[i].1 {
                live += ev[i].2;
            } else {
                live -= ev[i].2;
            }
            i += 1;
        }
        if live > 0 {
            match full {
                None => full = Some(live),
                Some(f) if f != live => return None,
                _ => {}
            }
        }
    }
    full
}

/// A 64-bit mix (splitmix64's finaliser of `x` times the golden ratio).
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hasher for keys that are already random: the low 64 bits.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = k as u64;
    }
}

type FailedSet = HashSet<u128, std::hash::BuildHasherDefault<KeyHasher>>;
/// At most this many failed states are remembered per job (16 bytes and overhead each).
const FAILED_CAP: usize = 1 << 19;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Stop conditions shared by the jobs of one call.
struct Control {
    deadline: Option<Instant>,
    stop: AtomicBool,
}

enum JobRes {
    Found(Vec<u64>),
    Infeasible,
    /// The node budget ran out.
    Aborted,
    /// The deadline passed, or a job earlier in the order concluded.
    Stopped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    Found,
    NotFound,
    Aborted,
    Stopped,
}

/// Runs the jobs `(round, ordering)` in order until one concludes (module docs).
fn portfolio(prep: &Prep, cap: u64, threads: usize, ctl: &Control) -> (JobRes, u64) {
    let n = prep.search.len().max(1) as u64;
    let heuristics: &[&[u8]] = if prep.full == Some(cap) {
        &FULL_HEURISTICS
    } else {
        &HEURISTICS
    };
    let h = heuristics.len();
    let budget = |j: usize| (2 * n).saturating_mul(1u64 << (j / h).min(40));
    let next = AtomicUsize::new(0);
    let best = AtomicUsize::new(usize::MAX);
    // per job: (result, nodes), kept for the jobs up to the conclusive one
    let done: Mutex<Vec<(usize, JobRes, u64)>> = Mutex::new(Vec::new());
    // the failed states of a full instance, per ordering: job j hands its table to job j + h
    // (facts about the capacity, whatever the order; chained per ordering, so with two
    // threads every job still starts from the same table)
    let tables: Vec<(Mutex<(usize, FailedSet)>, Condvar)> = (0..h)
        .map(|i| (Mutex::new((i, FailedSet::default())), Condvar::new()))
        .collect();
    let worker = || loop {
        let j = next.fetch_add(1, AtOrd::SeqCst);
        if j > best.load(AtOrd::SeqCst) || ctl.expired() {
            return;
        }
        let (lock, cv) = &tables[j % h];
        let mut slot = lock.lock().unwrap();
        while slot.0 != j {
            slot = cv.wait_timeout(slot, Duration::from_millis(5)).unwrap().0;
            if j > best.load(AtOrd::SeqCst) || ctl.expired() {
                return;
            }
        }
        let table = std::mem::take(&mut slot.1);
        drop(slot);
        let (r, nodes, table) = run_job(
            prep,
            cap,
            heuristics[j % h],
            budget(j),
            ctl,
            Some((&best, j)),
            table,
        );
        *lock.lock().unwrap() = (j + h, table);
        cv.notify_all();
        let conclusive = matches!(r, JobRes::Found(_) | JobRes::Infeasible);
        if conclusive {
            best.fetch_min(j, AtOrd::SeqCst);
        }
        let stopped = matches!(r, JobRes::Stopped);
        done.lock().unwrap().push((j, r, nodes));
        if stopped && ctl.expired() {
            return;
        }
    };
    crossbeam::scope(|s| {
        for _ in 0..threads {
            s.builder().stack_size(STACK).spawn(|_| worker()).unwrap();
        }
    })
    .unwrap();
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|d| d.0);
    let b = best.load(AtOrd::SeqCst);
    let nodes = done.iter().filter(|d| d.0 <= b).map(|d| d.2).sum();
    match done.into_iter().find(|d| d.0 == b) {
        Some((_, r, _)) => (r, nodes),
        None => (JobRes::Stopped, nodes),
    }
}

impl Control {
    fn expired(&self) -> bool {
        if self.stop.load(AtOrd::Relaxed) {
            return true;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stop.store(true, AtOrd::Relaxed);
            return true;
        }
        false
    }
}

/// One job: the search under ordering `heur` with a node budget.
fn run_job(
    prep: &Prep,
    cap: u64,
    heur: &'static [u8],
    budget: u64,
    ctl: &Control,
    order: Option<(&AtomicUsize, usize)>,
    failed: FailedSet,
) -> (JobRes, u64, FailedSet) {
    let run = move || {
        let mut s = Search::new(prep, cap, heur, budget, ctl, order, failed);
        let st = s.root();
        let (sol, nodes, failed) = (s.sol, s.nodes, s.failed);
        let r = match st {
            St::Found => {
                let mut offs = sol;
                for (o, p) in offs.iter_mut().zip(&prep.preset) {
                    if let Some(p) = p {
                        *o = *p;
                    }
                }
                JobRes::Found(offs)
            }
            St::NotFound => JobRes::Infeasible,
            St::Aborted => JobRes::Aborted,
            St::Stopped => JobRes::Stopped,
        };
        (r, nodes, failed)
    };
    if order.is_some() || prep.search.len() < 300 {
        return run(); // a worker thread with a big stack, or a shallow search
    }
    crossbeam::scope(|sc| {
        sc.builder()
            .stack_size(STACK)
            .spawn(move |_| run())
            .unwrap()
            .join()
            .unwrap()
    })
    .unwrap()
}

/// A candidate of a node: the buffer's `min_offset` when the node was entered, and its rank.
#[derive(Clone, Copy)]
struct Cand {
    off: u64,
    rank: u32,
    buf: u32,
}

struct Search<'a> {
    p: &'a Prep,
    cap: u64,
    heur: &'a [u8],
    off: Vec<u64>,
    /// The `min_offset` of each unplaced buffer; `NONE` (max) once placed.
    minoff: Vec<u64>,
    floor: Vec<u64>,
    total: Vec<u64>,
    cuts: Vec<u32>,
    sol: Vec<u64>,
    arena: Vec<Cand>,
    otrail: Vec<(u32, u64)>,
    ftrail: Vec<(u32, u64)>,
    nodes: u64,
    budget: u64,
    ctl: &'a Control,
    order: Option<(&'a AtomicUsize, usize)>,
    /// The valley test is on (a full instance at its live total).
    valleys: bool,
    /// Scratch of the valley test: section positions reached, by stamp.
    reach: Vec<u64>,
    stamp: u64,
    /// Full instances: the parts (sections and unplaced buffers) proven to have no completion.
    failed: FailedSet,
}

impl<'a> Search<'a> {
    fn new(
        p: &'a Prep,
        cap: u64,
        heur: &'a [u8],
        budget: u64,
        ctl: &'a Control,
        order: Option<(&'a AtomicUsize, usize)>,
        failed: FailedSet,
    ) -> Search<'a> {
        let n = p.size.len();
        let n_sec = p.total0.len();
        let mut minoff = vec![0u64; n];
        for &b in &p.search {
            minoff[b as usize] = p.bump(b, 0);
        }
        Search {
            p,
            cap,
            heur,
            off: vec![NONE; n],
            minoff,
            floor: vec![0; n_sec],
            total: p.total0.clone(),
            cuts: p.cuts0.clone(),
            sol: vec![0; n],
            arena: Vec::with_capacity(4 * p.search.len() + 16),
            otrail: Vec::new(),
            ftrail: Vec::new(),
            nodes: 0,
            budget,
            ctl,
            order,
            valleys: p.full == Some(cap),
            reach: vec![0; n_sec + 1],
            stamp: 0,
            failed,
        }
    }

    fn root(&mut self) -> St {
        if self.p.search.is_empty() {
            return St::Found;
        }
        for &b in &self.p.search {
            if self.minoff[b as usize] + self.p.size[b as usize] > self.cap {
                return St::NotFound;
            }
        }
        let n_sec = self.p.total0.len() as u32;
        let cands: Vec<Cand> = self
            .p
            .search
            .iter()
            .map(|&b| Cand {
                off: self.minoff[b as usize],
                rank: 0,
                buf: b,
            })
            .collect();
        self.arena.extend_from_slice(&cands);
        self.split(0, n_sec, 0, cands.len())
    }

    /// Solves the unplaced candidates of `arena[ps..pe]` (sections `[lo, hi)`) as independent
    /// parts split at the boundaries no unplaced buffer crosses.
    fn split(&mut self, lo: u32, hi: u32, ps: usize, pe: usize) -> St {
        let mut a = lo;
        while a < hi {
            let mut z = a + 1;
            while z < hi && self.cuts[z as usize - 1] > 0 {
                z += 1;
            }
            let start = self.arena.len();
            for i in ps..pe {
                let c = self.arena[i];
                let b = c.buf as usize;
                if self.off[b] == NONE && self.p.s_lo[b] >= a && self.p.s_lo[b] < z {
                    self.arena.push(c);
                }
            }
            let end = self.arena.len();
            self.rank_part(start, end);
            let st = if end > start {
                self.search(a, z, start, end, 0, 0)
            } else {
                St::Found
            };
            self.arena.truncate(start);
            if st != St::Found {
                return st;
            }
            a = z;
        }
        St::Found
    }

    /// Ranks the candidates `arena[start..end]` of a new part by the job's preordering (T
    /// from the current section totals, as MiniMalloc does per subproblem), then sorts them.
    fn rank_part(&mut self, start: usize, end: usize) {
        let p = self.p;
        let total = &self.total;
        let key = |b: u32, c: u8| -> u64 {
            let b = b as usize;
            match c {
                b'W' => p.width[b],
                b'A' => p.area[b],
                // a seeded random order (splitmix64 of the buffer and the seed digit)
                d @ b'0'..=b'9' => {
                    let mut z =
                        (b as u64) ^ ((d - b'0') as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^ (z >> 31)
                }
                _ => total[p.s_lo[b] as usize..p.s_hi[b] as usize]
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(0),
            }
        };
        let heur = self.heur;
        let mut keyed: Vec<([u64; 3], u32)> = self.arena[start..end]
            .iter()
            .map(|c| {
                let mut k = [0u64; 3];
                for (slot, &h) in k.iter_mut().zip(heur) {
                    *slot = u64::MAX - key(c.buf, h);
                }
                (k, c.buf)
            })
            .collect();
        keyed.sort_unstable();
        for (r, (_, b)) in keyed.iter().enumerate() {
            self.arena[start + r] = Cand {
                off: self.minoff[*b as usize],
                rank: r as u32,
                buf: *b,
            };
        }
        self.arena[start..end].sort_unstable_by_key(|c| (c.off, c.rank));
    }

    fn stopped(&self) -> bool {
        if let Some((best, j)) = self.order {
            if best.load(AtOrd::Relaxed) < j {
                return true;
            }
        }
        self.ctl.expired()
    }

    /// One node: the part spans sections `[plo, phi)`; its unplaced buffers are among the
    /// parent's candidates `arena[ps..pe]`; canonical placements continue from
    /// `(min_off, min_rank)`.
    fn search(
        &mut self,
        plo: u32,
        phi: u32,
        ps: usize,
        pe: usize,
        min_off: u64,
        min_rank: u32,
    ) -> St {
        if self.nodes >= self.budget {
            return St::Aborted;
        }
        self.nodes += 1;
        if self.nodes & 63 == 0 && self.stopped() {
            return St::Stopped;
        }
        let start = self.arena.len();
        for i in ps..pe {
            let b = self.arena[i].buf;
            if self.off[b as usize] == NONE {
                let c = Cand {
                    off: self.minoff[b as usize],
                    rank: self.arena[i].rank,
                    buf: b,
                };
                // insertion: keys only grew since the parent sorted them
                let mut k = self.arena.len();
                self.arena.push(c);
                while k > start && less(c, self.arena[k - 1]) {
                    self.arena[k] = self.arena[k - 1];
                    k -= 1;
                }
                self.arena[k] = c;
            }
        }
        let end = self.arena.len();
        if start == end {
            return St::Found;
        }
        // a full instance's part is determined by its sections and unplaced buffers (module
        // docs): a key for the table of failed ones
        let key = if self.valleys {
            let mut k = (splitmix(((plo as u64) << 32) | phi as u64) as u128) << 64;
            for c in &self.arena[start..end] {
                k ^= self.p.zob[c.buf as usize];
            }
            if self.failed.contains(&k) {
                self.arena.truncate(start);
                return St::NotFound;
            }
            Some(k)
        } else {
            None
        };
        // full instances branch on the buffer covering one forced point (module docs)
        let low = self.arena[start].off;
        let point = if self.valleys {
            match self.forced_point(plo, phi, low) {
                Some(pt) => Some(pt),
                None => {
                    self.arena.truncate(start);
                    self.remember(key);
                    return St::NotFound;
                }
            }
        } else {
            None
        };
        let mut min_height = u64::MAX;
        for c in &self.arena[start..end] {
            min_height = min_height.min(c.off + self.p.size[c.buf as usize]);
        }
        let mut result = St::NotFound;
        for i in start..end {
            let c = self.arena[i];
            let b = c.buf as usize;
            if let Some((left, edge, level)) = point {
                if c.off > level {
                    break;
                }
                if c.off < level {
                    continue;
                }
                if (if left { self.p.s_lo[b] } else { self.p.s_hi[b] }) != edge {
                    continue;
                }
                let tw = self.p.twin_prev[b];
                if tw != u32::MAX && self.off[tw as usize] == NONE {
                    continue; // its twin of lower index goes first
                }
            } else {
                if c.off < min_off || (c.off == min_off && c.rank < min_rank) {
                    continue;
                }
                if c.off >= min_height {
                    break; // dominance; the rest are no lower
                }
            }
            let top = c.off + self.p.size[b];
            if top > self.cap {
                continue;
            }
            let (ot, ft) = (self.otrail.len(), self.ftrail.len());
            self.off[b] = c.off;
            self.minoff[b] = NONE;
            // with points, placements need not be in order of offset: no floor from `c.off`
            let o = if point.is_some() { 0 } else { c.off };
            let (fits, hat) = self.place(c.buf, o, top, plo, phi);
            let st = if fits && self.valleys_ok(c.buf, plo, phi) {
                self.descend(c, plo, phi, start, end)
            } else {
                St::NotFound
            };
            // undo
            while self.otrail.len() > ot {
                let (u, v) = self.otrail.pop().unwrap();
                self.minoff[u as usize] = v;
            }
            while self.ftrail.len() > ft {
                let (s, v) = self.ftrail.pop().unwrap();
                self.floor[s as usize] = v;
            }
            let size = self.p.size[b];
            for s in self.p.s_lo[b]..self.p.s_hi[b] {
                self.total[s as usize] += size;
            }
            self.off[b] = NONE;
            self.minoff[b] = c.off; // its value at this node's entry
            if st == St::Found {
                self.sol[b] = c.off;
            }
            if st != St::NotFound {
                result = st;
                break;
            }
            if !hat {
                // hatless: nothing unplaced overlaps b, so placing another buffer first
                // leads to the same subproblem
                break;
            }
        }
        self.arena.truncate(start);
        if result == St::NotFound {
            self.remember(key);
        }
        result
    }

    fn remember(&mut self, key: Option<u128>) {
        if let Some(k) = key {
            if self.failed.len() < FAILED_CAP {
                self.failed.insert(k);
            }
        }
    }

    /// Updates the state for `b` placed at `o` (top `top`); false when the part is now
    /// infeasible, and whether an unplaced buffer overlaps `b` in time. Every change is on a
    /// trail (totals are undone by the caller).
    #[inline]
    fn place(&mut self, b: u32, o: u64, top: u64, plo: u32, phi: u32) -> (bool, bool) {
        let p = self.p;
        let bi = b as usize;
        let size = p.size[bi];
        for s in p.s_lo[bi]..p.s_hi[bi] {
            let s = s as usize;
            self.total[s] -= size;
            if self.floor[s] < top {
                self.ftrail.push((s as u32, self.floor[s]));
                self.floor[s] = top;
            }
        }
        let (mut a_lo, mut a_hi, mut v_max) = (u32::MAX, 0u32, 0u64);
        let mut hat = false;
        for &u in &p.adj[p.adj_start[bi] as usize..p.adj_start[bi + 1] as usize] {
            let ui = u as usize;
            if self.off[ui] != NONE {
                continue;
            }
            hat = true;
            if self.minoff[ui] >= top {
                continue;
            }
            self.otrail.push((u, self.minoff[ui]));
            let v = p.bump(u, top);
            self.minoff[ui] = v;
            if v + p.size[ui] > self.cap {
                return (false, true);
            }
            a_lo = a_lo.min(p.s_lo[ui]);
            a_hi = a_hi.max(p.s_hi[ui]);
            v_max = v_max.max(v);
        }
        // the floor of a section is at least the lowest min_offset of its unplaced buffers;
        // only a section whose floor is below a raised min_offset can change. One pass over
        // the hull of the changed buffers' sections is cheaper than a set of sections.
        for s in a_lo as usize..a_hi as usize {
            let f = self.floor[s];
            if f >= v_max {
                continue;
            }
            let mut m = u64::MAX;
            // placed buffers have min_offset MAX, so no test of `off` is needed
            for &u in &p.sec_live[p.sec_start[s] as usize..p.sec_start[s + 1] as usize] {
                m = m.min(self.minoff[u as usize]);
                if m <= f {
                    break; // no raise possible
                }
            }
            if m != u64::MAX && f < m {
                self.ftrail.push((s as u32, self.floor[s]));
                self.floor[s] = m;
            }
        }
        // section inference; later placements never go below o
        let cap = self.cap;
        let fl = &self.floor[plo as usize..phi as usize];
        let tt = &self.total[plo as usize..phi as usize];
        (!fl.iter().zip(tt).any(|(&f, &t)| f.max(o) + t > cap), hat)
    }

    /// The valley test (full instances only; module docs), after placing `b`: checked for the
    /// runs at `b`'s top and beside it.
    fn valleys_ok(&mut self, b: u32, plo: u32, phi: u32) -> bool {
        if !self.valleys {
            return true;
        }
        let (lo, hi) = (self.p.s_lo[b as usize], self.p.s_hi[b as usize]);
        (lo == plo || self.valley_ok(lo - 1, plo, phi))
            && (hi == phi || self.valley_ok(hi, plo, phi))
            && self.valley_ok(lo, plo, phi)
    }

    /// Tests the run of floors ≤ `floor[s]` around section `s`.
    fn valley_ok(&mut self, s: u32, plo: u32, phi: u32) -> bool {
        let f = self.floor[s as usize];
        let (mut a, mut z) = (s, s + 1);
        while a > plo && self.floor[a as usize - 1] <= f {
            a -= 1;
        }
        while z < phi && self.floor[z as usize] <= f {
            z += 1;
        }
        let p = self.p;
        self.stamp += 1;
        let stamp = self.stamp;
        self.reach[a as usize] = stamp;
        for x in a..z {
            let xi = x as usize;
            if self.reach[xi] != stamp {
                continue;
            }
            if self.total[xi] == 0
                || self.floor[xi] < f
                || self.floor[xi] + self.total[xi] < self.cap
            {
                // full, lower (may be filled up to f later), or slack: may stay uncovered at f
                self.reach[xi + 1] = stamp;
            }
            for &u in &p.first[p.first_start[xi] as usize..p.first_start[xi + 1] as usize] {
                let ui = u as usize;
                if self.minoff[ui] <= f && p.s_hi[ui] <= z {
                    self.reach[p.s_hi[ui] as usize] = stamp; // placed: minoff is NONE
                }
            }
        }
        self.reach[z as usize] == stamp
    }

    /// The point to branch on in a full instance whose lowest `min_offset` is `low`: an edge
    /// of a well (a maximal run of sections at one floor, both neighbours higher or outside
    /// the part) with the fewest buffers that can cover it, as `(left, section, level)`: the
    /// buffers at `level` starting at section `section` (left) or ending at it (right,
    /// `s_hi`). `None`: some point can never be covered (a section below `low`, or an edge no
    /// buffer fits).
    fn forced_point(&self, plo: u32, phi: u32, low: u64) -> Option<(bool, u32, u64)> {
        let p = self.p;
        let twin_ok = |u: u32| {
            let t = p.twin_prev[u as usize];
            t == u32::MAX || self.off[t as usize] != NONE
        };
        let higher = |s: u32, f: u64| {
            s < plo || s >= phi || self.total[s as usize] == 0 || self.floor[s as usize] > f
        };
        let mut best: Option<(u32, u64, bool, u32)> = None;
        let mut s = plo;
        while s < phi {
            let si = s as usize;
            if self.total[si] == 0 {
                s += 1;
                continue;
            }
            let f = self.floor[si];
            if f < low {
                return None; // the point (s, floor) lies below every unplaced buffer
            }
            let a = s;
            while s < phi && self.total[s as usize] > 0 && self.floor[s as usize] == f {
                s += 1;
            }
            let z = s;
            if !(a == plo || higher(a - 1, f)) || !higher(z, f) {
                continue; // not a well
            }
            let starts = &p.first
                [p.first_start[a as usize] as usize..p.first_start[a as usize + 1] as usize];
            let nl = starts
                .iter()
                .filter(|&&u| self.minoff[u as usize] == f && p.s_hi[u as usize] <= z && twin_ok(u))
                .count() as u32;
            if best.is_none_or(|b| (nl, f) < (b.0, b.1)) {
                best = Some((nl, f, true, a));
            }
            let ends =
                &p.last[p.last_start[z as usize] as usize..p.last_start[z as usize + 1] as usize];
            let nr = ends
                .iter()
                .filter(|&&u| self.minoff[u as usize] == f && p.s_lo[u as usize] >= a && twin_ok(u))
                .count() as u32;
            if best.is_none_or(|b| (nr, f) < (b.0, b.1)) {
                best = Some((nr, f, false, z));
            }
            if best.is_some_and(|b| b.0 == 0) {
                return None;
            }
        }
        best.map(|(_, f, left, edge)| (left, edge, f))
    }

    /// After placing `c`: decompose if a boundary count dropped to 0, else recurse.
    fn descend(&mut self, c: Cand, plo: u32, phi: u32, start: usize, end: usize) -> St {
        let b = c.buf as usize;
        let (lo, hi) = (self.p.s_lo[b] as usize, self.p.s_hi[b] as usize);
        let mut split = false;
        for s in lo..hi - 1 {
            self.cuts[s] -= 1;
            split |= self.cuts[s] == 0;
        }
        let st = if split {
            self.split(plo, phi, start, end)
        } else {
            self.search(plo, phi, start, end, c.off, c.rank)
        };
        for s in lo..hi - 1 {
            self.cuts[s] += 1;
        }
        st
    }
}

#[inline]
fn less(a: Cand, b: Cand) -> bool {
    (a.off, a.rank) < (b.off, b.rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// A random full instance: random buffers (sizes 1..=3, redrawn until the live total
    /// stays within `cap`), then the deficit below `cap` filled by layers of buffers, a
    /// layer's run of width w in pieces of random widths. The live total is `cap` at every
    /// instant; with random alignments of 2 the instance may not fit `cap`.
    fn full_instance(rng: &mut StdRng, cap: u64, t: u64) -> Instance {
        let mut bufs: Vec<(u64, u64, u64)> = Vec::new(); // (lower, upper, size)
        let mut live = vec![0u64; t as usize];
        for _ in 0..rng.gen_range(1..10) {
            let l = rng.gen_range(0..t);
            let u = rng.gen_range(l + 1..=t);
            let s = rng.gen_range(1..=3u64);
            if (l..u).all(|x| live[x as usize] + s <= cap) {
                (l..u).for_each(|x| live[x as usize] += s);
                bufs.push((l, u, s));
            }
        }
        for k in 0..cap {
            let mut x = 0;
            while x < t {
                if live[x as usize] > k {
                    x += 1;
                    continue;
                }
                let mut y = x;
                while y < t && live[y as usize] <= k {
                    y += 1;
                }
                // the run [x, y) of layer k, cut into pieces
                let mut a = x;
                while a < y {
                    let b = rng.gen_range(a + 1..=y);
                    bufs.push((a, b, 1));
                    a = b;
                }
                x = y;
            }
        }
        // merge most buffers of the same lifetime
        let mut i = 0;
        while i < bufs.len() {
            let j = (i + 1..bufs.len()).find(|&j| bufs[j].0 == bufs[i].0 && bufs[j].1 == bufs[i].1);
            match j {
                Some(j) if rng.gen_bool(0.8) => {
                    bufs[i].2 += bufs[j].2;
                    bufs.remove(j);
                }
                _ => i += 1,
            }
        }
        // alignments make some of them infeasible
        Instance::new(
            bufs.iter()
                .enumerate()
                .map(|(i, &(l, u, s))| PackBuffer {
                    align: if rng.gen_bool(0.25) { 2 } else { 1 },
                    ..PackBuffer::new(format!("b{i}"), l, u, s)
                })
                .collect(),
        )
    }

    fn outcome(inst: &Instance, cap: u64, points: bool) -> Outcome {
        let mut prep = Prep::new(inst).unwrap();
        if !points {
            prep.full = None; // the canonical search, without the full-instance reasoning
        }
        let ctl = Control {
            deadline: None,
            stop: AtomicBool::new(false),
        };
        match portfolio(&prep, cap, 1, &ctl).0 {
            JobRes::Found(offs) => {
                assert_eq!(super::super::validate(inst, &offs, Some(cap)), Ok(()));
                Outcome::Feasible
            }
            JobRes::Infeasible => Outcome::Infeasible,
            _ => panic!("no conclusion without a limit"),
        }
    }

    /// The point branching, twin order and table of failed states of full instances agree
    /// with the canonical search, on feasible and infeasible full instances.
    #[test]
    fn full_instances_agree_with_the_canonical_search() {
        let mut rng = StdRng::seed_from_u64(7);
        let (mut feasible, mut infeasible) = (0, 0);
        for _ in 0..400 {
            let cap = rng.gen_range(3..9);
            let t = rng.gen_range(2..9);
            let inst = full_instance(&mut rng, cap, t);
            let prep = Prep::new(&inst).unwrap();
            assert_eq!(prep.full, Some(cap));
            let want = outcome(&inst, cap, false);
            assert_eq!(outcome(&inst, cap, true), want, "{inst:?}");
            match want {
                Outcome::Feasible => feasible += 1,
                _ => infeasible += 1,
            }
        }
        assert!(
            feasible > 50 && infeasible > 20,
            "{feasible} / {infeasible}"
        );
    }
}
