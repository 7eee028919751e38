module @cnn {
  func.func @main(%x: tensor<16x28x28x1xf32>, %conv1_w: tensor<3x3x1x16xf32>, %conv1_b: tensor<16xf32>, %conv2_w: tensor<3x3x16x32xf32>, %conv2_b: tensor<32xf32>, %dense_w: tensor<1568x10xf32>, %dense_b: tensor<10xf32>) -> tensor<16x10xf32> {
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
    } : (tensor<16x28x28x1xf32>, tensor<3x3x1x16xf32>) -> tensor<16x28x28x16xf32>
    %1 = "stablehlo.broadcast_in_dim"(%conv1_b) { broadcast_dimensions = array<i64: 3> } : (tensor<16xf32>) -> tensor<16x28x28x16xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<16x28x28x16xf32>, tensor<16x28x28x16xf32>) -> tensor<16x28x28x16xf32>
    %3 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<16x28x28x16xf32>
    %5 = "stablehlo.maximum"(%2, %4) : (tensor<16x28x28x16xf32>, tensor<16x28x28x16xf32>) -> tensor<16x28x28x16xf32>
    %6 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %8 = "stablehlo.reduce_window"(%5, %6) ({
      ^reductionFn(%arg0: tensor<f32>, %arg1: tensor<f32>) :
          %7 = "stablehlo.maximum"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%7) : (tensor<f32>) -> ()
    }) {
      base_dilations = array<i64: 1, 1, 1, 1>,
      padding = dense<[[0, 0], [0, 0], [0, 0], [0, 0]]> : tensor<4x2xi64>,
      window_dilations = array<i64: 1, 1, 1, 1>,
      window_dimensions = array<i64: 1, 2, 2, 1>,
      window_strides = array<i64: 1, 2, 2, 1>
    } : (tensor<16x28x28x16xf32>, tensor<f32>) -> tensor<16x14x14x16xf32>
    %9 = "stablehlo.convolution"(%8, %conv2_w) {
      batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64,
      lhs_dilation = array<i64: 1, 1>,
      padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>],
      rhs_dilation = array<i64: 1, 1>,
      window_reversal = array<i1: false, false>,
      window_strides = array<i64: 1, 1>
    } : (tensor<16x14x14x16xf32>, tensor<3x3x16x32xf32>) -> tensor<16x14x14x32xf32>
    %10 = "stablehlo.broadcast_in_dim"(%conv2_b) { broadcast_dimensions = array<i64: 3> } : (tensor<32xf32>) -> tensor<16x14x14x32xf32>
    %11 = "stablehlo.add"(%9, %10) : (tensor<16x14x14x32xf32>, tensor<16x14x14x32xf32>) -> tensor<16x14x14x32xf32>
    %12 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %13 = "stablehlo.broadcast_in_dim"(%12) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<16x14x14x32xf32>
    %14 = "stablehlo.maximum"(%11, %13) : (tensor<16x14x14x32xf32>, tensor<16x14x14x32xf32>) -> tensor<16x14x14x32xf32>
    %15 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %17 = "stablehlo.reduce_window"(%14, %15) ({
      ^reductionFn(%arg2: tensor<f32>, %arg3: tensor<f32>) :
          %16 = "stablehlo.maximum"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%16) : (tensor<f32>) -> ()
    }) {
      base_dilations = array<i64: 1, 1, 1, 1>,
      padding = dense<[[0, 0], [0, 0], [0, 0], [0, 0]]> : tensor<4x2xi64>,
      window_dilations = array<i64: 1, 1, 1, 1>,
      window_dimensions = array<i64: 1, 2, 2, 1>,
      window_strides = array<i64: 1, 2, 2, 1>
    } : (tensor<16x14x14x32xf32>, tensor<f32>) -> tensor<16x7x7x32xf32>
    %18 = "stablehlo.reshape"(%17) : (tensor<16x7x7x32xf32>) -> tensor<16x1568xf32>
    %19 = "stablehlo.dot_general"(%18, %dense_w) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<16x1568xf32>, tensor<1568x10xf32>) -> tensor<16x10xf32>
    %20 = "stablehlo.broadcast_in_dim"(%dense_b) { broadcast_dimensions = array<i64: 1> } : (tensor<10xf32>) -> tensor<16x10xf32>
    %21 = "stablehlo.add"(%19, %20) : (tensor<16x10xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
    %22 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %24 = "stablehlo.reduce"(%21, %22) ({
      ^reductionFn(%arg4: tensor<f32>, %arg5: tensor<f32>) :
          %23 = "stablehlo.maximum"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%23) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<16x10xf32>, tensor<f32>) -> tensor<16xf32>
    %25 = "stablehlo.broadcast_in_dim"(%24) { broadcast_dimensions = array<i64: 0> } : (tensor<16xf32>) -> tensor<16x10xf32>
    %26 = "stablehlo.subtract"(%21, %25) : (tensor<16x10xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
    %27 = "stablehlo.exponential"(%26) : (tensor<16x10xf32>) -> tensor<16x10xf32>
    %28 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %30 = "stablehlo.reduce"(%27, %28) ({
      ^reductionFn(%arg6: tensor<f32>, %arg7: tensor<f32>) :
          %29 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%29) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<16x10xf32>, tensor<f32>) -> tensor<16xf32>
    %31 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64: 0> } : (tensor<16xf32>) -> tensor<16x10xf32>
    %32 = "stablehlo.divide"(%27, %31) : (tensor<16x10xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
    "stablehlo.return"(%32) : (tensor<16x10xf32>) -> ()
  }
}
