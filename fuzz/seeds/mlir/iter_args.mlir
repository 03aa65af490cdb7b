func.func @carry(%g: memref<64xf32, #hivm.address_space<gm>>) -> index {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %b = memref.alloc() : memref<64xf32, #hivm.address_space<ub>>
  %r:2 = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %b, %n = %c0) -> (memref<64xf32, #hivm.address_space<ub>>, index) {
    %n1 = arith.addi %n, %c1 : index
    scf.yield %acc, %n1 : memref<64xf32, #hivm.address_space<ub>>, index
  }
  return %r#1 : index
}
