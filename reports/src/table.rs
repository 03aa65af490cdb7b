//! A plain text table: a header row, left-aligned label columns, right-aligned numbers, two
//! spaces between columns, no trailing spaces.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Align {
    Left,
    Right,
}

pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: Vec<(String, Align)>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(cells);
    }

    /// The table as lines, each prefixed with `indent`.
    pub fn render(&self, indent: &str) -> String {
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .map(|(h, _)| h.chars().count())
            .collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        for cells in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::from(indent);
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                match self.columns[i].1 {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A `legend:` block: one `key  text` line per entry, keys padded to the widest.
pub fn legend<K: AsRef<str>, T: AsRef<str>>(lines: &[(K, T)]) -> String {
    let width = lines
        .iter()
        .map(|(k, _)| k.as_ref().len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("legend:\n");
    for (k, t) in lines {
        out.push_str(&format!("  {:<width$}  {}\n", k.as_ref(), t.as_ref()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(vec![
            ("pipe".into(), Align::Left),
            ("busy".into(), Align::Right),
            ("note".into(), Align::Left),
        ]);
        t.row(vec!["MTE2".into(), "7".into(), "".into()]);
        t.row(vec!["V".into(), "12345".into(), "x".into()]);
        assert_eq!(
            t.render("  "),
            "  pipe   busy  note\n  MTE2      7\n  V     12345  x\n"
        );
    }
}
