func.func @views(%raw: memref<4096xi8, #hivm.address_space<ub>>, %g: memref<?xf16>, %n: index, %o: index) {
  %c0 = arith.constant 0 : index
  %v = memref.view %raw[%c0][%n] : memref<4096xi8, #hivm.address_space<ub>> to memref<?xf16, #hivm.address_space<ub>>
  %r = memref.reinterpret_cast %g to offset: [%o], sizes: [16, 64], strides: [64, 1] : memref<?xf16> to memref<16x64xf16, strided<[64, 1], offset: ?>>
  %s = memref.subview %r[%n, 0] [4, 64] [1, 1] : memref<16x64xf16, strided<[64, 1], offset: ?>> to memref<4x64xf16, strided<[64, 1], offset: ?>>
  %a = memref.alloc() : memref<2x8x16xf32>
  %cs = memref.collapse_shape %a [[0, 1], [2]] : memref<2x8x16xf32> into memref<16x16xf32>
  %es = memref.expand_shape %cs [[0, 1], [2]] output_shape [4, 4, 16] : memref<16x16xf32> into memref<4x4x16xf32>
  %ca = memref.cast %a : memref<2x8x16xf32> to memref<?x8x16xf32>
  %bc = hivm.hir.bitcast %a : memref<2x8x16xf32> -> memref<2x8x16xi32>
  return
}
