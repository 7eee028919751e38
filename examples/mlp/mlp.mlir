module @mlp {
  func.func @main(%x: tensor<64x784xf32>, %w1: tensor<784x512xf32>, %b1: tensor<512xf32>, %w2: tensor<512x512xf32>, %b2: tensor<512xf32>, %w3: tensor<512x10xf32>, %b3: tensor<10xf32>) -> tensor<64x10xf32> {
    %0 = "stablehlo.dot_general"(%x, %w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
    %1 = "stablehlo.broadcast_in_dim"(%b1) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<64x512xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
    %3 = "stablehlo.tanh"(%2) : (tensor<64x512xf32>) -> tensor<64x512xf32>
    %4 = "stablehlo.dot_general"(%3, %w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
    %5 = "stablehlo.broadcast_in_dim"(%b2) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<64x512xf32>
    %6 = "stablehlo.add"(%4, %5) : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
    %7 = "stablehlo.tanh"(%6) : (tensor<64x512xf32>) -> tensor<64x512xf32>
    %8 = "stablehlo.dot_general"(%7, %w3) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x512xf32>, tensor<512x10xf32>) -> tensor<64x10xf32>
    %9 = "stablehlo.broadcast_in_dim"(%b3) { broadcast_dimensions = array<i64: 1> } : (tensor<10xf32>) -> tensor<64x10xf32>
    %10 = "stablehlo.add"(%8, %9) : (tensor<64x10xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
    %11 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %13 = "stablehlo.reduce"(%10, %11) ({
      ^reductionFn(%arg0: tensor<f32>, %arg1: tensor<f32>) :
          %12 = "stablehlo.maximum"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%12) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<64x10xf32>, tensor<f32>) -> tensor<64xf32>
    %14 = "stablehlo.broadcast_in_dim"(%13) { broadcast_dimensions = array<i64: 0> } : (tensor<64xf32>) -> tensor<64x10xf32>
    %15 = "stablehlo.subtract"(%10, %14) : (tensor<64x10xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
    %16 = "stablehlo.exponential"(%15) : (tensor<64x10xf32>) -> tensor<64x10xf32>
    %17 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %19 = "stablehlo.reduce"(%16, %17) ({
      ^reductionFn(%arg2: tensor<f32>, %arg3: tensor<f32>) :
          %18 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%18) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<64x10xf32>, tensor<f32>) -> tensor<64xf32>
    %20 = "stablehlo.broadcast_in_dim"(%19) { broadcast_dimensions = array<i64: 0> } : (tensor<64xf32>) -> tensor<64x10xf32>
    %21 = "stablehlo.divide"(%16, %20) : (tensor<64x10xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
    "stablehlo.return"(%21) : (tensor<64x10xf32>) -> ()
  }
}
