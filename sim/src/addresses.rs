//! Where the planner put every buffer: the one value the engine and the race checker read a
//! plan through ([`crate::engine::run_placed`], [`crate::race::check`]).

use crate::ids::BufferId;

/// Per buffer (indexed by [`BufferId`]): the byte offset of each slot in its scope, and the
/// bytes of one slot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Addresses {
    /// The byte offset in its scope of each slot. A list may be longer than the buffer's
    /// declared `multi` (a planner that made it a multi-buffer): an operand without `@k` then
    /// uses slot = iterations mod the list's length. Empty: the buffer has no address (it is
    /// not checked, and its slot count is its declared `multi`).
    pub offsets: Vec<Vec<u64>>,
    /// The bytes of one slot, at least the buffer's bytes (aligned by the planner).
    pub slot_bytes: Vec<u64>,
}

impl Addresses {
    /// Addresses for `buffers` buffers, none placed yet.
    pub fn new(buffers: usize) -> Addresses {
        Addresses {
            offsets: vec![Vec::new(); buffers],
            slot_bytes: vec![0; buffers],
        }
    }

    /// Places buffer `b`'s slots at `offsets`, each `slot_bytes` long.
    pub fn set(&mut self, b: BufferId, offsets: Vec<u64>, slot_bytes: u64) {
        self.offsets[b.index()] = offsets;
        self.slot_bytes[b.index()] = slot_bytes;
    }

    /// The slot count of each buffer as the engine chooses slots: the length of its offset
    /// list, 0 ("the declared multi") for a buffer without addresses.
    pub fn slot_counts(&self) -> Vec<u32> {
        self.offsets.iter().map(|o| o.len() as u32).collect()
    }
}
