// npusim's own test kernel (sim/src/mlir/host.rs): a copy in tiles of a size the host tiling
// function computes, min(size, 256); bishengir-opt reads it.
func.func @k(%x: memref<?xf32, #hivm.address_space<gm>>, %y: memref<?xf32, #hivm.address_space<gm>>, %t: memref<1xi64, #hivm.address_space<gm>>) attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c0_i64 = arith.constant 0 : i64
  %0 = memref.load %t[%c0] : memref<1xi64, #hivm.address_space<gm>>
  %tile = arith.index_cast %0 : i64 to index
  %n = memref.dim %x, %c0 : memref<?xf32, #hivm.address_space<gm>>
  %trips = affine.apply affine_map<()[s0, s1] -> (s0 ceildiv s1)>()[%n, %tile]
  scf.for %i = %c0 to %trips step %c1 {
    %off = affine.apply affine_map<()[s0, s1] -> (s0 * s1)>()[%i, %tile]
    %len = affine.min affine_map<()[s0, s1, s2] -> (s1 - s2 * s0, s0)>()[%tile, %n, %i]
    %src = memref.subview %x[%off] [%len] [1] : memref<?xf32, #hivm.address_space<gm>> to memref<?xf32, strided<[1], offset: ?>, #hivm.address_space<gm>>
    %dst = memref.subview %y[%off] [%len] [1] : memref<?xf32, #hivm.address_space<gm>> to memref<?xf32, strided<[1], offset: ?>, #hivm.address_space<gm>>
    %b = hivm.hir.pointer_cast(%c0_i64) : memref<1024xi8, #hivm.address_space<ub>>
    %v = memref.view %b[%c0][%len] : memref<1024xi8, #hivm.address_space<ub>> to memref<?xf32, #hivm.address_space<ub>>
    hivm.hir.load ins(%src : memref<?xf32, strided<[1], offset: ?>, #hivm.address_space<gm>>) outs(%v : memref<?xf32, #hivm.address_space<ub>>)
    hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    hivm.hir.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    hivm.hir.store ins(%v : memref<?xf32, #hivm.address_space<ub>>) outs(%dst : memref<?xf32, strided<[1], offset: ?>, #hivm.address_space<gm>>)
    hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]
    hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]
  }
  return
}
func.func @k_tiling_function(%x: memref<?xf32>, %y: memref<?xf32>, %t: memref<1xi64>) attributes {hacc.function_kind = #hacc.function_kind<HOST>, hacc.host_func_type = #hacc.host_func_type<tiling_function>} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %tile = affine.min affine_map<()[s0] -> (s0, 256)>()[%n]
  %1 = arith.index_castui %tile : index to i64
  memref.store %1, %t[%c0] : memref<1xi64>
  return
}
