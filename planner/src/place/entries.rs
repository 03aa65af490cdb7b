//! Storage entries: the units that get an address, and the order they are planned in.
//!
//! One entry per liveness entry of a scope (a `share:` group is already one there); every
//! inplace pair `(gen, kill)` then merges the gen's entry into the kill's: lifetimes unioned,
//! touching intervals merged, `multi` the larger. A multi-buffer entry has `multi` slots of the
//! same size and lifetime. Sizes are rounded up to the scope alignment. Also here: the helpers
//! over an entry's lifetime intervals and pipeline classes that the placer's rules read.
//!
//! Kept apart from the placer so that the exact search and the overflow diagnostic read entries
//! without depending on first fit.

use super::sequential::gen_order;
use crate::liveness::{Interval, Liveness};
use sim::program::Program;
use sim::{BufferId, OpId, Space};

/// A storage entry: the unit that gets an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageEntry {
    /// Every member buffer: the inplace gens first (HIVM's `inplaceBuffers` order), then the
    /// liveness entry's buffers.
    pub buffers: Vec<BufferId>,
    /// Members that took over an input's address (placed by inplace).
    pub inplace: Vec<BufferId>,
    /// Sorted, merged, inclusive intervals.
    pub lifetime: Vec<Interval>,
    /// Bytes of one slot, aligned.
    pub size: u64,
    /// Slots.
    pub multi: u32,
    /// (dma, scalar) of every liveness entry merged in, in member order.
    pub classes: Vec<(bool, bool)>,
    pub unique: bool,
    /// The innermost loop enclosing the declaration of the entry's first kill-side buffer.
    pub loop_parent: Option<OpId>,
    /// HIVM `GetBufferParentLoop`: the innermost loop of every member's declaration when
    /// they all have the same one, else `None` (also for a member in no loop). HIVM's stage 2
    /// keeps entries with equal values apart, `None` included.
    pub hivm_loop: Option<OpId>,
    /// `at:` offsets: the entry is not planned.
    pub fixed: Option<Vec<u64>>,
}

impl StorageEntry {
    /// The name used in diagnostics: the first member that is not an inplace gen.
    pub(super) fn name<'p>(&self, program: &'p Program) -> &'p str {
        let b = self
            .buffers
            .iter()
            .find(|b| !self.inplace.contains(b))
            .unwrap_or(&self.buffers[0]);
        &program.buffer(*b).name
    }
}

/// The storage entries of one scope, in gen ("vector") order: first writes, or with scoped liveness lifetime starts. `inplace` lists
/// `(gen, kill)` pairs; pairs across scopes, with a fixed side, or already merged are ignored.
pub fn storage_entries(
    program: &Program,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    space: Space,
    align: u64,
) -> Vec<StorageEntry> {
    let order = gen_order(program, live);
    entries_in_order(program, live, inplace, space, align, &order)
}

/// [`storage_entries`] with the program's first-write order computed once by the caller.
pub(super) fn entries_in_order(
    program: &Program,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    space: Space,
    align: u64,
    first_writes: &[BufferId],
) -> Vec<StorageEntry> {
    if !program.buffers.iter().any(|b| b.scope == space) {
        return Vec::new(); // nothing to plan: skip the per-entry work
    }
    let align = align.max(1);
    let aligned = |bytes: u64| bytes.div_ceil(align) * align;
    let n = live.entries.len();
    let mut st: Vec<Option<StorageEntry>> = (0..n)
        .map(|e| {
            let le = &live.entries[e];
            let members: Vec<BufferId> = le
                .buffers
                .iter()
                .copied()
                .filter(|&b| program.buffer(b).scope == space)
                .collect();
            let first = *members.first()?;
            let fixed = members.iter().find_map(|&b| program.buffer(b).at.clone());
            Some(StorageEntry {
                size: members
                    .iter()
                    .map(|&b| aligned(program.buffer(b).bytes))
                    .max()
                    .unwrap_or(0),
                multi: members
                    .iter()
                    .map(|&b| program.buffer(b).multi.max(1))
                    .max()
                    .unwrap_or(1),
                unique: members.iter().any(|&b| program.buffer(b).unique),
                loop_parent: program.buffer(first).loop_parent,
                hivm_loop: {
                    let lp = program.buffer(first).loop_parent;
                    lp.filter(|_| members.iter().all(|&b| program.buffer(b).loop_parent == lp))
                },
                classes: vec![(le.dma, le.scalar)],
                lifetime: le.lifetime.clone(),
                inplace: Vec::new(),
                buffers: members,
                fixed,
            })
        })
        .collect();
    let mut rep: Vec<usize> = (0..n).collect();
    let find = |rep: &Vec<usize>, mut e: usize| {
        while rep[e] != e {
            e = rep[e];
        }
        e
    };
    for &(gen, kill) in inplace {
        let g = find(&rep, live.entry_of[gen.index()]);
        let k = find(&rep, live.entry_of[kill.index()]);
        let ok = g != k
            && matches!((&st[g], &st[k]), (Some(a), Some(b)) if a.fixed.is_none() && b.fixed.is_none());
        if !ok {
            continue;
        }
        let ge = st[g].take().expect("checked");
        let ke = st[k].as_mut().expect("checked");
        let mut buffers = ge.buffers.clone();
        buffers.extend(ke.buffers.iter().copied());
        ke.buffers = buffers;
        let mut inpl = ge.inplace.clone();
        inpl.extend(ge.buffers.iter().filter(|b| !ge.inplace.contains(b)));
        inpl.extend(ke.inplace.iter().copied());
        ke.inplace = inpl;
        let mut classes = ge.classes.clone();
        classes.extend(ke.classes.iter().copied());
        ke.classes = classes;
        ke.lifetime = union(&ge.lifetime, &ke.lifetime);
        ke.size = ke.size.max(ge.size);
        ke.multi = ke.multi.max(ge.multi);
        ke.unique |= ge.unique;
        if ke.hivm_loop != ge.hivm_loop {
            ke.hivm_loop = None;
        }
        rep[g] = k;
    }
    // first-write order of the entries (by their kill-side root)
    let mut out = Vec::new();
    let mut seen = vec![false; n];
    for &b in first_writes {
        let e = find(&rep, live.entry_of[b.index()]);
        if !seen[e] {
            seen[e] = true;
            if let Some(se) = st[e].take() {
                out.push(se);
            }
        }
    }
    out
}

/// Union of two interval lists; intervals that overlap or touch (`next.first <= prev.last + 1`)
/// merge.
pub(super) fn union(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut all: Vec<Interval> = a.iter().chain(b).copied().collect();
    all.sort();
    let mut out: Vec<Interval> = Vec::new();
    for i in all {
        match out.last_mut() {
            Some(l) if i.first <= l.last + 1 => l.last = l.last.max(i.last),
            _ => out.push(i),
        }
    }
    out
}

/// Number of positions two interval lists share.
pub(super) fn shared_positions(a: &[Interval], b: &[Interval]) -> usize {
    let mut n = 0;
    for x in a {
        for y in b {
            let first = x.first.max(y.first);
            let last = x.last.min(y.last);
            if first <= last {
                n += last - first + 1;
            }
        }
    }
    n
}

/// HIVM `BufferPipeConflict` over every pair of classes (dma, scalar): the oracle the class
/// unions are tested against.
#[cfg(test)]
pub(super) fn pipe_conflict(a: &StorageEntry, b: &StorageEntry) -> bool {
    a.classes.iter().any(|&(ad, as_)| {
        b.classes.iter().any(|&(bd, bs)| match (as_, bs) {
            (true, true) => false,
            (true, false) | (false, true) => true,
            (false, false) => ad || bd,
        })
    })
}

/// One planning unit: slot `k` of entry `entry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub entry: usize,
    pub k: u32,
}

/// HIVM PlanMemory's planning order: in UB the groups unique, DMA, other, scalar, each entry's
/// slots back to back; elsewhere first-write order with the extra slots at the end. Fixed
/// entries are not planned.
pub fn planning_order(entries: &[StorageEntry], space: Space) -> Vec<Slot> {
    let planned: Vec<usize> = (0..entries.len())
        .filter(|&e| entries[e].fixed.is_none())
        .collect();
    let mut out = Vec::new();
    if space == Space::Ub {
        let group = |e: &StorageEntry| -> u8 {
            if e.unique {
                return 0;
            }
            for &(dma, scalar) in &e.classes {
                if dma {
                    return 1;
                }
                if scalar {
                    return 3;
                }
            }
            2
        };
        for g in 0..4 {
            for &e in planned.iter().filter(|&&e| group(&entries[e]) == g) {
                out.extend((0..entries[e].multi).map(|k| Slot { entry: e, k }));
            }
        }
    } else {
        out.extend(planned.iter().map(|&e| Slot { entry: e, k: 0 }));
        for &e in &planned {
            out.extend((1..entries[e].multi).map(|k| Slot { entry: e, k }));
        }
    }
    out
}

/// The pipeline classes of an entry's members: [scalar, DMA, vector] (HIVM
/// `BufferPipeConflict`'s three cases).
pub(super) fn class_flags(e: &StorageEntry) -> [bool; 3] {
    let mut f = [false; 3];
    for &(dma, scalar) in &e.classes {
        f[if scalar {
            0
        } else if dma {
            1
        } else {
            2
        }] = true;
    }
    f
}

/// The class unions a level-2 slot with these flags may not share bytes with (agrees with
/// `pipe_conflict`: scalar meets non-scalar; DMA meets everything; vector meets scalar and
/// DMA).
pub(super) fn conflicting_classes(f: [bool; 3]) -> [bool; 3] {
    [f[1] || f[2], f.iter().any(|&x| x), f[0] || f[1]]
}

/// The class unions a level-2 slot of `e` may not share bytes with, as a bit mask (bit c:
/// class c of [`class_flags`]); the placer keeps one byte union per mask.
pub(super) fn level2_mask(e: &StorageEntry) -> usize {
    let cc = conflicting_classes(class_flags(e));
    (0..3).filter(|&c| cc[c]).fold(0, |m, c| m | 1 << c)
}

/// Entries for the unit tests of this module and of the placer.
#[cfg(test)]
pub(super) mod testing {
    use super::*;

    /// Bytes of one test slot.
    pub const U: u64 = 1024;

    /// An entry of one slot of `U` bytes living over `[a, b]`.
    pub fn e(name: usize, a: usize, b: usize) -> StorageEntry {
        StorageEntry {
            buffers: vec![BufferId::new(name)],
            inplace: Vec::new(),
            lifetime: vec![Interval::new(a, b)],
            size: U,
            multi: 1,
            classes: vec![(false, false)],
            unique: false,
            loop_parent: Some(OpId::new(0)),
            hivm_loop: Some(OpId::new(0)),
            fixed: None,
        }
    }

    pub fn dma(mut x: StorageEntry) -> StorageEntry {
        x.classes = vec![(true, false)];
        x
    }

    pub fn scalar(mut x: StorageEntry) -> StorageEntry {
        x.classes = vec![(false, true)];
        x
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn union_merges_touching_intervals() {
        let a = [Interval::new(0, 2), Interval::new(8, 9)];
        let b = [Interval::new(3, 4), Interval::new(6, 6)];
        assert_eq!(
            union(&a, &b),
            [
                Interval::new(0, 4),
                Interval::new(6, 6),
                Interval::new(8, 9)
            ]
        );
    }

    #[test]
    fn ub_order_groups_unique_dma_other_scalar() {
        let mut u = e(3, 0, 0);
        u.unique = true;
        let mut d = dma(e(1, 0, 0));
        d.multi = 2;
        let entries = [scalar(e(0, 0, 0)), d, e(2, 0, 0), u];
        let ub: Vec<(usize, u32)> = planning_order(&entries, Space::Ub)
            .iter()
            .map(|s| (s.entry, s.k))
            .collect();
        assert_eq!(ub, [(3, 0), (1, 0), (1, 1), (2, 0), (0, 0)]);
        let l1: Vec<(usize, u32)> = planning_order(&entries, Space::L1)
            .iter()
            .map(|s| (s.entry, s.k))
            .collect();
        assert_eq!(l1, [(0, 0), (1, 0), (2, 0), (3, 0), (1, 1)]);
    }

    #[test]
    fn class_unions_agree_with_pipe_conflict() {
        // every combination of member classes on both sides
        let pairs = [(false, false), (true, false), (false, true), (true, true)];
        let subsets: Vec<Vec<(bool, bool)>> = (1u32..16)
            .map(|m| {
                (0..4)
                    .filter(|i| m & (1 << i) != 0)
                    .map(|i| pairs[i])
                    .collect()
            })
            .collect();
        for a in &subsets {
            for b in &subsets {
                let mut x = e(0, 0, 1);
                x.classes = a.clone();
                let mut y = e(1, 0, 1);
                y.classes = b.clone();
                let cc = conflicting_classes(class_flags(&x));
                let fb = class_flags(&y);
                let via_unions = (0..3).any(|c| cc[c] && fb[c]);
                assert_eq!(via_unions, pipe_conflict(&x, &y), "{a:?} {b:?}");
            }
        }
    }
}
