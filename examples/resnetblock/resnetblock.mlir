module @resnetblock {
  func.func @main(%x: tensor<32x56x56x64xf32>, %conv1_w: tensor<3x3x64x64xf32>, %bn1_gamma: tensor<64xf32>, %bn1_beta: tensor<64xf32>, %conv2_w: tensor<3x3x64x64xf32>, %bn2_gamma: tensor<64xf32>, %bn2_beta: tensor<64xf32>) -> tensor<32x56x56x64xf32> {
    %0 = "stablehlo.convolution"(%x, %conv1_w) {
      batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64,
      lhs_dilation = array<i64: 1, 1>,
      padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>],
      rhs_dilation = array<i64: 1, 1>,
      window_reversal = array<i1: false, false>,
      window_strides = array<i64: 1, 1>
    } : (tensor<32x56x56x64xf32>, tensor<3x3x64x64xf32>) -> tensor<32x56x56x64xf32>
    %1 = "stablehlo.constant"() { value = dense<9.964923265215475e-06> : tensor<f32> } : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64xf32>
    %3 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %5 = "stablehlo.reduce"(%0, %3) ({
      ^reductionFn(%arg0: tensor<f32>, %arg1: tensor<f32>) :
          %4 = "stablehlo.add"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%4) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0, 1, 2> } : (tensor<32x56x56x64xf32>, tensor<f32>) -> tensor<64xf32>
    %6 = "stablehlo.multiply"(%5, %2) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %7 = "stablehlo.broadcast_in_dim"(%6) { broadcast_dimensions = array<i64: 3> } : (tensor<64xf32>) -> tensor<32x56x56x64xf32>
    %8 = "stablehlo.subtract"(%0, %7) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %9 = "stablehlo.multiply"(%8, %8) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %10 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %12 = "stablehlo.reduce"(%9, %10) ({
      ^reductionFn(%arg2: tensor<f32>, %arg3: tensor<f32>) :
          %11 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%11) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0, 1, 2> } : (tensor<32x56x56x64xf32>, tensor<f32>) -> tensor<64xf32>
    %13 = "stablehlo.multiply"(%12, %2) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %14 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %15 = "stablehlo.broadcast_in_dim"(%14) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64xf32>
    %16 = "stablehlo.add"(%13, %15) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %17 = "stablehlo.rsqrt"(%16) : (tensor<64xf32>) -> tensor<64xf32>
    %18 = "stablehlo.multiply"(%17, %bn1_gamma) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %19 = "stablehlo.broadcast_in_dim"(%18) { broadcast_dimensions = array<i64: 3> } : (tensor<64xf32>) -> tensor<32x56x56x64xf32>
    %20 = "stablehlo.multiply"(%8, %19) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %21 = "stablehlo.broadcast_in_dim"(%bn1_beta) { broadcast_dimensions = array<i64: 3> } : (tensor<64xf32>) -> tensor<32x56x56x64xf32>
    %22 = "stablehlo.add"(%20, %21) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %23 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %24 = "stablehlo.broadcast_in_dim"(%23) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x56x56x64xf32>
    %25 = "stablehlo.maximum"(%22, %24) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %26 = "stablehlo.convolution"(%25, %conv2_w) {
      batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64,
      lhs_dilation = array<i64: 1, 1>,
      padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>],
      rhs_dilation = array<i64: 1, 1>,
      window_reversal = array<i1: false, false>,
      window_strides = array<i64: 1, 1>
    } : (tensor<32x56x56x64xf32>, tensor<3x3x64x64xf32>) -> tensor<32x56x56x64xf32>
    %27 = "stablehlo.constant"() { value = dense<9.964923265215475e-06> : tensor<f32> } : () -> tensor<f32>
    %28 = "stablehlo.broadcast_in_dim"(%27) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64xf32>
    %29 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %31 = "stablehlo.reduce"(%26, %29) ({
      ^reductionFn(%arg4: tensor<f32>, %arg5: tensor<f32>) :
          %30 = "stablehlo.add"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%30) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0, 1, 2> } : (tensor<32x56x56x64xf32>, tensor<f32>) -> tensor<64xf32>
    %32 = "stablehlo.multiply"(%31, %28) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %33 = "stablehlo.broadcast_in_dim"(%32) { broadcast_dimensions = array<i64: 3> } : (tensor<64xf32>) -> tensor<32x56x56x64xf32>
    %34 = "stablehlo.subtract"(%26, %33) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %35 = "stablehlo.multiply"(%34, %34) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %36 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %38 = "stablehlo.reduce"(%35, %36) ({
      ^reductionFn(%arg6: tensor<f32>, %arg7: tensor<f32>) :
          %37 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%37) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0, 1, 2> } : (tensor<32x56x56x64xf32>, tensor<f32>) -> tensor<64xf32>
    %39 = "stablehlo.multiply"(%38, %28) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %40 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %41 = "stablehlo.broadcast_in_dim"(%40) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64xf32>
    %42 = "stablehlo.add"(%39, %41) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %43 = "stablehlo.rsqrt"(%42) : (tensor<64xf32>) -> tensor<64xf32>
    %44 = "stablehlo.multiply"(%43, %bn2_gamma) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %45 = "stablehlo.broadcast_in_dim"(%44) { broadcast_dimensions = array<i64: 3> } : (tensor<64xf32>) -> tensor<32x56x56x64xf32>
    %46 = "stablehlo.multiply"(%34, %45) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %47 = "stablehlo.broadcast_in_dim"(%bn2_beta) { broadcast_dimensions = array<i64: 3> } : (tensor<64xf32>) -> tensor<32x56x56x64xf32>
    %48 = "stablehlo.add"(%46, %47) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %49 = "stablehlo.add"(%48, %x) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    %50 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %51 = "stablehlo.broadcast_in_dim"(%50) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x56x56x64xf32>
    %52 = "stablehlo.maximum"(%49, %51) : (tensor<32x56x56x64xf32>, tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
    "stablehlo.return"(%52) : (tensor<32x56x56x64xf32>) -> ()
  }
}
