module @other {
  func.func @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<16xf32> {
    %0 = "stablehlo.subtract"(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = "stablehlo.reshape"(%0) : (tensor<4x4xf32>) -> tensor<16xf32>
    return %1 : tensor<16xf32>
  }
}
