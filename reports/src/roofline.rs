//! `run --roofline` (docs/roofline.md): the run placed against the bounds its config implies.
//! [`Roofline`] watches the run and counts, per core, the work every started instruction did
//! on the cube (MACs), the vector unit (repeats) and each data path (bytes), with the cycles
//! that work needs at the config's rates ([`sim::engine::work_of`], the engine's own rules);
//! [`Roofline::finish`] adds HBM and the L2 from the run's memory statistics and makes the rows:
//! per core type and resource, and the chip's shared rates.
//!
//! For each row: achieved = work / the run's cycles; the bound (peak) = the config's rate × the
//! cores sharing it (for a mix of rates, dtypes or vector ops: work / Σ each part's work / its
//! rate); utilisation = achieved / peak; the minimum cycles = work / peak. These are exact,
//! without the engine's rounding to whole cycles per instruction (which a pipe's busy cycles
//! have). The nearest bound is the row of the highest utilisation.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sim::config::Config;
use sim::engine::{work_of, Issue, Observer, Resource, RunResult, Work};
use sim::{Program, Space};

use crate::table::{Align, Table};

/// What a roofline row bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    /// A resource of each core of a core type.
    Core(Resource),
    /// The chip's HBM rate (`memory.hbm_bytes_per_cycle`), shared by every core.
    Hbm,
    /// The chip's L2 rate (`memory.l2_chip_bytes_per_cycle`), shared by every core.
    L2,
}

impl Bound {
    /// `cube`, `vector`, `gm->ub`, `hbm`, `l2`.
    pub fn name(self) -> String {
        match self {
            Bound::Core(Resource::Cube) => "cube".into(),
            Bound::Core(Resource::Vector) => "vector".into(),
            Bound::Core(Resource::Path(from, to)) => format!("{}->{}", space(from), space(to)),
            Bound::Hbm => "hbm".into(),
            Bound::L2 => "l2".into(),
        }
    }

    /// What the work counts.
    pub fn unit(self) -> &'static str {
        match self {
            Bound::Core(Resource::Cube) => "MACs",
            Bound::Core(Resource::Vector) => "repeats",
            _ => "bytes",
        }
    }
}

/// A space as the config's `paths` name it.
fn space(s: Space) -> String {
    s.report_name().to_ascii_lowercase()
}

/// One row: a resource of a core type, summed over its cores, or a chip-wide rate.
#[derive(Clone, Debug, PartialEq)]
pub struct RooflineRow {
    pub bound: Bound,
    /// The core type, `None` for the chip's rates.
    pub core_type: Option<String>,
    /// The cores sharing the row's work (the core type's in the launch; 1 for the chip).
    pub cores: u64,
    /// MACs, repeats or bytes.
    pub work: u64,
    /// Σ over the cores of the cycles their work needs at one core's rate, unrounded.
    pub needs: f64,
    /// The most any one of the cores needs.
    pub busiest: f64,
}

impl RooflineRow {
    /// Work per cycle of the run.
    pub fn achieved(&self, cycles: u64) -> f64 {
        ratio(self.work as f64, cycles as f64)
    }

    /// The bound: work per cycle at the config's rate, on all of the row's cores (`None` when
    /// the work needs no cycles, a rate of 0 cycles per repeat).
    pub fn peak(&self) -> Option<f64> {
        (self.needs > 0.0).then(|| self.work as f64 * self.cores as f64 / self.needs)
    }

    /// achieved / peak: the share of the run the row's cores must spend on the work.
    pub fn utilisation(&self, cycles: u64) -> f64 {
        ratio(self.needs, self.cores as f64 * cycles as f64)
    }

    /// The cycles the work needs at the peak (spread evenly over the cores), rounded up.
    pub fn min_cycles(&self) -> u64 {
        (self.needs / self.cores.max(1) as f64).ceil() as u64
    }

    /// The busiest core's share of the run.
    pub fn busiest_utilisation(&self, cycles: u64) -> f64 {
        ratio(self.busiest, cycles as f64)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// The roofline of a run: its cycles and rows, core types in launch order (resources in
/// [`Resource`] order), then HBM and L2; rows without work are left out.
#[derive(Clone, Debug, PartialEq)]
pub struct RooflineReport {
    pub cycles: u64,
    /// Cores in the launch (1 for a one-core run).
    pub launch_cores: usize,
    pub rows: Vec<RooflineRow>,
}

impl RooflineReport {
    /// The row of the highest utilisation (the first of equals), `None` when nothing worked.
    pub fn nearest(&self) -> Option<&RooflineRow> {
        let mut best: Option<&RooflineRow> = None;
        for r in &self.rows {
            let better =
                best.is_none_or(|b| r.utilisation(self.cycles) > b.utilisation(self.cycles));
            if better {
                best = Some(r);
            }
        }
        best
    }
}

/// The work of one core on one resource: its amount, and the cycles it needs without
/// rounding as Σ numerator / denominator, the numerators summed per denominator (a rate), so
/// that work at one rate adds up exactly.
#[derive(Clone, Debug)]
struct Done {
    resource: Resource,
    work: u64,
    /// denominator -> Σ numerators
    exact: BTreeMap<u64, u128>,
}

/// Σ n / d over `exact`, in increasing d.
fn cycles_of(exact: &BTreeMap<u64, u128>) -> f64 {
    exact
        .iter()
        .map(|(&d, &n)| n as f64 / d.max(1) as f64)
        .sum()
}

/// Counts the work of a run's started instructions, core by core.
#[derive(Debug)]
pub struct Roofline<'a> {
    config: &'a Config,
    parts: Vec<&'a Program>,
    /// Per core of the launch: its part.
    part_of: Vec<u32>,
    /// Issued instructions with work that have not started yet, by sequence number.
    pending: BTreeMap<u64, (u32, [Option<Work>; 2])>,
    /// Per core: what its started instructions did, resource by resource.
    done: Vec<Vec<Done>>,
}

impl<'a> Roofline<'a> {
    /// The roofline of the launch of `parts` (one program, or a mixed kernel's `aic` and `aiv`
    /// parts, in order), the cores as [`sim::launch::slots`] numbers them.
    pub fn for_launch(parts: &[&'a Program], config: &'a Config) -> Roofline<'a> {
        let part_of: Vec<u32> = sim::launch::slots(parts, config)
            .iter()
            .map(|s| s.part)
            .collect();
        Roofline {
            config,
            parts: parts.to_vec(),
            done: vec![Vec::new(); part_of.len()],
            part_of,
            pending: BTreeMap::new(),
        }
    }

    /// The rows, once `result` is the run this watched.
    pub fn finish(self, result: &RunResult) -> RooflineReport {
        let cycles = result.total_cycles;
        let mut rows: Vec<RooflineRow> = Vec::new();
        // core types in the order the launch's cores first show them
        let mut types = Vec::new();
        for c in &result.cores {
            if !types.contains(&c.core) {
                types.push(c.core);
            }
        }
        for ty in types {
            let cores: Vec<usize> = (0..result.cores.len())
                .filter(|&i| result.cores[i].core == ty)
                .collect();
            // per resource: the row, and its cores' exact cycles summed per rate
            let mut by: BTreeMap<Resource, (RooflineRow, BTreeMap<u64, u128>)> = BTreeMap::new();
            for &i in &cores {
                for d in self.done.get(i).map_or(&[][..], |v| v) {
                    let (row, exact) = by.entry(d.resource).or_insert_with(|| {
                        let row = RooflineRow {
                            bound: Bound::Core(d.resource),
                            core_type: Some(self.config.core(ty).name.clone()),
                            cores: cores.len() as u64,
                            work: 0,
                            needs: 0.0,
                            busiest: 0.0,
                        };
                        (row, BTreeMap::new())
                    });
                    row.work = row.work.saturating_add(d.work);
                    row.busiest = row.busiest.max(cycles_of(&d.exact));
                    for (&den, &num) in &d.exact {
                        let e = exact.entry(den).or_default();
                        *e = e.saturating_add(num);
                    }
                }
            }
            rows.extend(
                by.into_values()
                    .map(|(row, exact)| RooflineRow {
                        needs: cycles_of(&exact),
                        ..row
                    })
                    .filter(|r| r.work > 0),
            );
        }
        if let (Some(m), Some(mc)) = (&result.memory, &self.config.memory) {
            for (bound, bytes, rate) in [
                (Bound::Hbm, m.hbm_traffic(), mc.hbm_bytes_per_cycle),
                (Bound::L2, m.l2_traffic(), mc.l2_chip_bytes_per_cycle),
            ] {
                if bytes > 0 {
                    let needs = bytes as f64 / rate.max(1) as f64;
                    rows.push(RooflineRow {
                        bound,
                        core_type: None,
                        cores: 1,
                        work: bytes,
                        needs,
                        busiest: needs,
                    });
                }
            }
        }
        RooflineReport {
            cycles,
            launch_cores: result.cores.len(),
            rows,
        }
    }
}

impl Observer for Roofline<'_> {
    fn on_issue(&mut self, issue: &Issue<'_>) {
        let part = self.part_of.get(issue.core as usize).copied().unwrap_or(0) as usize;
        let Some(program) = self.parts.get(part) else {
            return;
        };
        let work = work_of(self.config, program, issue.op, issue.pipe, issue.vars);
        if work.iter().any(Option::is_some) {
            self.pending.insert(issue.seq, (issue.core, work));
        }
    }

    fn watches_slots(&self) -> bool {
        false
    }

    fn ordered(&self) -> bool {
        false
    }

    /// Work counts once its instruction starts: a run stopped at a limit never does what had
    /// not started.
    fn on_start(&mut self, seq: u64, _start: u64, _complete: u64) {
        let Some((core, work)) = self.pending.remove(&seq) else {
            return;
        };
        let Some(done) = self.done.get_mut(core as usize) else {
            return;
        };
        for w in work.into_iter().flatten() {
            let k = match done.iter().position(|d| d.resource == w.resource) {
                Some(k) => k,
                None => {
                    done.push(Done {
                        resource: w.resource,
                        work: 0,
                        exact: BTreeMap::new(),
                    });
                    done.len() - 1
                }
            };
            let d = &mut done[k];
            d.work = d.work.saturating_add(w.amount);
            let (num, den) = w.exact;
            let e = d.exact.entry(den).or_default();
            *e = e.saturating_add(num as u128);
        }
    }
}

/// Where a row's work ran: `aiv x2`, `chip`.
fn where_(r: &RooflineRow) -> String {
    match &r.core_type {
        Some(t) => format!("{t} x{}", r.cores),
        None => "chip".into(),
    }
}

/// A rate per cycle for text: two decimals.
fn rate(x: f64) -> String {
    format!("{x:.2}")
}

fn pct(x: f64) -> String {
    format!("{:.1}", x * 100.0)
}

/// The nearest bound in words: `vector on aiv cores (61.4 % of peak)`; rows exactly as near
/// follow it (`cube = gm->l1 (47.0 % of peak)`).
fn nearest_words(report: &RooflineReport) -> String {
    let Some(first) = report.nearest() else {
        return "none (no work on a bounded resource)".into();
    };
    let u = first.utilisation(report.cycles);
    let named: Vec<String> = report
        .rows
        .iter()
        .filter(|r| r.utilisation(report.cycles) == u)
        .map(|r| {
            let on = match &r.core_type {
                Some(t) if report.launch_cores > 1 => format!(" on {t} cores"),
                _ => String::new(),
            };
            format!("{}{on}", r.bound.name())
        })
        .collect();
    format!("{} ({} % of peak)", named.join(" = "), pct(u))
}

/// The text report's `roofline` section.
pub fn roofline_text(report: &RooflineReport) -> String {
    let launch = report.launch_cores > 1;
    let mut out = format!(
        "roofline ({}{} cycles): nearest bound: {}\n",
        if launch { "launch, " } else { "" },
        report.cycles,
        nearest_words(report)
    );
    if report.rows.is_empty() {
        return out;
    }
    let mut columns = vec![
        ("resource".to_string(), Align::Left),
        ("cores".to_string(), Align::Left),
        ("work".to_string(), Align::Right),
        (String::new(), Align::Left),
        ("achieved/cycle".to_string(), Align::Right),
        ("peak/cycle".to_string(), Align::Right),
        ("util %".to_string(), Align::Right),
        ("min cycles".to_string(), Align::Right),
    ];
    if launch {
        columns.push(("busiest core %".to_string(), Align::Right));
    }
    let mut table = Table::new(columns);
    for r in &report.rows {
        let mut row = vec![
            r.bound.name(),
            where_(r),
            r.work.to_string(),
            r.bound.unit().to_string(),
            rate(r.achieved(report.cycles)),
            r.peak().map_or("-".into(), rate),
            pct(r.utilisation(report.cycles)),
            r.min_cycles().to_string(),
        ];
        if launch {
            row.push(pct(r.busiest_utilisation(report.cycles)));
        }
        table.row(row);
    }
    out.push_str(&table.render("  "));
    out
}

/// The run document's `roofline` (docs/json.md).
pub fn roofline_json(report: &RooflineReport) -> Value {
    let cycles = report.cycles;
    let row = |r: &RooflineRow| {
        json!({
            "resource": r.bound.name(),
            "unit": r.bound.unit(),
            "core_type": r.core_type,
            "cores": r.cores,
            "work": r.work,
            "achieved_per_cycle": crate::round4(r.achieved(cycles)),
            "peak_per_cycle": r.peak().map(crate::round4),
            "utilisation": crate::round4(r.utilisation(cycles)),
            "min_cycles": r.min_cycles(),
            "busiest_core_utilisation": crate::round4(r.busiest_utilisation(cycles)),
        })
    };
    json!({
        "total_cycles": cycles,
        "nearest": report.nearest().map(row),
        "rows": report.rows.iter().map(row).collect::<Vec<_>>(),
    })
}

/// The HTML page's roofline section: the nearest bound, one bar per row of its share of the
/// bound (0 to 100 %, the nearest in red, with any as near), and the rows' figures. Bars rather than the
/// classic log-log roofline (intensity against rate): the rows count MACs, repeats and bytes
/// on rates orders of magnitude apart, on several paths and two core types, which one chart
/// of one compute peak and one bandwidth cannot place; a share of each bound can.
pub fn roofline_html(report: &RooflineReport) -> String {
    use crate::html::esc;
    let cycles = report.cycles;
    let mut out =
        format!(
        "<section id=\"roofline\">\n<h2>Roofline</h2>\n<p>nearest bound: {} over {} cycles{}</p>\n",
        esc(&nearest_words(report)),
        cycles,
        if report.launch_cores > 1 { " of the launch" } else { "" }
    );
    out.push_str("<p class=\"note\">Each bar is a resource's work over the run as a share of what its config rate allows in that time (its cores together; HBM and the L2 are the chip's). The longest is the nearest bound. Hover a bar for its figures.</p>\n");
    if report.rows.is_empty() {
        return out + "</section>\n";
    }
    // label column, bar area, row height
    let (label, width, row) = (170.0, 520.0, 22.0);
    let height = row * report.rows.len() as f64 + 24.0;
    out.push_str(&format!(
        "<svg class=\"roofline\" style=\"display:block;margin:6px 0\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"utilisation of each bound\">\n",
        label + width + 60.0
    ));
    for q in 0..=4 {
        let x = label + width * q as f64 / 4.0;
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{x}\" y1=\"0\" x2=\"{x}\" y2=\"{}\"/><text class=\"dim\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{} %</text>\n",
            height - 20.0,
            height - 6.0,
            q * 25
        ));
    }
    // the nearest, and any row exactly as near
    let most = report.nearest().map(|n| n.utilisation(cycles));
    for (k, r) in report.rows.iter().enumerate() {
        let y = row * k as f64;
        let u = r.utilisation(cycles);
        // colours as attributes: the page's stylesheet stays that of a page without the section
        let (class, fill) = if most == Some(u) {
            ("bar nearest", "#cf222e")
        } else {
            ("bar", "#54aeff")
        };
        let title = format!(
            "{} on {}: {} {} in {} cycles, {} a cycle of a peak {}; {} % of it; at least {} cycles",
            r.bound.name(),
            where_(r),
            r.work,
            r.bound.unit(),
            cycles,
            rate(r.achieved(cycles)),
            r.peak().map_or("-".into(), rate),
            pct(u),
            r.min_cycles()
        );
        out.push_str(&format!(
            "<text x=\"0\" y=\"{}\">{}</text><rect class=\"{class}\" fill=\"{fill}\" x=\"{label}\" y=\"{}\" width=\"{:.1}\" height=\"{}\"><title>{}</title></rect><text class=\"dim\" x=\"{:.1}\" y=\"{}\">{} %</text>\n",
            y + 15.0,
            esc(&format!("{} · {}", r.bound.name(), where_(r))),
            y + 4.0,
            width * u.clamp(0.0, 1.0),
            row - 8.0,
            esc(&title),
            label + width * u.clamp(0.0, 1.0) + 4.0,
            y + 15.0,
            pct(u)
        ));
    }
    out.push_str("</svg>\n");
    out.push_str("<table class=\"summary\"><thead><tr><th>resource</th><th>cores</th><th>work</th><th class=\"text\">unit</th><th>achieved/cycle</th><th>peak/cycle</th><th>util %</th><th>min cycles</th><th>busiest core %</th></tr></thead><tbody>\n");
    for r in &report.rows {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&r.bound.name()),
            esc(&where_(r)),
            r.work,
            r.bound.unit(),
            rate(r.achieved(cycles)),
            r.peak().map_or("-".into(), rate),
            pct(r.utilisation(cycles)),
            r.min_cycles(),
            pct(r.busiest_utilisation(cycles))
        ));
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bound: Bound, cores: u64, work: u64, needs: f64, busiest: f64) -> RooflineRow {
        RooflineRow {
            bound,
            core_type: matches!(bound, Bound::Core(_)).then(|| "aiv".into()),
            cores,
            work,
            needs,
            busiest,
        }
    }

    #[test]
    fn a_rows_figures_follow_from_its_work_and_needs() {
        // 2 cores moved 38400 + 27136 = 65536 B on a path of 128 B/cycle, needing 300 + 212
        // cycles, over a run of 1000 cycles: 65.536 B/cycle achieved; the peak 2 × 128; 512 /
        // 2000 = 25.6 % of it; 256 cycles at it; the busier core needs 300 of the 1000, 30 %.
        let gm_ub = Bound::Core(Resource::Path(Space::Gm, Space::Ub));
        let r = row(gm_ub, 2, 65536, 512.0, 300.0);
        assert_eq!(r.achieved(1000), 65.536);
        assert_eq!(r.peak(), Some(256.0));
        assert_eq!(r.utilisation(1000), 0.256);
        assert_eq!(r.min_cycles(), 256);
        assert_eq!(r.busiest_utilisation(1000), 0.3);
        // an odd split rounds the even share up: 3 / 2
        assert_eq!(row(Bound::Hbm, 2, 1, 3.0, 3.0).min_cycles(), 2);
        // work that needs no cycles (a rate of 0 cycles a repeat) has no peak, and no share
        let free = row(Bound::Core(Resource::Vector), 1, 8, 0.0, 0.0);
        assert_eq!(free.peak(), None);
        assert_eq!(free.utilisation(10), 0.0);
        // a run of no cycles: nothing achieved, nothing used
        assert_eq!(r.achieved(0), 0.0);
        assert_eq!(r.utilisation(0), 0.0);
    }

    #[test]
    fn the_nearest_bound_is_the_highest_utilisation_first_of_equals() {
        let cube = row(Bound::Core(Resource::Cube), 2, 100, 60.0, 30.0);
        let vector = row(Bound::Core(Resource::Vector), 4, 100, 120.0, 30.0);
        let hbm = row(Bound::Hbm, 1, 100, 30.0, 30.0);
        let report = RooflineReport {
            cycles: 100,
            launch_cores: 6,
            // 60 / 200 = 30 %, 120 / 400 = 30 %, 30 / 100 = 30 %: all equal, the first wins
            rows: vec![cube.clone(), vector.clone(), hbm.clone()],
        };
        assert_eq!(report.nearest(), Some(&cube));
        assert_eq!(
            nearest_words(&report),
            "cube on aiv cores = vector on aiv cores = hbm (30.0 % of peak)"
        );
        // 122 / 400 = 30.5 % beats them
        let mut busier = vector;
        busier.needs = 122.0;
        let report = RooflineReport {
            rows: vec![cube, busier.clone(), hbm],
            ..report
        };
        assert_eq!(report.nearest(), Some(&busier));
        assert_eq!(
            nearest_words(&report),
            "vector on aiv cores (30.5 % of peak)"
        );
        let empty = RooflineReport {
            cycles: 5,
            launch_cores: 1,
            rows: vec![],
        };
        assert_eq!(empty.nearest(), None);
        assert_eq!(
            roofline_text(&empty),
            "roofline (5 cycles): nearest bound: none (no work on a bounded resource)\n"
        );
    }

    #[test]
    fn the_page_draws_a_bar_per_row_the_nearest_apart() {
        // 50 % and 25 % of a 520 px bar area: 260 and 130 px wide
        let report = RooflineReport {
            cycles: 100,
            launch_cores: 2,
            rows: vec![
                row(Bound::Core(Resource::Vector), 2, 100, 100.0, 60.0),
                row(Bound::Hbm, 1, 2500, 25.0, 25.0),
            ],
        };
        let html = roofline_html(&report);
        assert_eq!(html.matches("<rect class=\"bar").count(), 2);
        assert_eq!(html.matches("<rect class=\"bar nearest\"").count(), 1);
        assert!(html
            .contains("class=\"bar nearest\" fill=\"#cf222e\" x=\"170\" y=\"4\" width=\"260.0\""));
        assert!(html.contains("class=\"bar\" fill=\"#54aeff\" x=\"170\" y=\"26\" width=\"130.0\""));
        assert!(html.contains("<td>vector</td><td>aiv x2</td><td>100</td>"));
        assert!(html.contains("<td>hbm</td><td>chip</td><td>2500</td>"));
        assert!(html.contains("nearest bound: vector on aiv cores (50.0 % of peak)"));
        // names are escaped
        let path = Bound::Core(Resource::Path(Space::Gm, Space::Ub));
        let one = RooflineReport {
            rows: vec![row(path, 1, 1, 1.0, 1.0)],
            ..report
        };
        assert!(roofline_html(&one).contains("gm-&gt;ub"));
    }

    #[test]
    fn bounds_are_named_as_the_config_names_them() {
        let gm_l1 = Bound::Core(Resource::Path(Space::Gm, Space::L1));
        assert_eq!(gm_l1.name(), "gm->l1");
        assert_eq!(gm_l1.unit(), "bytes");
        assert_eq!(Bound::Core(Resource::Cube).unit(), "MACs");
        assert_eq!(Bound::Core(Resource::Vector).unit(), "repeats");
        assert_eq!(Bound::L2.name(), "l2");
    }
}
