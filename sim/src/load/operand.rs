//! Operand syntax (`name`, `name@k`, `name[e1, e2:e3, :, a:]`, `name@k[...]`) and the
//! interval helpers the bounds checks use. Names are resolved by the caller, so this module is
//! pure text and arithmetic and can be tested alone.

use crate::expr::{self, Expr, ParseError};

/// One written index before missing bounds are filled from the base's shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawIndex {
    At(Expr),
    Slice(Option<Expr>, Option<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawOperand {
    pub name: String,
    pub slot: Option<Expr>,
    pub indices: Vec<RawIndex>,
}

/// Why operand text does not parse. Expression errors keep the parser's error with its
/// offset moved to the whole operand, so the caller can suggest names.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OperandError {
    Syntax(String),
    Expr(ParseError),
}

fn shift(e: ParseError, by: usize) -> ParseError {
    match e {
        ParseError::Syntax { message, at } => ParseError::Syntax {
            message,
            at: at + by,
        },
        ParseError::UnknownName { name, at } => ParseError::UnknownName { name, at: at + by },
        ParseError::Eval { error, at } => ParseError::Eval { error, at: at + by },
    }
}

pub(crate) fn parse_operand(
    text: &str,
    resolve: &mut dyn FnMut(&str) -> Option<Expr>,
) -> Result<RawOperand, OperandError> {
    let syntax = |m: String| Err(OperandError::Syntax(m));
    let lead = text.len() - text.trim_start().len();
    let mut pos = lead;
    let rest = &text[pos..];
    let name_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    if name_len == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
        return syntax("an operand starts with a buffer or tensor name".into());
    }
    let name = rest[..name_len].to_string();
    pos += name_len;
    let mut slot = None;
    if text[pos..].starts_with('@') {
        pos += 1;
        let (e, used) = expr::parse_prefix(&text[pos..], resolve)
            .map_err(|e| OperandError::Expr(shift(e, pos)))?;
        slot = Some(e);
        pos += used;
    }
    let mut indices = Vec::new();
    if text[pos..].starts_with('[') {
        pos += 1;
        loop {
            let start = bound(text, &mut pos, resolve)?;
            skip_ws(text, &mut pos);
            let idx = if text[pos..].starts_with(':') {
                pos += 1;
                let end = bound(text, &mut pos, resolve)?;
                RawIndex::Slice(start, end)
            } else {
                match start {
                    Some(e) => RawIndex::At(e),
                    None => {
                        return syntax(format!(
                            "expected an index or a slice at character {}",
                            pos + 1
                        ))
                    }
                }
            };
            indices.push(idx);
            skip_ws(text, &mut pos);
            if text[pos..].starts_with(',') {
                pos += 1;
            } else if text[pos..].starts_with(']') {
                pos += 1;
                break;
            } else if pos >= text.len() {
                return syntax("missing \"]\"".into());
            } else {
                return syntax(format!(
                    "expected \",\" or \"]\" at character {}, found \"{}\"",
                    pos + 1,
                    &text[pos..]
                ));
            }
        }
    }
    skip_ws(text, &mut pos);
    if pos < text.len() {
        return syntax(format!(
            "unexpected \"{}\" at character {}",
            &text[pos..],
            pos + 1
        ));
    }
    Ok(RawOperand {
        name,
        slot,
        indices,
    })
}

fn skip_ws(text: &str, pos: &mut usize) {
    while text[*pos..].starts_with([' ', '\t']) {
        *pos += 1;
    }
}

/// An expression, or nothing when the next character ends it (`:`, `,`, `]`).
fn bound(
    text: &str,
    pos: &mut usize,
    resolve: &mut dyn FnMut(&str) -> Option<Expr>,
) -> Result<Option<Expr>, OperandError> {
    skip_ws(text, pos);
    if text[*pos..].starts_with([':', ',', ']']) {
        return Ok(None);
    }
    let (e, used) = expr::parse_prefix(&text[*pos..], resolve)
        .map_err(|e| OperandError::Expr(shift(e, *pos)))?;
    *pos += used;
    Ok(Some(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::VarId;

    fn p(text: &str) -> Result<RawOperand, OperandError> {
        parse_operand(text, &mut |n| match n {
            "n" => Some(Expr::Const(64)),
            "t" => Some(Expr::Var(VarId(0))),
            _ => None,
        })
    }

    #[test]
    fn plain_slot_and_indices() {
        let o = p("xb").unwrap();
        assert_eq!((o.name.as_str(), o.slot, o.indices.len()), ("xb", None, 0));
        let o = p("xb@1").unwrap();
        assert_eq!(o.slot, Some(Expr::Const(1)));
        let o = p("x[t, 0:n]").unwrap();
        assert_eq!(o.indices[0], RawIndex::At(Expr::Var(VarId(0))));
        assert_eq!(
            o.indices[1],
            RawIndex::Slice(Some(Expr::Const(0)), Some(Expr::Const(64)))
        );
        let o = p(" y@t % 2[ :, 4: ] ").unwrap();
        assert_eq!(o.name, "y");
        assert!(o.slot.is_some());
        assert_eq!(o.indices[0], RawIndex::Slice(None, None));
        assert_eq!(o.indices[1], RawIndex::Slice(Some(Expr::Const(4)), None));
        let o = p("x[t * 2 + 1 : (t + 1) * 2]").unwrap();
        assert!(matches!(o.indices[0], RawIndex::Slice(Some(_), Some(_))));
    }

    #[test]
    fn syntax_errors() {
        assert!(matches!(p(""), Err(OperandError::Syntax(_))));
        assert!(matches!(p("1x"), Err(OperandError::Syntax(_))));
        assert!(matches!(p("x[0"), Err(OperandError::Syntax(m)) if m.contains("]")));
        assert!(matches!(p("x[0] y"), Err(OperandError::Syntax(_))));
        assert!(matches!(p("x[,]"), Err(OperandError::Syntax(_))));
        assert!(matches!(
            p("x[0+]"),
            Err(OperandError::Expr(ParseError::Syntax { .. }))
        ));
        match p("x[0, m]") {
            Err(OperandError::Expr(ParseError::UnknownName { name, at })) => {
                assert_eq!((name.as_str(), at), ("m", 5))
            }
            other => panic!("{other:?}"),
        }
    }
}
