module @transformer {
  func.func @main(%x: tensor<128x256xf32>, %ln1_gamma: tensor<256xf32>, %ln1_beta: tensor<256xf32>, %wq: tensor<256x256xf32>, %wk: tensor<256x256xf32>, %wv: tensor<256x256xf32>, %wo: tensor<256x256xf32>, %ln2_gamma: tensor<256xf32>, %ln2_beta: tensor<256xf32>, %w1: tensor<256x1024xf32>, %b1: tensor<1024xf32>, %w2: tensor<1024x256xf32>, %b2: tensor<256xf32>) -> tensor<128x256xf32> {
    %0 = "stablehlo.constant"() { value = dense<0.00390625> : tensor<f32> } : () -> tensor<f32>
    %1 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%x, %1) ({
      ^reductionFn(%arg0: tensor<f32>, %arg1: tensor<f32>) :
          %2 = "stablehlo.add"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%2) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<128x256xf32>, tensor<f32>) -> tensor<128xf32>
    %4 = "stablehlo.broadcast_in_dim"(%0) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128xf32>
    %5 = "stablehlo.multiply"(%3, %4) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %6 = "stablehlo.broadcast_in_dim"(%5) { broadcast_dimensions = array<i64: 0> } : (tensor<128xf32>) -> tensor<128x256xf32>
    %7 = "stablehlo.subtract"(%x, %6) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %8 = "stablehlo.multiply"(%7, %7) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %9 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %11 = "stablehlo.reduce"(%8, %9) ({
      ^reductionFn(%arg2: tensor<f32>, %arg3: tensor<f32>) :
          %10 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%10) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<128x256xf32>, tensor<f32>) -> tensor<128xf32>
    %12 = "stablehlo.broadcast_in_dim"(%0) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128xf32>
    %13 = "stablehlo.multiply"(%11, %12) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %14 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %15 = "stablehlo.broadcast_in_dim"(%14) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128xf32>
    %16 = "stablehlo.add"(%13, %15) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %17 = "stablehlo.rsqrt"(%16) : (tensor<128xf32>) -> tensor<128xf32>
    %18 = "stablehlo.broadcast_in_dim"(%17) { broadcast_dimensions = array<i64: 0> } : (tensor<128xf32>) -> tensor<128x256xf32>
    %19 = "stablehlo.multiply"(%7, %18) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %20 = "stablehlo.broadcast_in_dim"(%ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<256xf32>) -> tensor<128x256xf32>
    %21 = "stablehlo.multiply"(%19, %20) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %22 = "stablehlo.broadcast_in_dim"(%ln1_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<256xf32>) -> tensor<128x256xf32>
    %23 = "stablehlo.add"(%21, %22) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %24 = "stablehlo.dot_general"(%23, %wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
    %25 = "stablehlo.reshape"(%24) : (tensor<128x256xf32>) -> tensor<128x4x64xf32>
    %26 = "stablehlo.transpose"(%25) { permutation = array<i64: 1, 0, 2> } : (tensor<128x4x64xf32>) -> tensor<4x128x64xf32>
    %27 = "stablehlo.dot_general"(%23, %wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
    %28 = "stablehlo.reshape"(%27) : (tensor<128x256xf32>) -> tensor<128x4x64xf32>
    %29 = "stablehlo.transpose"(%28) { permutation = array<i64: 1, 0, 2> } : (tensor<128x4x64xf32>) -> tensor<4x128x64xf32>
    %30 = "stablehlo.dot_general"(%23, %wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
    %31 = "stablehlo.reshape"(%30) : (tensor<128x256xf32>) -> tensor<128x4x64xf32>
    %32 = "stablehlo.transpose"(%31) { permutation = array<i64: 1, 0, 2> } : (tensor<128x4x64xf32>) -> tensor<4x128x64xf32>
    %33 = "stablehlo.dot_general"(%26, %29) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<4x128x64xf32>, tensor<4x128x64xf32>) -> tensor<4x128x128xf32>
    %34 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %35 = "stablehlo.broadcast_in_dim"(%34) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<4x128x128xf32>
    %36 = "stablehlo.multiply"(%33, %35) : (tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
    %37 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %39 = "stablehlo.reduce"(%36, %37) ({
      ^reductionFn(%arg4: tensor<f32>, %arg5: tensor<f32>) :
          %38 = "stablehlo.maximum"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%38) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<4x128x128xf32>, tensor<f32>) -> tensor<4x128xf32>
    %40 = "stablehlo.broadcast_in_dim"(%39) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<4x128xf32>) -> tensor<4x128x128xf32>
    %41 = "stablehlo.subtract"(%36, %40) : (tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
    %42 = "stablehlo.exponential"(%41) : (tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
    %43 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %45 = "stablehlo.reduce"(%42, %43) ({
      ^reductionFn(%arg6: tensor<f32>, %arg7: tensor<f32>) :
          %44 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%44) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<4x128x128xf32>, tensor<f32>) -> tensor<4x128xf32>
    %46 = "stablehlo.broadcast_in_dim"(%45) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<4x128xf32>) -> tensor<4x128x128xf32>
    %47 = "stablehlo.divide"(%42, %46) : (tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
    %48 = "stablehlo.dot_general"(%47, %32) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<4x128x128xf32>, tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
    %49 = "stablehlo.transpose"(%48) { permutation = array<i64: 1, 0, 2> } : (tensor<4x128x64xf32>) -> tensor<128x4x64xf32>
    %50 = "stablehlo.reshape"(%49) : (tensor<128x4x64xf32>) -> tensor<128x256xf32>
    %51 = "stablehlo.dot_general"(%50, %wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
    %52 = "stablehlo.add"(%x, %51) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %53 = "stablehlo.constant"() { value = dense<0.00390625> : tensor<f32> } : () -> tensor<f32>
    %54 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %56 = "stablehlo.reduce"(%52, %54) ({
      ^reductionFn(%arg8: tensor<f32>, %arg9: tensor<f32>) :
          %55 = "stablehlo.add"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%55) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<128x256xf32>, tensor<f32>) -> tensor<128xf32>
    %57 = "stablehlo.broadcast_in_dim"(%53) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128xf32>
    %58 = "stablehlo.multiply"(%56, %57) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %59 = "stablehlo.broadcast_in_dim"(%58) { broadcast_dimensions = array<i64: 0> } : (tensor<128xf32>) -> tensor<128x256xf32>
    %60 = "stablehlo.subtract"(%52, %59) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %61 = "stablehlo.multiply"(%60, %60) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %62 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %64 = "stablehlo.reduce"(%61, %62) ({
      ^reductionFn(%arg10: tensor<f32>, %arg11: tensor<f32>) :
          %63 = "stablehlo.add"(%arg10, %arg11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%63) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<128x256xf32>, tensor<f32>) -> tensor<128xf32>
    %65 = "stablehlo.broadcast_in_dim"(%53) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128xf32>
    %66 = "stablehlo.multiply"(%64, %65) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %67 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %68 = "stablehlo.broadcast_in_dim"(%67) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128xf32>
    %69 = "stablehlo.add"(%66, %68) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %70 = "stablehlo.rsqrt"(%69) : (tensor<128xf32>) -> tensor<128xf32>
    %71 = "stablehlo.broadcast_in_dim"(%70) { broadcast_dimensions = array<i64: 0> } : (tensor<128xf32>) -> tensor<128x256xf32>
    %72 = "stablehlo.multiply"(%60, %71) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %73 = "stablehlo.broadcast_in_dim"(%ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<256xf32>) -> tensor<128x256xf32>
    %74 = "stablehlo.multiply"(%72, %73) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %75 = "stablehlo.broadcast_in_dim"(%ln2_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<256xf32>) -> tensor<128x256xf32>
    %76 = "stablehlo.add"(%74, %75) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %77 = "stablehlo.dot_general"(%76, %w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<128x256xf32>, tensor<256x1024xf32>) -> tensor<128x1024xf32>
    %78 = "stablehlo.broadcast_in_dim"(%b1) { broadcast_dimensions = array<i64: 1> } : (tensor<1024xf32>) -> tensor<128x1024xf32>
    %79 = "stablehlo.add"(%77, %78) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %80 = "stablehlo.multiply"(%79, %79) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %81 = "stablehlo.multiply"(%80, %79) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %82 = "stablehlo.constant"() { value = dense<0.044714998453855515> : tensor<f32> } : () -> tensor<f32>
    %83 = "stablehlo.broadcast_in_dim"(%82) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128x1024xf32>
    %84 = "stablehlo.multiply"(%81, %83) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %85 = "stablehlo.add"(%79, %84) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %86 = "stablehlo.constant"() { value = dense<0.7978845834732056> : tensor<f32> } : () -> tensor<f32>
    %87 = "stablehlo.broadcast_in_dim"(%86) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128x1024xf32>
    %88 = "stablehlo.multiply"(%85, %87) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %89 = "stablehlo.constant"() { value = dense<0.5> : tensor<f32> } : () -> tensor<f32>
    %90 = "stablehlo.broadcast_in_dim"(%89) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128x1024xf32>
    %91 = "stablehlo.multiply"(%79, %90) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %92 = "stablehlo.constant"() { value = dense<1.0> : tensor<f32> } : () -> tensor<f32>
    %93 = "stablehlo.broadcast_in_dim"(%92) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<128x1024xf32>
    %94 = "stablehlo.tanh"(%88) : (tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %95 = "stablehlo.add"(%93, %94) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %96 = "stablehlo.multiply"(%91, %95) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %97 = "stablehlo.dot_general"(%96, %w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<128x1024xf32>, tensor<1024x256xf32>) -> tensor<128x256xf32>
    %98 = "stablehlo.broadcast_in_dim"(%b2) { broadcast_dimensions = array<i64: 1> } : (tensor<256xf32>) -> tensor<128x256xf32>
    %99 = "stablehlo.add"(%97, %98) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %100 = "stablehlo.add"(%52, %99) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    "stablehlo.return"(%100) : (tensor<128x256xf32>) -> ()
  }
}
