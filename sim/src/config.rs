//! The chip description: core types with their scopes and pipes, data paths, and the cost
//! tables the engine reads. Built by [`crate::load::load_config`]; immutable afterwards.

use crate::ids::CoreId;
use crate::types::{Pipe, Space, VecOp};

/// A validated chip config (docs/config.md).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub name: String,
    pub description: String,
    pub clock_mhz: u32,
    /// Core types in declaration order.
    pub cores: Vec<CoreConfig>,
    /// Instructions waiting (not yet started) per pipe queue before the scalar unit stalls.
    pub queue_depth: u32,
    pub scalar: ScalarConfig,
    pub sync: SyncConfig,
    pub paths: Vec<PathConfig>,
    pub vector: VectorConfig,
    pub cube: CubeConfig,
    /// The gm memory system (`memory`): L2 and HBM. `None`: every gm move costs its path's
    /// rate and startup alone.
    pub memory: Option<MemoryConfig>,
    /// The chip around the core types (`chip`): how many AI cores a launch may use and, on a
    /// split chip, how many vector cores each has. `None`: one core of each type.
    pub chip: Option<ChipConfig>,
    /// Cross-core flags (`cross_core`). `None`: a program may not use `cross_set` /
    /// `cross_wait`.
    pub cross_core: Option<CrossCoreConfig>,
    /// What starting a launch costs (`launch_cost`), added to the cores' cycles. `None`:
    /// nothing.
    pub launch_cost: Option<LaunchCost>,
}

/// `launch_cost: { fixed_cycles, per_core_cycles }` (docs/timing.md, "Launch cost"): a
/// launch that starts N cores (a mixed block starts its cube core and its vector cores) costs
/// `fixed_cycles + N × per_core_cycles` before its cores run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchCost {
    pub fixed_cycles: u64,
    pub per_core_cycles: u64,
}

impl LaunchCost {
    /// The cycles a launch that starts `cores` cores costs.
    pub fn cycles(&self, cores: u32) -> u64 {
        self.fixed_cycles
            .saturating_add(self.per_core_cycles.saturating_mul(u64::from(cores)))
    }
}

/// `chip: { aic, aiv_per_aic }` (docs/config.md, "Chip"): the AI cores of the chip, each one
/// cube core and `aiv_per_aic` vector cores on a split chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChipConfig {
    /// AI cores of the chip: the most blocks a launch can use at once.
    pub aic: u32,
    /// Vector cores per AI core (2 on the 910B); 0 on a coupled chip.
    pub aiv_per_aic: u32,
}

/// `cross_core: { flag_ids, max_pending, latency }` (docs/timing.md, "Cross-core flags").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossCoreConfig {
    /// Counter ids per core: `0..flag_ids`.
    pub flag_ids: u32,
    /// A counter above this is a `cross-core flag overflow` finding.
    pub max_pending: u32,
    /// Cycles from a `cross_set` firing to the counters it increments changing.
    pub latency: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CoreConfig {
    pub name: String,
    /// On-chip scopes in declaration order.
    pub scopes: Vec<ScopeConfig>,
    /// Pipes of this core in declaration order; always contains [`Pipe::S`].
    pub pipes: Vec<Pipe>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeConfig {
    pub space: Space,
    pub bytes: u64,
    /// Address alignment in bytes the hardware needs; a power of two (`at:` offsets are
    /// checked against it).
    pub align: u64,
    /// The alignment the planner places buffers at: the config's `plan_align` (HIVM plans L0C
    /// at 512 B where the hardware needs 64), else `align`. A power of two, at least `align`.
    pub plan_align: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarConfig {
    /// Cycles the scalar unit spends sending one instruction to another pipe.
    pub issue_cycles: u32,
    /// Cycles at the start of every loop iteration.
    pub loop_cycles: u32,
    /// Cycles before the chosen branch of an `if`.
    pub branch_cycles: u32,
    /// Cycles an `sload`/`sstore` of a gm operand keeps the scalar unit busy
    /// (`scalar.gm_latency`); `None`: `issue_cycles`, like any other operand.
    pub gm_latency: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncConfig {
    /// Event ids per ordered pipe pair (`0..event_ids`).
    pub event_ids: u32,
    /// Cycles from a set_flag firing to the flag being visible to its destination pipe.
    pub flag_latency: u32,
}

/// One legal data move and its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathConfig {
    pub from: Space,
    pub to: Space,
    pub pipe: Pipe,
    /// Destination bytes per cycle: a move writing B bytes is busy at least ceil(B / this).
    pub bytes_per_cycle: u32,
    pub startup: u32,
    /// Optional source-side rate: a move reading B bytes is busy at least ceil(B / this).
    pub read_bytes_per_cycle: Option<u32>,
    /// Optional destination rate of a `layout: nz` load, in place of `bytes_per_cycle`.
    pub nz_bytes_per_cycle: Option<u32>,
}

impl PathConfig {
    /// The bytes a cycle the path writes (its `nz` rate for an nd -> nz move that has one), at
    /// least 1.
    #[inline]
    pub fn write_rate(&self, nz: bool) -> u64 {
        match self.nz_bytes_per_cycle {
            Some(r) if nz => r,
            _ => self.bytes_per_cycle,
        }
        .max(1) as u64
    }

    /// Busy cycles of a move that reads `src` bytes and writes `dst` bytes on this path
    /// (`nz`: a `layout: nz` load): max(ceil(src / read rate), ceil(dst / write rate)), the
    /// write rate being `nz_bytes_per_cycle` for an nz load when given, else `bytes_per_cycle`.
    #[inline]
    pub fn move_work(&self, src: u64, dst: u64, nz: bool) -> u64 {
        let w = dst.div_ceil(self.write_rate(nz));
        match self.read_bytes_per_cycle {
            Some(r) => w.max(src.div_ceil(r.max(1) as u64)),
            None => w,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecCost {
    pub cycles_per_repeat: u32,
    pub startup: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VectorConfig {
    pub repeat_bytes: u32,
    /// `vector.block_bytes`: operands are handled in blocks of this many bytes, counted per
    /// contiguous run (docs/timing.md, "Vector blocks"). `None`: repeats come from bytes alone.
    /// Divides `repeat_bytes`.
    pub block_bytes: Option<u32>,
    /// The top-level `ub_banks` key: UB bank groups, which add cycles to a vector repeat whose
    /// blocks collide (docs/timing.md, "UB banks"). Only with `block_bytes`.
    pub ub_banks: Option<UbBanks>,
    pub default: VecCost,
    /// Per-op overrides, indexed by [`VecOp::index`]; `None` takes `default`.
    pub ops: [Option<VecCost>; VecOp::COUNT],
}

/// The UB's bank layout (`ub_banks: { groups, row_bytes, bank_bytes }`, all positive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UbBanks {
    /// Bank groups: one block per group can be read, and one written, per cycle.
    pub groups: u32,
    /// Bytes of one bank row: consecutive rows lie in consecutive groups.
    pub row_bytes: u32,
    /// Bytes of one bank.
    pub bank_bytes: u32,
}

impl UbBanks {
    /// The group of UB byte address `a`: (a / row_bytes) mod groups.
    #[inline]
    pub fn group(&self, a: u64) -> u64 {
        (a / self.row_bytes as u64) % self.groups as u64
    }

    /// The bank of UB byte address `a`: group + groups × (a / (groups × bank_bytes)).
    #[inline]
    pub fn bank(&self, a: u64) -> u64 {
        let g = self.groups as u64;
        self.group(a) + g * (a / (g * self.bank_bytes as u64))
    }
}

/// The gm memory system (docs/timing.md, "The gm memory system"): gm tensors laid out in
/// lines, an L2 of whole lines (LRU) in front of HBM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Bytes of one L2 line; every gm tensor starts on a line.
    pub line_bytes: u64,
    /// L2 capacity in bytes (whole lines: `l2_bytes / line_bytes` of them).
    pub l2_bytes: u64,
    /// Bytes per cycle one move reads from L2 (hits).
    pub l2_read_bytes_per_cycle: u64,
    /// Bytes per cycle one move writes into L2.
    pub l2_write_bytes_per_cycle: u64,
    /// The chip's L2 bytes per cycle: hits and writes of every core of a launch share it.
    pub l2_chip_bytes_per_cycle: u64,
    /// Cycles added to the startup of a move that hits only, and of every gm write.
    pub l2_latency: u64,
    /// The chip's HBM bytes per cycle, shared by the line fills of missing reads and the
    /// writes (the L2 writes through) of every core of a launch (not one core's share).
    pub hbm_bytes_per_cycle: u64,
    /// Cycles added to the startup of a move with a miss.
    pub hbm_read_latency: u64,
}

impl MemoryConfig {
    /// Lines the L2 holds.
    pub fn l2_lines(&self) -> u64 {
        self.l2_bytes / self.line_bytes
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubeConfig {
    pub fractal_m: u32,
    pub fractal_n: u32,
    pub fractal_k_bytes: u32,
    pub startup: u32,
}

impl Config {
    /// The core type `id` (a program's [`crate::Program::core`]).
    #[inline]
    pub fn core(&self, id: CoreId) -> &CoreConfig {
        &self.cores[id.index()]
    }

    /// `CONFIG/CORE` (`ascend910b/aiv`): how reports name where a program ran.
    pub fn core_label(&self, id: CoreId) -> String {
        format!("{}/{}", self.name, self.core(id).name)
    }

    /// The core type named `name` (`aiv`), if the chip has one.
    pub fn core_named(&self, name: &str) -> Option<CoreId> {
        self.cores
            .iter()
            .position(|c| c.name == name)
            .map(CoreId::new)
    }

    /// The path that moves data from `from` to `to`, if the chip has one.
    pub fn path(&self, from: Space, to: Space) -> Option<&PathConfig> {
        self.paths.iter().find(|p| p.from == from && p.to == to)
    }

    /// The cost of vector op `op`: its override, else the default.
    #[inline]
    pub fn vector_cost(&self, op: VecOp) -> VecCost {
        self.vector.ops[op.index()].unwrap_or(self.vector.default)
    }
}

impl CoreConfig {
    pub fn scope(&self, space: Space) -> Option<&ScopeConfig> {
        self.scopes.iter().find(|s| s.space == space)
    }

    pub fn has_pipe(&self, pipe: Pipe) -> bool {
        self.pipes.contains(&pipe)
    }
}
