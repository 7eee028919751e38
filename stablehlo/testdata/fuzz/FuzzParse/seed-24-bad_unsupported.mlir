go test fuzz v1
[]byte("func.func @main(%t: !stablehlo.token) -> tensor<3xcomplex<f32>> {\n  %0 = stablehlo.constant dense<(1.0,2.0)> : tensor<3xcomplex<f32>>\n  return %0 : tensor<3xcomplex<f32>>\n}\n")
