//! First fit with reuse levels 2/1/0 and rollback: the address assignment of one scope that
//! does not fit side by side, after HIVM PlanMemory (AscendNPU-IR).
//!
//! Slots are placed in planning order ([`crate::place::planning_order`]):
//! - pass C ([`Placer::single_level`] at level 2, unbounded): every slot at level 2; kept if it
//!   ends inside the capacity;
//! - pass D ([`Placer::multi_level`], bounded): each slot tries levels `max_level` .. 0 and
//!   takes the lowest address that passes the lifetime test (Stage 0) and the level's rule;
//!   when every level fails, HIVM's rollback lowers the level of an earlier slot and forbids
//!   its old address; when nothing is left to roll back, the scope overflows.
//!
//! Levels (HIVM's stage in brackets):
//! - level 2 [stage 3]: no address range may hold a slot of another pipeline class: an entry
//!   touched by DMA or by the scalar unit never shares bytes with another class (two scalar
//!   entries may), vector-only entries share with vector-only entries;
//! - level 1 [stage 1]: only a reuse of slot 0 of a multi-buffer (or of an upgraded single
//!   buffer) in the same innermost loop, taking all its slots: a single buffer is upgraded to a
//!   multi-buffer over them, a multi-buffer takes the first N of them;
//! - level 0 [stage 0]: lifetimes only.
//!
//! With [`Placer::stage2`] (`npusim opt`), HIVM's stage 2 is tried between levels 2 and 1: a
//! slot shares bytes with any slot but those of entries in its own innermost loop (HIVM
//! `PipeConflictInSameLoop`; entries in no single loop count as one loop). Inside the placer
//! levels are HIVM's stage numbers (3, 2, 1, 0), so HIVM's rollback, one stage lower, steps
//! through stage 2 as it does; without `stage2` stage 2 places nothing, which is npusim's
//! 2 -> 1. [`Placer::single_level`], [`Placer::multi_level`] and [`Placer::result`] speak
//! npusim's levels.
//!
//! Stage 0, at every level: two entries whose inclusive lifetimes share a position conflict,
//! except a pair listed as touch-allowed sharing exactly one position; a `unique` entry
//! conflicts with everything.
//!
//! Conflict tests are made against the placed slots themselves (each with its own lifetime),
//! not against HIVM's outline bounds, whose lifetimes are unions over everything ever placed on
//! the bound's whole range. This is HIVM's split-outline mode from the start, so HIVM's
//! split-outline restart has nothing left to change and is not repeated.

use super::entries::{class_flags, level2_mask, shared_positions, Slot, StorageEntry};
use super::index::{next_candidate, MaxTree, SlotIndex, BLOCK};
use sim::{BufferId, OpId};

/// A placed slot.
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// Index in the planning order; `usize::MAX` for fixed slots.
    idx: usize,
    entry: usize,
    k: u32,
    offset: u64,
    level: u8,
    /// Placed together with its slot 0 (level 1).
    joint: bool,
    /// No placed or fixed slot held any of its bytes when it was placed.
    fresh: bool,
}

/// The address assignment of one scope.
pub(super) struct Placer<'a> {
    entries: &'a [StorageEntry],
    order: &'a [Slot],
    align: u64,
    /// `None`: the unbounded outline of passes C and of the level-0 peak.
    cap: Option<u64>,
    fixed: Vec<Rec>,
    records: Vec<Rec>,
    /// Offset per planning-order index, once placed.
    placed: Vec<Option<u64>>,
    /// Extra slot offsets of single entries upgraded at level 1.
    pub(super) upgraded: Vec<Vec<u64>>,
    /// HIVM `rollbackIdx`/`rollbackAddr`.
    forbid: Option<(usize, u64)>,
    /// Indexes over the fixed and placed slots, so that placing a slot costs about the
    /// number of slots live near it, not the number placed (see [`SlotIndex`]).
    index: SlotIndex,
    /// Every size and fixed offset is a multiple of `align`: then the lowest free address is
    /// always a candidate offset, and first fit may ask the byte unions for it directly.
    aligned: bool,
    /// Per entry: the dense id of its innermost loop ([`SlotIndex`]'s `by_loop`).
    loop_id: Vec<Option<usize>>,
    /// Per entry: [`level2_mask`].
    mask2: Vec<u8>,
    /// Per entry: the planning-order index of each slot.
    slot_at: Vec<Vec<usize>>,
    /// Entry pairs `(a, b)`, both orders, that some touch pair names.
    touch_entries: std::collections::HashSet<(usize, usize)>,
    /// Try HIVM's stage 2 between levels 2 and 1 ([`super::PlanOptions::hivm_stage2`]).
    pub(super) stage2: bool,
}

/// Stage 3, HIVM's number for npusim's level 2 inside the placer.
const L3: u8 = 3;

/// npusim's level (0..=2) as the placer's stage number.
fn stage_of(level: u8) -> u8 {
    if level >= 2 {
        L3
    } else {
        level
    }
}

/// A stage number as npusim's level: stage 2 is reported as level 2 (a share by a rule
/// above level 1's).
fn level_of(stage: u8) -> u8 {
    stage.min(2)
}

/// How many rollbacks a scope may take before it is declared full.
const MAX_ROLLBACKS: usize = 10_000;

impl<'a> Placer<'a> {
    pub(super) fn new(
        entries: &'a [StorageEntry],
        order: &'a [Slot],
        touch: &'a [(BufferId, BufferId)],
        align: u64,
        cap: Option<u64>,
    ) -> Self {
        let mut fixed = Vec::new();
        for (e, se) in entries.iter().enumerate() {
            for (k, &o) in se.fixed.iter().flatten().enumerate() {
                fixed.push(Rec {
                    idx: usize::MAX,
                    entry: e,
                    k: k as u32,
                    offset: o,
                    level: 0,
                    joint: false,
                    fresh: false,
                });
            }
        }
        let align = align.max(1);
        let aligned = entries
            .iter()
            .all(|e| e.size % align == 0 && e.fixed.iter().flatten().all(|&o| o % align == 0));
        let mut loops: Vec<OpId> = entries.iter().filter_map(|e| e.loop_parent).collect();
        loops.sort_unstable();
        loops.dedup();
        let loop_id = entries
            .iter()
            .map(|e| {
                e.loop_parent
                    .map(|l| loops.binary_search(&l).expect("listed"))
            })
            .collect();
        let mut slot_at = vec![Vec::new(); entries.len()];
        for (i, s) in order.iter().enumerate() {
            let v: &mut Vec<usize> = &mut slot_at[s.entry];
            if v.len() <= s.k as usize {
                v.resize(s.k as usize + 1, usize::MAX);
            }
            if v[s.k as usize] == usize::MAX {
                v[s.k as usize] = i;
            }
        }
        let mut entry_of = std::collections::HashMap::new();
        for (e, se) in entries.iter().enumerate() {
            for &b in &se.buffers {
                entry_of.entry(b).or_insert(e);
            }
        }
        let mut touch_entries = std::collections::HashSet::new();
        for (x, y) in touch {
            if let (Some(&a), Some(&b)) = (entry_of.get(x), entry_of.get(y)) {
                touch_entries.insert((a, b));
                touch_entries.insert((b, a));
            }
        }
        // level 1 only runs bounded; a tree over the capacity's address units answers its
        // "last slot on these bytes"
        let last = match cap {
            Some(c) if aligned && c / align <= 1 << 22 => {
                Some(MaxTree::new(c.div_ceil(align) as usize))
            }
            _ => None,
        };
        let mut used = [false; 8];
        used[0] = true;
        for e in entries.iter().filter(|e| !e.unique) {
            used[level2_mask(e)] = true;
        }
        let mut p = Placer {
            entries,
            order,
            align,
            cap,
            fixed: Vec::new(),
            records: Vec::new(),
            placed: vec![None; order.len()],
            upgraded: vec![Vec::new(); entries.len()],
            forbid: None,
            index: SlotIndex {
                of_entry: vec![Vec::new(); entries.len()],
                by_loop: vec![Vec::new(); loops.len()],
                last,
                used,
                ..SlotIndex::default()
            },
            aligned,
            mask2: entries.iter().map(|e| level2_mask(e) as u8).collect(),
            loop_id,
            slot_at,
            touch_entries,
            stage2: false,
        };
        for r in fixed {
            p.index_add(&r, p.fixed.len());
            p.fixed.push(r);
        }
        p
    }

    /// The lifetime hull of an entry in blocks, `None` for an entry never live.
    fn block_span(&self, e: usize) -> Option<(usize, usize)> {
        let l = &self.entries[e].lifetime;
        Some((l.first()?.first / BLOCK, l.last()?.last / BLOCK))
    }

    fn index_add(&mut self, r: &Rec, key: usize) {
        self.index.version += 1;
        let key = key as u32;
        let size = self.size(r.entry);
        let (o, end) = (r.offset, r.offset + size);
        if let Some((b0, b1)) = self.block_span(r.entry) {
            if self.index.blocks.len() <= b1 {
                self.index.blocks.resize(b1 + 1, Vec::new());
            }
            for b in &mut self.index.blocks[b0..=b1] {
                b.push(key);
            }
        }
        self.index.of_entry[r.entry].push(key);
        let placed = r.idx != usize::MAX;
        if let (true, 0, Some(l)) = (placed, r.k, self.loop_id[r.entry]) {
            self.index.by_loop[l].push(key);
        }
        for c in [o, end.div_ceil(self.align) * self.align] {
            *self.index.cands.entry(c).or_default() += 1;
        }
        let ee = &self.entries[r.entry];
        let flags = class_flags(ee);
        let bits = (0..3).filter(|&c| flags[c]).fold(0, |m, c| m | 1 << c);
        let (o, end) = if size == 0 { (0, 0) } else { (o, end) };
        self.index.all.insert(o, end);
        for (m, u) in self.index.mask.iter_mut().enumerate() {
            if !self.index.used[m] {
                continue;
            }
            let (mo, me) = if ee.unique || m & bits != 0 {
                (o, end)
            } else {
                (0, 0)
            };
            u.insert(mo, me);
        }
        if let (true, Some(t)) = (placed, &mut self.index.last) {
            let units = ((o / self.align) as usize, (end / self.align) as usize);
            t.add(units, ((r.idx as u64 + 1) << 32) | key as u64);
        }
    }

    /// Undoes [`Self::index_add`] for the last record added.
    fn index_remove(&mut self, r: &Rec) {
        self.index.version += 1;
        if let Some((b0, b1)) = self.block_span(r.entry) {
            for b in &mut self.index.blocks[b0..=b1] {
                b.pop();
            }
        }
        self.index.of_entry[r.entry].pop();
        let placed = r.idx != usize::MAX;
        if let (true, 0, Some(l)) = (placed, r.k, self.loop_id[r.entry]) {
            self.index.by_loop[l].pop();
        }
        let size = self.size(r.entry);
        if let (true, Some(t)) = (placed, &mut self.index.last) {
            let (o, end) = if size == 0 {
                (0, 0)
            } else {
                (r.offset, r.offset + size)
            };
            t.add(((o / self.align) as usize, (end / self.align) as usize), 0);
        }
        let end = r.offset + size;
        for c in [r.offset, end.div_ceil(self.align) * self.align] {
            if let Some(n) = self.index.cands.get_mut(&c) {
                *n -= 1;
                if *n == 0 {
                    self.index.cands.remove(&c);
                }
            }
        }
        self.index.all.undo();
        for (m, u) in self.index.mask.iter_mut().enumerate() {
            if self.index.used[m] {
                u.undo();
            }
        }
    }

    fn rec(&self, key: u32) -> &Rec {
        let k = key as usize;
        if k < self.fixed.len() {
            &self.fixed[k]
        } else {
            &self.records[k - self.fixed.len()]
        }
    }

    fn add_record(&mut self, r: Rec) {
        self.index_add(&r, self.fixed.len() + self.records.len());
        self.records.push(r);
    }

    /// The byte ranges of the slots entry `e` may not share bytes with by Stage 0 (its own
    /// slots, and slots live with it), sorted by start.
    fn stage0_ranges(&mut self, e: usize) -> Vec<(u64, u64)> {
        self.index.stamp = self.index.stamp.wrapping_add(1);
        if self.index.stamp == 0 {
            self.index.seen.iter_mut().for_each(|x| *x = 0);
            self.index.stamp = 1;
        }
        let total = self.fixed.len() + self.records.len();
        if self.index.seen.len() < total {
            self.index.seen.resize(total, 0);
        }
        let mut keys = std::mem::take(&mut self.index.scratch);
        keys.clear();
        keys.extend(self.index.of_entry[e].iter().copied());
        if let Some((b0, b1)) = self.block_span(e) {
            for b in b0..=b1.min(self.index.blocks.len().saturating_sub(1)) {
                keys.extend(self.index.blocks.get(b).into_iter().flatten().copied());
            }
        }
        let stamp = self.index.stamp;
        let mut out = Vec::new();
        for &key in &keys {
            if std::mem::replace(&mut self.index.seen[key as usize], stamp) == stamp {
                continue;
            }
            let r = *self.rec(key);
            let size = self.size(r.entry);
            if size > 0 && self.stage0(e, r.entry) {
                out.push((r.offset, r.offset + size));
            }
        }
        self.index.scratch = keys;
        out.sort_unstable();
        out
    }

    /// [`Self::stage0_ranges`], remembered until the next slot is placed or removed (pass D
    /// asks once per level for a slot that does not fit).
    fn bad_ranges(&mut self, e: usize) -> std::rc::Rc<Vec<(u64, u64)>> {
        let now = (e, self.index.version);
        if let Some((at, v)) = &self.index.bad {
            if *at == now {
                return v.clone();
            }
        }
        let v = std::rc::Rc::new(self.stage0_ranges(e));
        self.index.bad = Some((now, v.clone()));
        v
    }

    fn size(&self, e: usize) -> u64 {
        self.entries[e].size
    }

    fn all(&self) -> impl Iterator<Item = &Rec> {
        self.fixed.iter().chain(self.records.iter())
    }

    /// The placed slot on [o, o + size) placed last (largest planning index, then latest
    /// record), if any.
    fn last_on(&self, o: u64, size: u64) -> Option<Rec> {
        if let Some(t) = &self.index.last {
            let units = (
                (o / self.align) as usize,
                (o + size).div_ceil(self.align) as usize,
            );
            return match t.max_over(units) {
                0 => None,
                v => Some(*self.rec(v as u32)),
            };
        }
        self.records
            .iter()
            .filter(|r| {
                let rs = self.size(r.entry);
                size > 0 && rs > 0 && r.offset < o + size && o < r.offset + rs
            })
            .max_by_key(|r| r.idx)
            .copied()
    }

    fn touch_allowed(&self, a: usize, b: usize) -> bool {
        self.touch_entries.contains(&(a, b))
    }

    /// Stage 0 between entry `e` and a placed slot of entry `r`.
    fn stage0(&self, e: usize, r: usize) -> bool {
        if e == r {
            return true; // two slots of one entry never share bytes
        }
        let (ee, re) = (&self.entries[e], &self.entries[r]);
        if ee.unique || re.unique {
            return true;
        }
        match shared_positions(&ee.lifetime, &re.lifetime) {
            0 => false,
            1 => !self.touch_allowed(e, r),
            _ => true,
        }
    }

    fn fits(&self, o: u64, size: u64) -> bool {
        self.cap.is_none_or(|c| o + size <= c)
    }

    /// Tries to place planning-order slot `idx` at `level`; true on success.
    fn try_place(&mut self, idx: usize, level: u8) -> bool {
        let e = self.order[idx].entry;
        let size = self.size(e);
        if size == 0 {
            self.push(idx, 0, level, false);
            return true;
        }
        if level == 1 {
            return self.try_level1(idx);
        }
        if level == 2 && !self.stage2 {
            return false;
        }
        // Stage 0's ranges are found through the time index; unique slots and (at level 2)
        // other pipeline classes through one byte union.
        let unique = self.entries[e].unique;
        let mut bad = if unique {
            Default::default()
        } else {
            self.bad_ranges(e)
        };
        if level == 2 && !unique {
            // stage 2: the slots of entries in e's own innermost loop block it too
            let lp = self.entries[e].hivm_loop;
            let mut v: Vec<(u64, u64)> = bad.as_ref().clone();
            v.extend(
                self.all()
                    .filter(|r| self.entries[r.entry].hivm_loop == lp && self.size(r.entry) > 0)
                    .map(|r| (r.offset, r.offset + self.size(r.entry))),
            );
            v.sort_unstable();
            bad = std::rc::Rc::new(v);
        }
        let forbid = self.forbid.filter(|f| f.0 == idx).map(|f| f.1);
        let ix = &self.index;
        let u = if unique {
            &ix.all
        } else if level == L3 {
            &ix.mask[self.mask2[e] as usize]
        } else {
            &ix.mask[0]
        };
        let max_end: Vec<u64> = bad
            .iter()
            .scan(0u64, |m, b| {
                *m = (*m).max(b.1);
                Some(*m)
            })
            .collect();
        // the end of a Stage-0 range meeting [o, o + size), the latest ending one
        let bad_end = |o: u64| {
            let i = bad.partition_point(|b| b.0 < o + size);
            (i > 0 && max_end[i - 1] > o).then(|| max_end[i - 1])
        };
        let found = if self.aligned {
            // The lowest free address is 0 or the end of a blocking slot, so a candidate: first
            // fit in the union (one descent) and past the Stage-0 ranges, in turns; each turn
            // passes a Stage-0 range or ends.
            let fit_from = |mut y: u64| loop {
                y = u.first_fit(y, size);
                match bad_end(y) {
                    Some(e) => y = e,
                    None => break y,
                }
            };
            let mut y = Some(fit_from(0));
            if y == forbid {
                // HIVM's rollback forbids this address only: the next candidate, if it still
                // lies in the same free gap, else the first fit beyond that gap (whose lowest
                // free address is again a blocker's end)
                let f = forbid.unwrap_or(0);
                let next_bad = bad.get(bad.partition_point(|b| b.0 <= f)).map(|b| b.0);
                let g = match (u.start_from(f + 1), next_bad) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                y = next_candidate(&ix.cands, f + 1).map(|c| match g {
                    Some(g) if c.saturating_add(size) > g => fit_from(g),
                    _ => c,
                });
            }
            y
        } else {
            // A candidate blocked by a range ending at E blocks every candidate below E too, so
            // the scan jumps there: first fit at the cost of the blockers met.
            let mut o = 0u64;
            loop {
                if forbid == Some(o) {
                    match next_candidate(&ix.cands, o + 1) {
                        Some(c) => o = c,
                        None => break None,
                    }
                    continue;
                }
                if self.cap.is_some_and(|c| o + size > c) {
                    break None;
                }
                let mut blocked = bad_end(o);
                if let Some(e) = u.blocker(o, o + size) {
                    blocked = Some(blocked.map_or(e, |b: u64| b.max(e)));
                }
                match blocked {
                    Some(end) => match next_candidate(&ix.cands, end.max(o + 1)) {
                        Some(c) => o = c,
                        None => break None,
                    },
                    None => break Some(o),
                }
            }
        };
        let Some(o) = found.filter(|&o| self.fits(o, size)) else {
            return false;
        };
        let fresh = self.index.all.blocker(o, o + size).is_none();
        self.push(idx, o, level, false);
        if let Some(r) = self.records.last_mut() {
            r.fresh = fresh;
        }
        true
    }

    /// Level 1: reuse slot 0 of a multi-buffer (or upgraded single buffer) R of the same
    /// innermost loop and take R's other slots too.
    fn try_level1(&mut self, idx: usize) -> bool {
        let Slot { entry: e, k } = self.order[idx];
        if k != 0 {
            return false;
        }
        let ee = &self.entries[e];
        let size = ee.size;
        let (Some(lp), Some(lid)) = (ee.loop_parent, self.loop_id[e]) else {
            return false;
        };
        // The slot reused must be the last placed on its bytes, at this very offset, a slot 0
        // of this loop: only those slots' offsets can pass.
        let mut cands: Vec<u64> = self.index.by_loop[lid]
            .iter()
            .map(|&key| self.rec(key).offset)
            .collect();
        cands.sort_unstable();
        cands.dedup();
        if cands.is_empty() {
            return false;
        }
        let bad = if ee.unique {
            Default::default()
        } else {
            self.bad_ranges(e)
        };
        let max_end: Vec<u64> = bad
            .iter()
            .scan(0u64, |m, b| {
                *m = (*m).max(b.1);
                Some(*m)
            })
            .collect();
        // whether a slot in Stage-0 conflict with `e` holds a byte of [o, o + size)
        let conflict = |p: &Self, o: u64| {
            if ee.unique {
                return p.index.all.blocker(o, o + size).is_some();
            }
            let i = bad.partition_point(|b| b.0 < o + size);
            (i > 0 && max_end[i - 1] > o) || p.index.mask[0].blocker(o, o + size).is_some()
        };
        for o in cands {
            if self.forbid == Some((idx, o)) || !self.fits(o, size) {
                continue;
            }
            if conflict(self, o) {
                continue;
            }
            // the last placed slot on this range
            let Some(r) = self.last_on(o, size) else {
                continue;
            };
            let re = &self.entries[r.entry];
            if r.k != 0 || r.offset != o || size > re.size || re.loop_parent != Some(lp) {
                continue;
            }
            let others: Vec<u64> = if re.multi > 1 {
                (1..re.multi)
                    .filter_map(|kk| {
                        self.index.of_entry[r.entry]
                            .iter()
                            .map(|&key| self.rec(key))
                            .find(|x| x.k == kk)
                            .map(|x| x.offset)
                    })
                    .collect()
            } else {
                self.upgraded[r.entry].clone()
            };
            let want = if ee.multi > 1 {
                ee.multi as usize - 1
            } else {
                others.len()
            };
            if others.is_empty() || others.len() < want {
                continue;
            }
            let targets = &others[..want];
            let ok = targets
                .iter()
                .all(|&t| self.fits(t, size) && !conflict(self, t));
            if !ok {
                continue;
            }
            let targets = targets.to_vec();
            self.push(idx, o, 1, false);
            if ee.multi > 1 {
                for (j, &t) in targets.iter().enumerate() {
                    let kk = j as u32 + 1;
                    let Some(&ti) = self.slot_at[e]
                        .get(kk as usize)
                        .filter(|&&i| i != usize::MAX)
                    else {
                        continue;
                    };
                    self.push(ti, t, 1, true);
                }
            } else {
                // the upgraded slots occupy their bytes like any slot
                for (j, &t) in targets.iter().enumerate() {
                    self.add_record(Rec {
                        idx,
                        entry: e,
                        k: j as u32 + 1,
                        offset: t,
                        level: 1,
                        joint: true,
                        fresh: false,
                    });
                }
                self.upgraded[e] = targets;
            }
            return true;
        }
        false
    }

    fn push(&mut self, idx: usize, offset: u64, level: u8, joint: bool) {
        let Slot { entry, k } = self.order[idx];
        self.placed[idx] = Some(offset);
        self.add_record(Rec {
            idx,
            entry,
            k,
            offset,
            level,
            joint,
            fresh: false,
        });
    }

    fn pop(&mut self) -> Option<Rec> {
        let r = self.records.pop()?;
        self.index_remove(&r);
        self.placed[r.idx] = None;
        if r.k == 0 {
            self.upgraded[r.entry].clear();
        }
        Some(r)
    }

    /// Every slot at one level, no rollback (passes C and the level-0 peak).
    pub(super) fn single_level(&mut self, level: u8) -> bool {
        let level = stage_of(level);
        for idx in 0..self.order.len() {
            if self.placed[idx].is_none() && !self.try_place(idx, level) {
                return false;
            }
        }
        true
    }

    /// Pass D: levels `max` .. 0 per slot, with rollback.
    pub(super) fn multi_level(&mut self, max: u8) -> bool {
        let max = stage_of(max);
        let cap = self.cap.unwrap_or(u64::MAX);
        let n = self.order.len();
        let (mut i, mut spec_level, mut spec_start, mut rollbacks) = (0usize, max, 0usize, 0);
        while i < n {
            if self.placed[i].is_some() {
                i += 1;
                continue;
            }
            if (0..=spec_level).rev().any(|lv| self.try_place(i, lv)) {
                i += 1;
                if i >= spec_start {
                    spec_level = max;
                }
                continue;
            }
            // every level failed: roll back (HIVM's rollback order)
            rollbacks += 1;
            if rollbacks > MAX_ROLLBACKS {
                return false;
            }
            spec_start = spec_start.max(i);
            let fail_size = self.size(self.order[i].entry);
            let mut landing = None;
            // the lowest planning index popped: a slot placed after the landing slot may come
            // before it in planning order (a level-1 upgrade places another entry's slots), and
            // every popped slot must be placed again
            let mut lowest = usize::MAX;
            while let Some(r) = self.pop() {
                lowest = lowest.min(r.idx);
                if r.k > 0 {
                    let first_level = self.index.of_entry[r.entry]
                        .iter()
                        .map(|&key| self.rec(key))
                        .find(|x| x.k == 0)
                        .map(|x| x.level);
                    if r.joint || first_level == Some(r.level) {
                        continue; // popped together with its first slot
                    }
                }
                if r.level == 0 {
                    continue;
                }
                landing = Some(r);
                if r.offset + fail_size <= cap {
                    break;
                }
            }
            let Some(r) = landing else {
                return false;
            };
            // everything placed after the landing slot is popped; retry it one level lower
            self.forbid = Some((r.idx, r.offset));
            i = r.idx.min(lowest);
            spec_level = r.level - 1;
        }
        true
    }

    /// The end of the highest placed or fixed slot.
    pub(super) fn end(&self) -> u64 {
        self.all()
            .map(|r| r.offset + self.size(r.entry))
            .max()
            .unwrap_or(0)
    }

    /// Offsets per entry (slot order) and the lowest level any slot of the entry was placed at.
    pub(super) fn result(&self, top: u8) -> (Vec<Vec<u64>>, Vec<u8>) {
        let mut offs: Vec<Vec<Option<u64>>> = self
            .entries
            .iter()
            .map(|e| vec![None; e.multi as usize])
            .collect();
        // A slot placed on bytes nobody else held satisfies every level's rule: report it at
        // the highest level tried, not at the level the search happened to reach.
        let mut level = vec![u8::MAX; self.entries.len()];
        for r in self.all() {
            if let Some(s) = offs[r.entry].get_mut(r.k as usize) {
                *s = Some(r.offset);
            }
            let l = if r.fresh { top } else { level_of(r.level) };
            level[r.entry] = level[r.entry].min(l);
        }
        debug_assert!(
            offs.iter().flatten().all(Option::is_some),
            "every slot is placed or fixed: {offs:?}"
        );
        let offs = offs
            .into_iter()
            .map(|v| v.into_iter().map(|o| o.unwrap_or(0)).collect())
            .collect();
        (offs, level)
    }
}

#[cfg(test)]
mod tests {
    use super::super::entries::planning_order;
    use super::super::entries::testing::*;
    use super::*;
    use sim::Space;

    fn order(entries: &[StorageEntry]) -> Vec<Slot> {
        planning_order(entries, Space::L1)
    }

    /// Places every slot at one level, unbounded; offsets of slot 0 per entry.
    fn at_level(entries: &[StorageEntry], level: u8) -> Vec<u64> {
        let o = order(entries);
        let mut p = Placer::new(entries, &o, &[], 32, None);
        assert!(p.single_level(level));
        p.result(2).0.iter().map(|v| v[0]).collect()
    }

    #[test]
    fn first_fit_takes_the_lowest_free_address() {
        // x and z are disjoint; y overlaps both
        let entries = [e(0, 0, 3), e(1, 2, 6), e(2, 5, 8), e(3, 9, 9)];
        assert_eq!(at_level(&entries, 0), [0, U, 0, 0]);
    }

    #[test]
    fn one_shared_position_conflicts_unless_touch_allowed() {
        let entries = [e(0, 0, 2), e(1, 2, 4)];
        assert_eq!(at_level(&entries, 0), [0, U]);
        let o = order(&entries);
        let touch = [(BufferId::new(1), BufferId::new(0))];
        let mut p = Placer::new(&entries, &o, &touch, 32, None);
        assert!(p.single_level(0));
        assert_eq!(p.result(2).0, [vec![0], vec![0]]);
    }

    #[test]
    fn a_rollback_places_again_every_slot_it_pops() {
        // a unique buffer and a loop's buffers that nothing touches (found by the planner's
        // property test): with no lifetime to conflict by, only two rules hold them apart, a
        // unique slot shares no byte and two slots of one buffer never share. A level-1 upgrade
        // and the rollbacks that follow used to pop slots placed before the landing slot and
        // never place them again, so they came out at offset 0, over the unique slot.
        let never = |name: usize, size: u64| StorageEntry {
            lifetime: Vec::new(),
            size,
            ..e(name, 0, 0)
        };
        let place = |last: u64| {
            let mut u = never(0, 1024);
            u.unique = true;
            u.loop_parent = None;
            let mut m = never(2, 512);
            m.multi = 2;
            let entries = vec![u, never(1, 512), m, never(3, 512), never(4, last)];
            let o = planning_order(&entries, Space::Ub);
            let mut p = Placer::new(&entries, &o, &[], 32, Some(2048));
            let offs = p.multi_level(1).then(|| p.result(1).0);
            drop(p);
            (entries, offs)
        };
        // 1536 bytes do not fit beside the unique 1024 of 2048
        assert_eq!(place(1536).1, None);
        // 1024 do: the unique slot alone on its bytes, the multi-buffer's slots apart
        let (entries, offs) = place(1024);
        let offs = offs.expect("fits");
        let slots: Vec<(usize, u64, u64)> = offs
            .iter()
            .enumerate()
            .flat_map(|(i, v)| {
                v.iter()
                    .map(|&o| (i, o, o + entries[i].size))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (x, a) in slots.iter().enumerate() {
            for b in &slots[x + 1..] {
                let overlap = a.1 < b.2 && b.1 < a.2;
                let may = a.0 != b.0 && !entries[a.0].unique && !entries[b.0].unique;
                assert!(!overlap || may, "{a:?} and {b:?} share bytes: {offs:?}");
                assert!(a.2 <= 2048 && b.2 <= 2048);
            }
        }
    }

    #[test]
    fn unique_never_shares() {
        let mut u = e(1, 5, 6);
        u.unique = true;
        assert_eq!(at_level(&[e(0, 0, 1), u], 0), [0, U]);
    }

    #[test]
    fn level2_keeps_pipeline_classes_apart() {
        // vector with vector: shared
        assert_eq!(at_level(&[e(0, 0, 1), e(1, 2, 3)], 2), [0, 0]);
        // DMA with anything: apart at level 2, shared at level 0
        assert_eq!(at_level(&[e(0, 0, 1), dma(e(1, 2, 3))], 2), [0, U]);
        assert_eq!(at_level(&[dma(e(0, 0, 1)), dma(e(1, 2, 3))], 2), [0, U]);
        assert_eq!(at_level(&[e(0, 0, 1), dma(e(1, 2, 3))], 0), [0, 0]);
        // scalar with scalar: shared; scalar with vector: apart
        assert_eq!(
            at_level(&[scalar(e(0, 0, 1)), scalar(e(1, 2, 3))], 2),
            [0, 0]
        );
        assert_eq!(at_level(&[scalar(e(0, 0, 1)), e(1, 2, 3)], 2), [0, U]);
    }

    #[test]
    fn level1_upgrades_a_single_buffer_over_a_multi_buffer() {
        let mut a = dma(e(0, 0, 1));
        a.multi = 2;
        let c = e(1, 2, 3);
        let entries = [a, c];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(p.try_place(0, 0));
        assert!(p.try_place(2, 0), "slot 1 of a");
        assert!(!p.try_place(1, L3), "no room at level 2");
        assert!(p.try_place(1, 1));
        assert_eq!(p.result(2).0, [vec![0, U], vec![0]]);
        assert_eq!(p.upgraded[1], [U]);
        assert_eq!(p.result(2).1[1], 1);
    }

    #[test]
    fn stage2_keeps_an_entry_off_its_own_loops_bytes_only() {
        // a and b in loop 7, c in loop 9, c live with a: at stage 2 b (dead a, dead c) may not
        // take a's bytes (same loop) but may take c's; off, stage 2 places nothing
        let mut a = e(0, 0, 1);
        let mut c = e(1, 0, 1);
        let mut b = e(2, 2, 3);
        a.hivm_loop = Some(OpId::new(7));
        b.hivm_loop = Some(OpId::new(7));
        c.hivm_loop = Some(OpId::new(9));
        let entries = [a, c, b];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, None);
        assert!(!p.try_place(0, 2), "stage 2 is off");
        p.stage2 = true;
        for i in 0..3 {
            assert!(p.try_place(i, 2));
        }
        assert_eq!(p.result(2).0, [vec![0], vec![U], vec![U]]);
        // at level 0 b takes the lowest free bytes, a's
        let mut p = Placer::new(&entries, &o, &[], 32, None);
        assert!(p.single_level(0));
        assert_eq!(p.result(0).0, [vec![0], vec![U], vec![0]]);
    }

    #[test]
    fn level1_needs_the_same_innermost_loop_and_free_other_slots() {
        let mut a = e(0, 0, 1);
        a.multi = 2;
        let mut c = e(1, 2, 3);
        c.loop_parent = Some(OpId::new(7));
        let entries = [a.clone(), c];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, None);
        assert!(p.try_place(0, 0) && p.try_place(2, 0));
        assert!(!p.try_place(1, 1), "different loops");

        // a third entry live with c sits on a's slot 1: the upgrade is refused
        let mut b = e(2, 2, 3);
        b.loop_parent = Some(OpId::new(9));
        let entries = [a, e(1, 2, 3), b];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, None);
        assert!(p.try_place(0, 0) && p.try_place(3, 0));
        assert!(p.try_place(2, 0));
        assert_eq!(p.records.last().unwrap().offset, 0, "b on a's slot 0");
        // move b to a's slot 1 instead
        p.pop();
        p.push(2, U, 0, false);
        assert!(!p.try_place(1, 1));
    }

    #[test]
    fn level1_multi_buffer_takes_the_other_slots() {
        let mut a = dma(e(0, 0, 1));
        a.multi = 2;
        let mut d = dma(e(1, 2, 3));
        d.multi = 2;
        let entries = [a, d];
        let o = planning_order(&entries, Space::Ub);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(p.multi_level(2));
        assert_eq!(p.result(2).0, [vec![0, U], vec![0, U]]);
        assert_eq!(p.result(2).1, [2, 1]);
    }

    #[test]
    fn rollback_lowers_an_earlier_level() {
        // cap 2 slots; w lives throughout. Greedy level 2 puts z (DMA) on fresh bytes, leaving
        // nothing for w; the rollback retries z lower and forbids its old address: z lands on
        // the vector bytes at level 0 and w gets the freed slot.
        let entries = [e(0, 0, 1), e(1, 2, 3), dma(e(2, 4, 5)), e(3, 0, 5)];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(p.multi_level(2));
        let (offs, levels) = p.result(2);
        assert_eq!(offs, [vec![0], vec![0], vec![0], vec![U]]);
        assert_eq!(levels, [2, 2, 0, 2]);
    }

    #[test]
    fn rollback_gives_up_when_nothing_helps() {
        let entries = [e(0, 0, 5), e(1, 0, 5), e(2, 0, 5)];
        let o = order(&entries);
        let mut p = Placer::new(&entries, &o, &[], 32, Some(2 * U));
        assert!(!p.multi_level(2));
    }

    #[test]
    fn fixed_slots_are_stepped_over() {
        let mut f = e(0, 0, 9);
        f.fixed = Some(vec![0]);
        assert_eq!(at_level(&[f, e(1, 0, 1)], 0)[1], U);
    }
}
