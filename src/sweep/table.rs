//! What a sweep writes per point: the CSV columns (docs/cli.md, "The CSV, column by column"),
//! one row per point, and the JSON line of `--format jsonl`. The columns are fixed before the
//! first point runs (from the sweep file and the cores of its programs), so rows stream out as
//! they complete.

use super::point::{Outcome, Status};
use super::spec::Point;
use super::Inputs;
use serde_json::{json, Map, Value};
use sim::{Pipe, Space};

/// The columns of a sweep's CSV beyond the fixed ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Columns {
    /// The params of the sweep file, in file order: `param_NAME`.
    pub params: Vec<String>,
    /// The scopes any capacity set names, in scope order: `capacity_SCOPE`.
    pub capacities: Vec<Space>,
    /// The pipes of the first core of every program: `PIPE_busy`, `PIPE_top_stall`,
    /// `PIPE_top_stall_cycles`, in pipe order.
    pub pipes: Vec<Pipe>,
    /// The on-chip scopes of every program's cores: `SCOPE_bytes`, in scope order.
    pub scopes: Vec<Space>,
}

/// The input columns, between `index` and `status`.
pub fn input_header(columns: &Columns) -> Vec<String> {
    let mut h: Vec<String> = vec!["program".into(), "config".into()];
    h.extend(columns.params.iter().map(|p| format!("param_{p}")));
    h.push("level".into());
    h.extend(
        columns
            .capacities
            .iter()
            .map(|s| format!("capacity_{}", s.yaml_name())),
    );
    h.push("blocks".into());
    h.push("l2".into());
    h
}

/// The whole header of the results CSV.
pub fn header(columns: &Columns) -> Vec<String> {
    let mut h = vec!["index".to_string()];
    h.extend(input_header(columns));
    h.push("status".into());
    h.push("cycles".into());
    h.push("end_to_end_cycles".into());
    for p in &columns.pipes {
        let name = p.yaml_name();
        h.push(format!("{name}_busy"));
        h.push(format!("{name}_top_stall"));
        h.push(format!("{name}_top_stall_cycles"));
    }
    h.extend(
        columns
            .scopes
            .iter()
            .map(|s| format!("{}_bytes", s.yaml_name())),
    );
    h.push("hazards".into());
    h.push("findings".into());
    h.push("message".into());
    h
}

/// A point's inputs as cells: the program and config as written in the sweep file, an empty
/// cell where a param or capacity does not apply or `blocks` is the program's own.
pub fn input_cells(inputs: &Inputs, point: &Point) -> Vec<String> {
    let cols = &inputs.columns;
    // text cells as the sweep file names them: neutralised where a spreadsheet would see a
    // formula (`csv_record` quotes them)
    let mut c = vec![
        sim::text::csv_cell(&inputs.grid.file.programs[point.program]).into_owned(),
        sim::text::csv_cell(&inputs.grid.file.configs[point.config]).into_owned(),
    ];
    c.extend(
        point
            .params
            .iter()
            .map(|v| v.map(|v| v.to_string()).unwrap_or_default()),
    );
    c.push(point.level.to_string());
    for scope in &cols.capacities {
        c.push(
            point
                .capacities
                .iter()
                .find(|(s, _)| s == scope)
                .map(|(_, b)| b.to_string())
                .unwrap_or_default(),
        );
    }
    c.push(point.blocks.map(|b| b.to_string()).unwrap_or_default());
    c.push(point.l2.name().into());
    c
}

/// The row of a point that ran (or failed): inputs, status, cycles (the cores') and end-to-end
/// cycles (the launch cost added), per pipe its busy cycles
/// and its costliest stall (of the launch's first core, as in the run document's `pipes`),
/// bytes used per scope, hazards, findings and the message.
pub fn cells(inputs: &Inputs, point: &Point, outcome: &Outcome) -> Vec<String> {
    let cols = &inputs.columns;
    let mut c = vec![point.index.to_string()];
    c.extend(input_cells(inputs, point));
    c.push(outcome.status.name().into());
    let sim = outcome.sim.as_deref();
    let empty = || String::new();
    c.push(sim.map_or_else(empty, |s| s.result.total_cycles.to_string()));
    // what a board's timing compares with: the launch cost, then the cores
    c.push(sim.map_or_else(empty, |s| {
        s.result
            .total_cycles
            .saturating_add(s.result.launch_cycles)
            .to_string()
    }));
    for pipe in &cols.pipes {
        // the first core's (a one-core run's only core), as the run report's top-level pipes
        let stats = sim.and_then(|s| s.result.cores[0].pipe(*pipe));
        c.push(stats.map_or_else(empty, |p| p.busy.to_string()));
        // the most cycles; among equals the first in the engine's order of reasons
        let top = stats.and_then(|p| {
            p.stalls
                .iter()
                .filter(|(_, n)| *n > 0)
                .min_by_key(|(reason, n)| (std::cmp::Reverse(*n), *reason))
        });
        c.push(top.map_or_else(empty, |(reason, _)| reason.to_string()));
        c.push(top.map_or_else(empty, |(_, n)| n.to_string()));
    }
    for scope in &cols.scopes {
        let used = sim.and_then(|s| {
            s.parts
                .iter()
                .flat_map(|part| part.planned.plan.scopes.iter())
                .find(|sp| sp.space == *scope)
                .map(|sp| sp.used)
        });
        c.push(used.map_or_else(empty, |u| u.to_string()));
    }
    c.push(
        sim.and_then(|s| s.hazards.as_ref())
            .map_or_else(empty, |h| h.len().to_string()),
    );
    c.push(sim.map_or_else(empty, |s| {
        let r = &s.result;
        (r.findings.len() + r.deadlock.is_some() as usize + r.stopped.is_some() as usize)
            .to_string()
    }));
    c.push(sim::text::csv_cell(&outcome.message).into_owned());
    c
}

/// One CSV record, quoted where it needs to be (a message with commas, quotes or newlines),
/// and a cell [`sim::text::csv_cell`] neutralised always, as OWASP's CSV-injection guidance
/// asks (a quoted cell is text to a spreadsheet).
pub fn csv_record(cells: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if cell.is_empty() {
            // the csv crate writes a record of one empty field as `""`; a cell writes nothing
            continue;
        }
        let style = if sim::text::csv_cell_read(cell) != cell {
            csv::QuoteStyle::Always
        } else {
            csv::QuoteStyle::Necessary
        };
        let mut w = csv::WriterBuilder::new()
            .quote_style(style)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        w.write_record([cell])
            .expect("a record always writes to memory");
        let field = w.into_inner().expect("a memory writer flushes");
        out.extend_from_slice(&field[..field.len() - 1]);
    }
    out.push(b'\n');
    out
}

/// The JSON line of a point: `schema`, `index`, its inputs (`params` and `capacities` hold
/// only those that apply), `status`, `message` (`null` for ok) and `run`, the run document of
/// `npusim run --format json` (`null` when the point did not run).
pub fn json_line(inputs: &Inputs, point: &Point, outcome: &Outcome) -> Vec<u8> {
    let file = &inputs.grid.file;
    let mut params = Map::new();
    for ((name, _), v) in file.params.iter().zip(&point.params) {
        if let Some(v) = v {
            params.insert(name.clone(), json!(v));
        }
    }
    let mut capacities = Map::new();
    for (space, bytes) in point.capacities {
        capacities.insert(space.yaml_name().into(), json!(bytes));
    }
    let config = &inputs.configs[point.config].config;
    let run = outcome.sim.as_deref().map_or(Value::Null, |s| {
        let report: reports::Run = s.into();
        reports::run_json(config, &report)
    });
    let doc = json!({
        "schema": reports::SCHEMA,
        "index": point.index,
        "program": file.programs[point.program],
        "config": file.configs[point.config],
        "params": params,
        "level": point.level,
        "capacities": capacities,
        "blocks": point.blocks,
        "l2": point.l2.name(),
        "status": outcome.status.name(),
        "message": match outcome.status {
            Status::Ok => Value::Null,
            _ => json!(outcome.message),
        },
        "run": run,
    });
    let mut line = serde_json::to_vec(&doc).expect("a JSON value always serialises");
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_quote_what_needs_quoting() {
        let cells = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(csv_record(&cells(&["1", "ok", ""])), b"1,ok,\n");
        assert_eq!(
            csv_record(&cells(&["2", "a, b", "say \"hi\"\nthen"])),
            b"2,\"a, b\",\"say \"\"hi\"\"\nthen\"\n"
        );
        // a neutralised text cell is quoted; a number column's -5 is a number, left alone
        let formula = sim::text::csv_cell("=HYPERLINK(\"x\")").into_owned();
        assert_eq!(
            csv_record(&[formula, "-5".into(), "a".into()]),
            b"\"'=HYPERLINK(\"\"x\"\")\",-5,a\n"
        );
        // and it reads back as a CSV reader sees it, then as it was
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(&b"\"'=HYPERLINK(\"\"x\"\")\",-5\n"[..]);
        let record = r.records().next().unwrap().unwrap();
        assert_eq!(sim::text::csv_cell_read(&record[0]), "=HYPERLINK(\"x\")");
        assert_eq!(&record[1], "-5");
    }
}
