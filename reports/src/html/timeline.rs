//! The pipe timeline: an [`Observer`] that keeps a bounded window of the run's spans, and its
//! SVG (one row per pipe, one rect per busy or stall span).

use super::style::Kind;
use super::{esc, thousands};
use sim::engine::{Activity, Observer, Span};
use sim::{Program, RunResult};

/// The spans of a run's first cycles, for the HTML timeline: at most `max_spans` of them, so
/// its memory does not grow with the length of the run.
///
/// It keeps every span with cycles (busy or stalled; starved and idle time have none) in the
/// order the engine reports them, until it holds `max_spans`; after that it keeps none and
/// remembers the earliest start of a span it dropped: the *cut*. The engine does not report
/// spans in start order, but every span that starts before the cut was kept (a dropped one
/// starts at the cut or later), so the window `[0, cut)` is complete. The page draws that
/// window and says what was cut.
#[derive(Clone, Debug)]
pub struct Timeline {
    max_spans: usize,
    spans: Vec<Span>,
    /// Spans with cycles the run reported.
    seen: u64,
    /// The earliest start of a dropped span.
    cut: Option<u64>,
}

impl Timeline {
    /// How many spans `npusim run --html` keeps: enough for every span of the shipped
    /// programs, about 2.5 MB of HTML.
    pub const DEFAULT_MAX_SPANS: usize = 20_000;

    /// A timeline that keeps at most `max_spans` spans.
    pub fn new(max_spans: usize) -> Self {
        Timeline {
            max_spans,
            spans: Vec::new(),
            seen: 0,
            cut: None,
        }
    }

    /// The cycle at which the window ends because spans were dropped, or `None` when every
    /// span was kept.
    pub fn cut(&self) -> Option<u64> {
        self.cut
    }

    /// How many spans with cycles the run reported.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The spans of the window `[0, cut)`, in the order the engine reported them, each
    /// clipped to the window.
    pub fn window(&self) -> impl Iterator<Item = Span> + '_ {
        let end = self.cut.unwrap_or(u64::MAX);
        self.spans
            .iter()
            .filter(move |s| s.from < end)
            .map(move |s| Span {
                core: 0,
                to: s.to.min(end),
                ..*s
            })
    }
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(Timeline::DEFAULT_MAX_SPANS)
    }
}

impl Observer for Timeline {
    fn on_span(&mut self, span: &Span) {
        if span.to <= span.from {
            return;
        }
        self.seen += 1;
        if self.spans.len() < self.max_spans {
            self.spans.push(*span);
        } else {
            self.cut = Some(self.cut.map_or(span.from, |c| c.min(span.from)));
        }
    }
}

const ROW: u64 = 24;
const BAR: u64 = 16;

/// The timeline section's body: the window's spans of every pipe of the run, or a note when
/// none were collected.
pub(super) fn timeline_html(
    program: &Program,
    result: &RunResult,
    tl: Option<&Timeline>,
) -> String {
    let Some(tl) = tl else {
        return "<p class=\"note\">Not collected for this report.</p>\n".into();
    };
    let total = result.total_cycles;
    let end = tl.cut().unwrap_or(total).min(total).max(1);
    // one core's page: its only core
    let pipes = crate::run_report::sorted_pipes(&result.cores[0]);
    let shown: Vec<Span> = tl.window().collect();
    let mut out = String::new();
    out.push_str(&match tl.cut() {
        None => format!(
            "<p class=\"note\">Every busy and stall span of the run: {} spans over {} cycles. Colours as in the legend above; gaps are starved or idle time. Hover a span for its op and cycles; zoom to see short ones.</p>\n",
            thousands(shown.len() as u64),
            thousands(total)
        ),
        Some(cut) => format!(
            "<p class=\"note\"><b>Cut:</b> the run reported {} spans; the page keeps the first {} the engine reported, which cover cycles 0 to {} completely (of {} cycles, {} %). The {} spans drawn are those starting before cycle {}; the rest of the run is in the stall bars above.</p>\n",
            thousands(tl.seen()),
            thousands(tl.max_spans as u64),
            thousands(cut),
            thousands(total),
            crate::percent(cut, total),
            thousands(shown.len() as u64),
            thousands(cut),
        ),
    });
    out.push_str(
        "<div class=\"controls\"><label for=\"zoom\">zoom</label><select id=\"zoom\">\
         <option value=\"1\" selected>1×</option><option value=\"2\">2×</option>\
         <option value=\"4\">4×</option><option value=\"8\">8×</option>\
         <option value=\"16\">16×</option><option value=\"32\">32×</option>\
         <option value=\"64\">64×</option></select>\
         <span class=\"dim\">scroll sideways when zoomed</span></div>\n",
    );
    out.push_str("<div class=\"tl\"><div class=\"tl-labels\">");
    for p in &pipes {
        out.push_str(&format!("<div>{}</div>", p.pipe));
    }
    let height = ROW * pipes.len() as u64;
    out.push_str("</div><div class=\"tl-scroll\"><div class=\"tl-inner\" id=\"timeline-inner\">\n");
    out.push_str(&format!(
        "<svg class=\"timeline\" viewBox=\"0 0 {end} {height}\" preserveAspectRatio=\"none\" width=\"100%\" height=\"{height}\" data-spans=\"{}\">\n",
        shown.len()
    ));
    for row in (0..pipes.len() as u64).filter(|r| r % 2 == 1) {
        out.push_str(&format!(
            "<rect class=\"rowbg\" x=\"0\" y=\"{}\" width=\"{end}\" height=\"{ROW}\"/>\n",
            row * ROW
        ));
    }
    for s in &shown {
        let Some(row) = pipes.iter().position(|p| p.pipe == s.pipe) else {
            continue;
        };
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
        out.push_str(&format!(
            "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{BAR}\"><title>{} {}: {} [{}, {})\n{}</title></rect>\n",
            kind.class(),
            s.from,
            row as u64 * ROW + (ROW - BAR) / 2,
            s.to - s.from,
            s.pipe,
            esc(&what),
            super::cycles(s.to - s.from),
            s.from,
            s.to,
            esc(&crate::op_ref(program, s.op)),
        ));
    }
    out.push_str("</svg>\n<div class=\"tl-axis\">");
    let step = nice_step(end, 10);
    let mut t = 0;
    while t <= end {
        let pct = t as f64 * 100.0 / end as f64;
        if t == 0 {
            out.push_str("<span class=\"first\" style=\"left:0%\">0</span>");
        } else if pct <= 97.0 {
            out.push_str(&format!(
                "<span style=\"left:{}%\">{}</span>",
                super::f2(pct),
                thousands(t)
            ));
        }
        t += step;
    }
    out.push_str("</div></div></div></div>\n");
    out.push_str(&format!(
        "<p class=\"note\">x: cycles 0 to {} of the run{}.</p>\n",
        thousands(end),
        if tl.cut().is_some() {
            " (the window)"
        } else {
            ""
        }
    ));
    out
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
    }

    #[test]
    fn the_window_ends_at_the_earliest_dropped_span() {
        let mut t = Timeline::new(3);
        t.on_span(&span(Pipe::V, 0, 10));
        t.on_span(&span(Pipe::V, 10, 40));
        t.on_span(&span(Pipe::V, 50, 60));
        // dropped: the cut is the earliest start among them, not the last one seen
        t.on_span(&span(Pipe::Mte2, 30, 35));
        t.on_span(&span(Pipe::Mte2, 70, 80));
        assert_eq!(t.seen(), 5);
        assert_eq!(t.cut(), Some(30));
        let w: Vec<(u64, u64)> = t.window().map(|s| (s.from, s.to)).collect();
        // [50, 60) starts after the cut; [10, 40) is clipped to it
        assert_eq!(w, vec![(0, 10), (10, 30)]);
        assert_eq!(t.spans.len(), 3, "memory is bounded by max_spans");
    }

    #[test]
    fn stall_spans_are_kept_with_their_reason() {
        let mut t = Timeline::new(4);
        t.on_span(&Span {
            core: 0,
            what: Activity::Stall(Stall::Drain),
            ..span(Pipe::Mte3, 3, 7)
        });
        assert_eq!(
            t.window().next().map(|s| s.what),
            Some(Activity::Stall(Stall::Drain))
        );
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
