//! The recursive-descent reader: chunks, modules, functions, regions and the generic parts of
//! ops (results, names, generic quoted form, the opaque fallback). The per-family op syntax is
//! in `ops.rs`; types and attributes in `attrs.rs`.

use super::ast::*;
use super::lexer::{describe, LexError, Lexer, Tok, Token};
use crate::Diagnostic;

/// The deepest nesting of regions, types, attributes and parentheses the reader accepts: deep
/// enough for any real kernel, shallow enough that recursion cannot overflow the stack.
pub const MAX_DEPTH: u32 = 256;

/// A syntax error: where, what, and a hint.
#[derive(Debug)]
pub struct PErr {
    pub pos: Pos,
    pub message: String,
    pub hint: Option<String>,
}

pub type R<T> = Result<T, Box<PErr>>;

/// Saved parser state for backtracking (the current token and where lexing resumes).
#[derive(Clone, Copy)]
pub struct Save {
    tok: Token,
    after: Pos,
    prev_end: u32,
    depth: u32,
}

pub struct Parser<'a> {
    pub(super) lx: Lexer<'a>,
    pub(super) src: &'a str,
    /// The lookahead token.
    pub(super) tok: Token,
    /// The end of the last consumed token.
    pub(super) prev_end: u32,
    depth: u32,
    /// The op being parsed, for messages (`in `hivm.hir.load`: ...`).
    pub(super) op: Option<String>,
}

impl<'a> Parser<'a> {
    pub fn new(src: &'a str, start: Pos, limit: usize) -> Parser<'a> {
        let mut lx = Lexer::new(src, start, limit);
        let tok = lx.next();
        Parser {
            lx,
            src,
            tok,
            prev_end: start.offset,
            depth: 0,
            op: None,
        }
    }

    // ---- token plumbing ----

    pub(super) fn text(&self, t: Token) -> &'a str {
        &self.src[t.start.offset as usize..t.end as usize]
    }

    pub(super) fn slice(&self, a: u32, b: u32) -> &'a str {
        self.src.get(a as usize..b as usize).unwrap_or("")
    }

    pub(super) fn bump(&mut self) -> Token {
        let t = self.tok;
        self.prev_end = t.end;
        if t.kind != Tok::Eof {
            self.tok = self.lx.next();
        }
        t
    }

    pub(super) fn at(&self, k: Tok) -> bool {
        self.tok.kind == k
    }

    pub(super) fn at_ident(&self, s: &str) -> bool {
        self.tok.kind == Tok::Ident && self.text(self.tok) == s
    }

    pub(super) fn eat(&mut self, k: Tok) -> bool {
        if self.at(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    pub(super) fn eat_ident(&mut self, s: &str) -> bool {
        if self.at_ident(s) {
            self.bump();
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, k: Tok, what: &str) -> R<Token> {
        if self.at(k) {
            Ok(self.bump())
        } else {
            Err(self.expected(what))
        }
    }

    pub(super) fn expect_ident(&mut self, s: &str) -> R<Token> {
        if self.at_ident(s) {
            Ok(self.bump())
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    pub(super) fn save(&self) -> Save {
        Save {
            tok: self.tok,
            after: self.lx.pos(),
            prev_end: self.prev_end,
            depth: self.depth,
        }
    }

    pub(super) fn restore(&mut self, s: Save) {
        self.tok = s.tok;
        self.lx.reset(s.after);
        self.prev_end = s.prev_end;
        self.depth = s.depth;
    }

    /// The token after the lookahead, without consuming anything.
    pub(super) fn peek2(&mut self) -> Token {
        let save = self.save();
        self.bump();
        let t = self.tok;
        self.restore(save);
        t
    }

    pub(super) fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---- errors ----

    pub(super) fn context(&self) -> String {
        match &self.op {
            Some(op) => format!("in `{op}`: "),
            None => String::new(),
        }
    }

    pub(super) fn found(&self) -> String {
        describe(self.tok.kind, self.text(self.tok))
    }

    pub(super) fn error_at(&self, pos: Pos, message: String) -> Box<PErr> {
        Box::new(PErr {
            pos,
            message,
            hint: None,
        })
    }

    pub(super) fn lex_error(&self) -> Box<PErr> {
        let (msg, hint) = match self.lx.error {
            Some(LexError::UnterminatedString) => (
                "unterminated string".to_string(),
                Some("close the string with `\"` on the same line".to_string()),
            ),
            Some(LexError::BadEscape) => (
                "bad escape in string".to_string(),
                Some("use `\\\"`, `\\\\`, `\\n`, `\\t` or two hex digits".to_string()),
            ),
            Some(LexError::EmptyName) => (
                format!(
                    "{} must be followed by a name",
                    describe(Tok::Error, self.text(self.tok))
                ),
                None,
            ),
            _ => (format!("unexpected character {}", self.found()), None),
        };
        Box::new(PErr {
            pos: self.tok.start,
            message: format!("{}{msg}", self.context()),
            hint,
        })
    }

    /// `in `op`: expected WHAT, found `TOKEN``.
    pub(super) fn expected(&self, what: &str) -> Box<PErr> {
        if self.tok.kind == Tok::Error {
            return self.lex_error();
        }
        self.error_at(
            self.tok.start,
            format!("{}expected {what}, found {}", self.context(), self.found()),
        )
    }

    /// Like [`Parser::expected`], with a hint naming the unclosed opener at end of input.
    pub(super) fn expected_closing(&self, what: &str, open: Token) -> Box<PErr> {
        let mut e = self.expected(what);
        if self.tok.kind == Tok::Eof {
            e.hint = Some(format!(
                "the {} at line {}, column {} is never closed",
                describe(open.kind, self.text(open)),
                open.start.line,
                open.start.column
            ));
        }
        e
    }

    pub(super) fn too_deep(&self) -> Box<PErr> {
        Box::new(PErr {
            pos: self.tok.start,
            message: format!(
                "{}nesting deeper than {MAX_DEPTH} levels (regions, types, attributes, parentheses)",
                self.context()
            ),
            hint: Some("flatten the input; real kernels nest a few levels".into()),
        })
    }

    // ---- values ----

    /// `%name` or `%name#N` at the lookahead.
    pub(super) fn value(&mut self) -> R<Value> {
        if !self.at(Tok::Value) {
            return Err(self.expected("an SSA value (`%name`)"));
        }
        let t = self.bump();
        let text = &self.text(t)[1..];
        let (name, index) = match text.rsplit_once('#') {
            Some((n, i)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => {
                let index = i.parse::<u32>().map_err(|_| {
                    self.error_at(t.start, format!("result index `#{i}` is out of range"))
                })?;
                (n, index)
            }
            _ => (text, 0),
        };
        Ok(Value {
            name: name.to_string(),
            index,
            pos: t.start,
        })
    }

    /// `%a, %b, ...` (possibly empty: stops at a token that is not a value).
    pub(super) fn values(&mut self) -> R<Vec<Value>> {
        let mut v = Vec::new();
        if !self.at(Tok::Value) {
            return Ok(v);
        }
        loop {
            v.push(self.value()?);
            if !self.eat(Tok::Comma) {
                return Ok(v);
            }
        }
    }

    /// `(%a, %b)` (possibly empty).
    pub(super) fn paren_values(&mut self) -> R<Vec<Value>> {
        let open = self.expect(Tok::LParen, "`(`")?;
        let v = self.values()?;
        if !self.at(Tok::RParen) {
            return Err(self.expected_closing(
                if v.is_empty() {
                    "a value or `)`"
                } else {
                    "`,` or `)`"
                },
                open,
            ));
        }
        self.bump();
        Ok(v)
    }

    // ---- chunks, regions, ops ----

    /// The top level of a chunk: `#alias = ...` definitions and ops until end of input.
    pub fn chunk(&mut self, span: Span) -> R<Chunk> {
        let mut aliases = Vec::new();
        let mut ops = Vec::new();
        loop {
            let kind = self.tok.kind;
            match kind {
                Tok::Eof => break,
                Tok::Hash | Tok::Bang if self.peek2().kind == Tok::Equal => {
                    let t = self.bump();
                    self.bump();
                    let value = if t.kind == Tok::Hash {
                        self.parse_attr(true)?
                    } else {
                        Attr::Type(Box::new(self.parse_type()?))
                    };
                    aliases.push(Alias {
                        name: self.text(t)[1..].to_string(),
                        value,
                        span: Span {
                            start: t.start,
                            end: self.prev_end,
                        },
                    });
                }
                _ => ops.push(self.op()?),
            }
        }
        // A chunk of bare functions is the body of an implicit module (as in MLIR).
        if !ops.is_empty() && !ops.iter().any(|o| o.name == "builtin.module") {
            let start = ops[0].span.start;
            let end = ops.last().map_or(start.offset, |o| o.span.end);
            let module = Op {
                results: Vec::new(),
                name: "builtin.module".into(),
                kind: OpKind::Module {
                    name: None,
                    body: Region {
                        blocks: vec![Block {
                            label: None,
                            args: Vec::new(),
                            ops: std::mem::take(&mut ops),
                        }],
                    },
                },
                span: Span { start, end },
                name_pos: start,
                attrs: Vec::new(),
            };
            ops.push(module);
        }
        Ok(Chunk { span, aliases, ops })
    }

    /// `{ ops }` or `{ ^bb0(%a: T): ops ^bb1: ops }`; `{}` has no blocks.
    pub(super) fn region(&mut self) -> R<Region> {
        let open = self.expect(Tok::LBrace, "`{`")?;
        self.enter()?;
        let mut blocks: Vec<Block> = Vec::new();
        loop {
            match self.tok.kind {
                Tok::RBrace => {
                    self.bump();
                    break;
                }
                Tok::Eof => return Err(self.expected_closing("`}`", open)),
                Tok::Caret => {
                    let label = self.bump();
                    let mut args = Vec::new();
                    if self.at(Tok::LParen) {
                        self.bump();
                        if !self.eat(Tok::RParen) {
                            loop {
                                let v = self.value()?;
                                self.expect(Tok::Colon, "`:`")?;
                                let ty = self.parse_type()?;
                                // `loc(...)` is never written in these inputs; attributes may be.
                                if self.at(Tok::LBrace) {
                                    self.parse_dict()?;
                                }
                                args.push((v, ty));
                                if self.eat(Tok::RParen) {
                                    break;
                                }
                                self.expect(Tok::Comma, "`,` or `)`")?;
                            }
                        }
                    }
                    self.expect(Tok::Colon, "`:` after a block label")?;
                    blocks.push(Block {
                        label: Some(self.text(label)[1..].to_string()),
                        args,
                        ops: Vec::new(),
                    });
                }
                _ => {
                    let op = self.op()?;
                    match blocks.last_mut() {
                        Some(b) => b.ops.push(op),
                        None => blocks.push(Block {
                            label: None,
                            args: Vec::new(),
                            ops: vec![op],
                        }),
                    }
                }
            }
        }
        self.leave();
        Ok(Region { blocks })
    }

    /// One op: results, name, and the syntax its family has.
    pub(super) fn op(&mut self) -> R<Op> {
        let start = self.tok.start;
        let mut results = Vec::new();
        if self.at(Tok::Value) {
            loop {
                let v = self.value()?;
                let mut count = 1;
                if self.at(Tok::Colon) && self.peek2().kind == Tok::Int {
                    self.bump();
                    let t = self.bump();
                    let text = self.text(t);
                    count = text.parse::<u32>().map_err(|_| {
                        self.error_at(t.start, format!("result count `{text}` is out of range"))
                    })?;
                }
                results.push(Result_ {
                    name: v.name,
                    count,
                    pos: v.pos,
                });
                if self.eat(Tok::Equal) {
                    break;
                }
                self.expect(Tok::Comma, "`=` or `,` after a result")?;
            }
        }
        let name_tok = self.tok;
        let name = match self.tok.kind {
            Tok::Str => super::lexer::unescape(self.text(self.tok)),
            Tok::Ident => match self.text(self.tok) {
                "return" => "func.return".to_string(),
                "module" => "builtin.module".to_string(),
                "call" => "func.call".to_string(),
                t => t.to_string(),
            },
            _ => {
                return Err(if results.is_empty() {
                    self.expected("an op")
                } else {
                    self.expected("an op name")
                })
            }
        };
        let outer = self.op.replace(name.clone());
        let mut attrs = Vec::new();
        let kind = if name_tok.kind == Tok::Str {
            self.bump();
            self.generic_op(&mut attrs)
        } else {
            self.bump();
            self.custom_op(&name, &mut attrs)
        };
        self.op = outer;
        Ok(Op {
            results,
            name,
            kind: kind?,
            span: Span {
                start,
                end: self.prev_end,
            },
            name_pos: name_tok.start,
            attrs,
        })
    }

    /// `"name"(%a) [successors] <{props}> ({regions}) {attrs} : (T) -> R`.
    fn generic_op(&mut self, attrs: &mut Vec<NamedAttr>) -> R<OpKind> {
        let operands = self.paren_values()?;
        if self.at(Tok::LBracket) {
            // Successor blocks: `[^bb1, ^bb2]`.
            self.bump();
            while self.eat(Tok::Caret) {
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
            self.expect(Tok::RBracket, "`]`")?;
        }
        if self.at(Tok::Less) {
            self.bump();
            attrs.extend(self.parse_dict()?);
            self.expect(Tok::Greater, "`>` after the properties")?;
        }
        let mut regions = Vec::new();
        if self.at(Tok::LParen) {
            self.bump();
            loop {
                regions.push(self.region()?);
                if self.eat(Tok::RParen) {
                    break;
                }
                self.expect(Tok::Comma, "`,` or `)`")?;
            }
        }
        if self.at(Tok::LBrace) {
            attrs.extend(self.parse_dict()?);
        }
        self.expect(Tok::Colon, "`:` and the op's function type")?;
        let ty = self.parse_type()?;
        if !matches!(ty, Type::Function { .. }) {
            return Err(self.error_at(
                self.tok.start,
                format!(
                    "{}a generic op's type must be a function type `(T) -> R`",
                    self.context()
                ),
            ));
        }
        Ok(scope_or_opaque(regions, operands, vec![ty]))
    }

    /// Whether the lookahead starts another op (or ends the enclosing region), which ends an
    /// op of unknown syntax. `after_comma`: a value right after `,` continues an operand list.
    pub(super) fn at_op_boundary(&mut self, after_comma: bool) -> bool {
        match self.tok.kind {
            Tok::Eof | Tok::RBrace => true,
            Tok::Value if !after_comma => {
                // `%a = `, `%a:2 = `, `%a, %b = `.
                let save = self.save();
                let mut starts = false;
                loop {
                    self.bump();
                    if self.at(Tok::Colon) && self.peek2().kind == Tok::Int {
                        self.bump();
                        self.bump();
                    }
                    if self.at(Tok::Equal) {
                        starts = true;
                        break;
                    }
                    if !(self.eat(Tok::Comma) && self.at(Tok::Value)) {
                        break;
                    }
                }
                self.restore(save);
                starts
            }
            Tok::Caret => {
                // A block label `^bb1:` or `^bb1(%a: T):`, not a successor `cf.br ^bb1`.
                let save = self.save();
                self.bump();
                let mut label = self.at(Tok::Colon);
                if self.at(Tok::LParen) && self.skip_group().is_ok() {
                    label = self.at(Tok::Colon);
                }
                self.restore(save);
                label
            }
            Tok::Ident => {
                let t = self.text(self.tok);
                (t.contains('.') || t == "return") && {
                    let next = self.peek2().kind;
                    next != Tok::Equal && next != Tok::Colon
                }
            }
            Tok::Str => self.peek2().kind == Tok::LParen,
            _ => false,
        }
    }

    /// Whether a `{` at the lookahead opens a region (ops) rather than an attribute dictionary.
    pub(super) fn brace_is_region(&mut self) -> bool {
        let save = self.save();
        self.bump();
        let region = match self.tok.kind {
            Tok::Value | Tok::Caret => true,
            Tok::Str => self.peek2().kind == Tok::LParen,
            Tok::Ident => {
                let t = self.text(self.tok);
                let next = self.peek2().kind;
                let terminator = t == "return" || t.ends_with(".yield") || t.ends_with(".return");
                if terminator {
                    !matches!(next, Tok::Equal | Tok::Comma)
                } else {
                    t.contains('.') && !matches!(next, Tok::Equal | Tok::Comma | Tok::RBrace)
                }
            }
            _ => false,
        };
        self.restore(save);
        region
    }

    /// Skip a balanced `(...)`, `[...]` or `<...>` group, collecting the values used inside.
    pub(super) fn skip_group_collect(&mut self, uses: &mut Vec<Value>) -> R<()> {
        let open = self.bump();
        let mut stack: Vec<Tok> = vec![closer(open.kind)];
        loop {
            match self.tok.kind {
                Tok::Eof => {
                    let want = stack.last().map_or(")", |c| closer_text(*c));
                    return Err(self.expected_closing(&format!("`{want}`"), open));
                }
                Tok::Error => return Err(self.lex_error()),
                Tok::Value => {
                    uses.push(self.value()?);
                    continue;
                }
                Tok::LParen | Tok::LBracket | Tok::Less | Tok::LBrace => {
                    if stack.len() as u32 >= MAX_DEPTH {
                        return Err(self.too_deep());
                    }
                    stack.push(closer(self.tok.kind));
                }
                k @ (Tok::RParen | Tok::RBracket | Tok::Greater | Tok::RBrace) => {
                    if stack.last() == Some(&k) {
                        stack.pop();
                        if stack.is_empty() {
                            self.bump();
                            return Ok(());
                        }
                    } else if k != Tok::Greater {
                        let want = stack.last().map_or(")", |c| closer_text(*c));
                        return Err(self.expected(&format!("`{want}`")));
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    pub(super) fn skip_group(&mut self) -> R<()> {
        let mut sink = Vec::new();
        self.skip_group_collect(&mut sink)
    }

    /// The rest of an op whose syntax the reader does not know: operand uses in order, the
    /// types after the last top-level `:` (or `->`), regions, and attribute dictionaries, up to the next
    /// op. Keeps `key = value` keywords in `attrs`.
    pub(super) fn opaque_rest(&mut self, attrs: &mut Vec<NamedAttr>) -> R<OpKind> {
        let mut operands = Vec::new();
        let mut types = Vec::new();
        let mut regions = Vec::new();
        let mut after_comma = false;
        while !self.at_op_boundary(after_comma) {
            after_comma = false;
            let kind = self.tok.kind;
            match kind {
                Tok::Value => operands.push(self.value()?),
                // `: T, U` or a result arrow `-> T` (`hivm.hir.get_block_idx -> i64`).
                Tok::Colon | Tok::Arrow => {
                    self.bump();
                    let save = self.save();
                    match self.type_list_with_keywords() {
                        Ok(t) => types = t,
                        Err(_) => self.restore(save),
                    }
                }
                Tok::LBrace => {
                    if self.brace_is_region() {
                        regions.push(self.region()?);
                    } else {
                        attrs.extend(self.parse_dict()?);
                    }
                }
                Tok::LParen | Tok::LBracket | Tok::Less => {
                    self.skip_group_collect(&mut operands)?
                }
                Tok::RParen | Tok::RBracket | Tok::Greater => {
                    return Err(self.error_at(
                        self.tok.start,
                        format!("{}unbalanced {}", self.context(), self.found()),
                    ))
                }
                Tok::Error => return Err(self.lex_error()),
                Tok::Ident if self.peek2().kind == Tok::Equal => {
                    let t = self.bump();
                    self.bump();
                    if self.at(Tok::Value) {
                        operands.push(self.value()?);
                    } else {
                        let value = self.parse_attr(true)?;
                        attrs.push(NamedAttr {
                            name: self.text(t).to_string(),
                            value: Some(value),
                            pos: t.start,
                        });
                    }
                }
                Tok::Comma => {
                    self.bump();
                    after_comma = true;
                }
                _ => {
                    self.bump();
                }
            }
        }
        Ok(scope_or_opaque(regions, operands, types))
    }

    /// `T, U`, `A to B`, `A into B`, `from A to B`, `(T) -> U`: every type named, in order.
    pub(super) fn type_list_with_keywords(&mut self) -> R<Vec<Type>> {
        self.eat_ident("from");
        let mut v = vec![self.parse_type()?];
        loop {
            if self.eat(Tok::Comma)
                || self.eat_ident("to")
                || self.eat_ident("into")
                || self.eat(Tok::Arrow)
            {
                if self.at(Tok::LParen) {
                    v.extend(self.paren_types()?);
                } else {
                    v.push(self.parse_type()?);
                }
            } else {
                return Ok(v);
            }
        }
    }
}

fn closer(open: Tok) -> Tok {
    match open {
        Tok::LParen => Tok::RParen,
        Tok::LBracket => Tok::RBracket,
        Tok::LBrace => Tok::RBrace,
        _ => Tok::Greater,
    }
}

fn closer_text(c: Tok) -> &'static str {
    match c {
        Tok::RParen => ")",
        Tok::RBracket => "]",
        Tok::RBrace => "}",
        _ => ">",
    }
}

/// An op of unknown syntax with exactly one region holding ops runs that region in place
/// (`hivm.hir.custom_macro` with a body, `scope.scope`-like wrappers); others stay opaque.
pub(super) fn scope_or_opaque(
    mut regions: Vec<Region>,
    operands: Vec<Value>,
    types: Vec<Type>,
) -> OpKind {
    if regions.len() == 1 && regions[0].blocks.iter().any(|b| !b.ops.is_empty()) {
        OpKind::Scope {
            body: regions.pop().unwrap_or_default(),
        }
    } else {
        OpKind::Opaque { operands, types }
    }
}

/// Convert a parser error into a located diagnostic.
pub fn diagnostic(file: &str, e: PErr) -> Diagnostic {
    let mut d = Diagnostic::error(file, "", e.message);
    d.line = Some(e.pos.line);
    d.column = Some(e.pos.column);
    d.hint = e.hint;
    d
}
