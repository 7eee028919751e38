module @transformer4l {
  func.func @main(%x: tensor<512x512xf32>, %l0_ln1_gamma: tensor<512xf32>, %l0_ln1_beta: tensor<512xf32>, %l0_wq: tensor<512x512xf32>, %l0_wk: tensor<512x512xf32>, %l0_wv: tensor<512x512xf32>, %l0_wo: tensor<512x512xf32>, %l0_ln2_gamma: tensor<512xf32>, %l0_ln2_beta: tensor<512xf32>, %l0_w1: tensor<512x2048xf32>, %l0_b1: tensor<2048xf32>, %l0_w2: tensor<2048x512xf32>, %l0_b2: tensor<512xf32>, %l1_ln1_gamma: tensor<512xf32>, %l1_ln1_beta: tensor<512xf32>, %l1_wq: tensor<512x512xf32>, %l1_wk: tensor<512x512xf32>, %l1_wv: tensor<512x512xf32>, %l1_wo: tensor<512x512xf32>, %l1_ln2_gamma: tensor<512xf32>, %l1_ln2_beta: tensor<512xf32>, %l1_w1: tensor<512x2048xf32>, %l1_b1: tensor<2048xf32>, %l1_w2: tensor<2048x512xf32>, %l1_b2: tensor<512xf32>, %l2_ln1_gamma: tensor<512xf32>, %l2_ln1_beta: tensor<512xf32>, %l2_wq: tensor<512x512xf32>, %l2_wk: tensor<512x512xf32>, %l2_wv: tensor<512x512xf32>, %l2_wo: tensor<512x512xf32>, %l2_ln2_gamma: tensor<512xf32>, %l2_ln2_beta: tensor<512xf32>, %l2_w1: tensor<512x2048xf32>, %l2_b1: tensor<2048xf32>, %l2_w2: tensor<2048x512xf32>, %l2_b2: tensor<512xf32>, %l3_ln1_gamma: tensor<512xf32>, %l3_ln1_beta: tensor<512xf32>, %l3_wq: tensor<512x512xf32>, %l3_wk: tensor<512x512xf32>, %l3_wv: tensor<512x512xf32>, %l3_wo: tensor<512x512xf32>, %l3_ln2_gamma: tensor<512xf32>, %l3_ln2_beta: tensor<512xf32>, %l3_w1: tensor<512x2048xf32>, %l3_b1: tensor<2048xf32>, %l3_w2: tensor<2048x512xf32>, %l3_b2: tensor<512xf32>) -> (tensor<f32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>) {
    %0 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %1 = "stablehlo.broadcast_in_dim"(%0) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %2 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %4 = "stablehlo.reduce"(%x, %2) ({
      ^reductionFn(%arg0: tensor<f32>, %arg1: tensor<f32>) :
          %3 = "stablehlo.add"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%3) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %5 = "stablehlo.multiply"(%4, %1) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %6 = "stablehlo.broadcast_in_dim"(%5) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %7 = "stablehlo.subtract"(%x, %6) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %8 = "stablehlo.multiply"(%7, %7) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %9 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %11 = "stablehlo.reduce"(%8, %9) ({
      ^reductionFn(%arg2: tensor<f32>, %arg3: tensor<f32>) :
          %10 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%10) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %12 = "stablehlo.multiply"(%11, %1) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %13 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %14 = "stablehlo.broadcast_in_dim"(%13) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %15 = "stablehlo.add"(%12, %14) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %16 = "stablehlo.rsqrt"(%15) : (tensor<512xf32>) -> tensor<512xf32>
    %17 = "stablehlo.broadcast_in_dim"(%16) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %18 = "stablehlo.multiply"(%7, %17) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %19 = "stablehlo.broadcast_in_dim"(%l0_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %20 = "stablehlo.multiply"(%18, %19) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %21 = "stablehlo.broadcast_in_dim"(%l0_ln1_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %22 = "stablehlo.add"(%20, %21) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %23 = "stablehlo.dot_general"(%22, %l0_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %24 = "stablehlo.reshape"(%23) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %25 = "stablehlo.transpose"(%24) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %26 = "stablehlo.dot_general"(%22, %l0_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %27 = "stablehlo.reshape"(%26) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %28 = "stablehlo.transpose"(%27) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %29 = "stablehlo.dot_general"(%22, %l0_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %30 = "stablehlo.reshape"(%29) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %31 = "stablehlo.transpose"(%30) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %32 = "stablehlo.dot_general"(%25, %28) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %33 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %34 = "stablehlo.broadcast_in_dim"(%33) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %35 = "stablehlo.multiply"(%32, %34) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %36 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %38 = "stablehlo.reduce"(%35, %36) ({
      ^reductionFn(%arg4: tensor<f32>, %arg5: tensor<f32>) :
          %37 = "stablehlo.maximum"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%37) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %39 = "stablehlo.broadcast_in_dim"(%38) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %40 = "stablehlo.subtract"(%35, %39) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %41 = "stablehlo.exponential"(%40) : (tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %42 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %44 = "stablehlo.reduce"(%41, %42) ({
      ^reductionFn(%arg6: tensor<f32>, %arg7: tensor<f32>) :
          %43 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%43) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %45 = "stablehlo.broadcast_in_dim"(%44) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %46 = "stablehlo.divide"(%41, %45) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %47 = "stablehlo.dot_general"(%46, %31) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %48 = "stablehlo.transpose"(%47) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %49 = "stablehlo.reshape"(%48) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %50 = "stablehlo.dot_general"(%49, %l0_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %51 = "stablehlo.add"(%x, %50) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %52 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %53 = "stablehlo.broadcast_in_dim"(%52) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %54 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %56 = "stablehlo.reduce"(%51, %54) ({
      ^reductionFn(%arg8: tensor<f32>, %arg9: tensor<f32>) :
          %55 = "stablehlo.add"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%55) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %57 = "stablehlo.multiply"(%56, %53) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %58 = "stablehlo.broadcast_in_dim"(%57) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %59 = "stablehlo.subtract"(%51, %58) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %60 = "stablehlo.multiply"(%59, %59) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %61 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %63 = "stablehlo.reduce"(%60, %61) ({
      ^reductionFn(%arg10: tensor<f32>, %arg11: tensor<f32>) :
          %62 = "stablehlo.add"(%arg10, %arg11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%62) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %64 = "stablehlo.multiply"(%63, %53) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %65 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %66 = "stablehlo.broadcast_in_dim"(%65) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %67 = "stablehlo.add"(%64, %66) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %68 = "stablehlo.rsqrt"(%67) : (tensor<512xf32>) -> tensor<512xf32>
    %69 = "stablehlo.broadcast_in_dim"(%68) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %70 = "stablehlo.multiply"(%59, %69) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %71 = "stablehlo.broadcast_in_dim"(%l0_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %72 = "stablehlo.multiply"(%70, %71) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %73 = "stablehlo.broadcast_in_dim"(%l0_ln2_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %74 = "stablehlo.add"(%72, %73) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %75 = "stablehlo.dot_general"(%74, %l0_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %76 = "stablehlo.broadcast_in_dim"(%l0_b1) { broadcast_dimensions = array<i64: 1> } : (tensor<2048xf32>) -> tensor<512x2048xf32>
    %77 = "stablehlo.add"(%75, %76) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %78 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %79 = "stablehlo.broadcast_in_dim"(%78) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %80 = "stablehlo.maximum"(%77, %79) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %81 = "stablehlo.dot_general"(%80, %l0_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<2048x512xf32>) -> tensor<512x512xf32>
    %82 = "stablehlo.broadcast_in_dim"(%l0_b2) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %83 = "stablehlo.add"(%81, %82) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %84 = "stablehlo.add"(%51, %83) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %85 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %86 = "stablehlo.broadcast_in_dim"(%85) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %87 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %89 = "stablehlo.reduce"(%84, %87) ({
      ^reductionFn(%arg12: tensor<f32>, %arg13: tensor<f32>) :
          %88 = "stablehlo.add"(%arg12, %arg13) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%88) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %90 = "stablehlo.multiply"(%89, %86) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %91 = "stablehlo.broadcast_in_dim"(%90) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %92 = "stablehlo.subtract"(%84, %91) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %93 = "stablehlo.multiply"(%92, %92) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %94 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %96 = "stablehlo.reduce"(%93, %94) ({
      ^reductionFn(%arg14: tensor<f32>, %arg15: tensor<f32>) :
          %95 = "stablehlo.add"(%arg14, %arg15) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%95) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %97 = "stablehlo.multiply"(%96, %86) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %98 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %99 = "stablehlo.broadcast_in_dim"(%98) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %100 = "stablehlo.add"(%97, %99) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %101 = "stablehlo.rsqrt"(%100) : (tensor<512xf32>) -> tensor<512xf32>
    %102 = "stablehlo.broadcast_in_dim"(%101) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %103 = "stablehlo.multiply"(%92, %102) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %104 = "stablehlo.broadcast_in_dim"(%l1_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %105 = "stablehlo.multiply"(%103, %104) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %106 = "stablehlo.broadcast_in_dim"(%l1_ln1_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %107 = "stablehlo.add"(%105, %106) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %108 = "stablehlo.dot_general"(%107, %l1_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %109 = "stablehlo.reshape"(%108) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %110 = "stablehlo.transpose"(%109) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %111 = "stablehlo.dot_general"(%107, %l1_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %112 = "stablehlo.reshape"(%111) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %113 = "stablehlo.transpose"(%112) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %114 = "stablehlo.dot_general"(%107, %l1_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %115 = "stablehlo.reshape"(%114) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %116 = "stablehlo.transpose"(%115) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %117 = "stablehlo.dot_general"(%110, %113) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %118 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %119 = "stablehlo.broadcast_in_dim"(%118) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %120 = "stablehlo.multiply"(%117, %119) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %121 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %123 = "stablehlo.reduce"(%120, %121) ({
      ^reductionFn(%arg16: tensor<f32>, %arg17: tensor<f32>) :
          %122 = "stablehlo.maximum"(%arg16, %arg17) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%122) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %124 = "stablehlo.broadcast_in_dim"(%123) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %125 = "stablehlo.subtract"(%120, %124) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %126 = "stablehlo.exponential"(%125) : (tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %127 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %129 = "stablehlo.reduce"(%126, %127) ({
      ^reductionFn(%arg18: tensor<f32>, %arg19: tensor<f32>) :
          %128 = "stablehlo.add"(%arg18, %arg19) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%128) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %130 = "stablehlo.broadcast_in_dim"(%129) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %131 = "stablehlo.divide"(%126, %130) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %132 = "stablehlo.dot_general"(%131, %116) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %133 = "stablehlo.transpose"(%132) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %134 = "stablehlo.reshape"(%133) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %135 = "stablehlo.dot_general"(%134, %l1_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %136 = "stablehlo.add"(%84, %135) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %137 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %138 = "stablehlo.broadcast_in_dim"(%137) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %139 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %141 = "stablehlo.reduce"(%136, %139) ({
      ^reductionFn(%arg20: tensor<f32>, %arg21: tensor<f32>) :
          %140 = "stablehlo.add"(%arg20, %arg21) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%140) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %142 = "stablehlo.multiply"(%141, %138) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %143 = "stablehlo.broadcast_in_dim"(%142) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %144 = "stablehlo.subtract"(%136, %143) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %145 = "stablehlo.multiply"(%144, %144) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %146 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %148 = "stablehlo.reduce"(%145, %146) ({
      ^reductionFn(%arg22: tensor<f32>, %arg23: tensor<f32>) :
          %147 = "stablehlo.add"(%arg22, %arg23) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%147) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %149 = "stablehlo.multiply"(%148, %138) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %150 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %151 = "stablehlo.broadcast_in_dim"(%150) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %152 = "stablehlo.add"(%149, %151) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %153 = "stablehlo.rsqrt"(%152) : (tensor<512xf32>) -> tensor<512xf32>
    %154 = "stablehlo.broadcast_in_dim"(%153) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %155 = "stablehlo.multiply"(%144, %154) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %156 = "stablehlo.broadcast_in_dim"(%l1_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %157 = "stablehlo.multiply"(%155, %156) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %158 = "stablehlo.broadcast_in_dim"(%l1_ln2_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %159 = "stablehlo.add"(%157, %158) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %160 = "stablehlo.dot_general"(%159, %l1_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %161 = "stablehlo.broadcast_in_dim"(%l1_b1) { broadcast_dimensions = array<i64: 1> } : (tensor<2048xf32>) -> tensor<512x2048xf32>
    %162 = "stablehlo.add"(%160, %161) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %163 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %164 = "stablehlo.broadcast_in_dim"(%163) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %165 = "stablehlo.maximum"(%162, %164) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %166 = "stablehlo.dot_general"(%165, %l1_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<2048x512xf32>) -> tensor<512x512xf32>
    %167 = "stablehlo.broadcast_in_dim"(%l1_b2) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %168 = "stablehlo.add"(%166, %167) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %169 = "stablehlo.add"(%136, %168) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %170 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %171 = "stablehlo.broadcast_in_dim"(%170) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %172 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %174 = "stablehlo.reduce"(%169, %172) ({
      ^reductionFn(%arg24: tensor<f32>, %arg25: tensor<f32>) :
          %173 = "stablehlo.add"(%arg24, %arg25) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%173) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %175 = "stablehlo.multiply"(%174, %171) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %176 = "stablehlo.broadcast_in_dim"(%175) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %177 = "stablehlo.subtract"(%169, %176) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %178 = "stablehlo.multiply"(%177, %177) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %179 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %181 = "stablehlo.reduce"(%178, %179) ({
      ^reductionFn(%arg26: tensor<f32>, %arg27: tensor<f32>) :
          %180 = "stablehlo.add"(%arg26, %arg27) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%180) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %182 = "stablehlo.multiply"(%181, %171) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %183 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %184 = "stablehlo.broadcast_in_dim"(%183) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %185 = "stablehlo.add"(%182, %184) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %186 = "stablehlo.rsqrt"(%185) : (tensor<512xf32>) -> tensor<512xf32>
    %187 = "stablehlo.broadcast_in_dim"(%186) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %188 = "stablehlo.multiply"(%177, %187) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %189 = "stablehlo.broadcast_in_dim"(%l2_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %190 = "stablehlo.multiply"(%188, %189) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %191 = "stablehlo.broadcast_in_dim"(%l2_ln1_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %192 = "stablehlo.add"(%190, %191) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %193 = "stablehlo.dot_general"(%192, %l2_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %194 = "stablehlo.reshape"(%193) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %195 = "stablehlo.transpose"(%194) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %196 = "stablehlo.dot_general"(%192, %l2_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %197 = "stablehlo.reshape"(%196) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %198 = "stablehlo.transpose"(%197) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %199 = "stablehlo.dot_general"(%192, %l2_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %200 = "stablehlo.reshape"(%199) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %201 = "stablehlo.transpose"(%200) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %202 = "stablehlo.dot_general"(%195, %198) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %203 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %204 = "stablehlo.broadcast_in_dim"(%203) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %205 = "stablehlo.multiply"(%202, %204) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %206 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %208 = "stablehlo.reduce"(%205, %206) ({
      ^reductionFn(%arg28: tensor<f32>, %arg29: tensor<f32>) :
          %207 = "stablehlo.maximum"(%arg28, %arg29) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%207) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %209 = "stablehlo.broadcast_in_dim"(%208) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %210 = "stablehlo.subtract"(%205, %209) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %211 = "stablehlo.exponential"(%210) : (tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %212 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %214 = "stablehlo.reduce"(%211, %212) ({
      ^reductionFn(%arg30: tensor<f32>, %arg31: tensor<f32>) :
          %213 = "stablehlo.add"(%arg30, %arg31) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%213) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %215 = "stablehlo.broadcast_in_dim"(%214) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %216 = "stablehlo.divide"(%211, %215) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %217 = "stablehlo.dot_general"(%216, %201) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %218 = "stablehlo.transpose"(%217) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %219 = "stablehlo.reshape"(%218) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %220 = "stablehlo.dot_general"(%219, %l2_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %221 = "stablehlo.add"(%169, %220) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %222 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %223 = "stablehlo.broadcast_in_dim"(%222) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %224 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %226 = "stablehlo.reduce"(%221, %224) ({
      ^reductionFn(%arg32: tensor<f32>, %arg33: tensor<f32>) :
          %225 = "stablehlo.add"(%arg32, %arg33) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%225) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %227 = "stablehlo.multiply"(%226, %223) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %228 = "stablehlo.broadcast_in_dim"(%227) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %229 = "stablehlo.subtract"(%221, %228) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %230 = "stablehlo.multiply"(%229, %229) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %231 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %233 = "stablehlo.reduce"(%230, %231) ({
      ^reductionFn(%arg34: tensor<f32>, %arg35: tensor<f32>) :
          %232 = "stablehlo.add"(%arg34, %arg35) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%232) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %234 = "stablehlo.multiply"(%233, %223) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %235 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %236 = "stablehlo.broadcast_in_dim"(%235) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %237 = "stablehlo.add"(%234, %236) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %238 = "stablehlo.rsqrt"(%237) : (tensor<512xf32>) -> tensor<512xf32>
    %239 = "stablehlo.broadcast_in_dim"(%238) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %240 = "stablehlo.multiply"(%229, %239) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %241 = "stablehlo.broadcast_in_dim"(%l2_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %242 = "stablehlo.multiply"(%240, %241) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %243 = "stablehlo.broadcast_in_dim"(%l2_ln2_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %244 = "stablehlo.add"(%242, %243) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %245 = "stablehlo.dot_general"(%244, %l2_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %246 = "stablehlo.broadcast_in_dim"(%l2_b1) { broadcast_dimensions = array<i64: 1> } : (tensor<2048xf32>) -> tensor<512x2048xf32>
    %247 = "stablehlo.add"(%245, %246) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %248 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %249 = "stablehlo.broadcast_in_dim"(%248) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %250 = "stablehlo.maximum"(%247, %249) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %251 = "stablehlo.dot_general"(%250, %l2_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<2048x512xf32>) -> tensor<512x512xf32>
    %252 = "stablehlo.broadcast_in_dim"(%l2_b2) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %253 = "stablehlo.add"(%251, %252) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %254 = "stablehlo.add"(%221, %253) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %255 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %256 = "stablehlo.broadcast_in_dim"(%255) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %257 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %259 = "stablehlo.reduce"(%254, %257) ({
      ^reductionFn(%arg36: tensor<f32>, %arg37: tensor<f32>) :
          %258 = "stablehlo.add"(%arg36, %arg37) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%258) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %260 = "stablehlo.multiply"(%259, %256) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %261 = "stablehlo.broadcast_in_dim"(%260) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %262 = "stablehlo.subtract"(%254, %261) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %263 = "stablehlo.multiply"(%262, %262) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %264 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %266 = "stablehlo.reduce"(%263, %264) ({
      ^reductionFn(%arg38: tensor<f32>, %arg39: tensor<f32>) :
          %265 = "stablehlo.add"(%arg38, %arg39) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%265) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %267 = "stablehlo.multiply"(%266, %256) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %268 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %269 = "stablehlo.broadcast_in_dim"(%268) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %270 = "stablehlo.add"(%267, %269) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %271 = "stablehlo.rsqrt"(%270) : (tensor<512xf32>) -> tensor<512xf32>
    %272 = "stablehlo.broadcast_in_dim"(%271) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %273 = "stablehlo.multiply"(%262, %272) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %274 = "stablehlo.broadcast_in_dim"(%l3_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %275 = "stablehlo.multiply"(%273, %274) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %276 = "stablehlo.broadcast_in_dim"(%l3_ln1_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %277 = "stablehlo.add"(%275, %276) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %278 = "stablehlo.dot_general"(%277, %l3_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %279 = "stablehlo.reshape"(%278) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %280 = "stablehlo.transpose"(%279) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %281 = "stablehlo.dot_general"(%277, %l3_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %282 = "stablehlo.reshape"(%281) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %283 = "stablehlo.transpose"(%282) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %284 = "stablehlo.dot_general"(%277, %l3_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %285 = "stablehlo.reshape"(%284) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %286 = "stablehlo.transpose"(%285) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %287 = "stablehlo.dot_general"(%280, %283) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %288 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %289 = "stablehlo.broadcast_in_dim"(%288) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %290 = "stablehlo.multiply"(%287, %289) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %291 = "stablehlo.constant"() { value = dense<-3.4028234663852886e+38> : tensor<f32> } : () -> tensor<f32>
    %293 = "stablehlo.reduce"(%290, %291) ({
      ^reductionFn(%arg40: tensor<f32>, %arg41: tensor<f32>) :
          %292 = "stablehlo.maximum"(%arg40, %arg41) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%292) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %294 = "stablehlo.broadcast_in_dim"(%293) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %295 = "stablehlo.subtract"(%290, %294) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %296 = "stablehlo.exponential"(%295) : (tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %297 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %299 = "stablehlo.reduce"(%296, %297) ({
      ^reductionFn(%arg42: tensor<f32>, %arg43: tensor<f32>) :
          %298 = "stablehlo.add"(%arg42, %arg43) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%298) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %300 = "stablehlo.broadcast_in_dim"(%299) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %301 = "stablehlo.divide"(%296, %300) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %302 = "stablehlo.dot_general"(%301, %286) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %303 = "stablehlo.transpose"(%302) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %304 = "stablehlo.reshape"(%303) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %305 = "stablehlo.dot_general"(%304, %l3_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %306 = "stablehlo.add"(%254, %305) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %307 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %308 = "stablehlo.broadcast_in_dim"(%307) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %309 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %311 = "stablehlo.reduce"(%306, %309) ({
      ^reductionFn(%arg44: tensor<f32>, %arg45: tensor<f32>) :
          %310 = "stablehlo.add"(%arg44, %arg45) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%310) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %312 = "stablehlo.multiply"(%311, %308) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %313 = "stablehlo.broadcast_in_dim"(%312) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %314 = "stablehlo.subtract"(%306, %313) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %315 = "stablehlo.multiply"(%314, %314) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %316 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %318 = "stablehlo.reduce"(%315, %316) ({
      ^reductionFn(%arg46: tensor<f32>, %arg47: tensor<f32>) :
          %317 = "stablehlo.add"(%arg46, %arg47) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%317) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %319 = "stablehlo.multiply"(%318, %308) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %320 = "stablehlo.constant"() { value = dense<9.999999747378752e-06> : tensor<f32> } : () -> tensor<f32>
    %321 = "stablehlo.broadcast_in_dim"(%320) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %322 = "stablehlo.add"(%319, %321) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %323 = "stablehlo.rsqrt"(%322) : (tensor<512xf32>) -> tensor<512xf32>
    %324 = "stablehlo.broadcast_in_dim"(%323) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %325 = "stablehlo.multiply"(%314, %324) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %326 = "stablehlo.broadcast_in_dim"(%l3_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %327 = "stablehlo.multiply"(%325, %326) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %328 = "stablehlo.broadcast_in_dim"(%l3_ln2_beta) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %329 = "stablehlo.add"(%327, %328) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %330 = "stablehlo.dot_general"(%329, %l3_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %331 = "stablehlo.broadcast_in_dim"(%l3_b1) { broadcast_dimensions = array<i64: 1> } : (tensor<2048xf32>) -> tensor<512x2048xf32>
    %332 = "stablehlo.add"(%330, %331) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %333 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %334 = "stablehlo.broadcast_in_dim"(%333) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %335 = "stablehlo.maximum"(%332, %334) : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %336 = "stablehlo.dot_general"(%335, %l3_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<2048x512xf32>) -> tensor<512x512xf32>
    %337 = "stablehlo.broadcast_in_dim"(%l3_b2) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %338 = "stablehlo.add"(%336, %337) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %339 = "stablehlo.add"(%306, %338) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %340 = "stablehlo.multiply"(%339, %339) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %341 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %343 = "stablehlo.reduce"(%340, %341) ({
      ^reductionFn(%arg48: tensor<f32>, %arg49: tensor<f32>) :
          %342 = "stablehlo.add"(%arg48, %arg49) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%342) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0, 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<f32>
    %344 = "stablehlo.constant"() { value = dense<1.9073486328125e-06> : tensor<f32> } : () -> tensor<f32>
    %345 = "stablehlo.multiply"(%343, %344) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %346 = "stablehlo.constant"() { value = dense<3.814697265625e-06> : tensor<f32> } : () -> tensor<f32>
    %347 = "stablehlo.broadcast_in_dim"(%346) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x512xf32>
    %348 = "stablehlo.multiply"(%339, %347) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %349 = "stablehlo.dot_general"(%335, %348) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x512xf32>) -> tensor<2048x512xf32>
    %350 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %352 = "stablehlo.reduce"(%348, %350) ({
      ^reductionFn(%arg50: tensor<f32>, %arg51: tensor<f32>) :
          %351 = "stablehlo.add"(%arg50, %arg51) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%351) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %353 = "stablehlo.dot_general"(%348, %l3_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<2048x512xf32>) -> tensor<512x2048xf32>
    %354 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %355 = "stablehlo.broadcast_in_dim"(%354) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %356 = "stablehlo.compare"(%332, %355) {
      compare_type = #stablehlo<comparison_type FLOAT>,
      comparison_direction = #stablehlo<comparison_direction GT>
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xi1>
    %357 = "stablehlo.select"(%356, %353, %355) : (tensor<512x2048xi1>, tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %358 = "stablehlo.dot_general"(%329, %357) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %359 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %361 = "stablehlo.reduce"(%357, %359) ({
      ^reductionFn(%arg52: tensor<f32>, %arg53: tensor<f32>) :
          %360 = "stablehlo.add"(%arg52, %arg53) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%360) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x2048xf32>, tensor<f32>) -> tensor<2048xf32>
    %362 = "stablehlo.dot_general"(%357, %l3_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x512xf32>
    %363 = "stablehlo.multiply"(%362, %325) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %364 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %366 = "stablehlo.reduce"(%363, %364) ({
      ^reductionFn(%arg54: tensor<f32>, %arg55: tensor<f32>) :
          %365 = "stablehlo.add"(%arg54, %arg55) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%365) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %367 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %369 = "stablehlo.reduce"(%362, %367) ({
      ^reductionFn(%arg56: tensor<f32>, %arg57: tensor<f32>) :
          %368 = "stablehlo.add"(%arg56, %arg57) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%368) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %370 = "stablehlo.broadcast_in_dim"(%l3_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %371 = "stablehlo.multiply"(%362, %370) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %372 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %373 = "stablehlo.broadcast_in_dim"(%372) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %374 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %376 = "stablehlo.reduce"(%371, %374) ({
      ^reductionFn(%arg58: tensor<f32>, %arg59: tensor<f32>) :
          %375 = "stablehlo.add"(%arg58, %arg59) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%375) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %377 = "stablehlo.multiply"(%376, %373) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %378 = "stablehlo.multiply"(%371, %325) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %379 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %381 = "stablehlo.reduce"(%378, %379) ({
      ^reductionFn(%arg60: tensor<f32>, %arg61: tensor<f32>) :
          %380 = "stablehlo.add"(%arg60, %arg61) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%380) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %382 = "stablehlo.multiply"(%381, %373) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %383 = "stablehlo.broadcast_in_dim"(%377) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %384 = "stablehlo.subtract"(%371, %383) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %385 = "stablehlo.broadcast_in_dim"(%382) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %386 = "stablehlo.multiply"(%325, %385) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %387 = "stablehlo.subtract"(%384, %386) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %388 = "stablehlo.broadcast_in_dim"(%323) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %389 = "stablehlo.multiply"(%387, %388) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %390 = "stablehlo.add"(%348, %389) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %391 = "stablehlo.dot_general"(%304, %390) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %392 = "stablehlo.dot_general"(%390, %l3_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %393 = "stablehlo.reshape"(%392) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %394 = "stablehlo.transpose"(%393) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %395 = "stablehlo.dot_general"(%394, %286) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %396 = "stablehlo.dot_general"(%301, %394) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %397 = "stablehlo.multiply"(%395, %301) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %398 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %400 = "stablehlo.reduce"(%397, %398) ({
      ^reductionFn(%arg62: tensor<f32>, %arg63: tensor<f32>) :
          %399 = "stablehlo.add"(%arg62, %arg63) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%399) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %401 = "stablehlo.broadcast_in_dim"(%400) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %402 = "stablehlo.subtract"(%395, %401) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %403 = "stablehlo.multiply"(%301, %402) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %404 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %405 = "stablehlo.broadcast_in_dim"(%404) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %406 = "stablehlo.multiply"(%403, %405) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %407 = "stablehlo.dot_general"(%406, %283) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %408 = "stablehlo.dot_general"(%406, %280) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %409 = "stablehlo.transpose"(%407) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %410 = "stablehlo.reshape"(%409) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %411 = "stablehlo.dot_general"(%277, %410) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %412 = "stablehlo.dot_general"(%410, %l3_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %413 = "stablehlo.transpose"(%408) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %414 = "stablehlo.reshape"(%413) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %415 = "stablehlo.dot_general"(%277, %414) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %416 = "stablehlo.dot_general"(%414, %l3_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %417 = "stablehlo.add"(%412, %416) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %418 = "stablehlo.transpose"(%396) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %419 = "stablehlo.reshape"(%418) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %420 = "stablehlo.dot_general"(%277, %419) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %421 = "stablehlo.dot_general"(%419, %l3_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %422 = "stablehlo.add"(%417, %421) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %423 = "stablehlo.multiply"(%422, %273) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %424 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %426 = "stablehlo.reduce"(%423, %424) ({
      ^reductionFn(%arg64: tensor<f32>, %arg65: tensor<f32>) :
          %425 = "stablehlo.add"(%arg64, %arg65) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%425) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %427 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %429 = "stablehlo.reduce"(%422, %427) ({
      ^reductionFn(%arg66: tensor<f32>, %arg67: tensor<f32>) :
          %428 = "stablehlo.add"(%arg66, %arg67) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%428) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %430 = "stablehlo.broadcast_in_dim"(%l3_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %431 = "stablehlo.multiply"(%422, %430) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %432 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %433 = "stablehlo.broadcast_in_dim"(%432) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %434 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %436 = "stablehlo.reduce"(%431, %434) ({
      ^reductionFn(%arg68: tensor<f32>, %arg69: tensor<f32>) :
          %435 = "stablehlo.add"(%arg68, %arg69) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%435) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %437 = "stablehlo.multiply"(%436, %433) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %438 = "stablehlo.multiply"(%431, %273) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %439 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %441 = "stablehlo.reduce"(%438, %439) ({
      ^reductionFn(%arg70: tensor<f32>, %arg71: tensor<f32>) :
          %440 = "stablehlo.add"(%arg70, %arg71) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%440) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %442 = "stablehlo.multiply"(%441, %433) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %443 = "stablehlo.broadcast_in_dim"(%437) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %444 = "stablehlo.subtract"(%431, %443) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %445 = "stablehlo.broadcast_in_dim"(%442) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %446 = "stablehlo.multiply"(%273, %445) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %447 = "stablehlo.subtract"(%444, %446) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %448 = "stablehlo.broadcast_in_dim"(%271) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %449 = "stablehlo.multiply"(%447, %448) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %450 = "stablehlo.add"(%390, %449) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %451 = "stablehlo.dot_general"(%250, %450) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x512xf32>) -> tensor<2048x512xf32>
    %452 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %454 = "stablehlo.reduce"(%450, %452) ({
      ^reductionFn(%arg72: tensor<f32>, %arg73: tensor<f32>) :
          %453 = "stablehlo.add"(%arg72, %arg73) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%453) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %455 = "stablehlo.dot_general"(%450, %l2_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<2048x512xf32>) -> tensor<512x2048xf32>
    %456 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %457 = "stablehlo.broadcast_in_dim"(%456) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %458 = "stablehlo.compare"(%247, %457) {
      compare_type = #stablehlo<comparison_type FLOAT>,
      comparison_direction = #stablehlo<comparison_direction GT>
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xi1>
    %459 = "stablehlo.select"(%458, %455, %457) : (tensor<512x2048xi1>, tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %460 = "stablehlo.dot_general"(%244, %459) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %461 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %463 = "stablehlo.reduce"(%459, %461) ({
      ^reductionFn(%arg74: tensor<f32>, %arg75: tensor<f32>) :
          %462 = "stablehlo.add"(%arg74, %arg75) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%462) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x2048xf32>, tensor<f32>) -> tensor<2048xf32>
    %464 = "stablehlo.dot_general"(%459, %l2_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x512xf32>
    %465 = "stablehlo.multiply"(%464, %240) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %466 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %468 = "stablehlo.reduce"(%465, %466) ({
      ^reductionFn(%arg76: tensor<f32>, %arg77: tensor<f32>) :
          %467 = "stablehlo.add"(%arg76, %arg77) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%467) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %469 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %471 = "stablehlo.reduce"(%464, %469) ({
      ^reductionFn(%arg78: tensor<f32>, %arg79: tensor<f32>) :
          %470 = "stablehlo.add"(%arg78, %arg79) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%470) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %472 = "stablehlo.broadcast_in_dim"(%l2_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %473 = "stablehlo.multiply"(%464, %472) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %474 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %475 = "stablehlo.broadcast_in_dim"(%474) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %476 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %478 = "stablehlo.reduce"(%473, %476) ({
      ^reductionFn(%arg80: tensor<f32>, %arg81: tensor<f32>) :
          %477 = "stablehlo.add"(%arg80, %arg81) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%477) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %479 = "stablehlo.multiply"(%478, %475) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %480 = "stablehlo.multiply"(%473, %240) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %481 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %483 = "stablehlo.reduce"(%480, %481) ({
      ^reductionFn(%arg82: tensor<f32>, %arg83: tensor<f32>) :
          %482 = "stablehlo.add"(%arg82, %arg83) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%482) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %484 = "stablehlo.multiply"(%483, %475) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %485 = "stablehlo.broadcast_in_dim"(%479) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %486 = "stablehlo.subtract"(%473, %485) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %487 = "stablehlo.broadcast_in_dim"(%484) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %488 = "stablehlo.multiply"(%240, %487) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %489 = "stablehlo.subtract"(%486, %488) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %490 = "stablehlo.broadcast_in_dim"(%238) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %491 = "stablehlo.multiply"(%489, %490) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %492 = "stablehlo.add"(%450, %491) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %493 = "stablehlo.dot_general"(%219, %492) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %494 = "stablehlo.dot_general"(%492, %l2_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %495 = "stablehlo.reshape"(%494) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %496 = "stablehlo.transpose"(%495) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %497 = "stablehlo.dot_general"(%496, %201) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %498 = "stablehlo.dot_general"(%216, %496) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %499 = "stablehlo.multiply"(%497, %216) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %500 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %502 = "stablehlo.reduce"(%499, %500) ({
      ^reductionFn(%arg84: tensor<f32>, %arg85: tensor<f32>) :
          %501 = "stablehlo.add"(%arg84, %arg85) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%501) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %503 = "stablehlo.broadcast_in_dim"(%502) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %504 = "stablehlo.subtract"(%497, %503) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %505 = "stablehlo.multiply"(%216, %504) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %506 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %507 = "stablehlo.broadcast_in_dim"(%506) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %508 = "stablehlo.multiply"(%505, %507) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %509 = "stablehlo.dot_general"(%508, %198) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %510 = "stablehlo.dot_general"(%508, %195) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %511 = "stablehlo.transpose"(%509) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %512 = "stablehlo.reshape"(%511) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %513 = "stablehlo.dot_general"(%192, %512) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %514 = "stablehlo.dot_general"(%512, %l2_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %515 = "stablehlo.transpose"(%510) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %516 = "stablehlo.reshape"(%515) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %517 = "stablehlo.dot_general"(%192, %516) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %518 = "stablehlo.dot_general"(%516, %l2_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %519 = "stablehlo.add"(%514, %518) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %520 = "stablehlo.transpose"(%498) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %521 = "stablehlo.reshape"(%520) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %522 = "stablehlo.dot_general"(%192, %521) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %523 = "stablehlo.dot_general"(%521, %l2_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %524 = "stablehlo.add"(%519, %523) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %525 = "stablehlo.multiply"(%524, %188) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %526 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %528 = "stablehlo.reduce"(%525, %526) ({
      ^reductionFn(%arg86: tensor<f32>, %arg87: tensor<f32>) :
          %527 = "stablehlo.add"(%arg86, %arg87) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%527) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %529 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %531 = "stablehlo.reduce"(%524, %529) ({
      ^reductionFn(%arg88: tensor<f32>, %arg89: tensor<f32>) :
          %530 = "stablehlo.add"(%arg88, %arg89) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%530) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %532 = "stablehlo.broadcast_in_dim"(%l2_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %533 = "stablehlo.multiply"(%524, %532) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %534 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %535 = "stablehlo.broadcast_in_dim"(%534) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %536 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %538 = "stablehlo.reduce"(%533, %536) ({
      ^reductionFn(%arg90: tensor<f32>, %arg91: tensor<f32>) :
          %537 = "stablehlo.add"(%arg90, %arg91) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%537) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %539 = "stablehlo.multiply"(%538, %535) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %540 = "stablehlo.multiply"(%533, %188) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %541 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %543 = "stablehlo.reduce"(%540, %541) ({
      ^reductionFn(%arg92: tensor<f32>, %arg93: tensor<f32>) :
          %542 = "stablehlo.add"(%arg92, %arg93) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%542) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %544 = "stablehlo.multiply"(%543, %535) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %545 = "stablehlo.broadcast_in_dim"(%539) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %546 = "stablehlo.subtract"(%533, %545) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %547 = "stablehlo.broadcast_in_dim"(%544) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %548 = "stablehlo.multiply"(%188, %547) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %549 = "stablehlo.subtract"(%546, %548) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %550 = "stablehlo.broadcast_in_dim"(%186) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %551 = "stablehlo.multiply"(%549, %550) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %552 = "stablehlo.add"(%492, %551) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %553 = "stablehlo.dot_general"(%165, %552) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x512xf32>) -> tensor<2048x512xf32>
    %554 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %556 = "stablehlo.reduce"(%552, %554) ({
      ^reductionFn(%arg94: tensor<f32>, %arg95: tensor<f32>) :
          %555 = "stablehlo.add"(%arg94, %arg95) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%555) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %557 = "stablehlo.dot_general"(%552, %l1_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<2048x512xf32>) -> tensor<512x2048xf32>
    %558 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %559 = "stablehlo.broadcast_in_dim"(%558) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %560 = "stablehlo.compare"(%162, %559) {
      compare_type = #stablehlo<comparison_type FLOAT>,
      comparison_direction = #stablehlo<comparison_direction GT>
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xi1>
    %561 = "stablehlo.select"(%560, %557, %559) : (tensor<512x2048xi1>, tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %562 = "stablehlo.dot_general"(%159, %561) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %563 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %565 = "stablehlo.reduce"(%561, %563) ({
      ^reductionFn(%arg96: tensor<f32>, %arg97: tensor<f32>) :
          %564 = "stablehlo.add"(%arg96, %arg97) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%564) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x2048xf32>, tensor<f32>) -> tensor<2048xf32>
    %566 = "stablehlo.dot_general"(%561, %l1_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x512xf32>
    %567 = "stablehlo.multiply"(%566, %155) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %568 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %570 = "stablehlo.reduce"(%567, %568) ({
      ^reductionFn(%arg98: tensor<f32>, %arg99: tensor<f32>) :
          %569 = "stablehlo.add"(%arg98, %arg99) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%569) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %571 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %573 = "stablehlo.reduce"(%566, %571) ({
      ^reductionFn(%arg100: tensor<f32>, %arg101: tensor<f32>) :
          %572 = "stablehlo.add"(%arg100, %arg101) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%572) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %574 = "stablehlo.broadcast_in_dim"(%l1_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %575 = "stablehlo.multiply"(%566, %574) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %576 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %577 = "stablehlo.broadcast_in_dim"(%576) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %578 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %580 = "stablehlo.reduce"(%575, %578) ({
      ^reductionFn(%arg102: tensor<f32>, %arg103: tensor<f32>) :
          %579 = "stablehlo.add"(%arg102, %arg103) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%579) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %581 = "stablehlo.multiply"(%580, %577) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %582 = "stablehlo.multiply"(%575, %155) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %583 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %585 = "stablehlo.reduce"(%582, %583) ({
      ^reductionFn(%arg104: tensor<f32>, %arg105: tensor<f32>) :
          %584 = "stablehlo.add"(%arg104, %arg105) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%584) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %586 = "stablehlo.multiply"(%585, %577) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %587 = "stablehlo.broadcast_in_dim"(%581) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %588 = "stablehlo.subtract"(%575, %587) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %589 = "stablehlo.broadcast_in_dim"(%586) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %590 = "stablehlo.multiply"(%155, %589) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %591 = "stablehlo.subtract"(%588, %590) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %592 = "stablehlo.broadcast_in_dim"(%153) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %593 = "stablehlo.multiply"(%591, %592) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %594 = "stablehlo.add"(%552, %593) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %595 = "stablehlo.dot_general"(%134, %594) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %596 = "stablehlo.dot_general"(%594, %l1_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %597 = "stablehlo.reshape"(%596) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %598 = "stablehlo.transpose"(%597) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %599 = "stablehlo.dot_general"(%598, %116) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %600 = "stablehlo.dot_general"(%131, %598) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %601 = "stablehlo.multiply"(%599, %131) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %602 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %604 = "stablehlo.reduce"(%601, %602) ({
      ^reductionFn(%arg106: tensor<f32>, %arg107: tensor<f32>) :
          %603 = "stablehlo.add"(%arg106, %arg107) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%603) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %605 = "stablehlo.broadcast_in_dim"(%604) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %606 = "stablehlo.subtract"(%599, %605) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %607 = "stablehlo.multiply"(%131, %606) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %608 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %609 = "stablehlo.broadcast_in_dim"(%608) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %610 = "stablehlo.multiply"(%607, %609) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %611 = "stablehlo.dot_general"(%610, %113) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %612 = "stablehlo.dot_general"(%610, %110) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %613 = "stablehlo.transpose"(%611) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %614 = "stablehlo.reshape"(%613) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %615 = "stablehlo.dot_general"(%107, %614) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %616 = "stablehlo.dot_general"(%614, %l1_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %617 = "stablehlo.transpose"(%612) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %618 = "stablehlo.reshape"(%617) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %619 = "stablehlo.dot_general"(%107, %618) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %620 = "stablehlo.dot_general"(%618, %l1_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %621 = "stablehlo.add"(%616, %620) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %622 = "stablehlo.transpose"(%600) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %623 = "stablehlo.reshape"(%622) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %624 = "stablehlo.dot_general"(%107, %623) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %625 = "stablehlo.dot_general"(%623, %l1_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %626 = "stablehlo.add"(%621, %625) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %627 = "stablehlo.multiply"(%626, %103) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %628 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %630 = "stablehlo.reduce"(%627, %628) ({
      ^reductionFn(%arg108: tensor<f32>, %arg109: tensor<f32>) :
          %629 = "stablehlo.add"(%arg108, %arg109) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%629) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %631 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %633 = "stablehlo.reduce"(%626, %631) ({
      ^reductionFn(%arg110: tensor<f32>, %arg111: tensor<f32>) :
          %632 = "stablehlo.add"(%arg110, %arg111) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%632) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %634 = "stablehlo.broadcast_in_dim"(%l1_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %635 = "stablehlo.multiply"(%626, %634) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %636 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %637 = "stablehlo.broadcast_in_dim"(%636) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %638 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %640 = "stablehlo.reduce"(%635, %638) ({
      ^reductionFn(%arg112: tensor<f32>, %arg113: tensor<f32>) :
          %639 = "stablehlo.add"(%arg112, %arg113) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%639) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %641 = "stablehlo.multiply"(%640, %637) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %642 = "stablehlo.multiply"(%635, %103) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %643 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %645 = "stablehlo.reduce"(%642, %643) ({
      ^reductionFn(%arg114: tensor<f32>, %arg115: tensor<f32>) :
          %644 = "stablehlo.add"(%arg114, %arg115) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%644) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %646 = "stablehlo.multiply"(%645, %637) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %647 = "stablehlo.broadcast_in_dim"(%641) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %648 = "stablehlo.subtract"(%635, %647) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %649 = "stablehlo.broadcast_in_dim"(%646) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %650 = "stablehlo.multiply"(%103, %649) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %651 = "stablehlo.subtract"(%648, %650) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %652 = "stablehlo.broadcast_in_dim"(%101) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %653 = "stablehlo.multiply"(%651, %652) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %654 = "stablehlo.add"(%594, %653) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %655 = "stablehlo.dot_general"(%80, %654) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x512xf32>) -> tensor<2048x512xf32>
    %656 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %658 = "stablehlo.reduce"(%654, %656) ({
      ^reductionFn(%arg116: tensor<f32>, %arg117: tensor<f32>) :
          %657 = "stablehlo.add"(%arg116, %arg117) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%657) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %659 = "stablehlo.dot_general"(%654, %l0_w2) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<2048x512xf32>) -> tensor<512x2048xf32>
    %660 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %661 = "stablehlo.broadcast_in_dim"(%660) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512x2048xf32>
    %662 = "stablehlo.compare"(%77, %661) {
      compare_type = #stablehlo<comparison_type FLOAT>,
      comparison_direction = #stablehlo<comparison_direction GT>
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xi1>
    %663 = "stablehlo.select"(%662, %659, %661) : (tensor<512x2048xi1>, tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %664 = "stablehlo.dot_general"(%74, %663) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x2048xf32>) -> tensor<512x2048xf32>
    %665 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %667 = "stablehlo.reduce"(%663, %665) ({
      ^reductionFn(%arg118: tensor<f32>, %arg119: tensor<f32>) :
          %666 = "stablehlo.add"(%arg118, %arg119) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%666) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x2048xf32>, tensor<f32>) -> tensor<2048xf32>
    %668 = "stablehlo.dot_general"(%663, %l0_w1) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x2048xf32>, tensor<512x2048xf32>) -> tensor<512x512xf32>
    %669 = "stablehlo.multiply"(%668, %70) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %670 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %672 = "stablehlo.reduce"(%669, %670) ({
      ^reductionFn(%arg120: tensor<f32>, %arg121: tensor<f32>) :
          %671 = "stablehlo.add"(%arg120, %arg121) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%671) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %673 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %675 = "stablehlo.reduce"(%668, %673) ({
      ^reductionFn(%arg122: tensor<f32>, %arg123: tensor<f32>) :
          %674 = "stablehlo.add"(%arg122, %arg123) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%674) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %676 = "stablehlo.broadcast_in_dim"(%l0_ln2_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %677 = "stablehlo.multiply"(%668, %676) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %678 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %679 = "stablehlo.broadcast_in_dim"(%678) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %680 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %682 = "stablehlo.reduce"(%677, %680) ({
      ^reductionFn(%arg124: tensor<f32>, %arg125: tensor<f32>) :
          %681 = "stablehlo.add"(%arg124, %arg125) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%681) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %683 = "stablehlo.multiply"(%682, %679) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %684 = "stablehlo.multiply"(%677, %70) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %685 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %687 = "stablehlo.reduce"(%684, %685) ({
      ^reductionFn(%arg126: tensor<f32>, %arg127: tensor<f32>) :
          %686 = "stablehlo.add"(%arg126, %arg127) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%686) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %688 = "stablehlo.multiply"(%687, %679) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %689 = "stablehlo.broadcast_in_dim"(%683) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %690 = "stablehlo.subtract"(%677, %689) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %691 = "stablehlo.broadcast_in_dim"(%688) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %692 = "stablehlo.multiply"(%70, %691) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %693 = "stablehlo.subtract"(%690, %692) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %694 = "stablehlo.broadcast_in_dim"(%68) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %695 = "stablehlo.multiply"(%693, %694) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %696 = "stablehlo.add"(%654, %695) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %697 = "stablehlo.dot_general"(%49, %696) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %698 = "stablehlo.dot_general"(%696, %l0_wo) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %699 = "stablehlo.reshape"(%698) : (tensor<512x512xf32>) -> tensor<512x8x64xf32>
    %700 = "stablehlo.transpose"(%699) { permutation = array<i64: 1, 0, 2> } : (tensor<512x8x64xf32>) -> tensor<8x512x64xf32>
    %701 = "stablehlo.dot_general"(%700, %31) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [2]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x512x512xf32>
    %702 = "stablehlo.dot_general"(%46, %700) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %703 = "stablehlo.multiply"(%701, %46) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %704 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %706 = "stablehlo.reduce"(%703, %704) ({
      ^reductionFn(%arg128: tensor<f32>, %arg129: tensor<f32>) :
          %705 = "stablehlo.add"(%arg128, %arg129) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%705) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 2> } : (tensor<8x512x512xf32>, tensor<f32>) -> tensor<8x512xf32>
    %707 = "stablehlo.broadcast_in_dim"(%706) { broadcast_dimensions = array<i64: 0, 1> } : (tensor<8x512xf32>) -> tensor<8x512x512xf32>
    %708 = "stablehlo.subtract"(%701, %707) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %709 = "stablehlo.multiply"(%46, %708) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %710 = "stablehlo.constant"() { value = dense<0.125> : tensor<f32> } : () -> tensor<f32>
    %711 = "stablehlo.broadcast_in_dim"(%710) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<8x512x512xf32>
    %712 = "stablehlo.multiply"(%709, %711) : (tensor<8x512x512xf32>, tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %713 = "stablehlo.dot_general"(%712, %28) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [2],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %714 = "stablehlo.dot_general"(%712, %25) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [0],
  rhs_batching_dimensions = [0],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %715 = "stablehlo.transpose"(%713) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %716 = "stablehlo.reshape"(%715) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %717 = "stablehlo.dot_general"(%22, %716) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %718 = "stablehlo.dot_general"(%716, %l0_wq) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %719 = "stablehlo.transpose"(%714) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %720 = "stablehlo.reshape"(%719) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %721 = "stablehlo.dot_general"(%22, %720) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %722 = "stablehlo.dot_general"(%720, %l0_wk) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %723 = "stablehlo.add"(%718, %722) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %724 = "stablehlo.transpose"(%702) { permutation = array<i64: 1, 0, 2> } : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
    %725 = "stablehlo.reshape"(%724) : (tensor<512x8x64xf32>) -> tensor<512x512xf32>
    %726 = "stablehlo.dot_general"(%22, %725) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [0],
  rhs_contracting_dimensions = [0]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %727 = "stablehlo.dot_general"(%725, %l0_wv) {
      dot_dimension_numbers = #stablehlo.dot<
  lhs_batching_dimensions = [],
  rhs_batching_dimensions = [],
  lhs_contracting_dimensions = [1],
  rhs_contracting_dimensions = [1]
>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %728 = "stablehlo.add"(%723, %727) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %729 = "stablehlo.multiply"(%728, %18) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %730 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %732 = "stablehlo.reduce"(%729, %730) ({
      ^reductionFn(%arg130: tensor<f32>, %arg131: tensor<f32>) :
          %731 = "stablehlo.add"(%arg130, %arg131) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%731) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %733 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %735 = "stablehlo.reduce"(%728, %733) ({
      ^reductionFn(%arg132: tensor<f32>, %arg133: tensor<f32>) :
          %734 = "stablehlo.add"(%arg132, %arg133) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%734) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %736 = "stablehlo.broadcast_in_dim"(%l0_ln1_gamma) { broadcast_dimensions = array<i64: 1> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %737 = "stablehlo.multiply"(%728, %736) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %738 = "stablehlo.constant"() { value = dense<0.001953125> : tensor<f32> } : () -> tensor<f32>
    %739 = "stablehlo.broadcast_in_dim"(%738) { broadcast_dimensions = array<i64> } : (tensor<f32>) -> tensor<512xf32>
    %740 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %742 = "stablehlo.reduce"(%737, %740) ({
      ^reductionFn(%arg134: tensor<f32>, %arg135: tensor<f32>) :
          %741 = "stablehlo.add"(%arg134, %arg135) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%741) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %743 = "stablehlo.multiply"(%742, %739) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %744 = "stablehlo.multiply"(%737, %18) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %745 = "stablehlo.constant"() { value = dense<0.0> : tensor<f32> } : () -> tensor<f32>
    %747 = "stablehlo.reduce"(%744, %745) ({
      ^reductionFn(%arg136: tensor<f32>, %arg137: tensor<f32>) :
          %746 = "stablehlo.add"(%arg136, %arg137) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%746) : (tensor<f32>) -> ()
    }) { dimensions = array<i64: 1> } : (tensor<512x512xf32>, tensor<f32>) -> tensor<512xf32>
    %748 = "stablehlo.multiply"(%747, %739) : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
    %749 = "stablehlo.broadcast_in_dim"(%743) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %750 = "stablehlo.subtract"(%737, %749) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %751 = "stablehlo.broadcast_in_dim"(%748) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %752 = "stablehlo.multiply"(%18, %751) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %753 = "stablehlo.subtract"(%750, %752) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %754 = "stablehlo.broadcast_in_dim"(%16) { broadcast_dimensions = array<i64: 0> } : (tensor<512xf32>) -> tensor<512x512xf32>
    %755 = "stablehlo.multiply"(%753, %754) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    %756 = "stablehlo.add"(%696, %755) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
    "stablehlo.return"(%345, %732, %735, %717, %721, %726, %697, %672, %675, %664, %667, %655, %658, %630, %633, %615, %619, %624, %595, %570, %573, %562, %565, %553, %556, %528, %531, %513, %517, %522, %493, %468, %471, %460, %463, %451, %454, %426, %429, %411, %415, %420, %391, %366, %369, %358, %361, %349, %352) : (tensor<f32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>) -> ()
  }
}
