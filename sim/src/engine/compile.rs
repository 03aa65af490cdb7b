//! Compiles a [`Program`] once into the flat form the engine executes ([`super::compiled`]):
//! walks the ops in order, turning loops and ifs into jumps of the scalar-unit bytecode (with the
//! values each loop variable can take there, so that a bounds check they prove is left out), the
//! scalar unit's own ops into bytecode, and every op sent to a pipe into a send template. The
//! operand table is [`super::compile_opnds`]' job and the static costs [`super::compile_costs`]'.

use super::code::{Val, NO_LOOP};
use super::compiled::{
    Bounds, CompileError, Compiled, Cost, Kind, LoopSpec, MacroCost, MemSpec, SOp, Spec, NO_MEM,
};
use crate::addresses::Addresses;
use crate::config::{Config, PathConfig};
use crate::expr::Expr;
use crate::ids::{OpId, VarId};
use crate::program::{BarrierTarget, Layout, OpKind, Program};
use crate::types::{Pipe, Space};

/// One program's compilation under way: the compiled form as far as it goes and what the ops
/// still to come need. Its methods are in three rooms: this one (the walk), [`super::compile_opnds`]
/// and [`super::compile_costs`].
pub(super) struct Compiler<'p, 'c> {
    pub(super) program: &'p Program,
    pub(super) config: &'c Config,
    pub(super) out: Compiled<'p>,
    /// Dense loop index of each op (for/while), else NO_LOOP.
    pub(super) loop_index: Vec<u32>,
    /// Per-buffer slot-count overrides (0 or missing: the buffer's `multi`).
    pub(super) slot_counts: &'c [u32],
    pub(super) addresses: &'c Addresses,
    /// First byte of each gm tensor in the layout (with `memory`).
    pub(super) gm_base: Vec<u64>,
    /// The values each loop variable can take in the ops being compiled ([`var_range`]):
    /// set inside its loop's body only. Indexed by [`VarId`].
    pub(super) ranges: Vec<Option<(i64, i64)>>,
}

/// `slot_counts[b]`, when present and non-zero, replaces buffer b's `multi` as the modulus of
/// the automatic slot choice (see [`super::run_placed`]).
pub(super) fn compile<'p>(
    program: &'p Program,
    config: &Config,
    addresses: &Addresses,
) -> Result<Compiled<'p>, CompileError> {
    let slot_counts = &addresses.slot_counts();
    let Some(core) = config.cores.get(program.core.index()) else {
        return Err(CompileError {
            op: None,
            message: format!(
                "the program's core ({}) is not in config \"{}\"",
                program.core, config.name
            ),
        });
    };
    let mut pipe_mask = 1u8 << Pipe::S.index();
    for p in &core.pipes {
        pipe_mask |= 1 << p.index();
    }
    let mut loop_index = vec![NO_LOOP; program.ops.len()];
    let mut n = 0u32;
    for (i, op) in program.ops.iter().enumerate() {
        if matches!(op.kind, OpKind::For(_) | OpKind::While { .. }) {
            loop_index[i] = n;
            n += 1;
        }
    }
    let mut c = Compiler {
        program,
        config,
        out: Compiled {
            code: Vec::new(),
            specs: Vec::new(),
            opnds: Vec::new(),
            loops: Vec::new(),
            macros: Vec::new(),
            pipe_mask,
            max_operands: 0,
            tables: Vec::new(),
            memos: 0,
            mems: Vec::new(),
            gm_lines: 0,
        },
        loop_index,
        slot_counts,
        addresses,
        gm_base: Vec::new(),
        ranges: vec![None; program.vars.len()],
    };
    // the launch variables are fixed for a core's run, within the launch's ranges
    if let Some(v) = program.launch.block {
        c.ranges[v.index()] = Some((0, i64::from(program.launch.blocks) - 1));
    }
    if let Some(v) = program.launch.subblock {
        let per = crate::launch::aiv_per_aic(config);
        let most = if crate::launch::is_vector(config, program.core) {
            i64::from(per.max(1)) - 1
        } else {
            0
        };
        c.ranges[v.index()] = Some((0, most));
    }
    if let Some(m) = &config.memory {
        // declaration order, each tensor from a line
        let mut at = 0u64;
        for t in &program.tensors {
            c.gm_base.push(at);
            at = at
                .checked_add(t.bytes.div_ceil(m.line_bytes) * m.line_bytes)
                .ok_or_else(|| CompileError {
                    op: None,
                    message: "the gm tensors together exceed 2^64 bytes".into(),
                })?;
        }
        c.out.gm_lines = at / m.line_bytes;
        if c.out.gm_lines > crate::limits::MAX_GM_LINES {
            return Err(CompileError {
                op: None,
                message: format!(
                    "the gm tensors take {} lines of {} bytes, more than the memory system \
                     models ({})",
                    c.out.gm_lines,
                    m.line_bytes,
                    crate::limits::show(crate::limits::MAX_GM_LINES)
                ),
            });
        }
    }
    c.block(&program.body.ops)?;
    c.out.code.push(SOp::End);
    Ok(c.out)
}

fn err(op: OpId, message: String) -> CompileError {
    CompileError {
        op: Some(op),
        message,
    }
}

impl<'p> Compiler<'p, '_> {
    fn block(&mut self, ops: &'p [OpId]) -> Result<(), CompileError> {
        for &id in ops {
            self.op(id)?;
        }
        Ok(())
    }

    fn pc(&self) -> u32 {
        self.out.code.len() as u32
    }

    fn emit(&mut self, op: SOp<'p>) -> u32 {
        self.out.code.push(op);
        self.pc() - 1
    }

    fn has_pipe(&self, pipe: Pipe) -> bool {
        self.out.pipe_mask & (1 << pipe.index()) != 0
    }

    fn op(&mut self, id: OpId) -> Result<(), CompileError> {
        let program = self.program;
        let op = program.op(id);
        match &op.kind {
            OpKind::For(l) => {
                let range = var_range(&l.from, &l.to, &l.step, &self.ranges);
                self.emit_loop(
                    id,
                    (l.var, range),
                    Bounds::For {
                        from: Val::new(&l.from),
                        to: Val::new(&l.to),
                        step: Val::new(&l.step),
                    },
                    &l.body.ops,
                )
            }
            OpKind::While { var, trips, body } => {
                let range = safe_range(trips, &self.ranges)
                    .and_then(|(_, hi)| (hi >= 1).then_some((0, hi - 1)));
                self.emit_loop(
                    id,
                    (*var, range),
                    Bounds::While {
                        trips: Val::new(trips),
                    },
                    &body.ops,
                )
            }
            OpKind::If { cond, then, els } => {
                let at = self.emit(SOp::If {
                    op: id,
                    cond: Val::new(cond),
                    els: 0,
                });
                self.branch(cond, true, &then.ops)?;
                let target = if let Some(els) = els {
                    let jump = self.emit(SOp::Jump { to: 0 });
                    let target = self.pc();
                    self.branch(cond, false, &els.ops)?;
                    let end = self.pc();
                    self.out.code[jump as usize] = SOp::Jump { to: end };
                    target
                } else {
                    self.pc()
                };
                if let SOp::If { els, .. } = &mut self.out.code[at as usize] {
                    *els = target;
                }
                Ok(())
            }
            OpKind::Scalar { cycles } => {
                self.emit(SOp::Scalar {
                    op: id,
                    cycles: Val::new(cycles),
                });
                Ok(())
            }
            OpKind::Sload { src: o } | OpKind::Sstore { dst: o } => {
                let (lo, hi) = self.operands(op)?;
                let sc = &self.config.scalar;
                let cycles = match sc.gm_latency {
                    Some(g) if o.space == Space::Gm => g,
                    _ => sc.issue_cycles,
                } as u64;
                self.emit(SOp::SMem {
                    op: id,
                    lo,
                    hi,
                    cycles,
                });
                Ok(())
            }
            OpKind::Use { .. } => {
                let (lo, hi) = self.operands(op)?;
                if self.out.opnds[lo as usize..hi as usize]
                    .iter()
                    .any(|o| o.check)
                {
                    self.emit(SOp::Check { op: id, lo, hi });
                }
                Ok(())
            }
            OpKind::SetFlag { src, dst, id: fid } => self.flag(id, Kind::SetFlag, *src, *dst, fid),
            OpKind::WaitFlag { src, dst, id: fid } => {
                self.flag(id, Kind::WaitFlag, *src, *dst, fid)
            }
            OpKind::Barrier(BarrierTarget::All) => {
                self.emit(SOp::BarrierAll { op: id });
                Ok(())
            }
            OpKind::Barrier(BarrierTarget::Pipe(Pipe::S)) => {
                // S executes in order: nothing to wait for (the loader rejects it anyway).
                self.emit(SOp::Scalar {
                    op: id,
                    cycles: Val::Const(0),
                });
                Ok(())
            }
            OpKind::Barrier(BarrierTarget::Pipe(p)) => self.send_sync(id, *p, Kind::Barrier, None),
            OpKind::CrossSet {
                mode,
                pipe,
                id: xid,
            } => {
                let mode = mode.number() as u8;
                if *pipe == Pipe::S {
                    self.emit(SOp::CrossSet {
                        op: id,
                        mode,
                        id: Val::new(xid),
                    });
                    Ok(())
                } else {
                    self.need_pipe(id, *pipe)?;
                    self.send_cross(id, *pipe, Kind::CrossSet, Val::new(xid), u64::from(mode))
                }
            }
            OpKind::CrossWait { pipe, id: xid } => {
                if *pipe == Pipe::S {
                    self.emit(SOp::CrossWait {
                        op: id,
                        id: Val::new(xid),
                    });
                    Ok(())
                } else {
                    self.need_pipe(id, *pipe)?;
                    self.send_cross(id, *pipe, Kind::CrossWait, Val::new(xid), 0)
                }
            }
            OpKind::Load { src, dst, .. }
            | OpKind::Store { src, dst }
            | OpKind::Copy { src, dst }
            | OpKind::Fixpipe { src, dst, .. } => {
                let path = *self.path(id, src.space, dst.space)?;
                let nz = matches!(
                    op.kind,
                    OpKind::Load {
                        layout: Layout::Nz,
                        ..
                    }
                );
                let (lo, hi) = self.operands(op)?;
                let (s, d) = (lo, lo + 1);
                let mut path = path;
                let mem = match &self.config.memory {
                    Some(m) if src.space == Space::Gm || dst.space == Space::Gm => {
                        // what the memory system starts from: the path's own rate (an nz
                        // load's nz rate) and startup
                        let write_rate = match path.nz_bytes_per_cycle {
                            Some(r) if nz => r,
                            _ => path.bytes_per_cycle,
                        };
                        let spec = MemSpec {
                            read: (src.space == Space::Gm).then(|| self.gm_side(s)),
                            write: (dst.space == Space::Gm).then(|| self.gm_side(d)),
                            bpc: write_rate.max(1) as u64,
                            startup: path.startup as u64,
                        };
                        if src.space != Space::Gm {
                            // a write: bounded by the L2's write rate, its cost known at issue
                            let l2w = m.l2_write_bytes_per_cycle.min(u32::MAX as u64) as u32;
                            path.bytes_per_cycle = path.bytes_per_cycle.min(l2w.max(1));
                            path.nz_bytes_per_cycle =
                                path.nz_bytes_per_cycle.map(|r| r.min(l2w.max(1)));
                            path.startup = path
                                .startup
                                .saturating_add(m.l2_latency.min(u32::MAX as u64) as u32);
                        }
                        self.out.mems.push(spec);
                        self.out.mems.len() as u32 - 1
                    }
                    _ => NO_MEM,
                };
                let startup = path.startup as u64;
                let cost = match (self.static_bytes(s), self.static_bytes(d)) {
                    (Some(a), Some(b)) => Cost::Fixed {
                        work: path.move_work(a, b, nz),
                        startup,
                    },
                    _ => Cost::Move {
                        path,
                        nz,
                        src: s,
                        dst: d,
                    },
                };
                let kind = if mem == NO_MEM {
                    Kind::Work
                } else {
                    Kind::GmMove
                };
                self.send_work(id, path.pipe, kind, cost, (lo, hi))?;
                self.out.specs.last_mut().expect("just sent").mem = mem;
                Ok(())
            }
            OpKind::Vector(v) => {
                let (lo, hi) = self.operands(op)?;
                let n = (v.ins.len() + v.outs.len()) as u32;
                let vc = self.config.vector_cost(v.op);
                let repeat = self.config.vector.repeat_bytes.max(1) as u64;
                let (cpr, startup) = (vc.cycles_per_repeat as u64, vc.startup as u64);
                let cost = match self.config.vector.block_bytes {
                    Some(block) => self.blocked_cost(
                        block as u64,
                        repeat,
                        (cpr, startup),
                        lo,
                        v.ins.len() as u32,
                        n,
                    ),
                    None => {
                        let fixed = (lo..lo + n)
                            .map(|i| self.static_bytes(i))
                            .try_fold(0u64, |m, b| b.map(|b| m.max(b)));
                        match fixed {
                            Some(bytes) => Cost::Fixed {
                                work: bytes.div_ceil(repeat) * cpr,
                                startup,
                            },
                            None => Cost::Vector {
                                repeat,
                                block: 0,
                                cpr,
                                startup,
                                lo,
                                hi: lo + n,
                            },
                        }
                    }
                };
                self.send_work(id, Pipe::V, Kind::Work, cost, (lo, hi))
            }
            OpKind::Mmad(m) => {
                let (lo, hi) = self.operands(op)?;
                let cost = self.mmad_cost(m, lo);
                self.send_work(id, Pipe::M, Kind::Work, cost, (lo, hi))
            }
            OpKind::MmadL1(m) => {
                let (lo, hi) = self.operands(op)?;
                let pa = *self.path(id, m.a.space, Space::L0a)?;
                let pb = *self.path(id, m.b.space, Space::L0b)?;
                let cube = &self.config.cube;
                let (fm, fnn, kf) = super::work::cube_shape(self.config, m);
                let core = self.config.core(self.program.core);
                let half = |s: Space| core.scope(s).map_or(u64::MAX, |c| c.bytes / 2);
                let mc = self.out.macros.len() as u32;
                self.out.macros.push(MacroCost {
                    m: Val::new(&m.m),
                    n: Val::new(&m.n),
                    k: Val::new(&m.k),
                    kf,
                    fm,
                    fnn,
                    a: lo,
                    b: lo + 1,
                    pa,
                    pb,
                    half_a: half(Space::L0a),
                    half_b: half(Space::L0b),
                    m_startup: cube.startup as u64,
                });
                self.send_work(id, pa.pipe, Kind::Stage, Cost::MacroStage { mc }, (lo, hi))?;
                let cost = Cost::MacroM { mc };
                self.send_work(id, Pipe::M, Kind::MacroM, cost, (lo, hi))
            }
        }
    }

    /// Emits loop `id` over variable `var`, which takes values in `range` (when known) in
    /// `body`.
    fn emit_loop(
        &mut self,
        id: OpId,
        (var, range): (VarId, Option<(i64, i64)>),
        bounds: Bounds<'p>,
        body: &'p [OpId],
    ) -> Result<(), CompileError> {
        let lp = self.loop_index[id.index()];
        debug_assert_eq!(
            lp as usize,
            self.out.loops.len(),
            "loops are numbered in pre-order"
        );
        self.out.loops.push(LoopSpec {
            op: id,
            var,
            bounds,
        });
        self.emit(SOp::LoopEnter { lp });
        let head = self.emit(SOp::LoopHead { lp, exit: 0 });
        let outside = std::mem::replace(&mut self.ranges[var.index()], range);
        self.block(body)?;
        self.ranges[var.index()] = outside;
        self.emit(SOp::LoopBack { lp, head });
        let exit = self.pc();
        self.out.code[head as usize] = SOp::LoopHead { lp, exit };
        Ok(())
    }

    /// Compiles an `if` branch over the ranges its guard narrows ([`crate::guard::narrow`]):
    /// a check the narrowed ranges prove is left out, any other stays.
    fn branch(&mut self, cond: &Expr, holds: bool, ops: &'p [OpId]) -> Result<(), CompileError> {
        // a branch that never runs keeps every check: nothing is proven there
        let narrowed = crate::guard::narrow(cond, holds, &mut self.ranges);
        let r = self.block(ops);
        narrowed.undo(&mut self.ranges);
        r
    }

    fn need_pipe(&self, op: OpId, pipe: Pipe) -> Result<(), CompileError> {
        if self.has_pipe(pipe) {
            Ok(())
        } else {
            Err(err(
                op,
                format!(
                    "pipe {pipe} is not a pipe of core \"{}\"",
                    self.config.core(self.program.core).name
                ),
            ))
        }
    }

    /// A `set_flag` (`kind` SetFlag, on `src`) or `wait_flag` (on `dst`) of flag `fid`: the pipe
    /// at the other end must be the core's; on S it is bytecode, on a pipe a sent sync.
    fn flag(
        &mut self,
        op: OpId,
        kind: Kind,
        src: Pipe,
        dst: Pipe,
        fid: &'p Expr,
    ) -> Result<(), CompileError> {
        let set = kind == Kind::SetFlag;
        let (on, other) = if set { (src, dst) } else { (dst, src) };
        self.need_pipe(op, other)?;
        let id = Val::new(fid);
        if on != Pipe::S {
            return self.send_sync(op, on, kind, Some((src, dst, id)));
        }
        self.emit(if set {
            SOp::SetFlag { op, dst, id }
        } else {
            SOp::WaitFlag { op, src, id }
        });
        Ok(())
    }

    /// Sends a flag or barrier: no work, no startup, no operands.
    fn send_sync(
        &mut self,
        op: OpId,
        pipe: Pipe,
        kind: Kind,
        flag: Option<(Pipe, Pipe, Val<'p>)>,
    ) -> Result<(), CompileError> {
        let cost = Cost::Fixed {
            work: 0,
            startup: 0,
        };
        self.send(Spec {
            op,
            pipe,
            kind,
            cost,
            flag,
            lo: 0,
            hi: 0,
            mem: NO_MEM,
            plain: true,
            costed_by_slots: false,
            flag_base: 0,
            fast: false,
        })
    }

    /// Sends a cross-core set or wait on `pipe`: its id is evaluated at the send; `base` is a
    /// set's mode (see [`Spec::flag_base`]).
    fn send_cross(
        &mut self,
        op: OpId,
        pipe: Pipe,
        kind: Kind,
        id: Val<'p>,
        base: u64,
    ) -> Result<(), CompileError> {
        self.send(Spec {
            op,
            pipe,
            kind,
            cost: Cost::Fixed {
                work: 0,
                startup: 0,
            },
            flag: Some((pipe, pipe, id)),
            lo: 0,
            hi: 0,
            mem: NO_MEM,
            plain: true,
            costed_by_slots: false,
            flag_base: base,
            fast: false,
        })
    }

    /// Sends an instruction that works on the operands `lo..hi`.
    fn send_work(
        &mut self,
        op: OpId,
        pipe: Pipe,
        kind: Kind,
        cost: Cost<'p>,
        (lo, hi): (u32, u32),
    ) -> Result<(), CompileError> {
        self.send(Spec {
            op,
            pipe,
            kind,
            cost,
            flag: None,
            lo,
            hi,
            mem: NO_MEM,
            plain: true,
            costed_by_slots: false,
            flag_base: 0,
            fast: false,
        })
    }

    fn send(&mut self, mut spec: Spec<'p>) -> Result<(), CompileError> {
        self.need_pipe(spec.op, spec.pipe)?;
        spec.plain = self.out.opnds[spec.lo as usize..spec.hi as usize]
            .iter()
            .all(|o| o.slot.is_none() && !o.check);
        spec.costed_by_slots = matches!(spec.cost, Cost::Banked { .. } | Cost::BankedDyn { .. });
        if let (Some((src, dst, _)), false) = (
            spec.flag,
            matches!(spec.kind, Kind::CrossSet | Kind::CrossWait),
        ) {
            let events = self.config.sync.event_ids as u64;
            spec.flag_base = (src.index() * Pipe::COUNT + dst.index()) as u64 * events;
        }
        spec.fast = spec.is_fast();
        let at = self.out.specs.len() as u32;
        self.out.specs.push(spec);
        self.emit(SOp::Send { spec: at });
        Ok(())
    }

    fn path(&self, op: OpId, from: Space, to: Space) -> Result<&PathConfig, CompileError> {
        self.config.path(from, to).ok_or_else(|| {
            err(
                op,
                format!(
                    "config \"{}\" has no path {} -> {}",
                    self.config.name, from, to
                ),
            )
        })
    }
}

/// The values a `for` loop's variable takes, from the values its bounds can take: [from,
/// to - 1] for a constant step > 0, [to + 1, from] for one < 0; `None` when unknown or empty.
fn var_range(
    from: &Expr,
    to: &Expr,
    step: &Expr,
    ranges: &[Option<(i64, i64)>],
) -> Option<(i64, i64)> {
    let (flo, fhi) = safe_range(from, ranges)?;
    let (tlo, thi) = safe_range(to, ranges)?;
    let (lo, hi) = match step.as_const()? {
        s if s > 0 => (flo, thi.checked_sub(1)?),
        s if s < 0 => (tlo.checked_add(1)?, fhi),
        _ => return None,
    };
    (lo <= hi).then_some((lo, hi))
}

/// An inclusive range holding every value `e` takes when each loop variable `v` lies in
/// `ranges[v]`, such that evaluating `e` cannot fail there ([`Expr::checked_range`]).
pub(super) fn safe_range(e: &Expr, ranges: &[Option<(i64, i64)>]) -> Option<(i64, i64)> {
    e.checked_range(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BinOp, Expr, UnOp};

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn loop_variable_ranges() {
        let c = Expr::Const;
        let v = Expr::Var(VarId::new(0));
        let r = [Some((2, 5))];
        // from 0 to 10 by 3: 0, 3, 6, 9 within [0, 9]
        assert_eq!(var_range(&c(0), &c(10), &c(3), &r), Some((0, 9)));
        // down from v (2..=5) to -1: [0, 5]
        assert_eq!(var_range(&v, &c(-1), &c(-1), &r), Some((0, 5)));
        // a step that is not a known constant, or a loop that never runs
        assert_eq!(var_range(&c(0), &c(10), &v, &r), None);
        assert_eq!(var_range(&c(5), &c(5), &c(1), &r), None);
    }

    #[test]
    fn safe_ranges_refuse_what_may_fail() {
        let c = Expr::Const;
        let v = Expr::Var(VarId::new(0));
        let r = [Some((-3, 5))];
        assert_eq!(
            safe_range(&bin(BinOp::Rem, v.clone(), c(4)), &r),
            Some((0, 3))
        );
        assert_eq!(
            safe_range(&bin(BinOp::Div, v.clone(), c(2)), &r),
            Some((-2, 2))
        );
        assert_eq!(
            safe_range(&bin(BinOp::Mul, v.clone(), c(-2)), &r),
            Some((-10, 6))
        );
        // may divide by zero, may overflow (inside a `!` too), or a variable with no range
        assert_eq!(safe_range(&bin(BinOp::Div, c(4), v.clone()), &r), None);
        let huge = bin(BinOp::Mul, v.clone(), c(i64::MAX));
        assert_eq!(safe_range(&huge, &r), None);
        assert_eq!(
            safe_range(&Expr::Unary(UnOp::Not, Box::new(huge)), &r),
            None
        );
        assert_eq!(safe_range(&v, &[None]), None);
    }
}
