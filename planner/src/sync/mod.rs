//! Automatic synchronisation (docs/sync.md, after HIVM InjectSync): from a placed program, the
//! `set_flag`/`wait_flag`/`barrier` ops that order every pair of conflicting accesses.
//!
//! [`synchronize`] returns a `sync: manual` program whose buffers, views, tensors and loop
//! variables keep their ids (so the [`crate::Plan`] still applies) and whose original ops keep
//! their YAML paths (so hazards and reports name what the user wrote).
//!
//! # How
//!
//! 1. **Accesses** (`access.rs`): every op becomes one part per pipe instruction, each with the
//!    byte ranges it reads and writes under the plan. A multi-buffer slot chosen by the
//!    iteration stays tied to its loop's counter, so slot 0 and slot 1 of a double buffer do
//!    not conflict within an iteration.
//! 2. **Dependencies**, in program order. Forward: each part against every earlier
//!    conflicting part (nearest first) in the same iteration. Backward, at the end of each loop:
//!    every pair of its parts, the later one `d` iterations earlier, `d` the first distance at
//!    which they conflict (2 for a double buffer). A pair the synchronisation chosen so far
//!    already orders (`walk.rs`: the race checker's happens-before applied to program order,
//!    with `d + 1` copies of the loop body for backward pairs) needs nothing; S→anything needs
//!    nothing. Only parts that share bytes are paired (`index.rs` finds them by memory and
//!    byte range). Otherwise: one pipe → `barrier` on it before the later op; two pipes →
//!    `set_flag` after the earlier op and `wait_flag` before the later one, both in the
//!    deepest block holding the two (an op inside a nested block is represented by its
//!    ancestor there, so every set meets its wait). A backward pair is synchronised in the
//!    loop's body; its balancing set goes before, and its wait after, the outermost loop around
//!    it (a flag must not be set again before its wait, also across outer iterations).
//! 3. **Event ids** per ordered pipe pair: a flag whose pair recurs `d` iterations apart gets
//!    `d` ids chosen by the loop's iteration count, so iteration i+1 can run ahead while
//!    iteration i finishes (a forward pair inside a loop gets the distance of its reverse
//!    pair, which is what stops the setter from running `d` iterations ahead). Ids are live
//!    over the flag's extent (a flag inside a loop: the whole loop); at most `event_ids` at
//!    once. When they run out the pair merges into an earlier one of the same pipes in the
//!    same block (set after the later setter, wait before the earlier waiter); failing that,
//!    the wait becomes `barrier: all`.
//! 4. **Proof**: walks with id tracking show every id alternates set, wait, set (no `double
//!    set`); a flag that cannot be shown to alternate becomes `barrier: all`.
//! 5. The kernel ends with `barrier: all`.

mod access;
pub mod compat;
pub(crate) mod emit;
mod index;
mod subsume;
mod tree;
mod walk;

use sim::program::{Program, SyncMode};
use sim::{Config, OpId, Pipe};

use crate::Plan;
use access::{conflict, distance, Part, Rel, Why};
use index::Index;
use tree::{BlockRef, Tree};
use walk::{Inserts, Prefix, Steps, Walk, Walker};

/// What the pass inserted, counted statically (ops in the program text, not executions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Dependencies that needed their own synchronisation (after transitive pruning).
    pub dependencies: u32,
    /// `set_flag` ops (balancing sets before loops included).
    pub set_flags: u32,
    /// `wait_flag` ops (balancing waits after loops included).
    pub wait_flags: u32,
    /// `barrier: PIPE` ops.
    pub barriers: u32,
    /// `barrier: all` ops, the final one included.
    pub barrier_alls: u32,
    /// Pairs merged into an earlier pair of the same pipes when event ids ran out.
    pub merged: u32,
    /// Pairs replaced by `barrier: all` (event ids ran out and no merge was possible, or the
    /// flag could not be shown to alternate set and wait).
    pub fallbacks: u32,
}

/// A synchronised program.
#[derive(Clone, Debug)]
pub struct Synced {
    /// `sync: manual`, with the inserted ops.
    pub program: Program,
    pub stats: SyncStats,
    /// The multi-buffers whose slots the synchronisation serialises, and why, in program order.
    pub serialised: Vec<Serialised>,
}

/// A multi-buffer whose slots cannot overlap the iterations of a loop: an access must wait
/// for another one a single iteration (fewer iterations than slots) earlier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serialised {
    /// The multi-buffer.
    pub buffer: String,
    /// Why, what waits for what, and what to change: one line (without the buffer's name).
    pub message: String,
}

/// How the pass synchronises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncOptions {
    /// A pair whose ops recur `d` iterations apart gets `d` ids chosen by the iteration (the
    /// default). `false`: one id per pair, every multi-buffer serialised: the baseline the ids
    /// per slot are measured against.
    pub ids_per_slot: bool,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions { ids_per_slot: true }
    }
}

/// Inserts the synchronisation `plan` needs into `program` (`sync: auto`). A `sync: manual`
/// program comes back unchanged with zero stats.
pub fn synchronize(program: &Program, config: &Config, plan: &Plan) -> Synced {
    synchronize_with(program, config, plan, &SyncOptions::default())
}

/// [`synchronize`] with options.
pub fn synchronize_with(
    program: &Program,
    config: &Config,
    plan: &Plan,
    opts: &SyncOptions,
) -> Synced {
    if program.sync == SyncMode::Manual {
        return Synced {
            program: program.clone(),
            stats: SyncStats::default(),
            serialised: Vec::new(),
        };
    }
    let tree = Tree::new(program);
    let (parts, parts_of) = access::parts(&tree, plan);
    let pass = run_pass(&tree, &parts, &parts_of, config, opts);
    let inserts = pass.build_inserts();
    let (program, counts) = emit::emit(&tree, &pass.edges, &inserts);
    let mut stats = pass.stats;
    stats.set_flags = counts.set_flags;
    stats.wait_flags = counts.wait_flags;
    stats.barriers = counts.barriers;
    stats.barrier_alls = counts.barrier_alls;
    let mut notes = pass.notes;
    notes.sort();
    notes.dedup();
    // two pairs of one loop can say the same thing: keep the first (notes are in op order)
    let mut seen = std::collections::BTreeSet::new();
    let serialised: Vec<Serialised> = notes
        .iter()
        .map(|n| note(&tree, n))
        .filter(|s| seen.insert((s.buffer.clone(), s.message.clone())))
        .collect();
    Synced {
        program,
        stats,
        serialised,
    }
}

/// Dependencies, ids and proofs, in rounds until nothing changes.
fn run_pass<'a>(
    tree: &'a Tree<'a>,
    parts: &'a [Part],
    parts_of: &'a [Vec<u32>],
    config: &Config,
    opts: &SyncOptions,
) -> Pass<'a> {
    let near = nearest(tree, parts, parts_of, &Index::new(parts, 0));
    let mut pass = Pass {
        tree,
        parts,
        parts_of,
        edges: Vec::new(),
        // `Edge::banned` has a bit per id
        event_ids: config.sync.event_ids.clamp(1, 64),
        stats: SyncStats::default(),
        cache: Vec::new(),
        prefix: Prefix::default(),
        steps: Steps::new(tree),
        inserts: None,
        notes: Vec::new(),
        near,
        back: vec![None; tree.program.ops.len()],
        last_round: false,
        ids_per_slot: opts.ids_per_slot,
    };
    // Merging a pair or turning it into `barrier: all` moves or drops a set_flag, and a set
    // also orders its own pipe: pairs that relied on it may need synchronising again. Rounds
    // repeat until nothing changes; the last one synchronises with `barrier: all` only, which
    // never takes an order away.
    let converge = |pass: &mut Pass| {
        for round in 0.. {
            let before = pass.edges.len();
            pass.last_round = round >= 6;
            pass.visit(&tree.program.body.ops);
            let changed = pass.allocate() + pass.prove();
            if pass.edges.len() == before && changed == 0 {
                break;
            }
        }
    };
    converge(&mut pass);
    // A dropped edge may have been what ordered other pairs, pruned since (a barrier before
    // op 8 also drains the load at op 7 that a later pair relied on): the rounds run again,
    // and re-synchronise whatever is no longer ordered. Subsumption runs once.
    let subsumed = pass.subsume();
    if subsumed > 0 {
        converge(&mut pass);
    }
    let dropped = pass
        .edges
        .iter()
        .filter(|e| e.state == EdgeState::Merged)
        .count() as u32
        - pass.stats.merged;
    pass.stats.dependencies = pass.edges.len() as u32 - dropped;
    pass
}

/// Per part `n`: the parts its forward pairs are checked against, latest first. Nearest first,
/// one conflicting part per pipe: once the nearest on pipe p is ordered (or synchronised: a set
/// orders every earlier instruction of its pipe), every earlier part on p is too. S needs
/// nothing (it finishes its ops before sending the next). Only earlier ops count (an
/// `mmad_l1`'s MTE1 half is ordered with its other half by the engine), and not ops in another
/// branch of an `if`. The pairs do not depend on the synchronisation, so every round uses them.
fn nearest(tree: &Tree, parts: &[Part], parts_of: &[Vec<u32>], index: &Index) -> Vec<Vec<u32>> {
    parts
        .iter()
        .map(|np| {
            let own = parts_of[np.op.index()][0];
            let mut near: Vec<u32> = Pipe::ALL
                .into_iter()
                .filter(|&pipe| pipe != Pipe::S)
                .filter_map(|pipe| {
                    // the index proposes parts that share bytes, latest first; the exact rule
                    // (slots, branches) decides
                    let mut bound = own;
                    while let Some(f) = index.latest(np, pipe, bound) {
                        let fp = &parts[f as usize];
                        if conflict(fp, np, Rel::Same) && tree.common_block(fp.op, np.op).is_some()
                        {
                            return Some(f);
                        }
                        bound = f;
                    }
                    None
                })
                .collect();
            near.sort_unstable_by(|a, b| b.cmp(a));
            near
        })
        .collect()
}

/// Loop bodies of more parts than this index their parts for the backward pairs.
const SMALL_BODY: u32 = 64;

/// A backward pair that serialises a multi-buffer: (loop, first op, second op, d, why).
type Note = (OpId, OpId, OpId, u32, Why);

fn note(tree: &Tree, &(lp, first, second, d, why): &Note) -> Serialised {
    let program = tree.program;
    let name = |b: sim::BufferId| program.buffer(b).name.clone();
    // where each op is written, as every finding names an op
    let at = |op: OpId| format!("`{}`", program.locate(op));
    let before = match d {
        1 => "the iteration before".to_string(),
        d => format!("{d} iterations before"),
    };
    let waits = format!("{} waits for {} of {before}", at(second), at(first));
    let (buffer, message) = match why {
        Why::Untied(b, op) => {
            let n = program.buffer(b).multi;
            let operand = program
                .op(op)
                .kind
                .reads()
                .into_iter()
                .chain(program.op(op).kind.writes())
                .find(|o| program.root_buffers(o.base).contains(&b))
                .map_or_else(|| name(b), |o| o.text.clone());
            let how = match program.op(op).loop_parent {
                Some(_) if !operand.contains('@') => format!(
                    "`{operand}` takes its slot from the iterations of a loop whose count cannot be written (a `while`, a `for` inside an `if` inside a loop, or bounds that are not constant)"
                ),
                _ => format!(
                    "the slot of `{operand}` follows no loop's whole-run iteration count (an inner loop's variable restarts with every outer iteration; write the slot with a count that runs on, such as `(outer * TRIPS + inner) % {n}`, or give the inner loop a multiple of {n} trips)"
                ),
            };
            (name(b), format!("{how}, so {waits}"))
        }
        Why::Shared((a, i), (b, j)) => {
            let multi = if program.buffer(a).multi > 1 { a } else { b };
            (
                name(multi),
                format!(
                    "slot {i} of `{}` and slot {j} of `{}` share bytes under the plan, so {waits}: their slots cannot overlap the iterations of {}",
                    name(a),
                    name(b),
                    at(lp)
                ),
            )
        }
        Why::Counters(b) => (
            name(b),
            format!(
                "the two accesses pick its slot by different loops' iteration counts, so {waits}"
            ),
        ),
    };
    Serialised { buffer, message }
}

/// A backward pair's loop and where its balancing set and wait go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Back {
    pub lp: OpId,
    /// The outermost loop around `lp` (or `lp`): balancing set before it, wait after it.
    pub hoist: OpId,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum EdgeState {
    Live,
    /// Folded into another edge of the same pipes.
    Merged,
    /// Its wait became `barrier: all`; no flag.
    Fallback,
}

/// One synchronisation: a barrier (`src == dst`) or a flag pair.
#[derive(Clone, Debug)]
pub(super) struct Edge {
    pub src: Pipe,
    pub dst: Pipe,
    /// The op the set (or nothing, for a barrier) follows, in `block`.
    pub set_after: OpId,
    /// The op the wait or barrier precedes, in `block`.
    pub wait_before: OpId,
    pub block: BlockRef,
    pub back: Option<Back>,
    /// The loop whose iteration count picks among `k` ids (`k == 1`: one fixed id).
    pub rot: Option<OpId>,
    pub k: u32,
    /// The first id (`base .. base + k`).
    pub base: u32,
    /// Whether `base` has been chosen (or the edge merged or fell back).
    pub allocated: bool,
    /// First ids that could not be shown to alternate with their other users (bit per id).
    pub banned: u64,
    pub state: EdgeState,
}

impl Edge {
    /// A live, unallocated edge with one id, between the ancestors of `ops` in `block`.
    fn new(
        src: Pipe,
        dst: Pipe,
        ops: (OpId, OpId),
        block: BlockRef,
        tree: &Tree,
        back: Option<Back>,
    ) -> Edge {
        Edge {
            src,
            dst,
            set_after: tree.anchor_in(ops.0, block),
            wait_before: tree.anchor_in(ops.1, block),
            block,
            back,
            rot: None,
            k: 1,
            base: 0,
            allocated: false,
            banned: 0,
            state: EdgeState::Live,
        }
    }
}

/// An instruction the pass inserts.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ins {
    /// `fixed`: a balancing set before a loop, for id `base + fixed`.
    Set {
        edge: u32,
        fixed: Option<u32>,
    },
    /// `fixed`: a balancing wait after a loop.
    Wait {
        edge: u32,
        fixed: Option<u32>,
    },
    Barrier(Pipe),
    BarrierAll,
}

struct Pass<'a> {
    tree: &'a Tree<'a>,
    parts: &'a [Part],
    parts_of: &'a [Vec<u32>],
    edges: Vec<Edge>,
    event_ids: u32,
    stats: SyncStats,
    /// Walks of the current edges: (root, copies) → walk. Cleared when an edge changes.
    cache: Vec<((Option<OpId>, u32), Walk)>,
    /// The whole-kernel walk forward pairs are checked against, resumed after each new pair.
    prefix: Prefix,
    /// The program in walk order.
    steps: Steps,
    /// Per part: the parts its forward pairs are checked against ([`nearest`]).
    near: Vec<Vec<u32>>,
    /// Per loop op: its candidate backward pairs ([`Pass::back_pairs`]), once found.
    back: Vec<Option<Vec<(u32, u32, u32)>>>,
    /// The current edges' inserts, kept up to date as pairs are added (rebuilt when the ids
    /// change edges).
    inserts: Option<Inserts>,
    /// New pairs become `barrier: all` at once.
    last_round: bool,
    /// [`SyncOptions::ids_per_slot`].
    ids_per_slot: bool,
    /// Backward pairs that serialise a multi-buffer.
    notes: Vec<Note>,
}

impl Pass<'_> {
    fn walker<'w>(&'w self, inserts: &'w Inserts, check_ids: bool) -> Walker<'w> {
        Walker {
            tree: self.tree,
            steps: &self.steps,
            parts: self.parts,
            parts_of: self.parts_of,
            edges: &self.edges,
            inserts,
            check_ids,
        }
    }

    /// The current inserts (built once after the edges changed other than by `add`).
    fn current_inserts(&mut self) -> Inserts {
        match self.inserts.take() {
            Some(i) => i,
            None => self.build_inserts(),
        }
    }

    fn walk(&mut self, root: Option<OpId>, copies: u32) -> &Walk {
        let key = (root, copies);
        if let Some(i) = self.cache.iter().position(|(k, _)| *k == key) {
            return &self.cache[i].1;
        }
        let inserts = self.current_inserts();
        let w = self.walker(&inserts, false).walk(root, copies);
        self.inserts = Some(inserts);
        self.cache.push((key, w));
        &self.cache.last().unwrap().1
    }

    /// The whole-kernel walk, through leaf op `op`.
    fn prefix_through(&mut self, op: OpId) -> &Walk {
        let inserts = self.current_inserts();
        let mut prefix = std::mem::take(&mut self.prefix);
        self.walker(&inserts, false)
            .advance(&mut prefix, self.steps.leaf(op));
        self.prefix = prefix;
        self.inserts = Some(inserts);
        self.prefix.walk()
    }

    fn add(&mut self, mut e: Edge) {
        if self.last_round {
            e.state = EdgeState::Fallback;
            self.stats.fallbacks += 1;
        }
        let i = self.edges.len() as u32;
        // the walk before the first step the edge inserts at stays as it was
        let mut from = (self.steps.at(e.set_after, true)).min(self.steps.at(e.wait_before, false));
        if let Some(b) = e.back {
            from = from.min(self.steps.at(b.hoist, false));
        }
        self.edges.push(e);
        if let Some(ins) = &mut self.inserts {
            Self::push_inserts(ins, i, &self.edges[i as usize]);
        }
        self.prefix.invalidate(from);
        self.cache.clear();
    }

    /// Edges changed other than by `add`: every walk and the inserts are stale.
    fn changed(&mut self) {
        self.cache.clear();
        self.prefix.clear();
        self.inserts = None;
    }

    /// Dependencies in program order; a loop's backward pairs once its body is done.
    fn visit(&mut self, ops: &[OpId]) {
        for &op in ops {
            let program = self.tree.program;
            for b in program.blocks(op) {
                self.visit(&b.ops);
            }
            if self.tree.is_loop(op) {
                self.backward(op);
            }
            for &n in &self.parts_of[op.index()] {
                self.forward(n);
            }
        }
    }

    fn forward(&mut self, n: u32) {
        let nop = self.parts[n as usize].op;
        for i in 0..self.near[n as usize].len() {
            let f = self.near[n as usize][i];
            let fpipe = self.parts[f as usize].pipe;
            if self.prefix_through(nop).ordered(f, 0, fpipe, n, 0) {
                continue;
            }
            let e = self.forward_edge(f, n);
            self.add(e);
        }
    }

    fn forward_edge(&self, f: u32, n: u32) -> Edge {
        let (fp, np) = (&self.parts[f as usize], &self.parts[n as usize]);
        let block = self
            .tree
            .common_block(fp.op, np.op)
            .expect("forward pairs share a block");
        let mut e = Edge::new(fp.pipe, np.pipe, (fp.op, np.op), block, self.tree, None);
        if e.src != e.dst {
            // the setter may run ahead of the waiter by as many iterations as the reverse pair
            // lets it: that many ids keep every set's previous wait behind it
            if let Some(x) = self.tree.loop_of_block(block) {
                if let Some(d) = distance(np, fp, x) {
                    self.rotate(&mut e, x, d);
                }
            }
        }
        e
    }

    /// Gives `e` `d` ids chosen by `lp`'s iteration count, when that count can be written.
    fn rotate(&self, e: &mut Edge, lp: OpId, d: u32) {
        if self.ids_per_slot
            && d > 1
            && d <= self.event_ids
            && self.tree.counts[lp.index()].is_some()
        {
            e.rot = Some(lp);
            e.k = d;
        }
    }

    fn backward(&mut self, lp: OpId) {
        // only walks of this loop's body are asked for from here on
        self.cache.clear();
        // the pairs do not depend on the synchronisation: found once, kept for every round
        let pairs = match self.back[lp.index()].take() {
            Some(p) => p,
            None => self.back_pairs(lp),
        };
        for &(q, p, d) in &pairs {
            let ppipe = self.parts[p as usize].pipe;
            if self.walk(Some(lp), d + 1).ordered(p, 0, ppipe, q, d) {
                continue;
            }
            let block = (Some(lp), 0);
            let (pp, qp) = (&self.parts[p as usize], &self.parts[q as usize]);
            if let Some(why) = access::serialised(pp, qp, lp, d) {
                self.notes.push((lp, pp.op, qp.op, d, why));
            }
            let back = Back {
                lp,
                hoist: self.tree.outermost_loop(lp),
            };
            let ops = (pp.op, qp.op);
            let mut e = Edge::new(pp.pipe, qp.pipe, ops, block, self.tree, Some(back));
            if e.set_after < e.wait_before {
                // the producer comes first in the body (slots that meet only `d`
                // iterations apart): a backward flag would be set again before its wait in
                // every iteration. Ordering the two in the same iteration orders them `d`
                // iterations apart too (the consumer's pipe starts in program order).
                let e = self.forward_edge(p, q);
                self.add(e);
                continue;
            }
            if e.src != e.dst {
                self.rotate(&mut e, lp, d);
            }
            self.add(e);
        }
        self.back[lp.index()] = Some(pairs);
    }

    /// The candidate backward pairs of loop `lp`, `(q, p, d)`: for each part `q` of the body in
    /// order, every part `p` of the body (latest first) that conflicts with `q` running `d`
    /// iterations after it, `d` the first such distance, unless a loop inside `lp` holds both.
    fn back_pairs(&self, lp: OpId) -> Vec<(u32, u32, u32)> {
        // parts are in op order: the body's are those of its first and last op with parts
        let body = &self.parts_of[lp.index() + 1..=self.tree.end[lp.index()].index()];
        let Some(&first) = body.iter().find_map(|p| p.first()) else {
            return Vec::new();
        };
        let last = body
            .iter()
            .rev()
            .find_map(|p| p.last())
            .copied()
            .unwrap_or(first);
        // trying every pair is quadratic in the body: a larger body indexes its parts by bytes,
        // so each part meets only those it shares bytes with (S parts are not indexed)
        let index = (last - first >= SMALL_BODY)
            .then(|| Index::new(&self.parts[first as usize..=last as usize], first));
        let inner: Vec<Option<OpId>> = (first..=last).map(|p| self.inner_loop(lp, p)).collect();
        // without an index: every part but S's, latest first
        let every: Vec<u32> = match index {
            Some(_) => Vec::new(),
            None => (first..=last)
                .rev()
                .filter(|&p| self.parts[p as usize].pipe != Pipe::S)
                .collect(),
        };
        let mut pairs = Vec::new();
        let mut near = Vec::new();
        for q in first..=last {
            if let Some(index) = &index {
                near.clear();
                index.all_in(&self.parts[q as usize], first, last, &mut near);
                near.sort_unstable_by(|a, b| b.cmp(a));
                near.dedup();
            }
            let near = if index.is_some() { &near } else { &every };
            let qp = &self.parts[q as usize];
            pairs.extend(
                near.iter()
                    .filter(|&&p| {
                        inner[(p - first) as usize].is_none_or(|x| !self.tree.contains(x, qp.op))
                    })
                    .filter_map(|&p| distance(&self.parts[p as usize], qp, lp).map(|d| (q, p, d))),
            );
        }
        pairs
    }

    /// The outermost loop strictly inside `lp` around part `p`. When it also holds part `q`,
    /// its own backward pass has ordered the two across its iterations, and its flags
    /// (balanced outside the outermost loop, ids picked by the whole-run count) keep doing so
    /// across `lp`'s iterations. (The loops around `p` nest: if any of them holds `q`, the
    /// outermost does.)
    fn inner_loop(&self, lp: OpId, p: u32) -> Option<OpId> {
        let mut outer = None;
        let mut at = self.tree.program.op(self.parts[p as usize].op).loop_parent;
        while let Some(x) = at.filter(|&x| x != lp) {
            outer = Some(x);
            at = self.tree.program.op(x).loop_parent;
        }
        outer
    }

    /// Drops the synchronisation other synchronisation implies ([`subsume::subsume`]).
    /// Returns how many were dropped.
    fn subsume(&mut self) -> u32 {
        let dropped = subsume::subsume(&mut self.edges);
        if dropped > 0 {
            self.changed();
        }
        dropped
    }

    /// The extent over which an edge's ids are in use, in doubled program positions.
    fn extent(&self, e: &Edge) -> (i64, i64) {
        let span = |op: OpId| {
            (
                2 * op.index() as i64 - 1,
                2 * self.tree.end[op.index()].index() as i64 + 2,
            )
        };
        if let Some(b) = e.back {
            return span(b.hoist);
        }
        (
            2 * self.tree.end[e.set_after.index()].index() as i64 + 1,
            2 * e.wait_before.index() as i64 - 1,
        )
    }

    /// Chooses ids for the new flag pairs; returns how many merged or fell back.
    fn allocate(&mut self) -> u32 {
        let mut order: Vec<usize> = (0..self.edges.len())
            .filter(|&i| {
                let e = &self.edges[i];
                !e.allocated && e.src != e.dst && e.state == EdgeState::Live
            })
            .collect();
        let mut changed = 0;
        order.sort_by_key(|&i| {
            let e = &self.edges[i];
            (e.src, e.dst, self.extent(e).0, i)
        });
        let mut ids = IdBook::new(self.event_ids);
        for i in 0..self.edges.len() {
            let e = &self.edges[i];
            if e.allocated && e.state == EdgeState::Live && e.src != e.dst {
                ids.book(e, i, self.extent(e));
            }
        }
        for i in order {
            self.edges[i].allocated = true;
            let e = &self.edges[i];
            let (lo, hi) = self.extent(e);
            let k = e.k;
            // when the last use of an id is over is not known statically: prefer ids this
            // pair never used, then the ones whose last use ended longest ago (the proof that
            // ids alternate then rarely fails)
            let free = (0..=self.event_ids.saturating_sub(k))
                .filter(|&b| e.banned & (1 << b) == 0)
                .filter(|&b| (b..b + k).all(|id| ids.free(e, id, lo, hi)))
                .min_by_key(|&b| ((b..b + k).map(|id| ids.last_end(e, id)).max(), b));
            if let Some(b) = free {
                self.edges[i].base = b;
                ids.book(&self.edges[i], i, (lo, hi));
                continue;
            }
            match self.merge_target(i, &ids) {
                Some(j) => {
                    let before = self.extent(&self.edges[j]);
                    let (s, w) = (self.edges[i].set_after, self.edges[i].wait_before);
                    let t = &mut self.edges[j];
                    t.set_after = t.set_after.max(s);
                    t.wait_before = t.wait_before.min(w);
                    let after = self.extent(&self.edges[j]);
                    ids.rebook(&self.edges[j], before, after);
                    self.edges[i].state = EdgeState::Merged;
                    self.stats.merged += 1;
                    changed += 1;
                }
                None => {
                    self.edges[i].state = EdgeState::Fallback;
                    self.stats.fallbacks += 1;
                    changed += 1;
                }
            }
        }
        // ids alone change no insert and no walk (only the proof reads them)
        if changed > 0 {
            self.changed();
        }
        changed
    }

    /// The latest live edge `i` can fold into: same pipes, same block and direction, enough
    /// ids on the same counter, and the merged set still before the merged wait.
    fn merge_target(&self, i: usize, ids: &IdBook) -> Option<usize> {
        let e = &self.edges[i];
        ids.same_place(e).iter().rev().copied().find(|&j| {
            let o = &self.edges[j];
            o.state == EdgeState::Live
                && (e.k == 1 || (o.rot == e.rot && o.k >= e.k))
                && (e.back.is_some()
                    || o.set_after.max(e.set_after) < o.wait_before.min(e.wait_before))
        })
    }

    /// Proves every flag id alternates; a flag that cannot be shown to alternate gives its
    /// ids up and is allocated again in the next round (other ids, or merge, or `barrier:
    /// all`). Returns how many gave their ids up.
    fn prove(&mut self) -> u32 {
        let mut changed = 0;
        let loops: Vec<OpId> = (0..self.tree.program.ops.len())
            .map(OpId::new)
            .filter(|&op| self.tree.is_loop(op))
            .collect();
        let copies = 1 + self.edges.iter().map(|e| e.k).max().unwrap_or(1).max(1);
        let inserts = self.current_inserts();
        let walker = self.walker(&inserts, true);
        let mut bad = walker.walk(None, 1).violations;
        for &lp in &loops {
            bad.extend(walker.walk(Some(lp), copies).violations);
        }
        bad.sort_unstable();
        bad.dedup();
        for e in bad {
            let e = &mut self.edges[e as usize];
            if e.state == EdgeState::Live {
                // another id may alternate where this one did not; out of ids, the next
                // allocation merges the pair or makes it `barrier: all`
                e.banned |= 1 << e.base;
                e.allocated = false;
                changed += 1;
            }
        }
        // giving ids up changes no insert and no walk
        self.inserts = Some(inserts);
        changed
    }

    fn build_inserts(&self) -> Inserts {
        Self::inserts_of(self.tree.program.ops.len(), &self.edges)
    }

    /// What `edges` insert into a program of `n` ops.
    fn inserts_of(n: usize, edges: &[Edge]) -> Inserts {
        let mut ins = Inserts {
            before: vec![Vec::new(); n],
            after: vec![Vec::new(); n],
            tail: vec![Ins::BarrierAll],
        };
        for (i, e) in edges.iter().enumerate() {
            Self::push_inserts(&mut ins, i as u32, e);
        }
        ins
    }

    /// What edge `edge` inserts, appended (edges in creation order give a stable order).
    fn push_inserts(ins: &mut Inserts, edge: u32, e: &Edge) {
        let (s, w) = (e.set_after.index(), e.wait_before.index());
        match e.state {
            EdgeState::Merged => {}
            EdgeState::Fallback => ins.before[w].push(Ins::BarrierAll),
            EdgeState::Live if e.src == e.dst => ins.before[w].push(Ins::Barrier(e.src)),
            EdgeState::Live => {
                ins.after[s].push(Ins::Set { edge, fixed: None });
                ins.before[w].push(Ins::Wait { edge, fixed: None });
                if let Some(b) = e.back {
                    let h = b.hoist.index();
                    for j in 0..e.k {
                        ins.before[h].push(Ins::Set {
                            edge,
                            fixed: Some(j),
                        });
                        ins.after[h].push(Ins::Wait {
                            edge,
                            fixed: Some(j),
                        });
                    }
                }
            }
        }
    }
}

/// Where: pipe pair, block, and the loop of a backward pair.
type Place = (Pipe, Pipe, BlockRef, Option<OpId>);

/// The ids booked so far, per ordered pipe pair and id: the extents using it (disjoint, by
/// start), and the live pairs per place in booking order (merge candidates).
struct IdBook {
    ids: u32,
    by_pair: std::collections::BTreeMap<(Pipe, Pipe), Vec<std::collections::BTreeMap<i64, i64>>>,
    by_place: std::collections::BTreeMap<Place, Vec<usize>>,
}

impl IdBook {
    fn new(ids: u32) -> IdBook {
        IdBook {
            ids,
            by_pair: Default::default(),
            by_place: Default::default(),
        }
    }

    fn place(e: &Edge) -> Place {
        (e.src, e.dst, e.block, e.back.map(|b| b.lp))
    }

    fn id(&self, e: &Edge, id: u32) -> Option<&std::collections::BTreeMap<i64, i64>> {
        self.by_pair.get(&(e.src, e.dst)).map(|v| &v[id as usize])
    }

    fn book(&mut self, e: &Edge, i: usize, (lo, hi): (i64, i64)) {
        let n = self.ids as usize;
        let v = self
            .by_pair
            .entry((e.src, e.dst))
            .or_insert_with(|| vec![Default::default(); n]);
        for id in e.base..e.base + e.k {
            v[id as usize].insert(lo, hi);
        }
        self.by_place.entry(Self::place(e)).or_default().push(i);
    }

    /// A merge shrank a booked extent.
    fn rebook(&mut self, e: &Edge, (lo, _): (i64, i64), (nlo, nhi): (i64, i64)) {
        let v = self.by_pair.get_mut(&(e.src, e.dst)).expect("booked");
        for id in e.base..e.base + e.k {
            v[id as usize].remove(&lo);
            v[id as usize].insert(nlo, nhi);
        }
    }

    /// Whether no booked extent of `id` meets `[lo, hi]` (they are disjoint: only the last
    /// one starting at or before `hi` can).
    fn free(&self, e: &Edge, id: u32, lo: i64, hi: i64) -> bool {
        self.id(e, id)
            .is_none_or(|m| m.range(..=hi).next_back().is_none_or(|(_, &end)| end < lo))
    }

    fn last_end(&self, e: &Edge, id: u32) -> i64 {
        self.id(e, id)
            .and_then(|m| m.last_key_value())
            .map_or(i64::MIN, |(_, &end)| end)
    }

    fn same_place(&self, e: &Edge) -> &[usize] {
        self.by_place.get(&Self::place(e)).map_or(&[], |v| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shipped `sync: auto` program at every level: dropping any one synchronisation the
    /// pass inserted (a barrier, a `barrier: all` fallback, or a flag pair with its balancing
    /// set and wait) makes the race checker report a hazard, so none is redundant. The final
    /// `barrier: all` (HIVM's end of a kernel) is not a dependency's and stays.
    #[test]
    fn every_inserted_sync_is_needed() {
        let config = crate::test_support::config();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../programs");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        let mut checked = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let kernel = sim::load_kernel(&text, &name, &config, &[], None).unwrap();
            // the parts of a mixed kernel wait for each other across cores and cannot run
            // alone; the planner's integration tests run them as one launch
            let [program] = &kernel.parts[..] else {
                continue;
            };
            if program.sync != SyncMode::Auto {
                continue;
            }
            for level in [2, 1, 0] {
                let opts = crate::PlanOptions {
                    max_level: level,
                    ..Default::default()
                };
                let planned = crate::plan_program(program, &config, &opts).unwrap();
                let addresses = planned.plan.addresses();
                let tree = Tree::new(program);
                let (parts, parts_of) = access::parts(&tree, &planned.plan);
                let pass = run_pass(&tree, &parts, &parts_of, &config, &SyncOptions::default());
                let all = Pass::inserts_of(program.ops.len(), &pass.edges);
                let (synced, _) = emit::emit(&tree, &pass.edges, &all);
                let run = sim::race::check(&synced, &config, &addresses).unwrap();
                assert!(run.hazards.is_empty(), "{name} level {level}");
                for i in 0..pass.edges.len() {
                    if pass.edges[i].state == EdgeState::Merged {
                        continue;
                    }
                    let mut edges = pass.edges.clone();
                    edges[i].state = EdgeState::Merged; // inserts nothing
                    let inserts = Pass::inserts_of(program.ops.len(), &edges);
                    let (without, _) = emit::emit(&tree, &edges, &inserts);
                    let run = sim::race::check(&without, &config, &addresses).unwrap();
                    let e = &pass.edges[i];
                    assert!(
                        !run.hazards.is_empty(),
                        "{name} level {level}: {:?} -> {:?} after {} before {} ({:?}) is not needed",
                        e.src,
                        e.dst,
                        program.op(e.set_after).path,
                        program.op(e.wait_before).path,
                        e.state
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 50, "{checked}");
    }
}
