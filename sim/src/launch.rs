//! The cores a launch runs (docs/programs.md, "Launches and mixed kernels"): which part of the
//! kernel each runs, its `block` and `subblock`, and the AI core it sits in (what cross-core
//! modes 1 and 2 pair).

use crate::config::Config;
use crate::ids::CoreId;
use crate::program::Program;

/// One core of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The kernel part it runs (0 for a single-type kernel; 0 = `aic`, 1 = `aiv` in a mixed one).
    pub part: u32,
    /// Its core type.
    pub core: CoreId,
    /// The value of `block`.
    pub block: u32,
    /// The value of `subblock`: a vector core's index in its AI core, else 0.
    pub subblock: u32,
    /// Its index among its block's cores of its type (the `I` of `--core B:TYPE:I`).
    pub index: u32,
    /// The AI core it sits in.
    pub ai_core: u32,
    /// Whether it is a vector core of a split chip (modes 1 and 2 pair these).
    pub vector: bool,
}

/// Vector cores per AI core on a split chip (`chip.aiv_per_aic`), 0 on a coupled one.
pub fn aiv_per_aic(config: &Config) -> u32 {
    config.chip.map_or(0, |c| c.aiv_per_aic)
}

/// Whether core type `core` is the split chip's vector core.
pub fn is_vector(config: &Config, core: CoreId) -> bool {
    aiv_per_aic(config) > 0 && config.core(core).name == "aiv"
}

/// The cores of a launch of `parts` (one program, or a mixed kernel's `aic` and `aiv` parts),
/// in (block, part, index) order: the engine's tie order and the reports' core order.
pub fn slots(parts: &[&Program], config: &Config) -> Vec<Slot> {
    let blocks = parts.first().map_or(0, |p| p.launch.blocks);
    let per = aiv_per_aic(config);
    let mut out = Vec::new();
    for block in 0..blocks {
        for (part, p) in parts.iter().enumerate() {
            let vector = is_vector(config, p.core);
            let (count, ai_core, sub0) = match (parts.len() > 1, vector) {
                // a mixed kernel: each block is one AI core, with `per` vector cores
                (true, true) => (per, block, None),
                (true, false) => (1, block, None),
                // one vector core per block: vector core `block` of the chip
                (false, true) => (1, block / per, Some(block % per)),
                (false, false) => (1, block, None),
            };
            for index in 0..count {
                out.push(Slot {
                    part: part as u32,
                    core: p.core,
                    block,
                    subblock: sub0.unwrap_or(if vector { index } else { 0 }),
                    index,
                    ai_core,
                    vector,
                });
            }
        }
    }
    out
}

/// The name of a core in reports: `block 3 aiv 1`.
pub fn name(config: &Config, slot: &Slot) -> String {
    format!(
        "block {} {} {}",
        slot.block,
        config.core(slot.core).name,
        slot.index
    )
}
