module @embedding {
  func.func @main(%ids: tensor<8x32xi32>, %table: tensor<10000x128xf32>, %pos: tensor<32x128xf32>, %ln1_gamma: tensor<128xf32>, %ln1_beta: tensor<128xf32>, %wq: tensor<128x128xf32>, %wk: tensor<128x128xf32>, %wv: tensor<128x128xf32>, %wo: tensor<128x128xf32>, %ln2_gamma: tensor<128xf32>, %ln2_beta: tensor<128xf32>, %w1: tensor<128x512xf32>, %b1: tensor<512xf32>, %w2: tensor<512x128xf32>, %b2: tensor<128xf32>, %lnf_gamma: tensor<128xf32>, %lnf_beta: tensor<128xf32>) -> tensor<8x128xf32> {
    %0 = "stablehlo.reshape"(%ids) : (tensor<8x32xi32>) -> tensor<8x32x1xi32>
    %1 = "stablehlo.gather"(%table, %0) {
      dimension_numbers = #stablehlo.gather<
  offset_dims = [2],
  collapsed_slice_dims = [0],
  operand_batching_dims = [],
  start_indices_batching_dims = [],
  start_index_map = [0],
  index_vector_dim = 2>,
      indices_are_sorted = false,
      slice_sizes = array<i64: 1, 128>
    } : (tensor<10000x128xf32>, tensor<8x32x1xi32>) -> tensor<8x32x128xf32>
    %2 = "stablehlo.broadcast_in_dim"(%pos) { broadcast_dimensions = array<i64: 1, 2> } : (tensor<32x128xf32>) -> tensor<8x32x128xf32>
    %3 = "stablehlo.add"(%1, %2) : (tensor<8x32x128xf32>, tensor<8x32x128xf32>) -> tensor<8x32x128xf32>
    %4 = "stablehlo.reshape"(%3) : (tensor<8x32x128xf32>) -> tensor<256x128xf32>
    %5 = "stablehlo.constant"() { value = dense<0.0078125> : tensor<f32> } : () -> tensor<f32>
    %6 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %8 = "stablehlo.reduce"(%4, %6) ({
      ^reductionFn(%arg0: tensor<f32>, %arg1: tensor<f32>) :
          %7 = "stablehlo.add"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%7) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<256x128xf32>, tensor<f32>) -> tensor<256xf32>
    %9 = "stablehlo.broadcast_in_dim"(%5) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %10 = "stablehlo.multiply"(%8, %9) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %11 = "stablehlo.broadcast_in_dim"(%10) { broadcast_dimensions = array<i64: 0> } : (tensor<256xf32>) -> tensor<256x128xf32>
    %12 = "stablehlo.subtract"(%4, %11) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %13 = "stablehlo.multiply"(%12, %12) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %14 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %16 = "stablehlo.reduce"(%13, %14) ({
      ^reductionFn(%arg2: tensor<f32>, %arg3: tensor<f32>) :
          %15 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%15) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<256x128xf32>, tensor<f32>) -> tensor<256xf32>
    %17 = "stablehlo.broadcast_in_dim"(%5) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %18 = "stablehlo.multiply"(%16, %17) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %19 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %20 = "stablehlo.broadcast_in_dim"(%19) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %21 = "stablehlo.add"(%18, %20) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %22 = "stablehlo.rsqrt"(%21) : (tensor<256xf32>) -> tensor<256xf32>
    %23 = "stablehlo.broadcast_in_dim"(%22) { broadcast_dimensions = array<i64: 0> } : (tensor<256xf32>) -> tensor<256x128xf32>
    %24 = "stablehlo.multiply"(%12, %23) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %25 = "stablehlo.broadcast_in_dim"(%ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %26 = "stablehlo.multiply"(%24, %25) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %27 = "stablehlo.broadcast_in_dim"(%ln1_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %28 = "stablehlo.add"(%26, %27) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %29 = "stablehlo.dot_general"(%28, %wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<256x128xf32>, tensor<128x128xf32>) -> tensor<256x128xf32>
    %30 = "stablehlo.reshape"(%29) : (tensor<256x128xf32>) -> tensor<8x32x4x32xf32>
    %31 = "stablehlo.transpose"(%30) { permutation = array<i64: 0, 2, 1, 3> } : (tensor<8x32x4x32xf32>) -> tensor<8x4x32x32xf32>
    %32 = "stablehlo.dot_general"(%28, %wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<256x128xf32>, tensor<128x128xf32>) -> tensor<256x128xf32>
    %33 = "stablehlo.reshape"(%32) : (tensor<256x128xf32>) -> tensor<8x32x4x32xf32>
    %34 = "stablehlo.transpose"(%33) { permutation = array<i64: 0, 2, 1, 3> } : (tensor<8x32x4x32xf32>) -> tensor<8x4x32x32xf32>
    %35 = "stablehlo.dot_general"(%28, %wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<256x128xf32>, tensor<128x128xf32>) -> tensor<256x128xf32>
    %36 = "stablehlo.reshape"(%35) : (tensor<256x128xf32>) -> tensor<8x32x4x32xf32>
    %37 = "stablehlo.transpose"(%36) { permutation = array<i64: 0, 2, 1, 3> } : (tensor<8x32x4x32xf32>) -> tensor<8x4x32x32xf32>
    %38 = "stablehlo.dot_general"(%31, %34) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0, 1],
  rhs_batching_dimensions = [0, 1],
  lhs_contracting_dimensions = [3],
  rhs_contracting_dimensions = [3]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x4x32x32xf32>, tensor<8x4x32x32xf32>) -> tensor<8x4x32x32xf32>
    %39 = "stablehlo.constant"() { value = dense<0.1767766922712326> : tensor<f32> } : () -> tensor<f32>
    %40 = "stablehlo.broadcast_in_dim"(%39) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x4x32x32xf32>
    %41 = "stablehlo.multiply"(%38, %40) : (tensor<8x4x32x32xf32>, tensor<8x4x32x32xf32>) -> tensor<8x4x32x32xf32>
    %42 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %44 = "stablehlo.reduce"(%41, %42) ({
      ^reductionFn(%arg4: tensor<f32>, %arg5: tensor<f32>) :
          %43 = "stablehlo.maximum"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%43) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 3> } : (tensor<8x4x32x32xf32>, tensor<f32>) -> tensor<8x4x32xf32>
    %45 = "stablehlo.broadcast_in_dim"(%44) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<8x4x32xf32>) -> tensor<8x4x32x32xf32>
    %46 = "stablehlo.subtract"(%41, %45) : (tensor<8x4x32x32xf32>, tensor<8x4x32x32xf32>) -> tensor<8x4x32x32xf32>
    %47 = "stablehlo.exponential"(%46) : (tensor<8x4x32x32xf32>) -> tensor<8x4x32x32xf32>
    %48 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %50 = "stablehlo.reduce"(%47, %48) ({
      ^reductionFn(%arg6: tensor<f32>, %arg7: tensor<f32>) :
          %49 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%49) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 3> } : (tensor<8x4x32x32xf32>, tensor<f32>) -> tensor<8x4x32xf32>
    %51 = "stablehlo.broadcast_in_dim"(%50) { broadcast_dimensions = array<i64: 0, 1, 2> } : (tensor<8x4x32xf32>) -> tensor<8x4x32x32xf32>
    %52 = "stablehlo.divide"(%47, %51) : (tensor<8x4x32x32xf32>, tensor<8x4x32x32xf32>) -> tensor<8x4x32x32xf32>
    %53 = "stablehlo.dot_general"(%52, %37) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0, 1],
  rhs_batching_dimensions = [0, 1],
  lhs_contracting_dimensions = [3],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x4x32x32xf32>, tensor<8x4x32x32xf32>) -> tensor<8x4x32x32xf32>
    %54 = "stablehlo.transpose"(%53) { permutation = array<i64: 0, 2, 1, 3> } : (tensor<8x4x32x32xf32>) -> tensor<8x32x4x32xf32>
    %55 = "stablehlo.reshape"(%54) : (tensor<8x32x4x32xf32>) -> tensor<256x128xf32>
    %56 = "stablehlo.dot_general"(%55, %wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<256x128xf32>, tensor<128x128xf32>) -> tensor<256x128xf32>
    %57 = "stablehlo.add"(%4, %56) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %58 = "stablehlo.constant"() { value = dense<0.0078125> : tensor<f32> } : () -> tensor<f32>
    %59 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %61 = "stablehlo.reduce"(%57, %59) ({
      ^reductionFn(%arg8: tensor<f32>, %arg9: tensor<f32>) :
          %60 = "stablehlo.add"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%60) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<256x128xf32>, tensor<f32>) -> tensor<256xf32>
    %62 = "stablehlo.broadcast_in_dim"(%58) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %63 = "stablehlo.multiply"(%61, %62) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %64 = "stablehlo.broadcast_in_dim"(%63) { broadcast_dimensions = array<i64: 0> } : (tensor<256xf32>) -> tensor<256x128xf32>
    %65 = "stablehlo.subtract"(%57, %64) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %66 = "stablehlo.multiply"(%65, %65) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %67 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %69 = "stablehlo.reduce"(%66, %67) ({
      ^reductionFn(%arg10: tensor<f32>, %arg11: tensor<f32>) :
          %68 = "stablehlo.add"(%arg10, %arg11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%68) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<256x128xf32>, tensor<f32>) -> tensor<256xf32>
    %70 = "stablehlo.broadcast_in_dim"(%58) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %71 = "stablehlo.multiply"(%69, %70) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %72 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %73 = "stablehlo.broadcast_in_dim"(%72) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %74 = "stablehlo.add"(%71, %73) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %75 = "stablehlo.rsqrt"(%74) : (tensor<256xf32>) -> tensor<256xf32>
    %76 = "stablehlo.broadcast_in_dim"(%75) { broadcast_dimensions = array<i64: 0> } : (tensor<256xf32>) -> tensor<256x128xf32>
    %77 = "stablehlo.multiply"(%65, %76) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %78 = "stablehlo.broadcast_in_dim"(%ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %79 = "stablehlo.multiply"(%77, %78) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %80 = "stablehlo.broadcast_in_dim"(%ln2_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %81 = "stablehlo.add"(%79, %80) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %82 = "stablehlo.dot_general"(%81, %w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<256x128xf32>, tensor<128x512xf32>) -> tensor<256x512xf32>
    %83 = "stablehlo.broadcast_in_dim"(%b1) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<256x512xf32>
    %84 = "stablehlo.add"(%82, %83) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %85 = "stablehlo.multiply"(%84, %84) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %86 = "stablehlo.multiply"(%85, %84) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %87 = "stablehlo.constant"() { value = dense<0.044714998453855515> : tensor<f32> } : () -> tensor<f32>
    %88 = "stablehlo.broadcast_in_dim"(%87) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x512xf32>
    %89 = "stablehlo.multiply"(%86, %88) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %90 = "stablehlo.add"(%84, %89) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %91 = "stablehlo.constant"() { value = dense<0.7978845834732056> : tensor<f32> } : () -> tensor<f32>
    %92 = "stablehlo.broadcast_in_dim"(%91) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x512xf32>
    %93 = "stablehlo.multiply"(%90, %92) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %94 = "stablehlo.constant"() { value = dense<0.5> : tensor<f32> } : () -> tensor<f32>
    %95 = "stablehlo.broadcast_in_dim"(%94) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x512xf32>
    %96 = "stablehlo.multiply"(%84, %95) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %97 = "stablehlo.constant"() { value = dense<1.0> : tensor<f32> } : () -> tensor<f32>
    %98 = "stablehlo.broadcast_in_dim"(%97) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256x512xf32>
    %99 = "stablehlo.tanh"(%93) : (tensor<256x512xf32>) -> tensor<256x512xf32>
    %100 = "stablehlo.add"(%98, %99) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %101 = "stablehlo.multiply"(%96, %100) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
    %102 = "stablehlo.dot_general"(%101, %w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<256x512xf32>, tensor<512x128xf32>) -> tensor<256x128xf32>
    %103 = "stablehlo.broadcast_in_dim"(%b2) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %104 = "stablehlo.add"(%102, %103) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %105 = "stablehlo.add"(%57, %104) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %106 = "stablehlo.constant"() { value = dense<0.0078125> : tensor<f32> } : () -> tensor<f32>
    %107 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %109 = "stablehlo.reduce"(%105, %107) ({
      ^reductionFn(%arg12: tensor<f32>, %arg13: tensor<f32>) :
          %108 = "stablehlo.add"(%arg12, %arg13) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%108) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<256x128xf32>, tensor<f32>) -> tensor<256xf32>
    %110 = "stablehlo.broadcast_in_dim"(%106) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %111 = "stablehlo.multiply"(%109, %110) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %112 = "stablehlo.broadcast_in_dim"(%111) { broadcast_dimensions = array<i64: 0> } : (tensor<256xf32>) -> tensor<256x128xf32>
    %113 = "stablehlo.subtract"(%105, %112) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %114 = "stablehlo.multiply"(%113, %113) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %115 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %117 = "stablehlo.reduce"(%114, %115) ({
      ^reductionFn(%arg14: tensor<f32>, %arg15: tensor<f32>) :
          %116 = "stablehlo.add"(%arg14, %arg15) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%116) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<256x128xf32>, tensor<f32>) -> tensor<256xf32>
    %118 = "stablehlo.broadcast_in_dim"(%106) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %119 = "stablehlo.multiply"(%117, %118) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %120 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %121 = "stablehlo.broadcast_in_dim"(%120) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<256xf32>
    %122 = "stablehlo.add"(%119, %121) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %123 = "stablehlo.rsqrt"(%122) : (tensor<256xf32>) -> tensor<256xf32>
    %124 = "stablehlo.broadcast_in_dim"(%123) { broadcast_dimensions = array<i64: 0> } : (tensor<256xf32>) -> tensor<256x128xf32>
    %125 = "stablehlo.multiply"(%113, %124) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %126 = "stablehlo.broadcast_in_dim"(%lnf_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %127 = "stablehlo.multiply"(%125, %126) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %128 = "stablehlo.broadcast_in_dim"(%lnf_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<128xf32>) -> tensor<256x128xf32>
    %129 = "stablehlo.add"(%127, %128) : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %130 = "stablehlo.reshape"(%129) : (tensor<256x128xf32>) -> tensor<8x32x128xf32>
    %131 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %133 = "stablehlo.reduce"(%130, %131) ({
      ^reductionFn(%arg16: tensor<f32>, %arg17: tensor<f32>) :
          %132 = "stablehlo.add"(%arg16, %arg17) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%132) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<8x32x128xf32>, tensor<f32>) -> tensor<8x128xf32>
    %134 = "stablehlo.constant"() { value = dense<0.03125> : tensor<f32> } : () -> tensor<f32>
    %135 = "stablehlo.broadcast_in_dim"(%134) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x128xf32>
    %136 = "stablehlo.multiply"(%133, %135) : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
    "stablehlo.return"(%136) : (tensor<8x128xf32>) -> ()
  }
}
