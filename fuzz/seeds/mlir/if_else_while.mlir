func.func @branches(%c: i1, %k: i32) -> i32 {
  %c9 = arith.constant 9 : i32
  %x = scf.if %c -> (i32) {
    scf.yield %k : i32
  } else {
    %m = arith.muli %k, %k : i32
    scf.yield %m : i32
  }
  %w = scf.while (%v = %x) : (i32) -> i32 {
    %lt = arith.cmpi slt, %v, %c9 : i32
    scf.condition(%lt) %v : i32
  } do {
  ^bb0(%v2: i32):
    %s = arith.addi %v2, %k : i32
    scf.yield %s : i32
  }
  return %w : i32
}
