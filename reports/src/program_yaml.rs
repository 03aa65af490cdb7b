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
    let names = var_names(program);
    let used = RefCell::new(BTreeSet::new());
    let none = BTreeSet::new();
    let core = &config.core(program.core).name;
    let first = Printer::new(program, core, plan, &names, &none, &used).document();
    let anonymous: BTreeSet<VarId> = used
        .into_inner()
        .into_iter()
        .filter(|v| !is_name(&program.vars[v.index()].name))
        .collect();
    if anonymous.is_empty() {
        return first;
    }
    let used = RefCell::new(BTreeSet::new());
    Printer::new(program, core, plan, &names, &anonymous, &used).document()
}

/// Names a program can write: letters, digits and `_`, not starting with a digit.
fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every loop variable's printed name: its own, or a fresh one for an anonymous `while`
/// counter (`w`, `w_1`, ... avoiding every name the program declares).
fn var_names(program: &Program) -> Vec<String> {
    let mut taken: BTreeSet<String> = program.params.iter().map(|(n, _)| n.clone()).collect();
    taken.extend(program.tensors.iter().map(|t| t.name.clone()));
    taken.extend(program.buffers.iter().map(|b| b.name.clone()));
    taken.extend(program.views.iter().map(|v| v.name.clone()));
    taken.extend(program.vars.iter().map(|v| v.name.clone()));
    let mut out = Vec::with_capacity(program.vars.len());
    for v in &program.vars {
        if is_name(&v.name) {
            out.push(v.name.clone());
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
        && matches!(
            sim::yaml::parse(&format!("k: {s}")),
            Ok(sim::yaml::Node::Map(m)) if matches!(&m[..], [(_, sim::yaml::Node::Str(x))] if x == s)
        );
    if plain {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
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
    /// The name of the program's core type.
    core: &'a str,
    plan: &'a Plan,
    names: &'a [String],
    /// Anonymous `while` counters that get a `var:` because an expression reads them.
    declare: &'a BTreeSet<VarId>,
    /// Every variable an expression printed so far reads.
    used: &'a RefCell<BTreeSet<VarId>>,
    out: String,
}

impl<'a> Printer<'a> {
    fn new(
        program: &'a Program,
        core: &'a str,
        plan: &'a Plan,
        names: &'a [String],
        declare: &'a BTreeSet<VarId>,
        used: &'a RefCell<BTreeSet<VarId>>,
    ) -> Self {
        Printer {
            program,
            core,
            plan,
            names,
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

    fn document(mut self) -> String {
        let p = self.program;
        self.line(
            0,
            "# Generated by npusim: the synchronised program (sync: manual), every buffer pinned to \
             its planned address.",
        );
        self.line(
            0,
            "# Params are folded into the expressions below; their values are listed for information.",
        );
        self.line(0, &format!("kernel: {}", scalar(&p.kernel)));
        self.line(0, &format!("core: {}", scalar(self.core)));
        self.line(0, "sync: manual");
        if !p.params.is_empty() {
            let text: Vec<String> = p
                .params
                .iter()
                .map(|(k, v)| format!("{}: {v}", scalar(k)))
                .collect();
            self.line(0, &format!("params: {{ {} }}", text.join(", ")));
        }
        if !p.tensors.is_empty() {
            self.line(0, "gm:");
            for t in &p.tensors {
                let f = flow(&[("shape", list(&t.shape)), ("dtype", t.dtype.name().into())]);
                self.line(2, &format!("{}: {f}", scalar(&t.name)));
            }
        }
        self.declarations(&p.body, 0);
        self.ops_key("body", &p.body.ops, 0);
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
        let mut s = self.program.ref_name(o.base).to_string();
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
                    f.push(("share", scalar(&p.buffer(s).name)));
                }
                if buf.preload {
                    f.push(("preload", "true".into()));
                }
                if offsets.len() == multi as usize {
                    f.push(("at", list(offsets)));
                }
                self.line(indent + 2, &format!("{}: {}", scalar(&buf.name), flow(&f)));
            }
        }
        if !block.views.is_empty() {
            self.line(indent, "views:");
            for &v in &block.views {
                let view = p.view(v);
                let f = match &view.kind {
                    ViewKind::Window { of, offset } => flow(&[
                        ("of", scalar(p.ref_name(*of))),
                        ("offset", self.expr(offset)),
                        ("shape", list(&view.shape)),
                    ]),
                    ViewKind::Select { of } => flow(&[(
                        "select",
                        list(of.iter().map(|b| scalar(&p.buffer(*b).name))),
                    )]),
                };
                self.line(indent + 2, &format!("{}: {f}", scalar(&view.name)));
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
            OpKind::For {
                var,
                from,
                to,
                step,
                body,
            } => {
                let mut f = vec![("var", scalar(&self.var(*var)))];
                if from.as_const() != Some(0) {
                    f.push(("from", self.expr(from)));
                }
                f.push(("to", self.expr(to)));
                if step.as_const() != Some(1) {
                    f.push(("step", self.expr(step)));
                }
                item(self, flow(&f));
                self.declarations(body, indent + 2);
                self.ops_key("body", &body.ops, indent + 2);
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
            OpKind::For { .. } | OpKind::If { .. } | OpKind::While { .. } => {
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
    use planner::PlanOptions;
    use sim::program::{Op, SyncMode};
    use sim::{Config, OpId, Pipe};
    use std::path::{Path, PathBuf};

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn default_config() -> Config {
        let name = sim::builtin::DEFAULT;
        sim::load_config(sim::builtin::builtin(name).unwrap(), name).unwrap()
    }

    fn yaml_files(dir: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        v.sort();
        v
    }

    fn plan_of(program: &Program, config: &Config) -> Option<Plan> {
        planner::plan_program(program, config, &PlanOptions::default())
            .ok()
            .map(|p| p.plan)
    }

    /// The program with every operand's source text blanked (the printer rebuilds operands
    /// from their resolved form, so only the text may differ).
    fn shape_of(p: &Program) -> String {
        let debug = format!(
            "{:?}\n{:?}\n{:?}",
            p.ops
                .iter()
                .map(|o| (&o.kind, o.pipe, o.loop_parent, o.parent))
                .collect::<Vec<_>>(),
            p.body,
            p.views
                .iter()
                .map(|v| (&v.name, &v.kind, v.declared_in, v.scope, v.dtype, &v.shape))
                .collect::<Vec<_>>()
        );
        let mut out = String::new();
        let mut rest = debug.as_str();
        while let Some(i) = rest.find("text: \"") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 7..];
            let end = after.find('"').expect("closing quote");
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }

    /// Prints `program` with `plan`, loads the text back and checks everything the printer
    /// promises; returns the printed text.
    fn check_round_trip(program: &Program, plan: &Plan, config: &Config, what: &str) -> String {
        let text = program_yaml(program, config, plan);
        assert!(text.starts_with("# Generated by npusim"), "{what}");
        let back = sim::load_program(&text, "printed.yaml", config, &[])
            .unwrap_or_else(|e| panic!("{what}: the printed program does not load: {e:?}\n{text}"));
        assert_eq!(back.sync, SyncMode::Manual, "{what}");
        assert_eq!(back.kernel, program.kernel, "{what}");
        assert_eq!(back.core, program.core, "{what}");
        assert_eq!(back.params, program.params, "{what}");
        assert_eq!(back.vars.len(), program.vars.len(), "{what}");
        assert_eq!(shape_of(&back), shape_of(program), "{what}\n{text}");
        assert_eq!(back.tensors.len(), program.tensors.len(), "{what}");
        for (a, b) in program.tensors.iter().zip(&back.tensors) {
            assert_eq!((&a.name, &a.shape, a.dtype), (&b.name, &b.shape, b.dtype));
        }
        assert_eq!(back.buffers.len(), program.buffers.len(), "{what}");
        for (i, (a, b)) in program.buffers.iter().zip(&back.buffers).enumerate() {
            let offsets = &plan.buffers[i].offsets;
            let key = |x: &sim::program::Buffer| {
                (
                    x.name.clone(),
                    x.scope,
                    x.shape.clone(),
                    x.dtype,
                    x.inplace,
                    x.unique,
                    x.share,
                    x.preload,
                    x.declared_in,
                    x.loop_parent,
                )
            };
            assert_eq!(key(a), key(b), "{what}: buffer {}", a.name);
            assert_eq!(
                b.multi as usize,
                (a.multi as usize).max(offsets.len()),
                "{what}: buffer {}",
                a.name
            );
            let want = (!offsets.is_empty()).then(|| offsets.clone());
            assert_eq!(b.at, want, "{what}: buffer {}", a.name);
        }
        // identical runs
        match (sim::run(program, config), sim::run(&back, config)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.total_cycles, b.total_cycles, "{what}");
                assert_eq!(a, b, "{what}");
            }
            (Err(a), Err(b)) => {
                assert_eq!(
                    (a.op, a.cycle, &a.message),
                    (b.op, b.cycle, &b.message),
                    "{what}"
                )
            }
            (a, b) => panic!("{what}: one run failed: {a:?} vs {b:?}"),
        }
        // fixed point: the reloaded program, planned, prints the same text at the same offsets
        let again = plan_of(&back, config).unwrap_or_else(|| panic!("{what}: reloaded plan fails"));
        for (i, bp) in plan.buffers.iter().enumerate() {
            assert_eq!(again.buffers[i].offsets, bp.offsets, "{what}: buffer {i}");
        }
        assert_eq!(
            program_yaml(&back, config, &again),
            text,
            "{what}: not a fixed point"
        );
        text
    }

    /// Loads, plans and round-trips every file that loads and plans; returns how many did.
    fn round_trip_files(files: &[PathBuf], config: &Config, manual_only: bool) -> usize {
        let mut done = 0;
        for path in files {
            let src = read(path);
            let what = path.display().to_string();
            let Ok(program) = sim::load_program(&src, &what, config, &[]) else {
                continue;
            };
            if manual_only && program.sync != SyncMode::Manual {
                continue;
            }
            let Some(plan) = plan_of(&program, config) else {
                continue;
            };
            check_round_trip(&program, &plan, config, &what);
            done += 1;
        }
        done
    }

    #[test]
    fn every_manual_program_round_trips() {
        let files = yaml_files("programs");
        let manual = files
            .iter()
            .filter(|p| read(p).lines().any(|l| l.trim_start() == "sync: manual"))
            .count();
        assert!(manual >= 4, "expected the manual programs of programs/");
        let done = round_trip_files(&files, &default_config(), true);
        assert_eq!(
            done, manual,
            "every manual program loads, plans and round-trips"
        );
    }

    #[test]
    fn conformance_programs_round_trip() {
        // loops, ifs, whiles, windows, selects, share, inplace and multi-buffers
        let dir = root().join("planner/tests/conformance");
        let config = sim::load_config(&read(&dir.join("config.yaml")), "config.yaml").unwrap();
        let files: Vec<PathBuf> = yaml_files("planner/tests/conformance")
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('T'))
            })
            .collect();
        let done = round_trip_files(&files, &config, false);
        assert!(done >= 40, "only {done} conformance programs round-tripped");
    }

    #[test]
    fn fixtures_round_trip() {
        let mut files = yaml_files("tests/fixtures");
        files.extend(yaml_files("sim/tests/fixtures/race"));
        let done = round_trip_files(&files, &default_config(), false);
        assert!(done >= 4, "only {done} fixtures round-tripped");
    }

    fn load(file: &str, params: &[(String, i64)]) -> (Program, Config) {
        let config = default_config();
        let p = sim::load_program(&read(&root().join(file)), file, &config, params).unwrap();
        (p, config)
    }

    #[test]
    fn vec_add_db_manual_snapshot() {
        let (p, config) = load("programs/vec_add_db_manual.yaml", &[]);
        let plan = plan_of(&p, &config).unwrap();
        insta::assert_snapshot!(program_yaml(&p, &config, &plan));
    }

    #[test]
    fn param_overrides_print_their_effective_values() {
        let (p, config) = load("programs/vec_add_db_manual.yaml", &[("tiles".into(), 4)]);
        let plan = plan_of(&p, &config).unwrap();
        let text = check_round_trip(&p, &plan, &config, "tiles=4");
        assert!(text.contains("params: { tiles: 4, n: 16384 }"), "{text}");
        assert!(
            text.contains("x: { shape: [4, 16384], dtype: f16 }"),
            "{text}"
        );
        assert!(text.contains("- for: { var: t, to: 4 }"), "{text}");
    }

    #[test]
    fn planner_multi_buffers_print_multi_and_untouched_buffers_no_at() {
        let (p, config) = load("programs/vec_add_db_manual.yaml", &[]);
        let mut plan = plan_of(&p, &config).unwrap();
        // as if the planner had made xb a 3-slot buffer and found zb untouched
        let xb = p.buffers.iter().position(|b| b.name == "xb").unwrap();
        let zb = p.buffers.iter().position(|b| b.name == "zb").unwrap();
        plan.buffers[zb].offsets.clear();
        let (a, b) = (plan.buffers[xb].offsets[0], plan.buffers[xb].offsets[1]);
        plan.buffers[xb].offsets =
            vec![a, b, plan.buffers[zb].offsets.first().copied().unwrap_or(b)];
        let text = program_yaml(&p, &config, &plan);
        let xline = text
            .lines()
            .find(|l| l.trim_start().starts_with("xb:"))
            .unwrap();
        assert!(xline.contains("multi: 3"), "{xline}");
        assert!(
            xline.contains(&format!("at: {}", list(&plan.buffers[xb].offsets))),
            "{xline}"
        );
        let zline = text
            .lines()
            .find(|l| l.trim_start().starts_with("zb:"))
            .unwrap();
        assert!(
            zline.contains("multi: 2") && !zline.contains("at:"),
            "{zline}"
        );
        let back = sim::load_program(&text, "printed.yaml", &config, &[]).unwrap();
        assert_eq!(back.buffers[xb].multi, 3);
        assert_eq!(
            back.buffers[xb].at.as_deref(),
            Some(&plan.buffers[xb].offsets[..])
        );
        assert_eq!(back.buffers[zb].at, None);
        assert_eq!(
            sim::run(&p, &config).unwrap(),
            sim::run(&back, &config).unwrap()
        );
    }

    /// Appends `kind` at the end of the kernel body with a path no file has, as a pass would.
    fn insert(p: &mut Program, kind: OpKind, pipe: Option<Pipe>) {
        p.ops.push(Op {
            kind,
            path: "<inserted by a pass>".into(),
            pipe,
            loop_parent: None,
            parent: None,
        });
        p.body.ops.push(OpId::new(p.ops.len() - 1));
    }

    #[test]
    fn inserted_sync_ops_print_from_the_structure() {
        let (mut p, config) = load("programs/vec_add_sb_manual.yaml", &[]);
        let id = sim::expr::Expr::Const(3);
        insert(
            &mut p,
            OpKind::SetFlag {
                src: Pipe::Mte3,
                dst: Pipe::Mte2,
                id: id.clone(),
            },
            Some(Pipe::Mte3),
        );
        insert(
            &mut p,
            OpKind::WaitFlag {
                src: Pipe::Mte3,
                dst: Pipe::Mte2,
                id,
            },
            Some(Pipe::Mte2),
        );
        insert(&mut p, OpKind::Barrier(BarrierTarget::All), Some(Pipe::S));
        let plan = plan_of(&p, &config).unwrap();
        let text = program_yaml(&p, &config, &plan);
        assert!(!text.contains("inserted"), "{text}");
        assert!(
            text.contains("  - set_flag: { src: mte3, dst: mte2, id: 3 }\n  - wait_flag: { src: mte3, dst: mte2, id: 3 }\n  - barrier: all\n"),
            "{text}"
        );
        let back = sim::load_program(&text, "printed.yaml", &config, &[]).unwrap();
        assert_eq!(back.ops.len(), p.ops.len());
        assert_eq!(
            sim::run(&p, &config).unwrap(),
            sim::run(&back, &config).unwrap()
        );
    }

    #[test]
    fn an_anonymous_while_counter_read_by_an_expression_gets_a_name() {
        let config = default_config();
        let src = "kernel: w\ncore: aiv\nsync: manual\nparams: { w: 3 }\nbody:\n  - while: { trips: w }\n    body:\n      - scalar: { cycles: 5 }\n";
        let mut p = sim::load_program(src, "w.yaml", &config, &[]).unwrap();
        let OpKind::While { var, .. } = p.ops[0].kind else {
            panic!("{:?}", p.ops[0].kind)
        };
        // a pass makes the scalar op read the counter: cycles = 5 + 10 * counter
        p.ops[1].kind = OpKind::Scalar {
            cycles: Expr::Binary(
                sim::expr::BinOp::Add,
                Box::new(Expr::Const(5)),
                Box::new(Expr::Binary(
                    sim::expr::BinOp::Mul,
                    Box::new(Expr::Const(10)),
                    Box::new(Expr::Var(var)),
                )),
            ),
        };
        let plan = plan_of(&p, &config).unwrap();
        let text = program_yaml(&p, &config, &plan);
        // `w` is a param, so the counter is `w_1`
        assert!(text.contains("- while: { trips: 3, var: w_1 }"), "{text}");
        assert!(
            text.contains("- scalar: { cycles: \"5 + 10 * w_1\" }"),
            "{text}"
        );
        let back = sim::load_program(&text, "printed.yaml", &config, &[]).unwrap();
        assert_eq!(
            sim::run(&p, &config).unwrap(),
            sim::run(&back, &config).unwrap()
        );
        // without a reader, the counter stays anonymous
        let p = sim::load_program(src, "w.yaml", &config, &[]).unwrap();
        let text = program_yaml(&p, &config, &plan);
        assert!(text.contains("- while: { trips: 3 }"), "{text}");
    }

    #[test]
    fn names_yaml_would_misread_are_quoted() {
        assert_eq!(scalar("xb"), "xb");
        assert_eq!(scalar("null"), "\"null\"");
        assert_eq!(scalar("True"), "\"True\"");
        assert_eq!(scalar("t % 2"), "\"t % 2\"");
        assert_eq!(scalar("min(t, 2)"), "\"min(t, 2)\"");
        assert_eq!(scalar("a\"b\\"), "\"a\\\"b\\\\\"");
    }

    const ALL_VECTOR: &str = r#"
kernel: all_vector
core: aiv
sync: manual
params: { n: 256, half: 128, rows: 4 }
gm:
  x: { shape: [rows, n], dtype: f32 }
  z: { shape: [rows, n], dtype: f32 }
  s: { shape: [8], dtype: i32 }
buffers:
  a: { scope: ub, shape: [n], dtype: f32, multi: 2 }
  b: { scope: ub, shape: [n], dtype: f32, unique: true }
  c: { scope: ub, shape: [n], dtype: f32, inplace: false }
  c2: { scope: ub, shape: [n], dtype: f32, share: c }
  m: { scope: ub, shape: [2, half], dtype: f32 }
  r: { scope: ub, shape: [2], dtype: f32 }
  d0: { scope: ub, shape: [half], dtype: f32 }
  d1: { scope: ub, shape: [half], dtype: f32 }
  tmpb: { scope: ub, shape: [n], dtype: f32 }
  sc: { scope: ub, shape: [8], dtype: i32 }
  h: { scope: ub, shape: [n], dtype: f16 }
  mask: { scope: ub, shape: [n], dtype: i1 }
views:
  lo: { of: b, offset: 0, shape: [half] }
  hi: { of: b, offset: half, shape: [half] }
  either: { select: [b, c] }
body:
  - load: { src: s, dst: sc }
  - sload: { src: "sc[0]" }
  - for: { var: i, from: 1, to: rows, step: 2 }
    buffers:
      p: { scope: ub, shape: [n], dtype: f32, preload: true }
    views:
      pw: { of: p, offset: "i % 2 * half", shape: [half] }
      pw2: { of: pw, offset: "min(i, 1) * 64", shape: [64] }
    body:
      - load: { src: "x[i]", dst: "a@(i % 2)" }
      - load: { src: "x[i - 1, 0:n]", dst: a }
      - vadd: { ins: [a, "a@1"], out: b }
      - vadds: { ins: [b], out: c, scalar: 3 }
      - vmuls: { ins: [c], out: p, scalar: "i + 1" }
      - vexp: { ins: [p], out: c2, tmp: tmpb }
      - vdup: { out: tmpb, scalar: -2 }
      - vdup: { ins: ["a[0:1]"], out: tmpb }
      - vbrc: { ins: [lo], out: m }
      - vreduce_sum: { ins: [m], out: r, dims: [1] }
      - vdeinterleave: { ins: [c], out: [d0, d1] }
      - vcast: { ins: [c], out: h }
      - vtranspose: { ins: [m], out: "tmpb[0:n]" }
      - vmul: { ins: [m, r], out: m, broadcast: [1] }
      - vcmp: { ins: [b, c], out: mask }
      - vsel: { ins: [mask, b, either], out: c }
      - vadd: { ins: [pw, hi], out: lo, transpose: true }
      - vrelu: { ins: [pw2], out: "d0[64:half]" }
      - if: "i >= 2 && !(i == 7)"
        then:
          buffers:
            t1: { scope: ub, shape: [half], dtype: f32 }
          views:
            t1w: { of: t1, offset: 0, shape: [64] }
          body:
            - vabs: { ins: [lo], out: t1 }
            - vrelu: { ins: [t1w], out: "d1[0:64]" }
        else:
          - scalar: { cycles: "i * 3 + 1" }
      - if: false
        then: []
      - store: { src: b, dst: "z[i]" }
      - use: [b, "c[0:4]", either]
  - while: { trips: 2, var: k }
    body:
      - sstore: { dst: "sc[k]" }
      - barrier: v
  - while: { trips: 1 }
    body:
      - scalar: { cycles: 7 }
  - set_flag: { src: mte2, dst: v, id: 1 }
  - wait_flag: { src: mte2, dst: v, id: 1 }
  - barrier: all
"#;

    const ALL_CUBE: &str = r#"
kernel: all_cube
core: aic
sync: manual
params: { m: 16, k: 16, n: 16 }
gm:
  a: { shape: [m, k], dtype: f16 }
  b: { shape: [k, n], dtype: f16 }
  c: { shape: [2, m, n], dtype: f32 }
  bias: { shape: [n], dtype: f32 }
  q: { shape: [n], dtype: u64 }
buffers:
  a1: { scope: l1, shape: [m, k], dtype: f16 }
  b1: { scope: l1, shape: [k, n], dtype: f16 }
  a0: { scope: l0a, shape: [m, k], dtype: f16 }
  b0: { scope: l0b, shape: [k, n], dtype: f16 }
  c0: { scope: l0c, shape: [m, n], dtype: f32, multi: 2 }
  bias1: { scope: l1, shape: [n], dtype: f32 }
  bt0: { scope: bt, shape: [n], dtype: f32 }
  q1: { scope: l1, shape: [n], dtype: u64 }
  fp0: { scope: fp, shape: [n], dtype: u64 }
  out1: { scope: l1, shape: [m, n], dtype: f32 }
body:
  - load: { src: a, dst: a1, layout: nz }
  - load: { src: b, dst: b1 }
  - load: { src: bias, dst: bias1 }
  - load: { src: q, dst: q1 }
  - copy: { src: bias1, dst: bt0 }
  - copy: { src: q1, dst: fp0 }
  - copy: { src: a1, dst: a0 }
  - copy: { src: b1, dst: b0 }
  - for: { var: j, to: 2 }
    body:
      - mmad: { a: a0, b: b0, c: "c0@j", m: m, n: n, k: k, init: "j == 0", bias: bt0 }
      - mmad: { a: a0, b: b0, c: c0, m: m, n: 8, k: k, init: false }
      - fixpipe: { src: "c0@j", dst: "c[j]", quant: fp0, relu: true }
      - fixpipe: { src: "c0@j", dst: out1, quant: true }
"#;

    const MMAD_L1: &str = r#"
kernel: l1_macro
core: aic
sync: manual
gm:
  a: { shape: [16, 32], dtype: f16 }
  b: { shape: [32, 16], dtype: f16 }
  c: { shape: [16, 16], dtype: f32 }
body:
  buffers:
    a1: { scope: l1, shape: [16, 32], dtype: f16 }
    b1: { scope: l1, shape: [32, 16], dtype: f16 }
    c0: { scope: l0c, shape: [16, 16], dtype: f32 }
  body:
    - load: { src: a, dst: a1 }
    - load: { src: b, dst: b1 }
    - mmad_l1: { a: a1, b: b1, c: c0, m: 16, n: 16, k: 32, init: true }
    - fixpipe: { src: c0, dst: c }
"#;

    #[test]
    fn every_op_kind_and_field_round_trips() {
        let config = default_config();
        for (name, src) in [
            ("all_vector", ALL_VECTOR),
            ("all_cube", ALL_CUBE),
            ("l1_macro", MMAD_L1),
        ] {
            let p = sim::load_program(src, name, &config, &[])
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let plan = plan_of(&p, &config).unwrap_or_else(|| panic!("{name} does not plan"));
            check_round_trip(&p, &plan, &config, name);
        }
    }
}
