//! Programs that load, and what the loader builds from them.

use super::*;
use crate::expr::Expr;
use crate::program::{ForLoop, Index, OpKind, Ref, SyncMode, ViewKind};
use crate::types::{Dtype, Pipe, Space};

fn config() -> Config {
    load_config(crate::builtin::builtin("ascend910b").unwrap(), "<built-in>").unwrap()
}

fn load(text: &str) -> Program {
    load_program(text, "p.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn errors(text: &str) -> Vec<Diagnostic> {
    match load_program(text, "p.yaml", &config(), &[]) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.diagnostics,
    }
}

const README_EXAMPLE: &str = r#"
kernel: vec_add_db
core: aiv
sync: auto
params: { tiles: 16, n: 16384 }
gm:
  x: { shape: [tiles, n], dtype: f16 }
  y: { shape: [tiles, n], dtype: f16 }
  z: { shape: [tiles, n], dtype: f16 }
body:
  - for: { var: t, to: tiles }
    buffers:
      xb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      yb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      zb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
    body:
      - load:  { src: "x[t]", dst: xb }
      - load:  { src: "y[t]", dst: yb }
      - vadd:  { ins: [xb, yb], out: zb }
      - store: { src: zb, dst: "z[t]" }
"#;

#[test]
fn every_op_knows_where_it_is_written() {
    let p = load(README_EXAMPLE);
    assert_eq!(p.file, "p.yaml");
    let at = |i: usize| {
        let l = &p.ops[i].loc;
        (l.line, l.column, p.op_text(crate::OpId::new(i)), l.inserted)
    };
    // the README example starts with an empty line: `kernel` is on line 2
    assert_eq!(at(0), (11, 5, "for { var: t, to: tiles }", None));
    assert_eq!(at(1), (17, 9, "load { src: \"x[t]\", dst: xb }", None));
    assert_eq!(at(3), (19, 9, "vadd { ins: [xb, yb], out: zb }", None));
    assert_eq!(
        p.locate(crate::OpId::new(4)),
        "p.yaml:20:9 store { src: zb, dst: \"z[t]\" }"
    );
    // an op without fields is its key; a long one is cut
    let long = format!(
        "kernel: k\ncore: aiv\nsync: manual\nbody:\n  - scalar: {{ cycles: {} }}\n  - barrier: all\n",
        "1 + ".repeat(30) + "1"
    );
    let p = load(&long);
    assert_eq!(
        p.op_text(crate::OpId::new(0)).chars().count(),
        crate::program::Loc::TEXT_MAX
    );
    let text = p.op_text(crate::OpId::new(0));
    assert!(text.starts_with("scalar { cycles: \"1 + 1 + "));
    assert!(text.ends_with("..."));
    assert_eq!(p.locate(crate::OpId::new(1)), "p.yaml:6:5 barrier all");
}

#[test]
fn design_example_round_trip() {
    let p = load(README_EXAMPLE);
    assert_eq!(p.kernel, "vec_add_db");
    assert_eq!(p.core, config().core_named("aiv").unwrap());
    assert_eq!(p.sync, SyncMode::Auto);
    assert_eq!(p.params, vec![("tiles".into(), 16), ("n".into(), 16384)]);
    assert_eq!(p.tensors.len(), 3);
    assert_eq!(p.tensors[0].shape, vec![16, 16384]);
    assert_eq!(p.tensors[0].bytes, 16 * 16384 * 2);
    assert_eq!(p.buffers.len(), 3);
    for b in &p.buffers {
        assert_eq!(
            (b.scope, b.dtype, b.bytes, b.multi),
            (Space::Ub, Dtype::F16, 32768, 2)
        );
        assert_eq!(b.declared_in, Some(crate::OpId(0)));
        assert_eq!(b.loop_parent, Some(crate::OpId(0)));
    }
    assert_eq!(p.buffers[0].path, "body[0].for.buffers.xb");
    let paths: Vec<&str> = p.ops.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "body[0]",
            "body[0].for.body[0]",
            "body[0].for.body[1]",
            "body[0].for.body[2]",
            "body[0].for.body[3]"
        ]
    );
    let pipes: Vec<Option<Pipe>> = p.ops.iter().map(|o| o.pipe).collect();
    assert_eq!(
        pipes,
        [
            Some(Pipe::S),
            Some(Pipe::Mte2),
            Some(Pipe::Mte2),
            Some(Pipe::V),
            Some(Pipe::Mte3)
        ]
    );
    assert_eq!(p.body.ops, vec![crate::OpId(0)]);
    match &p.ops[0].kind {
        OpKind::For(ForLoop {
            var,
            from,
            to,
            step,
            body,
        }) => {
            assert_eq!(p.vars[var.index()].name, "t");
            assert_eq!(
                (from, to, step),
                (&Expr::Const(0), &Expr::Const(16), &Expr::Const(1))
            );
            assert_eq!(body.ops.len(), 4);
            assert_eq!(body.buffers.len(), 3);
        }
        other => panic!("{other:?}"),
    }
    for op in &p.ops[1..] {
        assert_eq!(op.parent, Some(crate::OpId(0)));
        assert_eq!(op.loop_parent, Some(crate::OpId(0)));
    }
    match &p.ops[1].kind {
        OpKind::Load { src, dst, .. } => {
            assert_eq!(src.base, Ref::Tensor(crate::TensorId(0)));
            assert!(matches!(src.indices[..], [Index::At(Expr::Var(_))]));
            assert_eq!(src.elements, Some(16384));
            assert_eq!(src.space, Space::Gm);
            assert_eq!(dst.elements, Some(16384));
            assert_eq!(dst.bytes(), Some(32768));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn params_overrides_and_dependent_params() {
    let text = "kernel: k\ncore: aiv\nparams: { n: 64, m: \"n * 2\" }\ngm: { x: { shape: [m], dtype: f32 } }\nbody: []\n";
    let p = load_program(text, "p.yaml", &config(), &[("n".into(), 8)]).unwrap();
    assert_eq!(p.params, vec![("n".into(), 8), ("m".into(), 16)]);
    assert_eq!(p.tensors[0].elements, 16);
}

#[test]
fn views_blocks_and_control_ops() {
    let text = r#"
kernel: k
core: aiv
sync: manual
params: { n: 256 }
gm: { x: { shape: [4, n], dtype: f16 } }
buffers:
  a: { scope: ub, shape: [n], dtype: f16 }
  b: { scope: ub, shape: [n], dtype: f16 }
views:
  half: { of: a, offset: 128, shape: [128] }
  pick: { select: [a, b] }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1]", dst: b }
  - while: { trips: 3, var: w }
    body:
      - vadd: { ins: ["a[0:128]", half], out: "b[w * 64 : w * 64 + 128]" }
  - if: "n > 2"
    then:
      buffers: { c: { scope: ub, shape: [n], dtype: f16 } }
      body:
        - vexp: { ins: [pick], out: c }
        - store: { src: c, dst: "x[3]" }
    else:
      - set_flag: { src: v, dst: mte3, id: 1 }
      - wait_flag: { src: v, dst: mte3, id: 1 }
      - barrier: all
  - use: [a, "b[0:2]"]
"#;
    let p = load(text);
    assert!(matches!(p.views[0].kind, ViewKind::Window { .. }));
    assert_eq!(p.views[0].shape, vec![128]);
    assert!(matches!(&p.views[1].kind, ViewKind::Select { of } if of.len() == 2));
    let kinds: Vec<&str> = p.ops.iter().map(|o| o.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "load",
            "load",
            "while",
            "vadd",
            "if",
            "vexp",
            "store",
            "set_flag",
            "wait_flag",
            "barrier",
            "use"
        ]
    );
    assert_eq!(p.ops[3].path, "body[2].while.body[0]");
    assert_eq!(p.ops[5].path, "body[3].if.then.body[0]");
    assert_eq!(p.ops[7].path, "body[3].if.else[0]");
    assert_eq!(p.ops[7].pipe, Some(Pipe::V));
    assert_eq!(p.ops[8].pipe, Some(Pipe::Mte3));
    assert_eq!(p.ops[9].pipe, Some(Pipe::S));
    assert_eq!(p.ops[10].pipe, None);
    assert_eq!(p.ops[5].parent, Some(crate::OpId(4)));
    assert_eq!(p.ops[5].loop_parent, None);
    assert_eq!(p.buffers[2].declared_in, Some(crate::OpId(4)));
    if let OpKind::Vector(v) = &p.ops[3].kind {
        assert_eq!(v.outs[0].elements, Some(128));
    }
    assert_eq!(p.body.buffers.len(), 2);
    assert_eq!(p.body.views.len(), 2);
}

#[test]
fn cube_program_loads() {
    let text = r#"
kernel: mm
core: aic
params: { m: 32, n: 32, k: 64 }
gm:
  a: { shape: [m, k], dtype: f16 }
  b: { shape: [k, n], dtype: f16 }
  c: { shape: [m, n], dtype: f32 }
buffers:
  a1: { scope: l1, shape: [m, k], dtype: f16 }
  b1: { scope: l1, shape: [k, n], dtype: f16 }
  a0: { scope: l0a, shape: [m, k], dtype: f16 }
  b0: { scope: l0b, shape: [k, n], dtype: f16 }
  c0: { scope: l0c, shape: [m, n], dtype: f32 }
body:
  - load: { src: a, dst: a1, layout: nz }
  - load: { src: b, dst: b1 }
  - copy: { src: a1, dst: a0 }
  - copy: { src: b1, dst: b0 }
  - mmad: { a: a0, b: b0, c: c0, m: m, n: n, k: k, init: true }
  - fixpipe: { src: c0, dst: c }
"#;
    let p = load(text);
    let pipes: Vec<Option<Pipe>> = p.ops.iter().map(|o| o.pipe).collect();
    assert_eq!(
        pipes,
        [
            Some(Pipe::Mte2),
            Some(Pipe::Mte2),
            Some(Pipe::Mte1),
            Some(Pipe::Mte1),
            Some(Pipe::M),
            Some(Pipe::Fix)
        ]
    );
}

#[test]
fn mmad_accumulating_with_runtime_init_skips_the_c_read_check() {
    let text = r#"
kernel: mm
core: aic
gm: { a: { shape: [16, 16], dtype: f16 }, b: { shape: [16, 16], dtype: f16 } }
buffers:
  a0: { scope: l0a, shape: [16, 16], dtype: f16 }
  b0: { scope: l0b, shape: [16, 16], dtype: f16 }
  c0: { scope: l0c, shape: [16, 16], dtype: f32 }
body:
  - load: { src: a, dst: a0 }
  - load: { src: b, dst: b0 }
  - for: { var: i, to: 4 }
    body:
      - mmad: { a: a0, b: b0, c: c0, m: 16, n: 16, k: 16, init: "i == 0" }
"#;
    load(text);
    let bad = text.replace("init: \"i == 0\"", "init: false");
    let d = errors(&bad);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].message
            .contains("read before first write: mmad reads buffer \"c0\""),
        "{d:?}"
    );
}

#[test]
fn for_with_step_bounds_the_variable_exactly() {
    // t takes 0, 4, 8, 12: t + 4 never passes 16
    let text = r#"
kernel: k
core: aiv
gm: { x: { shape: [16], dtype: f16 } }
buffers: { a: { scope: ub, shape: [4], dtype: f16 } }
body:
  - for: { var: t, to: 16, step: 4 }
    body:
      - load: { src: "x[t : t + 4]", dst: a }
"#;
    load(text);
    let d = errors(&text.replace("step: 4", "step: 3"));
    assert!(d[0].message.contains("out of bounds"), "{d:?}");
}

#[test]
fn never_panics_on_odd_input() {
    for text in [
        "", "3", "[]", "kernel: 3\nbody: 4\n", "kernel: k\nbody: [3, [], {}]\n",
        "kernel: k\ncore: aiv\nbody:\n  - load: 7\n  - vadd: { ins: 3, out: [] }\n  - for: 1\n  - if: {}\n  - while: []\n",
        "kernel: k\ncore: aiv\nparams: { a: \"a\", b: \"1/0\", c: 99999999999999999 }\nbody: []\n",
        "kernel: k\ncore: aiv\ngm: { x: { shape: [99999999, 99999999, 99999999], dtype: u64 } }\nbody: []\n",
        "kernel: k\ncore: aiv\nbody:\n  - use: [\"x[\", \"@\", \"[]\", \"a@@\", \"a[1:2:3]\"]\n",
    ] {
        let _ = load_program(text, "p.yaml", &config(), &[("zz".into(), 1)]);
        let _ = load_config(text, "c.yaml");
    }
}

/// The single diagnostic a program produces, as (path, message, hint).
fn one(text: &str) -> (String, String, Option<String>, u32) {
    let d = errors(text);
    assert_eq!(
        d.len(),
        1,
        "{:#?}",
        d.iter().map(|d| d.to_string()).collect::<Vec<_>>()
    );
    let d = &d[0];
    (
        d.path.clone(),
        d.message.clone(),
        d.hint.clone(),
        d.line.expect("located"),
    )
}

const VEC_HEAD: &str = "kernel: k\ncore: aiv\nsync: manual\ngm: { x: { shape: [256], dtype: f16 } }\nbuffers:\n  a: { scope: ub, shape: [256], dtype: f16, multi: 2 }\n  h: { scope: ub, shape: [128], dtype: f16 }\n  s: { scope: ub, shape: [16], dtype: f16 }\n  c: { scope: ub, shape: [8, 32], dtype: f16 }\nbody:\n  - load: { src: x, dst: a }\n  - load: { src: \"x[0:128]\", dst: h }\n  - load: { src: \"x[0:16]\", dst: s }\n  - load: { src: x, dst: c }\n";

fn vec_prog(ops: &str) -> String {
    format!("{VEC_HEAD}{ops}")
}

#[test]
fn vector_size_rules_by_form() {
    load(&vec_prog("  - vbrc: { ins: [s], out: a }\n"));
    // reducing all of [256] gives one element: [1] or []
    load(&vec_prog(
        "  - vreduce_sum: { ins: [a], out: \"s[0:1]\", dims: [0] }\n",
    ));
    load(&vec_prog(
        "  - vdeinterleave: { ins: [a], out: [h, \"a@1[0:128]\"] }\n",
    ));
    load(&vec_prog(
        "  - vadd: { ins: [a, \"s[0:1]\"], out: a, broadcast: [0] }\n",
    ));
    load(&vec_prog(
        "  - vdup: { scalar: 3, out: a }\n  - vmuls: { ins: [a], out: a, scalar: 2 }\n",
    ));
    load(&vec_prog(
        "  - vsel: { ins: [a, a, a], out: a }\n  - vcmp: { ins: [h, h], out: \"a[0:128]\" }\n",
    ));
    let (path, msg, _, line) = one(&vec_prog("  - vbrc: { ins: [h], out: \"a[0:200]\" }\n"));
    assert_eq!((path.as_str(), line), ("body[4].vbrc.out", 15));
    assert!(msg.contains("not a multiple of input"), "{msg}");
    let (path, msg, ..) = one(&vec_prog(
        "  - vreduce_max: { ins: [h], out: \"a[0:1]\" }\n",
    ));
    assert_eq!(path, "body[4].vreduce_max");
    assert!(msg.contains("needs dims"), "{msg}");
    let (path, msg, ..) = one(&vec_prog(
        "  - vreduce_max: { ins: [a], out: s, dims: [0] }\n",
    ));
    assert_eq!(path, "body[4].vreduce_max.out");
    assert!(msg.contains("reducing [256] along [0] gives []"), "{msg}");
    let (path, msg, ..) = one(&vec_prog("  - vdeinterleave: { ins: [a], out: [h, s] }\n"));
    assert_eq!(path, "body[4].vdeinterleave.out[1]");
    assert!(msg.contains("half of input"), "{msg}");
    let (path, msg, ..) = one(&vec_prog("  - vadds: { ins: [a], out: a }\n"));
    assert_eq!(path, "body[4].vadds");
    assert!(msg.contains("missing required key \"scalar\""), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - vdup: { ins: [s], scalar: 1, out: a }\n"));
    assert!(msg.contains("not both"), "{msg}");
    let (path, msg, ..) = one(&vec_prog("  - vexp: { ins: [a], out: a, scalar: 1 }\n"));
    assert_eq!(path, "body[4].vexp.scalar");
    assert!(msg.contains("unknown key"), "{msg}");
    let (path, msg, ..) = one(&vec_prog(
        "  - vreduce_sum: { ins: [c], out: s, dims: [2] }\n",
    ));
    assert_eq!(path, "body[4].vreduce_sum.dims");
    assert!(msg.contains("rank 2"), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - vmuls: { ins: [a], out: a, scalar: 0.5 }\n"));
    assert!(msg.contains("expected an integer expression"), "{msg}");
}

#[test]
fn slots_and_ranks() {
    load(&vec_prog("  - vadd: { ins: [\"a@0\", \"a@1\"], out: \"a@1\" }\n  - store: { src: \"h@0\", dst: \"x[0:128]\" }\n"));
    let (_, msg, hint, _) = one(&vec_prog("  - vexp: { ins: [\"a@2\"], out: a }\n"));
    assert!(
        msg.contains("slot @2 is out of range: a has 2 slots"),
        "{msg}"
    );
    assert_eq!(hint.as_deref(), Some("slots are @0 to @1"));
    let (_, msg, ..) = one(&vec_prog("  - vexp: { ins: [\"c[0, 0, 0]\"], out: a }\n"));
    assert!(msg.contains("has 3 indices but c has rank 2"), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - vexp: { ins: [\"c[0, 8:4]\"], out: a }\n"));
    assert!(msg.contains("slice start 8 is after its end 4"), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - vexp: { ins: [\"c[0, 4\"], out: a }\n"));
    assert!(
        msg.contains("bad operand") && msg.contains("missing \"]\""),
        "{msg}"
    );
    let (_, msg, ..) = one(&vec_prog("  - vexp: { ins: [\"x@1\"], out: a }\n"));
    assert!(msg.contains("x is a gm tensor"), "{msg}");
}

#[test]
fn auto_sync_rejects_flags_and_manual_accepts_them() {
    let manual = vec_prog(
        "  - set_flag: { src: mte2, dst: v, id: 0 }\n  - wait_flag: { src: mte2, dst: v, id: 0 }\n",
    );
    load(&manual);
    let auto = manual.replace("sync: manual", "sync: auto");
    let d = errors(&auto);
    assert_eq!(d.len(), 2);
    assert!(d[0].message.contains("hand-written set_flag"));
    assert!(d[1].message.contains("hand-written wait_flag"));
    let (_, msg, ..) = one(&vec_prog("  - set_flag: { src: v, dst: v, id: 0 }\n"));
    assert!(msg.contains("to itself"), "{msg}");
    let (_, msg, hint, _) = one(&vec_prog("  - set_flag: { src: m, dst: v, id: 0 }\n"));
    assert!(
        msg.contains("needs pipe m, which core aiv does not have"),
        "{msg}"
    );
    assert!(hint.unwrap().contains("s, v, mte2, mte3"));
    // a loop variable flag id is range-checked
    let (path, msg, ..) = one(&vec_prog("  - for: { var: i, to: 10 }\n    body:\n      - set_flag: { src: v, dst: mte3, id: i }\n      - wait_flag: { src: v, dst: mte3, id: \"i % 8\" }\n"));
    assert_eq!(path, "body[4].for.body[0].set_flag.id");
    assert!(msg.contains("flag id i (can reach 9)"), "{msg}");
}

#[test]
fn names_scopes_and_shadowing() {
    // sibling blocks may reuse a name; an inner block may not shadow an outer one
    load(&vec_prog("  - if: 1\n    then: { buffers: { t: { scope: ub, shape: [4], dtype: f16 } }, body: [] }\n    else: { buffers: { t: { scope: ub, shape: [4], dtype: f16 } }, body: [] }\n"));
    let (path, msg, ..) = one(&vec_prog("  - for: { var: a, to: 2 }\n    body: []\n"));
    assert_eq!(path, "body[4].for.var");
    assert!(
        msg.contains("\"a\" is already declared at buffers.a"),
        "{msg}"
    );
    let (_, msg, ..) = one(&vec_prog("  - for: { var: min, to: 2 }\n    body: []\n"));
    assert!(msg.contains("reserved"), "{msg}");
    let (_, msg, ..) = one(&vec_prog(
        "  - for: { var: i, to: 2 }\n    body: []\n  - scalar: { cycles: i }\n",
    ));
    assert!(msg.contains("unknown name \"i\""), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - scalar: { cycles: a }\n"));
    assert!(
        msg.contains("\"a\" is a buffer, not a param or loop variable"),
        "{msg}"
    );
    let (_, msg, ..) = one(&vec_prog("  - for: { var: i, to: 2 }\n    buffers: { z: { scope: ub, shape: [i], dtype: f16 } }\n    body: []\n"));
    assert!(
        msg.contains("\"i\" is a loop variable, but this value must be constant"),
        "{msg}"
    );
}

#[test]
fn op_item_shapes() {
    let (path, msg, hint, _) = one(&vec_prog("  - store: { src: a, dst: x }\n    dst: x\n"));
    assert_eq!(path, "body[4].dst");
    assert!(
        msg.contains("unknown key \"dst\" beside op \"store\""),
        "{msg}"
    );
    assert!(hint.unwrap().contains("indent it under store:"));
    let (path, msg, ..) = one(&vec_prog("  - if: 1\n"));
    assert_eq!(path, "body[4]");
    assert!(msg.contains("missing required key \"then\""), "{msg}");
    let (path, msg, hint, _) = one(&vec_prog(
        "  - for: { var: i, to: 2 }\n    body: { body: [] }\n",
    ));
    assert_eq!(path, "body[4].for.body");
    assert!(msg.contains("expected a list of ops"), "{msg}");
    assert!(hint.unwrap().contains("beside"));
    let (path, msg, hint, _) = one(&vec_prog("  - fro: { var: i, to: 2 }\n    body: []\n"));
    assert_eq!(path, "body[4].fro");
    assert!(msg.contains("unknown op \"fro\""), "{msg}");
    assert_eq!(hint.as_deref(), Some("did you mean \"for\"?"));
    let (_, msg, ..) = one(&vec_prog(
        "  - for: { var: i, to: 2, step: 0 }\n    body: []\n",
    ));
    assert!(msg.contains("step 0 is not positive"), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - while: { trips: -1 }\n    body: []\n"));
    assert!(msg.contains("trips -1 is negative"), "{msg}");
    let (_, msg, ..) = one(&vec_prog("  - for: { var: i, to: true }\n    body: []\n"));
    assert!(msg.contains("found true"), "{msg}");
    let deep = format!(
        "  - scalar: {{ cycles: \"{}1{}\" }}\n",
        "(".repeat(300),
        ")".repeat(300)
    );
    let (_, msg, ..) = one(&vec_prog(&deep));
    assert!(msg.contains("too complex"), "{msg}");
}

#[test]
fn diagnostics_in_branches_and_while_bodies_are_located() {
    let text = vec_prog("  - while: { trips: 2 }\n    body:\n      - if: 1\n        then:\n          - vexp: { ins: [zz], out: a }\n");
    let d = errors(&text);
    assert_eq!(d[0].path, "body[4].while.body[0].if.then[0].vexp.ins[0]");
    assert_eq!((d[0].line, d[0].column), (Some(19), Some(27)));
}

#[test]
fn cube_rules() {
    let head = "kernel: k\ncore: aic\nsync: manual\ngm: { g: { shape: [16, 16], dtype: f32 } }\nbuffers:\n  l1b: { scope: l1, shape: [16, 16], dtype: f32 }\n  c0: { scope: l0c, shape: [16, 16], dtype: f32 }\n  f: { scope: fp, shape: [16], dtype: f32 }\nbody:\n  - load: { src: g, dst: l1b }\n  - copy: { src: \"l1b[0]\", dst: f }\n  - mmad_l1: { a: l1b, b: l1b, c: c0, m: 16, n: 16, k: 16, init: 1 }\n";
    let ok = format!("{head}  - fixpipe: {{ src: c0, dst: g, quant: f, relu: true }}\n  - fixpipe: {{ src: c0, dst: l1b, quant: true }}\n");
    let p = load(&ok);
    assert_eq!(p.ops[2].pipe, Some(Pipe::M));
    assert_eq!(p.ops[3].pipe, Some(Pipe::Fix));
    let (_, msg, ..) = one(&format!("{head}  - fixpipe: {{ src: l1b, dst: g }}\n"));
    assert!(msg.contains("fixpipe src must be in l0c"), "{msg}");
    let (_, msg, ..) = one(&format!(
        "{head}  - fixpipe: {{ src: c0, dst: g, quant: l1b }}\n"
    ));
    assert!(
        msg.contains("fixpipe quant parameters must be in fp"),
        "{msg}"
    );
    // on the cube core a vector op is wrong twice: its operands and its pipe
    let d = errors(&format!("{head}  - vadd: {{ ins: [c0, c0], out: c0 }}\n"));
    assert_eq!(d.len(), 4);
    assert_eq!(d[0].path, "body[3].vadd.ins[0]");
    assert_eq!(d[3].path, "body[3].vadd");
    assert!(d[3]
        .message
        .contains("needs pipe v, which core aic does not have"));
    let (_, msg, ..) = one(&format!(
        "{head}  - store: {{ src: \"c0[0:8]\", dst: g }}\n"
    ));
    assert!(
        msg.contains("size mismatch in store: \"c0[0:8]\" has 128 elements, \"g\" has 256"),
        "{msg}"
    );
}

/// Every problem of `e` as (YAML path, message), in order.
fn problems(e: &crate::LoadError) -> Vec<(&str, &str)> {
    e.diagnostics
        .iter()
        .map(|d| (d.path.as_str(), d.message.as_str()))
        .collect()
}

#[test]
fn config_problems_are_collected_together() {
    let text = crate::builtin::builtin("ascend910b").unwrap()
        .replace("clock_mhz: 1800", "clock_mhz: 0")
        .replace("event_ids: 8 ", "event_ids: -1")
        .replace("vexp:  {", "vexpp: {")
        .replace(
            "  - { from: ub,  to: ub,",
            "  - { from: ub,  to: ub,  pipe: v,    bytes_per_cycle: 256, startup: 6 }\n  - { from: ub,  to: ub,",
        )
        .replace(
            "  - { from: gm,  to: l1,",
            "  - { from: ub,  to: l1,  pipe: v,    bytes_per_cycle: 256, startup: 6 }\n  - { from: gm,  to: l1,",
        );
    let e = load_config(&text, "c.yaml").unwrap_err();
    let got = problems(&e);
    assert_eq!(
        got,
        [
            (
                "clock_mhz",
                "0 is out of range: this value must be positive"
            ),
            (
                "sync.event_ids",
                "-1 is out of range: this value must be positive"
            ),
            ("paths[3]", "a second path from ub to ub"),
            (
                "paths[4]",
                "no core has both ub and l1 for the path ub -> l1"
            ),
            ("vector.ops.vexpp", "unknown vector op \"vexpp\""),
        ]
    );
    assert!(e.diagnostics.iter().all(|d| d.line.is_some()));
}

#[test]
fn chip_and_cross_core_problems_are_collected_together() {
    let text = crate::builtin::builtin("ascend910b")
        .unwrap()
        .replace("  aiv_per_aic: 2 ", "  aiv_per_aic: 0 ")
        .replace("  flag_ids: 11 ", "  flag_ids: 0 ")
        .replace("  latency: 100 ", "  latency: -1 ");
    let e = load_config(&text, "c.yaml").unwrap_err();
    let got = problems(&e);
    assert_eq!(
        got,
        [
            (
                "chip.aiv_per_aic",
                "a chip with aic and aiv cores has at least one vector core per AI core"
            ),
            (
                "cross_core.flag_ids",
                "0 is out of range: this value must be positive"
            ),
            (
                "cross_core.latency",
                "-1 is out of range: this value must not be negative"
            ),
        ]
    );
    let cfg = config();
    assert_eq!(
        cfg.chip,
        Some(crate::config::ChipConfig {
            aic: 24,
            aiv_per_aic: 2
        })
    );
    assert_eq!(
        cfg.cross_core.map(|c| (c.flag_ids, c.max_pending)),
        Some((11, 16))
    );
}

#[test]
fn core_is_optional_only_with_one_core() {
    let (path, msg, hint, line) = one("kernel: k\nbody: []\n");
    assert_eq!((path.as_str(), line), ("", 1));
    assert!(msg.contains("missing required key \"core\""), "{msg}");
    assert!(hint.unwrap().contains("aiv, aic"));
    let text = crate::builtin::builtin("ascend910b").unwrap();
    let start = text.find("  aic:").unwrap();
    let end = text.find("queue_depth").unwrap();
    let single =
        format!("{}{}", &text[..start], &text[end..]).replace("  - { from: gm,  to: l1,", "#");
    let cut: String = single
        .lines()
        .filter(|l| !(l.contains("from: l1") || l.contains("from: l0c") || l.contains("to: l0")))
        .collect::<Vec<_>>()
        .join("\n");
    let cfg = load_config(&cut, "one.yaml").unwrap_or_else(|e| panic!("{e}"));
    let p = load_program("kernel: k\nbody: []\n", "p.yaml", &cfg, &[]).unwrap();
    assert_eq!(cfg.core(p.core).name, "aiv");
}

#[test]
fn override_without_params_is_located_at_the_document() {
    let d = load_program(
        "kernel: k\ncore: aiv\nbody: []\n",
        "p.yaml",
        &config(),
        &[("n".into(), 3)],
    )
    .unwrap_err()
    .diagnostics;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].path, "params");
    assert!(d[0].line.is_some());
    assert!(d[0].message.contains("no param \"n\""));
}

const LAUNCHED: &str = "kernel: k\ncore: aiv\nlaunch: { blocks: \"2 * n\" }\nparams: { n: 4 }\ngm:\n  x: { shape: [blocks, 64], dtype: f32 }\nbuffers:\n  xb: { scope: ub, shape: [64], dtype: f32 }\nbody:\n  - load: { src: \"x[block]\", dst: xb }\n";

#[test]
fn a_launch_names_its_blocks_and_each_core_s_place() {
    let p = load(LAUNCHED);
    assert_eq!(p.launch.blocks, 8);
    let (block, subblock) = (p.launch.block.unwrap(), p.launch.subblock.unwrap());
    assert_eq!(p.vars[block.index()].name, "block");
    assert_eq!(p.vars[subblock.index()].name, "subblock");
    assert_eq!(p.vars[block.index()].loop_op, None);
    // `blocks` is a constant: the tensor has 8 rows
    assert_eq!(p.tensors[0].shape, [8, 64]);
    // --blocks replaces the written count
    let q = crate::load::load_launched(LAUNCHED, "p.yaml", &config(), &[], Some(48)).unwrap();
    assert_eq!((q.launch.blocks, q.tensors[0].shape[0]), (48, 48));
    // without a launch: one block, and the names are the program's to use
    let r = load("kernel: k\ncore: aiv\nparams: { block: 8 }\nbody: []\n");
    assert_eq!(r.launch, crate::program::Launch::SINGLE);
}

#[test]
fn launch_problems_name_the_place_and_the_limit() {
    // 24 AI cores of 2 vector cores: at most 48 aiv blocks
    let cfg = config();
    let e = crate::load::load_launched(LAUNCHED, "p.yaml", &cfg, &[], Some(49)).unwrap_err();
    let d = &e.diagnostics[0];
    assert_eq!(d.path, "--blocks");
    // the message states the bound checked, 24 × 2 = 48, not just "1 or more"
    assert_eq!(
        d.message,
        "49 blocks is out of range: a launch has 1 to 48 blocks"
    );
    assert_eq!(
        d.hint.as_deref(),
        Some("config ascend910b has 24 AI cores of 2 vector cores: at most 48 blocks of this core type")
    );
    // a cube program runs one block per AI core: 25 is over, and the bound is 24
    let cube = LAUNCHED
        .replace("core: aiv", "core: aic")
        .replace("scope: ub", "scope: l1")
        .replace("\"2 * n\"", "25");
    let e = crate::load::load_launched(&cube, "p.yaml", &cfg, &[], None).unwrap_err();
    let d = &e.diagnostics[0];
    assert_eq!(
        (d.path.as_str(), d.message.as_str()),
        (
            "launch.blocks",
            "25 blocks is out of range: a launch has 1 to 24 blocks"
        )
    );
    assert_eq!(
        d.hint.as_deref(),
        Some("config ascend910b has 24 AI cores: at most 24 blocks of this core type")
    );
    // a chip of 4096 AI cores of 2 vector cores would take 8192 aiv blocks; npusim's own limit,
    // 4096, is the bound checked, and the message says so
    let mut big = config();
    big.chip = Some(crate::config::ChipConfig {
        aic: 4096,
        aiv_per_aic: 2,
    });
    let e = crate::load::load_launched(LAUNCHED, "p.yaml", &big, &[], Some(4097)).unwrap_err();
    let d = &e.diagnostics[0];
    assert_eq!(
        d.message,
        "4097 blocks is out of range: a launch has 1 to 4096 blocks"
    );
    assert_eq!(
        d.hint.as_deref(),
        Some(
            "npusim runs at most 4096 blocks (a launch of more cores than any chip has is a typo)"
        )
    );
    let (path, msg, _, line) = one(&LAUNCHED.replace("\"2 * n\"", "0"));
    assert_eq!((path.as_str(), line), ("launch.blocks", 3));
    assert!(msg.starts_with("0 blocks is out of range"), "{msg}");
    let (path, msg, ..) = one(&LAUNCHED.replace("{ n: 4 }", "{ n: 4, block: 2 }"));
    assert_eq!(path, "params.block");
    assert!(
        msg.contains("block, blocks and subblock name a core of the launch"),
        "{msg}"
    );
    // `block` differs between cores: no buffer shape may read it
    let (path, msg, ..) = one(&LAUNCHED.replace(
        "shape: [64], dtype: f32 }\nbody",
        "shape: [block], dtype: f32 }\nbody",
    ));
    assert_eq!(path, "buffers.xb.shape[0]");
    assert!(msg.contains("\"block\" differs from core to core"), "{msg}");
}

/// A prefetch loop over the 16 tiles of 128 elements of `k`: GUARD and BODY replace the
/// guard and the guarded ops.
const PREFETCH: &str = r#"
kernel: k
core: aiv
params: { n: 16, t: 128 }
gm: { k: { shape: ["n * t"], dtype: f16 } }
buffers:
  kb: { scope: ub, shape: [t], dtype: f16, multi: 2 }
  wide: { scope: ub, shape: ["2 * t"], dtype: f16 }
body:
  - load: { src: "k[0 : t]", dst: "kb@0" }
  - for: { var: j, to: n }
    body:
      - if: "GUARD"
        then:
          - BODY
        else:
          - ELSE
      - vexp: { ins: ["kb@(j % 2)"], out: "kb@(j % 2)" }
"#;

fn prefetch(guard: &str, body: &str, els: &str) -> String {
    PREFETCH
        .replace("GUARD", guard)
        .replace("BODY", body)
        .replace("ELSE", els)
}

/// [`prefetch`] with the `if` inside a loop over i from j to j + 2.
fn prefetch_in_i(guard: &str, body: &str) -> String {
    let inner = r#"- for: { var: i, from: j, to: "j + 2" }
        body:
          - if: "GUARD"
            then:
              - BODY"#;
    let text = PREFETCH.replace(
        "- if: \"GUARD\"\n        then:\n          - BODY\n        else:\n          - ELSE",
        inner,
    );
    assert_ne!(text, PREFETCH);
    text.replace("GUARD", guard).replace("BODY", body)
}

const NEXT: &str = r#"load: { src: "k[(j + 1) * t : (j + 2) * t]", dst: "kb@((j + 1) % 2)" }"#;
const NOTHING: &str = "scalar: { cycles: 1 }";

#[test]
fn a_guard_narrows_the_ranges_its_branch_is_checked_over() {
    // the prefetch idiom: j + 1 < n leaves j <= 14, so (j + 2) * t <= n * t
    load(&prefetch("j + 1 < n", NEXT, NOTHING));
    load(&prefetch("j < n - 1 && j >= 0", NEXT, NOTHING));
    load(&prefetch("!(j >= n - 1)", NEXT, NOTHING));
    load(&prefetch("n - 1 != j", NEXT, NOTHING));
    // the else branch is where the guard fails: j == 0 leaves j >= 1 there
    load(&prefetch(
        "j == 0",
        NOTHING,
        r#"load: { src: "k[(j - 1) * t : j * t]", dst: "kb@(j % 2)" }"#,
    ));
    // a slot narrows too
    load(&prefetch(
        "j < 2",
        r#"load: { src: "k[j * t : (j + 1) * t]", dst: "kb@j" }"#,
        NOTHING,
    ));
    // and so does a loop inside the branch: i runs over [j, j + 2) for j <= 13 only
    load(&prefetch(
        "j < n - 2",
        r#"for: { var: i, from: j, to: "j + 2" }
            body:
              - load: { src: "k[(i + 1) * t : (i + 2) * t]", dst: "kb@0" }"#,
        NOTHING,
    ));
    let d = errors(&prefetch(
        "j < n - 1",
        r#"for: { var: i, from: j, to: "j + 2" }
            body:
              - load: { src: "k[(i + 1) * t : (i + 2) * t]", dst: "kb@0" }"#,
        NOTHING,
    ));
    assert!(d[0].message.contains("(can reach 2176)"), "{d:?}");
}

#[test]
fn a_guard_that_says_exactly_where_its_branch_runs_keeps_the_check_at_load() {
    // j + 1 <= n still lets j reach 15
    let (path, msg, ..) = one(&prefetch("j + 1 <= n", NEXT, NOTHING));
    assert_eq!(path, "body[1].for.body[0].if.then[0].load.src");
    assert!(
        msg.starts_with("slice end (j + 2) * 128 (can reach 2176) is out of bounds"),
        "{msg}"
    );
    // in the else branch of j + 1 < n, j is 15
    let (path, msg, ..) = one(&prefetch("j + 1 < n", NOTHING, NEXT));
    assert_eq!(path, "body[1].for.body[0].if.else[0].load.src");
    assert!(msg.contains("(can reach 2176)"), "{msg}");
    // the else branch of a conjunction: where either part fails, the hull of the two, and
    // not exact (deferred) unless one part cannot fail
    load(&prefetch("j + 1 < n && j >= 1", NOTHING, NEXT));
    let (_, msg, ..) = one(&prefetch("j + 1 < n && j >= 0", NOTHING, NEXT));
    assert!(msg.contains("(can reach 2176)"), "{msg}");
}

#[test]
fn an_access_under_a_guard_the_narrowing_does_not_capture_is_left_to_the_run() {
    // not linear: j may reach 15 for all the loader knows, and the engine checks it
    load(&prefetch("j % 2 == 0", NEXT, NOTHING));
    load(&prefetch("j * j < n * n - 1", NEXT, NOTHING));
    // j != 7 leaves 15 in
    load(&prefetch("j != 7", NEXT, NOTHING));
    // a guard that never holds: its branch never runs
    load(&prefetch("j > n", NEXT, NOTHING));
    // nor does the body of a loop that runs no times: k[t + 14] is never loaded (k[16] would
    // be refused anywhere: it is out of bounds whatever the loop variables)
    load(
        r#"
kernel: k
core: aiv
gm: { k: { shape: [16], dtype: f16 } }
buffers: { a: { scope: ub, shape: [1], dtype: f16 } }
body:
  - for: { var: u, to: 0 }
    body:
      - for: { var: t, to: 4 }
        body:
          - load: { src: "k[t + 14]", dst: a }
"#,
    );
    // nested guards: the inner one is exact, the outer is not
    load(&prefetch(
        "j % 2 == 0",
        r#"if: "j < n"
            then:
              - load: { src: "k[(j + 1) * t : (j + 2) * t]", dst: "kb@0" }"#,
        NOTHING,
    ));
    // i's range [0, 16] was computed over every j: inside j < 2, i never passes 2, but the
    // loader cannot tell, so (i + 15) * t (can reach 3968) is left to the run
    load(&prefetch_in_i(
        "j < 2",
        r#"load: { src: "k[(i + 14) * t : (i + 15) * t]", dst: "kb@0" }"#,
    ));
    // a guard on i itself is exact: i <= 2 reaches 17 tiles
    let d = errors(&prefetch_in_i(
        "i < 3",
        r#"load: { src: "k[(i + 14) * t : (i + 15) * t]", dst: "kb@0" }"#,
    ));
    assert!(d[0].message.contains("(can reach 2176)"), "{d:?}");
    // a slot out of range and a backwards slice, for some values only
    load(&prefetch(
        "j % 2 == 0",
        r#"vexp: { ins: ["kb@(j / 8)"], out: "wide[j * 8 : 128]" }"#,
        NOTHING,
    ));
}

#[test]
fn an_access_out_of_bounds_whatever_the_loop_variables_is_refused_under_any_guard() {
    for (body, want) in [
        (
            r#"load: { src: "k[2048 : 2176]", dst: "kb@0" }"#,
            "slice end 2176 is out of bounds",
        ),
        (
            r#"load: { src: "k[j * t : j * t + 4096]", dst: wide }"#,
            "slice length 4096",
        ),
        (
            r#"vexp: { ins: ["kb@2"], out: "kb@0" }"#,
            "slot @2 is out of range",
        ),
    ] {
        let (_, msg, ..) = one(&prefetch("j % 2 == 0", body, NOTHING));
        assert!(msg.contains(want), "{msg}");
    }
}

#[test]
fn a_narrowed_range_keeps_to_the_values_its_loop_takes() {
    // t takes 0, 4, 8, 12; under t < 10 it is 0 .. 8, so t + 8 stays below 17
    let text = r#"
kernel: k
core: aiv
gm: { x: { shape: [17], dtype: f16 } }
buffers: { a: { scope: ub, shape: [1], dtype: f16 } }
body:
  - for: { var: t, to: 16, step: 4 }
    body:
      - if: "GUARD"
        then:
          - load: { src: "x[t + 8 : t + 9]", dst: a }
"#;
    load(&text.replace("GUARD", "t < 10"));
    // t < 11 lets t reach 8 too; t <= 12 reaches 12, t + 9 = 21
    load(&text.replace("GUARD", "t < 11"));
    let (_, msg, ..) = one(&text.replace("GUARD", "t <= 12"));
    assert!(msg.contains("(can reach 21)"), "{msg}");
    // t == 5 never holds: the branch never runs, and nothing is refused
    load(&text.replace("GUARD", "t == 5"));
    // a step from a bound that is not constant: which values t takes is not known, so the
    // narrowed range may hold values the loop never reaches, and the check is left to the run
    // (which stops at u = 0, t = 12)
    let from_u = text
        .replace(
            "  - for: { var: t, to: 16, step: 4 }\n    body:",
            "  - for: { var: u, to: 2 }\n    body:\n    - for: { var: t, from: u, to: 16, step: 4 }\n      body:",
        )
        .replace("      - if: \"GUARD\"\n        then:\n          - load", "        - if: \"GUARD\"\n          then:\n            - load");
    load(&from_u.replace("GUARD", "t <= 12"));
}
