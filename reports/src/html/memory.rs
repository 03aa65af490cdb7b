//! The memory map of every on-chip scope of a plan: x = program position (the planner's linear
//! op order, the one its `live` intervals are in), y = address, one rect per buffer slot per
//! live interval.

use super::style::BUFFER_COLOURS;
use super::timeline::nice_step;
use super::{esc, f2, thousands};
use planner::Plan;
use sim::Program;

/// How many slot rects the maps of `plan` draw: Σ over buffers of slots × live intervals.
pub fn slot_rects(plan: &Plan) -> usize {
    plan.buffers
        .iter()
        .map(|b| b.offsets.len() * b.live.len())
        .sum()
}

/// Geometry of one map, in SVG user units.
struct Frame {
    left: f64,
    top: f64,
    w: f64,
    h: f64,
    /// Positions 0..positions on x.
    positions: usize,
    /// Bytes 0..bytes on y (address 0 at the bottom).
    bytes: u64,
}

impl Frame {
    fn x(&self, pos: usize) -> f64 {
        self.left + self.w * pos as f64 / self.positions as f64
    }

    fn y(&self, addr: u64) -> f64 {
        self.top + self.h * (1.0 - addr as f64 / self.bytes as f64)
    }
}

/// The maps of every scope of `plan` with buffers, each `width` × `height` units (scaled to the
/// width of their column), then a line naming the scopes without buffers. `id` prefixes the
/// SVGs' ids (`l2-` on the comparison page).
pub(super) fn memory_maps(
    program: &Program,
    plan: &Plan,
    width: f64,
    height: f64,
    id: &str,
) -> String {
    // one x axis for every scope: positions are the program's, not a scope's
    let positions = plan
        .buffers
        .iter()
        .flat_map(|b| b.live.iter().map(|i| i.last + 1))
        .max()
        .unwrap_or(1)
        .max(1);
    let mut out = String::from("<div class=\"maps\">\n");
    let mut empty = Vec::new();
    for scope in &plan.scopes {
        let buffers: Vec<_> = plan
            .buffers
            .iter()
            .filter(|b| b.scope == scope.space)
            .collect();
        if buffers.is_empty() {
            empty.push(scope.space.report_name());
            continue;
        }
        let slots: usize = buffers.iter().map(|b| b.offsets.len()).sum();
        let rects: usize = buffers.iter().map(|b| b.offsets.len() * b.live.len()).sum();
        out.push_str(&format!(
            "<div class=\"map\">\n<h4>{}: {} of {} bytes ({}) · {} buffer{}, {} slot{}</h4>\n",
            scope.space.report_name(),
            thousands(scope.used),
            thousands(scope.capacity),
            scope.mode.name(),
            buffers.len(),
            if buffers.len() == 1 { "" } else { "s" },
            slots,
            if slots == 1 { "" } else { "s" },
        ));
        let f = Frame {
            left: 62.0,
            top: 22.0,
            w: width - 62.0 - 12.0,
            h: height - 22.0 - 34.0,
            positions,
            bytes: scope.capacity.max(scope.used).max(1),
        };
        out.push_str(&format!(
            "<svg class=\"memmap\" id=\"{id}mem-{}\" data-scope=\"{}\" data-slots=\"{rects}\" viewBox=\"0 0 {w} {h}\" width=\"100%\" style=\"max-width:{w}px\" role=\"img\" aria-label=\"{} memory map\">\n",
            scope.space.yaml_name(),
            scope.space.report_name(),
            scope.space.report_name(),
            w = f2(width),
            h = f2(height),
        ));
        out.push_str(&axes(&f));
        for (rank, b) in buffers.iter().enumerate() {
            let name = &program
                .buffers
                .get(b.buffer.index())
                .map_or_else(|| b.buffer.to_string(), |x| x.name.clone());
            let colour = BUFFER_COLOURS[rank % BUFFER_COLOURS.len()];
            let n = b.offsets.len();
            for (k, &lo) in b.offsets.iter().enumerate() {
                let hi = lo + b.bytes;
                let label = if n > 1 {
                    format!("{name}@{k}")
                } else {
                    name.clone()
                };
                for iv in &b.live {
                    let (x0, x1) = (f.x(iv.first), f.x(iv.last + 1));
                    let (y0, y1) = (f.y(hi), f.y(lo));
                    let h = (y1 - y0).max(1.0);
                    out.push_str(&format!(
                        "<rect class=\"slot\" data-buffer=\"{}\" data-slot=\"{k}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"><title>{} slot {k} of {n}: {} bytes at [{lo:#x}, {hi:#x})\nlive at positions {}–{}; placed: {}</title></rect>\n",
                        esc(name),
                        f2(x0),
                        f2(y0),
                        f2(x1 - x0),
                        f2(h),
                        esc(name),
                        thousands(b.bytes),
                        iv.first,
                        iv.last,
                        placed_by(b),
                    ));
                    // a name only where it fits
                    if x1 - x0 >= 6.5 * label.chars().count() as f64 + 6.0 && h >= 13.0 {
                        out.push_str(&format!(
                            "<text class=\"lbl\" x=\"{}\" y=\"{}\">{}</text>\n",
                            f2(x0 + 3.0),
                            f2(y0 + h / 2.0 + 4.0),
                            esc(&label)
                        ));
                    }
                }
            }
        }
        out.push_str(&capacity_line(&f, scope.capacity));
        out.push_str("</svg>\n");
        out.push_str(&buffer_legend(program, &buffers));
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    if !empty.is_empty() {
        out.push_str(&format!(
            "<p class=\"note\">No buffers in {}.</p>\n",
            empty.join(", ")
        ));
    }
    out
}

/// The frame, the address and position ticks, and the capacity line.
fn axes(f: &Frame) -> String {
    let mut out = String::new();
    let (right, bottom) = (f.left + f.w, f.top + f.h);
    for i in 0..=4u64 {
        let addr = f.bytes / 4 * i + if i == 4 { f.bytes % 4 } else { 0 };
        let y = f.y(addr);
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"dim\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            f2(f.left),
            f2(right),
            f2(f.left - 5.0),
            f2(y + 4.0),
            bytes_label(addr),
            y = f2(y),
        ));
    }
    let step = nice_step(f.positions as u64, 10) as usize;
    let mut p = 0;
    while p <= f.positions {
        let x = f.x(p);
        out.push_str(&format!(
            "<line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text class=\"dim\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{p}</text>\n",
            f2(bottom),
            f2(bottom + 4.0),
            f2(bottom + 15.0),
            x = f2(x),
        ));
        p += step;
    }
    out.push_str(&format!(
        "<line class=\"axis\" x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{b}\"/><line class=\"axis\" x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>\n",
        l = f2(f.left),
        t = f2(f.top),
        b = f2(bottom),
        r = f2(right),
    ));
    out.push_str(&format!(
        "<text class=\"dim\" x=\"{}\" y=\"{}\" text-anchor=\"end\">program position (the planner's op order) →</text>\n<text class=\"dim\" x=\"2\" y=\"12\">address</text>\n",
        f2(right),
        f2(bottom + 30.0),
    ));
    out
}

/// The capacity line of a scope, drawn over the slots.
fn capacity_line(f: &Frame, capacity: u64) -> String {
    let y = f.y(capacity);
    format!(
        "<line class=\"cap\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"cap\" x=\"{}\" y=\"{}\" text-anchor=\"end\">capacity {} ({} bytes)</text>\n",
        f2(f.left),
        f2(f.left + f.w),
        f2(f.left + f.w),
        f2(y - 5.0),
        bytes_label(capacity),
        thousands(capacity),
        y = f2(y),
    )
}

/// `0`, `512 B`, `48 KiB`, `1.5 MiB`.
fn bytes_label(b: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let scaled = |unit: u64, name: &str| {
        if b.is_multiple_of(unit) {
            format!("{} {name}", b / unit)
        } else {
            format!("{:.1} {name}", b as f64 / unit as f64)
        }
    };
    match b {
        0 => "0".into(),
        b if b < KIB => format!("{b} B"),
        b if b < MIB => scaled(KIB, "KiB"),
        _ => scaled(MIB, "MiB"),
    }
}

/// Below a map: every buffer's colour, name, slots and slot size.
fn buffer_legend(program: &Program, buffers: &[&planner::BufferPlan]) -> String {
    const SHOWN: usize = 40;
    let mut out = String::from("<ul class=\"legend\">");
    for (rank, b) in buffers.iter().enumerate().take(SHOWN) {
        let name = program
            .buffers
            .get(b.buffer.index())
            .map_or_else(|| b.buffer.to_string(), |x| x.name.clone());
        out.push_str(&format!(
            "<li><span class=\"sw\" style=\"background:{}\"></span>{} <span class=\"dim\">{} × {} B, {}</span></li>",
            BUFFER_COLOURS[rank % BUFFER_COLOURS.len()],
            esc(&name),
            b.offsets.len(),
            thousands(b.bytes),
            placed_by(b),
        ));
    }
    if buffers.len() > SHOWN {
        out.push_str(&format!(
            "<li class=\"dim\">and {} more (hover a slot for its buffer)</li>",
            buffers.len() - SHOWN
        ));
    }
    out.push_str("</ul>\n");
    out
}

/// How the buffer got its address: `sequential`, `fixed (at:)`, `inplace`, `reuse level 2` ...
fn placed_by(b: &planner::BufferPlan) -> String {
    match b.placed_by {
        planner::PlacedBy::Level(_) => format!("reuse level {}", b.placed_by.name()),
        planner::PlacedBy::Fixed => "fixed (at:)".into(),
        other => other.name().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_labels() {
        assert_eq!(bytes_label(0), "0");
        assert_eq!(bytes_label(512), "512 B");
        assert_eq!(bytes_label(196_608), "192 KiB");
        assert_eq!(bytes_label(49_664), "48.5 KiB");
        assert_eq!(bytes_label(1 << 20), "1 MiB");
    }
}
