func.func @cube(%a: memref<16x16xf16, #hivm.address_space<gm>>, %c: memref<16x16xf32, #hivm.address_space<gm>>) {
  %l1 = memref.alloc() : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>
  %l0c = memref.alloc() : memref<16x16xf32, #hivm.address_space<cc>>
  %true = arith.constant true
  %c16 = arith.constant 16 : index
  hivm.hir.nd2nz {dst_continuous} ins(%a : memref<16x16xf16, #hivm.address_space<gm>>) outs(%l1 : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>)
  hivm.hir.mmadL1 ins(%l1, %l1, %true, %c16, %c16, %c16 : memref<1x1x16x16xf16, #hivm.address_space<cbuf>>, memref<1x1x16x16xf16, #hivm.address_space<cbuf>>, i1, index, index, index) outs(%l0c : memref<16x16xf32, #hivm.address_space<cc>>)
  hivm.hir.fixpipe {enable_nz2nd} ins(%l0c : memref<16x16xf32, #hivm.address_space<cc>>) outs(%c : memref<16x16xf32, #hivm.address_space<gm>>)
  return
}
