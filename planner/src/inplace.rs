//! Op-level inplace reuse (docs/planner.md "Inplace"; HIVM PlanMemory's
//! `GenerateInplaceList` + `IsReuseHIVMOp` + `InplaceStallPipeline`).
//!
//! A vector op's output buffer (the *gen*, first written at this op) may take the address of an
//! input buffer (the *kill*) whose value dies at this op. Ops are visited in program order; an
//! accepted pair merges the gen's storage entry into the kill's *group*, so a later op can inplace
//! into a group formed by earlier pairs (a chain, test T01). Per op, outputs are tried largest
//! first and inputs in operand order; the first input that qualifies wins (HIVM shuffles its kill
//! list, §1.12; we do not, and the conformance TIE cases accept either choice).
//!
//! A pair is accepted when all of these hold:
//! - the op is a vector op (pipe V) with a position of its own;
//! - neither buffer is `inplace: false`, `unique`, an op's `tmp` (anywhere), in a `share:` group,
//!   `preload` or fixed (`at:`) — HIVM's `ignoreInplace` and its equivalents; and neither operand
//!   names a `select` view (a `select` is never an inplace target through the view). A select member
//!   named directly may still pair: HIVM marks select operands `ignoreInplace` globally, but our
//!   selects also stand for HIVM's block arguments, which it does inplace through (T68, T69), and
//!   liveness keeps every member alive wherever the select is used, so this is safe;
//! - the gen is first written (in program order) at this op, and the kill is read there;
//! - same scope, and `killBits >= genBits` (whole buffers, one slot);
//! - the kill's value dies at the op: its group is not live at the op's successor position, and
//!   the two groups' lifetimes share no position but the op's own (so nothing later rewrites the
//!   kill's bytes while the gen's value is alive, in any loop iteration);
//! - `IsReuseHIVMOp` (see [`reusable_op`]): same static element offset for the output and every
//!   input; `vadd vsub vmax vmin vor vand vmul` (and their `*s` scalar forms, which are the same
//!   HIVM ops) without broadcast or transpose always; otherwise at most one temp, which must be
//!   HIVM's scalar / on-the-fly-broadcast temp; elementwise ops only; no transpose; with a
//!   broadcast, gen and kill operand shapes equal; `vsel` never overwrites an i1 condition with
//!   64-bit data; else some input has the output's width, or a multiple of it (narrowing), and a
//!   narrowing `vcast` needs rank 1 on both sides (`npusim opt`: an output of rank 1 as the
//!   MLIR writes it, [`AsWritten`]);
//! - multi-buffer slots stay consistent (our addition, see `slots_compatible`);
//! - not the multi-buffer load→store stall: when both groups are multi-buffers and the gen's group
//!   reaches a `store` (MTE3 source) and the kill's group a `load` (MTE2 destination), the pair is
//!   refused and recorded in [`InplaceResult::touch`] (HIVM `inplacableBufferPairs`: level 0 may
//!   still let the two share their one common position, test T06).

use crate::liveness::{Interval, Liveness, OpPos};
use sim::program::{Index, OpKind, Operand, Program, Ref, VecForm, VecOp, VectorOp, ViewKind};
use sim::{BufferId, Dtype, OpId, Pipe};

/// One (gen, kill) pair at an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InplacePair {
    /// The output buffer, first written at `op`.
    pub gen: BufferId,
    /// The input buffer whose address the output takes.
    pub kill: BufferId,
    pub op: OpId,
    /// Slot count of the merged group after this pair (HIVM `multiBufferNum = max`): a single
    /// buffer inplaced into a multi-buffer becomes one (T29, T33). For a refused pair in
    /// [`InplaceResult::touch`], the larger of the two groups' counts.
    pub multi: u32,
}

/// The result of [`inplace_pairs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InplaceResult {
    /// Accepted pairs, in program order.
    pub pairs: Vec<InplacePair>,
    /// Pairs refused only by the multi-buffer load→store stall veto, in program order; they may
    /// touch at their one shared position at level 0 (HIVM `inplacableBufferPairs`, T06).
    pub touch: Vec<InplacePair>,
    /// Per liveness entry: the entry of its group (the entry every pair of the group merged
    /// into, the kill side, as HIVM's `MergeInplaceSE`). An entry not inplaced is its own group.
    pub group_of: Vec<usize>,
    /// Per liveness entry: the slot count of its group.
    pub multi: Vec<u32>,
}

impl InplaceResult {
    /// The group entry of a buffer.
    pub fn group(&self, live: &Liveness, b: BufferId) -> usize {
        self.group_of[live.entry_of[b.index()]]
    }

    /// Whether `a` and `b` are a refused multi-buffer pair allowed to touch at one position.
    pub fn may_touch(&self, a: BufferId, b: BufferId) -> bool {
        self.touch
            .iter()
            .any(|p| (p.gen, p.kill) == (a, b) || (p.gen, p.kill) == (b, a))
    }

    /// The accepted partner (kill) of a gen buffer, if any.
    pub fn kill_of(&self, gen: BufferId) -> Option<BufferId> {
        self.pairs.iter().find(|p| p.gen == gen).map(|p| p.kill)
    }
}

/// Per-group state while pairs are accepted (indexed by liveness entry; valid at group roots).
struct Groups {
    parent: Vec<usize>,
    lifetime: Vec<Vec<Interval>>,
    multi: Vec<u32>,
    /// Some member is the source of a `store` (through windows).
    stores: Vec<bool>,
    /// Some member is the destination of a `load` (through windows).
    loads: Vec<bool>,
    /// The entries of the group, so a rule over them does not scan every entry.
    members: Vec<Vec<usize>>,
}

impl Groups {
    fn find(&self, mut e: usize) -> usize {
        while self.parent[e] != e {
            e = self.parent[e];
        }
        e
    }

    /// Merges the gen group into the kill group.
    fn merge(&mut self, gen: usize, kill: usize) {
        let (g, k) = (self.find(gen), self.find(kill));
        if g == k {
            return;
        }
        self.parent[g] = k;
        let mut all = std::mem::take(&mut self.lifetime[g]);
        all.extend(self.lifetime[k].iter().copied());
        self.lifetime[k] = union(all);
        self.multi[k] = self.multi[k].max(self.multi[g]);
        self.stores[k] |= self.stores[g];
        self.loads[k] |= self.loads[g];
        let moved = std::mem::take(&mut self.members[g]);
        self.members[k].extend(moved);
    }
}

/// Sorted union of intervals; touching or adjacent intervals merge.
fn union(mut v: Vec<Interval>) -> Vec<Interval> {
    v.sort();
    let mut out: Vec<Interval> = Vec::new();
    for i in v {
        match out.last_mut() {
            Some(last) if i.first <= last.last + 1 => last.last = last.last.max(i.last),
            _ => out.push(i),
        }
    }
    out
}

/// Whether two lifetimes share no position except `p`.
fn meet_only_at(a: &[Interval], b: &[Interval], p: usize) -> bool {
    a.iter().all(|x| {
        b.iter().all(|y| {
            let first = x.first.max(y.first);
            let last = x.last.min(y.last);
            first > last || (first == p && last == p)
        })
    })
}

fn covers(life: &[Interval], p: usize) -> bool {
    life.iter().any(|i| i.first <= p && p <= i.last)
}

/// Buffers a window chain (or a buffer) names; empty for tensors and `select` views.
fn window_root(program: &Program, r: Ref) -> Option<BufferId> {
    match r {
        Ref::Buffer(b) => Some(b),
        Ref::Tensor(_) => None,
        Ref::View(v) => match &program.view(v).kind {
            ViewKind::Window { of, .. } => window_root(program, *of),
            ViewKind::Select { .. } => None,
        },
    }
}

/// The buffers a `select` view names (through windows over it: none), in its order.
fn select_members(program: &Program, r: Ref) -> Vec<BufferId> {
    match r {
        Ref::View(v) => match &program.view(v).kind {
            ViewKind::Select { of } => of.clone(),
            ViewKind::Window { .. } => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The shape of an operand's base (buffer or view).
fn base_shape(program: &Program, r: Ref) -> Vec<u64> {
    match r {
        Ref::Buffer(b) => program.buffer(b).shape.clone(),
        Ref::View(v) => program.view(v).shape.clone(),
        Ref::Tensor(t) => program.tensor(t).shape.clone(),
    }
}

/// The shape an operand denotes (indexed dimensions dropped), when every extent is constant.
fn operand_shape(program: &Program, o: &Operand) -> Option<Vec<u64>> {
    let base = base_shape(program, o.base);
    let mut out = Vec::new();
    for (d, &extent) in base.iter().enumerate() {
        match o.indices.get(d) {
            None => out.push(extent),
            Some(Index::At(_)) => {}
            Some(Index::Slice { start, end }) => {
                let (s, e) = (start.as_const()?, end.as_const()?);
                out.push(u64::try_from(e - s).ok()?);
            }
        }
    }
    Some(out)
}

/// The element offset of a base from its root buffer, when constant.
fn base_offset(program: &Program, r: Ref) -> Option<i64> {
    match r {
        Ref::Buffer(_) => Some(0),
        Ref::Tensor(_) => None,
        Ref::View(v) => match &program.view(v).kind {
            ViewKind::Window { of, offset } => {
                Some(base_offset(program, *of)? + offset.as_const()?)
            }
            // a select names whole buffers
            ViewKind::Select { .. } => Some(0),
        },
    }
}

/// The static element offset of an operand in its root buffer (HIVM `getStaticOffset`);
/// `None` when some part is dynamic (we then refuse: conservative).
fn static_offset(program: &Program, o: &Operand) -> Option<i64> {
    let base = base_shape(program, o.base);
    let mut off = base_offset(program, o.base)?;
    let mut stride: i64 = 1;
    let mut strides = vec![0i64; base.len()];
    for d in (0..base.len()).rev() {
        strides[d] = stride;
        stride = stride.saturating_mul(base[d] as i64);
    }
    for (d, idx) in o.indices.iter().enumerate() {
        let start = match idx {
            Index::At(e) => e.as_const()?,
            Index::Slice { start, .. } => start.as_const()?,
        };
        off += start * strides.get(d).copied().unwrap_or(0);
    }
    Some(off)
}

/// The rank of an operand (indexed dimensions dropped).
fn operand_rank(program: &Program, o: &Operand) -> usize {
    let base = base_shape(program, o.base).len();
    let dropped = o
        .indices
        .iter()
        .filter(|i| matches!(i, Index::At(_)))
        .count();
    base - dropped
}

/// HIVM's ISA-inplace list (`vadds` etc. are HIVM's `vadd` with a scalar operand).
fn isa_inplace(op: VecOp) -> bool {
    use VecOp::*;
    matches!(
        op,
        Vadd | Vsub | Vmax | Vmin | Vor | Vand | Vmul | Vadds | Vmuls | Vmaxs | Vmins
    )
}

/// HIVM's ops whose single temp may be the scalar / on-the-fly broadcast temp
/// (`ENABLE_OP_SHOULD_ALLOC_EXTRA_BUFFER_FOR_SCALAR_OR_OTF_BRC`); the temp is that one when the
/// op has an inline broadcast or a scalar operand.
fn scalar_or_otf_brc_temp(v: &VectorOp) -> bool {
    use VecOp::*;
    let listed = matches!(
        v.op,
        Vabs | Vadd
            | Vand
            | Vdiv
            | Vexp
            | Vln
            | Vmax
            | Vmin
            | Vmul
            | Vnot
            | Vor
            | Vrec
            | Vrelu
            | Vrsqrt
            | Vsqrt
            | Vsub
            | Vadds
            | Vmuls
            | Vmaxs
            | Vmins
    );
    listed && (!v.broadcast.is_empty() || v.scalar.is_some())
}

/// What HIVM's inplace rule reads from an op's operands as MLIR writes them, where npusim's
/// program does not show it (`npusim opt`: the lowering drops a vector op's gm input for
/// planning, and a reshape of a whole buffer keeps the buffer's own shape).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsWritten {
    /// Some input's static offset (its memref type's layout offset: `?` is one value of its
    /// own, no layout is 0) differs from the output's: HIVM's `isReusableByOffset` refuses
    /// every pair at the op.
    pub offsets_differ: bool,
    /// The output's rank: HIVM's narrowing `vcast` inplaces into a rank-1 output only
    /// (`isReusableCastOp`), whatever the input's rank.
    pub out_rank: usize,
}

/// HIVM `IsReuseHIVMOp(op, gen, kill)` for a vector op, `gen_o`/`kill_o` being the operands
/// through which the op writes the gen and reads the kill.
pub fn reusable_op(
    program: &Program,
    v: &VectorOp,
    gen_o: &Operand,
    kill_o: &Operand,
    kill: BufferId,
) -> bool {
    reusable_op_as(program, v, gen_o, kill_o, kill, None)
}

/// [`reusable_op`], with what the op's MLIR says where `program` does not show it.
fn reusable_op_as(
    program: &Program,
    v: &VectorOp,
    gen_o: &Operand,
    kill_o: &Operand,
    kill: BufferId,
    written: Option<AsWritten>,
) -> bool {
    if written.is_some_and(|w| w.offsets_differ) {
        return false;
    }
    // 1. same static offset for the output and every input
    let Some(out_off) = v.outs.first().and_then(|o| static_offset(program, o)) else {
        return false;
    };
    for i in &v.ins {
        if matches!(i.base, Ref::Tensor(_)) {
            continue;
        }
        if static_offset(program, i) != Some(out_off) {
            return false;
        }
    }
    // 2. inplace in the ISA
    if isa_inplace(v.op) && v.broadcast.is_empty() && !v.transpose {
        return true;
    }
    // 4. at most one extra buffer, and only the scalar / OTF-broadcast temp
    if v.tmp.is_some() && !scalar_or_otf_brc_temp(v) {
        return false;
    }
    // 5. elementwise only; no transpose; with broadcast, equal shapes
    if matches!(
        v.op.form(),
        VecForm::Broadcast | VecForm::Reduce | VecForm::Transpose | VecForm::Deinterleave
    ) || v.outs.len() != 1
        || v.transpose
    {
        return false;
    }
    if !v.broadcast.is_empty() {
        return match (
            operand_shape(program, gen_o),
            operand_shape(program, kill_o),
        ) {
            (Some(g), Some(k)) => g == k,
            _ => false,
        };
    }
    // 7. vsel: an i1 condition is never overwritten by 64-bit data
    if v.op == VecOp::Vsel {
        if let (Some(cond), Some(data)) = (v.ins.first(), v.ins.get(1)) {
            if data.dtype.bits() == 64 && cond.dtype == Dtype::I1 {
                return !program.root_buffers(cond.base).contains(&kill);
            }
        }
        return true;
    }
    // 8. some input of the output's width, or a multiple of it (narrowing; vcast: rank 1)
    let out_bits = gen_o.dtype.bits();
    for i in &v.ins {
        let in_bits = i.dtype.bits();
        if in_bits == out_bits {
            return true;
        }
        if in_bits % out_bits == 0 {
            return v.op != VecOp::Vcast
                || match written {
                    Some(w) => w.out_rank <= 1,
                    None => operand_rank(program, gen_o) == 1 && operand_rank(program, i) == 1,
                };
        }
    }
    false
}

/// Buffers that never take part in inplace (HIVM `ignoreInplace` and our equivalents).
fn ignored(program: &Program, live: &Liveness) -> Vec<bool> {
    let mut ignore: Vec<bool> = program
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            !b.inplace
                || b.unique
                || b.preload
                || b.share.is_some()
                || b.at.is_some()
                || live.entries[live.entry_of[i]].buffers.len() > 1
        })
        .collect();
    for op in &program.ops {
        if let OpKind::Vector(v) = &op.kind {
            if let Some(t) = &v.tmp {
                for b in program.root_buffers(t.base) {
                    ignore[b.index()] = true;
                }
            }
        }
    }
    ignore
}

/// Per buffer: the first op (program order) that writes it, and every op touching it with
/// whether that operand names an explicit slot. One pass over the ops for both.
#[allow(clippy::type_complexity)]
fn first_writers_and_touches(program: &Program) -> (Vec<Option<OpId>>, Vec<Vec<(OpId, bool)>>) {
    let mut first = vec![None; program.buffers.len()];
    let mut t = vec![Vec::new(); program.buffers.len()];
    // `ops` is in pre-order, which is program order
    for (i, op) in program.ops.iter().enumerate() {
        let id = OpId::new(i);
        let writes = op.kind.writes();
        for o in op.kind.reads().into_iter().chain(writes.iter().copied()) {
            for b in program.root_buffers(o.base) {
                t[b.index()].push((id, o.slot.is_some()));
            }
        }
        for w in writes {
            for b in program.root_buffers(w.base) {
                first[b.index()].get_or_insert(id);
            }
        }
    }
    (first, t)
}

/// The position control flows to after the non-control op `op` at `p`: the next position, or
/// for the last op of a `then` block, the `if`'s end (the next position is the else marker).
fn successor(program: &Program, live: &Liveness, op: OpId, p: usize) -> Option<usize> {
    if let Some(parent) = program.op(op).parent {
        if let (OpKind::If { then, .. }, OpPos::If { end, .. }) =
            (&program.op(parent).kind, live.op_pos[parent.index()])
        {
            if then.ops.last() == Some(&op) {
                return Some(end);
            }
        }
    }
    (p + 1 < live.positions).then_some(p + 1)
}

/// Our addition (HIVM has no `@slot` operands): merging must not make two accesses of one
/// group name different slots. Explicit slots on the pair's operands are refused when a
/// multi-buffer is involved; two multi-buffers need equal slot counts; a single buffer that
/// becomes a multi-buffer must only be touched, without `@`, by ops whose innermost loop is the
/// op's own (so its implicit slot is the kill's slot at every access).
#[allow(clippy::too_many_arguments)]
fn slots_compatible(
    program: &Program,
    live: &Liveness,
    groups: &Groups,
    touch: &[Vec<(OpId, bool)>],
    op: OpId,
    (gen_o, ge): (&Operand, usize),
    (kill_o, ke): (&Operand, usize),
) -> bool {
    let (mg, mk) = (groups.multi[ge], groups.multi[ke]);
    if mg <= 1 && mk <= 1 {
        return true;
    }
    if gen_o.slot.is_some() || kill_o.slot.is_some() {
        return false;
    }
    if mg > 1 && mk > 1 {
        return mg == mk;
    }
    let single = if mg <= 1 { ge } else { ke };
    let lp = program.op(op).loop_parent;
    if lp.is_none() {
        return false;
    }
    groups.members[single]
        .iter()
        .flat_map(|&e| live.entries[e].buffers.iter())
        .flat_map(|b| touch[b.index()].iter())
        .all(|&(t, explicit)| !explicit && program.op(t).loop_parent == lp)
}

/// The op-level inplace pairs of a program (module docs).
pub fn inplace_pairs(program: &Program, live: &Liveness) -> InplaceResult {
    inplace_pairs_ordered(program, live, false, &[])
}

/// [`inplace_pairs`], trying an op's inputs last first when `last_first`, and before that, at an
/// op `kill_order` lists, the buffers it lists in its order (`npusim opt`: HIVM's kill list,
/// whose order is PlanMemory's shuffle, emulated by `sim::mlir::hivm_live`; sorted by op).
pub fn inplace_pairs_ordered(
    program: &Program,
    live: &Liveness,
    last_first: bool,
    kill_order: &[(OpId, Vec<BufferId>)],
) -> InplaceResult {
    inplace_pairs_with(program, live, last_first, kill_order, false, &[])
}

/// [`inplace_pairs_ordered`]; with `through_select` (`npusim opt`), an input naming a
/// `select` view offers each of its buffers in turn as the kill: HIVM kills every alias of a
/// value that dies (an `scf.if` result, a block argument), and its output may take any of
/// them (`GenerateInplaceList`). Sound in general (every member lives until the select's last
/// use), but a change to npusim's own plans, so `opt` turns it on (docs/planner.md).
/// `as_written` (sorted by op) overrides what an op's operands in `program` would say
/// ([`AsWritten`]).
pub fn inplace_pairs_with(
    program: &Program,
    live: &Liveness,
    last_first: bool,
    kill_order: &[(OpId, Vec<BufferId>)],
    through_select: bool,
    as_written: &[(OpId, AsWritten)],
) -> InplaceResult {
    let n = live.entries.len();
    let mut groups = Groups {
        parent: (0..n).collect(),
        lifetime: live.entries.iter().map(|e| e.lifetime.clone()).collect(),
        multi: live
            .entries
            .iter()
            .map(|e| {
                e.buffers
                    .iter()
                    .map(|&b| program.buffer(b).multi)
                    .max()
                    .unwrap_or(1)
            })
            .collect(),
        stores: vec![false; n],
        loads: vec![false; n],
        members: (0..n).map(|e| vec![e]).collect(),
    };
    for op in &program.ops {
        match &op.kind {
            OpKind::Store { src, .. } => {
                if let Some(b) = window_root(program, src.base) {
                    groups.stores[live.entry_of[b.index()]] = true;
                }
            }
            OpKind::Load { dst, .. } => {
                if let Some(b) = window_root(program, dst.base) {
                    groups.loads[live.entry_of[b.index()]] = true;
                }
            }
            _ => {}
        }
    }
    let ignore = ignored(program, live);
    let (first, touch) = first_writers_and_touches(program);
    let bits = |b: BufferId| {
        let buf = program.buffer(b);
        buf.elements * buf.dtype.bits()
    };

    let mut pairs = Vec::new();
    let mut refused = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        let id = OpId::new(i);
        let (OpKind::Vector(v), Some(Pipe::V), OpPos::At(p)) = (&op.kind, op.pipe, live.op_pos[i])
        else {
            continue;
        };
        // gens: outputs first written here, largest first (stable)
        let mut gens: Vec<(BufferId, &Operand)> = v
            .outs
            .iter()
            .filter_map(|o| window_root(program, o.base).map(|b| (b, o)))
            .filter(|&(b, _)| !ignore[b.index()] && first[b.index()] == Some(id))
            .collect();
        gens.sort_by_key(|&(b, _)| std::cmp::Reverse(bits(b)));
        let mut used: Vec<BufferId> = Vec::new();
        for (gen, gen_o) in gens {
            let mut tried: Vec<BufferId> = Vec::new();
            let order: Vec<&Operand> = if last_first {
                v.ins.iter().rev().collect()
            } else {
                v.ins.iter().collect()
            };
            // each input's buffer, or (through_select) each buffer its select names
            let mut kills: Vec<(&Operand, BufferId)> = order
                .into_iter()
                .flat_map(|o| match window_root(program, o.base) {
                    Some(b) => vec![(o, b)],
                    None if through_select => select_members(program, o.base)
                        .into_iter()
                        .map(|b| (o, b))
                        .collect(),
                    None => Vec::new(),
                })
                .collect();
            // HIVM's kill list names the gen itself when nothing reads it after this op
            let mut self_kill = false;
            // sorted by op: the first entry for this op, without a scan per op
            let at = kill_order.partition_point(|(o, _)| *o < id);
            if let Some((_, listed)) = kill_order.get(at).filter(|(o, _)| *o == id) {
                if listed.contains(&gen) && !kills.iter().any(|&(_, b)| b == gen) {
                    kills.push((gen_o, gen));
                    self_kill = true;
                }
                // listed kills first, in the list's order; a stable sort keeps the rest as is
                kills.sort_by_key(|&(_, b)| {
                    listed.iter().position(|&k| k == b).unwrap_or(listed.len())
                });
            }
            for (kill_o, kill) in kills {
                // an input named twice (`vadd a, a`) is one candidate
                if tried.contains(&kill) {
                    continue;
                }
                tried.push(kill);
                if kill == gen && self_kill {
                    // `GenerateInplaceList` pairs the gen with itself when it comes first and
                    // the op allows it: a pair that merges nothing, and the scan stops there
                    if reusable_op(program, v, gen_o, gen_o, gen) {
                        break;
                    }
                    continue;
                }
                if ignore[kill.index()] || used.contains(&kill) || kill == gen {
                    continue;
                }
                let (gb, kb) = (program.buffer(gen), program.buffer(kill));
                if gb.scope != kb.scope || bits(kill) < bits(gen) {
                    continue;
                }
                let ge = groups.find(live.entry_of[gen.index()]);
                let ke = groups.find(live.entry_of[kill.index()]);
                if ge == ke {
                    continue;
                }
                // the kill dies here, and nothing of its group lives on beside the gen
                let dead_after = successor(program, live, id, p)
                    .is_none_or(|s| !covers(&groups.lifetime[ke], s));
                if !dead_after || !meet_only_at(&groups.lifetime[ge], &groups.lifetime[ke], p) {
                    continue;
                }
                let written = as_written
                    .binary_search_by_key(&id, |&(o, _)| o)
                    .ok()
                    .map(|k| as_written[k].1);
                if !reusable_op_as(program, v, gen_o, kill_o, kill, written) {
                    continue;
                }
                if !slots_compatible(
                    program,
                    live,
                    &groups,
                    &touch,
                    id,
                    (gen_o, ge),
                    (kill_o, ke),
                ) {
                    continue;
                }
                let multi = groups.multi[ge].max(groups.multi[ke]);
                let pair = InplacePair {
                    gen,
                    kill,
                    op: id,
                    multi,
                };
                // the multi-buffer load→store stall veto
                if groups.multi[ge] > 1
                    && groups.multi[ke] > 1
                    && groups.stores[ge]
                    && groups.loads[ke]
                {
                    refused.push(pair);
                    continue;
                }
                groups.merge(ge, ke);
                used.push(kill);
                pairs.push(pair);
                break;
            }
        }
    }
    let group_of: Vec<usize> = (0..n).map(|e| groups.find(e)).collect();
    let multi = group_of.iter().map(|&g| groups.multi[g]).collect();
    InplaceResult {
        pairs,
        touch: refused,
        group_of,
        multi,
    }
}

#[cfg(test)]
mod tests {
    //! One small program per rule, against the built-in ascend910b config (core aiv).
    use super::*;
    use crate::liveness::{liveness, LivenessMode};

    fn load(body: &str) -> Program {
        let config =
            sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap();
        let text = format!(
            "kernel: k\ncore: aiv\nsync: manual\nparams: {{ n: 256 }}\n\
             gm:\n  x: {{ shape: [4, n], dtype: f16 }}\n  y: {{ shape: [4, n], dtype: f16 }}\n\
             \x20 xf: {{ shape: [4, n], dtype: f32 }}\n  yf: {{ shape: [4, n], dtype: f32 }}\n\
             \x20 xm: {{ shape: [4, 16, 16], dtype: f16 }}\n  ym: {{ shape: [4, 16, 16], dtype: f16 }}\n\
             \x20 xl: {{ shape: [4, 16], dtype: i64 }}\n  xi: {{ shape: [4, n], dtype: i16 }}\n\
             \x20 xh: {{ shape: [4, 16, 16], dtype: i16 }}\n  xq: {{ shape: [4, 16, 16], dtype: f32 }}\n\
             \x20 xb: {{ shape: [4, n], dtype: i1 }}\n{body}"
        );
        sim::load_program(&text, "p.yaml", &config, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn run_mode(body: &str, mode: LivenessMode) -> (Program, Liveness, InplaceResult) {
        let p = load(body);
        let l = liveness(&p, mode).unwrap();
        let r = inplace_pairs(&p, &l);
        (p, l, r)
    }

    fn run(body: &str) -> (Program, Liveness, InplaceResult) {
        run_mode(body, LivenessMode::Precise)
    }

    fn names(p: &Program, pairs: &[InplacePair]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|x| (p.buffer(x.gen).name.clone(), p.buffer(x.kill).name.clone()))
            .collect()
    }

    fn accepted(body: &str) -> Vec<(String, String)> {
        let (p, _, r) = run(body);
        names(&p, &r.pairs)
    }

    fn pair(g: &str, k: &str) -> (String, String) {
        (g.to_string(), k.to_string())
    }

    const ABC: &str = r#"
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  c: { scope: ub, shape: [n], dtype: f16 }
  d: { scope: ub, shape: [n], dtype: f16 }
"#;

    #[test]
    fn chain_of_vadds_is_one_group() {
        let (p, l, r) = run(&format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vadd: {{ ins: [a, a], out: b }}
  - vadd: {{ ins: [b, b], out: c }}
  - vadd: {{ ins: [c, c], out: d }}
  - store: {{ src: d, dst: \"y[0]\" }}
"
        ));
        assert_eq!(
            names(&p, &r.pairs),
            [pair("b", "a"), pair("c", "b"), pair("d", "c")]
        );
        let g = r.group(&l, r.pairs[0].kill);
        for b in ["a", "b", "c", "d"] {
            let id = BufferId::new(p.buffers.iter().position(|x| x.name == b).unwrap());
            assert_eq!(r.group(&l, id), g);
        }
        assert!(r.touch.is_empty());
        assert_eq!(r.kill_of(r.pairs[0].gen), Some(r.pairs[0].kill));
    }

    #[test]
    fn last_dying_input_first_when_asked() {
        // both a and b die at the vadd: operand order takes a, last-first takes b
        let p = load(&format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: b }}
  - vadd: {{ ins: [a, b], out: c }}
  - store: {{ src: c, dst: \"y[0]\" }}
"
        ));
        let l = liveness(&p, LivenessMode::Precise).unwrap();
        assert_eq!(
            names(&p, &inplace_pairs_ordered(&p, &l, false, &[]).pairs),
            [pair("c", "a")]
        );
        assert_eq!(
            names(&p, &inplace_pairs_ordered(&p, &l, true, &[]).pairs),
            [pair("c", "b")]
        );
    }

    #[test]
    fn a_kill_order_decides_which_dying_input_is_taken() {
        // a and b both die at the vadd (op 2); the kill order HIVM's shuffle gives is tried
        // first, whatever `last_first` says; an op it does not list keeps the input order
        let p = load(&format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: b }}
  - vadd: {{ ins: [a, b], out: c }}
  - store: {{ src: c, dst: \"y[0]\" }}
"
        ));
        let l = liveness(&p, LivenessMode::Precise).unwrap();
        let id = |n: &str| BufferId::new(p.buffers.iter().position(|x| x.name == n).unwrap());
        let vadd = OpId::new(2);
        assert!(matches!(p.op(vadd).kind, OpKind::Vector(_)));
        let order = [(vadd, vec![id("a"), id("b")])];
        assert_eq!(
            names(&p, &inplace_pairs_ordered(&p, &l, true, &order).pairs),
            [pair("c", "a")]
        );
        let order = [(vadd, vec![id("b"), id("a")])];
        assert_eq!(
            names(&p, &inplace_pairs_ordered(&p, &l, false, &order).pairs),
            [pair("c", "b")]
        );
        // a listed buffer that is not an input changes nothing; the inputs follow in order
        let order = [(vadd, vec![id("d")])];
        assert_eq!(
            names(&p, &inplace_pairs_ordered(&p, &l, false, &order).pairs),
            [pair("c", "a")]
        );
        // another op's list does not apply here
        let order = [(OpId::new(3), vec![id("b")])];
        assert_eq!(
            names(&p, &inplace_pairs_ordered(&p, &l, false, &order).pairs),
            [pair("c", "a")]
        );
    }

    #[test]
    fn first_dying_input_in_operand_order() {
        // both die: the first
        let both = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: b }}
  - vadd: {{ ins: [a, b], out: c }}
  - store: {{ src: c, dst: \"y[0]\" }}
"
        );
        assert_eq!(accepted(&both), [pair("c", "a")]);
        // a is read later: it does not die, so b
        let a_lives = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: b }}
  - vadd: {{ ins: [a, b], out: c }}
  - vadd: {{ ins: [a, c], out: d }}
  - store: {{ src: d, dst: \"y[0]\" }}
"
        );
        // then d takes a (both a and c die there; a comes first)
        assert_eq!(accepted(&a_lives), [pair("c", "b"), pair("d", "a")]);
    }

    #[test]
    fn input_still_needed_is_not_a_target() {
        let body = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vexp: {{ ins: [a], out: b }}
  - store: {{ src: a, dst: \"y[0]\" }}
  - store: {{ src: b, dst: \"y[1]\" }}
"
        );
        assert!(accepted(&body).is_empty());
    }

    #[test]
    fn input_rewritten_while_output_lives_is_not_a_target() {
        // a dies at the vexp but is rewritten at 2 while b is still alive (read at 3)
        let body = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vexp: {{ ins: [a], out: b }}
  - load: {{ src: \"x[1]\", dst: a }}
  - vadd: {{ ins: [a, b], out: c }}
  - store: {{ src: c, dst: \"y[0]\" }}
"
        );
        // c takes a (first dying input)
        assert_eq!(accepted(&body), [pair("c", "a")]);
    }

    #[test]
    fn output_not_first_written_here_is_not_a_gen() {
        let body = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: b }}
  - store: {{ src: b, dst: \"y[1]\" }}
  - vexp: {{ ins: [a], out: b }}
  - store: {{ src: b, dst: \"y[0]\" }}
"
        );
        assert!(accepted(&body).is_empty());
    }

    #[test]
    fn vcast_width_rules() {
        let cast = |src: &str, dst: &str, shape: &str, gm_in: &str, gm_out: &str| {
            accepted(&format!(
                "buffers:
  s: {{ scope: ub, shape: {shape}, dtype: {src} }}
  t: {{ scope: ub, shape: {shape}, dtype: {dst} }}
body:
  - load: {{ src: {gm_in}, dst: s }}
  - vcast: {{ ins: [s], out: t }}
  - store: {{ src: t, dst: {gm_out} }}
"
            ))
        };
        // widening: never (T09, T12)
        assert!(cast("f16", "f32", "[n]", "\"x[0]\"", "\"yf[0]\"").is_empty());
        assert!(cast("f16", "f32", "[16, 16]", "\"xm[0]\"", "\"xq[0]\"").is_empty());
        // equal width: yes (T10, T13)
        assert_eq!(
            cast("f16", "i16", "[n]", "\"x[0]\"", "\"xi[0]\""),
            [pair("t", "s")]
        );
        assert_eq!(
            cast("f16", "i16", "[16, 16]", "\"xm[0]\"", "\"xh[0]\""),
            [pair("t", "s")]
        );
        // narrowing: rank 1 only (T14 yes, T11 no)
        assert_eq!(
            cast("f32", "f16", "[n]", "\"xf[0]\"", "\"y[0]\""),
            [pair("t", "s")]
        );
        assert!(cast("f32", "f16", "[16, 16]", "\"xq[0]\"", "\"ym[0]\"").is_empty());
    }

    #[test]
    fn narrowing_non_cast_is_allowed() {
        // vcmp f16 -> i1: 16 is a multiple of 1, not a vcast
        let body = "buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  m: { scope: ub, shape: [n], dtype: i1 }
body:
  - load: { src: \"x[0]\", dst: a }
  - load: { src: \"x[1]\", dst: b }
  - vcmp: { ins: [a, b], out: m }
  - vsel: { ins: [m, a, b], out: a }
  - store: { src: a, dst: \"y[0]\" }
";
        // a and b are both read again by the vsel: no kill at the vcmp; the vsel's output a is
        // not first written there
        assert!(accepted(body).is_empty());
        let body = "buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  m: { scope: ub, shape: [n], dtype: i1 }
body:
  - load: { src: \"x[0]\", dst: a }
  - load: { src: \"x[1]\", dst: b }
  - vcmp: { ins: [a, b], out: m }
  - store: { src: m, dst: \"xb[0]\" }
";
        assert_eq!(accepted(body), [pair("m", "a")]);
    }

    #[test]
    fn vsel_prefers_data_never_the_i1_condition() {
        // T70's shape: 16 x i64 data, i1 condition
        let body = "buffers:
  a: { scope: ub, shape: [16], dtype: i64 }
  b: { scope: ub, shape: [16], dtype: i64 }
  m: { scope: ub, shape: [16], dtype: i1 }
  r: { scope: ub, shape: [16], dtype: i64 }
body:
  - load: { src: \"xl[0]\", dst: a }
  - load: { src: \"xl[1]\", dst: b }
  - vcmp: { ins: [a, b], out: m }
  - vsel: { ins: [m, a, b], out: r }
  - store: { src: r, dst: \"xl[2]\" }
";
        assert_eq!(accepted(body), [pair("r", "a")]);
    }

    #[test]
    fn flags_forbid_inplace() {
        for flag in ["inplace: false", "unique: true"] {
            for on in ["a", "b"] {
                let (fa, fb) = if on == "a" {
                    (format!(", {flag}"), String::new())
                } else {
                    (String::new(), format!(", {flag}"))
                };
                let body = format!(
                    "buffers:
  a: {{ scope: ub, shape: [n], dtype: f16{fa} }}
  b: {{ scope: ub, shape: [n], dtype: f16{fb} }}
body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vexp: {{ ins: [a], out: b }}
  - store: {{ src: b, dst: \"y[0]\" }}
"
                );
                assert!(accepted(&body).is_empty(), "{flag} on {on}");
            }
        }
    }

    #[test]
    fn preload_buffers_are_never_inplaced() {
        let body = "body:
  - for: { var: t, to: 4 }
    buffers:
      a: { scope: ub, shape: [n], dtype: f16, preload: true }
      b: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: \"x[t]\", dst: a }
      - vexp: { ins: [a], out: b }
      - store: { src: b, dst: \"y[t]\" }
";
        assert!(accepted(body).is_empty());
    }

    #[test]
    fn share_groups_and_selects_are_never_inplaced() {
        // T18: an if-merged pair (share) is not inplaced with its inputs
        let share = "params: { c: 1 }
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
  r1: { scope: ub, shape: [n], dtype: f16 }
  r2: { scope: ub, shape: [n], dtype: f16, share: r1 }
views:
  r: { select: [r1, r2] }
body:
  - load: { src: \"x[0]\", dst: a }
  - load: { src: \"x[1]\", dst: b }
  - if: \"c == 1\"
    then:
      - vexp: { ins: [a], out: r1 }
    else:
      - vexp: { ins: [b], out: r2 }
  - store: { src: r, dst: \"y[0]\" }
";
        let share = share.replacen("params: { c: 1 }\n", "", 1);
        let share = share.replace("\"c == 1\"", "\"n == 256\"");
        assert!(accepted(&share).is_empty());
        // nothing pairs through a select; a member named directly may (a dies at the second
        // vexp, and d takes it)
        let select = format!(
            "{ABC}views:
  s: {{ select: [a, b] }}
body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: b }}
  - vexp: {{ ins: [s], out: c }}
  - vexp: {{ ins: [a], out: d }}
  - store: {{ src: c, dst: \"y[0]\" }}
  - store: {{ src: d, dst: \"y[1]\" }}
"
        );
        assert_eq!(accepted(&select), [pair("d", "a")]);
        // nor is a select a gen
        let select_out = format!(
            "{ABC}views:
  s: {{ select: [b, c] }}
body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vexp: {{ ins: [a], out: s }}
  - store: {{ src: b, dst: \"y[0]\" }}
  - store: {{ src: c, dst: \"y[1]\" }}
"
        );
        let select_out = select_out.replace(
            "  - vexp:",
            "  - load: { src: \"x[1]\", dst: b }\n  - load: { src: \"x[2]\", dst: c }\n  - vexp:",
        );
        assert!(accepted(&select_out).is_empty());
    }

    #[test]
    fn temp_buffers() {
        // a temp is never a target, and a plain unary op with a temp is refused
        let body = |op: &str| {
            format!(
                "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - load: {{ src: \"x[1]\", dst: c }}
  - {op}
  - store: {{ src: b, dst: \"y[0]\" }}
  - store: {{ src: c, dst: \"y[1]\" }}
"
            )
        };
        assert!(accepted(&body("vexp: { ins: [a], out: b, tmp: c }")).is_empty());
        assert!(accepted(&body("vcast: { ins: [a], out: b, tmp: c }")).is_empty());
        // the scalar temp (T54): allowed (vmuls is also an ISA-inplace op)
        assert_eq!(
            accepted(&body("vmuls: { ins: [a], out: b, scalar: 2, tmp: c }")),
            [pair("b", "a")]
        );
        // a temp is never a gen or kill target: d is loaded, read by an op that uses it as tmp
        let tmp_target = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vexp: {{ ins: [a], out: c, tmp: d }}
  - vexp: {{ ins: [d], out: b }}
  - store: {{ src: b, dst: \"y[0]\" }}
  - store: {{ src: c, dst: \"y[1]\" }}
"
        );
        assert!(accepted(&tmp_target).is_empty());
    }

    #[test]
    fn broadcast_needs_equal_shapes() {
        // T48: vsub(64x1 broadcast, 64x128) -> 64x128 with the OTF-broadcast temp: the
        // same-shaped input is the target, the broadcast one never
        let body = |first: &str, second: &str| {
            format!(
                "buffers:
  s: {{ scope: ub, shape: [16, 1], dtype: f16 }}
  m: {{ scope: ub, shape: [16, 16], dtype: f16 }}
  o: {{ scope: ub, shape: [16, 16], dtype: f16 }}
  t: {{ scope: ub, shape: [128], dtype: f16 }}
body:
  - load: {{ src: \"x[0, 0:16]\", dst: s }}
  - load: {{ src: \"xm[0]\", dst: m }}
  - vsub: {{ ins: [{first}, {second}], out: o, tmp: t, broadcast: [1] }}
  - store: {{ src: o, dst: \"ym[0]\" }}
"
            )
        };
        assert_eq!(accepted(&body("s", "m")), [pair("o", "m")]);
        assert_eq!(accepted(&body("m", "s")), [pair("o", "m")]);
    }

    #[test]
    fn non_elementwise_ops_are_refused() {
        let reduce = "buffers:
  a: { scope: ub, shape: [16, 16], dtype: f16 }
  b: { scope: ub, shape: [16, 1], dtype: f16 }
body:
  - load: { src: \"xm[0]\", dst: a }
  - vreduce_sum: { ins: [a], out: b, dims: [1] }
  - store: { src: b, dst: \"x[0, 0:16]\" }
";
        assert!(accepted(reduce).is_empty());
        let brc = "buffers:
  a: { scope: ub, shape: [16, 16], dtype: f16 }
  b: { scope: ub, shape: [16, 16], dtype: f16 }
body:
  - load: { src: \"xm[0]\", dst: a }
  - vbrc: { ins: [a], out: b }
  - store: { src: b, dst: \"ym[0]\" }
";
        assert!(accepted(brc).is_empty());
        let tr = "buffers:
  a: { scope: ub, shape: [16, 16], dtype: f16 }
  b: { scope: ub, shape: [16, 16], dtype: f16 }
body:
  - load: { src: \"xm[0]\", dst: a }
  - vtranspose: { ins: [a], out: b }
  - store: { src: b, dst: \"ym[0]\" }
";
        assert!(accepted(tr).is_empty());
    }

    #[test]
    fn window_offsets_must_match() {
        let body = |off_a: u32, off_b: u32| {
            format!(
                "buffers:
  a: {{ scope: ub, shape: [n], dtype: f16 }}
  b: {{ scope: ub, shape: [n], dtype: f16 }}
views:
  wa: {{ of: a, offset: {off_a}, shape: [128] }}
  wb: {{ of: b, offset: {off_b}, shape: [128] }}
body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vexp: {{ ins: [wa], out: wb }}
  - store: {{ src: wb, dst: \"y[0, 0:128]\" }}
"
            )
        };
        // T73: different static offsets are refused
        assert!(accepted(&body(0, 128)).is_empty());
        assert!(accepted(&body(128, 0)).is_empty());
        assert_eq!(accepted(&body(128, 128)), [pair("b", "a")]);
        // slices count too
        let sliced = "buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: \"x[0]\", dst: a }
  - vexp: { ins: [\"a[0:128]\"], out: \"b[128:256]\" }
  - store: { src: \"b[128:256]\", dst: \"y[0, 0:128]\" }
";
        assert!(accepted(sliced).is_empty());
    }

    #[test]
    fn bigger_output_is_refused() {
        // T56: both inputs broadcast up to a larger output: killBits < genBits
        let body = "buffers:
  a: { scope: ub, shape: [4, 1, 16], dtype: f16 }
  b: { scope: ub, shape: [4, 1, 16], dtype: f16 }
  o: { scope: ub, shape: [4, 16, 16], dtype: f16 }
  t: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: \"x[0, 0:64]\", dst: a }
  - load: { src: \"x[1, 0:64]\", dst: b }
  - vmul: { ins: [a, b], out: o, tmp: t, broadcast: [1] }
  - store: { src: o, dst: \"ym[0:4]\" }
";
        assert!(accepted(body).is_empty());
    }

    #[test]
    fn loop_carried_input_is_not_a_target() {
        // acc is read every iteration: it never dies inside the loop
        let body = "buffers:
  acc: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: \"x[0]\", dst: acc }
  - for: { var: t, to: 4 }
    buffers:
      o: { scope: ub, shape: [n], dtype: f16 }
    body:
      - vexp: { ins: [acc], out: o }
      - store: { src: o, dst: \"y[t]\" }
";
        assert!(accepted(body).is_empty());
    }

    #[test]
    fn multi_buffer_load_store_chain_is_refused_but_may_touch() {
        // T06
        let (p, _, r) = run("body:
  - for: { var: t, to: 4 }
    buffers:
      a0: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      a1: { scope: ub, shape: [n], dtype: f16, multi: 2 }
    body:
      - load: { src: \"x[t]\", dst: a0 }
      - vadd: { ins: [a0, a0], out: a1 }
      - store: { src: a1, dst: \"y[t]\" }
");
        assert!(r.pairs.is_empty());
        assert_eq!(names(&p, &r.touch), [pair("a1", "a0")]);
        assert_eq!(r.touch[0].multi, 2);
        assert!(r.may_touch(r.touch[0].kill, r.touch[0].gen));
    }

    #[test]
    fn multi_buffers_without_the_stall_are_inplaced() {
        // the gen never reaches a store: accepted, and the group keeps two slots
        let (p, l, r) = run("body:
  - for: { var: t, to: 4 }
    buffers:
      a0: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      a1: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      a2: { scope: ub, shape: [n], dtype: f16, multi: 2 }
    body:
      - load: { src: \"x[t]\", dst: a0 }
      - vexp: { ins: [a0], out: a1 }
      - vcopy: { ins: [a1], out: a2 }
      - store: { src: a2, dst: \"y[t]\" }
");
        // a1 into a0 (a1 reaches no store on its own); a2 into {a0, a1}: vetoed, the group
        // reaches a load and a2 a store
        assert_eq!(names(&p, &r.pairs), [pair("a1", "a0")]);
        assert_eq!(names(&p, &r.touch), [pair("a2", "a1")]);
        assert_eq!(r.multi[r.group(&l, r.pairs[0].gen)], 2);
    }

    #[test]
    fn single_buffer_into_multi_buffer_becomes_multi() {
        let (p, l, r) = run("body:
  - for: { var: t, to: 4 }
    buffers:
      a0: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      a1: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: \"x[t]\", dst: a0 }
      - vexp: { ins: [a0], out: a1 }
      - store: { src: a1, dst: \"y[t]\" }
");
        assert_eq!(names(&p, &r.pairs), [pair("a1", "a0")]);
        assert_eq!(r.pairs[0].multi, 2);
        assert_eq!(r.multi[l.entry_of[r.pairs[0].gen.index()]], 2);
        // but not when the single buffer is also read outside the loop (slot 0 there)
        let (_, _, r) = run("buffers:
  a1: { scope: ub, shape: [n], dtype: f16 }
body:
  - for: { var: t, to: 4 }
    buffers:
      a0: { scope: ub, shape: [n], dtype: f16, multi: 2 }
    body:
      - load: { src: \"x[t]\", dst: a0 }
      - vexp: { ins: [a0], out: a1 }
  - store: { src: a1, dst: \"y[0]\" }
");
        assert!(r.pairs.is_empty());
        // explicit slots are refused
        let (_, _, r) = run("body:
  - for: { var: t, to: 4 }
    buffers:
      a0: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      a1: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: \"x[t]\", dst: \"a0@(t % 2)\" }
      - vexp: { ins: [\"a0@(t % 2)\"], out: a1 }
      - store: { src: a1, dst: \"y[t]\" }
");
        assert!(r.pairs.is_empty());
    }

    #[test]
    fn then_branch_end_flows_to_the_if_end() {
        // a is read after the if: alive at the if's end, so not killed at the then-branch's
        // last op, even though the next position (the else marker) does not hold it
        let body = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - if: \"n > 2\"
    then:
      - vexp: {{ ins: [a], out: b }}
      - store: {{ src: b, dst: \"y[0]\" }}
      - vexp: {{ ins: [a], out: c }}
    else:
      - load: {{ src: \"x[1]\", dst: c }}
  - vadd: {{ ins: [a, c], out: d }}
  - store: {{ src: d, dst: \"y[1]\" }}
"
        );
        let got = accepted(&body);
        assert!(!got.contains(&pair("c", "a")), "{got:?}");
        // d takes a at the end
        assert!(got.contains(&pair("d", "a")), "{got:?}");
    }

    #[test]
    fn then_branch_successor_is_the_if_end_not_the_else_marker() {
        // a is dead at the else marker (the else branch rewrites it first) but alive at the
        // if's end on the then path: the vexp, last in the then block, does not kill it
        let body = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - if: \"n > 2\"
    then:
      - vexp: {{ ins: [a], out: c }}
    else:
      - load: {{ src: \"x[1]\", dst: a }}
  - store: {{ src: a, dst: \"y[0]\" }}
"
        );
        // c is never read: its lifetime is the vexp alone, so only the successor test stops it
        let (p, l, r) = run(&body);
        let a = BufferId::new(0);
        assert_eq!(p.buffer(a).name, "a");
        // the else marker (position 3) is outside a's lifetime, the if end (5) inside
        assert!(
            !covers(l.lifetime(a), 3) && covers(l.lifetime(a), 5),
            "{:?}",
            l.lifetime(a)
        );
        assert!(r.pairs.is_empty());
    }

    #[test]
    fn scoped_liveness_gives_the_same_pairs_here() {
        let body = format!(
            "{ABC}body:
  - load: {{ src: \"x[0]\", dst: a }}
  - vadd: {{ ins: [a, a], out: b }}
  - store: {{ src: b, dst: \"y[0]\" }}
"
        );
        let (p, _, r) = run_mode(&body, LivenessMode::Scoped);
        assert_eq!(names(&p, &r.pairs), [pair("b", "a")]);
    }
}
