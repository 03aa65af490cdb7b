func.func @long_forms(%ev: i64) {
  hivm.hir.set_flag [#hivm.pipe<PIPE_MTE1>, #hivm.pipe<PIPE_M>, #hivm.event<EVENT_ID5>]
  hivm.hir.wait_flag [#hivm.pipe<PIPE_MTE1>, #hivm.pipe<PIPE_M>, %ev]
  return
}
// -----
func.func @cross_core(%base: i64, %f: i64) {
  hivm.hir.sync_block_set[<CUBE>, <PIPE_FIX>, <PIPE_S>] flag = 3 ffts_base_addr = %base sync_instr_mode = <INTER_BLOCK_SYNCHRONIZATION>
  hivm.hir.sync_block_wait[#hivm.tcore_type<VECTOR>, #hivm.pipe<PIPE_FIX>, #hivm.pipe<PIPE_S>]
    flag = %f
  hivm.hir.sync_block[<ALL_CUBE>, 0 : i64] tcube_pipe = <PIPE_FIX>
  return
}
