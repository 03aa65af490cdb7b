func.func @keywords(%x: memref<4x64xf32, #hivm.address_space<ub>>, %y: memref<4x1xf32, #hivm.address_space<ub>>, %t: memref<256xf32, #hivm.address_space<ub>>, %h: memref<4x64xf16, #hivm.address_space<ub>>) {
  hivm.hir.vreduce <max> ins(%x : memref<4x64xf32, #hivm.address_space<ub>>) outs(%y : memref<4x1xf32, #hivm.address_space<ub>>) temp_buffer(%t : memref<256xf32, #hivm.address_space<ub>>) reduce_dims = [1]
  hivm.hir.vcast ins(%x : memref<4x64xf32, #hivm.address_space<ub>>) outs(%h : memref<4x64xf16, #hivm.address_space<ub>>) round_mode = <rint>
  %cst = arith.constant 0.000000e+00 : f32
  hivm.hir.vbrc ins(%cst : f32) outs(%x : memref<4x64xf32, #hivm.address_space<ub>>) init_out_buffer = false
  return
}
