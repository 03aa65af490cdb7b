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
    flags: SortedMap<(u32, u32), Clock>,
    /// The latest wait per flag id key: (position, edge).
    waited: SortedMap<u32, (u32, u32)>,
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
        self.flags.0.retain_mut(|(k, x)| match other.flags.get(k) {
            Some(c) => {
                for (p, q) in x.iter_mut().zip(c) {
                    *p = (*p).min(*q);
                }
                true
            }
            None => false,
        });
        if !other.waited.0.is_empty() {
            let mine = std::mem::take(&mut self.waited.0);
            self.waited.0 = merge_max(mine, other.waited.0);
        }
    }
}

/// A map kept as a vector sorted by key: a walk's open flags and waited ids are few, and its
/// state is cloned at every loop entry and branch (a tree map allocates per node).
#[derive(Clone)]
struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap(Vec::new())
    }
}

impl<K: Ord + Copy, V> SortedMap<K, V> {
    fn find(&self, k: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|(x, _)| x.cmp(k))
    }

    fn get(&self, k: &K) -> Option<&V> {
        self.find(k).ok().map(|i| &self.0[i].1)
    }

    fn insert(&mut self, k: K, v: V) {
        match self.find(&k) {
            Ok(i) => self.0[i].1 = v,
            Err(i) => self.0.insert(i, (k, v)),
        }
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        self.find(k).ok().map(|i| self.0.remove(i).1)
    }
}

/// The union of two sorted maps, the larger value where both have a key.
fn merge_max<K: Ord + Copy, V: Ord + Copy>(a: Vec<(K, V)>, b: Vec<(K, V)>) -> Vec<(K, V)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => {
                    let (k, v) = a.next().expect("peeked");
                    let w = b.next().expect("peeked").1;
                    Some((k, v.max(w)))
                }
            },
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    out
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

/// One step of a walk. The program is flattened once into steps in program order, so a walk
/// is a loop over a range of them with an explicit stack of the states saved at loop entries
/// and `if`s, and can stop and resume anywhere.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// What is inserted before the op.
    Before(OpId),
    /// A leaf op's parts.
    Leaf(OpId),
    /// What is inserted after the op.
    After(OpId),
    /// A loop's body starts; `skip`: the body may not run, so the state before it is met
    /// with the state after it.
    Enter {
        skip: bool,
    },
    Exit {
        skip: bool,
    },
    /// An `if`: its branches start from the state before it.
    If,
    Else,
    EndIf {
        els: bool,
    },
}

/// The steps of the whole kernel, and where each op's start and end.
pub(super) struct Steps {
    list: Vec<Step>,
    /// Per op: its `Before` step; its `After` step.
    before: Vec<u32>,
    after: Vec<u32>,
}

impl Steps {
    pub fn new(tree: &Tree) -> Steps {
        let n = tree.program.ops.len();
        let mut s = Steps {
            list: Vec::with_capacity(3 * n),
            before: vec![0; n],
            after: vec![0; n],
        };
        s.block(tree, &tree.program.body);
        s
    }

    fn block(&mut self, tree: &Tree, b: &Block) {
        for &op in &b.ops {
            self.before[op.index()] = self.list.len() as u32;
            self.list.push(Step::Before(op));
            match &tree.program.op(op).kind {
                OpKind::For(ForLoop { body, .. }) | OpKind::While { body, .. } => {
                    let skip = !tree.runs_once(op);
                    self.list.push(Step::Enter { skip });
                    self.block(tree, body);
                    self.list.push(Step::Exit { skip });
                }
                OpKind::If { then, els, .. } => {
                    self.list.push(Step::If);
                    self.block(tree, then);
                    if let Some(e) = els {
                        self.list.push(Step::Else);
                        self.block(tree, e);
                    }
                    self.list.push(Step::EndIf { els: els.is_some() });
                }
                _ => self.list.push(Step::Leaf(op)),
            }
            self.after[op.index()] = self.list.len() as u32;
            self.list.push(Step::After(op));
        }
    }

    /// The first step a change to what is inserted before (`after: false`) or after `op`
    /// affects.
    pub fn at(&self, op: OpId, after: bool) -> usize {
        if after {
            self.after[op.index()] as usize
        } else {
            self.before[op.index()] as usize
        }
    }

    /// The step of a leaf op's parts.
    pub fn leaf(&self, op: OpId) -> usize {
        self.before[op.index()] as usize + 1
    }

    /// The steps of a loop's body.
    fn body(&self, lp: OpId) -> std::ops::Range<usize> {
        self.before[lp.index()] as usize + 2..self.after[lp.index()] as usize - 1
    }
}

/// A walk of the kernel (one copy, no id checks) that resumes: the state (with the states
/// saved by the loops and `if`s it is in) is kept whenever [`CHECKPOINT`] positions were
/// walked since the last one kept, so a change re-walks from the kept state at or before the
/// first step it affects, and a query walks only up to the asked part. (Keeping the state
/// before every op cost a clone of the open flags per op: quadratic in time and memory.)
#[derive(Default)]
pub(super) struct Prefix {
    walk: Walk,
    /// (step, the state, the saved states and the position counter before it), by step.
    checkpoints: Vec<(usize, State, Vec<State>, u32)>,
    /// The state, saved states and position counter before step `done`: steps `..done` are
    /// walked.
    current: Option<(State, Vec<State>, u32)>,
    done: usize,
}

/// Positions walked between two kept states of a [`Prefix`].
const CHECKPOINT: u32 = 64;

impl Prefix {
    pub fn walk(&self) -> &Walk {
        &self.walk
    }

    /// Forgets everything from step `i` on (its inserts changed).
    pub fn invalidate(&mut self, i: usize) {
        if self.done <= i || self.checkpoints.is_empty() {
            return;
        }
        // the first checkpoint is step 0, so one at or before i exists
        let c = self.checkpoints.partition_point(|(at, ..)| *at <= i) - 1;
        self.checkpoints.truncate(c + 1);
        let (at, st, saved, next) = &self.checkpoints[c];
        self.current = Some((st.clone(), saved.clone(), *next));
        self.done = *at;
    }

    pub fn clear(&mut self) {
        self.checkpoints.clear();
        self.current = None;
        self.done = 0;
    }
}

pub(super) struct Walker<'a> {
    pub tree: &'a Tree<'a>,
    pub steps: &'a Steps,
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
        let mut saved = Vec::new();
        match root {
            None => {
                for i in 0..self.steps.list.len() {
                    self.step(i, &mut st, &mut saved, &mut run);
                }
                for ins in &self.inserts.tail {
                    self.ins(ins, &mut st, &mut run);
                }
            }
            Some(lp) => {
                for c in 0..copies {
                    run.copy = c;
                    for i in self.steps.body(lp) {
                        self.step(i, &mut st, &mut saved, &mut run);
                    }
                }
            }
        }
        let mut out = run.out;
        out.violations.sort_unstable();
        out.violations.dedup();
        out
    }

    /// Makes `prefix` cover steps `..=upto`.
    pub fn advance(&self, prefix: &mut Prefix, upto: usize) {
        if prefix.current.is_none() {
            prefix.walk = self.empty(None, 1);
            prefix.checkpoints.clear();
            prefix.current = Some((State::default(), Vec::new(), 0));
            prefix.done = 0;
        }
        if prefix.done > upto {
            return;
        }
        let (mut st, mut saved, next) = prefix.current.take().expect("set above");
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
                .is_none_or(|(step, .., at)| *step < i && run.next >= at + CHECKPOINT);
            if due {
                prefix
                    .checkpoints
                    .push((i, st.clone(), saved.clone(), run.next));
            }
            self.step(i, &mut st, &mut saved, &mut run);
            prefix.done += 1;
        }
        prefix.walk = run.out;
        prefix.current = Some((st, saved, run.next));
    }

    /// Step `i`; `saved`: the states saved by the loops and `if`s the step is in.
    fn step(&self, i: usize, st: &mut State, saved: &mut Vec<State>, run: &mut Run) {
        match self.steps.list[i] {
            Step::Before(op) => {
                for ins in &self.inserts.before[op.index()] {
                    self.ins(ins, st, run);
                }
            }
            Step::After(op) => {
                for ins in &self.inserts.after[op.index()] {
                    self.ins(ins, st, run);
                }
            }
            // the loop's body is walked once: its first iteration knows the least
            Step::Enter { skip } => {
                if skip {
                    saved.push(st.clone());
                }
            }
            Step::Exit { skip } => {
                if skip {
                    st.meet(saved.pop().expect("saved at the loop's entry"));
                }
            }
            Step::If => saved.push(st.clone()),
            // the then branch's state waits while the else branch starts from the entry's
            Step::Else => std::mem::swap(st, saved.last_mut().expect("saved at the if")),
            Step::EndIf { els } => {
                let other = saved.pop().expect("saved at the if");
                if els {
                    // the then branch's state met with the else branch's
                    let e = std::mem::replace(st, other);
                    st.meet(e);
                } else {
                    st.meet(other);
                }
            }
            Step::Leaf(op) => {
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
    fn ids(&self, e: &Edge, fixed: Option<u32>, run: &Run) -> impl Iterator<Item = u32> {
        let pair = ((e.src.index() * NP + e.dst.index()) as u32) << 8;
        let (lo, n) = match (fixed, e.rot) {
            (Some(j), _) => (e.base + j, 1),
            (None, Some(x)) if e.k > 1 && run.root == Some(x) => (e.base + run.copy % e.k, 1),
            _ => (e.base, e.k),
        };
        (lo..lo + n).map(move |id| pair | id)
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
