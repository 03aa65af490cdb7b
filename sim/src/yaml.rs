//! The one place that knows the YAML library. Everything else sees [`Node`] trees, YAML paths
//! (`body[0].for.body[2].vadd.out`) and locations, so the library can be swapped here alone.

use std::collections::HashSet;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// How deep mappings and lists may nest. Real configs and programs nest a few dozen levels;
/// the bound keeps every recursive walk of the tree (and its drop) far from the stack's end.
pub const MAX_DEPTH: usize = 128;

/// A parsed YAML value and where it starts in the text (1-based line and column, in
/// characters). Mappings keep their key order.
#[derive(Clone, PartialEq, Debug)]
pub struct Node {
    pub line: u32,
    pub column: u32,
    pub value: Value,
}

#[derive(Clone, PartialEq, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer outside the 64-bit signed range, as written.
    TooLarge(String),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// A short description of the value's kind, for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::TooLarge(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The node at `path` (steps of [`split_path`]) under this one.
    pub fn find(&self, path: &[Seg]) -> Option<&Node> {
        let mut at = self;
        for seg in path {
            at = match (seg, &at.value) {
                (Seg::Key(k), Value::Map(m)) => &m.iter().find(|(key, _)| key == k)?.1,
                (Seg::Index(i), Value::Seq(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(at)
    }
}

/// A YAML syntax error.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SyntaxError {
    pub message: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

fn error_at(message: impl Into<String>, m: Marker) -> SyntaxError {
    SyntaxError {
        message: message.into(),
        line: Some(m.line() as u32),
        column: Some(m.col() as u32 + 1),
    }
}

/// A 1-based (line, column).
type Pos = (u32, u32);

fn pos(m: Marker) -> Pos {
    (m.line() as u32, m.col() as u32 + 1)
}

/// A mapping or list being built, with where it started. Its items so far are the tail of
/// the parser's pending stack from `start` on: one shared, growing vector, so that each
/// finished mapping or list is allocated once at its exact size.
enum Frame {
    Seq(Pos, usize),
    Map {
        /// A block mapping's event comes at its first `:`; its first key moves it back.
        at: Pos,
        start: usize,
        /// The key read, waiting for its value.
        key: Option<String>,
        /// Keys seen so far (built once the mapping is long enough to make scanning slow).
        seen: Option<HashSet<String>>,
    },
}

/// Parses one YAML document into a tree with the position of every node. Aliases, tags and
/// more than one document are refused, so a small text cannot expand into a huge tree.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut items: Vec<Node> = Vec::new();
    let mut entries: Vec<(String, Node)> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| error_at(e.info().to_string(), *e.marker()))?;
        let node = match event {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(error_at(
                        "a second YAML document (`---`): one file holds one document",
                        mark,
                    ));
                }
                continue;
            }
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => continue,
            Event::Alias(_) => {
                return Err(error_at(
                    "YAML aliases (*name) are not supported: write the value out",
                    mark,
                ))
            }
            Event::Scalar(_, _, _, Some(tag)) => {
                return Err(error_at(
                    format!("YAML tags ({}{}) are not supported", tag.handle, tag.suffix),
                    mark,
                ))
            }
            Event::SequenceStart(_, Some(tag)) | Event::MappingStart(_, Some(tag)) => {
                return Err(error_at(
                    format!("YAML tags ({}{}) are not supported", tag.handle, tag.suffix),
                    mark,
                ))
            }
            Event::Scalar(v, style, _, None) => Node {
                line: mark.line() as u32,
                column: mark.col() as u32 + 1,
                value: scalar(v, style),
            },
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(error_at(
                        format!("mappings and lists nest deeper than {MAX_DEPTH} levels here"),
                        mark,
                    ));
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq(pos(mark), items.len())
                } else {
                    Frame::Map {
                        at: pos(mark),
                        start: entries.len(),
                        key: None,
                        seen: None,
                    }
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                // exact sizes: most mappings of a program hold one or two entries, and the
                // capacity a vector grows to would double the tree of a big program
                let (at, value) = match stack.pop() {
                    Some(Frame::Seq(at, start)) => (at, Value::Seq(items.drain(start..).collect())),
                    Some(Frame::Map { at, start, .. }) => {
                        (at, Value::Map(entries.drain(start..).collect()))
                    }
                    None => return Err(error_at("unbalanced end of a mapping or list", mark)),
                };
                Node {
                    line: at.0,
                    column: at.1,
                    value,
                }
            }
        };
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq(..)) => items.push(node),
            Some(Frame::Map {
                at,
                start,
                key,
                seen,
            }) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => {
                    let entries = &entries[*start..];
                    if entries.is_empty() {
                        *at = (*at).min((node.line, node.column));
                    }
                    let k = match node.value {
                        Value::Str(s) | Value::TooLarge(s) => s,
                        Value::Int(i) => i.to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Float(f) => f.to_string(),
                        Value::Null => "null".to_string(),
                        Value::Seq(_) | Value::Map(_) => {
                            return Err(error_at(
                                "mapping keys must be names, found a list or a mapping",
                                mark,
                            ))
                        }
                    };
                    // a long mapping (buffers: of a big program) gets a set, short ones a scan
                    let duplicate = match seen {
                        Some(set) => !set.insert(k.clone()),
                        None => {
                            let dup = entries.iter().any(|(e, _)| *e == k);
                            if entries.len() >= 16 {
                                *seen = Some(entries.iter().map(|(e, _)| e.clone()).collect());
                                seen.as_mut().expect("just made").insert(k.clone());
                            }
                            dup
                        }
                    };
                    if duplicate {
                        return Err(error_at(format!("duplicate entry with key \"{k}\""), mark));
                    }
                    *key = Some(k);
                }
            },
        }
    }
    Ok(root.unwrap_or(Node {
        line: 1,
        column: 1,
        value: Value::Null,
    }))
}

/// What a scalar means, with YAML 1.2's core schema as serde_yaml applied it: quoted scalars
/// are strings; plain ones are null, booleans, integers (decimal, `0x`, `0o`, `0b`; a leading
/// zero makes a string), floats, else strings.
fn scalar(v: String, style: TScalarStyle) -> Value {
    if style != TScalarStyle::Plain {
        return Value::Str(v);
    }
    match v.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    match integer(&v) {
        Some(Some(i)) => return Value::Int(i),
        Some(None) => return Value::TooLarge(v),
        None => {}
    }
    if !leading_zero_digits(&v) {
        if let Some(f) = float(&v) {
            return Value::Float(f);
        }
    }
    Value::Str(v)
}

/// `Some(Some(i))` for an integer in range, `Some(None)` for one written in integer syntax
/// beyond 64 bits, `None` for anything else.
fn integer(v: &str) -> Option<Option<i64>> {
    let (negative, body) = match v.as_bytes().first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = body.strip_prefix("0b") {
        (2, d)
    } else {
        if leading_zero_digits(body) {
            return None;
        }
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = match u128::from_str_radix(digits, radix) {
        Ok(m) => m,
        Err(_) => return Some(None),
    };
    let value = if negative {
        0i128.checked_sub_unsigned(magnitude)
    } else {
        i128::try_from(magnitude).ok()
    };
    Some(value.and_then(|x| i64::try_from(x).ok()))
}

/// `0123`-style digits: a string in YAML 1.2.
fn leading_zero_digits(v: &str) -> bool {
    let v = v.strip_prefix(['-', '+']).unwrap_or(v);
    v.len() > 1 && v.starts_with('0') && v[1..].bytes().all(|b| b.is_ascii_digit())
}

fn float(v: &str) -> Option<f64> {
    let unsigned = match v.strip_prefix('+') {
        Some(u) if u.starts_with(['+', '-']) => return None,
        Some(u) => u,
        None => v,
    };
    match (unsigned, v) {
        (".inf" | ".Inf" | ".INF", _) => Some(f64::INFINITY),
        (_, "-.inf" | "-.Inf" | "-.INF") => Some(f64::NEG_INFINITY),
        (_, ".nan" | ".NaN" | ".NAN") => Some(f64::NAN),
        _ => unsigned.parse::<f64>().ok().filter(|f| f.is_finite()),
    }
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

/// The 1-based line and column of the node at `path` in `text`, if it exists (for a mapping
/// entry, where its value starts). Parses the text; to locate many paths, parse once and use
/// [`Node::find`].
pub fn locate(text: &str, path: &str) -> Option<(u32, u32)> {
    let root = parse(text).ok()?;
    let n = root.find(&split_path(path))?;
    Some((n.line, n.column))
}

/// `node` in one line of flow YAML (`{ ins: [xb], out: yb }`), at most `max` characters: a
/// longer rendering ends in `...` (for naming an op in a message, not for reading back). A string
/// is plain when it is a name (`xb`, `xb@1`) and double-quoted otherwise, whatever its style in
/// the source, which the tree does not keep.
pub fn flow(node: &Node, max: usize) -> String {
    let mut out = String::new();
    write_flow(node, &mut out, 0, max);
    out
}

/// [`flow`], appended to `out`, so that `out[from..]` (what was there from `from` on, then the
/// node) holds at most `max` characters: a loader renders every op of a big program this way,
/// into one buffer.
pub fn write_flow(node: &Node, out: &mut String, from: usize, max: usize) {
    // stop early (a `use` of ten thousand operands needs only its first few), past the bytes
    // that `max + 1` characters can take
    flow_into(node, out, from + 4 * (max + 1));
    shorten_from(out, from, max);
}

/// `text` cut to at most `max` characters, ending in `...` when it was longer.
pub fn shorten(mut text: String, max: usize) -> String {
    shorten_from(&mut text, 0, max);
    text
}

/// [`shorten`] of `text[from..]`, in place.
fn shorten_from(text: &mut String, from: usize, max: usize) {
    let tail = &text[from..];
    // at most `max` bytes is at most `max` characters
    if tail.len() <= max || tail.chars().count() <= max {
        return;
    }
    let keep = max.saturating_sub(3);
    let cut = from + tail.char_indices().nth(keep).map_or(tail.len(), |(i, _)| i);
    text.truncate(cut);
    text.truncate(from + text[from..].trim_end().len());
    text.push_str("...");
}

/// Appends `node` in flow style to `out`, stopping once `out` holds `budget` bytes.
fn flow_into(node: &Node, out: &mut String, budget: usize) {
    use std::fmt::Write;
    if out.len() > budget {
        return;
    }
    match &node.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::TooLarge(s) => out.push_str(s),
        Value::Float(f) => {
            let _ = write!(out, "{f}");
        }
        Value::Str(s) => flow_string(s, out),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow_into(item, out, budget);
                if out.len() > budget {
                    return;
                }
            }
            out.push(']');
        }
        Value::Map(entries) if entries.is_empty() => out.push_str("{}"),
        Value::Map(entries) => {
            out.push_str("{ ");
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow_string(k, out);
                out.push_str(": ");
                flow_into(v, out, budget);
                if out.len() > budget {
                    return;
                }
            }
            out.push_str(" }");
        }
    }
}

/// Whether `s` is a name YAML reads back as the same string when written plain: a letter or
/// `_`, then letters, digits, `_`, `.`, `@`, `-`, and not a null or a boolean (a plain scalar
/// that starts with a letter is never a number: [`scalar`]).
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'@' | b'-'))
        && !matches!(
            s,
            "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        )
}

/// A string plain when it is a name ([`is_name`]), else in double quotes with `"`, `\` and
/// control characters escaped.
fn flow_string(s: &str, out: &mut String) {
    if is_name(s) {
        out.push_str(s);
        return;
    }
    double_quoted(s, out);
}

/// `s` in YAML double quotes, with `"`, `\`, control and bidirectional formatting characters
/// escaped (an op's text is shown in reports: it must not reorder or recolour them): read
/// back, the same string.
pub fn double_quoted(s: &str, out: &mut String) {
    out.push('"');
    let hidden = |c: char| c.is_control() || crate::text::is_bidi(c);
    if !s.contains(['"', '\\']) && !s.chars().any(hidden) {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if hidden(c) => {
                    let _ = std::fmt::Write::write_fmt(out, format_args!("\\u{:04x}", c as u32));
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

/// Serialises a value as a YAML document.
pub fn to_string<T: serde::Serialize>(value: &T) -> String {
    serde_yaml::to_string(value).expect("plain data always serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "kernel: x\nbody:\n  - for: { var: t, to: tiles }\n    body:\n      - load:  { src: \"x[t]\", dst: xb }\n      - vadd: {ins: [a, b], out: zb}\n";

    #[test]
    fn parses_in_key_order() {
        let n = parse("b: 1\na: [x, 2]\n").unwrap();
        let at = |line, column, value| Node {
            line,
            column,
            value,
        };
        assert_eq!(
            n,
            at(
                1,
                1,
                Value::Map(vec![
                    ("b".into(), at(1, 4, Value::Int(1))),
                    (
                        "a".into(),
                        at(
                            2,
                            4,
                            Value::Seq(vec![
                                at(2, 5, Value::Str("x".into())),
                                at(2, 8, Value::Int(2))
                            ])
                        )
                    )
                ])
            )
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
    fn scalars_follow_the_core_schema() {
        let v = |text: &str| {
            parse(&format!("k: {text}"))
                .unwrap()
                .get("k")
                .unwrap()
                .value
                .clone()
        };
        assert_eq!(v("42"), Value::Int(42));
        assert_eq!(v("-0x10"), Value::Int(-16));
        assert_eq!(v("0o17"), Value::Int(15));
        assert_eq!(v("0b101"), Value::Int(5));
        assert_eq!(v("0123"), Value::Str("0123".into()));
        assert_eq!(v("\"42\""), Value::Str("42".into()));
        assert_eq!(v("1.5e3"), Value::Float(1500.0));
        assert_eq!(v("true"), Value::Bool(true));
        assert_eq!(v("~"), Value::Null);
        assert_eq!(v(""), Value::Null);
        assert_eq!(v("inf"), Value::Str("inf".into()));
        assert_eq!(v("t % 2"), Value::Str("t % 2".into()));
        assert_eq!(v("9223372036854775807"), Value::Int(i64::MAX));
        assert_eq!(v("-9223372036854775808"), Value::Int(i64::MIN));
        assert_eq!(
            v("9223372036854775808"),
            Value::TooLarge("9223372036854775808".into())
        );
        assert_eq!(
            v("99999999999999999999999999999999999999999"),
            Value::TooLarge("99999999999999999999999999999999999999999".into())
        );
    }

    #[test]
    fn hostile_documents_are_refused_with_a_place() {
        let e = parse("a: &x [1, 2]\nb: *x\n").unwrap_err();
        assert!(e.message.contains("aliases"), "{e:?}");
        assert_eq!((e.line, e.column), (Some(2), Some(4)));
        let e = parse("a: !!binary aGk=\n").unwrap_err();
        assert!(e.message.contains("tags"), "{e:?}");
        let e = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.message.contains("second YAML document"), "{e:?}");
        let deep = format!("a: {}1{}\n", "[".repeat(200), "]".repeat(200));
        let e = parse(&deep).unwrap_err();
        assert!(e.message.contains("deeper than 128"), "{e:?}");
        assert_eq!(e.line, Some(1));
        let many: String = (0..40).map(|i| format!("k{i}: 1\n")).collect();
        let e = parse(&format!("{many}k7: 2\n")).unwrap_err();
        assert!(
            e.message.contains("duplicate entry with key \"k7\""),
            "{e:?}"
        );
        assert_eq!(e.line, Some(41));
        assert_eq!(parse("").unwrap().value, Value::Null);
    }

    #[test]
    fn flow_renders_one_line_and_cuts_long_ones() {
        let item = parse(DOC).unwrap();
        let body = item.get("body").unwrap();
        let Value::Seq(ops) = &body.value else {
            panic!("a list")
        };
        let for_op = ops[0].get("for").unwrap();
        assert_eq!(flow(for_op, 60), "{ var: t, to: tiles }");
        let inner = ops[0].get("body").unwrap();
        assert_eq!(
            flow(inner, 80),
            "[{ load: { src: \"x[t]\", dst: xb } }, { vadd: { ins: [a, b], out: zb } }]"
        );
        assert_eq!(flow(inner, 20), "[{ load: { src: \"...");
        let v = |text: &str| {
            parse(&format!("k: {text}"))
                .unwrap()
                .get("k")
                .unwrap()
                .clone()
        };
        // strings YAML would read as something else are quoted
        assert_eq!(flow(&v("\"42\""), 10), "\"42\"");
        assert_eq!(flow(&v("\"true\""), 10), "\"true\"");
        assert_eq!(flow(&v("xb@1"), 10), "xb@1");
        assert_eq!(flow(&v("'a\"b'"), 10), "\"a\\\"b\"");
        assert_eq!(flow(&v("~"), 10), "null");
        assert_eq!(flow(&v("{}"), 10), "{}");
        // characters, not bytes, are counted
        assert_eq!(flow(&v("\"ééééé\""), 7), "\"ééééé\"");
        assert_eq!(flow(&v("\"éééééé\""), 7), "\"ééé...");
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
