//! `npusim sweep --summary RESULTS.csv [--html PAGE] [--x COLUMN] [--by COLUMN]`: reads a
//! sweep's CSV and prints the best point per program and a pivot of cycles
//! (`reports::sweep_summary_text`); with `--html`, also the page plotting cycles against `--x`
//! (`reports::sweep_html`).

use super::PART_TAG;
use crate::{input, output, Exit};
use std::path::Path;

pub struct SummaryArgs<'a> {
    pub results: &'a Path,
    pub html: Option<&'a Path>,
    pub x: Option<&'a str>,
    pub by: Option<&'a str>,
}

pub fn summary(args: &SummaryArgs) -> Result<(), Exit> {
    if let Some(html) = args.html {
        output::refuse_clashes(
            &[("the results".to_string(), args.results)],
            &[("--html", html)],
        )?;
    }
    let name = input::name(args.results);
    let text =
        input::read_text(args.results).map_err(|e| Exit::input(e.describe(&name, "results")))?;
    let (table, lines) = read_table(&text).map_err(|e| Exit::input(format!("{name}: {e}")))?;
    let problems = check_cells(&name, &table, &lines);
    if !problems.is_empty() {
        for p in &problems {
            err_line!("error: {p}");
        }
        return Err(Exit::input(format!(
            "{name}: {} problem{} in the results; nothing summarised",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        )));
    }
    let view = reports::SweepView::new(&table, args.x, args.by)
        .map_err(|e| Exit::input(format!("{name}: {e}")))?;
    let page = args.html.map(|_| reports::sweep_html(&view));
    output::emit(None, &reports::sweep_summary_text(&view))?;
    if let (Some(path), Some(page)) = (args.html, &page) {
        output::emit(Some(path), page)?;
    }
    Ok(())
}

/// What npusim writes in the columns the summary computes with, checked in every row: an
/// `index` a whole number written as npusim writes it (no sign, no leading zero) and given
/// once, `cycles` and `end_to_end_cycles` whole numbers of at least 0 (or empty: the point did
/// not run). A NaN, an infinity, a negative count or a repeated index is a problem at its row
/// and column (a results file edited or produced by something else), not a value to plot.
fn check_cells(name: &str, table: &reports::SweepTable, lines: &[u64]) -> Vec<String> {
    let mut problems = Vec::new();
    let column = |c: &str| table.columns.iter().position(|h| h == c);
    let whole = |cell: &str| cell.parse::<u64>().ok().filter(|v| v.to_string() == cell);
    let mut seen: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for (row, line) in table.rows.iter().zip(lines) {
        if let Some(c) = column("index") {
            let cell = row.get(c).map_or("", String::as_str);
            match whole(cell) {
                None => problems.push(format!(
                    "{name}:{line}: column `index` (field {}) is `{cell}`, not a point index as npusim writes it (a whole number from 0, without sign or leading zero)",
                    c + 1
                )),
                Some(i) => {
                    if let Some(first) = seen.insert(i, *line) {
                        seen.insert(i, first);
                        problems.push(format!(
                            "{name}:{line}: column `index` (field {}): point {i} appears twice (first on line {first}); each point of a sweep has one row",
                            c + 1
                        ));
                    }
                }
            }
        }
        for col in ["cycles", "end_to_end_cycles"] {
            let Some(c) = column(col) else { continue };
            let cell = row.get(c).map_or("", String::as_str);
            if !cell.is_empty() && whole(cell).is_none() {
                problems.push(format!(
                    "{name}:{line}: column `{col}` (field {}) is `{cell}`, not a cycle count: npusim writes a whole number of cycles, 0 or more (empty when the point did not run)",
                    c + 1
                ));
            }
        }
    }
    problems
}

/// The CSV as a table of strings, with the file line each row starts on. A part (the output of
/// one shard) is refused: its rows are a fraction of the sweep.
fn read_table(text: &str) -> Result<(reports::SweepTable, Vec<u64>), String> {
    if text.starts_with(PART_TAG) {
        return Err(
            "this is one shard's part of a sweep; merge the parts first (npusim sweep --merge PART ... -o ALL.csv)"
                .into(),
        );
    }
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let columns: Vec<String> = reader
        .headers()
        .map_err(|e| format!("not a CSV file: {e}"))?
        .iter()
        .map(|c| sim::text::shown(c).into_owned())
        .collect();
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| match e.position() {
            Some(p) => format!("line {}: {e}", p.line()),
            None => e.to_string(),
        })?;
        lines.push(record.position().map_or(0, |p| p.line()));
        // a text cell the sweep neutralised (`'=...`) is read as the text it was (number cells
        // never start with `'`); the cells are only shown, so a hidden character in an edited
        // file is shown escaped
        rows.push(
            record
                .iter()
                .map(|c| sim::text::shown(sim::text::csv_cell_read(c)).into_owned())
                .collect(),
        );
    }
    Ok((reports::SweepTable { columns, rows }, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_cells_and_refuses_parts() {
        let (t, lines) =
            read_table("index,program,message\n0,a,\"x, \"\"y\"\"\nz\"\n1,b,\n").unwrap();
        // the second row starts on line 4: the first's message spans lines 2 and 3
        assert_eq!(lines, [2, 4]);
        assert_eq!(t.columns, ["index", "program", "message"]);
        assert_eq!(t.rows, [["0", "a", "x, \"y\"\nz"], ["1", "b", ""]]);
        assert!(
            read_table("#npusim-sweep-part format=csv shard=0/2\nindex\n")
                .unwrap_err()
                .contains("merge the parts first")
        );
        assert!(read_table("a,b\n1\n").unwrap_err().contains("line 2"));
        // a neutralised cell reads as it was written; a hidden character is shown escaped
        let t = read_table("index,program\n0,\"'=1+1.yaml\"\n1,a\u{1b}[2Jb\n").unwrap();
        assert_eq!(t.0.rows, [["0", "=1+1.yaml"], ["1", "a\\u{1b}[2Jb"]]);
    }

    #[test]
    fn non_finite_negative_cycles_and_repeated_indices_are_located() {
        let text = "index,cycles,end_to_end_cycles\n0,10,12\n1,NaN,\n2,-3,inf\n1,5,5\n03,,\n";
        let (t, lines) = read_table(text).unwrap();
        let p = check_cells("r.csv", &t, &lines);
        let heads: Vec<&str> = p.iter().map(|m| m.split(" is ").next().unwrap()).collect();
        assert_eq!(
            heads,
            [
                "r.csv:3: column `cycles` (field 2)",
                "r.csv:4: column `cycles` (field 2)",
                "r.csv:4: column `end_to_end_cycles` (field 3)",
                "r.csv:5: column `index` (field 1): point 1 appears twice (first on line 3); each point of a sweep has one row",
                "r.csv:6: column `index` (field 1)",
            ],
            "{p:?}"
        );
        assert!(p[0].contains("`NaN`") && p[1].contains("`-3`") && p[2].contains("`inf`"));
        assert!(p[4].contains("`03`"));
    }
}
