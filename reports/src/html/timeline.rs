//! The pipe timeline: an [`Observer`] that keeps the spans of a window of cycles on the cores
//! the page shows (within a budget; past it, a summary per column), and the cross-core arrows;
//! and the page's section that hands them to the page's script, which draws, zooms and pans
//! them (docs/html.md, "Pipe timeline").

use super::style::Kind;
use super::{esc, thousands};
use crate::untaken::Untaken;
use sim::engine::{Activity, CrossEvent, Issue, Observer, Span};
use sim::program::OpKind;
use sim::{Config, Pipe, Program, RunResult};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// What the page's timeline keeps: a window of cycles, the cores it shows and its budgets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineSpec {
    /// The first cycle of the window.
    pub from: u64,
    /// The cycle the window ends at (exclusive); `u64::MAX`: the end of the run.
    pub to: u64,
    /// The cores of the launch shown (indices into [`RunResult::cores`]); `None`: every core.
    pub cores: Option<Vec<usize>>,
    /// The most spans kept one by one; the rest of the window is summarised per column.
    pub max_spans: usize,
    /// The most cross-core arrows kept.
    pub max_arrows: usize,
}

impl Default for TimelineSpec {
    fn default() -> Self {
        TimelineSpec {
            from: 0,
            to: u64::MAX,
            cores: None,
            max_spans: Timeline::DEFAULT_MAX_SPANS,
            max_arrows: Timeline::DEFAULT_MAX_ARROWS,
        }
    }
}

/// A cross-core flag handed from a `cross_set` to the `cross_wait` that consumed it: from the
/// set's start on its pipe to the wait's start on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrow {
    pub set_core: u32,
    pub set_pipe: Pipe,
    pub set_cycle: u64,
    pub wait_core: u32,
    pub wait_pipe: Pipe,
    pub wait_cycle: u64,
}

const NO_LANE: u32 = u32::MAX;
const CROSS_SET: u8 = 1;
const CROSS_WAIT: u8 = 2;
/// The most cross-core sets and waits remembered while they are in flight, and increments per
/// counter: a correct program holds far fewer (a counter at most `cross_core.max_pending`), and
/// past this a runaway producer gets no arrows rather than growing the observer's memory.
const MAX_PENDING: usize = 1 << 14;
/// Cells (lane × column) of the summary: 16 bytes each in memory, 2 characters on the page.
const SUMMARY_CELLS: usize = 1 << 19;
/// The most columns per lane (about a wide screen's pixels).
const MAX_COLUMNS: usize = 2048;
/// The fewest columns per lane, however many lanes (a launch's 4,096 blocks of 3 cores, every
/// core shown, have about 61,000 lanes: 8 columns each).
const MIN_COLUMNS: usize = 8;

/// A cross-core set in flight: its core, pipe and start.
type SetAt = (u32, Pipe, u64);

/// A counter's increments not taken yet, oldest first, with the set behind each.
type Pending = Untaken<SetAt>;

/// The summary of the spans past the budget: per lane, per column of `width` cycles from the
/// window's start, the busy and the stalled cycles. `width` doubles (neighbouring columns
/// merged) whenever a span reaches past the last column, so the memory is fixed whatever the
/// run's length.
#[derive(Clone, Debug)]
struct Columns {
    per_lane: usize,
    width: u64,
    cells: Vec<[u64; 2]>,
}

impl Columns {
    fn new(lanes: usize) -> Self {
        let per_lane = columns_per_lane(lanes);
        Columns {
            per_lane,
            width: 1,
            cells: vec![[0, 0]; lanes * per_lane],
        }
    }

    /// Adds `[from, to)` (relative to the window's start) of `lane` to the busy (`which` 0) or
    /// stalled (1) cycles of the columns it covers.
    fn add(&mut self, lane: usize, from: u64, to: u64, which: usize) {
        let n = self.per_lane as u64;
        while to > n.saturating_mul(self.width) {
            self.double();
        }
        let row = &mut self.cells[lane * self.per_lane..(lane + 1) * self.per_lane];
        let mut c = from / self.width;
        while c < n {
            let (c0, c1) = (c * self.width, (c + 1) * self.width);
            if c0 >= to {
                break;
            }
            row[c as usize][which] += to.min(c1) - from.max(c0);
            c += 1;
        }
    }

    fn double(&mut self) {
        for row in self.cells.chunks_mut(self.per_lane) {
            for i in 0..self.per_lane / 2 {
                let (a, b) = (row[2 * i], row[2 * i + 1]);
                row[i] = [a[0] + b[0], a[1] + b[1]];
            }
            for cell in &mut row[self.per_lane / 2..] {
                *cell = [0, 0];
            }
        }
        self.width = self.width.saturating_mul(2);
    }
}

/// Columns per lane for `lanes` lanes: a power of two, within the summary's cells.
fn columns_per_lane(lanes: usize) -> usize {
    let fit = SUMMARY_CELLS / lanes.max(1);
    let mut n = MAX_COLUMNS;
    while n > MIN_COLUMNS && n > fit {
        n /= 2;
    }
    n
}

/// The spans of a run's window for the HTML timeline, its cross-core arrows and, past its
/// budget, a summary per column. Its memory is bounded whatever the run's length.
///
/// It keeps every span with cycles (busy or stalled; starved and idle time have none) inside
/// the window, on a shown core, clipped to the window, in the order the engine reports them,
/// until it holds `max_spans`; after that it keeps none and remembers the earliest start of a
/// span it did not keep: the *cut*. The engine does not report spans in start order, but every
/// span that starts before the cut was kept (one not kept starts at the cut or later), so the
/// spans of `[from, cut)` are complete. From the first span not kept on, every span of the
/// window (the kept ones too) is also added up per lane and column, so the page
/// draws `[cut, to)` as the share of each column's cycles each pipe was busy and stalled,
/// rather than dropping it.
#[derive(Clone, Debug)]
pub struct Timeline {
    spec: TimelineSpec,
    /// Per launch core, per pipe: its lane, or [`NO_LANE`].
    lane_of: Vec<[u32; Pipe::COUNT]>,
    lanes: usize,
    /// Per launch core: its part.
    core_part: Vec<u32>,
    /// Per part, per op: [`CROSS_SET`], [`CROSS_WAIT`] or 0.
    cross: Vec<Vec<u8>>,
    any_cross: bool,
    spans: Vec<Span>,
    seen: u64,
    cut: Option<u64>,
    columns: Option<Columns>,
    /// The latest end of a span in the window.
    end: u64,
    arrows: Vec<Arrow>,
    arrows_seen: u64,
    sets: BTreeMap<u64, SetAt>,
    waits: BTreeMap<u64, (u32, Pipe)>,
    /// Per (core, counter): its increments not taken yet.
    increments: HashMap<(u32, u32), Pending>,
}

impl Timeline {
    /// How many spans the page keeps one by one: about 2.2 MB of the page's data, so a page
    /// with a full summary and the arrows stays under 5 MB.
    pub const DEFAULT_MAX_SPANS: usize = 100_000;
    /// How many cross-core arrows the page draws at most.
    pub const DEFAULT_MAX_ARROWS: usize = 20_000;
    /// How many cores the timeline shows when the spec names none: a larger launch shows its
    /// first cores in launch order, so that its lanes stay readable and the page small.
    pub const DEFAULT_MAX_CORES: usize = 256;

    /// A one-core timeline of the whole run that keeps at most `max_spans` spans (every pipe
    /// a lane; no cross-core arrows).
    pub fn new(max_spans: usize) -> Self {
        Timeline::build(
            vec![[0, 1, 2, 3, 4, 5, 6]],
            Pipe::COUNT,
            vec![0],
            Vec::new(),
            TimelineSpec {
                max_spans,
                ..TimelineSpec::default()
            },
        )
    }

    /// The timeline of a launch of `parts` (the programs that run, in kernel order) on
    /// `config`: a lane per pipe of every shown core (with no cores in `spec`, the first
    /// [`Timeline::DEFAULT_MAX_CORES`]).
    pub fn for_launch(parts: &[&Program], config: &Config, spec: TimelineSpec) -> Self {
        let slots = sim::launch::slots(parts, config);
        let chosen: Vec<bool> = match &spec.cores {
            Some(c) => {
                let mut v = vec![false; slots.len()];
                for &k in c {
                    if let Some(x) = v.get_mut(k) {
                        *x = true;
                    }
                }
                v
            }
            None => (0..slots.len())
                .map(|k| k < Timeline::DEFAULT_MAX_CORES)
                .collect(),
        };
        let shown = |k: usize| chosen[k];
        let mut lanes = 0u32;
        let lane_of = slots
            .iter()
            .enumerate()
            .map(|(k, slot)| {
                let mut row = [NO_LANE; Pipe::COUNT];
                if shown(k) {
                    let mut pipes = config.core(slot.core).pipes.clone();
                    pipes.sort();
                    for p in pipes {
                        row[p.index()] = lanes;
                        lanes += 1;
                    }
                }
                row
            })
            .collect();
        let core_part = slots.iter().map(|s| s.part).collect();
        let cross = parts
            .iter()
            .map(|p| {
                p.ops
                    .iter()
                    .map(|op| match op.kind {
                        OpKind::CrossSet { .. } => CROSS_SET,
                        OpKind::CrossWait { .. } => CROSS_WAIT,
                        _ => 0,
                    })
                    .collect()
            })
            .collect();
        Timeline::build(lane_of, lanes as usize, core_part, cross, spec)
    }

    fn build(
        lane_of: Vec<[u32; Pipe::COUNT]>,
        lanes: usize,
        core_part: Vec<u32>,
        cross: Vec<Vec<u8>>,
        spec: TimelineSpec,
    ) -> Self {
        let any_cross = cross.iter().flatten().any(|&k| k != 0);
        Timeline {
            spec,
            lane_of,
            lanes,
            core_part,
            cross,
            any_cross,
            spans: Vec::new(),
            seen: 0,
            cut: None,
            columns: None,
            end: 0,
            arrows: Vec::new(),
            arrows_seen: 0,
            sets: BTreeMap::new(),
            waits: BTreeMap::new(),
            increments: HashMap::new(),
        }
    }

    /// The cycle from which the window is summarised, or `None` when every span was kept.
    pub fn cut(&self) -> Option<u64> {
        self.cut
    }

    /// How many spans with cycles the window had on the shown cores.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// What the timeline was asked to keep.
    pub fn spec(&self) -> &TimelineSpec {
        &self.spec
    }

    /// Whether core `k` of the launch is shown.
    pub fn shows(&self, k: usize) -> bool {
        self.lane_of
            .get(k)
            .is_some_and(|row| row.iter().any(|&l| l != NO_LANE))
    }

    /// The spans of `[from, cut)` (or the whole window), in the order the engine reported
    /// them, each clipped to it.
    pub fn window(&self) -> impl Iterator<Item = Span> + '_ {
        let end = self.cut.unwrap_or(u64::MAX);
        self.spans
            .iter()
            .filter(move |s| s.from < end)
            .map(move |s| Span {
                to: s.to.min(end),
                ..*s
            })
    }

    /// The cross-core arrows kept: each flag a shown core's `cross_wait` consumed in the
    /// window from a shown core's `cross_set`, in the order they were consumed.
    pub fn arrows(&self) -> &[Arrow] {
        &self.arrows
    }

    /// How many cross-core flags were consumed in the window between shown cores (the arrows
    /// kept are the first [`TimelineSpec::max_arrows`] of them).
    pub fn arrows_seen(&self) -> u64 {
        self.arrows_seen
    }

    fn lane(&self, core: u32, pipe: Pipe) -> Option<usize> {
        let l = *self.lane_of.get(core as usize)?.get(pipe.index())?;
        (l != NO_LANE).then_some(l as usize)
    }

    /// Starts the summary: every kept span added to the columns.
    fn start_summary(&mut self) {
        let mut cols = Columns::new(self.lanes);
        for s in &self.spans {
            if let Some(l) = self.lane(s.core, s.pipe) {
                cols.add(
                    l,
                    s.from - self.spec.from,
                    s.to - self.spec.from,
                    stalled(s),
                );
            }
        }
        self.columns = Some(cols);
    }
}

fn stalled(s: &Span) -> usize {
    usize::from(matches!(s.what, Activity::Stall(_)))
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(Timeline::DEFAULT_MAX_SPANS)
    }
}

impl Observer for Timeline {
    fn on_span(&mut self, span: &Span) {
        let (from, to) = (span.from.max(self.spec.from), span.to.min(self.spec.to));
        if to <= from {
            return;
        }
        let Some(lane) = self.lane(span.core, span.pipe) else {
            return;
        };
        self.seen += 1;
        self.end = self.end.max(to);
        let s = Span { from, to, ..*span };
        if self.spans.len() < self.spec.max_spans {
            self.spans.push(s);
            return;
        }
        if self.columns.is_none() {
            self.start_summary();
        }
        if let Some(cols) = &mut self.columns {
            cols.add(
                lane,
                from - self.spec.from,
                to - self.spec.from,
                stalled(&s),
            );
        }
        self.cut = Some(self.cut.map_or(from, |c| c.min(from)));
    }

    fn on_issue(&mut self, issue: &Issue<'_>) {
        let Some(&part) = self.core_part.get(issue.core as usize) else {
            return;
        };
        let kind = self
            .cross
            .get(part as usize)
            .and_then(|ops| ops.get(issue.op.index()))
            .copied();
        match kind {
            Some(CROSS_SET) => {
                self.sets
                    .insert(issue.seq, (issue.core, issue.pipe, issue.cycle));
                if self.sets.len() > MAX_PENDING {
                    self.sets.pop_first();
                }
            }
            Some(CROSS_WAIT) => {
                self.waits.insert(issue.seq, (issue.core, issue.pipe));
                if self.waits.len() > MAX_PENDING {
                    self.waits.pop_first();
                }
            }
            _ => {}
        }
    }

    fn watches_issues(&self) -> bool {
        self.any_cross
    }

    fn watches_slots(&self) -> bool {
        false
    }

    fn on_start(&mut self, seq: u64, start: u64, _complete: u64) {
        if self.sets.is_empty() {
            return;
        }
        if let Some(s) = self.sets.get_mut(&seq) {
            s.2 = start;
        }
    }

    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        match *event {
            CrossEvent::Signal { core, id, sets, .. } => {
                // the set that completed the signal: the last to start (as the trace's arrows)
                let set = sets
                    .iter()
                    .filter_map(|s| self.sets.get(s).map(|x| (x.2, *s, *x)))
                    .max_by_key(|(start, seq, _)| (*start, *seq))
                    .map(|(_, _, x)| x);
                self.increments
                    .entry((core, id))
                    .or_default()
                    .push(set, MAX_PENDING);
            }
            CrossEvent::Take {
                core,
                id,
                cycle,
                wait_seq,
            } => {
                let wait = self.waits.remove(&wait_seq);
                let set = self
                    .increments
                    .get_mut(&(core, id))
                    .and_then(|q| q.take())
                    .flatten();
                let (Some(set), Some(wait)) = (set, wait) else {
                    return;
                };
                let inside = cycle >= self.spec.from && cycle < self.spec.to;
                let shown = self.shows(set.0 as usize) && self.shows(wait.0 as usize);
                if !(inside && shown) {
                    return;
                }
                self.arrows_seen += 1;
                if self.arrows.len() < self.spec.max_arrows {
                    self.arrows.push(Arrow {
                        set_core: set.0,
                        set_pipe: set.1,
                        set_cycle: set.2,
                        wait_core: wait.0,
                        wait_pipe: wait.1,
                        wait_cycle: cycle,
                    });
                }
            }
        }
    }
}

/// The characters a summary cell's two shares are written with, 0 to 63 each.
const DIGITS: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

/// `busy` and `stalled` cycles of `len` as two sixty-fourths (rounded, their sum at most 63).
fn shares(busy: u64, stalled: u64, len: u64) -> (usize, usize) {
    if len == 0 {
        return (0, 0);
    }
    let q = |c: u64| ((c.min(len) as f64 * 63.0 / len as f64).round() as usize).min(63);
    let b = q(busy);
    let s = q(stalled).min(63 - b);
    (b, s)
}

/// One shown core of the page: its launch index, name and the pipes of its lanes.
struct Shown {
    core: usize,
    name: String,
    pipes: Vec<Pipe>,
}

/// The most bytes of the timeline's data on the page: past it, fewer spans are drawn one by one
/// (the cut moves earlier) and the rest is summarised, so the page stays under 5 MB.
const DATA_BUDGET: usize = 4_000_000;

/// The most characters of an op's text in the page's data (its tooltip).
const OP_TEXT: usize = 200;

/// The page's view of a timeline: the shown cores' lanes and the window's cycles.
struct PageView<'a> {
    tl: &'a Timeline,
    parts: &'a [&'a Program],
    slots: Vec<sim::launch::Slot>,
    shown: Vec<Shown>,
    /// (core, pipe) → the page's lane.
    page_lane: HashMap<(usize, Pipe), usize>,
    lanes: Vec<Pipe>,
    from: u64,
    to: u64,
}

/// The data of the page's timeline and what it holds.
struct Built {
    data: String,
    spans: usize,
    arrows: usize,
    /// Where the drawn spans end and the summary starts.
    cut: Option<u64>,
    /// The summary's columns per lane and their width in cycles.
    columns: usize,
    width: u64,
}

impl PageView<'_> {
    /// The data with at most `keep` spans drawn one by one: when the window has more (kept by
    /// the timeline), the cut moves to the start of the first span past `keep` in start order,
    /// and the rest is summarised.
    fn build(&self, keep: usize) -> Built {
        let tl = self.tl;
        let (from, to) = (self.from, self.to);
        let window: Vec<(usize, Span)> = tl
            .window()
            .filter_map(|s| {
                self.page_lane
                    .get(&(s.core as usize, s.pipe))
                    .map(|&l| (l, s))
            })
            .collect();
        let mut cut = tl.cut().map(|c| c.max(from));
        if window.len() > keep {
            let mut starts: Vec<u64> = window.iter().map(|(_, s)| s.from).collect();
            starts.sort_unstable();
            let c = starts[keep];
            cut = Some(cut.map_or(c, |x| x.min(c)));
        }
        let end = cut.unwrap_or(u64::MAX);

        // kinds (a span's colour and what it did) and ops, numbered as they first appear
        let mut kinds: Vec<(&'static str, String)> = Vec::new();
        let mut kind_ix: HashMap<(&'static str, String), usize> = HashMap::new();
        let mut ops: Vec<(&'static str, String)> = Vec::new();
        let mut op_ix: HashMap<(usize, u32), usize> = HashMap::new();
        let mut rows: Vec<(usize, u64, u64, usize, usize)> = Vec::new();
        for (lane, s) in window.iter().filter(|(_, s)| s.from < end) {
            let part = self
                .slots
                .get(s.core as usize)
                .map_or(0, |x| x.part as usize);
            let program = self.parts.get(part).copied().unwrap_or(self.parts[0]);
            let kind = match s.what {
                Activity::Stall(st) => Kind::of_stall(st),
                _ => Kind::Busy(s.pipe),
            };
            let what = match s.what {
                Activity::Work => "busy".to_string(),
                Activity::Issue => {
                    let to = program
                        .ops
                        .get(s.op.index())
                        .and_then(|o| o.pipe)
                        .map_or(String::new(), |p| format!(" to {p}"));
                    format!("busy sending{to}")
                }
                Activity::Loop => "busy starting a loop iteration".into(),
                Activity::Branch => "busy evaluating an if".into(),
                Activity::Stall(st) => st.to_string(),
            };
            let key = (kind.colour(), what);
            let k = *kind_ix.entry(key.clone()).or_insert_with(|| {
                kinds.push(key);
                kinds.len() - 1
            });
            let o = *op_ix.entry((part, s.op.index() as u32)).or_insert_with(|| {
                let short = program
                    .ops
                    .get(s.op.index())
                    .map_or("?", |op| op.kind.name());
                let mut full = crate::op_ref(program, s.op);
                if full.chars().count() > OP_TEXT {
                    full = full.chars().take(OP_TEXT).collect::<String>() + "…";
                }
                ops.push((short, full));
                ops.len() - 1
            });
            rows.push((*lane, s.from, s.to.min(end), k, o));
        }
        rows.sort_unstable();

        let mut data = String::with_capacity(rows.len() * 16 + 4096);
        let _ = write!(
            data,
            "{{\"from\":{from},\"to\":{to},\"cut\":{},\"lanes\":[",
            cut.map_or("null".to_string(), |c| c.to_string())
        );
        for (i, p) in self.lanes.iter().enumerate() {
            let _ = write!(
                data,
                "{}[\"{}\",\"{}\"]",
                if i > 0 { "," } else { "" },
                p,
                Kind::Busy(*p).colour()
            );
        }
        data.push_str("],\"kinds\":[");
        for (i, (colour, what)) in kinds.iter().enumerate() {
            let _ = write!(
                data,
                "{}[\"{colour}\",{}]",
                if i > 0 { "," } else { "" },
                json_str(what)
            );
        }
        data.push_str("],\"ops\":[");
        for (i, (short, full)) in ops.iter().enumerate() {
            let _ = write!(
                data,
                "{}[{},{}]",
                if i > 0 { "," } else { "" },
                json_str(short),
                json_str(full)
            );
        }
        // per lane, how many spans; then the spans by lane and start, each as its gap after
        // the previous span of its lane (the first: after the window's start), its cycles,
        // kind and op: small numbers, so a span costs about 15 bytes
        data.push_str("],\"counts\":[");
        let mut counts = vec![0usize; self.lanes.len()];
        for r in &rows {
            counts[r.0] += 1;
        }
        for (i, c) in counts.iter().enumerate() {
            let _ = write!(data, "{}{c}", if i > 0 { "," } else { "" });
        }
        data.push_str("],\"spans\":[");
        let mut prev = (usize::MAX, 0u64);
        for (i, (lane, f, t, k, o)) in rows.iter().enumerate() {
            let after = if prev.0 == *lane { prev.1 } else { from };
            let _ = write!(
                data,
                "{}{},{},{k},{o}",
                if i > 0 { "," } else { "" },
                *f as i128 - after as i128,
                t - f
            );
            prev = (*lane, *t);
        }
        data.push_str("],\"arrows\":[");
        let mut arrows = 0usize;
        for a in tl.arrows() {
            let (Some(&l0), Some(&l1)) = (
                self.page_lane.get(&(a.set_core as usize, a.set_pipe)),
                self.page_lane.get(&(a.wait_core as usize, a.wait_pipe)),
            ) else {
                continue;
            };
            let _ = write!(
                data,
                "{}{l0},{},{l1},{}",
                if arrows > 0 { "," } else { "" },
                a.set_cycle as i128 - from as i128,
                a.wait_cycle - from
            );
            arrows += 1;
        }
        data.push(']');
        // the summary of [cut, to): per lane, the columns from the one holding the cut
        let (mut columns, mut width) = (0usize, 0u64);
        if let Some(cut) = cut {
            // every span of the window is in the timeline's columns once it dropped one; when
            // it kept them all, they are added up here
            let made;
            let cols = match &tl.columns {
                Some(c) => c,
                None => {
                    let mut c = Columns::new(tl.lanes);
                    for s in &tl.spans {
                        if let Some(l) = tl.lane(s.core, s.pipe) {
                            c.add(l, s.from - tl.spec.from, s.to - tl.spec.from, stalled(s));
                        }
                    }
                    made = c;
                    &made
                }
            };
            let w = cols.width;
            let first = (cut - tl.spec.from) / w;
            let last = (to - tl.spec.from)
                .div_ceil(w)
                .min(cols.per_lane as u64)
                .max(first);
            // cycles of the column holding the cut that are drawn one by one
            let c0 = tl.spec.from + first * w;
            let mut before: HashMap<usize, [u64; 2]> = HashMap::new();
            for s in tl.window().filter(|s| s.from < cut && s.to.min(cut) > c0) {
                if let Some(l) = tl.lane(s.core, s.pipe) {
                    before.entry(l).or_default()[stalled(&s)] += s.to.min(cut) - s.from.max(c0);
                }
            }
            let _ = write!(
                data,
                ",\"summary\":{{\"width\":{w},\"first\":{},\"lanes\":[",
                c0 as i128 - from as i128
            );
            let page_lanes = self
                .shown
                .iter()
                .flat_map(|s| s.pipes.iter().map(move |p| (s.core, *p)));
            for (i, (core, pipe)) in page_lanes.enumerate() {
                data.push_str(if i > 0 { ",\"" } else { "\"" });
                let internal = tl.lane(core as u32, pipe);
                for c in first..last {
                    let (b, st) = match internal {
                        Some(l) => {
                            let mut cell = cols.cells[l * cols.per_lane + c as usize];
                            let start = tl.spec.from + c * w;
                            if c == first {
                                let e = before.get(&l).copied().unwrap_or_default();
                                cell[0] = cell[0].saturating_sub(e[0]);
                                cell[1] = cell[1].saturating_sub(e[1]);
                            }
                            let len = (start + w).min(to).saturating_sub(start.max(cut));
                            shares(cell[0], cell[1], len)
                        }
                        None => (0, 0),
                    };
                    data.push(DIGITS[b] as char);
                    data.push(DIGITS[st] as char);
                }
                data.push('"');
            }
            data.push_str("]}");
            columns = (last - first) as usize;
            width = w;
        }
        data.push('}');
        Built {
            data,
            spans: rows.len(),
            arrows,
            cut,
            columns,
            width,
        }
    }
}

/// The timeline section's body: the controls, the lane groups, the canvas the script draws on
/// and the data it draws (`<pre id="tl-data">`, JSON), or a note when nothing was collected.
/// `parts` are the kernel's programs in launch order (the ops the spans name).
pub(super) fn timeline_html(
    config: &Config,
    parts: &[&Program],
    result: &RunResult,
    tl: Option<&Timeline>,
) -> String {
    let Some(tl) = tl else {
        return "<p class=\"note\">Not collected for this report.</p>\n".into();
    };
    let total = result.total_cycles;
    let one = result.cores.len() == 1;
    let shown: Vec<Shown> = result
        .cores
        .iter()
        .enumerate()
        .filter(|(k, _)| tl.shows(*k))
        .map(|(k, c)| Shown {
            core: k,
            name: if one {
                config.core_label(c.core)
            } else {
                crate::core_name(config, c)
            },
            pipes: crate::run_report::sorted_pipes(c)
                .iter()
                .map(|p| p.pipe)
                .collect(),
        })
        .collect();
    let mut page_lane = HashMap::new();
    let mut lanes = Vec::new();
    for s in &shown {
        for &p in &s.pipes {
            page_lane.insert((s.core, p), lanes.len());
            lanes.push(p);
        }
    }
    let from = tl.spec.from.min(total);
    let view = PageView {
        tl,
        parts,
        slots: sim::launch::slots(parts, config),
        shown,
        page_lane,
        lanes,
        from,
        to: tl.spec.to.min(total.max(tl.end)).max(from + 1),
    };
    let to = view.to;
    let mut built = view.build(usize::MAX);
    while esc_len(&built.data) > DATA_BUDGET && built.spans > 0 {
        built = view.build(built.spans / 2);
    }

    let mut out = String::new();
    let spans = built.spans;
    out.push_str(&match built.cut {
        None => format!(
            "<p class=\"note\">Every busy and stall span of cycles {} to {}{}: {} spans. Colours as in the legend above; gaps are starved or idle time. Wheel over the lanes to zoom, drag to pan; hover a span for its op and cycles.</p>\n",
            thousands(from),
            thousands(to),
            if from == 0 && to >= total { " (the whole run)" } else { "" },
            thousands(spans as u64),
        ),
        Some(c) => format!(
            "<p class=\"note\"><b>Summarised:</b> the window had {} spans; the page draws the {} that start before cycle {} one by one ({} to {} is complete). From cycle {} on, each column of {} shows the share of its cycles each pipe was busy (the pipe's colour) and stalled (dark red). Choose a narrower window with <code>--html-window A:B</code> to see its spans.</p>\n",
            thousands(tl.seen()),
            thousands(spans as u64),
            thousands(c),
            thousands(from),
            thousands(c),
            thousands(c),
            super::cycles(built.width),
        ),
    });
    if view.shown.len() < result.cores.len() {
        out.push_str(&format!(
            "<p class=\"note\">The timeline shows {} of the launch's {} cores{}; <code>--html-cores</code> chooses them (the summary above and the memory maps below cover every core).</p>\n",
            thousands(view.shown.len() as u64),
            thousands(result.cores.len() as u64),
            if tl.spec.cores.is_none() {
                format!(
                    " (by default, the first {} in launch order)",
                    Timeline::DEFAULT_MAX_CORES
                )
            } else {
                String::new()
            },
        ));
    }
    if tl.arrows_seen() > built.arrows as u64 {
        out.push_str(&format!(
            "<p class=\"note\">{} cross-core flags were consumed in the window; the page draws the first {}.</p>\n",
            thousands(tl.arrows_seen()),
            thousands(built.arrows as u64)
        ));
    }
    out.push_str(
        "<div class=\"controls tl-controls\">\
         <label>window <input id=\"tl-from\" type=\"number\" min=\"0\" step=\"1\"></label>\
         <label>to <input id=\"tl-to\" type=\"number\" min=\"0\" step=\"1\"></label>\
         <button id=\"tl-show\" type=\"button\">show</button>\
         <button id=\"tl-all\" type=\"button\">whole window</button>\
         <label>op <input id=\"tl-search\" type=\"search\" placeholder=\"vadd, load, 24:9\"></label>\
         <button id=\"tl-next\" type=\"button\">next</button>\
         <span id=\"tl-status\" class=\"dim\"></span></div>\n",
    );
    out.push_str(&format!(
        "<div class=\"tlv\" id=\"tlv\" data-from=\"{from}\" data-to=\"{to}\" data-spans=\"{spans}\" data-arrows=\"{}\" data-groups=\"{}\" data-summary-columns=\"{}\">\n<div class=\"tl-body\">\n<div class=\"tl-lanes\">",
        built.arrows,
        view.shown.len(),
        built.columns,
    ));
    for s in &view.shown {
        out.push_str(&format!(
            "<div class=\"lane-group\" data-core=\"{}\"><div class=\"lg-name\">{}</div><div class=\"lg-pipes\">",
            s.core,
            esc(&s.name)
        ));
        for p in &s.pipes {
            out.push_str(&format!("<div class=\"lane\">{p}</div>"));
        }
        out.push_str("</div></div>");
    }
    out.push_str("</div>\n<div class=\"tl-plot\"><div class=\"tl-stick\"><canvas id=\"tl-canvas\"></canvas><svg id=\"tl-arrows\" class=\"tl-arrows\"></svg></div></div>\n</div>\n</div>\n");
    out.push_str("<div class=\"tl-axis\" id=\"tl-axis\"></div>\n<div id=\"tl-tip\" class=\"tl-tip\" hidden></div>\n");
    out.push_str(&format!(
        "<pre id=\"tl-data\" hidden>{}</pre>\n",
        esc(&built.data)
    ));
    out
}

/// The length of `s` escaped for HTML.
fn esc_len(s: &str) -> usize {
    s.len()
        + s.bytes()
            .map(|b| match b {
                b'&' => 4,
                b'<' | b'>' => 3,
                b'"' => 5,
                b'\'' => 4,
                _ => 0,
            })
            .sum::<usize>()
}

/// `s` as a JSON string.
fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A round step (1, 2 or 5 × 10^k) that cuts `0..=range` into at most about `ticks` parts.
pub(super) fn nice_step(range: u64, ticks: u64) -> u64 {
    let raw = (range / ticks.max(1)).max(1);
    let mut pow = 1u64;
    while pow.saturating_mul(10) <= raw {
        pow *= 10;
    }
    [1, 2, 5, 10]
        .into_iter()
        .map(|m| pow.saturating_mul(m))
        .find(|s| *s >= raw)
        .unwrap_or(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::engine::Stall;
    use sim::{OpId, Pipe};

    fn span(pipe: Pipe, from: u64, to: u64) -> Span {
        Span {
            core: 0,
            pipe,
            from,
            to,
            op: OpId::new(1),
            seq: Some(0),
            what: Activity::Work,
        }
    }

    #[test]
    fn keeps_everything_below_the_limit() {
        let mut t = Timeline::new(10);
        t.on_span(&span(Pipe::V, 0, 5));
        t.on_span(&span(Pipe::V, 5, 5)); // no cycles: not a span to draw
        t.on_span(&span(Pipe::Mte2, 2, 9));
        assert_eq!(t.seen(), 2);
        assert_eq!(t.cut(), None);
        assert_eq!(t.window().count(), 2);
        assert!(t.columns.is_none(), "no summary while everything fits");
    }

    #[test]
    fn the_window_ends_at_the_earliest_span_not_kept_and_the_rest_is_summarised() {
        let mut t = Timeline::new(3);
        t.on_span(&span(Pipe::V, 0, 10));
        t.on_span(&span(Pipe::V, 10, 40));
        t.on_span(&span(Pipe::V, 50, 60));
        // not kept: the cut is the earliest start among them, not the last one seen
        t.on_span(&span(Pipe::Mte2, 30, 35));
        t.on_span(&Span {
            what: Activity::Stall(Stall::Drain),
            ..span(Pipe::Mte2, 70, 80)
        });
        assert_eq!(t.seen(), 5);
        assert_eq!(t.cut(), Some(30));
        let w: Vec<(u64, u64)> = t.window().map(|s| (s.from, s.to)).collect();
        // [50, 60) starts after the cut; [10, 40) is clipped to it
        assert_eq!(w, vec![(0, 10), (10, 30)]);
        assert_eq!(t.spans.len(), 3, "memory is bounded by max_spans");
        // every span of the window is in the summary: V busy 10 + 30 + 10, MTE2 5 busy, 10
        // stalled
        let cols = t.columns.as_ref().unwrap();
        let sum = |lane: usize, which: usize| -> u64 {
            cols.cells[lane * cols.per_lane..(lane + 1) * cols.per_lane]
                .iter()
                .map(|c| c[which])
                .sum()
        };
        assert_eq!(sum(Pipe::V.index(), 0), 50);
        assert_eq!(sum(Pipe::Mte2.index(), 0), 5);
        assert_eq!(sum(Pipe::Mte2.index(), 1), 10);
    }

    #[test]
    fn columns_merge_when_the_run_outgrows_them_and_keep_every_cycle() {
        let mut c = Columns::new(1);
        let n = c.per_lane as u64;
        c.add(0, 0, 3, 0);
        c.add(0, n - 1, n + 5, 1); // past the last column: the width doubles
        assert_eq!(c.width, 2);
        assert_eq!(c.cells[0], [2, 0]);
        assert_eq!(c.cells[1], [1, 0]);
        let total: u64 = c.cells.iter().map(|x| x[0] + x[1]).sum();
        assert_eq!(total, 3 + 6);
        // a span far past the end doubles as often as needed, in one call
        c.add(0, 0, 1000 * n, 0);
        assert!(c.width * n >= 1000 * n);
        let total: u64 = c.cells.iter().map(|x| x[0] + x[1]).sum();
        assert_eq!(total, 3 + 6 + 1000 * n);
    }

    #[test]
    fn the_summary_fits_its_cells_whatever_the_lanes() {
        assert_eq!(columns_per_lane(1), MAX_COLUMNS);
        assert_eq!(columns_per_lane(360), 1024);
        assert_eq!(columns_per_lane(1_000_000), MIN_COLUMNS);
        // the largest launch, every core shown: 4,096 blocks of 3 cores of at most 5 pipes
        assert_eq!(columns_per_lane(4096 * 3 * 5), 8);
        for lanes in [1, 7, 100, 360, 5000] {
            assert!(columns_per_lane(lanes) * lanes <= SUMMARY_CELLS.max(lanes * MIN_COLUMNS));
        }
    }

    #[test]
    fn a_window_clips_spans_and_ignores_those_outside() {
        let mut t = Timeline::new(10);
        t.spec.from = 20;
        t.spec.to = 50;
        t.on_span(&span(Pipe::V, 0, 10)); // before
        t.on_span(&span(Pipe::V, 15, 25)); // clipped to [20, 25)
        t.on_span(&span(Pipe::V, 45, 70)); // clipped to [45, 50)
        t.on_span(&span(Pipe::V, 50, 60)); // after
        let w: Vec<(u64, u64)> = t.window().map(|s| (s.from, s.to)).collect();
        assert_eq!(w, vec![(20, 25), (45, 50)]);
        assert_eq!(t.seen(), 2);
    }

    #[test]
    fn shares_are_sixty_fourths_that_never_exceed_the_column() {
        assert_eq!(shares(0, 0, 10), (0, 0));
        assert_eq!(shares(10, 0, 10), (63, 0));
        assert_eq!(shares(5, 5, 10), (32, 31));
        assert_eq!(shares(1, 1, 0), (0, 0));
    }

    /// Two cores of one part whose op 0 is a `cross_set` and op 1 a `cross_wait`; `shown`:
    /// whether core 1 is shown.
    fn two_cores(spec: TimelineSpec, shown: bool) -> Timeline {
        let row = |base: u32| std::array::from_fn(|i| base + i as u32);
        let lane_of = vec![row(0), if shown { row(7) } else { [NO_LANE; 7] }];
        Timeline::build(
            lane_of,
            if shown { 14 } else { 7 },
            vec![0, 0],
            vec![vec![CROSS_SET, CROSS_WAIT]],
            spec,
        )
    }

    fn issue(t: &mut Timeline, seq: u64, core: u32, op: usize, pipe: Pipe) {
        t.on_issue(&Issue {
            seq,
            core,
            op: OpId::new(op),
            pipe,
            cycle: 1,
            vars: &[],
            slots: &[],
            flag_id: Some(0),
        });
    }

    /// Core 0 sets twice (seq 10 starting at 8, seq 11 at 12), one signal of counter 0 of core
    /// 1 lists both, and core 1's wait (seq 20) takes it at `take`.
    fn handoff(t: &mut Timeline, take: u64) {
        issue(t, 10, 0, 0, Pipe::Fix);
        t.on_start(10, 8, 9);
        issue(t, 11, 0, 0, Pipe::Fix);
        t.on_start(11, 12, 13);
        issue(t, 20, 1, 1, Pipe::Mte2);
        t.on_cross(&CrossEvent::Signal {
            core: 1,
            id: 0,
            cycle: 15,
            sets: &[10, 11],
        });
        t.on_cross(&CrossEvent::Take {
            core: 1,
            id: 0,
            cycle: take,
            wait_seq: 20,
        });
    }

    #[test]
    fn an_arrow_joins_the_last_set_of_a_signal_to_the_wait_that_took_it() {
        let mut t = two_cores(TimelineSpec::default(), true);
        assert!(t.watches_issues() && !t.watches_slots());
        handoff(&mut t, 30);
        assert_eq!(
            t.arrows(),
            [Arrow {
                set_core: 0,
                set_pipe: Pipe::Fix,
                set_cycle: 12,
                wait_core: 1,
                wait_pipe: Pipe::Mte2,
                wait_cycle: 30,
            }]
        );
        assert_eq!(t.arrows_seen(), 1);
        // a take with no increment left (a malformed sequence) draws nothing and does not panic
        t.on_cross(&CrossEvent::Take {
            core: 1,
            id: 0,
            cycle: 40,
            wait_seq: 21,
        });
        assert_eq!(t.arrows().len(), 1);
        assert!(t.waits.is_empty(), "a taken wait is forgotten");
    }

    #[test]
    fn arrows_need_their_take_in_the_window_and_both_cores_shown() {
        let mut t = two_cores(
            TimelineSpec {
                to: 25,
                ..TimelineSpec::default()
            },
            true,
        );
        handoff(&mut t, 30);
        assert_eq!((t.arrows().len(), t.arrows_seen()), (0, 0));
        let mut t = two_cores(TimelineSpec::default(), false);
        handoff(&mut t, 30);
        assert_eq!((t.arrows().len(), t.arrows_seen()), (0, 0));
        // past the arrow budget they are counted, not kept
        let mut t = two_cores(
            TimelineSpec {
                max_arrows: 0,
                ..TimelineSpec::default()
            },
            true,
        );
        handoff(&mut t, 30);
        assert_eq!((t.arrows().len(), t.arrows_seen()), (0, 1));
    }

    #[test]
    fn a_runaway_counter_keeps_its_memory_bounded() {
        let mut t = two_cores(TimelineSpec::default(), true);
        issue(&mut t, 10, 0, 0, Pipe::Fix);
        for cycle in 0..(MAX_PENDING as u64 + 100) {
            t.on_cross(&CrossEvent::Signal {
                core: 1,
                id: 0,
                cycle,
                sets: &[10],
            });
        }
        let q = &t.increments[&(1, 0)];
        // the increments past the cap are one run of "not remembered"
        assert_eq!(q.entries(), MAX_PENDING + 1);
        assert_eq!(q.newest(), Some(&(None, 100)));
        for seq in 0..(MAX_PENDING as u64 + 10) {
            issue(&mut t, 1000 + seq, 0, 0, Pipe::Fix);
        }
        assert_eq!(t.sets.len(), MAX_PENDING);
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(83_496, 10), 10_000);
        assert_eq!(nice_step(24_596, 10), 5_000);
        assert_eq!(nice_step(14, 10), 1);
        assert_eq!(nice_step(25, 10), 2);
        assert_eq!(nice_step(0, 10), 1);
        assert_eq!(nice_step(100, 10), 10);
    }
}
