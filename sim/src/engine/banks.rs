//! Vector blocks and UB banks (docs/timing.md, "Vector blocks" and "UB banks"): the work of a
//! vector op whose operands are handled in blocks, and the cycles its blocks' bank groups add.
//! The cost is a function of the operands' block layout alone: the compiler tabulates it per slot
//! combination for static operands, and a [`Memo`] keeps the last few layouts of an op whose
//! operands move with the loop variables.

use super::code::Opnd;
use crate::config::UbBanks;
use crate::footprint::{self, EvalFailure};
use crate::program::Operand;

/// The blocks of one operand: run `r` starts at UB byte `base + starts[lo + r]`, and block `q`
/// of a run at `q × block` bytes after its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlockList {
    pub base: u64,
    /// The operand's run starts (bytes from `base`) are `starts[lo..hi]`.
    pub lo: usize,
    pub hi: usize,
    /// Blocks per run: ceil(run bytes / block).
    pub per_run: u64,
}

impl BlockList {
    /// Blocks of the operand: Σ over runs of ceil(run bytes / block).
    #[inline]
    pub fn blocks(&self) -> u64 {
        (self.hi - self.lo) as u64 * self.per_run
    }
}

/// Scratch space for [`banked_work`], reused between calls.
#[derive(Clone, Debug, Default)]
pub(super) struct Scratch {
    /// Run starts of every operand, in bytes from its base.
    pub starts: Vec<u64>,
    pub ins: Vec<BlockList>,
    pub outs: Vec<BlockList>,
    reads: Vec<u32>,
    writes: Vec<u32>,
    read_banks: Vec<u64>,
}

impl Scratch {
    pub fn clear(&mut self) {
        self.starts.clear();
        self.ins.clear();
        self.outs.clear();
    }
}

/// The (work, conflict cycles) of a vector op whose operands move with the loop variables (or
/// have too many slot combinations for a table), for the last few block layouts it met: its
/// cost depends on nothing else, and a loop usually cycles through a few (`x[t % 4]`).
#[derive(Clone, Debug, Default)]
pub(super) struct Memo {
    entries: Vec<Layout>,
    /// The entry the next new layout replaces.
    next: usize,
}

/// A block layout as [`fill`] left it (run starts, inputs, outputs) and its (work, conflict
/// cycles).
#[derive(Clone, Debug)]
struct Layout {
    starts: Vec<u64>,
    ins: Vec<BlockList>,
    outs: Vec<BlockList>,
    cost: (u64, u64),
}

impl Memo {
    /// Layouts remembered per op.
    const WAYS: usize = 8;

    /// The cost of the layout `s` holds, when remembered.
    #[inline]
    pub fn get(&self, s: &Scratch) -> Option<(u64, u64)> {
        self.entries
            .iter()
            .find(|e| e.starts == s.starts && e.ins == s.ins && e.outs == s.outs)
            .map(|e| e.cost)
    }

    /// Remembers `cost` for the layout `s` holds, in place of the oldest one when full (their
    /// vectors are reused).
    pub fn put(&mut self, s: &Scratch, cost: (u64, u64)) {
        if self.entries.len() < Self::WAYS {
            self.entries.push(Layout {
                starts: s.starts.clone(),
                ins: s.ins.clone(),
                outs: s.outs.clone(),
                cost,
            });
            return;
        }
        let e = &mut self.entries[self.next];
        self.next = (self.next + 1) % Self::WAYS;
        e.starts.clone_from(&s.starts);
        e.ins.clone_from(&s.ins);
        e.outs.clone_from(&s.outs);
        e.cost = cost;
    }
}

/// Repeats of a blocked vector op: ceil(most blocks of one operand / blocks per repeat).
#[inline]
pub(super) fn repeats(max_blocks: u64, per_repeat: u64) -> u64 {
    max_blocks.div_ceil(per_repeat.max(1))
}

/// (work, bank conflict cycles) of a vector op whose inputs and outputs are `s.ins` and
/// `s.outs`. Repeat i reads blocks i·b .. i·b+b−1 of each input (b = `per_repeat`, blocks in run
/// order) and writes those of each output; it costs max(cpr, most input blocks in one group,
/// most output blocks in one group), plus 1 when some bank is both read and written in it. The
/// conflict cycles are the work above repeats × cpr.
pub(super) fn banked_work(
    banks: &UbBanks,
    block: u64,
    per_repeat: u64,
    cpr: u64,
    s: &mut Scratch,
) -> (u64, u64) {
    let most = s
        .ins
        .iter()
        .chain(s.outs.iter())
        .map(BlockList::blocks)
        .max()
        .unwrap_or(0);
    let n = repeats(most, per_repeat);
    let groups = banks.groups as usize;
    s.reads.clear();
    s.reads.resize(groups, 0);
    s.writes.clear();
    s.writes.resize(groups, 0);
    let mut work = 0u64;
    for i in 0..n {
        let blocks = (i * per_repeat, (i + 1) * per_repeat);
        s.read_banks.clear();
        let read_banks = &mut s.read_banks;
        let most_r = tally(banks, block, &s.starts, &s.ins, blocks, &mut s.reads, |a| {
            read_banks.push(banks.bank(a))
        });
        let mut both = false;
        let most_w = tally(
            banks,
            block,
            &s.starts,
            &s.outs,
            blocks,
            &mut s.writes,
            |a| both = both || s.read_banks.contains(&banks.bank(a)),
        );
        work += cpr.max(most_r as u64).max(most_w as u64) + both as u64;
    }
    (work, work - n * cpr)
}

/// Counts blocks `from..to` (in run order: one repeat's) of each of `lists` per bank group into
/// `count`, zeroed first, handing each block's address to `each`; the most in one group. The
/// reads and the writes of [`banked_work`] are counted alike.
#[inline(always)]
fn tally(
    banks: &UbBanks,
    block: u64,
    starts: &[u64],
    lists: &[BlockList],
    (from, to): (u64, u64),
    count: &mut [u32],
    mut each: impl FnMut(u64),
) -> u32 {
    count.iter_mut().for_each(|c| *c = 0);
    let mut most = 0u32;
    for l in lists {
        for j in from..to.min(l.blocks()) {
            let a = l.base + starts[l.lo + (j / l.per_run) as usize] + (j % l.per_run) * block;
            let g = banks.group(a) as usize;
            count[g] += 1;
            most = most.max(count[g]);
            each(a);
        }
    }
    most
}

/// Blocks of one operand for the loop variables `vars`: Σ over its runs of ceil(run bytes /
/// block) (every run of an operand has the same length).
#[inline]
pub(super) fn op_blocks<'p>(
    o: &Opnd<'p>,
    vars: &[i64],
    block: u64,
) -> Result<u64, EvalFailure<'p>> {
    blocks(o.operand, o.shape, vars, block)
}

/// [`op_blocks`] of operand `o` on a base of `shape`.
#[inline]
pub(super) fn blocks<'p>(
    o: &'p Operand,
    shape: &[u64],
    vars: &[i64],
    block: u64,
) -> Result<u64, EvalFailure<'p>> {
    let runs = footprint::runs_at(o, shape, vars)?;
    Ok(runs.count * runs.run_bytes(o.dtype.bits()).div_ceil(block))
}

/// Fills `s` with the blocks of `opnds` (the first `nin` inputs, the rest outputs) at slots
/// `slots` and loop variables `vars`: each run's UB byte address is its slot's address plus the
/// run's first element (window offsets included) × bits / 8.
pub(super) fn fill<'p>(
    opnds: &[Opnd<'p>],
    nin: usize,
    slots: &[u32],
    vars: &[i64],
    block: u64,
    s: &mut Scratch,
) -> Result<(), EvalFailure<'p>> {
    s.clear();
    for (k, o) in opnds.iter().enumerate() {
        let from = s.starts.len();
        let runs = footprint::run_starts(o.operand, o.shape, vars, &mut s.starts)?;
        let mut win = o.win_const;
        for w in &o.windows {
            win += w.offset.eval(vars)?.max(0) as u64;
        }
        let bits = o.operand.dtype.bits();
        for st in &mut s.starts[from..] {
            *st = (*st + win) * bits / 8;
        }
        let base = match o.addrs.len() {
            0 => 0,
            len => o.addrs[slots[k] as usize % len],
        };
        let list = BlockList {
            base,
            lo: from,
            hi: s.starts.len(),
            per_run: runs.run_bytes(bits).div_ceil(block),
        };
        if k < nin {
            s.ins.push(list);
        } else {
            s.outs.push(list);
        }
    }
    Ok(())
}
