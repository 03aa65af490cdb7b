func.func @dynamic(%n: index) {
  %c0_i64 = arith.constant 0 : i64
  %c-1_i64 = arith.constant -1 : i64
  %0 = hivm.hir.pointer_cast(%c0_i64) [%n] : memref<?x512xf32, #hivm.address_space<ub>>
  %1 = memref.alloc(%n) {alignment = 64 : i64} : memref<?x512xf32, #hivm.address_space<ub>>
  %2 = memref.alloca() : memref<4xbf16, #hivm.address_space<ub>>
  %3 = memref.alloc() : memref<4xf8E4M3FN, #hivm.address_space<ub>>
  return
}
