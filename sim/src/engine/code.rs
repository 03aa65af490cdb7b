//! The compiled code's values: an expression unwrapped for the hot path ([`Val`]) and one
//! operand as the engine needs it ([`Opnd`]). Compilation, the banks and the memory system all
//! read these; keeping them here (importing no other engine module) is what keeps those three
//! from importing one another in a circle.

use crate::expr::{BinOp, EvalError, Expr};
use crate::program::Operand;

/// "Not inside any loop" in [`Opnd::counter`].
pub(super) const NO_LOOP: u32 = u32::MAX;

/// An expression, with the shapes kernels write most (a constant, a loop variable, `t % 2`,
/// `t >= 2`, `t + 1`) unwrapped so the hot path never walks a tree for them.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val<'p> {
    Const(i64),
    /// A loop variable (by [`crate::ids::VarId`] index).
    Var(u32),
    /// `v % m` for a power of two m > 0: `v & (m - 1)`, which is the floor remainder.
    RemPow2 {
        var: u32,
        mask: i64,
    },
    /// `v op c`: the op applied directly; when it fails (overflow, division by zero) `e` is
    /// evaluated for its error, so errors are the tree's.
    VarConst {
        var: u32,
        op: BinOp,
        c: i64,
        e: &'p Expr,
    },
    /// `b + ((v - w) / d) % m` with `w` a variable or a constant, `d, m > 0` (the iteration
    /// count modulo `m` the sync pass writes for rotating flag ids, `(t - block) / 2 % 2`):
    /// applied directly; when a step fails, `e` is evaluated for its error.
    CountMod {
        v: u32,
        w: Sub,
        d: i64,
        m: i64,
        b: i64,
        e: &'p Expr,
    },
    /// `c + a[0]·v[0] + a[1]·v[1]`: an expression of `+`, `-`, negation and products by
    /// constants over at most two variables (`t * 16 + subblock * 8 + 8`, a launch's gm
    /// offsets). `abs` and `absc` sum the absolute values of the tree's leaves, so
    /// `absc + abs·|v|` bounds every value the tree computes on the way: within i64 no step of
    /// the tree overflows and the sum is its result; beyond, `e` is evaluated.
    Lin {
        v: [u32; 2],
        a: [i32; 2],
        abs: [u32; 2],
        c: i64,
        absc: u64,
        e: &'p Expr,
    },
    Dyn(&'p Expr),
}

/// A linear form being built by [`linear`]: (variable, coefficient, sum of the absolute values
/// of its leaves' coefficients) and the constant with its leaves' sum.
#[derive(Default)]
struct Lin {
    terms: Vec<(u32, i64, u64)>,
    c: i64,
    absc: u64,
}

/// `e` as a linear form over its variables, when it is one (see [`Val::Lin`]).
fn linear(e: &Expr) -> Option<Lin> {
    let scale = |mut l: Lin, k: i64| -> Option<Lin> {
        for t in &mut l.terms {
            t.1 = t.1.checked_mul(k)?;
            t.2 = t.2.checked_mul(k.unsigned_abs())?;
        }
        l.c = l.c.checked_mul(k)?;
        l.absc = l.absc.checked_mul(k.unsigned_abs())?;
        Some(l)
    };
    let constant = |l: &Lin| l.terms.is_empty().then_some(l.c);
    Some(match e {
        Expr::Const(c) => Lin {
            terms: Vec::new(),
            c: *c,
            absc: c.unsigned_abs(),
        },
        Expr::Var(v) => Lin {
            terms: vec![(v.index() as u32, 1, 1)],
            c: 0,
            absc: 0,
        },
        Expr::Unary(crate::expr::UnOp::Neg, x) => scale(linear(x)?, -1)?,
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), x, y) => {
            let mut l = linear(x)?;
            let r = linear(y)?;
            let r = if *op == BinOp::Sub { scale(r, -1)? } else { r };
            for (v, a, abs) in r.terms {
                match l.terms.iter_mut().find(|t| t.0 == v) {
                    Some(t) => {
                        t.1 = t.1.checked_add(a)?;
                        t.2 = t.2.checked_add(abs)?;
                    }
                    None => l.terms.push((v, a, abs)),
                }
            }
            l.c = l.c.checked_add(r.c)?;
            l.absc = l.absc.checked_add(r.absc)?;
            if l.terms.is_empty() {
                // constant steps are the same every time (they fit, or the tree always fails)
                l.absc = l.c.unsigned_abs();
            }
            l
        }
        Expr::Binary(BinOp::Mul, x, y) => {
            let (l, r) = (linear(x)?, linear(y)?);
            // a product by 0 bounds nothing under it
            match (constant(&l), constant(&r)) {
                (Some(a), Some(b)) => {
                    let c = a.checked_mul(b)?;
                    Lin {
                        terms: Vec::new(),
                        c,
                        absc: c.unsigned_abs(),
                    }
                }
                (Some(k), None) if k != 0 => scale(r, k)?,
                (None, Some(k)) if k != 0 => scale(l, k)?,
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// What [`Val::CountMod`] subtracts from its variable.
#[derive(Clone, Copy, Debug)]
pub(super) enum Sub {
    Var(u32),
    Const(i64),
}

/// `e` as [`Val::CountMod`]'s (v, w, d, m, b), if it has that shape.
fn count_mod(e: &Expr) -> Option<(u32, Sub, i64, i64, i64)> {
    let (b, rem) = match e {
        Expr::Binary(BinOp::Add, x, y) => match (x.as_const(), y.as_const()) {
            (Some(b), None) => (b, &**y),
            (None, Some(b)) => (b, &**x),
            _ => return None,
        },
        e => (0, e),
    };
    let Expr::Binary(BinOp::Rem, x, m) = rem else {
        return None;
    };
    let m = m.as_const().filter(|&m| m > 0)?;
    let (y, d) = match &**x {
        Expr::Binary(BinOp::Div, y, d) => (&**y, d.as_const().filter(|&d| d > 0)?),
        y => (y, 1),
    };
    let (v, w) = match y {
        Expr::Var(v) => (v.index() as u32, Sub::Const(0)),
        Expr::Binary(BinOp::Sub, a, c) => match (&**a, &**c) {
            (Expr::Var(v), Expr::Var(w)) => (v.index() as u32, Sub::Var(w.index() as u32)),
            (Expr::Var(v), Expr::Const(c)) => (v.index() as u32, Sub::Const(*c)),
            _ => return None,
        },
        _ => return None,
    };
    Some((v, w, d, m, b))
}

impl<'p> Val<'p> {
    pub fn new(e: &'p Expr) -> Val<'p> {
        match e {
            Expr::Const(c) => Val::Const(*c),
            Expr::Var(v) => Val::Var(v.index() as u32),
            Expr::Binary(op, a, b) => match (&**a, b.as_const()) {
                (Expr::Var(v), Some(m)) if *op == BinOp::Rem && m > 0 && m.count_ones() == 1 => {
                    Val::RemPow2 {
                        var: v.index() as u32,
                        mask: m - 1,
                    }
                }
                (Expr::Var(v), Some(c)) => Val::VarConst {
                    var: v.index() as u32,
                    op: *op,
                    c,
                    e,
                },
                _ => match count_mod(e) {
                    Some((v, w, d, m, b)) => Val::CountMod { v, w, d, m, b, e },
                    None => Val::lin(e),
                },
            },
            _ => Val::lin(e),
        }
    }

    /// `e` as [`Val::Lin`] when it is linear in at most two variables with coefficients of
    /// 32 bits, else [`Val::Dyn`].
    fn lin(e: &'p Expr) -> Val<'p> {
        let Some(l) = linear(e) else {
            return Val::Dyn(e);
        };
        let term = |i: usize| -> Option<(u32, i32, u32)> {
            let (v, a, abs) = *l.terms.get(i)?;
            Some((v, i32::try_from(a).ok()?, u32::try_from(abs).ok()?))
        };
        let (first, second) = match l.terms.len() {
            1 => match term(0) {
                Some(t) => (t, (t.0, 0, 0)),
                None => return Val::Dyn(e),
            },
            2 => match (term(0), term(1)) {
                (Some(x), Some(y)) => (x, y),
                _ => return Val::Dyn(e),
            },
            _ => return Val::Dyn(e),
        };
        Val::Lin {
            v: [first.0, second.0],
            a: [first.1, second.1],
            abs: [first.2, second.2],
            c: l.c,
            absc: l.absc,
            e,
        }
    }

    #[inline(always)]
    pub fn eval(&self, vars: &[i64]) -> Result<i64, (EvalError, &'p Expr)> {
        match *self {
            Val::Const(c) => Ok(c),
            Val::Var(v) => Ok(vars[v as usize]),
            Val::RemPow2 { var, mask } => Ok(vars[var as usize] & mask),
            Val::VarConst { var, op, c, e } => match op.apply(vars[var as usize], c) {
                Some(x) => Ok(x),
                None => e.eval(vars).map_err(|err| (err, e)),
            },
            Val::CountMod { v, w, d, m, b, e } => {
                let w = match w {
                    Sub::Var(w) => vars[w as usize],
                    Sub::Const(c) => c,
                };
                // the tree's steps as BinOp::apply does them: with d, m > 0 its floor division
                // and remainder are the Euclidean ones; its remainder's product q / m × m can
                // overflow only for q below MIN + m, which is left to the tree
                let x = vars[v as usize]
                    .checked_sub(w)
                    .map(|x| x.div_euclid(d))
                    .filter(|&q| q >= i64::MIN + m)
                    .and_then(|q| b.checked_add(q.rem_euclid(m)));
                match x {
                    Some(x) => Ok(x),
                    None => e.eval(vars).map_err(|err| (err, e)),
                }
            }
            Val::Lin {
                v,
                a,
                abs,
                c,
                absc,
                e,
            } => {
                let (x, y) = (vars[v[0] as usize], vars[v[1] as usize]);
                let bound = absc as u128
                    + abs[0] as u128 * x.unsigned_abs() as u128
                    + abs[1] as u128 * y.unsigned_abs() as u128;
                if bound <= i64::MAX as u128 {
                    // every partial sum lies within the bound
                    Ok(c + a[0] as i64 * x + a[1] as i64 * y)
                } else {
                    e.eval(vars).map_err(|err| (err, e))
                }
            }
            Val::Dyn(e) => e.eval(vars).map_err(|err| (err, e)),
        }
    }
}

/// A window of a view chain whose offset is only known at run time.
#[derive(Clone, Debug)]
pub(super) struct WindowCheck<'p> {
    pub offset: Val<'p>,
    /// Elements of the window.
    pub len: u64,
    /// Elements of what it is a window of.
    pub of_len: u64,
    pub name: &'p str,
}

/// One operand of one op, as the engine needs it.
#[derive(Clone, Debug)]
pub(super) struct Opnd<'p> {
    pub operand: &'p Operand,
    /// The shape of the operand's base (buffer, view or tensor), which indices refer to.
    pub shape: &'p [u64],
    /// Slots of the root buffer (the largest one for a `select`); 1 for gm. Bounds `@k`.
    pub multi: u32,
    /// Slot modulus of an operand without `@k`: `multi`, unless the caller overrides the
    /// buffer's slot count (a planner that turned a buffer into a multi-buffer).
    pub modulus: u32,
    /// `@k`.
    pub slot: Option<Val<'p>>,
    /// Dense index of the op's innermost enclosing loop, or [`NO_LOOP`].
    pub counter: u32,
    /// Bytes selected when every extent is constant.
    pub static_bytes: Option<u64>,
    /// Whether an index, a slice bound or a window offset must be checked at run time.
    pub check: bool,
    pub windows: Vec<WindowCheck<'p>>,
    /// Whether every index, slice bound and window offset is constant.
    pub static_runs: bool,
    /// The constant part of the window offsets, in elements of the root.
    pub win_const: u64,
    /// The UB byte address of each slot of the root buffer (the first buffer of a `select`):
    /// the caller's addresses, else the buffer's `at:`, else empty (address 0). Filled only
    /// when the config has `ub_banks`.
    pub addrs: Vec<u64>,
}

#[cfg(test)]
mod val_tests {
    use super::*;
    use crate::ids::VarId;

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// Each of `shapes` compiles to the fast form `fast` picks out, and evaluates to what its
    /// tree gives (the value or the error) for every pair of `values` as its two variables.
    fn agrees_with_tree(shapes: &[Expr], values: &[i64], fast: fn(&Val) -> bool) {
        for e in shapes {
            let val = Val::new(e);
            assert!(fast(&val), "{e:?} has the fast form");
            for &a in values {
                for &b in values {
                    let vars = [a, b];
                    let tree = e.eval(&vars);
                    let got = val.eval(&vars).map_err(|(err, _)| err);
                    assert_eq!(got, tree, "{e:?} at ({a}, {b})");
                }
            }
        }
    }

    #[test]
    fn a_linear_form_evaluates_as_its_tree_everywhere() {
        let (t, s) = (Expr::Var(VarId::new(0)), Expr::Var(VarId::new(1)));
        let c = Expr::Const;
        let neg = |e: Expr| Expr::Unary(crate::expr::UnOp::Neg, Box::new(e));
        let shapes = [
            // t * 16 + subblock * 8, a launch's gm offset
            bin(
                BinOp::Add,
                bin(BinOp::Mul, t.clone(), c(16)),
                bin(BinOp::Mul, s.clone(), c(8)),
            ),
            // t * 16 + (subblock + 1) * 8
            bin(
                BinOp::Add,
                bin(BinOp::Mul, t.clone(), c(16)),
                bin(BinOp::Mul, bin(BinOp::Add, s.clone(), c(1)), c(8)),
            ),
            // (t + 1) * 128 - 1: constants of both signs
            bin(
                BinOp::Sub,
                bin(BinOp::Mul, bin(BinOp::Add, t.clone(), c(1)), c(128)),
                c(1),
            ),
            // t - t + s: a cancelled variable still bounds the steps
            bin(BinOp::Add, bin(BinOp::Sub, t.clone(), t.clone()), s.clone()),
            // -(t * 3) + 2 * (4 * s)
            bin(
                BinOp::Add,
                neg(bin(BinOp::Mul, t.clone(), c(3))),
                bin(BinOp::Mul, c(2), bin(BinOp::Mul, c(4), s.clone())),
            ),
            // constants that overflow on the way only for large variables
            bin(
                BinOp::Sub,
                bin(BinOp::Add, t.clone(), c(i64::MAX / 2)),
                bin(BinOp::Mul, s.clone(), c(1 << 30)),
            ),
        ];
        let values = [
            i64::MIN,
            i64::MIN + 1,
            i64::MIN / 16,
            -(1 << 33),
            -7,
            -1,
            0,
            1,
            3,
            1 << 33,
            i64::MAX / 16,
            i64::MAX / 2,
            i64::MAX - 1,
            i64::MAX,
        ];
        agrees_with_tree(&shapes, &values, |v| matches!(v, Val::Lin { .. }));
        // not linear, or three variables, or a product by 0: the tree
        let u = Expr::Var(VarId::new(2));
        for e in [
            bin(BinOp::Mul, t.clone(), bin(BinOp::Add, s.clone(), c(1))),
            bin(BinOp::Add, bin(BinOp::Add, t.clone(), s.clone()), u),
            bin(BinOp::Mul, bin(BinOp::Add, t.clone(), c(1)), c(0)),
            bin(BinOp::Add, bin(BinOp::Div, t.clone(), c(2)), s.clone()),
        ] {
            assert!(matches!(Val::new(&e), Val::Dyn(_)), "{e:?}");
        }
    }

    #[test]
    fn a_count_mod_evaluates_as_its_tree_everywhere() {
        let (t, w) = (Expr::Var(VarId::new(0)), Expr::Var(VarId::new(1)));
        let c = Expr::Const;
        let op = |op: BinOp| move |a: Expr, b: Expr| bin(op, a, b);
        let (add, sub, div, rem) = (
            op(BinOp::Add),
            op(BinOp::Sub),
            op(BinOp::Div),
            op(BinOp::Rem),
        );
        let shapes = [
            // (t - w) / 2 % 2, the sync pass's rotating id of a `from: block` loop
            rem(div(sub(t.clone(), w.clone()), c(2)), c(2)),
            // 3 + (t - 5) / 4 % 3, with a base id
            add(c(3), rem(div(sub(t.clone(), c(5)), c(4)), c(3))),
            // (t - w) % 3 + 7
            add(rem(sub(t.clone(), w.clone()), c(3)), c(7)),
            // t / 3 % 2 (no subtraction)
            rem(div(t.clone(), c(3)), c(2)),
            // an added base that overflows
            add(c(i64::MAX), rem(sub(t.clone(), w.clone()), c(5))),
        ];
        let values = [
            i64::MIN,
            i64::MIN + 1,
            -7,
            -2,
            -1,
            0,
            1,
            2,
            3,
            6,
            11,
            i64::MAX - 1,
            i64::MAX,
        ];
        agrees_with_tree(&shapes, &values, |v| matches!(v, Val::CountMod { .. }));
    }
}
