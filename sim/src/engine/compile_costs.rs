//! The compiler's static costs ([`super::compile`]'s `Compiler`): the cost template of a vector
//! op under `vector.block_bytes` and UB banks (with every slot combination's cost precomputed
//! when the operands are static), of an mmad, and a gm operand's side of a move under the memory
//! system. What is known at compile time is computed here once; the rest is left to
//! [`super::costs`] at issue.

use super::banks::{self, Scratch};
use super::code::Val;
use super::compile::Compiler;
use super::compiled::{mmad_work, BankTable, Cost, GmSide};
use super::gm_runs::OneRun;
use crate::footprint;
use crate::program::{Mmad, Ref};

/// Most slot combinations precomputed for one op; above this its bank cost is computed at
/// issue.
const MAX_TABLE: u64 = 4096;

impl<'p> Compiler<'p, '_> {
    /// The cost of a vector op with `vector.block_bytes` (and maybe `ub_banks`): inputs
    /// `lo..lo + nin`, outputs up to `lo + n`.
    pub(super) fn blocked_cost(
        &mut self,
        block: u64,
        repeat: u64,
        (cpr, startup): (u64, u64),
        lo: u32,
        nin: u32,
        n: u32,
    ) -> Cost<'p> {
        let per_repeat = (repeat / block).max(1);
        let opnds = &self.out.opnds[lo as usize..(lo + n) as usize];
        let all_static = opnds.iter().all(|o| o.static_runs);
        let Some(ub) = self.config.vector.ub_banks else {
            if all_static {
                let most = opnds
                    .iter()
                    .map(|o| banks::op_blocks(o, &[], block).unwrap_or(0))
                    .max()
                    .unwrap_or(0);
                return Cost::Fixed {
                    work: banks::repeats(most, per_repeat) * cpr,
                    startup,
                };
            }
            return Cost::Vector {
                repeat,
                block,
                cpr,
                startup,
                lo,
                hi: lo + n,
            };
        };
        let dynamic = Cost::BankedDyn {
            block,
            per_repeat,
            cpr,
            startup,
            lo,
            mid: lo + nin,
            hi: lo + n,
            memo: self.out.memos,
        };
        if !all_static {
            self.out.memos += 1;
            return dynamic;
        }
        // every slot combination, operand 0's slot varying fastest
        let mut mults = Vec::new();
        let mut combos = 1u64;
        for (k, o) in opnds.iter().enumerate() {
            let radix = o.multi.max(o.modulus) as u64;
            if radix > 1 {
                mults.push((k as u32, combos));
                combos = combos.saturating_mul(radix);
            }
        }
        if combos > MAX_TABLE {
            self.out.memos += 1;
            return dynamic;
        }
        let mut scratch = Scratch::default();
        let mut slots = vec![0u32; n as usize];
        let mut costs = Vec::with_capacity(combos as usize);
        for idx in 0..combos {
            for (i, &(k, mult)) in mults.iter().enumerate() {
                let radix = mults.get(i + 1).map_or(combos, |&(_, next)| next) / mult;
                slots[k as usize] = ((idx / mult) % radix) as u32;
            }
            if banks::fill(opnds, nin as usize, &slots, &[], block, &mut scratch).is_err() {
                self.out.memos += 1;
                return dynamic;
            }
            costs.push(banks::banked_work(
                &ub,
                block,
                per_repeat,
                cpr,
                &mut scratch,
            ));
        }
        let table = self.out.tables.len() as u32;
        self.out.tables.push(BankTable { mults, costs });
        Cost::Banked { table, startup }
    }

    /// Operand `i`, on a gm tensor, as the memory system sees it.
    pub(super) fn gm_side(&self, i: u32) -> GmSide<'p> {
        let o = &self.out.opnds[i as usize];
        let Ref::Tensor(t) = o.operand.base else {
            unreachable!("a gm operand is on a tensor");
        };
        let base = self.gm_base[t.index()];
        let runs = footprint::static_indices(o.operand).then(|| {
            let mut v = Vec::new();
            // static indices evaluate without variables; the loader checked their bounds
            let _ = super::gm_runs::runs_of(o.operand, o.shape, &[], base, &mut v);
            v
        });
        GmSide {
            opnd: i,
            base,
            one: runs
                .is_none()
                .then(|| OneRun::of(o.operand, o.shape))
                .flatten(),
            runs,
        }
    }

    pub(super) fn mmad_cost(&self, m: &'p Mmad, lo: u32) -> Cost<'p> {
        let (fm, fnn, kf) = super::work::cube_shape(self.config, m);
        let startup = self.config.cube.startup as u64;
        // constant sizes over constant operands the loader has checked against each other;
        // anything else is checked when it runs
        let sized = [Some(&m.a), Some(&m.b), Some(&m.c), m.bias.as_ref()]
            .into_iter()
            .flatten()
            .all(|o| o.elements.is_some());
        match (m.m.as_const(), m.n.as_const(), m.k.as_const()) {
            (Some(a), Some(b), Some(c)) if a >= 0 && b >= 0 && c >= 0 && sized => Cost::Fixed {
                work: mmad_work(a as u64, b as u64, c as u64, fm, fnn, kf),
                startup,
            },
            _ => Cost::Mmad {
                m: Val::new(&m.m),
                n: Val::new(&m.n),
                k: Val::new(&m.k),
                kf,
                fm,
                fnn,
                startup,
                lo,
                bias: m.bias.is_some(),
            },
        }
    }
}
