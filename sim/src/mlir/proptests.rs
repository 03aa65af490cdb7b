//! Property tests of the reader: random well-formed modules printed with random layout (line
//! breaks inside ops, comments, spacing) read back to the same structure; random and mutated
//! text never panics.

use super::ast::*;
use super::parse_file;
use proptest::prelude::*;

/// The generator's model of an op: what the printer writes and the reader must give back.
#[derive(Clone, Debug, PartialEq)]
enum M {
    Alloc {
        name: String,
        ty: MTy,
    },
    Mark {
        target: String,
        buffers: u32,
        ty: MTy,
    },
    Dps {
        op: String,
        ins: Vec<(String, MTy)>,
        outs: Vec<(String, MTy)>,
        dims: Option<Vec<i64>>,
    },
    Const {
        name: String,
        value: i64,
        ty: String,
    },
    For {
        iv: String,
        lb: String,
        ub: String,
        step: String,
        body: Vec<M>,
    },
    If {
        cond: String,
        then: Vec<M>,
        els: Option<Vec<M>>,
    },
    Flag {
        set: bool,
        src: String,
        dst: String,
        event: u32,
        long: bool,
    },
    Barrier {
        pipe: String,
    },
    Subview {
        name: String,
        src: String,
        offsets: Vec<Option<i64>>,
        ty: MTy,
    },
}

#[derive(Clone, Debug, PartialEq)]
struct MTy {
    shape: Vec<u64>,
    elem: String,
    space: Option<String>,
    strides: Option<Vec<i64>>,
}

impl MTy {
    fn print(&self) -> String {
        let mut s = String::from("memref<");
        for d in &self.shape {
            s += &format!("{d}x");
        }
        s += &self.elem;
        if let Some(st) = &self.strides {
            let list: Vec<String> = st.iter().map(|x| x.to_string()).collect();
            s += &format!(", strided<[{}], offset: ?>", list.join(", "));
        }
        if let Some(sp) = &self.space {
            s += &format!(", #hivm.address_space<{sp}>");
        }
        s + ">"
    }

    fn from(t: &Type) -> MTy {
        let Type::MemRef(m) = t else {
            panic!("not a memref: {t:?}")
        };
        MTy {
            shape: m
                .shape
                .iter()
                .map(|d| match d {
                    Dim::Static(n) => *n,
                    Dim::Dynamic => panic!("dynamic"),
                })
                .collect(),
            elem: match &*m.elem {
                Type::Float(f) => f.clone(),
                Type::Int { bits, signed: None } => format!("i{bits}"),
                e => panic!("{e:?}"),
            },
            space: m.space.clone(),
            strides: match &m.layout {
                Layout::Identity => None,
                Layout::Strided {
                    strides,
                    offset: None,
                } => Some(strides.iter().map(|s| s.expect("static")).collect()),
                l => panic!("{l:?}"),
            },
        }
    }
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,6}".prop_map(|s| s)
}

fn mty() -> impl Strategy<Value = MTy> {
    (
        prop::collection::vec(1u64..300, 1..4),
        prop::sample::select(vec!["f16", "f32", "bf16", "i8", "i32"]),
        prop::option::of(prop::sample::select(vec!["gm", "ub", "cbuf", "cc"])),
        any::<bool>(),
    )
        .prop_map(|(shape, elem, space, strided)| {
            let strides = strided.then(|| {
                let mut s: Vec<i64> = Vec::new();
                let mut acc = 1i64;
                for d in shape.iter().rev() {
                    s.push(acc);
                    acc *= *d as i64;
                }
                s.reverse();
                s
            });
            MTy {
                shape,
                elem: elem.to_string(),
                space: space.map(str::to_string),
                strides,
            }
        })
}

fn pipe() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"])
        .prop_map(str::to_string)
}

fn leaf() -> impl Strategy<Value = M> {
    prop_oneof![
        (ident(), mty()).prop_map(|(name, ty)| M::Alloc { name, ty }),
        (ident(), 2u32..5, mty()).prop_map(|(target, buffers, ty)| M::Mark {
            target,
            buffers,
            ty
        }),
        (
            prop::sample::select(vec!["load", "store", "vadd", "vmul", "copy", "vreduce"]),
            prop::collection::vec((ident(), mty()), 0..3),
            prop::collection::vec((ident(), mty()), 1..2),
            prop::option::of(prop::collection::vec(0i64..4, 1..3)),
        )
            .prop_map(|(op, ins, outs, dims)| M::Dps {
                op: op.to_string(),
                ins,
                outs,
                dims
            }),
        (
            ident(),
            any::<i64>(),
            prop::sample::select(vec!["index", "i64", "i32"])
        )
            .prop_map(|(name, value, ty)| M::Const {
                name,
                value,
                ty: ty.to_string()
            }),
        (any::<bool>(), pipe(), pipe(), 0u32..8, any::<bool>()).prop_map(
            |(set, src, dst, event, long)| M::Flag {
                set,
                src,
                dst,
                event,
                long
            }
        ),
        pipe().prop_map(|pipe| M::Barrier { pipe }),
        (
            ident(),
            ident(),
            prop::collection::vec(prop::option::of(-5i64..100), 1..4),
            mty()
        )
            .prop_map(|(name, src, offsets, ty)| M::Subview {
                name,
                src,
                offsets,
                ty
            }),
    ]
}

fn ops() -> impl Strategy<Value = Vec<M>> {
    let op = leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            (
                ident(),
                ident(),
                ident(),
                ident(),
                prop::collection::vec(inner.clone(), 0..5)
            )
                .prop_map(|(iv, lb, ub, step, body)| M::For {
                    iv,
                    lb,
                    ub,
                    step,
                    body
                }),
            (
                ident(),
                prop::collection::vec(inner.clone(), 0..4),
                prop::option::of(prop::collection::vec(inner, 0..4))
            )
                .prop_map(|(cond, then, els)| M::If { cond, then, els }),
        ]
    });
    prop::collection::vec(op, 0..8)
}

/// `out += format!(...)` where the arguments may call `sep()`.
macro_rules! put {
    ($p:expr, $($a:tt)*) => {{
        let s = format!($($a)*);
        $p.out += &s;
    }};
}

/// Prints ops; `sep(i)` is the random whitespace put between the tokens of an op.
struct Printer<'a> {
    out: String,
    seps: &'a [u8],
    n: usize,
}

impl Printer<'_> {
    /// A separator between two tokens of an op: a space, a newline and indent, or a comment.
    fn sep(&mut self) -> &'static str {
        let b = self
            .seps
            .get(self.n % self.seps.len().max(1))
            .copied()
            .unwrap_or(0);
        self.n += 1;
        match b % 6 {
            0..=2 => " ",
            3 => "\n      ",
            4 => "  ",
            _ => " // note ( { [ \"\n   ",
        }
    }

    fn ops(&mut self, ops: &[M], indent: usize) {
        for op in ops {
            self.out += &" ".repeat(indent);
            self.op(op, indent);
            self.out += "\n";
        }
    }

    fn op(&mut self, op: &M, indent: usize) {
        let typed = |list: &[(String, MTy)]| {
            let names: Vec<String> = list.iter().map(|(n, _)| format!("%{n}")).collect();
            let types: Vec<String> = list.iter().map(|(_, t)| t.print()).collect();
            if list.is_empty() {
                String::new()
            } else {
                format!("{} : {}", names.join(", "), types.join(", "))
            }
        };
        match op {
            M::Alloc { name, ty } => put!(
                self,
                "%{name} = memref.alloc() :{}{}",
                self.sep(),
                ty.print()
            ),
            M::Mark {
                target,
                buffers,
                ty,
            } => {
                put!(
                    self,
                    "annotation.mark %{target}{}{{hivm.multi_buffer = {buffers} : i32}} : {}",
                    self.sep(),
                    ty.print()
                )
            }
            M::Dps {
                op,
                ins,
                outs,
                dims,
            } => {
                let (a, b) = (self.sep(), self.sep());
                put!(
                    self,
                    "hivm.hir.{op}{a}ins({}){b}outs({})",
                    typed(ins),
                    typed(outs)
                );
                if let Some(d) = dims {
                    let list: Vec<String> = d.iter().map(|x| x.to_string()).collect();
                    put!(self, "{}reduce_dims = [{}]", self.sep(), list.join(", "));
                }
            }
            M::Const { name, value, ty } => {
                put!(self, "%{name} = arith.constant{}{value} : {ty}", self.sep())
            }
            M::For {
                iv,
                lb,
                ub,
                step,
                body,
            } => {
                put!(
                    self,
                    "scf.for %{iv} = %{lb}{}to %{ub} step{}%{step} {{\n",
                    self.sep(),
                    self.sep()
                );
                self.ops(body, indent + 2);
                put!(self, "{}}}", " ".repeat(indent));
            }
            M::If { cond, then, els } => {
                put!(self, "scf.if %{cond} {{\n");
                self.ops(then, indent + 2);
                put!(self, "{}}}", " ".repeat(indent));
                if let Some(e) = els {
                    put!(self, "{}else {{\n", self.sep());
                    self.ops(e, indent + 2);
                    put!(self, "{}}}", " ".repeat(indent));
                }
            }
            M::Flag {
                set,
                src,
                dst,
                event,
                long,
            } => {
                let name = if *set { "set_flag" } else { "wait_flag" };
                if *long {
                    put!(self, "hivm.hir.{name} [#hivm.pipe<PIPE_{src}>,{}#hivm.pipe<PIPE_{dst}>, #hivm.event<EVENT_ID{event}>]", self.sep());
                } else {
                    put!(
                        self,
                        "hivm.hir.{name}[<PIPE_{src}>, <PIPE_{dst}>, <EVENT_ID{event}>]"
                    );
                }
            }
            M::Barrier { pipe } => put!(self, "hivm.hir.pipe_barrier[<PIPE_{pipe}>]"),
            M::Subview {
                name,
                src,
                offsets,
                ty,
            } => {
                let offs: Vec<String> = offsets
                    .iter()
                    .map(|o| o.map_or(format!("%{src}"), |c| c.to_string()))
                    .collect();
                let ones = vec!["1"; offsets.len()].join(", ");
                put!(
                    self,
                    "%{name} = memref.subview %{src}[{}]{}[{ones}] [{ones}] : {} to {}",
                    offs.join(", "),
                    self.sep(),
                    ty.print(),
                    ty.print()
                );
            }
        }
    }
}

/// Read the model back from the parsed ops.
fn model(ops: &[Op]) -> Vec<M> {
    ops.iter().map(model_op).collect()
}

fn block_ops(r: &Region) -> Vec<M> {
    match r.blocks.as_slice() {
        [] => Vec::new(),
        [b] => model(&b.ops),
        _ => panic!("several blocks"),
    }
}

fn model_op(op: &Op) -> M {
    let res = || op.results[0].name.clone();
    let typed = |l: &[Typed]| {
        l.iter()
            .map(|t| (t.value.name.clone(), MTy::from(&t.ty)))
            .collect::<Vec<_>>()
    };
    match &op.kind {
        OpKind::Alloc { ty, .. } => M::Alloc {
            name: res(),
            ty: MTy::from(ty),
        },
        OpKind::Mark { target } => {
            let Some(Some(Attr::Int { value, .. })) = op.attrs.first().map(|a| a.value.clone())
            else {
                panic!("{:?}", op.attrs)
            };
            M::Mark {
                target: target.name.clone(),
                buffers: value as u32,
                ty: unset(),
            }
        }
        OpKind::Dps { ins, outs, .. } => M::Dps {
            op: op.name.trim_start_matches("hivm.hir.").to_string(),
            ins: typed(ins),
            outs: typed(outs),
            dims: op
                .attrs
                .iter()
                .find(|a| a.name == "reduce_dims")
                .map(|a| match &a.value {
                    Some(Attr::Array(v)) => v
                        .iter()
                        .map(|x| match x {
                            Attr::Int { value, .. } => *value as i64,
                            _ => panic!(),
                        })
                        .collect(),
                    _ => panic!(),
                }),
        },
        OpKind::Constant {
            value: Attr::Int { value, .. },
            ty,
        } => M::Const {
            name: res(),
            value: *value as i64,
            ty: match ty {
                Type::Index => "index".into(),
                Type::Int { bits, .. } => format!("i{bits}"),
                _ => panic!(),
            },
        },
        OpKind::For {
            iv,
            lower,
            upper,
            step,
            body,
            ..
        } => M::For {
            iv: iv.name.clone(),
            lb: lower.name.clone(),
            ub: upper.name.clone(),
            step: step.name.clone(),
            body: block_ops(body),
        },
        OpKind::If {
            cond, then, els, ..
        } => M::If {
            cond: cond.name.clone(),
            then: block_ops(then),
            els: els.as_ref().map(block_ops),
        },
        OpKind::SetFlag {
            src,
            dst,
            event: Event::Id(e),
        }
        | OpKind::WaitFlag {
            src,
            dst,
            event: Event::Id(e),
        } => M::Flag {
            set: matches!(op.kind, OpKind::SetFlag { .. }),
            src: src.clone(),
            dst: dst.clone(),
            event: *e,
            long: false,
        },
        OpKind::PipeBarrier { pipe } => M::Barrier { pipe: pipe.clone() },
        OpKind::View {
            kind: ViewKind::Subview { offsets, .. },
            source,
            ty,
            ..
        } => M::Subview {
            name: res(),
            src: source.name.clone(),
            offsets: offsets
                .iter()
                .map(|o| match o {
                    OpFold::Const(c) => Some(*c),
                    OpFold::Value(_) => None,
                })
                .collect(),
            ty: MTy::from(ty),
        },
        k => panic!("unexpected {k:?}"),
    }
}

/// The mark's type, which the tree does not keep.
fn unset() -> MTy {
    MTy {
        shape: vec![],
        elem: String::new(),
        space: None,
        strides: None,
    }
}

/// What the reader cannot see in the model: the spelling of sync ops and mark's type.
fn normalise(ops: &[M]) -> Vec<M> {
    ops.iter()
        .map(|m| match m {
            M::Flag {
                set,
                src,
                dst,
                event,
                ..
            } => M::Flag {
                set: *set,
                src: src.clone(),
                dst: dst.clone(),
                event: *event,
                long: false,
            },
            M::Mark {
                target, buffers, ..
            } => M::Mark {
                target: target.clone(),
                buffers: *buffers,
                ty: unset(),
            },
            M::For {
                iv,
                lb,
                ub,
                step,
                body,
            } => M::For {
                iv: iv.clone(),
                lb: lb.clone(),
                ub: ub.clone(),
                step: step.clone(),
                body: normalise(body),
            },
            M::If { cond, then, els } => M::If {
                cond: cond.clone(),
                then: normalise(then),
                els: els.as_ref().map(|e| normalise(e)),
            },
            m => m.clone(),
        })
        .collect()
}

/// Read `text` (which must not panic); every op's place, or every error's, is in the text and
/// its line and column agree with its byte offset.
fn check_places(text: &str) {
    match parse_file(text, "g.mlir") {
        Ok(chunks) => {
            for c in &chunks {
                check_pos(text, c.span.start);
                c.walk(&mut |op| {
                    check_pos(text, op.span.start);
                    check_pos(text, op.name_pos);
                    assert!(
                        op.span.start.offset <= op.span.end && op.span.end as usize <= text.len()
                    );
                });
            }
        }
        Err(e) => {
            for d in &e.diagnostics {
                let lines = text.split('\n').count() as u32;
                assert!(d.line.is_some_and(|l| l >= 1 && l <= lines), "{d}");
                assert!(d.column.is_some_and(|c| c >= 1), "{d}");
            }
        }
    }
}

fn check_pos(text: &str, pos: Pos) {
    let o = pos.offset as usize;
    assert!(o <= text.len() && text.is_char_boundary(o), "offset {o}");
    let before = &text[..o];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..o].chars().count() as u32 + 1;
    assert_eq!((pos.line, pos.column), (line, column), "offset {o}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_modules_read_back_to_the_same_structure(
        funcs in prop::collection::vec((ident(), ops()), 1..3),
        seps in prop::collection::vec(any::<u8>(), 1..64),
        split in any::<bool>(),
    ) {
        let mut p = Printer { out: String::new(), seps: &seps, n: 0 };
        let mut want = Vec::new();
        for (i, (name, body)) in funcs.iter().enumerate() {
            if split && i > 0 {
                p.out += "// -----\n";
            }
            p.out += &format!("func.func @{name}_{i}(%arg0: memref<16xf16, #hivm.address_space<gm>>) {{\n");
            p.ops(body, 2);
            p.out += "  return\n}\n";
            want.push(normalise(body));
        }
        let text = p.out.clone();
        let chunks = parse_file(&text, "gen.mlir").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(chunks.len(), if split { funcs.len() } else { 1 });
        let mut got = Vec::new();
        for c in &chunks {
            let OpKind::Module { body, .. } = &c.ops[0].kind else { panic!() };
            for f in &body.blocks[0].ops {
                let OpKind::Func { body, .. } = &f.kind else { panic!() };
                let ops = &body.blocks[0].ops;
                prop_assert_eq!(&ops.last().unwrap().name, "func.return");
                got.push(model(&ops[..ops.len() - 1]));
                // Every op's span starts at its first character in the file.
                f.walk(&mut |op| {
                    let at = &text[op.span.start.offset as usize..];
                    let written = if op.name == "func.return" { "return" } else { op.name.as_str() };
                    assert!(at.starts_with('%') || at.starts_with(written), "{at:.20}");
                });
            }
        }
        prop_assert_eq!(got, want);
        check_places(&text);
    }

    #[test]
    fn garbage_never_panics(s in "(?s).{0,300}") {
        check_places(&s);
    }

    #[test]
    fn mlir_flavoured_garbage_never_panics(
        parts in prop::collection::vec(prop::sample::select(vec![
            "%a", "%b:2", "%c#1", "=", "(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "->", "x", "16", "-3", "?",
            "memref", "tensor", "f16", "index", "#hivm.pipe", "affine_map", "d0", "s0", "floordiv", "\"s", "\"q\"",
            "func.func", "@f", "scf.for", "scf.if", "else", "hivm.hir.load", "ins", "outs", "hivm.hir.set_flag",
            "<PIPE_V>", "\n", "// -----\n", "^bb0", "module", "return", "to", "step", "iter_args", "\u{e9}", "0x",
            "1.5e", "dense", "strided", "offset", "scf.while", "do", "memref.subview", "arith.constant",
        ]), 0..120),
    ) {
        check_places(&parts.join(" "));
        check_places(&parts.concat());
    }

    #[test]
    fn mutated_modules_never_panic(
        body in ops(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, "[ -~]{0,3}"), 1..6),
    ) {
        let mut p = Printer { out: String::new(), seps: &[0, 3], n: 0 };
        p.out += "func.func @f() {\n";
        p.ops(&body, 2);
        p.out += "}\n";
        let mut text = p.out.into_bytes();
        for (at, del, ins) in cuts {
            let i = at.index(text.len() + 1);
            let end = (i + del).min(text.len());
            text.splice(i..end, ins.bytes());
        }
        let s = String::from_utf8_lossy(&text);
        check_places(&s);
    }
}
