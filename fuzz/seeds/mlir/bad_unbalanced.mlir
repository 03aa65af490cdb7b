func.func @bad(%a: memref<16xf16>) {
  hivm.hir.load ins(%a : memref<16xf16>) outs(%a
}
// -----
func.func @bad2() {
  %s = "op"() {s = "unterminated} : () -> ()
}
// -----
func.func @ok() {
  return
}
