//! The data the L2's replacement order is kept in ([`super::memory`], [`super::l2_order`]): the
//! segments, runs of consecutive lines touched in the same cycle that are the nodes of its
//! doubly linked list, and a [`SegIndex`] mapping each line of the layout to the segment that
//! last held it, in chunks that exist only while they hold a present line (memory follows the
//! L2's contents, not the tensors' size); an entry may be stale, recognised by its segment not
//! covering the line now.

/// "No segment": in a [`SegIndex`], and at an end of the list.
pub(super) const NONE: u32 = u32::MAX;

/// Which segment last held each line of the layout, kept in chunks of 2^shift lines that exist
/// only while one of their lines is present: memory follows what the L2 holds, not the layout,
/// so a kernel streaming through gigabytes of tensors touches a few chunks at a time and never
/// faults in pages for the rest. An evicted line's entry is left stale ([`super::memory::L2::seg`] checks the
/// segment covers the line), so an eviction writes nothing but its chunk's count.
#[derive(Clone, Debug)]
pub(super) struct SegIndex {
    pub(super) shift: u32,
    /// 2^shift - 1.
    pub(super) mask: u64,
    /// Per chunk of the layout: its block in `store`, or [`NONE`].
    dir: Vec<u32>,
    /// Per chunk of the layout: how many of its lines are present.
    present: Vec<u32>,
    /// Per chunk of the layout: 1 + the highest line offset written since it got its block;
    /// the entries from there on are [`NONE`] (a streaming kernel's next run is always there,
    /// so its lookup need not read them).
    high: Vec<u32>,
    /// Blocks of 2^shift entries.
    store: Vec<u32>,
    /// Blocks no chunk uses.
    free: Vec<u32>,
}

impl SegIndex {
    /// 2^14 lines a chunk: 64 KiB of entries.
    pub(super) const SHIFT: u32 = 14;

    pub(super) fn new(lines: u64, shift: u32) -> SegIndex {
        let chunks = (lines >> shift) as usize + 1;
        SegIndex {
            shift,
            mask: (1 << shift) - 1,
            dir: vec![NONE; chunks],
            present: vec![0; chunks],
            high: vec![0; chunks],
            store: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The segment that last held `line` (possibly stale), or [`NONE`].
    #[inline(always)]
    pub(super) fn get(&self, line: u64) -> u32 {
        match self.dir[(line >> self.shift) as usize] {
            NONE => NONE,
            b => self.store[((b as usize) << self.shift) | (line & self.mask) as usize],
        }
    }

    /// The entries of chunk `c` that may hold a segment (up to its high mark), when it
    /// exists.
    #[inline(always)]
    pub(super) fn chunk(&self, c: u64) -> Option<&[u32]> {
        match self.dir[c as usize] {
            NONE => None,
            b => {
                let at = (b as usize) << self.shift;
                Some(&self.store[at..at + self.high[c as usize] as usize])
            }
        }
    }

    /// `n` lines of chunk `c` come in: makes the chunk exist; returns where its entries start
    /// in `store` (see [`SegIndex::set`]).
    #[inline(always)]
    fn claim(&mut self, c: u64, n: u32) -> usize {
        let c = c as usize;
        let mut b = self.dir[c];
        if b == NONE {
            b = self.block();
            self.dir[c] = b;
            self.high[c] = 0;
        }
        self.present[c] += n;
        (b as usize) << self.shift
    }

    /// Segment `f` holds `line`, of the chunk [`SegIndex::claim`] returned `at` for.
    #[inline(always)]
    fn set(&mut self, at: usize, line: u64, f: u32) {
        let i = at | (line & self.mask) as usize;
        self.store[i] = f;
    }

    /// `line` comes in, into segment `f`.
    #[inline(always)]
    pub(super) fn enter(&mut self, line: u64, f: u32) {
        let c = line >> self.shift;
        let at = self.claim(c, 1);
        self.set(at, line, f);
        let h = &mut self.high[c as usize];
        *h = (*h).max((line & self.mask) as u32 + 1);
    }

    /// `line`, present, now is in segment `f`.
    #[inline(always)]
    pub(super) fn update(&mut self, line: u64, f: u32) {
        let b = self.dir[(line >> self.shift) as usize];
        debug_assert!(b != NONE, "a present line's chunk exists");
        let i = ((b as usize) << self.shift) | (line & self.mask) as usize;
        self.store[i] = f;
    }

    /// Lines `l0..l1`, present, leave; a chunk goes when its last present line does.
    pub(super) fn leave_range(&mut self, l0: u64, l1: u64) {
        let mut a = l0;
        while a < l1 {
            let c = a >> self.shift;
            let b = l1.min((c + 1) << self.shift);
            let n = (b - a) as u32;
            let c = c as usize;
            self.present[c] -= n;
            if self.present[c] == 0 {
                self.free.push(self.dir[c]);
                self.dir[c] = NONE;
            }
            a = b;
        }
    }

    /// Lines `l0..l1`, absent, come in, into segment `f`.
    pub(super) fn enter_range(&mut self, l0: u64, l1: u64, f: u32) {
        let mut a = l0;
        while a < l1 {
            let c = a >> self.shift;
            let b = l1.min((c + 1) << self.shift);
            let at = self.claim(c, (b - a) as u32);
            let (from, to) = ((a & self.mask) as usize, ((b - 1) & self.mask) as usize);
            self.store[at + from..=at + to].fill(f);
            let h = &mut self.high[c as usize];
            *h = (*h).max(to as u32 + 1);
            a = b;
        }
    }

    /// A block for a chunk: a freed one, else a new one. A freed one is cleared: its stale
    /// entries would be harmless, but each would cost a lookup a visit to a segment.
    fn block(&mut self) -> u32 {
        if let Some(b) = self.free.pop() {
            let at = (b as usize) << self.shift;
            self.store[at..at + (1 << self.shift)].fill(NONE);
            return b;
        }
        let b = (self.store.len() >> self.shift) as u32;
        self.store
            .resize(self.store.len() + (1 << self.shift), NONE);
        b
    }
}

/// Lines `lo..hi` of the layout, all present and all last touched at `stamp` (cycle + 1; 0:
/// there from a warm start), next to each other in the L2's order: a node of its list. A free
/// segment has `lo == hi`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seg {
    pub(super) stamp: u64,
    pub(super) lo: u32,
    pub(super) hi: u32,
    /// Neighbours in the L2's order, or [`NONE`].
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl Seg {
    /// The key of its last line.
    #[inline(always)]
    pub(super) fn last(&self) -> (u64, u32) {
        (self.stamp, self.hi - 1)
    }
}
