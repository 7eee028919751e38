go test fuzz v1
[]byte("module @m {\n  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.add %a, %a : tensor<2x\n")
