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

    /// Its colour, for the timeline's canvas (the same as its CSS class's).
    pub(super) fn colour(self) -> &'static str {
        let state = |class: &str| {
            STATE_COLOURS
                .iter()
                .find(|(c, _)| *c == class)
                .map_or("#000000", |(_, colour)| colour)
        };
        match self {
            Kind::Busy(p) | Kind::WaitOn(p) => {
                let (_, busy, tint) = PIPE_COLOURS
                    .iter()
                    .find(|(q, _, _)| *q == p)
                    .copied()
                    .unwrap_or((p, "#000000", "#000000"));
                if matches!(self, Kind::Busy(_)) {
                    busy
                } else {
                    tint
                }
            }
            Kind::Drain => state("drain"),
            Kind::QueueFull => state("qfull"),
            Kind::BarrierAll => state("ball"),
            Kind::CrossWait => state("xwait"),
            Kind::Starved => state("starved"),
            Kind::Idle => state("idle"),
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
table.summary td.text,table.summary th.text{text-align:left;white-space:normal}
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
.tlv{max-height:640px;overflow-y:auto;border:1px solid #d8dee4;border-radius:4px;position:relative}
.tl-body{display:grid;grid-template-columns:210px minmax(0,1fr)}
.lane-group{display:grid;grid-template-columns:150px 60px;box-shadow:inset 0 1px 0 #b8c0c8}
.lg-name{font-size:11.5px;font-weight:600;padding:0 4px;line-height:16px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
.lane{height:16px;line-height:16px;font-size:11px;font-weight:600}
.tl-plot{position:relative;cursor:grab;min-width:0}
.tl-plot.dragging{cursor:grabbing}
.tl-stick{position:sticky;top:0}
.tl-stick canvas{display:block}
svg.tl-arrows{position:absolute;left:0;top:0;pointer-events:none;overflow:hidden}
svg.tl-arrows line{stroke:#1f2328;stroke-width:1.2;stroke-opacity:.8}
svg.tl-arrows path{fill:#1f2328}
.tl-axis{position:relative;height:20px;margin-left:210px;font-size:11px;color:#59636e;border-top:1px solid #d8dee4;overflow:hidden}
.tl-axis span{position:absolute;top:2px;transform:translateX(-50%);white-space:nowrap}
.tl-tip{position:fixed;z-index:10;background:#fff;border:1px solid #8c959f;border-radius:3px;padding:4px 6px;font-size:12px;pointer-events:none;white-space:pre-wrap;max-width:90ch;box-shadow:0 2px 6px rgba(0,0,0,.15)}
.tl-controls input[type=number]{width:11ch}
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
pub(super) const SCRIPT: &str = r##"(function () {
  "use strict";
  var DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
  var tlv = document.getElementById("tlv");
  var tlData = document.getElementById("tl-data");
  if (tlv && tlData) { timeline(tlv, JSON.parse(tlData.textContent)); }
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
  // the pipe timeline (docs/html.md, "Pipe timeline"): the spans, the summary columns and the
  // cross-core arrows of the page's data, drawn for the view [v0, v1) (cycles from the
  // window's start); wheel zooms, drag pans, the window boxes and `#window=A:B` choose the view
  function timeline(tlv, d) {
    var ROW = 16, BAR = 12, STALL = "#9b2226";
    var canvas = document.getElementById("tl-canvas");
    var svg = document.getElementById("tl-arrows");
    var stick = canvas.parentNode, plot = stick.parentNode;
    var axis = document.getElementById("tl-axis"), tip = document.getElementById("tl-tip");
    var status = document.getElementById("tl-status");
    var A = d.arrows, nl = d.lanes.length, R = d.spans, n = R.length / 4;
    var span0 = Math.max(1, d.to - d.from);
    var cutRel = d.cut === null ? span0 : d.cut - d.from;
    // the page's own checks: what the Rust side announced is what the data holds
    function check(what, got, want) {
      if (String(got) !== String(want)) { throw new Error("timeline: " + got + " " + what + ", expected " + want); }
    }
    check("lane groups", tlv.querySelectorAll(".lane-group").length, tlv.getAttribute("data-groups"));
    check("lanes", tlv.querySelectorAll(".lane").length, nl);
    check("lane counts", d.counts.length, nl);
    check("spans", n, tlv.getAttribute("data-spans"));
    check("arrows", A.length / 4, tlv.getAttribute("data-arrows"));
    // the spans as lane, start, cycles, kind, op (each written as its gap after the previous
    // span of its lane); lo[lane]: its first span, in start order
    var S = new Array(5 * n), lo = new Array(nl + 1), i = 0, lane;
    for (lane = 0; lane < nl; lane++) {
      lo[lane] = i;
      for (var j = 0, end = 0; j < d.counts[lane]; j++, i++) {
        if (i >= n) { throw new Error("timeline: the lane counts exceed the spans"); }
        if (R[4 * i] < 0 || R[4 * i + 1] <= 0) { throw new Error("timeline: overlapping or empty span at " + i); }
        S[5 * i] = lane; S[5 * i + 1] = end + R[4 * i]; S[5 * i + 2] = R[4 * i + 1];
        S[5 * i + 3] = R[4 * i + 2]; S[5 * i + 4] = R[4 * i + 3];
        end = S[5 * i + 1] + S[5 * i + 2];
      }
    }
    lo[nl] = i;
    check("spans in the lane counts", i, n);
    // the first span of `lane` ending after t, and the first starting at or after t
    function endsAfter(lane, t) {
      var a = lo[lane], b = lo[lane + 1];
      while (a < b) { var m = (a + b) >> 1; if (S[5 * m + 1] + S[5 * m + 2] > t) { b = m; } else { a = m + 1; } }
      return a;
    }
    function startsFrom(lane, t) {
      var a = lo[lane], b = lo[lane + 1];
      while (a < b) { var m = (a + b) >> 1; if (S[5 * m + 1] >= t) { b = m; } else { a = m + 1; } }
      return a;
    }
    var v0 = 0, v1 = span0, match = "", opHit = [];
    var fromBox = document.getElementById("tl-from"), toBox = document.getElementById("tl-to");
    function view(a, b) {
      var w = Math.min(span0, Math.max(4, b - a));
      a = Math.max(0, Math.min(a, span0 - w));
      v0 = a; v1 = a + w;
      draw();
    }
    // text on a slice: dark on light colours, white on dark ones
    function ink(hex) {
      var v = parseInt(hex.slice(1), 16);
      return 0.299 * (v >> 16) + 0.587 * ((v >> 8) & 255) + 0.114 * (v & 255) > 150 ? "#1f2328" : "#ffffff";
    }
    function step(range) {
      var raw = Math.max(1, range / 8), p = Math.pow(10, Math.floor(Math.log10(raw)));
      var ms = [1, 2, 5, 10];
      for (var k = 0; k < ms.length; k++) { if (ms[k] * p >= raw) { return ms[k] * p; } }
      return raw;
    }
    function draw() {
      var w = Math.max(1, plot.clientWidth), top = tlv.scrollTop;
      var h = Math.max(1, Math.min(tlv.clientHeight || nl * ROW, nl * ROW));
      canvas.width = w; canvas.height = h;
      canvas.style.width = w + "px"; canvas.style.height = h + "px";
      stick.style.height = h + "px";
      var ctx = canvas.getContext("2d");
      ctx.clearRect(0, 0, w, h);
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      var scale = w / (v1 - v0);
      var l0 = Math.floor(top / ROW), l1 = Math.min(nl, Math.ceil((top + h) / ROW));
      var visible = 0;
      for (var lane = 0; lane < nl; lane++) {
        var a = endsAfter(lane, v0), b = startsFrom(lane, v1);
        if (b > a) { visible += b - a; }
        if (lane < l0 || lane >= l1) { continue; }
        var y = lane * ROW - top, colour = d.lanes[lane][1];
        if (lane % 2) { ctx.globalAlpha = 1; ctx.fillStyle = "#f6f8fa"; ctx.fillRect(0, y, w, ROW); }
        // spans narrower than a pixel are added up per pixel: busy and stalled shares
        var px = -1, busy = 0, stalled = 0, dim = true;
        var flush = function () {
          if (px < 0) { return; }
          var per = 1 / scale, hb = BAR * Math.min(1, busy / per), hs = BAR * Math.min(1, stalled / per);
          ctx.globalAlpha = match && dim ? 0.2 : 1;
          ctx.fillStyle = colour; ctx.fillRect(px, y + 2 + BAR - hb, 1, hb);
          ctx.fillStyle = STALL; ctx.fillRect(px, y + 2 + BAR - hb - hs, 1, Math.min(hs, BAR - hb));
          px = -1; busy = 0; stalled = 0; dim = true;
        };
        for (var k = a; k < b; k++) {
          var s = S[5 * k + 1], len = S[5 * k + 2], kind = S[5 * k + 3], op = S[5 * k + 4];
          var x0 = (s - v0) * scale, x1 = (s + len - v0) * scale;
          if (x1 - x0 < 1) {
            var p = Math.floor(x0);
            if (p !== px) { flush(); px = p; }
            var c = Math.min(s + len, v1) - Math.max(s, v0);
            if (d.kinds[kind][0] === colour) { busy += c; } else { stalled += c; }
            if (!match || opHit[op]) { dim = false; }
            continue;
          }
          flush();
          x0 = Math.max(x0, 0); x1 = Math.min(x1, w);
          ctx.globalAlpha = match && !opHit[op] ? 0.2 : 1;
          ctx.fillStyle = d.kinds[kind][0];
          ctx.fillRect(x0, y + 2, x1 - x0, BAR);
          if (x1 - x0 > 24) {
            var text = d.ops[op][0];
            if (ctx.measureText(text).width + 6 < x1 - x0) {
              ctx.fillStyle = ink(d.kinds[kind][0]); ctx.fillText(text, x0 + 3, y + 2 + BAR / 2);
            }
          }
        }
        flush();
        if (d.summary && d.summary.lanes[lane]) {
          // the window past the cut, per column: busy share in the pipe's colour, stalled above
          var cols = d.summary.lanes[lane], cw = d.summary.width;
          ctx.globalAlpha = match ? 0.2 : 1;
          for (var c2 = 0; c2 < cols.length / 2; c2++) {
            var cs = Math.max(d.summary.first + c2 * cw, cutRel), ce = Math.min(d.summary.first + (c2 + 1) * cw, span0);
            if (ce <= v0 || cs >= v1) { continue; }
            var qb = DIGITS.indexOf(cols[2 * c2]) / 63, qs = DIGITS.indexOf(cols[2 * c2 + 1]) / 63;
            var xa = Math.max(0, (cs - v0) * scale), xb = Math.min(w, (ce - v0) * scale), cwpx = Math.max(1, xb - xa);
            ctx.fillStyle = colour; ctx.fillRect(xa, y + 2 + BAR * (1 - qb), cwpx, BAR * qb);
            ctx.fillStyle = STALL; ctx.fillRect(xa, y + 2 + BAR * (1 - qb - qs), cwpx, BAR * qs);
          }
        }
      }
      ctx.globalAlpha = 1;
      if (cutRel < span0 && cutRel > v0 && cutRel < v1) {
        ctx.fillStyle = "#cf222e"; ctx.fillRect((cutRel - v0) * scale, 0, 1, h);
      }
      // one arrow per cross-core flag whose set or wait is in the view
      var NS = svg.namespaceURI;
      svg.setAttribute("width", w); svg.setAttribute("height", h);
      svg.setAttribute("viewBox", "0 0 " + w + " " + h);
      while (svg.firstChild) { svg.removeChild(svg.firstChild); }
      var drawn = 0;
      for (var j = 0; j < A.length; j += 4) {
        var ta = A[j + 1], tb = A[j + 3];
        if (Math.max(ta, tb) < v0 || Math.min(ta, tb) > v1) { continue; }
        var xA = (ta - v0) * scale, yA = A[j] * ROW + ROW / 2 - top;
        var xB = (tb - v0) * scale, yB = A[j + 2] * ROW + ROW / 2 - top;
        var line = document.createElementNS(NS, "line");
        line.setAttribute("class", "arrow");
        line.setAttribute("x1", xA.toFixed(1)); line.setAttribute("y1", yA.toFixed(1));
        line.setAttribute("x2", xB.toFixed(1)); line.setAttribute("y2", yB.toFixed(1));
        svg.appendChild(line);
        var head = document.createElementNS(NS, "path"), dir = yB >= yA ? -1 : 1;
        head.setAttribute("d", "M" + xB.toFixed(1) + " " + yB.toFixed(1) + "l-3 " + (6 * dir) + "h6z");
        svg.appendChild(head);
        drawn++;
      }
      tlv.setAttribute("data-visible-spans", visible);
      tlv.setAttribute("data-visible-arrows", drawn);
      tlv.setAttribute("data-view", (d.from + v0) + ":" + (d.from + v1));
      fromBox.value = Math.round(d.from + v0); toBox.value = Math.round(d.from + v1);
      // the axis: round cycle numbers across the view
      while (axis.firstChild) { axis.removeChild(axis.firstChild); }
      var st = step(v1 - v0);
      for (var t = Math.ceil((d.from + v0) / st) * st; t <= d.from + v1; t += st) {
        var pct = (t - d.from - v0) * 100 / (v1 - v0);
        if (pct > 97) { break; }
        var lab = document.createElement("span");
        lab.style.left = pct.toFixed(2) + "%";
        if (pct < 3) { lab.style.transform = "none"; }
        lab.textContent = t.toLocaleString("en-US");
        axis.appendChild(lab);
      }
    }
    // zoom about the pointer; drag to pan
    plot.addEventListener("wheel", function (e) {
      e.preventDefault();
      var w = plot.clientWidth, x = e.clientX - plot.getBoundingClientRect().left;
      var at = v0 + (v1 - v0) * x / w, f = Math.exp(e.deltaY * 0.002), nw = (v1 - v0) * f;
      view(at - nw * x / w, at - nw * x / w + nw);
    }, { passive: false });
    var drag = null;
    plot.addEventListener("mousedown", function (e) { drag = { x: e.clientX, v0: v0, v1: v1 }; plot.classList.add("dragging"); });
    window.addEventListener("mouseup", function () { drag = null; plot.classList.remove("dragging"); });
    window.addEventListener("mousemove", function (e) {
      if (!drag) { return; }
      var dv = (e.clientX - drag.x) * (drag.v1 - drag.v0) / plot.clientWidth;
      view(drag.v0 - dv, drag.v1 - dv);
    });
    // hover: the span (or the summarised column) under the pointer
    plot.addEventListener("mousemove", function (e) {
      var r = plot.getBoundingClientRect();
      var lane = Math.floor((e.clientY - r.top) / ROW), t = v0 + (v1 - v0) * (e.clientX - r.left) / plot.clientWidth;
      var text = "";
      if (lane >= 0 && lane < nl) {
        var k = endsAfter(lane, t);
        if (k < lo[lane + 1] && S[5 * k + 1] <= t) {
          var s = d.from + S[5 * k + 1], e2 = s + S[5 * k + 2];
          text = d.lanes[lane][0] + " " + d.kinds[S[5 * k + 3]][1] + ": " + S[5 * k + 2].toLocaleString("en-US") + " cycles [" + s + ", " + e2 + ")\n" + d.ops[S[5 * k + 4]][1];
        } else if (d.summary && t >= cutRel) {
          var c = Math.floor((t - d.summary.first) / d.summary.width), cols = d.summary.lanes[lane];
          if (c >= 0 && 2 * c < cols.length) {
            var cs = d.from + Math.max(d.summary.first + c * d.summary.width, cutRel);
            var ce = d.from + Math.min(d.summary.first + (c + 1) * d.summary.width, span0);
            text = d.lanes[lane][0] + " cycles [" + cs + ", " + ce + "), summarised: " + Math.round(DIGITS.indexOf(cols[2 * c]) * 100 / 63) + " % busy, " + Math.round(DIGITS.indexOf(cols[2 * c + 1]) * 100 / 63) + " % stalled";
          }
        }
      }
      if (!text || drag) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
    });
    plot.addEventListener("mouseleave", function () { tip.hidden = true; });
    tlv.addEventListener("scroll", draw);
    window.addEventListener("resize", draw);
    document.getElementById("tl-show").addEventListener("click", function () {
      view(Number(fromBox.value) - d.from, Number(toBox.value) - d.from);
    });
    document.getElementById("tl-all").addEventListener("click", function () { view(0, span0); });
    // search: spans of the ops whose name or place contains the text stay bright
    var search = document.getElementById("tl-search");
    function find() {
      match = search.value.trim().toLowerCase();
      var hits = 0, k;
      for (k = 0; k < d.ops.length; k++) {
        opHit[k] = !!match && (d.ops[k][0].toLowerCase().indexOf(match) >= 0 || d.ops[k][1].toLowerCase().indexOf(match) >= 0);
      }
      for (k = 0; k < n; k++) { if (opHit[S[5 * k + 4]]) { hits++; } }
      tlv.setAttribute("data-matches", match ? hits : "");
      status.textContent = match ? hits.toLocaleString("en-US") + " spans match" : "";
      draw();
    }
    search.addEventListener("input", find);
    document.getElementById("tl-next").addEventListener("click", function () {
      if (!match) { return; }
      var mid = (v0 + v1) / 2, best = -1, first = -1;
      for (var k = 0; k < n; k++) {
        if (!opHit[S[5 * k + 4]]) { continue; }
        var s = S[5 * k + 1];
        if (first < 0 || s < S[5 * first + 1]) { first = k; }
        if (s > mid + 0.5 && (best < 0 || s < S[5 * best + 1])) { best = k; }
      }
      var k2 = best >= 0 ? best : first;
      if (k2 < 0) { return; }
      var half = (v1 - v0) / 2, at = S[5 * k2 + 1] + S[5 * k2 + 2] / 2;
      view(at - half, at + half);
    });
    // `page.html#window=A:B` opens the timeline on cycles [A, B)
    var m = /^#window=(\d+):(\d+)$/.exec(window.location.hash);
    if (m) { view(Number(m[1]) - d.from, Number(m[2]) - d.from); } else { draw(); }
    // `page.html#check-interaction`: the page drives its own controls as a reader would (the
    // wheel, a drag, the op search) and checks what each did (the browser test loads it)
    if (window.location.hash === "#check-interaction") {
      var now = function () { return tlv.getAttribute("data-view").split(":").map(Number); };
      var shown = function () { return Number(tlv.getAttribute("data-visible-spans")); };
      var r = plot.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + 4;
      var v = now(), before = shown();
      plot.dispatchEvent(new WheelEvent("wheel", { deltaY: -500, clientX: x, clientY: y, bubbles: true, cancelable: true }));
      var z = now();
      if (!(z[1] - z[0] < v[1] - v[0])) { throw new Error("check: the wheel did not zoom in: " + z); }
      if (!(shown() < before)) { throw new Error("check: zooming in left " + shown() + " of " + before + " spans in view"); }
      plot.dispatchEvent(new MouseEvent("mousedown", { clientX: x, clientY: y, bubbles: true }));
      window.dispatchEvent(new MouseEvent("mousemove", { clientX: x + 100, clientY: y }));
      window.dispatchEvent(new MouseEvent("mouseup", {}));
      var p = now();
      if (!(p[0] < z[0]) || Math.abs((p[1] - p[0]) - (z[1] - z[0])) > 1e-6) { throw new Error("check: dragging right did not move the view left: " + z + " to " + p); }
      if (n > 0) {
        search.value = d.ops[S[4]][0];
        search.dispatchEvent(new Event("input"));
        if (!(Number(tlv.getAttribute("data-matches")) > 0)) { throw new Error("check: the search for " + search.value + " matched nothing"); }
        document.getElementById("tl-next").click();
        var q = now();
        if (Math.abs((q[1] - q[0]) - (p[1] - p[0])) > 1e-6 && q[1] - q[0] < p[1] - p[0]) { throw new Error("check: next changed the zoom"); }
      }
      tlv.setAttribute("data-checked", "wheel drag search");
    }
  }
})();
"##;
