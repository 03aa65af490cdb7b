//! Any npusim program written as HIVM MLIR (docs/mlir.md, "Writing HIVM MLIR"): what
//! `npusim opt` and `plan --format mlir` print, and what `scripts/differential` hands the real
//! compiler (`bishengir-opt`).
//!
//! Three stages, one writer: given no plan, every on-chip buffer is a `memref.alloc` where its
//! block declares it (stage 1, the input of `-hivm-plan-memory`); given a plan, every alloc is
//! a `hivm.hir.pointer_cast` of its byte offsets, laid out as HIVM's AllocToPointerCast prints
//! them (stage 2); given the synchronised program and its plan, the flags the sync pass
//! inserted are `hivm.hir.set_flag` / `wait_flag` / `pipe_barrier` lines (stage 3). Flags
//! written by hand in a `sync: manual` program are printed at every stage, since they are part
//! of the program.
//!
//! The mapping decisions (which HIVM op each npusim op becomes, what has no counterpart) are
//! listed in docs/mlir.md and in [`kernel_mlir`]'s errors; the output is one op per line, no
//! comments, and every shipped program's output at every stage is parsed by `bishengir-opt`
//! 1.2.0 (the reports' `mlir` integration test).

use planner::Plan;
use sim::expr::{BinOp, Expr, UnOp};
use sim::program::{
    BarrierTarget, Block, Index, Layout, Mmad, OpKind, Operand, Program, Quant, Ref, VecForm,
    VecOp, VectorOp, ViewKind,
};
use sim::{BufferId, Config, Dtype, OpId, Pipe, Space, VarId};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// One part of a kernel to write: its program (the synchronised one for stage 3) and, from
/// stage 2 on, its plan.
#[derive(Clone, Copy)]
pub struct MlirPart<'a> {
    pub program: &'a Program,
    pub plan: Option<&'a Plan>,
}

/// Writes a kernel's parts as one HIVM MLIR module: one `func.func` per part (`@KERNEL`, or
/// `@KERNEL_aic` and `@KERNEL_aiv` for a mixed kernel), gm tensors as its memref arguments.
/// Deterministic. An op or buffer HIVM cannot express is an error naming it (every one found);
/// nothing is silently written wrong.
pub fn kernel_mlir(parts: &[MlirPart<'_>], config: &Config) -> Result<String, Vec<String>> {
    let mut out = String::from("module {\n");
    let mut problems = Vec::new();
    let mixed = parts.len() > 1;
    for part in parts {
        let p = part.program;
        let core = config.core(p.core);
        let name = if mixed {
            format!("{}_{}", p.kernel, core.name)
        } else {
            p.kernel.clone()
        };
        let mut w = Writer::new(p, part.plan, &core.pipes);
        w.function(&name);
        problems.extend(w.problems);
        out.push_str(&w.out);
    }
    out.push_str("}\n");
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// The HIVM address space of an on-chip scope; `None` for BT and FP, which HIVM has no address
/// space for (its mmadL1 and fixpipe keep bias and quantisation parameters in L1 and move them
/// themselves).
pub fn hivm_space(space: Space) -> Option<&'static str> {
    Some(match space {
        Space::Gm => "gm",
        Space::Ub => "ub",
        Space::L1 => "cbuf",
        Space::L0a => "ca",
        Space::L0b => "cb",
        Space::L0c => "cc",
        Space::Bt | Space::Fp => return None,
    })
}

fn mlir_dtype(d: Dtype) -> &'static str {
    match d {
        Dtype::I1 => "i1",
        Dtype::I8 => "i8",
        Dtype::U8 => "ui8",
        Dtype::I16 => "i16",
        Dtype::U16 => "ui16",
        Dtype::F16 => "f16",
        Dtype::Bf16 => "bf16",
        Dtype::I32 => "i32",
        Dtype::U32 => "ui32",
        Dtype::F32 => "f32",
        Dtype::I64 => "i64",
        Dtype::U64 => "ui64",
    }
}

fn is_float(d: Dtype) -> bool {
    matches!(d, Dtype::F16 | Dtype::Bf16 | Dtype::F32)
}

/// A memref type: shape, element type, address space, and a strided layout once the value
/// is a view into a larger one (`None`: the identity layout).
#[derive(Clone, Debug, PartialEq)]
struct MemTy {
    shape: Vec<u64>,
    dtype: Dtype,
    space: &'static str,
    strides: Option<Vec<u64>>,
    /// The view's static element offset, `None` when it depends on loop variables (`?`).
    /// HIVM's PlanMemory compares static offsets to allow inplace (`isReusableByOffset`), so a
    /// constant slice keeps its offset static, as npusim's inplace rule sees it.
    offset: Option<u64>,
}

impl MemTy {
    fn identity_strides(shape: &[u64]) -> Vec<u64> {
        let mut s = vec![1u64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1].saturating_mul(shape[i + 1]);
        }
        s
    }

    fn strides(&self) -> Vec<u64> {
        self.strides
            .clone()
            .unwrap_or_else(|| Self::identity_strides(&self.shape))
    }

    fn text(&self) -> String {
        let mut t = String::from("memref<");
        for d in &self.shape {
            let _ = write!(t, "{d}x");
        }
        t.push_str(mlir_dtype(self.dtype));
        if let Some(s) = &self.strides {
            let list: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            match self.offset {
                Some(0) => {
                    let _ = write!(t, ", strided<[{}]>", list.join(", "));
                }
                Some(o) => {
                    let _ = write!(t, ", strided<[{}], offset: {o}>", list.join(", "));
                }
                None => {
                    let _ = write!(t, ", strided<[{}], offset: ?>", list.join(", "));
                }
            }
        }
        let _ = write!(t, ", #hivm.address_space<{}>>", self.space);
        t
    }
}

/// An SSA value of the function: a memref with its type, or a scalar.
#[derive(Clone, Debug)]
struct Mem {
    name: String,
    ty: MemTy,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scalar {
    Index,
    I1,
}

struct Writer<'a> {
    p: &'a Program,
    plan: Option<&'a Plan>,
    pipes: &'a [Pipe],
    out: String,
    problems: Vec<String>,
    /// Names taken in the function (MLIR wants them unique where they are visible).
    taken: BTreeSet<String>,
    /// Per open region: expressions already computed there (dominance: an inner region sees
    /// the outer ones).
    scopes: Vec<HashMap<String, (String, Scalar)>>,
    vars: HashMap<VarId, String>,
    buffers: HashMap<BufferId, Mem>,
    views: HashMap<usize, Mem>,
    tensors: Vec<Mem>,
    /// Stage 2/3: the `%cN_i64` name of each offset.
    offsets: HashMap<u64, String>,
    indent: usize,
}

impl<'a> Writer<'a> {
    fn new(p: &'a Program, plan: Option<&'a Plan>, pipes: &'a [Pipe]) -> Writer<'a> {
        Writer {
            p,
            plan,
            pipes,
            out: String::new(),
            problems: Vec::new(),
            taken: BTreeSet::new(),
            scopes: vec![HashMap::new()],
            vars: HashMap::new(),
            buffers: HashMap::new(),
            views: HashMap::new(),
            tensors: Vec::new(),
            offsets: HashMap::new(),
            indent: 2,
        }
    }

    fn fresh(&mut self, hint: &str) -> String {
        // SSA names: letters, digits, `_`, `$`, `.`, `-`; anything else becomes `_`
        let mut base: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() {
            base.push('v');
        }
        let mut name = base.clone();
        let mut k = 0;
        while self.taken.contains(&name) {
            k += 1;
            name = format!("{base}_{k}");
        }
        self.taken.insert(name.clone());
        format!("%{name}")
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push(' ');
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn problem(&mut self, id: Option<OpId>, message: String) {
        let at = id
            .map(|i| format!("{}: ", self.p.locate(i)))
            .unwrap_or_default();
        self.problems.push(format!("{at}{message}"));
    }

    fn core_type(&self) -> &'static str {
        let cube = self.pipes.contains(&Pipe::M);
        let vector = self.pipes.contains(&Pipe::V);
        match (cube, vector) {
            (true, false) => "AIC",
            (false, true) => "AIV",
            _ => "MIX",
        }
    }

    fn function(&mut self, name: &str) {
        let p = self.p;
        let mut args = Vec::new();
        for t in &p.tensors {
            let n = self.fresh(&t.name);
            let m = Mem {
                name: n.clone(),
                ty: MemTy {
                    shape: t.shape.clone(),
                    dtype: t.dtype,
                    space: "gm",
                    strides: None,
                    offset: Some(0),
                },
            };
            args.push(format!("{n}: {}", m.ty.text()));
            self.tensors.push(m);
        }
        let sym = if name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
        {
            name.to_string()
        } else {
            format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
        };
        let header = format!(
            "func.func @{sym}({}) attributes {{hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>, hivm.func_core_type = #hivm.func_core_type<{}>}} {{",
            args.join(", "),
            self.core_type()
        );
        self.line(&header);
        self.indent += 2;
        if self.plan.is_some() {
            self.offset_constants();
        }
        if let Some(v) = p.launch.block {
            let n = self.fresh("block_i64");
            self.line(&format!("{n} = hivm.hir.get_block_idx -> i64"));
            let i = self.fresh(&p.vars[v.index()].name);
            self.line(&format!("{i} = arith.index_cast {n} : i64 to index"));
            self.vars.insert(v, i);
        }
        if let Some(v) = p.launch.subblock {
            let n = self.fresh("subblock_i64");
            self.line(&format!("{n} = hivm.hir.get_sub_block_idx -> i64"));
            let i = self.fresh(&p.vars[v.index()].name);
            self.line(&format!("{i} = arith.index_cast {n} : i64 to index"));
            self.vars.insert(v, i);
        }
        let body = &p.body;
        self.block(body, false);
        self.line("return");
        self.indent -= 2;
        self.line("}");
    }

    /// Stage 2: one `%cN_i64 = arith.constant N : i64` per distinct offset, newest first
    /// (AllocToPointerCast inserts each new one at the top of the function), walking the
    /// allocs in the order they are written.
    fn offset_constants(&mut self) {
        let mut order: Vec<u64> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut walk = vec![&self.p.body];
        // pre-order over blocks, in program order: a block's allocs, then its ops' blocks
        let mut blocks = Vec::new();
        while let Some(b) = walk.pop() {
            blocks.push(b);
            let mut inner = Vec::new();
            for &op in &b.ops {
                inner.extend(self.p.blocks(op));
            }
            walk.extend(inner.into_iter().rev());
        }
        // the constants are made in the allocs' written order, before HIVM moves the
        // multi-buffers' pointer_casts
        for b in blocks {
            for &bid in &b.buffers {
                for &o in &self.slots(bid) {
                    if seen.insert(o) {
                        order.push(o);
                    }
                }
            }
        }
        for &o in order.iter().rev() {
            let n = self.fresh(&format!("c{o}_i64"));
            self.line(&format!("{n} = arith.constant {o} : i64"));
            self.offsets.insert(o, n);
        }
    }

    /// The offsets of a buffer's slots under the plan.
    fn slots(&self, b: BufferId) -> Vec<u64> {
        self.plan
            .and_then(|pl| pl.buffers.get(b.index()))
            .map(|bp| bp.offsets.clone())
            .unwrap_or_default()
    }

    /// The order the pointer_casts of a block print in: HIVM moves a loop body's
    /// multi-buffers to its front, the last one first; the rest keep their order (and every
    /// other block keeps its order: bishengir-opt 1.2.0 moves none at the function's top).
    fn alloc_order(&self, b: &Block, loop_body: bool) -> Vec<BufferId> {
        if self.plan.is_none() || !loop_body {
            return b.buffers.clone();
        }
        let multi: Vec<BufferId> = b
            .buffers
            .iter()
            .copied()
            .filter(|&x| self.slots(x).len() > 1)
            .collect();
        let mut order: Vec<BufferId> = multi.iter().rev().copied().collect();
        order.extend(b.buffers.iter().copied().filter(|x| !multi.contains(x)));
        order
    }

    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    fn block(&mut self, b: &Block, loop_body: bool) {
        for bid in self.alloc_order(b, loop_body) {
            self.alloc(bid);
        }
        for &v in &b.views {
            self.view(v.index());
        }
        for &op in &b.ops {
            self.op(op);
        }
    }

    fn alloc(&mut self, bid: BufferId) {
        let buf = &self.p.buffers[bid.index()];
        let Some(space) = hivm_space(buf.scope) else {
            self.problems.push(format!(
                "buffer `{}` ({}): HIVM has no address space for {} (it keeps bias and quantisation parameters in L1); move the buffer to l1 or leave it out",
                buf.name, buf.path, buf.scope
            ));
            return;
        };
        let ty = MemTy {
            shape: buf.shape.clone(),
            dtype: buf.dtype,
            space,
            strides: None,
            offset: Some(0),
        };
        let name = self.fresh(&buf.name);
        let slots = self.slots(bid);
        let multi = if self.plan.is_some() {
            slots.len()
        } else {
            buf.multi as usize
        };
        if self.plan.is_some() && !slots.is_empty() {
            let names: Vec<String> = slots.iter().map(|o| self.offsets[o].clone()).collect();
            self.line(&format!(
                "{name} = hivm.hir.pointer_cast({}) : {}",
                names.join(", "),
                ty.text()
            ));
        } else {
            self.line(&format!("{name} = memref.alloc() : {}", ty.text()));
        }
        if multi > 1 {
            self.line(&format!(
                "annotation.mark {name} {{hivm.multi_buffer = {multi} : i32}} : {}",
                ty.text()
            ));
        }
        self.buffers.insert(bid, Mem { name, ty });
    }

    /// A window: a `memref.reinterpret_cast` of its root buffer at the window's element
    /// offset (windows of windows add up), with the window's own shape.
    fn view(&mut self, v: usize) {
        let view = &self.p.views[v];
        match &view.kind {
            ViewKind::Select { .. } => {
                self.problems.push(format!(
                    "view `{}` ({}): a `select` view (a buffer chosen at run time) has no HIVM form",
                    view.name, view.path
                ));
            }
            ViewKind::Window { of, offset } => {
                let mut total = offset.clone();
                let mut root = *of;
                while let Ref::View(w) = root {
                    match &self.p.views[w.index()].kind {
                        ViewKind::Window { of, offset } => {
                            total =
                                Expr::Binary(BinOp::Add, Box::new(total), Box::new(offset.clone()));
                            root = *of;
                        }
                        ViewKind::Select { .. } => return,
                    }
                }
                let Some(base) = self.base(root) else { return };
                let fixed = total.as_const().and_then(|c| u64::try_from(c).ok());
                let off = match fixed {
                    Some(c) => c.to_string(),
                    None => self.index(&total),
                };
                let ty = MemTy {
                    shape: view.shape.clone(),
                    dtype: view.dtype,
                    space: base.ty.space,
                    strides: Some(MemTy::identity_strides(&view.shape)),
                    offset: fixed,
                };
                let sizes: Vec<String> = view.shape.iter().map(|s| s.to_string()).collect();
                let strides: Vec<String> = ty.strides().iter().map(|s| s.to_string()).collect();
                let name = self.fresh(&view.name);
                self.line(&format!(
                    "{name} = memref.reinterpret_cast {} to offset: [{off}], sizes: [{}], strides: [{}] : {} to {}",
                    base.name,
                    sizes.join(", "),
                    strides.join(", "),
                    base.ty.text(),
                    ty.text()
                ));
                self.views.insert(v, Mem { name, ty });
            }
        }
    }

    fn base(&self, r: Ref) -> Option<Mem> {
        match r {
            Ref::Buffer(b) => self.buffers.get(&b).cloned(),
            Ref::View(v) => self.views.get(&v.index()).cloned(),
            Ref::Tensor(t) => self.tensors.get(t.index()).cloned(),
        }
    }

    /// An operand as a memref value: its base, or a `memref.subview` of it when indexed
    /// (`At` drops the dimension, as npusim does). An explicit slot (`@k`) is not written:
    /// HIVM picks a multi-buffer's slot from the loop count.
    fn operand(&mut self, o: &Operand, id: OpId) -> Option<Mem> {
        let Some(base) = self.base(o.base) else {
            // the base's own problem (BT/FP, select) is already reported
            return None;
        };
        if o.indices.is_empty() {
            return Some(base);
        }
        let strides = base.ty.strides();
        let (mut offs, mut sizes, mut shape, mut kept) = (vec![], vec![], vec![], vec![]);
        // the static offset while every index so far is a constant
        let mut offset = base.ty.offset;
        let place = |w: &mut Self, e: &Expr, d: usize, offset: &mut Option<u64>| -> String {
            match e.as_const().and_then(|c| u64::try_from(c).ok()) {
                Some(c) => {
                    *offset = offset.and_then(|o| o.checked_add(c.checked_mul(strides[d])?));
                    c.to_string()
                }
                None => {
                    *offset = None;
                    w.index(e)
                }
            }
        };
        for (d, &extent) in base.ty.shape.iter().enumerate() {
            match o.indices.get(d) {
                Some(Index::At(e)) => {
                    let v = place(self, e, d, &mut offset);
                    offs.push(v);
                    sizes.push(1);
                }
                Some(Index::Slice { start, end }) => {
                    // an extent that is not linear (`(j % 2 + 1) * t - j % 2 * t`): taken when
                    // it is the same with every loop variable at 0 and at 1
                    let at = |v: i64| {
                        let vars = vec![v; self.p.vars.len()];
                        Some(end.eval(&vars).ok()? - start.eval(&vars).ok()?)
                    };
                    let at_zero = || at(0).filter(|&n| Some(n) == at(1));
                    let Some(n) = Expr::const_difference(end, start).or_else(at_zero) else {
                        self.problem(
                            Some(id),
                            format!("operand `{}`: a slice whose extent is not constant has no static memref shape", o.text),
                        );
                        return None;
                    };
                    let v = place(self, start, d, &mut offset);
                    offs.push(v);
                    let n = n.max(0) as u64;
                    sizes.push(n);
                    shape.push(n);
                    kept.push(strides[d]);
                }
                None => {
                    offs.push("0".to_string());
                    sizes.push(extent);
                    shape.push(extent);
                    kept.push(strides[d]);
                }
            }
        }
        let ty = MemTy {
            shape,
            dtype: base.ty.dtype,
            space: base.ty.space,
            strides: Some(kept),
            offset,
        };
        let name = self.fresh("sv");
        let sizes: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        let ones = vec!["1"; sizes.len()];
        self.line(&format!(
            "{name} = memref.subview {}[{}] [{}] [{}] : {} to {}",
            base.name,
            offs.join(", "),
            sizes.join(", "),
            ones.join(", "),
            base.ty.text(),
            ty.text()
        ));
        Some(Mem { name, ty })
    }

    /// `m` with unit dimensions inserted so that it has `rank` dimensions, the kept ones where
    /// `unit` says they are not: what HIVM's `broadcast =` / `reduce_dims =` operands need.
    fn expand(&mut self, m: Mem, rank: usize, unit: &[u32]) -> Mem {
        if m.ty.shape.len() >= rank {
            return m;
        }
        let is_unit = |d: usize| unit.contains(&(d as u32));
        let src_strides = m.ty.strides();
        // each source dimension takes the unit dimensions before it (the first one) or after it
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut pending: Vec<usize> = Vec::new();
        let mut shape = Vec::new();
        for d in 0..rank {
            if is_unit(d) || groups.len() >= m.ty.shape.len() && !groups.is_empty() {
                shape.push(1);
                if let Some(g) = groups.last_mut() {
                    g.push(d);
                } else {
                    pending.push(d);
                }
            } else {
                shape.push(m.ty.shape.get(groups.len()).copied().unwrap_or(1));
                let mut g = std::mem::take(&mut pending);
                g.push(d);
                groups.push(g);
            }
        }
        if groups.len() != m.ty.shape.len() {
            return m;
        }
        // strides within a group: the source stride for the last dim, times the later sizes
        let mut strides = vec![0u64; rank];
        for (s, g) in groups.iter().enumerate() {
            let mut acc = src_strides[s];
            for &d in g.iter().rev() {
                strides[d] = acc;
                acc = acc.saturating_mul(shape[d]);
            }
        }
        let ty = MemTy {
            shape: shape.clone(),
            dtype: m.ty.dtype,
            space: m.ty.space,
            strides: m.ty.strides.as_ref().map(|_| strides),
            offset: m.ty.offset,
        };
        let reassoc: Vec<String> = groups
            .iter()
            .map(|g| {
                let l: Vec<String> = g.iter().map(|d| d.to_string()).collect();
                format!("[{}]", l.join(", "))
            })
            .collect();
        let out_shape: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
        let name = self.fresh("ex");
        self.line(&format!(
            "{name} = memref.expand_shape {} [{}] output_shape [{}] : {} into {}",
            m.name,
            reassoc.join(", "),
            out_shape.join(", "),
            m.ty.text(),
            ty.text()
        ));
        Mem { name, ty }
    }

    /// `m` reshaped to `shape` (the same number of elements) when it is contiguous:
    /// `memref.collapse_shape` to one dimension, then `memref.expand_shape`. HIVM's DMA and
    /// elementwise ops want operands of equal shapes; npusim's only equal sizes.
    fn reshape(&mut self, m: &Mem, shape: &[u64]) -> Option<Mem> {
        if m.ty.shape == shape {
            return Some(m.clone());
        }
        let elements = |s: &[u64]| s.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let contiguous = m.ty.strides.as_ref().is_none_or(|s| {
            let id = MemTy::identity_strides(&m.ty.shape);
            // unit dimensions may have any stride
            s.iter()
                .zip(&id)
                .zip(&m.ty.shape)
                .all(|((a, b), &n)| a == b || n == 1)
        });
        if !contiguous || elements(&m.ty.shape)? != elements(shape)? || shape.is_empty() {
            return None;
        }
        let flat_len = elements(shape)?;
        let strided = |sh: &[u64]| m.ty.strides.as_ref().map(|_| MemTy::identity_strides(sh));
        let mut cur = m.clone();
        if cur.ty.shape.len() != 1 {
            let ty = MemTy {
                shape: vec![flat_len],
                strides: strided(&[flat_len]),
                ..cur.ty.clone()
            };
            let all: Vec<String> = (0..cur.ty.shape.len()).map(|d| d.to_string()).collect();
            let name = self.fresh("flat");
            self.line(&format!(
                "{name} = memref.collapse_shape {} [[{}]] : {} into {}",
                cur.name,
                all.join(", "),
                cur.ty.text(),
                ty.text()
            ));
            cur = Mem { name, ty };
        }
        if shape.len() != 1 {
            let ty = MemTy {
                shape: shape.to_vec(),
                strides: strided(shape),
                ..cur.ty.clone()
            };
            let all: Vec<String> = (0..shape.len()).map(|d| d.to_string()).collect();
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            let name = self.fresh("shaped");
            self.line(&format!(
                "{name} = memref.expand_shape {} [[{}]] output_shape [{}] : {} into {}",
                cur.name,
                all.join(", "),
                dims.join(", "),
                cur.ty.text(),
                ty.text()
            ));
            cur = Mem { name, ty };
        }
        Some(cur)
    }

    /// `a` and `b` with equal shapes: the on-chip side (the second, then the first) reshaped
    /// to the other's shape; unchanged when neither can be.
    fn same_shape(&mut self, a: Mem, b: Mem) -> (Mem, Mem) {
        if a.ty.shape == b.ty.shape {
            return (a, b);
        }
        if let Some(b2) = self.reshape(&b, &a.ty.shape.clone()) {
            return (a, b2);
        }
        if let Some(a2) = self.reshape(&a, &b.ty.shape.clone()) {
            return (a2, b);
        }
        (a, b)
    }

    fn lookup(&self, key: &str) -> Option<(String, Scalar)> {
        self.scopes.iter().rev().find_map(|s| s.get(key).cloned())
    }

    fn remember(&mut self, key: String, v: (String, Scalar)) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(key, v);
        }
    }

    /// An expression as an `index` value.
    fn index(&mut self, e: &Expr) -> String {
        let (v, t) = self.scalar(e);
        if t == Scalar::Index {
            return v;
        }
        let key = format!("idx {e:?}");
        if let Some((n, _)) = self.lookup(&key) {
            return n;
        }
        let w = self.fresh("w");
        self.line(&format!("{w} = arith.extui {v} : i1 to i64"));
        let n = self.fresh("i");
        self.line(&format!("{n} = arith.index_cast {w} : i64 to index"));
        self.remember(key, (n.clone(), Scalar::Index));
        n
    }

    /// An expression as an `i1` value (non-zero is true).
    fn cond(&mut self, e: &Expr) -> String {
        let (v, t) = self.scalar(e);
        if t == Scalar::I1 {
            return v;
        }
        let key = format!("i1 {e:?}");
        if let Some((n, _)) = self.lookup(&key) {
            return n;
        }
        let z = self.index(&Expr::Const(0));
        let n = self.fresh("b");
        self.line(&format!("{n} = arith.cmpi ne, {v}, {z} : index"));
        self.remember(key, (n.clone(), Scalar::I1));
        n
    }

    /// An expression in arith ops over `index` (comparisons and `&& || !` as `i1`), each
    /// distinct subexpression computed once per region. `/` and `%` floor, as npusim's do.
    fn scalar(&mut self, e: &Expr) -> (String, Scalar) {
        let key = format!("{e:?}");
        if let Some(v) = self.lookup(&key) {
            return v;
        }
        let v = match e {
            Expr::Const(c) => {
                let n = self.fresh(&if *c < 0 {
                    format!("c_{}", c.unsigned_abs())
                } else {
                    format!("c{c}")
                });
                self.line(&format!("{n} = arith.constant {c} : index"));
                (n, Scalar::Index)
            }
            Expr::Var(v) => match self.vars.get(v) {
                Some(n) => (n.clone(), Scalar::Index),
                None => {
                    // a variable with no value here cannot come from a valid program
                    self.problems.push(format!(
                        "loop variable `{}` used outside its loop",
                        self.p.var_name(*v)
                    ));
                    return self.scalar(&Expr::Const(0));
                }
            },
            Expr::Unary(UnOp::Neg, a) => {
                let a = self.index(a);
                let z = self.index(&Expr::Const(0));
                let n = self.fresh("t");
                self.line(&format!("{n} = arith.subi {z}, {a} : index"));
                (n, Scalar::Index)
            }
            Expr::Unary(UnOp::Not, a) => {
                let a = self.cond(a);
                let t = self.fresh("true");
                self.line(&format!("{t} = arith.constant true"));
                let n = self.fresh("b");
                self.line(&format!("{n} = arith.xori {a}, {t} : i1"));
                (n, Scalar::I1)
            }
            Expr::Binary(op, a, b) => match op {
                BinOp::And | BinOp::Or => {
                    let (a, b) = (self.cond(a), self.cond(b));
                    let n = self.fresh("b");
                    let f = if *op == BinOp::And { "andi" } else { "ori" };
                    self.line(&format!("{n} = arith.{f} {a}, {b} : i1"));
                    (n, Scalar::I1)
                }
                BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                    let (a, b) = (self.index(a), self.index(b));
                    let pred = match op {
                        BinOp::Lt => "slt",
                        BinOp::Le => "sle",
                        BinOp::Gt => "sgt",
                        BinOp::Ge => "sge",
                        BinOp::Eq => "eq",
                        _ => "ne",
                    };
                    let n = self.fresh("b");
                    self.line(&format!("{n} = arith.cmpi {pred}, {a}, {b} : index"));
                    (n, Scalar::I1)
                }
                BinOp::Rem => {
                    // a - floor(a / b) * b: floor modulo, like npusim's `%`
                    let q = Expr::Binary(BinOp::Div, a.clone(), b.clone());
                    let qv = self.index(&q);
                    let (av, bv) = (self.index(a), self.index(b));
                    let m = self.fresh("t");
                    self.line(&format!("{m} = arith.muli {qv}, {bv} : index"));
                    let n = self.fresh("t");
                    self.line(&format!("{n} = arith.subi {av}, {m} : index"));
                    (n, Scalar::Index)
                }
                _ => {
                    let (a, b) = (self.index(a), self.index(b));
                    let f = match op {
                        BinOp::Add => "addi",
                        BinOp::Sub => "subi",
                        BinOp::Mul => "muli",
                        BinOp::Div => "floordivsi",
                        BinOp::Min => "minsi",
                        _ => "maxsi",
                    };
                    let n = self.fresh("t");
                    self.line(&format!("{n} = arith.{f} {a}, {b} : index"));
                    (n, Scalar::Index)
                }
            },
        };
        self.remember(key, v.clone());
        v
    }

    /// A scalar operand of a vector op (`scalar:`) in the element type `d`.
    fn scalar_value(&mut self, e: &Expr, d: Dtype) -> Option<String> {
        let ty = mlir_dtype(d);
        if let Some(c) = e.as_const() {
            let n = self.fresh("cst");
            if is_float(d) {
                self.line(&format!("{n} = arith.constant {c}.0 : {ty}"));
            } else if d == Dtype::I1 {
                self.line(&format!("{n} = arith.constant {} : i1", c != 0));
            } else if ty.starts_with("ui") {
                return None;
            } else {
                self.line(&format!("{n} = arith.constant {c} : {ty}"));
            }
            return Some(n);
        }
        if ty.starts_with("ui") || d == Dtype::I1 {
            return None;
        }
        let i = self.index(e);
        let w = self.fresh("s");
        self.line(&format!("{w} = arith.index_cast {i} : index to i64"));
        let n = self.fresh("s");
        if is_float(d) {
            self.line(&format!("{n} = arith.sitofp {w} : i64 to {ty}"));
        } else if d == Dtype::I64 {
            return Some(w);
        } else {
            self.line(&format!("{n} = arith.trunci {w} : i64 to {ty}"));
        }
        Some(n)
    }

    fn event(&mut self, e: &Expr) -> String {
        match e.as_const() {
            Some(c) => format!("<EVENT_ID{c}>"),
            None => {
                let key = format!("ev {e:?}");
                if let Some((n, _)) = self.lookup(&key) {
                    return n;
                }
                let i = self.index(e);
                let n = self.fresh("ev");
                self.line(&format!("{n} = arith.index_cast {i} : index to i64"));
                self.remember(key, (n.clone(), Scalar::Index));
                n
            }
        }
    }

    fn dps(&mut self, name: &str, attrs: &str, ins: &[Mem], outs: &[Mem], tail: &str) {
        let list = |v: &[Mem]| {
            let names: Vec<&str> = v.iter().map(|m| m.name.as_str()).collect();
            let tys: Vec<String> = v.iter().map(|m| m.ty.text()).collect();
            format!("{} : {}", names.join(", "), tys.join(", "))
        };
        let attrs = if attrs.is_empty() {
            String::new()
        } else {
            format!(" {attrs}")
        };
        let text = format!(
            "hivm.hir.{name}{attrs} ins({}) outs({}){tail}",
            list(ins),
            list(outs)
        );
        self.line(&text);
    }

    fn op(&mut self, id: OpId) {
        let p = self.p;
        let op = &p.ops[id.index()];
        match &op.kind {
            OpKind::Load { src, dst, layout } => {
                let (Some(s), Some(d)) = (self.operand(src, id), self.operand(dst, id)) else {
                    return;
                };
                let (s, d) = self.same_shape(s, d);
                match layout {
                    Layout::Nz => self.dps("nd2nz", "{dst_continuous}", &[s], &[d], ""),
                    Layout::Nd => self.dps("load", "", &[s], &[d], ""),
                }
            }
            OpKind::Store { src, dst } => {
                let (Some(s), Some(d)) = (self.operand(src, id), self.operand(dst, id)) else {
                    return;
                };
                let (d, s) = self.same_shape(d, s);
                self.dps("store", "", &[s], &[d], "");
            }
            OpKind::Copy { src, dst } => {
                let (Some(s), Some(d)) = (self.operand(src, id), self.operand(dst, id)) else {
                    return;
                };
                let (s, d) = self.same_shape(s, d);
                if matches!(d.ty.space, "ca" | "cb") {
                    // HIVM has no op that moves L1 to L0A/L0B (its mmadL1 stages them itself)
                    self.line(&format!(
                        "memref.copy {}, {} : {} to {}",
                        s.name,
                        d.name,
                        s.ty.text(),
                        d.ty.text()
                    ));
                } else {
                    self.dps("copy", "", &[s], &[d], "");
                }
            }
            OpKind::Fixpipe {
                src,
                dst,
                quant,
                relu,
            } => {
                let (Some(s), Some(d)) = (self.operand(src, id), self.operand(dst, id)) else {
                    return;
                };
                let mut attrs = vec!["dma_mode = #hivm.dma_mode<nz2nd>".to_string()];
                match quant {
                    Quant::None => {}
                    Quant::Scalar => {
                        let mode = match (s.ty.dtype, d.ty.dtype) {
                            (Dtype::F32, Dtype::F16) => Some("F322F16"),
                            (Dtype::F32, Dtype::Bf16) => Some("F322BF16"),
                            (Dtype::I32, Dtype::I8) => Some("S322I8"),
                            _ => None,
                        };
                        match mode {
                            Some(m) => {
                                attrs.push(format!("pre_quant = #hivm.fixpipe_pre_quant_mode<{m}>"))
                            }
                            None => self.problem(
                                Some(id),
                                format!(
                                    "fixpipe quantisation from {} to {} has no HIVM pre_quant mode",
                                    s.ty.dtype, d.ty.dtype
                                ),
                            ),
                        }
                    }
                    Quant::Tensor(_) => self.problem(
                        Some(id),
                        "per-channel quantisation (an FP operand) has no HIVM form".into(),
                    ),
                }
                if *relu {
                    attrs.push("pre_relu = #hivm.fixpipe_pre_relu_mode<NORMAL_RELU>".into());
                }
                self.dps(
                    "fixpipe",
                    &format!("{{{}}}", attrs.join(", ")),
                    &[s],
                    &[d],
                    "",
                );
            }
            OpKind::Mmad(m) | OpKind::MmadL1(m) => self.mmad(m, id),
            OpKind::Vector(v) => self.vector(v, id),
            OpKind::Sload { src } => {
                let Some(s) = self.operand(src, id) else {
                    return;
                };
                if s.ty.dtype.name().starts_with('u') {
                    self.problem(
                        Some(id),
                        "sload of an unsigned dtype has no arith form".into(),
                    );
                    return;
                }
                let zeros: Vec<String> = (0..s.ty.shape.len())
                    .map(|_| self.index(&Expr::Const(0)))
                    .collect();
                let n = self.fresh("sl");
                self.line(&format!(
                    "{n} = memref.load {}[{}] : {}",
                    s.name,
                    zeros.join(", "),
                    s.ty.text()
                ));
            }
            OpKind::Sstore { dst } => {
                let Some(d) = self.operand(dst, id) else {
                    return;
                };
                let Some(v) = self.scalar_value(&Expr::Const(0), d.ty.dtype) else {
                    self.problem(
                        Some(id),
                        "sstore of an unsigned dtype has no arith form".into(),
                    );
                    return;
                };
                let zeros: Vec<String> = (0..d.ty.shape.len())
                    .map(|_| self.index(&Expr::Const(0)))
                    .collect();
                self.line(&format!(
                    "memref.store {v}, {}[{}] : {}",
                    d.name,
                    zeros.join(", "),
                    d.ty.text()
                ));
            }
            // scalar work has no memory effect and no HIVM op: not written
            OpKind::Scalar { .. } => {}
            OpKind::Use { operands } => {
                // annotation.mark is a use to HIVM's PlanMemory: it keeps the buffer alive
                for o in operands {
                    if let Some(m) = self.operand(o, id) {
                        self.line(&format!("annotation.mark {} : {}", m.name, m.ty.text()));
                    }
                }
            }
            OpKind::SetFlag { src, dst, id: e } | OpKind::WaitFlag { src, dst, id: e } => {
                let ev = self.event(e);
                let name = if matches!(op.kind, OpKind::SetFlag { .. }) {
                    "set_flag"
                } else {
                    "wait_flag"
                };
                self.line(&format!(
                    "hivm.hir.{name}[<{}>, <{}>, {ev}]",
                    src.cce_name(),
                    dst.cce_name()
                ));
            }
            OpKind::Barrier(t) => {
                let pipe = match t {
                    BarrierTarget::Pipe(p) => p.cce_name(),
                    BarrierTarget::All => "PIPE_ALL",
                };
                self.line(&format!("hivm.hir.pipe_barrier[<{pipe}>]"));
            }
            OpKind::CrossSet { pipe, id: e, .. } => {
                let flag = self.flag(e);
                let core = self.tcore();
                self.line(&format!(
                    "hivm.hir.sync_block_set[<{core}>, <{}>, <PIPE_S>] flag = {flag}",
                    pipe.cce_name()
                ));
            }
            OpKind::CrossWait { pipe, id: e } => {
                let flag = self.flag(e);
                let core = self.tcore();
                self.line(&format!(
                    "hivm.hir.sync_block_wait[<{core}>, <PIPE_S>, <{}>] flag = {flag}",
                    pipe.cce_name()
                ));
            }
            OpKind::For(f) => {
                let (from, to, step) =
                    (self.index(&f.from), self.index(&f.to), self.index(&f.step));
                let var = self.fresh(&p.vars[f.var.index()].name);
                self.vars.insert(f.var, var.clone());
                self.line(&format!("scf.for {var} = {from} to {to} step {step} {{"));
                self.region(&f.body, true);
                self.line("}");
            }
            OpKind::While { var, trips, body } => {
                let (z, n, one) = (
                    self.index(&Expr::Const(0)),
                    self.index(trips),
                    self.index(&Expr::Const(1)),
                );
                let v = self.fresh("w");
                self.vars.insert(*var, v.clone());
                self.line(&format!("scf.for {v} = {z} to {n} step {one} {{"));
                self.region(body, true);
                self.line("}");
            }
            OpKind::If { cond, then, els } => {
                let c = self.cond(cond);
                self.line(&format!("scf.if {c} {{"));
                self.region(then, false);
                if let Some(e) = els {
                    self.line("} else {");
                    self.region(e, false);
                }
                self.line("}");
            }
        }
    }

    fn region(&mut self, b: &Block, loop_body: bool) {
        self.indent += 2;
        self.push_scope();
        self.block(b, loop_body);
        self.pop_scope();
        self.indent -= 2;
    }

    fn tcore(&self) -> &'static str {
        if self.pipes.contains(&Pipe::M) {
            "CUBE"
        } else {
            "VECTOR"
        }
    }

    fn flag(&mut self, e: &Expr) -> String {
        match e.as_const() {
            Some(c) => c.to_string(),
            None => {
                let i = self.index(e);
                let n = self.fresh("flag");
                self.line(&format!("{n} = arith.index_cast {i} : index to i64"));
                n
            }
        }
    }

    /// `mmad` and `mmad_l1` as `hivm.hir.mmadL1 ins(a, b, init, m, k, n) outs(c)`.
    fn mmad(&mut self, m: &Mmad, id: OpId) {
        if m.bias.is_some() {
            self.problem(
                Some(id),
                "an mmad bias (a BT operand) has no HIVM form".into(),
            );
            return;
        }
        let (Some(a), Some(b), Some(c)) = (
            self.operand(&m.a, id),
            self.operand(&m.b, id),
            self.operand(&m.c, id),
        ) else {
            return;
        };
        let init = self.cond(&m.init);
        let (mm, k, n) = (self.index(&m.m), self.index(&m.k), self.index(&m.n));
        self.line(&format!(
            "hivm.hir.mmadL1 ins({}, {}, {init}, {mm}, {k}, {n} : {}, {}, i1, index, index, index) outs({} : {})",
            a.name,
            b.name,
            a.ty.text(),
            b.ty.text(),
            c.name,
            c.ty.text()
        ));
    }

    fn vector(&mut self, v: &VectorOp, id: OpId) {
        let mut ins = Vec::new();
        for o in &v.ins {
            match self.operand(o, id) {
                Some(m) => ins.push(m),
                None => return,
            }
        }
        let mut outs = Vec::new();
        for o in &v.outs {
            match self.operand(o, id) {
                Some(m) => outs.push(m),
                None => return,
            }
        }
        let tmp = match &v.tmp {
            Some(t) => match self.operand(t, id) {
                Some(m) => format!(" temp_buffer({} : {})", m.name, m.ty.text()),
                None => return,
            },
            None => String::new(),
        };
        let Some(out) = outs.first().cloned() else {
            return;
        };
        let rank = out.ty.shape.len();
        let dims = |d: &[u32]| {
            let l: Vec<String> = d.iter().map(|x| x.to_string()).collect();
            format!("[{}]", l.join(", "))
        };
        match v.op.form() {
            VecForm::Binary | VecForm::Compare | VecForm::Select => {
                let ins: Vec<Mem> = ins
                    .into_iter()
                    .map(|m| {
                        if v.broadcast.is_empty() {
                            self.reshape(&m, &out.ty.shape).unwrap_or(m)
                        } else {
                            self.expand(m, rank, &v.broadcast)
                        }
                    })
                    .collect();
                let bc = if v.broadcast.is_empty() {
                    String::new()
                } else {
                    format!(" broadcast = {}", dims(&v.broadcast))
                };
                self.dps(v.op.name(), "", &ins, &outs, &format!("{tmp}{bc}"));
            }
            VecForm::Unary => match v.op {
                _ if ins.first().is_some_and(|m| m.ty.shape != out.ty.shape) => {
                    let ins: Vec<Mem> = ins
                        .into_iter()
                        .map(|m| self.reshape(&m, &out.ty.shape).unwrap_or(m))
                        .collect();
                    let name = if v.op == VecOp::Vcopy {
                        "copy"
                    } else {
                        v.op.name()
                    };
                    self.dps(name, "", &ins, &outs, &tmp);
                }
                VecOp::Vcopy => self.dps("copy", "", &ins, &outs, ""),
                VecOp::Vdup => {
                    let e = v.scalar.clone().unwrap_or(Expr::Const(0));
                    let Some(s) = self.scalar_value(&e, out.ty.dtype) else {
                        self.problem(Some(id), "vdup of this dtype has no arith constant".into());
                        return;
                    };
                    self.line(&format!(
                        "hivm.hir.vbrc ins({s} : {}) outs({} : {})",
                        mlir_dtype(out.ty.dtype),
                        out.name,
                        out.ty.text()
                    ));
                }
                _ => self.dps(v.op.name(), "", &ins, &outs, &tmp),
            },
            VecForm::WithScalar => {
                let name = match v.op {
                    VecOp::Vadds => "vadd",
                    VecOp::Vmuls => "vmul",
                    VecOp::Vmaxs => "vmax",
                    _ => "vmin",
                };
                let Some(x) = ins.first().cloned() else {
                    return;
                };
                let e = v.scalar.clone().unwrap_or(Expr::Const(0));
                let Some(s) = self.scalar_value(&e, x.ty.dtype) else {
                    self.problem(
                        Some(id),
                        format!("{} of this dtype has no arith scalar", v.op.name()),
                    );
                    return;
                };
                self.line(&format!(
                    "hivm.hir.{name} ins({}, {s} : {}, {}) outs({} : {}){tmp}",
                    x.name,
                    x.ty.text(),
                    mlir_dtype(x.ty.dtype),
                    out.name,
                    out.ty.text()
                ));
            }
            VecForm::Broadcast => {
                let ins: Vec<Mem> = ins
                    .into_iter()
                    .map(|m| self.expand(m, rank, &v.broadcast))
                    .collect();
                let bc = if v.broadcast.is_empty() {
                    String::new()
                } else {
                    format!(" broadcast_dims = {}", dims(&v.broadcast))
                };
                self.dps("vbrc", "", &ins, &outs, &format!("{tmp}{bc}"));
            }
            VecForm::Reduce => {
                let kind = match v.op {
                    VecOp::VreduceSum => "sum",
                    VecOp::VreduceMax => "max",
                    _ => "min",
                };
                let in_rank = ins.first().map_or(0, |m| m.ty.shape.len());
                let outs: Vec<Mem> = outs
                    .into_iter()
                    .map(|m| self.expand(m, in_rank, &v.dims))
                    .collect();
                self.dps(
                    "vreduce",
                    &format!("<{kind}>"),
                    &ins,
                    &outs,
                    &format!("{tmp} reduce_dims = {}", dims(&v.dims)),
                );
            }
            VecForm::Transpose => {
                let perm: Vec<u32> = (0..rank as u32).rev().collect();
                self.dps(
                    "vtranspose",
                    "",
                    &ins,
                    &outs,
                    &format!("{tmp} permutation = {}", dims(&perm)),
                );
            }
            VecForm::Deinterleave => {
                // HIVM writes one channel per op: two ops, channel 0 then channel 1
                for (k, o) in outs.iter().enumerate() {
                    self.dps(
                        "vdeinterleave",
                        "",
                        &ins,
                        std::slice::from_ref(o),
                        &format!(" channel_num = 2 index_mode = <CHANNEL_{k}>"),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_strides_are_suffix_products() {
        assert_eq!(MemTy::identity_strides(&[4, 8, 16]), vec![128, 16, 1]);
        assert_eq!(MemTy::identity_strides(&[]), Vec::<u64>::new());
    }

    #[test]
    fn types_print_like_hivm() {
        let t = MemTy {
            shape: vec![8, 1024],
            dtype: Dtype::F32,
            space: "ub",
            strides: None,
            offset: Some(0),
        };
        assert_eq!(t.text(), "memref<8x1024xf32, #hivm.address_space<ub>>");
        let s = MemTy {
            strides: Some(vec![1024, 1]),
            dtype: Dtype::U8,
            offset: None,
            ..t.clone()
        };
        assert_eq!(
            s.text(),
            "memref<8x1024xui8, strided<[1024, 1], offset: ?>, #hivm.address_space<ub>>"
        );
        let at = |o| MemTy {
            strides: Some(vec![1024, 1]),
            offset: Some(o),
            ..t.clone()
        };
        assert_eq!(
            at(0).text(),
            "memref<8x1024xf32, strided<[1024, 1]>, #hivm.address_space<ub>>"
        );
        assert_eq!(
            at(2048).text(),
            "memref<8x1024xf32, strided<[1024, 1], offset: 2048>, #hivm.address_space<ub>>"
        );
    }

    #[test]
    fn bt_and_fp_have_no_address_space() {
        assert_eq!(hivm_space(Space::Bt), None);
        assert_eq!(hivm_space(Space::Fp), None);
        assert_eq!(hivm_space(Space::L1), Some("cbuf"));
        assert_eq!(hivm_space(Space::L0a), Some("ca"));
    }
}
