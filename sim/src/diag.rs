//! Problems found in input files. Loading collects every problem before it stops; each one names
//! the file, the YAML path, the line and column where known, and a hint where one exists.

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem in one input file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file as the user named it (or `<built-in NAME>` for a compiled-in config).
    pub file: String,
    /// The YAML path of the offending node (`body[0].for.body[2].vadd.out`); empty for the
    /// document itself.
    pub path: String,
    /// 1-based line and column of the node, where known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(file: &str, path: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            file: file.to_string(),
            path: path.to_string(),
            line: None,
            column: None,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// `file:line:column` or as much of it as is known.
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            (Some(l), None) => format!("{}:{l}", self.file),
            _ => self.file.clone(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{}: {kind}: ", self.location())?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// Every problem found while loading; the input was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub struct LoadError {
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.diagnostics.len();
        write!(f, "{n} problem{}", if n == 1 { "" } else { "s" })?;
        for d in &self.diagnostics {
            write!(f, "\n{d}")?;
        }
        Ok(())
    }
}

/// The closest candidate to `name` by edit distance, if it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(name, c);
        if best.is_none_or(|(bd, bc)| d < bd || (d == bd && c < bc)) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    let limit = (name.chars().count().max(c.chars().count()) / 3).max(1);
    (d <= limit && d > 0).then_some(c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + (ca != *cb) as usize)
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(did_you_mean("zbb", ["xb", "yb", "zb"]), Some("zb"));
        assert_eq!(did_you_mean("mte4", ["mte1", "mte2", "v"]), Some("mte1"));
        assert_eq!(did_you_mean("banana", ["xb", "yb"]), None);
        assert_eq!(did_you_mean("zb", ["zb"]), None);
    }

    #[test]
    fn display_names_file_path_and_hint() {
        let mut d = Diagnostic::error("p.yaml", "body[0].vadd.out", "unknown buffer \"zbb\"")
            .with_hint("did you mean \"zb\"?");
        d.line = Some(3);
        d.column = Some(7);
        assert_eq!(
            d.to_string(),
            "p.yaml:3:7: error: body[0].vadd.out: unknown buffer \"zbb\" (hint: did you mean \"zb\"?)"
        );
    }
}
