//! The custom syntax of each op family the simulator reads (hivm-mlir.md §7-§8).

use super::ast::*;
use super::lexer::{unescape, Tok};
use super::parser::{Parser, R};

impl<'a> Parser<'a> {
    /// After the op name: dispatch on the name to the family's syntax.
    pub(super) fn custom_op(&mut self, name: &str, attrs: &mut Vec<NamedAttr>) -> R<OpKind> {
        match name {
            "builtin.module" => self.module(attrs),
            "func.func" => self.func(attrs),
            "func.return" => {
                let values = self.values()?;
                if self.eat(Tok::Colon) {
                    self.type_list()?;
                }
                Ok(OpKind::Return { values })
            }
            "func.call" => {
                if !self.at(Tok::At) {
                    return Err(self.expected("the callee `@name`"));
                }
                let t = self.bump();
                let callee = self.text(t)[1..].to_string();
                let callee = if callee.starts_with('"') {
                    unescape(&callee)
                } else {
                    callee
                };
                let args = self.paren_values()?;
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                self.expect(Tok::Colon, "`:` and the callee's function type")?;
                self.parse_type()?;
                Ok(OpKind::Call { callee, args })
            }
            "memref.alloc" | "memref.alloca" => {
                let dynamic_sizes = self.paren_values()?;
                if self.at(Tok::LBracket) {
                    // Symbol operands of the layout map.
                    self.bump();
                    self.values()?;
                    self.expect(Tok::RBracket, "`]`")?;
                }
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                self.expect(Tok::Colon, "`:` and the allocated type")?;
                let ty = self.parse_type()?;
                Ok(OpKind::Alloc { dynamic_sizes, ty })
            }
            "hivm.hir.pointer_cast" => {
                let addrs = self.paren_values()?;
                let mut dynamic_sizes = Vec::new();
                if self.eat(Tok::LBracket) {
                    dynamic_sizes = self.values()?;
                    self.expect(Tok::RBracket, "`,` or `]`")?;
                }
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                self.expect(Tok::Colon, "`:` and the buffer type")?;
                let ty = self.parse_type()?;
                Ok(OpKind::PointerCast {
                    addrs,
                    dynamic_sizes,
                    ty,
                })
            }
            "memref_ext.alloc_workspace" => {
                let start = self.tok.start.offset;
                let mut uses = Vec::new();
                while !self.at(Tok::Colon) {
                    if self.at_op_boundary(false) {
                        return Err(self.expected("`:` and `from A to B`"));
                    }
                    match self.tok.kind {
                        Tok::LParen | Tok::LBracket | Tok::Less => {
                            self.skip_group_collect(&mut uses)?
                        }
                        Tok::LBrace => attrs.extend(self.parse_dict()?),
                        Tok::Error => return Err(self.lex_error()),
                        _ => {
                            self.bump();
                        }
                    }
                }
                let text = self.slice(start, self.prev_end).trim().to_string();
                self.bump();
                self.expect_ident("from")?;
                self.parse_type()?;
                self.expect_ident("to")?;
                let ty = self.parse_type()?;
                Ok(OpKind::AllocWorkspace { text, ty })
            }
            "scf.for" => self.scf_for(attrs),
            "scf.if" => {
                let cond = self.value()?;
                let mut result_types = Vec::new();
                if self.eat(Tok::Arrow) {
                    result_types = self.result_types()?;
                }
                let then = self.region()?;
                let els = if self.eat_ident("else") {
                    Some(self.region()?)
                } else {
                    None
                };
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                Ok(OpKind::If {
                    cond,
                    result_types,
                    then,
                    els,
                })
            }
            "scf.while" => {
                let inits = self.assignments()?;
                self.expect(Tok::Colon, "`:` and the loop's function type")?;
                self.parse_type()?;
                let before = self.region()?;
                self.expect_ident("do")?;
                let after = self.region()?;
                if self.eat_ident("attributes") {
                    attrs.extend(self.parse_dict()?);
                }
                Ok(OpKind::While {
                    inits,
                    before,
                    after,
                })
            }
            "scf.yield" | "scope.return" => {
                let values = self.values()?;
                if self.eat(Tok::Colon) {
                    self.type_list()?;
                }
                Ok(OpKind::Yield { values })
            }
            "scf.condition" => {
                self.expect(Tok::LParen, "`(`")?;
                let cond = self.value()?;
                self.expect(Tok::RParen, "`)`")?;
                let values = self.values()?;
                if self.eat(Tok::Colon) {
                    self.type_list()?;
                }
                Ok(OpKind::Condition { cond, values })
            }
            "scope.scope" => {
                if self.at(Tok::LBrace) && !self.brace_is_region() {
                    attrs.extend(self.parse_dict()?);
                }
                if self.eat(Tok::Colon) {
                    self.parse_type()?;
                }
                let body = self.region()?;
                if self.at(Tok::LBrace) && !self.brace_is_region() {
                    attrs.extend(self.parse_dict()?);
                }
                Ok(OpKind::Scope { body })
            }
            "annotation.mark" => {
                let target = self.value()?;
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                self.expect(Tok::Colon, "`:` and the marked value's type")?;
                self.parse_type()?;
                Ok(OpKind::Mark { target })
            }
            "hivm.hir.set_flag" | "hivm.hir.wait_flag" => {
                let open = self.expect(Tok::LBracket, "`[`")?;
                let src = self.pipe()?;
                self.expect(Tok::Comma, "`,`")?;
                let dst = self.pipe()?;
                self.expect(Tok::Comma, "`,`")?;
                let event = self.event("EVENT_ID")?;
                if !self.at(Tok::RBracket) {
                    return Err(self.expected_closing("`]`", open));
                }
                self.bump();
                self.trailing_keywords(attrs)?;
                Ok(if name == "hivm.hir.set_flag" {
                    OpKind::SetFlag { src, dst, event }
                } else {
                    OpKind::WaitFlag { src, dst, event }
                })
            }
            "hivm.hir.pipe_barrier" => {
                self.expect(Tok::LBracket, "`[`")?;
                let pipe = self.pipe()?;
                self.expect(Tok::RBracket, "`]`")?;
                self.trailing_keywords(attrs)?;
                Ok(OpKind::PipeBarrier { pipe })
            }
            "hivm.hir.sync_block_set" | "hivm.hir.sync_block_wait" => {
                self.expect(Tok::LBracket, "`[`")?;
                let core = self.enum_word()?;
                let mut pipes = Vec::new();
                while self.eat(Tok::Comma) {
                    pipes.push(self.pipe()?);
                }
                self.expect(Tok::RBracket, "`,` or `]`")?;
                let mut flag = None;
                while self.at(Tok::Ident) && self.peek2().kind == Tok::Equal {
                    let t = self.bump();
                    self.bump();
                    let key = self.text(t);
                    if key == "flag" {
                        flag = Some(self.event("")?);
                    } else {
                        let value = self.keyword_value()?;
                        attrs.push(NamedAttr {
                            name: key.to_string(),
                            value: Some(value),
                            pos: t.start,
                        });
                    }
                }
                if self.at(Tok::LBrace) && !self.brace_is_region() {
                    attrs.extend(self.parse_dict()?);
                }
                let Some(flag) = flag else {
                    return Err(self.expected("`flag = N`"));
                };
                Ok(if name == "hivm.hir.sync_block_set" {
                    OpKind::SyncBlockSet { core, pipes, flag }
                } else {
                    OpKind::SyncBlockWait { core, pipes, flag }
                })
            }
            "hivm.hir.sync_block" => {
                let start = self.tok.start.offset;
                self.expect(Tok::LBracket, "`[`")?;
                self.restore_to_bracket()?;
                self.trailing_keywords(attrs)?;
                let text = self.slice(start, self.prev_end).to_string();
                Ok(OpKind::SyncBlock { text })
            }
            "memref.load" => {
                let memref = self.value()?;
                let indices = self.bracket_values()?;
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                self.expect(Tok::Colon, "`:` and the memref type")?;
                self.parse_type()?;
                Ok(OpKind::MemLoad { memref, indices })
            }
            "memref.store" => {
                let value = self.value()?;
                self.expect(Tok::Comma, "`,`")?;
                let memref = self.value()?;
                let indices = self.bracket_values()?;
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                self.expect(Tok::Colon, "`:` and the memref type")?;
                self.parse_type()?;
                Ok(OpKind::MemStore {
                    value,
                    memref,
                    indices,
                })
            }
            "arith.constant" => {
                if self.at(Tok::LBrace) {
                    attrs.extend(self.parse_dict()?);
                }
                let value = self.parse_attr(false)?;
                let ty = if self.eat(Tok::Colon) {
                    self.parse_type()?
                } else {
                    match &value {
                        Attr::Int { ty: Some(t), .. } => (**t).clone(),
                        _ => return Err(self.expected("`:` and the constant's type")),
                    }
                };
                let value = match value {
                    Attr::Int { value, .. } => Attr::Int {
                        value,
                        ty: Some(Box::new(ty.clone())),
                    },
                    Attr::Float { text, .. } => Attr::Float {
                        text,
                        ty: Some(Box::new(ty.clone())),
                    },
                    v => v,
                };
                Ok(OpKind::Constant { value, ty })
            }
            "affine.apply" | "affine.min" | "affine.max" => {
                let map = self.parse_attr(false)?;
                let dim_vals = self.paren_values()?;
                let dims = dim_vals.len() as u32;
                let mut operands = dim_vals;
                if self.eat(Tok::LBracket) {
                    operands.extend(self.values()?);
                    self.expect(Tok::RBracket, "`,` or `]`")?;
                }
                if self.at(Tok::LBrace) && !self.brace_is_region() {
                    attrs.extend(self.parse_dict()?);
                }
                Ok(OpKind::Scalar {
                    operands,
                    predicate: None,
                    map: Some(map),
                    dims,
                    types: vec![Type::Index],
                })
            }
            "memref.subview" => {
                let source = self.value()?;
                let offsets = self.fold_list()?;
                let sizes = self.fold_list()?;
                let strides = self.fold_list()?;
                self.view_tail(
                    attrs,
                    source,
                    ViewKind::Subview {
                        offsets,
                        sizes,
                        strides,
                    },
                )
            }
            "memref.view" => {
                let source = self.value()?;
                self.expect(Tok::LBracket, "`[` and the byte shift")?;
                let byte_shift = self.value()?;
                self.expect(Tok::RBracket, "`]`")?;
                let sizes = self.bracket_values()?;
                self.view_tail(attrs, source, ViewKind::View { byte_shift, sizes })
            }
            "memref.reinterpret_cast" => {
                let source = self.value()?;
                self.expect_ident("to")?;
                self.expect_ident("offset")?;
                self.expect(Tok::Colon, "`:`")?;
                let offset = self.fold_list()?;
                self.expect(Tok::Comma, "`,`")?;
                self.expect_ident("sizes")?;
                self.expect(Tok::Colon, "`:`")?;
                let sizes = self.fold_list()?;
                self.expect(Tok::Comma, "`,`")?;
                self.expect_ident("strides")?;
                self.expect(Tok::Colon, "`:`")?;
                let strides = self.fold_list()?;
                self.view_tail(
                    attrs,
                    source,
                    ViewKind::ReinterpretCast {
                        offset,
                        sizes,
                        strides,
                    },
                )
            }
            "memref.collapse_shape" | "memref.expand_shape" => {
                let source = self.value()?;
                let reassociation = self.reassociation()?;
                let kind = if name == "memref.collapse_shape" {
                    ViewKind::CollapseShape { reassociation }
                } else {
                    let output_shape = if self.eat_ident("output_shape") {
                        self.fold_list()?
                    } else {
                        Vec::new()
                    };
                    ViewKind::ExpandShape {
                        reassociation,
                        output_shape,
                    }
                };
                self.view_tail(attrs, source, kind)
            }
            "memref.cast" | "memref.memory_space_cast" | "hivm.hir.bitcast" | "memref.reshape" => {
                let source = self.value()?;
                if self.at(Tok::LParen) {
                    // memref.reshape's shape operand.
                    self.paren_values()?;
                }
                self.view_tail(attrs, source, ViewKind::Cast)
            }
            _ if name.starts_with("hivm.hir.") => {
                let save = self.save();
                match self.dps(attrs)? {
                    Some(k) => Ok(k),
                    None => {
                        self.restore(save);
                        self.opaque_rest(attrs)
                    }
                }
            }
            _ if is_scalar(name) => {
                let predicate =
                    if matches!(name, "arith.cmpi" | "arith.cmpf") && self.at(Tok::Ident) {
                        let t = self.bump();
                        self.eat(Tok::Comma);
                        Some(self.text(t).to_string())
                    } else {
                        None
                    };
                match self.opaque_rest(attrs)? {
                    OpKind::Opaque { operands, types } => Ok(OpKind::Scalar {
                        operands,
                        predicate,
                        map: None,
                        dims: 0,
                        types,
                    }),
                    k => Ok(k),
                }
            }
            _ => self.opaque_rest(attrs),
        }
    }

    /// `module [@name] [attributes {...}] { ... }`.
    fn module(&mut self, attrs: &mut Vec<NamedAttr>) -> R<OpKind> {
        let mut name = None;
        if self.at(Tok::At) {
            let t = self.bump();
            name = Some(self.text(t)[1..].to_string());
        }
        if self.eat_ident("attributes") {
            attrs.extend(self.parse_dict()?);
        }
        let body = self.region()?;
        Ok(OpKind::Module { name, body })
    }

    /// `func.func [private] @name(%a: T {attrs}, ...) [-> R] [attributes {...}] [{ body }]`.
    fn func(&mut self, attrs: &mut Vec<NamedAttr>) -> R<OpKind> {
        let mut private = false;
        while self.at(Tok::Ident) {
            match self.text(self.tok) {
                "private" => private = true,
                "public" | "nested" => {}
                _ => return Err(self.expected("the function name `@name`")),
            }
            self.bump();
        }
        if !self.at(Tok::At) {
            return Err(self.expected("the function name `@name`"));
        }
        let t = self.bump();
        let raw = &self.text(t)[1..];
        let name = if raw.starts_with('"') {
            unescape(raw)
        } else {
            raw.to_string()
        };
        let open = self.expect(Tok::LParen, "`(`")?;
        let mut args = Vec::new();
        if !self.eat(Tok::RParen) {
            loop {
                let value = if self.at(Tok::Value) {
                    let v = self.value()?;
                    self.expect(Tok::Colon, "`:` and the argument's type")?;
                    v
                } else {
                    // A declaration may list bare types.
                    Value {
                        name: String::new(),
                        index: 0,
                        pos: self.tok.start,
                    }
                };
                let ty = self.parse_type()?;
                let arg_attrs = if self.at(Tok::LBrace) {
                    self.parse_dict()?
                } else {
                    Vec::new()
                };
                args.push(FuncArg {
                    value,
                    ty,
                    attrs: arg_attrs,
                });
                if self.eat(Tok::RParen) {
                    break;
                }
                if !self.at(Tok::Comma) {
                    return Err(self.expected_closing("`,` or `)`", open));
                }
                self.bump();
            }
        }
        let mut results = Vec::new();
        if self.eat(Tok::Arrow) {
            results = self.result_types()?;
        }
        if self.eat_ident("attributes") {
            attrs.extend(self.parse_dict()?);
        }
        let body = if self.at(Tok::LBrace) {
            self.region()?
        } else {
            Region::default()
        };
        Ok(OpKind::Func {
            name,
            private,
            args,
            results,
            body,
        })
    }

    /// `scf.for %iv = %lb to %ub step %s [iter_args(...)] [-> (T)] [: i32] { ... }`.
    fn scf_for(&mut self, attrs: &mut Vec<NamedAttr>) -> R<OpKind> {
        self.eat_ident("unsigned");
        let iv = self.value()?;
        self.expect(Tok::Equal, "`=`")?;
        let lower = self.value()?;
        self.expect_ident("to")?;
        let upper = self.value()?;
        self.expect_ident("step")?;
        let step = self.value()?;
        let mut iter_args = Vec::new();
        if self.eat_ident("iter_args") {
            iter_args = self.assignments()?;
        }
        let mut result_types = Vec::new();
        if self.eat(Tok::Arrow) {
            result_types = self.result_types()?;
        }
        if self.eat(Tok::Colon) {
            self.parse_type()?;
        }
        let body = self.region()?;
        if self.at(Tok::LBrace) && !self.brace_is_region() {
            attrs.extend(self.parse_dict()?);
        }
        Ok(OpKind::For {
            iv,
            lower,
            upper,
            step,
            iter_args,
            result_types,
            body,
        })
    }

    /// `(%a = %x, %b = %y)`.
    fn assignments(&mut self) -> R<Vec<(Value, Value)>> {
        let open = self.expect(Tok::LParen, "`(`")?;
        let mut v = Vec::new();
        if !self.eat(Tok::RParen) {
            loop {
                let a = self.value()?;
                self.expect(Tok::Equal, "`=`")?;
                let x = self.value()?;
                v.push((a, x));
                if self.eat(Tok::RParen) {
                    break;
                }
                if !self.at(Tok::Comma) {
                    return Err(self.expected_closing("`,` or `)`", open));
                }
                self.bump();
            }
        }
        Ok(v)
    }

    /// `[%i, %j]` (possibly empty).
    fn bracket_values(&mut self) -> R<Vec<Value>> {
        let open = self.expect(Tok::LBracket, "`[`")?;
        let v = self.values()?;
        if !self.at(Tok::RBracket) {
            return Err(self.expected_closing(
                if v.is_empty() {
                    "a value or `]`"
                } else {
                    "`,` or `]`"
                },
                open,
            ));
        }
        self.bump();
        Ok(v)
    }

    /// `[%i, 0, -2]`: values and constants mixed.
    fn fold_list(&mut self) -> R<Vec<OpFold>> {
        let open = self.expect(Tok::LBracket, "`[`")?;
        let mut v = Vec::new();
        if !self.eat(Tok::RBracket) {
            loop {
                if self.at(Tok::Value) {
                    v.push(OpFold::Value(self.value()?));
                } else if self.at(Tok::Int) || self.at(Tok::Minus) {
                    v.push(OpFold::Const(self.signed_i64()?));
                } else {
                    return Err(self.expected("a value or an integer"));
                }
                if self.eat(Tok::RBracket) {
                    break;
                }
                if !self.at(Tok::Comma) {
                    return Err(self.expected_closing("`,` or `]`", open));
                }
                self.bump();
            }
        }
        Ok(v)
    }

    /// `[[0, 1], [2]]`.
    fn reassociation(&mut self) -> R<Vec<Vec<u32>>> {
        self.expect(Tok::LBracket, "`[`")?;
        let mut groups = Vec::new();
        if !self.eat(Tok::RBracket) {
            loop {
                self.expect(Tok::LBracket, "`[`")?;
                let mut g = Vec::new();
                if !self.eat(Tok::RBracket) {
                    loop {
                        let t = self.expect(Tok::Int, "a dimension index")?;
                        let text = self.text(t);
                        g.push(text.parse::<u32>().map_err(|_| {
                            self.error_at(
                                t.start,
                                format!("dimension index `{text}` is out of range"),
                            )
                        })?);
                        if self.eat(Tok::RBracket) {
                            break;
                        }
                        self.expect(Tok::Comma, "`,` or `]`")?;
                    }
                }
                groups.push(g);
                if self.eat(Tok::RBracket) {
                    break;
                }
                self.expect(Tok::Comma, "`,` or `]`")?;
            }
        }
        Ok(groups)
    }

    /// `[{attrs}] : A (to|into|->) B` or `: (A, S) -> B`, ending a view op.
    fn view_tail(
        &mut self,
        attrs: &mut Vec<NamedAttr>,
        source: Value,
        kind: ViewKind,
    ) -> R<OpKind> {
        if self.at(Tok::LBrace) {
            attrs.extend(self.parse_dict()?);
        }
        self.expect(Tok::Colon, "`:` and the view's types")?;
        let first = self.parse_type()?;
        let (source_ty, ty) = if let Type::Function { inputs, results } = first {
            (inputs.into_iter().next(), results.into_iter().next())
        } else if self.eat_ident("to") || self.eat_ident("into") || self.eat(Tok::Arrow) {
            (Some(first), Some(self.parse_type()?))
        } else {
            (None, Some(first))
        };
        let Some(ty) = ty else {
            return Err(self.expected("the result type"));
        };
        Ok(OpKind::View {
            kind,
            source,
            source_ty,
            ty,
        })
    }

    /// `<PIPE_MTE2>` or `#hivm.pipe<PIPE_MTE2>`: `MTE2`.
    fn pipe(&mut self) -> R<String> {
        let w = self.enum_word()?;
        Ok(w.strip_prefix("PIPE_").unwrap_or(&w).to_string())
    }

    /// `<WORD>` or `#dialect.kind<WORD>`: `WORD`.
    fn enum_word(&mut self) -> R<String> {
        match self.tok.kind {
            Tok::Less => Ok(self.balanced_angle()?.trim().to_string()),
            Tok::Hash => {
                self.bump();
                if !self.at(Tok::Less) {
                    return Err(self.expected("`<`"));
                }
                Ok(self.balanced_angle()?.trim().to_string())
            }
            _ => Err(self.expected("an enum like `<PIPE_MTE2>`")),
        }
    }

    /// `<EVENT_ID3>`, `#hivm.event<EVENT_ID3>`, `3` or `%v`.
    fn event(&mut self, prefix: &str) -> R<Event> {
        match self.tok.kind {
            Tok::Value => Ok(Event::Value(self.value()?)),
            Tok::Int => {
                let t = self.tok;
                let v = self.signed_int()?;
                u32::try_from(v)
                    .map(Event::Id)
                    .map_err(|_| self.error_at(t.start, format!("event {v} is out of range")))
            }
            Tok::Less | Tok::Hash => {
                let pos = self.tok.start;
                let w = self.enum_word()?;
                let digits = w.strip_prefix(prefix).unwrap_or(&w);
                digits.parse::<u32>().map(Event::Id).map_err(|_| {
                    let mut e =
                        self.error_at(pos, format!("{}`{w}` is not an event id", self.context()));
                    e.hint = Some("write `<EVENT_ID0>` ... `<EVENT_ID7>` or an i64 value".into());
                    e
                })
            }
            _ => Err(self.expected(if prefix.is_empty() {
                "a flag (`N` or `%value`)"
            } else {
                "an event (`<EVENT_IDn>` or `%value`)"
            })),
        }
    }

    /// The value of `key = value`: an attribute, or an SSA value kept as its text.
    fn keyword_value(&mut self) -> R<Attr> {
        if self.at(Tok::Value) {
            let t = self.tok;
            self.value()?;
            return Ok(Attr::Other(self.text(t).to_string()));
        }
        self.parse_attr(true)
    }

    /// `key = value ...` and a trailing `{attrs}` after custom syntax.
    fn trailing_keywords(&mut self, attrs: &mut Vec<NamedAttr>) -> R<()> {
        loop {
            if self.at(Tok::Ident) && self.peek2().kind == Tok::Equal {
                let t = self.bump();
                self.bump();
                let value = self.keyword_value()?;
                attrs.push(NamedAttr {
                    name: self.text(t).to_string(),
                    value: Some(value),
                    pos: t.start,
                });
            } else if self.at(Tok::LBrace) && !self.brace_is_region() {
                attrs.extend(self.parse_dict()?);
            } else {
                return Ok(());
            }
        }
    }

    /// After `[`: skip to the matching `]` (sync_block keeps its operands as text).
    fn restore_to_bracket(&mut self) -> R<()> {
        let mut depth = 1u32;
        loop {
            match self.tok.kind {
                Tok::LBracket => depth += 1,
                Tok::RBracket => {
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        return Ok(());
                    }
                }
                Tok::Eof => return Err(self.expected("`]`")),
                Tok::Error => return Err(self.lex_error()),
                _ => {}
            }
            if depth > super::parser::MAX_DEPTH {
                return Err(self.too_deep());
            }
            self.bump();
        }
    }

    /// A DPS op after its name, or `None` when there is no `ins(`/`outs(` (the caller then
    /// reads the op opaquely).
    fn dps(&mut self, attrs: &mut Vec<NamedAttr>) -> R<Option<OpKind>> {
        let mut modifier = None;
        let mut lead = Vec::new();
        loop {
            let kind = self.tok.kind;
            match kind {
                Tok::Less if modifier.is_none() => {
                    modifier = Some(self.balanced_angle()?.trim().to_string());
                }
                Tok::Str if modifier.is_none() => {
                    let t = self.bump();
                    modifier = Some(unescape(self.text(t)));
                }
                Tok::LBrace if !self.brace_is_region() => lead.extend(self.parse_dict()?),
                _ => break,
            }
        }
        let group_start = |p: &mut Self| {
            (p.at_ident("ins") || p.at_ident("outs")) && p.peek2().kind == Tok::LParen
        };
        if !group_start(self) {
            return Ok(None);
        }
        attrs.extend(lead);
        let mut ins = Vec::new();
        let mut outs = Vec::new();
        let mut groups = Vec::new();
        let mut results = Vec::new();
        loop {
            if self.at(Tok::Ident) && self.peek2().kind == Tok::LParen {
                let t = self.bump();
                let key = self.text(t);
                let list = self.typed_group(key)?;
                match key {
                    "ins" => ins.extend(list),
                    "outs" => outs.extend(list),
                    _ => groups.push((key.to_string(), list)),
                }
            } else if self.at(Tok::Ident) && self.peek2().kind == Tok::Equal {
                let t = self.bump();
                self.bump();
                let key = self.text(t).to_string();
                if self.at(Tok::Value) && self.peek2().kind == Tok::Colon {
                    // `pad_value = %cst : f16`: a typed operand, kept with the groups.
                    let value = self.value()?;
                    self.bump();
                    let ty = self.parse_type()?;
                    groups.push((key, vec![Typed { value, ty }]));
                    continue;
                }
                let value = self.keyword_value()?;
                attrs.push(NamedAttr {
                    name: key,
                    value: Some(value),
                    pos: t.start,
                });
            } else if self.at(Tok::LBrace) && !self.brace_is_region() {
                attrs.extend(self.parse_dict()?);
            } else if self.eat(Tok::Arrow) {
                results.extend(self.type_list_or_parens()?);
            } else {
                break;
            }
        }
        Ok(Some(OpKind::Dps {
            modifier,
            ins,
            outs,
            groups,
            results,
        }))
    }

    fn type_list_or_parens(&mut self) -> R<Vec<Type>> {
        if self.at(Tok::LParen) {
            self.paren_types()
        } else {
            self.type_list()
        }
    }

    /// `(%a, %b : T, U)` of a DPS group (`ins`, `outs`, `temp_buffer`, ...).
    fn typed_group(&mut self, key: &str) -> R<Vec<Typed>> {
        let open = self.expect(Tok::LParen, "`(`")?;
        let values = self.values()?;
        if values.is_empty() {
            if !self.at(Tok::RParen) {
                return Err(self.expected_closing("a value or `)`", open));
            }
            self.bump();
            return Ok(Vec::new());
        }
        if !self.at(Tok::Colon) {
            let mut e = self.expected(if self.at(Tok::RParen) {
                "`:`"
            } else {
                "`,` or `:`"
            });
            e.hint = Some(format!(
                "write `{key}(%a : type)`: each operand of `{key}` needs its type"
            ));
            return Err(e);
        }
        self.bump();
        let types_at = self.tok.start;
        let types = self.type_list()?;
        if !self.at(Tok::RParen) {
            return Err(self.expected_closing("`,` or `)`", open));
        }
        self.bump();
        if types.len() != values.len() {
            return Err(self.error_at(
                types_at,
                format!(
                    "{}`{key}` has {} value{} but {} type{}",
                    self.context(),
                    values.len(),
                    if values.len() == 1 { "" } else { "s" },
                    types.len(),
                    if types.len() == 1 { "" } else { "s" }
                ),
            ));
        }
        Ok(values
            .into_iter()
            .zip(types)
            .map(|(value, ty)| Typed { value, ty })
            .collect())
    }
}

fn is_scalar(name: &str) -> bool {
    name.starts_with("arith.") || name.starts_with("math.") || name.starts_with("index.")
}
