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
    let name = args.results.display().to_string();
    let text =
        input::read_text(args.results).map_err(|e| Exit::input(e.describe(&name, "results")))?;
    let table = read_table(&text).map_err(|e| Exit::input(format!("{name}: {e}")))?;
    let view = reports::SweepView::new(&table, args.x, args.by)
        .map_err(|e| Exit::input(format!("{name}: {e}")))?;
    let page = args.html.map(|_| reports::sweep_html(&view));
    output::emit(None, &reports::sweep_summary_text(&view))?;
    if let (Some(path), Some(page)) = (args.html, &page) {
        output::emit(Some(path), page)?;
    }
    Ok(())
}

/// The CSV as a table of strings. A part (the output of one shard) is refused: its rows are a
/// fraction of the sweep.
fn read_table(text: &str) -> Result<reports::SweepTable, String> {
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
    for record in reader.records() {
        let record = record.map_err(|e| match e.position() {
            Some(p) => format!("line {}: {e}", p.line()),
            None => e.to_string(),
        })?;
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
    Ok(reports::SweepTable { columns, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_cells_and_refuses_parts() {
        let t = read_table("index,program,message\n0,a,\"x, \"\"y\"\"\nz\"\n").unwrap();
        assert_eq!(t.columns, ["index", "program", "message"]);
        assert_eq!(t.rows, [["0", "a", "x, \"y\"\nz"]]);
        assert!(
            read_table("#npusim-sweep-part format=csv shard=0/2\nindex\n")
                .unwrap_err()
                .contains("merge the parts first")
        );
        assert!(read_table("a,b\n1\n").unwrap_err().contains("line 2"));
        // a neutralised cell reads as it was written; a hidden character is shown escaped
        let t = read_table("index,program\n0,\"'=1+1.yaml\"\n1,a\u{1b}[2Jb\n").unwrap();
        assert_eq!(t.rows, [["0", "=1+1.yaml"], ["1", "a\\u{1b}[2Jb"]]);
    }
}
