//! Leaf ops and operands (docs/programs.md: the op table and the load-time checks). Each builder reads every field before
//! giving up, so one op reports all of its problems; the read-before-write walk runs on each op
//! as it is built, which is program order because blocks are read in order.

use super::loader::{resolve_value, Ctx, Entity, Loader, Note};
use super::operand::{parse_operand, OperandError, RawIndex};
use super::reader::{index, show, suggest, Fields};
use crate::expr::Expr;
use crate::footprint::{selected_shape, Bases, Sel};
use crate::ids::{BufferId, OpId};
use crate::program::{
    BarrierTarget, CrossMode, Index, Layout, Mmad, Op, OpKind, Operand, Quant, Ref, VecForm, VecOp,
    VectorOp,
};
use crate::types::{Pipe, Space};
use crate::yaml::{Node, Value};

const LEAF_OPS: &[&str] = &[
    "load",
    "store",
    "copy",
    "fixpipe",
    "mmad",
    "mmad_l1",
    "sload",
    "sstore",
    "scalar",
    "use",
    "set_flag",
    "wait_flag",
    "barrier",
    "cross_set",
    "cross_wait",
];

pub(super) fn is_op(key: &str) -> bool {
    LEAF_OPS.contains(&key) || matches!(key, "for" | "while" | "if") || VecOp::parse(key).is_some()
}

/// Every op key, for did-you-mean.
pub(super) fn op_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = LEAF_OPS.to_vec();
    v.extend(["for", "while", "if"]);
    v.extend(VecOp::ALL.iter().map(|o| o.name()));
    v
}

type Built = Option<(OpKind, Option<Pipe>)>;

/// A YAML path not written out yet: `parent.key` or `parent[i]`.
#[derive(Clone, Copy)]
pub(super) enum LazyPath<'a> {
    Key(&'a str, &'a str),
    Index(&'a str, usize),
}

impl std::fmt::Display for LazyPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            LazyPath::Key("", key) => f.write_str(key),
            LazyPath::Key(parent, key) => write!(f, "{parent}.{key}"),
            LazyPath::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A lazy path written out the first time a problem needs it.
struct PathText<'a> {
    lazy: &'a LazyPath<'a>,
    text: std::cell::OnceCell<String>,
}

impl<'a> PathText<'a> {
    fn new(lazy: &'a LazyPath<'a>) -> Self {
        PathText {
            lazy,
            text: std::cell::OnceCell::new(),
        }
    }
}

impl std::ops::Deref for PathText<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.text.get_or_init(|| self.lazy.to_string())
    }
}

/// The YAML path of operand `o` of an op of kind `kind` at `opath`: its field, found by
/// identity (`load.src`, `vadd.ins[1]`); `opath` itself when it is not a field operand.
fn operand_path(kind: &OpKind, o: &Operand, opath: &str) -> String {
    let same = |x: &Operand| std::ptr::eq(x, o);
    let field = |name: &str| format!("{opath}.{name}");
    let item = |name: &str, list: &[Operand]| {
        list.iter()
            .position(same)
            .map(|i| format!("{opath}.{name}[{i}]"))
    };
    let found = match kind {
        OpKind::Load { src, dst, .. } | OpKind::Store { src, dst } | OpKind::Copy { src, dst } => {
            [(src, "src"), (dst, "dst")]
                .into_iter()
                .find(|(x, _)| same(x))
                .map(|(_, n)| field(n))
        }
        OpKind::Fixpipe {
            src, dst, quant, ..
        } => match quant {
            Quant::Tensor(q) if same(q) => Some(field("quant")),
            _ => [(src, "src"), (dst, "dst")]
                .into_iter()
                .find(|(x, _)| same(x))
                .map(|(_, n)| field(n)),
        },
        OpKind::Mmad(m) | OpKind::MmadL1(m) => [(&m.a, "a"), (&m.b, "b"), (&m.c, "c")]
            .into_iter()
            .chain(m.bias.iter().map(|b| (b, "bias")))
            .find(|(x, _)| same(x))
            .map(|(_, n)| field(n)),
        OpKind::Vector(v) => item("ins", &v.ins)
            .or_else(|| match &v.outs[..] {
                [x] if same(x) => Some(field("out")),
                [_] => None,
                outs => item("out", outs),
            })
            .or_else(|| v.tmp.as_ref().filter(|t| same(t)).map(|_| field("tmp"))),
        OpKind::Sload { src } if same(src) => Some(field("src")),
        OpKind::Sstore { dst } if same(dst) => Some(field("dst")),
        OpKind::Use { operands } => operands
            .iter()
            .position(same)
            .map(|i| format!("{opath}[{i}]")),
        _ => None,
    };
    found.unwrap_or_else(|| opath.to_string())
}

impl Loader<'_, '_> {
    pub(super) fn leaf_op(
        &mut self,
        key: &str,
        value: &Node,
        path: &str,
        ctx: Ctx,
    ) -> Option<OpId> {
        self.touched.clear();
        let before = self.r.count();
        let opath = super::reader::join(path, key);
        let built = match key {
            "load" | "store" | "copy" => self.move_op(key, value, &opath),
            "fixpipe" => self.fixpipe(value, &opath),
            "mmad" => self.mmad(false, value, &opath),
            "mmad_l1" => self.mmad(true, value, &opath),
            "sload" | "sstore" => self.scalar_access(key, value, &opath),
            "scalar" => self.scalar_op(value, &opath),
            "use" => self.use_op(value, &opath),
            "set_flag" | "wait_flag" => self.flag_op(key, value, &opath),
            "barrier" => self.barrier(value, &opath),
            "cross_set" | "cross_wait" => self.cross_op(key, value, &opath),
            _ => match VecOp::parse(key) {
                Some(op) => self.vector(op, value, &opath),
                None => None,
            },
        };
        match built {
            Some((kind, pipe)) if self.ok_since(before) => {
                self.check_reads_and_writes(&kind, &opath);
                self.ops.push(Op {
                    kind,
                    path: path.to_string(),
                    loc: crate::program::Loc::default(),
                    pipe,
                    loop_parent: ctx.loop_parent,
                    parent: ctx.parent,
                });
                Some(OpId::new(self.ops.len() - 1))
            }
            _ => {
                // a rejected op may still have meant to write what it names: do not follow it
                // with "read before written" errors that only repeat this one
                for b in std::mem::take(&mut self.touched) {
                    self.written.mark(b);
                }
                None
            }
        }
    }

    /// Whether no problem was reported since `before`, those a plan-only load drops aside
    /// (an op whose only problems are those is built all the same).
    fn ok_since(&self, before: usize) -> bool {
        !self.r.diags[before..]
            .iter()
            .any(|d| !(self.r.plan_only && super::plan_only_tolerated(&d.message)))
    }

    // ----- operands ------------------------------------------------------------------------

    /// The loader's tables, for the rules shared with a loaded program ([`Bases`]).
    pub(super) fn bases(&self) -> Bases<'_> {
        Bases {
            buffers: &self.buffers,
            views: &self.views,
            tensors: &self.tensors,
        }
    }

    pub(super) fn roots(&self, r: Ref) -> Vec<BufferId> {
        self.bases().roots(r)
    }

    fn base_shape(&self, r: Ref) -> &[u64] {
        self.bases().shape(r)
    }

    /// Dimensions left after indexing (an `At` index drops its dimension).
    fn rank(&self, o: &Operand) -> usize {
        let at = o
            .indices
            .iter()
            .filter(|i| matches!(i, Index::At(_)))
            .count();
        self.base_shape(o.base).len() - at
    }

    /// An operand at `path` (built only when a problem is reported: a big program has
    /// hundreds of thousands of operands and almost never a problem).
    pub(super) fn operand(&mut self, node: &Node, path: &LazyPath) -> Option<Operand> {
        // the common case, a string, needs no path
        let text = match &node.value {
            crate::yaml::Value::Str(s) => s.clone(),
            _ => {
                let p = path.to_string();
                self.r.string(
                    node,
                    &p,
                    "an operand (a string such as \"xb\" or \"x[t, 0:n]\")",
                )?;
                return None;
            }
        };
        let path = &PathText::new(path);
        if !self.simple_enough(&text, path) {
            return None;
        }
        let mut note = Note::default();
        let raw = {
            let scopes = &self.scopes;
            parse_operand(&text, &mut |n| resolve_value(scopes, n, true, &mut note))
        };
        if note.tainted {
            return None;
        }
        let raw = match raw {
            Ok(r) => r,
            Err(OperandError::Syntax(m)) => {
                self.r.error_hint(
                    path,
                    format!("bad operand \"{text}\": {m}"),
                    Some("operands are name, name[i, a:b, :] or name@k".into()),
                );
                return None;
            }
            Err(OperandError::Expr(e)) => {
                self.report_expr_error(&text, path, e, note, true);
                return None;
            }
        };
        let name = raw.name.as_str();
        let (base, space, dtype, multi) = match self.lookup(name).map(|n| n.entity) {
            Some(Entity::Buffer(b)) => {
                let x = &self.buffers[b.index()];
                (Ref::Buffer(b), x.scope, x.dtype, Some(x.multi))
            }
            Some(Entity::View(v)) => {
                let x = &self.views[v.index()];
                (Ref::View(v), x.scope, x.dtype, None)
            }
            Some(Entity::Tensor(t)) => {
                let x = &self.tensors[t.index()];
                (Ref::Tensor(t), Space::Gm, x.dtype, None)
            }
            Some(Entity::Invalid) => return None,
            Some(e) => {
                self.r.error(
                    path,
                    format!(
                        "\"{name}\" is {}, not a buffer or tensor (in operand \"{text}\")",
                        e.kind()
                    ),
                );
                return None;
            }
            None => {
                let cands = self.names_where(|e| {
                    matches!(e, Entity::Buffer(_) | Entity::View(_) | Entity::Tensor(_))
                });
                let hint = suggest(name, &cands);
                self.r
                    .error_hint(path, format!("unknown buffer \"{name}\""), hint);
                return None;
            }
        };
        let roots = self.roots(base);
        self.touched.extend(roots);
        let shape = self.base_shape(base).to_vec();
        // only an error shows it
        let shape_text = || format!("{name} has shape {shape:?}");
        if raw.indices.len() > shape.len() {
            self.r.error_hint(
                path,
                format!(
                    "operand \"{text}\" has {} indices but {name} has rank {}",
                    raw.indices.len(),
                    shape.len()
                ),
                Some(shape_text()),
            );
            return None;
        }
        // fill missing slice bounds, then check every dimension's [start, end) with the rule
        // the race checker and the sync pass use (footprint::Sel)
        let indices: Vec<Index> = raw
            .indices
            .into_iter()
            .enumerate()
            .map(|(d, idx)| match idx {
                RawIndex::At(e) => Index::At(e),
                RawIndex::Slice(s, e) => Index::Slice {
                    start: s.unwrap_or(Expr::Const(0)),
                    end: e.unwrap_or(Expr::Const(shape[d] as i64)),
                },
            })
            .collect();
        let mut ok = true;
        let mut elements = Some(1u64);
        for (d, &extent_u) in shape.iter().enumerate() {
            let extent = extent_u as i64;
            let sel = Sel::new(indices.get(d), extent_u);
            let (sb, eb) = sel.over(&self.ranges);
            let mut oob = |l: &mut Self, what: String| {
                l.r.error_hint(
                    path,
                    format!(
                        "{what} is out of bounds for dimension {d} of {name} (extent {extent}) in \"{text}\""
                    ),
                    Some(shape_text()),
                );
                ok = false;
            };
            match sel {
                Sel::Whole(_) => elements = elements.and_then(|x| x.checked_mul(extent_u)),
                Sel::At(e) => {
                    // [e, e + 1) lies in [0, extent)
                    if let Some((lo, hi)) = sb.filter(|_| self.refuses(e)) {
                        if lo < 0 || hi >= extent {
                            let what = self.reach("index", e, if lo < 0 { lo } else { hi });
                            oob(self, what);
                        }
                    }
                }
                Sel::Slice(s, e) => {
                    let mut reported = false;
                    if let Some((lo, _)) = sb.filter(|b| b.0 < 0 && self.refuses(s)) {
                        let what = self.reach("slice start", s, lo);
                        oob(self, what);
                        reported = true;
                    }
                    if let Some((_, hi)) = eb.filter(|b| b.1 > extent && self.refuses(e)) {
                        let what = self.reach("slice end", e, hi);
                        oob(self, what);
                        reported = true;
                    }
                    let backwards = match sel.const_len() {
                        Some(n) => {
                            // bounds of a loop expression may be unknown; its length is not
                            if n > extent && !reported {
                                oob(self, format!("slice length {n}"));
                            }
                            elements = elements.and_then(|x| x.checked_mul(n.max(0) as u64));
                            n < 0
                        }
                        None => {
                            elements = None;
                            self.certain && matches!((sb, eb), (Some(a), Some(b)) if a.0 > b.1)
                        }
                    };
                    if backwards {
                        let msg = format!(
                            "slice start {} is after its end {} in dimension {d} of {name} (in \"{text}\")",
                            self.show_expr(s),
                            self.show_expr(e)
                        );
                        self.r.error_hint(
                            path,
                            msg,
                            Some("a slice a:b is the half-open range [a, b) with a <= b".into()),
                        );
                        ok = false;
                    }
                }
            }
        }
        let slot = match raw.slot {
            None => None,
            Some(k) => {
                match multi {
                    None => {
                        let kind = if matches!(base, Ref::View(_)) {
                            "a view"
                        } else {
                            "a gm tensor"
                        };
                        self.r.error_hint(
                            path,
                            format!("\"{text}\": @ selects a slot of a multi-buffer, but {name} is {kind}"),
                            Some(format!("drop @{}", self.show_expr(&k))),
                        );
                        ok = false;
                    }
                    Some(m) => {
                        if let Some((lo, hi)) = k.bounds(&self.ranges).filter(|_| self.refuses(&k))
                        {
                            if lo < 0 || hi >= m as i64 {
                                let bad = if lo < 0 { lo } else { hi };
                                if m == 1 {
                                    self.r.error_hint(
                                        path,
                                        format!("\"{text}\": {name} is not a multi-buffer, so slot @{bad} does not exist"),
                                        Some(format!("declare {name} with multi: N (N >= 2), or drop @")),
                                    );
                                } else {
                                    self.r.error_hint(
                                        path,
                                        format!("\"{text}\": slot @{bad} is out of range: {name} has {m} slots"),
                                        Some(format!("slots are @0 to @{}", m - 1)),
                                    );
                                }
                                ok = false;
                            }
                        }
                    }
                }
                Some(k)
            }
        };
        ok.then_some(Operand {
            text,
            base,
            slot,
            indices,
            space,
            dtype,
            elements,
        })
    }

    /// "index 16" for a constant, "index t + 1 (can reach 16)" for a loop expression.
    fn reach(&self, what: &str, e: &Expr, value: i64) -> String {
        match e.as_const() {
            Some(_) => format!("{what} {value}"),
            None => format!("{what} {} (can reach {value})", self.show_expr(e)),
        }
    }

    fn operand_field(&mut self, f: &Fields, key: &str) -> Option<Operand> {
        let path = LazyPath::Key(&f.path, key);
        f.get(key).and_then(|n| self.operand(n, &path))
    }

    fn operand_list(&mut self, node: &Node, path: &str) -> Option<Vec<Operand>> {
        let items = self.r.seq(node, path, "operands")?;
        let mut out = Vec::new();
        let mut ok = true;
        for (i, n) in items.iter().enumerate() {
            match self.operand(n, &LazyPath::Index(path, i)) {
                Some(o) => out.push(o),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    // ----- checks shared by ops ------------------------------------------------------------

    fn check_reads_and_writes(&mut self, kind: &OpKind, opath: &str) {
        if self.r.plan_only {
            return;
        }
        let bases = Bases {
            buffers: &self.buffers,
            views: &self.views,
            tensors: &self.tensors,
        };
        for (o, b) in self.written.visit(kind, &bases) {
            let name = self.buffers[b.index()].name.clone();
            let via = match o.base {
                Ref::View(v) => format!(" (through view {})", self.views[v.index()].name),
                _ => String::new(),
            };
            let path = operand_path(kind, o, opath);
            self.r.error_hint(
                &path,
                format!(
                    "read before first write: {} reads buffer \"{name}\"{via}, which no earlier op writes",
                    kind.name()
                ),
                Some(format!("write {name} first (load, copy, a vector op, ...) or do not read it here")),
            );
        }
    }

    fn need_space(&mut self, o: &Operand, want: &[Space], path: &str, what: &str) -> bool {
        if want.contains(&o.space) {
            return true;
        }
        let names: Vec<&str> = want.iter().map(|s| s.yaml_name()).collect();
        self.r.error(
            path,
            format!(
                "{what} must be in {}; \"{}\" is in {}",
                names.join(" or "),
                o.text,
                o.space.yaml_name()
            ),
        );
        false
    }

    /// The pipe of the config path `from -> to`, which must also be a pipe of the core.
    fn move_pipe(&mut self, from: Space, to: Space, path: &str) -> Option<Pipe> {
        let (f, t) = (from.yaml_name(), to.yaml_name());
        let Some(p) = self.config.path(from, to) else {
            let out: Vec<String> = self
                .config
                .paths
                .iter()
                .filter(|p| p.from == from)
                .map(|p| format!("{} ({})", p.to.yaml_name(), p.pipe.yaml_name()))
                .collect();
            let hint = if out.is_empty() {
                format!("config {} has no path from {f}", self.config.name)
            } else {
                format!("paths from {f} go to: {}", out.join(", "))
            };
            self.r.error_hint(
                path,
                format!("no path from {f} to {t} in config {}", self.config.name),
                Some(hint),
            );
            return None;
        };
        let pipe = p.pipe;
        self.core_has_pipe(pipe, path, &format!("the path {f} -> {t}"))
            .then_some(pipe)
    }

    fn same_size(&mut self, a: &Operand, b: &Operand, path: &str, what: &str) {
        if let (Some(x), Some(y)) = (a.elements, b.elements) {
            if x != y {
                self.r.error(
                    path,
                    format!(
                        "size mismatch in {what}: \"{}\" has {x} elements, \"{}\" has {y}",
                        a.text, b.text
                    ),
                );
            }
        }
    }

    // ----- moves ---------------------------------------------------------------------------

    fn move_op(&mut self, key: &str, value: &Node, opath: &str) -> Built {
        let optional: &[&str] = if key == "load" { &["layout"] } else { &[] };
        let f = self.r.map(value, opath, key, &["src", "dst"], optional)?;
        let src = self.operand_field(&f, "src");
        let dst = self.operand_field(&f, "dst");
        let layout = match f.get("layout") {
            None => Some(Layout::Nd),
            Some(n) => match self.r.string(n, &f.path("layout"), "a layout (nd or nz)") {
                Some("nd") => Some(Layout::Nd),
                Some("nz") => Some(Layout::Nz),
                Some(other) => {
                    let hint = suggest(other, &["nd", "nz"]);
                    self.r.error_hint(
                        &f.path("layout"),
                        format!("unknown layout \"{other}\""),
                        hint,
                    );
                    None
                }
                None => None,
            },
        };
        let (src, dst, layout) = (src?, dst?, layout?);
        let (sp, dp) = (f.path("src"), f.path("dst"));
        let gm = |o: &Operand| o.space == Space::Gm;
        let spaces_ok = match key {
            "load" => {
                let a = self.space_rule(
                    gm(&src),
                    &src,
                    &sp,
                    "load reads from gm",
                    "use copy to move data on chip",
                );
                let b = self.space_rule(
                    !gm(&dst),
                    &dst,
                    &dp,
                    "load writes on chip",
                    "use store to write gm",
                );
                a && b
            }
            "store" => {
                let a = self.space_rule(
                    !gm(&src),
                    &src,
                    &sp,
                    "store reads on-chip data",
                    "gm to gm moves are not supported",
                );
                let b = self.space_rule(
                    gm(&dst),
                    &dst,
                    &dp,
                    "store writes to gm",
                    "use copy to move data on chip",
                );
                a && b
            }
            _ => {
                let a = self.space_rule(
                    !gm(&src),
                    &src,
                    &sp,
                    "copy moves data on chip",
                    "use load to read gm",
                );
                let b = self.space_rule(
                    !gm(&dst),
                    &dst,
                    &dp,
                    "copy moves data on chip",
                    "use store to write gm",
                );
                a && b
            }
        };
        if src.dtype != dst.dtype {
            self.r.error_hint(
                opath,
                format!(
                    "dtype mismatch in {key}: \"{}\" is {}, \"{}\" is {}",
                    src.text, src.dtype, dst.text, dst.dtype
                ),
                Some("moves do not convert; use vcast in UB or fixpipe from L0C".into()),
            );
        }
        self.same_size(&src, &dst, opath, key);
        if !spaces_ok {
            return None;
        }
        let pipe = self.move_pipe(src.space, dst.space, &dp)?;
        let kind = match key {
            "load" => OpKind::Load { src, dst, layout },
            "store" => OpKind::Store { src, dst },
            _ => OpKind::Copy { src, dst },
        };
        Some((kind, Some(pipe)))
    }

    fn space_rule(&mut self, ok: bool, o: &Operand, path: &str, rule: &str, hint: &str) -> bool {
        if !ok {
            self.r.error_hint(
                path,
                format!("{rule}; \"{}\" is in {}", o.text, o.space.yaml_name()),
                Some(hint.to_string()),
            );
        }
        ok
    }

    fn fixpipe(&mut self, value: &Node, opath: &str) -> Built {
        let f = self
            .r
            .map(value, opath, "fixpipe", &["src", "dst"], &["quant", "relu"])?;
        let src = self.operand_field(&f, "src");
        let dst = self.operand_field(&f, "dst");
        let quant = match f.get("quant").map(|n| (n, &n.value)) {
            None | Some((_, Value::Bool(false))) => Some(Quant::None),
            Some((_, Value::Bool(true))) => Some(Quant::Scalar),
            Some((n, Value::Str(_))) => {
                let q = self.operand(n, &LazyPath::Key(&f.path, "quant"));
                match q {
                    Some(q)
                        if self.need_space(
                            &q,
                            &[Space::Fp],
                            &f.path("quant"),
                            "fixpipe quant parameters",
                        ) =>
                    {
                        Some(Quant::Tensor(Box::new(q)))
                    }
                    _ => None,
                }
            }
            Some((other, _)) => {
                self.r.error(
                    &f.path("quant"),
                    format!(
                        "expected true, false or an fp operand, found {}",
                        show(other)
                    ),
                );
                None
            }
        };
        let relu = match f.get("relu") {
            Some(n) => self.r.boolean(n, &f.path("relu")),
            None => Some(false),
        };
        let (src, dst, quant, relu) = (src?, dst?, quant?, relu?);
        let a = self.need_space(&src, &[Space::L0c], &f.path("src"), "fixpipe src");
        let b = self.need_space(&dst, &[Space::Gm, Space::L1], &f.path("dst"), "fixpipe dst");
        self.same_size(&src, &dst, opath, "fixpipe");
        if !(a && b) {
            return None;
        }
        let pipe = self.move_pipe(Space::L0c, dst.space, &f.path("dst"))?;
        Some((
            OpKind::Fixpipe {
                src,
                dst,
                quant,
                relu,
            },
            Some(pipe),
        ))
    }

    // ----- cube ----------------------------------------------------------------------------

    fn mmad(&mut self, l1: bool, value: &Node, opath: &str) -> Built {
        let name = if l1 { "mmad_l1" } else { "mmad" };
        let optional: &[&str] = if l1 { &[] } else { &["bias"] };
        let f = self.r.map(
            value,
            opath,
            name,
            &["a", "b", "c", "m", "n", "k", "init"],
            optional,
        )?;
        let a = self.operand_field(&f, "a");
        let b = self.operand_field(&f, "b");
        let c = self.operand_field(&f, "c");
        let bias = f
            .get("bias")
            .map(|n| self.operand(n, &LazyPath::Key(&f.path, "bias")));
        let dim = |l: &mut Self, key: &str| -> Option<Expr> {
            let e = f
                .get(key)
                .and_then(|n| l.expr(n, &f.path(key), true, false))?;
            if let Some(v) = e.as_const().filter(|v| *v <= 0) {
                l.r.error(&f.path(key), format!("{name} {key} = {v} is not positive"));
                return None;
            }
            Some(e)
        };
        let (m, n, k) = (dim(self, "m"), dim(self, "n"), dim(self, "k"));
        let init = f
            .get("init")
            .and_then(|n| self.expr(n, &f.path("init"), true, true));
        let (a, b, c, m, n, k, init) = (a?, b?, c?, m?, n?, k?, init?);
        let bias = match bias {
            Some(Some(x)) => Some(x),
            Some(None) => return None,
            None => None,
        };
        let (sa, sb) = if l1 {
            (Space::L1, Space::L1)
        } else {
            (Space::L0a, Space::L0b)
        };
        let mut ok = self.need_space(&a, &[sa], &f.path("a"), &format!("{name} a"));
        ok &= self.need_space(&b, &[sb], &f.path("b"), &format!("{name} b"));
        ok &= self.need_space(&c, &[Space::L0c], &f.path("c"), &format!("{name} c"));
        if let Some(x) = &bias {
            ok &= self.need_space(x, &[Space::Bt], &f.path("bias"), "mmad bias");
        }
        if !ok {
            return None;
        }
        let (mc, nc, kc) = (m.as_const(), n.as_const(), k.as_const());
        let need = |l: &mut Self, o: &Operand, key: &str, dims: &[(&str, Option<i64>)]| {
            let Some(have) = o.elements else { return };
            let Some(vals) = dims.iter().map(|d| d.1).collect::<Option<Vec<i64>>>() else {
                return;
            };
            let want = vals
                .iter()
                .try_fold(1i64, |p, v| p.checked_mul(*v))
                .unwrap_or(i64::MAX);
            if (have as i128) < want as i128 {
                let names: Vec<&str> = dims.iter().map(|d| d.0).collect();
                let shown: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
                l.r.error(
                    &f.path(key),
                    format!(
                        "{name} {key} \"{}\" is too small: {have} elements, but {} = {} needs {want}",
                        o.text,
                        names.join(" × "),
                        shown.join(" × ")
                    ),
                );
            }
        };
        need(self, &a, "a", &[("m", mc), ("k", kc)]);
        need(self, &b, "b", &[("k", kc), ("n", nc)]);
        need(self, &c, "c", &[("m", mc), ("n", nc)]);
        if let Some(x) = &bias {
            need(self, x, "bias", &[("n", nc)]);
        }
        let mut pipes_ok = self.core_has_pipe(Pipe::M, opath, name);
        if l1 {
            // the macro stages a and b into L0A / L0B itself, on MTE1 (the engine and the race
            // checker model it so): the config must have both paths, on MTE1
            for (o, to) in [(&a, Space::L0a), (&b, Space::L0b)] {
                match self.move_pipe(o.space, to, opath) {
                    Some(Pipe::Mte1) => {}
                    Some(p) => {
                        self.r.error_hint(
                            opath,
                            format!(
                                "mmad_l1 stages {} -> {} on mte1, but config {} runs that path \
                                 on {}",
                                o.space.yaml_name(),
                                to.yaml_name(),
                                self.config.name,
                                p.yaml_name()
                            ),
                            Some(
                                "put the path on mte1 in the config, or copy to L0 yourself and \
                                 use mmad"
                                    .into(),
                            ),
                        );
                        pipes_ok = false;
                    }
                    None => pipes_ok = false,
                }
            }
            if self.mmad_l1_at.is_none() {
                self.mmad_l1_at = Some(opath.to_string());
            }
        }
        let mm = Mmad {
            a,
            b,
            c,
            m,
            n,
            k,
            init,
            bias,
        };
        let kind = if l1 {
            OpKind::MmadL1(Box::new(mm))
        } else {
            OpKind::Mmad(Box::new(mm))
        };
        pipes_ok.then_some((kind, Some(Pipe::M)))
    }

    // ----- vector --------------------------------------------------------------------------

    fn vector(&mut self, op: VecOp, value: &Node, opath: &str) -> Built {
        let name = op.name();
        let form = op.form();
        let mut required = vec!["out"];
        let mut optional = vec!["tmp", "broadcast", "transpose"];
        if op == VecOp::Vdup {
            optional.push("ins");
        } else {
            required.insert(0, "ins");
        }
        match form {
            VecForm::WithScalar => required.push("scalar"),
            _ if op == VecOp::Vdup => optional.push("scalar"),
            VecForm::Reduce => optional.push("dims"),
            _ => {}
        }
        let f = self.r.map(value, opath, name, &required, &optional)?;
        let before = self.r.count();
        let ins = match f.get("ins") {
            Some(n) => self.operand_list(n, &f.path("ins")),
            None => Some(vec![]),
        };
        let outs = match f.get("out") {
            Some(n) if form == VecForm::Deinterleave => {
                let outs = self.operand_list(n, &f.path("out"));
                if let Some(o) = outs.as_ref().filter(|o| o.len() != 2) {
                    self.r.error(
                        &f.path("out"),
                        format!("vdeinterleave writes two outputs, found {}", o.len()),
                    );
                }
                outs
            }
            Some(n) => self
                .operand(n, &LazyPath::Key(&f.path, "out"))
                .map(|o| vec![o]),
            None => None,
        };
        let tmp = match f.get("tmp") {
            Some(n) => self.operand(n, &LazyPath::Key(&f.path, "tmp")).map(Some),
            None => Some(None),
        };
        let scalar = match f.get("scalar") {
            Some(n) => self.data_expr(n, &f.path("scalar")).map(Some),
            None => Some(None),
        };
        let broadcast = self.dims(&f, "broadcast");
        let dims = self.dims(&f, "dims");
        let transpose = match f.get("transpose") {
            Some(n) => self.r.boolean(n, &f.path("transpose")),
            None => Some(false),
        };
        let (ins, outs, tmp, scalar, broadcast, dims, transpose) =
            (ins?, outs?, tmp?, scalar?, broadcast?, dims?, transpose?);
        let want = match form {
            VecForm::Binary | VecForm::Compare => 2,
            VecForm::Select => 3,
            _ if op == VecOp::Vdup && scalar.is_some() => 0,
            _ => 1,
        };
        if op == VecOp::Vdup && scalar.is_some() && f.has("ins") {
            self.r.error_hint(
                opath,
                "vdup takes ins: or scalar:, not both",
                Some("vdup fills out with a scalar, or broadcasts one input".into()),
            );
        } else if ins.len() != want {
            let path = if f.has("ins") {
                f.path("ins")
            } else {
                opath.to_string()
            };
            self.r.error(
                &path,
                format!(
                    "{name} takes {want} input{}, found {}",
                    if want == 1 { "" } else { "s" },
                    ins.len()
                ),
            );
        }
        // every vector operand lives in UB
        let mut all: Vec<(&Operand, String)> = Vec::new();
        for (i, o) in ins.iter().enumerate() {
            all.push((o, index(&f.path("ins"), i)));
        }
        for (i, o) in outs.iter().enumerate() {
            let p = if form == VecForm::Deinterleave {
                index(&f.path("out"), i)
            } else {
                f.path("out")
            };
            all.push((o, p));
        }
        if let Some(t) = &tmp {
            all.push((t, f.path("tmp")));
        }
        for (o, p) in all {
            if o.space != Space::Ub {
                self.r.error_hint(
                    &p,
                    format!(
                        "vector operand \"{}\" is in {}; vector ops read and write ub only",
                        o.text,
                        o.space.yaml_name()
                    ),
                    Some("move the data to a ub buffer first (load or copy)".into()),
                );
            }
        }
        if self.ok_since(before) {
            self.vector_sizes(op, &ins, &outs, &broadcast, &dims, &f);
        }
        let pipe_ok = self.core_has_pipe(Pipe::V, opath, name);
        (pipe_ok && self.ok_since(before)).then_some((
            OpKind::Vector(Box::new(VectorOp {
                op,
                ins,
                outs,
                tmp,
                scalar,
                broadcast,
                transpose,
                dims,
            })),
            Some(Pipe::V),
        ))
    }

    fn dims(&mut self, f: &Fields, key: &str) -> Option<Vec<u32>> {
        let Some(n) = f.get(key) else {
            return Some(vec![]);
        };
        let path = f.path(key);
        let items = self.r.seq(n, &path, "dimensions")?;
        let mut out = Vec::new();
        for (i, d) in items.iter().enumerate() {
            let v = self.r.u32(d, &index(&path, i), false)?;
            if out.contains(&v) {
                self.r
                    .error(&index(&path, i), format!("dimension {v} is listed twice"));
                return None;
            }
            out.push(v);
        }
        Some(out)
    }

    fn vector_sizes(
        &mut self,
        op: VecOp,
        ins: &[Operand],
        outs: &[Operand],
        broadcast: &[u32],
        dims: &[u32],
        f: &Fields,
    ) {
        let name = op.name();
        let out = &outs[0];
        let ipath = |i: usize| index(&f.path("ins"), i);
        // a dimension past the rank is reported once; the shape rules below would only repeat it
        let mut in_rank = [true; 2];
        for (k, (key, list, of)) in [
            ("broadcast", broadcast, out),
            ("dims", dims, ins.first().unwrap_or(out)),
        ]
        .into_iter()
        .enumerate()
        {
            let rank = self.rank(of);
            if let Some(bad) = list.iter().find(|d| **d as usize >= rank) {
                in_rank[k] = false;
                self.r.error(
                    &f.path(key),
                    format!(
                        "{key} names dimension {bad}, but \"{}\" has rank {rank}",
                        of.text
                    ),
                );
            }
        }
        // an input of a broadcast is the output's shape, or it with the broadcast dimensions
        // set to 1 or left out; a reduction's output is its input's shape with the reduced
        // dimensions set to 1 or left out
        let shape = |l: &Self, o: &Operand| selected_shape(o, l.base_shape(o.base));
        let squeezed = |full: &[u64], along: &[u32]| -> [Vec<u64>; 2] {
            let ones = full
                .iter()
                .enumerate()
                .map(|(d, &n)| if along.contains(&(d as u32)) { 1 } else { n })
                .collect();
            let dropped = full
                .iter()
                .enumerate()
                .filter(|(d, _)| !along.contains(&(*d as u32)))
                .map(|(_, &n)| n)
                .collect();
            [ones, dropped]
        };
        if !broadcast.is_empty() && in_rank[0] {
            if let Some(full) = shape(self, out) {
                let [ones, dropped] = squeezed(&full, broadcast);
                for (i, x) in ins.iter().enumerate() {
                    let Some(s) = shape(self, x) else { continue };
                    if s != full && s != ones && s != dropped {
                        self.r.error_hint(
                            &ipath(i),
                            format!(
                                "shape mismatch in {name}: input \"{}\" selects {s:?}, which does not broadcast along {broadcast:?} to the output's {full:?}",
                                x.text
                            ),
                            Some(format!("along {broadcast:?} an input has extent 1 ({ones:?}) or leaves the dimensions out ({dropped:?})")),
                        );
                    }
                }
            }
        }
        if op.form() == VecForm::Reduce {
            if dims.is_empty() {
                self.r.error_hint(
                    &f.path,
                    format!("{name} needs dims: the dimensions it reduces"),
                    Some("e.g. dims: [1] reduces each row of a [rows, cols] input".into()),
                );
            } else if let (true, Some(full), Some(o)) =
                (in_rank[1], shape(self, &ins[0]), shape(self, out))
            {
                let [ones, dropped] = squeezed(&full, dims);
                if o != ones && o != dropped {
                    self.r.error_hint(
                        &f.path("out"),
                        format!(
                            "shape mismatch in {name}: reducing {full:?} along {dims:?} gives {dropped:?}, but output \"{}\" selects {o:?}",
                            out.text
                        ),
                        Some(format!("the output is {dropped:?} or {ones:?}")),
                    );
                }
            }
        }
        match op.form() {
            VecForm::Broadcast => {
                if let (Some(i), Some(o)) = (ins[0].elements, out.elements) {
                    if i == 0 || o % i != 0 {
                        self.r.error(
                            &f.path("out"),
                            format!(
                                "size mismatch in vbrc: output \"{}\" has {o} elements, not a multiple of input \"{}\" ({i})",
                                out.text, ins[0].text
                            ),
                        );
                    }
                }
            }
            // with dims and known shapes the shape check above decides
            VecForm::Reduce
                if dims.is_empty()
                    || shape(self, &ins[0]).is_none()
                    || shape(self, out).is_none() =>
            {
                if let (Some(i), Some(o)) = (ins[0].elements, out.elements) {
                    if o == 0 || i % o != 0 {
                        self.r.error(
                            &f.path("out"),
                            format!(
                                "size mismatch in {name}: input \"{}\" has {i} elements, not a multiple of output \"{}\" ({o})",
                                ins[0].text, out.text
                            ),
                        );
                    }
                }
            }
            VecForm::Reduce => {}
            VecForm::Deinterleave => {
                if let Some(i) = ins[0].elements {
                    for (k, o) in outs.iter().enumerate() {
                        if let Some(n) = o.elements.filter(|n| n * 2 != i) {
                            self.r.error(
                                &index(&f.path("out"), k),
                                format!(
                                    "size mismatch in vdeinterleave: output \"{}\" has {n} elements, half of input \"{}\" is {}",
                                    o.text,
                                    ins[0].text,
                                    i as f64 / 2.0
                                ),
                            );
                        }
                    }
                }
            }
            // vdup broadcasts its one value (an input element or the scalar) to all of out
            _ if broadcast.is_empty() && op != VecOp::Vdup => {
                let Some(o) = out.elements else { return };
                for (i, x) in ins.iter().enumerate() {
                    if let Some(n) = x.elements.filter(|n| *n != o) {
                        self.r.error_hint(
                            &ipath(i),
                            format!(
                                "size mismatch in {name}: input \"{}\" has {n} elements, output \"{}\" has {o}",
                                x.text, out.text
                            ),
                            Some("slice the operands to the same size, or give broadcast: [dims]".into()),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    // ----- scalar, use, sync ---------------------------------------------------------------

    fn scalar_access(&mut self, key: &str, value: &Node, opath: &str) -> Built {
        let field = if key == "sload" { "src" } else { "dst" };
        let f = self.r.map(value, opath, key, &[field], &[])?;
        let o = self.operand_field(&f, field)?;
        let kind = if key == "sload" {
            OpKind::Sload { src: o }
        } else {
            OpKind::Sstore { dst: o }
        };
        Some((kind, Some(Pipe::S)))
    }

    fn scalar_op(&mut self, value: &Node, opath: &str) -> Built {
        let f = self.r.map(value, opath, "scalar", &["cycles"], &[])?;
        let path = f.path("cycles");
        let cycles = self.expr(f.get("cycles")?, &path, true, false)?;
        if let Some(c) = cycles.as_const().filter(|c| *c < 0) {
            self.r
                .error(&path, format!("scalar cycles {c} is negative"));
            return None;
        }
        if let Some((_, hi)) = cycles.bounds(&self.ranges) {
            if hi > crate::limits::MAX_SCALAR_CYCLES {
                self.r.error(
                    &path,
                    format!(
                        "scalar cycles can reach {hi}, more than any run may last (at most {})",
                        crate::limits::show(crate::limits::MAX_SCALAR_CYCLES as u64)
                    ),
                );
                return None;
            }
        }
        Some((OpKind::Scalar { cycles }, Some(Pipe::S)))
    }

    fn use_op(&mut self, value: &Node, opath: &str) -> Built {
        let operands = self.operand_list(value, opath)?;
        Some((OpKind::Use { operands }, None))
    }

    fn auto_sync_error(&mut self, key: &str, opath: &str) {
        if self.sync == crate::program::SyncMode::Auto {
            self.r.error_hint(
                opath,
                format!("hand-written {key} in a sync: auto program"),
                Some(
                    "sync: auto inserts synchronisation; remove this op or write sync: manual"
                        .into(),
                ),
            );
        }
    }

    fn flag_op(&mut self, key: &str, value: &Node, opath: &str) -> Built {
        let f = self.r.map(value, opath, key, &["src", "dst", "id"], &[])?;
        let src = f.get("src").and_then(|n| self.pipe(n, &f.path("src")));
        let dst = f.get("dst").and_then(|n| self.pipe(n, &f.path("dst")));
        let id = f
            .get("id")
            .and_then(|n| self.expr(n, &f.path("id"), true, false));
        self.auto_sync_error(key, opath);
        let (src, dst, id) = (src?, dst?, id?);
        if src == dst {
            self.r.error_hint(
                opath,
                format!("{key} from pipe {} to itself", src.yaml_name()),
                Some(format!(
                    "order instructions on one pipe with barrier: {}",
                    src.yaml_name()
                )),
            );
            return None;
        }
        let n = self.config.sync.event_ids as i64;
        if let Some((lo, hi)) = id.bounds(&self.ranges) {
            if lo < 0 || hi >= n {
                let what = self.reach("flag id", &id, if lo < 0 { lo } else { hi });
                self.r.error_hint(
                    &f.path("id"),
                    format!(
                        "{what} is outside 0..{n} (event_ids of config {})",
                        self.config.name
                    ),
                    Some(format!("use ids 0 to {}", n - 1)),
                );
                return None;
            }
        }
        let (kind, pipe) = if key == "set_flag" {
            (OpKind::SetFlag { src, dst, id }, src)
        } else {
            (OpKind::WaitFlag { src, dst, id }, dst)
        };
        Some((kind, Some(pipe)))
    }

    fn barrier(&mut self, value: &Node, opath: &str) -> Built {
        let s = self.r.string(value, opath, "a pipe name or all")?;
        self.auto_sync_error("barrier", opath);
        if s == "all" {
            return Some((OpKind::Barrier(BarrierTarget::All), Some(Pipe::S)));
        }
        match Pipe::parse(s) {
            Some(Pipe::S) => {
                self.r.error_hint(
                    opath,
                    "barrier: s orders nothing",
                    Some("the scalar pipe S executes in order; use barrier: all to wait for every pipe".into()),
                );
                None
            }
            Some(p) => self
                .core_has_pipe(p, opath, "barrier")
                .then_some((OpKind::Barrier(BarrierTarget::Pipe(p)), Some(p))),
            None => {
                let mut names = match self.core {
                    Some(c) => c.pipes.iter().map(|p| p.yaml_name()).collect(),
                    None => Pipe::yaml_names(),
                };
                names.push("all");
                let hint = suggest(s, &names);
                self.r
                    .error_hint(opath, format!("unknown pipe \"{s}\""), hint);
                None
            }
        }
    }

    /// `cross_set: { mode, pipe, id }` and `cross_wait: { id, pipe }` (pipe `s` by default):
    /// cross-core flags. Allowed in `sync: auto` programs, whose pass only adds flags within a
    /// core.
    fn cross_op(&mut self, key: &str, value: &Node, opath: &str) -> Built {
        let set = key == "cross_set";
        let f = if set {
            self.r
                .map(value, opath, key, &["mode", "pipe", "id"], &[])?
        } else {
            self.r.map(value, opath, key, &["id"], &["pipe"])?
        };
        let cross = self.config.cross_core;
        if cross.is_none() {
            self.r.error_hint(
                opath,
                format!(
                    "{key} needs cross-core flags, but config {} has no cross_core section",
                    self.config.name
                ),
                Some("add cross_core: { flag_ids, max_pending, latency } to the config".into()),
            );
        }
        let mode = if set {
            f.get("mode")
                .and_then(|n| self.cross_mode(n, &f.path("mode")))
        } else {
            Some(CrossMode::All)
        };
        let pipe = match f.get("pipe") {
            Some(n) => self.pipe(n, &f.path("pipe")),
            None => Some(Pipe::S),
        };
        let id = f
            .get("id")
            .and_then(|n| self.expr(n, &f.path("id"), true, false));
        let (mode, pipe, id, cross) = (mode?, pipe?, id?, cross?);
        let n = i64::from(cross.flag_ids);
        if let Some((lo, hi)) = id.bounds(&self.ranges) {
            if lo < 0 || hi >= n {
                let what = self.reach("cross-core flag id", &id, if lo < 0 { lo } else { hi });
                self.r.error_hint(
                    &f.path("id"),
                    format!(
                        "{what} is outside 0..{n} (cross_core.flag_ids of config {})",
                        self.config.name
                    ),
                    Some(format!("use ids 0 to {}", n - 1)),
                );
                return None;
            }
        }
        let kind = if set {
            OpKind::CrossSet { mode, pipe, id }
        } else {
            OpKind::CrossWait { pipe, id }
        };
        Some((kind, Some(pipe)))
    }

    /// A `cross_set` mode: 0 (every core of the type), 1 (the vector cores of an AI core, on
    /// a split chip's vector core) or 2 (an AI core's cube and vector cores, in a mixed kernel).
    fn cross_mode(&mut self, node: &Node, path: &str) -> Option<CrossMode> {
        let number = self.const_int(node, path)?;
        let mode = match number {
            0 => CrossMode::All,
            1 => CrossMode::Pair,
            2 => CrossMode::Block,
            _ => {
                self.r.error_hint(
                    path,
                    format!("cross_set mode {number} is not 0, 1 or 2"),
                    Some("0: every core of this type in the launch; 1: the vector cores of one AI core; 2: the cube and vector cores of one AI core".into()),
                );
                return None;
            }
        };
        let core = self.core_id;
        let name = self.core.map_or("?", |c| c.name.as_str());
        match mode {
            CrossMode::Pair if core.is_some_and(|c| !crate::launch::is_vector(self.config, c)) => {
                let msg = format!(
                    "cross_set mode 1 pairs the vector cores of an AI core, but core {name} is not the split chip's vector core"
                );
                self.r.error_hint(
                    path,
                    msg,
                    Some(
                        "mode 1 runs on aiv cores of a chip with aiv_per_aic; use mode 0 or 2"
                            .into(),
                    ),
                );
                None
            }
            CrossMode::Block if !self.mixed => {
                self.r.error_hint(
                    path,
                    format!("cross_set mode 2 signals between the aic and aiv parts of a mixed kernel, but this program runs on core {name} alone"),
                    Some("write the kernel with aic: and aiv: parts, or use mode 0".into()),
                );
                None
            }
            _ => Some(mode),
        }
    }
}
