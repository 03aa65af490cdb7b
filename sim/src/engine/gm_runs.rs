//! The gm layout as the memory system sees it (docs/timing.md, "The gm memory system").
//!
//! gm tensors are laid out in declaration order, each starting on a line. A gm operand's bytes
//! are its maximal contiguous runs in that layout ([`runs_of`]: one for a row or a whole
//! tensor, whatever its size; [`OneRun`] finds that one without walking the selection), and the
//! L2 cuts them into `(line, bytes in that line)` pairs as it walks them ([`for_each_line`]), in
//! increasing line order, a line two runs share once with both runs' bytes: no per-line list is
//! ever built.

use super::code::Val;
use crate::footprint::{self, EvalFailure, Sel};
use crate::program::Operand;

/// Appends the non-empty contiguous byte runs `[from, to)` of operand `o` (on a tensor of
/// `shape` whose first byte is at `base`) in the gm layout, for the loop variables `vars`, to
/// `out`, in increasing order.
pub(super) fn runs_of<'a>(
    o: &'a Operand,
    shape: &[u64],
    vars: &[i64],
    base: u64,
    out: &mut Vec<(u64, u64)>,
) -> Result<(), EvalFailure<'a>> {
    footprint::gm_runs_at(o, shape, vars, |first, bytes| {
        if bytes > 0 {
            out.push((base + first, base + first + bytes));
        }
    })
}

/// The run of a gm operand whose selection is one contiguous run whatever the loop variables:
/// indices on the outer dimensions, then an index or a slice, then whole dimensions (`x[t]`,
/// `x[i, j, a:b]`). Its first element is a sum of index × stride, so [`OneRun::at`] finds it
/// without walking the selection as [`runs_of`] does, with the same result.
#[derive(Clone, Debug)]
pub(super) struct OneRun<'p> {
    /// (index, stride in elements) of each outer dimension, then the partial dimension's
    /// start.
    terms: Vec<(Val<'p>, u64)>,
    /// The partial dimension's end when it is a slice (an index ends at start + 1), and its
    /// stride.
    end: Option<Val<'p>>,
    stride: u64,
    bits: u64,
}

impl<'p> OneRun<'p> {
    /// The pattern of operand `o` on a tensor of `shape`, when it has that form.
    pub fn of(o: &'p Operand, shape: &[u64]) -> Option<OneRun<'p>> {
        let n = shape.len();
        if o.indices.len() > n || shape.contains(&0) {
            return None;
        }
        // the innermost dimension not selected whole, whatever the variables
        let whole = |d: usize| match Sel::of(o, d, shape[d]) {
            Sel::Whole(_) => true,
            Sel::Slice(a, b) => a.as_const() == Some(0) && b.as_const() == Some(shape[d] as i64),
            Sel::At(_) => false,
        };
        let k = (0..n).rev().find(|&d| !whole(d))?;
        let stride = |d: usize| shape[d + 1..].iter().product::<u64>();
        let mut terms = Vec::with_capacity(k + 1);
        for (d, &extent) in shape.iter().enumerate().take(k) {
            let Sel::At(e) = Sel::of(o, d, extent) else {
                return None;
            };
            terms.push((Val::new(e), stride(d)));
        }
        let end = match Sel::of(o, k, shape[k]) {
            Sel::At(e) => {
                terms.push((Val::new(e), stride(k)));
                None
            }
            Sel::Slice(a, b) => {
                terms.push((Val::new(a), stride(k)));
                Some(Val::new(b))
            }
            Sel::Whole(_) => return None,
        };
        Some(OneRun {
            terms,
            end,
            stride: stride(k),
            bits: o.dtype.bits(),
        })
    }

    /// Its byte run `[from, to)` in the gm layout (the tensor's first byte at `base`) for the
    /// loop variables `vars`, as [`runs_of`] finds it (bounds already checked): `Some(None)`
    /// when it selects no byte, `None` when an expression fails to evaluate (the caller then
    /// asks [`runs_of`] for the error).
    #[inline]
    pub fn at(&self, vars: &[i64], base: u64) -> Option<Option<(u64, u64)>> {
        let last = self.terms.len() - 1;
        let (mut start, mut empty, mut first) = (0u64, false, 0i64);
        for (i, (v, stride)) in self.terms.iter().enumerate() {
            first = v.eval(vars).ok()?;
            // an index at i64::MAX selects [MAX, MAX) (`Sel::at` saturates): nothing
            empty |= first == i64::MAX && (i < last || self.end.is_none());
            start = start.wrapping_add((first as u64).wrapping_mul(*stride));
        }
        let end = match &self.end {
            Some(e) => e.eval(vars).ok()?,
            None => first.saturating_add(1),
        };
        if empty || end <= first {
            return Some(None);
        }
        let run = (end as u64).wrapping_sub(first as u64) * self.stride;
        let (x, y) = (
            start * self.bits / 8,
            (start + run).saturating_mul(self.bits).div_ceil(8),
        );
        Some((y > x).then_some((base + x, base + y)))
    }
}

/// Calls `f(line, bytes in that line)` for the lines of `runs` (from [`runs_of`]) in
/// increasing line order; a line two consecutive runs share comes once, with both runs' bytes.
#[inline(always)]
pub(super) fn for_each_line(runs: &[(u64, u64)], line_bytes: u64, mut f: impl FnMut(u64, u64)) {
    // the last line seen, held back until a different one comes
    let (mut held, mut held_bytes) = (u64::MAX, 0);
    for &(a, end) in runs {
        for line in a / line_bytes..=(end - 1) / line_bytes {
            let from = a.max(line * line_bytes);
            let to = end.min((line + 1) * line_bytes);
            if line == held {
                held_bytes += to - from;
            } else {
                if held != u64::MAX {
                    f(held, held_bytes);
                }
                (held, held_bytes) = (line, to - from);
            }
        }
    }
    if held != u64::MAX {
        f(held, held_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_finds_what_the_walk_finds() {
        let config = crate::load_config(
            crate::builtin::builtin(crate::builtin::DEFAULT).unwrap(),
            "config",
        )
        .unwrap();
        let text = r#"
kernel: one_run
core: aiv
sync: manual
gm:
  x: { shape: [4, 8, 16], dtype: f16 }
  y: { shape: [6, 10], dtype: i1 }
body:
  - for: { var: i, to: 4 }
    body:
      - for: { var: j, to: 8 }
        body:
          - use: ["x[i]", "x[i, j]", "x[i, j, 0:j]", "x[i, 0:j]", "x[i, j:8]", "x[0:i]",
                  "x[i, 0:8]", "x[i, j, j:16]", "y[i, j:10]", "y[i, 1:j]", "x[i, j, 3]",
                  "x[i, 0:4, 2]", "x[0:2, j]"]
"#;
        let p = crate::load_program(text, "one_run.yaml", &config, &[]).unwrap();
        let ops = crate::engine::operands(&p.ops[2].kind);
        let mut patterns = 0;
        for o in ops {
            let crate::program::Ref::Tensor(t) = o.base else {
                unreachable!()
            };
            let shape = &p.tensors[t.index()].shape;
            let Some(one) = OneRun::of(o, shape) else {
                continue;
            };
            patterns += 1;
            for i in 0..4 {
                for j in 0..8 {
                    let mut want = Vec::new();
                    runs_of(o, shape, &[i, j], 1000, &mut want).unwrap();
                    let got: Vec<_> = one.at(&[i, j], 1000).unwrap().into_iter().collect();
                    assert_eq!(got, want, "{} at i={i} j={j}", o.text);
                }
            }
        }
        // all but the last two, which select several runs (a partial dimension outside an
        // index)
        assert_eq!(patterns, 11);
    }
}
