//! The timeline (`run --trace FILE`): Chrome trace event JSON, streamed by an observer while
//! the engine runs, so memory does not grow with the run (docs/trace.md).
//!
//! One process per core (`block 0 aiv 0`), one thread per pipe in [`Pipe`] order with its
//! report name; an `X` slice per instruction on its pipe covering its work (`[start, start +
//! work)`: flags and barriers have none and are zero-length), S's issue / loop / branch cycles
//! as slices on S, every stall as an `X` slice of category `stall` named by its cause, a flow
//! (v2: `bind_id` + `flow_out` / `flow_in` on the two slices) from each `set_flag` to the
//! `wait_flag` that consumed its flag, and a counter per on-chip scope of the bytes the plan
//! holds live at the op S is at. One cycle is one microsecond of `ts`; the clock is in the
//! metadata. A window `[A, B)` keeps what overlaps it, clipped to it (the real cycles stay in
//! the args).
//!
//! The slices of a pipe are exactly the spans the engine accounts ([`sim::engine::Span`]):
//! per pipe, slice durations of category `op`/`scalar` add up to `busy` and of category
//! `stall` to the stalls (without a window).
//!
//! Writing is the only IO here, into the writer the caller gives; the first write error is
//! kept and returned by [`Trace::finish`].

use planner::liveness::OpPos;
use planner::Planned;
use sim::engine::{Activity, Issue, Observer, Release, Span};
use sim::footprint::{Bases, Footprint};
use sim::program::{ForLoop, OpKind, Program, Ref};
use sim::{BufferId, Config, Pipe, Space};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
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
    /// `{"operand":"x@1","memory":"ub"` (JSON, unterminated).
    head: String,
    /// The buffer whose slot addresses the range is relative to (the first of a `select`).
    root: Option<BufferId>,
    footprint: Footprint<'p>,
    /// The element range when it does not depend on loop variables.
    fixed: Option<Option<(u64, u64)>>,
    /// Bytes it selects when constant.
    bytes: Option<u64>,
}

/// What is static about an op.
struct OpInfo<'p> {
    /// The slice name, JSON-escaped with quotes (`"vadd"`).
    name: String,
    /// `"path":"body[2]"` (JSON fragment).
    path: String,
    /// Loop variables around the op, outermost first, as `"name":` fragments with their ids.
    vars: Vec<(String, usize)>,
    operands: Vec<OpndInfo<'p>>,
    /// Its position in the planner's order (for the live-bytes counters).
    pos: Option<usize>,
    /// `(src, dst)` of a `set_flag` / `wait_flag`.
    flag: Option<(Pipe, Pipe)>,
}

/// An instruction S sent that has not started yet.
struct Pending {
    seq: u64,
    op: u32,
    flag_id: Option<u32>,
    /// The rendered args (without braces), or `None` when it cannot fall in the window.
    args: Option<String>,
}

/// A `set_flag` slice held until its flag is consumed, so its flow can be attached.
struct Held {
    seq: u64,
    key: usize,
    /// The rendered slice without its closing brace; `None` outside the window.
    event: Option<String>,
}

/// The observer that writes the trace.
pub struct Trace<'p, W: Write> {
    out: W,
    error: Option<io::Error>,
    window: TraceWindow,
    ops: Vec<OpInfo<'p>>,
    offsets: Vec<Vec<u64>>,
    pending: [VecDeque<Pending>; NP],
    /// The work span of each pipe's instruction about to start.
    work: [(u64, u64); NP],
    held: Vec<Held>,
    /// `(wait seq, set seq)`: the next start of `wait seq` gets a flow in.
    flow_in: Option<(u64, u64)>,
    events: usize,
    /// Live bytes per position, `scopes.len()` values per position.
    live: Vec<u64>,
    scopes: Vec<Space>,
    current: Vec<u64>,
    counters_started: bool,
    line: String,
    spare: Vec<String>,
    written: u64,
}

impl<'p, W: Write> Trace<'p, W> {
    /// A trace of `program` (the program that runs: the synchronised one), planned by
    /// `planned` for `original` (the program as loaded, whose op positions the plan's
    /// lifetimes use), written to `out`.
    pub fn new(
        original: &Program,
        program: &'p Program,
        planned: &Planned,
        config: &Config,
        window: TraceWindow,
        out: W,
    ) -> Trace<'p, W> {
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
                            format!("{}:", json(&program.vars[var.index()].name)),
                            var.index(),
                        ));
                    }
                    at = parent.parent;
                }
                vars.reverse();
                let operands = sim::engine::operands(&op.kind)
                    .into_iter()
                    .map(|o| {
                        let memory = match o.base {
                            Ref::Tensor(t) => program.tensors[t.index()].name.clone(),
                            _ => o.space.yaml_name().to_string(),
                        };
                        let footprint = Footprint::new(&bases, o);
                        let fixed = footprint
                            .is_static()
                            .then(|| footprint.elems_at(&[]).map(|r| footprint.bytes(r)));
                        OpndInfo {
                            head: format!(
                                "{{\"operand\":{},\"memory\":{}",
                                json(&o.text),
                                json(&memory)
                            ),
                            root: bases.roots(o.base).first().copied(),
                            footprint,
                            fixed,
                            bytes: o.bytes(),
                        }
                    })
                    .collect();
                let (name, flag) = match &op.kind {
                    OpKind::SetFlag { src, dst, .. } | OpKind::WaitFlag { src, dst, .. } => (
                        format!("{} {}->{}", op.kind.name(), src, dst),
                        Some((*src, *dst)),
                    ),
                    OpKind::Barrier(t) => (format!("barrier {}", barrier_name(t)), None),
                    k => (k.name().to_string(), None),
                };
                OpInfo {
                    name,
                    path: format!("\"path\":{}", json(&op.path)),
                    vars,
                    operands,
                    pos,
                    flag,
                }
            })
            .collect();

        let plan = &planned.plan;
        let scopes: Vec<Space> = plan.scopes.iter().map(|s| s.space).collect();
        let live = live_bytes(planned, &scopes);
        let mut offsets = vec![Vec::new(); program.buffers.len()];
        for b in &plan.buffers {
            if let Some(o) = offsets.get_mut(b.buffer.index()) {
                o.clone_from(&b.offsets);
            }
        }
        let mut t = Trace {
            out,
            error: None,
            window,
            ops,
            offsets,
            pending: Default::default(),
            work: [(0, 0); NP],
            held: Vec::new(),
            flow_in: None,
            events: 0,
            live,
            current: vec![0; scopes.len()],
            scopes,
            counters_started: false,
            line: String::with_capacity(512),
            spare: Vec::new(),
            written: 0,
        };
        t.header(program, config);
        t
    }

    /// The metadata and the track names and order.
    fn header(&mut self, program: &Program, config: &Config) {
        let core = config.core(program.core);
        let window = if self.window == TraceWindow::ALL {
            "null".to_string()
        } else {
            format!("[{}, {}]", self.window.from, self.window.to)
        };
        let head = format!(
            "{{\"metadata\":{{\"generator\":\"npusim\",\"kernel\":{},\"config\":{},\
             \"clock_mhz\":{},\"time_unit\":\"1 us of ts = 1 cycle of the core clock\",\
             \"window\":{window}}},\n\"traceEvents\":[\n",
            json(&program.kernel),
            json(&config.core_label(program.core)),
            config.clock_mhz,
        );
        self.raw(&head);
        let process = format!("block 0 {} 0", core.name);
        self.event(&format!(
            "{{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
            json(&process)
        ));
        self.event(
            "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":0}}",
        );
        for p in Pipe::ALL.into_iter().filter(|p| core.pipes.contains(p)) {
            self.event(&format!(
                "{{\"ph\":\"M\",\"pid\":0,\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
                p.index(),
                p.report_name()
            ));
            self.event(&format!(
                "{{\"ph\":\"M\",\"pid\":0,\"tid\":{},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{}}}}}",
                p.index(),
                p.index()
            ));
        }
    }

    /// Ends the document and hands back the writer, or the first write error.
    pub fn finish(mut self) -> io::Result<W> {
        // sets whose flag nobody consumed (or consumed after the run stopped)
        let held = std::mem::take(&mut self.held);
        for h in held {
            if let Some(mut e) = h.event {
                e.push('}');
                self.event(&e);
            }
        }
        self.raw("\n]}\n");
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

    fn raw(&mut self, s: &str) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(s.as_bytes()) {
                self.error = Some(e);
            }
            self.written += s.len() as u64;
        }
    }

    fn event(&mut self, e: &str) {
        if self.events > 0 {
            self.raw(",\n");
        }
        self.raw(e);
        self.events += 1;
    }

    /// Writes `self.line` as an event.
    fn flush_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.event(&line);
        self.line = line;
        self.line.clear();
    }

    /// The live-bytes counters at cycle `t` when S reaches position `pos`.
    fn counters(&mut self, pos: usize, t: u64) {
        let n = self.scopes.len();
        if n == 0 || t >= self.window.to {
            return;
        }
        let start = !self.counters_started && t >= self.window.from;
        for s in 0..n {
            let v = self.live[pos * n + s];
            if v == self.current[s] && !start {
                continue;
            }
            self.current[s] = v;
            if t >= self.window.from {
                self.line.clear();
                let _ = write!(
                    self.line,
                    "{{\"ph\":\"C\",\"pid\":0,\"name\":\"{} live bytes\",\"ts\":{t},\"args\":{{\"bytes\":{v}}}}}",
                    self.scopes[s].yaml_name()
                );
                self.flush_line();
            }
        }
        self.counters_started |= start;
    }

    /// The args of one dynamic instruction (no braces).
    fn args(&mut self, issue: &Issue<'_>) -> String {
        let mut a = self.spare.pop().unwrap_or_default();
        a.clear();
        let info = &self.ops[issue.op.index()];
        a.push_str(&info.path);
        if !info.vars.is_empty() {
            a.push_str(",\"iteration\":{");
            for (i, (name, v)) in info.vars.iter().enumerate() {
                if i > 0 {
                    a.push(',');
                }
                a.push_str(name);
                let _ = write!(a, "{}", issue.vars[*v]);
            }
            a.push('}');
        }
        if let Some(id) = issue.flag_id {
            let _ = write!(a, ",\"flag_id\":{id}");
        }
        if !info.operands.is_empty() {
            let mut bytes = 0u64;
            a.push_str(",\"operands\":[");
            for (k, o) in info.operands.iter().enumerate() {
                if k > 0 {
                    a.push(',');
                }
                a.push_str(&o.head);
                let range = match o.fixed {
                    Some(r) => r,
                    None => o
                        .footprint
                        .elems_at(issue.vars)
                        .map(|r| o.footprint.bytes(r)),
                };
                if let Some(slot) = issue.slots.get(k) {
                    if o.root.is_some() {
                        let _ = write!(a, ",\"slot\":{slot}");
                    }
                }
                if let Some((lo, hi)) = range {
                    // an on-chip operand's range in its scope: its slot's address added
                    let base = o
                        .root
                        .and_then(|b| {
                            let slot = issue.slots.get(k).copied().unwrap_or(0) as usize;
                            self.offsets[b.index()].get(slot).copied()
                        })
                        .unwrap_or(0);
                    let _ = write!(a, ",\"bytes\":[{},{}]", base + lo, base + hi);
                    bytes = bytes.max(o.bytes.unwrap_or(hi - lo));
                }
                a.push('}');
            }
            a.push(']');
            let _ = write!(a, ",\"bytes\":{bytes}");
        }
        a
    }

    /// A complete slice on pipe `p`.
    #[allow(clippy::too_many_arguments)]
    fn slice(&mut self, p: Pipe, from: u64, to: u64, cat: &str, name: &str, args: &str) {
        let Some((a, b)) = self.window.clip(from, to) else {
            return;
        };
        self.line.clear();
        let _ = write!(
            self.line,
            "{{\"ph\":\"X\",\"pid\":0,\"tid\":{},\"ts\":{a},\"dur\":{},\"cat\":\"{cat}\",\"name\":{},\"args\":{{{args},\"start\":{from},\"end\":{to}}}}}",
            p.index(),
            b - a,
            json(name),
        );
        self.flush_line();
    }

    fn flag_key(src: Pipe, dst: Pipe, id: u32) -> usize {
        (src.index() * NP + dst.index()) * 65_536 + id as usize
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
pub fn live_bytes(planned: &Planned, scopes: &[Space]) -> Vec<u64> {
    let n = scopes.len();
    let positions = planned.live.positions;
    let mut delta = vec![0i128; (positions + 1) * n];
    for e in &planned.live.entries {
        let Some(&b) = e.buffers.first() else {
            continue;
        };
        let Some(bp) = planned.plan.buffers.get(b.index()) else {
            continue;
        };
        let Some(s) = scopes.iter().position(|&s| s == bp.scope) else {
            continue;
        };
        let bytes = bp.bytes as i128 * bp.offsets.len() as i128;
        for iv in &e.lifetime {
            delta[iv.first * n + s] += bytes;
            delta[(iv.last + 1) * n + s] -= bytes;
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
        if let Some(pos) = self.ops[issue.op.index()].pos {
            self.counters(pos, issue.cycle);
        }
        let args = (issue.cycle < self.window.to).then(|| self.args(issue));
        self.pending[issue.pipe.index()].push_back(Pending {
            seq: issue.seq,
            op: issue.op.0,
            flag_id: issue.flag_id,
            args,
        });
    }

    fn on_span(&mut self, span: &Span) {
        if span.what == Activity::Work {
            self.work[span.pipe.index()] = (span.from, span.to);
            return;
        }
        if span.from >= self.window.to {
            return;
        }
        let op = span.op.index();
        let name = match span.what {
            Activity::Work => return,
            Activity::Issue => format!("issue {}", self.ops[op].name),
            Activity::Loop | Activity::Branch => self.ops[op].name.clone(),
            Activity::Stall(reason) => reason.to_string(),
        };
        let cat = if matches!(span.what, Activity::Stall(_)) {
            "stall"
        } else {
            "scalar"
        };
        let path = std::mem::take(&mut self.ops[op].path);
        self.slice(span.pipe, span.from, span.to, cat, &name, &path);
        self.ops[op].path = path;
    }

    fn on_release(&mut self, release: &Release) {
        let Some(i) = self.held.iter().position(|h| h.seq == release.set_seq) else {
            return;
        };
        let h = self.held.swap_remove(i);
        if let Some(mut e) = h.event {
            let inside = self.window.clip(release.cycle, release.cycle).is_some();
            if inside {
                let _ = write!(e, ",\"bind_id\":\"0x{:x}\",\"flow_out\":true", h.seq);
                self.flow_in = Some((release.wait_seq, h.seq));
            }
            e.push('}');
            self.event(&e);
        }
    }

    fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
        let Some(p) = (0..NP).find(|&p| self.pending[p].front().is_some_and(|x| x.seq == seq))
        else {
            return;
        };
        let pd = self.pending[p].pop_front().expect("found above");
        let (from, to) = self.work[p];
        debug_assert_eq!(from, start);
        let info = &self.ops[pd.op as usize];
        let Some(args) = pd.args else {
            return;
        };
        let key = info
            .flag
            .map(|(src, dst)| Self::flag_key(src, dst, pd.flag_id.unwrap_or(0)));
        let is_set = key.is_some() && info.name.starts_with("set_flag");
        let clipped = self.window.clip(from, to);
        let mut event = None;
        if let Some((a, b)) = clipped {
            let mut line = String::with_capacity(args.len() + 160);
            let id = pd.flag_id.map(|i| format!(" #{i}")).unwrap_or_default();
            let _ = write!(
                line,
                "{{\"ph\":\"X\",\"pid\":0,\"tid\":{p},\"ts\":{a},\"dur\":{},\"cat\":\"op\",\"name\":{},\"args\":{{{args},\"start\":{from},\"end\":{to},\"complete\":{complete}}}",
                b - a,
                json(&format!("{}{id}", info.name)),
            );
            if let Some((w, s)) = self.flow_in {
                if w == seq {
                    let _ = write!(line, ",\"bind_id\":\"0x{s:x}\",\"flow_in\":true");
                    self.flow_in = None;
                }
            }
            event = Some(line);
        }
        self.spare.push(args);
        if is_set {
            let key = key.expect("a set_flag has a key");
            if !self.held.iter().any(|h| h.key == key) {
                self.held.push(Held { seq, key, event });
                return;
            }
            // a second set of a flag still set: the engine ignores it; nothing consumes it
        }
        if let Some(mut e) = event {
            e.push('}');
            self.event(&e);
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
}
