func.func @tensors(%a: tensor<4x?xf32>, %b: tensor<4x?xf32>) -> tensor<4x?xf32> {
  %c1 = arith.constant 1 : index
  %d = tensor.dim %a, %c1 : tensor<4x?xf32>
  %e = tensor.empty(%d) : tensor<4x?xf32>
  %s = hivm.hir.vadd ins(%a, %b : tensor<4x?xf32>, tensor<4x?xf32>) outs(%e : tensor<4x?xf32>) -> tensor<4x?xf32>
  %k = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = linalg.reduce ins(%s : tensor<4x?xf32>) outs(%e : tensor<4x?xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %sum = arith.addf %in, %init : f32
      linalg.yield %sum : f32
    }
  return %s : tensor<4x?xf32>
}
