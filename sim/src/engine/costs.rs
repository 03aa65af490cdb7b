//! What an instruction about to be sent needs evaluated for the current loop variables: its
//! operands' slots and dynamic bounds, the byte runs of its dynamic gm operands, and its cost
//! (work, startup, chunks, bank conflicts) by the rules of docs/timing.md. Reads the core's
//! variables and loops; changes nothing but the operand scratch, the run pool and the bank
//! memos.

use super::banks;
use super::code::{Opnd, NO_LOOP};
use super::compiled::{chunk_bytes, chunking, mmad_needs, mmad_work, Cost, GmSide, NO_MEM};
use super::gm_runs::runs_of;
use super::state::{Core, Fail, R};
use crate::footprint::{self, Sel};
use crate::ids::OpId;

impl<'p, 'c> Core<'p, 'c> {
    /// The runs of a gm side whose operand depends on the loop variables, into a pool slot
    /// (its number); [`NO_MEM`] for a static side.
    #[inline]
    pub(super) fn dynamic_runs(&mut self, op: OpId, side: &GmSide) -> R<u32> {
        if side.runs.is_some() {
            return Ok(NO_MEM);
        }
        let slot = match self.pool_free.pop() {
            Some(s) => s,
            None => {
                self.pool.push(Vec::new());
                self.pool.len() as u32 - 1
            }
        };
        if let Some(run) = side
            .one
            .as_ref()
            .and_then(|one| one.at(&self.vars, side.base))
        {
            self.pool[slot as usize].extend(run);
            return Ok(slot);
        }
        let o = &self.c.opnds[side.opnd as usize];
        let mut v = std::mem::take(&mut self.pool[slot as usize]);
        let r = runs_of(o.operand, o.shape, &self.vars, side.base, &mut v);
        self.pool[slot as usize] = v;
        if let Err((e, expr)) = r {
            return Err(self.eval_fail(op, e, expr));
        }
        Ok(slot)
    }

    /// Chooses each operand's slot into the scratch and checks dynamic bounds; returns the
    /// operand count.
    #[inline]
    pub(super) fn prepare_operands(&mut self, op: OpId, lo: u32, hi: u32) -> R<usize> {
        let c = self.c;
        let opnds = &c.opnds[lo as usize..hi as usize];
        for (k, o) in opnds.iter().enumerate() {
            let slot = if let Some(s) = o.slot {
                let v = self.eval(op, &s)?;
                if v < 0 || v >= o.multi as i64 {
                    return Err(Box::new(Fail {
                        op,
                        message: format!(
                            "slot {v} of \"{}\" is outside 0..{}",
                            o.operand.text, o.multi
                        ),
                    }));
                }
                v as u32
            } else if o.modulus > 1 && o.counter != NO_LOOP {
                let done = self.loops[o.counter as usize].completed;
                // a double buffer's slot without a 64-bit division
                if o.modulus.is_power_of_two() {
                    (done & (o.modulus as u64 - 1)) as u32
                } else {
                    (done % o.modulus as u64) as u32
                }
            } else {
                0
            };
            self.slots[k] = slot;
            if o.check {
                self.check_operand(op, o)?;
            }
        }
        Ok(opnds.len())
    }

    #[inline]
    pub(super) fn check_operand(&self, op: OpId, o: &Opnd<'p>) -> R<()> {
        if o.operand.indices.len() > o.shape.len() {
            return Err(Box::new(Fail {
                op,
                message: format!("\"{}\" has more indices than dimensions", o.operand.text),
            }));
        }
        for (d, &dim) in o.shape.iter().enumerate().take(o.operand.indices.len()) {
            let sel = Sel::of(o.operand, d, dim);
            let (a, b) = sel
                .at(&self.vars)
                .map_err(|(e, expr)| self.eval_fail(op, e, expr))?;
            match sel {
                Sel::At(_) if a < 0 || a as u64 >= dim => {
                    return Err(Box::new(Fail {
                        op,
                        message: format!(
                            "index {a} out of bounds for dimension {d} (size {dim}) of \"{}\"",
                            o.operand.text
                        ),
                    }));
                }
                Sel::Slice(..) if a < 0 || b < a || b as u64 > dim => {
                    return Err(Box::new(Fail {
                        op,
                        message: format!(
                            "slice {a}:{b} out of bounds for dimension {d} (size {dim}) of \"{}\"",
                            o.operand.text
                        ),
                    }));
                }
                _ => {}
            }
        }
        for w in &o.windows {
            let off = self.eval(op, &w.offset)?;
            if off < 0 || (off as u64).saturating_add(w.len) > w.of_len {
                return Err(Box::new(Fail {
                    op,
                    message: format!(
                        "window \"{}\" at offset {off} ({} elements) is outside its base ({} elements)",
                        w.name, w.len, w.of_len
                    ),
                }));
            }
        }
        Ok(())
    }

    /// Bytes an operand selects for the current loop variables.
    #[inline]
    pub(super) fn bytes(&self, op: OpId, i: u32) -> R<u64> {
        let o = &self.c.opnds[i as usize];
        if let Some(b) = o.static_bytes {
            return Ok(b);
        }
        let elements = footprint::count_at(o.operand, o.shape, &self.vars)
            .map_err(|(e, expr)| self.eval_fail(op, e, expr))?;
        Ok(o.operand.dtype.bytes_for(elements))
    }

    /// (work of a chunk, startup, chunks, work of the last chunk, bank conflict cycles) of an
    /// instruction about to be sent, its operands' slots in the scratch: one chunk but for the
    /// parts of an `mmad_l1`.
    #[inline]
    pub(super) fn cost(&self, op: OpId, cost: &Cost<'p>) -> R<(u64, u64, u64, u64, u64)> {
        if let Cost::Banked { table, startup } = *cost {
            let t = &self.c.tables[table as usize];
            let mut idx = 0;
            for &(k, mult) in &t.mults {
                idx += self.slots[k as usize] as u64 * mult;
            }
            let (work, conflict) = t.costs[idx as usize];
            return Ok((work, startup, 1, work, conflict));
        }
        if let Cost::BankedDyn {
            block,
            per_repeat,
            cpr,
            startup,
            lo,
            mid,
            hi,
            memo,
        } = *cost
        {
            let ub = self
                .ub_banks
                .as_ref()
                .expect("a banked cost needs ub_banks");
            let opnds = &self.c.opnds[lo as usize..hi as usize];
            let mut s = self.scratch.borrow_mut();
            banks::fill(
                opnds,
                (mid - lo) as usize,
                &self.slots,
                &self.vars,
                block,
                &mut s,
            )
            .map_err(|(e, expr)| self.eval_fail(op, e, expr))?;
            let mut memos = self.memos.borrow_mut();
            let m = &mut memos[memo as usize];
            let (work, conflict) = match m.get(&s) {
                Some(cost) => cost,
                None => {
                    let cost = banks::banked_work(ub, block, per_repeat, cpr, &mut s);
                    m.put(&s, cost);
                    cost
                }
            };
            return Ok((work, startup, 1, work, conflict));
        }
        let (work, startup) = match *cost {
            Cost::Fixed { work, startup } => (work, startup),
            Cost::Move {
                ref path,
                nz,
                src,
                dst,
            } => {
                let (s, d) = (self.bytes(op, src)?, self.bytes(op, dst)?);
                (path.move_work(s, d, nz), path.startup as u64)
            }
            Cost::Vector {
                repeat,
                block: 0,
                cpr,
                startup,
                lo,
                hi,
            } => {
                let mut b = 0;
                for i in lo..hi {
                    b = b.max(self.bytes(op, i)?);
                }
                (b.div_ceil(repeat) * cpr, startup)
            }
            Cost::Vector {
                repeat,
                block,
                cpr,
                startup,
                lo,
                hi,
            } => {
                let mut most = 0;
                for o in &self.c.opnds[lo as usize..hi as usize] {
                    let blocks = banks::op_blocks(o, &self.vars, block)
                        .map_err(|(e, expr)| self.eval_fail(op, e, expr))?;
                    most = most.max(blocks);
                }
                (banks::repeats(most, repeat / block) * cpr, startup)
            }
            Cost::Banked { .. } | Cost::BankedDyn { .. } => unreachable!("handled above"),
            Cost::Mmad {
                m,
                n,
                k,
                kf,
                fm,
                fnn,
                startup,
                lo,
                bias,
            } => {
                let mut dims = [0u64; 3];
                for (slot, (name, v)) in dims.iter_mut().zip([("m", m), ("n", n), ("k", k)]) {
                    let x = self.eval(op, &v)?;
                    if x < 0 {
                        return Err(Box::new(Fail {
                            op,
                            message: format!("mmad {name} = {x} is negative"),
                        }));
                    }
                    *slot = x as u64;
                }
                self.mmad_fits(op, lo, bias, dims)?;
                (mmad_work(dims[0], dims[1], dims[2], fm, fnn, kf), startup)
            }
            Cost::MacroStage { mc } | Cost::MacroM { mc } => {
                let mc = &self.c.macros[mc as usize];
                let mut dims = [0u64; 3];
                for (slot, (name, v)) in
                    dims.iter_mut().zip([("m", mc.m), ("n", mc.n), ("k", mc.k)])
                {
                    let x = self.eval(op, &v)?;
                    if x < 0 {
                        return Err(Box::new(Fail {
                            op,
                            message: format!("mmad {name} = {x} is negative"),
                        }));
                    }
                    *slot = x as u64;
                }
                self.mmad_fits(op, mc.a, false, dims)?;
                let [m, n, k] = dims;
                let (a, b) = (self.bytes(op, mc.a)?, self.bytes(op, mc.b)?);
                let (chunks, per) = chunking(k, mc.kf, (a, mc.half_a), (b, mc.half_b));
                let last = k - (chunks - 1) * per;
                let chunk = |kc: u64| -> u64 {
                    if matches!(cost, Cost::MacroM { .. }) {
                        mmad_work(m, n, kc, mc.fm, mc.fnn, mc.kf)
                    } else {
                        let (ca, cb) = (chunk_bytes(a, kc, k), chunk_bytes(b, kc, k));
                        mc.pa.move_work(ca, ca, false) + mc.pb.move_work(cb, cb, false)
                    }
                };
                let startup = if matches!(cost, Cost::MacroM { .. }) {
                    mc.m_startup
                } else {
                    mc.pa.startup.max(mc.pb.startup) as u64
                };
                return Ok((chunk(per), startup, chunks, chunk(last), 0));
            }
        };
        Ok((work, startup, 1, work, 0))
    }

    /// Whether an mmad's evaluated sizes fit its operands (a at least m × k elements, b k × n,
    /// c m × n, bias n), whose table entries start at `lo`: sizes beyond the buffers are a
    /// run-time error, as the loader's error for constant ones, not a multiply of a matrix
    /// that is not there (whose cost could be 10^16 cycles).
    pub(super) fn mmad_fits(&self, op: OpId, lo: u32, bias: bool, dims: [u64; 3]) -> R<()> {
        for (i, (key, names, vals, want)) in mmad_needs(dims, bias).enumerate() {
            let o = &self.c.opnds[lo as usize + i];
            let have = match o.operand.elements {
                Some(e) => e,
                None => footprint::count_at(o.operand, o.shape, &self.vars)
                    .map_err(|(e, expr)| self.eval_fail(op, e, expr))?,
            };
            if u128::from(have) < want {
                let sizes = if key == "bias" {
                    format!("n = {}", vals[0])
                } else {
                    format!("{} × {} = {} × {}", names[0], names[1], vals[0], vals[1])
                };
                return Err(Box::new(Fail {
                    op,
                    message: format!(
                        "{} {key} \"{}\" is too small: {have} elements, but {sizes} needs {want}",
                        self.program.op(op).kind.name(),
                        o.operand.text
                    ),
                }));
            }
        }
        Ok(())
    }
}
