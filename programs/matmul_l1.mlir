// The mmadL1 matmul of matmul_l1.yaml (its twin) in HIVM MLIR: K tiles of A and B loaded into
// L1 (cbuf) with nd2nz, double-buffered; mmadL1 accumulates them into one L0C (cc) tile, its
// init flag set on the first tile only; a fixpipe writes C. `npusim run
// programs/matmul_l1.mlir` gives the YAML twin's cycles (tests/integration/mlir_kernels.rs).
func.func @matmul_l1(%a: memref<128x1024xf16, #hivm.address_space<gm>>,
                     %b: memref<1024x256xf16, #hivm.address_space<gm>>,
                     %c: memref<128x256xf16, #hivm.address_space<gm>>)
    attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>,
                hivm.func_core_type = #hivm.func_core_type<AIC>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %l0c = memref.alloc() : memref<128x256xf32, #hivm.address_space<cc>>
  scf.for %kk = %c0 to %c4 step %c1 {
    %l1a = memref.alloc() : memref<128x256xf16, #hivm.address_space<cbuf>>
    annotation.mark %l1a {hivm.multi_buffer = 2 : i32} : memref<128x256xf16, #hivm.address_space<cbuf>>
    %l1b = memref.alloc() : memref<256x256xf16, #hivm.address_space<cbuf>>
    annotation.mark %l1b {hivm.multi_buffer = 2 : i32} : memref<256x256xf16, #hivm.address_space<cbuf>>
    %k0 = arith.muli %kk, %c256 : index
    %at = memref.subview %a[0, %k0] [128, 256] [1, 1]
        : memref<128x1024xf16, #hivm.address_space<gm>>
       to memref<128x256xf16, strided<[1024, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.nd2nz ins(%at : memref<128x256xf16, strided<[1024, 1], offset: ?>, #hivm.address_space<gm>>)
                   outs(%l1a : memref<128x256xf16, #hivm.address_space<cbuf>>)
    %bt = memref.subview %b[%k0, 0] [256, 256] [1, 1]
        : memref<1024x256xf16, #hivm.address_space<gm>>
       to memref<256x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>
    hivm.hir.nd2nz ins(%bt : memref<256x256xf16, strided<[256, 1], offset: ?>, #hivm.address_space<gm>>)
                   outs(%l1b : memref<256x256xf16, #hivm.address_space<cbuf>>)
    %init = arith.cmpi eq, %kk, %c0 : index
    hivm.hir.mmadL1 ins(%l1a, %l1b, %init, %c128, %c256, %c256
                        : memref<128x256xf16, #hivm.address_space<cbuf>>,
                          memref<256x256xf16, #hivm.address_space<cbuf>>, i1, index, index, index)
                    outs(%l0c : memref<128x256xf32, #hivm.address_space<cc>>)
  }
  hivm.hir.fixpipe {enable_nz2nd} ins(%l0c : memref<128x256xf32, #hivm.address_space<cc>>)
                   outs(%c : memref<128x256xf16, #hivm.address_space<gm>>)
  return
}
