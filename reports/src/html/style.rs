//! The page's colours, stylesheet and script: every colour is a CSS class, so the stall bars,
//! the timeline and the legend cannot disagree.

use sim::engine::Stall;
use sim::Pipe;

/// Per pipe: its colour (its busy time) and a light tint of it (time another pipe waits for
/// its flags). Okabe–Ito hues, readable by colour-blind readers.
const PIPE_COLOURS: [(Pipe, &str, &str); 7] = [
    (Pipe::S, "#4d4d4d", "#a6a6a6"),
    (Pipe::V, "#0072b2", "#80b8d8"),
    (Pipe::M, "#cc79a7", "#e6bcd3"),
    (Pipe::Mte1, "#56b4e9", "#abdaf4"),
    (Pipe::Mte2, "#009e73", "#80cfb9"),
    (Pipe::Mte3, "#e69f00", "#f3cf80"),
    (Pipe::Fix, "#b8a900", "#dcd480"),
];

/// The colours of the states that are not a pipe's: (class, colour).
const STATE_COLOURS: [(&str, &str); 6] = [
    ("drain", "#d55e00"),
    ("qfull", "#a6761d"),
    ("ball", "#5e3c99"),
    ("xwait", "#1b9e77"),
    ("starved", "#d9d9d9"),
    ("idle", "#f3f3f3"),
];

/// A state a pipe's cycle can be in, as the page colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// The pipe's own work (in its colour).
    Busy(Pipe),
    /// Waiting for a flag (or an `mmad_l1`'s staging) from this pipe (its tint).
    WaitOn(Pipe),
    Drain,
    QueueFull,
    BarrierAll,
    CrossWait,
    Starved,
    Idle,
}

impl Kind {
    pub(super) fn of_stall(s: Stall) -> Kind {
        match s {
            Stall::WaitFlag { src, .. } | Stall::WaitMacro { src } => Kind::WaitOn(src),
            Stall::Drain => Kind::Drain,
            Stall::QueueFull(_) => Kind::QueueFull,
            Stall::BarrierAll => Kind::BarrierAll,
            Stall::CrossWait { .. } => Kind::CrossWait,
        }
    }

    /// The CSS class that colours it.
    pub(super) fn class(self) -> String {
        match self {
            Kind::Busy(p) => format!("k-{}", p.yaml_name()),
            Kind::WaitOn(p) => format!("k-w{}", p.yaml_name()),
            Kind::Drain => "k-drain".into(),
            Kind::QueueFull => "k-qfull".into(),
            Kind::BarrierAll => "k-ball".into(),
            Kind::CrossWait => "k-xwait".into(),
            Kind::Starved => "k-starved".into(),
            Kind::Idle => "k-idle".into(),
        }
    }

    /// What the legend says about it.
    pub(super) fn label(self) -> String {
        match self {
            Kind::Busy(p) => format!("{p} busy"),
            // the stall reasons' own names, their varying part as the text legend writes it
            Kind::WaitOn(p) => format!("wait_flag {p}#i"),
            Kind::Drain => "drain".into(),
            Kind::QueueFull => "queue_full P".into(),
            Kind::BarrierAll => "barrier_all".into(),
            Kind::CrossWait => "cross_wait #i".into(),
            Kind::Starved => "starved".into(),
            Kind::Idle => "idle".into(),
        }
    }

    /// The legend's hover text.
    pub(super) fn help(self) -> String {
        match self {
            Kind::Busy(sim::Pipe::S) => {
                "S executed its own ops, sent instructions to the pipes, started loop iterations or evaluated ifs".into()
            }
            Kind::Busy(p) => format!("{p} did instruction work"),
            Kind::WaitOn(p) => format!(
                "a wait_flag at the head of the queue waited for a flag set by {p} (any id; the exact flag is in each bar's hover text), or an mmad_l1 waited for its {p} staging"
            ),
            Kind::Drain => "a set_flag or barrier waited for earlier instructions of its pipe to complete".into(),
            Kind::QueueFull => "S waited because a pipe's queue was full".into(),
            Kind::BarrierAll => "S waited in barrier: all for every pipe to finish".into(),
            Kind::CrossWait => "a cross_wait waited for another core's cross_set".into(),
            Kind::Starved => "queue empty, more work will come".into(),
            Kind::Idle => "no more work will come (after the pipe's last instruction)".into(),
        }
    }
}

/// A row of legend swatches, one per kind, in the order given.
pub(super) fn legend(kinds: &[Kind]) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for k in kinds {
        out.push_str(&format!(
            "<li title=\"{}\"><span class=\"sw {}\"></span>{}</li>",
            super::esc(&k.help()),
            k.class(),
            super::esc(&k.label())
        ));
    }
    out.push_str("</ul>\n");
    out
}

/// The colours of the memory map's buffers, by the buffer's rank in its scope.
pub(super) const BUFFER_COLOURS: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The stylesheet: layout, then one rule per [`Kind`] for SVG fills and HTML swatches.
pub(super) fn css() -> String {
    let mut out = String::from(BASE_CSS);
    for (pipe, colour, tint) in PIPE_COLOURS {
        out.push_str(&format!(
            ".{b}{{fill:{colour};background:{colour}}}\n.{w}{{fill:{tint};background:{tint}}}\n",
            b = Kind::Busy(pipe).class(),
            w = Kind::WaitOn(pipe).class(),
        ));
    }
    for (class, colour) in STATE_COLOURS {
        out.push_str(&format!(
            ".k-{class}{{fill:{colour};background:{colour}}}\n"
        ));
    }
    out
}

const BASE_CSS: &str = r#"*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2328;background:#fff}
header,main{max-width:1400px;margin:0 auto;padding:0 24px}
header{padding-top:18px;padding-bottom:6px;border-bottom:1px solid #d8dee4}
h1{font-size:22px;margin:0 0 6px}
h1 .sub{font-weight:400;color:#59636e}
h2{font-size:17px;margin:26px 0 8px;padding-bottom:4px;border-bottom:1px solid #eaeef2}
h3{font-size:15px;margin:14px 0 6px}
h4{font-size:13px;margin:12px 0 4px;color:#3d444d}
p.note{color:#59636e;margin:4px 0 8px;max-width:100ch}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:12.5px}
pre{white-space:pre-wrap;background:#f6f8fa;border:1px solid #eaeef2;border-radius:4px;padding:8px 10px;margin:6px 0}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 26px;margin:6px 0 10px}
dl.facts div{display:flex;gap:6px;align-items:baseline}
dt{color:#59636e}
dd{margin:0;font-weight:600}
table.summary{border-collapse:collapse;margin:6px 0}
table.summary th,table.summary td{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:right;white-space:nowrap}
table.summary th:first-child,table.summary td:first-child{text-align:left}
table.summary td.text{text-align:left;white-space:normal}
ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:4px 16px;padding:0;margin:6px 0 10px;font-size:13px}
ul.legend li{display:flex;align-items:center;gap:5px;cursor:help}
.sw{display:inline-block;width:14px;height:14px;border:1px solid rgba(0,0,0,.25);border-radius:2px}
svg text{font-family:inherit;font-size:11px;fill:#1f2328}
svg text.dim{fill:#59636e}
svg .axis{stroke:#8c959f;stroke-width:1}
svg .grid{stroke:#eaeef2;stroke-width:1}
svg line.cap{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:6 4}
svg text.cap{fill:#cf222e}
svg .rowbg{fill:#f6f8fa}
svg.bars rect.seg{stroke:#fff;stroke-width:.5}
svg.memmap rect.slot{fill-opacity:.85;stroke:#1f2328;stroke-width:.6}
svg.memmap rect.slot:hover,svg.memmap rect.slot.hl{fill-opacity:1;stroke-width:2}
svg.memmap text.lbl{font-size:10.5px;fill:#fff;pointer-events:none;paint-order:stroke;stroke:rgba(0,0,0,.35);stroke-width:2px}
.maps{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:4px 28px}
.map{min-width:0}
.levels{display:grid;grid-auto-flow:column;grid-auto-columns:minmax(0,1fr);gap:22px}
.level{min-width:0}
.level.overflow h3{color:#cf222e}
.tl{display:grid;grid-template-columns:52px minmax(0,1fr);align-items:start}
.tl-labels div{height:24px;line-height:24px;font-weight:600;font-size:12px}
.tl-scroll{overflow-x:auto;border:1px solid #d8dee4;border-radius:4px}
.tl-inner{position:relative;width:100%;min-width:100%}
.tl-inner svg{display:block}
.tl-axis{position:relative;height:20px;font-size:11px;color:#59636e;border-top:1px solid #d8dee4}
.tl-axis span{position:absolute;top:2px;transform:translateX(-50%);white-space:nowrap}
.tl-axis span.first{transform:none}
.controls{display:flex;gap:10px;align-items:center;margin:4px 0 8px;font-size:13px}
ul.findings{margin:4px 0;padding-left:20px}
ul.findings li{margin:2px 0}
.dim{color:#59636e}
.ok{color:#1a7f37;font-weight:600}
.bad{color:#cf222e;font-weight:600}
#profile table{border-collapse:collapse;font-variant-numeric:tabular-nums}
#profile th,#profile td{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
#profile td.n{text-align:right}
.plot{margin:0 0 22px}
svg.sweep{display:block;height:auto}
svg.sweep polyline.line{fill:none;stroke-width:2}
svg.sweep .point{fill-opacity:.35;stroke-width:1.5;cursor:help}
svg.sweep .point:hover{fill-opacity:1}
svg.sweep[data-scale="lin"] g.log,svg.sweep[data-scale="log"] g.lin{display:none}
svg.key{flex:none}
table.failed td{vertical-align:top}
table.failed pre{margin:0;max-width:100ch}
svg.calib rect{cursor:help}
svg.calib rect.measured{fill:#8c959f}
svg.calib rect.within{fill:#1a7f37}
svg.calib rect.outside{fill:#cf222e}
svg.calib rect.shown{fill:#0072b2}
#calibration td.src{overflow-wrap:anywhere;min-width:40ch;max-width:70ch}
footer{max-width:1400px;margin:30px auto 20px;padding:0 24px;color:#8c959f;font-size:12px}
"#;

/// The page's script: the timeline's zoom, highlighting every slot of the buffer under the
/// pointer, a check that every memory map drew the slots it announces (and every sweep plot
/// the points it announces, each with its hover text, the failed points' table its rows, every
/// calibration chart its cases), a sweep plot's log-scale box, and `data-ready="1"` on
/// `<body>` once all of that ran (the browser test waits for it).
pub(super) const SCRIPT: &str = r#"(function () {
  "use strict";
  var zoom = document.getElementById("zoom");
  var inner = document.getElementById("timeline-inner");
  if (zoom && inner) {
    zoom.addEventListener("change", function () {
      inner.style.width = (Number(zoom.value) * 100) + "%";
    });
  }
  var maps = document.querySelectorAll("svg.memmap");
  Array.prototype.forEach.call(maps, function (map) {
    var slots = map.querySelectorAll("rect.slot");
    if (String(slots.length) !== map.getAttribute("data-slots")) {
      throw new Error("memory map " + map.id + ": " + slots.length + " slot rects, expected " + map.getAttribute("data-slots"));
    }
    function mark(buffer, on) {
      Array.prototype.forEach.call(slots, function (r) {
        if (r.getAttribute("data-buffer") === buffer) { r.classList.toggle("hl", on); }
      });
    }
    Array.prototype.forEach.call(slots, function (r) {
      r.addEventListener("mouseenter", function () { mark(r.getAttribute("data-buffer"), true); });
      r.addEventListener("mouseleave", function () { mark(r.getAttribute("data-buffer"), false); });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("svg.sweep"), function (plot) {
    var points = plot.querySelectorAll(".point");
    if (String(points.length) !== plot.getAttribute("data-points")) {
      throw new Error("plot " + plot.id + ": " + points.length + " points, expected " + plot.getAttribute("data-points"));
    }
    Array.prototype.forEach.call(points, function (p) {
      var title = p.querySelector("title");
      if (!title || title.textContent.indexOf(" cycles") < 0) {
        throw new Error("plot " + plot.id + ": a point without its hover text");
      }
    });
  });
  // a sweep plot's y scale: every line and point carries its place on both (data-lin, data-log)
  function scale(plot, log) {
    var key = log ? "data-log" : "data-lin";
    plot.setAttribute("data-scale", log ? "log" : "lin");
    Array.prototype.forEach.call(plot.querySelectorAll("polyline.line"), function (l) {
      l.setAttribute("points", l.getAttribute(key));
    });
    Array.prototype.forEach.call(plot.querySelectorAll(".point"), function (p) {
      p.setAttribute("transform", "translate(" + p.getAttribute(key) + ")");
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("input.logy"), function (box) {
    var plot = document.getElementById(box.getAttribute("data-plot"));
    if (!plot) { throw new Error("log scale box for a missing plot " + box.getAttribute("data-plot")); }
    box.addEventListener("change", function () { scale(plot, box.checked); });
    // `page.html#log` opens every plot on the log scale
    if (window.location.hash.slice(1) === "log") { box.checked = true; scale(plot, true); }
  });
  Array.prototype.forEach.call(document.querySelectorAll("table.failed"), function (t) {
    var rows = t.querySelectorAll("tr.failed").length;
    if (String(rows) !== t.getAttribute("data-failed")) {
      throw new Error("failed points: " + rows + " rows, expected " + t.getAttribute("data-failed"));
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll("svg.calib"), function (plot) {
    var cases = plot.querySelectorAll("g.case").length;
    if (String(cases) !== plot.getAttribute("data-cases")) {
      throw new Error("calibration bars: " + cases + " cases, expected " + plot.getAttribute("data-cases"));
    }
  });
  document.body.setAttribute("data-ready", "1");
})();
"#;
