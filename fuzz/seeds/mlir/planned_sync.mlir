module {
  func.func @planned(%a: memref<8x32xf32, #hivm.address_space<gm>>) {
    %c0_i64 = arith.constant 0 : i64
    %c1024_i64 = arith.constant 1024 : i64
    %0 = hivm.hir.pointer_cast(%c0_i64, %c1024_i64) [] : memref<8x32xf32, #hivm.address_space<ub>>
    hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]
    hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]
    hivm.hir.load ins(%a : memref<8x32xf32, #hivm.address_space<gm>>) outs(%0 : memref<8x32xf32, #hivm.address_space<ub>>)
    hivm.hir.pipe_barrier[<PIPE_ALL>]
    return
  }
}
