//! A pipe's queue: the entries S has sent and the pipe has not started, each with its typed
//! argument ([`Arg`]) and, for the few kinds that need more, its [`Aux`]. Read at every event,
//! so an entry's size is a checked fact.

use super::compiled::Kind;

/// One sent instruction waiting in (or travelling to) its pipe's queue. 48 bytes, asserted by
/// a test: the rings are read at every event, so a larger entry costs cache on the hot path;
/// what only some instructions need is their [`Aux`], beside it in the ring.
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Entry {
    /// The cycle it joins the queue (send cycle + issue_cycles).
    pub(super) join: u64,
    /// Work of one chunk (of the instruction, for all but the parts of an `mmad_l1`).
    pub(super) work: u64,
    pub(super) startup: u64,
    pub(super) seq: u64,
    pub(super) op: u32,
    /// What it does at the head of its pipe, with what that needs.
    pub(super) arg: Arg,
}

impl Entry {
    /// The entry of op `op` as S makes it: its work, startup and argument; the cycle it joins
    /// its queue and its sequence number are set when S sends it.
    #[inline(always)]
    pub(super) fn unsent(op: u32, work: u64, startup: u64, arg: Arg) -> Entry {
        Entry {
            join: 0,
            work,
            startup,
            seq: 0,
            op,
            arg,
        }
    }
}

/// A `u64` stored at 4-byte alignment, so that [`Arg`] packs its tag and a `u32` in the first
/// 8 bytes and [`Entry`] stays 48 bytes (an 8-aligned `u64` would make it 56).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, packed(4))]
pub(super) struct Wide(pub(super) u64);

impl Wide {
    #[inline(always)]
    pub(super) fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Debug for Wide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// A queue entry's kind ([`Kind`]) with the argument that kind needs, so no number means one
/// thing for one kind and another for the next.
#[derive(Clone, Copy, Debug)]
pub(super) enum Arg {
    /// A move, vector op or mmad, with the bank conflict cycles included in its work.
    Work {
        conflict: Wide,
    },
    /// A `set_flag` of flag index `flag` ((src × pipes + dst) × event_ids + id).
    SetFlag {
        flag: u32,
    },
    /// A `wait_flag` of flag index `flag`.
    WaitFlag {
        flag: u32,
    },
    Barrier,
    /// A `cross_set` of counter `id` with its mode ([`crate::program::CrossMode::number`]).
    CrossSet {
        mode: u8,
        id: u32,
    },
    /// A `cross_wait` on the core's counter `counter`.
    CrossWait {
        counter: u32,
    },
    /// The MTE1 part of the core's `mmad_l1` number `macro_no` (numbered when sent).
    Stage {
        macro_no: Wide,
    },
    /// The M part of `mmad_l1` number `macro_no`.
    MacroM {
        macro_no: Wide,
    },
    /// A gm move under the memory system, with its bank conflict cycles.
    GmMove {
        conflict: Wide,
    },
}

impl Default for Arg {
    fn default() -> Arg {
        Arg::Work { conflict: Wide(0) }
    }
}

impl Arg {
    #[inline(always)]
    pub(super) fn kind(self) -> Kind {
        match self {
            Arg::Work { .. } => Kind::Work,
            Arg::SetFlag { .. } => Kind::SetFlag,
            Arg::WaitFlag { .. } => Kind::WaitFlag,
            Arg::Barrier => Kind::Barrier,
            Arg::CrossSet { .. } => Kind::CrossSet,
            Arg::CrossWait { .. } => Kind::CrossWait,
            Arg::Stage { .. } => Kind::Stage,
            Arg::MacroM { .. } => Kind::MacroM,
            Arg::GmMove { .. } => Kind::GmMove,
        }
    }
}

/// What only the parts of an `mmad_l1` ([`Kind::Stage`], [`Kind::MacroM`]) and the gm moves
/// ([`Kind::GmMove`]) need; read only for those kinds.
#[derive(Clone, Copy, Default, Debug)]
pub(super) enum Aux {
    #[default]
    None,
    /// Work of the last chunk, the chunks and how many have started.
    Chunks { last: u64, chunks: u32, next: u32 },
    /// The move's [`super::compiled::MemSpec`], and the pool slots holding the runs of its
    /// dynamic gm source / destination, or [`super::compiled::NO_MEM`] (static runs live in the
    /// spec).
    Gm { mem: u32, rl: u32, wl: u32 },
}

/// How many chunks of an `mmad_l1` part have started (its [`Aux::Chunks`]).
#[inline(always)]
pub(super) fn chunks_started(aux: Aux) -> u32 {
    match aux {
        Aux::Chunks { next, .. } => next,
        _ => 0,
    }
}

/// The staging of one `mmad_l1` by its MTE1 part: chunks copied so far, and the completion of
/// the last two (chunk i's at `done[i % 2]`, the L0 half it went into).
#[derive(Clone, Copy, Default)]
pub(super) struct MacroSlot {
    pub(super) staged: u32,
    pub(super) done: [u64; 2],
}

/// A fixed-capacity FIFO of entries that have not started (in transit included), with each
/// one's [`Aux`] at the same place in `aux` (written only when not [`Aux::None`]).
pub(super) struct Ring {
    buf: Vec<Entry>,
    aux: Vec<Aux>,
    head: usize,
    pub(super) len: usize,
}

impl Ring {
    pub(super) fn new(cap: usize) -> Ring {
        Ring {
            buf: vec![Entry::default(); cap.max(1)],
            aux: vec![Aux::None; cap.max(1)],
            head: 0,
            len: 0,
        }
    }

    #[inline(always)]
    pub(super) fn front(&self) -> &Entry {
        &self.buf[self.head]
    }

    /// The head's [`Aux`] (its kind says whether it has one).
    #[inline(always)]
    pub(super) fn front_aux(&self) -> Aux {
        self.aux[self.head]
    }

    #[inline(always)]
    pub(super) fn front_aux_mut(&mut self) -> &mut Aux {
        &mut self.aux[self.head]
    }

    #[inline(always)]
    pub(super) fn push(&mut self, e: Entry, aux: Aux) {
        debug_assert!(self.len < self.buf.len());
        let mut at = self.head + self.len;
        if at >= self.buf.len() {
            at -= self.buf.len();
        }
        self.buf[at] = e;
        if !matches!(aux, Aux::None) {
            self.aux[at] = aux;
        }
        self.len += 1;
    }

    /// Removes the head (read with [`Ring::front`]).
    #[inline(always)]
    pub(super) fn drop_front(&mut self) {
        debug_assert!(self.len > 0);
        self.head += 1;
        if self.head == self.buf.len() {
            self.head = 0;
        }
        self.len -= 1;
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Entry> {
        (0..self.len).map(move |i| &self.buf[(self.head + i) % self.buf.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rings hold `queue_depth` entries per pipe and are read at every event: an entry
    /// that grows (a field, or an argument that loses [`Wide`]'s packing) costs cache on the
    /// hot path, so its size is a checked fact, not a comment (as Cranelift checks its
    /// instruction size).
    #[test]
    fn entry_is_48_bytes() {
        assert_eq!(size_of::<Arg>(), 12);
        assert_eq!(size_of::<Entry>(), 48);
    }

    /// Each argument reports the kind the compiler sent, so a match on the argument and a
    /// match on [`Kind`] agree.
    #[test]
    fn arg_kind_round_trip() {
        let w = Wide(u64::MAX);
        let cases = [
            (Arg::Work { conflict: w }, Kind::Work),
            (Arg::SetFlag { flag: 7 }, Kind::SetFlag),
            (Arg::WaitFlag { flag: 7 }, Kind::WaitFlag),
            (Arg::Barrier, Kind::Barrier),
            (Arg::CrossSet { mode: 2, id: 3 }, Kind::CrossSet),
            (Arg::CrossWait { counter: 3 }, Kind::CrossWait),
            (Arg::Stage { macro_no: w }, Kind::Stage),
            (Arg::MacroM { macro_no: w }, Kind::MacroM),
            (Arg::GmMove { conflict: w }, Kind::GmMove),
        ];
        for (arg, kind) in cases {
            assert_eq!(arg.kind(), kind, "{arg:?}");
        }
        // a u64 survives the 4-byte packing whole
        if let Arg::MacroM { macro_no } = cases[7].0 {
            assert_eq!(macro_no.get(), u64::MAX);
        }
    }
}
