//! A sweep's results (`npusim sweep --summary`, docs/cli.md): the best point per program and a
//! pivot of cycles over two inputs, as text ([`sweep_summary_text`]) and as a plot in an HTML
//! page ([`crate::sweep_html`]). The input is the results CSV as a table of strings; every
//! figure is computed here from its `index`, `program`, input, `status` and `cycles` columns.

use crate::table::{Align, Table};

/// A sweep's results: its CSV header and rows, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepTable {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Where the columns a summary reads are, and the inputs it groups by.
#[derive(Clone, Debug)]
pub struct SweepView<'t> {
    pub table: &'t SweepTable,
    index: usize,
    status: usize,
    cycles: usize,
    /// The input columns (between `program` and `status`).
    inputs: Vec<usize>,
    /// `--x`: the pivots' rows (the plots' x axis); `None`: per program, the first input that
    /// varies among its points (params first, the config last).
    x: Option<usize>,
    /// `--by`: the pivots' columns (the plots' lines); `None`: per program, `level` if it
    /// varies, else the next input that does.
    by: Option<usize>,
    /// Per program, in order of first appearance: its name and its rows.
    pub programs: Vec<(String, Vec<usize>)>,
    /// The `program` and `message` columns (`message` may be absent from an older CSV).
    program: usize,
    message: Option<usize>,
    /// Per pipe, in column order: its name as the CSV writes it (`mte2`) and its `_busy`,
    /// `_top_stall` and `_top_stall_cycles` columns (the last two may be absent).
    pipes: Vec<(String, usize, Option<usize>, Option<usize>)>,
}

/// One pipe's part of a point's cycles, as its CSV row has them: busy cycles and its costliest
/// stall (`None`: the row has no number there, a pipe the point's core lacks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipeCycles {
    /// `MTE2`.
    pub pipe: String,
    pub busy: u64,
    /// The costliest stall's reason (`wait_flag V#0`) and cycles; `None` when it had none.
    pub top_stall: Option<(String, u64)>,
}

/// One cell of a pivot: the fewest cycles of the ok points with those inputs, and the row
/// (index in the table) that has them (the first among equals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Best {
    pub cycles: u64,
    pub row: usize,
}

/// A program's pivot: its two inputs (`None` where none is left that varies), their values,
/// and per x and by value the best point, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pivot {
    pub x: Option<usize>,
    pub by: Option<usize>,
    pub xs: Vec<String>,
    pub bys: Vec<String>,
    /// `cells[x][by]`.
    pub cells: Vec<Vec<Option<Best>>>,
}

/// A column's short name: `tiles` for `param_tiles`, `ub` for `capacity_ub`.
pub fn short_name(column: &str) -> &str {
    column
        .strip_prefix("param_")
        .or_else(|| column.strip_prefix("capacity_"))
        .unwrap_or(column)
}

impl<'t> SweepView<'t> {
    /// Reads the layout of `table`; `x` and `by` name input columns (a param or scope by its
    /// short name, or any input column's full name). An unknown column, or a table that is not
    /// a sweep's results, is an error saying what is there.
    pub fn new(
        table: &'t SweepTable,
        x: Option<&str>,
        by: Option<&str>,
    ) -> Result<SweepView<'t>, String> {
        let find = |name: &str| table.columns.iter().position(|c| c == name);
        let need = |name: &str| {
            find(name).ok_or_else(|| {
                format!("not a sweep's results: it has no `{name}` column (the CSV `npusim sweep` writes has index, program, the inputs, status, cycles, ...)")
            })
        };
        let (index, program, status, cycles) = (
            need("index")?,
            need("program")?,
            need("status")?,
            need("cycles")?,
        );
        if !(index < program && program < status && status < cycles) {
            return Err("not a sweep's results: its columns are not in a sweep's order (index, program, the inputs, status, cycles, ...)".into());
        }
        let inputs: Vec<usize> = (program + 1..status).collect();
        for (i, row) in table.rows.iter().enumerate() {
            if row.len() != table.columns.len() {
                return Err(format!(
                    "row {} has {} cells for {} columns",
                    i + 1,
                    row.len(),
                    table.columns.len()
                ));
            }
        }
        let resolve = |name: &str| -> Result<usize, String> {
            let candidates = [
                name.to_string(),
                format!("param_{name}"),
                format!("capacity_{name}"),
            ];
            candidates
                .iter()
                .find_map(|c| inputs.iter().copied().find(|&i| table.columns[i] == *c))
                .ok_or_else(|| {
                    let names: Vec<&str> = inputs
                        .iter()
                        .map(|&i| short_name(&table.columns[i]))
                        .collect();
                    format!(
                        "no input column `{name}`; the inputs of this sweep are {}",
                        names.join(", ")
                    )
                })
        };
        let x = x.map(resolve).transpose()?;
        let by = by.map(resolve).transpose()?;
        if let (Some(x), Some(b)) = (x, by) {
            if x == b {
                return Err(format!(
                    "--x and --by both name `{}`: give two different inputs",
                    short_name(&table.columns[x])
                ));
            }
        }
        let mut programs: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, row) in table.rows.iter().enumerate() {
            match programs.iter_mut().find(|(p, _)| *p == row[program]) {
                Some((_, rows)) => rows.push(i),
                None => programs.push((row[program].clone(), vec![i])),
            }
        }
        // the pipes' columns follow the cycles: `PIPE_busy`, `PIPE_top_stall`, ..._cycles
        let pipes = table
            .columns
            .iter()
            .enumerate()
            .skip(cycles + 1)
            .filter_map(|(i, c)| {
                let pipe = c.strip_suffix("_busy")?;
                Some((
                    pipe.to_string(),
                    i,
                    find(&format!("{pipe}_top_stall")),
                    find(&format!("{pipe}_top_stall_cycles")),
                ))
            })
            .collect();
        Ok(SweepView {
            table,
            index,
            status,
            cycles,
            inputs,
            x,
            by,
            programs,
            program,
            message: find("message"),
            pipes,
        })
    }

    fn cell(&self, row: usize, col: usize) -> &str {
        &self.table.rows[row][col]
    }

    /// The cycles of an ok row.
    fn ok_cycles(&self, row: usize) -> Option<u64> {
        (self.cell(row, self.status) == "ok")
            .then(|| self.cell(row, self.cycles).parse().ok())
            .flatten()
    }

    /// The name of a column as the summary shows it.
    pub fn name(&self, col: usize) -> &str {
        short_name(&self.table.columns[col])
    }

    /// The point's index (as written) of a row.
    pub fn index_of(&self, row: usize) -> &str {
        self.cell(row, self.index)
    }

    /// The inputs of a row that vary in the sweep, as `name=value` (empty ones left out).
    pub fn inputs_of(&self, row: usize) -> String {
        let t = self.table;
        self.inputs
            .iter()
            .filter(|&&c| {
                !t.rows[row][c].is_empty() && t.rows.iter().any(|r| r[c] != t.rows[row][c])
            })
            .map(|&c| format!("{}={}", self.name(c), t.rows[row][c]))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The program of a row, as the sweep file names it.
    pub fn program_of(&self, row: usize) -> &str {
        self.cell(row, self.program)
    }

    /// The status of a row (`ok`, `finding`, `error`).
    pub fn status_of(&self, row: usize) -> &str {
        self.cell(row, self.status)
    }

    /// The message of a row (why it failed); empty when it has none.
    pub fn message_of(&self, row: usize) -> &str {
        self.message.map_or("", |m| self.cell(row, m))
    }

    /// The rows of the points that did not run ok (a finding, an error), in the table's order.
    pub fn failed(&self) -> Vec<usize> {
        (0..self.table.rows.len())
            .filter(|&r| self.status_of(r) != "ok")
            .collect()
    }

    /// Where a row's cycles went, per pipe with a busy figure (the first core's, as the CSV
    /// has them), in the CSV's pipe order.
    pub fn breakdown(&self, row: usize) -> Vec<PipeCycles> {
        self.pipes
            .iter()
            .filter_map(|(pipe, busy, stall, stall_cycles)| {
                let busy = self.cell(row, *busy).parse().ok()?;
                let reason = stall.map_or("", |c| self.cell(row, c));
                let cycles = stall_cycles.and_then(|c| self.cell(row, c).parse().ok());
                let top_stall = match (reason, cycles) {
                    ("", _) | (_, None) => None,
                    (r, Some(c)) => Some((r.to_string(), c)),
                };
                Some(PipeCycles {
                    pipe: pipe.to_uppercase(),
                    busy,
                    top_stall,
                })
            })
            .collect()
    }

    /// How many points have each status: (ok, finding, error, other).
    pub fn statuses(&self) -> [usize; 4] {
        let mut n = [0; 4];
        for r in &self.table.rows {
            let i = match r[self.status].as_str() {
                "ok" => 0,
                "finding" => 1,
                "error" => 2,
                _ => 3,
            };
            n[i] += 1;
        }
        n
    }

    /// The ok point with the fewest cycles among `rows` (the first among equals).
    pub fn best(&self, rows: &[usize]) -> Option<Best> {
        let mut best: Option<Best> = None;
        for &r in rows {
            if let Some(c) = self.ok_cycles(r) {
                if best.is_none_or(|b| c < b.cycles) {
                    best = Some(Best { cycles: c, row: r });
                }
            }
        }
        best
    }

    /// Whether column `col` has more than one value among `rows`.
    fn varies(&self, rows: &[usize], col: usize) -> bool {
        rows.iter()
            .any(|&r| self.cell(r, col) != self.cell(rows[0], col))
    }

    /// The pivot's inputs for `rows` (one program's): `--x` and `--by` where given, else the
    /// inputs that vary among them.
    fn axes(&self, rows: &[usize]) -> (Option<usize>, Option<usize>) {
        // params first, the config last: what a sweep usually varies on purpose
        let mut order: Vec<usize> = self.inputs.clone();
        order.rotate_left(1);
        let varying = |c: &usize, not: Option<usize>| Some(*c) != not && self.varies(rows, *c);
        let x = self
            .x
            .or_else(|| order.iter().find(|c| varying(c, self.by)).copied());
        let level = self.table.columns.iter().position(|c| c == "level");
        let by = self.by.or_else(|| {
            level
                .filter(|l| varying(l, x))
                .or_else(|| order.iter().find(|c| varying(c, x)).copied())
        });
        (x, by)
    }

    /// The pivot of `rows` (one program's).
    pub fn pivot(&self, rows: &[usize]) -> Pivot {
        let (x, by) = self.axes(rows);
        let values = |col: Option<usize>| -> Vec<String> {
            let mut v: Vec<String> = Vec::new();
            for &r in rows {
                let s = col.map_or("", |c| self.cell(r, c));
                if !v.iter().any(|x| x == s) {
                    v.push(s.to_string());
                }
            }
            // numbers in numeric order; anything else in the grid's order
            if v.iter().all(|s| s.parse::<i64>().is_ok()) {
                v.sort_by_key(|s| s.parse::<i64>().expect("checked"));
            }
            v
        };
        let (xs, bys) = (values(x), values(by));
        let mut cells = vec![vec![None; bys.len()]; xs.len()];
        for &r in rows {
            let Some(c) = self.ok_cycles(r) else { continue };
            let at = |col: Option<usize>, vals: &[String]| {
                let s = col.map_or("", |c| self.cell(r, c));
                vals.iter().position(|v| v == s).expect("listed")
            };
            let cell: &mut Option<Best> = &mut cells[at(x, &xs)][at(by, &bys)];
            if cell.is_none_or(|b| c < b.cycles) {
                *cell = Some(Best { cycles: c, row: r });
            }
        }
        Pivot {
            x,
            by,
            xs,
            bys,
            cells,
        }
    }
}

/// `-` for an empty value (an input that does not apply).
fn shown(v: &str) -> &str {
    if v.is_empty() {
        "-"
    } else {
        v
    }
}

/// The summary: the statuses, the best point per program, then per program the pivot of
/// cycles over its two inputs (each cell the fewest cycles of the ok points with those
/// inputs).
pub fn sweep_summary_text(view: &SweepView) -> String {
    let [ok, finding, error, other] = view.statuses();
    let mut out = format!(
        "sweep: {} points: {ok} ok, {finding} finding, {error} error{}\n\n",
        view.table.rows.len(),
        if other > 0 {
            format!(", {other} other")
        } else {
            String::new()
        }
    );
    out.push_str("best point per program (fewest cycles of the ok points):\n");
    let mut t = Table::new(vec![
        ("program".into(), Align::Left),
        ("index".into(), Align::Right),
        ("cycles".into(), Align::Right),
        ("inputs".into(), Align::Left),
    ]);
    for (program, rows) in &view.programs {
        match view.best(rows) {
            Some(b) => t.row(vec![
                program.clone(),
                view.index_of(b.row).to_string(),
                b.cycles.to_string(),
                view.inputs_of(b.row),
            ]),
            None => t.row(vec![
                program.clone(),
                "-".into(),
                "-".into(),
                "no point ran without findings".into(),
            ]),
        }
    }
    out.push_str(&t.render("  "));
    out.push_str("\ncycles (the fewest of the ok points with those inputs; - none):\n");
    for (program, rows) in &view.programs {
        let p = view.pivot(rows);
        out.push_str(&format!("  {program}"));
        let Some(x) = p.x else {
            out.push_str(": no input varies\n");
            continue;
        };
        out.push('\n');
        let corner = match p.by {
            Some(b) => format!("{} \\ {}", view.name(x), view.name(b)),
            None => view.name(x).to_string(),
        };
        let mut columns = vec![(corner, Align::Left)];
        for b in &p.bys {
            columns.push((
                if p.by.is_some() {
                    shown(b).to_string()
                } else {
                    "cycles".into()
                },
                Align::Right,
            ));
        }
        let mut t = Table::new(columns);
        for (xv, cells) in p.xs.iter().zip(&p.cells) {
            let mut row = vec![shown(xv).to_string()];
            row.extend(
                cells
                    .iter()
                    .map(|c| c.map_or("-".to_string(), |b| b.cycles.to_string())),
            );
            t.row(row);
        }
        out.push_str(&t.render("    "));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two programs: `a` varies tiles × level, `b` only level (tiles does not apply). V's
    /// figures of each ok point; point 3 found an overflow.
    pub(crate) fn table() -> SweepTable {
        let row = |cells: &[&str]| cells.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        SweepTable {
            columns: row(&[
                "index",
                "program",
                "config",
                "param_tiles",
                "level",
                "blocks",
                "l2",
                "status",
                "cycles",
                "v_busy",
                "v_top_stall",
                "v_top_stall_cycles",
                "message",
            ]),
            rows: vec![
                row(&[
                    "0",
                    "a",
                    "c",
                    "64",
                    "2",
                    "",
                    "cold",
                    "ok",
                    "500",
                    "300",
                    "wait_flag MTE2#0",
                    "150",
                    "",
                ]),
                row(&[
                    "1", "a", "c", "64", "0", "", "cold", "ok", "400", "300", "", "", "",
                ]),
                row(&[
                    "2", "a", "c", "128", "2", "", "cold", "ok", "900", "600", "drain", "10", "",
                ]),
                row(&[
                    "3",
                    "a",
                    "c",
                    "128",
                    "0",
                    "",
                    "cold",
                    "finding",
                    "",
                    "",
                    "",
                    "",
                    "a.yaml:3:5: ub overflow <needs 2 KiB>",
                ]),
                row(&[
                    "4", "b", "c", "", "2", "", "cold", "ok", "70", "", "", "", "",
                ]),
                row(&[
                    "5", "b", "c", "", "0", "", "cold", "ok", "70", "", "", "", "",
                ]),
            ],
        }
    }

    #[test]
    fn defaults_pick_the_param_then_the_level_per_program() {
        let t = table();
        let v = SweepView::new(&t, None, None).unwrap();
        let name = |c: Option<usize>| c.map(|c| v.name(c));
        let a = v.pivot(&v.programs[0].1);
        assert_eq!((name(a.x), name(a.by)), (Some("tiles"), Some("level")));
        // b has no tiles: its level is the x axis, and nothing else varies
        let b = v.pivot(&v.programs[1].1);
        assert_eq!((name(b.x), name(b.by)), (Some("level"), None));
        let v = SweepView::new(&t, Some("level"), None).unwrap();
        let a = v.pivot(&v.programs[0].1);
        assert_eq!(name(a.by), Some("tiles"));
        assert!(SweepView::new(&t, Some("ub"), None)
            .unwrap_err()
            .contains("the inputs of this sweep are config, tiles, level, blocks, l2"));
        assert!(SweepView::new(&t, Some("tiles"), Some("param_tiles")).is_err());
    }

    #[test]
    fn best_and_pivot_take_the_fewest_cycles_of_ok_points() {
        let t = table();
        let v = SweepView::new(&t, None, None).unwrap();
        let a = &v.programs[0].1;
        assert_eq!(
            v.best(a),
            Some(Best {
                cycles: 400,
                row: 1
            })
        );
        // equal cycles: the first point
        assert_eq!(v.best(&v.programs[1].1), Some(Best { cycles: 70, row: 4 }));
        let p = v.pivot(a);
        assert_eq!(p.xs, ["64", "128"]);
        assert_eq!(p.bys, ["0", "2"]);
        let cycles: Vec<Vec<Option<u64>>> = p
            .cells
            .iter()
            .map(|r| r.iter().map(|c| c.map(|b| b.cycles)).collect())
            .collect();
        assert_eq!(cycles, [[Some(400), Some(500)], [None, Some(900)]]);
        assert_eq!(v.inputs_of(1), "tiles=64 level=0");
        assert_eq!(v.inputs_of(4), "level=2");
    }

    #[test]
    fn failed_points_and_breakdowns_come_from_their_rows() {
        let t = table();
        let v = SweepView::new(&t, None, None).unwrap();
        assert_eq!(v.failed(), [3]);
        assert_eq!(v.status_of(3), "finding");
        assert_eq!(v.message_of(3), "a.yaml:3:5: ub overflow <needs 2 KiB>");
        assert_eq!(v.message_of(0), "");
        assert_eq!(v.program_of(4), "b");
        let v_pipe = |busy, top_stall: Option<(&str, u64)>| PipeCycles {
            pipe: "V".into(),
            busy,
            top_stall: top_stall.map(|(r, c)| (r.to_string(), c)),
        };
        assert_eq!(
            v.breakdown(0),
            [v_pipe(300, Some(("wait_flag MTE2#0", 150)))]
        );
        // no stall named: busy only
        assert_eq!(v.breakdown(1), [v_pipe(300, None)]);
        // a failed point, and a core without the pipe: nothing
        assert_eq!(v.breakdown(3), []);
        assert_eq!(v.breakdown(4), []);
        // a CSV without a message column (older): no message, still failed
        let mut old = table();
        old.columns.pop();
        for r in &mut old.rows {
            r.pop();
        }
        let v = SweepView::new(&old, None, None).unwrap();
        assert_eq!((v.failed(), v.message_of(3)), (vec![3], ""));
    }

    #[test]
    fn not_a_sweep_is_refused() {
        let t = SweepTable {
            columns: vec!["id".into(), "size".into()],
            rows: vec![],
        };
        assert!(SweepView::new(&t, None, None)
            .unwrap_err()
            .contains("no `index` column"));
    }

    #[test]
    fn the_text_has_the_best_points_and_the_pivots() {
        let t = table();
        let v = SweepView::new(&t, None, None).unwrap();
        insta::assert_snapshot!(sweep_summary_text(&v));
    }
}
