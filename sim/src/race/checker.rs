//! The race checker as an engine [`Observer`]: clocks at issue and start, accesses checked and
//! recorded at start (see the model in [`super`]).

use std::collections::{HashSet, VecDeque};

use super::clock::Clock;
use super::plan::{plans, Ctl, Plans};
use super::table::{Rec, Table, NO_ALT, PRUNE_MIN};
use super::{Hazard, HazardAccess, HazardKind, Memory};
use crate::addresses::Addresses;
use crate::config::Config;
use crate::engine::{Issue, Observer};
use crate::ids::OpId;
use crate::program::Program;
use crate::types::Pipe;

const NP: usize = Pipe::COUNT;
const S: usize = 0;
const M: usize = 2;

/// What an instruction does to the clocks when it starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
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
}

/// An instruction issued and not yet started.
#[derive(Clone, Copy, Debug)]
struct Pending {
    seq: u64,
    /// Its index on its pipe.
    idx: u64,
    /// What S knew when it sent it.
    snap: Clock,
    kind: Kind,
    op: u32,
    /// How many accesses it has in its pipe's access queue.
    nacc: u32,
}

/// An access resolved at issue (byte range and variables known), checked at start.
#[derive(Clone, Copy, Debug)]
struct Acc {
    table: u32,
    lo: u64,
    hi: u64,
    write: bool,
    alt: u64,
    vars: u32,
}

/// Fixed-width snapshots of loop-variable values, recycled through a free list.
struct VarSlab {
    width: usize,
    data: Vec<i64>,
    free: Vec<u32>,
}

impl VarSlab {
    #[inline]
    fn alloc(&mut self, vals: impl Iterator<Item = i64>) -> u32 {
        if self.width == 0 {
            return 0;
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = (self.data.len() / self.width) as u32;
                self.data.resize(self.data.len() + self.width, 0);
                id
            }
        };
        let at = id as usize * self.width;
        for (slot, v) in self.data[at..at + self.width].iter_mut().zip(vals) {
            *slot = v;
        }
        id
    }

    #[inline]
    fn free(&mut self, id: u32) {
        if self.width != 0 {
            self.free.push(id);
        }
    }

    fn get(&self, id: u32) -> &[i64] {
        let at = id as usize * self.width;
        &self.data[at..at + self.width]
    }
}

/// The race checker: an [`Observer`] that finds every pair of conflicting accesses that
/// happens-before does not order (see [`super`] for the model). Run it with
/// [`crate::engine::run_placed`] and the same [`Addresses`], or use [`super::check`].
pub struct RaceChecker<'p> {
    program: &'p Program,
    plans: Plans<'p>,
    offsets: Vec<Vec<u64>>,
    slot_bytes: Vec<u64>,
    events: usize,
    /// Instructions issued per pipe (the next index).
    issued: [u64; NP],
    /// What S knows; `s_clock[S]` counts S's own ops, all complete.
    s_clock: Clock,
    /// Per pipe: what is known complete before its next instruction starts (beyond what S
    /// knew when sending it).
    known: [Clock; NP],
    pending: [VecDeque<Pending>; NP],
    accs: [VecDeque<Acc>; NP],
    /// The start clocks of MTE1 parts whose M part has not started.
    stages: VecDeque<Clock>,
    /// The clock of the set_flag that set each flag, until its wait consumes it.
    flags: Vec<Option<Clock>>,
    tables: Vec<Table>,
    vars: VarSlab,
    hazards: Vec<Hazard>,
    seen: HashSet<(u32, u8, u32, u8)>,
    found: Vec<Rec>,
    records: usize,
    peak_records: usize,
}

impl<'p> RaceChecker<'p> {
    /// A checker for one run of `program` (loaded against `config`) with its buffers placed at
    /// `addresses`.
    pub fn new(program: &'p Program, config: &Config, addresses: &Addresses) -> Self {
        let plans = plans(program);
        let tables = (0..plans.table_pipes.len())
            .map(|t| {
                let mut table = Table::new();
                table.pipes = plans.table_pipes[t];
                table.written = plans.table_written[t];
                table
            })
            .collect();
        let events = (config.sync.event_ids as usize).max(1);
        let width = plans.depth;
        RaceChecker {
            program,
            plans,
            offsets: addresses.offsets.clone(),
            slot_bytes: addresses.slot_bytes.clone(),
            events,
            issued: [0; NP],
            s_clock: Clock::ZERO,
            known: [Clock::ZERO; NP],
            pending: Default::default(),
            accs: Default::default(),
            stages: VecDeque::new(),
            flags: vec![None; NP * NP * events],
            tables,
            vars: VarSlab {
                width,
                data: Vec::new(),
                free: Vec::new(),
            },
            hazards: Vec::new(),
            seen: HashSet::new(),
            found: Vec::new(),
            records: 0,
            peak_records: 0,
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

    /// Queues an access resolved at issue, with a snapshot of the op's loop variables.
    #[inline]
    fn push_acc(&mut self, p: usize, op: usize, vars: &[i64], mut acc: Acc) {
        acc.vars = self
            .vars
            .alloc(self.plans.ops[op].loop_vars.iter().map(|v| vars[v.index()]));
        self.accs[p].push_back(acc);
    }

    fn flag_index(&self, src: Pipe, dst: Pipe, id: Option<u32>) -> u32 {
        let id = (id.unwrap_or(0) as usize).min(self.events - 1);
        ((src.index() * NP + dst.index()) * self.events + id) as u32
    }

    /// A lower bound on the clock of every instruction that has not started on any pipe in
    /// `mask`: each pipe's own knowledge joined with what S knew when it sent the oldest one.
    fn floor(&self, mask: u8) -> Clock {
        let mut floor = Clock([u64::MAX; NP]);
        for p in 0..NP {
            if mask & (1 << p) == 0 {
                continue;
            }
            let f = if p == S {
                self.s_clock
            } else {
                let mut f = self.known[p];
                match self.pending[p].front() {
                    Some(pd) => f.join(&pd.snap),
                    None => f.join(&self.s_clock),
                }
                f
            };
            floor.meet(&f);
        }
        floor
    }

    /// The smallest sequence number issued and not started.
    fn oldest_pending(&self) -> u64 {
        self.pending
            .iter()
            .filter_map(|q| q.front().map(|p| p.seq))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Drops the records of table `t` that every pipe able to access it is known to have
    /// passed.
    fn prune(&mut self, t: usize) {
        let floor = self.floor(self.tables[t].pipes);
        let vars = &mut self.vars;
        let mut dropped = 0;
        self.tables[t].retain(
            |r| !ordered(r, &floor),
            |r| {
                vars.free(r.vars);
                dropped += 1;
            },
        );
        self.records -= dropped;
        let table = &mut self.tables[t];
        table.prune_at = (2 * table.len()).max(PRUNE_MIN);
    }

    /// Checks one access of the instruction `(pipe, pd)` started with clock `k` against the
    /// table, records hazards, and records the access.
    fn access(&mut self, pipe: usize, pd: &Pending, k: &Clock, a: Acc) {
        let t = a.table as usize;
        let table = &self.tables[t];
        let (lo_i, hi_i) = table.candidates(a.lo, a.hi);
        self.found.clear();
        // the one record this access may replace (same op, pipe and direction, inside it)
        let mut subsumed: Option<usize> = None;
        let mut more_subsumed = false;
        for i in lo_i..hi_i {
            let r = table.get(i);
            if !r.overlaps(a.lo, a.hi) {
                continue;
            }
            if r.op == pd.op
                && r.pipe as usize == pipe
                && r.write == a.write
                && r.lo >= a.lo
                && r.hi <= a.hi
            {
                if subsumed.is_none() {
                    subsumed = Some(i);
                } else {
                    more_subsumed = true;
                }
            }
            if r.seq == pd.seq || !(r.write || a.write) || ordered(r, k) {
                continue;
            }
            self.found.push(*r);
        }
        if !self.found.is_empty() {
            self.report(pipe, pd, &a);
        }
        let rec = Rec {
            lo: a.lo,
            hi: a.hi,
            seq: pd.seq,
            idx: pd.idx,
            alt: a.alt,
            op: pd.op,
            pipe: pipe as u8,
            write: a.write,
            vars: a.vars,
        };
        // A later access of the same op, pipe and direction covering an older one reports
        // every hazard the older one would (pipe knowledge is a prefix), in the same program
        // order as long as nothing issued before it is still waiting to start.
        if let Some(i) = subsumed {
            if !more_subsumed && self.tables[t].get(i).lo == a.lo && self.oldest_pending() > pd.seq
            {
                let old = self.tables[t].get(i).vars;
                self.vars.free(old);
                self.tables[t].replace(i, rec);
                return;
            }
        }
        self.tables[t].insert(rec);
        self.records += 1;
        self.peak_records = self.peak_records.max(self.records);
        if self.tables[t].len() >= self.tables[t].prune_at {
            self.prune(t);
        }
    }

    /// Records the hazards between access `a` and the records in `found`, once per op pair,
    /// the earliest record first.
    #[cold]
    fn report(&mut self, pipe: usize, pd: &Pending, a: &Acc) {
        let mut found = std::mem::take(&mut self.found);
        found.sort_by_key(|r| (r.seq, r.write, r.lo));
        for r in &found {
            let other = HazardSide {
                seq: r.seq,
                op: r.op,
                pipe: r.pipe as usize,
                write: r.write,
                vars: r.vars,
            };
            let this = HazardSide {
                seq: pd.seq,
                op: pd.op,
                pipe,
                write: a.write,
                vars: a.vars,
            };
            let (first, second) = if other.seq < this.seq {
                (other, this)
            } else {
                (this, other)
            };
            let key = (first.op, first.pipe as u8, second.op, second.pipe as u8);
            if !self.seen.insert(key) {
                continue;
            }
            let kind = match (first.write, second.write) {
                (true, false) => HazardKind::Raw,
                (false, true) => HazardKind::War,
                _ => HazardKind::Waw,
            };
            let memory = Memory::from_index(a.table as usize);
            self.hazards.push(Hazard {
                kind,
                memory,
                memory_label: memory.label(self.program),
                lo: r.lo.max(a.lo),
                hi: r.hi.min(a.hi),
                first: self.side(&first),
                second: self.side(&second),
            });
        }
        found.clear();
        self.found = found;
    }

    fn side(&self, s: &HazardSide) -> HazardAccess {
        let program = self.program;
        let id = OpId(s.op);
        let op = program.op(id);
        let vars = self.vars.get(s.vars);
        HazardAccess {
            seq: s.seq,
            op: id,
            pipe: Pipe::ALL[s.pipe],
            write: s.write,
            path: op.path.clone(),
            name: op.kind.name(),
            vars: self.plans.ops[id.index()]
                .loop_vars
                .iter()
                .zip(vars)
                .map(|(v, &x)| (program.var_name(*v), x))
                .filter(|(n, _)| !n.is_empty())
                .collect(),
        }
    }
}

struct HazardSide {
    seq: u64,
    op: u32,
    pipe: usize,
    write: bool,
    vars: u32,
}

/// Whether the access `r` is known complete under clock `k` (it happens before).
#[inline(always)]
fn ordered(r: &Rec, k: &Clock) -> bool {
    k.knows(r.pipe as usize, r.idx) || (r.alt != NO_ALT && k.knows(M, r.alt))
}

impl Observer for RaceChecker<'_> {
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let p = issue.pipe.index();
        let idx = self.issued[p];
        self.issued[p] += 1;
        let op = issue.op.index();
        let plan = &self.plans.ops[op];
        let kind = match plan.ctl {
            Ctl::Work => Kind::Work,
            Ctl::Barrier => Kind::Barrier,
            Ctl::BarrierAll => Kind::BarrierAll,
            Ctl::SetFlag { src, dst } => Kind::SetFlag(self.flag_index(src, dst, issue.flag_id)),
            Ctl::WaitFlag { src, dst } => Kind::WaitFlag(self.flag_index(src, dst, issue.flag_id)),
            Ctl::MmadL1 if issue.pipe == Pipe::M => Kind::MacroM,
            Ctl::MmadL1 => Kind::Stage,
        };
        // S sends an mmad_l1's M part right after its MTE1 part: it is M's next instruction
        let alt = if kind == Kind::Stage {
            self.issued[M]
        } else {
            NO_ALT
        };
        let mut nacc = 0;
        for ai in plan.lo..plan.hi {
            let acc = &self.plans.accs[ai as usize];
            let table = acc.table as usize;
            if !self.tables[table].written {
                continue;
            }
            // an mmad_l1's MTE1 part reads a and b, its M part the rest
            if (kind == Kind::Stage || kind == Kind::MacroM) && acc.stage != (kind == Kind::Stage) {
                continue;
            }
            if let Some(init) = acc.read_if_zero {
                if init.eval(issue.vars).unwrap_or(0) != 0 {
                    continue;
                }
            }
            let Some((elo, ehi)) = acc.elems.eval(issue.vars) else {
                continue;
            };
            let (blo, bhi) = ((elo * acc.bits) / 8, (ehi * acc.bits).div_ceil(8));
            let (write, k, nroots) = (acc.write, acc.k, acc.roots.len());
            let mut acc = Acc {
                table: table as u32,
                lo: blo,
                hi: bhi,
                write,
                alt,
                vars: 0,
            };
            if nroots == 0 {
                self.push_acc(p, op, issue.vars, acc);
                nacc += 1;
            } else {
                let slot = issue.slots.get(k).copied().unwrap_or(0) as usize;
                // a `select` may be any of its buffers: check all (conservative)
                for ri in 0..nroots {
                    let b = self.plans.accs[ai as usize].roots[ri].index();
                    let Some(&base) = self.offsets.get(b).and_then(|o| o.get(slot)) else {
                        continue; // not placed
                    };
                    debug_assert!(
                        self.slot_bytes.get(b).is_none_or(|&s| bhi <= s),
                        "an operand of {} ends past its slot",
                        self.program.op(issue.op).path
                    );
                    acc.lo = base + blo;
                    acc.hi = base + bhi;
                    self.push_acc(p, op, issue.vars, acc);
                    nacc += 1;
                }
            }
        }
        // S's ops are complete before S sends anything after them: `s_clock[S]` counts them
        self.pending[p].push_back(Pending {
            seq: issue.seq,
            idx,
            snap: self.s_clock,
            kind,
            op: issue.op.0,
            nacc,
        });
    }

    fn on_start(&mut self, seq: u64, _start: u64, _complete: u64) {
        // pipes start in issue order: the instruction is the head of its pipe's queue
        let Some(p) = (0..NP).find(|&p| self.pending[p].front().is_some_and(|pd| pd.seq == seq))
        else {
            debug_assert!(false, "race checker: start of an instruction never issued");
            return;
        };
        let pd = self.pending[p].pop_front().expect("found above");
        let mut k = if p == S { self.s_clock } else { self.known[p] };
        k.join(&pd.snap);
        if pd.kind == Kind::MacroM {
            // the M part starts after its MTE1 part has completed
            let stage = self
                .stages
                .pop_front()
                .expect("race checker: an mmad_l1 M part starts after its MTE1 part");
            k.join(&stage);
        }
        for _ in 0..pd.nacc {
            let a = self.accs[p].pop_front().expect("accesses queued at issue");
            self.access(p, &pd, &k, a);
        }
        // Everything known before an instruction starts is known before every later
        // instruction of its pipe starts (a pipe starts in order).
        match pd.kind {
            Kind::Work | Kind::MacroM => {}
            Kind::Stage => self.stages.push_back(k),
            Kind::Barrier => k.advance(p, pd.idx),
            Kind::BarrierAll => {
                // every instruction issued so far has completed
                for q in 0..NP {
                    k.advance(q, self.issued[q]);
                }
            }
            Kind::SetFlag(f) => {
                // a set_flag drains its pipe first: a barrier that also tells the waiter
                k.advance(p, pd.idx);
                let flag = &mut self.flags[f as usize];
                // a second set before the wait does not count (engine: double set)
                if flag.is_none() {
                    *flag = Some(k);
                }
            }
            Kind::WaitFlag(f) => match self.flags[f as usize].take() {
                Some(set) => k.join(&set),
                None => debug_assert!(false, "race checker: a wait started before its set"),
            },
        }
        if p == S {
            // S's ops are sequential: this one is complete before S does anything else
            k.advance(S, pd.idx + 1);
            self.s_clock = k;
        } else {
            self.known[p] = k;
        }
    }
}
