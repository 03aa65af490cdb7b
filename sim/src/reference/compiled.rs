//! The flat form the engine executes, which [`super::compile`] builds once per program: a
//! scalar-unit bytecode ([`SOp`]) with loops and ifs as jumps, a table of send templates
//! ([`Spec`]) whose costs ([`Cost`]) are precomputed when they are static, the gm moves under the
//! memory system ([`MemSpec`]), and the cost arithmetic compile time and run time share (mmad
//! work, an `mmad_l1`'s chunks of k). Plain data: every id is a dense `u32`; nothing here is
//! touched by strings at run time, and nothing here knows how the form is built or run.

use super::code::{Opnd, Val};
use super::gm_runs::OneRun;
use crate::config::PathConfig;
use crate::ids::{OpId, VarId};
use crate::types::Pipe;

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
    /// Its byte runs in the gm layout ([`super::gm_runs::runs_of`]) when the operand does not
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

/// ceil(m/fm) × ceil(n/fn) × ceil(k/kf).
#[inline]
pub(super) fn mmad_work(m: u64, n: u64, k: u64, fm: u64, fnn: u64, kf: u64) -> u64 {
    m.div_ceil(fm)
        .saturating_mul(n.div_ceil(fnn))
        .saturating_mul(k.div_ceil(kf))
}
