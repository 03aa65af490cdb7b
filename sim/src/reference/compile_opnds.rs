//! The compiler's operand table ([`super::compile`]'s `Compiler`): each op's operands in field
//! order, flattened into [`Opnd`]s with what the hot path needs (slot modulus, loop counter,
//! static bytes, window chain), and whether an operand's run-time bounds check can be left out
//! because it passes for every value the loop variables can take where it is compiled.

use super::code::{Opnd, Val, WindowCheck, NO_LOOP};
use super::compile::{safe_range, Compiler};
use super::compiled::CompileError;
use crate::expr::Expr;
use crate::footprint::{self, Bases, Sel};
use crate::program::{Op, OpKind, Operand, Quant, Ref, View};

/// The operands of an op in field order; the order of [`super::Issue::slots`].
pub fn operands(kind: &OpKind) -> Vec<&Operand> {
    match kind {
        OpKind::Load { src, dst, .. } | OpKind::Store { src, dst } | OpKind::Copy { src, dst } => {
            vec![src, dst]
        }
        OpKind::Fixpipe {
            src, dst, quant, ..
        } => {
            let mut v = vec![src, dst];
            if let Quant::Tensor(q) = quant {
                v.push(q);
            }
            v
        }
        OpKind::Mmad(m) | OpKind::MmadL1(m) => {
            let mut v = vec![&m.a, &m.b, &m.c];
            v.extend(m.bias.iter());
            v
        }
        OpKind::Vector(v) => v
            .ins
            .iter()
            .chain(v.outs.iter())
            .chain(v.tmp.iter())
            .collect(),
        OpKind::Sload { src } => vec![src],
        OpKind::Sstore { dst } => vec![dst],
        OpKind::Use { operands } => operands.iter().collect(),
        _ => vec![],
    }
}

impl<'p> Compiler<'p, '_> {
    pub(super) fn static_bytes(&self, i: u32) -> Option<u64> {
        self.out.opnds[i as usize].static_bytes
    }

    /// Appends the op's operands to the operand table; returns their range.
    pub(super) fn operands(&mut self, op: &'p Op) -> Result<(u32, u32), CompileError> {
        let lo = self.out.opnds.len() as u32;
        let counter = op
            .loop_parent
            .map_or(NO_LOOP, |l| self.loop_index[l.index()]);
        let list = operands(&op.kind);
        self.out.max_operands = self.out.max_operands.max(list.len());
        for o in list {
            let opnd = self.opnd(o, counter);
            self.out.opnds.push(opnd);
        }
        Ok((lo, self.out.opnds.len() as u32))
    }

    fn opnd(&self, o: &'p Operand, counter: u32) -> Opnd<'p> {
        let program = self.program;
        let bases = Bases::of(program);
        let shape = bases.shape(o.base);
        let roots = bases.roots(o.base);
        let multi = roots
            .iter()
            .map(|b| program.buffer(*b).multi)
            .max()
            .unwrap_or(1)
            .max(1);
        let modulus = roots
            .iter()
            .map(|b| match self.slot_counts.get(b.index()) {
                Some(&n) if n > 0 => n,
                _ => program.buffer(*b).multi,
            })
            .max()
            .unwrap_or(1)
            .max(1);
        let windows: Vec<WindowCheck> = bases
            .windows(o.base)
            .into_iter()
            .filter(|(_, _, offset)| offset.as_const().is_none())
            .map(|(view, of, offset)| WindowCheck {
                offset: Val::new(offset),
                len: view.shape.iter().product(),
                of_len: bases.shape(of).iter().product(),
                name: &view.name,
            })
            .collect();
        let dynamic_index = !footprint::static_indices(o);
        let slot_dyn = o.slot.as_ref().is_some_and(|s| s.as_const().is_none());
        // a check that cannot fail for any value the loop variables take here is left out
        let bounded = dynamic_index || !windows.is_empty();
        let check = slot_dyn || (bounded && !self.in_bounds(o, shape, &bases.windows(o.base)));
        let chain = bases.windows(o.base);
        let win_const = chain
            .iter()
            .filter_map(|(_, _, offset)| offset.as_const())
            .map(|c| c.max(0) as u64)
            .sum();
        let addrs = match (self.config.vector.ub_banks, roots.first()) {
            (Some(_), Some(&b)) => match self.addresses.offsets.get(b.index()) {
                Some(list) if !list.is_empty() => list.clone(),
                _ => program.buffer(b).at.clone().unwrap_or_default(),
            },
            _ => Vec::new(),
        };
        Opnd {
            operand: o,
            shape,
            multi,
            modulus,
            slot: o.slot.as_ref().map(Val::new),
            counter,
            static_bytes: o.bytes(),
            check,
            static_runs: !dynamic_index && windows.is_empty(),
            windows,
            win_const,
            addrs,
        }
    }
}

impl<'p> Compiler<'p, '_> {
    /// Whether the run-time bounds check of operand `o` (on a base of `shape`, with the window
    /// chain `windows`) passes for every value the loop variables can take where it is
    /// compiled: every index, slice bound and window offset evaluates without error
    /// ([`safe_range`]) and lies in bounds. The rules are [`super::costs`]' `check_operand`.
    fn in_bounds(&self, o: &Operand, shape: &[u64], windows: &[(&View, Ref, &Expr)]) -> bool {
        let r = &self.ranges;
        if o.indices.len() > shape.len() {
            return false;
        }
        let dims = shape.iter().enumerate().take(o.indices.len());
        let dims_ok = dims.into_iter().all(|(d, &dim)| match Sel::of(o, d, dim) {
            Sel::Whole(_) => true,
            Sel::At(e) => safe_range(e, r).is_some_and(|(lo, hi)| lo >= 0 && (hi as u64) < dim),
            Sel::Slice(a, b) => match (safe_range(a, r), safe_range(b, r)) {
                (Some((alo, ahi)), Some((blo, bhi))) => {
                    alo >= 0
                        && bhi >= 0
                        && bhi as u64 <= dim
                        && (blo >= ahi || Expr::const_difference(b, a).is_some_and(|k| k >= 0))
                }
                _ => false,
            },
        });
        dims_ok
            && windows.iter().all(|(view, of, offset)| {
                let len: u64 = view.shape.iter().product();
                let of_len: u64 = Bases::of(self.program).shape(*of).iter().product();
                safe_range(offset, r).is_some_and(|(lo, hi)| {
                    lo >= 0
                        && (hi as u64)
                            .checked_add(len)
                            .is_some_and(|end| end <= of_len)
                })
            })
    }
}
