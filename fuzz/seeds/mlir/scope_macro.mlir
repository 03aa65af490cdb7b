func.func @scopes(%g: memref<32xf16, #hivm.address_space<gm>>) {
  %s = scope.scope : () -> memref<32xf16, #hivm.address_space<ub>> {
    %u = memref.alloc() : memref<32xf16, #hivm.address_space<ub>>
    hivm.hir.load ins(%g : memref<32xf16, #hivm.address_space<gm>>) outs(%u : memref<32xf16, #hivm.address_space<ub>>)
    scope.return %u : memref<32xf16, #hivm.address_space<ub>>
  } {no_inline, hivm.preload_num = 2 : i32}
  hivm.hir.custom_macro {symbol = "macro", hivm.pipe_in = #hivm.pipe<PIPE_MTE2>} "user.macro"
      ins(%s : memref<32xf16, #hivm.address_space<ub>>) outs(%s : memref<32xf16, #hivm.address_space<ub>>)
  "user.consume"(%s) : (memref<32xf16, #hivm.address_space<ub>>) -> ()
  return
}
