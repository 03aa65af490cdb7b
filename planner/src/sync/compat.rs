//! InjectSync compatibility mode (docs/sync.md, "InjectSync compatibility (`npusim opt`)"):
//! the set_flag / wait_flag / pipe_barrier ops HIVM's `-hivm-inject-sync` (bishengir 1.2.0)
//! inserts, in the same order, with the same pipes and event ids, for `npusim opt`.
//!
//! npusim's own pass ([`super::synchronize_with`]) proves what it inserts against the race
//! checker and merges pairs by ranges of bytes; InjectSync works on its own "Sync-IR" with
//! whole-buffer conflicts, transitive `alreadySync` records, then moves, dedups and allocates
//! event ids by fixed rules. Reproducing its output means following those rules step by step:
//!
//! 1. **Sync-IR** (`Builder`): one compound per pipe instruction (two for `mmadL1`: the
//!    out-pipe M half defining the result, the in-pipe MTE1 half using the inputs), loop
//!    begin/end, if/else/end, and a place holder at the end of each branch.
//! 2. **Analysis** (`Analyzer`): each compound against every earlier one, then at each loop
//!    end the body against the next iteration's copy; skips S→S, M→M, the halves of one macro
//!    op, and pairs already ordered transitively (`alreadySync` per pipe, one record per
//!    multi-buffer slot).
//! 3. **MoveSyncState**: waits whose set is outside an `if`/loop go before it, sets whose wait
//!    is outside go after it.
//! 4. **RemoveRedundantSync**: a pair enclosed by another pair of the same pipes goes.
//! 5. **Event ids** (`Alloc`): per ordered pipe pair a pool of 8 (7 for V→S, S→V, MTE2→V),
//!    lifetimes as Sync-IR index ranges (a backward pair: the whole function, with a set at the
//!    start and a wait at the end); widening, reallocation per loop, multi-buffer fallback and
//!    `pipe_barrier[PIPE_ALL]` as InjectSync does them.
//!
//! What is left out, each named in docs/sync.md: unlikely-branch placement, parallel loops,
//! unit-flag mode, and the `sync_related_args` operands of `mmadL1`.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use sim::expr::{BinOp, Expr};
use sim::program::{BarrierTarget, Block, Loc, Op, OpKind, Operand, Program, Ref, Side, SyncMode};
use sim::{OpId, Pipe, Space};

use super::emit::{placeholder, rebuilt, renumber_declarations};
use super::{SyncStats, Synced};
use crate::Plan;

/// How the compatibility pass runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompatOptions {
    /// The function is a device entry (`hacc.entry`): a final `pipe_barrier[PIPE_ALL]`.
    pub device_entry: bool,
}

// HIVM's PIPE enum values (HIVMAttrs.td), the virtual MTE2 pipes included: records and pools
// are indexed by them.
type P = u8;
const PS: P = 0;
const PV: P = 1;
const PM: P = 2;
const PMTE1: P = 3;
const PMTE2: P = 4;
const PMTE3: P = 5;
const PALL: P = 6;
const PFIX: P = 10;
const L1A: P = 11;
const L1B: P = 12;
const NPIPE: usize = 13;
/// `MAX_MULTI_BUFFER_NUM`: records kept per multi-buffer slot.
const MAX_MULTI: usize = 16;
/// `kTotalEventIdNum`.
const TOTAL_IDS: usize = 8;
/// `kMaxWidenTryNum`.
const MAX_WIDEN_TRIES: u32 = 99;

fn hivm_pipe(p: Pipe) -> P {
    match p {
        Pipe::S => PS,
        Pipe::V => PV,
        Pipe::M => PM,
        Pipe::Mte1 => PMTE1,
        Pipe::Mte2 => PMTE2,
        Pipe::Mte3 => PMTE3,
        Pipe::Fix => PFIX,
    }
}

/// The real pipe of a virtual MTE2 pipe.
fn actual(p: P) -> P {
    if p == L1A || p == L1B {
        PMTE2
    } else {
        p
    }
}

fn sim_pipe(p: P) -> Pipe {
    match actual(p) {
        PS => Pipe::S,
        PV => Pipe::V,
        PM => Pipe::M,
        PMTE1 => Pipe::Mte1,
        PMTE2 => Pipe::Mte2,
        PMTE3 => Pipe::Mte3,
        _ => Pipe::Fix,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Root {
    Tensor(usize),
    Buffer(usize),
}

/// InjectSync's `BaseMemInfo`: one root buffer an operand touches.
#[derive(Clone, Debug)]
struct Mem {
    /// `None`: GM.
    space: Option<Space>,
    root: Root,
    /// Slot addresses, in bits.
    addrs: Vec<u64>,
    /// Bits of one slot.
    size: u64,
}

#[derive(Clone, Debug)]
struct Comp {
    op: OpId,
    pipe: P,
    def: Vec<usize>,
    uses: Vec<usize>,
    /// For `mmadL1`: 0 the out-pipe half, 1 the in-pipe half.
    macro_id: Option<u8>,
    /// For `mmadL1`, one entry per `uses` entry: the virtual MTE2 pipe a dependence through
    /// it takes (`ChangeFrontPipeToVirtualMTE2`): L1A when the operand is the very SSA value
    /// of A, L1B when it is B's, none for the bias.
    virt: Vec<Option<P>>,
    in_loop: bool,
}

#[derive(Clone, Debug)]
enum Kind {
    Compound(Comp),
    LoopBegin,
    LoopEnd,
    IfBegin,
    ElseBegin,
    IfEnd,
    /// The end of a branch: the block whose tail gets its waits.
    Holder {
        block: BlockKey,
    },
}

/// A block of the program: `(control op, which block)`, 0 a loop body or then, 1 else.
type BlockKey = (OpId, u8);

#[derive(Clone, Debug)]
struct El {
    kind: Kind,
    /// The control op of a loop or branch element.
    op: Option<OpId>,
    begin: usize,
    branch: usize,
    end: usize,
    before: VecDeque<usize>,
    after: VecDeque<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Set,
    Wait,
    Barrier,
}

/// InjectSync's `SyncOperation`.
#[derive(Clone, Debug)]
struct SOp {
    ty: Ty,
    src: P,
    dst: P,
    /// The pair (`syncOperations`) index.
    idx: usize,
    /// The Sync-IR element it sits at.
    ir: usize,
    for_end: Option<usize>,
    n: u32,
    /// The loop whose iteration picks a multi-buffer id.
    lca_loop: Option<OpId>,
    ids: Vec<u32>,
    useless: bool,
    reuse: u32,
    head_tail: bool,
}

impl SOp {
    fn new(ty: Ty, src: P, dst: P, idx: usize, ir: usize, for_end: Option<usize>) -> SOp {
        SOp {
            ty,
            src,
            dst,
            idx,
            ir,
            for_end,
            n: 1,
            lca_loop: None,
            ids: Vec::new(),
            useless: false,
            reuse: 0,
            head_tail: false,
        }
    }

    /// `GetMatchSync`: the other half, at `ir` (the event ids come along, the id count not).
    fn matched(&self, ir: usize) -> SOp {
        let ty = match self.ty {
            Ty::Set => Ty::Wait,
            Ty::Wait => Ty::Set,
            Ty::Barrier => Ty::Barrier,
        };
        let mut s = SOp::new(ty, self.src, self.dst, self.idx, ir, self.for_end);
        s.ids = self.ids.clone();
        s
    }
}

/// The Sync-IR and the sync ops on it.
struct Ir {
    els: Vec<El>,
    mems: Vec<Mem>,
    ops: Vec<SOp>,
    /// `syncOperations`: per pair, its op indices (set, wait) or (barrier).
    pairs: Vec<Vec<usize>>,
    /// Per macro-op instance id of an `mmadL1` in a loop: its M→MTE1 pair.
    mmad_back: HashMap<u8, usize>,
}

impl Ir {
    fn add_pair(&mut self, mut list: Vec<SOp>) -> Vec<usize> {
        let idx = self.pairs.len();
        let mut ids = Vec::new();
        for s in list.iter_mut() {
            s.idx = idx;
            ids.push(self.ops.len());
            self.ops.push(s.clone());
        }
        self.pairs.push(ids.clone());
        ids
    }

    fn comp(&self, i: usize) -> Option<&Comp> {
        match &self.els[i].kind {
            Kind::Compound(c) => Some(c),
            _ => None,
        }
    }
}

/// Builds the Sync-IR (IRTranslator).
struct Builder<'a> {
    program: &'a Program,
    plan: &'a Plan,
    ir: Ir,
    mem_of: HashMap<(Root, Option<Space>), usize>,
}

impl Builder<'_> {
    fn push(&mut self, kind: Kind, op: Option<OpId>) -> usize {
        let i = self.ir.els.len();
        self.ir.els.push(El {
            kind,
            op,
            begin: i,
            branch: i,
            end: i,
            before: VecDeque::new(),
            after: VecDeque::new(),
        });
        i
    }

    fn mems(&mut self, o: &Operand, out: &mut Vec<usize>) {
        let bases = sim::footprint::Bases::of(self.program);
        let roots: Vec<(Root, Option<Space>)> = match o.base {
            Ref::Tensor(t) => vec![(Root::Tensor(t.index()), None)],
            r => bases
                .roots(r)
                .into_iter()
                .map(|b| {
                    (
                        Root::Buffer(b.index()),
                        Some(self.program.buffers[b.index()].scope),
                    )
                })
                .collect(),
        };
        for key in roots {
            let id = match self.mem_of.get(&key) {
                Some(&id) => id,
                None => {
                    let mem = match key.0 {
                        Root::Tensor(_) => Mem {
                            space: None,
                            root: key.0,
                            addrs: vec![0],
                            size: 0,
                        },
                        Root::Buffer(b) => {
                            let buf = &self.program.buffers[b];
                            let addrs = self
                                .plan
                                .buffers
                                .get(b)
                                .map(|p| p.offsets.iter().map(|o| o * 8).collect())
                                .unwrap_or_default();
                            Mem {
                                space: key.1,
                                root: key.0,
                                addrs,
                                size: buf.bytes * 8,
                            }
                        }
                    };
                    self.ir.mems.push(mem);
                    self.mem_of.insert(key, self.ir.mems.len() - 1);
                    self.ir.mems.len() - 1
                }
            };
            out.push(id);
        }
    }

    fn block(&mut self, b: &Block, in_loop: bool) {
        for &id in &b.ops {
            let op = self.program.op(id);
            match &op.kind {
                OpKind::For(l) => {
                    let begin = self.push(Kind::LoopBegin, Some(id));
                    self.block(&l.body, true);
                    let end = self.push(Kind::LoopEnd, Some(id));
                    for i in [begin, end] {
                        self.ir.els[i].begin = begin;
                        self.ir.els[i].end = end;
                    }
                }
                OpKind::While { body, .. } => {
                    let begin = self.push(Kind::LoopBegin, Some(id));
                    self.block(body, true);
                    let end = self.push(Kind::LoopEnd, Some(id));
                    for i in [begin, end] {
                        self.ir.els[i].begin = begin;
                        self.ir.els[i].end = end;
                    }
                }
                OpKind::If { then, els, .. } => {
                    let begin = self.push(Kind::IfBegin, Some(id));
                    self.block(then, in_loop);
                    self.push(Kind::Holder { block: (id, 0) }, Some(id));
                    self.ir.els[begin].begin = begin;
                    let mut else_at = None;
                    let branch = self.ir.els.len();
                    if let Some(e) = els {
                        let eb = self.push(Kind::ElseBegin, Some(id));
                        else_at = Some(eb);
                        self.block(e, in_loop);
                        self.push(Kind::Holder { block: (id, 1) }, Some(id));
                    }
                    let end = self.push(Kind::IfEnd, Some(id));
                    for i in [Some(begin), else_at, Some(end)].into_iter().flatten() {
                        self.ir.els[i].begin = begin;
                        self.ir.els[i].branch = branch;
                        self.ir.els[i].end = end;
                    }
                    // a holder's parent scope is its branch's begin
                    let _ = else_at;
                }
                OpKind::MmadL1(m) => {
                    let mut def = Vec::new();
                    self.mems(&m.c, &mut def);
                    let mut uses = Vec::new();
                    self.mems(&m.a, &mut uses);
                    let n_a = uses.len();
                    self.mems(&m.b, &mut uses);
                    let n_b = uses.len() - n_a;
                    // InjectSync compares a dependence's `baseBuffer` (the SSA value the op
                    // reads, a subview included) with `getA()` then `getB()`: a B operand that is
                    // the same value as A counts as A. Subviews are fresh values each (the
                    // writer prints one per operand), so only the same whole buffer, unsliced,
                    // is one value.
                    let whole = |o: &Operand| o.indices.is_empty() && o.slot.is_none();
                    let b_is_a = m.a.base == m.b.base && whole(&m.a) && whole(&m.b);
                    let mut virt = vec![Some(L1A); n_a];
                    virt.extend(std::iter::repeat_n(
                        Some(if b_is_a { L1A } else { L1B }),
                        n_b,
                    ));
                    if let Some(bias) = &m.bias {
                        self.mems(bias, &mut uses);
                    }
                    virt.resize(uses.len(), None);
                    for (k, pipe) in [(0u8, PM), (1u8, PMTE1)] {
                        let c = Comp {
                            op: id,
                            pipe,
                            def: if k == 0 { def.clone() } else { Vec::new() },
                            uses: if k == 1 { uses.clone() } else { Vec::new() },
                            macro_id: Some(k),
                            virt: if k == 1 { virt.clone() } else { Vec::new() },
                            in_loop,
                        };
                        self.push(Kind::Compound(c), Some(id));
                    }
                }
                OpKind::Load { .. }
                | OpKind::Store { .. }
                | OpKind::Copy { .. }
                | OpKind::Fixpipe { .. }
                | OpKind::Mmad(_)
                | OpKind::Vector(_)
                | OpKind::Sload { .. }
                | OpKind::Sstore { .. } => {
                    let Some(pipe) = op.pipe else { continue };
                    let mut def = Vec::new();
                    for o in op.kind.writes() {
                        self.mems(o, &mut def);
                    }
                    let mut uses = Vec::new();
                    for o in op.kind.reads() {
                        self.mems(o, &mut uses);
                    }
                    let c = Comp {
                        op: id,
                        pipe: hivm_pipe(pipe),
                        def,
                        uses,
                        macro_id: None,
                        virt: Vec::new(),
                        in_loop,
                    };
                    self.push(Kind::Compound(c), Some(id));
                }
                // scalar arithmetic, test-dialect uses and sync ops (dropped on loading) are no
                // Sync-IR compounds
                _ => {}
            }
        }
    }
}

/// One `SyncRecord`: pipes already synchronised, and the waits met.
#[derive(Clone, Default)]
struct Record {
    already: [bool; NPIPE],
    finder: HashSet<usize>,
}

type Records = Vec<Record>;

fn new_records() -> Records {
    vec![Record::default(); MAX_MULTI]
}

/// The dependency analysis (SyncAnalyzer).
struct Analyzer<'a> {
    ir: &'a mut Ir,
    program: &'a Program,
}

/// Whether two memory infos conflict (`MemAlias`).
fn alias(a: &Mem, b: &Mem) -> bool {
    if a.space != b.space {
        return false;
    }
    if a.space.is_none() {
        // GM: the same root argument
        return a.root == b.root;
    }
    if a.root == b.root {
        return true;
    }
    (0..a.addrs.len()).any(|i| (0..b.addrs.len()).any(|j| overlap(a, b, i, j)))
}

fn overlap(a: &Mem, b: &Mem, i: usize, j: usize) -> bool {
    !(a.addrs[i] + a.size < 1 + b.addrs[j] || b.addrs[j] + b.size < 1 + a.addrs[i])
}

impl Analyzer<'_> {
    fn plan(&mut self, device_entry: bool) {
        for i in 0..self.ir.els.len() {
            match self.ir.els[i].kind {
                Kind::Compound(_) => {
                    let mut rec = new_records();
                    self.seq(i, None, 0, i, &mut rec, None);
                }
                Kind::LoopEnd => self.loop_sync(i),
                _ => {}
            }
        }
        self.mmad_back_sync();
        if device_entry && !self.ir.els.is_empty() {
            let last = self.ir.els.len() - 1;
            let ids = self
                .ir
                .add_pair(vec![SOp::new(Ty::Barrier, PALL, PALL, 0, last, None)]);
            self.ir.els[last].after.push_back(ids[0]);
        }
    }

    /// `insertMmadL1BackPipeMPipeMTE1Sync`: per macro-op instance id of an `mmadL1` in a loop,
    /// a set M→MTE1 at the start and its wait at the end, for the template library.
    fn mmad_back_sync(&mut self) {
        let mut made: BTreeSet<u8> = BTreeSet::new();
        let last = self.ir.els.len().saturating_sub(1);
        for i in 0..self.ir.els.len() {
            let Some(c) = self.ir.comp(i) else { continue };
            let (Some(k), true) = (c.macro_id, c.in_loop) else {
                continue;
            };
            if !made.insert(k) {
                continue;
            }
            let set = SOp::new(Ty::Set, PM, PMTE1, 0, 0, None);
            let wait = set.matched(last);
            let ids = self.ir.add_pair(vec![set, wait]);
            self.ir.els[0].before.push_back(ids[0]);
            self.ir.els[last].after.push_back(ids[1]);
            let pair = self.ir.ops[ids[0]].idx;
            self.ir.mmad_back.insert(k, pair);
        }
    }

    /// `DealWithLoopSync`: the body against the next iteration's copy.
    fn loop_sync(&mut self, end: usize) {
        let begin = self.ir.els[end].begin;
        let mut back: Vec<usize> = Vec::new();
        for i in begin..end {
            back.push(i);
            if self.ir.comp(i).is_some() {
                let mut rec = new_records();
                let len = back.len();
                self.seq(i, Some(&back), 0, len - 1, &mut rec, Some(end));
                self.seq(i, None, i, end, &mut rec, Some(end));
            }
        }
    }

    /// `InsertSeqSync`: `now` against `elems[begin..end]`, nearest first; `elems` `None`: the
    /// Sync-IR itself, else the indices of a copy of a loop body.
    fn seq(
        &mut self,
        now: usize,
        elems: Option<&[usize]>,
        begin: usize,
        end: usize,
        rec: &mut Records,
        for_end: Option<usize>,
    ) {
        let now_pipe = self.ir.comp(now).expect("a compound").pipe;
        let el = |k: usize| elems.map_or(k, |v| v[k]);
        let at = el(end);
        let list: Vec<usize> = self.ir.els[at].before.iter().copied().collect();
        self.update_already(&list, rec, now_pipe);
        let mut i = end as i64 - 1;
        while i >= begin as i64 {
            let front = el(i as usize);
            match self.ir.els[front].kind {
                Kind::Compound(_) => {
                    let after: Vec<usize> = self.ir.els[front].after.iter().copied().collect();
                    self.update_already(&after, rec, now_pipe);
                    self.insert_sync(now, front, rec, for_end);
                    let before: Vec<usize> = self.ir.els[front].before.iter().copied().collect();
                    self.update_already(&before, rec, now_pipe);
                }
                Kind::LoopEnd => {
                    let e = &self.ir.els[front];
                    let span = e.end - e.begin;
                    let new_begin = (begin as i64).max(i - span as i64) as usize;
                    let mut copy = rec.clone();
                    self.seq(now, elems, new_begin, i as usize, &mut copy, for_end);
                    i -= span as i64;
                }
                Kind::IfEnd => {
                    let e = &self.ir.els[front];
                    let (b, br, en) = (e.begin, e.branch, e.end);
                    let branch_if = i as usize - (en - b);
                    let branch_else = i as usize - (en - br);
                    let mut if_rec = rec.clone();
                    self.seq(now, elems, branch_if, branch_else, &mut if_rec, for_end);
                    if br != en {
                        let mut else_rec = rec.clone();
                        self.seq(now, elems, branch_else, i as usize, &mut else_rec, for_end);
                        for k in 0..rec.len() {
                            for p in 0..NPIPE {
                                if if_rec[k].already[p] && else_rec[k].already[p] {
                                    rec[k].already[p] = true;
                                }
                            }
                        }
                    } else {
                        for k in 0..rec.len() {
                            rec[k].finder = if_rec[k].finder.clone();
                        }
                    }
                    i -= (en - b) as i64;
                }
                Kind::ElseBegin if i as usize != begin => {
                    let e = &self.ir.els[front];
                    i -= (e.branch - e.begin) as i64;
                }
                _ => {}
            }
            i -= 1;
        }
    }

    fn update_already(&self, list: &[usize], rec: &mut Records, now_pipe: P) {
        for &s in list {
            let sync = &self.ir.ops[s];
            for (k, r) in rec.iter_mut().enumerate() {
                if k == 0 && sync.n > 1 && sync.for_end.is_some() {
                    continue;
                }
                update_record(sync, r, now_pipe);
            }
        }
    }

    fn no_need(&self, now: &Comp, front: &Comp, backward: bool) -> bool {
        if now.pipe == PS && front.pipe == PS {
            return true;
        }
        if now.op == front.op && !backward {
            return true;
        }
        now.pipe == PM && front.pipe == PM
    }

    fn insert_sync(&mut self, now: usize, front: usize, rec: &mut Records, for_end: Option<usize>) {
        let (n, f) = (
            self.ir.comp(now).unwrap().clone(),
            self.ir.comp(front).unwrap().clone(),
        );
        if self.no_need(&n, &f, for_end.is_some()) {
            return;
        }
        if is_already(&n, &f, &rec[0]) {
            return;
        }
        let mut deps = Vec::new();
        // per dependence, the virtual pipe of its now side and of its front side
        let mut vdeps: Vec<(Option<P>, Option<P>)> = Vec::new();
        let none: &[Option<P>] = &[];
        // (memory infos, their virtual pipes) of the now side, then of the front side
        type Infos<'a> = (&'a [usize], &'a [Option<P>]);
        let groups: [(Infos, Infos); 3] = [
            ((&n.def, none), (&f.def, none)),
            ((&n.uses, &n.virt), (&f.def, none)),
            ((&n.def, none), (&f.uses, &f.virt)),
        ];
        for ((a, va), (b, vb)) in groups {
            for (i, &x) in a.iter().enumerate() {
                for (j, &y) in b.iter().enumerate() {
                    if alias(&self.ir.mems[x], &self.ir.mems[y]) {
                        deps.push((x, y));
                        vdeps.push((va.get(i).copied().flatten(), vb.get(j).copied().flatten()));
                    }
                }
            }
        }
        if deps.is_empty() {
            return;
        }
        if for_end.is_some() {
            let k = self.event_id_num(&deps);
            for r in rec.iter().take(k as usize).skip(1) {
                if is_already(&n, &f, r) {
                    return;
                }
            }
        }
        let (mut now_pipe, mut front_pipe) = (n.pipe, f.pipe);
        // the virtual MTE2 pipes: loads of an mmadL1's A and B get their own flags; the last
        // dependence through A or B decides, as in InjectSync's loop
        if now_pipe == PMTE2 && front_pipe == PMTE1 && f.macro_id.is_some() {
            for &(_, v) in &vdeps {
                now_pipe = v.unwrap_or(now_pipe);
            }
        }
        if now_pipe == PMTE1 && front_pipe == PMTE2 && n.macro_id.is_some() {
            for &(v, _) in &vdeps {
                front_pipe = v.unwrap_or(front_pipe);
            }
        }
        let new_first;
        if now_pipe == front_pipe {
            let ids = self.ir.add_pair(vec![SOp::new(
                Ty::Barrier,
                front_pipe,
                now_pipe,
                0,
                now,
                for_end,
            )]);
            self.ir.els[now].before.push_back(ids[0]);
            new_first = ids[0];
        } else {
            let mut set = SOp::new(Ty::Set, front_pipe, now_pipe, 0, front, for_end);
            let mut wait = set.matched(now);
            if for_end.is_some() {
                let k = self.event_id_num(&deps);
                let lp = self.common_loop(&deps, k);
                if k > 1 && lp.is_some() {
                    set.n = k;
                    wait.n = k;
                    set.lca_loop = lp;
                    wait.lca_loop = lp;
                }
            }
            let ids = self.ir.add_pair(vec![set, wait]);
            self.ir.els[front].after.push_back(ids[0]);
            self.ir.els[now].before.push_back(ids[1]);
            new_first = ids[0];
        }
        // UpdateSyncRecordInfo
        let s = &self.ir.ops[new_first];
        let (n_ids, src) = (s.n, s.src);
        for (k, r) in rec.iter_mut().enumerate() {
            if k == 0 && n_ids > 1 {
                continue;
            }
            r.already[src as usize] = true;
        }
    }

    /// `GetEventIdNum`: N when every conflicting pair is two N-slot buffers whose slot i meets
    /// only slot i.
    fn event_id_num(&self, deps: &[(usize, usize)]) -> u32 {
        let mut nums = Vec::new();
        for &(x, y) in deps {
            let (a, b) = (&self.ir.mems[x], &self.ir.mems[y]);
            let (na, nb) = (a.addrs.len(), b.addrs.len());
            if (na == 1 && nb == 1) || na != nb {
                return 1;
            }
            for i in 0..na {
                for j in 0..nb {
                    let o = overlap(a, b, i, j);
                    if (i == j && !o) || (i != j && o) {
                        return 1;
                    }
                }
            }
            nums.push(na);
        }
        match nums.first() {
            Some(&n) if nums.iter().all(|&m| m == n) && n > 1 => n as u32,
            _ => 1,
        }
    }

    /// `GetCommonParentLoop`: the `for` loop every touched buffer is allocated in.
    fn common_loop(&self, deps: &[(usize, usize)], k: u32) -> Option<OpId> {
        if k == 1 {
            return None;
        }
        let mut lp: Option<Option<OpId>> = None;
        for &(x, y) in deps {
            for m in [x, y] {
                let Root::Buffer(b) = self.ir.mems[m].root else {
                    return None;
                };
                let buf = &self.program.buffers[b];
                // every loop around the allocation is a `for`
                let mut at = buf.loop_parent;
                while let Some(l) = at {
                    let op = self.program.op(l);
                    if !matches!(op.kind, OpKind::For(_)) {
                        return None;
                    }
                    at = op.loop_parent;
                }
                let here = buf.loop_parent;
                here?;
                match lp {
                    None => lp = Some(here),
                    Some(l) if l != here => return None,
                    _ => {}
                }
            }
        }
        lp.flatten()
    }
}

fn update_record(sync: &SOp, r: &mut Record, now_pipe: P) {
    let (set_pipe, wait_pipe) = (sync.src, sync.dst);
    if now_pipe == wait_pipe && sync.ty == Ty::Barrier {
        r.already[now_pipe as usize] = true;
    } else if r.already[wait_pipe as usize] || now_pipe == wait_pipe {
        if r.finder.contains(&sync.idx) && sync.ty == Ty::Set {
            r.already[set_pipe as usize] = true;
        }
        if sync.ty == Ty::Wait {
            r.finder.insert(sync.idx);
        }
    }
}

fn is_already(now: &Comp, front: &Comp, r: &Record) -> bool {
    if r.already[front.pipe as usize] {
        return true;
    }
    front.pipe == PMTE2
        && now.macro_id.is_none()
        && (r.already[L1A as usize] || r.already[L1B as usize])
}

/// MoveSyncState: out of branches, then out of loops.
fn move_syncs(ir: &mut Ir) {
    for e in 0..ir.els.len() {
        if !matches!(ir.els[e].kind, Kind::IfBegin) {
            continue;
        }
        let (b, br, en) = (ir.els[e].begin, ir.els[e].branch, ir.els[e].end);
        for i in b + 1..br {
            move_out(ir, i, (b, br), (b, en), true);
        }
        if br == en {
            continue;
        }
        for i in br + 1..en {
            move_out(ir, i, (br, en), (b, en), true);
        }
    }
    for e in 0..ir.els.len() {
        if !matches!(ir.els[e].kind, Kind::LoopEnd) {
            continue;
        }
        let (b, en) = (ir.els[e].begin, ir.els[e].end);
        for i in b + 1..en {
            move_out(ir, i, (b, en), (b, en), false);
        }
    }
}

/// `PlanMoveOut*Sync`: a wait whose set is outside `pair` goes before `bound.0`, a set whose
/// wait is outside goes after `bound.1` (a branch counts its own bounds as outside, a loop
/// not). The sets that stay come back in reverse order, as InjectSync leaves them.
fn move_out(ir: &mut Ir, e: usize, pair: (usize, usize), bound: (usize, usize), branch: bool) {
    let outside = |x: usize| {
        if branch {
            x >= pair.1 || x <= pair.0
        } else {
            x > pair.1 || x < pair.0
        }
    };
    let before: Vec<usize> = ir.els[e].before.drain(..).collect();
    let mut keep = VecDeque::new();
    for s in before {
        if ir.ops[s].ty != Ty::Wait {
            keep.push_back(s);
            continue;
        }
        let set = ir.pairs[ir.ops[s].idx][0];
        if outside(ir.ops[set].ir) {
            ir.els[bound.0].before.push_back(s);
            ir.ops[s].ir = bound.0;
        } else {
            keep.push_back(s);
        }
    }
    ir.els[e].before = keep;
    let after: Vec<usize> = ir.els[e].after.drain(..).rev().collect();
    let mut keep = VecDeque::new();
    let mut front = Vec::new();
    for s in after {
        if ir.ops[s].ty != Ty::Set {
            keep.push_back(s);
            continue;
        }
        let wait = ir.pairs[ir.ops[s].idx][1];
        if outside(ir.ops[wait].ir) {
            front.push(s);
            ir.ops[s].ir = bound.1;
        } else {
            keep.push_back(s);
        }
    }
    ir.els[e].after = keep;
    for s in front {
        ir.els[bound.1].after.push_front(s);
    }
}

/// RemoveRedundantSync: a pair with another pair of the same pipes set after its set and
/// waited before its wait goes.
fn remove_redundant(ir: &mut Ir) {
    let mut pairs: Vec<(usize, usize)> = ir
        .pairs
        .iter()
        .filter(|p| p.len() == 2)
        .map(|p| (p[0], p[1]))
        .collect();
    let ops = &ir.ops;
    pairs.sort_by(|&(a, _), &(b, _)| {
        let (x, y) = (&ops[a], &ops[b]);
        match (x.for_end, y.for_end) {
            (Some(p), Some(q)) if p != q => q.cmp(&p),
            (Some(_), Some(_)) | (None, None) => y.idx.cmp(&x.idx),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
        }
    });
    for (set, wait) in pairs {
        if check_all(ir, set, wait) {
            let (si, wi) = (ir.ops[set].ir, ir.ops[wait].ir);
            if let Some(k) = ir.els[si].after.iter().position(|&s| s == set) {
                ir.els[si].after.remove(k);
            }
            if let Some(k) = ir.els[wi].before.iter().position(|&s| s == wait) {
                ir.els[wi].before.remove(k);
            }
        }
    }
}

fn check_all(ir: &Ir, set: usize, wait: usize) -> bool {
    let mut finder = HashSet::new();
    let (begin, end) = (ir.ops[set].ir, ir.ops[wait].ir);
    if begin < end {
        check_repeat(ir, begin, end, &mut finder, set)
    } else {
        let Some(fe) = ir.ops[set].for_end else {
            return false;
        };
        let (lb, le) = (ir.els[fe].begin, ir.els[fe].end);
        check_repeat(ir, begin, le, &mut finder, set) || check_repeat(ir, lb, end, &mut finder, set)
    }
}

fn check_repeat(
    ir: &Ir,
    begin: usize,
    end: usize,
    finder: &mut HashSet<usize>,
    set: usize,
) -> bool {
    if begin > end {
        return false;
    }
    let mut res = false;
    for &r in &ir.els[begin].after {
        res = matched(ir, finder, r, set) || res;
    }
    let mut i = begin + 1;
    while i < end {
        for &r in &ir.els[i].before {
            res = matched(ir, finder, r, set) || res;
        }
        match ir.els[i].kind {
            Kind::IfBegin | Kind::ElseBegin | Kind::IfEnd => {
                let e = &ir.els[i];
                if matches!(e.kind, Kind::IfBegin) {
                    let has_else = e.branch < e.end;
                    let in_then = (!has_else && end < e.end) || (has_else && end < e.branch);
                    if !in_then {
                        let in_else = has_else && end >= e.branch && end < e.end;
                        if in_else {
                            i = e.branch;
                        } else {
                            if has_else {
                                let mut f1 = finder.clone();
                                let mut f2 = finder.clone();
                                if check_repeat(ir, e.begin, e.branch, &mut f1, set)
                                    && check_repeat(ir, e.branch, e.end, &mut f2, set)
                                {
                                    return true;
                                }
                            }
                            i = e.end;
                        }
                    }
                } else {
                    i = e.end;
                }
            }
            Kind::LoopBegin | Kind::LoopEnd => {
                i = ir.els[i].end;
            }
            _ => {}
        }
        for &r in &ir.els[i].after {
            res = matched(ir, finder, r, set) || res;
        }
        i += 1;
    }
    for &r in &ir.els[end].before {
        res = matched(ir, finder, r, set) || res;
    }
    res
}

/// `CanMatchedSync`: a wait of the same pipes whose set was met.
fn matched(ir: &Ir, finder: &mut HashSet<usize>, r: usize, set: usize) -> bool {
    let (rs, s) = (&ir.ops[r], &ir.ops[set]);
    let unrelated = !matches!(rs.ty, Ty::Set | Ty::Wait)
        || rs.idx == s.idx
        || rs.dst != s.dst
        || rs.src != s.src
        || rs.n > s.n;
    if unrelated {
        return false;
    }
    if finder.contains(&rs.idx) && rs.ty == Ty::Wait {
        return true;
    }
    if rs.ty == Ty::Set {
        finder.insert(rs.idx);
    }
    false
}

/// SyncEventIdAllocation.
struct Alloc<'a> {
    ir: &'a mut Ir,
    /// Per scope pair, per id: booked lifetimes, `[end, begin, end, begin, ...]` descending.
    pools: HashMap<u32, Vec<Vec<usize>>>,
    realloc: BTreeSet<u32>,
    inserted_back: HashSet<usize>,
}

fn scope(s: &SOp) -> u32 {
    ((actual(s.dst) as u32) << 8) | actual(s.src) as u32
}

fn available_ids(s: &SOp) -> usize {
    // ids held back for the template library
    match (s.src, s.dst) {
        (PV, PS) | (PS, PV) | (PMTE2, PV) => TOTAL_IDS - 1,
        _ => TOTAL_IDS,
    }
}

impl Alloc<'_> {
    fn run(&mut self) {
        let mut round = 0;
        loop {
            for e in 0..self.ir.els.len() {
                let n = self.ir.els[e].before.len();
                for k in 0..n {
                    let s = self.ir.els[e].before[k];
                    let op = &self.ir.ops[s];
                    if op.useless || !op.ids.is_empty() || op.ty == Ty::Barrier {
                        continue;
                    }
                    self.set_event_id(s);
                }
            }
            self.widen_all();
            if self.fallback_multi_buffer() {
                self.reset();
                round += 1;
                continue;
            }
            self.ignore_head_tail();
            if !self.realloc.is_empty() {
                self.reallocate();
                self.widen_all();
            }
            let ok = self.no_id_to_pipe_all();
            if !ok && round < MAX_WIDEN_TRIES && self.widen_first() {
                self.reset();
                round += 1;
                continue;
            }
            break;
        }
    }

    fn reset(&mut self) {
        self.realloc.clear();
        self.pools.clear();
        for e in 0..self.ir.els.len() {
            let back = &self.inserted_back;
            self.ir.els[e].before.retain(|s| !back.contains(s));
            self.ir.els[e].after.retain(|s| !back.contains(s));
        }
        for e in 0..self.ir.els.len() {
            let all: Vec<usize> = self.ir.els[e]
                .before
                .iter()
                .chain(&self.ir.els[e].after)
                .copied()
                .collect();
            for s in all {
                self.clear_ids(s);
            }
        }
    }

    fn clear_ids(&mut self, s: usize) {
        if self.ir.ops[s].ty == Ty::Barrier {
            return;
        }
        let pair = self.ir.pairs[self.ir.ops[s].idx].clone();
        for p in pair {
            self.ir.ops[p].ids.clear();
        }
    }

    fn widen_all(&mut self) {
        for e in 0..self.ir.els.len() {
            let list: Vec<usize> = self.ir.els[e].after.iter().copied().collect();
            for s in list {
                let op = &self.ir.ops[s];
                if op.ty == Ty::Set && op.ids.is_empty() && !op.useless && !self.try_widen(s) {
                    let sc = scope(&self.ir.ops[s]);
                    self.realloc.insert(sc);
                }
            }
        }
    }

    fn fallback_multi_buffer(&mut self) -> bool {
        let mut unallocated = false;
        let mut multi = false;
        for e in &self.ir.els {
            for &s in e.before.iter().chain(&e.after) {
                let op = &self.ir.ops[s];
                let re = self.realloc.contains(&scope(op));
                if op.ids.is_empty() && !op.useless && matches!(op.ty, Ty::Set | Ty::Wait) && re {
                    unallocated = true;
                }
                if op.n > 1 && re {
                    multi = true;
                }
            }
        }
        if !(unallocated && multi) {
            return false;
        }
        let mut seen = HashSet::new();
        for e in 0..self.ir.els.len() {
            let all: Vec<usize> = self.ir.els[e]
                .before
                .iter()
                .chain(&self.ir.els[e].after)
                .copied()
                .collect();
            for s in all {
                // an op listed twice is changed once (InjectSync visits each list entry; the
                // lists hold each op once)
                if !seen.insert(s) {
                    continue;
                }
                let op = &mut self.ir.ops[s];
                if op.n > 1 && self.realloc.contains(&scope(op)) {
                    op.n = if op.n % 2 == 1 || op.n == 2 { 1 } else { 2 };
                }
            }
        }
        true
    }

    fn widen_first(&mut self) -> bool {
        let pairs: Vec<u32> = self.realloc.iter().copied().collect();
        for p in pairs {
            for e in 0..self.ir.els.len() {
                let list: Vec<usize> = self.ir.els[e].after.iter().copied().collect();
                for s in list {
                    let op = &self.ir.ops[s];
                    if op.ty == Ty::Set && !op.useless && scope(op) == p && self.try_widen(s) {
                        return true;
                    }
                }
            }
        }
        false
    }

    fn set_event_id(&mut self, s: usize) {
        let n = available_ids(&self.ir.ops[s]);
        let mut life = self.event_pool(s, n);
        let sc = scope(&self.ir.ops[s]);
        let idle: Vec<bool> = match self.pools.get(&sc) {
            Some(p) => (0..n)
                .map(|i| p.get(i).is_none_or(|v| v.is_empty()))
                .collect(),
            None => vec![true; n],
        };
        let want = self.ir.ops[s].n as usize;
        let mut got = Vec::new();
        for id in 0..n {
            if got.len() == want {
                break;
            }
            if life[id] && idle[id] {
                life[id] = false;
                got.push(id);
            }
        }
        for (id, free) in life.iter_mut().enumerate() {
            if got.len() == want {
                break;
            }
            if *free {
                *free = false;
                got.push(id);
            }
        }
        if got.is_empty() {
            return;
        }
        if got.len() >= want {
            for id in got {
                self.set_pool(s, id as u32);
            }
        } else if self.realloc.contains(&sc) {
            self.set_pool(s, got[0] as u32);
            self.ir.ops[s].n = 1;
        }
    }

    /// The Sync-IR range a pair books: its own, the whole function for a backward pair, its
    /// loop for a backward pair being reallocated.
    fn range(&self, s: usize, whole_end: usize) -> (usize, usize) {
        let pair = &self.ir.pairs[self.ir.ops[s].idx];
        let (set, wait) = (&self.ir.ops[pair[0]], &self.ir.ops[pair[1]]);
        match set.for_end {
            Some(fe) if self.realloc.contains(&scope(set)) => {
                (self.ir.els[fe].begin, self.ir.els[fe].end)
            }
            Some(_) => (0, whole_end),
            None => (set.ir, wait.ir),
        }
    }

    fn event_pool(&mut self, s: usize, n: usize) -> Vec<bool> {
        let mut free = vec![true; n];
        let (begin, end) = self.range(s, self.ir.els.len() - 1);
        let sc = scope(&self.ir.ops[s]);
        let pool = self.pools.entry(sc).or_insert_with(|| vec![Vec::new(); n]);
        for (i, lc) in pool.iter().enumerate().take(n) {
            if lc.is_empty() || lc[0] <= begin {
                continue;
            }
            for j in 0..lc.len() {
                if lc[j] <= begin {
                    if lc[j - 1] >= end && j % 2 == 0 {
                        break;
                    }
                    free[i] = false;
                } else if j == lc.len() - 1 {
                    if lc[j] >= end {
                        break;
                    }
                    free[i] = false;
                }
            }
        }
        free
    }

    fn set_pool(&mut self, s: usize, id: u32) {
        let (begin, end) = self.range(s, self.ir.els.len());
        let sc = scope(&self.ir.ops[s]);
        let n = available_ids(&self.ir.ops[s]);
        let pool = self.pools.entry(sc).or_insert_with(|| vec![Vec::new(); n]);
        if let Some(lc) = pool.get_mut(id as usize) {
            book(lc, begin, end);
        }
        let pair = self.ir.pairs[self.ir.ops[s].idx].clone();
        let (set, wait) = (pair[0], pair[1]);
        self.ir.ops[set].ids.push(id);
        self.ir.ops[wait].ids.push(id);
        if self.ir.ops[set].for_end.is_some() {
            self.backward_match(set, wait, id);
        }
    }

    /// `UpdateBackwardMatchSync`: a backward pair's balancing set at the start (of the
    /// function, or of its loop when reallocated) and wait at the end.
    fn backward_match(&mut self, set: usize, wait: usize, id: u32) {
        let (s, w) = (&self.ir.ops[set], &self.ir.ops[wait]);
        let mut front = SOp::new(s.ty, s.src, s.dst, 0, s.ir, s.for_end);
        let mut end = front.matched(w.ir);
        front.ids = vec![id];
        end.ids = vec![id];
        let last = self.ir.els.len() - 1;
        let (fb, ea) = match s.for_end {
            Some(fe) if self.realloc.contains(&scope(s)) => {
                front.head_tail = true;
                end.head_tail = true;
                (self.ir.els[fe].begin, self.ir.els[fe].end)
            }
            _ => (0, last),
        };
        front.ir = fb;
        end.ir = ea;
        let ids = self.ir.add_pair(vec![front, end]);
        self.ir.els[fb].before.push_back(ids[0]);
        self.ir.els[ea].after.push_back(ids[1]);
        self.inserted_back.insert(ids[0]);
        self.inserted_back.insert(ids[1]);
    }

    fn ignore_head_tail(&mut self) {
        if self.ir.els.is_empty() {
            return;
        }
        let list: Vec<usize> = self.ir.els[0].before.iter().copied().collect();
        for s in list {
            let op = &self.ir.ops[s];
            if op.src == PM && op.dst == PMTE1 && op.ids.is_empty() {
                for p in self.ir.pairs[op.idx].clone() {
                    self.ir.ops[p].useless = true;
                }
            }
        }
    }

    fn reallocate(&mut self) {
        for p in &self.realloc {
            self.pools.remove(p);
        }
        let last = self.ir.els.len() - 1;
        let realloc = &self.realloc;
        let ops = &self.ir.ops;
        self.ir.els[0]
            .before
            .retain(|&s| !(ops[s].ty == Ty::Set && realloc.contains(&scope(&ops[s]))));
        self.ir.els[last]
            .after
            .retain(|&s| !(ops[s].ty == Ty::Wait && realloc.contains(&scope(&ops[s]))));
        for e in 0..self.ir.els.len() {
            let n = self.ir.els[e].before.len();
            for k in 0..n {
                let s = self.ir.els[e].before[k];
                let op = &self.ir.ops[s];
                if op.ty != Ty::Barrier && self.realloc.contains(&scope(op)) {
                    self.clear_ids(s);
                    self.set_event_id(s);
                }
            }
        }
    }

    /// `ChangeNoEventIdSyncToPipeAll`; always succeeds without block syncs.
    fn no_id_to_pipe_all(&mut self) -> bool {
        for e in 0..self.ir.els.len() {
            let n = self.ir.els[e].after.len();
            for k in 0..n {
                let s = self.ir.els[e].after[k];
                let op = self.ir.ops[s].clone();
                if op.ty == Ty::Wait && op.head_tail {
                    self.move_out_backward_match(s);
                }
                let op = &self.ir.ops[s];
                if op.ty == Ty::Set && op.ids.is_empty() && !op.useless {
                    let pair = self.ir.pairs[op.idx].clone();
                    self.ir.ops[pair[0]].useless = true;
                    let w = &mut self.ir.ops[pair[1]];
                    w.ty = Ty::Barrier;
                    w.src = PALL;
                    w.dst = PALL;
                }
            }
        }
        true
    }

    fn move_out_backward_match(&mut self, s: usize) {
        let pair = self.ir.pairs[self.ir.ops[s].idx].clone();
        let (set, wait) = (pair[0], pair[1]);
        let (si, wi) = (self.ir.ops[set].ir, self.ir.ops[wait].ir);
        let me = &self.ir.ops[s];
        for i in 0..self.ir.els.len() {
            if i > si && i < wi {
                continue;
            }
            for &o in &self.ir.els[i].before {
                let x = &self.ir.ops[o];
                if !x.useless
                    && x.idx != me.idx
                    && actual(x.src) == actual(me.src)
                    && actual(x.dst) == actual(me.dst)
                    && x.ids == me.ids
                {
                    return;
                }
            }
        }
        self.ir.ops[set].useless = true;
        self.ir.ops[wait].useless = true;
        let id = self.ir.ops[set].ids.first().copied().unwrap_or(0);
        self.backward_match(set, wait, id);
    }

    fn try_widen(&mut self, s: usize) -> bool {
        let pair = self.ir.pairs[self.ir.ops[s].idx].clone();
        let (set, wait) = (pair[0], pair[1]);
        let Some(widen) = self.find_widen(set, wait) else {
            return false;
        };
        self.ir.ops[set].useless = true;
        self.ir.ops[wait].useless = true;
        let wset = self.ir.pairs[self.ir.ops[widen].idx][0];
        let (from, to) = (self.ir.ops[wset].ir, self.ir.ops[set].ir);
        if from != to {
            if let Some(k) = self.ir.els[from].after.iter().position(|&x| x == wset) {
                self.ir.els[from].after.remove(k);
                self.ir.els[to].after.push_back(wset);
                self.ir.ops[wset].ir = to;
                self.ir.ops[wset].reuse += 1;
            }
        }
        true
    }

    fn find_widen(&self, set: usize, wait: usize) -> Option<usize> {
        let (s, w) = (&self.ir.ops[set], &self.ir.ops[wait]);
        let stop = match s.for_end {
            Some(fe) => self.ir.els[fe].begin as i64,
            None => 0,
        };
        let mut found: Option<usize> = None;
        let mut id = s.ir as i64;
        while id >= stop {
            let el = &self.ir.els[id as usize];
            let tmp = id as usize;
            match el.kind {
                Kind::LoopEnd => id = el.begin as i64,
                Kind::LoopBegin => break,
                Kind::IfEnd => id = el.begin as i64,
                Kind::IfBegin | Kind::ElseBegin => break,
                _ => {}
            }
            for &x in &self.ir.els[tmp].after {
                let same = &self.ir.ops[x];
                let both_fwd = same.for_end.is_none() && s.for_end.is_none();
                let both_back =
                    same.for_end.is_some() && s.for_end.is_some() && same.for_end == s.for_end;
                let same_type =
                    x != set && same.dst == s.dst && same.src == s.src && (both_back || both_fwd);
                if !same_type || same.useless || same.ids.is_empty() || same.ty != Ty::Set {
                    continue;
                }
                let ws = &self.ir.ops[self.ir.pairs[same.idx][1]];
                let fwd = same.for_end.is_none() && s.ir > same.ir && s.ir <= ws.ir;
                let back = same.for_end.is_some()
                    && ((w.ir < same.ir && w.ir >= ws.ir) || (same.ir < w.ir && ws.ir < w.ir))
                    && ws.n == w.n;
                if fwd || back {
                    found = match found {
                        Some(f) if self.ir.ops[f].reuse <= same.reuse => Some(f),
                        _ => Some(x),
                    };
                }
            }
            id -= 1;
        }
        found
    }
}

/// `SetUseEventID`: books `[begin, end]` on one id's descending list of lifetimes.
fn book(lc: &mut Vec<usize>, begin: usize, end: usize) {
    if lc.is_empty() {
        lc.push(end);
        lc.push(begin);
        return;
    }
    if lc[0] <= begin {
        lc.insert(0, begin);
        lc.insert(0, end);
        return;
    }
    if *lc.last().expect("not empty") >= end {
        lc.push(end);
        lc.push(begin);
        return;
    }
    // ExtendLifecycle
    let pairs = lc.len() / 2;
    for j in 0..pairs {
        let (end_old, begin_old) = (lc[2 * j], lc[2 * j + 1]);
        let widen_begin = end_old >= end && end > begin_old;
        let widen_end = end_old > begin && begin >= begin_old;
        let middle = j + 1 < pairs && begin_old >= end && begin >= lc[2 * (j + 1)];
        if widen_begin {
            lc[2 * j + 1] = begin_old.min(begin);
            return;
        } else if widen_end {
            lc[2 * j] = end_old.max(end);
            return;
        } else if middle {
            lc.insert(2 * (j + 1), begin);
            lc.insert(2 * (j + 1), end);
            return;
        }
    }
}

/// What InjectSync hands an `mmadL1` instead of sync ops (SyncCodegen's
/// `sync_related_args`): the waits for its L1 operands' loads and the sets its loads of the
/// next iteration wait for become operands of the op, for the template library to issue.
#[derive(Clone, Debug, PartialEq)]
pub struct MmadSyncArgs {
    /// The `mmadL1` in the synchronised program.
    pub op: OpId,
    /// The seven operands, in InjectSync's order: the event it waits on for L1 A and for L1 B,
    /// the events its A and B loads wait on, the loop count (the K loop's double-buffer
    /// condition), and the two M→MTE1 events; `-1` for none. An id chosen by the iteration
    /// is an expression as in the program's flags, the loop count the count of the loops
    /// around the op (no modulo).
    pub args: Vec<Expr>,
    /// The inserted ops (in the synchronised program) these operands stand for: bishengir
    /// prints none of them; npusim keeps them so that the simulated `mmadL1` still waits.
    pub absorbed: Vec<OpId>,
}

/// [`synchronize_compat`] with the `mmadL1` operands.
#[derive(Clone, Debug)]
pub struct CompatSynced {
    pub synced: Synced,
    pub mmad_args: Vec<MmadSyncArgs>,
}

/// Inserts the synchronisation InjectSync would into `program` (`sync: auto`), with the
/// buffers at `plan`'s addresses. A `sync: manual` program comes back unchanged.
pub fn synchronize_compat(program: &Program, plan: &Plan, opts: &CompatOptions) -> Synced {
    synchronize_compat_detailed(program, plan, opts).synced
}

/// [`synchronize_compat`], also returning what each `mmadL1` gets as `sync_related_args`.
pub fn synchronize_compat_detailed(
    program: &Program,
    plan: &Plan,
    opts: &CompatOptions,
) -> CompatSynced {
    if program.sync == SyncMode::Manual {
        return CompatSynced {
            synced: Synced {
                program: program.clone(),
                stats: SyncStats::default(),
                serialised: Vec::new(),
            },
            mmad_args: Vec::new(),
        };
    }
    let mut b = Builder {
        program,
        plan,
        ir: Ir {
            els: Vec::new(),
            mems: Vec::new(),
            ops: Vec::new(),
            pairs: Vec::new(),
            mmad_back: HashMap::new(),
        },
        mem_of: HashMap::new(),
    };
    b.block(&program.body, false);
    let mut ir = b.ir;
    // "Single instruction or no instruction, no need to insert synchronization."
    if ir.els.len() > 1 {
        Analyzer {
            ir: &mut ir,
            program,
        }
        .plan(opts.device_entry);
        move_syncs(&mut ir);
        remove_redundant(&mut ir);
        Alloc {
            ir: &mut ir,
            pools: HashMap::new(),
            realloc: BTreeSet::new(),
            inserted_back: HashSet::new(),
        }
        .run();
    }
    emit(program, &ir)
}

/// Where each sync op goes (SyncCodegen): beside its compound, before/after its loop or if,
/// at the end of a branch's block.
struct Places {
    before: Vec<Vec<usize>>,
    after: Vec<Vec<usize>>,
    tail: HashMap<BlockKey, Vec<usize>>,
}

fn places(program: &Program, ir: &Ir) -> Places {
    let n = program.ops.len();
    let mut p = Places {
        before: vec![Vec::new(); n],
        after: vec![Vec::new(); n],
        tail: HashMap::new(),
    };
    for el in &ir.els {
        match &el.kind {
            Kind::Compound(c) => {
                p.before[c.op.index()].extend(el.before.iter().copied());
                p.after[c.op.index()].extend(el.after.iter().copied());
            }
            Kind::LoopEnd | Kind::IfEnd => {
                let op = el.op.expect("a control op").index();
                p.before[op].extend(ir.els[el.begin].before.iter().copied());
                p.after[op].extend(el.after.iter().copied());
            }
            Kind::Holder { block } => {
                p.tail
                    .entry(*block)
                    .or_default()
                    .extend(el.before.iter().copied());
            }
            _ => {}
        }
    }
    p
}

/// The loops around `lp`, innermost first.
fn loops_out(program: &Program, lp: OpId) -> Vec<OpId> {
    let mut v = vec![lp];
    let mut at = program.op(lp).loop_parent;
    while let Some(l) = at {
        v.push(l);
        at = program.op(l).loop_parent;
    }
    v
}

/// The event id of a multi-buffer flag: `ids[k]` in the iteration whose flattened count over
/// the loops around `lp` is `k` modulo the count of ids (InjectSync's
/// `createNestedIndexModular`). Contiguous ids read `ids[0] + count mod n`; others
/// `ids[0] + Σ (ids[k] - ids[0]) · (count mod n == k)`.
fn multi_id(program: &Program, lp: OpId, ids: &[u32]) -> Option<Expr> {
    let n = ids.len() as i64;
    let count = nested_count(program, lp)?;
    let slot = Expr::binary(BinOp::Rem, count, Expr::Const(n)).ok()?;
    let base = ids[0] as i64;
    let contiguous = ids
        .iter()
        .enumerate()
        .all(|(k, &id)| id as i64 == base + k as i64);
    if contiguous {
        return if base == 0 {
            Some(slot)
        } else {
            Expr::binary(BinOp::Add, Expr::Const(base), slot).ok()
        };
    }
    let mut e = Expr::Const(base);
    for (k, &id) in ids.iter().enumerate().skip(1) {
        let is_k = Expr::binary(BinOp::Eq, slot.clone(), Expr::Const(k as i64)).ok()?;
        let term = Expr::binary(BinOp::Mul, Expr::Const(id as i64 - base), is_k).ok()?;
        e = Expr::binary(BinOp::Add, e, term).ok()?;
    }
    Some(e)
}

struct Emitter<'a> {
    program: &'a Program,
    ir: &'a Ir,
    places: Places,
    ops: Vec<Op>,
    map: Vec<OpId>,
    stats: SyncStats,
    /// Sync op → its id in the new program.
    emitted: HashMap<usize, OpId>,
}

/// Whether InjectSync hands sync op `s`, beside an `mmadL1`, to the op's template
/// (`IsNeedLowerSyncToTemplate`): a wait on a load of its L1 A or B, a set its next loads wait
/// on.
fn to_template(s: &SOp) -> bool {
    match s.ty {
        Ty::Wait => s.src == L1A || s.src == L1B,
        Ty::Set => s.dst == L1A || s.dst == L1B,
        Ty::Barrier => false,
    }
}

/// The iteration count of the loops around `lp` (innermost `lp`), flattened as InjectSync's
/// `createNestedIndexModular` counts: `None` for a `while` among them.
fn nested_count(program: &Program, lp: OpId) -> Option<Expr> {
    let mut count: Option<Expr> = None;
    let mut elems = Expr::Const(1);
    for l in loops_out(program, lp) {
        let OpKind::For(f) = &program.op(l).kind else {
            return None;
        };
        let v = Expr::Var(f.var);
        let shifted = if f.from.as_const() == Some(0) {
            v
        } else {
            Expr::binary(BinOp::Sub, v, f.from.clone()).ok()?
        };
        let local = if f.step.as_const() == Some(1) {
            shifted
        } else {
            Expr::binary(BinOp::Div, shifted, f.step.clone()).ok()?
        };
        let term = if elems.as_const() == Some(1) {
            local
        } else {
            Expr::binary(BinOp::Mul, local, elems.clone()).ok()?
        };
        count = Some(match count {
            None => term,
            Some(c) => Expr::binary(BinOp::Add, c, term).ok()?,
        });
        // trips = (to - from + step - 1) floordiv step
        let span = Expr::binary(BinOp::Sub, f.to.clone(), f.from.clone()).ok()?;
        let span = Expr::binary(
            BinOp::Add,
            span,
            Expr::binary(BinOp::Sub, f.step.clone(), Expr::Const(1)).ok()?,
        )
        .ok()?;
        let trips = Expr::binary(BinOp::Div, span, f.step.clone()).ok()?;
        elems = Expr::binary(BinOp::Mul, elems, trips).ok()?;
    }
    count
}

impl Emitter<'_> {
    fn id_expr(&self, op: &SOp) -> Expr {
        match (op.ids.len(), op.lca_loop) {
            (k, Some(l)) if k > 1 => {
                multi_id(self.program, l, &op.ids).unwrap_or(Expr::Const(op.ids[0] as i64))
            }
            _ => Expr::Const(op.ids.first().copied().unwrap_or(0) as i64),
        }
    }

    /// The `sync_related_args` of every `mmadL1` (SyncCodegen's `mmadL12SyncTemplateInter`).
    fn mmad_args(&self) -> Vec<MmadSyncArgs> {
        let mut out: Vec<MmadSyncArgs> = Vec::new();
        // per entry of `out`: its op and the sync ops before and after its halves
        let mut halves: Vec<(OpId, Vec<usize>, Vec<usize>)> = Vec::new();
        for el in &self.ir.els {
            let Kind::Compound(c) = &el.kind else {
                continue;
            };
            let Some(k) = c.macro_id else { continue };
            let op = self.map[c.op.index()];
            if out.last().is_none_or(|m| m.op != op) {
                let mut args = vec![Expr::Const(-1); 7];
                let lp = self.program.op(c.op).loop_parent;
                if let Some(count) = lp.and_then(|l| nested_count(self.program, l)) {
                    args[4] = count;
                }
                out.push(MmadSyncArgs {
                    op,
                    args,
                    absorbed: Vec::new(),
                });
            }
            let m = out.last_mut().expect("pushed");
            // the M→MTE1 pair of this half, when it got an id
            if let Some(&pair) = self.ir.mmad_back.get(&k) {
                let set = &self.ir.ops[self.ir.pairs[pair][0]];
                if c.in_loop && !set.useless && set.ids.len() == 1 {
                    m.args[5 + k as usize] = Expr::Const(set.ids[0] as i64);
                }
            }
            let (before, after) = match halves.last_mut() {
                Some((o, b, a)) if *o == op => (b, a),
                _ => {
                    halves.push((op, Vec::new(), Vec::new()));
                    let (_, b, a) = halves.last_mut().expect("pushed");
                    (b, a)
                }
            };
            before.extend(el.before.iter().copied());
            after.extend(el.after.iter().copied());
        }
        // SyncCodegen::Build: the op's waits and sets before it (both halves, in order), then
        // those after it in reverse; a later one in that order overwrites a slot
        for (m, (_, before, after)) in out.iter_mut().zip(&halves) {
            for &s in before.iter().chain(after.iter().rev()) {
                let sync = &self.ir.ops[s];
                if sync.useless || !to_template(sync) {
                    continue;
                }
                let slot = match sync.ty {
                    Ty::Wait if sync.src == L1A => 0,
                    Ty::Wait => 1,
                    _ if sync.dst == L1A => 2,
                    _ => 3,
                };
                m.args[slot] = self.id_expr(sync);
                if let Some(&id) = self.emitted.get(&s) {
                    m.absorbed.push(id);
                }
            }
        }
        out
    }
}

fn emit(program: &Program, ir: &Ir) -> CompatSynced {
    let mut em = Emitter {
        program,
        ir,
        places: places(program, ir),
        ops: Vec::with_capacity(program.ops.len() + ir.ops.len()),
        map: vec![OpId::new(0); program.ops.len()],
        stats: SyncStats::default(),
        emitted: HashMap::new(),
    };
    let body = em.block(&program.body, None, None, None);
    let mut p = Program {
        kernel: program.kernel.clone(),
        file: program.file.clone(),
        texts: program.texts.clone(),
        core: program.core,
        sync: SyncMode::Manual,
        params: program.params.clone(),
        launch: program.launch,
        tensors: program.tensors.clone(),
        buffers: program.buffers.clone(),
        views: program.views.clone(),
        vars: program.vars.clone(),
        ops: Vec::new(),
        body,
    };
    renumber_declarations(&mut p, &em.map);
    let mmad_args = em.mmad_args();
    p.ops = em.ops;
    em.stats.dependencies = ir
        .pairs
        .iter()
        .filter(|pair| {
            pair.iter().all(|&s| !ir.ops[s].useless)
                && pair.len() == 2
                && !ir.ops[pair[0]].head_tail
        })
        .count() as u32;
    CompatSynced {
        synced: Synced {
            program: p,
            stats: em.stats,
            serialised: Vec::new(),
        },
        mmad_args,
    }
}

impl Emitter<'_> {
    fn block(
        &mut self,
        b: &Block,
        parent: Option<OpId>,
        lp: Option<OpId>,
        key: Option<BlockKey>,
    ) -> Block {
        let mut out = Block {
            ops: Vec::with_capacity(b.ops.len()),
            buffers: b.buffers.clone(),
            views: b.views.clone(),
        };
        for &op in &b.ops {
            let loc = self.program.op(op).loc.clone();
            let path = self.program.op(op).path.clone();
            for s in self.places.before[op.index()].clone() {
                if let Some(id) = self.sync(s, parent, lp, &path, &loc, Side::Before) {
                    out.ops.push(id);
                }
            }
            out.ops.push(self.op(op, parent, lp));
            for s in self.places.after[op.index()].clone() {
                if let Some(id) = self.sync(s, parent, lp, &path, &loc, Side::After) {
                    out.ops.push(id);
                }
            }
        }
        if let Some(k) = key {
            if let (Some(tail), Some(&last)) = (self.places.tail.get(&k).cloned(), b.ops.last()) {
                let loc = self.program.op(last).loc.clone();
                let path = self.program.op(last).path.clone();
                for s in tail {
                    if let Some(id) = self.sync(s, parent, lp, &path, &loc, Side::After) {
                        out.ops.push(id);
                    }
                }
            }
        }
        out
    }

    fn op(&mut self, old: OpId, parent: Option<OpId>, lp: Option<OpId>) -> OpId {
        let src = self.program.op(old);
        let id = OpId::new(self.ops.len());
        self.map[old.index()] = id;
        self.ops.push(placeholder(src, parent, lp));
        let mut which = 0u8;
        let kind = rebuilt(&src.kind, id, lp, |b, parent, lp| {
            let k = (old, which);
            which += 1;
            self.block(b, parent, lp, Some(k))
        });
        self.ops[id.index()].kind = kind;
        id
    }

    fn sync(
        &mut self,
        s: usize,
        parent: Option<OpId>,
        lp: Option<OpId>,
        path: &str,
        loc: &Loc,
        side: Side,
    ) -> Option<OpId> {
        let op = &self.ir.ops[s];
        if op.useless {
            return None;
        }
        let id = self.id_expr(op);
        let (kind, pipe, what) = match op.ty {
            Ty::Barrier if op.src == PALL => {
                self.stats.barrier_alls += 1;
                (OpKind::Barrier(BarrierTarget::All), Pipe::S, "barrier")
            }
            Ty::Barrier => {
                self.stats.barriers += 1;
                let p = sim_pipe(op.src);
                (OpKind::Barrier(BarrierTarget::Pipe(p)), p, "barrier")
            }
            Ty::Set => {
                self.stats.set_flags += 1;
                let k = OpKind::SetFlag {
                    src: sim_pipe(op.src),
                    dst: sim_pipe(op.dst),
                    id,
                };
                (k, sim_pipe(op.src), "set_flag")
            }
            Ty::Wait => {
                self.stats.wait_flags += 1;
                let k = OpKind::WaitFlag {
                    src: sim_pipe(op.src),
                    dst: sim_pipe(op.dst),
                    id,
                };
                (k, sim_pipe(op.dst), "wait_flag")
            }
        };
        let side_word = match side {
            Side::Before => "before ",
            Side::After => "after ",
        };
        let id = OpId::new(self.ops.len());
        self.emitted.insert(s, id);
        self.ops.push(Op {
            kind,
            path: format!("{what} (inserted {side_word}{path})"),
            loc: Loc::inserted(loc, side),
            pipe: Some(pipe),
            loop_parent: lp,
            parent,
        });
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    fn show(id: &Expr) -> String {
        id.as_const()
            .map_or_else(|| format!("{id:?}"), |k| k.to_string())
    }

    /// The program's inserted ops, one line each: `set MTE2->V 0 before body[1]`.
    fn synced(yaml: &str, entry: bool) -> Vec<String> {
        let program =
            sim::load_program(yaml, "p.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"));
        let planned = crate::plan_program(&program, &config(), &crate::PlanOptions::default())
            .unwrap_or_else(|e| panic!("{e:?}"));
        let s = synchronize_compat(
            &program,
            &planned.plan,
            &CompatOptions {
                device_entry: entry,
            },
        );
        s.program
            .ops
            .iter()
            .filter(|o| o.loc.inserted.is_some())
            .map(|o| {
                let what = match &o.kind {
                    OpKind::SetFlag { src, dst, id } => {
                        format!("set {src:?}->{dst:?} {}", show(id))
                    }
                    OpKind::WaitFlag { src, dst, id } => {
                        format!("wait {src:?}->{dst:?} {}", show(id))
                    }
                    OpKind::Barrier(BarrierTarget::All) => "barrier all".to_string(),
                    OpKind::Barrier(BarrierTarget::Pipe(p)) => format!("barrier {p:?}"),
                    k => format!("{k:?}"),
                };
                format!(
                    "{what} {}",
                    o.path
                        .split_once("(inserted ")
                        .map_or("", |x| x.1)
                        .trim_end_matches(')')
                )
            })
            .collect()
    }

    const HEAD: &str = "kernel: k\ncore: aiv\nsync: auto\nparams: { c: 1 }\ngm: { a: { shape: [4096], dtype: f16 }, b: { shape: [4096], dtype: f16 } }\n";

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// load → vadd → store on one UB buffer, a device entry. Derived by hand from InjectSync's
    /// rules: vadd reads what load wrote (MTE2→V, the first id of the pool), store reads what
    /// vadd wrote (V→MTE3); store also reads what load wrote, but the wait MTE2→V before vadd
    /// and the set V→MTE3 after it already order load before store (`alreadySync[MTE2]`);
    /// a device entry ends with `pipe_barrier[PIPE_ALL]`.
    #[test]
    fn straight_line_pairs_and_transitive_order() {
        let y = format!(
            "{HEAD}buffers: {{ x: {{ scope: ub, shape: [64], dtype: f16 }} }}\nbody:\n  - load: {{ src: \"a[0 : 64]\", dst: x }}\n  - vadd: {{ ins: [x, x], out: x }}\n  - store: {{ src: x, dst: \"b[0 : 64]\" }}\n"
        );
        assert_eq!(
            synced(&y, true),
            lines(&[
                "set Mte2->V 0 after body[0]",
                "wait Mte2->V 0 before body[1]",
                "set V->Mte3 0 after body[1]",
                "wait V->Mte3 0 before body[2]",
                "barrier all after body[2]",
            ])
        );
        // not a device entry: no final barrier
        assert_eq!(synced(&y, false).len(), 4);
    }

    /// A loop reloading one buffer (HIVM's test_injcet_sync_loop, written anew). By hand:
    /// forward MTE2→MTE3 (store reads the load's buffer); backward MTE3→MTE2 (the next
    /// iteration's load overwrites what store reads), set after store, wait before load, with
    /// a balancing set at the start of the function (before the loop, Sync-IR element 0) and a
    /// wait at its end. store against its own next instance is already ordered by that backward
    /// pair (its set follows store on MTE3 and is waited on before load, itself ordered before
    /// store), so no `pipe_barrier[PIPE_MTE3]`.
    #[test]
    fn loop_back_edge_with_head_and_tail() {
        let y = format!(
            "{HEAD}buffers: {{ x: {{ scope: ub, shape: [64], dtype: f16 }} }}\nbody:\n  - for: {{ var: i, from: 0, to: 8, step: 1 }}\n    body:\n      - load: {{ src: \"a[0 : 64]\", dst: x }}\n      - store: {{ src: x, dst: \"b[0 : 64]\" }}\n"
        );
        assert_eq!(
            synced(&y, false),
            lines(&[
                "set Mte3->Mte2 0 before body[0]",
                "wait Mte3->Mte2 0 before body[0].for.body[0]",
                "set Mte2->Mte3 0 after body[0].for.body[0]",
                "wait Mte2->Mte3 0 before body[0].for.body[1]",
                "set Mte3->Mte2 0 after body[0].for.body[1]",
                "wait Mte3->Mte2 0 after body[0]",
            ])
        );
    }

    /// A double buffer allocated in the loop (HIVM's test_db_two_address, written anew). By
    /// hand: the backward MTE3→MTE2 pair touches two 2-slot addresses whose slot k meets only
    /// slot k, allocated in the same `for`: 2 ids, chosen by `(i floordiv 4) mod 2`, with two
    /// balancing sets and waits. Record 0 skips a multi-id pair, so store against its next
    /// instance (same gm argument, MTE3) is not ordered by it: `pipe_barrier[PIPE_MTE3]`.
    #[test]
    fn double_buffer_ids_by_iteration() {
        let y = format!(
            "{HEAD}body:\n  - for: {{ var: i, from: 0, to: 16, step: 4 }}\n    buffers: {{ x: {{ scope: ub, shape: [16], dtype: f16, multi: 2, at: [0, 32] }} }}\n    body:\n      - load: {{ src: \"a[0 : 16]\", dst: x }}\n      - store: {{ src: x, dst: \"b[0 : 16]\" }}\n"
        );
        let got = synced(&y, false);
        let program = sim::load_program(&y, "p.yaml", &config(), &[]).unwrap();
        let i = Expr::Var(sim::VarId::new(
            program.vars.iter().position(|v| v.name == "i").unwrap(),
        ));
        let slot = Expr::binary(
            BinOp::Rem,
            Expr::binary(BinOp::Div, i, Expr::Const(4)).unwrap(),
            Expr::Const(2),
        )
        .unwrap();
        let slot = format!("{slot:?}");
        assert_eq!(
            got,
            vec![
                "set Mte3->Mte2 0 before body[0]".to_string(),
                "set Mte3->Mte2 1 before body[0]".to_string(),
                format!("wait Mte3->Mte2 {slot} before body[0].for.body[0]"),
                "set Mte2->Mte3 0 after body[0].for.body[0]".to_string(),
                "wait Mte2->Mte3 0 before body[0].for.body[1]".to_string(),
                "barrier Mte3 before body[0].for.body[1]".to_string(),
                format!("set Mte3->Mte2 {slot} after body[0].for.body[1]"),
                "wait Mte3->Mte2 0 after body[0]".to_string(),
                "wait Mte3->Mte2 1 after body[0]".to_string(),
            ]
        );
    }

    /// A wait inside an `if` whose set is outside moves before the `if`; a set inside whose
    /// wait is outside moves after it (HIVM's test_injcet_sync_if, written anew). By hand:
    /// vadd (in `then`) waits MTE2→V; store waits V→MTE3 for vadd and, since `then` may not
    /// run, MTE2→MTE3 for load as well (an `if` without `else` passes on only which waits it
    /// met, not what they ordered).
    #[test]
    fn if_moves_syncs_out() {
        let y = format!(
            "{HEAD}buffers: {{ x: {{ scope: ub, shape: [64], dtype: f16 }} }}\nbody:\n  - load: {{ src: \"a[0 : 64]\", dst: x }}\n  - if: \"c > 0\"\n    then:\n      - vadd: {{ ins: [x, x], out: x }}\n  - store: {{ src: x, dst: \"b[0 : 64]\" }}\n"
        );
        assert_eq!(
            synced(&y, false),
            lines(&[
                "set Mte2->V 0 after body[0]",
                "set Mte2->Mte3 0 after body[0]",
                "wait Mte2->V 0 before body[1]",
                "set V->Mte3 0 after body[1]",
                "wait V->Mte3 0 before body[2]",
                "wait Mte2->Mte3 0 before body[2]",
            ])
        );
    }

    /// Two loads into one address: the same pipe, so `pipe_barrier` (HIVM's
    /// test_injcet_sync_if_else's first pair); S→S pairs need nothing.
    #[test]
    fn same_pipe_barrier_and_scalar_pairs() {
        let y = format!(
            "{HEAD}buffers: {{ x: {{ scope: ub, shape: [64], dtype: f16, at: [0] }}, y: {{ scope: ub, shape: [64], dtype: f16, at: [0] }} }}\nbody:\n  - load: {{ src: \"a[0 : 64]\", dst: x }}\n  - load: {{ src: \"b[0 : 64]\", dst: y }}\n  - sload: {{ src: \"y[0]\" }}\n  - sstore: {{ dst: \"y[1]\" }}\n"
        );
        assert_eq!(
            synced(&y, false),
            lines(&[
                "barrier Mte2 before body[1]",
                "set Mte2->S 0 after body[1]",
                "wait Mte2->S 0 before body[2]",
            ])
        );
    }

    /// An mmadL1 after loads of its A and B (HIVM's test_sync_for_cube, written anew). By
    /// hand: its in-pipe (MTE1) half waits for both loads, on the virtual MTE2 pipes of L1 B
    /// (nearest first) and L1 A, which share the MTE2→MTE1 pool: B's wait, met first, gets 0,
    /// A's 1; both waits go to the op's template (`sync_related_args` 1, 0, then -1 for the
    /// unused operands); its out-pipe (M) half is read by fixpipe: M→FIX.
    #[test]
    fn mmad_l1_waits_become_template_operands() {
        let y = "kernel: k\ncore: aic\nsync: auto\ngm: { a: { shape: [16, 16], dtype: f16 }, b: { shape: [16, 16], dtype: f16 }, c: { shape: [16, 16], dtype: f32 } }\nbuffers: { a1: { scope: l1, shape: [16, 16], dtype: f16 }, b1: { scope: l1, shape: [16, 16], dtype: f16 }, c0: { scope: l0c, shape: [16, 16], dtype: f32 } }\nbody:\n  - load: { src: a, dst: a1, layout: nz }\n  - load: { src: b, dst: b1, layout: nz }\n  - mmad_l1: { a: a1, b: b1, c: c0, m: 16, n: 16, k: 16, init: 1 }\n  - fixpipe: { src: c0, dst: c }\n";
        assert_eq!(
            synced(y, false),
            lines(&[
                "set Mte2->Mte1 1 after body[0]",
                "set Mte2->Mte1 0 after body[1]",
                "wait Mte2->Mte1 0 before body[2]",
                "wait Mte2->Mte1 1 before body[2]",
                "set M->Fix 0 after body[2]",
                "wait M->Fix 0 before body[3]",
            ])
        );
        let program = sim::load_program(y, "p.yaml", &config(), &[]).unwrap();
        let planned =
            crate::plan_program(&program, &config(), &crate::PlanOptions::default()).unwrap();
        let d = synchronize_compat_detailed(&program, &planned.plan, &CompatOptions::default());
        let [m] = &d.mmad_args[..] else {
            panic!("{:?}", d.mmad_args)
        };
        let args: Vec<i64> = m.args.iter().map(|a| a.as_const().unwrap()).collect();
        assert_eq!(args, vec![1, 0, -1, -1, -1, -1, -1]);
        let absorbed: Vec<String> = m
            .absorbed
            .iter()
            .map(|&o| d.synced.program.op(o).path.clone())
            .collect();
        assert_eq!(
            absorbed,
            vec![
                "wait_flag (inserted before body[2])",
                "wait_flag (inserted before body[2])"
            ]
        );
        assert!(matches!(d.synced.program.op(m.op).kind, OpKind::MmadL1(_)));
    }

    /// InjectSync's event-id lifetimes: `[end, begin]` pairs kept in descending order, a new
    /// range put before, after or between them, or widening one it meets.
    /// The first four `sync_related_args` of the only mmadL1 of `body` (an aic program with an
    /// L1 buffer `x` of 32x16 and an L0C `c0`): waits on L1 A, L1 B, sets for L1 A, L1 B.
    fn mmad_template(body: &str) -> Vec<i64> {
        let y = format!(
            "kernel: k\ncore: aic\nsync: auto\ngm: {{ a: {{ shape: [32, 16], dtype: f16 }} }}\nbuffers: {{ x: {{ scope: l1, shape: [32, 16], dtype: f16 }}, c0: {{ scope: l0c, shape: [16, 16], dtype: f32 }} }}\nbody:\n{body}"
        );
        let program = sim::load_program(&y, "p.yaml", &config(), &[]).unwrap();
        let planned =
            crate::plan_program(&program, &config(), &crate::PlanOptions::default()).unwrap();
        let d = synchronize_compat_detailed(&program, &planned.plan, &CompatOptions::default());
        let [m] = &d.mmad_args[..] else {
            panic!("{:?}", d.mmad_args)
        };
        m.args[..4].iter().map(|a| a.as_const().unwrap()).collect()
    }

    /// Which virtual MTE2 pipe (L1 A or L1 B) a dependence of an mmadL1 on a load takes is
    /// decided by SSA value, not by buffer: InjectSync compares each dependence's
    /// `baseBuffer` (the value the op reads, a subview included) with `getA()`, then `getB()`,
    /// and the last dependence wins (`ChangeFrontPipeToVirtualMTE2` /
    /// `ChangeNowPipeToVirtualMTE2`). By hand, one load of `x` then the mmadL1:
    /// - A and B two subviews of `x`: the A dependence says L1A, the B one (last) L1B: the
    ///   wait is B's (args -1, 0);
    /// - A and B both `x` itself, one value: both dependences are A's: the wait is A's (0, -1);
    /// - A a subview, B the whole `x`: B's (-1, 0);
    /// - in a loop, the next iteration's load against the mmadL1 (two subviews): the set is on
    ///   L1 B, the fourth argument, and the forward wait stays B's (-1, 0, -1, 0).
    ///
    /// Checked against bishengir-opt 1.2.0 `-hivm-plan-memory -hivm-inject-sync`.
    #[test]
    fn mmad_l1_virtual_pipe_by_operand_value() {
        let one = |ab: &str| {
            format!("  - load: {{ src: a, dst: x, layout: nz }}\n  - mmad_l1: {{ {ab}, c: c0, m: 16, n: 16, k: 16, init: 1 }}\n")
        };
        assert_eq!(
            mmad_template(&one("a: \"x[0:16]\", b: \"x[16:32]\"")),
            vec![-1, 0, -1, -1]
        );
        assert_eq!(mmad_template(&one("a: x, b: x")), vec![0, -1, -1, -1]);
        assert_eq!(
            mmad_template(&one("a: \"x[0:16]\", b: x")),
            vec![-1, 0, -1, -1]
        );
        let looped = "  - for: { var: i, to: 2 }\n    body:\n      - load: { src: a, dst: x, layout: nz }\n      - mmad_l1: { a: \"x[0:16]\", b: \"x[16:32]\", c: c0, m: 16, n: 16, k: 16, init: 1 }\n";
        assert_eq!(mmad_template(looped), vec![-1, 0, -1, 0]);
    }

    /// The balancing waits of back-edge pairs go after the last Sync-IR element; when that is
    /// an mmadL1, a wait on L1 B there is lowered into its template too. SyncCodegen::Build
    /// inserts an op's waits before it in order, then those after it in reverse, each one
    /// overwriting the slot. By hand: two loops each reading `x` (then `z`) as B before
    /// reloading it make two back-edge MTE2(L1B)→MTE1 pairs, ids 2 (x's loop) and 4 (z's),
    /// whose balancing waits follow the final mmadL1 in that order; reversed, x's comes last:
    /// B's slot is 2 (npusim wrote 4 when it took them in order). Checked against
    /// bishengir-opt 1.2.0 on the same plan.
    #[test]
    fn mmad_l1_waits_after_it_fill_slots_in_reverse() {
        let y = "kernel: k\ncore: aic\nsync: auto\ngm: { a: { shape: [32, 16], dtype: f16 } }\nbuffers: { w: { scope: l1, shape: [16, 16], dtype: f16 }, x: { scope: l1, shape: [32, 16], dtype: f16 }, z: { scope: l1, shape: [32, 16], dtype: f16 }, c0: { scope: l0c, shape: [16, 16], dtype: f32 } }\nbody:\n  - load: { src: \"a[0:16]\", dst: w, layout: nz }\n  - load: { src: a, dst: x, layout: nz }\n  - load: { src: a, dst: z, layout: nz }\n  - for: { var: i, to: 2 }\n    body:\n      - mmad_l1: { a: w, b: \"x[0:16]\", c: c0, m: 16, n: 16, k: 16, init: 1 }\n      - load: { src: a, dst: x, layout: nz }\n  - for: { var: j, to: 2 }\n    body:\n      - mmad_l1: { a: w, b: \"z[0:16]\", c: c0, m: 16, n: 16, k: 16, init: 1 }\n      - load: { src: a, dst: z, layout: nz }\n  - mmad_l1: { a: w, b: w, c: c0, m: 16, n: 16, k: 16, init: 1 }\n";
        let program = sim::load_program(y, "p.yaml", &config(), &[]).unwrap();
        let planned =
            crate::plan_program(&program, &config(), &crate::PlanOptions::default()).unwrap();
        let d = synchronize_compat_detailed(&program, &planned.plan, &CompatOptions::default());
        let args: Vec<Vec<Option<i64>>> = d
            .mmad_args
            .iter()
            .map(|m| m.args[..4].iter().map(|a| a.as_const()).collect())
            .collect();
        let c = |v: [i64; 4]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        assert_eq!(
            args,
            vec![c([-1, 2, -1, 0]), c([-1, 4, -1, 1]), c([-1, 2, -1, -1])]
        );
    }

    #[test]
    fn lifetimes_book_in_descending_order() {
        let mut lc = Vec::new();
        book(&mut lc, 5, 8);
        assert_eq!(lc, vec![8, 5]);
        book(&mut lc, 10, 15);
        assert_eq!(lc, vec![15, 10, 8, 5]);
        book(&mut lc, 1, 3);
        assert_eq!(lc, vec![15, 10, 8, 5, 3, 1]);
        // meets [5, 8] from below: that range starts earlier
        book(&mut lc, 4, 6);
        assert_eq!(lc, vec![15, 10, 8, 4, 3, 1]);
    }

    #[test]
    fn one_root_conflicts_whatever_the_selection() {
        let y = "kernel: k\ncore: aiv\nsync: auto\ngm: { a: { shape: [1024], dtype: i16 }, b: { shape: [1024], dtype: i16 } }\nbuffers: { v0: { scope: ub, shape: [1024], dtype: i16, at: [0] } }\nbody:\n  - load: { src: \"a[0 : 2]\", dst: \"v0[0 : 2]\" }\n  - store: { src: \"v0[0 : 2]\", dst: \"b[0 : 2]\" }\n";
        // by hand: store reads the buffer load wrote, through another view of the same root
        assert_eq!(
            synced(y, false),
            lines(&[
                "set Mte2->Mte3 0 after body[0]",
                "wait Mte2->Mte3 0 before body[1]"
            ])
        );
    }
}
