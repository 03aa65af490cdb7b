#map = affine_map<()[s0] -> ((s0 floordiv 4) mod 2)>
#map1 = affine_map<(d0)[s0, s1] -> (s0, d0 * 32 + s1 - 32, -d0 ceildiv 3)>
func.func @affine(%i: index, %a: index, %b: index) -> index {
  %p = affine.apply #map()[%i]
  %m = affine.min #map1(%i)[%a, %b]
  %q = affine.max affine_map<(d0) -> (d0 + 1, 0)>(%m)
  %e = arith.index_cast %q : index to i64
  %one = arith.constant 1 : i64
  %cmp = arith.cmpi eq, %e, %one : i64
  %sel = arith.select %cmp, %p, %m : index
  return %sel : index
}
