func.func @double_buffer(%src: memref<256xf16, #hivm.address_space<gm>>,
                         %dst: memref<256xf16, #hivm.address_space<gm>>) attributes {hacc.entry} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %ub = memref.alloc() : memref<256xf16, #hivm.address_space<ub>>
    annotation.mark %ub {hivm.multi_buffer = 2 : i32} : memref<256xf16, #hivm.address_space<ub>>
    hivm.hir.load ins(%src : memref<256xf16, #hivm.address_space<gm>>)
                  outs(%ub : memref<256xf16, #hivm.address_space<ub>>)
    hivm.hir.vadd ins(%ub, %ub : memref<256xf16, #hivm.address_space<ub>>, memref<256xf16, #hivm.address_space<ub>>)
                  outs(%ub : memref<256xf16, #hivm.address_space<ub>>)
    hivm.hir.store ins(%ub : memref<256xf16, #hivm.address_space<ub>>) outs(%dst : memref<256xf16, #hivm.address_space<gm>>)
  }
  return
}
