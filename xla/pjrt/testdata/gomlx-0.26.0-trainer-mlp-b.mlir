module @Trainer_0 {
  func.func @main(%arg0: tensor<64x32xf32>, %arg1: tensor<64x1xf32>, %var__fnn_hidden_layer_0_weights: tensor<32x256xf32>, %var__fnn_hidden_layer_0_biases: tensor<256xf32>, %var__fnn_hidden_layer_1_weights: tensor<256x256xf32>, %var__fnn_hidden_layer_1_biases: tensor<256xf32>, %var__fnn_hidden_layer_2_weights: tensor<256x256xf32>, %var__fnn_hidden_layer_2_biases: tensor<256xf32>, %var__fnn_output_layer_weights: tensor<256x1xf32>, %var__fnn_output_layer_biases: tensor<1xf32>, %var__optimizers_learning_rate: tensor<f32>, %var___global_step: tensor<i64>, %var__AdamOptimizer_global_step: tensor<i64>, %var__AdamOptimizer_fnn_hidden_layer_0_weights_1st_moment: tensor<32x256xf32>, %var__AdamOptimizer_fnn_hidden_layer_0_weights_2nd_moment: tensor<32x256xf32>, %var__AdamOptimizer_fnn_hidden_layer_0_biases_1st_moment: tensor<256xf32>, %var__AdamOptimizer_fnn_hidden_layer_0_biases_2nd_moment: tensor<256xf32>, %var__AdamOptimizer_fnn_hidden_layer_1_weights_1st_moment: tensor<256x256xf32>, %var__AdamOptimizer_fnn_hidden_layer_1_weights_2nd_moment: tensor<256x256xf32>, %var__AdamOptimizer_fnn_hidden_layer_1_biases_1st_moment: tensor<256xf32>, %var__AdamOptimizer_fnn_hidden_layer_1_biases_2nd_moment: tensor<256xf32>, %var__AdamOptimizer_fnn_hidden_layer_2_weights_1st_moment: tensor<256x256xf32>, %var__AdamOptimizer_fnn_hidden_layer_2_weights_2nd_moment: tensor<256x256xf32>, %var__AdamOptimizer_fnn_hidden_layer_2_biases_1st_moment: tensor<256xf32>, %var__AdamOptimizer_fnn_hidden_layer_2_biases_2nd_moment: tensor<256xf32>, %var__AdamOptimizer_fnn_output_layer_weights_1st_moment: tensor<256x1xf32>, %var__AdamOptimizer_fnn_output_layer_weights_2nd_moment: tensor<256x1xf32>, %var__AdamOptimizer_fnn_output_layer_biases_1st_moment: tensor<1xf32>, %var__AdamOptimizer_fnn_output_layer_biases_2nd_moment: tensor<1xf32>, %var__metrics_Moving_Average_Loss_Regularization_uuid_bd101d86_470d_40ff_8337_16b2fe710b43_mean: tensor<f32>, %var__metrics_Moving_Average_Loss_Regularization_uuid_bd101d86_470d_40ff_8337_16b2fe710b43_count: tensor<f32>, %var__metrics_Moving_Average_Loss_uuid_588d28f8_054c_45fd_ad5d_7bfbded74266_mean: tensor<f32>, %var__metrics_Moving_Average_Loss_uuid_588d28f8_054c_45fd_ad5d_7bfbded74266_count: tensor<f32>) -> (tensor<32x256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256x1xf32>, tensor<1xf32>, tensor<i64>, tensor<i64>, tensor<32x256xf32>, tensor<32x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x1xf32>, tensor<256x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
    %0 = "stablehlo.dot_general"(%arg0, %var__fnn_hidden_layer_0_weights) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x32xf32>, tensor<32x256xf32>) -> tensor<64x256xf32>
    %1 = "stablehlo.reshape"(%var__fnn_hidden_layer_0_biases) : (tensor<256xf32>) -> tensor<1x256xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<1x256xf32>) -> tensor<64x256xf32>
    %3 = "stablehlo.add"(%0, %2) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %4 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %6 = "stablehlo.maximum"(%3, %5) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %7 = "stablehlo.dot_general"(%6, %var__fnn_hidden_layer_1_weights) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
    %8 = "stablehlo.reshape"(%var__fnn_hidden_layer_1_biases) : (tensor<256xf32>) -> tensor<1x256xf32>
    %9 = "stablehlo.broadcast_in_dim"(%8) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<1x256xf32>) -> tensor<64x256xf32>
    %10 = "stablehlo.add"(%7, %9) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %11 = "stablehlo.broadcast_in_dim"(%4) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %12 = "stablehlo.maximum"(%10, %11) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %13 = "stablehlo.dot_general"(%12, %var__fnn_hidden_layer_2_weights) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
    %14 = "stablehlo.reshape"(%var__fnn_hidden_layer_2_biases) : (tensor<256xf32>) -> tensor<1x256xf32>
    %15 = "stablehlo.broadcast_in_dim"(%14) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<1x256xf32>) -> tensor<64x256xf32>
    %16 = "stablehlo.add"(%13, %15) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %17 = "stablehlo.broadcast_in_dim"(%4) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %18 = "stablehlo.maximum"(%16, %17) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %19 = "stablehlo.dot_general"(%18, %var__fnn_output_layer_weights) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<64x256xf32>, tensor<256x1xf32>) -> tensor<64x1xf32>
    %20 = "stablehlo.reshape"(%var__fnn_output_layer_biases) : (tensor<1xf32>) -> tensor<1x1xf32>
    %21 = "stablehlo.broadcast_in_dim"(%20) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<1x1xf32>) -> tensor<64x1xf32>
    %22 = "stablehlo.add"(%19, %21) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
    %23 = "stablehlo.subtract"(%arg1, %22) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
    %24 = "stablehlo.multiply"(%23, %23) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
    %26 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %27 = "stablehlo.reduce"(%24, %26) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0, 1> } : (tensor<64x1xf32>, tensor<f32>) -> tensor<f32>
    %28 = "stablehlo.constant"() { value = dense<0.015625> : tensor<f32> } : () -> tensor<f32>
    %29 = "stablehlo.multiply"(%27, %28) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %30 = "stablehlo.constant"() { value = dense<1.0> : tensor<f32> } : () -> tensor<f32>
    %31 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<f32>
    %32 = "stablehlo.multiply"(%31, %28) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %33 = "stablehlo.multiply"(%31, %27) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %34 = "stablehlo.reshape"(%32) : (tensor<f32>) -> tensor<1x1xf32>
    %35 = "stablehlo.broadcast_in_dim"(%34) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<1x1xf32>) -> tensor<64x1xf32>
    %36 = "stablehlo.multiply"(%35, %23) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
    %37 = "stablehlo.multiply"(%35, %23) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
    %38 = "stablehlo.add"(%36, %37) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
    %39 = "stablehlo.negate"(%38) : (tensor<64x1xf32>) -> tensor<64x1xf32>
    %40 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %41 = "stablehlo.reduce"(%39, %40) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x1xf32>, tensor<f32>) -> tensor<1xf32>
    %42 = "stablehlo.reshape"(%41) : (tensor<1xf32>) -> tensor<1x1xf32>
    %43 = "stablehlo.reshape"(%42) : (tensor<1x1xf32>) -> tensor<1xf32>
    %44 = "stablehlo.reshape"(%39) : (tensor<64x1xf32>) -> tensor<64x1x1xf32>
    %45 = "stablehlo.broadcast_in_dim"(%44) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x1x1xf32>) -> tensor<64x256x1xf32>
    %46 = "stablehlo.reshape"(%var__fnn_output_layer_weights) : (tensor<256x1xf32>) -> tensor<1x256x1xf32>
    %47 = "stablehlo.broadcast_in_dim"(%46) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<1x256x1xf32>) -> tensor<64x256x1xf32>
    %48 = "stablehlo.multiply"(%45, %47) : (tensor<64x256x1xf32>, tensor<64x256x1xf32>) -> tensor<64x256x1xf32>
    %49 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %50 = "stablehlo.reduce"(%48, %49) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<64x256x1xf32>, tensor<f32>) -> tensor<64x256xf32>
    %51 = "stablehlo.reshape"(%18) : (tensor<64x256xf32>) -> tensor<64x256x1xf32>
    %52 = "stablehlo.multiply"(%45, %51) : (tensor<64x256x1xf32>, tensor<64x256x1xf32>) -> tensor<64x256x1xf32>
    %53 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %54 = "stablehlo.reduce"(%52, %53) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x256x1xf32>, tensor<f32>) -> tensor<256x1xf32>
    %55 = "stablehlo.subtract"(%16, %17) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %56 = "stablehlo.sign"(%55) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %57 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %58 = "stablehlo.add"(%56, %57) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %59 = "stablehlo.sign"(%58) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %60 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %61 = "stablehlo.subtract"(%60, %59) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %62 = "stablehlo.multiply"(%50, %59) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %63 = "stablehlo.multiply"(%50, %61) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %64 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %65 = "stablehlo.reduce"(%62, %64) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
    %66 = "stablehlo.reshape"(%65) : (tensor<256xf32>) -> tensor<1x256xf32>
    %67 = "stablehlo.reshape"(%66) : (tensor<1x256xf32>) -> tensor<256xf32>
    %68 = "stablehlo.reshape"(%62) : (tensor<64x256xf32>) -> tensor<64x1x256xf32>
    %69 = "stablehlo.broadcast_in_dim"(%68) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x1x256xf32>) -> tensor<64x256x256xf32>
    %70 = "stablehlo.reshape"(%var__fnn_hidden_layer_2_weights) : (tensor<256x256xf32>) -> tensor<1x256x256xf32>
    %71 = "stablehlo.broadcast_in_dim"(%70) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<1x256x256xf32>) -> tensor<64x256x256xf32>
    %72 = "stablehlo.multiply"(%69, %71) : (tensor<64x256x256xf32>, tensor<64x256x256xf32>) -> tensor<64x256x256xf32>
    %73 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %74 = "stablehlo.reduce"(%72, %73) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<64x256x256xf32>, tensor<f32>) -> tensor<64x256xf32>
    %75 = "stablehlo.reshape"(%12) : (tensor<64x256xf32>) -> tensor<64x256x1xf32>
    %76 = "stablehlo.broadcast_in_dim"(%75) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x256x1xf32>) -> tensor<64x256x256xf32>
    %77 = "stablehlo.multiply"(%69, %76) : (tensor<64x256x256xf32>, tensor<64x256x256xf32>) -> tensor<64x256x256xf32>
    %78 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %79 = "stablehlo.reduce"(%77, %78) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x256x256xf32>, tensor<f32>) -> tensor<256x256xf32>
    %80 = "stablehlo.subtract"(%10, %11) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %81 = "stablehlo.sign"(%80) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %82 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %83 = "stablehlo.add"(%81, %82) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %84 = "stablehlo.sign"(%83) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %85 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %86 = "stablehlo.subtract"(%85, %84) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %87 = "stablehlo.multiply"(%74, %84) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %88 = "stablehlo.multiply"(%74, %86) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %89 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %90 = "stablehlo.reduce"(%87, %89) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
    %91 = "stablehlo.reshape"(%90) : (tensor<256xf32>) -> tensor<1x256xf32>
    %92 = "stablehlo.reshape"(%91) : (tensor<1x256xf32>) -> tensor<256xf32>
    %93 = "stablehlo.reshape"(%87) : (tensor<64x256xf32>) -> tensor<64x1x256xf32>
    %94 = "stablehlo.broadcast_in_dim"(%93) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x1x256xf32>) -> tensor<64x256x256xf32>
    %95 = "stablehlo.reshape"(%var__fnn_hidden_layer_1_weights) : (tensor<256x256xf32>) -> tensor<1x256x256xf32>
    %96 = "stablehlo.broadcast_in_dim"(%95) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<1x256x256xf32>) -> tensor<64x256x256xf32>
    %97 = "stablehlo.multiply"(%94, %96) : (tensor<64x256x256xf32>, tensor<64x256x256xf32>) -> tensor<64x256x256xf32>
    %98 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %99 = "stablehlo.reduce"(%97, %98) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<64x256x256xf32>, tensor<f32>) -> tensor<64x256xf32>
    %100 = "stablehlo.reshape"(%6) : (tensor<64x256xf32>) -> tensor<64x256x1xf32>
    %101 = "stablehlo.broadcast_in_dim"(%100) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x256x1xf32>) -> tensor<64x256x256xf32>
    %102 = "stablehlo.multiply"(%94, %101) : (tensor<64x256x256xf32>, tensor<64x256x256xf32>) -> tensor<64x256x256xf32>
    %103 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %104 = "stablehlo.reduce"(%102, %103) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x256x256xf32>, tensor<f32>) -> tensor<256x256xf32>
    %105 = "stablehlo.subtract"(%3, %5) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %106 = "stablehlo.sign"(%105) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %107 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %108 = "stablehlo.add"(%106, %107) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %109 = "stablehlo.sign"(%108) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %110 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<64x256xf32>
    %111 = "stablehlo.subtract"(%110, %109) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %112 = "stablehlo.multiply"(%99, %109) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %113 = "stablehlo.multiply"(%99, %111) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %114 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %115 = "stablehlo.reduce"(%112, %114) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
    %116 = "stablehlo.reshape"(%115) : (tensor<256xf32>) -> tensor<1x256xf32>
    %117 = "stablehlo.reshape"(%116) : (tensor<1x256xf32>) -> tensor<256xf32>
    %118 = "stablehlo.reshape"(%112) : (tensor<64x256xf32>) -> tensor<64x1x256xf32>
    %119 = "stablehlo.broadcast_in_dim"(%118) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x1x256xf32>) -> tensor<64x32x256xf32>
    %120 = "stablehlo.reshape"(%var__fnn_hidden_layer_0_weights) : (tensor<32x256xf32>) -> tensor<1x32x256xf32>
    %121 = "stablehlo.broadcast_in_dim"(%120) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<1x32x256xf32>) -> tensor<64x32x256xf32>
    %122 = "stablehlo.multiply"(%119, %121) : (tensor<64x32x256xf32>, tensor<64x32x256xf32>) -> tensor<64x32x256xf32>
    %123 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %124 = "stablehlo.reduce"(%122, %123) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<64x32x256xf32>, tensor<f32>) -> tensor<64x32xf32>
    %125 = "stablehlo.reshape"(%arg0) : (tensor<64x32xf32>) -> tensor<64x32x1xf32>
    %126 = "stablehlo.broadcast_in_dim"(%125) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<64x32x1xf32>) -> tensor<64x32x256xf32>
    %127 = "stablehlo.multiply"(%119, %126) : (tensor<64x32x256xf32>, tensor<64x32x256xf32>) -> tensor<64x32x256xf32>
    %128 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %129 = "stablehlo.reduce"(%127, %128) ({
      ^reductionFn(%lhs: tensor<f32>, %rhs: tensor<f32>) :
          %25 = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%25) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<64x32x256xf32>, tensor<f32>) -> tensor<32x256xf32>
    %130 = "stablehlo.constant"() { value = dense<1> : tensor<i64> } : () -> tensor<i64>
    %131 = "stablehlo.broadcast_in_dim"(%130) { broadcast_dimensions = array<i64> } : (tensor<i64>) -> tensor<i64>
    %132 = "stablehlo.add"(%var___global_step, %131) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %133 = "stablehlo.convert"(%132) : (tensor<i64>) -> tensor<f32>
    %134 = "stablehlo.broadcast_in_dim"(%130) { broadcast_dimensions = array<i64> } : (tensor<i64>) -> tensor<i64>
    %135 = "stablehlo.add"(%var__AdamOptimizer_global_step, %134) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %136 = "stablehlo.convert"(%135) : (tensor<i64>) -> tensor<f32>
    %137 = "stablehlo.constant"() { value = dense<0.8999999761581421> : tensor<f32> } : () -> tensor<f32>
    %138 = "stablehlo.power"(%137, %136) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %139 = "stablehlo.subtract"(%30, %138) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %140 = "stablehlo.divide"(%30, %139) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %141 = "stablehlo.constant"() { value = dense<0.9990000128746033> : tensor<f32> } : () -> tensor<f32>
    %142 = "stablehlo.power"(%141, %136) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %143 = "stablehlo.subtract"(%30, %142) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %144 = "stablehlo.divide"(%30, %143) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %145 = "stablehlo.constant"() { value = dense<1.0000000116860974e-07> : tensor<f32> } : () -> tensor<f32>
    %146 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %147 = "stablehlo.multiply"(%146, %var__AdamOptimizer_fnn_hidden_layer_0_weights_1st_moment) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %148 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %149 = "stablehlo.broadcast_in_dim"(%148) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %150 = "stablehlo.multiply"(%149, %129) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %151 = "stablehlo.add"(%147, %150) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %152 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %153 = "stablehlo.multiply"(%151, %152) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %154 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %155 = "stablehlo.multiply"(%154, %var__AdamOptimizer_fnn_hidden_layer_0_weights_2nd_moment) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %156 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %157 = "stablehlo.multiply"(%129, %129) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %158 = "stablehlo.broadcast_in_dim"(%156) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %159 = "stablehlo.multiply"(%158, %157) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %160 = "stablehlo.add"(%155, %159) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %161 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %162 = "stablehlo.multiply"(%160, %161) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %163 = "stablehlo.sqrt"(%162) : (tensor<32x256xf32>) -> tensor<32x256xf32>
    %164 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %165 = "stablehlo.add"(%163, %164) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %166 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<32x256xf32>
    %167 = "stablehlo.multiply"(%166, %153) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %168 = "stablehlo.divide"(%167, %165) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %169 = "stablehlo.subtract"(%var__fnn_hidden_layer_0_weights, %168) : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
    %170 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %171 = "stablehlo.multiply"(%170, %var__AdamOptimizer_fnn_hidden_layer_0_biases_1st_moment) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %172 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %173 = "stablehlo.broadcast_in_dim"(%172) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %174 = "stablehlo.multiply"(%173, %117) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %175 = "stablehlo.add"(%171, %174) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %176 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %177 = "stablehlo.multiply"(%175, %176) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %178 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %179 = "stablehlo.multiply"(%178, %var__AdamOptimizer_fnn_hidden_layer_0_biases_2nd_moment) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %180 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %181 = "stablehlo.multiply"(%117, %117) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %182 = "stablehlo.broadcast_in_dim"(%180) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %183 = "stablehlo.multiply"(%182, %181) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %184 = "stablehlo.add"(%179, %183) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %185 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %186 = "stablehlo.multiply"(%184, %185) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %187 = "stablehlo.sqrt"(%186) : (tensor<256xf32>) -> tensor<256xf32>
    %188 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %189 = "stablehlo.add"(%187, %188) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %190 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %191 = "stablehlo.multiply"(%190, %177) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %192 = "stablehlo.divide"(%191, %189) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %193 = "stablehlo.subtract"(%var__fnn_hidden_layer_0_biases, %192) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %194 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %195 = "stablehlo.multiply"(%194, %var__AdamOptimizer_fnn_hidden_layer_1_weights_1st_moment) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %196 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %197 = "stablehlo.broadcast_in_dim"(%196) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %198 = "stablehlo.multiply"(%197, %104) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %199 = "stablehlo.add"(%195, %198) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %200 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %201 = "stablehlo.multiply"(%199, %200) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %202 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %203 = "stablehlo.multiply"(%202, %var__AdamOptimizer_fnn_hidden_layer_1_weights_2nd_moment) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %204 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %205 = "stablehlo.multiply"(%104, %104) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %206 = "stablehlo.broadcast_in_dim"(%204) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %207 = "stablehlo.multiply"(%206, %205) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %208 = "stablehlo.add"(%203, %207) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %209 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %210 = "stablehlo.multiply"(%208, %209) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %211 = "stablehlo.sqrt"(%210) : (tensor<256x256xf32>) -> tensor<256x256xf32>
    %212 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %213 = "stablehlo.add"(%211, %212) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %214 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %215 = "stablehlo.multiply"(%214, %201) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %216 = "stablehlo.divide"(%215, %213) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %217 = "stablehlo.subtract"(%var__fnn_hidden_layer_1_weights, %216) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %218 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %219 = "stablehlo.multiply"(%218, %var__AdamOptimizer_fnn_hidden_layer_1_biases_1st_moment) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %220 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %221 = "stablehlo.broadcast_in_dim"(%220) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %222 = "stablehlo.multiply"(%221, %92) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %223 = "stablehlo.add"(%219, %222) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %224 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %225 = "stablehlo.multiply"(%223, %224) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %226 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %227 = "stablehlo.multiply"(%226, %var__AdamOptimizer_fnn_hidden_layer_1_biases_2nd_moment) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %228 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %229 = "stablehlo.multiply"(%92, %92) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %230 = "stablehlo.broadcast_in_dim"(%228) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %231 = "stablehlo.multiply"(%230, %229) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %232 = "stablehlo.add"(%227, %231) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %233 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %234 = "stablehlo.multiply"(%232, %233) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %235 = "stablehlo.sqrt"(%234) : (tensor<256xf32>) -> tensor<256xf32>
    %236 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %237 = "stablehlo.add"(%235, %236) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %238 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %239 = "stablehlo.multiply"(%238, %225) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %240 = "stablehlo.divide"(%239, %237) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %241 = "stablehlo.subtract"(%var__fnn_hidden_layer_1_biases, %240) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %242 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %243 = "stablehlo.multiply"(%242, %var__AdamOptimizer_fnn_hidden_layer_2_weights_1st_moment) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %244 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %245 = "stablehlo.broadcast_in_dim"(%244) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %246 = "stablehlo.multiply"(%245, %79) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %247 = "stablehlo.add"(%243, %246) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %248 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %249 = "stablehlo.multiply"(%247, %248) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %250 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %251 = "stablehlo.multiply"(%250, %var__AdamOptimizer_fnn_hidden_layer_2_weights_2nd_moment) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %252 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %253 = "stablehlo.multiply"(%79, %79) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %254 = "stablehlo.broadcast_in_dim"(%252) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %255 = "stablehlo.multiply"(%254, %253) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %256 = "stablehlo.add"(%251, %255) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %257 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %258 = "stablehlo.multiply"(%256, %257) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %259 = "stablehlo.sqrt"(%258) : (tensor<256x256xf32>) -> tensor<256x256xf32>
    %260 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %261 = "stablehlo.add"(%259, %260) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %262 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x256xf32>
    %263 = "stablehlo.multiply"(%262, %249) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %264 = "stablehlo.divide"(%263, %261) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %265 = "stablehlo.subtract"(%var__fnn_hidden_layer_2_weights, %264) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    %266 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %267 = "stablehlo.multiply"(%266, %var__AdamOptimizer_fnn_hidden_layer_2_biases_1st_moment) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %268 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %269 = "stablehlo.broadcast_in_dim"(%268) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %270 = "stablehlo.multiply"(%269, %67) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %271 = "stablehlo.add"(%267, %270) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %272 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %273 = "stablehlo.multiply"(%271, %272) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %274 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %275 = "stablehlo.multiply"(%274, %var__AdamOptimizer_fnn_hidden_layer_2_biases_2nd_moment) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %276 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %277 = "stablehlo.multiply"(%67, %67) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %278 = "stablehlo.broadcast_in_dim"(%276) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %279 = "stablehlo.multiply"(%278, %277) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %280 = "stablehlo.add"(%275, %279) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %281 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %282 = "stablehlo.multiply"(%280, %281) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %283 = "stablehlo.sqrt"(%282) : (tensor<256xf32>) -> tensor<256xf32>
    %284 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %285 = "stablehlo.add"(%283, %284) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %286 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %287 = "stablehlo.multiply"(%286, %273) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %288 = "stablehlo.divide"(%287, %285) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %289 = "stablehlo.subtract"(%var__fnn_hidden_layer_2_biases, %288) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %290 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %291 = "stablehlo.multiply"(%290, %var__AdamOptimizer_fnn_output_layer_weights_1st_moment) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %292 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %293 = "stablehlo.broadcast_in_dim"(%292) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %294 = "stablehlo.multiply"(%293, %54) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %295 = "stablehlo.add"(%291, %294) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %296 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %297 = "stablehlo.multiply"(%295, %296) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %298 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %299 = "stablehlo.multiply"(%298, %var__AdamOptimizer_fnn_output_layer_weights_2nd_moment) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %300 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %301 = "stablehlo.multiply"(%54, %54) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %302 = "stablehlo.broadcast_in_dim"(%300) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %303 = "stablehlo.multiply"(%302, %301) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %304 = "stablehlo.add"(%299, %303) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %305 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %306 = "stablehlo.multiply"(%304, %305) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %307 = "stablehlo.sqrt"(%306) : (tensor<256x1xf32>) -> tensor<256x1xf32>
    %308 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %309 = "stablehlo.add"(%307, %308) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %310 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x1xf32>
    %311 = "stablehlo.multiply"(%310, %297) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %312 = "stablehlo.divide"(%311, %309) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %313 = "stablehlo.subtract"(%var__fnn_output_layer_weights, %312) : (tensor<256x1xf32>, tensor<256x1xf32>) -> tensor<256x1xf32>
    %314 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %315 = "stablehlo.multiply"(%314, %var__AdamOptimizer_fnn_output_layer_biases_1st_moment) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %316 = "stablehlo.subtract"(%30, %137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %317 = "stablehlo.broadcast_in_dim"(%316) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %318 = "stablehlo.multiply"(%317, %43) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %319 = "stablehlo.add"(%315, %318) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %320 = "stablehlo.broadcast_in_dim"(%140) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %321 = "stablehlo.multiply"(%319, %320) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %322 = "stablehlo.broadcast_in_dim"(%141) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %323 = "stablehlo.multiply"(%322, %var__AdamOptimizer_fnn_output_layer_biases_2nd_moment) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %324 = "stablehlo.subtract"(%30, %141) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %325 = "stablehlo.multiply"(%43, %43) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %326 = "stablehlo.broadcast_in_dim"(%324) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %327 = "stablehlo.multiply"(%326, %325) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %328 = "stablehlo.add"(%323, %327) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %329 = "stablehlo.broadcast_in_dim"(%144) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %330 = "stablehlo.multiply"(%328, %329) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %331 = "stablehlo.sqrt"(%330) : (tensor<1xf32>) -> tensor<1xf32>
    %332 = "stablehlo.broadcast_in_dim"(%145) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %333 = "stablehlo.add"(%331, %332) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %334 = "stablehlo.broadcast_in_dim"(%var__optimizers_learning_rate) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<1xf32>
    %335 = "stablehlo.multiply"(%334, %321) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %336 = "stablehlo.divide"(%335, %333) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %337 = "stablehlo.subtract"(%var__fnn_output_layer_biases, %336) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %338 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<f32>
    %339 = "stablehlo.add"(%var__metrics_Moving_Average_Loss_Regularization_uuid_bd101d86_470d_40ff_8337_16b2fe710b43_count, %338) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %340 = "stablehlo.constant"() { value = dense<0.009999999776482582> : tensor<f32> } : () -> tensor<f32>
    %341 = "stablehlo.divide"(%30, %339) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %342 = "stablehlo.maximum"(%340, %341) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %343 = "stablehlo.subtract"(%30, %342) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %344 = "stablehlo.multiply"(%var__metrics_Moving_Average_Loss_Regularization_uuid_bd101d86_470d_40ff_8337_16b2fe710b43_mean, %343) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %345 = "stablehlo.multiply"(%29, %342) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %346 = "stablehlo.add"(%344, %345) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %347 = "stablehlo.broadcast_in_dim"(%30) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<f32>
    %348 = "stablehlo.add"(%var__metrics_Moving_Average_Loss_uuid_588d28f8_054c_45fd_ad5d_7bfbded74266_count, %347) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %349 = "stablehlo.constant"() { value = dense<0.009999999776482582> : tensor<f32> } : () -> tensor<f32>
    %350 = "stablehlo.divide"(%30, %348) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %351 = "stablehlo.maximum"(%349, %350) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %352 = "stablehlo.subtract"(%30, %351) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %353 = "stablehlo.multiply"(%var__metrics_Moving_Average_Loss_uuid_588d28f8_054c_45fd_ad5d_7bfbded74266_mean, %352) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %354 = "stablehlo.multiply"(%29, %351) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %355 = "stablehlo.add"(%353, %354) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%169, %193, %217, %241, %265, %289, %313, %337, %132, %135, %151, %160, %175, %184, %199, %208, %223, %232, %247, %256, %271, %280, %295, %304, %319, %328, %346, %339, %355, %348, %29, %346, %355) : (tensor<32x256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256x1xf32>, tensor<1xf32>, tensor<i64>, tensor<i64>, tensor<32x256xf32>, tensor<32x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x1xf32>, tensor<256x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> ()
  }
}
