//! `npusim opt -hivm-plan-memory` on the constructs of AscendNPU-IR's lit tests the plan-only
//! lowering reads (docs/mlir.md): each case is our own minimal function, its offsets derived
//! by hand from HIVM's rule (PlanMemory.cpp v1.2.0) in the comment and checked against
//! bishengir-opt 1.2.0 when written.

use super::{parse_args, run_opt};
use std::collections::HashMap;

/// Runs `opt -hivm-plan-memory` on `text`: the output, and each alloc's planned offsets by
/// its SSA name.
fn plan(text: &str) -> (String, HashMap<String, Vec<u64>>) {
    let config = crate::input::load_config("ascend910b")
        .ok()
        .expect("the built-in config");
    let args = parse_args(&["-hivm-plan-memory".to_string()]).expect("valid arguments");
    let r = run_opt(text, "t.mlir", &config, &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr.join("\n"));
    let mut offs = HashMap::new();
    for l in r.stdout.lines() {
        let l = l.trim();
        let Some((name, rest)) = l.split_once(" = hivm.hir.pointer_cast(") else {
            continue;
        };
        let args = rest.split(')').next().unwrap_or("");
        let v: Vec<u64> = args
            .split(", ")
            .map(|c| {
                c.trim_start_matches("%c")
                    .trim_end_matches("_i64_npu")
                    .parse()
                    .expect("an offset constant")
            })
            .collect();
        offs.insert(name.trim_start_matches('%').to_string(), v);
    }
    (r.stdout, offs)
}

fn at(offs: &HashMap<String, Vec<u64>>, name: &str) -> u64 {
    match offs.get(name).map(|v| v.as_slice()) {
        Some([o]) => *o,
        other => panic!("%{name}: {other:?}"),
    }
}

#[test]
fn an_empty_buffer_is_planned_with_no_bytes() {
    // a 64 x i64 (512 B), b 64 x i32 (256 B) and the empty t fit side by side (768 B of
    // 192 KiB): HIVM's IsEnoughForBuffersNoReuse places every entry in gen order at the
    // running sum, t (gen'd after b, as a temp of the vcast) at 512 + 256 = 768
    let (_, offs) = plan(EMPTY_SEQ);
    assert_eq!(
        [at(&offs, "a"), at(&offs, "b"), at(&offs, "t")],
        [0, 512, 768]
    );
    // with reuse (128 + 64 + 0 + 64 KiB > 192 KiB): first fit puts a size of 0 at the lowest
    // address, 0, though a (0..128 KiB) is live there; c, loaded after a died, reuses 0
    let (_, offs) = plan(EMPTY_REUSE);
    assert_eq!(
        [
            at(&offs, "a"),
            at(&offs, "b"),
            at(&offs, "t"),
            at(&offs, "c")
        ],
        [0, 131072, 0, 0]
    );
}

#[test]
fn an_on_chip_argument_is_no_buffer_of_the_plan() {
    // %u traces to no alloc: it takes no address (a starts at 0), it is never an inplace
    // target, and reading it unwritten is no error. b takes a's address (a dies at the vadd),
    // c takes b's (b dies at the vmul): all three at 0
    let (_, offs) = plan(UB_ARG);
    assert_eq!([at(&offs, "a"), at(&offs, "b"), at(&offs, "c")], [0, 0, 0]);
}

#[test]
fn a_yield_of_a_scope_result_is_copied_before_the_scope_return() {
    // the loop yields %s, a scope's result, and the body reads %acc after first writing %t
    // (what %s returns): NormalizeLoopIterator copies %t into %acc before the scope's return
    // and returns %acc; the yield is unchanged. init 0 (64 B), t 64, u 128 (t and acc live)
    let (out, offs) = plan(SCOPE);
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let ty = "memref<16xf32, #hivm.address_space<ub>>";
    let copy = format!("hivm.hir.copy ins(%t : {ty}) outs(%acc : {ty})");
    let ret = format!("scope.return %acc : {ty}");
    let i = lines.iter().position(|l| *l == copy).expect(&out);
    assert_eq!(lines[i + 1], ret, "{out}");
    assert_eq!(lines[i + 3], format!("scf.yield %s : {ty}"), "{out}");
    assert_eq!(
        [at(&offs, "init"), at(&offs, "t"), at(&offs, "u")],
        [0, 64, 128]
    );
}

#[test]
fn branches_between_blocks_free_a_buffer_where_hivm_does() {
    // PlanMemory walks ^bb0 ^bb1 ^bb2 ^bb3 in order. %a reaches ^bb1 as %x and ^bb2 as %y;
    // ^bb1's vadd is the last use of %x in ^bb1 and nothing of %a is live out of ^bb1, so %a
    // is freed there and b takes its address (0). ^bb2's read of %y comes after: not a use.
    // So at ^bb2's load only b (0) is live: c at 32, d takes c's address (32). e takes b's,
    // which ^bb3 receives: 0. (Were ^bb2's read a use, a would live on: b at 32, c at 64.)
    let (_, offs) = plan(CF);
    assert_eq!(
        ["a", "b", "c", "d", "e"].map(|n| at(&offs, n)),
        [0, 0, 32, 32, 0]
    );
}

#[test]
fn a_static_dim_folds_and_the_first_offset_constant_moves_to_the_front() {
    // `memref.dim %o, %c0` of an 8 x ? memref is 8: MLIR's folder makes `%c8` at the front of
    // the entry block (after the offset constants). The first alloc follows a memref.dim, not
    // the leading constants, so its offset constant moves to the front too. b takes a's
    // address: vadd(va, va) kills a, and the view types have the same shape.
    let (out, offs) = plan(DIMFOLD);
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert_eq!(
        lines[2..7],
        [
            "%c0_i64_npu = arith.constant 0 : i64",
            "%c8 = arith.constant 8 : index",
            "%c0 = arith.constant 0 : index",
            "%c1 = arith.constant 1 : index",
            "%n = memref.dim %g, %c1 : memref<8x?xi16, #hivm.address_space<gm>>",
        ],
        "{out}"
    );
    assert!(out.contains("%vb = memref.view %b[%c0][%c8]"), "{out}");
    assert!(!out.contains("%m = memref.dim"), "{out}");
    assert_eq!([at(&offs, "a"), at(&offs, "b")], [0, 0]);
}

#[test]
fn an_output_takes_the_address_of_a_buffer_an_if_result_names() {
    // %r is b or d; both die at the last vadd (HIVM kills every alias of %r there), so e may
    // take either address. HIVM's kill order is its shuffled live set (bishengir-opt 1.2.0
    // takes b here); npusim tries the select's members in order, b first: e at b's 32.
    // Without the select rule e would need bytes of its own: 96.
    let (_, offs) = plan(IF_SELECT);
    assert_eq!(["a", "b", "d", "e"].map(|n| at(&offs, n)), [0, 32, 64, 32]);
}

const EMPTY_SEQ: &str = r#"func.func @empty_seq(%src: memref<64xi64, #hivm.address_space<gm>>, %dst: memref<64xi32, #hivm.address_space<gm>>) {
  %a = memref.alloc() : memref<64xi64, #hivm.address_space<ub>>
  %b = memref.alloc() : memref<64xi32, #hivm.address_space<ub>>
  %t = memref.alloc() : memref<0xi64, #hivm.address_space<ub>>
  hivm.hir.load ins(%src : memref<64xi64, #hivm.address_space<gm>>) outs(%a : memref<64xi64, #hivm.address_space<ub>>)
  hivm.hir.vcast ins(%a : memref<64xi64, #hivm.address_space<ub>>) outs(%b : memref<64xi32, #hivm.address_space<ub>>) temp_buffer(%t : memref<0xi64, #hivm.address_space<ub>>) round_mode = <truncwithoverflow>
  hivm.hir.store ins(%b : memref<64xi32, #hivm.address_space<ub>>) outs(%dst : memref<64xi32, #hivm.address_space<gm>>)
  return
}
"#;

const EMPTY_REUSE: &str = r#"func.func @empty_reuse(%src: memref<16384xi64, #hivm.address_space<gm>>, %src2: memref<16384xi32, #hivm.address_space<gm>>, %dst: memref<16384xi32, #hivm.address_space<gm>>) {
  %a = memref.alloc() : memref<16384xi64, #hivm.address_space<ub>>
  %b = memref.alloc() : memref<16384xi32, #hivm.address_space<ub>>
  %t = memref.alloc() : memref<0xi64, #hivm.address_space<ub>>
  hivm.hir.load ins(%src : memref<16384xi64, #hivm.address_space<gm>>) outs(%a : memref<16384xi64, #hivm.address_space<ub>>)
  hivm.hir.vcast ins(%a : memref<16384xi64, #hivm.address_space<ub>>) outs(%b : memref<16384xi32, #hivm.address_space<ub>>) temp_buffer(%t : memref<0xi64, #hivm.address_space<ub>>) round_mode = <truncwithoverflow>
  %c = memref.alloc() : memref<16384xi32, #hivm.address_space<ub>>
  hivm.hir.load ins(%src2 : memref<16384xi32, #hivm.address_space<gm>>) outs(%c : memref<16384xi32, #hivm.address_space<ub>>)
  hivm.hir.store ins(%b : memref<16384xi32, #hivm.address_space<ub>>) outs(%dst : memref<16384xi32, #hivm.address_space<gm>>)
  hivm.hir.store ins(%c : memref<16384xi32, #hivm.address_space<ub>>) outs(%dst : memref<16384xi32, #hivm.address_space<gm>>)
  return
}
"#;

const UB_ARG: &str = r#"func.func @ub_arg(%src: memref<16xf32, #hivm.address_space<gm>>, %u: memref<16xf32, #hivm.address_space<ub>>, %dst: memref<16xf32, #hivm.address_space<gm>>) {
  %a = memref.alloc() : memref<16xf32, #hivm.address_space<ub>>
  hivm.hir.load ins(%src : memref<16xf32, #hivm.address_space<gm>>) outs(%a : memref<16xf32, #hivm.address_space<ub>>)
  %b = memref.alloc() : memref<16xf32, #hivm.address_space<ub>>
  hivm.hir.vadd ins(%u, %a : memref<16xf32, #hivm.address_space<ub>>, memref<16xf32, #hivm.address_space<ub>>) outs(%b : memref<16xf32, #hivm.address_space<ub>>)
  %c = memref.alloc() : memref<16xf32, #hivm.address_space<ub>>
  hivm.hir.vmul ins(%b, %u : memref<16xf32, #hivm.address_space<ub>>, memref<16xf32, #hivm.address_space<ub>>) outs(%c : memref<16xf32, #hivm.address_space<ub>>)
  hivm.hir.store ins(%c : memref<16xf32, #hivm.address_space<ub>>) outs(%dst : memref<16xf32, #hivm.address_space<gm>>)
  return
}
"#;

const SCOPE: &str = r#"func.func @scope_copy(%src: memref<16xf32, #hivm.address_space<gm>>, %dst: memref<16xf32, #hivm.address_space<gm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %init = memref.alloc() : memref<16xf32, #hivm.address_space<ub>>
  hivm.hir.load ins(%src : memref<16xf32, #hivm.address_space<gm>>) outs(%init : memref<16xf32, #hivm.address_space<ub>>)
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (memref<16xf32, #hivm.address_space<ub>>) {
    %s = scope.scope : () -> memref<16xf32, #hivm.address_space<ub>> {
      %t = memref.alloc() : memref<16xf32, #hivm.address_space<ub>>
      hivm.hir.vadd ins(%acc, %acc : memref<16xf32, #hivm.address_space<ub>>, memref<16xf32, #hivm.address_space<ub>>) outs(%t : memref<16xf32, #hivm.address_space<ub>>)
      %u = memref.alloc() : memref<16xf32, #hivm.address_space<ub>>
      hivm.hir.vsub ins(%acc, %t : memref<16xf32, #hivm.address_space<ub>>, memref<16xf32, #hivm.address_space<ub>>) outs(%u : memref<16xf32, #hivm.address_space<ub>>)
      hivm.hir.store ins(%u : memref<16xf32, #hivm.address_space<ub>>) outs(%dst : memref<16xf32, #hivm.address_space<gm>>)
      scope.return %t : memref<16xf32, #hivm.address_space<ub>>
    }
    scf.yield %s : memref<16xf32, #hivm.address_space<ub>>
  }
  hivm.hir.store ins(%r : memref<16xf32, #hivm.address_space<ub>>) outs(%dst : memref<16xf32, #hivm.address_space<gm>>)
  return
}
"#;

const CF: &str = r#"func.func @cf(%src: memref<16xf16, #hivm.address_space<gm>>, %dst: memref<16xf16, #hivm.address_space<gm>>, %p: i1) {
  %a = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
  hivm.hir.load ins(%src : memref<16xf16, #hivm.address_space<gm>>) outs(%a : memref<16xf16, #hivm.address_space<ub>>)
  cf.cond_br %p, ^bb1(%a : memref<16xf16, #hivm.address_space<ub>>), ^bb2(%a : memref<16xf16, #hivm.address_space<ub>>)
^bb1(%x : memref<16xf16, #hivm.address_space<ub>>):
  %b = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
  hivm.hir.vadd ins(%x, %x : memref<16xf16, #hivm.address_space<ub>>, memref<16xf16, #hivm.address_space<ub>>) outs(%b : memref<16xf16, #hivm.address_space<ub>>)
  cf.br ^bb3(%b : memref<16xf16, #hivm.address_space<ub>>)
^bb2(%y : memref<16xf16, #hivm.address_space<ub>>):
  %c = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
  hivm.hir.load ins(%src : memref<16xf16, #hivm.address_space<gm>>) outs(%c : memref<16xf16, #hivm.address_space<ub>>)
  %d = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
  hivm.hir.vsub ins(%y, %c : memref<16xf16, #hivm.address_space<ub>>, memref<16xf16, #hivm.address_space<ub>>) outs(%d : memref<16xf16, #hivm.address_space<ub>>)
  hivm.hir.store ins(%d : memref<16xf16, #hivm.address_space<ub>>) outs(%dst : memref<16xf16, #hivm.address_space<gm>>)
  return
^bb3(%z : memref<16xf16, #hivm.address_space<ub>>):
  %e = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
  hivm.hir.vadd ins(%z, %z : memref<16xf16, #hivm.address_space<ub>>, memref<16xf16, #hivm.address_space<ub>>) outs(%e : memref<16xf16, #hivm.address_space<ub>>)
  hivm.hir.store ins(%e : memref<16xf16, #hivm.address_space<ub>>) outs(%dst : memref<16xf16, #hivm.address_space<gm>>)
  return
}
"#;

const DIMFOLD: &str = r#"func.func @dimfold(%g: memref<8x?xi16, #hivm.address_space<gm>>, %o: memref<8x?xi16, #hivm.address_space<gm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %g, %c1 : memref<8x?xi16, #hivm.address_space<gm>>
  %a = memref.alloc() : memref<1024xi8, #hivm.address_space<ub>>
  %va = memref.view %a[%c0][%n] : memref<1024xi8, #hivm.address_space<ub>> to memref<8x?xi16, #hivm.address_space<ub>>
  hivm.hir.load ins(%g : memref<8x?xi16, #hivm.address_space<gm>>) outs(%va : memref<8x?xi16, #hivm.address_space<ub>>)
  %m = memref.dim %o, %c0 : memref<8x?xi16, #hivm.address_space<gm>>
  %b = memref.alloc() : memref<1024xi8, #hivm.address_space<ub>>
  %vb = memref.view %b[%c0][%m] : memref<1024xi8, #hivm.address_space<ub>> to memref<8x?xi16, #hivm.address_space<ub>>
  hivm.hir.vadd ins(%va, %va : memref<8x?xi16, #hivm.address_space<ub>>, memref<8x?xi16, #hivm.address_space<ub>>) outs(%vb : memref<8x?xi16, #hivm.address_space<ub>>)
  hivm.hir.store ins(%vb : memref<8x?xi16, #hivm.address_space<ub>>) outs(%o : memref<8x?xi16, #hivm.address_space<gm>>)
  return
}
"#;

const IF_SELECT: &str = r#"module {
  func.func @if_select(%arg0: memref<16xf16, #hivm.address_space<gm>>, %arg1: memref<16xf16, #hivm.address_space<gm>>, %arg2: memref<16xf16, #hivm.address_space<gm>>, %c: i1) {
    %a = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
    hivm.hir.load ins(%arg0 : memref<16xf16, #hivm.address_space<gm>>) outs(%a : memref<16xf16, #hivm.address_space<ub>>)
    %r = scf.if %c -> (memref<16xf16, #hivm.address_space<ub>>) {
      %b = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
      hivm.hir.vadd ins(%a, %a : memref<16xf16, #hivm.address_space<ub>>, memref<16xf16, #hivm.address_space<ub>>) outs(%b : memref<16xf16, #hivm.address_space<ub>>)
      scf.yield %b : memref<16xf16, #hivm.address_space<ub>>
    } else {
      %d = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
      hivm.hir.vsub ins(%a, %a : memref<16xf16, #hivm.address_space<ub>>, memref<16xf16, #hivm.address_space<ub>>) outs(%d : memref<16xf16, #hivm.address_space<ub>>)
      scf.yield %d : memref<16xf16, #hivm.address_space<ub>>
    }
    %e = memref.alloc() : memref<16xf16, #hivm.address_space<ub>>
    hivm.hir.vadd ins(%r, %r : memref<16xf16, #hivm.address_space<ub>>, memref<16xf16, #hivm.address_space<ub>>) outs(%e : memref<16xf16, #hivm.address_space<ub>>)
    hivm.hir.store ins(%e : memref<16xf16, #hivm.address_space<ub>>) outs(%arg2 : memref<16xf16, #hivm.address_space<gm>>)
    return
  }
}
"#;
