//! The timeline (`run --trace FILE`): Chrome trace event JSON, streamed by an observer while
//! the engine runs, so memory does not grow with the run (docs/trace.md).
//!
//! One process per core of the launch, named as the reports name it (`block 3 aiv 1`,
//! [`sim::launch::name`]; pid = the core's index in [`sim::launch::slots`] order), one thread
//! per pipe in [`Pipe`] order with its report name; an `X` slice per instruction on its pipe
//! covering its work (`[start, start + work)`: flags and barriers have none and are
//! zero-length), S's contiguous issue / loop / branch cycles as one `scalar` slice, every stall
//! as an `X` slice of category `stall` named by its cause, a flow (v2: `bind_id` + `flow_out` /
//! `flow_in` on the two slices) from each `set_flag` to the `wait_flag` that consumed its flag
//! and from a `cross_set` to each `cross_wait` that took an increment it released, and a
//! counter per on-chip scope per core of the bytes the plan holds live at the op that core's S
//! is at. One cycle is one microsecond of `ts`; the clock is in the metadata. A window
//! `[A, B)` keeps what overlaps it, clipped to it (the real cycles stay in the args).
//!
//! The slices of a pipe are exactly the spans the engine accounts ([`sim::engine::Span`]):
//! per core and pipe, slice durations of category `op`/`scalar` add up to `busy` and of
//! category `stall` to the stalls (without a window). A `set_flag` slice is held back until
//! its flag is consumed, and a `cross_set` slice until an increment it released is taken, so
//! the flow can be attached to it; everything else is written as it happens.
//!
//! **Which `cross_set` a `cross_wait` comes from.** The engine's counters are FIFO: a
//! `cross_wait` of counter `id` on core `c` takes the oldest increment of that counter
//! ([`CrossEvent::Take`]), and every increment was made by one signal ([`CrossEvent::Signal`]),
//! which names the sets it gathered (one for a cube core's mode-2 set; every setter's for
//! modes 0 and 1 and for the vector cores' mode-2 sets). The arrow comes from the set that
//! completed the signal: the last of its sets to fire (the latest start; among sets that fired
//! in the same cycle, the latest issued, the order in which the engine delivers them), the one
//! the wait actually waited for. So there is exactly one arrow per take, and a set that
//! released several counters (a cube core's mode-2 set, a mode-0 barrier) has one arrow to
//! each wait that took them; the other sets of a gathered signal have none.
//!
//! Writing is the only IO here, into the writer the caller gives; the first write error is
//! kept and returned by [`Trace::finish`].

use crate::untaken::Untaken;
use planner::liveness::{Interval, OpPos};
use planner::{PlacedBy, Planned};
use sim::engine::{Activity, CrossEvent, Issue, Observer, Release, Span, Stall};
use sim::footprint::{Bases, Footprint};
use sim::launch::Slot;
use sim::program::{ForLoop, OpKind, Program, Ref};
use sim::{BufferId, Config, Pipe, Space};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, Write};

const NP: usize = Pipe::COUNT;

/// What the trace covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceWindow {
    pub from: u64,
    pub to: u64,
}

impl TraceWindow {
    /// The whole run.
    pub const ALL: TraceWindow = TraceWindow {
        from: 0,
        to: u64::MAX,
    };

    /// `[from, to)` clipped to the window, or `None` when the span lies outside it (a
    /// zero-length span is inside when its cycle is).
    fn clip(self, from: u64, to: u64) -> Option<(u64, u64)> {
        if from >= self.to || (to <= self.from && !(from == to && from >= self.from)) {
            return None;
        }
        if from == to && from < self.from {
            return None;
        }
        Some((from.max(self.from), to.min(self.to)))
    }
}

/// One operand of an op, as the trace names it.
struct OpndInfo<'p> {
    /// `"x[t] gm x` / `"xb ub` (JSON string, unterminated).
    head: Vec<u8>,
    /// The buffer whose slot addresses the range is relative to (the first of a `select`).
    root: Option<BufferId>,
    footprint: Footprint<'p>,
    /// The byte range when it does not depend on loop variables.
    fixed: Option<Option<(u64, u64)>>,
    /// Bytes it selects when constant.
    bytes: Option<u64>,
}

/// What is static about an op, pre-rendered so a slice costs little more than its numbers.
struct OpInfo<'p> {
    /// `,"cat":"op","name":"vadd` (a flag's ` #id` and the closing quote follow).
    name: Vec<u8>,
    /// `","args":{"op":"body[2]","line":5,"column":9` (the rest of the args follow).
    op: Vec<u8>,
    /// `,"args":{"op":"body[2]","line":5,"column":9` for its stall slices (no line and column
    /// when unknown).
    stall: Vec<u8>,
    /// Where the path ends in `stall`.
    path_end: usize,
    /// Loop variables around the op, outermost first: `"t":` and the variable's id.
    vars: Vec<(Vec<u8>, usize)>,
    operands: Vec<OpndInfo<'p>>,
    /// Its position in the planner's order (for the live-bytes counters).
    pos: Option<usize>,
    /// `(src, dst)` of a `set_flag` / `wait_flag`, and whether it is the set.
    flag: Option<(Pipe, Pipe, bool)>,
    /// A `cross_set`: its slice is held until an increment it released is taken.
    cross_set: bool,
    /// Whether an operand's range depends on loop variables.
    dynamic: bool,
    /// A move (load, store, copy, fixpipe): its `bytes` are its destination's, operand 1, as
    /// the engine charges it; other ops report their largest operand.
    is_move: bool,
}

/// What is static about one part of the kernel (one program): its ops, where its buffers'
/// slots are, and its live-bytes table.
struct PartInfo<'p> {
    ops: Vec<OpInfo<'p>>,
    offsets: Vec<Vec<u64>>,
    /// Live bytes per position, `scopes.len()` values per position.
    live: Vec<u64>,
    /// The scopes with a counter.
    scopes: Vec<Space>,
}

/// An instruction S sent that has not started yet.
struct Pending {
    seq: u64,
    op: u32,
    flag_id: Option<u32>,
    /// The values of the op's loop variables, then its operands' slots; `None` when it
    /// cannot fall in the window.
    vals: Option<Vec<i64>>,
}

/// A `set_flag` slice held until its flag is consumed, so its flow can be attached.
struct Held {
    seq: u64,
    key: usize,
    /// The rendered slice without its closing brace; `None` outside the window.
    event: Option<Vec<u8>>,
}

/// A `cross_set` whose increments are not all taken yet (by its sequence number).
struct CrossSet {
    /// The cycle it fired (its start): which set of a gathered signal came last.
    start: u64,
    /// Its rendered slice without its closing brace until it is written; `None` outside the
    /// window or once written.
    event: Option<Vec<u8>>,
    /// Increments of signals it completed that no `cross_wait` has taken yet.
    outstanding: u32,
    /// Whether its slice was written with a flow out (its later takes get a flow in).
    flowing: bool,
    /// Whether its slice has been written (or there is none to write).
    written: bool,
}

/// What the trace follows on one core of the launch.
struct CoreTrace {
    /// The part of the kernel it runs.
    part: usize,
    pending: [VecDeque<Pending>; NP],
    /// The work span of each pipe's instruction about to start.
    work: [(u64, u64); NP],
    /// The instruction of that span (`None` once started).
    work_seq: [Option<u64>; NP],
    /// Earlier chunks of that instruction (an `mmad_l1` part), each written as a slice.
    chunks: [u32; NP],
    held: Vec<Held>,
    /// `{"ph":"C","pid":K,"name":"ub live bytes","ts":` per scope of its part.
    counter_heads: Vec<Vec<u8>>,
    current: Vec<u64>,
    counters_started: bool,
    /// S's current run of contiguous issue / loop / branch cycles, written as one slice.
    s_run: Option<SRun>,
}

impl CoreTrace {
    fn new(pid: usize, part: usize, scopes: &[Space]) -> CoreTrace {
        CoreTrace {
            part,
            pending: Default::default(),
            work: [(0, 0); NP],
            work_seq: [None; NP],
            chunks: [0; NP],
            held: Vec::new(),
            counter_heads: scopes
                .iter()
                .map(|s| {
                    format!(
                        "{{\"ph\":\"C\",\"pid\":{pid},\"name\":\"{} live bytes\",\"ts\":",
                        s.yaml_name()
                    )
                    .into_bytes()
                })
                .collect(),
            current: vec![0; scopes.len()],
            counters_started: false,
            s_run: None,
        }
    }
}

/// One part of a kernel, as [`Trace::for_launch`] reads it.
#[derive(Clone, Copy)]
pub struct TracePart<'a, 'p> {
    /// The part as loaded: the program whose op positions the plan's lifetimes use.
    pub original: &'a Program,
    /// The part that runs (the synchronised one).
    pub program: &'p Program,
    /// Its plan.
    pub planned: &'a Planned,
}

/// Bytes buffered before they are handed to the writer (small enough to stay in cache).
const CHUNK: usize = 1 << 16;

/// Untaken increments of one cross-core counter whose sets are remembered. A correct program
/// holds at most `cross_core.max_pending` (the run reports more as an overflow); past this,
/// increments get no arrow, so a runaway producer does not make the trace's memory grow.
const CROSS_CAP: usize = 1 << 10;

/// The default `--trace-max-bytes`: 256 MiB, about two million slices, more than the trace
/// viewers load comfortably (ui.perfetto.dev handles a few hundred MB in a browser tab).
pub const DEFAULT_TRACE_MAX_BYTES: u64 = 256 << 20;

/// Bytes kept free under the limit for what a cut trace ends with: the note of the cut and
/// the closing brackets.
const CUT_RESERVE: u64 = 512;

/// Where a trace stopped because it reached its byte limit ([`Trace::with_max_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceCut {
    /// The limit.
    pub max_bytes: u64,
    /// The cycle the run was at when the last chunk that fits was written: every event of
    /// the trace starts at or before it (slices may end after it), and the events after it
    /// are left out.
    pub cycle: u64,
}

/// The observer that writes the trace.
pub struct Trace<'p, W: Write> {
    out: W,
    error: Option<io::Error>,
    /// Bytes handed to `out` so far, and the most it may get (the metadata always goes).
    written: u64,
    max_bytes: u64,
    /// Set once the limit stopped the trace: nothing more is written but the end.
    cut: Option<TraceCut>,
    /// The latest cycle of an issue or span seen, and what it was at the last chunk written:
    /// every event written starts at or before the latter.
    now: u64,
    written_to: u64,
    buf: Vec<u8>,
    window: TraceWindow,
    parts: Vec<PartInfo<'p>>,
    /// Every core of the launch, in [`sim::launch::slots`] order (its index is its pid).
    cores: Vec<CoreTrace>,
    /// The core and pipe of the last `Work` span: the instruction the next start is of.
    last_work: (usize, usize),
    /// `(wait seq, set seq)`: the next start of `wait seq` gets a flow in.
    flow_in: Option<(u64, u64)>,
    events: usize,
    /// Stall reasons rendered once: `,"cat":"stall","name":"wait_flag MTE2#0"`.
    stall_names: Vec<(Stall, Vec<u8>)>,
    spare: Vec<Vec<i64>>,
    /// Rendered held slices no longer held, for reuse.
    spare_events: Vec<Vec<u8>>,
    /// `cross_set`s with increments not yet taken, by sequence number.
    cross_sets: BTreeMap<u64, CrossSet>,
    /// Per (core, counter id): the set behind each increment not yet taken, oldest first, and
    /// how many increments the entry stands for (more than one only past [`CROSS_CAP`]).
    increments: BTreeMap<(u32, u32), Untaken<u64>>,
}

/// Contiguous busy cycles of S that are not its own instructions.
#[derive(Clone, Copy)]
struct SRun {
    from: u64,
    to: u64,
    first: u32,
    sends: u64,
    loops: u64,
    branches: u64,
}

/// Appends a number.
#[inline(always)]
fn num(buf: &mut Vec<u8>, n: impl itoa::Integer) {
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Starts an event: the separator from the previous one.
#[inline(always)]
fn begin(buf: &mut Vec<u8>, events: &mut usize) {
    if *events > 0 {
        buf.extend_from_slice(b",\n");
    }
    *events += 1;
}

impl<'p> PartInfo<'p> {
    /// What the trace names of `program` (the program that runs: the synchronised one),
    /// planned by `planned` for `original` (the program as loaded).
    fn new(original: &Program, program: &'p Program, planned: &Planned) -> PartInfo<'p> {
        let bases = Bases::of(program);
        // inserted sync ops have paths of their own; the others keep the original's
        let by_path: HashMap<&str, usize> = original
            .ops
            .iter()
            .enumerate()
            .map(|(i, op)| (op.path.as_str(), i))
            .collect();
        let ops = program
            .ops
            .iter()
            .map(|op| {
                let pos =
                    by_path
                        .get(op.path.as_str())
                        .and_then(|&i| match planned.live.op_pos.get(i) {
                            Some(OpPos::At(p)) => Some(*p),
                            _ => None,
                        });
                let mut vars = Vec::new();
                let mut at = op.parent;
                while let Some(p) = at {
                    let parent = program.op(p);
                    if let OpKind::For(ForLoop { var, .. }) | OpKind::While { var, .. } =
                        parent.kind
                    {
                        vars.push((
                            format!("{}:", json(&program.vars[var.index()].name)).into_bytes(),
                            var.index(),
                        ));
                    }
                    at = parent.parent;
                }
                vars.reverse();
                let operands: Vec<OpndInfo> = sim::engine::operands(&op.kind)
                    .into_iter()
                    .map(|o| {
                        let memory = match o.base {
                            Ref::Tensor(t) => format!("gm {}", program.tensors[t.index()].name),
                            _ => o.space.yaml_name().to_string(),
                        };
                        let footprint = Footprint::new(&bases, o);
                        let fixed = footprint
                            .is_static()
                            .then(|| footprint.elems_at(&[]).map(|r| footprint.bytes(r)));
                        let head = json(&format!("{} {memory}", o.text));
                        OpndInfo {
                            head: head.as_bytes()[..head.len() - 1].to_vec(),
                            root: bases.roots(o.base).first().copied(),
                            footprint,
                            fixed,
                            bytes: o.bytes(),
                        }
                    })
                    .collect();
                let (name, flag) = match &op.kind {
                    OpKind::SetFlag { src, dst, .. } => {
                        (format!("set_flag {src}->{dst}"), Some((*src, *dst, true)))
                    }
                    OpKind::WaitFlag { src, dst, .. } => {
                        (format!("wait_flag {src}->{dst}"), Some((*src, *dst, false)))
                    }
                    OpKind::Barrier(t) => (format!("barrier {}", barrier_name(t)), None),
                    OpKind::CrossSet { mode, .. } => {
                        (format!("cross_set mode {}", mode.number()), None)
                    }
                    k => (k.name().to_string(), None),
                };
                let quoted = json(&name);
                let path = json(&op.path);
                // where the op is written, after its path
                let at = if op.loc.line > 0 {
                    format!(",\"line\":{},\"column\":{}", op.loc.line, op.loc.column)
                } else {
                    String::new()
                };
                let dynamic = operands.iter().any(|o: &OpndInfo| o.fixed.is_none());
                let is_move = matches!(
                    op.kind,
                    OpKind::Load { .. }
                        | OpKind::Store { .. }
                        | OpKind::Copy { .. }
                        | OpKind::Fixpipe { .. }
                );
                OpInfo {
                    dynamic,
                    is_move,
                    name: format!(",\"cat\":\"op\",\"name\":{}", &quoted[..quoted.len() - 1])
                        .into_bytes(),
                    op: format!("\",\"args\":{{\"op\":{path}{at}").into_bytes(),
                    stall: format!(",\"args\":{{\"op\":{path}{at}").into_bytes(),
                    path_end: 14 + path.len(),
                    vars,
                    operands,
                    pos,
                    flag,
                    cross_set: matches!(op.kind, OpKind::CrossSet { .. }),
                }
            })
            .collect();

        let plan = &planned.plan;
        // a counter per scope that holds anything (`required` leaves out `at:`-pinned buffers)
        let scopes: Vec<Space> = plan
            .scopes
            .iter()
            .filter(|s| s.peak_live > 0)
            .map(|s| s.space)
            .collect();
        let live = live_bytes(planned, &scopes);
        let mut offsets = vec![Vec::new(); program.buffers.len()];
        for b in &plan.buffers {
            if let Some(o) = offsets.get_mut(b.buffer.index()) {
                o.clone_from(&b.offsets);
            }
        }
        PartInfo {
            ops,
            offsets,
            live,
            scopes,
        }
    }
}

impl<'p, W: Write> Trace<'p, W> {
    /// A trace of the launch of `parts` (one program, or a mixed kernel's `aic` and `aiv`
    /// parts, in order: every core of [`sim::launch::slots`] gets a process), written to
    /// `out`.
    pub fn for_launch(
        parts: &[TracePart<'_, 'p>],
        config: &Config,
        window: TraceWindow,
        out: W,
    ) -> Trace<'p, W> {
        let infos: Vec<PartInfo<'p>> = parts
            .iter()
            .map(|p| PartInfo::new(p.original, p.program, p.planned))
            .collect();
        let programs: Vec<&Program> = parts.iter().map(|p| p.program).collect();
        let slots = sim::launch::slots(&programs, config);
        let cores = slots
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let part = s.part as usize;
                infos.get(part).map(|i| CoreTrace::new(k, part, &i.scopes))
            })
            .collect();
        let mut t = Trace {
            out,
            error: None,
            written: 0,
            max_bytes: u64::MAX,
            cut: None,
            now: 0,
            written_to: 0,
            buf: Vec::with_capacity(CHUNK + 4096),
            window,
            parts: infos,
            cores,
            last_work: (0, 0),
            flow_in: None,
            events: 0,
            stall_names: Vec::new(),
            spare: Vec::new(),
            spare_events: Vec::new(),
            cross_sets: BTreeMap::new(),
            increments: BTreeMap::new(),
        };
        t.header(programs.first().copied(), &slots, config);
        // the metadata goes whatever the limit, so that even a tiny limit leaves a document
        // that names its processes and tracks
        t.drain();
        t
    }

    /// Stops writing events once the file would pass `max_bytes` (`--trace-max-bytes`): the
    /// events of whole 64 KiB chunks up to the limit are kept, then a note of the cut and the
    /// document's end, so what is written is a valid trace of the run up to [`Trace::stopped_at`]'s
    /// cycle. Without it a trace has no limit.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Where the byte limit stopped the trace, if it did.
    pub fn stopped_at(&self) -> Option<TraceCut> {
        self.cut
    }

    /// The metadata and the processes' and tracks' names and order.
    fn header(&mut self, first: Option<&Program>, slots: &[Slot], config: &Config) {
        let window = if self.window == TraceWindow::ALL {
            "null".to_string()
        } else {
            format!("[{},{}]", self.window.from, self.window.to)
        };
        let (kernel, label) = first.map_or((String::new(), String::new()), |p| {
            (p.kernel.clone(), config.core_label(p.core))
        });
        let head = format!(
            "{{\"metadata\":{{\"generator\":\"npusim\",\"kernel\":{},\"config\":{},\
             \"clock_mhz\":{},\"time_unit\":\"1 us of ts = 1 cycle of the core clock\",\
             \"window\":{window}}},\n\"traceEvents\":[\n",
            json(&kernel),
            json(&label),
            config.clock_mhz,
        );
        self.buf.extend_from_slice(head.as_bytes());
        let mut meta = Vec::new();
        for (k, slot) in slots.iter().enumerate().take(self.cores.len()) {
            let core = config.core(slot.core);
            meta.push(format!(
                "{{\"ph\":\"M\",\"pid\":{k},\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
                json(&sim::launch::name(config, slot))
            ));
            meta.push(format!(
                "{{\"ph\":\"M\",\"pid\":{k},\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{k}}}}}"
            ));
            for p in Pipe::ALL.into_iter().filter(|p| core.pipes.contains(p)) {
                meta.push(format!(
                    "{{\"ph\":\"M\",\"pid\":{k},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
                    p.index(),
                    p.report_name()
                ));
                meta.push(format!(
                    "{{\"ph\":\"M\",\"pid\":{k},\"tid\":{},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{}}}}}",
                    p.index(),
                    p.index()
                ));
            }
        }
        for m in meta {
            self.begin();
            self.buf.extend_from_slice(m.as_bytes());
        }
    }

    /// Ends the document and hands back the writer, or the first write error.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(cut) = self.cut {
            // what is still held is past the cut: only a note of the cut and the end
            self.buf.clear();
            self.begin();
            let note = format!(
                "{{\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":{},\"name\":\"trace cut at --trace-max-bytes\",\"args\":{{\"max_bytes\":{},\"cycle\":{}}}}}\n]}}\n",
                cut.cycle, cut.max_bytes, cut.cycle
            );
            self.buf.extend_from_slice(note.as_bytes());
            if self.error.is_none() {
                if let Err(e) = self.out.write_all(&self.buf) {
                    self.error = Some(e);
                }
            }
            return match self.error.take() {
                Some(e) => Err(e),
                None => {
                    self.out.flush()?;
                    Ok(self.out)
                }
            };
        }
        for c in 0..self.cores.len() {
            self.flush_s_run(c);
        }
        // sets whose flag nobody consumed (or consumed after the run stopped)
        for c in 0..self.cores.len() {
            let held = std::mem::take(&mut self.cores[c].held);
            for h in held {
                if let Some(e) = h.event {
                    self.begin();
                    self.buf.extend_from_slice(&e);
                    self.buf.push(b'}');
                }
            }
        }
        // cross-core sets none of whose increments was taken
        let sets = std::mem::take(&mut self.cross_sets);
        for x in sets.into_values() {
            if let Some(e) = x.event {
                self.begin();
                self.buf.extend_from_slice(&e);
                self.buf.push(b'}');
            }
        }
        self.buf.extend_from_slice(b"\n]}\n");
        self.drain();
        match self.error.take() {
            Some(e) => Err(e),
            None => {
                self.out.flush()?;
                Ok(self.out)
            }
        }
    }

    /// Events written so far (metadata included).
    pub fn events(&self) -> usize {
        self.events
    }

    /// Starts an event: the separator from the previous one.
    #[inline(always)]
    fn begin(&mut self) {
        begin(&mut self.buf, &mut self.events);
    }

    /// Hands the buffered bytes to the writer once there is a chunk of them.
    #[inline(always)]
    fn maybe_drain(&mut self) {
        if self.buf.len() >= CHUNK {
            self.drain();
        }
    }

    fn drain(&mut self) {
        let len = self.buf.len() as u64;
        let fits = self.written == 0
            || self.written.saturating_add(len).saturating_add(CUT_RESERVE) <= self.max_bytes;
        if self.cut.is_none() && !fits {
            self.cut = Some(TraceCut {
                max_bytes: self.max_bytes,
                cycle: self.written_to,
            });
        }
        if self.error.is_none() && self.cut.is_none() {
            match self.out.write_all(&self.buf) {
                Ok(()) => {
                    self.written += len;
                    self.written_to = self.now;
                }
                Err(e) => self.error = Some(e),
            }
        }
        self.buf.clear();
    }

    /// The live-bytes counters of core `c` at cycle `t` when its S reaches position `pos`.
    fn counters(&mut self, c: usize, pos: usize, t: u64) {
        let core = &mut self.cores[c];
        let live = &self.parts[core.part].live;
        let n = core.current.len();
        if n == 0 || t >= self.window.to {
            return;
        }
        let start = !core.counters_started && t >= self.window.from;
        for s in 0..n {
            let v = live.get(pos * n + s).copied().unwrap_or(0);
            if v == core.current[s] && !start {
                continue;
            }
            core.current[s] = v;
            if t >= self.window.from {
                begin(&mut self.buf, &mut self.events);
                self.buf.extend_from_slice(&core.counter_heads[s]);
                num(&mut self.buf, t);
                self.buf.extend_from_slice(b",\"args\":{\"bytes\":");
                num(&mut self.buf, v);
                self.buf.extend_from_slice(b"}}");
            }
        }
        core.counters_started |= start;
        self.maybe_drain();
    }

    /// What the args of an instruction need from its issue: its loop variables' values and
    /// its operands' slots.
    fn snapshot(&mut self, part: usize, issue: &Issue<'_>) -> Vec<i64> {
        let mut v = self.spare.pop().unwrap_or_default();
        v.clear();
        let info = &self.parts[part].ops[issue.op.index()];
        v.extend(info.vars.iter().map(|(_, var)| issue.vars[*var]));
        // exactly one slot per operand, so the variables after them are found
        let n = info.operands.len();
        v.extend((0..n).map(|k| issue.slots.get(k).map_or(0, |&s| s as i64)));
        // the few variables a dynamic operand range depends on: all of them, after the rest
        if info.dynamic {
            v.extend_from_slice(issue.vars);
        }
        v
    }

    /// Appends the dynamic args of an instruction of `op` of part `part` (`,"iteration":
    /// {..},"operands":[..],"bytes":N`) from its snapshot.
    fn args(&mut self, part: usize, op: usize, vals: &[i64]) {
        let part = &self.parts[part];
        let info = &part.ops[op];
        let a = &mut self.buf;
        let nv = info.vars.len();
        if nv > 0 {
            a.extend_from_slice(b",\"iteration\":{");
            for (i, (name, _)) in info.vars.iter().enumerate() {
                if i > 0 {
                    a.push(b',');
                }
                a.extend_from_slice(name);
                num(a, vals[i]);
            }
            a.push(b'}');
        }
        if info.operands.is_empty() {
            return;
        }
        let nops = info.operands.len();
        let all_vars = vals.get(nv + nops..).unwrap_or(&[]);
        let mut bytes = 0u64;
        a.extend_from_slice(b",\"operands\":[");
        for (k, o) in info.operands.iter().enumerate() {
            if k > 0 {
                a.push(b',');
            }
            a.extend_from_slice(&o.head);
            let range = match o.fixed {
                Some(r) => r,
                None => o.footprint.elems_at(all_vars).map(|r| o.footprint.bytes(r)),
            };
            let mut base = 0;
            if let Some(b) = o.root {
                let slot = vals.get(nv + k).copied().unwrap_or(0);
                a.extend_from_slice(b" slot ");
                num(a, slot);
                base = part.offsets[b.index()]
                    .get(slot as usize)
                    .copied()
                    .unwrap_or(0);
            }
            match range {
                Some((lo, hi)) => {
                    // an on-chip operand's range in its scope: its slot's address added
                    a.extend_from_slice(b" [");
                    num(a, base + lo);
                    a.push(b',');
                    num(a, base + hi);
                    a.extend_from_slice(b")\"");
                    let b = o.bytes.unwrap_or(hi - lo);
                    bytes = match (info.is_move, k) {
                        (true, 1) => b,
                        (true, _) => bytes,
                        (false, _) => bytes.max(b),
                    };
                }
                None => a.extend_from_slice(b" []\""),
            }
        }
        a.extend_from_slice(b"],\"bytes\":");
        num(a, bytes);
    }

    /// `{"ph":"X","pid":C,"tid":P,"ts":A,"dur":D` for `[from, to)` clipped to the window.
    #[inline(always)]
    fn slice_head(&mut self, c: usize, p: usize, a: u64, b: u64) {
        self.buf.extend_from_slice(b"{\"ph\":\"X\",\"pid\":");
        num(&mut self.buf, c);
        self.buf.extend_from_slice(b",\"tid\":");
        num(&mut self.buf, p);
        self.buf.extend_from_slice(b",\"ts\":");
        num(&mut self.buf, a);
        self.buf.extend_from_slice(b",\"dur\":");
        num(&mut self.buf, b - a);
    }

    /// `,"start":F,"end":T` when the window cut the slice (its ts and dur say it otherwise).
    #[inline(always)]
    fn cut(&mut self, from: u64, to: u64, a: u64, b: u64) {
        if (a, b) != (from, to) {
            self.buf.extend_from_slice(b",\"start\":");
            num(&mut self.buf, from);
            self.buf.extend_from_slice(b",\"end\":");
            num(&mut self.buf, to);
        }
    }

    fn stall_name(&mut self, reason: Stall) -> usize {
        match self.stall_names.iter().position(|(r, _)| *r == reason) {
            Some(i) => i,
            None => {
                let name = format!(",\"cat\":\"stall\",\"name\":{}", json(&reason.to_string()));
                self.stall_names.push((reason, name.into_bytes()));
                self.stall_names.len() - 1
            }
        }
    }

    /// Writes core `c`'s pending run of S's issue / loop / branch cycles as one `scalar`
    /// slice: S sends one instruction per `issue_cycles`, so a slice each would double the
    /// file for nothing a reader looks at.
    fn flush_s_run(&mut self, c: usize) {
        let Some(r) = self.cores[c].s_run.take() else {
            return;
        };
        let Some((a, b)) = self.window.clip(r.from, r.to) else {
            return;
        };
        self.begin();
        self.slice_head(c, Pipe::S.index(), a, b);
        self.buf
            .extend_from_slice(b",\"cat\":\"scalar\",\"name\":\"scalar\",\"args\":{\"sends\":");
        num(&mut self.buf, r.sends);
        self.buf.extend_from_slice(b",\"loop_iterations\":");
        num(&mut self.buf, r.loops);
        self.buf.extend_from_slice(b",\"ifs\":");
        num(&mut self.buf, r.branches);
        self.buf.extend_from_slice(b",\"first\":");
        let part = self.cores[c].part;
        let first = &self.parts[part].ops[r.first as usize];
        // `,"args":{"op":"body[2]"` minus its `,"args":{"op":` prefix
        self.buf.extend_from_slice(&first.stall[14..first.path_end]);
        self.cut(r.from, r.to, a, b);
        self.buf.extend_from_slice(b"}}");
        self.maybe_drain();
    }

    fn flag_key(src: Pipe, dst: Pipe, id: u32) -> usize {
        (src.index() * NP + dst.index()) * 65_536 + id as usize
    }

    /// The core and pipe whose next instruction to start is `seq`: the last `Work` span's
    /// (the engine reports an instruction's work just before its start), else any.
    fn started(&self, seq: u64) -> Option<(usize, usize)> {
        let is = |c: usize, p: usize| {
            self.cores[c].pending[p]
                .front()
                .is_some_and(|x| x.seq == seq)
        };
        let (c, p) = self.last_work;
        if c < self.cores.len() && is(c, p) {
            return Some((c, p));
        }
        (0..self.cores.len()).find_map(|c| (0..NP).find(|&p| is(c, p)).map(|p| (c, p)))
    }

    /// Writes chunk `i` (not the last) of an `mmad_l1` part of `op` on core `c`'s pipe `p`,
    /// `[from, to)`: a slice of its own, the part's stalls between its chunks beside it.
    fn chunk_slice(&mut self, c: usize, p: usize, op: usize, (from, to): (u64, u64), i: u32) {
        let Some((a, b)) = self.window.clip(from, to) else {
            return;
        };
        self.begin();
        self.slice_head(c, p, a, b);
        let info = &self.parts[self.cores[c].part].ops[op];
        self.buf.extend_from_slice(&info.name);
        self.buf.extend_from_slice(&info.op);
        self.buf.extend_from_slice(b",\"chunk\":");
        num(&mut self.buf, i);
        self.buf.extend_from_slice(b",\"start\":");
        num(&mut self.buf, from);
        self.buf.extend_from_slice(b",\"end\":");
        num(&mut self.buf, to);
        self.buf.extend_from_slice(b"}}");
        self.maybe_drain();
    }

    /// Writes the held slice of `cross_set` `seq`, with a flow out when `flow`.
    fn write_cross_set(&mut self, seq: u64, flow: bool) {
        let Some(x) = self.cross_sets.get_mut(&seq) else {
            return;
        };
        x.written = true;
        let Some(e) = x.event.take() else {
            return;
        };
        x.flowing = flow;
        begin(&mut self.buf, &mut self.events);
        self.buf.extend_from_slice(&e);
        if flow {
            self.buf.extend_from_slice(b",\"bind_id\":\"0x");
            self.buf.extend_from_slice(format!("{seq:x}").as_bytes());
            self.buf.extend_from_slice(b"\",\"flow_out\":true");
        }
        self.buf.push(b'}');
        self.spare_events.push(e);
        self.maybe_drain();
    }
}

/// JSON string literal.
fn json(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn barrier_name(t: &sim::program::BarrierTarget) -> String {
    match t {
        sim::program::BarrierTarget::All => "all".into(),
        sim::program::BarrierTarget::Pipe(p) => p.report_name().into(),
    }
}

/// Per position, the bytes of each scope the plan holds for the storage entries live there
/// (every slot): the counters' values. Its maximum per scope is the plan's `peak_live`.
///
/// Counted as the planner counts: the two buffers of an applied in-place pair are one storage
/// entry, live over both their lifetimes (so once at the op where one dies and the other is
/// written), at its slots' bytes.
pub fn live_bytes(planned: &Planned, scopes: &[Space]) -> Vec<u64> {
    let n = scopes.len();
    let live = &planned.live;
    let positions = live.positions;
    let buffer = |b: BufferId| planned.plan.buffers.get(b.index());
    // liveness entries merged by the applied in-place pairs, as the planner merges them
    let mut rep: Vec<usize> = (0..live.entries.len()).collect();
    let find = |rep: &[usize], mut e: usize| {
        while rep[e] != e {
            e = rep[e];
        }
        e
    };
    for &(gen, kill) in &planned.applied {
        let fixed = |b: BufferId| buffer(b).is_none_or(|bp| bp.placed_by == PlacedBy::Fixed);
        let (Some(&g), Some(&k)) = (
            live.entry_of.get(gen.index()),
            live.entry_of.get(kill.index()),
        ) else {
            continue;
        };
        if fixed(gen) || fixed(kill) || g >= rep.len() || k >= rep.len() {
            continue;
        }
        let (g, k) = (find(&rep, g), find(&rep, k));
        if g != k {
            rep[g] = k;
        }
    }
    // per merged entry: its scope, its bytes (every slot) and its lifetimes
    let mut merged: Vec<Option<(usize, u64, Vec<Interval>)>> = vec![None; rep.len()];
    for (i, e) in live.entries.iter().enumerate() {
        let Some(bp) = e.buffers.first().and_then(|&b| buffer(b)) else {
            continue;
        };
        let Some(s) = scopes.iter().position(|&s| s == bp.scope) else {
            continue;
        };
        let bytes = bp.bytes.saturating_mul(bp.offsets.len() as u64);
        let m = merged[find(&rep, i)].get_or_insert_with(|| (s, 0, Vec::new()));
        m.1 = m.1.max(bytes);
        m.2.extend_from_slice(&e.lifetime);
    }
    let mut delta = vec![0i128; (positions + 1) * n];
    for (s, bytes, mut lifetime) in merged.into_iter().flatten() {
        // the union of the members' lifetimes: a position they share counts once
        lifetime.sort();
        let mut union: Vec<Interval> = Vec::new();
        for iv in lifetime {
            match union.last_mut() {
                Some(u) if iv.first <= u.last + 1 => u.last = u.last.max(iv.last),
                _ => union.push(iv),
            }
        }
        for iv in union.iter().filter(|iv| iv.last < positions) {
            delta[iv.first * n + s] += i128::from(bytes);
            delta[(iv.last + 1) * n + s] -= i128::from(bytes);
        }
    }
    let mut live = vec![0u64; positions * n];
    let mut run = vec![0i128; n];
    for p in 0..positions {
        for s in 0..n {
            run[s] += delta[p * n + s];
            live[p * n + s] = run[s].max(0) as u64;
        }
    }
    live
}

impl<W: Write> Observer for Trace<'_, W> {
    fn on_issue(&mut self, issue: &Issue<'_>) {
        self.now = self.now.max(issue.cycle);
        let c = issue.core as usize;
        let Some(core) = self.cores.get(c) else {
            return;
        };
        let part = core.part;
        if let Some(pos) = self.parts[part].ops[issue.op.index()].pos {
            self.counters(c, pos, issue.cycle);
        }
        let vals = (issue.cycle < self.window.to).then(|| self.snapshot(part, issue));
        self.cores[c].pending[issue.pipe.index()].push_back(Pending {
            seq: issue.seq,
            op: issue.op.0,
            flag_id: issue.flag_id,
            vals,
        });
    }

    fn on_span(&mut self, span: &Span) {
        self.now = self.now.max(span.from);
        let c = span.core as usize;
        if c >= self.cores.len() {
            return;
        }
        if span.pipe == Pipe::S {
            match span.what {
                Activity::Issue | Activity::Loop | Activity::Branch => {
                    let (s, l, b) = match span.what {
                        Activity::Issue => (1, 0, 0),
                        Activity::Loop => (0, 1, 0),
                        _ => (0, 0, 1),
                    };
                    match &mut self.cores[c].s_run {
                        Some(r) if r.to == span.from => {
                            r.to = span.to;
                            r.sends += s;
                            r.loops += l;
                            r.branches += b;
                        }
                        _ => {
                            self.flush_s_run(c);
                            self.cores[c].s_run = Some(SRun {
                                from: span.from,
                                to: span.to,
                                first: span.op.0,
                                sends: s,
                                loops: l,
                                branches: b,
                            });
                        }
                    }
                    return;
                }
                _ => self.flush_s_run(c),
            }
        }
        if span.what == Activity::Work {
            let p = span.pipe.index();
            let core = &mut self.cores[c];
            if span.seq.is_some() && core.work_seq[p] == span.seq {
                // the instruction's work so far was an earlier chunk of an `mmad_l1` part
                let (from, to) = core.work[p];
                let i = core.chunks[p];
                core.chunks[p] += 1;
                self.chunk_slice(c, p, span.op.index(), (from, to), i);
            } else {
                core.chunks[p] = 0;
            }
            let core = &mut self.cores[c];
            core.work[p] = (span.from, span.to);
            core.work_seq[p] = span.seq;
            self.last_work = (c, p);
            return;
        }
        let Some((a, b)) = self.window.clip(span.from, span.to) else {
            return;
        };
        let op = span.op.index();
        self.begin();
        self.slice_head(c, span.pipe.index(), a, b);
        if let Activity::Stall(reason) = span.what {
            let i = self.stall_name(reason);
            self.buf.extend_from_slice(&self.stall_names[i].1);
        }
        let part = self.cores[c].part;
        self.buf.extend_from_slice(&self.parts[part].ops[op].stall);
        self.cut(span.from, span.to, a, b);
        self.buf.extend_from_slice(b"}}");
        self.maybe_drain();
    }

    fn on_release(&mut self, release: &Release) {
        let Some(core) = self.cores.get_mut(release.core as usize) else {
            return;
        };
        let Some(i) = core.held.iter().position(|h| h.seq == release.set_seq) else {
            return;
        };
        let h = core.held.swap_remove(i);
        if let Some(e) = h.event {
            self.begin();
            self.buf.extend_from_slice(&e);
            if self.window.clip(release.cycle, release.cycle).is_some() {
                self.buf.extend_from_slice(b",\"bind_id\":\"0x");
                self.buf
                    .extend_from_slice(format!("{:x}", h.seq).as_bytes());
                self.buf.extend_from_slice(b"\",\"flow_out\":true");
                self.flow_in = Some((release.wait_seq, h.seq));
            }
            self.buf.push(b'}');
            self.spare_events.push(e);
        }
    }

    fn on_cross(&mut self, event: &CrossEvent<'_>) {
        match *event {
            CrossEvent::Signal { core, id, sets, .. } => {
                // the set that completed the signal: the last to fire (the engine delivers
                // signals in (cycle, seq) order, and every set has the same latency)
                let last = sets
                    .iter()
                    .filter_map(|s| self.cross_sets.get(s).map(|x| (x.start, *s)))
                    .max()
                    .map(|(_, s)| s)
                    .or_else(|| sets.iter().copied().max());
                let Some(last) = last else {
                    return;
                };
                // the others released nothing themselves: written as they are, no arrow
                for &s in sets.iter().filter(|&&s| s != last) {
                    self.write_cross_set(s, false);
                    self.cross_sets.remove(&s);
                }
                let q = self.increments.entry((core, id)).or_default();
                if q.push(Some(last), CROSS_CAP) {
                    if let Some(x) = self.cross_sets.get_mut(&last) {
                        x.outstanding += 1;
                    }
                    return;
                }
                // a runaway counter: its increments past the cap get no arrow
                if self
                    .cross_sets
                    .get(&last)
                    .is_some_and(|x| x.outstanding == 0)
                {
                    self.write_cross_set(last, false);
                    self.cross_sets.remove(&last);
                }
            }
            CrossEvent::Take {
                core,
                id,
                cycle,
                wait_seq,
            } => {
                // an increment past the cap has no set: no arrow
                let Some(Some(set)) = self.increments.get_mut(&(core, id)).and_then(|q| q.take())
                else {
                    return;
                };
                let inside = self.window.clip(cycle, cycle).is_some();
                if self.cross_sets.get(&set).is_some_and(|x| !x.written) {
                    self.write_cross_set(set, inside);
                }
                let Some(x) = self.cross_sets.get_mut(&set) else {
                    return;
                };
                if x.flowing && inside {
                    self.flow_in = Some((wait_seq, set));
                }
                x.outstanding = x.outstanding.saturating_sub(1);
                if x.outstanding == 0 {
                    self.cross_sets.remove(&set);
                }
            }
        }
    }

    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        let Some((c, p)) = self.started(seq) else {
            return;
        };
        let core = &mut self.cores[c];
        let pd = core.pending[p].pop_front().expect("found above");
        let (from, to) = core.work[p];
        core.work_seq[p] = None;
        let chunks = core.chunks[p];
        let part = core.part;
        debug_assert_eq!(from, start);
        let info = &self.parts[part].ops[pd.op as usize];
        let cross_set = info.cross_set;
        let Some(vals) = pd.vals else {
            if cross_set {
                // outside the window, but which set of a signal came last still counts
                self.cross_sets.insert(
                    seq,
                    CrossSet {
                        start: from,
                        event: None,
                        outstanding: 0,
                        flowing: false,
                        written: true,
                    },
                );
            }
            return;
        };
        let set_key = match info.flag {
            Some((src, dst, true)) => Some(Self::flag_key(src, dst, pd.flag_id.unwrap_or(0))),
            _ => None,
        };
        let mut event = None;
        if let Some((a, b)) = self.window.clip(from, to) {
            // a set_flag's or cross_set's slice is held until its wait: rendered apart from
            // the stream
            let mut held = if set_key.is_some() || cross_set {
                let mut v = self.spare_events.pop().unwrap_or_default();
                v.clear();
                std::mem::swap(&mut v, &mut self.buf);
                Some(v)
            } else {
                self.begin();
                None
            };
            self.slice_head(c, p, a, b);
            let info = &self.parts[part].ops[pd.op as usize];
            self.buf.extend_from_slice(&info.name);
            if let Some(id) = pd.flag_id {
                self.buf.extend_from_slice(b" #");
                num(&mut self.buf, id);
            }
            self.buf.extend_from_slice(&info.op);
            self.args(part, pd.op as usize, &vals);
            self.buf.extend_from_slice(b",\"start\":");
            num(&mut self.buf, from);
            self.buf.extend_from_slice(b",\"end\":");
            num(&mut self.buf, to);
            self.buf.extend_from_slice(b",\"complete\":");
            num(&mut self.buf, complete);
            if chunks > 0 {
                // the last chunk of an `mmad_l1` part; the earlier ones have slices of their own
                self.buf.extend_from_slice(b",\"chunks\":");
                num(&mut self.buf, chunks + 1);
            }
            self.buf.push(b'}');
            if let Some((w, s)) = self.flow_in {
                if w == seq {
                    self.buf.extend_from_slice(b",\"bind_id\":\"0x");
                    self.buf.extend_from_slice(format!("{s:x}").as_bytes());
                    self.buf.extend_from_slice(b"\",\"flow_in\":true");
                    self.flow_in = None;
                }
            }
            match held.as_mut() {
                Some(stream) => {
                    // the stream back in place, the set's slice taken out
                    std::mem::swap(stream, &mut self.buf);
                    event = held;
                }
                None => {
                    self.buf.push(b'}');
                    self.maybe_drain();
                }
            }
        }
        self.spare.push(vals);
        if cross_set {
            self.cross_sets.insert(
                seq,
                CrossSet {
                    start: from,
                    written: event.is_none(),
                    event,
                    outstanding: 0,
                    flowing: false,
                },
            );
            return;
        }
        if let Some(key) = set_key {
            let core = &mut self.cores[c];
            if !core.held.iter().any(|h| h.key == key) {
                core.held.push(Held { seq, key, event });
                return;
            }
            // a second set of a flag still set: the engine ignores it; nothing consumes it
            if let Some(e) = event {
                self.begin();
                self.buf.extend_from_slice(&e);
                self.buf.push(b'}');
                self.spare_events.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_clips_and_keeps_zero_length_inside() {
        let w = TraceWindow { from: 10, to: 20 };
        assert_eq!(w.clip(0, 5), None);
        assert_eq!(w.clip(5, 12), Some((10, 12)));
        assert_eq!(w.clip(15, 25), Some((15, 20)));
        assert_eq!(w.clip(20, 30), None);
        assert_eq!(w.clip(10, 10), Some((10, 10)));
        assert_eq!(w.clip(9, 9), None);
        assert_eq!(w.clip(20, 20), None);
        assert_eq!(TraceWindow::ALL.clip(0, 0), Some((0, 0)));
    }

    #[test]
    fn a_runaway_cross_core_counter_keeps_the_trace_bounded() {
        let config = sim::load_config(
            sim::builtin::builtin(sim::builtin::DEFAULT).unwrap(),
            "built-in",
        )
        .unwrap();
        let text = "kernel: k\ncore: aiv\nlaunch: { blocks: 2 }\nbody:\n  \
                    - cross_set: { mode: 0, pipe: s, id: 0 }\n  - cross_wait: { id: 0 }\n";
        let program = sim::load_program(text, "k.yaml", &config, &[]).unwrap();
        let planned =
            planner::plan_program(&program, &config, &planner::PlanOptions::default()).unwrap();
        let part = TracePart {
            original: &program,
            program: &program,
            planned: &planned,
        };
        let mut t = Trace::for_launch(&[part], &config, TraceWindow::ALL, Vec::new());
        assert_eq!(t.cores.len(), 2);
        // many more increments than any correct program holds, none taken
        let n = 3 * CROSS_CAP as u64;
        for k in 0..n {
            t.on_cross(&CrossEvent::Signal {
                core: 1,
                id: 0,
                cycle: k,
                sets: &[k],
            });
        }
        let q = &t.increments[&(1, 0)];
        assert_eq!(q.entries(), CROSS_CAP + 1);
        assert_eq!(q.newest(), Some(&(None, (n as usize - CROSS_CAP) as u32)));
        // every take is of a known increment, in order; the late ones draw nothing
        for k in 0..n {
            t.on_cross(&CrossEvent::Take {
                core: 1,
                id: 0,
                cycle: n + k,
                wait_seq: n + k,
            });
        }
        assert!(t.increments[&(1, 0)].is_empty());
        assert!(t.cross_sets.is_empty());
        let out = t.finish().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let names: Vec<&str> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["block 0 aiv 0", "block 1 aiv 0"]);
    }

    #[test]
    fn a_limit_below_the_metadata_keeps_the_metadata_and_the_note_of_the_cut() {
        let config = sim::load_config(
            sim::builtin::builtin(sim::builtin::DEFAULT).unwrap(),
            "built-in",
        )
        .unwrap();
        let text = "kernel: k\ncore: aiv\nbody:\n  - scalar: { cycles: 5 }\n";
        let program = sim::load_program(text, "k.yaml", &config, &[]).unwrap();
        let planned =
            planner::plan_program(&program, &config, &planner::PlanOptions::default()).unwrap();
        let part = TracePart {
            original: &program,
            program: &program,
            planned: &planned,
        };
        let mut t =
            Trace::for_launch(&[part], &config, TraceWindow::ALL, Vec::new()).with_max_bytes(1);
        // a chunk's worth of S spans: each is one slice, so the buffer passes CHUNK and drains
        let span = |k: u64| Span {
            core: 0,
            pipe: Pipe::S,
            from: 10 * k,
            to: 10 * k + 5,
            op: sim::OpId(0),
            seq: Some(k),
            what: Activity::Stall(Stall::BarrierAll),
        };
        for k in 0..10_000 {
            t.on_span(&span(k));
        }
        // the metadata went before any event; the first chunk of slices did not fit
        let cut = t.stopped_at().expect("the limit stopped the trace");
        assert_eq!(
            cut,
            TraceCut {
                max_bytes: 1,
                cycle: 0
            }
        );
        let out = t.finish().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        assert!(events[..events.len() - 1].iter().all(|e| e["ph"] == "M"));
        assert_eq!(
            events.last().unwrap()["name"],
            "trace cut at --trace-max-bytes"
        );
    }
}
