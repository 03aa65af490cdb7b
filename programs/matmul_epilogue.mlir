// CATLASS's MatmulEpilogue, y = a·b + x, as ONE HIVM MIX function: the form the compiler
// synchronises before it splits a cube + vector kernel into its AIC and AIV functions. The
// cube ops (nd2nz into cbuf, mmadL1 into cc, fixpipe into the gm workspace %ws) and the vector
// ops (loads into ub, vadd, store) share one loop over row tiles t = block, block + 2, ...;
// each of an AI core's two vector cores takes half of a tile's rows (get_sub_block_idx).
// `npusim run programs/matmul_epilogue.mlir --blocks 2` splits it by the memories each op
// uses (docs/mlir.md, "MIX functions"), inserts the cube -> vector hand-off through %ws
// (sync: auto) and runs it; programs/matmul_epilogue.yaml is its twin, written as a mixed YAML
// kernel, and runs in the same cycles (tests/integration/mlir_kernels.rs). The real compiler
// reads it: `bishengir-opt -hivm-plan-memory -hivm-inject-sync -hivm-inject-block-sync
// programs/matmul_epilogue.mlir`, and npusim runs what that prints, with the compiler's own
// cross-core flags.
func.func @matmul_epilogue(%a: memref<1024x256xf16, #hivm.address_space<gm>>,
                           %b: memref<256x256xf16, #hivm.address_space<gm>>,
                           %x: memref<1024x256xf16, #hivm.address_space<gm>>,
                           %ws: memref<1024x256xf16, #hivm.address_space<gm>>,
                           %y: memref<1024x256xf16, #hivm.address_space<gm>>,
                           %ffts: i64 {hacc.arg_type = #hacc.arg_type<ffts_base_address>})
    attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>,
                hivm.func_core_type = #hivm.func_core_type<MIX>} {
  // the cross-core flags' base address, as the compiler's MIX kernels set it
  hivm.hir.set_ffts_base_addr %ffts
  %block_i64 = hivm.hir.get_block_idx -> i64
  %block = arith.index_cast %block_i64 : i64 to index
  %sub_i64 = hivm.hir.get_sub_block_idx -> i64
  %sub = arith.index_cast %sub_i64 : i64 to index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %true = arith.constant true
  // B stays in L1 for every tile; the tile's product accumulates in L0C
  %b1 = memref.alloc() : memref<256x256xf16, #hivm.address_space<cbuf>>
  %acc = memref.alloc() : memref<128x256xf32, #hivm.address_space<cc>>
  hivm.hir.nd2nz {dst_continuous} ins(%b : memref<256x256xf16, #hivm.address_space<gm>>)
                 outs(%b1 : memref<256x256xf16, #hivm.address_space<cbuf>>)
  scf.for %t = %block to %c8 step %c2 {
    %a1 = memref.alloc() : memref<128x256xf16, #hivm.address_space<cbuf>>
    annotation.mark %a1 {hivm.multi_buffer = 2 : i32} : memref<128x256xf16, #hivm.address_space<cbuf>>
    %wb = memref.alloc() : memref<64x256xf16, #hivm.address_space<ub>>
    annotation.mark %wb {hivm.multi_buffer = 2 : i32} : memref<64x256xf16, #hivm.address_space<ub>>
    %xb = memref.alloc() : memref<64x256xf16, #hivm.address_space<ub>>
    annotation.mark %xb {hivm.multi_buffer = 2 : i32} : memref<64x256xf16, #hivm.address_space<ub>>
    %yb = memref.alloc() : memref<64x256xf16, #hivm.address_space<ub>>
    annotation.mark %yb {hivm.multi_buffer = 2 : i32} : memref<64x256xf16, #hivm.address_space<ub>>
    // cube core: the tile's rows of A, times B, into the workspace
    %row = arith.muli %t, %c128 : index
    %at = memref.subview %a[%row, 0] [128, 256] [1, 1]
        : memref<1024x256xf16, #hivm.address_space<gm>>
       to memref<128x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.nd2nz {dst_continuous} ins(%at : memref<128x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>)
                   outs(%a1 : memref<128x256xf16, #hivm.address_space<cbuf>>)
    hivm.hir.mmadL1 ins(%a1, %b1, %true, %c128, %c256, %c256
                        : memref<128x256xf16, #hivm.address_space<cbuf>>,
                          memref<256x256xf16, #hivm.address_space<cbuf>>, i1, index, index, index)
                    outs(%acc : memref<128x256xf32, #hivm.address_space<cc>>)
    %wt = memref.subview %ws[%row, 0] [128, 256] [1, 1]
        : memref<1024x256xf16, #hivm.address_space<gm>>
       to memref<128x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.fixpipe {dma_mode = #hivm.dma_mode<nz2nd>, pre_quant = #hivm.fixpipe_pre_quant_mode<F322F16>}
                     ins(%acc : memref<128x256xf32, #hivm.address_space<cc>>)
                     outs(%wt : memref<128x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>)
    // vector cores: their half of the tile's rows, plus x, into y
    %half = arith.muli %sub, %c64 : index
    %vrow = arith.addi %row, %half : index
    %xs = memref.subview %x[%vrow, 0] [64, 256] [1, 1]
        : memref<1024x256xf16, #hivm.address_space<gm>>
       to memref<64x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.load ins(%xs : memref<64x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>)
                  outs(%xb : memref<64x256xf16, #hivm.address_space<ub>>)
    %wsv = memref.subview %ws[%vrow, 0] [64, 256] [1, 1]
        : memref<1024x256xf16, #hivm.address_space<gm>>
       to memref<64x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.load ins(%wsv : memref<64x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>)
                  outs(%wb : memref<64x256xf16, #hivm.address_space<ub>>)
    hivm.hir.vadd ins(%wb, %xb : memref<64x256xf16, #hivm.address_space<ub>>,
                                 memref<64x256xf16, #hivm.address_space<ub>>)
                  outs(%yb : memref<64x256xf16, #hivm.address_space<ub>>)
    %ys = memref.subview %y[%vrow, 0] [64, 256] [1, 1]
        : memref<1024x256xf16, #hivm.address_space<gm>>
       to memref<64x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.store ins(%yb : memref<64x256xf16, #hivm.address_space<ub>>)
                   outs(%ys : memref<64x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>)
  }
  return
}
