//! The critical path of a run (`run --critical-path`, docs/critical-path.md): from the cycle
//! the run ends, back to cycle 0, through what each step waited for.
//!
//! [`Critical`] is an [`Observer`]: while the engine runs it keeps one compact record per
//! dynamic instruction (dense, indexed by the engine's sequence number) and the scalar unit's
//! spans per core; [`Critical::finish`] then walks back. Each step of the walk explains the
//! start of one instruction by the one constraint that was binding there (docs/timing.md):
//!
//! - **pipe order**: its pipe was free only when the previous instruction's work ended;
//! - **its condition**: a `wait_flag`'s flag (the `set_flag` that set it, + `flag_latency`), a
//!   `cross_wait`'s increment (the `cross_set`s that made it, + `cross_core.latency`), a
//!   `set_flag` / `barrier` / `cross_set`'s drain (the pipe's latest completion), S's
//!   `barrier: all` (the core's latest completion);
//! - **its queue join**: S sent it `issue_cycles` earlier; S's own chain is then walked back
//!   through S's spans: S's previous action, or a `queue_full` wait ended by a head starting on
//!   that pipe (the walk goes on from that start).
//!
//! On a tie the pipe order wins, then the condition, then the join: the path stays on the
//! pipe that was busy, and a wait that cost nothing is not named. Every step adds one
//! segment `[from, to)` ending where the previous one began, so the segments tile
//! `[0, total]`: their cycles add up to the run's total (tested, and checked by
//! [`CriticalPath::tiles`]).
//!
//! Memory: 72 bytes per dynamic instruction (its 64-byte record, and its place among its core's sends)
//! and 32 per span of S but its sends (a loop, a branch, a stall, S's own op),
//! both bounded by the run's `max_instructions`; nothing per cycle.

mod pages;
#[cfg(test)]
mod tests;

use pages::Pages;

use std::collections::BTreeMap;
use std::fmt;

use crate::config::Config;
use crate::engine::{Activity, CrossEvent, Issue, Observer, Release, RunResult, Span, Stall};
use crate::ids::OpId;
use crate::program::{BarrierTarget, OpKind, Program};
use crate::types::{Pipe, Space};

/// No instruction / no time.
const NONE: u64 = u64::MAX;

/// What an op's start can wait for besides its pipe and its join (its class, per static op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Plain,
    /// `set_flag`, `barrier: P`, `cross_set` on a pipe: the pipe's latest completion.
    Drain,
    /// S's `barrier: all`: the core's latest completion.
    BarrierAll,
    WaitFlag,
    CrossWait,
    /// an `mmad_l1` part: its chunks wait for each other's staging.
    Macro,
}

/// One dynamic instruction: 64 bytes (a test checks).
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// The cycle S sent it (or, for S's own ops, executed it).
    issue: u64,
    /// Its first work (an `mmad_l1` part: its first chunk's).
    start: u64,
    /// The end of its (last chunk's) work.
    work_end: u64,
    complete: u64,
    /// The previous instruction of its core and pipe.
    prev: u64,
    /// A `wait_flag`: the `set_flag` it consumed; a `cross_wait`: the signal it took (an index
    /// into `signals`); a drain or `barrier: all`: the instruction with the latest completion
    /// when it started; an `mmad_l1`'s M part: its MTE1 part; its MTE1 part: the cycle its
    /// first chunk's work ended.
    link: u64,
    core: u32,
    op: u32,
    /// An `mmad_l1` part's work (its chunks'), the rest of its segment being waits between
    /// chunks; saturates (then all of it counts as work). A gm move under a `memory` config
    /// (`alone`): its work alone on the chip ([`Observer::on_bandwidth`]).
    busy: u32,
    pipe: u8,
    /// Whether `busy` is a gm move's work alone.
    alone: bool,
}

/// A span of S (a loop, a branch, S's own work, a stall; its sends are the instructions'
/// records): 32 bytes.
#[derive(Clone, Copy, Debug)]
struct SSpan {
    from: u64,
    to: u64,
    /// The instruction (`seq`), or for a loop or branch the op's id.
    key: u64,
    what: SWhat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SWhat {
    /// loop, branch: `key` is an op id
    Control,
    /// S's own work (`scalar`, `sload`, ...)
    Work,
    Stall(Stall),
}

/// A cross-core increment: when it arrived and which `cross_set`s made it.
#[derive(Clone, Copy, Debug)]
struct Signal {
    cycle: u64,
    sets: (u32, u32),
}

/// Why a segment of the path is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// A pipe's instruction doing its work (an `mmad_l1` part: its chunks' work; a gm move
    /// under a `memory` config: what it would take alone on the chip).
    Work,
    /// A gm move under a `memory` config waiting for its share of HBM and the L2's rate while
    /// other moves hold them: its work span beyond its work alone.
    Bandwidth,
    /// S's own cycles: loops, branches, `scalar`, `sload`, `sstore`.
    Scalar,
    /// S sending the instruction (`issue_cycles`).
    Issue,
    /// An instruction's startup latency, from the end of its work to its completion, that the
    /// path waited for (the run's last completion, a drain, `barrier: all`).
    Startup,
    /// A flag's latency, from its `set_flag` to the `wait_flag` that took it.
    Flag,
    /// A cross-core flag's latency, from the `cross_set` to the `cross_wait` that took it.
    Cross,
    /// An `mmad_l1` part's waits between its chunks, for the other part's chunks (the part's
    /// segment beyond its chunks' work; the wait before its first chunk is walked into MTE1).
    Staging,
    /// A wait the walk could not explain by the rules (an engine rule it does not know);
    /// tests require none.
    Unexplained,
}

impl Cause {
    /// Every cause, in report order.
    pub const ALL: [Cause; 9] = [
        Cause::Work,
        Cause::Bandwidth,
        Cause::Scalar,
        Cause::Issue,
        Cause::Startup,
        Cause::Flag,
        Cause::Cross,
        Cause::Staging,
        Cause::Unexplained,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Work => "work",
            Cause::Bandwidth => "bandwidth",
            Cause::Scalar => "scalar",
            Cause::Issue => "issue",
            Cause::Startup => "startup",
            Cause::Flag => "flag",
            Cause::Cross => "cross",
            Cause::Staging => "staging",
            Cause::Unexplained => "unexplained",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a waiter on the path waited for while the path ran elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Wait {
    /// A `wait_flag` (on its pipe or S) for its flag.
    Flag,
    /// A `cross_wait` for its increment.
    Cross,
    /// A `set_flag`, `barrier` or `cross_set` for its pipe to drain.
    Drain,
    /// S's `barrier: all`.
    BarrierAll,
    /// S, to send this op to a full queue of this pipe.
    QueueFull(Pipe),
    /// An `mmad_l1`'s M part, for its first chunk's copies on MTE1.
    Staging,
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Flag => f.write_str("wait_flag"),
            Wait::Cross => f.write_str("cross_wait"),
            Wait::Drain => f.write_str("drain"),
            Wait::BarrierAll => f.write_str("barrier_all"),
            Wait::QueueFull(p) => write!(f, "queue_full {p}"),
            Wait::Staging => f.write_str("mmad_l1 staging"),
        }
    }
}

/// One segment of the path: `[from, to)` on `pipe` of `core`, spent on `cause` for `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub from: u64,
    pub to: u64,
    pub core: u32,
    pub pipe: Pipe,
    pub cause: Cause,
    /// The op (of the part `core` runs); `None` for a segment no op explains.
    pub op: Option<OpId>,
}

/// A static op's share of the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpShare {
    /// The kernel part whose op it is.
    pub part: u32,
    pub op: OpId,
    /// The path's cycles spent on it, by cause (nonzero, in [`Cause::ALL`] order).
    pub causes: Vec<(Cause, u64)>,
    pub cycles: u64,
}

/// A static op's waits on the path: the cycles its dynamic instances waited (from when their
/// pipe and queue were ready to their start) while the path ran through what they waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitShare {
    pub part: u32,
    pub op: OpId,
    pub wait: Wait,
    pub cycles: u64,
    /// How many of its dynamic instances the path went through.
    pub count: u64,
}

/// The critical path of a run, added up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriticalPath {
    /// The cycle the path ends at: the run's total.
    pub total: u64,
    /// The path's cycles per pipe (every pipe, [`Pipe::ALL`] order).
    pub by_pipe: [u64; 7],
    /// The path's cycles per core of the launch (an index into [`RunResult::cores`]).
    pub by_core: Vec<u64>,
    /// The path's cycles per cause ([`Cause::ALL`] order).
    pub by_cause: [u64; 9],
    /// Every op with cycles on the path, most first (ties: part, then program order).
    pub ops: Vec<OpShare>,
    /// Every op that waited on the path, longest first (ties: part, program order, wait).
    pub waits: Vec<WaitShare>,
    /// Segments the walk made (steps of zero cycles included).
    pub steps: u64,
    /// The segments, latest first, when asked for ([`Critical::keep_segments`]).
    pub segments: Option<Vec<Segment>>,
}

impl CriticalPath {
    /// Whether the path's cycles add up to its total, by pipe, core and cause.
    pub fn tiles(&self) -> bool {
        let t = self.total;
        self.by_pipe.iter().sum::<u64>() == t
            && self.by_core.iter().sum::<u64>() == t
            && self.by_cause.iter().sum::<u64>() == t
    }

    /// The pipe with the most cycles on the path (ties: pipe order).
    pub fn top_pipe(&self) -> Option<(Pipe, u64)> {
        let mut best: Option<(Pipe, u64)> = None;
        for p in Pipe::ALL {
            let c = self.by_pipe[p.index()];
            if c > 0 && best.is_none_or(|(_, b)| c > b) {
                best = Some((p, c));
            }
        }
        best
    }

    /// The cycles of `cause` on the path.
    pub fn cause(&self, cause: Cause) -> u64 {
        self.by_cause[Cause::ALL.iter().position(|&c| c == cause).unwrap_or(0)]
    }
}

/// Watches a run and, at its end, walks its critical path ([`Critical::finish`]).
#[derive(Clone, Debug)]
pub struct Critical {
    /// The part each core runs.
    part_of: Vec<u32>,
    /// Per part, the index of its first op in `class`.
    base: Vec<usize>,
    class: Vec<Class>,
    issue_cycles: u64,
    flag_latency: u64,
    cross_latency: u64,
    queue_depth: u64,
    /// The larger startup of the L1 -> L0A and L1 -> L0B paths: an `mmad_l1` chunk's copies
    /// complete that long after their work.
    stage_startup: u64,
    /// Per core, the MTE1 part of the `mmad_l1` sent last.
    last_macro: Vec<u64>,
    recs: Pages<Rec>,
    /// Per core, S's spans in time order, but its sends.
    s_spans: Vec<Vec<SSpan>>,
    /// Per core, the instructions S sent to a pipe, in order (their sends are S's spans
    /// `[issue, issue + issue_cycles)`).
    sent: Vec<Vec<u64>>,
    /// Per core and pipe, the last instruction sent.
    last_on_pipe: Vec<[u64; 7]>,
    /// Per core and pipe, the started instruction with the latest completion.
    latest_on_pipe: Vec<[u64; 7]>,
    /// Per core, the started instruction with the latest completion.
    latest_on_core: Vec<u64>,
    signals: Vec<Signal>,
    signal_sets: Vec<u64>,
    /// Per core and cross-core id, the increments not yet taken, oldest first.
    pending: BTreeMap<(u32, u32), std::collections::VecDeque<u32>>,
    /// A link observed before its instruction's issue (S's own wait and take are observed
    /// just before S's instruction is numbered): (seq, link).
    early: Option<(u64, u64)>,
    keep: bool,
    /// The most records (instructions and S's spans) it keeps before it gives up
    /// ([`Critical::with_budget`]); `u64::MAX`: no budget.
    budget: u64,
    /// Records kept so far.
    kept: u64,
    /// Whether it gave up (the run went past the budget): it then keeps nothing more.
    gave_up: bool,
}

impl Critical {
    /// A walker for the launch of `parts` (one program, or a mixed kernel's `aic` and `aiv`
    /// parts, in order), its cores as [`crate::launch::slots`] numbers them.
    pub fn for_launch(parts: &[&Program], config: &Config) -> Critical {
        let part_of: Vec<u32> = crate::launch::slots(parts, config)
            .iter()
            .map(|s| s.part)
            .collect();
        let mut base = Vec::with_capacity(parts.len());
        let mut class = Vec::new();
        for p in parts {
            base.push(class.len());
            class.extend(p.ops.iter().map(|op| match &op.kind {
                OpKind::SetFlag { .. } | OpKind::CrossSet { .. } => Class::Drain,
                OpKind::Barrier(BarrierTarget::Pipe(_)) => Class::Drain,
                OpKind::Barrier(BarrierTarget::All) => Class::BarrierAll,
                OpKind::WaitFlag { .. } => Class::WaitFlag,
                OpKind::CrossWait { .. } => Class::CrossWait,
                OpKind::MmadL1(_) => Class::Macro,
                _ => Class::Plain,
            }));
        }
        let cores = part_of.len().max(1);
        Critical {
            part_of,
            base,
            class,
            issue_cycles: u64::from(config.scalar.issue_cycles),
            flag_latency: u64::from(config.sync.flag_latency),
            cross_latency: config.cross_core.map_or(0, |c| u64::from(c.latency)),
            queue_depth: u64::from(config.queue_depth),
            stage_startup: [Space::L0a, Space::L0b]
                .iter()
                .filter_map(|&to| config.path(Space::L1, to))
                .map(|p| u64::from(p.startup))
                .max()
                .unwrap_or(0),
            last_macro: vec![NONE; cores],
            recs: Pages::new(Rec {
                issue: 0,
                start: NONE,
                work_end: 0,
                complete: NONE,
                prev: NONE,
                link: NONE,
                core: u32::MAX,
                op: 0,
                busy: 0,
                pipe: 0,
                alone: false,
            }),
            s_spans: vec![Vec::new(); cores],
            sent: vec![Vec::new(); cores],
            last_on_pipe: vec![[NONE; 7]; cores],
            latest_on_pipe: vec![[NONE; 7]; cores],
            latest_on_core: vec![NONE; cores],
            signals: Vec::new(),
            signal_sets: Vec::new(),
            pending: BTreeMap::new(),
            early: None,
            keep: false,
            budget: u64::MAX,
            kept: 0,
            gave_up: false,
        }
    }

    /// A walker that keeps at most `records` records (dynamic instructions and S's spans,
    /// about 72 and 32 bytes each) and gives up past them: the default run's "paced by" line,
    /// whose memory must not grow with the run ([`Critical::finish`] then has no path).
    pub fn with_budget(mut self, records: u64) -> Critical {
        self.budget = records;
        self
    }

    /// Counts one more record; past the budget, frees what was kept and stops keeping.
    #[inline]
    fn spend(&mut self) -> bool {
        self.kept += 1;
        if self.kept > self.budget {
            self.gave_up = true;
            self.recs = Pages::new(self.recs.fill());
            self.s_spans = Vec::new();
            self.sent = Vec::new();
            self.signals = Vec::new();
            self.signal_sets = Vec::new();
            self.pending = BTreeMap::new();
            return false;
        }
        true
    }

    /// Keeps the path's segments in [`CriticalPath::segments`] (tests, small runs).
    pub fn keep_segments(mut self) -> Critical {
        self.keep = true;
        self
    }

    fn part(&self, core: u32) -> u32 {
        self.part_of.get(core as usize).copied().unwrap_or(0)
    }

    /// The dense index of `op` of the part core `core` runs.
    fn at(&self, core: u32, op: u32) -> usize {
        let part = self.part(core) as usize;
        self.base.get(part).copied().unwrap_or(0) + op as usize
    }

    fn class_of(&self, r: &Rec) -> Class {
        self.class
            .get(self.at(r.core, r.op))
            .copied()
            .unwrap_or(Class::Plain)
    }

    fn rec(&self, seq: u64) -> Option<&Rec> {
        usize::try_from(seq).ok().and_then(|i| self.recs.get(i))
    }

    fn rec_mut(&mut self, seq: u64) -> Option<&mut Rec> {
        usize::try_from(seq).ok().and_then(|i| self.recs.get_mut(i))
    }

    /// What instruction `seq` waited for: kept until it is issued if it is not yet.
    fn link(&mut self, seq: u64, link: u64) {
        match self.rec_mut(seq) {
            Some(r) => r.link = link,
            None => self.early = Some((seq, link)),
        }
    }

    fn spans_of(&mut self, core: u32) -> &mut Vec<SSpan> {
        let c = core as usize;
        if c >= self.s_spans.len() {
            self.s_spans.resize(c + 1, Vec::new());
            self.sent.resize(c + 1, Vec::new());
            self.last_on_pipe.resize(c + 1, [NONE; 7]);
            self.latest_on_pipe.resize(c + 1, [NONE; 7]);
            self.latest_on_core.resize(c + 1, NONE);
            self.last_macro.resize(c + 1, NONE);
        }
        &mut self.s_spans[c]
    }
}

impl Observer for Critical {
    #[inline]
    fn watches_slots(&self) -> bool {
        false
    }

    /// Every record is per core or per instruction, and a cross-core increment is taken after
    /// it is made in any order the engine runs the cores in: a launch's cores may run ahead.
    #[inline]
    fn ordered(&self) -> bool {
        false
    }

    #[inline]
    fn on_issue(&mut self, issue: &Issue<'_>) {
        if self.gave_up || !self.spend() {
            return;
        }
        let Ok(i) = usize::try_from(issue.seq) else {
            return;
        };
        self.spans_of(issue.core);
        let c = issue.core as usize;
        let p = issue.pipe.index();
        let prev = self.last_on_pipe[c][p];
        self.last_on_pipe[c][p] = issue.seq;
        if issue.pipe != Pipe::S {
            self.sent[c].push(issue.seq);
        }
        let mut link = match self.early.take() {
            Some((seq, link)) if seq == issue.seq => link,
            _ => NONE,
        };
        if self.class.get(self.at(issue.core, issue.op.0)) == Some(&Class::Macro) {
            match issue.pipe {
                Pipe::M => link = self.last_macro[c],
                _ => self.last_macro[c] = issue.seq,
            }
        }
        let rec = Rec {
            issue: issue.cycle,
            start: NONE,
            work_end: 0,
            complete: NONE,
            prev,
            link,
            core: issue.core,
            op: issue.op.0,
            busy: 0,
            pipe: p as u8,
            alone: false,
        };
        // sequence numbers are dense; a gap (never seen) is filled with empty records
        if i >= self.recs.len() {
            self.recs.resize(
                i,
                Rec {
                    core: u32::MAX,
                    ..rec
                },
            );
            self.recs.push(rec);
        } else if let Some(r) = self.recs.get_mut(i) {
            *r = rec;
        }
    }

    #[inline]
    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        if self.gave_up {
            return;
        }
        let Some(r) = self.rec(seq).copied() else {
            return;
        };
        let (c, p) = (r.core as usize, r.pipe as usize);
        let class = self.class_of(&r);
        let link = match class {
            Class::Drain if p != Pipe::S.index() => self.latest_on_pipe[c][p],
            Class::BarrierAll => self.latest_on_core[c],
            _ => r.link,
        };
        let later = |k: u64, recs: &Pages<Rec>| {
            k == NONE || recs.get(k as usize).is_none_or(|o| complete > o.complete)
        };
        if later(self.latest_on_pipe[c][p], &self.recs) {
            self.latest_on_pipe[c][p] = seq;
        }
        if later(self.latest_on_core[c], &self.recs) {
            self.latest_on_core[c] = seq;
        }
        if let Some(r) = self.rec_mut(seq) {
            r.start = r.start.min(start);
            r.work_end = r.work_end.max(start);
            r.complete = complete;
            r.link = link;
        }
    }

    #[inline]
    fn on_span(&mut self, span: &Span) {
        if self.gave_up {
            return;
        }
        let what = match span.what {
            Activity::Work => {
                if let Some(seq) = span.seq {
                    let macro_part = span.pipe != Pipe::S
                        && self.class.get(self.at(span.core, span.op.0)) == Some(&Class::Macro);
                    if let Some(r) = self.rec_mut(seq) {
                        r.start = r.start.min(span.from);
                        r.work_end = r.work_end.max(span.to);
                        if macro_part {
                            let len = u32::try_from(span.to - span.from).unwrap_or(u32::MAX);
                            r.busy = r.busy.saturating_add(len);
                            if span.pipe != Pipe::M && r.link == NONE {
                                r.link = span.to;
                            }
                        }
                    }
                }
                SWhat::Work
            }
            // a send is its instruction's record (`sent`)
            Activity::Issue => return,
            Activity::Loop | Activity::Branch => SWhat::Control,
            Activity::Stall(s) => SWhat::Stall(s),
        };
        if span.pipe != Pipe::S || !self.spend() {
            return;
        }
        let key = match (what, span.seq) {
            (SWhat::Control, _) | (_, None) => u64::from(span.op.0),
            (_, Some(s)) => s,
        };
        self.spans_of(span.core).push(SSpan {
            from: span.from,
            to: span.to,
            key,
            what,
        });
    }

    #[inline]
    fn watches_bandwidth(&self) -> bool {
        true
    }

    #[inline]
    fn on_bandwidth(&mut self, seq: u64, alone: u64) {
        if self.gave_up {
            return;
        }
        if let Some(r) = self.rec_mut(seq) {
            r.busy = u32::try_from(alone).unwrap_or(u32::MAX);
            r.alone = true;
        }
    }

    #[inline]
    fn on_release(&mut self, release: &Release) {
        if self.gave_up {
            return;
        }
        self.link(release.wait_seq, release.set_seq);
    }

    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        if self.gave_up {
            return;
        }
        match *event {
            CrossEvent::Signal {
                core,
                id,
                cycle,
                sets,
            } => {
                let from = self.signal_sets.len() as u32;
                self.signal_sets.extend_from_slice(sets);
                let k = self.signals.len() as u32;
                self.signals.push(Signal {
                    cycle,
                    sets: (from, self.signal_sets.len() as u32),
                });
                self.pending.entry((core, id)).or_default().push_back(k);
            }
            CrossEvent::Take {
                core, id, wait_seq, ..
            } => {
                let k = self
                    .pending
                    .get_mut(&(core, id))
                    .and_then(|q| q.pop_front());
                if let Some(k) = k {
                    self.link(wait_seq, u64::from(k));
                }
            }
        }
    }
}

/// Where the walk is.
#[derive(Clone, Copy, Debug)]
enum At {
    /// S of a core, at a cycle.
    S(u32, u64),
    /// An instruction's start.
    Start(u64),
    /// The end of an instruction's work.
    WorkEnd(u64),
    /// The end of the first chunk's work of an `mmad_l1`'s MTE1 part.
    ChunkEnd(u64),
}

/// The walk's running sums.
struct Sums {
    by_pipe: [u64; 7],
    by_core: Vec<u64>,
    by_cause: [u64; 9],
    /// (dense op index, cause) -> cycles
    ops: BTreeMap<(usize, Cause), u64>,
    /// (dense op index, wait) -> (cycles, count)
    waits: BTreeMap<(usize, Wait), (u64, u64)>,
    steps: u64,
    /// Where the next (earlier) segment must end.
    t: u64,
    segments: Option<Vec<Segment>>,
}

impl Critical {
    /// Walks the critical path of the run that gave `result`, back from its last cycle. The
    /// walk reads what this observer kept; a run stopped at a limit or deadlocked has a path
    /// up to its last cycle too (the instruction or S that ended last). `None` when it gave up
    /// ([`Critical::with_budget`]).
    pub fn finish(mut self, result: &RunResult) -> Option<CriticalPath> {
        if self.gave_up {
            return None;
        }
        let cores = self.s_spans.len().max(result.cores.len());
        self.spans_of(cores.saturating_sub(1) as u32);
        for v in &mut self.s_spans {
            // spans come in time order per core; sorted in case they ever do not
            if !v
                .windows(2)
                .all(|w| (w[0].to, w[0].from) <= (w[1].to, w[1].from))
            {
                v.sort_by_key(|s| (s.to, s.from));
            }
        }
        for r in self.recs.iter_mut() {
            if r.work_end < r.start || r.start == NONE {
                r.work_end = r.start;
            }
        }
        let total = result.total_cycles;
        let mut sums = Sums {
            by_pipe: [0; 7],
            by_core: vec![0; cores],
            by_cause: [0; 9],
            ops: BTreeMap::new(),
            waits: BTreeMap::new(),
            steps: 0,
            t: total,
            segments: self.keep.then(Vec::new),
        };
        // the end: the instruction that completed last (of a tie, the lowest core's first: the
        // order of sequence numbers across cores depends on how the engine interleaved them),
        // else the S that ended last (the lowest core)
        let last = self
            .recs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.complete != NONE && r.start != NONE && r.complete == total)
            .min_by_key(|(i, r)| (r.core, *i))
            .map(|(i, _)| i as u64);
        let mut at = match last {
            Some(seq) => {
                let r = self.recs[seq as usize];
                self.seg(
                    &mut sums,
                    r.work_end,
                    r.core,
                    r.pipe(),
                    Cause::Startup,
                    Some(r.op),
                );
                Some(At::WorkEnd(seq))
            }
            None => (0..cores as u32)
                .find(|&c| {
                    let span = self.s_spans[c as usize].last().map_or(0, |s| s.to);
                    let send = self.sent[c as usize]
                        .last()
                        .and_then(|&q| self.rec(q))
                        .map_or(0, |r| r.issue + self.issue_cycles);
                    span.max(send) == total
                })
                .map(|c| At::S(c, total)),
        };
        // every step either moves back in time or to an earlier instruction; the bound only
        // guards against an engine rule the walk does not know
        let budget = 4
            * (self.recs.len() as u64 + self.s_spans.iter().map(|v| v.len() as u64).sum::<u64>())
            + 16;
        while let Some(a) = at {
            if sums.t == 0 {
                break;
            }
            if sums.steps > budget {
                at = None;
                break;
            }
            at = self.step(a, &mut sums);
        }
        if sums.t > 0 {
            // nothing explains the rest: said, never hidden
            let core = match at {
                Some(At::S(c, _)) => c,
                _ => 0,
            };
            self.seg(&mut sums, 0, core, Pipe::S, Cause::Unexplained, None);
        }
        Some(self.sum_up(sums, total))
    }

    /// One step back from `at`; the next place, or `None` at cycle 0.
    fn step(&self, at: At, sums: &mut Sums) -> Option<At> {
        match at {
            At::WorkEnd(seq) => {
                let r = *self.rec(seq)?;
                let cause = if r.pipe() == Pipe::S {
                    Cause::Scalar
                } else {
                    Cause::Work
                };
                if r.alone {
                    // its work alone, then what it waited for its bandwidth share (the
                    // share slows it throughout: the split is by length, not by position)
                    let len = r.work_end - r.start;
                    let alone = u64::from(r.busy).min(len);
                    self.seg(
                        sums,
                        r.work_end - alone,
                        r.core,
                        r.pipe(),
                        cause,
                        Some(r.op),
                    );
                    self.seg(
                        sums,
                        r.start,
                        r.core,
                        r.pipe(),
                        Cause::Bandwidth,
                        Some(r.op),
                    );
                } else if self.class_of(&r) == Class::Macro && r.busy < u32::MAX {
                    // the part's chunks' work, then the waits between them (staging)
                    let len = r.work_end - r.start;
                    let busy = u64::from(r.busy).min(len);
                    self.seg(sums, r.work_end - busy, r.core, r.pipe(), cause, Some(r.op));
                    self.seg(sums, r.start, r.core, r.pipe(), Cause::Staging, Some(r.op));
                } else {
                    self.seg(sums, r.start, r.core, r.pipe(), cause, Some(r.op));
                }
                Some(At::Start(seq))
            }
            At::ChunkEnd(seq) => {
                let r = *self.rec(seq)?;
                self.seg(sums, r.start, r.core, r.pipe(), Cause::Work, Some(r.op));
                Some(At::Start(seq))
            }
            At::Start(seq) => {
                let r = *self.rec(seq)?;
                if r.pipe() == Pipe::S {
                    return Some(At::S(r.core, r.start));
                }
                self.explain_start(&r, sums)
            }
            At::S(core, t) => self.s_step(core, t, sums),
        }
    }

    /// Why instruction `seq` on a pipe started at its start.
    fn explain_start(&self, r: &Rec, sums: &mut Sums) -> Option<At> {
        let t = r.start;
        let prev = self.rec(r.prev).filter(|p| p.start != NONE);
        let free = prev.map_or(0, |p| p.work_end);
        let join = r.issue.saturating_add(self.issue_cycles);
        let ready = free.max(join);
        let class = self.class_of(r);
        // the condition: its time, what the segment before it is, and where the walk goes
        let cond: Option<(u64, u64, Cause, Option<u32>, At, Wait)> = match class {
            Class::WaitFlag => self.rec(r.link).filter(|s| s.start != NONE).map(|s| {
                (
                    s.start + self.flag_latency,
                    s.start,
                    Cause::Flag,
                    Some(r.op),
                    At::Start(r.link),
                    Wait::Flag,
                )
            }),
            Class::CrossWait => self.cross_cond(r.link).map(|(cycle, set)| {
                let s = self.recs[set as usize];
                (
                    cycle,
                    s.start,
                    Cause::Cross,
                    Some(r.op),
                    At::Start(set),
                    Wait::Cross,
                )
            }),
            // an mmad_l1's M part: its first chunk's copies (the MTE1 part's first chunk)
            Class::Macro if r.pipe() == Pipe::M => self
                .rec(r.link)
                .filter(|m| m.start != NONE && m.link != NONE)
                .map(|m| {
                    (
                        m.link + self.stage_startup,
                        m.link,
                        Cause::Startup,
                        Some(m.op),
                        At::ChunkEnd(r.link),
                        Wait::Staging,
                    )
                }),
            Class::Drain => self.rec(r.link).filter(|d| d.start != NONE).map(|d| {
                (
                    d.complete,
                    d.work_end,
                    Cause::Startup,
                    Some(d.op),
                    At::WorkEnd(r.link),
                    Wait::Drain,
                )
            }),
            _ => None,
        };
        if prev.is_some() && free == t {
            return Some(At::WorkEnd(r.prev));
        }
        if let Some((when, from, cause, op, next, wait)) = cond {
            if when == t && from <= t {
                self.waited(sums, r, wait, t - ready.min(t));
                self.cond_seg(sums, r, from, cause, op);
                return Some(next);
            }
        }
        if join == t {
            self.seg(sums, r.issue, r.core, Pipe::S, Cause::Issue, Some(r.op));
            return Some(At::S(r.core, r.issue));
        }
        // nothing the rules name ends exactly here: the gap from the latest of them is the
        // instruction's own wait, and the walk goes on from that one
        let cause = if class == Class::Macro {
            Cause::Staging
        } else {
            Cause::Unexplained
        };
        let latest = [
            prev.map(|_| (free, 0u8)),
            cond.filter(|c| c.0 < t && c.1 <= c.0).map(|c| (c.0, 1)),
            Some((join.min(t), 2)),
        ]
        .into_iter()
        .flatten()
        .filter(|(w, _)| *w <= t)
        .max_by_key(|&(w, k)| (w, std::cmp::Reverse(k)))?;
        self.seg(sums, latest.0, r.core, r.pipe(), cause, Some(r.op));
        match latest.1 {
            0 => Some(At::WorkEnd(r.prev)),
            1 => {
                let (_, from, cause, op, next, _) = cond?;
                self.cond_seg(sums, r, from, cause, op);
                Some(next)
            }
            _ => {
                self.seg(
                    sums,
                    r.issue.min(sums.t),
                    r.core,
                    Pipe::S,
                    Cause::Issue,
                    Some(r.op),
                );
                Some(At::S(r.core, sums.t))
            }
        }
    }

    /// A `cross_wait`'s increment (signal `k`): when it arrived and the `cross_set` that came
    /// last among those that made it (of a tie, the lowest core's), if its latency explains it.
    fn cross_cond(&self, k: u64) -> Option<(u64, u64)> {
        let sig = self.signals.get(usize::try_from(k).ok()?)?;
        let sets = self
            .signal_sets
            .get(sig.sets.0 as usize..sig.sets.1 as usize)?;
        let set = sets
            .iter()
            .copied()
            .filter(|&s| self.rec(s).is_some_and(|r| r.start != NONE))
            .max_by_key(|&s| {
                let r = &self.recs[s as usize];
                (r.start, std::cmp::Reverse((r.core, s)))
            })?;
        let start = self.recs[set as usize].start;
        (start + self.cross_latency == sig.cycle).then_some((sig.cycle, set))
    }

    /// One step back along S of `core` from cycle `t`.
    fn s_step(&self, core: u32, t: u64, sums: &mut Sums) -> Option<At> {
        let spans = self.s_spans.get(core as usize)?;
        // the last span that ends by t and is not empty
        let mut i = spans.partition_point(|s| s.to <= t);
        while i > 0 && spans[i - 1].from == spans[i - 1].to {
            i -= 1;
        }
        let span = i.checked_sub(1).map(|k| spans[k]);
        // the last send that ends by t (sends of no cycles are no span)
        let sent = self.sent.get(core as usize)?;
        let join = |seq: u64| self.rec(seq).map_or(0, |r| r.issue) + self.issue_cycles;
        let k = sent.partition_point(|&q| join(q) <= t);
        let send = k
            .checked_sub(1)
            .map(|k| sent[k])
            .filter(|_| self.issue_cycles > 0);
        let s = match (span, send) {
            (None, None) => {
                self.seg(sums, 0, core, Pipe::S, Cause::Unexplained, None);
                return None;
            }
            // S does one thing at a time: of a send and a span, the later one ends here
            (Some(s), Some(q)) if s.to > join(q) => s,
            (_, Some(q)) => {
                let r = *self.rec(q)?;
                let (from, to) = (r.issue, join(q));
                if to < t {
                    self.seg(sums, to, core, Pipe::S, Cause::Unexplained, None);
                }
                self.seg(sums, from, core, Pipe::S, Cause::Issue, Some(r.op));
                return Some(At::S(core, from));
            }
            (Some(s), None) => s,
        };
        if s.to < t {
            // S did nothing here that it reported: not a rule of the timing model
            self.seg(sums, s.to, core, Pipe::S, Cause::Unexplained, None);
        }
        let t = sums.t;
        match s.what {
            SWhat::Control => {
                self.seg(
                    sums,
                    s.from,
                    core,
                    Pipe::S,
                    Cause::Scalar,
                    Some(s.key as u32),
                );
                Some(At::S(core, s.from))
            }
            SWhat::Work => {
                let op = self.rec(s.key).map(|r| r.op);
                self.seg(sums, s.from, core, Pipe::S, Cause::Scalar, op);
                Some(At::S(core, s.from))
            }
            SWhat::Stall(stall) => {
                let waiter = self.rec(s.key).copied();
                let next = waiter.and_then(|w| self.s_wait(core, t, &s, stall, &w, sums));
                if next.is_some() {
                    return next;
                }
                let cause = Cause::Unexplained;
                self.seg(sums, s.from, core, Pipe::S, cause, waiter.map(|w| w.op));
                Some(At::S(core, s.from))
            }
        }
    }

    /// S waited in `s` (ending at `t`) for `stall`, with `w` its next action: where the walk
    /// goes, if the rules explain the wait's end.
    fn s_wait(
        &self,
        core: u32,
        t: u64,
        s: &SSpan,
        stall: Stall,
        w: &Rec,
        sums: &mut Sums,
    ) -> Option<At> {
        let waited = t - s.from;
        match stall {
            Stall::QueueFull(pipe) => {
                // the head of `pipe` that started at t and freed the slot: among the
                // queue_depth instructions sent to it before w, the oldest that started at t
                let mut k = w.prev;
                let mut found = None;
                for _ in 0..=self.queue_depth {
                    let Some(r) = self.rec(k) else { break };
                    if r.start == t {
                        found = Some(k);
                    } else if r.start < t {
                        break;
                    }
                    k = r.prev;
                }
                if let Some(head) = found {
                    self.waited(sums, w, Wait::QueueFull(pipe), waited);
                    return Some(At::Start(head));
                }
                // an mmad_l1 part holds its queue slot until its last chunk starts: the part
                // under way at t, its chunks up to t its work
                let mut k = w.prev;
                for _ in 0..=self.queue_depth {
                    let r = *self.rec(k)?;
                    if self.class_of(&r) == Class::Macro && r.start < t && t <= r.work_end {
                        self.waited(sums, w, Wait::QueueFull(pipe), waited);
                        self.seg(sums, r.start, r.core, r.pipe(), Cause::Work, Some(r.op));
                        return Some(At::Start(k));
                    }
                    k = r.prev;
                }
                None
            }
            Stall::WaitFlag { .. } => {
                let set = self.rec(w.link).filter(|r| r.start != NONE)?;
                (set.start + self.flag_latency == t).then_some(())?;
                self.waited(sums, w, Wait::Flag, waited);
                self.seg(sums, set.start, core, Pipe::S, Cause::Flag, Some(w.op));
                Some(At::Start(w.link))
            }
            Stall::CrossWait { .. } => {
                let (cycle, set) = self.cross_cond(w.link)?;
                (cycle == t).then_some(())?;
                self.waited(sums, w, Wait::Cross, waited);
                let from = self.recs[set as usize].start;
                self.seg(sums, from, core, Pipe::S, Cause::Cross, Some(w.op));
                Some(At::Start(set))
            }
            Stall::BarrierAll => {
                let d = *self.rec(w.link).filter(|r| r.start != NONE)?;
                (d.complete == t).then_some(())?;
                self.waited(sums, w, Wait::BarrierAll, waited);
                self.seg(
                    sums,
                    d.work_end,
                    d.core,
                    d.pipe(),
                    Cause::Startup,
                    Some(d.op),
                );
                Some(At::WorkEnd(w.link))
            }
            Stall::WaitMacro { .. } | Stall::Drain => None,
        }
    }

    /// Adds the segment `[from, sums.t)` (of `op` of the part `core` runs) and moves the walk
    /// to `from`.
    /// The segment of what `r` waited for, from `from`: on `r`'s own pipe, except a drain's,
    /// which is the drained op's startup, on that op's pipe.
    fn cond_seg(&self, sums: &mut Sums, r: &Rec, from: u64, cause: Cause, op: Option<u32>) {
        let (core, pipe) = match cause {
            Cause::Startup => {
                let d = self.recs[r.link as usize];
                (d.core, d.pipe())
            }
            _ => (r.core, r.pipe()),
        };
        self.seg(sums, from, core, pipe, cause, op);
    }

    fn seg(
        &self,
        sums: &mut Sums,
        from: u64,
        core: u32,
        pipe: Pipe,
        cause: Cause,
        op: Option<u32>,
    ) {
        // a rule's time after where the walk is cannot be what bound it: cut to a zero step
        let from = from.min(sums.t);
        let len = sums.t - from;
        sums.steps += 1;
        sums.by_pipe[pipe.index()] += len;
        if let Some(c) = sums.by_core.get_mut(core as usize) {
            *c += len;
        }
        let k = Cause::ALL.iter().position(|&c| c == cause).unwrap_or(0);
        sums.by_cause[k] += len;
        if let Some(op) = op {
            if len > 0 {
                *sums.ops.entry((self.at(core, op), cause)).or_default() += len;
            }
        }
        if let Some(v) = &mut sums.segments {
            v.push(Segment {
                from,
                to: sums.t,
                core,
                pipe,
                cause,
                op: op.map(OpId),
            });
        }
        sums.t = from;
    }

    /// Instruction `w` waited `cycles` for `wait` while the path ran through what it waited
    /// for.
    fn waited(&self, sums: &mut Sums, w: &Rec, wait: Wait, cycles: u64) {
        let e = sums.waits.entry((self.at(w.core, w.op), wait)).or_default();
        e.0 += cycles;
        e.1 += 1;
    }

    /// The sums as the path's report: ops back from dense indices to (part, op).
    fn sum_up(&self, sums: Sums, total: u64) -> CriticalPath {
        let locate = |k: usize| {
            let part = self.base.partition_point(|&b| b <= k).saturating_sub(1);
            (
                part as u32,
                OpId((k - self.base.get(part).copied().unwrap_or(0)) as u32),
            )
        };
        let mut ops: BTreeMap<usize, Vec<(Cause, u64)>> = BTreeMap::new();
        for ((k, cause), c) in sums.ops {
            ops.entry(k).or_default().push((cause, c));
        }
        let mut ops: Vec<OpShare> = ops
            .into_iter()
            .map(|(k, causes)| {
                let (part, op) = locate(k);
                OpShare {
                    part,
                    op,
                    cycles: causes.iter().map(|c| c.1).sum(),
                    causes,
                }
            })
            .collect();
        ops.sort_by(|a, b| {
            b.cycles
                .cmp(&a.cycles)
                .then((a.part, a.op).cmp(&(b.part, b.op)))
        });
        let mut waits: Vec<WaitShare> = sums
            .waits
            .into_iter()
            .filter(|(_, (c, _))| *c > 0)
            .map(|((k, wait), (cycles, count))| {
                let (part, op) = locate(k);
                WaitShare {
                    part,
                    op,
                    wait,
                    cycles,
                    count,
                }
            })
            .collect();
        waits.sort_by(|a, b| {
            b.cycles
                .cmp(&a.cycles)
                .then((a.part, a.op, a.wait).cmp(&(b.part, b.op, b.wait)))
        });
        CriticalPath {
            total,
            by_pipe: sums.by_pipe,
            by_core: sums.by_core,
            by_cause: sums.by_cause,
            ops,
            waits,
            steps: sums.steps,
            segments: sums.segments,
        }
    }
}

impl Rec {
    fn pipe(&self) -> Pipe {
        Pipe::ALL[self.pipe as usize % 7]
    }
}
