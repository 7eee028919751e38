module @donate {
  func.func @main(%x: tensor<256xf32> {tf.aliasing_output = 0 : i32}, %y: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
    %0 = "stablehlo.add"(%x, %y) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %1 = "stablehlo.multiply"(%x, %y) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    return %0, %1 : tensor<256xf32>, tensor<256xf32>
  }
}
