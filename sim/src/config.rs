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
    /// Address alignment in bytes; a power of two.
    pub align: u64,
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
    pub bytes_per_cycle: u32,
    pub startup: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecCost {
    pub cycles_per_repeat: u32,
    pub startup: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VectorConfig {
    pub repeat_bytes: u32,
    pub default: VecCost,
    /// Per-op overrides, indexed by [`VecOp::index`]; `None` takes `default`.
    pub ops: [Option<VecCost>; VecOp::COUNT],
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
    /// Cycles added to the startup of a move that hits only, and of every gm write.
    pub l2_latency: u64,
    /// HBM bytes per cycle, shared by the moves missing at the same time.
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
