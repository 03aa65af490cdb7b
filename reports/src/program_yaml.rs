//! A loaded program printed back as an npusim kernel YAML document (`npusim plan --show-sync`).
//!
//! The document is built from the program's structure alone, never from the YAML paths of its
//! ops (the sync pass inserts ops whose paths exist in no file) nor from the text operands were
//! written with: operands, shapes and expressions are printed from their resolved form, with
//! params folded into constants and loop variables under their names. Params are still listed
//! with their effective values, for information. The result says `sync: manual`, pins every
//! buffer to the address the plan gave it (`at:`, one offset per slot; `multi:` grows to match
//! when the planner made the buffer a multi-buffer), and loads back into a program that runs
//! with exactly the same cycles.
//!
//! A mixed kernel prints as one document with its `aic:` and `aiv:` parts, each part's body
//! synchronised and pinned on its own; a launch prints its `launch: { blocks }`
//! ([`kernel_yaml`]).
//!
//! Anonymous `while` counters (no `var:`) are not names a program can write; if an expression
//! reads one (only a pass can produce that), the loop is printed with a fresh `var:` name.

use planner::Plan;
use sim::expr::Expr;
use sim::program::{
    BarrierTarget, Block, Index, Layout, Mmad, OpKind, Operand, Program, Quant, Ref, VecForm,
    VecOp, VectorOp, ViewKind,
};
use sim::{Config, VarId};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Prints `program` as a `sync: manual` kernel YAML document with every buffer at the address
/// `plan` gave it. Deterministic: the same inputs give byte-identical text.
pub fn program_yaml(program: &Program, config: &Config, plan: &Plan) -> String {
    kernel_yaml(&[(program, plan)], config)
}

/// Prints a kernel's synchronised parts, each with its plan, as one `sync: manual` kernel YAML
/// document: a single program as [`program_yaml`] does, a mixed kernel (parts `aic`, then
/// `aiv`) with the shared top level (`kernel`, `launch`, `sync`, `params`, `gm`) once and
/// each part's buffers, views and body under `aic:` and `aiv:`. A launch of more than one
/// block, or a program with a `launch` key, prints `launch: { blocks: N }` with the blocks it
/// was loaded with (`--blocks` included). Deterministic: the same inputs give byte-identical
/// text.
pub fn kernel_yaml(parts: &[(&Program, &Plan)], config: &Config) -> String {
    let Some(&(first, _)) = parts.first() else {
        return String::new();
    };
    let mixed = parts.len() > 1;
    let names = Names::new(first, parts.iter().map(|p| p.0));
    let mut out = header(first, config, mixed, &names);
    for &(program, plan) in parts {
        let indent = if mixed {
            out.push_str(&format!("{}:\n", config.core(program.core).name));
            2
        } else {
            0
        };
        out.push_str(&part(program, plan, &names, indent));
    }
    out
}

/// The launch names (`block`, `blocks`, `subblock`) when the printed document declares a
/// launch its program did not (`--blocks` on a program without `launch:`): the program may
/// use them for its own entities, which then print under fresh names.
const LAUNCH_NAMES: [&str; 3] = ["block", "blocks", "subblock"];

/// Whether the document prints `launch:`: the program had one, or runs on several blocks.
fn has_launch(p: &Program) -> bool {
    p.launch.block.is_some() || p.launch.blocks > 1
}

/// The names entities print under: their own, except that an entity named like a launch
/// variable gets a fresh name when the document adds a launch the program did not declare.
struct Names {
    /// (old name, new name) pairs; empty nearly always.
    renamed: Vec<(String, String)>,
}

impl Names {
    fn new<'p>(first: &Program, parts: impl Iterator<Item = &'p Program> + Clone) -> Names {
        let mut renamed = Vec::new();
        if first.launch.block.is_some() || !has_launch(first) {
            return Names { renamed };
        }
        let mut taken: BTreeSet<String> = BTreeSet::new();
        for p in parts.clone() {
            taken.extend(p.params.iter().map(|(n, _)| n.clone()));
            taken.extend(p.tensors.iter().map(|t| t.name.clone()));
            taken.extend(p.buffers.iter().map(|b| b.name.clone()));
            taken.extend(p.views.iter().map(|v| v.name.clone()));
            taken.extend(p.vars.iter().map(|v| v.name.clone()));
        }
        taken.extend(LAUNCH_NAMES.iter().map(|n| n.to_string()));
        for name in LAUNCH_NAMES {
            let used = parts.clone().any(|p| {
                p.tensors.iter().any(|t| t.name == name)
                    || p.buffers.iter().any(|b| b.name == name)
                    || p.views.iter().any(|v| v.name == name)
                    || p.vars.iter().any(|v| v.name == name)
            });
            if !used {
                continue;
            }
            let mut k = 1;
            let fresh = loop {
                let n = format!("{name}_{k}");
                if !taken.contains(&n) {
                    break n;
                }
                k += 1;
            };
            taken.insert(fresh.clone());
            renamed.push((name.to_string(), fresh));
        }
        Names { renamed }
    }

    /// The printed name of an entity named `name`.
    fn of<'s>(&'s self, name: &'s str) -> &'s str {
        self.renamed
            .iter()
            .find(|(old, _)| old == name)
            .map_or(name, |(_, new)| new.as_str())
    }

    /// Whether a param named `name` is left out of the informational `params:` (its name is
    /// the launch's now; params are folded into the expressions anyway).
    fn hides_param(&self, first: &Program, name: &str) -> bool {
        first.launch.block.is_none() && has_launch(first) && LAUNCH_NAMES.contains(&name)
    }
}

/// The top level: comments, `kernel`, `core` (a single program), `launch`, `sync`, `params`,
/// `gm`.
fn header(p: &Program, config: &Config, mixed: bool, names: &Names) -> String {
    let mut out = String::new();
    out.push_str(
        "# Generated by npusim: the synchronised program (sync: manual), every buffer pinned to \
         its planned address.\n",
    );
    out.push_str(
        "# Params are folded into the expressions below; their values are listed for information.\n",
    );
    out.push_str(&format!("kernel: {}\n", scalar(&p.kernel)));
    if !mixed {
        out.push_str(&format!("core: {}\n", scalar(&config.core(p.core).name)));
    }
    if has_launch(p) {
        out.push_str(&format!("launch: {{ blocks: {} }}\n", p.launch.blocks));
    }
    out.push_str("sync: manual\n");
    let params: Vec<String> = p
        .params
        .iter()
        .filter(|(k, _)| !names.hides_param(p, k))
        .map(|(k, v)| format!("{}: {v}", scalar(k)))
        .collect();
    if !params.is_empty() {
        out.push_str(&format!("params: {{ {} }}\n", params.join(", ")));
    }
    if !p.tensors.is_empty() {
        out.push_str("gm:\n");
        for t in &p.tensors {
            let f = flow(&[("shape", list(&t.shape)), ("dtype", t.dtype.name().into())]);
            out.push_str(&format!("  {}: {f}\n", scalar(names.of(&t.name))));
        }
    }
    out
}

/// One part's declarations and body at `indent`. Printed twice when an expression reads an
/// anonymous `while` counter: the second time that loop declares it under a fresh name.
fn part(program: &Program, plan: &Plan, names: &Names, indent: usize) -> String {
    let vars = var_names(program, names);
    let used = RefCell::new(BTreeSet::new());
    let none = BTreeSet::new();
    let first = Printer::new(program, plan, &vars, names, &none, &used).body(indent);
    let anonymous: BTreeSet<VarId> = used
        .into_inner()
        .into_iter()
        .filter(|v| !is_name(&program.vars[v.index()].name))
        .collect();
    if anonymous.is_empty() {
        return first;
    }
    let used = RefCell::new(BTreeSet::new());
    Printer::new(program, plan, &vars, names, &anonymous, &used).body(indent)
}

/// Names a program can write: letters, digits and `_`, not starting with a digit.
fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every loop variable's printed name: its own (or its new one, [`Names`]), or a fresh one
/// for an anonymous `while` counter (`w`, `w_1`, ... avoiding every name the program
/// declares).
fn var_names(program: &Program, names: &Names) -> Vec<String> {
    let mut taken: BTreeSet<String> = program.params.iter().map(|(n, _)| n.clone()).collect();
    taken.extend(program.tensors.iter().map(|t| t.name.clone()));
    taken.extend(program.buffers.iter().map(|b| b.name.clone()));
    taken.extend(program.views.iter().map(|v| v.name.clone()));
    taken.extend(program.vars.iter().map(|v| v.name.clone()));
    taken.extend(names.renamed.iter().map(|(_, new)| new.clone()));
    if has_launch(program) {
        taken.extend(LAUNCH_NAMES.iter().map(|n| n.to_string()));
    }
    let mut out = Vec::with_capacity(program.vars.len());
    for v in &program.vars {
        if is_name(&v.name) {
            out.push(names.of(&v.name).to_string());
            continue;
        }
        let mut k = 0;
        let fresh = loop {
            let n = if k == 0 {
                "w".to_string()
            } else {
                format!("w_{k}")
            };
            if !taken.contains(&n) {
                break n;
            }
            k += 1;
        };
        taken.insert(fresh.clone());
        out.push(fresh);
    }
    out
}

/// A YAML scalar for `s`: plain when it is a name YAML reads back as that same string,
/// double-quoted otherwise.
fn scalar(s: &str) -> String {
    let plain = is_name(s)
        && sim::yaml::parse(&format!("k: {s}")).is_ok_and(
            |n| matches!(n.get("k").map(|v| &v.value), Some(sim::yaml::Value::Str(x)) if x == s),
        );
    if plain {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    sim::yaml::double_quoted(s, &mut out);
    out
}

/// `{ k: v, ... }`.
fn flow(fields: &[(&str, String)]) -> String {
    if fields.is_empty() {
        return "{}".into();
    }
    let items: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{ {} }}", items.join(", "))
}

/// `[a, b, ...]`.
fn list<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

struct Printer<'a> {
    program: &'a Program,
    plan: &'a Plan,
    /// Every variable's printed name.
    names: &'a [String],
    /// The printed names of params, tensors, buffers and views.
    entities: &'a Names,
    /// Anonymous `while` counters that get a `var:` because an expression reads them.
    declare: &'a BTreeSet<VarId>,
    /// Every variable an expression printed so far reads.
    used: &'a RefCell<BTreeSet<VarId>>,
    out: String,
}

impl<'a> Printer<'a> {
    fn new(
        program: &'a Program,
        plan: &'a Plan,
        names: &'a [String],
        entities: &'a Names,
        declare: &'a BTreeSet<VarId>,
        used: &'a RefCell<BTreeSet<VarId>>,
    ) -> Self {
        Printer {
            program,
            plan,
            names,
            entities,
            declare,
            used,
            out: String::new(),
        }
    }

    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push(' ');
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// The program's top-level declarations and body at `indent`.
    fn body(mut self, indent: usize) -> String {
        let p = self.program;
        self.declarations(&p.body, indent);
        self.ops_key("body", &p.body.ops, indent);
        self.out
    }

    // ----- names and expressions -----------------------------------------------------------

    fn var(&self, v: VarId) -> String {
        self.used.borrow_mut().insert(v);
        self.names[v.index()].clone()
    }

    /// An expression as YAML text without quotes.
    fn expr_src(&self, e: &Expr) -> String {
        let name = |v: VarId| self.var(v);
        let text = e.display(&name).to_string();
        text
    }

    /// An expression as a YAML value: a bare integer, a bare name, or a quoted string.
    fn expr(&self, e: &Expr) -> String {
        match e.as_const() {
            Some(v) => v.to_string(),
            None => scalar(&self.expr_src(e)),
        }
    }

    /// An expression where `true`/`false` are accepted (`init`, `if`).
    fn cond(&self, e: &Expr) -> String {
        match e.as_const() {
            Some(1) => "true".into(),
            Some(0) => "false".into(),
            _ => self.expr(e),
        }
    }

    fn base_shape(&self, r: Ref) -> &'a [u64] {
        let p = self.program;
        match r {
            Ref::Buffer(b) => &p.buffer(b).shape,
            Ref::View(v) => &p.view(v).shape,
            Ref::Tensor(t) => &p.tensor(t).shape,
        }
    }

    /// An operand rebuilt from its resolved form: `name`, `name@k`, `name[i, a:b, :]`.
    fn operand(&self, o: &Operand) -> String {
        let mut s = self.name(o.base).to_string();
        if let Some(k) = &o.slot {
            s.push('@');
            match k {
                Expr::Const(_) | Expr::Var(_) => s.push_str(&self.expr_src(k)),
                _ => {
                    let _ = write!(s, "({})", self.expr_src(k));
                }
            }
        }
        if !o.indices.is_empty() {
            let shape = self.base_shape(o.base);
            let items: Vec<String> = o
                .indices
                .iter()
                .enumerate()
                .map(|(d, i)| match i {
                    Index::At(e) => self.expr_src(e),
                    Index::Slice { start, end } => {
                        let whole = start.as_const() == Some(0)
                            && shape
                                .get(d)
                                .is_some_and(|x| end.as_const() == Some(*x as i64));
                        if whole {
                            ":".into()
                        } else {
                            format!("{}:{}", self.expr_src(start), self.expr_src(end))
                        }
                    }
                })
                .collect();
            let _ = write!(s, "[{}]", items.join(", "));
        }
        scalar(&s)
    }

    /// The printed name of what `r` names.
    fn name(&self, r: Ref) -> &str {
        self.entities.of(self.program.ref_name(r))
    }

    /// The printed name of buffer `b`.
    fn buffer_name(&self, b: sim::BufferId) -> &str {
        self.entities.of(&self.program.buffer(b).name)
    }

    fn operands(&self, os: &[Operand]) -> String {
        list(os.iter().map(|o| self.operand(o)))
    }

    // ----- declarations --------------------------------------------------------------------

    fn declarations(&mut self, block: &Block, indent: usize) {
        let p = self.program;
        if !block.buffers.is_empty() {
            self.line(indent, "buffers:");
            for &b in &block.buffers {
                let buf = p.buffer(b);
                let offsets = self
                    .plan
                    .buffers
                    .get(b.index())
                    .map_or(&[][..], |bp| &bp.offsets[..]);
                let multi = if offsets.len() > buf.multi as usize {
                    offsets.len() as u32
                } else {
                    buf.multi
                };
                let mut f = vec![
                    ("scope", buf.scope.yaml_name().to_string()),
                    ("shape", list(&buf.shape)),
                    ("dtype", buf.dtype.name().to_string()),
                ];
                if multi != 1 {
                    f.push(("multi", multi.to_string()));
                }
                if !buf.inplace {
                    f.push(("inplace", "false".into()));
                }
                if buf.unique {
                    f.push(("unique", "true".into()));
                }
                if let Some(s) = buf.share {
                    f.push(("share", scalar(self.buffer_name(s))));
                }
                if buf.preload {
                    f.push(("preload", "true".into()));
                }
                if offsets.len() == multi as usize {
                    f.push(("at", list(offsets)));
                }
                let name = scalar(self.buffer_name(b));
                self.line(indent + 2, &format!("{name}: {}", flow(&f)));
            }
        }
        if !block.views.is_empty() {
            self.line(indent, "views:");
            for &v in &block.views {
                let view = p.view(v);
                let f = match &view.kind {
                    ViewKind::Window { of, offset } => flow(&[
                        ("of", scalar(self.name(*of))),
                        ("offset", self.expr(offset)),
                        ("shape", list(&view.shape)),
                    ]),
                    ViewKind::Select { of } => flow(&[(
                        "select",
                        list(of.iter().map(|b| scalar(self.buffer_name(*b)))),
                    )]),
                };
                let name = scalar(self.entities.of(&view.name));
                self.line(indent + 2, &format!("{name}: {f}"));
            }
        }
    }

    // ----- ops -----------------------------------------------------------------------------

    /// `key:` followed by the ops as list items, or `key: []`.
    fn ops_key(&mut self, key: &str, ops: &[sim::OpId], indent: usize) {
        if ops.is_empty() {
            self.line(indent, &format!("{key}: []"));
            return;
        }
        self.line(indent, &format!("{key}:"));
        for &id in ops {
            self.op(id, indent + 2);
        }
    }

    /// A branch: a list of ops, or `{ buffers, views, body }` when it declares anything.
    fn branch(&mut self, key: &str, block: &Block, indent: usize) {
        if block.buffers.is_empty() && block.views.is_empty() {
            self.ops_key(key, &block.ops, indent);
        } else {
            self.line(indent, &format!("{key}:"));
            self.declarations(block, indent + 2);
            self.ops_key("body", &block.ops, indent + 2);
        }
    }

    fn op(&mut self, id: sim::OpId, indent: usize) {
        let p = self.program;
        let kind = &p.op(id).kind;
        let item = |s: &mut Self, value: String| {
            s.line(indent, &format!("- {}: {value}", kind.name()));
        };
        match kind {
            OpKind::For(l) => {
                let mut f = vec![("var", scalar(&self.var(l.var)))];
                if l.from.as_const() != Some(0) {
                    f.push(("from", self.expr(&l.from)));
                }
                f.push(("to", self.expr(&l.to)));
                if l.step.as_const() != Some(1) {
                    f.push(("step", self.expr(&l.step)));
                }
                item(self, flow(&f));
                self.declarations(&l.body, indent + 2);
                self.ops_key("body", &l.body.ops, indent + 2);
            }
            OpKind::While { var, trips, body } => {
                let mut f = vec![("trips", self.expr(trips))];
                if is_name(&p.vars[var.index()].name) || self.declare.contains(var) {
                    f.push(("var", scalar(&self.names[var.index()])));
                }
                item(self, flow(&f));
                self.declarations(body, indent + 2);
                self.ops_key("body", &body.ops, indent + 2);
            }
            OpKind::If { cond, then, els } => {
                let c = self.cond(cond);
                item(self, c);
                self.branch("then", then, indent + 2);
                if let Some(e) = els {
                    self.branch("else", e, indent + 2);
                }
            }
            _ => {
                let f = self.leaf(kind);
                item(self, f);
            }
        }
    }

    /// The value of a leaf op's key.
    fn leaf(&self, kind: &OpKind) -> String {
        match kind {
            OpKind::Load { src, dst, layout } => {
                let mut f = vec![("src", self.operand(src)), ("dst", self.operand(dst))];
                if *layout == Layout::Nz {
                    f.push(("layout", "nz".into()));
                }
                flow(&f)
            }
            OpKind::Store { src, dst } | OpKind::Copy { src, dst } => {
                flow(&[("src", self.operand(src)), ("dst", self.operand(dst))])
            }
            OpKind::Fixpipe {
                src,
                dst,
                quant,
                relu,
            } => {
                let mut f = vec![("src", self.operand(src)), ("dst", self.operand(dst))];
                match quant {
                    Quant::None => {}
                    Quant::Scalar => f.push(("quant", "true".into())),
                    Quant::Tensor(q) => f.push(("quant", self.operand(q))),
                }
                if *relu {
                    f.push(("relu", "true".into()));
                }
                flow(&f)
            }
            OpKind::Mmad(m) | OpKind::MmadL1(m) => self.mmad(m),
            OpKind::Vector(v) => self.vector(v),
            OpKind::Sload { src } => flow(&[("src", self.operand(src))]),
            OpKind::Sstore { dst } => flow(&[("dst", self.operand(dst))]),
            OpKind::Scalar { cycles } => flow(&[("cycles", self.expr(cycles))]),
            OpKind::Use { operands } => self.operands(operands),
            OpKind::SetFlag { src, dst, id } | OpKind::WaitFlag { src, dst, id } => flow(&[
                ("src", src.yaml_name().into()),
                ("dst", dst.yaml_name().into()),
                ("id", self.expr(id)),
            ]),
            OpKind::Barrier(BarrierTarget::All) => "all".into(),
            OpKind::Barrier(BarrierTarget::Pipe(p)) => p.yaml_name().into(),
            OpKind::CrossSet { mode, pipe, id } => flow(&[
                ("mode", mode.number().to_string()),
                ("pipe", pipe.yaml_name().into()),
                ("id", self.expr(id)),
            ]),
            OpKind::CrossWait { pipe, id } => {
                flow(&[("id", self.expr(id)), ("pipe", pipe.yaml_name().into())])
            }
            OpKind::For(_) | OpKind::If { .. } | OpKind::While { .. } => {
                unreachable!("control ops are printed by op()")
            }
        }
    }

    fn mmad(&self, m: &Mmad) -> String {
        let mut f = vec![
            ("a", self.operand(&m.a)),
            ("b", self.operand(&m.b)),
            ("c", self.operand(&m.c)),
            ("m", self.expr(&m.m)),
            ("n", self.expr(&m.n)),
            ("k", self.expr(&m.k)),
            ("init", self.cond(&m.init)),
        ];
        if let Some(b) = &m.bias {
            f.push(("bias", self.operand(b)));
        }
        flow(&f)
    }

    fn vector(&self, v: &VectorOp) -> String {
        let mut f = Vec::new();
        // vdup filling `out` with its scalar takes no ins:
        if !(v.op == VecOp::Vdup && v.ins.is_empty()) {
            f.push(("ins", self.operands(&v.ins)));
        }
        let out = if v.op.form() == VecForm::Deinterleave {
            self.operands(&v.outs)
        } else {
            match v.outs.first() {
                Some(o) => self.operand(o),
                None => "[]".into(),
            }
        };
        f.push(("out", out));
        if let Some(t) = &v.tmp {
            f.push(("tmp", self.operand(t)));
        }
        if let Some(s) = &v.scalar {
            f.push(("scalar", self.expr(s)));
        }
        if !v.broadcast.is_empty() {
            f.push(("broadcast", list(&v.broadcast)));
        }
        if v.transpose {
            f.push(("transpose", "true".into()));
        }
        if !v.dims.is_empty() {
            f.push(("dims", list(&v.dims)));
        }
        flow(&f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_yaml_would_misread_are_quoted() {
        assert_eq!(scalar("xb"), "xb");
        assert_eq!(scalar("null"), "\"null\"");
        assert_eq!(scalar("True"), "\"True\"");
        assert_eq!(scalar("t % 2"), "\"t % 2\"");
        assert_eq!(scalar("min(t, 2)"), "\"min(t, 2)\"");
        assert_eq!(scalar("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
