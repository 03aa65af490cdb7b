//! A typed walker over [`Node`] trees. Every accessor reports what it expected at the node's
//! YAML path and returns `None`, so callers keep going and every problem is collected at once.
//! Public so that other YAML inputs (a sweep file) are read, and reported, the same way
//! ([`super::read_document`]).

use crate::diag::{did_you_mean, Diagnostic};
use crate::yaml::{Node, Value};

/// `path.key`, or `key` at the document root.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `path[i]`.
pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// A short rendering of a scalar value for messages (`"xb"`, `3`, `true`, `a list`).
pub fn show(node: &Node) -> String {
    match &node.value {
        Value::Null => "nothing".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::TooLarge(s) => s.clone(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) => format!("\"{s}\""),
        Value::Seq(_) | Value::Map(_) => node.kind().into(),
    }
}

/// A hint for an unknown name: the closest candidate, or the list of choices when short.
pub fn suggest(name: &str, candidates: &[&str]) -> Option<String> {
    let swapped = || candidates.iter().find(|c| one_swap(name, c)).copied();
    if let Some(c) = did_you_mean(name, candidates.iter().copied()).or_else(swapped) {
        return Some(format!("did you mean \"{c}\"?"));
    }
    if candidates.is_empty() {
        None
    } else if candidates.len() <= 16 {
        Some(format!("expected one of: {}", candidates.join(", ")))
    } else {
        None
    }
}

/// `a` and `b` differ by one swap of adjacent characters (`algin`/`align`), the commonest typo,
/// which plain edit distance counts as two.
fn one_swap(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() != b.len() {
        return false;
    }
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    matches!(diff[..], [i, j] if j == i + 1 && a[i] == b[j] && a[j] == b[i])
}

/// The entries of a mapping whose keys were checked against the allowed set.
pub struct Fields<'n> {
    pub entries: &'n [(String, Node)],
    pub path: String,
}

impl<'n> Fields<'n> {
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The YAML path of `key` inside this mapping.
    pub fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

/// Collects diagnostics for one file.
pub struct Reader<'f> {
    pub file: &'f str,
    pub diags: Vec<Diagnostic>,
    /// Plan-only loading (`npusim opt` on a lit test's function): no read-before-first-write check
    /// may read what it never wrote (HIVM's passes do not refuse it; PlanMemory reports it
    /// itself where its tests expect it).
    pub plan_only: bool,
}

impl<'f> Reader<'f> {
    pub fn new(file: &'f str) -> Self {
        Reader {
            file,
            diags: Vec::new(),
            plan_only: false,
        }
    }

    pub fn error(&mut self, path: &str, message: impl Into<String>) {
        self.diags.push(Diagnostic::error(self.file, path, message));
    }

    pub fn error_hint(&mut self, path: &str, message: impl Into<String>, hint: Option<String>) {
        let mut d = Diagnostic::error(self.file, path, message);
        d.hint = hint;
        self.diags.push(d);
    }

    /// Whether `name`, a name the user chose (a kernel, core, config, tensor, buffer, param,
    /// case), is printable text; if not (a control or bidirectional formatting character,
    /// [`crate::text::name_problem`]) the problem is reported at `path`.
    pub fn name_ok(&mut self, name: &str, path: &str) -> bool {
        match crate::text::name_problem(name) {
            Some(problem) => {
                self.error_hint(path, problem, Some(crate::text::NAME_FIX.into()));
                false
            }
            None => true,
        }
    }

    /// An integer literal beyond 64 bits, reported where it is written.
    pub fn too_large(&mut self, node: &Node, path: &str) {
        let mut d = Diagnostic::error(
            self.file,
            path,
            format!("integer {} is too large (at most {})", show(node), i64::MAX),
        );
        d.line = Some(node.line);
        d.column = Some(node.column);
        self.diags.push(d);
    }

    /// Number of problems so far; compare before and after a step to see if it failed.
    pub fn count(&self) -> usize {
        self.diags.len()
    }

    /// Checks that `node` is a mapping with only `required` and `optional` keys and every
    /// required key present. Returns the fields even when keys were wrong, so the known ones
    /// are still checked.
    pub fn map<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        what: &str,
        required: &[&str],
        optional: &[&str],
    ) -> Option<Fields<'n>> {
        let Value::Map(entries) = &node.value else {
            self.error(
                path,
                format!("expected {what} (a mapping), found {}", show(node)),
            );
            return None;
        };
        let allowed: Vec<&str> = required.iter().chain(optional).copied().collect();
        let mut suggested = Vec::new();
        for (k, _) in entries {
            if !allowed.contains(&k.as_str()) {
                let hint = suggest(k, &allowed);
                if let Some(h) = &hint {
                    suggested.push(h.clone());
                }
                self.error_hint(
                    &join(path, k),
                    format!("unknown key \"{k}\" in {what}"),
                    hint,
                );
            }
        }
        for r in required {
            // a misspelt required key is one problem, not two
            let typo = suggested.contains(&format!("did you mean \"{r}\"?"));
            if !typo && !entries.iter().any(|(k, _)| k == r) {
                self.error_hint(
                    path,
                    format!("missing required key \"{r}\" in {what}"),
                    Some(format!("{what} needs: {}", required.join(", "))),
                );
            }
        }
        Some(Fields {
            entries,
            path: path.to_string(),
        })
    }

    /// A mapping of user-chosen names (cores, params, tensors, buffers).
    pub fn entries<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        what: &str,
    ) -> Option<&'n [(String, Node)]> {
        match &node.value {
            Value::Map(m) => Some(m),
            Value::Null => Some(&[]),
            _ => {
                self.error(
                    path,
                    format!("expected {what} (a mapping), found {}", show(node)),
                );
                None
            }
        }
    }

    pub fn seq<'n>(&mut self, node: &'n Node, path: &str, what: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(s) => Some(s),
            _ => {
                self.error(
                    path,
                    format!("expected {what} (a list), found {}", show(node)),
                );
                None
            }
        }
    }

    pub fn string<'n>(&mut self, node: &'n Node, path: &str, what: &str) -> Option<&'n str> {
        match &node.value {
            Value::Str(s) => Some(s),
            _ => {
                self.error(path, format!("expected {what}, found {}", show(node)));
                None
            }
        }
    }

    pub fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        match &node.value {
            Value::Bool(b) => Some(*b),
            _ => {
                self.error_hint(
                    path,
                    format!("expected true or false, found {}", show(node)),
                    Some("write true or false".into()),
                );
                None
            }
        }
    }

    pub fn int(&mut self, node: &Node, path: &str) -> Option<i64> {
        match &node.value {
            Value::Int(i) => Some(*i),
            Value::TooLarge(_) => {
                self.too_large(node, path);
                None
            }
            _ => {
                self.error(path, format!("expected an integer, found {}", show(node)));
                None
            }
        }
    }

    /// An integer in `min..=max`.
    pub fn int_in(&mut self, node: &Node, path: &str, min: i64, max: i64) -> Option<i64> {
        let v = self.int(node, path)?;
        if v < min {
            let what = match min {
                0 => "not be negative".to_string(),
                1 => "be positive".to_string(),
                m => format!("be at least {m}"),
            };
            self.error(path, format!("{v} is out of range: this value must {what}"));
            return None;
        }
        if v > max {
            self.error(path, format!("{v} is too large (at most {max})"));
            return None;
        }
        Some(v)
    }

    /// A `u32`, positive when a zero would divide or make no sense.
    pub fn u32(&mut self, node: &Node, path: &str, positive: bool) -> Option<u32> {
        self.int_in(node, path, positive as i64, u32::MAX as i64)
            .map(|v| v as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(value: Value) -> Node {
        Node {
            line: 1,
            column: 1,
            value,
        }
    }
    use crate::yaml;

    #[test]
    fn map_reports_unknown_and_missing_keys_together() {
        let node = yaml::parse("bytes: 4\nalgin: 32\ncolor: red\n").unwrap();
        let mut r = Reader::new("c.yaml");
        let f = r
            .map(
                &node,
                "cores.aiv.scopes.ub",
                "scope",
                &["bytes", "align", "kind"],
                &[],
            )
            .unwrap();
        assert_eq!(f.get("bytes").map(|n| &n.value), Some(&Value::Int(4)));
        let got: Vec<(&str, &str, Option<&str>)> = r
            .diags
            .iter()
            .map(|d| (d.path.as_str(), d.message.as_str(), d.hint.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "cores.aiv.scopes.ub.algin",
                    "unknown key \"algin\" in scope",
                    Some("did you mean \"align\"?")
                ),
                (
                    "cores.aiv.scopes.ub.color",
                    "unknown key \"color\" in scope",
                    Some("expected one of: bytes, align, kind")
                ),
                // "align" is not reported missing: the typo already names it
                (
                    "cores.aiv.scopes.ub",
                    "missing required key \"kind\" in scope",
                    Some("scope needs: bytes, align, kind")
                ),
            ]
        );
    }

    #[test]
    fn typed_accessors_name_what_they_found() {
        let mut r = Reader::new("f");
        assert_eq!(r.u32(&node(Value::Int(-1)), "a", false), None);
        assert_eq!(r.u32(&node(Value::Int(0)), "b", true), None);
        assert_eq!(r.u32(&node(Value::Str("x".into())), "c", false), None);
        assert_eq!(r.u32(&node(Value::Int(7)), "d", true), Some(7));
        assert_eq!(r.boolean(&node(Value::Int(1)), "e"), None);
        let msgs: Vec<_> = r
            .diags
            .iter()
            .map(|d| (d.path.as_str(), d.message.as_str()))
            .collect();
        assert_eq!(
            msgs[0],
            ("a", "-1 is out of range: this value must not be negative")
        );
        assert_eq!(
            msgs[1],
            ("b", "0 is out of range: this value must be positive")
        );
        assert_eq!(msgs[2], ("c", "expected an integer, found \"x\""));
        assert_eq!(msgs[3], ("e", "expected true or false, found 1"));
    }

    #[test]
    fn paths_join() {
        assert_eq!(join("", "gm"), "gm");
        assert_eq!(join("gm", "x"), "gm.x");
        assert_eq!(index("body", 2), "body[2]");
    }
}
