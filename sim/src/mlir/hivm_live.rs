//! HIVM PlanMemory's liveness walk (v1.2.0 `MemLivenessAnalysis`), emulated over the MLIR tree,
//! for the two orders it leaves to its random stream (docs/planner.md, "Ties, as HIVM decides
//! them"):
//! - an op's *kill list*: the buffers that die at the op, in the order of the op's shuffled live
//!   set (`OpKillHandle`); PlanMemory inplaces an output into the first kill that fits;
//! - a loop's *gen list*: the buffers allocated before the loop and first written in it, gen'd
//!   at the loop's start in the order of the shuffled live set at the loop (`GetLiveBuffersInLoop`);
//!   it is their storage entries' order, so the order first fit places them in.
//!
//! Every shuffle draws from one `std::mt19937` ([`super::hivm_rng`]) seeded with the attempt
//! number, and the length of every shuffled set depends on every SSA value of the function
//! (indices and constants too), so the walk is emulated whole: the op sequence of `RecursionIR`,
//! the live set of `currentlyLiveValuesOrdered` (block arguments, the block's live-ins, then the
//! results of the block's ops up to the op, each kept when live at the op, as MLIR's `Liveness`
//! says), the alias sets, and the gen/kill status of each buffer.
//!
//! The IR HIVM walks is the function after its greedy rewrite (the loop-iterator patterns with
//! folding): constants are uniqued and hoisted to the function's entry block (reversing their
//! order, except for runs already at the top), and unused pure ops and allocs are erased. Both are
//! emulated; other folds (an `arith` op of constants, an identity subview) are not.
//!
//! Where the emulation cannot be exact, [`Orders::inexact`] says so: a block's live-ins are an
//! `llvm::SmallPtrSet<Value, 16>`, iterated in insertion order (with swap-with-last erasure) only
//! while it never held more than 16 values; past that their order is the values' pointer hashes.
//! A block of a multi-block region (`cf` branches) also gets no exact live-in order here. Either
//! matters only at a shuffle where two live-ins are live and one is a buffer or an alias of one.

use super::ast::{Attr, Block, Event, Op, OpFold, OpKind, Pos, Region, Type, Value};
use super::hivm_rng::Mt19937;
use std::collections::{HashMap, HashSet};

/// The orders of one function for one seed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Orders {
    /// Per op that kills buffers (the op name's position): the allocs that die there, in
    /// HIVM's order.
    pub kills: Vec<(Pos, Vec<Alloc>)>,
    /// Per loop (the op name's position): the allocs its start gens, in HIVM's order.
    pub loop_gens: Vec<(Pos, Vec<Alloc>)>,
    /// Why some order may differ from HIVM's (each reason once), empty when exact.
    pub inexact: Vec<String>,
}

/// A buffer of the orders: a `memref.alloc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alloc {
    /// Its SSA name, without `%` (not unique: sibling regions may reuse a name).
    pub name: String,
    /// The position of its op name (`memref.alloc`): unique.
    pub at: Pos,
}

type V = usize;
type OpIx = usize;
type BlockIx = usize;
/// The names visible in one region: name and result index to value.
type Scope = HashMap<(String, u32), V>;

struct ONode<'a> {
    op: &'a Op,
    block: Option<BlockIx>,
    operands: Vec<V>,
    results: Vec<V>,
    /// Per region, its blocks.
    regions: Vec<Vec<BlockIx>>,
    erased: bool,
}

struct BNode {
    parent: OpIx,
    region: usize,
    /// Index of the block in its region.
    index: usize,
    args: Vec<V>,
    ops: Vec<OpIx>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Undefined,
    Defined,
    Gened,
    Killed,
}

#[derive(Default)]
struct BlockLive {
    /// Live-ins in `in()` iteration order.
    ins: Vec<V>,
    ins_set: HashSet<V>,
    outs: HashSet<V>,
    /// Why the live-ins' order is not LLVM's, when it is not.
    unordered: Option<&'static str>,
}

struct Ir<'a> {
    ops: Vec<ONode<'a>>,
    blocks: Vec<BNode>,
    names: Vec<(String, u32)>,
    /// Per value: where it is defined (`Err(block)` for a block argument).
    def: Vec<Option<Result<OpIx, BlockIx>>>,
    /// After [`Ir::index`]: per value, the ops using it; per op, its index in its block.
    user_ops: Vec<Vec<OpIx>>,
    pos: Vec<usize>,
}

fn folds(fs: &[OpFold]) -> Vec<&Value> {
    fs.iter()
        .filter_map(|f| match f {
            OpFold::Value(v) => Some(v),
            OpFold::Const(_) => None,
        })
        .collect()
}

fn op_uses(op: &Op) -> Vec<&Value> {
    let mut v: Vec<&Value> = Vec::new();
    match &op.kind {
        OpKind::Module { .. } | OpKind::Func { .. } | OpKind::Constant { .. } => {}
        OpKind::Return { values } | OpKind::Yield { values } => v.extend(values),
        OpKind::Call { args, .. } => v.extend(args),
        OpKind::Alloc { dynamic_sizes, .. } => v.extend(dynamic_sizes),
        OpKind::PointerCast {
            addrs,
            dynamic_sizes,
            ..
        } => {
            v.extend(addrs);
            v.extend(dynamic_sizes);
        }
        OpKind::AllocWorkspace { .. } => {}
        OpKind::Dps {
            ins, outs, groups, ..
        } => {
            v.extend(ins.iter().map(|t| &t.value));
            v.extend(outs.iter().map(|t| &t.value));
            for (_, g) in groups {
                v.extend(g.iter().map(|t| &t.value));
            }
        }
        OpKind::For {
            lower,
            upper,
            step,
            iter_args,
            ..
        } => {
            v.extend([lower, upper, step]);
            v.extend(iter_args.iter().map(|(_, init)| init));
        }
        OpKind::If { cond, .. } => v.push(cond),
        OpKind::While { inits, .. } => v.extend(inits.iter().map(|(_, init)| init)),
        OpKind::Condition { cond, values } => {
            v.push(cond);
            v.extend(values);
        }
        OpKind::Scope { .. } => {}
        OpKind::View { kind, source, .. } => {
            v.push(source);
            use super::ast::ViewKind as K;
            match kind {
                K::Subview {
                    offsets,
                    sizes,
                    strides,
                }
                | K::ReinterpretCast {
                    offset: offsets,
                    sizes,
                    strides,
                } => {
                    v.extend(folds(offsets));
                    v.extend(folds(sizes));
                    v.extend(folds(strides));
                }
                K::View { byte_shift, sizes } => {
                    v.push(byte_shift);
                    v.extend(sizes);
                }
                K::ExpandShape { output_shape, .. } => v.extend(folds(output_shape)),
                K::CollapseShape { .. } | K::Cast => {}
            }
        }
        OpKind::Mark { target } => v.push(target),
        OpKind::SetFlag { event, .. } | OpKind::WaitFlag { event, .. } => {
            if let Event::Value(e) = event {
                v.push(e);
            }
        }
        OpKind::SyncBlockSet { flag, .. } | OpKind::SyncBlockWait { flag, .. } => {
            if let Event::Value(e) = flag {
                v.push(e);
            }
        }
        OpKind::PipeBarrier { .. } | OpKind::SyncBlock { .. } => {}
        OpKind::MemLoad { memref, indices } => {
            v.push(memref);
            v.extend(indices);
        }
        OpKind::MemStore {
            value,
            memref,
            indices,
        } => {
            v.push(value);
            v.push(memref);
            v.extend(indices);
        }
        OpKind::Scalar { operands, .. } | OpKind::Opaque { operands, .. } => v.extend(operands),
    }
    v
}

/// The blocks of a region with their arguments (a loop's induction variable and carried values
/// are its body's arguments; a while's carried values its before block's).
fn region_blocks<'a>(op: &'a Op) -> Vec<Vec<(&'a Block, Vec<&'a Value>)>> {
    let plain = |r: &'a Region| -> Vec<(&'a Block, Vec<&'a Value>)> {
        r.blocks
            .iter()
            .map(|b| (b, b.args.iter().map(|(v, _)| v).collect()))
            .collect()
    };
    match &op.kind {
        OpKind::Func { args, body, .. } => {
            let mut bs = plain(body);
            if let Some(first) = bs.first_mut() {
                if first.1.is_empty() {
                    first.1 = args.iter().map(|a| &a.value).collect();
                }
            }
            vec![bs]
        }
        OpKind::For {
            iv,
            iter_args,
            body,
            ..
        } => {
            let mut bs = plain(body);
            if let Some(first) = bs.first_mut() {
                if first.1.is_empty() {
                    first.1 = std::iter::once(iv)
                        .chain(iter_args.iter().map(|(a, _)| a))
                        .collect();
                }
            }
            vec![bs]
        }
        OpKind::While {
            inits,
            before,
            after,
        } => {
            let mut bs = plain(before);
            if let Some(first) = bs.first_mut() {
                if first.1.is_empty() {
                    first.1 = inits.iter().map(|(a, _)| a).collect();
                }
            }
            vec![bs, plain(after)]
        }
        _ => op.kind.regions().into_iter().map(plain).collect(),
    }
}

impl<'a> Ir<'a> {
    fn build(func: &'a Op) -> Ir<'a> {
        let mut ir = Ir {
            ops: Vec::new(),
            blocks: Vec::new(),
            names: Vec::new(),
            def: Vec::new(),
            user_ops: Vec::new(),
            pos: Vec::new(),
        };
        ir.add_op(func, None, &mut vec![HashMap::new()]);
        ir
    }

    fn fresh(&mut self, name: &str, index: u32) -> V {
        self.names.push((name.to_string(), index));
        self.def.push(None);
        self.names.len() - 1
    }

    /// The value a use names: the innermost visible definition (sibling regions may reuse a
    /// name), or a fresh undefined value.
    fn resolve(&mut self, scopes: &mut [Scope], v: &Value) -> V {
        let key = (v.name.clone(), v.index);
        if let Some(&id) = scopes.iter().rev().find_map(|s| s.get(&key)) {
            return id;
        }
        let id = self.fresh(&v.name, v.index);
        if let Some(s) = scopes.first_mut() {
            s.insert(key, id);
        }
        id
    }

    fn add_op(&mut self, op: &'a Op, block: Option<BlockIx>, scopes: &mut Vec<Scope>) -> OpIx {
        let ix = self.ops.len();
        self.ops.push(ONode {
            op,
            block,
            operands: Vec::new(),
            results: Vec::new(),
            regions: Vec::new(),
            erased: false,
        });
        let operands: Vec<V> = op_uses(op)
            .into_iter()
            .map(|v| self.resolve(scopes, v))
            .collect();
        self.ops[ix].operands = operands;
        let mut results = Vec::new();
        for r in &op.results {
            for k in 0..r.count.max(1) {
                let v = self.fresh(&r.name, k);
                self.def[v] = Some(Ok(ix));
                if let Some(s) = scopes.last_mut() {
                    s.insert((r.name.clone(), k), v);
                }
                results.push(v);
            }
        }
        self.ops[ix].results = results;
        let mut regions = Vec::new();
        for (ri, blocks) in region_blocks(op).into_iter().enumerate() {
            scopes.push(HashMap::new());
            let mut ids = Vec::new();
            for (bi, (b, args)) in blocks.into_iter().enumerate() {
                let bx = self.blocks.len();
                let args: Vec<V> = args
                    .into_iter()
                    .map(|a| {
                        let v = self.fresh(&a.name, a.index);
                        self.def[v] = Some(Err(bx));
                        if let Some(s) = scopes.last_mut() {
                            s.insert((a.name.clone(), a.index), v);
                        }
                        v
                    })
                    .collect();
                self.blocks.push(BNode {
                    parent: ix,
                    region: ri,
                    index: bi,
                    args,
                    ops: Vec::new(),
                });
                let ops: Vec<OpIx> = b
                    .ops
                    .iter()
                    .map(|o| self.add_op(o, Some(bx), scopes))
                    .collect();
                self.blocks[bx].ops = ops;
                ids.push(bx);
            }
            scopes.pop();
            regions.push(ids);
        }
        self.ops[ix].regions = regions;
        ix
    }

    /// The ops of a block and everything nested in them, post-order (children first).
    fn post_order(&self, b: BlockIx, out: &mut Vec<OpIx>) {
        for &o in &self.blocks[b].ops {
            for r in &self.ops[o].regions {
                for &cb in r {
                    self.post_order(cb, out);
                }
            }
            out.push(o);
        }
    }

    /// PlanMemory's greedy rewrite before planning, as far as it moves or removes values.
    fn greedy(&mut self) {
        let entry = self.ops[0].regions.first().and_then(|r| r.first().copied());
        let Some(entry) = entry else { return };
        let mut all = Vec::new();
        self.post_order(entry, &mut all);
        // constants: uniqued per (value, type), the survivors moved to the entry block's front
        let mut owned: HashSet<OpIx> = HashSet::new();
        let mut unique: HashMap<String, V> = HashMap::new();
        let mut replace: HashMap<V, V> = HashMap::new();
        for &o in &all {
            let OpKind::Constant { value, ty } = &self.ops[o].op.kind else {
                continue;
            };
            let key = const_key(value, ty);
            let Some(&res) = self.ops[o].results.first() else {
                continue;
            };
            if let Some(&first) = unique.get(&key) {
                replace.insert(res, first);
                self.erase(o);
                continue;
            }
            unique.insert(key, res);
            let b = self.ops[o].block.unwrap_or(entry);
            let pos = self.blocks[b].ops.iter().position(|&x| x == o);
            let stays = b == entry
                && match pos {
                    Some(0) => true,
                    Some(p) => owned.contains(&self.blocks[b].ops[p - 1]),
                    None => false,
                };
            if !stays {
                self.blocks[b].ops.retain(|&x| x != o);
                self.blocks[entry].ops.insert(0, o);
                self.ops[o].block = Some(entry);
            }
            owned.insert(o);
        }
        for node in &mut self.ops {
            for v in &mut node.operands {
                if let Some(&r) = replace.get(v) {
                    *v = r;
                }
            }
        }
        self.fold_constants(entry, &all, &mut unique);
        // trivially dead ops, to a fixpoint
        loop {
            let mut used: HashSet<V> = HashSet::new();
            for node in self.ops.iter().filter(|n| !n.erased) {
                used.extend(node.operands.iter().copied());
            }
            let dead: Vec<OpIx> = (0..self.ops.len())
                .filter(|&o| {
                    let n = &self.ops[o];
                    !n.erased
                        && n.block.is_some()
                        && removable(n.op)
                        && n.results.iter().all(|r| !used.contains(r))
                })
                .collect();
            if dead.is_empty() {
                break;
            }
            for o in dead {
                self.erase(o);
            }
        }
    }

    /// The greedy driver's folds of integer `arith` ops whose operands are all constants
    /// (`arith.cmpi ne, %c1, %c0` of an `scf.if` on a constant condition): the driver pops
    /// its worklist from the back of the post-order, so the last such op folds first; each
    /// result becomes a constant at the entry block's front (`OperationFolder` inserts there),
    /// or the equal constant already there. Such a constant is live from the block's start,
    /// so it lengthens every shuffled live set up to its use. `unique` maps each constant's
    /// key to its value.
    fn fold_constants(&mut self, entry: BlockIx, all: &[OpIx], unique: &mut HashMap<String, V>) {
        // the known integer constants: value and type, by SSA value
        let mut known: HashMap<V, (i128, Type)> = HashMap::new();
        for &o in all {
            if self.ops[o].erased {
                continue;
            }
            if let (
                OpKind::Constant {
                    value: Attr::Int { value, .. },
                    ty,
                },
                Some(&r),
            ) = (&self.ops[o].op.kind, self.ops[o].results.first())
            {
                known.insert(r, (*value, ty.clone()));
            }
        }
        let mut replace: HashMap<V, V> = HashMap::new();
        // a fold makes its users foldable: they are revisited until nothing changes
        let mut changed = true;
        while changed {
            changed = false;
            for &o in all.iter().rev() {
                let node = &self.ops[o];
                if node.erased || node.block.is_none() || node.operands.is_empty() {
                    continue;
                }
                let Some(&res) = node.results.first() else {
                    continue;
                };
                let args: Option<Vec<(i128, Type)>> = node
                    .operands
                    .iter()
                    .map(|v| known.get(replace.get(v).unwrap_or(v)).cloned())
                    .collect();
                let Some(args) = args else { continue };
                let OpKind::Scalar { predicate, .. } = &node.op.kind else {
                    continue;
                };
                let Some(folded) = fold_int(&node.op.name, predicate.as_deref(), &args) else {
                    continue;
                };
                let key = int_key(folded.0, &folded.1);
                if let Some(&existing) = unique.get(&key) {
                    replace.insert(res, existing);
                    self.erase(o);
                } else {
                    // the op itself stands for the new constant: no operands, at the front
                    unique.insert(key, res);
                    known.insert(res, folded);
                    let b = self.ops[o].block.unwrap_or(entry);
                    self.blocks[b].ops.retain(|&x| x != o);
                    self.blocks[entry].ops.insert(0, o);
                    self.ops[o].block = Some(entry);
                    self.ops[o].operands.clear();
                }
                changed = true;
            }
        }
        for node in &mut self.ops {
            for v in &mut node.operands {
                if let Some(&r) = replace.get(v) {
                    *v = r;
                }
            }
        }
    }

    fn erase(&mut self, o: OpIx) {
        self.ops[o].erased = true;
        if let Some(b) = self.ops[o].block {
            self.blocks[b].ops.retain(|&x| x != o);
        }
    }

    /// Users and positions, once the IR no longer changes.
    fn index(&mut self) {
        self.user_ops = vec![Vec::new(); self.names.len()];
        for (o, n) in self.ops.iter().enumerate() {
            if n.erased {
                continue;
            }
            for &v in &n.operands {
                if self.user_ops[v].last() != Some(&o) {
                    self.user_ops[v].push(o);
                }
            }
        }
        self.pos = vec![0; self.ops.len()];
        for b in &self.blocks {
            for (i, &o) in b.ops.iter().enumerate() {
                self.pos[o] = i;
            }
        }
    }

    fn pos_in_block(&self, o: OpIx) -> usize {
        self.pos[o]
    }

    /// The op of block `b` that is `o` or holds it.
    fn ancestor_in(&self, b: BlockIx, mut o: OpIx) -> Option<OpIx> {
        loop {
            let ob = self.ops[o].block?;
            if ob == b {
                return Some(o);
            }
            o = self.blocks[ob].parent;
        }
    }

    fn users(&self, v: V) -> Vec<OpIx> {
        self.user_ops[v].clone()
    }

    /// MLIR `Liveness` for every block: live-ins in `in()` order, live-outs.
    fn liveness(&mut self) -> Vec<BlockLive> {
        let mut out: Vec<BlockLive> = (0..self.blocks.len())
            .map(|_| BlockLive::default())
            .collect();
        for (b, live) in out.iter_mut().enumerate() {
            if self.ops[self.blocks[b].parent].erased {
                continue;
            }
            let mut order = Vec::new();
            self.post_order(b, &mut order);
            let mut uses: Vec<V> = Vec::new();
            let mut defs: Vec<V> = self.blocks[b].args.clone();
            let mut big_use = false;

            let add = |set: &mut Vec<V>, v: V| {
                if !set.contains(&v) {
                    set.push(v);
                }
            };
            let push = |set: &mut Vec<V>, big: &mut bool, v: V| {
                if !set.contains(&v) {
                    set.push(v);
                    if set.len() > 16 {
                        *big = true;
                    }
                }
            };
            for &o in &order {
                for &r in &self.ops[o].results {
                    add(&mut defs, r);
                }
                for &u in &self.ops[o].operands {
                    push(&mut uses, &mut big_use, u);
                }
                for r in &self.ops[o].regions {
                    for &cb in r {
                        for &a in &self.blocks[cb].args {
                            add(&mut defs, a);
                        }
                    }
                }
            }
            // llvm::set_subtract(useValues, defValues), LLVM 19: over the smaller set; a
            // small-mode SmallPtrSet erases by moving its last element into the hole
            let def_set: HashSet<V> = defs.iter().copied().collect();
            if uses.len() < defs.len() {
                let mut i = 0;
                while i < uses.len() {
                    if def_set.contains(&uses[i]) {
                        uses.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
            } else {
                for d in &defs {
                    if let Some(i) = uses.iter().position(|u| u == d) {
                        uses.swap_remove(i);
                    }
                }
            }
            let multi = self.ops[self.blocks[b].parent]
                .regions
                .get(self.blocks[b].region)
                .is_some_and(|r| r.len() > 1);
            live.unordered = if big_use {
                Some("a block uses more than 16 values: LLVM iterates its live-ins in pointer-hash order")
            } else if multi {
                Some("a block of a multi-block region: live-in order not emulated")
            } else {
                None
            };
            live.ins_set = uses.iter().copied().collect();
            live.ins = uses;
        }
        // live-outs: values of a block used in another block of its region (cf branches)
        for b in 0..self.blocks.len() {
            let region_blocks = &self.ops[self.blocks[b].parent].regions[self.blocks[b].region];
            if region_blocks.len() < 2 {
                continue;
            }
            let mut defined: Vec<V> = self.blocks[b].args.clone();
            for &o in &self.blocks[b].ops {
                defined.extend(self.ops[o].results.iter().copied());
            }
            for v in defined {
                let escapes = self.users(v).into_iter().any(|u| {
                    region_blocks
                        .iter()
                        .any(|&rb| rb != b && self.ancestor_in(rb, u).is_some())
                });
                if escapes {
                    out[b].outs.insert(v);
                }
            }
            // and every live-in of another block of the region (one pass: cf regions here are
            // small, and the order of these is not emulated anyway)
            for &rb in region_blocks {
                if rb != b {
                    let ins = out[rb].ins.clone();
                    out[b].outs.extend(ins);
                }
            }
        }
        out
    }
}

/// Ops the greedy rewrite erases when nothing uses their results.
/// The uniquing key of a constant: an integer by its value and type (so a folded `true`
/// meets a written one), anything else by its text.
fn const_key(value: &Attr, ty: &Type) -> String {
    match value {
        Attr::Int { value, .. } => int_key(*value, ty),
        _ => format!("{value:?}|{ty:?}"),
    }
}

fn int_key(value: i128, ty: &Type) -> String {
    format!("int {value}|{ty:?}")
}

/// `arith`'s fold of an integer op on constants, as far as npusim's programs write them;
/// `None` for anything else (no fold: the op stays where it is).
fn fold_int(name: &str, predicate: Option<&str>, args: &[(i128, Type)]) -> Option<(i128, Type)> {
    let [(a, ty), (b, _)] = args else {
        return None;
    };
    let (a, b) = (*a, *b);
    let int = |v: i128| Some((v, ty.clone()));
    match name {
        "arith.cmpi" => {
            let unsigned = a >= 0 && b >= 0;
            let r = match predicate? {
                "eq" => a == b,
                "ne" => a != b,
                "slt" => a < b,
                "sle" => a <= b,
                "sgt" => a > b,
                "sge" => a >= b,
                "ult" if unsigned => a < b,
                "ule" if unsigned => a <= b,
                "ugt" if unsigned => a > b,
                "uge" if unsigned => a >= b,
                _ => return None,
            };
            Some((
                i128::from(r),
                Type::Int {
                    bits: 1,
                    signed: None,
                },
            ))
        }
        // small values only: a wrapped result would need the type's width
        _ if a.abs() > 1 << 40 || b.abs() > 1 << 40 => None,
        "arith.addi" => int(a + b),
        "arith.subi" => int(a - b),
        "arith.muli" => int(a * b),
        "arith.floordivsi" if b != 0 => int(a / b - i128::from(a % b != 0 && (a < 0) != (b < 0))),
        _ => None,
    }
}

fn removable(op: &Op) -> bool {
    match &op.kind {
        // a load only reads: unused, it is dead too
        OpKind::Constant { .. }
        | OpKind::Scalar { .. }
        | OpKind::View { .. }
        | OpKind::MemLoad { .. } => true,
        OpKind::Alloc { .. } => op.name == "memref.alloc" || op.name == "memref.alloca",
        _ => false,
    }
}

struct OpInfo {
    op: OpIx,
    gen: Vec<V>,
    kill: Vec<V>,
}

struct Walk<'a, 'b> {
    ir: &'b Ir<'a>,
    live: Vec<BlockLive>,
    rng: Mt19937,
    status: HashMap<V, Status>,
    alias: HashMap<V, Vec<V>>,
    infos: Vec<OpInfo>,
    inexact: Vec<String>,
}

impl Walk<'_, '_> {
    fn aliases(&self, v: V) -> Vec<V> {
        let mut out: Vec<V> = Vec::new();
        for &a in self.alias.get(&v).map(|x| x.as_slice()).unwrap_or(&[]) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }

    fn with_self(&self, v: V) -> Vec<V> {
        let mut a = self.aliases(v);
        if !a.contains(&v) {
            a.push(v);
        }
        a
    }

    fn update_alias(&mut self, buffer: V, alias_buffer: V) {
        let buffers = self.with_self(buffer);
        let others = self.with_self(alias_buffer);
        for &x in &buffers {
            for &y in &others {
                let e = self.alias.entry(x).or_default();
                if !e.contains(&y) {
                    e.push(y);
                }
            }
        }
        for &y in &others {
            for &x in &buffers {
                let e = self.alias.entry(y).or_default();
                if !e.contains(&x) {
                    e.push(x);
                }
            }
        }
        let alloc_like = matches!(self.ir.def[buffer], Some(Ok(o)) if is_alloc(self.ir.ops[o].op));
        if !alloc_like {
            self.status.insert(buffer, Status::Undefined);
        }
    }

    fn linear(&mut self, op: OpIx) -> usize {
        self.infos.push(OpInfo {
            op,
            gen: Vec::new(),
            kill: Vec::new(),
        });
        self.infos.len() - 1
    }

    fn gen(&mut self, info: usize, values: &[V]) {
        for &v in values {
            for b in self.with_self(v) {
                if self.status.get(&b) == Some(&Status::Defined) {
                    self.infos[info].gen.push(b);
                    self.status.insert(b, Status::Gened);
                }
            }
        }
    }

    /// `currentlyLiveValuesOrdered`: the values live at `op` in its block, in order.
    fn live_at(&self, op: OpIx) -> Vec<V> {
        let ir = self.ir;
        let b = ir.ops[op].block.expect("a nested op");
        let bl = &self.live[b];
        let ops = &ir.blocks[b].ops;
        let at = ir.pos_in_block(op);
        let mut set: Vec<V> = Vec::new();
        let consider = |v: V, set: &mut Vec<V>| {
            let start = if bl.ins_set.contains(&v) || matches!(ir.def[v], Some(Err(db)) if db == b)
            {
                0
            } else {
                match ir.def[v] {
                    Some(Ok(d)) => match ir.ancestor_in(b, d) {
                        Some(a) => ir.pos_in_block(a),
                        None => return,
                    },
                    _ => return,
                }
            };
            let end = if bl.outs.contains(&v) {
                ops.len().saturating_sub(1)
            } else {
                let mut end = start;
                for u in ir.users(v) {
                    if let Some(a) = ir.ancestor_in(b, u) {
                        end = end.max(ir.pos_in_block(a));
                    }
                }
                end
            };
            if start <= at && at <= end && !set.contains(&v) {
                set.push(v);
            }
        };
        for &a in &ir.blocks[b].args {
            consider(a, &mut set);
        }
        for &v in &bl.ins {
            consider(v, &mut set);
        }
        for &o in &ops[..=at] {
            for &r in &ir.ops[o].results {
                consider(r, &mut set);
            }
        }
        set
    }

    fn shuffled_live(&mut self, op: OpIx) -> Vec<V> {
        let mut v = self.live_at(op);
        // the live-ins' order matters only for a live-in a kill or a gen can reach (a buffer
        // or an alias of one): the others only shift positions among themselves
        let b = self.ir.ops[op].block.expect("a nested op");
        if let Some(why) = self.live[b].unordered {
            let ins: Vec<V> = v
                .iter()
                .copied()
                .filter(|x| self.live[b].ins_set.contains(x))
                .collect();
            let reached = ins
                .iter()
                .any(|x| self.status.contains_key(x) || self.alias.contains_key(x));
            if ins.len() > 1 && reached && !self.inexact.iter().any(|w| w == why) {
                self.inexact.push(why.to_string());
            }
        }
        self.rng.shuffle(&mut v);
        v
    }

    fn kill_handle(&mut self, info: usize) {
        let op = self.infos[info].op;
        for v in self.shuffled_live(op) {
            self.kill_info(info, v);
        }
    }

    fn kill_info(&mut self, info: usize, v: V) {
        let op = self.infos[info].op;
        let aliases = self.with_self(v);
        for &a in &aliases {
            let Some(&st) = self.status.get(&a) else {
                // PlanMemory returns here, leaving the rest of the aliases alone
                return;
            };
            if st == Status::Gened && self.dominated(a, op) && self.all_dead_after(op, &aliases) {
                self.infos[info].kill.push(a);
                self.status.insert(a, Status::Killed);
            }
        }
    }

    /// `isParentOpDominate(def, op)`: `op`'s parent holds the def's parent.
    fn dominated(&self, v: V, op: OpIx) -> bool {
        let ir = self.ir;
        let Some(Ok(d)) = ir.def[v] else { return false };
        let (Some(db), Some(ob)) = (ir.ops[d].block, ir.ops[op].block) else {
            return false;
        };
        let op_parent = ir.blocks[ob].parent;
        let mut p = ir.blocks[db].parent;
        loop {
            if p == op_parent {
                return true;
            }
            match ir.ops[p].block {
                Some(b) => p = ir.blocks[b].parent,
                None => return false,
            }
        }
    }

    fn all_dead_after(&self, op: OpIx, aliases: &[V]) -> bool {
        aliases
            .iter()
            .all(|&a| self.dead_after(a, op) && self.dead_after_op(a, op))
    }

    /// `Liveness::isDeadAfter`: no use after `op` in its block, and not live-out.
    fn dead_after(&self, v: V, op: OpIx) -> bool {
        let ir = self.ir;
        let b = ir.ops[op].block.expect("a nested op");
        if self.live[b].outs.contains(&v) {
            return false;
        }
        let at = ir.pos_in_block(op);
        ir.users(v)
            .into_iter()
            .filter_map(|u| ir.ancestor_in(b, u))
            .all(|a| ir.pos_in_block(a) <= at)
    }

    /// PlanMemory's `IsDeadAfterOp`: no use after `op` at any level around it.
    fn dead_after_op(&self, v: V, op: OpIx) -> bool {
        let ir = self.ir;
        // each enclosing block: the op of the chain in it, and that op's child in the chain
        let mut chain: HashMap<BlockIx, OpIx> = HashMap::new();
        let mut child_of: HashMap<OpIx, OpIx> = HashMap::new();
        let mut prev: Option<OpIx> = None;
        let mut o = op;
        while let Some(b) = ir.ops[o].block {
            chain.entry(b).or_insert(o);
            if let Some(c) = prev {
                child_of.insert(o, c);
            }
            prev = Some(o);
            o = ir.blocks[b].parent;
        }
        for user in ir.users(v) {
            let mut user_child: Option<OpIx> = None;
            let mut a = user;
            while let Some(ab) = ir.ops[a].block {
                if let Some(&cur) = chain.get(&ab) {
                    if cur == a {
                        if let (Some(uc), Some(&cc)) = (user_child, child_of.get(&cur)) {
                            let (ub, cb) = (ir.ops[uc].block, ir.ops[cc].block);
                            if let (Some(ub), Some(cb)) = (ub, cb) {
                                if self.block_after(ub, cb) {
                                    return false;
                                }
                            }
                        }
                    }
                    if ir.pos_in_block(cur) < ir.pos_in_block(a) {
                        return false;
                    }
                    break;
                }
                user_child = Some(a);
                a = ir.blocks[ab].parent;
            }
        }
        true
    }

    fn block_after(&self, after: BlockIx, before: BlockIx) -> bool {
        let (a, b) = (&self.ir.blocks[after], &self.ir.blocks[before]);
        if after == before {
            return false;
        }
        if a.parent == b.parent && a.region == b.region {
            return a.index > b.index;
        }
        b.region < a.region
    }

    fn region(&mut self, blocks: &[BlockIx]) {
        for &b in blocks {
            let ops = self.ir.blocks[b].ops.clone();
            for o in ops {
                self.visit(o);
            }
        }
    }

    fn yield_values(&self, block: BlockIx) -> Vec<V> {
        let ir = self.ir;
        match ir.blocks[block].ops.last() {
            Some(&t) if matches!(ir.ops[t].op.kind, OpKind::Yield { .. }) => {
                ir.ops[t].operands.clone()
            }
            _ => Vec::new(),
        }
    }

    fn visit(&mut self, o: OpIx) {
        let ir = self.ir;
        let node = &ir.ops[o];
        let op = node.op;
        match &op.kind {
            OpKind::If { .. } => {
                self.linear(o);
                let regions = node.regions.clone();
                if let Some(then) = regions.first() {
                    self.region(then);
                }
                let mut end = self.linear(o);
                if let Some(&tb) = regions.first().and_then(|r| r.first()) {
                    for (r, y) in node.results.iter().zip(self.yield_values(tb)) {
                        self.update_alias(*r, y);
                    }
                }
                if let Some(els) = regions.get(1).filter(|r| !r.is_empty()) {
                    self.region(els);
                    end = self.linear(o);
                    for (r, y) in node.results.iter().zip(self.yield_values(els[0])) {
                        self.update_alias(*r, y);
                    }
                }
                self.kill_handle(end);
                return;
            }
            OpKind::For { iter_args, .. } => {
                let begin = self.linear(o);
                let live = self.loop_buffers(o);
                self.gen(begin, &live);
                let body = node.regions.first().and_then(|r| r.first()).copied();
                if let Some(body) = body {
                    let args = ir.blocks[body].args.clone();
                    for (i, _) in iter_args.iter().enumerate() {
                        if let (Some(&a), Some(&init)) = (args.get(i + 1), node.operands.get(3 + i))
                        {
                            self.update_alias(a, init);
                        }
                    }
                    // `UpdateForOpBufferAlias` returns early for a loop without results
                    if !node.results.is_empty() {
                        let yielded = self.yield_values(body);
                        for (i, &y) in yielded.iter().enumerate() {
                            if let Some(&a) = args.get(i + 1) {
                                self.update_alias(y, a);
                            }
                        }
                        for (r, &y) in node.results.iter().zip(&yielded) {
                            self.update_alias(*r, y);
                        }
                    }
                    self.region(&[body]);
                }
                let end = self.linear(o);
                self.kill_handle(end);
                return;
            }
            OpKind::While { .. } => {
                let begin = self.linear(o);
                let live = self.loop_buffers(o);
                self.gen(begin, &live);
                let regions = node.regions.clone();
                if let Some(&bb) = regions.first().and_then(|r| r.first()) {
                    let args = ir.blocks[bb].args.clone();
                    for (a, &init) in args.iter().zip(&node.operands) {
                        self.update_alias(*a, init);
                    }
                }
                for r in &regions {
                    self.region(r);
                }
                // `UpdateWhileOpBufferAlias` returns early for a loop without results
                let after = regions.get(1).and_then(|r| r.first()).copied();
                if let Some(ab) = after.filter(|_| !node.results.is_empty()) {
                    let after_args = ir.blocks[ab].args.clone();
                    let yielded = self.yield_values(ab);
                    if let Some(&bb) = regions.first().and_then(|r| r.first()) {
                        let args = ir.blocks[bb].args.clone();
                        for (y, a) in yielded.iter().zip(&args) {
                            self.update_alias(*y, *a);
                        }
                    }
                    for (r, a) in node.results.iter().zip(&after_args) {
                        self.update_alias(*r, *a);
                    }
                }
                let end = self.linear(o);
                self.kill_handle(end);
                return;
            }
            OpKind::Scope { .. } if op.name == "scope.scope" => {
                self.linear(o);
                let regions = node.regions.clone();
                if let Some(r) = regions.first() {
                    self.region(r);
                    if let Some(&b) = r.first() {
                        for (res, y) in node.results.iter().zip(self.yield_values(b)) {
                            self.update_alias(*res, y);
                        }
                    }
                }
                let end = self.linear(o);
                self.kill_handle(end);
                return;
            }
            _ => {}
        }
        let info = self.linear(o);
        match &op.kind {
            OpKind::View { .. } => {
                if let (Some(&r), Some(&src)) = (node.results.first(), node.operands.first()) {
                    self.update_alias(r, src);
                }
            }
            OpKind::Scope { .. } => {
                // another single-region op: its ops are walked in place, as MLIR's pre-order
                // walk does
                let regions = node.regions.clone();
                for r in &regions {
                    self.region(r);
                }
            }
            OpKind::Alloc { .. } if op.name == "memref.alloc" => {
                for &r in &node.results {
                    self.status.entry(r).or_insert(Status::Defined);
                }
            }
            OpKind::MemLoad { .. } => self.kill_handle(info),
            OpKind::MemStore { .. } => {
                if let Some(&m) = node.operands.get(1) {
                    self.gen(info, &[m]);
                }
                self.kill_handle(info);
            }
            OpKind::Dps { outs, groups, .. } => {
                let n_ins = node.operands.len()
                    - outs.len()
                    - groups.iter().map(|(_, g)| g.len()).sum::<usize>();
                let inits: Vec<V> = node.operands[n_ins..n_ins + outs.len()].to_vec();
                self.gen(info, &inits);
                let mut at = n_ins + outs.len();
                let mut temps = Vec::new();
                for (name, g) in groups {
                    if name == "temp_buffer" {
                        temps.extend_from_slice(&node.operands[at..at + g.len()]);
                    }
                    at += g.len();
                }
                self.gen(info, &temps);
                self.kill_handle(info);
            }
            OpKind::Scalar { .. } if op.name == "arith.select" => {
                if let (Some(&r), [_, t, f, ..]) = (node.results.first(), node.operands.as_slice())
                {
                    self.update_alias(r, *t);
                    self.update_alias(r, *f);
                }
                self.kill_handle(info);
            }
            OpKind::Mark { .. } => {
                if let Some(alloc) = node.operands.first().and_then(|&v| self.alloc_of(v)) {
                    self.kill_info(info, alloc);
                }
            }
            OpKind::Condition { .. } => {
                let parent = ir.blocks[node.block.expect("a nested op")].parent;
                if let Some(&ab) = ir.ops[parent].regions.get(1).and_then(|r| r.first()) {
                    let after_args = ir.blocks[ab].args.clone();
                    for (a, &c) in after_args.iter().zip(node.operands.iter().skip(1)) {
                        self.update_alias(*a, c);
                    }
                }
            }
            OpKind::Opaque { .. } if op.name == "hivm.hir.debug" => self.kill_handle(info),
            _ => {}
        }
    }

    /// `utils::tracebackMemRefToAlloc`: through views to the alloc.
    fn alloc_of(&self, mut v: V) -> Option<V> {
        let ir = self.ir;
        for _ in 0..ir.ops.len() + 1 {
            match ir.def[v] {
                Some(Ok(d)) if is_alloc(ir.ops[d].op) => return Some(v),
                Some(Ok(d)) if matches!(ir.ops[d].op.kind, OpKind::View { .. }) => {
                    v = *ir.ops[d].operands.first()?;
                }
                _ => return None,
            }
        }
        None
    }

    /// `GetLiveBuffersInLoop`.
    fn loop_buffers(&mut self, o: OpIx) -> Vec<V> {
        let mut out = Vec::new();
        for v in self.shuffled_live(o) {
            for b in self.with_self(v) {
                if self.status.contains_key(&b) {
                    out.push(b);
                }
            }
        }
        out
    }
}

fn is_alloc(op: &Op) -> bool {
    matches!(op.kind, OpKind::Alloc { .. }) && op.name == "memref.alloc"
}

/// HIVM's kill and loop-gen orders for `func` (a `func.func` op) with shuffle seed `seed`.
pub fn orders(func: &Op, seed: u32) -> Orders {
    let mut ir = Ir::build(func);
    ir.greedy();
    ir.index();
    let live = ir.liveness();
    let mut walk = Walk {
        ir: &ir,
        live,
        rng: Mt19937::new(seed),
        status: HashMap::new(),
        alias: HashMap::new(),
        infos: Vec::new(),
        inexact: Vec::new(),
    };
    if let Some(blocks) = ir.ops[0].regions.first().cloned() {
        walk.region(&blocks);
    }
    let name = |v: V| Alloc {
        name: ir.names[v].0.clone(),
        at: match ir.def[v] {
            Some(Ok(o)) => ir.ops[o].op.name_pos,
            _ => Pos::default(),
        },
    };
    let mut out = Orders {
        inexact: walk.inexact.clone(),
        ..Orders::default()
    };
    let mut seen_loop: HashSet<OpIx> = HashSet::new();
    for info in &walk.infos {
        let op = ir.ops[info.op].op;
        let is_loop = matches!(op.kind, OpKind::For { .. } | OpKind::While { .. });
        if is_loop && seen_loop.insert(info.op) {
            out.loop_gens
                .push((op.name_pos, info.gen.iter().map(|&v| name(v)).collect()));
        } else if !info.kill.is_empty() {
            out.kills
                .push((op.name_pos, info.kill.iter().map(|&v| name(v)).collect()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_folds_follow_arith_semantics() {
        let ix = |v: i128| (v, Type::Index);
        let i1 = |v: i128| {
            Some((
                v,
                Type::Int {
                    bits: 1,
                    signed: None,
                },
            ))
        };
        // floordivsi rounds toward negative infinity: -7 / 2 = -4, 7 / -2 = -4, -8 / 2 = -4
        let fdiv = |a, b| fold_int("arith.floordivsi", None, &[ix(a), ix(b)]).map(|r| r.0);
        assert_eq!(fdiv(-7, 2), Some(-4));
        assert_eq!(fdiv(7, -2), Some(-4));
        assert_eq!(fdiv(-8, 2), Some(-4));
        assert_eq!(fdiv(7, 2), Some(3));
        assert_eq!(fdiv(7, 0), None);
        assert_eq!(fold_int("arith.cmpi", Some("ne"), &[ix(1), ix(0)]), i1(1));
        assert_eq!(fold_int("arith.cmpi", Some("sge"), &[ix(-1), ix(0)]), i1(0));
        // an unsigned compare of a negative value would need the type's width: no fold
        assert_eq!(fold_int("arith.cmpi", Some("ult"), &[ix(-1), ix(0)]), None);
        assert_eq!(
            fold_int("arith.subi", None, &[ix(3), ix(5)]),
            Some((-2, Type::Index))
        );
        // not an op the folds cover: it stays where it is
        assert_eq!(fold_int("arith.divui", None, &[ix(4), ix(2)]), None);
    }

    #[test]
    fn a_folded_condition_is_live_from_the_functions_front() {
        // `%t` folds to `true` at the entry block's front, so it is live at the loop: the
        // loop's set is [a true c2 c1 c4 c0 p q] (the hoisted constants reversed, c2 from the
        // loop first), which seed 0 shuffles as [0 2 1 5 3 6 4 7]: p (6) before q (7).
        // Without the fold the set is [a c2 c1 c4 c0 p q], shuffled [2 4 6 0 5 1 3]: q first.
        // Written as `%t = arith.constant true` at the top, p and q hold the same places.
        let body = |cond: &str, top: &str| {
            format!(
                "func.func @f(%a: memref<256xf16, #hivm.address_space<gm>>) {{
  {top}
  %p = memref.alloc() : memref<256xf16, #hivm.address_space<ub>>
  %q = memref.alloc() : memref<256xf16, #hivm.address_space<ub>>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {{
    %c2 = arith.constant 2 : index
    %s = memref.subview %a[%c2] [128] [1] : memref<256xf16, #hivm.address_space<gm>> to memref<128xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>
    %ps = memref.subview %p[0] [128] [1] : memref<256xf16, #hivm.address_space<ub>> to memref<128xf16, strided<[1]>, #hivm.address_space<ub>>
    hivm.hir.load ins(%s : memref<128xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>) outs(%ps : memref<128xf16, strided<[1]>, #hivm.address_space<ub>>)
  }}
  {cond}
  scf.if %t {{
    hivm.hir.vexp ins(%p : memref<256xf16, #hivm.address_space<ub>>) outs(%q : memref<256xf16, #hivm.address_space<ub>>)
  }}
  return
}}
"
            )
        };
        let folded = run(&body("%t = arith.cmpi ne, %c1, %c0 : index", ""), 0);
        let written = run(&body("", "%t = arith.constant true"), 0);
        assert_eq!(gens(&folded)[0], ["p", "q"]);
        assert_eq!(gens(&written)[0], ["p", "q"]);
    }

    fn run(text: &str, seed: u32) -> Orders {
        let chunks = super::super::parse_file(text, "t.mlir").expect("parses");
        let funcs = super::super::lower::functions(&chunks);
        orders(funcs[0].1, seed)
    }

    fn kills(o: &Orders) -> Vec<Vec<&str>> {
        o.kills
            .iter()
            .map(|(_, k)| k.iter().map(|a| a.name.as_str()).collect())
            .collect()
    }

    const UB: &str = "memref<256xf16, #hivm.address_space<ub>>";
    const GM: &str = "memref<256xf16, #hivm.address_space<gm>>";

    /// Two loads, an add of both, a store: four shuffles, of the live sets
    /// [a b c x] at the first load, [b c x y] at the second, [c x y z] at the add, [c z] at the
    /// store (every value is live from its def to its last use, the op itself included).
    fn two_loads_and_an_add() -> String {
        format!(
            "func.func @f(%a: {GM}, %b: {GM}, %c: {GM}) {{\n\
             %x = memref.alloc() : {UB}\n\
             hivm.hir.load ins(%a : {GM}) outs(%x : {UB})\n\
             %y = memref.alloc() : {UB}\n\
             hivm.hir.load ins(%b : {GM}) outs(%y : {UB})\n\
             %z = memref.alloc() : {UB}\n\
             hivm.hir.vadd ins(%x, %y : {UB}, {UB}) outs(%z : {UB})\n\
             hivm.hir.store ins(%z : {UB}) outs(%c : {GM})\n\
             return\n}}\n"
        )
    }

    #[test]
    fn the_kill_order_at_an_op_is_its_shuffled_live_set() {
        // seed 0: libstdc++'s third shuffle of four is [0, 1, 3, 2]: [c x z y], so x dies
        // first; z dies at the store (the fourth shuffle)
        let o = run(&two_loads_and_an_add(), 0);
        assert_eq!(kills(&o), [vec!["x", "y"], vec!["z"]]);
        assert!(o.inexact.is_empty(), "{:?}", o.inexact);
        // seed 1: the third shuffle is [2, 3, 1, 0]: [y z x c], so y first
        let o = run(&two_loads_and_an_add(), 1);
        assert_eq!(kills(&o), [vec!["y", "x"], vec!["z"]]);
    }

    fn gens(o: &Orders) -> Vec<Vec<&str>> {
        o.loop_gens
            .iter()
            .map(|(_, g)| g.iter().map(|a| a.name.as_str()).collect())
            .collect()
    }

    /// Two buffers declared before a loop and first written in it; `inner` is the op that
    /// defines `%k` in the loop (a constant, or index arithmetic).
    fn loop_of_two(inner: &str) -> String {
        let gm2 = "memref<512xf16, #hivm.address_space<gm>>";
        let sv = "memref<256xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>";
        format!(
            "func.func @g(%a: {GM}, %c: {gm2}) {{\n\
             %c0 = arith.constant 0 : index\n\
             %c4 = arith.constant 4 : index\n\
             %c1 = arith.constant 1 : index\n\
             %p = memref.alloc() : {UB}\n\
             %q = memref.alloc() : {UB}\n\
             scf.for %i = %c0 to %c4 step %c1 {{\n\
             {inner}\n\
             %s = memref.subview %c[%k] [256] [1] : {gm2} to {sv}\n\
             hivm.hir.load ins(%a : {GM}) outs(%p : {UB})\n\
             hivm.hir.load ins(%a : {GM}) outs(%q : {UB})\n\
             hivm.hir.vadd ins(%p, %q : {UB}, {UB}) outs(%q : {UB})\n\
             hivm.hir.store ins(%q : {UB}) outs(%s : {sv})\n\
             }}\n\
             return\n}}\n"
        )
    }

    #[test]
    fn a_loop_gens_its_buffers_in_the_order_of_its_shuffled_live_set() {
        // The loop's start is the first shuffle. A constant in the loop is hoisted to the front
        // of the function (MLIR's folder), so the live set at the loop is
        // [a c k c0 c4 c1 p q]; seed 0 shuffles eight as [0, 2, 1, 5, 3, 6, 4, 7]: p (6) comes
        // before q (7). bishengir-opt puts %p at 0 and %q at 512.
        let o = run(&loop_of_two("%k = arith.constant 16 : index"), 0);
        assert_eq!(gens(&o), [vec!["p", "q"]]);
        // seed 1 shuffles eight as [1, 0, 2, 5, 7, 4, 6, 3]: q first
        let o = run(&loop_of_two("%k = arith.constant 16 : index"), 1);
        assert_eq!(gens(&o), [vec!["q", "p"]]);
        // index arithmetic stays in the loop: [a c c0 c4 c1 p q], and seed 0 shuffles seven as
        // [2, 4, 6, 0, 5, 1, 3]: q (6) before p (5); bishengir-opt puts %q at 0
        let o = run(&loop_of_two("%k = arith.addi %i, %c1 : index"), 0);
        assert_eq!(gens(&o), [vec!["q", "p"]]);
        assert!(o.inexact.is_empty(), "{:?}", o.inexact);
    }

    #[test]
    fn sibling_regions_may_reuse_a_name() {
        // two loops each define %t: each loop's kill is its own alloc (the two differ by
        // position), and nothing is reported inexact
        let text = format!(
            "func.func @h(%a: {GM}, %c: {GM}) {{\n\
             %c0 = arith.constant 0 : index\n\
             %c2 = arith.constant 2 : index\n\
             %c1 = arith.constant 1 : index\n\
             scf.for %i = %c0 to %c2 step %c1 {{\n\
             %t = memref.alloc() : {UB}\n\
             hivm.hir.load ins(%a : {GM}) outs(%t : {UB})\n\
             hivm.hir.store ins(%t : {UB}) outs(%c : {GM})\n\
             }}\n\
             scf.for %i = %c0 to %c2 step %c1 {{\n\
             %t = memref.alloc() : {UB}\n\
             hivm.hir.load ins(%a : {GM}) outs(%t : {UB})\n\
             hivm.hir.store ins(%t : {UB}) outs(%c : {GM})\n\
             }}\n\
             return\n}}\n"
        );
        let o = run(&text, 0);
        let killed: Vec<(u32, &str)> = o
            .kills
            .iter()
            .flat_map(|(_, k)| k.iter().map(|a| (a.at.line, a.name.as_str())))
            .collect();
        assert_eq!(killed, [(6, "t"), (11, "t")]);
    }

    /// A loop whose body uses 17 hoisted constants (plus the loop variable and `%f`): more
    /// than 16 values, so LLVM iterates the body's live-ins in pointer-hash order. The body
    /// stores into `target`.
    fn many_uses(outer_target: bool) -> String {
        let mut t = format!("func.func @k(%a: {GM}) {{\n");
        for k in 0..17 {
            t += &format!("%n{k} = arith.constant {} : index\n", 100 + k);
        }
        t += "%c0 = arith.constant 0 : index\n%c4 = arith.constant 4 : index\n";
        t += "%c1 = arith.constant 1 : index\n%f = arith.constant 1.0 : f16\n";
        t += &format!("%o = memref.alloc() : {UB}\nhivm.hir.load ins(%a : {GM}) outs(%o : {UB})\n");
        t += "scf.for %i = %c0 to %c4 step %c1 {\n%s0 = arith.addi %i, %n0 : index\n";
        for k in 1..17 {
            t += &format!("%s{k} = arith.addi %s{}, %n{k} : index\n", k - 1);
        }
        if outer_target {
            t += &format!("memref.store %f, %o[%s16] : {UB}\n");
        } else {
            t += &format!("%t = memref.alloc() : {UB}\nmemref.store %f, %t[%s16] : {UB}\n");
        }
        t += "}\nreturn\n}\n";
        t
    }

    #[test]
    fn pointer_hash_order_is_reported_only_where_it_can_change_an_order() {
        // at the store, the live-ins live are %f and %o: %o is a buffer, so its place among
        // them decides where it lands in the shuffle
        let o = run(&many_uses(true), 0);
        assert_eq!(o.inexact.len(), 1, "{:?}", o.inexact);
        assert!(o.inexact[0].contains("pointer-hash"), "{:?}", o.inexact);
        // with the buffer inside the loop only %f is a live-in there: nothing to misorder
        let o = run(&many_uses(false), 0);
        assert!(o.inexact.is_empty(), "{:?}", o.inexact);
    }
}
