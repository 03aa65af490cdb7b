//! Unit tests of the reader: one small hand-written snippet per op family, positions, chunks,
//! and the exact wording and place of syntax errors.

use super::ast::*;
use super::parse_file;

fn parse(src: &str) -> Vec<Chunk> {
    match parse_file(src, "t.mlir") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

/// The ops of the (only) function of a one-chunk file.
fn body(src: &str) -> Vec<Op> {
    let chunks = parse(src);
    assert_eq!(chunks.len(), 1);
    let mut found = None;
    chunks[0].walk(&mut |op| {
        if let OpKind::Func { body, .. } = &op.kind {
            if found.is_none() {
                found = Some(body.blocks[0].ops.clone());
            }
        }
    });
    found.expect("a function")
}

/// Wrap ops in a function.
fn func(ops: &str) -> String {
    format!("func.func @f(%a: memref<16xf16, #hivm.address_space<gm>>) {{\n{ops}\nreturn\n}}\n")
}

fn err(src: &str) -> (u32, u32, String, Option<String>) {
    let e = parse_file(src, "e.mlir").expect_err("a syntax error");
    assert_eq!(e.diagnostics.len(), 1, "{e}");
    let d = &e.diagnostics[0];
    assert_eq!(d.file, "e.mlir");
    (
        d.line.unwrap(),
        d.column.unwrap(),
        d.message.clone(),
        d.hint.clone(),
    )
}

fn v(name: &str) -> String {
    name.to_string()
}

fn names(vals: &[Value]) -> Vec<String> {
    vals.iter().map(|x| x.name.clone()).collect()
}

fn f16() -> Type {
    Type::Float("f16".into())
}

fn mref(shape: &[u64], elem: Type, space: Option<&str>) -> Type {
    Type::MemRef(MemRefType {
        shape: shape.iter().map(|&d| Dim::Static(d)).collect(),
        elem: Box::new(elem),
        layout: Layout::Identity,
        space: space.map(str::to_string),
    })
}

#[test]
fn module_func_and_implicit_module() {
    let src = "module @m attributes {hacc.x = 1 : i32} {\n  func.func private @decl(memref<4xf32>) -> i64\n  func.func @k(%x: i64 {hacc.arg_type = #hacc.arg_type<ffts_base_address>}) -> (i64, index) attributes {hacc.entry} {\n    return %x, %x : i64, i64\n  }\n}\n";
    let c = parse(src);
    let m = &c[0].ops[0];
    assert_eq!(m.name, "builtin.module");
    assert_eq!(m.attrs[0].name, "hacc.x");
    assert_eq!(
        m.attrs[0].value,
        Some(Attr::Int {
            value: 1,
            ty: Some(Box::new(Type::Int {
                bits: 32,
                signed: None
            }))
        })
    );
    let OpKind::Module { name, body } = &m.kind else {
        panic!()
    };
    assert_eq!(name.as_deref(), Some("m"));
    let ops = &body.blocks[0].ops;
    let OpKind::Func {
        name,
        private,
        args,
        results,
        body,
    } = &ops[0].kind
    else {
        panic!()
    };
    assert_eq!((name.as_str(), *private, args.len()), ("decl", true, 1));
    assert_eq!(
        args[0].ty,
        Type::MemRef(MemRefType {
            shape: vec![Dim::Static(4)],
            elem: Box::new(Type::Float("f32".into())),
            layout: Layout::Identity,
            space: None
        })
    );
    assert_eq!(
        results,
        &vec![Type::Int {
            bits: 64,
            signed: None
        }]
    );
    assert!(body.blocks.is_empty());
    let OpKind::Func {
        name,
        private,
        args,
        results,
        body,
    } = &ops[1].kind
    else {
        panic!()
    };
    assert_eq!((name.as_str(), *private), ("k", false));
    assert_eq!(args[0].value.name, "x");
    assert_eq!(args[0].attrs[0].name, "hacc.arg_type");
    assert_eq!(
        args[0].attrs[0].value,
        Some(Attr::Dialect {
            dialect: v("hacc"),
            name: v("arg_type"),
            body: v("ffts_base_address")
        })
    );
    assert_eq!(
        results,
        &vec![
            Type::Int {
                bits: 64,
                signed: None
            },
            Type::Index
        ]
    );
    assert_eq!(ops[1].attrs[0].name, "hacc.entry");
    assert_eq!(ops[1].attrs[0].value, None);
    let ret = &body.blocks[0].ops[0];
    assert_eq!(ret.name, "func.return");
    let OpKind::Return { values } = &ret.kind else {
        panic!()
    };
    assert_eq!(names(values), vec![v("x"), v("x")]);

    // Bare functions get an implicit module spanning them.
    let c = parse("\n  func.func @a() {\n    return\n  }\n");
    assert_eq!(c[0].ops.len(), 1);
    let m = &c[0].ops[0];
    assert_eq!(m.name, "builtin.module");
    assert_eq!((m.span.start.line, m.span.start.column), (2, 3));
    let OpKind::Module { name: None, body } = &m.kind else {
        panic!()
    };
    assert_eq!(body.blocks[0].ops[0].name, "func.func");
}

#[test]
fn allocation_ops() {
    let ops = body(&func(
        "%ub = memref.alloc() {alignment = 64 : i64} : memref<16x16xf16, #hivm.address_space<ub>>\n\
         %d = memref.alloc(%n) : memref<?x512xf32>\n\
         %p = hivm.hir.pointer_cast(%c0_i64, %c32_i64) [] : memref<16xf16, #hivm.address_space<ub>>\n\
         %q = hivm.hir.pointer_cast(%c0_i64) [%n] : memref<?xf16, #hivm.address_space<ub>>\n\
         %w = memref_ext.alloc_workspace() from %arg2 offset = [%c1048576] : from memref<?xi8> to memref<4x128xf16>\n\
         annotation.mark %ub {hivm.multi_buffer = 2 : i32} : memref<16x16xf16, #hivm.address_space<ub>>",
    ));
    assert_eq!(
        ops[0].kind,
        OpKind::Alloc {
            dynamic_sizes: vec![],
            ty: mref(&[16, 16], f16(), Some("ub"))
        }
    );
    assert_eq!(ops[0].attrs[0].name, "alignment");
    let OpKind::Alloc { dynamic_sizes, ty } = &ops[1].kind else {
        panic!()
    };
    assert_eq!(names(dynamic_sizes), vec![v("n")]);
    let Type::MemRef(m) = ty else { panic!() };
    assert_eq!(m.shape, vec![Dim::Dynamic, Dim::Static(512)]);
    let OpKind::PointerCast {
        addrs,
        dynamic_sizes,
        ty,
    } = &ops[2].kind
    else {
        panic!()
    };
    assert_eq!(names(addrs), vec![v("c0_i64"), v("c32_i64")]);
    assert!(dynamic_sizes.is_empty());
    assert_eq!(ty, &mref(&[16], f16(), Some("ub")));
    let OpKind::PointerCast { dynamic_sizes, .. } = &ops[3].kind else {
        panic!()
    };
    assert_eq!(names(dynamic_sizes), vec![v("n")]);
    let OpKind::AllocWorkspace { text, ty } = &ops[4].kind else {
        panic!()
    };
    assert_eq!(text, "() from %arg2 offset = [%c1048576]");
    assert_eq!(ty, &mref(&[4, 128], f16(), None));
    let OpKind::Mark { target } = &ops[5].kind else {
        panic!()
    };
    assert_eq!(target.name, "ub");
    assert_eq!(ops[5].attrs[0].name, "hivm.multi_buffer");
    assert_eq!(ops[5].results.len(), 0);
}

#[test]
fn dps_ops_span_lines_and_keep_their_keywords() {
    let src = func(
        "hivm.hir.load ins(%a : memref<16xf16, #hivm.address_space<gm>>)\n\
         \x20             outs(%u : memref<16xf16,#hivm.address_space<ub>>)\n\
         hivm.hir.vreduce <max> ins(%u : memref<16xf16, #hivm.address_space<ub>>) outs(%r : memref<1xf16, #hivm.address_space<ub>>) temp_buffer(%t : memref<8xf16, #hivm.address_space<ub>>) reduce_dims = [0] round_mode = <rint> init_out_buffer = false\n\
         hivm.hir.fixpipe {enable_nz2nd} ins(%c : memref<16xf32, #hivm.address_space<cc>>) outs(%a : memref<16xf16, #hivm.address_space<gm>>)\n\
         %t2 = hivm.hir.vadd ins(%x, %y : tensor<4xf32>, tensor<4xf32>) outs(%z : tensor<4xf32>) -> tensor<4xf32>\n\
         hivm.hir.custom_macro {symbol = \"k\"} \"user.m\" ins() outs(%u : memref<16xf16, #hivm.address_space<ub>>)\n\
         hivm.hir.load ins(%a : memref<16xf16>) outs(%u : memref<16xf16>) pad_mode = <PadValue> pad_value = %cst : f16",
    );
    let ops = body(&src);
    let OpKind::Dps {
        modifier,
        ins,
        outs,
        groups,
        results,
    } = &ops[0].kind
    else {
        panic!()
    };
    assert_eq!(modifier, &None);
    assert_eq!(
        ins,
        &vec![Typed {
            value: Value {
                name: v("a"),
                index: 0,
                pos: ins[0].value.pos
            },
            ty: mref(&[16], f16(), Some("gm"))
        }]
    );
    assert_eq!(outs[0].value.name, "u");
    assert_eq!((outs[0].value.pos.line, outs[0].value.pos.column), (3, 20));
    assert_eq!(outs[0].ty, mref(&[16], f16(), Some("ub")));
    assert!(groups.is_empty() && results.is_empty());
    assert_eq!(ops[0].span.start.line, 2);
    assert_eq!(&src[ops[0].span.start.offset as usize..ops[0].span.end as usize],
        "hivm.hir.load ins(%a : memref<16xf16, #hivm.address_space<gm>>)\n              outs(%u : memref<16xf16,#hivm.address_space<ub>>)");

    let OpKind::Dps {
        modifier, groups, ..
    } = &ops[1].kind
    else {
        panic!()
    };
    assert_eq!(modifier.as_deref(), Some("max"));
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].0, "temp_buffer");
    assert_eq!(groups[0].1[0].value.name, "t");
    let keys: Vec<_> = ops[1]
        .attrs
        .iter()
        .map(|a| (a.name.as_str(), a.value.clone()))
        .collect();
    assert_eq!(
        keys,
        vec![
            (
                "reduce_dims",
                Some(Attr::Array(vec![Attr::Int { value: 0, ty: None }]))
            ),
            ("round_mode", Some(Attr::Enum(v("rint")))),
            (
                "init_out_buffer",
                Some(Attr::Int {
                    value: 0,
                    ty: Some(Box::new(Type::Int {
                        bits: 1,
                        signed: None
                    }))
                })
            ),
        ]
    );

    assert_eq!(ops[2].attrs[0].name, "enable_nz2nd");
    assert!(matches!(ops[2].kind, OpKind::Dps { .. }));
    let OpKind::Dps { ins, results, .. } = &ops[3].kind else {
        panic!()
    };
    assert_eq!(
        names(&ins.iter().map(|t| t.value.clone()).collect::<Vec<_>>()),
        vec![v("x"), v("y")]
    );
    let t4 = Type::Tensor {
        shape: vec![Dim::Static(4)],
        elem: Box::new(Type::Float("f32".into())),
    };
    assert_eq!(results, &vec![t4]);
    assert_eq!(ops[3].results[0].name, "t2");
    let OpKind::Dps { modifier, ins, .. } = &ops[4].kind else {
        panic!()
    };
    assert_eq!(modifier.as_deref(), Some("user.m"));
    assert!(ins.is_empty());
    assert_eq!(ops[4].attrs[0].value, Some(Attr::Str(v("k"))));
    let OpKind::Dps { groups, .. } = &ops[5].kind else {
        panic!()
    };
    assert_eq!(groups[0].0, "pad_value");
    assert_eq!(groups[0].1[0].ty, f16());
    assert_eq!(ops[5].attrs[0].name, "pad_mode");
    assert_eq!(ops[6].name, "func.return");
}

#[test]
fn scf_loops_and_branches() {
    let ops = body(&func(
        "%r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %a, %y = %c0) -> (memref<16xf16, #hivm.address_space<gm>>, index) {\n\
           scf.yield %x, %y : memref<16xf16, #hivm.address_space<gm>>, index\n\
         }\n\
         scf.for %j = %lo to %hi step %s : i32 {\n\
         }\n\
         %m = scf.if %cond -> (index) {\n  scf.yield %c0 : index\n} else {\n  scf.yield %r#1 : index\n}\n\
         scf.if %cond {\n  hivm.hir.pipe_barrier[<PIPE_ALL>]\n}\n\
         %w = scf.while (%k = %c0) : (i32) -> i32 {\n  %b = arith.cmpi eq, %k, %c9 : i32\n  scf.condition(%b) %k : i32\n} do {\n^bb0(%k2: i32):\n  scf.yield %k2 : i32\n}",
    ));
    assert_eq!(
        ops[0].results,
        vec![Result_ {
            name: v("r"),
            count: 2,
            pos: ops[0].results[0].pos
        }]
    );
    let OpKind::For {
        iv,
        lower,
        upper,
        step,
        iter_args,
        result_types,
        body,
    } = &ops[0].kind
    else {
        panic!()
    };
    assert_eq!(
        (
            iv.name.as_str(),
            lower.name.as_str(),
            upper.name.as_str(),
            step.name.as_str()
        ),
        ("i", "c0", "c4", "c1")
    );
    assert_eq!(
        iter_args
            .iter()
            .map(|(a, b)| (a.name.clone(), b.name.clone()))
            .collect::<Vec<_>>(),
        vec![(v("x"), v("a")), (v("y"), v("c0"))]
    );
    assert_eq!(result_types[1], Type::Index);
    let OpKind::Yield { values } = &body.blocks[0].ops[0].kind else {
        panic!()
    };
    assert_eq!(names(values), vec![v("x"), v("y")]);
    let OpKind::For { body, .. } = &ops[1].kind else {
        panic!()
    };
    assert!(body.blocks.is_empty());
    let OpKind::If {
        cond,
        result_types,
        then,
        els,
    } = &ops[2].kind
    else {
        panic!()
    };
    assert_eq!(cond.name, "cond");
    assert_eq!(result_types, &vec![Type::Index]);
    assert_eq!(then.blocks[0].ops.len(), 1);
    let els = els.as_ref().unwrap();
    let OpKind::Yield { values } = &els.blocks[0].ops[0].kind else {
        panic!()
    };
    assert_eq!((values[0].name.as_str(), values[0].index), ("r", 1));
    let OpKind::If {
        els: None, then, ..
    } = &ops[3].kind
    else {
        panic!()
    };
    assert_eq!(
        then.blocks[0].ops[0].kind,
        OpKind::PipeBarrier { pipe: v("ALL") }
    );
    let OpKind::While {
        inits,
        before,
        after,
    } = &ops[4].kind
    else {
        panic!()
    };
    assert_eq!(
        (inits[0].0.name.as_str(), inits[0].1.name.as_str()),
        ("k", "c0")
    );
    let OpKind::Scalar {
        operands,
        predicate,
        ..
    } = &before.blocks[0].ops[0].kind
    else {
        panic!()
    };
    assert_eq!(predicate.as_deref(), Some("eq"));
    assert_eq!(names(operands), vec![v("k"), v("c9")]);
    let OpKind::Condition { cond, values } = &before.blocks[0].ops[1].kind else {
        panic!()
    };
    assert_eq!((cond.name.as_str(), names(values)), ("b", vec![v("k")]));
    assert_eq!(after.blocks[0].label.as_deref(), Some("bb0"));
    assert_eq!(after.blocks[0].args[0].0.name, "k2");
    assert_eq!(
        after.blocks[0].args[0].1,
        Type::Int {
            bits: 32,
            signed: None
        }
    );
}

#[test]
fn sync_ops_in_both_spellings() {
    let ops = body(&func(
        "hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID3>]\n\
         hivm.hir.wait_flag [#hivm.pipe<PIPE_MTE1>, #hivm.pipe<PIPE_M>, #hivm.event<EVENT_ID0>]\n\
         hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, %ev]\n\
         hivm.hir.pipe_barrier[<PIPE_MTE3>]\n\
         hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_S>] flag = 0 ffts_base_addr = %base sync_instr_mode = <INTER_BLOCK_SYNCHRONIZATION>\n\
         hivm.hir.sync_block_wait[#hivm.tcore_type<VECTOR>, #hivm.pipe<PIPE_FIX>, #hivm.pipe<PIPE_S>]\n  flag = %fl\n\
         hivm.hir.sync_block[<ALL_CUBE>, 0 : i64] tcube_pipe = <PIPE_FIX>",
    ));
    assert_eq!(
        ops[0].kind,
        OpKind::SetFlag {
            src: v("MTE2"),
            dst: v("V"),
            event: Event::Id(3)
        }
    );
    assert_eq!(
        ops[1].kind,
        OpKind::WaitFlag {
            src: v("MTE1"),
            dst: v("M"),
            event: Event::Id(0)
        }
    );
    let OpKind::SetFlag {
        event: Event::Value(ev),
        ..
    } = &ops[2].kind
    else {
        panic!()
    };
    assert_eq!(ev.name, "ev");
    assert_eq!(ops[3].kind, OpKind::PipeBarrier { pipe: v("MTE3") });
    assert_eq!(
        ops[4].kind,
        OpKind::SyncBlockSet {
            core: v("CUBE"),
            pipes: vec![v("FIX"), v("S")],
            flag: Event::Id(0)
        }
    );
    assert_eq!(
        ops[4]
            .attrs
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>(),
        vec!["ffts_base_addr", "sync_instr_mode"]
    );
    let OpKind::SyncBlockWait {
        core,
        pipes,
        flag: Event::Value(fl),
    } = &ops[5].kind
    else {
        panic!()
    };
    assert_eq!(
        (core.as_str(), pipes.len(), fl.name.as_str()),
        ("VECTOR", 2, "fl")
    );
    let OpKind::SyncBlock { text } = &ops[6].kind else {
        panic!()
    };
    assert_eq!(text, "[<ALL_CUBE>, 0 : i64] tcube_pipe = <PIPE_FIX>");
    assert_eq!(ops[6].attrs[0].value, Some(Attr::Enum(v("PIPE_FIX"))));
}

#[test]
fn scalar_ops_constants_and_affine_maps() {
    let src = "#map = affine_map<()[s0] -> ((s0 floordiv 4) mod 2)>\n".to_string()
        + &func(
            "%c8 = arith.constant 8 : index\n\
             %cm = arith.constant -1 : i64\n\
             %f = arith.constant 1.5e-3 : f32\n\
             %t = arith.constant true\n\
             %d = arith.constant dense<0.0> : tensor<4xf32>\n\
             %s = arith.select %b, %x, %y : i64\n\
             %ic = arith.index_cast %i : index to i64\n\
             %e = math.exp %f : f32\n\
             %ap = affine.apply #map()[%i]\n\
             %mn = affine.min affine_map<(d0)[s0, s1] -> (s0, d0 * 32 + s1 - 32)>(%i)[%a0, %a1]",
        );
    let chunks = parse(&src);
    assert_eq!(chunks[0].aliases.len(), 1);
    assert_eq!(chunks[0].aliases[0].name, "map");
    use AffineExpr::*;
    let b = Box::new;
    assert_eq!(
        chunks[0].aliases[0].value,
        Attr::AffineMap(AffineMap {
            dims: 0,
            symbols: 1,
            results: vec![Mod(b(FloorDiv(b(Sym(0)), b(Const(4)))), b(Const(2)))]
        })
    );
    let ops = body(&src);
    let idx = Some(Box::new(Type::Index));
    assert_eq!(
        ops[0].kind,
        OpKind::Constant {
            value: Attr::Int { value: 8, ty: idx },
            ty: Type::Index
        }
    );
    let i64t = Type::Int {
        bits: 64,
        signed: None,
    };
    assert_eq!(
        ops[1].kind,
        OpKind::Constant {
            value: Attr::Int {
                value: -1,
                ty: Some(Box::new(i64t.clone()))
            },
            ty: i64t.clone()
        }
    );
    let OpKind::Constant {
        value: Attr::Float { text, .. },
        ..
    } = &ops[2].kind
    else {
        panic!()
    };
    assert_eq!(text, "1.5e-3");
    let OpKind::Constant {
        value: Attr::Int { value: 1, .. },
        ty,
    } = &ops[3].kind
    else {
        panic!()
    };
    assert_eq!(
        ty,
        &Type::Int {
            bits: 1,
            signed: None
        }
    );
    let OpKind::Constant {
        value: Attr::Other(d),
        ty: Type::Tensor { .. },
    } = &ops[4].kind
    else {
        panic!()
    };
    assert_eq!(d, "dense<0.0>");
    let OpKind::Scalar {
        operands,
        predicate: None,
        map: None,
        types,
        ..
    } = &ops[5].kind
    else {
        panic!()
    };
    assert_eq!(
        (names(operands), types.clone()),
        (vec![v("b"), v("x"), v("y")], vec![i64t.clone()])
    );
    let OpKind::Scalar { types, .. } = &ops[6].kind else {
        panic!()
    };
    assert_eq!(types, &vec![Type::Index, i64t]);
    assert!(matches!(ops[7].kind, OpKind::Scalar { .. }));
    let OpKind::Scalar {
        operands,
        map,
        dims,
        ..
    } = &ops[8].kind
    else {
        panic!()
    };
    assert_eq!(
        (names(operands), map.clone(), *dims),
        (vec![v("i")], Some(Attr::AliasRef(v("map"))), 0)
    );
    let OpKind::Scalar {
        operands,
        map: Some(Attr::AffineMap(m)),
        dims,
        ..
    } = &ops[9].kind
    else {
        panic!()
    };
    assert_eq!((operands.len(), *dims), (3, 1));
    // d0 * 32 + s1 - 32 is ((d0 * 32) + s1) + -32.
    assert_eq!(
        m.results,
        vec![
            Sym(0),
            Add(
                b(Add(b(Mul(b(Dim(0)), b(Const(32)))), b(Sym(1)))),
                b(Const(-32))
            )
        ]
    );
}

#[test]
fn affine_expressions_follow_precedence_and_signs() {
    let src = "#m = affine_map<(d0, d1)[s0] -> (-d0 + (d1 - s0) * 2, d0 ceildiv -3, -(4))>\n";
    let c = parse(src);
    use AffineExpr::*;
    let b = Box::new;
    let Attr::AffineMap(m) = &c[0].aliases[0].value else {
        panic!()
    };
    assert_eq!((m.dims, m.symbols), (2, 1));
    assert_eq!(
        m.results,
        vec![
            Add(
                b(Mul(b(Dim(0)), b(Const(-1)))),
                b(Mul(
                    b(Add(b(Dim(1)), b(Mul(b(Sym(0)), b(Const(-1)))))),
                    b(Const(2))
                ))
            ),
            CeilDiv(b(Dim(0)), b(Const(-3))),
            Const(-4),
        ]
    );
}

#[test]
fn memory_ops_and_views() {
    let ops = body(&func(
        "%l = memref.load %m[%i, %j] : memref<4x4xf32>\n\
         memref.store %l, %m[%i, %j] : memref<4x4xf32>\n\
         %sv = memref.subview %a[%i, 0] [2, %n] [1, 1] : memref<16x16xf16> to memref<2x?xf16, strided<[16, 1], offset: ?>>\n\
         %vw = memref.view %raw[%c0][%n] : memref<62xi8, #hivm.address_space<ub>> to memref<?xf16, #hivm.address_space<ub>>\n\
         %rc = memref.reinterpret_cast %a to offset: [%o], sizes: [16, 64], strides: [64, 1] : memref<?xf16> to memref<16x64xf16, strided<[64, 1], offset: ?>>\n\
         %cs = memref.collapse_shape %a [[0, 1], [2]] : memref<2x3x4xf16> into memref<6x4xf16>\n\
         %es = memref.expand_shape %a [[0, 1]] output_shape [%n, 1] : memref<?xf16> into memref<?x1xf16>\n\
         %ca = memref.cast %a : memref<16xf16> to memref<?xf16>\n\
         %bc = hivm.hir.bitcast %a : memref<16xf16> -> memref<16xi16>\n\
         %rs = memref.reshape %a(%shape) : (memref<16xf16>, memref<2xindex>) -> memref<4x4xf16>",
    ));
    let OpKind::MemLoad { memref, indices } = &ops[0].kind else {
        panic!()
    };
    assert_eq!(
        (memref.name.as_str(), names(indices)),
        ("m", vec![v("i"), v("j")])
    );
    let OpKind::MemStore {
        value,
        memref,
        indices,
    } = &ops[1].kind
    else {
        panic!()
    };
    assert_eq!(
        (value.name.as_str(), memref.name.as_str(), indices.len()),
        ("l", "m", 2)
    );
    let OpKind::View {
        kind:
            ViewKind::Subview {
                offsets,
                sizes,
                strides,
            },
        source,
        source_ty,
        ty,
    } = &ops[2].kind
    else {
        panic!()
    };
    assert_eq!(source.name, "a");
    assert!(matches!(&offsets[..], [OpFold::Value(x), OpFold::Const(0)] if x.name == "i"));
    assert!(matches!(&sizes[..], [OpFold::Const(2), OpFold::Value(_)]));
    assert_eq!(strides, &vec![OpFold::Const(1), OpFold::Const(1)]);
    assert_eq!(source_ty, &Some(mref(&[16, 16], f16(), None)));
    let Type::MemRef(m) = ty else { panic!() };
    assert_eq!(m.shape, vec![Dim::Static(2), Dim::Dynamic]);
    assert_eq!(
        m.layout,
        Layout::Strided {
            strides: vec![Some(16), Some(1)],
            offset: None
        }
    );
    let OpKind::View {
        kind: ViewKind::View { byte_shift, sizes },
        ..
    } = &ops[3].kind
    else {
        panic!()
    };
    assert_eq!(
        (byte_shift.name.as_str(), names(sizes)),
        ("c0", vec![v("n")])
    );
    let OpKind::View {
        kind:
            ViewKind::ReinterpretCast {
                offset,
                sizes,
                strides,
            },
        ..
    } = &ops[4].kind
    else {
        panic!()
    };
    assert_eq!(
        (offset.len(), sizes.clone(), strides.clone()),
        (
            1,
            vec![OpFold::Const(16), OpFold::Const(64)],
            vec![OpFold::Const(64), OpFold::Const(1)]
        )
    );
    let OpKind::View {
        kind: ViewKind::CollapseShape { reassociation },
        ty,
        ..
    } = &ops[5].kind
    else {
        panic!()
    };
    assert_eq!(
        (reassociation.clone(), ty.clone()),
        (vec![vec![0, 1], vec![2]], mref(&[6, 4], f16(), None))
    );
    let OpKind::View {
        kind: ViewKind::ExpandShape {
            reassociation,
            output_shape,
        },
        ..
    } = &ops[6].kind
    else {
        panic!()
    };
    assert_eq!((reassociation.len(), output_shape.len()), (1, 2));
    for (i, want) in [
        (7, mref(&[0], f16(), None)),
        (
            8,
            mref(
                &[16],
                Type::Int {
                    bits: 16,
                    signed: None,
                },
                None,
            ),
        ),
        (9, mref(&[4, 4], f16(), None)),
    ] {
        let OpKind::View {
            kind: ViewKind::Cast,
            source,
            ty,
            source_ty,
        } = &ops[i].kind
        else {
            panic!("{i}")
        };
        assert_eq!(source.name, "a");
        assert!(source_ty.is_some());
        if i == 7 {
            let Type::MemRef(m) = ty else { panic!() };
            assert_eq!(m.shape, vec![Dim::Dynamic]);
            let _ = want;
        } else {
            assert_eq!(ty, &want);
        }
    }
}

#[test]
fn types_parse_fully() {
    let ops = body(&func(
        "%x = \"test.types\"() : () -> (bf16, f8E4M3FN, si32, ui8, i1, vector<64xf32>, tensor<?x4xi8>, memref<4x?xf32, strided<[?, 1], offset: 8>, #hivm.address_space<cbuf>>, memref<8xf32, affine_map<(d0) -> (d0 * 2)>>, !hivm.sync<x>, (i32) -> index)",
    ));
    let OpKind::Opaque { types, .. } = &ops[0].kind else {
        panic!()
    };
    let Type::Function { inputs, results } = &types[0] else {
        panic!()
    };
    assert!(inputs.is_empty());
    assert_eq!(results[0], Type::Float(v("bf16")));
    assert_eq!(results[1], Type::Float(v("f8E4M3FN")));
    assert_eq!(
        results[2],
        Type::Int {
            bits: 32,
            signed: Some(true)
        }
    );
    assert_eq!(
        results[3],
        Type::Int {
            bits: 8,
            signed: Some(false)
        }
    );
    assert_eq!(
        results[4],
        Type::Int {
            bits: 1,
            signed: None
        }
    );
    assert_eq!(
        results[5],
        Type::Vector {
            shape: vec![Dim::Static(64)],
            elem: Box::new(Type::Float(v("f32")))
        }
    );
    assert_eq!(
        results[6],
        Type::Tensor {
            shape: vec![Dim::Dynamic, Dim::Static(4)],
            elem: Box::new(Type::Int {
                bits: 8,
                signed: None
            })
        }
    );
    assert_eq!(
        results[7],
        Type::MemRef(MemRefType {
            shape: vec![Dim::Static(4), Dim::Dynamic],
            elem: Box::new(Type::Float(v("f32"))),
            layout: Layout::Strided {
                strides: vec![None, Some(1)],
                offset: Some(8)
            },
            space: Some(v("cbuf")),
        })
    );
    let Type::MemRef(m) = &results[8] else {
        panic!()
    };
    assert!(matches!(&m.layout, Layout::Map(a) if matches!(**a, Attr::AffineMap(_))));
    assert_eq!(results[9], Type::Other(v("!hivm.sync<x>")));
    assert_eq!(
        results[10],
        Type::Function {
            inputs: vec![Type::Int {
                bits: 32,
                signed: None
            }],
            results: vec![Type::Index]
        }
    );
}

#[test]
fn scopes_generic_ops_calls_and_opaque_ops() {
    let ops = body(&func(
        "%s = scope.scope : () -> memref<4xf16> {\n  %z = memref.alloc() : memref<4xf16>\n  scope.return %z : memref<4xf16>\n} {no_inline}\n\
         \"some_use\"(%s, %a) : (memref<4xf16>, memref<16xf16, #hivm.address_space<gm>>) -> ()\n\
         %g = \"user.wrap\"() ({\n  hivm.hir.pipe_barrier[<PIPE_V>]\n}) {k = 1} : () -> i32\n\
         call @helper(%a) : (memref<16xf16, #hivm.address_space<gm>>) -> ()\n\
         %e = tensor.empty(%n) : tensor<?xf32>\n\
         %ex = tensor.extract_slice %e[0] [%n] [1] : tensor<?xf32> to tensor<?xf32>\n\
         %red = linalg.reduce ins(%e : tensor<?xf32>) outs(%o : tensor<f32>) dimensions = [0]\n  (%in: f32, %init: f32) {\n    %sum = arith.addf %in, %init : f32\n    linalg.yield %sum : f32\n  }\n\
         %bi = hivm.hir.get_block_idx -> i64
         cf.br ^bb1(%n : index)",
    ));
    let OpKind::Scope { body } = &ops[0].kind else {
        panic!()
    };
    assert_eq!(
        body.blocks[0].ops[1].kind,
        OpKind::Yield {
            values: vec![Value {
                name: v("z"),
                index: 0,
                pos: body.blocks[0].ops[1].span.start.offset_pos(13)
            }]
        }
    );
    assert_eq!(ops[0].attrs[0].name, "no_inline");
    assert_eq!(ops[1].name, "some_use");
    let OpKind::Opaque { operands, types } = &ops[1].kind else {
        panic!()
    };
    assert_eq!(names(operands), vec![v("s"), v("a")]);
    assert!(matches!(&types[..], [Type::Function { results, .. }] if results.is_empty()));
    let OpKind::Scope { body } = &ops[2].kind else {
        panic!()
    };
    assert_eq!(
        body.blocks[0].ops[0].kind,
        OpKind::PipeBarrier { pipe: v("V") }
    );
    assert_eq!(ops[2].attrs[0].name, "k");
    let OpKind::Call { callee, args } = &ops[3].kind else {
        panic!()
    };
    assert_eq!((callee.as_str(), names(args)), ("helper", vec![v("a")]));
    let OpKind::Opaque { operands, types } = &ops[4].kind else {
        panic!()
    };
    assert_eq!(names(operands), vec![v("n")]);
    assert_eq!(types.len(), 1);
    let OpKind::Opaque { operands, types } = &ops[5].kind else {
        panic!()
    };
    assert_eq!(names(operands), vec![v("e"), v("n")]);
    assert_eq!(types.len(), 2);
    // One region holding ops, otherwise unknown: its region runs in place.
    let OpKind::Scope { body } = &ops[6].kind else {
        panic!()
    };
    assert_eq!(body.blocks[0].ops[1].name, "linalg.yield");
    assert_eq!(ops[6].attrs[0].name, "dimensions");
    assert_eq!(
        ops[7].kind,
        OpKind::Opaque {
            operands: vec![],
            types: vec![Type::Int {
                bits: 64,
                signed: None
            }]
        }
    );
    assert_eq!(ops[8].name, "cf.br");
    let OpKind::Opaque { operands, .. } = &ops[8].kind else {
        panic!()
    };
    assert_eq!(names(operands), vec![v("n")]);
    assert_eq!(ops[9].name, "func.return");
}

trait OffsetPos {
    fn offset_pos(self, cols: u32) -> Pos;
}
impl OffsetPos for Pos {
    /// The position `cols` characters further on the same line.
    fn offset_pos(self, cols: u32) -> Pos {
        Pos {
            line: self.line,
            column: self.column + cols,
            offset: self.offset + cols,
        }
    }
}

#[test]
fn op_positions_are_in_the_whole_file() {
    let src = "func.func @f() {\n  %c0 = arith.constant 0 : index\n    hivm.hir.pipe_barrier[<PIPE_ALL>]\n  return\n}\n";
    let ops = body(src);
    let p = &ops[1];
    assert_eq!(
        (p.name_pos.line, p.name_pos.column, p.name_pos.offset),
        (3, 5, 54)
    );
    assert_eq!(p.span.start, p.name_pos);
    assert_eq!(
        &src[p.span.start.offset as usize..p.span.end as usize],
        "hivm.hir.pipe_barrier[<PIPE_ALL>]"
    );
    assert_eq!(
        (ops[0].results[0].pos.line, ops[0].results[0].pos.column),
        (2, 3)
    );
    assert_eq!((ops[0].name_pos.line, ops[0].name_pos.column), (2, 9));
}

#[test]
fn split_input_chunks_keep_file_positions() {
    let src =
        "func.func @a() {\n  return\n}\n// -----\n  // -----  \nfunc.func @b() {\n  return\n}\n";
    let c = parse(src);
    assert_eq!(c.len(), 3);
    assert_eq!(
        (c[0].span.start.line, c[0].span.start.offset, c[0].span.end),
        (1, 0, 28)
    );
    assert_eq!(
        (c[1].span.start.line, c[1].span.start.offset, c[1].span.end),
        (5, 37, 37)
    );
    assert!(c[1].ops.is_empty());
    assert_eq!(c[2].span.start.line, 6);
    let OpKind::Module { body, .. } = &c[2].ops[0].kind else {
        panic!()
    };
    let f = &body.blocks[0].ops[0];
    assert_eq!(
        (f.name_pos.line, f.name_pos.column, f.name_pos.offset),
        (6, 1, 50)
    );
    // No separator: one chunk.
    assert_eq!(parse("// only a comment\n").len(), 1);
}

#[test]
fn every_chunk_reports_its_first_error() {
    let src = "func.func @a() {\n  %x = hivm.hir.pointer_cast(%c : memref<4xf16>\n}\n// -----\nfunc.func @ok() {\n  return\n}\n// -----\nfunc.func @b() {\n  hivm.hir.set_flag[<PIPE_V>, <PIPE_S>]\n}\n";
    let e = parse_file(src, "m.mlir").expect_err("two bad chunks");
    let got: Vec<String> = e.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        got,
        vec![
            "m.mlir:2:33: error: in `hivm.hir.pointer_cast`: expected `,` or `)`, found `:`",
            "m.mlir:10:39: error: in `hivm.hir.set_flag`: expected `,`, found `]`",
        ]
    );
}

#[test]
fn unterminated_string_is_located() {
    let (l, c, m, h) = err("func.func @f() {\n  \"some.op\"() {s = \"abc} : () -> ()\n}\n");
    assert_eq!(
        (l, c, m.as_str()),
        (2, 20, "in `some.op`: unterminated string")
    );
    assert_eq!(
        h.as_deref(),
        Some("close the string with `\"` on the same line")
    );
}

#[test]
fn unbalanced_paren_names_the_opener() {
    let (l, c, m, h) = err("func.func @f() {\n  %0 = tensor.empty(%n : tensor<?xf32>\n");
    assert_eq!(
        (l, c, m.as_str()),
        (3, 1, "in `tensor.empty`: expected `)`, found end of input")
    );
    assert_eq!(
        h.as_deref(),
        Some("the `(` at line 2, column 20 is never closed")
    );
}

#[test]
fn missing_outs_type_is_reported_with_the_op() {
    let (l, c, m, h) = err(&func("hivm.hir.load ins(%a : memref<16xf16>)\n  outs(%b)"));
    assert_eq!(
        (l, c, m.as_str()),
        (3, 10, "in `hivm.hir.load`: expected `:`, found `)`")
    );
    assert_eq!(
        h.as_deref(),
        Some("write `outs(%a : type)`: each operand of `outs` needs its type")
    );
    let (_, _, m, _) = err(&func(
        "hivm.hir.vadd ins(%a, %b : memref<16xf16>) outs(%c : memref<16xf16>)",
    ));
    assert_eq!(m, "in `hivm.hir.vadd`: `ins` has 2 values but 1 type");
}

#[test]
fn nesting_is_capped() {
    let deep = format!(
        "func.func @f() {{\n  \"x.y\"() {{a = {}1{}}} : () -> ()\n}}\n",
        "[".repeat(300),
        "]".repeat(300)
    );
    let (l, c, m, _) = err(&deep);
    // The function's region and the dict are two levels; the 255th `[` (column 16 + 254) would
    // be level 257.
    assert_eq!((l, c), (2, 16 + 254));
    assert_eq!(
        m,
        "in `x.y`: nesting deeper than 256 levels (regions, types, attributes, parentheses)"
    );
    let cap = "nesting deeper than 256 levels (regions, types, attributes, parentheses)";
    for (open, close) in [
        ("scf.if %c {\n", "}\n"),
        ("scf.for %i = %a to %b step %c {\n", "}\n"),
        ("\"g.op\"() ({\n", "}) : () -> ()\n"),
        ("scope.scope : () -> () {\n", "}\n"),
        ("foo.bar {\n%x = ", "}\n"),
    ] {
        let deep = format!("{}{}", open.repeat(300), close.repeat(300));
        let (_, _, m, _) = err(&func(&deep));
        assert!(m.ends_with(cap), "{m}");
    }
    for ty in [
        "tensor<4x".repeat(300) + "f32",
        "(".repeat(300),
        "!d.t<".repeat(300),
    ] {
        let (_, _, m, _) = err(&func(&format!("%x = memref.alloc() : {ty}")));
        assert!(m.ends_with(cap), "{m}");
    }
    let (_, _, m, _) = err(&format!(
        "#m = affine_map<(d0) -> ({}d0)>",
        "(-".repeat(300)
    ));
    assert!(m.ends_with(cap), "{m}");
    let (_, _, m, _) = err(&func(&format!("foo.bar {}", "(".repeat(300))));
    assert!(m.ends_with(cap), "{m}");
}

#[test]
fn other_errors_name_what_was_expected() {
    let (l, c, m, _) = err(&func("%x = memref.alloc() : memref<4yf16>"));
    assert_eq!(
        (l, c, m.as_str()),
        (
            2,
            31,
            "in `memref.alloc`: expected `x` after a dimension of `memref<...>`, found `yf16`"
        )
    );
    let (_, _, m, _) = err(&func("hivm.hir.set_flag[<PIPE_V>, <PIPE_S>, <EVENT_X>]"));
    assert_eq!(m, "in `hivm.hir.set_flag`: `EVENT_X` is not an event id");
    let (_, _, m, _) = err("#m = affine_map<(d0) -> (d1)>\n");
    assert_eq!(m, "`d1` is not a dimension or symbol of this affine map");
    let (_, _, m, _) = err("func.func @f( {\n}\n");
    assert_eq!(m, "in `func.func`: expected a type, found `{`");
    let (_, _, m, _) = err("}");
    assert_eq!(m, "expected an op, found `}`");
}

#[test]
fn nested_function_types_read_in_linear_time() {
    // `() -> (() -> (... ) -> i1) -> i1`: a reader that re-reads a parenthesised result list
    // once it sees the `->` after it takes 2^depth steps here.
    let mut ty = String::from("i1");
    for _ in 0..80 {
        ty = format!("() -> ({ty}) -> i1");
    }
    let start = std::time::Instant::now();
    let ops = body(&func(&format!("\"t.f\"() : () -> ({ty})")));
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
    let OpKind::Opaque { types, .. } = &ops[0].kind else {
        panic!()
    };
    // The outermost result is itself `() -> (...) -> i1`, read as a function type.
    let Type::Function { results, .. } = &types[0] else {
        panic!()
    };
    let Type::Function { inputs, results } = &results[0] else {
        panic!("{results:?}")
    };
    assert!(inputs.is_empty());
    let Type::Function {
        inputs,
        results: inner,
    } = &results[0]
    else {
        panic!()
    };
    assert_eq!(inputs.len(), 1);
    assert_eq!(
        inner,
        &vec![Type::Int {
            bits: 1,
            signed: None
        }]
    );
}

#[test]
fn a_file_is_mlir_by_its_extension_or_its_first_op() {
    use super::looks_like_mlir;
    assert!(looks_like_mlir("k.mlir", "kernel: x"));
    assert!(looks_like_mlir(
        "-",
        "// c\n#map = affine_map<(d0) -> (d0)>\nmodule {\n}"
    ));
    assert!(looks_like_mlir(
        "-",
        "module attributes {hacc.target = 1} {"
    ));
    assert!(looks_like_mlir("-", "module @m {"));
    assert!(looks_like_mlir("-", "func.func @f() {"));
    assert!(looks_like_mlir("-", "\"builtin.module\"() ({"));
    // YAML whose first key happens to start like an MLIR op is YAML
    assert!(!looks_like_mlir("k.yaml", "module: attention\nkernel: fa"));
    assert!(!looks_like_mlir("-", "module : x"));
    assert!(!looks_like_mlir("-", "modules:\n  - a"));
    assert!(!looks_like_mlir("-", "func.func: 1"));
    assert!(!looks_like_mlir("-", "kernel: k"));
}
