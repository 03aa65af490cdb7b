module attributes {hacc.target = #hacc.target<"Ascend910B1">} {
  func.func private @helper(memref<1xi32>) -> ()
  func.func @ws(%arg0: i64 {hacc.arg_type = #hacc.arg_type<ffts_base_address>}, %w: memref<?xi8> {hacc.arg_type = #hacc.arg_type<workspace>}) attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>} {
    %c64 = arith.constant 64 : index
    %0 = memref_ext.alloc_workspace() from %w offset = [%c64] : from memref<?xi8> to memref<1xi32>
    func.call @helper(%0) : (memref<1xi32>) -> ()
    %v = memref.load %0[%c64] : memref<1xi32>
    memref.store %v, %0[%c64] : memref<1xi32>
    hivm.hir.set_ffts_base_addr %arg0
    return
  }
}
