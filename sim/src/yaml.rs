//! The one place that knows the YAML library. Everything else sees [`Node`] trees, YAML paths
//! (`body[0].for.body[2].vadd.out`) and locations, so the library can be swapped here alone.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A parsed YAML value. Mappings keep their key order.
#[derive(Clone, PartialEq, Debug)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// A short description of the value's kind, for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "nothing",
            Node::Bool(_) => "a boolean",
            Node::Int(_) => "an integer",
            Node::Float(_) => "a number",
            Node::Str(_) => "a string",
            Node::Seq(_) => "a list",
            Node::Map(_) => "a mapping",
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A YAML syntax error.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SyntaxError {
    pub message: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

/// Parses one YAML document.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| {
        let loc = e.location();
        // the library appends " at line L column C"; we report the location separately
        let msg = e.to_string();
        let message = match msg.find(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        SyntaxError {
            message,
            line: loc.as_ref().map(|l| l.line() as u32),
            column: loc.as_ref().map(|l| l.column() as u32),
        }
    })?;
    convert(value, &mut String::new())
}

fn convert(v: serde_yaml::Value, path: &mut String) -> Result<Node, SyntaxError> {
    use serde_yaml::Value;
    let err = |message: String| SyntaxError {
        message,
        line: None,
        column: None,
    };
    Ok(match v {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Node::Int(i),
            None => match n.as_u64() {
                Some(u) => return Err(err(format!("{path}: integer {u} is too large"))),
                None => Node::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        Value::String(s) => Node::Str(s),
        Value::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                out.push(convert(item, path)?);
                path.truncate(len);
            }
            Node::Seq(out)
        }
        Value::Mapping(m) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, item) in m {
                let key = match k {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    other => {
                        return Err(err(format!(
                            "{path}: mapping keys must be names, found {other:?}"
                        )))
                    }
                };
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
                let node = convert(item, path)?;
                path.truncate(len);
                out.push((key, node));
            }
            Node::Map(out)
        }
        Value::Tagged(t) => {
            return Err(err(format!(
                "{path}: YAML tags ({}) are not supported",
                t.tag
            )))
        }
    })
}

/// One step of a YAML path.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Splits `body[0].for.body[2].vadd.out` into its steps.
pub fn split_path(path: &str) -> Vec<Seg> {
    let mut segs = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            segs.push(Seg::Key(key.to_string()));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped.find(']').unwrap_or(stripped.len());
            match stripped[..end].parse() {
                Ok(i) => segs.push(Seg::Index(i)),
                Err(_) => segs.push(Seg::Key(stripped[..end].to_string())),
            }
            rest = stripped.get(end + 1..).unwrap_or("");
        }
    }
    segs
}

/// The 1-based line and column of the node at `path` in `text`, if it exists. For a mapping
/// entry this is where its value starts.
pub fn locate(text: &str, path: &str) -> Option<(u32, u32)> {
    let segs = split_path(path);
    let d = serde_yaml::Deserializer::from_str(text);
    match Walk(&segs).deserialize(d) {
        Err(e) if e.to_string().contains(FOUND) => {
            e.location().map(|l| (l.line() as u32, l.column() as u32))
        }
        _ => None,
    }
}

/// Fills in the line and column of every diagnostic that has a path and no location.
pub fn locate_all(text: &str, diags: &mut [crate::diag::Diagnostic]) {
    for d in diags.iter_mut().filter(|d| d.line.is_none()) {
        let mut path = d.path.as_str();
        // a path that names a missing key is located at its parent
        loop {
            if let Some((l, c)) = locate(text, path) {
                d.line = Some(l);
                d.column = Some(c);
                break;
            }
            match path.rfind(['.', '[']) {
                Some(i) => path = &path[..i],
                None => break,
            }
        }
    }
}

/// Serialises a value as a YAML document.
pub fn to_string<T: serde::Serialize>(value: &T) -> String {
    serde_yaml::to_string(value).expect("plain data always serialises")
}

// Locating works by walking the document with a deserializer and failing on purpose at the
// target node: the library attaches the node's position to the error.
const FOUND: &str = "__npusim_node_found__";

struct Walk<'a>(&'a [Seg]);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        while let Some(k) = m.next_key::<serde_yaml::Value>()? {
            let key = match &k {
                serde_yaml::Value::String(s) => s.clone(),
                serde_yaml::Value::Number(n) => n.to_string(),
                serde_yaml::Value::Bool(b) => b.to_string(),
                _ => String::new(),
            };
            if matches!(first, Seg::Key(s) if *s == key) {
                return m.next_value_seed(Walk(rest));
            }
            m.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        let mut i = 0;
        loop {
            if matches!(first, Seg::Index(n) if *n == i) {
                return s.next_element_seed(Walk(rest)).map(|_| ());
            }
            if s.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
}

impl Walk<'_> {
    fn scalar<E: de::Error>(self) -> Result<(), E> {
        if self.0.is_empty() {
            Err(E::custom(FOUND))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "kernel: x\nbody:\n  - for: { var: t, to: tiles }\n    body:\n      - load:  { src: \"x[t]\", dst: xb }\n      - vadd: {ins: [a, b], out: zb}\n";

    #[test]
    fn parses_in_key_order() {
        let n = parse("b: 1\na: [x, 2]\n").unwrap();
        assert_eq!(
            n,
            Node::Map(vec![
                ("b".into(), Node::Int(1)),
                (
                    "a".into(),
                    Node::Seq(vec![Node::Str("x".into()), Node::Int(2)])
                )
            ])
        );
    }

    #[test]
    fn locates_nodes_by_path() {
        assert_eq!(locate(DOC, "kernel"), Some((1, 9)));
        assert_eq!(locate(DOC, "body[0].for.to"), Some((3, 24)));
        assert_eq!(locate(DOC, "body[0].body[1].vadd.ins[1]"), Some((6, 25)));
        assert_eq!(locate(DOC, "body[0].body[0]"), Some((5, 9)));
        assert_eq!(locate(DOC, "body[3]"), None);
        assert_eq!(locate(DOC, "nope"), None);
    }

    #[test]
    fn syntax_errors_have_locations() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.line.is_some(), "{e:?}");
        let dup = parse("a: 1\na: 2\n").unwrap_err();
        assert!(dup.message.contains("duplicate"), "{dup:?}");
    }

    #[test]
    fn split_path_round_trips() {
        assert_eq!(
            split_path("body[0].for.body[12].vadd.ins[1]"),
            vec![
                Seg::Key("body".into()),
                Seg::Index(0),
                Seg::Key("for".into()),
                Seg::Key("body".into()),
                Seg::Index(12),
                Seg::Key("vadd".into()),
                Seg::Key("ins".into()),
                Seg::Index(1)
            ]
        );
    }
}
