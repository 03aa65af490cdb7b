//! A MIX function split into a mixed kernel's `aic` and `aiv` parts (docs/mlir.md, "MIX
//! functions").
//!
//! HIVM writes a cube + vector kernel as one function; the compiler splits it into the cube
//! core's and the vector cores' functions after synchronising it. npusim runs a mixed kernel as
//! two parts (docs/programs.md, "Mixed kernels"), so the lowered document of a MIX function is
//! split here, op by op, by the memories and pipes each op uses:
//! - an op touching UB runs on the vector cores; one touching L1, L0A/B/C, BT or FP on the cube
//!   core; `mmad_l1` and `fixpipe` are cube ops;
//! - a `set_flag`/`wait_flag`/`barrier` goes where its pipes are (`m`, `mte1`, `fix` on the cube
//!   core; `v`, `mte3` on the vector cores; `mte2` and `s` pairs, and `barrier: all`, on both);
//! - a cross-core op goes to the core type its MLIR op names (the lowering's [`SIDE`] mark);
//! - a loop or `if` goes to each part that has an op in it, with that part's ops only; scalar
//!   work goes with the block it is in (HIVM's split drops the scalar work a side does not use;
//!   npusim keeps a block's scalar work on each side that runs the block).
//!
//! gm tensors, params and the launch stay shared at the top.

use crate::diag::Diagnostic;
use crate::yaml::{Node, Value as Y};
use std::collections::HashMap;

/// The key the lowering adds to a cross-core op to say which part runs it.
pub const SIDE: &str = "npusim_side";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Aic,
    Aiv,
    Both,
}

const CUBE_SCOPES: [&str; 6] = ["l1", "l0a", "l0b", "l0c", "bt", "fp"];
const CUBE_PIPES: [&str; 3] = ["m", "mte1", "fix"];
const VECTOR_PIPES: [&str; 2] = ["v", "mte3"];

/// The document of a MIX function (`core: mix`, one body) as a mixed kernel: `aic:` and `aiv:`
/// parts, each with its buffers, views and body. Every op that cannot be placed on one side is
/// reported, all at once.
pub fn split(doc: &Node, file: &str) -> Result<Node, Vec<Diagnostic>> {
    let Y::Map(top) = &doc.value else {
        return Err(vec![Diagnostic::error(file, "", "not a program document")]);
    };
    let mut s = Splitter {
        file,
        scopes: HashMap::new(),
        diags: Vec::new(),
    };
    // every buffer and view of the function, wherever declared: lowered names are unique
    s.collect(doc);
    for (k, v) in top {
        if k == "gm" {
            if let Y::Map(ts) = &v.value {
                for (name, _) in ts {
                    s.scopes.insert(name.clone(), "gm".into());
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut parts: [Vec<(String, Node)>; 2] = [Vec::new(), Vec::new()];
    for (k, v) in top {
        match k.as_str() {
            "core" => {}
            "buffers" | "views" => {
                let [aic, aiv] = s.split_decls(v);
                push_nonempty(&mut parts[0], k, aic);
                push_nonempty(&mut parts[1], k, aiv);
            }
            "body" => {
                let [aic, aiv] = s.split_body(v, "body");
                parts[0].push((k.clone(), aic));
                parts[1].push((k.clone(), aiv));
            }
            _ => out.push((k.clone(), v.clone())),
        }
    }
    if !s.diags.is_empty() {
        return Err(s.diags);
    }
    let [aic, aiv] = parts;
    out.push(("aic".into(), at(doc, Y::Map(aic))));
    out.push(("aiv".into(), at(doc, Y::Map(aiv))));
    Ok(at(doc, Y::Map(out)))
}

struct Splitter<'a> {
    file: &'a str,
    /// Buffer, view and gm tensor names, with their scope (`gm` for tensors).
    scopes: HashMap<String, String>,
    diags: Vec<Diagnostic>,
}

fn at(n: &Node, value: Y) -> Node {
    Node {
        line: n.line,
        column: n.column,
        value,
    }
}

fn push_nonempty(part: &mut Vec<(String, Node)>, key: &str, n: Node) {
    if matches!(&n.value, Y::Map(m) if !m.is_empty()) {
        part.push((key.to_string(), n));
    }
}

fn field<'n>(m: &'n [(String, Node)], key: &str) -> Option<&'n Node> {
    m.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn text(n: &Node) -> Option<&str> {
    match &n.value {
        Y::Str(t) => Some(t),
        _ => None,
    }
}

/// The names an operand string starts with or mentions (`b0[0:512]` -> `b0`).
fn idents(t: &str) -> impl Iterator<Item = &str> {
    t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
}

impl Splitter<'_> {
    fn collect(&mut self, n: &Node) {
        match &n.value {
            Y::Map(m) => {
                for (k, v) in m {
                    if k == "buffers" {
                        if let Y::Map(bs) = &v.value {
                            for (name, b) in bs {
                                let scope = match &b.value {
                                    Y::Map(f) => field(f, "scope").and_then(text).unwrap_or(""),
                                    _ => "",
                                };
                                self.scopes.insert(name.clone(), scope.to_string());
                            }
                        }
                    }
                    self.collect(v);
                }
                // views after buffers: a view's scope is its base's
                for (k, v) in m {
                    if k == "views" {
                        if let Y::Map(vs) = &v.value {
                            for (name, view) in vs {
                                let scope = self.scope_of_value(view);
                                self.scopes.insert(name.clone(), scope.unwrap_or_default());
                            }
                        }
                    }
                }
            }
            Y::Seq(items) => items.iter().for_each(|i| self.collect(i)),
            _ => {}
        }
    }

    /// The scope of the first buffer a value names (a view's `of` or `select`).
    fn scope_of_value(&self, n: &Node) -> Option<String> {
        let mut found = None;
        self.names_in(n, &mut |scope| {
            if found.is_none() && scope != "gm" {
                found = Some(scope.to_string());
            }
        });
        found
    }

    fn names_in(&self, n: &Node, f: &mut dyn FnMut(&str)) {
        match &n.value {
            Y::Str(t) => {
                for w in idents(t) {
                    if let Some(scope) = self.scopes.get(w) {
                        f(scope);
                    }
                }
            }
            Y::Map(m) => m.iter().for_each(|(_, v)| self.names_in(v, f)),
            Y::Seq(items) => items.iter().for_each(|i| self.names_in(i, f)),
            _ => {}
        }
    }

    fn side_of_scope(scope: &str) -> Option<Side> {
        if scope == "ub" {
            Some(Side::Aiv)
        } else if CUBE_SCOPES.contains(&scope) {
            Some(Side::Aic)
        } else {
            None
        }
    }

    /// A `buffers:` or `views:` map split by scope.
    fn split_decls(&self, n: &Node) -> [Node; 2] {
        let mut aic = Vec::new();
        let mut aiv = Vec::new();
        if let Y::Map(m) = &n.value {
            for (name, d) in m {
                let scope = self.scopes.get(name).map(String::as_str).unwrap_or("");
                match Self::side_of_scope(scope) {
                    Some(Side::Aic) => aic.push((name.clone(), d.clone())),
                    _ => aiv.push((name.clone(), d.clone())),
                }
            }
        }
        [at(n, Y::Map(aic)), at(n, Y::Map(aiv))]
    }

    /// A body (a list of ops, or `{ buffers, views, body }`) split into the two parts'.
    fn split_body(&mut self, n: &Node, path: &str) -> [Node; 2] {
        match &n.value {
            Y::Seq(items) => {
                let mut aic = Vec::new();
                let mut aiv = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    let [c, v] = self.split_op(item, &p);
                    aic.extend(c);
                    aiv.extend(v);
                }
                [at(n, Y::Seq(aic)), at(n, Y::Seq(aiv))]
            }
            Y::Map(m) => {
                let [c, a] = self.split_fields(m, path, |_| true);
                [at(n, Y::Map(c)), at(n, Y::Map(a))]
            }
            _ => [n.clone(), n.clone()],
        }
    }

    /// The fields of a block or of a loop/`if` item for each part: declarations split by
    /// scope, the fields `is_body` names split as bodies, the others (a loop's head) to both.
    fn split_fields(
        &mut self,
        m: &[(String, Node)],
        path: &str,
        is_body: impl Fn(&str) -> bool,
    ) -> [Vec<(String, Node)>; 2] {
        let mut parts: [Vec<(String, Node)>; 2] = [Vec::new(), Vec::new()];
        for (k, v) in m {
            if matches!(k.as_str(), "buffers" | "views") {
                let [c, a] = self.split_decls(v);
                push_nonempty(&mut parts[0], k, c);
                push_nonempty(&mut parts[1], k, a);
            } else if is_body(k) {
                let [c, a] = self.split_body(v, &format!("{path}.{k}"));
                parts[0].push((k.clone(), c));
                parts[1].push((k.clone(), a));
            } else {
                parts[0].push((k.clone(), v.clone()));
                parts[1].push((k.clone(), v.clone()));
            }
        }
        parts
    }

    /// One op: for each part, the op as that part runs it (none when it does not).
    fn split_op(&mut self, n: &Node, path: &str) -> [Option<Node>; 2] {
        let Y::Map(m) = &n.value else {
            return [Some(n.clone()), Some(n.clone())];
        };
        let Some((kind, head)) = m.first() else {
            return [None, None];
        };
        match kind.as_str() {
            "for" | "while" | "if" => return self.split_structured(n, m, path),
            "scalar" => return [Some(n.clone()), Some(n.clone())],
            _ => {}
        }
        let side = match kind.as_str() {
            "cross_set" | "cross_wait" => {
                let Y::Map(f) = &head.value else {
                    return [None, None];
                };
                let side = match field(f, SIDE).and_then(text) {
                    Some("aic") => Side::Aic,
                    _ => Side::Aiv,
                };
                let f: Vec<_> = f.iter().filter(|(k, _)| k != SIDE).cloned().collect();
                let op = at(n, Y::Map(vec![(kind.clone(), at(head, Y::Map(f)))]));
                return match side {
                    Side::Aic => [Some(op), None],
                    _ => [None, Some(op)],
                };
            }
            "set_flag" | "wait_flag" => {
                let pipes: Vec<String> = match &head.value {
                    Y::Map(f) => ["src", "dst"]
                        .iter()
                        .filter_map(|k| field(f, k).and_then(text).map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                };
                Self::side_of_pipes(&pipes)
            }
            "barrier" => match text(head) {
                Some("all") | None => Side::Both,
                Some(p) => Self::side_of_pipes(&[p.to_string()]),
            },
            _ => {
                let mut cube = false;
                let mut vector = false;
                self.names_in(n, &mut |scope| match Self::side_of_scope(scope) {
                    Some(Side::Aic) => cube = true,
                    Some(Side::Aiv) => vector = true,
                    _ => {}
                });
                cube |= matches!(kind.as_str(), "mmad_l1" | "fixpipe");
                match (cube, vector) {
                    (true, true) => {
                        let mut d = Diagnostic::error(
                            self.file,
                            path,
                            format!("{kind} touches both the vector cores' UB and the cube core's memories: no core of a split chip runs it"),
                        );
                        d.line = Some(n.line);
                        d.column = Some(n.column);
                        d.hint = Some("move data between the cube and vector cores through gm, with a cross-core flag".into());
                        self.diags.push(d);
                        Side::Both
                    }
                    (true, false) => Side::Aic,
                    (false, true) => Side::Aiv,
                    // gm only (or nothing): both sides see gm
                    (false, false) => Side::Both,
                }
            }
        };
        match side {
            Side::Aic => [Some(n.clone()), None],
            Side::Aiv => [None, Some(n.clone())],
            Side::Both => [Some(n.clone()), Some(n.clone())],
        }
    }

    fn side_of_pipes(pipes: &[String]) -> Side {
        let cube = pipes.iter().any(|p| CUBE_PIPES.contains(&p.as_str()));
        let vector = pipes.iter().any(|p| VECTOR_PIPES.contains(&p.as_str()));
        match (cube, vector) {
            (true, false) => Side::Aic,
            (false, true) => Side::Aiv,
            _ => Side::Both,
        }
    }

    /// A loop or `if`: in each part that runs a non-scalar op inside it, with that part's ops.
    fn split_structured(
        &mut self,
        n: &Node,
        m: &[(String, Node)],
        path: &str,
    ) -> [Option<Node>; 2] {
        let kind = &m[0].0;
        let [c, a] = self.split_fields(m, &format!("{path}.{kind}"), |k| {
            matches!(k, "body" | "then" | "else")
        });
        let keep = |fields: &Vec<(String, Node)>| {
            fields
                .iter()
                .filter(|(k, _)| matches!(k.as_str(), "body" | "then" | "else"))
                .any(|(_, v)| runs_work(v))
        };
        let c = keep(&c).then(|| at(n, Y::Map(c)));
        let a = keep(&a).then(|| at(n, Y::Map(a)));
        [c, a]
    }
}

/// Whether a body holds an op other than scalar work (in it or in a nested block).
fn runs_work(n: &Node) -> bool {
    match &n.value {
        Y::Seq(items) => items.iter().any(|op| match &op.value {
            Y::Map(m) => match m.first().map(|(k, _)| k.as_str()) {
                Some("scalar") | None => false,
                Some("for" | "while" | "if") => m
                    .iter()
                    .filter(|(k, _)| matches!(k.as_str(), "body" | "then" | "else"))
                    .any(|(_, v)| runs_work(v)),
                Some(_) => true,
            },
            _ => false,
        }),
        Y::Map(m) => field(m, "body").is_some_and(runs_work),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlir::lower::{functions, lower, Options, SyncOps};

    const GM: &str = "#hivm.address_space<gm>";
    const UB: &str = "#hivm.address_space<ub>";
    const L1: &str = "#hivm.address_space<cbuf>";
    const CC: &str = "#hivm.address_space<cc>";

    fn split_text(body: &str) -> Result<String, Vec<Diagnostic>> {
        let text = format!(
            "func.func @k(%a: memref<256xf16, {GM}>, %w: memref<256xf32, {GM}>, %y: memref<256xf32, {GM}>)
    attributes {{hivm.func_core_type = #hivm.func_core_type<MIX>}} {{
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
{body}
  return
}}"
        );
        let chunks = crate::mlir::parse_file(&text, "t.mlir").expect("parses");
        let (c, f) = functions(&chunks)[0];
        let opts = Options {
            params: Vec::new(),
            sync: SyncOps::Keep,
            lenient: false,
        };
        let l = lower(&text, &chunks[c], f, "t.mlir", &opts).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(l.core, "mix");
        split(&l.doc, "t.mlir").map(|d| crate::yaml::flow(&d, 1 << 20))
    }

    /// The part `aic` or `aiv` of a split document's flow text.
    fn part<'t>(flow: &'t str, name: &str) -> &'t str {
        let start = flow.find(&format!("{name}: ")).expect("the part");
        let rest = &flow[start..];
        match name {
            "aic" => &rest[..rest.find("aiv: ").unwrap_or(rest.len())],
            _ => rest,
        }
    }

    #[test]
    fn ops_go_to_the_core_whose_memories_and_pipes_they_use() {
        // the cube side: nd2nz into cbuf, mmadL1 into cc, fixpipe out to gm; the vector side:
        // load into ub, vadd, store; a loop around both goes to both parts, each with its ops;
        // the MTE2 -> MTE1 pair is the cube core's, the V -> MTE3 pair the vector cores'
        let f = split_text(&format!(
            "  %l1 = memref.alloc() : memref<256xf16, {L1}>
  %acc = memref.alloc() : memref<256xf32, {CC}>
  %u = memref.alloc() : memref<256xf32, {UB}>
  scf.for %i = %c0 to %c2 step %c1 {{
    hivm.hir.nd2nz ins(%a : memref<256xf16, {GM}>) outs(%l1 : memref<256xf16, {L1}>)
    hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_MTE1>, <EVENT_ID0>]
    hivm.hir.wait_flag[<PIPE_MTE2>, <PIPE_MTE1>, <EVENT_ID0>]
    hivm.hir.mmadL1 ins(%l1, %l1, %true, %c16, %c16, %c16 : memref<256xf16, {L1}>, memref<256xf16, {L1}>, i1, index, index, index) outs(%acc : memref<256xf32, {CC}>)
    hivm.hir.fixpipe ins(%acc : memref<256xf32, {CC}>) outs(%w : memref<256xf32, {GM}>)
    hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_S>] flag = 3
    hivm.hir.sync_block_wait[<VECTOR>, <PIPE_FIX>, <PIPE_MTE2>] flag = 3
    hivm.hir.load ins(%w : memref<256xf32, {GM}>) outs(%u : memref<256xf32, {UB}>)
    hivm.hir.vadd ins(%u, %u : memref<256xf32, {UB}>, memref<256xf32, {UB}>) outs(%u : memref<256xf32, {UB}>)
    hivm.hir.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID1>]
    hivm.hir.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID1>]
    hivm.hir.store ins(%u : memref<256xf32, {UB}>) outs(%y : memref<256xf32, {GM}>)
  }}
  hivm.hir.pipe_barrier[<PIPE_ALL>]"
        ))
        .unwrap_or_else(|d| panic!("{d:?}"));
        assert!(!f.contains("core:"), "{f}");
        assert!(!f.contains(SIDE), "{f}");
        let (aic, aiv) = (part(&f, "aic"), part(&f, "aiv"));
        assert!(
            aic.starts_with("aic: { buffers: { l1: { scope: l1"),
            "{aic}"
        );
        assert!(aic.contains("acc: { scope: l0c"), "{aic}");
        assert!(!aic.contains("scope: ub"), "{aic}");
        assert!(aiv.starts_with("aiv: { buffers: { u: { scope: ub"), "{aiv}");
        for (kind, in_aic) in [
            ("load: { src: a, dst: l1, layout: nz }", true),
            ("set_flag: { src: mte2, dst: mte1", true),
            ("mmad_l1:", true),
            ("fixpipe:", true),
            ("cross_set: { mode: 2, pipe: fix, id: \"3\" }", true),
            ("cross_wait: { id: \"3\", pipe: mte2 }", false),
            ("load: { src: w, dst: u }", false),
            ("vadd:", false),
            ("set_flag: { src: v, dst: mte3", false),
            ("store:", false),
        ] {
            assert_eq!(aic.contains(kind), in_aic, "{kind} in aic: {aic}");
            assert_eq!(aiv.contains(kind), !in_aic, "{kind} in aiv: {aiv}");
        }
        // the loop in both parts, and the final barrier on both cores
        assert!(
            aic.contains("for: { var: i") && aiv.contains("for: { var: i"),
            "{f}"
        );
        assert!(
            aic.contains("barrier: all") && aiv.contains("barrier: all"),
            "{f}"
        );
    }

    #[test]
    fn a_loop_with_work_for_one_side_only_stays_on_that_side() {
        let f = split_text(&format!(
            "  %l1 = memref.alloc() : memref<256xf16, {L1}>
  %u = memref.alloc() : memref<256xf32, {UB}>
  hivm.hir.nd2nz ins(%a : memref<256xf16, {GM}>) outs(%l1 : memref<256xf16, {L1}>)
  scf.for %i = %c0 to %c2 step %c1 {{
    %j = arith.addi %i, %c1 : index
    hivm.hir.load ins(%y : memref<256xf32, {GM}>) outs(%u : memref<256xf32, {UB}>)
  }}"
        ))
        .unwrap_or_else(|d| panic!("{d:?}"));
        let (aic, aiv) = (part(&f, "aic"), part(&f, "aiv"));
        assert!(!aic.contains("for:"), "{aic}");
        assert!(aiv.contains("for: { var: i"), "{aiv}");
        assert!(aiv.contains("scalar:"), "{aiv}");
    }

    #[test]
    fn an_op_on_both_sides_memories_is_refused_where_it_is() {
        let d = split_text(&format!(
            "  %l1 = memref.alloc() : memref<256xf32, {L1}>
  %u = memref.alloc() : memref<256xf32, {UB}>
  hivm.hir.load ins(%y : memref<256xf32, {GM}>) outs(%u : memref<256xf32, {UB}>)
  hivm.hir.copy ins(%u : memref<256xf32, {UB}>) outs(%l1 : memref<256xf32, {L1}>)"
        ))
        .expect_err("a ub -> cbuf copy runs on no core of a split chip");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.starts_with("copy touches both"), "{d:?}");
        // the copy's line in the function text (line 1 is the func.func line)
        assert_eq!((d[0].line, d[0].column), (Some(11), Some(3)), "{d:?}");
    }
}
