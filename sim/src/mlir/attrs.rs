//! Types, attributes and affine maps: the builtin sublanguages every op's syntax uses.

use super::ast::*;
use super::lexer::{unescape, Tok};
use super::parser::{Parser, R};

/// Names that are builtin scalar types.
pub(super) fn scalar_type(name: &str) -> Option<Type> {
    if name == "index" {
        return Some(Type::Index);
    }
    let int = |digits: &str, signed| {
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u32>().ok())
            .flatten()
            .map(|bits| Type::Int { bits, signed })
    };
    if let Some(d) = name.strip_prefix("si") {
        return int(d, Some(true));
    }
    if let Some(d) = name.strip_prefix("ui") {
        return int(d, Some(false));
    }
    if let Some(d) = name.strip_prefix('i') {
        return int(d, None);
    }
    let is_float = matches!(name, "bf16" | "tf32")
        || (name.starts_with('f') && name[1..].starts_with(|c: char| c.is_ascii_digit()));
    is_float.then(|| Type::Float(name.to_string()))
}

impl<'a> Parser<'a> {
    /// A type: builtin scalars, memref/tensor/vector, function types, `!dialect.type<...>`.
    pub(super) fn parse_type(&mut self) -> R<Type> {
        self.enter()?;
        let t = self.parse_type_inner();
        self.leave();
        t
    }

    fn parse_type_inner(&mut self) -> R<Type> {
        match self.tok.kind {
            Tok::Ident => {
                let text = self.text(self.tok);
                if let Some(t) = scalar_type(text) {
                    self.bump();
                    return Ok(t);
                }
                match text {
                    "memref" | "tensor" | "vector" => {
                        let kw = text;
                        self.bump();
                        self.shaped(kw)
                    }
                    "none" => {
                        self.bump();
                        Ok(Type::Other("none".into()))
                    }
                    "complex" | "tuple" => {
                        let start = self.tok.start.offset;
                        self.bump();
                        self.balanced_angle()?;
                        Ok(Type::Other(self.slice(start, self.prev_end).into()))
                    }
                    _ => Err(self.expected("a type")),
                }
            }
            Tok::Bang => {
                let start = self.tok.start.offset;
                self.bump();
                if self.at(Tok::Less) {
                    self.balanced_angle()?;
                }
                Ok(Type::Other(self.slice(start, self.prev_end).into()))
            }
            Tok::LParen => {
                let inputs = self.paren_types()?;
                self.expect(Tok::Arrow, "`->`")?;
                let results = self.result_types()?;
                Ok(Type::Function { inputs, results })
            }
            _ => Err(self.expected("a type")),
        }
    }

    /// `(T, U)` (possibly empty).
    pub(super) fn paren_types(&mut self) -> R<Vec<Type>> {
        self.expect(Tok::LParen, "`(`")?;
        self.enter()?;
        let mut v = Vec::new();
        if !self.eat(Tok::RParen) {
            loop {
                v.push(self.parse_type()?);
                // Function results may carry attribute dictionaries: `-> (T {attr})`.
                if self.at(Tok::LBrace) {
                    self.parse_dict()?;
                }
                if self.eat(Tok::RParen) {
                    break;
                }
                self.expect(Tok::Comma, "`,` or `)`")?;
            }
        }
        self.leave();
        Ok(v)
    }

    /// After `->`: one type or a parenthesized list.
    pub(super) fn result_types(&mut self) -> R<Vec<Type>> {
        if self.at(Tok::LParen) {
            // `-> (T)` vs `-> (T) -> U` (a function type as the single result), decided after
            // the list without reading it twice: re-reading would be exponential in nesting.
            self.enter()?;
            let list = self.paren_types();
            let r = match list {
                Ok(inputs) if self.eat(Tok::Arrow) => self
                    .result_types()
                    .map(|results| vec![Type::Function { inputs, results }]),
                other => other,
            };
            self.leave();
            r
        } else {
            Ok(vec![self.parse_type()?])
        }
    }

    /// `T, U, ...` (at least one).
    pub(super) fn type_list(&mut self) -> R<Vec<Type>> {
        let mut v = vec![self.parse_type()?];
        while self.eat(Tok::Comma) {
            v.push(self.parse_type()?);
        }
        Ok(v)
    }

    /// The inside of `memref<...>`, `tensor<...>`, `vector<...>` after the keyword.
    fn shaped(&mut self, kw: &str) -> R<Type> {
        let open = self.expect(Tok::Less, "`<`")?;
        // Re-lex the dimension list by hand from just after `<`: `16x?xf16` is one run.
        self.lx.reset(self.tok.start);
        let mut shape = Vec::new();
        let mut unranked = false;
        while let Some(b) = self.lx.peek_raw() {
            let at = self.lx.pos();
            if b.is_ascii_digit() {
                let digits = self.lx.take_digits();
                let Ok(n) = digits.parse::<u64>() else {
                    return Err(self.error_at(at, format!("dimension `{digits}` is too large")));
                };
                shape.push(Dim::Static(n));
            } else if b == b'?' {
                self.lx.take_ascii(1);
                shape.push(Dim::Dynamic);
            } else if b == b'*' && shape.is_empty() {
                self.lx.take_ascii(1);
                unranked = true;
            } else {
                break;
            }
            if self.lx.byte(0) != Some(b'x') {
                let here = self.lx.pos();
                self.tok = self.lx.next();
                return Err(self.error_at(
                    here,
                    format!(
                        "{}expected `x` after a dimension of `{kw}<...>`, found {}",
                        self.context(),
                        self.found()
                    ),
                ));
            }
            self.lx.take_ascii(1);
            // Guard against enormous shapes costing more than the input: a dimension takes
            // at least two bytes, so this is bounded by the input size anyway.
        }
        self.tok = self.lx.next();
        let elem = Box::new(self.parse_type()?);
        let mut layout = Layout::Identity;
        let mut space = None;
        while self.eat(Tok::Comma) {
            if kw != "memref" {
                self.parse_attr(true)?;
                continue;
            }
            if self.at(Tok::Ident) && self.text(self.tok) == "strided" {
                layout = self.strided()?;
                continue;
            }
            let a = self.parse_attr(true)?;
            match a {
                Attr::Dialect { name, body, .. } if name == "address_space" => {
                    space = Some(body.trim().to_string())
                }
                Attr::Int { value, .. } => space = Some(value.to_string()),
                a @ (Attr::AffineMap(_) | Attr::AliasRef(_))
                    if layout == Layout::Identity && space.is_none() =>
                {
                    layout = Layout::Map(Box::new(a))
                }
                Attr::Dialect {
                    dialect,
                    name,
                    body,
                } => space = Some(format!("#{dialect}.{name}<{body}>")),
                other => space = Some(format!("{other:?}")),
            }
        }
        if !self.at(Tok::Greater) {
            return Err(self.expected_closing("`>`", open));
        }
        self.bump();
        if unranked {
            return Ok(Type::Other(
                self.slice(open.start.offset, self.prev_end).into(),
            ));
        }
        Ok(match kw {
            "memref" => Type::MemRef(MemRefType {
                shape,
                elem,
                layout,
                space,
            }),
            "tensor" => Type::Tensor { shape, elem },
            _ => Type::Vector { shape, elem },
        })
    }

    /// `strided<[512, ?, 1], offset: ?>`.
    fn strided(&mut self) -> R<Layout> {
        self.bump();
        self.expect(Tok::Less, "`<`")?;
        self.expect(Tok::LBracket, "`[`")?;
        let mut strides = Vec::new();
        if !self.eat(Tok::RBracket) {
            loop {
                strides.push(self.int_or_dynamic()?);
                if self.eat(Tok::RBracket) {
                    break;
                }
                self.expect(Tok::Comma, "`,` or `]`")?;
            }
        }
        let mut offset = Some(0);
        if self.eat(Tok::Comma) {
            self.expect_ident("offset")?;
            self.expect(Tok::Colon, "`:`")?;
            offset = self.int_or_dynamic()?;
        }
        self.expect(Tok::Greater, "`>`")?;
        Ok(Layout::Strided { strides, offset })
    }

    fn int_or_dynamic(&mut self) -> R<Option<i64>> {
        if self.eat(Tok::Question) {
            return Ok(None);
        }
        Ok(Some(self.signed_i64()?))
    }

    /// `-3`, `12`, `0x10` as an i64.
    pub(super) fn signed_i64(&mut self) -> R<i64> {
        let v = self.signed_int()?;
        i64::try_from(v)
            .map_err(|_| self.error_at(self.tok.start, format!("integer {v} is out of range")))
    }

    pub(super) fn signed_int(&mut self) -> R<i128> {
        let neg = self.eat(Tok::Minus);
        if !self.at(Tok::Int) {
            return Err(self.expected("an integer"));
        }
        let t = self.bump();
        let text = self.text(t);
        let v = if let Some(h) = text.strip_prefix("0x") {
            i128::from_str_radix(h, 16)
        } else {
            text.parse::<i128>()
        };
        let v =
            v.map_err(|_| self.error_at(t.start, format!("integer `{text}` is out of range")))?;
        Ok(if neg { -v } else { v })
    }

    /// Skip a balanced `<...>` starting at the current `<`, return its inner text.
    pub(super) fn balanced_angle(&mut self) -> R<String> {
        let open = self.expect(Tok::Less, "`<`")?;
        let inner_start = self.tok.start.offset;
        let mut depth = 1u32;
        loop {
            match self.tok.kind {
                Tok::Less => {
                    depth += 1;
                    if depth > super::parser::MAX_DEPTH {
                        return Err(self.too_deep());
                    }
                }
                Tok::Greater => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = self.slice(inner_start, self.tok.start.offset).to_string();
                        self.bump();
                        return Ok(inner);
                    }
                }
                Tok::Eof => return Err(self.expected_closing("`>`", open)),
                Tok::Error => return Err(self.lex_error()),
                _ => {}
            }
            self.bump();
        }
    }

    /// An attribute value. `typed` allows a `: type` suffix after numbers and `dense<...>`.
    pub(super) fn parse_attr(&mut self, typed: bool) -> R<Attr> {
        self.enter()?;
        let a = self.parse_attr_inner(typed);
        self.leave();
        a
    }

    fn type_suffix(&mut self, typed: bool) -> R<Option<Box<Type>>> {
        if typed && self.eat(Tok::Colon) {
            return Ok(Some(Box::new(self.parse_type()?)));
        }
        Ok(None)
    }

    fn parse_attr_inner(&mut self, typed: bool) -> R<Attr> {
        let start = self.tok.start.offset;
        match self.tok.kind {
            Tok::Int => {
                let value = self.signed_int()?;
                let ty = self.type_suffix(typed)?;
                Ok(Attr::Int { value, ty })
            }
            Tok::Minus => {
                let save = self.save();
                self.bump();
                if self.at(Tok::Float) {
                    self.bump();
                    let text = self.slice(start, self.prev_end).to_string();
                    let ty = self.type_suffix(typed)?;
                    return Ok(Attr::Float { text, ty });
                }
                self.restore(save);
                let value = self.signed_int()?;
                let ty = self.type_suffix(typed)?;
                Ok(Attr::Int { value, ty })
            }
            Tok::Float => {
                self.bump();
                let text = self.slice(start, self.prev_end).to_string();
                let ty = self.type_suffix(typed)?;
                Ok(Attr::Float { text, ty })
            }
            Tok::Str => {
                let t = self.bump();
                let s = unescape(self.text(t));
                // A typed string (`"x" : i32`) keeps only its text.
                self.type_suffix(typed)?;
                Ok(Attr::Str(s))
            }
            Tok::LBracket => {
                let open = self.bump();
                let mut v = Vec::new();
                if !self.eat(Tok::RBracket) {
                    loop {
                        v.push(self.parse_attr(true)?);
                        if self.eat(Tok::RBracket) {
                            break;
                        }
                        if !self.at(Tok::Comma) {
                            return Err(self.expected_closing("`,` or `]`", open));
                        }
                        self.bump();
                    }
                }
                Ok(Attr::Array(v))
            }
            Tok::LBrace => Ok(Attr::Dict(self.parse_dict()?)),
            Tok::Less => Ok(Attr::Enum(self.balanced_angle()?.trim().to_string())),
            Tok::Hash => {
                let t = self.bump();
                let full = &self.text(t)[1..];
                if self.at(Tok::Less) {
                    let body = self.balanced_angle()?;
                    let (dialect, name) = full.split_once('.').unwrap_or((full, ""));
                    Ok(Attr::Dialect {
                        dialect: dialect.to_string(),
                        name: name.to_string(),
                        body,
                    })
                } else {
                    Ok(Attr::AliasRef(full.to_string()))
                }
            }
            Tok::At => {
                self.bump();
                // Nested references `@a::@b`.
                while self.at(Tok::Colon) {
                    let save = self.save();
                    self.bump();
                    if self.eat(Tok::Colon) && self.at(Tok::At) {
                        self.bump();
                    } else {
                        self.restore(save);
                        break;
                    }
                }
                Ok(Attr::Other(self.slice(start, self.prev_end).into()))
            }
            Tok::Bang | Tok::LParen => Ok(Attr::Type(Box::new(self.parse_type()?))),
            Tok::Ident => {
                let text = self.text(self.tok);
                match text {
                    "true" | "false" => {
                        self.bump();
                        let ty = self.type_suffix(typed)?;
                        Ok(Attr::Int {
                            value: (text == "true") as i128,
                            ty: ty.or(Some(Box::new(Type::Int {
                                bits: 1,
                                signed: None,
                            }))),
                        })
                    }
                    "unit" => {
                        self.bump();
                        Ok(Attr::Unit)
                    }
                    "affine_map" => {
                        self.bump();
                        Ok(Attr::AffineMap(self.affine_map()?))
                    }
                    _ if scalar_type(text).is_some()
                        || matches!(
                            text,
                            "memref" | "tensor" | "vector" | "none" | "complex" | "tuple"
                        ) =>
                    {
                        Ok(Attr::Type(Box::new(self.parse_type()?)))
                    }
                    _ => {
                        // `dense<...>`, `array<i64: 1>`, `affine_set<...>`, `strided<...>`, a
                        // bare keyword: kept as written (with a `: type` suffix if any).
                        self.bump();
                        if self.at(Tok::Less) {
                            self.balanced_angle()?;
                        }
                        self.type_suffix(typed)?;
                        Ok(Attr::Other(self.slice(start, self.prev_end).into()))
                    }
                }
            }
            _ => Err(self.expected("an attribute")),
        }
    }

    /// `{name = value, unit_name, "quoted" = value}`.
    pub(super) fn parse_dict(&mut self) -> R<Vec<NamedAttr>> {
        let open = self.expect(Tok::LBrace, "`{`")?;
        self.enter()?;
        let mut v = Vec::new();
        if !self.eat(Tok::RBrace) {
            loop {
                let pos = self.tok.start;
                let name = match self.tok.kind {
                    Tok::Ident => self.text(self.tok).to_string(),
                    Tok::Str => unescape(self.text(self.tok)),
                    _ => return Err(self.expected("an attribute name")),
                };
                self.bump();
                let value = if self.eat(Tok::Equal) {
                    Some(self.parse_attr(true)?)
                } else {
                    None
                };
                v.push(NamedAttr { name, value, pos });
                if self.eat(Tok::RBrace) {
                    break;
                }
                if !self.at(Tok::Comma) {
                    return Err(self.expected_closing("`,` or `}`", open));
                }
                self.bump();
            }
        }
        self.leave();
        Ok(v)
    }

    /// After `affine_map`: `<(d0, d1)[s0] -> (exprs)>`.
    pub(super) fn affine_map(&mut self) -> R<AffineMap> {
        self.expect(Tok::Less, "`<`")?;
        let dims = self.id_list(Tok::LParen, Tok::RParen)?;
        let syms = if self.at(Tok::LBracket) {
            self.id_list(Tok::LBracket, Tok::RBracket)?
        } else {
            Vec::new()
        };
        self.expect(Tok::Arrow, "`->`")?;
        self.expect(Tok::LParen, "`(`")?;
        let mut results = Vec::new();
        if !self.eat(Tok::RParen) {
            loop {
                results.push(self.affine_expr(&dims, &syms)?);
                if self.eat(Tok::RParen) {
                    break;
                }
                self.expect(Tok::Comma, "`,` or `)`")?;
            }
        }
        self.expect(Tok::Greater, "`>`")?;
        Ok(AffineMap {
            dims: dims.len() as u32,
            symbols: syms.len() as u32,
            results,
        })
    }

    fn id_list(&mut self, open: Tok, close: Tok) -> R<Vec<&'a str>> {
        let what = if open == Tok::LParen { "`(`" } else { "`[`" };
        self.expect(open, what)?;
        let mut v = Vec::new();
        if !self.eat(close) {
            loop {
                if !self.at(Tok::Ident) {
                    return Err(self.expected("an affine identifier"));
                }
                let t = self.bump();
                v.push(self.text(t));
                if self.eat(close) {
                    break;
                }
                self.expect(Tok::Comma, "`,`")?;
            }
        }
        Ok(v)
    }

    /// Affine expressions: `+`/`-` below `*`, `floordiv`, `ceildiv`, `mod`, unary `-`.
    pub(super) fn affine_expr(&mut self, dims: &[&str], syms: &[&str]) -> R<AffineExpr> {
        self.enter()?;
        let r = (|| {
            let mut lhs = self.affine_term(dims, syms)?;
            loop {
                if self.eat(Tok::Plus) {
                    let rhs = self.affine_term(dims, syms)?;
                    lhs = AffineExpr::Add(Box::new(lhs), Box::new(rhs));
                } else if self.eat(Tok::Minus) {
                    let rhs = self.affine_term(dims, syms)?;
                    lhs = AffineExpr::Add(Box::new(lhs), Box::new(negate(rhs)));
                } else {
                    return Ok(lhs);
                }
            }
        })();
        self.leave();
        r
    }

    fn affine_term(&mut self, dims: &[&str], syms: &[&str]) -> R<AffineExpr> {
        let mut lhs = self.affine_unary(dims, syms)?;
        loop {
            let op = if self.eat(Tok::Star) {
                0
            } else if self.at(Tok::Ident) {
                match self.text(self.tok) {
                    "floordiv" => 1,
                    "ceildiv" => 2,
                    "mod" => 3,
                    _ => return Ok(lhs),
                }
            } else {
                return Ok(lhs);
            };
            if op != 0 {
                self.bump();
            }
            let rhs = Box::new(self.affine_unary(dims, syms)?);
            let l = Box::new(lhs);
            lhs = match op {
                0 => AffineExpr::Mul(l, rhs),
                1 => AffineExpr::FloorDiv(l, rhs),
                2 => AffineExpr::CeilDiv(l, rhs),
                _ => AffineExpr::Mod(l, rhs),
            };
        }
    }

    fn affine_unary(&mut self, dims: &[&str], syms: &[&str]) -> R<AffineExpr> {
        match self.tok.kind {
            Tok::Minus => {
                self.bump();
                self.enter()?;
                let e = self.affine_unary(dims, syms);
                self.leave();
                Ok(negate(e?))
            }
            Tok::Int => {
                let v = self.signed_i64()?;
                Ok(AffineExpr::Const(v))
            }
            Tok::LParen => {
                self.bump();
                let e = self.affine_expr(dims, syms)?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(e)
            }
            Tok::Ident => {
                let t = self.tok;
                let name = self.text(t);
                if let Some(i) = dims.iter().position(|d| *d == name) {
                    self.bump();
                    Ok(AffineExpr::Dim(i as u32))
                } else if let Some(i) = syms.iter().position(|s| *s == name) {
                    self.bump();
                    Ok(AffineExpr::Sym(i as u32))
                } else {
                    Err(self.error_at(
                        t.start,
                        format!(
                            "{}`{name}` is not a dimension or symbol of this affine map",
                            self.context()
                        ),
                    ))
                }
            }
            _ => Err(self.expected("an affine expression")),
        }
    }
}

/// `-e`, folding constants (`d0 - 1` is `d0 + -1`, as MLIR builds it); `i64::MIN` stays a product so nothing wraps.
fn negate(e: AffineExpr) -> AffineExpr {
    match e {
        AffineExpr::Const(c) if c != i64::MIN => AffineExpr::Const(-c),
        e => AffineExpr::Mul(Box::new(e), Box::new(AffineExpr::Const(-1))),
    }
}
