//! The sizes a program or config may have (docs/cli.md, "Limits"). Loading refuses anything
//! larger, naming the YAML path and the limit, so that no later arithmetic on bytes, offsets,
//! cycles or counts can wrap and no plan or run is hopeless from the start. The run's own
//! limits (`--max-cycles`, `--max-instructions`) are [`crate::engine::Limits`].

/// Elements of one buffer, view or gm tensor: 2^40. At 8 bytes an element that is 8 TiB,
/// beyond any device; totals of such sizes still fit 64 bits.
pub const MAX_ELEMENTS: u64 = 1 << 40;

/// Slots of one multi-buffer. Hardware double- and triple-buffers; planning time grows with
/// the square of a buffer's slots, so thousands would take minutes.
pub const MAX_MULTI: u32 = 256;

/// Buffers of one program: 2^20.
pub const MAX_BUFFERS: usize = 1 << 20;

/// Ops of one program (control ops included): 2^24.
pub const MAX_OPS: usize = 1 << 24;

/// Iterations of one loop, where its trip count is known when loading: 2^48 (at twenty
/// million simulated instructions a second, months of engine time).
pub const MAX_TRIPS: i64 = 1 << 48;

/// Cycles of one `scalar` op: 2^62, the largest `--max-cycles`.
pub const MAX_SCALAR_CYCLES: i64 = 1 << 62;

/// Bytes of one on-chip scope (its capacity in a config or `--capacity`): 2^48.
pub const MAX_SCOPE_BYTES: u64 = 1 << 48;

/// Bytes of every slot of every buffer of a program together: 2^56, so the planner's running
/// sums, peaks and aligned sizes never wrap.
pub const MAX_TOTAL_SLOT_BYTES: u64 = 1 << 56;

/// Entries a pipe's queue may hold (`queue_depth`): 4096. Hardware queues hold a few dozen;
/// the engine keeps a ring of this many entries per pipe.
pub const MAX_QUEUE_DEPTH: u32 = 4096;

/// Event ids per pipe pair (`sync.event_ids`): 1024. Hardware has 8 or 16; the engine and the
/// race checker keep a table entry per id and pipe pair.
pub const MAX_EVENT_IDS: u32 = 1024;

/// Lines of the gm layout under the memory system (`memory` in a config): 2^31, at 512-byte
/// lines 1 TiB of gm tensors (a compiled kernel's 40 GiB argument fits). The engine keeps
/// 12 bytes per 2^14 lines of the layout (at most 1.5 MiB), and otherwise memory in
/// proportion to the lines the L2 holds, never to the bytes no move touches; its segments
/// number lines in 32 bits, which the bound keeps.
pub const MAX_GM_LINES: u64 = 1 << 31;

/// `2^k` for a power of two, the way the limits are written in messages.
pub fn show(limit: u64) -> String {
    if limit.is_power_of_two() {
        format!("2^{} = {limit}", limit.trailing_zeros())
    } else {
        limit.to_string()
    }
}

/// Most blocks of a launch (`launch.blocks`, `--blocks`, `chip.aic`): a launch of more cores
/// than any chip has is a typo, and every core costs memory.
pub const MAX_BLOCKS: u32 = 4096;

/// Most vector cores per AI core (`chip.aiv_per_aic`).
pub const MAX_AIV_PER_AIC: u32 = 8;

/// Bytes of engine state one launch may allocate ([`crate::engine::launch_state_bytes`]):
/// 1 GiB. A launch of every core of a real chip takes a few MiB (the 910B's 24 AI cores of 2
/// vector cores: 72 cores, about 5 MiB); the largest a config can describe (4096 AI cores of
/// 8 vector cores, 36,864 cores) took 2.8 GB before its first cycle.
pub const MAX_LAUNCH_STATE_BYTES: u64 = 1 << 30;
