//! The expression language of programs: integers, params, loop variables, `+ - * / %` (floor),
//! `min(a,b)`, `max(a,b)`, comparisons and `&& || !` (0 or 1), parentheses.
//!
//! Params are folded to constants when a program is loaded, so at run time an expression only
//! reads loop variables. Most expressions fold to a [`Expr::Const`] and cost nothing to evaluate.

use crate::ids::VarId;
use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Expr {
    Const(i64),
    Var(VarId),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne => 3,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 6,
            BinOp::Min | BinOp::Max => 9,
        }
    }

    /// Applies the operator; `None` on division by zero or overflow.
    #[inline]
    pub fn apply(self, a: i64, b: i64) -> Option<i64> {
        Some(match self {
            BinOp::Add => a.checked_add(b)?,
            BinOp::Sub => a.checked_sub(b)?,
            BinOp::Mul => a.checked_mul(b)?,
            BinOp::Div => {
                if b == 0 {
                    return None;
                }
                let q = a.checked_div(b)?;
                // floor, not truncation: round down when the signs differ and it is inexact
                if a % b != 0 && ((a < 0) != (b < 0)) {
                    q - 1
                } else {
                    q
                }
            }
            BinOp::Rem => {
                if b == 0 {
                    return None;
                }
                let q = BinOp::Div.apply(a, b)?;
                a.checked_sub(q.checked_mul(b)?)?
            }
            BinOp::Min => a.min(b),
            BinOp::Max => a.max(b),
            BinOp::Lt => (a < b) as i64,
            BinOp::Le => (a <= b) as i64,
            BinOp::Gt => (a > b) as i64,
            BinOp::Ge => (a >= b) as i64,
            BinOp::Eq => (a == b) as i64,
            BinOp::Ne => (a != b) as i64,
            BinOp::And => (a != 0 && b != 0) as i64,
            BinOp::Or => (a != 0 || b != 0) as i64,
        })
    }
}

/// Why an expression could not be evaluated.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EvalError {
    #[error("division by zero")]
    DivisionByZero,
    #[error("integer overflow")]
    Overflow,
}

impl Expr {
    /// The value if the expression does not depend on loop variables.
    pub fn as_const(&self) -> Option<i64> {
        match self {
            Expr::Const(v) => Some(*v),
            _ => None,
        }
    }

    /// An operand of a node: a constant or a variable read in place (most operands are one),
    /// anything else evaluated, so evaluation recurses only into inner nodes (the same order
    /// and the same errors: both sides are always evaluated, left first).
    #[inline(always)]
    fn eval_operand(&self, vars: &[i64]) -> Result<i64, EvalError> {
        match self {
            Expr::Const(v) => Ok(*v),
            Expr::Var(v) => Ok(vars[v.index()]),
            e => e.eval(vars),
        }
    }

    /// Evaluates with the current loop variable values, indexed by [`VarId`].
    #[inline]
    pub fn eval(&self, vars: &[i64]) -> Result<i64, EvalError> {
        match self {
            Expr::Const(v) => Ok(*v),
            Expr::Var(v) => Ok(vars[v.index()]),
            Expr::Unary(op, a) => {
                let a = a.eval_operand(vars)?;
                match op {
                    UnOp::Neg => a.checked_neg().ok_or(EvalError::Overflow),
                    UnOp::Not => Ok((a == 0) as i64),
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (a.eval_operand(vars)?, b.eval_operand(vars)?);
                op.apply(a, b)
                    .ok_or(if b == 0 && matches!(op, BinOp::Div | BinOp::Rem) {
                        EvalError::DivisionByZero
                    } else {
                        EvalError::Overflow
                    })
            }
        }
    }

    /// An inclusive range that holds every value the expression can take when each variable
    /// `v` lies in `ranges[v]`; `None` when a variable's range is unknown or the bound overflows.
    pub fn range(&self, ranges: &[Option<(i64, i64)>]) -> Option<(i64, i64)> {
        self.range_in(ranges, false)
    }

    /// [`Expr::range`], and `None` unless every node evaluates without overflow or division by
    /// zero for every value in `ranges` (`!` checks its operand too): what lets a compiled
    /// evaluation drop its run-time checks.
    pub fn checked_range(&self, ranges: &[Option<(i64, i64)>]) -> Option<(i64, i64)> {
        self.range_in(ranges, true)
    }

    fn range_in(&self, ranges: &[Option<(i64, i64)>], strict: bool) -> Option<(i64, i64)> {
        match self {
            Expr::Const(v) => Some((*v, *v)),
            Expr::Var(v) => ranges.get(v.index()).copied().flatten(),
            Expr::Unary(UnOp::Neg, a) => {
                let (lo, hi) = a.range_in(ranges, strict)?;
                Some((hi.checked_neg()?, lo.checked_neg()?))
            }
            Expr::Unary(UnOp::Not, a) => {
                if strict {
                    a.range_in(ranges, strict)?;
                }
                Some((0, 1))
            }
            Expr::Binary(op, a, b) => {
                let (al, ah) = a.range_in(ranges, strict)?;
                let (bl, bh) = b.range_in(ranges, strict)?;
                match op {
                    BinOp::Add => Some((al.checked_add(bl)?, ah.checked_add(bh)?)),
                    BinOp::Sub => Some((al.checked_sub(bh)?, ah.checked_sub(bl)?)),
                    BinOp::Mul | BinOp::Div => {
                        if *op == BinOp::Div && bl <= 0 && bh >= 0 {
                            return None;
                        }
                        let c = [
                            op.apply(al, bl)?,
                            op.apply(al, bh)?,
                            op.apply(ah, bl)?,
                            op.apply(ah, bh)?,
                        ];
                        Some((*c.iter().min()?, *c.iter().max()?))
                    }
                    BinOp::Rem => {
                        if bl > 0 {
                            if al >= 0 && ah < bl {
                                Some((al, ah))
                            } else {
                                Some((0, bh - 1))
                            }
                        } else {
                            None
                        }
                    }
                    BinOp::Min => Some((al.min(bl), ah.min(bh))),
                    BinOp::Max => Some((al.max(bl), ah.max(bh))),
                    _ => Some((0, 1)),
                }
            }
        }
    }

    /// The expression as `c0 + Σ cᵢ·vᵢ` when it is linear in the loop variables.
    pub fn linear(&self) -> Option<(i64, BTreeMap<VarId, i64>)> {
        match self {
            Expr::Const(c) => Some((*c, BTreeMap::new())),
            Expr::Var(v) => Some((0, BTreeMap::from([(*v, 1)]))),
            Expr::Unary(UnOp::Neg, a) => scale(a.linear()?, -1),
            Expr::Unary(UnOp::Not, _) => None,
            Expr::Binary(op, a, b) => match op {
                BinOp::Add | BinOp::Sub => {
                    let (ca, mut ta) = a.linear()?;
                    let sign = if *op == BinOp::Sub { -1 } else { 1 };
                    let (cb, tb) = scale(b.linear()?, sign)?;
                    for (v, c) in tb {
                        let t = ta.entry(v).or_insert(0);
                        *t = t.checked_add(c)?;
                    }
                    ta.retain(|_, c| *c != 0);
                    Some((ca.checked_add(cb)?, ta))
                }
                BinOp::Mul => match (a.as_const(), b.as_const()) {
                    (Some(k), _) => scale(b.linear()?, k),
                    (_, Some(k)) => scale(a.linear()?, k),
                    _ => None,
                },
                _ => None,
            },
        }
    }

    /// Like [`Expr::range`], but exact for linear expressions (each variable counted once,
    /// so `t*4 + 4 - t*4` is 4, not a wide interval). What every static bounds question asks:
    /// the loader's checks, the footprint of an operand over a loop, a loop's trip range.
    pub fn bounds(&self, ranges: &[Option<(i64, i64)>]) -> Option<(i64, i64)> {
        if let Some((c, terms)) = self.linear() {
            let (mut lo, mut hi) = (c, c);
            for (v, k) in terms {
                let (a, b) = ranges.get(v.index()).copied().flatten()?;
                let (x, y) = (a.checked_mul(k)?, b.checked_mul(k)?);
                lo = lo.checked_add(x.min(y))?;
                hi = hi.checked_add(x.max(y))?;
            }
            return Some((lo, hi));
        }
        self.range(ranges)
    }

    /// `end - start` when it does not depend on the loop variables.
    pub fn const_difference(end: &Expr, start: &Expr) -> Option<i64> {
        if let (Some(a), Some(b)) = (end.as_const(), start.as_const()) {
            return a.checked_sub(b);
        }
        let (ce, te) = end.linear()?;
        let (cs, ts) = start.linear()?;
        (te == ts).then(|| ce.checked_sub(cs)).flatten()
    }

    /// The values a `for` variable takes when every enclosing variable `v` lies in
    /// `ranges[v]`: [from, last], where `last` is the largest from + k·step below `to` when
    /// from and step are constant; `None` when unbounded or empty. Linear bounds count each
    /// variable once. Here, not in the loader, because the loader's checks and the footprint
    /// both ask it, and the footprint must not import the loader.
    pub fn for_range(
        from: &Expr,
        to: &Expr,
        step: &Expr,
        ranges: &[Option<(i64, i64)>],
    ) -> Option<(i64, i64)> {
        let (flo, _) = from.bounds(ranges)?;
        let (_, thi) = to.bounds(ranges)?;
        let last = thi.checked_sub(1)?;
        let hi = match (from.as_const(), step.as_const()) {
            (Some(f), Some(s)) if s > 0 && last >= f => {
                f.checked_add(last.checked_sub(f)? / s * s)?
            }
            _ => last,
        };
        (hi >= flo).then_some((flo, hi))
    }

    /// Variables the expression reads.
    pub fn vars(&self, out: &mut Vec<VarId>) {
        match self {
            Expr::Const(_) => {}
            Expr::Var(v) => out.push(*v),
            Expr::Unary(_, a) => a.vars(out),
            Expr::Binary(_, a, b) => {
                a.vars(out);
                b.vars(out);
            }
        }
    }

    /// Builds `op(a, b)`, folding constants.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Result<Expr, EvalError> {
        if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
            return op.apply(x, y).map(Expr::Const).ok_or(
                if y == 0 && matches!(op, BinOp::Div | BinOp::Rem) {
                    EvalError::DivisionByZero
                } else {
                    EvalError::Overflow
                },
            );
        }
        Ok(Expr::Binary(op, Box::new(a), Box::new(b)))
    }

    /// Writes the expression back as source text, naming variables with `name`.
    pub fn display<'a>(&'a self, name: &'a dyn Fn(VarId) -> String) -> impl fmt::Display + 'a {
        struct D<'a>(&'a Expr, &'a dyn Fn(VarId) -> String);
        impl fmt::Display for D<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write_expr(f, self.0, self.1, 0)
            }
        }
        D(self, name)
    }
}

fn write_expr(
    f: &mut fmt::Formatter<'_>,
    e: &Expr,
    name: &dyn Fn(VarId) -> String,
    parent: u8,
) -> fmt::Result {
    match e {
        Expr::Const(v) => write!(f, "{v}"),
        Expr::Var(v) => f.write_str(&name(*v)),
        Expr::Unary(op, a) => {
            f.write_str(if *op == UnOp::Neg { "-" } else { "!" })?;
            write_expr(f, a, name, 10)
        }
        Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
            write!(f, "{}(", op.symbol())?;
            write_expr(f, a, name, 0)?;
            f.write_str(", ")?;
            write_expr(f, b, name, 0)?;
            f.write_str(")")
        }
        Expr::Binary(op, a, b) => {
            let p = op.precedence();
            if p < parent {
                f.write_str("(")?;
            }
            write_expr(f, a, name, p)?;
            write!(f, " {} ", op.symbol())?;
            // left-associative: the right operand binds tighter
            write_expr(f, b, name, p + 1)?;
            if p < parent {
                f.write_str(")")?;
            }
            Ok(())
        }
    }
}

/// Why a piece of source text is not an expression.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ParseError {
    /// Malformed text; `at` is the byte offset in the source.
    Syntax { message: String, at: usize },
    /// A name that is neither a param nor a loop variable in scope.
    UnknownName { name: String, at: usize },
    /// A constant sub-expression that cannot be evaluated.
    Eval { error: EvalError, at: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Syntax { message, at } => write!(f, "{message} at character {}", at + 1),
            ParseError::UnknownName { name, .. } => write!(f, "unknown name \"{name}\""),
            ParseError::Eval { error, .. } => write!(f, "{error}"),
        }
    }
}

/// Parses `src` completely. `resolve` maps a name to its value (a param's constant or a loop
/// variable) or `None` when the name is unknown.
pub fn parse(src: &str, resolve: &mut dyn FnMut(&str) -> Option<Expr>) -> Result<Expr, ParseError> {
    let (e, used) = parse_prefix(src, resolve)?;
    if used < src.len() {
        return Err(ParseError::Syntax {
            message: format!("unexpected \"{}\"", &src[used..]),
            at: used,
        });
    }
    Ok(e)
}

/// Parses the longest expression at the start of `src`, returning it and the bytes consumed.
/// Used inside operands (`x[t * 2, 0:n]`), where `,` `:` `]` end an expression.
pub fn parse_prefix(
    src: &str,
    resolve: &mut dyn FnMut(&str) -> Option<Expr>,
) -> Result<(Expr, usize), ParseError> {
    let mut p = Parser {
        src,
        pos: 0,
        resolve,
    };
    let e = p.expr(0)?;
    p.skip_ws();
    Ok((e, p.pos))
}

struct Parser<'a, 'r> {
    src: &'a str,
    pos: usize,
    resolve: &'r mut dyn FnMut(&str) -> Option<Expr>,
}

impl Parser<'_, '_> {
    fn syntax(&self, message: String) -> ParseError {
        ParseError::Syntax {
            message,
            at: self.pos,
        }
    }

    fn skip_ws(&mut self) {
        while self.src[self.pos..].starts_with([' ', '\t']) {
            self.pos += 1;
        }
    }

    fn peek_binop(&mut self) -> Option<(BinOp, usize)> {
        self.skip_ws();
        let rest = &self.src[self.pos..];
        const OPS: [(&str, BinOp); 13] = [
            ("&&", BinOp::And),
            ("||", BinOp::Or),
            ("<=", BinOp::Le),
            (">=", BinOp::Ge),
            ("==", BinOp::Eq),
            ("!=", BinOp::Ne),
            ("<", BinOp::Lt),
            (">", BinOp::Gt),
            ("+", BinOp::Add),
            ("-", BinOp::Sub),
            ("*", BinOp::Mul),
            ("/", BinOp::Div),
            ("%", BinOp::Rem),
        ];
        OPS.iter()
            .find(|(s, _)| rest.starts_with(s))
            .map(|(s, op)| (*op, s.len()))
    }

    fn expr(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        while let Some((op, len)) = self.peek_binop() {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            let at = self.pos;
            self.pos += len;
            let rhs = self.expr(prec + 1)?;
            lhs = Expr::binary(op, lhs, rhs).map_err(|error| ParseError::Eval { error, at })?;
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let rest = &self.src[self.pos..];
        if rest.starts_with('-') || (rest.starts_with('!') && !rest.starts_with("!=")) {
            let neg = rest.starts_with('-');
            self.pos += 1;
            let e = self.unary()?;
            return Ok(match (neg, e.as_const()) {
                (true, Some(v)) => Expr::Const(v.checked_neg().ok_or(ParseError::Eval {
                    error: EvalError::Overflow,
                    at: self.pos,
                })?),
                (false, Some(v)) => Expr::Const((v == 0) as i64),
                (true, None) => Expr::Unary(UnOp::Neg, Box::new(e)),
                (false, None) => Expr::Unary(UnOp::Not, Box::new(e)),
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let rest = &self.src[self.pos..];
        let Some(c) = rest.chars().next() else {
            return Err(self.syntax("expected an expression".into()));
        };
        if c == '(' {
            self.pos += 1;
            let e = self.expr(0)?;
            self.skip_ws();
            if !self.src[self.pos..].starts_with(')') {
                return Err(self.syntax("expected \")\"".into()));
            }
            self.pos += 1;
            return Ok(e);
        }
        if c.is_ascii_digit() {
            let len = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let v: i64 = rest[..len]
                .parse()
                .map_err(|_| self.syntax(format!("integer \"{}\" is too large", &rest[..len])))?;
            self.pos += len;
            return Ok(Expr::Const(v));
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..len];
            let at = self.pos;
            self.pos += len;
            if name == "min" || name == "max" {
                self.skip_ws();
                if self.src[self.pos..].starts_with('(') {
                    self.pos += 1;
                    let a = self.expr(0)?;
                    self.skip_ws();
                    if !self.src[self.pos..].starts_with(',') {
                        return Err(self.syntax(format!("{name}(a, b) takes two arguments")));
                    }
                    self.pos += 1;
                    let b = self.expr(0)?;
                    self.skip_ws();
                    if !self.src[self.pos..].starts_with(')') {
                        return Err(self.syntax("expected \")\"".into()));
                    }
                    self.pos += 1;
                    let op = if name == "min" {
                        BinOp::Min
                    } else {
                        BinOp::Max
                    };
                    return Expr::binary(op, a, b).map_err(|error| ParseError::Eval { error, at });
                }
            }
            if name == "true" {
                return Ok(Expr::Const(1));
            }
            if name == "false" {
                return Ok(Expr::Const(0));
            }
            return (self.resolve)(name).ok_or(ParseError::UnknownName {
                name: name.to_string(),
                at,
            });
        }
        Err(self.syntax(format!("unexpected \"{c}\"")))
    }
}

fn scale((c, t): (i64, BTreeMap<VarId, i64>), k: i64) -> Option<(i64, BTreeMap<VarId, i64>)> {
    let mut out = BTreeMap::new();
    for (v, x) in t {
        let y = x.checked_mul(k)?;
        if y != 0 {
            out.insert(v, y);
        }
    }
    Some((c.checked_mul(k)?, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(src: &str) -> Result<Expr, ParseError> {
        parse(src, &mut |n| match n {
            "n" => Some(Expr::Const(16)),
            "t" => Some(Expr::Var(VarId(0))),
            "i" => Some(Expr::Var(VarId(1))),
            _ => None,
        })
    }

    #[test]
    fn folds_params_and_precedence() {
        assert_eq!(p("n * 2 + 1").unwrap(), Expr::Const(33));
        assert_eq!(p("1 + n * 2").unwrap(), Expr::Const(33));
        assert_eq!(p("(1 + n) * 2").unwrap(), Expr::Const(34));
        assert_eq!(p("10 - 3 - 2").unwrap(), Expr::Const(5));
        assert_eq!(p("min(n, 3) + max(1, 2)").unwrap(), Expr::Const(5));
        assert_eq!(p("n >= 16 && !(n == 3)").unwrap(), Expr::Const(1));
        assert_eq!(p("true").unwrap(), Expr::Const(1));
    }

    #[test]
    fn floor_division_and_modulo() {
        assert_eq!(p("-7 / 2").unwrap(), Expr::Const(-4));
        assert_eq!(p("-7 % 2").unwrap(), Expr::Const(1));
        assert_eq!(p("7 / -2").unwrap(), Expr::Const(-4));
        assert_eq!(p("7 % -2").unwrap(), Expr::Const(-1));
        assert_eq!(p("7 / 2").unwrap(), Expr::Const(3));
    }

    #[test]
    fn variables_evaluate_at_run_time() {
        let e = p("t % 2 + i * n").unwrap();
        assert_eq!(e.as_const(), None);
        assert_eq!(e.eval(&[3, 2]).unwrap(), 1 + 32);
        assert_eq!(e.range(&[Some((0, 15)), Some((0, 3))]), Some((0, 49)));
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(p("t +"), Err(ParseError::Syntax { .. })));
        assert!(
            matches!(p("foo + 1"), Err(ParseError::UnknownName { name, at: 0 }) if name == "foo")
        );
        assert!(matches!(
            p("n / 0"),
            Err(ParseError::Eval {
                error: EvalError::DivisionByZero,
                ..
            })
        ));
        assert!(matches!(p("(n"), Err(ParseError::Syntax { .. })));
        assert!(matches!(p("n n"), Err(ParseError::Syntax { .. })));
    }

    #[test]
    fn display_round_trips() {
        let names = |v: VarId| {
            if v.0 == 0 {
                "t".to_string()
            } else {
                "i".to_string()
            }
        };
        for src in [
            "t % 2 + i * 16",
            "(t + 1) * i",
            "min(t, i) - 1",
            "t - (i - 1)",
            "t >= 2 && i < 3",
        ] {
            let e = p(src).unwrap();
            let text = e.display(&names).to_string();
            assert_eq!(p(&text).unwrap(), e, "{src} -> {text}");
        }
    }

    #[test]
    fn linear_bounds_are_exact() {
        let t = Expr::Var(VarId(0));
        let e4 = Expr::binary(BinOp::Mul, t.clone(), Expr::Const(4)).unwrap();
        let end = Expr::binary(BinOp::Add, e4.clone(), Expr::Const(4)).unwrap();
        assert_eq!(Expr::const_difference(&end, &e4), Some(4));
        let diff = Expr::binary(BinOp::Sub, end.clone(), e4.clone()).unwrap();
        assert_eq!(diff.bounds(&[Some((0, 3))]), Some((4, 4)));
        assert_eq!(end.bounds(&[Some((0, 3))]), Some((4, 16)));
        assert_eq!(end.bounds(&[None]), None);
        let m = Expr::binary(BinOp::Min, end, Expr::Const(10)).unwrap();
        assert_eq!(Expr::const_difference(&m, &e4), None);
    }

    /// Worked by hand: 2, 5, 8 below 11; `0..t+1` over t in 0..=5 reaches 5; an empty loop
    /// and an unbounded variable give nothing.
    #[test]
    fn for_range_stops_at_the_last_step() {
        let c = Expr::Const;
        assert_eq!(Expr::for_range(&c(2), &c(11), &c(3), &[]), Some((2, 8)));
        assert_eq!(Expr::for_range(&c(2), &c(12), &c(3), &[]), Some((2, 11)));
        let t = Expr::Var(VarId(0));
        let t1 = Expr::binary(BinOp::Add, t.clone(), c(1)).unwrap();
        assert_eq!(
            Expr::for_range(&c(0), &t1, &c(1), &[Some((0, 5))]),
            Some((0, 5))
        );
        // a variable start: the last value is only bounded by the end
        assert_eq!(
            Expr::for_range(&t, &c(9), &c(4), &[Some((1, 3))]),
            Some((1, 8))
        );
        assert_eq!(Expr::for_range(&c(5), &c(5), &c(1), &[]), None);
        assert_eq!(Expr::for_range(&c(0), &t1, &c(1), &[None]), None);
    }
}
