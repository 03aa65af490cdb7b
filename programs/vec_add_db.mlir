// The double-buffered vector add of vec_add_db.yaml (its twin) written as HIVM MLIR, as the
// compiler would hand it to PlanMemory: gm tensors are the function's memref arguments, each
// on-chip buffer a memref.alloc in UB marked as a double buffer, rows picked by memref.subview.
// `npusim run programs/vec_add_db.mlir` plans, synchronises and runs it; it gives the YAML
// twin's cycles (tests/integration/mlir_kernels.rs). The real compiler reads it too:
// `bishengir-opt -hivm-plan-memory -hivm-inject-sync programs/vec_add_db.mlir`.
func.func @vec_add_db(%x: memref<128x16384xf16, #hivm.address_space<gm>>,
                      %y: memref<128x16384xf16, #hivm.address_space<gm>>,
                      %z: memref<128x16384xf16, #hivm.address_space<gm>>)
    attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>,
                hivm.func_core_type = #hivm.func_core_type<AIV>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.for %t = %c0 to %c128 step %c1 {
    %xb = memref.alloc() : memref<16384xf16, #hivm.address_space<ub>>
    annotation.mark %xb {hivm.multi_buffer = 2 : i32} : memref<16384xf16, #hivm.address_space<ub>>
    %yb = memref.alloc() : memref<16384xf16, #hivm.address_space<ub>>
    annotation.mark %yb {hivm.multi_buffer = 2 : i32} : memref<16384xf16, #hivm.address_space<ub>>
    %zb = memref.alloc() : memref<16384xf16, #hivm.address_space<ub>>
    annotation.mark %zb {hivm.multi_buffer = 2 : i32} : memref<16384xf16, #hivm.address_space<ub>>
    %xr = memref.subview %x[%t, 0] [1, 16384] [1, 1]
        : memref<128x16384xf16, #hivm.address_space<gm>>
       to memref<16384xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.load ins(%xr : memref<16384xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>)
                  outs(%xb : memref<16384xf16, #hivm.address_space<ub>>)
    %yr = memref.subview %y[%t, 0] [1, 16384] [1, 1]
        : memref<128x16384xf16, #hivm.address_space<gm>>
       to memref<16384xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.load ins(%yr : memref<16384xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>)
                  outs(%yb : memref<16384xf16, #hivm.address_space<ub>>)
    hivm.hir.vadd ins(%xb, %yb : memref<16384xf16, #hivm.address_space<ub>>,
                                 memref<16384xf16, #hivm.address_space<ub>>)
                  outs(%zb : memref<16384xf16, #hivm.address_space<ub>>)
    %zr = memref.subview %z[%t, 0] [1, 16384] [1, 1]
        : memref<128x16384xf16, #hivm.address_space<gm>>
       to memref<16384xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.store ins(%zb : memref<16384xf16, #hivm.address_space<ub>>)
                   outs(%zr : memref<16384xf16, strided<[1], offset: ?>, #hivm.address_space<gm>>)
  }
  return
}
