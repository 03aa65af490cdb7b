//! What an `if` says about the loop variables: inside `then` its condition holds, inside `else`
//! it does not. A condition that bounds a loop variable (`j + 1 < n`, `t >= 1 && t < n - 1`)
//! narrows that variable's range for the branch, and every static question about the branch
//! asks over the narrowed ranges: the loader's bounds checks, the engine's choice of which
//! run-time checks to leave out, the sync pass's footprints (docs/decisions.md, "Guards").
//!
//! [`narrow`] is the one rule; each stage calls it where it walks into a branch.

use crate::expr::{BinOp, Expr, UnOp};
use crate::footprint::Span;
use crate::ids::VarId;

/// What narrowing by a guard found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Guard {
    /// The narrowed ranges are exactly where the branch runs: every combination of values in
    /// them satisfies the guard (and every one in the ranges before that does is still in).
    Exact,
    /// The ranges were narrowed soundly, perhaps not at all: they still hold every value for
    /// which the branch runs, and perhaps others.
    Loose,
    /// No values in the ranges make the branch run; the ranges are left as they were.
    Never,
}

impl Guard {
    /// Both hold.
    fn and(self, other: Guard) -> Guard {
        match (self, other) {
            (Guard::Never, _) | (_, Guard::Never) => Guard::Never,
            (Guard::Exact, Guard::Exact) => Guard::Exact,
            _ => Guard::Loose,
        }
    }
}

/// What narrowing by a guard did: its verdict, and the ranges it changed, to put back when
/// the branch is done ([`Narrowed::undo`]). It touches only the variables the condition reads,
/// so a branch costs what its condition is, not the program's number of loop variables.
#[derive(Debug)]
#[must_use = "the ranges stay narrowed until undone"]
pub struct Narrowed {
    pub guard: Guard,
    /// (variable, its range before), for each variable whose range changed.
    old: Vec<(usize, Span)>,
}

impl Narrowed {
    /// The variables whose range changed.
    pub fn changed(&self) -> impl Iterator<Item = VarId> + '_ {
        self.old.iter().map(|&(v, _)| VarId::new(v))
    }

    /// Puts the ranges back as they were before [`narrow`] (the ones it changed; a caller's
    /// own change to one of those is undone too).
    pub fn undo(&self, ranges: &mut [Span]) {
        for &(v, r) in &self.old {
            ranges[v] = r;
        }
    }
}

/// Narrows `ranges` (inclusive, by [`VarId`]) to the values for which `cond` is true
/// (`holds`) or false (`!holds`). Understood: comparisons `< <= > >= == !=` whose two sides
/// differ by a linear form (`k·v + c`, params folded), joined by `&&` (or, when false, by
/// `||`), `!`, and constants. A form in one variable narrows exactly; one in several narrows
/// each variable by the others' ranges (loosely); anything else does not narrow. A range that
/// was unknown becomes known (loosely: the loop may never reach it) only when the guard bounds
/// it on both sides. [`Guard::Never`] leaves the ranges as they were.
pub fn narrow(cond: &Expr, holds: bool, ranges: &mut [Span]) -> Narrowed {
    let mut read = Vec::new();
    cond.vars(&mut read);
    let mut vars: Vec<usize> = read
        .iter()
        .map(|v| v.index())
        .filter(|&v| v < ranges.len())
        .collect();
    vars.sort_unstable();
    vars.dedup();
    let mut b = Boxed {
        iv: vars
            .iter()
            .map(|&v| match ranges[v] {
                Some((lo, hi)) => (Some(i128::from(lo)), Some(i128::from(hi))),
                None => (None, None),
            })
            .collect(),
        touched: vec![false; vars.len()],
        vars,
    };
    let mut out = Narrowed {
        guard: Guard::Never,
        old: Vec::new(),
    };
    let mut g = walk(cond, holds, &mut b);
    if g == Guard::Never {
        return out;
    }
    let mut new = Vec::with_capacity(b.vars.len());
    for (k, &v) in b.vars.iter().enumerate() {
        match b.iv[k] {
            (Some(lo), Some(hi)) if lo > hi => return out,
            (Some(lo), Some(hi)) => {
                // within the i64 range the variable takes anyway
                let c = |x: i128| x.clamp(i64::MIN.into(), i64::MAX.into()) as i64;
                // nothing says the loop reaches the values of a range the guard alone gives
                if ranges[v].is_none() {
                    g = g.and(Guard::Loose);
                }
                new.push((v, Some((c(lo), c(hi)))));
            }
            // a bound on one side of an unknown range cannot be written down
            _ if b.touched[k] => g = g.and(Guard::Loose),
            _ => {}
        }
    }
    for (v, r) in new {
        if ranges[v] != r {
            out.old.push((v, ranges[v]));
            ranges[v] = r;
        }
    }
    out.guard = g;
    out
}

/// Ranges being narrowed, of the variables `vars` a condition reads (sorted; `iv` and `touched`
/// by position): `None` is unbounded on that side; `touched` marks a variable some comparison
/// bounded.
#[derive(Clone)]
struct Boxed {
    vars: Vec<usize>,
    iv: Vec<(Option<i128>, Option<i128>)>,
    touched: Vec<bool>,
}

impl Boxed {
    /// The position of variable `v`.
    fn pos(&self, v: usize) -> Option<usize> {
        self.vars.binary_search(&v).ok()
    }

    /// `k·v <= m`.
    fn at_most(&mut self, v: usize, k: i128, m: i128) {
        let Some(p) = self.pos(v) else { return };
        self.touched[p] = true;
        let iv = &mut self.iv[p];
        if k > 0 {
            let hi = m.div_euclid(k);
            iv.1 = Some(iv.1.map_or(hi, |h| h.min(hi)));
        } else {
            // k·v <= m  ⟺  v >= ceil(m / k) = -floor(m / -k)
            let lo = -(m.div_euclid(-k));
            iv.0 = Some(iv.0.map_or(lo, |l| l.max(lo)));
        }
    }

    /// Whether no value is left for variable `v`.
    fn empty(&self, v: usize) -> bool {
        matches!(self.pos(v).map(|p| self.iv[p]), Some((Some(lo), Some(hi))) if lo > hi)
    }

    /// The least (`hi` false) or greatest value of `Σ k·v` over `terms` but variable `skip`.
    fn extreme(&self, terms: &[(usize, i128)], skip: usize, hi: bool) -> Option<i128> {
        let mut s: i128 = 0;
        for &(u, k) in terms {
            if u == skip {
                continue;
            }
            let (lo_u, hi_u) = self.iv[self.pos(u)?];
            let x = if (k > 0) == hi { hi_u? } else { lo_u? };
            s = s.checked_add(k.checked_mul(x)?)?;
        }
        Some(s)
    }

    /// The hull of two narrowings (the branch runs when either holds).
    fn hull(&mut self, x: &Boxed, y: &Boxed) {
        for p in 0..self.iv.len() {
            let (a, b) = (x.iv[p], y.iv[p]);
            let lo = a.0.zip(b.0).map(|(p, q)| p.min(q));
            let hi = a.1.zip(b.1).map(|(p, q)| p.max(q));
            self.iv[p] = (lo, hi);
            self.touched[p] = x.touched[p] || y.touched[p];
        }
    }
}

fn walk(e: &Expr, holds: bool, b: &mut Boxed) -> Guard {
    match e {
        Expr::Const(c) => {
            if (*c != 0) == holds {
                Guard::Exact
            } else {
                Guard::Never
            }
        }
        Expr::Unary(UnOp::Not, a) => walk(a, !holds, b),
        // both hold: narrow by one, then the other
        Expr::Binary(op @ (BinOp::And | BinOp::Or), x, y) if (*op == BinOp::And) == holds => {
            let g = walk(x, holds, b);
            if g == Guard::Never {
                return g;
            }
            g.and(walk(y, holds, b))
        }
        // either holds: the hull of the two, exact only when one of them cannot
        Expr::Binary(BinOp::And | BinOp::Or, x, y) => {
            let (mut bx, mut by) = (b.clone(), b.clone());
            match (walk(x, holds, &mut bx), walk(y, holds, &mut by)) {
                (Guard::Never, Guard::Never) => Guard::Never,
                (Guard::Never, g) => {
                    *b = by;
                    g
                }
                (g, Guard::Never) => {
                    *b = bx;
                    g
                }
                _ => {
                    b.hull(&bx, &by);
                    Guard::Loose
                }
            }
        }
        Expr::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            x,
            y,
        ) => compare(if holds { *op } else { negate(*op) }, x, y, b),
        // a value is true when it is not zero
        _ => compare(
            if holds { BinOp::Ne } else { BinOp::Eq },
            e,
            &Expr::Const(0),
            b,
        ),
    }
}

fn negate(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        BinOp::Eq => BinOp::Ne,
        BinOp::Ne => BinOp::Eq,
        other => other,
    }
}

/// Narrows by `x op y` (a comparison).
fn compare(op: BinOp, x: &Expr, y: &Expr, b: &mut Boxed) -> Guard {
    // x - y = c + Σ k·v
    let (Some((cx, tx)), Some((cy, ty))) = (x.linear(), y.linear()) else {
        return Guard::Loose;
    };
    let c = i128::from(cx) - i128::from(cy);
    let mut terms: Vec<(usize, i128)> = Vec::new();
    for (v, k) in tx {
        terms.push((v.index(), i128::from(k)));
    }
    for (v, k) in ty {
        match terms.iter_mut().find(|t| t.0 == v.index()) {
            Some(t) => t.1 -= i128::from(k),
            None => terms.push((v.index(), -i128::from(k))),
        }
    }
    terms.retain(|t| t.1 != 0);
    if terms.is_empty() {
        let truth = match op {
            BinOp::Lt => c < 0,
            BinOp::Le => c <= 0,
            BinOp::Gt => c > 0,
            BinOp::Ge => c >= 0,
            BinOp::Eq => c == 0,
            _ => c != 0,
        };
        return if truth { Guard::Exact } else { Guard::Never };
    }
    if op == BinOp::Ne {
        return not_equal(&terms, c, b);
    }
    // as bounds on the form: lo <= Σ k·v + c  and / or  Σ k·v + c <= hi, i.e.
    // Σ k·v <= -c + hi_off (upper) and Σ k·v >= -c + lo_off (lower)
    let (upper, lower) = match op {
        BinOp::Lt => (Some(-1), None),
        BinOp::Le => (Some(0), None),
        BinOp::Gt => (None, Some(1)),
        BinOp::Ge => (None, Some(0)),
        _ => (Some(0), Some(0)),
    };
    let exact = terms.len() == 1;
    for &(v, k) in &terms {
        // k·v <= -c + off - (the least the other terms can be)
        if let Some(off) = upper {
            if let Some(rest) = b.extreme(&terms, v, false) {
                if let Some(m) = (off - c).checked_sub(rest) {
                    b.at_most(v, k, m);
                }
            }
        }
        // k·v >= -c + off - (the greatest the others can be)  ⟺  -k·v <= c - off + greatest
        if let Some(off) = lower {
            if let Some(rest) = b.extreme(&terms, v, true) {
                if let Some(m) = (c - off).checked_add(rest) {
                    b.at_most(v, -k, m);
                }
            }
        }
    }
    if terms.iter().any(|&(v, _)| b.empty(v)) {
        Guard::Never
    } else if exact {
        Guard::Exact
    } else {
        Guard::Loose
    }
}

/// Narrows by `Σ k·v + c != 0`: exact for one variable when the excluded value is at an end of
/// its range (or outside it), else no narrowing.
fn not_equal(terms: &[(usize, i128)], c: i128, b: &mut Boxed) -> Guard {
    let &[(v, k)] = terms else {
        return Guard::Loose;
    };
    if c % k != 0 {
        return Guard::Exact; // k·v never equals -c
    }
    let p = -c / k;
    let Some(at) = b.pos(v) else {
        return Guard::Loose;
    };
    let iv = &mut b.iv[at];
    match *iv {
        (Some(lo), Some(hi)) if p < lo || p > hi => Guard::Exact,
        (Some(lo), Some(hi)) if lo == hi => Guard::Never,
        (Some(lo), hi) if p == lo => {
            *iv = (Some(lo + 1), hi);
            Guard::Exact
        }
        (lo, Some(hi)) if p == hi => {
            *iv = (lo, Some(hi - 1));
            Guard::Exact
        }
        _ => Guard::Loose,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `j` is variable 0, `i` variable 1, `n` the param 16.
    fn cond(src: &str) -> Expr {
        crate::expr::parse(src, &mut |name| match name {
            "j" => Some(Expr::Var(VarId(0))),
            "i" => Some(Expr::Var(VarId(1))),
            "n" => Some(Expr::Const(16)),
            _ => None,
        })
        .unwrap()
    }

    fn narrowed(src: &str, holds: bool, ranges: &[Span]) -> (Guard, Vec<Span>) {
        let mut r = ranges.to_vec();
        let n = narrow(&cond(src), holds, &mut r);
        // undoing puts back exactly what was there
        let mut back = r.clone();
        n.undo(&mut back);
        assert_eq!(back, ranges, "{src}");
        (n.guard, r)
    }

    const J: &[Span] = &[Some((0, 15)), Some((0, 3))];

    #[test]
    fn the_prefetch_guard_drops_the_last_iteration() {
        let (g, r) = narrowed("j + 1 < n", true, J);
        assert_eq!((g, r[0]), (Guard::Exact, Some((0, 14))));
        // so (j + 2) * 128 reaches 2048, not 2176
        let end = cond("(j + 2) * 128");
        assert_eq!(end.bounds(&r), Some((256, 2048)));
        // and the else branch is the last iteration
        let (g, r) = narrowed("j + 1 < n", false, J);
        assert_eq!((g, r[0]), (Guard::Exact, Some((15, 15))));
    }

    #[test]
    fn every_comparison_narrows_exactly_in_one_variable() {
        for (src, want) in [
            ("j < 4", (0, 3)),
            ("j <= 4", (0, 4)),
            ("j > 4", (5, 15)),
            ("j >= 4", (4, 15)),
            ("j == 4", (4, 4)),
            ("4 > j", (0, 3)),
            ("2 * j < 7", (0, 3)),
            ("2 * j > 7", (4, 15)),
            ("-j > -3", (0, 2)),
            ("-2 * j <= -7", (4, 15)),
            ("j != 0", (1, 15)),
            ("j != 15", (0, 14)),
            ("j != 20", (0, 15)),
            ("2 * j != 7", (0, 15)),
            ("j - 1 >= 0 && j + 1 < n", (1, 14)),
            ("!(j >= 8)", (0, 7)),
            ("j * 3 - j < 9", (0, 4)),
            ("j", (1, 15)),
        ] {
            let (g, r) = narrowed(src, true, J);
            assert_eq!((g, r[0]), (Guard::Exact, Some(want)), "{src}");
            assert_eq!(r[1], J[1], "{src} leaves i alone");
        }
    }

    #[test]
    fn negations_narrow_the_else_branch() {
        for (src, want, g) in [
            ("j < 4", Some((4, 15)), Guard::Exact),
            ("j >= 1", Some((0, 0)), Guard::Exact),
            ("j != 3", Some((3, 3)), Guard::Exact),
            // either part may fail: the hull of the two, which here is no narrowing
            ("j >= 1 && j < 8", Some((0, 15)), Guard::Loose),
            // both parts fail
            ("j < 2 || j > 9", Some((2, 9)), Guard::Exact),
            ("j == 3", Some((0, 15)), Guard::Loose),
            // one part never fails: the else is the other's
            ("j < 8 && 1", Some((8, 15)), Guard::Exact),
            ("j < 8 && j >= 0", Some((8, 15)), Guard::Exact),
        ] {
            let (got, r) = narrowed(src, false, J);
            assert_eq!((got, r[0]), (g, want), "!({src})");
        }
    }

    #[test]
    fn what_is_not_understood_does_not_narrow() {
        for src in [
            "j % 2 == 0",
            "min(j, 3) < 2",
            "j * i < 4",
            "j != 5",
            "j < 2 || j > 9",
        ] {
            let (g, r) = narrowed(src, true, J);
            if src.contains("||") {
                // the hull of [0, 1] and [10, 15]
                assert_eq!((g, r[0]), (Guard::Loose, Some((0, 15))), "{src}");
            } else {
                assert_eq!((g, &r[..]), (Guard::Loose, J), "{src}");
            }
        }
    }

    #[test]
    fn several_variables_narrow_loosely_by_each_other() {
        // i + j < 4 with i in [0, 3]: j < 4 - i <= 4, i < 4 - j <= 4
        let (g, r) = narrowed("i + j < 4", true, J);
        assert_eq!((g, r[0], r[1]), (Guard::Loose, Some((0, 3)), Some((0, 3))));
        let (g, r) = narrowed("j - i > 12", true, J);
        assert_eq!(
            (g, r[0], r[1]),
            (Guard::Loose, Some((13, 15)), Some((0, 2)))
        );
    }

    #[test]
    fn a_guard_that_never_holds_leaves_the_ranges() {
        for src in [
            "j > 20",
            "j < 0",
            "j > 4 && j < 3",
            "2 * j == 7",
            "0",
            "j - j > 0",
        ] {
            let (g, r) = narrowed(src, true, J);
            assert_eq!((g, &r[..]), (Guard::Never, J), "{src}");
        }
        // a constant guard that holds changes nothing
        assert_eq!(narrowed("1", true, J), (Guard::Exact, J.to_vec()));
        assert_eq!(narrowed("j", false, &[Some((0, 0))]).0, Guard::Exact);
        assert_eq!(narrowed("j", false, &[Some((1, 5))]).0, Guard::Never);
    }

    #[test]
    fn an_unknown_range_becomes_known_only_when_bounded_on_both_sides() {
        let (g, r) = narrowed("j >= 2 && j < 6", true, &[None, None]);
        assert_eq!((g, r[0]), (Guard::Loose, Some((2, 5))));
        let (g, r) = narrowed("j < 6", true, &[None, None]);
        assert_eq!((g, r[0]), (Guard::Loose, None));
        let (g, r) = narrowed("j == 6", true, &[None, None]);
        assert_eq!((g, r[0]), (Guard::Loose, Some((6, 6))));
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let wide = [Some((i64::MIN, i64::MAX)), Some((0, 3))];
        let (g, r) = narrowed("j < 0", true, &wide);
        assert_eq!((g, r[0]), (Guard::Exact, Some((i64::MIN, -1))));
        let (g, r) = narrowed("j * 4611686018427387904 + i > 0", true, &wide);
        assert_eq!(g, Guard::Loose);
        assert!(r[0].is_some() && r[1].is_some());
    }
}
