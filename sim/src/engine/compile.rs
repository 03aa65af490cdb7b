//! Compiles a [`Program`] once into the flat form the engine executes: a scalar-unit bytecode
//! ([`SOp`]) with loops and ifs as jumps, a table of send templates ([`Spec`]) whose costs are
//! precomputed when they are static, and a flat operand table ([`Opnd`]) with everything the
//! hot path needs (slot modulus, loop counter, static bytes, whether run-time bounds checks are
//! needed). Every id is a dense `u32`; nothing here is touched by strings at run time.

use super::banks::{self, Scratch};
use super::code::{Opnd, Val, WindowCheck, NO_LOOP};
use super::memory::OneRun;
use crate::addresses::Addresses;
use crate::config::{Config, PathConfig};
use crate::expr::Expr;
use crate::footprint::{self, Bases, Sel};
use crate::ids::{OpId, VarId};
use crate::program::{BarrierTarget, Layout, Mmad, Op, OpKind, Operand, Program, Quant, Ref, View};
use crate::types::{Pipe, Space};

/// "No gm memory action" in [`Spec::mem`].
pub(super) const NO_MEM: u32 = u32::MAX;

/// What a queue entry does when it reaches the head of its pipe.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(u8)]
pub(super) enum Kind {
    /// A move, vector op or mmad: busy for `work`, completes `startup` later.
    #[default]
    Work,
    /// Waits until every earlier instruction of the pipe has completed, then sets a flag.
    SetFlag,
    /// Waits until the flag is visible, then clears it.
    WaitFlag,
    /// `barrier: P`: waits until every earlier instruction of the pipe has completed.
    Barrier,
    /// `cross_set`: waits like a set_flag, then signals its counter in its mode.
    CrossSet,
    /// `cross_wait`: waits until the core's counter is above 0, then takes one.
    CrossWait,
    /// The MTE1 part of an `mmad_l1`.
    Stage,
    /// The M part of an `mmad_l1`: waits until its MTE1 part has completed.
    MacroM,
    /// A move that reads or writes gm under the memory system: like `Work`, but its cost is
    /// decided (reads) and its lines taken at its start ([`Spec::mem`]).
    GmMove,
}

/// How the cost of a sent instruction is found.
#[derive(Clone, Debug)]
pub(super) enum Cost<'p> {
    Fixed {
        work: u64,
        startup: u64,
    },
    /// A move on `path` reading operand `src` and writing operand `dst` (absolute operand
    /// indices): [`PathConfig::move_work`].
    Move {
        path: PathConfig,
        nz: bool,
        src: u32,
        dst: u32,
    },
    /// bytes = max over operands `lo..hi` (ins and outs); with `block` > 0 (`vector.block_bytes`)
    /// repeats = ceil(most blocks / (repeat / block)) instead.
    Vector {
        repeat: u64,
        block: u64,
        cpr: u64,
        startup: u64,
        lo: u32,
        hi: u32,
    },
    /// UB banks, operands static: the work and conflict cycles of every slot combination,
    /// precomputed in `Compiled::tables[table]`.
    Banked {
        table: u32,
        startup: u64,
    },
    /// UB banks, operands known only at issue: inputs `lo..mid`, outputs `mid..hi`; its
    /// [`super::banks::Memo`] is number `memo` of the run's.
    BankedDyn {
        block: u64,
        per_repeat: u64,
        cpr: u64,
        startup: u64,
        lo: u32,
        mid: u32,
        hi: u32,
        memo: u32,
    },
    Mmad {
        m: Val<'p>,
        n: Val<'p>,
        k: Val<'p>,
        /// Elements of k per fractal: fractal_k_bytes / dtype bytes of a (at least 1).
        kf: u64,
        fm: u64,
        fnn: u64,
        startup: u64,
        /// The operand table's a, b, c (and bias) from here: the sizes are checked against
        /// them at run time ([`mmad_needs`]).
        lo: u32,
        bias: bool,
    },
    /// The MTE1 part of the mmad_l1 `macros[mc]`: per chunk, the copies of its a and b parts.
    MacroStage {
        mc: u32,
    },
    /// The M part of the mmad_l1 `macros[mc]`: per chunk, an mmad of the chunk's k.
    MacroM {
        mc: u32,
    },
}

/// What both parts of one `mmad_l1` need to split its k into chunks and cost them.
#[derive(Clone, Debug)]
pub(super) struct MacroCost<'p> {
    pub m: Val<'p>,
    pub n: Val<'p>,
    pub k: Val<'p>,
    /// Elements of k per fractal: fractal_k_bytes / dtype bytes of a (at least 1).
    pub kf: u64,
    pub fm: u64,
    pub fnn: u64,
    /// Operands a and b (absolute operand indices).
    pub a: u32,
    pub b: u32,
    /// The `a.space -> l0a` and `b.space -> l0b` paths.
    pub pa: PathConfig,
    pub pb: PathConfig,
    /// Half of L0A and of L0B (`u64::MAX` when the core has no such scope).
    pub half_a: u64,
    pub half_b: u64,
    pub m_startup: u64,
}

/// The split of an `mmad_l1`'s k: `chunks` chunks of `per` k elements, the last one
/// k - (chunks - 1) × per. The fewest chunks of whole fractals (kf elements) whose share of
/// a (`a_bytes` × chunk k / k, rounded up) fits `half_a` and of b fits `half_b`, made as equal as
/// whole fractals allow; one fractal per chunk when even that does not fit. k = 0: one empty chunk.
pub(super) fn chunking(
    k: u64,
    kf: u64,
    (a_bytes, half_a): (u64, u64),
    (b_bytes, half_b): (u64, u64),
) -> (u64, u64) {
    if k == 0 {
        return (1, 0);
    }
    let kf = kf.max(1);
    let fractals = k.div_ceil(kf);
    // the most fractals whose share of `bytes` fits `half`: bytes × kc / k <= half
    let fit = |bytes: u64, half: u64| -> u64 {
        if bytes == 0 {
            return fractals;
        }
        let kmax = (half as u128 * k as u128 / bytes as u128).min(u64::MAX as u128) as u64;
        if kmax >= k {
            fractals
        } else {
            kmax / kf
        }
    };
    let f = fit(a_bytes, half_a)
        .min(fit(b_bytes, half_b))
        .clamp(1, fractals);
    let chunks = fractals.div_ceil(f);
    let per = (fractals.div_ceil(chunks) * kf).min(k);
    (chunks, per)
}

/// The bytes of a chunk of `kc` of `k` elements of k, of an operand of `bytes`: bytes × kc / k,
/// rounded up.
#[inline]
pub(super) fn chunk_bytes(bytes: u64, kc: u64, k: u64) -> u64 {
    if kc >= k {
        bytes
    } else {
        (bytes as u128 * kc as u128).div_ceil(k as u128) as u64
    }
}

/// A template for one instruction S sends to a pipe.
#[derive(Clone, Debug)]
pub(super) struct Spec<'p> {
    pub op: OpId,
    pub pipe: Pipe,
    pub kind: Kind,
    pub cost: Cost<'p>,
    /// (src, dst, id) of a set_flag / wait_flag.
    pub flag: Option<(Pipe, Pipe, Val<'p>)>,
    /// The op's operands, `lo..hi` in the operand table (see [`super::operands`]).
    pub lo: u32,
    pub hi: u32,
    /// Its entry in [`Compiled::mems`] (a move that reads or writes gm, when the config has a
    /// `memory` section), else [`NO_MEM`].
    pub mem: u32,
    /// Whether no operand has an explicit slot (`@k`) or needs a run-time bounds check: then
    /// choosing the slots can fail on nothing, and is needed only by an observer or `costed_by_slots`.
    pub plain: bool,
    /// Whether the cost depends on the operands' slots (UB banks).
    pub costed_by_slots: bool,
    /// A set/wait's flag index for id 0: (src × pipes + dst) × event_ids; a `cross_set`'s
    /// mode ([`crate::program::CrossMode::number`]).
    pub flag_base: u64,
}

/// One gm side of a move under the memory system: the operand, and its runs when static.
#[derive(Clone, Debug)]
pub(super) struct GmSide<'p> {
    /// Absolute operand index.
    pub opnd: u32,
    /// First byte of the operand's tensor in the gm layout.
    pub base: u64,
    /// Its byte runs in the gm layout ([`super::memory::runs_of`]) when the operand does not
    /// depend on loop variables.
    pub runs: Option<Vec<(u64, u64)>>,
    /// When it does, and is one contiguous run whatever they are: that run's pattern.
    pub one: Option<OneRun<'p>>,
}

/// A move that reads or writes gm, under the memory system.
#[derive(Clone, Debug)]
pub(super) struct MemSpec<'p> {
    /// The gm source: looked up when the move starts (work and startup are decided then).
    pub read: Option<GmSide<'p>>,
    /// The gm destination: its lines are allocated when the move starts.
    pub write: Option<GmSide<'p>>,
    /// The path's bytes per cycle and startup.
    pub bpc: u64,
    pub startup: u64,
}

/// A dynamic loop (for or while).
#[derive(Clone, Debug)]
pub(super) struct LoopSpec<'p> {
    pub op: OpId,
    pub var: VarId,
    pub bounds: Bounds<'p>,
}

#[derive(Clone, Debug)]
pub(super) enum Bounds<'p> {
    For {
        from: Val<'p>,
        to: Val<'p>,
        step: Val<'p>,
    },
    While {
        trips: Val<'p>,
    },
}

/// The scalar unit's bytecode.
#[derive(Clone, Copy, Debug)]
pub(super) enum SOp<'p> {
    /// Evaluates the bounds of loop `lp` (no cycles).
    LoopEnter {
        lp: u32,
    },
    /// Starts the next iteration (`loop_cycles`) or jumps to `exit`.
    LoopHead {
        lp: u32,
        exit: u32,
    },
    /// Ends an iteration: counts it and jumps back to `head`.
    LoopBack {
        lp: u32,
        head: u32,
    },
    /// `branch_cycles`, then falls through (cond true) or jumps to `els`.
    If {
        op: OpId,
        cond: Val<'p>,
        els: u32,
    },
    Jump {
        to: u32,
    },
    Scalar {
        op: OpId,
        cycles: Val<'p>,
    },
    /// sload / sstore: `cycles` (`issue_cycles`, or `scalar.gm_latency` for a gm operand),
    /// operands `lo..hi`.
    SMem {
        op: OpId,
        lo: u32,
        hi: u32,
        cycles: u64,
    },
    /// `use` with operands that need run-time bounds checks (no cycles).
    Check {
        op: OpId,
        lo: u32,
        hi: u32,
    },
    /// A set_flag whose source is S.
    SetFlag {
        op: OpId,
        dst: Pipe,
        id: Val<'p>,
    },
    /// A wait_flag whose destination is S.
    WaitFlag {
        op: OpId,
        src: Pipe,
        id: Val<'p>,
    },
    BarrierAll {
        op: OpId,
    },
    /// A cross_set executed by S.
    CrossSet {
        op: OpId,
        mode: u8,
        id: Val<'p>,
    },
    /// A cross_wait that blocks S.
    CrossWait {
        op: OpId,
        id: Val<'p>,
    },
    /// Sends the instruction `spec`.
    Send {
        spec: u32,
    },
    End,
}

/// The compiled program.
#[derive(Clone, Debug)]
pub(super) struct Compiled<'p> {
    pub code: Vec<SOp<'p>>,
    pub specs: Vec<Spec<'p>>,
    pub opnds: Vec<Opnd<'p>>,
    pub loops: Vec<LoopSpec<'p>>,
    /// The `mmad_l1`s ([`Cost::MacroStage`], [`Cost::MacroM`]).
    pub macros: Vec<MacroCost<'p>>,
    /// The core's pipes, as a bit set over [`Pipe::index`].
    pub pipe_mask: u8,
    /// Largest operand count of one op (scratch size for slots).
    pub max_operands: usize,
    /// [`Cost::Banked`] tables.
    pub tables: Vec<BankTable>,
    /// How many [`Cost::BankedDyn`] costs there are (each has a memo at run time).
    pub memos: u32,
    /// The gm moves under the memory system ([`Spec::mem`]).
    pub mems: Vec<MemSpec<'p>>,
    /// Lines of the gm layout (every tensor, each from a line); 0 without `memory`.
    pub gm_lines: u64,
}

/// The (work, bank conflict cycles) of a static vector op for every combination of its
/// operands' slots: entry Σ slot(k) × mult over `mults`' (operand k, mult) pairs.
#[derive(Clone, Debug)]
pub(super) struct BankTable {
    pub mults: Vec<(u32, u64)>,
    pub costs: Vec<(u64, u64)>,
}

/// Most slot combinations precomputed for one op; above this its bank cost is computed at
/// issue.
const MAX_TABLE: u64 = 4096;

/// What an mmad's sizes `[m, n, k]` need of its operands, in operand order from `a`: the
/// operand's field, the two sizes (names and values; bias needs n × 1) and their product, the
/// elements needed (in 128 bits: two sizes up to 2^63 cannot wrap it).
pub(super) fn mmad_needs(
    [m, n, k]: [u64; 3],
    bias: bool,
) -> impl Iterator<Item = (&'static str, [&'static str; 2], [u64; 2], u128)> {
    let needs = [
        ("a", ["m", "k"], [m, k]),
        ("b", ["k", "n"], [k, n]),
        ("c", ["m", "n"], [m, n]),
        ("bias", ["n", ""], [n, 1]),
    ];
    needs
        .into_iter()
        .take(if bias { 4 } else { 3 })
        .map(|(key, names, dims)| (key, names, dims, dims[0] as u128 * dims[1] as u128))
}

/// A compile-time problem: the program does not fit the config (the loader normally rejects
/// these first).
pub(super) struct CompileError {
    pub op: Option<OpId>,
    pub message: String,
}

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

struct Compiler<'p, 'c> {
    program: &'p Program,
    config: &'c Config,
    out: Compiled<'p>,
    /// Dense loop index of each op (for/while), else NO_LOOP.
    loop_index: Vec<u32>,
    /// Per-buffer slot-count overrides (0 or missing: the buffer's `multi`).
    slot_counts: &'c [u32],
    addresses: &'c Addresses,
    /// First byte of each gm tensor in the layout (with `memory`).
    gm_base: Vec<u64>,
    /// The values each loop variable can take in the ops being compiled ([`var_range`]):
    /// set inside its loop's body only. Indexed by [`VarId`].
    ranges: Vec<Option<(i64, i64)>>,
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
            OpKind::SetFlag { src, dst, id: fid } => {
                if *src == Pipe::S {
                    self.need_pipe(id, *dst)?;
                    self.emit(SOp::SetFlag {
                        op: id,
                        dst: *dst,
                        id: Val::new(fid),
                    });
                    Ok(())
                } else {
                    self.need_pipe(id, *dst)?;
                    self.send_sync(id, *src, Kind::SetFlag, Some((*src, *dst, Val::new(fid))))
                }
            }
            OpKind::WaitFlag { src, dst, id: fid } => {
                self.need_pipe(id, *src)?;
                if *dst == Pipe::S {
                    self.emit(SOp::WaitFlag {
                        op: id,
                        src: *src,
                        id: Val::new(fid),
                    });
                    Ok(())
                } else {
                    self.send_sync(id, *dst, Kind::WaitFlag, Some((*src, *dst, Val::new(fid))))
                }
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
                let db = (m.a.dtype.bits() / 8).max(1);
                let core = self.config.core(self.program.core);
                let half = |s: Space| core.scope(s).map_or(u64::MAX, |c| c.bytes / 2);
                let mc = self.out.macros.len() as u32;
                self.out.macros.push(MacroCost {
                    m: Val::new(&m.m),
                    n: Val::new(&m.n),
                    k: Val::new(&m.k),
                    kf: (cube.fractal_k_bytes as u64 / db).max(1),
                    fm: cube.fractal_m.max(1) as u64,
                    fnn: cube.fractal_n.max(1) as u64,
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

    /// The cost of a vector op with `vector.block_bytes` (and maybe `ub_banks`): inputs
    /// `lo..lo + nin`, outputs up to `lo + n`.
    fn blocked_cost(
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
    fn gm_side(&self, i: u32) -> GmSide<'p> {
        let o = &self.out.opnds[i as usize];
        let Ref::Tensor(t) = o.operand.base else {
            unreachable!("a gm operand is on a tensor");
        };
        let base = self.gm_base[t.index()];
        let runs = footprint::static_indices(o.operand).then(|| {
            let mut v = Vec::new();
            // static indices evaluate without variables; the loader checked their bounds
            let _ = super::memory::runs_of(o.operand, o.shape, &[], base, &mut v);
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

    fn static_bytes(&self, i: u32) -> Option<u64> {
        self.out.opnds[i as usize].static_bytes
    }

    fn mmad_cost(&self, m: &'p Mmad, lo: u32) -> Cost<'p> {
        let cube = &self.config.cube;
        let db = (m.a.dtype.bits() / 8).max(1);
        let kf = (cube.fractal_k_bytes as u64 / db).max(1);
        let (fm, fnn) = (cube.fractal_m.max(1) as u64, cube.fractal_n.max(1) as u64);
        let startup = cube.startup as u64;
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

    /// Appends the op's operands to the operand table; returns their range.
    fn operands(&mut self, op: &'p Op) -> Result<(u32, u32), CompileError> {
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
fn safe_range(e: &Expr, ranges: &[Option<(i64, i64)>]) -> Option<(i64, i64)> {
    e.checked_range(ranges)
}

/// ceil(m/fm) × ceil(n/fn) × ceil(k/kf).
#[inline]
pub(super) fn mmad_work(m: u64, n: u64, k: u64, fm: u64, fnn: u64, kf: u64) -> u64 {
    m.div_ceil(fm)
        .saturating_mul(n.div_ceil(fnn))
        .saturating_mul(k.div_ceil(kf))
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
