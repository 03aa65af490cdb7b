//! Reading time of `sim::mlir::parse_file` on a generated 10 MB HIVM MLIR file: realistic
//! planned and unplanned kernels (double-buffered loops of load / vector ops / store, cube
//! nd2nz / mmadL1 / fixpipe, views, affine event ids, sync ops, cross-core sync, `// -----`
//! chunks), repeated with fresh names until the file is 10 MB. Target: under 1 s.
//!
//! `cargo bench -p sim --bench mlir_read`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::fmt::Write;

/// One function of about 5 KB; `i` makes names unique.
fn kernel(s: &mut String, i: usize) {
    let ub = "#hivm.address_space<ub>";
    let gm = "#hivm.address_space<gm>";
    let _ = write!(
        s,
        r#"func.func @kernel_{i}(%arg0: i64 {{hacc.arg_type = #hacc.arg_type<ffts_base_address>}},
    %x: memref<16x2048xf16, {gm}>, %y: memref<16x2048xf16, {gm}>, %w: memref<16x16xf32, {gm}>)
    attributes {{hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c0_i64 = arith.constant 0 : i64
  %c8192_i64 = arith.constant 8192 : i64
  %c16384_i64 = arith.constant 16384 : i64
  hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]
  scf.for %i = %c0 to %c16 step %c1 {{
    %ev = affine.apply #map()[%i]
    %e64 = arith.index_cast %ev : index to i64
    %a = hivm.hir.pointer_cast(%c0_i64, %c8192_i64) : memref<2048xf16, {ub}>
    %b = hivm.hir.pointer_cast(%c16384_i64) [] : memref<2048xf16, {ub}>
    %row = memref.subview %x[%i, 0] [1, 2048] [1, 1] : memref<16x2048xf16, {gm}> to memref<2048xf16, strided<[1], offset: ?>, {gm}>
    hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, %e64]
    hivm.hir.load ins(%row : memref<2048xf16, strided<[1], offset: ?>, {gm}>)
                  outs(%a : memref<2048xf16, {ub}>)
    hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    hivm.hir.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    hivm.hir.vadd ins(%a, %a : memref<2048xf16, {ub}>, memref<2048xf16, {ub}>) outs(%b : memref<2048xf16, {ub}>)
    hivm.hir.vmul ins(%b, %a : memref<2048xf16, {ub}>, memref<2048xf16, {ub}>) outs(%b : memref<2048xf16, {ub}>)
    hivm.hir.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]
    hivm.hir.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]
    %out = memref.subview %y[%i, 0] [1, 2048] [1, 1] : memref<16x2048xf16, {gm}> to memref<2048xf16, strided<[1], offset: ?>, {gm}>
    hivm.hir.store ins(%b : memref<2048xf16, {ub}>) outs(%out : memref<2048xf16, strided<[1], offset: ?>, {gm}>)
    hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, %e64]
  }}
  %l1 = memref.alloc() : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>
  %l0c = memref.alloc() : memref<16x16xf32, #hivm.address_space<cc>>
  annotation.mark %l1 {{hivm.multi_buffer = 2 : i32}} : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>
  %true = arith.constant true
  %x2 = memref.subview %x[0, 0] [16, 16] [1, 1] : memref<16x2048xf16, {gm}> to memref<16x16xf16, strided<[2048, 1]>, {gm}>
  hivm.hir.nd2nz {{dst_continuous}} ins(%x2 : memref<16x16xf16, strided<[2048, 1]>, {gm}>) outs(%l1 : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>)
  hivm.hir.mmadL1 ins(%l1, %l1, %true, %c16, %c16, %c16 : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>, memref<1x1x16x16xf16, #hivm.address_space<cbuf>>, i1, index, index, index) outs(%l0c : memref<16x16xf32, #hivm.address_space<cc>>)
  hivm.hir.fixpipe {{enable_nz2nd}} ins(%l0c : memref<16x16xf32, #hivm.address_space<cc>>) outs(%w : memref<16x16xf32, {gm}>)
  hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_S>] flag = 0 ffts_base_addr = %arg0
  hivm.hir.pipe_barrier[<PIPE_ALL>]
  hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]
  return
}}
"#
    );
}

/// About `bytes` of MLIR: a `#map` alias and kernels, a `// -----` chunk every 50 kernels.
fn file(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 8192);
    let mut i = 0;
    while s.len() < bytes {
        if i % 50 == 0 {
            if i > 0 {
                s += "// -----\n";
            }
            s += "#map = affine_map<()[s0] -> ((s0 floordiv 4) mod 2)>\n";
        }
        kernel(&mut s, i);
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let text = file(10 << 20);
    let chunks = sim::mlir::parse_file(&text, "bench.mlir").expect("the generated file reads");
    assert!(chunks.len() > 10);
    let mut g = c.benchmark_group("mlir_read");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("parse_file_10MB", |b| {
        b.iter(|| sim::mlir::parse_file(std::hint::black_box(&text), "bench.mlir").map(|c| c.len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
