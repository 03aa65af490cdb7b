//! The race checker as an engine [`Observer`]: clocks at issue and start, accesses checked and
//! recorded at start (see the model in [`super`]).

use std::collections::VecDeque;

/// Hash maps of lookups only (never iterated, so their order cannot reach an output), with a
/// fast fixed-seed hasher: SipHash cost a checked launch 6 % of its instructions.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

use super::clock::{max_of, min_of, Clock, Global};
use super::fix::{self, End, Ids};
use super::plan::{plans, AccPlan, Ctl, Elems, Plans};
use super::region::{first_common, Common, Region, Runs, WALK_BUDGET};
use super::ring::Ring;
use super::table::{Rec, Shape, Table, HULL, NO_ALT, PRUNE_MIN, SELECT};
use super::{Hazard, HazardAccess, HazardKind, Memory};
use crate::addresses::Addresses;
use crate::config::Config;
use crate::engine::{CrossEvent, Issue, Observer};
use crate::footprint::Selected;
use crate::ids::{OpId, VarId};
use crate::launch::Slot;
use crate::program::Program;
use crate::types::{Pipe, Space};

const NP: usize = Pipe::COUNT;
const S: usize = 0;
const M: usize = 2;
/// On-chip memories per core (the scopes).
const SC: usize = Space::COUNT;
/// The most increments a cross-core counter's queue keeps apart; more are merged into the
/// newest entry, which then knows what all of them know (conservative).
const COUNTER_CAP: usize = 64;
/// Entries of [`RaceChecker::pipe_of`] per core of the launch (a power of two): more than the
/// instructions a core has pending at once in any but a pathological run.
const PIPE_OF: usize = 256;

/// What an instruction does to the clocks when it starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Kind {
    #[default]
    Work,
    Barrier,
    BarrierAll,
    /// Flag index `(src * NP + dst) * events + id`.
    SetFlag(u32),
    WaitFlag(u32),
    /// The MTE1 part of an `mmad_l1`.
    Stage,
    /// The M part of an `mmad_l1`.
    MacroM,
    CrossSet,
    CrossWait,
}

/// A `set_flag`, pipe `p`'s instruction `idx`, starts with its pipe's clock `k`: it drains its
/// pipe first (a barrier that also tells the waiter), and publishes what it knows in `flag`
/// unless an earlier set is still unwaited (a second set before the wait does not count; the
/// engine reports a double set).
#[inline]
fn start_set(k: &mut Clock, flag: &mut Option<Clock>, p: usize, idx: u64) {
    k.advance(p, idx);
    if flag.is_none() {
        *flag = Some(k.clone());
    }
}

/// A `wait_flag` starts with its pipe's clock `k`: it learns what its set knew.
#[inline]
fn start_wait(k: &mut Clock, flag: &mut Option<Clock>) {
    // (joined in place, then emptied: no copy of the set's clock)
    match flag {
        Some(set) => {
            k.join(set);
            *flag = None;
        }
        None => debug_assert!(false, "race checker: a wait started before its set"),
    }
}

/// An instruction issued and not yet started.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    seq: u64,
    /// Its index on its pipe.
    idx: u64,
    /// The version of S's clock when S sent it ([`CoreState::s_ver`]): what S knew then is
    /// [`CoreState::snap`] of it (kept once per version, not copied into every instruction).
    sver: u64,
    kind: Kind,
    op: u32,
    /// How many accesses it has in its pipe's access queue.
    nacc: u32,
}

/// An access resolved at issue (byte range, runs and variables known), checked at start.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    table: u32,
    lo: u64,
    hi: u64,
    write: bool,
    alt: u64,
    vars: u32,
    /// What `[lo, hi)` stands for.
    shape: Shape,
}

/// "No buffer" in [`Hot::root`]: a gm tensor, whose bytes are offsets in the tensor.
const GM_ROOT: u32 = u32::MAX;

/// An access of an op to a memory something writes, laid out for `on_issue`: the common case
/// (one buffer or a gm tensor, one run, read whatever the loop variables) resolves from these
/// few words; anything else (`general`) from its [`super::plan::AccPlan`].
#[derive(Clone, Copy, Debug)]
struct Hot {
    /// Its entry in `Plans::accs`.
    plan: u32,
    /// Its memory ([`Memory::index`]).
    mem: u32,
    /// Its operand's position in `Issue::slots`.
    k: u32,
    /// Its buffer (an index into `Part::offsets`), or [`GM_ROOT`].
    root: u32,
    /// Where its buffer's slot offsets start in `Part::flat`, and how many there are (0: not
    /// placed): one lookup instead of two.
    off: u32,
    nslots: u32,
    /// Its bytes relative to the root, when `fixed` (they do not depend on loop variables).
    blo: u64,
    bhi: u64,
    fixed: bool,
    write: bool,
    /// Done by the MTE1 part of an `mmad_l1`.
    stage: bool,
    /// Through a `select`, strided, or read only at some iterations: resolved by the general
    /// path.
    general: bool,
}

/// A record that conflicts with the access being checked, with the first bytes both touch.
#[derive(Clone, Copy, Debug)]
struct Found {
    rec: Rec,
    lo: u64,
    hi: u64,
    /// [`Shape::approx`] of both, and [`HULL`] when their runs were compared by hull.
    approx: u8,
}

/// The runs of strided accesses, recycled through a free list like the variable slab.
#[derive(Default)]
struct Regions {
    data: Vec<Region>,
    free: Vec<u32>,
    /// Regions in use.
    live: usize,
}

impl Regions {
    fn alloc(&mut self, r: Region) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(id) => {
                self.data[id as usize] = r;
                id
            }
            None => {
                self.data.push(r);
                (self.data.len() - 1) as u32
            }
        }
    }

    /// Frees the region of a record that goes.
    #[inline]
    fn free(&mut self, shape: Shape) {
        if let Some(id) = shape.id() {
            self.live -= 1;
            self.free.push(id);
        }
    }

    /// The runs of an access: its region, or its byte range.
    #[inline]
    fn runs(&self, shape: Shape, lo: u64, hi: u64) -> Runs<'_> {
        match shape.id() {
            None => Runs::range(lo, hi),
            Some(id) => self.data[id as usize].runs(),
        }
    }

    /// Whether two strided accesses have the same runs.
    fn same(&self, a: Shape, b: Shape) -> bool {
        match (a.id(), b.id()) {
            (Some(a), Some(b)) => self.data[a as usize] == self.data[b as usize],
            _ => false,
        }
    }
}

/// The shape of a selection that may be strided, `elems` for the loop variables `vars` (of
/// `bits`-bit elements, the root at byte `at`): its region, a range when it is one run, or a
/// range with [`HULL`] when its runs cannot be kept.
#[inline(never)]
fn pattern(regions: &mut Regions, elems: &Elems, vars: &[i64], bits: u64, at: u64) -> Shape {
    match elems.runs(vars) {
        None | Some(Selected::Empty) => Shape::RANGE,
        Some(Selected::Runs(s)) => match Region::of(&s, bits, at) {
            Some(r) if r.rank > 0 => Shape::region(regions.alloc(r)),
            Some(_) => Shape::RANGE,
            None => Shape::RANGE.with(HULL),
        },
        Some(Selected::Deep) => Shape::RANGE.with(HULL),
    }
}

/// What S knew at version `ver` of its clock: `s_clock` (version `s_ver`) or a kept snapshot.
#[inline]
fn snap_of<'a>(
    s_clock: &'a Clock,
    s_ver: u64,
    snaps: &'a VecDeque<(u64, Clock)>,
    ver: u64,
) -> &'a Clock {
    if ver == s_ver {
        return s_clock;
    }
    let i = snaps.partition_point(|(v, _)| *v < ver);
    debug_assert_eq!(snaps.get(i).map(|s| s.0), Some(ver));
    &snaps[i].1
}

/// Fixed-width snapshots of loop-variable values, one per instruction with accesses and
/// shared by its records (counted), recycled through a free list.
struct VarSlab {
    width: usize,
    data: Vec<i64>,
    /// Per snapshot, the records (and queued accesses) that refer to it.
    refs: Vec<u32>,
    free: Vec<u32>,
}

impl VarSlab {
    /// A snapshot of the values of `loop_vars` in `values` (indexed by variable) with one
    /// reference.
    #[inline(always)]
    fn alloc(&mut self, loop_vars: &[VarId], values: &[i64]) -> u32 {
        if self.width == 0 {
            return 0;
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = self.refs.len() as u32;
                self.data.resize(self.data.len() + self.width, 0);
                self.refs.push(0);
                id
            }
        };
        self.refs[id as usize] = 1;
        let at = id as usize * self.width;
        for (slot, x) in self.data[at..at + self.width].iter_mut().zip(loop_vars) {
            *slot = values[x.index()];
        }
        id
    }

    /// One more reference to snapshot `id`.
    #[inline(always)]
    fn share(&mut self, id: u32) {
        if self.width != 0 {
            self.refs[id as usize] += 1;
        }
    }

    /// Drops a reference to snapshot `id`; the last one frees it.
    #[inline]
    fn free(&mut self, id: u32) {
        if self.width != 0 {
            let r = &mut self.refs[id as usize];
            *r -= 1;
            if *r == 0 {
                self.free.push(id);
            }
        }
    }

    fn get(&self, id: u32) -> &[i64] {
        let at = id as usize * self.width;
        &self.data[at..at + self.width]
    }
}

/// One kernel part of the launch (the program, or a mixed kernel's `aic` / `aiv` part).
struct Part<'p> {
    program: &'p Program,
    plans: Plans<'p>,
    offsets: Vec<Vec<u64>>,
    /// `offsets` end to end (see [`Hot::off`]).
    flat: Vec<u64>,
    slot_bytes: Vec<u64>,
    /// The accesses `on_issue` resolves, to memories something writes (a read-only memory
    /// has no hazard), per op a range `hot_ops[op]` of them in plan order.
    hot: Vec<Hot>,
    hot_ops: Vec<HotOp>,
}

/// An op as `on_issue` reads it.
#[derive(Clone, Copy, Debug)]
struct HotOp {
    /// Its accesses, `lo..hi` in [`Part::hot`].
    lo: u32,
    hi: u32,
    ctl: Ctl,
    /// For a `set_flag` / `wait_flag`: the index of its pipes' id 0 among the flags.
    flag: u32,
}

/// The accesses of each op of `plans` that `on_issue` resolves: those to a memory something
/// writes (`written`, by [`Memory::index`]), in plan order, with one run's bytes precomputed
/// when they do not depend on loop variables. An access that selects nothing is none.
fn hot_accesses(
    plans: &Plans<'_>,
    events: usize,
    written: impl Fn(usize) -> bool,
) -> (Vec<Hot>, Vec<HotOp>) {
    let mut hot = Vec::new();
    let mut ops = Vec::with_capacity(plans.ops.len());
    for op in &plans.ops {
        let lo = hot.len() as u32;
        for ai in op.lo..op.hi {
            let acc = &plans.accs[ai as usize];
            if !written(acc.table as usize) {
                continue;
            }
            let (fixed, blo, bhi) = match acc.elems {
                Elems::Static(lo, hi) if lo >= hi => continue,
                Elems::Static(lo, hi) => (true, (lo * acc.bits) / 8, (hi * acc.bits).div_ceil(8)),
                _ => (false, 0, 0),
            };
            let general = acc.roots.len() > 1 || acc.strided || acc.read_if_zero.is_some();
            hot.push(Hot {
                plan: ai,
                mem: acc.table,
                k: acc.k as u32,
                root: acc.roots.first().map_or(GM_ROOT, |b| b.index() as u32),
                off: 0,
                nslots: 0,
                blo,
                bhi,
                fixed,
                write: acc.write,
                stage: acc.stage,
                general,
            });
        }
        let flag = match op.ctl {
            Ctl::SetFlag { src, dst } | Ctl::WaitFlag { src, dst } => {
                ((src.index() * NP + dst.index()) * events) as u32
            }
            _ => 0,
        };
        ops.push(HotOp {
            lo,
            hi: hot.len() as u32,
            ctl: op.ctl,
            flag,
        });
    }
    (hot, ops)
}

/// Bytes the race checker allocates for each core of a launch: its [`CoreState`] with a clock
/// per flag (pipe, pipe, `sync.event_ids`), and a table per on-chip scope.
pub(crate) fn core_bytes(config: &Config) -> u64 {
    use std::mem::size_of;
    let events = u64::from(config.sync.event_ids.max(1));
    (size_of::<CoreState>() + SC * size_of::<Table>()) as u64
        + (NP * NP) as u64 * events * size_of::<Option<Clock>>() as u64
}

/// The clocks and queues of one core of the launch.
struct CoreState {
    /// The index of its part.
    part: usize,
    /// Instructions issued per pipe (the next index).
    issued: [u64; NP],
    /// What S knows; `s_clock[S]` counts S's own ops, all complete.
    s_clock: Clock,
    /// Per pipe: what is known complete before its next instruction starts (beyond what S
    /// knew when sending it).
    known: [Clock; NP],
    pending: [Ring<Pending>; NP],
    /// How many times `s_clock` has changed: S's clock only grows, so a pipe that has joined
    /// version `v` knows every snapshot of S up to `v`.
    s_ver: u64,
    /// Per pipe, the version of S's clock that `known[p]` already includes.
    joined: [u64; NP],
    /// S's clock at each earlier version some instruction still pending was sent under,
    /// oldest first (the current version's is `s_clock`).
    snaps: VecDeque<(u64, Clock)>,
    /// Per pipe, the accesses of its pending instructions, in issue order.
    accs: [Ring<Acc>; NP],
    /// The start clocks of MTE1 parts whose M part has not started.
    stages: VecDeque<Clock>,
    /// The clock of the set_flag that set each flag, until its wait consumes it.
    flags: Vec<Option<Clock>>,
}

impl CoreState {
    /// A lower bound on the clock of every instruction of pipe `p` that has not started:
    /// the pipe's own knowledge joined with what S knew when it sent the oldest one.
    fn lower_bound(&self, p: usize) -> Clock {
        if p == S {
            return self.s_clock.clone();
        }
        let mut f = self.known[p].clone();
        match self.pending[p].front() {
            Some(pd) => f.join(self.snap(pd.sver)),
            None => f.join(&self.s_clock),
        }
        f
    }

    /// [`CoreState::lower_bound`]'s own-core part (all there is in a one-core launch), without
    /// copying clocks.
    fn lower_bound_local(&self, p: usize) -> [u64; NP] {
        if p == S {
            return self.s_clock.l;
        }
        let mut f = self.known[p].l;
        let s = match self.pending[p].front() {
            Some(pd) => self.snap(pd.sver),
            None => &self.s_clock,
        };
        for (a, b) in f.iter_mut().zip(s.l) {
            *a = (*a).max(b);
        }
        f
    }

    /// What S knew at version `ver` of its clock (one a pending instruction was sent under).
    #[inline]
    fn snap(&self, ver: u64) -> &Clock {
        snap_of(&self.s_clock, self.s_ver, &self.snaps, ver)
    }

    /// Starts pipe `p`'s instruction `pd`, which has no access and only joins or publishes
    /// clocks (work, a barrier, a set or a wait, not on S): what `on_start` does, on `known[p]`
    /// itself rather than a copy, since nothing reads it in between.
    #[inline]
    fn start_in_place(&mut self, p: usize, pd: &Pending) {
        if pd.sver > self.joined[p] {
            let snap = snap_of(&self.s_clock, self.s_ver, &self.snaps, pd.sver);
            self.known[p].join(snap);
            self.joined[p] = pd.sver;
        }
        let k = &mut self.known[p];
        match pd.kind {
            Kind::Barrier => k.advance(p, pd.idx),
            Kind::SetFlag(f) => start_set(k, &mut self.flags[f as usize], p, pd.idx),
            Kind::WaitFlag(f) => start_wait(k, &mut self.flags[f as usize]),
            _ => {}
        }
    }

    /// S's clock becomes `k` (a new version): the old one is kept while an instruction sent
    /// under it is pending, and versions no pending instruction refers to are dropped.
    fn set_s_clock(&mut self, k: Clock) {
        let old = std::mem::replace(&mut self.s_clock, k);
        if self
            .pending
            .iter()
            .any(|q| q.back().is_some_and(|pd| pd.sver == self.s_ver))
        {
            self.snaps.push_back((self.s_ver, old));
        }
        self.s_ver += 1;
        let oldest = self
            .pending
            .iter()
            .filter_map(|q| q.front().map(|pd| pd.sver))
            .min()
            .unwrap_or(self.s_ver);
        while self.snaps.front().is_some_and(|(v, _)| *v < oldest) {
            self.snaps.pop_front();
        }
    }

    /// The smallest sequence number issued on this core and not started.
    #[inline]
    fn oldest_pending(&self) -> u64 {
        self.pending
            .iter()
            .fold(u64::MAX, |m, q| q.front().map_or(m, |pd| m.min(pd.seq)))
    }
}

/// The race checker: an [`Observer`] that finds every pair of conflicting accesses that
/// happens-before does not order (see [`super`] for the model). Run it with
/// [`crate::engine::run_placed`] and the same [`Addresses`] ([`RaceChecker::new`]), or with
/// [`crate::engine::run_launch`] and the same parts ([`RaceChecker::for_launch`]), or use
/// [`super::check`] / [`super::check_launch`].
pub struct RaceChecker<'p> {
    parts: Vec<Part<'p>>,
    cores: Vec<CoreState>,
    /// How reports name each core (`block 1 aiv 0`), when the launch has more than one.
    names: Vec<String>,
    /// The cores of the launch ([`crate::launch::slots`]).
    slots: Vec<Slot>,
    events: usize,
    /// `cross_core.flag_ids` of the config (0 without cross-core flags).
    cross_ids: u32,
    /// Each core's on-chip memories (`core * SC + scope`), then gm's tensors, shared.
    tables: Vec<Table>,
    vars: VarSlab,
    regions: Regions,
    /// The lowest free flag ids, for the fixes hazards suggest.
    ids: Ids,
    hazards: Vec<Hazard>,
    /// (first part, op, pipe; second part, op, pipe; across cores).
    seen: HashSet<(u32, u32, u8, u32, u32, u8, bool)>,
    /// The records an access's range meets that it is not ordered with (`access`).
    found: Vec<Rec>,
    records: usize,
    peak_records: usize,
    /// `(seq, core << 3 | pipe)` of the last instruction issued at each `seq % len` (a power
    /// of two, [`PIPE_OF`] per core): a later one may take an entry before its instruction
    /// starts; the heads of the pipes' queues then tell (a starting instruction is its pipe's
    /// oldest pending one). Dense and tiny against a hash map's insert and remove per
    /// instruction of a launch.
    pipe_of: Vec<(u64, u32)>,
    /// The published clock of each `cross_set` started whose signal has not been delivered.
    sets: HashMap<u64, Global>,
    /// Per (core, counter id): what each outstanding increment carries, oldest first (with
    /// how many increments an entry stands for).
    counters: HashMap<(u32, u32), VecDeque<(Global, u32)>>,
    /// The oldest instruction pending on the core whose instruction is starting, once an
    /// access asked (the queues do not change while its accesses are checked).
    oldest: Option<u64>,
    /// The last signal's sets and clock: one signal reaches several cores in a row.
    last_sets: Vec<u64>,
    last_signal: Option<Global>,
    /// The increment a `cross_wait` took, until the wait starts (right after).
    take: Option<(u64, Global)>,
}

impl<'p> RaceChecker<'p> {
    /// A checker for one run of `program` (loaded against `config`) with its buffers placed at
    /// `addresses`: every core of its launch ([`crate::launch::slots`]; one unless it has a
    /// `launch` section).
    pub fn new(program: &'p Program, config: &Config, addresses: &Addresses) -> Self {
        Self::for_launch(&[(program, addresses)], config)
    }

    /// A checker for a launch of `parts` (one program, or a mixed kernel's `aic` and `aiv`
    /// parts, each with its addresses), as [`crate::engine::run_launch`] runs it: the cores
    /// are [`crate::launch::slots`], and hazards name them by their index there.
    pub fn for_launch(parts: &[(&'p Program, &Addresses)], config: &Config) -> Self {
        let programs: Vec<&Program> = parts.iter().map(|p| p.0).collect();
        let slots = crate::launch::slots(&programs, config);
        let mut parts: Vec<Part<'p>> = parts
            .iter()
            .map(|&(program, addresses)| Part {
                program,
                plans: plans(program),
                offsets: addresses.offsets.clone(),
                flat: addresses.offsets.concat(),
                slot_bytes: addresses.slot_bytes.clone(),
                hot: Vec::new(),
                hot_ops: Vec::new(),
            })
            .collect();
        let ncores = slots.len().max(1);
        let part_of = |c: usize| slots.get(c).map_or(0, |s| s.part as usize);
        let tensors = parts
            .iter()
            .map(|p| p.program.tensors.len())
            .max()
            .unwrap_or(0);
        let mut tables = Vec::with_capacity(ncores * SC + tensors);
        for c in 0..ncores {
            let plans = &parts[part_of(c)].plans;
            for m in 0..SC {
                let mut table = Table::new();
                table.pipes = plans.table_pipes[m];
                table.written = plans.table_written[m];
                tables.push(table);
            }
        }
        for t in 0..tensors {
            let mut table = Table::new();
            for part in &parts {
                table.pipes |= part.plans.table_pipes.get(SC + t).copied().unwrap_or(0);
                table.written |= part
                    .plans
                    .table_written
                    .get(SC + t)
                    .copied()
                    .unwrap_or(false);
            }
            tables.push(table);
        }
        let events = (config.sync.event_ids as usize).max(1);
        for part in &mut parts {
            // gm's tables are shared: written when any part writes them
            let written = |m: usize| {
                if m < SC {
                    part.plans.table_written[m]
                } else {
                    tables.get(ncores * SC + m - SC).is_some_and(|t| t.written)
                }
            };
            (part.hot, part.hot_ops) = hot_accesses(&part.plans, events, written);
            let mut starts = Vec::with_capacity(part.offsets.len());
            let mut at = 0usize;
            for o in &part.offsets {
                starts.push(u32::try_from(at).expect("race checker: fewer than 2^32 slots"));
                at += o.len();
            }
            for h in &mut part.hot {
                let b = h.root as usize;
                if let (Some(&off), Some(o)) = (starts.get(b), part.offsets.get(b)) {
                    (h.off, h.nslots) = (off, o.len() as u32);
                }
            }
        }
        let width = parts.iter().map(|p| p.plans.depth).max().unwrap_or(0);
        let cores = (0..ncores)
            .map(|c| CoreState {
                part: part_of(c),
                issued: [0; NP],
                s_clock: Clock::ZERO,
                known: Default::default(),
                pending: Default::default(),
                s_ver: 0,
                joined: [0; NP],
                snaps: VecDeque::new(),
                accs: Default::default(),
                stages: VecDeque::new(),
                flags: vec![None; NP * NP * events],
            })
            .collect();
        let names = if slots.len() > 1 {
            slots
                .iter()
                .map(|s| crate::launch::name(config, s))
                .collect()
        } else {
            Vec::new()
        };
        RaceChecker {
            parts,
            cores,
            names,
            slots,
            events,
            cross_ids: config.cross_core.map_or(0, |c| c.flag_ids),
            tables,
            vars: VarSlab {
                width,
                data: Vec::new(),
                refs: Vec::new(),
                free: Vec::new(),
            },
            regions: Regions::default(),
            ids: Ids::default(),
            hazards: Vec::new(),
            seen: HashSet::default(),
            found: Vec::new(),
            records: 0,
            peak_records: 0,
            pipe_of: vec![(u64::MAX, 0); (ncores * PIPE_OF).next_power_of_two()],
            sets: HashMap::default(),
            counters: HashMap::default(),
            oldest: None,
            last_sets: Vec::new(),
            last_signal: None,
            take: None,
        }
    }

    /// The hazards found so far, in the order they were found.
    pub fn hazards(&self) -> &[Hazard] {
        &self.hazards
    }

    /// The hazards found, in the order they were found (deterministic: the engine's).
    pub fn into_hazards(self) -> Vec<Hazard> {
        self.hazards
    }

    /// Accesses recorded now.
    pub fn live_records(&self) -> usize {
        self.records
    }

    /// The most accesses recorded at once during the run (bounded by what is live, not by
    /// the number of dynamic instructions).
    pub fn peak_records(&self) -> usize {
        self.peak_records
    }

    /// The memory of table `t` and the core owning it (`None`: gm, every core's).
    fn memory_of(&self, t: usize) -> (usize, Option<usize>) {
        let on_chip = self.cores.len() * SC;
        if t < on_chip {
            (t % SC, Some(t / SC))
        } else {
            (SC + t - on_chip, None)
        }
    }

    /// A lower bound on the clock of every instruction not started on a pipe able to access
    /// table `t` (of its core, or of any core for gm), as a flat clock over the cores; and,
    /// for gm with more than one core, per core what its own such pipes all know of it.
    fn floor(&self, t: usize) -> (Vec<u64>, Vec<[u64; NP]>) {
        let (mem, owner) = self.memory_of(t);
        let n = self.cores.len();
        let mut floor = vec![u64::MAX; n * NP];
        let mut own = Vec::new();
        let cores = match owner {
            Some(c) => c..c + 1,
            None => 0..n,
        };
        for c in cores {
            let core = &self.cores[c];
            let mask = self.parts[core.part]
                .plans
                .table_pipes
                .get(mem)
                .copied()
                .unwrap_or(0);
            let mut mine = [u64::MAX; NP];
            for p in 0..NP {
                if mask & (1 << p) == 0 {
                    continue;
                }
                let f = core.lower_bound(p);
                f.meet_into(c, &mut floor);
                for (m, v) in mine.iter_mut().zip(f.l) {
                    *m = (*m).min(v);
                }
            }
            if owner.is_none() && n > 1 {
                own.push(mine);
            }
        }
        (floor, own)
    }

    /// [`RaceChecker::floor`] of a one-core launch, without allocating: the lowest of what
    /// each pipe able to access table `t` knows.
    fn floor_one(&self, t: usize) -> [u64; NP] {
        let (mem, _) = self.memory_of(t);
        let core = &self.cores[0];
        let mask = self.parts[core.part]
            .plans
            .table_pipes
            .get(mem)
            .copied()
            .unwrap_or(0);
        let mut floor = [u64::MAX; NP];
        for p in 0..NP {
            if mask & (1 << p) != 0 {
                for (f, v) in floor.iter_mut().zip(core.lower_bound_local(p)) {
                    *f = (*f).min(v);
                }
            }
        }
        floor
    }

    /// Drops the records of table `t` that every pipe able to access it is known to have
    /// passed. With more than one core, a gm record its own core has passed matters only to
    /// the other cores: of those with the same core, op, pipe, direction and bytes, only the
    /// newest is kept (whoever does not know an older one does not know the newest either).
    fn prune(&mut self, t: usize) {
        let one: [u64; NP];
        let flat: Vec<u64>;
        let mut own = Vec::new();
        let floor: &[u64] = if self.cores.len() == 1 {
            one = self.floor_one(t);
            &one
        } else {
            (flat, own) = self.floor(t);
            &flat
        };
        let (vars, regions) = (&mut self.vars, &mut self.regions);
        let mut dropped = 0;
        if regions.live == 0 {
            // no strided record anywhere (the common case): nothing else to free
            self.tables[t].retain(
                |r| !ordered_flat(r, floor),
                |r| {
                    vars.free(r.vars);
                    dropped += 1;
                },
            );
        } else {
            self.tables[t].retain(
                |r| !ordered_flat(r, floor),
                |r| {
                    vars.free(r.vars);
                    regions.free(r.shape);
                    dropped += 1;
                },
            );
        }
        if !own.is_empty() {
            let settled = |r: &Rec| {
                let k = &own[r.core as usize];
                k[r.pipe as usize] > r.idx || (r.alt != NO_ALT && k[M] > r.alt)
            };
            // The same bytes: the same hull. Of one op, that is the same runs too: an op's
            // selection has a fixed shape, and its first and last element fix where each
            // dimension's slice starts and how long it is (row-major, inside its base).
            let mut newest: HashMap<SameBytes, u64> = HashMap::default();
            for i in 0..self.tables[t].len() {
                let r = self.tables[t].get(i);
                if settled(r) {
                    let e = newest
                        .entry((r.core, r.op, r.pipe, r.write, r.lo, r.hi))
                        .or_insert(r.idx);
                    *e = (*e).max(r.idx);
                }
            }
            self.tables[t].retain(
                |r| !settled(r) || newest[&(r.core, r.op, r.pipe, r.write, r.lo, r.hi)] == r.idx,
                |r| {
                    vars.free(r.vars);
                    regions.free(r.shape);
                    dropped += 1;
                },
            );
        }
        self.records -= dropped;
        let table = &mut self.tables[t];
        table.prune_at = (2 * table.len()).max(PRUNE_MIN);
    }

    /// Checks one access of the instruction `(c, pipe, pd)` started with clock `k` against
    /// the table, records hazards, and records the access.
    #[inline(always)]
    fn access(&mut self, c: usize, pipe: usize, pd: &Pending, k: &Clock, a: Acc) {
        let t = a.table as usize;
        let table = &self.tables[t];
        // The records that may overlap, scanned from the last one starting before the access
        // ends backwards until one starts more than the longest length before it (one pass,
        // no second search: `Table::candidates` is the same rule).
        let (recs, max_len) = table.upto(a.hi);
        // (`report` leaves `found` empty)
        debug_assert!(self.found.is_empty());
        let core = c as u16;
        // the one record this access may replace (same core, op, pipe and direction, inside its
        // range; and its bytes inside this access's, checked once it is chosen): the first
        // such, and whether there are more
        let mut subsumed: Option<usize> = None;
        let mut more_subsumed = false;
        // where the record goes: after every record starting at or before its start
        let mut at = 0;
        let mut i = recs.len();
        // a record starting before `stop` ends by `a.lo` (`r.lo + max_len <= a.lo`)
        let stop = if a.lo >= max_len {
            a.lo - max_len + 1
        } else {
            0
        };
        while i > 0 {
            i -= 1;
            let r = &recs[i];
            if r.lo < stop {
                // it and every record before it end by `a.lo`
                at += i + 1;
                break;
            }
            at += usize::from(r.lo <= a.lo);
            if !r.overlaps(a.lo, a.hi) {
                continue;
            }
            if r.op == pd.op
                && r.core == core
                && r.pipe as usize == pipe
                && r.write == a.write
                && r.lo >= a.lo
                && r.hi <= a.hi
            {
                more_subsumed |= subsumed.is_some();
                subsumed = Some(i);
            }
            if r.seq == pd.seq || !(r.write || a.write) || ordered(r, k, core) {
                continue;
            }
            // whether a strided one shares a byte is for `report` to say: the loop stays lean
            self.found.push(*r);
        }
        if !self.found.is_empty() {
            // in table order, as the records are (`report` sorts them stably)
            self.found.reverse();
            self.report(c, pipe, pd, &a);
        }
        let rec = Rec {
            lo: a.lo,
            hi: a.hi,
            seq: pd.seq,
            idx: pd.idx,
            alt: a.alt,
            op: pd.op,
            vars: a.vars,
            shape: a.shape,
            core,
            pipe: pipe as u8,
            write: a.write,
        };
        // A later access of the same core, op, pipe and direction covering an older one
        // reports every hazard the older one would (pipe knowledge is a prefix), in the same
        // program order as long as nothing its core issued before it is still waiting to
        // start (across cores, the order of a hazard's sides is the cores').
        if let Some(i) = subsumed {
            if !more_subsumed
                && self.tables[t].get(i).lo == a.lo
                && *self
                    .oldest
                    .get_or_insert_with(|| self.cores[c].oldest_pending())
                    > pd.seq
                && (a.shape.is_exact_range() || covers(&self.regions, &a, self.tables[t].get(i)))
            {
                let old = self.tables[t].get(i);
                let (vars, shape) = (old.vars, old.shape);
                self.vars.free(vars);
                self.regions.free(shape);
                self.tables[t].replace(i, rec);
                return;
            }
        }
        self.tables[t].insert_at(at, rec);
        self.records += 1;
        self.peak_records = self.peak_records.max(self.records);
        if self.tables[t].len() >= self.tables[t].prune_at {
            self.prune(t);
        }
    }

    /// Records the hazards between access `a` and the records in `found` that share a byte
    /// with it, once per op pair (and whether across cores), the earliest record first.
    #[cold]
    fn report(&mut self, c: usize, pipe: usize, pd: &Pending, a: &Acc) {
        let mut recs = std::mem::take(&mut self.found);
        recs.sort_by_key(|r| (r.seq, r.write, r.lo));
        // the bytes both touch: their ranges', unless one is strided
        let found: Vec<Found> = recs
            .iter()
            .filter_map(|r| match (r.shape.id(), a.shape.id()) {
                (None, None) => Some(Found {
                    rec: *r,
                    lo: r.lo.max(a.lo),
                    hi: r.hi.min(a.hi),
                    approx: r.shape.approx() | a.shape.approx(),
                }),
                _ => common(&self.regions, r, a),
            })
            .collect();
        for f in &found {
            let r = &f.rec;
            let other = HazardSide {
                core: r.core as usize,
                seq: r.seq,
                op: r.op,
                pipe: r.pipe as usize,
                write: r.write,
                vars: r.vars,
            };
            let this = HazardSide {
                core: c,
                seq: pd.seq,
                op: pd.op,
                pipe,
                write: a.write,
                vars: a.vars,
            };
            // one core: program order; across cores there is none, so the lower core first
            let cross = other.core != this.core;
            let other_first = if cross {
                other.core < this.core
            } else {
                other.seq < this.seq
            };
            let (first, second) = if other_first {
                (other, this)
            } else {
                (this, other)
            };
            let part = |s: &HazardSide| self.cores[s.core].part as u32;
            let key = (
                part(&first),
                first.op,
                first.pipe as u8,
                part(&second),
                second.op,
                second.pipe as u8,
                cross,
            );
            if !self.seen.insert(key) {
                continue;
            }
            let kind = match (first.write, second.write) {
                (true, false) => HazardKind::Raw,
                (false, true) => HazardKind::War,
                _ => HazardKind::Waw,
            };
            let (mem, _) = self.memory_of(a.table as usize);
            let memory = Memory::from_index(mem);
            let program = self.parts[self.cores[c].part].program;
            let fix = self.fix(&first, &second);
            self.hazards.push(Hazard {
                kind,
                memory,
                memory_label: memory.label(program),
                lo: f.lo,
                hi: f.hi,
                first: self.side(&first),
                second: self.side(&second),
                conservative: conservative(f.approx),
                fix,
            });
        }
        recs.clear();
        self.found = recs;
    }

    /// What `sync: auto` would insert to order the two sides ([`fix`]).
    fn fix(&mut self, first: &HazardSide, second: &HazardSide) -> Option<fix::Fix> {
        let end = |s: &HazardSide| {
            let part = self.cores[s.core].part;
            End {
                part,
                program: self.parts[part].program,
                op: OpId(s.op),
                pipe: Pipe::ALL[s.pipe],
            }
        };
        let (a, b) = (end(first), end(second));
        if first.core == second.core {
            fix::within(&mut self.ids, self.events as u32, a, b)
        } else {
            let programs: Vec<&Program> = self.parts.iter().map(|p| p.program).collect();
            let slot = |c: usize| {
                self.slots.get(c).copied().unwrap_or(Slot {
                    part: 0,
                    core: crate::ids::CoreId(0),
                    block: 0,
                    subblock: 0,
                    index: 0,
                    ai_core: 0,
                    vector: false,
                })
            };
            fix::across(
                &mut self.ids,
                self.cross_ids,
                &programs,
                (a, &slot(first.core)),
                (b, &slot(second.core)),
            )
        }
    }

    fn side(&self, s: &HazardSide) -> HazardAccess {
        let part = &self.parts[self.cores[s.core].part];
        let program = part.program;
        let id = OpId(s.op);
        let op = program.op(id);
        let vars = self.vars.get(s.vars);
        HazardAccess {
            core: s.core as u32,
            core_name: self.names.get(s.core).cloned(),
            seq: s.seq,
            op: id,
            pipe: Pipe::ALL[s.pipe],
            write: s.write,
            path: op.path.clone(),
            name: op.kind.name(),
            line: op.loc.line,
            column: op.loc.column,
            at: program.locate(id),
            vars: part.plans.ops[id.index()]
                .loop_vars
                .iter()
                .zip(vars)
                .map(|(v, &x)| (program.var_name(*v), x))
                .filter(|(n, _)| !n.is_empty())
                .collect(),
        }
    }

    /// Starts the instruction `pd` of pipe `p` of core `c` that the fast paths of `on_start`
    /// do not (an S op, an `mmad_l1` part, a `barrier: all`, a cross-core flag), on a copy of
    /// its pipe's clock. Kept out of line so that the common starts stay small.
    #[inline(never)]
    fn start_general(&mut self, c: usize, p: usize, pd: Pending) {
        let ncores = self.cores.len();
        let core = &mut self.cores[c];
        // S's clock only grows: S knows its snapshot, and a pipe that joined this version or
        // a later one knows it too (the join would change nothing)
        let mut k = if p == S {
            core.s_clock.clone()
        } else {
            // (a copy: pruning during the accesses below reads `known[p]` as it was)
            let mut k = core.known[p].clone();
            if pd.sver > core.joined[p] {
                k.join(core.snap(pd.sver));
                core.joined[p] = pd.sver;
            }
            k
        };
        if pd.kind == Kind::MacroM {
            // the M part starts after its MTE1 part has completed
            let stage = core
                .stages
                .pop_front()
                .expect("race checker: an mmad_l1 M part starts after its MTE1 part");
            k.join(&stage);
        }
        self.oldest = None;
        for _ in 0..pd.nacc {
            let Some(a) = self.cores[c].accs[p].pop_front() else {
                debug_assert!(false, "race checker: accesses not queued at issue");
                break;
            };
            self.access(c, p, &pd, &k, a);
        }
        let core = &mut self.cores[c];
        // Everything known before an instruction starts is known before every later
        // instruction of its pipe starts (a pipe starts in order).
        match pd.kind {
            Kind::Work | Kind::MacroM => {}
            Kind::Stage => core.stages.push_back(k.clone()),
            Kind::Barrier => k.advance(p, pd.idx),
            Kind::BarrierAll => {
                // every instruction issued so far has completed
                for q in 0..NP {
                    k.advance(q, core.issued[q]);
                }
            }
            Kind::SetFlag(f) => start_set(&mut k, &mut core.flags[f as usize], p, pd.idx),
            Kind::WaitFlag(f) => start_wait(&mut k, &mut core.flags[f as usize]),
            Kind::CrossSet => {
                // it too drains its pipe first, and tells the cores its signal reaches
                k.advance(p, pd.idx);
                self.sets.insert(pd.seq, k.publish(c, ncores));
            }
            Kind::CrossWait => match self.take.take() {
                Some((wait, g)) if wait == pd.seq => k.take(c, &g),
                _ => debug_assert!(false, "race checker: a cross_wait started without a take"),
            },
        }
        let core = &mut self.cores[c];
        if p == S {
            // S's ops are sequential: this one is complete before S does anything else
            k.advance(S, pd.idx + 1);
            core.set_s_clock(k);
        } else {
            core.known[p].set_to(k);
        }
    }

    /// Queues the accesses of the instruction `issue` (of `kind`, on pipe `p` of core `c`,
    /// its op's accesses `hop`) on its pipe's access queue; returns how many.
    #[inline(always)]
    fn queue_accesses(
        &mut self,
        c: usize,
        p: usize,
        kind: Kind,
        alt: u64,
        hop: HotOp,
        issue: &Issue<'_>,
    ) -> u32 {
        let core = &self.cores[c];
        let part = &self.parts[core.part];
        let ncores = self.cores.len();
        let table_of = |mem: u32| {
            let mem = mem as usize;
            (if mem < SC {
                c * SC + mem
            } else {
                ncores * SC + (mem - SC)
            }) as u32
        };
        let (lo, hi) = (hop.lo, hop.hi);
        let loop_vars = &part.plans.ops[issue.op.index()].loop_vars;
        let mmad_l1 = kind == Kind::Stage || kind == Kind::MacroM;
        // the instruction's loop variables, one snapshot its accesses share (taken at the
        // first one)
        let mut vid: Option<u32> = None;
        let mut nacc = 0u32;
        for h in &part.hot[lo as usize..hi as usize] {
            // an mmad_l1's MTE1 part reads a and b, its M part the rest
            if mmad_l1 && h.stage != (kind == Kind::Stage) {
                continue;
            }
            if h.general {
                let queue = &mut self.cores[c].accs[p];
                let before = queue.len();
                let acc = &part.plans.accs[h.plan as usize];
                general(
                    &mut self.regions,
                    queue,
                    part,
                    acc,
                    table_of(h.mem),
                    alt,
                    issue,
                );
                let added = queue.len() - before;
                if added == 0 {
                    continue;
                }
                let v = snapshot(&mut vid, &mut self.vars, loop_vars, issue.vars);
                for i in before..queue.len() {
                    if i > before {
                        self.vars.share(v);
                    }
                    queue.get_mut(i).vars = v;
                }
                nacc += added as u32;
                continue;
            }
            let (blo, bhi) = if h.fixed {
                (h.blo, h.bhi)
            } else {
                let acc = &part.plans.accs[h.plan as usize];
                let Some((elo, ehi)) = acc.elems.eval(issue.vars) else {
                    continue;
                };
                ((elo * acc.bits) / 8, (ehi * acc.bits).div_ceil(8))
            };
            let base = if h.root == GM_ROOT {
                0
            } else {
                let slot = issue.slots.get(h.k as usize).copied().unwrap_or(0);
                if slot >= h.nslots {
                    continue; // not placed
                }
                let base = part.flat[(h.off + slot) as usize];
                debug_assert!(
                    part.slot_bytes
                        .get(h.root as usize)
                        .is_none_or(|&s| bhi <= s),
                    "an operand of {} ends past its slot",
                    part.program.op(issue.op).path
                );
                base
            };
            let v = snapshot(&mut vid, &mut self.vars, loop_vars, issue.vars);
            self.cores[c].accs[p].push_back(Acc {
                table: table_of(h.mem),
                lo: base + blo,
                hi: base + bhi,
                write: h.write,
                alt,
                vars: v,
                shape: Shape::RANGE,
            });
            nacc += 1;
        }
        nacc
    }

    /// The published clock a cross-core signal made of the `cross_set`s `sets` carries.
    fn signal(&mut self, sets: &[u64]) -> Option<Global> {
        if sets == self.last_sets.as_slice() {
            return self.last_signal.clone();
        }
        let mut out: Option<Global> = None;
        for s in sets {
            let Some(g) = self.sets.remove(s) else {
                debug_assert!(false, "race checker: a signal of a cross_set never started");
                continue;
            };
            out = Some(match out {
                None => g,
                Some(o) => max_of(&o, &g),
            });
        }
        self.last_sets.clear();
        self.last_sets.extend_from_slice(sets);
        self.last_signal = out.clone();
        out
    }
}

/// The variable snapshot of the instruction being issued for one more of its accesses: the
/// one taken for an earlier access (shared), or a new one of `values` at `loop_vars`.
#[inline(always)]
fn snapshot(vid: &mut Option<u32>, vars: &mut VarSlab, loop_vars: &[VarId], values: &[i64]) -> u32 {
    match *vid {
        Some(v) => {
            vars.share(v);
            v
        }
        None => {
            let v = vars.alloc(loop_vars, values);
            *vid = Some(v);
            v
        }
    }
}

/// Queues the accesses of `acc` (through a `select`, strided, or read only at some
/// iterations) for `issue`, into memory table `table`: one per buffer of a `select` that is
/// placed, none when it selects nothing (or is a read that `init` skips); their variable
/// snapshots are the caller's to set.
#[inline(never)]
fn general(
    regions: &mut Regions,
    queue: &mut Ring<Acc>,
    part: &Part<'_>,
    acc: &AccPlan<'_>,
    table: u32,
    alt: u64,
    issue: &Issue<'_>,
) {
    if let Some(init) = acc.read_if_zero {
        if init.eval(issue.vars).unwrap_or(0) != 0 {
            return;
        }
    }
    let Some((elo, ehi)) = acc.elems.eval(issue.vars) else {
        return;
    };
    let (blo, bhi) = ((elo * acc.bits) / 8, (ehi * acc.bits).div_ceil(8));
    let mut a = Acc {
        table,
        lo: blo,
        hi: bhi,
        write: acc.write,
        alt,
        vars: 0,
        shape: acc.shape,
    };
    let new = queue.len();
    if acc.roots.is_empty() {
        queue.push_back(a);
    } else {
        let slot = issue.slots.get(acc.k).copied().unwrap_or(0) as usize;
        // a `select` may be any of its buffers: check all (conservative)
        for root in &acc.roots {
            let b = root.index();
            let Some(&base) = part.offsets.get(b).and_then(|o| o.get(slot)) else {
                continue; // not placed
            };
            debug_assert!(
                part.slot_bytes.get(b).is_none_or(|&s| bhi <= s),
                "an operand of {} ends past its slot",
                part.program.op(issue.op).path
            );
            a.lo = base + blo;
            a.hi = base + bhi;
            queue.push_back(a);
        }
    }
    // a selection that may be several runs: its runs, on the accesses just queued
    if acc.strided {
        for i in new..queue.len() {
            let a = queue.get_mut(i);
            // the root's placed offset: where the bytes of element 0 are
            let at = a.lo - blo;
            let approx = a.shape.approx();
            a.shape = pattern(regions, &acc.elems, issue.vars, acc.bits, at).with(approx);
        }
    }
}

/// A gm record's core, op, pipe, direction and byte range: records with the same are the
/// same access but for when it happened.
type SameBytes = (u16, u32, u8, bool, u64, u64);

/// The first bytes record `r` and access `a`, one of them strided, both touch (`None`: none).
#[inline(never)]
fn common(regions: &Regions, r: &Rec, a: &Acc) -> Option<Found> {
    let approx = r.shape.approx() | a.shape.approx();
    let mut budget = WALK_BUDGET;
    let (lo, hi, approx) = match first_common(
        regions.runs(r.shape, r.lo, r.hi),
        regions.runs(a.shape, a.lo, a.hi),
        &mut budget,
    ) {
        Common::Disjoint => return None,
        Common::At(lo, hi) => (lo, hi, approx),
        Common::Unknown => (r.lo.max(a.lo), r.hi.min(a.hi), approx | HULL),
    };
    Some(Found {
        rec: *r,
        lo,
        hi,
        approx,
    })
}

/// What a hazard says about its conservative comparisons ([`Rec::approx`] of its two sides).
fn conservative(approx: u8) -> Option<&'static str> {
    match (approx & HULL != 0, approx & SELECT != 0) {
        (false, false) => None,
        (true, false) => Some("compared by byte hull"),
        (false, true) => Some("a select counts as each of its buffers"),
        (true, true) => Some("compared by byte hull; a select counts as each of its buffers"),
    }
}

/// Whether access `a`, not an exact contiguous one, touches every byte record `r` does (both
/// of one op, `r` inside `a`'s range: `r` can then be replaced by `a`). An exact range covers
/// what is inside it; anything else covers only the same bytes.
#[inline(never)]
fn covers(regions: &Regions, a: &Acc, r: &Rec) -> bool {
    match a.shape.id() {
        None => {
            a.shape.approx() & HULL == 0 || (r.lo == a.lo && r.hi == a.hi && r.shape == a.shape)
        }
        Some(_) => r.lo == a.lo && r.hi == a.hi && regions.same(a.shape, r.shape),
    }
}

struct HazardSide {
    core: usize,
    seq: u64,
    op: u32,
    pipe: usize,
    write: bool,
    vars: u32,
}

/// Whether the access `r` is known complete under clock `k` of core `core` (it happens
/// before).
#[inline(always)]
fn ordered(r: &Rec, k: &Clock, core: u16) -> bool {
    if r.core == core {
        k.knows(r.pipe as usize, r.idx) || (r.alt != NO_ALT && k.knows(M, r.alt))
    } else {
        let c = r.core as usize;
        k.knows_remote(c, r.pipe as usize, r.idx)
            || (r.alt != NO_ALT && k.knows_remote(c, M, r.alt))
    }
}

/// Whether the access `r` is known complete under the flat clock `k`.
#[inline(always)]
fn ordered_flat(r: &Rec, k: &[u64]) -> bool {
    let base = r.core as usize * NP;
    k[base + r.pipe as usize] > r.idx || (r.alt != NO_ALT && k[base + M] > r.alt)
}

impl Observer for RaceChecker<'_> {
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let c = issue.core as usize;
        let p = issue.pipe.index();
        let core = &self.cores[c];
        let part = &self.parts[core.part];
        let idx = core.issued[p];
        let op = issue.op.index();
        let hop = part.hot_ops[op];
        // its flag: the pipes' id 0, plus the id (clamped to the config's ids)
        let flag = || hop.flag + (issue.flag_id.unwrap_or(0) as usize).min(self.events - 1) as u32;
        let kind = match hop.ctl {
            Ctl::Work => Kind::Work,
            Ctl::Barrier => Kind::Barrier,
            Ctl::BarrierAll => Kind::BarrierAll,
            Ctl::SetFlag { .. } => Kind::SetFlag(flag()),
            Ctl::WaitFlag { .. } => Kind::WaitFlag(flag()),
            Ctl::MmadL1 if issue.pipe == Pipe::M => Kind::MacroM,
            Ctl::MmadL1 => Kind::Stage,
            Ctl::CrossSet => Kind::CrossSet,
            Ctl::CrossWait => Kind::CrossWait,
        };
        // S sends an mmad_l1's M part right after its MTE1 part: it is M's next instruction
        let alt = if kind == Kind::Stage {
            core.issued[M]
        } else {
            NO_ALT
        };
        // (flags, barriers: nothing to resolve)
        let nacc = if hop.lo == hop.hi {
            0
        } else {
            self.queue_accesses(c, p, kind, alt, hop, issue)
        };
        let core = &mut self.cores[c];
        core.issued[p] += 1;
        // S's ops are complete before S sends anything after them: `s_clock[S]` counts them,
        // and the instruction keeps the version of `s_clock` it was sent under
        core.pending[p].push_back(Pending {
            seq: issue.seq,
            idx,
            sver: core.s_ver,
            kind,
            op: issue.op.0,
            nacc,
        });
        let mask = self.pipe_of.len() - 1;
        self.pipe_of[issue.seq as usize & mask] = (issue.seq, (c as u32) << 3 | p as u32);
    }

    fn on_start(&mut self, seq: u64, _start: u64, _complete: u64) {
        // pipes start in issue order: the instruction is the head of its pipe's queue
        let (key, at) = self.pipe_of[seq as usize & (self.pipe_of.len() - 1)];
        let found = if key == seq {
            Some(((at >> 3) as usize, (at & 7) as usize))
        } else {
            // its entry was taken by a later instruction: the head of one pipe's queue
            self.cores.iter().enumerate().find_map(|(c, core)| {
                (0..NP)
                    .find(|&p| core.pending[p].front().is_some_and(|pd| pd.seq == seq))
                    .map(|p| (c, p))
            })
        };
        let Some((c, p)) = found else {
            debug_assert!(false, "race checker: start of an instruction never issued");
            return;
        };
        let core = &mut self.cores[c];
        let pd = core.pending[p]
            .pop_front()
            .expect("race checker: a pipe starts in issue order");
        debug_assert_eq!(pd.seq, seq);
        if p != S
            && pd.nacc == 0
            && matches!(
                pd.kind,
                Kind::Work | Kind::Barrier | Kind::SetFlag(_) | Kind::WaitFlag(_)
            )
        {
            core.start_in_place(p, &pd);
            return;
        }
        if p != S && pd.kind == Kind::Work {
            // Work with accesses: its clock is what the pipe knows (a later instruction of the
            // pipe was sent under this snapshot or a later one, so pruning's lower bound is the
            // same with it joined now), and it teaches the pipe nothing more
            if pd.sver > core.joined[p] {
                let snap = snap_of(&core.s_clock, core.s_ver, &core.snaps, pd.sver);
                core.known[p].join(snap);
                core.joined[p] = pd.sver;
            }
            let k = core.known[p].clone();
            self.oldest = None;
            for _ in 0..pd.nacc {
                let Some(a) = self.cores[c].accs[p].pop_front() else {
                    debug_assert!(false, "race checker: accesses not queued at issue");
                    break;
                };
                self.access(c, p, &pd, &k, a);
            }
            return;
        }
        self.start_general(c, p, pd);
    }

    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        match *event {
            CrossEvent::Signal { core, id, sets, .. } => {
                let Some(g) = self.signal(sets) else {
                    return;
                };
                let q = self.counters.entry((core, id)).or_default();
                let full = q.len() >= COUNTER_CAP;
                match q.back_mut() {
                    // too many outstanding: the newest entry stands for several increments
                    // and knows only what all of them know
                    Some((last, n)) if full => {
                        *last = min_of(last, &g);
                        *n += 1;
                    }
                    _ => q.push_back((g, 1)),
                }
            }
            CrossEvent::Take {
                core, id, wait_seq, ..
            } => {
                let q = self.counters.entry((core, id)).or_default();
                let Some((g, n)) = q.front_mut() else {
                    debug_assert!(false, "race checker: a take of an empty counter");
                    return;
                };
                let g = g.clone();
                *n -= 1;
                if *n == 0 {
                    q.pop_front();
                }
                debug_assert!(
                    self.take.is_none(),
                    "race checker: a take not followed by its wait"
                );
                self.take = Some((wait_seq, g));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{check, check_launch, Hazard, HazardKind};
    use crate::addresses::Addresses;
    use crate::config::Config;
    use crate::engine::Limits;
    use crate::expr::Expr;
    use crate::program::{CrossMode, OpKind, Program};
    use crate::types::Pipe;

    fn config() -> Config {
        let name = "ascend910b";
        crate::load_config(crate::builtin::builtin(name).unwrap(), name).expect("config loads")
    }

    /// A one-type (aiv) launch of `blocks` blocks of `body` after a load of gm `x` into UB `b`,
    /// with gm `y` (two rows of 64 f32) and UB `c` (no addresses: only gm is checked).
    fn launched(body: &str, blocks: u32) -> Program {
        let text = format!(
            "kernel: k\ncore: aiv\nsync: manual\nlaunch: {{ blocks: {blocks} }}\ngm:\n  x: {{ shape: [64], dtype: f32 }}\n  y: {{ shape: [2, 64], dtype: f32 }}\nbuffers:\n  b: {{ scope: ub, shape: [64], dtype: f32 }}\n  c: {{ scope: ub, shape: [64], dtype: f32 }}\nbody:\n  - load: {{ src: x, dst: b }}\n{body}"
        );
        crate::load::load_launched(&text, "k.yaml", &config(), &[], Some(blocks))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The loader may not parse `cross_set` / `cross_wait` yet: `barrier: mte3` stands for
    /// `cross_set: { mode: 0, pipe: mte3, id: 0 }` and `barrier: mte2` for
    /// `cross_wait: { pipe: mte2, id: 0 }`.
    fn with_cross(mut program: Program) -> Program {
        for op in &mut program.ops {
            match op.kind {
                OpKind::Barrier(crate::program::BarrierTarget::Pipe(Pipe::Mte3)) => {
                    op.kind = OpKind::CrossSet {
                        mode: CrossMode::All,
                        pipe: Pipe::Mte3,
                        id: Expr::Const(0),
                    };
                    op.pipe = Some(Pipe::Mte3);
                }
                OpKind::Barrier(crate::program::BarrierTarget::Pipe(Pipe::Mte2)) => {
                    op.kind = OpKind::CrossWait {
                        pipe: Pipe::Mte2,
                        id: Expr::Const(0),
                    };
                    op.pipe = Some(Pipe::Mte2);
                }
                _ => {}
            }
        }
        program
    }

    fn hazards(program: &Program) -> Vec<Hazard> {
        let run = check(program, &config(), &Addresses::default()).expect("runs");
        assert!(run.result.deadlock.is_none(), "{:?}", run.result.deadlock);
        assert_eq!(run.result.cores.len(), 2);
        run.hazards
    }

    #[test]
    fn blocks_writing_their_own_rows_do_not_race() {
        let p = launched("  - store: { src: b, dst: \"y[block]\" }\n", 2);
        assert_eq!(hazards(&p), vec![]);
    }

    #[test]
    fn blocks_writing_the_same_bytes_race_and_the_hazard_names_both_cores() {
        let p = launched("  - store: { src: b, dst: \"y[0]\" }\n", 2);
        let h = hazards(&p);
        assert_eq!(h.len(), 1, "{h:#?}");
        let h = &h[0];
        assert_eq!(h.kind, HazardKind::Waw);
        assert_eq!(h.memory_label, "GM y");
        assert_eq!((h.lo, h.hi), (0, 256));
        assert_eq!((h.first.core, h.second.core), (0, 1));
        assert_eq!(h.first.core_name.as_deref(), Some("block 0 aiv 0"));
        assert_eq!(h.second.core_name.as_deref(), Some("block 1 aiv 0"));
        assert_eq!(h.first.pipe, Pipe::Mte3);
        assert_eq!(
            h.to_string(),
            "WAW hazard in GM y [0x0000, 0x0100): block 0 aiv 0 MTE3 write (k.yaml:13:5 store { \
             src: b, dst: \"y[0]\" }) / block 1 aiv 0 MTE3 write (k.yaml:13:5 store { src: b, \
             dst: \"y[0]\" })"
        );
        assert_eq!((h.first.line, h.first.column), (13, 5));
        assert_eq!(h.first.path, "body[1]");
    }

    /// Two blocks each storing `[4, w]` f32 column blocks of gm `y` `[4, 64]`, block b's at
    /// column `b * step`.
    fn column_blocks(w: u32, step: u32) -> Program {
        let text = format!(
            "kernel: k\ncore: aiv\nsync: manual\nlaunch: {{ blocks: 2 }}\ngm:\n  x: {{ shape: [4, {w}], dtype: f32 }}\n  y: {{ shape: [4, 64], dtype: f32 }}\nbuffers:\n  b: {{ scope: ub, shape: [4, {w}], dtype: f32 }}\nbody:\n  - load: {{ src: x, dst: b }}\n  - store: {{ src: b, dst: \"y[:, block * {step} : block * {step} + {w}]\" }}\n"
        );
        crate::load::load_launched(&text, "k.yaml", &config(), &[], Some(2))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn blocks_writing_their_own_column_blocks_do_not_race() {
        // the byte hulls of y[:, 0:32] and y[:, 32:64] overlap; their bytes do not
        assert_eq!(hazards(&column_blocks(32, 32)), vec![]);
    }

    #[test]
    fn overlapping_column_blocks_race_on_the_bytes_both_write() {
        // y[:, 0:32] and y[:, 16:48]: columns 16..32 of every row, first those of row 0
        let h = hazards(&column_blocks(32, 16));
        assert_eq!(h.len(), 1, "{h:#?}");
        assert_eq!(h[0].kind, HazardKind::Waw);
        assert_eq!((h[0].lo, h[0].hi), (64, 128));
        assert_eq!(h[0].conservative, None);
        assert_eq!(
            h[0].to_string(),
            "WAW hazard in GM y [0x0040, 0x0080): block 0 aiv 0 MTE3 write (k.yaml:12:5 store { \
             src: b, dst: \"y[:, block * 16 : block * 16 + 32]\" }) / block 1 aiv 0 MTE3 write \
             (k.yaml:12:5 store { src: b, dst: \"y[:, block * 16 : block * 16 + 32]\" })"
        );
        // across two vector cores of one type: a mode-0 cross-core flag
        let store = "k.yaml:12:5 store { src: b, dst: \"y[:, block * 16 : block * 16 + 32]\" }";
        assert_eq!(
            h[0].fix.as_ref().map(|f| f.to_string()),
            Some(format!(
                "cross_set: {{ mode: 0, pipe: mte3, id: 0 }} after {store}; \
                 cross_wait: {{ pipe: mte3, id: 0 }} before {store}"
            ))
        );
    }

    #[test]
    fn a_cross_core_flag_orders_a_producer_before_its_consumer() {
        // each block writes its row, signals (mode 0: once both have), waits, reads the other's
        let ordered = with_cross(launched(
            "  - store: { src: b, dst: \"y[block]\" }\n  - barrier: mte3\n  - barrier: mte2\n  - load: { src: \"y[1 - block]\", dst: c }\n",
            2,
        ));
        assert!(matches!(ordered.ops[2].kind, OpKind::CrossSet { .. }));
        assert!(matches!(ordered.ops[3].kind, OpKind::CrossWait { .. }));
        assert_eq!(hazards(&ordered), vec![]);

        // without the wait the reads race with the other block's writes
        let unordered = with_cross(launched(
            "  - store: { src: b, dst: \"y[block]\" }\n  - barrier: mte3\n  - load: { src: \"y[1 - block]\", dst: c }\n",
            2,
        ));
        let h = hazards(&unordered);
        let mut pairs: Vec<(HazardKind, u32, &str, u32, &str)> = h
            .iter()
            .map(|h| {
                (
                    h.kind,
                    h.first.core,
                    h.first.name,
                    h.second.core,
                    h.second.name,
                )
            })
            .collect();
        // core 0's store of row 0 / core 1's load of it; core 0's load of row 1 / core 1's
        // store of it (across cores the lower core comes first); found in an order that
        // depends on the memory timing, so sorted
        pairs.sort_by_key(|p| p.0 != HazardKind::Raw);
        assert_eq!(
            pairs,
            vec![
                (HazardKind::Raw, 0, "store", 1, "load"),
                (HazardKind::War, 0, "load", 1, "store"),
            ],
            "{h:#?}"
        );
        assert!(h.iter().all(|h| h.memory_label == "GM y"));
    }

    #[test]
    fn the_wait_orders_only_what_the_set_drained() {
        // the set is on MTE2 here, so it does not drain the store on MTE3: still a race
        let mut p = launched(
            "  - store: { src: b, dst: \"y[block]\" }\n  - barrier: mte3\n  - barrier: mte2\n  - load: { src: \"y[1 - block]\", dst: c }\n",
            2,
        );
        p = with_cross(p);
        p.ops[2].kind = OpKind::CrossSet {
            mode: CrossMode::All,
            pipe: Pipe::Mte2,
            id: Expr::Const(0),
        };
        p.ops[2].pipe = Some(Pipe::Mte2);
        let h = hazards(&p);
        assert!(!h.is_empty());
        assert!(h.iter().all(|h| h.first.core != h.second.core));
    }

    /// A core with nothing issued, `events` flag ids per pipe pair.
    fn idle_core(events: usize) -> super::CoreState {
        super::CoreState {
            part: 0,
            issued: [0; super::NP],
            s_clock: super::Clock::ZERO,
            known: Default::default(),
            pending: Default::default(),
            s_ver: 0,
            joined: [0; super::NP],
            snaps: Default::default(),
            accs: Default::default(),
            stages: Default::default(),
            flags: vec![None; super::NP * super::NP * events],
        }
    }

    /// S's clock after `n` of its own ops.
    fn s_after(n: u64) -> super::Clock {
        let mut k = super::Clock::ZERO;
        k.advance(super::S, n);
        k
    }

    fn send(core: &mut super::CoreState, pipe: Pipe, seq: u64) {
        let p = pipe.index();
        core.pending[p].push_back(super::Pending {
            seq,
            idx: 0,
            sver: core.s_ver,
            kind: super::Kind::Work,
            op: 0,
            nacc: 0,
        });
    }

    #[test]
    fn an_instruction_sees_what_s_knew_when_it_was_sent_not_later() {
        let mut core = idle_core(1);
        let (mte3, v) = (Pipe::Mte3, Pipe::V);
        send(&mut core, mte3, 1); // sent under version 0: S knew nothing
        core.set_s_clock(s_after(1));
        core.set_s_clock(s_after(2)); // version 1 had no instruction: not kept
        send(&mut core, v, 2); // sent under version 2
        core.set_s_clock(s_after(3));
        let versions: Vec<u64> = core.snaps.iter().map(|s| s.0).collect();
        assert_eq!(versions, vec![0, 2]);
        assert_eq!(core.snap(0), &super::Clock::ZERO);
        assert_eq!(core.snap(2), &s_after(2));
        assert_eq!(core.snap(3), &s_after(3));
        // the pipe's lower bound is what S knew when it sent its oldest pending instruction
        assert_eq!(core.lower_bound(mte3.index()), super::Clock::ZERO);
        assert_eq!(core.lower_bound(v.index()), s_after(2));
        // the one-core bound pruning reads is the same, without the copies
        for p in 0..super::NP {
            assert_eq!(core.lower_bound_local(p), core.lower_bound(p).l, "pipe {p}");
        }
        // once MTE3's instruction started, version 0 goes at S's next change
        core.pending[mte3.index()].pop_front();
        core.set_s_clock(s_after(4));
        let versions: Vec<u64> = core.snaps.iter().map(|s| s.0).collect();
        assert_eq!(versions, vec![2]);
        assert_eq!(core.lower_bound(mte3.index()), s_after(4));
        // nothing pending: nothing kept
        core.pending[v.index()].pop_front();
        core.set_s_clock(s_after(5));
        assert!(core.snaps.is_empty());
    }

    #[test]
    fn a_long_launch_keeps_few_records() {
        // each block rewrites its row many times while a V wait issued before each store is
        // still pending when it starts (so its record cannot simply replace the last one): no
        // core ever learns of the other's writes, yet the records stay bounded
        let p = launched(
            "  - for: { var: i, to: 2000 }\n    body:\n      - wait_flag: { src: mte2, dst: v, id: 0 }\n      - store: { src: b, dst: \"y[block]\" }\n      - barrier: mte3\n      - load: { src: x, dst: c }\n      - set_flag: { src: mte2, dst: v, id: 0 }\n",
            2,
        );
        let config = config();
        let addresses = Addresses::default();
        let mut checker = super::RaceChecker::for_launch(&[(&p, &addresses)], &config);
        let result = crate::engine::run_launch(
            &[(&p, &addresses)],
            &config,
            Limits::default(),
            &mut checker,
        )
        .expect("runs");
        assert!(result.deadlock.is_none());
        assert_eq!(checker.hazards(), &[]);
        assert!(
            checker.peak_records() <= 2 * super::PRUNE_MIN,
            "peak {} records",
            checker.peak_records()
        );
        // check_launch is the same run
        let run = check_launch(&[(&p, &addresses)], &config, Limits::default()).expect("runs");
        assert_eq!(run.hazards, vec![]);
    }
}
