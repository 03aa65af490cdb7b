//! Static happens-before: walks the program (or a loop body unrolled a few times) with the
//! synchronisation chosen so far and records, for every part, what is known complete when it
//! starts. The rules are the race checker's (sim::race), applied to program order:
//!
//! - every instruction gets a position, increasing along the walk;
//! - `know[q][p] = x`: every pipe-p instruction at a position `<= x` (on the path walked) has
//!   completed before pipe q's next instruction starts. Knowledge about a pipe is a prefix,
//!   because whatever publishes it (`set_flag`, `barrier`, `barrier: all`) waits for all
//!   earlier instructions of its pipe;
//! - S completes its own ops before moving on, and a pipe learns what S knew when S sent it
//!   an instruction;
//! - a `set_flag` on p snapshots what p knows plus p's own prefix; the `wait_flag` that
//!   consumes it joins the snapshot into its pipe;
//! - the two branches of an `if` are walked from the same state and met (pointwise minimum);
//!   an inner loop's body is walked once (its first iteration knows the least).
//!
//! When asked (`check_ids`), the walk also proves every flag id alternates set, wait, set:
//! each `set_flag` must know the `wait_flag` that consumed the previous set of the same id,
//! or the second set could land before the wait (`double set`). Failures are collected.

use std::collections::BTreeMap;

use sim::program::{Block, ForLoop, OpKind};
use sim::{OpId, Pipe};

use super::access::Part;
use super::tree::Tree;
use super::{Edge, EdgeState, Ins};

const NP: usize = Pipe::COUNT;
const S: usize = 0;

pub(super) type Clock = [u32; NP];

fn join(a: &mut Clock, b: &Clock) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

#[derive(Clone, Default)]
struct State {
    know: [Clock; NP],
    last: [u32; NP],
    /// Set flags by (edge, copy), with the setter's snapshot.
    flags: BTreeMap<(u32, u32), Clock>,
    /// The latest wait per flag id key: (position, edge).
    waited: BTreeMap<u32, (u32, u32)>,
}

impl State {
    fn meet(&mut self, other: State) {
        for (a, b) in self.know.iter_mut().zip(&other.know) {
            for (x, y) in a.iter_mut().zip(b) {
                *x = (*x).min(*y);
            }
        }
        for (a, b) in self.last.iter_mut().zip(&other.last) {
            *a = (*a).max(*b);
        }
        // a flag set on one path only is not set on the other: keep what both paths set
        let mut flags = BTreeMap::new();
        for (k, c) in other.flags {
            if let Some(mut x) = self.flags.remove(&k) {
                for (p, q) in x.iter_mut().zip(&c) {
                    *p = (*p).min(*q);
                }
                flags.insert(k, x);
            }
        }
        self.flags = flags;
        for (k, w) in other.waited {
            let e = self.waited.entry(k).or_insert(w);
            *e = (*e).max(w);
        }
    }
}

/// The attachments: instructions inserted before and after ops, and at the kernel's end.
pub(super) struct Inserts {
    pub before: Vec<Vec<Ins>>,
    pub after: Vec<Vec<Ins>>,
    pub tail: Vec<Ins>,
}

/// What a walk learned, for the parts `first ..` of the walked region.
#[derive(Default)]
pub(super) struct Walk {
    first: usize,
    nparts: usize,
    /// Position of each part per copy (0: not reached).
    pos: Vec<u32>,
    /// What its pipe knew when each part started, per copy.
    know: Vec<Clock>,
    /// Edges whose ids failed to alternate.
    pub violations: Vec<u32>,
}

impl Walk {
    fn at(&self, copy: u32, part: u32) -> usize {
        copy as usize * self.nparts + part as usize - self.first
    }

    pub fn pos(&self, copy: u32, part: u32) -> u32 {
        self.pos[self.at(copy, part)]
    }

    pub fn know(&self, copy: u32, part: u32) -> &Clock {
        &self.know[self.at(copy, part)]
    }

    /// Whether part `f` (in copy `cf`) is known complete when part `n` (copy `cn`) starts.
    pub fn ordered(&self, f: u32, cf: u32, f_pipe: Pipe, n: u32, cn: u32) -> bool {
        let p = self.pos(cf, f);
        p != 0 && self.know(cn, n)[f_pipe.index()] >= p
    }
}

/// A walk of the kernel (one copy, no id checks) that resumes: the state before a top-level op
/// is kept whenever [`CHECKPOINT`] positions were walked since the last one kept, so a change
/// inside top-level op i re-walks from the kept state at or before op i only, and a query stops
/// at the top-level op holding the asked part. A kernel of a few big loops keeps the state
/// before each of them; a flat kernel of 10,000 small ops one every few dozen ops (keeping it
/// before each cost a clone of the open flags per op: quadratic in time and memory).
#[derive(Default)]
pub(super) struct Prefix {
    walk: Walk,
    /// (top-level op, the state and position counter before it), by op.
    checkpoints: Vec<(usize, State, u32)>,
    /// The state and position counter before top-level op `done`: ops `..done` are walked.
    current: Option<(State, u32)>,
    done: usize,
}

/// Positions walked between two kept states of a [`Prefix`].
const CHECKPOINT: u32 = 64;

impl Prefix {
    pub fn walk(&self) -> &Walk {
        &self.walk
    }

    /// Forgets everything from top-level op `i` on (its inserts changed).
    pub fn invalidate(&mut self, i: usize) {
        if self.done <= i || self.checkpoints.is_empty() {
            return;
        }
        // the first checkpoint is op 0, so one at or before i exists
        let c = self.checkpoints.partition_point(|(op, ..)| *op <= i) - 1;
        self.checkpoints.truncate(c + 1);
        let (op, st, next) = &self.checkpoints[c];
        self.current = Some((st.clone(), *next));
        self.done = *op;
    }

    pub fn clear(&mut self) {
        self.checkpoints.clear();
        self.current = None;
        self.done = 0;
    }
}

pub(super) struct Walker<'a> {
    pub tree: &'a Tree<'a>,
    pub parts: &'a [Part],
    pub parts_of: &'a [Vec<u32>],
    pub edges: &'a [Edge],
    pub inserts: &'a Inserts,
    pub check_ids: bool,
}

struct Run {
    root: Option<OpId>,
    copy: u32,
    next: u32,
    out: Walk,
}

impl Walker<'_> {
    /// The parts of `root`'s body (all parts for the kernel).
    fn part_range(&self, root: Option<OpId>) -> (usize, usize) {
        let Some(lp) = root else {
            return (0, self.parts.len());
        };
        let ops = lp.index() + 1..=self.tree.end[lp.index()].index();
        let mut it = self.parts_of[ops].iter().flatten().map(|&p| p as usize);
        match it.next() {
            Some(a) => (a, it.next_back().unwrap_or(a) + 1),
            None => (0, 0),
        }
    }

    fn empty(&self, root: Option<OpId>, copies: u32) -> Walk {
        let (first, end) = self.part_range(root);
        let n = (end - first) * copies as usize;
        Walk {
            first,
            nparts: end - first,
            pos: vec![0; n],
            know: vec![[0; NP]; n],
            violations: Vec::new(),
        }
    }

    /// Walks the whole kernel once (`root: None`) or `copies` consecutive iterations of loop
    /// `root`'s body, starting from knowing nothing.
    pub fn walk(&self, root: Option<OpId>, copies: u32) -> Walk {
        let mut run = Run {
            root,
            copy: 0,
            next: 0,
            out: self.empty(root, copies),
        };
        let mut st = State::default();
        match root {
            None => {
                self.block(&self.tree.program.body, &mut st, &mut run);
                for ins in &self.inserts.tail {
                    self.ins(ins, &mut st, &mut run);
                }
            }
            Some(lp) => {
                let body = self.tree.program.blocks(lp)[0];
                for c in 0..copies {
                    run.copy = c;
                    self.block(body, &mut st, &mut run);
                }
            }
        }
        let mut out = run.out;
        out.violations.sort_unstable();
        out.violations.dedup();
        out
    }

    /// Makes `prefix` cover top-level ops `..=upto`.
    pub fn advance(&self, prefix: &mut Prefix, upto: usize) {
        if prefix.current.is_none() {
            prefix.walk = self.empty(None, 1);
            prefix.checkpoints.clear();
            prefix.current = Some((State::default(), 0));
            prefix.done = 0;
        }
        let body = &self.tree.program.body.ops;
        if prefix.done > upto {
            return;
        }
        let (mut st, next) = prefix.current.take().expect("set above");
        let mut run = Run {
            root: None,
            copy: 0,
            next,
            out: std::mem::take(&mut prefix.walk),
        };
        while prefix.done <= upto {
            let i = prefix.done;
            let due = prefix
                .checkpoints
                .last()
                .is_none_or(|(op, _, at)| *op < i && run.next >= at + CHECKPOINT);
            if due {
                prefix.checkpoints.push((i, st.clone(), run.next));
            }
            self.top(body[i], &mut st, &mut run);
            prefix.done += 1;
        }
        prefix.walk = run.out;
        prefix.current = Some((st, run.next));
    }

    /// One op of a block with what is inserted around it.
    fn top(&self, op: OpId, st: &mut State, run: &mut Run) {
        for ins in &self.inserts.before[op.index()] {
            self.ins(ins, st, run);
        }
        self.op(op, st, run);
        for ins in &self.inserts.after[op.index()] {
            self.ins(ins, st, run);
        }
    }

    fn block(&self, b: &Block, st: &mut State, run: &mut Run) {
        for &op in &b.ops {
            self.top(op, st, run);
        }
    }

    fn op(&self, op: OpId, st: &mut State, run: &mut Run) {
        let program = self.tree.program;
        match &program.op(op).kind {
            OpKind::For(ForLoop { body, .. }) | OpKind::While { body, .. } => {
                let entry = (!self.tree.runs_once(op)).then(|| st.clone());
                self.block(body, st, run);
                if let Some(e) = entry {
                    st.meet(e);
                }
            }
            OpKind::If { then, els, .. } => {
                // both branches start from the state before the `if`
                let mut other = st.clone();
                self.block(then, st, run);
                if let Some(e) = els {
                    self.block(e, &mut other, run);
                }
                st.meet(other);
            }
            _ => {
                for &p in &self.parts_of[op.index()] {
                    let q = self.parts[p as usize].pipe.index();
                    let s = st.know[S];
                    join(&mut st.know[q], &s);
                    run.next += 1;
                    let at = run.out.at(run.copy, p);
                    run.out.pos[at] = run.next;
                    run.out.know[at] = st.know[q];
                    st.last[q] = run.next;
                    if q == S {
                        st.know[S][S] = run.next;
                    }
                }
            }
        }
    }

    /// The flag ids one execution of a set or wait of `e` uses (`fixed`: a balancing op's id).
    fn ids(&self, e: &Edge, fixed: Option<u32>, run: &Run) -> Vec<u32> {
        let key = |id: u32| ((e.src.index() * NP + e.dst.index()) as u32) << 8 | id;
        if let Some(j) = fixed {
            return vec![key(e.base + j)];
        }
        match e.rot {
            Some(x) if e.k > 1 && run.root == Some(x) => vec![key(e.base + run.copy % e.k)],
            _ => (0..e.k).map(|j| key(e.base + j)).collect(),
        }
    }

    /// The loop whose consecutive iterations use an edge's flag one after another.
    fn iteration_loop(&self, e: &Edge) -> Option<OpId> {
        match e.back {
            Some(b) => Some(b.lp),
            None => self.tree.loop_of_block(e.block),
        }
    }

    /// How many copies before the current one the set that a wait of edge `ei` consumes was
    /// made, when that set is in this walk: 0 for a forward pair (same pass), `k` for a
    /// backward pair of the walked loop, 1 for a one-id backward pair of an inner loop whose
    /// flag crosses the walked loop's iterations (balanced outside it); `None` otherwise (the
    /// wait consumes a balancing set or one this walk does not model, and learns nothing).
    fn lag(&self, ei: u32, run: &Run) -> Option<u32> {
        let e = &self.edges[ei as usize];
        let Some(back) = e.back else {
            return Some(0);
        };
        let root = run.root?;
        if root == back.lp {
            return Some(e.k.max(1));
        }
        let crosses = self.tree.contains(root, back.lp)
            && (back.hoist == root || self.tree.contains(back.hoist, root));
        (crosses && e.k.max(1) == 1).then_some(1)
    }

    fn ins(&self, ins: &Ins, st: &mut State, run: &mut Run) {
        run.next += 1;
        let at = run.next;
        let s = st.know[S];
        match *ins {
            Ins::Set { edge, fixed } => {
                let e = &self.edges[edge as usize];
                debug_assert_eq!(e.state, EdgeState::Live);
                let p = e.src.index();
                join(&mut st.know[p], &s);
                let mut snap = st.know[p];
                snap[p] = st.last[p];
                if self.check_ids {
                    // an inner loop's flag alternates across this walk's iterations if it does
                    // across its own loop's: its walk proves that, with chains that only use
                    // that loop's body and flags
                    let inner = self.iteration_loop(e) != run.root;
                    for key in self.ids(e, fixed, run) {
                        if let Some(&(w, by)) = st.waited.get(&key) {
                            let same_inner = by == edge && inner && fixed.is_none();
                            if !same_inner && snap[e.dst.index()] < w {
                                run.out.violations.push(edge);
                            }
                        }
                    }
                }
                // only what a later wait of this walk can consume (the state stays small)
                if fixed.is_none() && self.lag(edge, run).is_some() {
                    st.flags.insert((edge, run.copy), snap);
                }
                st.know[p][p] = st.last[p];
                st.last[p] = at;
                if p == S {
                    st.know[S][S] = at;
                }
            }
            Ins::Wait { edge, fixed } => {
                let e = &self.edges[edge as usize];
                let q = e.dst.index();
                join(&mut st.know[q], &s);
                if fixed.is_none() {
                    let src = self.lag(edge, run).and_then(|l| run.copy.checked_sub(l));
                    if let Some(src) = src.map(|c| (edge, c)) {
                        // each set is consumed by one wait
                        if let Some(c) = st.flags.remove(&src) {
                            join(&mut st.know[q], &c);
                        }
                    }
                }
                if self.check_ids {
                    for key in self.ids(e, fixed, run) {
                        st.waited.insert(key, (at, edge));
                    }
                }
                st.last[q] = at;
                if q == S {
                    st.know[S][S] = at;
                }
            }
            Ins::Barrier(pipe) => {
                let p = pipe.index();
                join(&mut st.know[p], &s);
                st.know[p][p] = st.last[p];
                st.last[p] = at;
                if p == S {
                    st.know[S][S] = at;
                }
            }
            Ins::BarrierAll => {
                let all = st.know;
                for k in &all {
                    join(&mut st.know[S], k);
                }
                let last = st.last;
                join(&mut st.know[S], &last);
                st.last[S] = at;
                st.know[S][S] = at;
            }
        }
    }
}
