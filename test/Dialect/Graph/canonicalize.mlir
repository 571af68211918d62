// Folders of the graph dialect, run through the canonicalizer.
// RUN: trainc-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @add_negative_zero
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
func.func @add_negative_zero(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %nz = graph.constant dense<-0.0> : tensor<4xf32>
  %0 = graph.add %x, %nz : tensor<4xf32>
  %1 = graph.add %nz, %x : tensor<4xf32>
  // CHECK-NOT: graph.add
  // CHECK: return %[[X]], %[[X]]
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// x + 0.0 is not x when x = -0.0: it must stay.
// CHECK-LABEL: func.func @add_positive_zero_stays
func.func @add_positive_zero_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = graph.constant dense<0.0> : tensor<4xf32>
  // CHECK: graph.add
  %0 = graph.add %x, %z : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @int_identities
// CHECK-SAME: (%[[X:.+]]: tensor<4xi64>)
func.func @int_identities(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %z = graph.constant dense<0> : tensor<4xi64>
  %o = graph.constant dense<1> : tensor<4xi64>
  %0 = graph.add %x, %z : tensor<4xi64>
  %1 = graph.sub %x, %z : tensor<4xi64>
  %2 = graph.mul %o, %x : tensor<4xi64>
  %3 = graph.div %x, %o : tensor<4xi64>
  // CHECK-NOT: graph.
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]]
  return %0, %1, %2, %3 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @float_identities
// CHECK-SAME: (%[[X:.+]]: tensor<4xbf16>)
func.func @float_identities(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) {
  %z = graph.constant dense<0.0> : tensor<4xbf16>
  %o = graph.constant dense<1.0> : tensor<4xbf16>
  %0 = graph.sub %x, %z : tensor<4xbf16>
  %1 = graph.mul %x, %o : tensor<4xbf16>
  %2 = graph.div %x, %o : tensor<4xbf16>
  // CHECK-NOT: graph.
  // CHECK: return %[[X]], %[[X]], %[[X]]
  return %0, %1, %2 : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>
}

// -----

// CHECK-LABEL: func.func @constant_folding
func.func @constant_folding() -> (tensor<3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>, tensor<3xf32>) {
  %a = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = graph.constant dense<0.5> : tensor<3xf32>
  %i = graph.constant dense<[7, -7]> : tensor<2xi32>
  %j = graph.constant dense<2> : tensor<2xi32>
  %nan = graph.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %one = graph.constant dense<[2.0, 0.5]> : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[1.500000e+00, 2.500000e+00, 3.500000e+00]> : tensor<3xf32>
  %0 = graph.add %a, %b : tensor<3xf32>
  // Integer division truncates toward zero.
  // CHECK-DAG: graph.constant dense<[3, -3]> : tensor<2xi32>
  %1 = graph.div %i, %j : tensor<2xi32>
  // CHECK-DAG: graph.constant dense<[14, -14]> : tensor<2xi32>
  %2 = graph.mul %i, %j : tensor<2xi32>
  // max and min propagate NaN.
  // CHECK-DAG: graph.constant dense<[0x7FC00000, 1.000000e+00]> : tensor<2xf32>
  %3 = graph.max %nan, %one : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[0x7FC00000, 5.000000e-01]> : tensor<2xf32>
  %4 = graph.min %nan, %one : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[-1.000000e+00, -2.000000e+00, -3.000000e+00]> : tensor<3xf32>
  %5 = graph.neg %a : tensor<3xf32>
  // CHECK-NOT: graph.add
  // CHECK-NOT: graph.div
  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>, tensor<3xf32>
}

// -----

// Integer division by zero is left for the runtime to report.
// CHECK-LABEL: func.func @int_div_by_zero_stays
func.func @int_div_by_zero_stays() -> tensor<2xi32> {
  %i = graph.constant dense<[7, -7]> : tensor<2xi32>
  %z = graph.constant dense<0> : tensor<2xi32>
  // CHECK: graph.div
  %0 = graph.div %i, %z : tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @chains
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
func.func @chains(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<24xf32>) {
  %n = graph.neg %x : tensor<2x3x4xf32>
  %0 = graph.neg %n : tensor<2x3x4xf32>
  %t = graph.transpose %x, permutation = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = graph.transpose %t, permutation = [2, 0, 1] : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  // transpose [1, 2, 0] of transpose [1, 2, 0] composes into one: [2, 0, 1].
  // CHECK: %[[T:.+]] = graph.transpose %[[X]], permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %2 = graph.transpose %t, permutation = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  // CHECK: %[[R:.+]] = graph.reshape %[[X]] : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %r = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %3 = graph.reshape %r : (tensor<6x4xf32>) -> tensor<24xf32>
  // CHECK: return %[[X]], %[[X]], %[[T]], %[[R]]
  return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<24xf32>
}

// -----

// CHECK-LABEL: func.func @no_ops
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[P:.+]]: tensor<4x8xi1>)
func.func @no_ops(%x: tensor<4x8xf32>, %p: tensor<4x8xi1>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = graph.transpose %x, permutation = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = graph.reshape %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = graph.broadcast_in_dim %x, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = graph.slice %x, start = [0, 0], limit = [4, 8], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = graph.concatenate(%x), dim = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = graph.convert %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = graph.reduce_sum %x, dims = [] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = graph.select %p, %x, %x : tensor<4x8xi1>, tensor<4x8xf32>
  %8 = graph.max %x, %x : tensor<4x8xf32>
  %9 = graph.min %x, %x : tensor<4x8xf32>
  // CHECK-NOT: graph.
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @select_on_constant_predicate
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[Y:.+]]: tensor<4xf32>)
func.func @select_on_constant_predicate(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = graph.constant dense<true> : tensor<4xi1>
  %f = graph.constant dense<false> : tensor<4xi1>
  %0 = graph.select %t, %x, %y : tensor<4xi1>, tensor<4xf32>
  %1 = graph.select %f, %x, %y : tensor<4xi1>, tensor<4xf32>
  // CHECK: return %[[X]], %[[Y]]
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Splat constants pass through data movement; dense ones through reshape.
// CHECK-LABEL: func.func @constants_through_data_movement
func.func @constants_through_data_movement() -> (tensor<4x8xf32>, tensor<8x4xf32>, tensor<2x2xf32>, tensor<2x3xi32>) {
  %s = graph.constant dense<2.0> : tensor<8xf32>
  %m = graph.constant dense<2.0> : tensor<4x8xf32>
  %d = graph.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  // CHECK-DAG: graph.constant dense<2.000000e+00> : tensor<4x8xf32>
  %0 = graph.broadcast_in_dim %s, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK-DAG: graph.constant dense<2.000000e+00> : tensor<8x4xf32>
  %1 = graph.transpose %m, permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  // CHECK-DAG: graph.constant dense<2.000000e+00> : tensor<2x2xf32>
  %2 = graph.slice %m, start = [0, 0], limit = [2, 4], strides = [1, 2] : (tensor<4x8xf32>) -> tensor<2x2xf32>
  // CHECK-DAG: graph.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %3 = graph.reshape %d : (tensor<6xi32>) -> tensor<2x3xi32>
  // CHECK-NOT: graph.broadcast_in_dim
  // CHECK-NOT: graph.transpose
  // CHECK-NOT: graph.slice
  // CHECK-NOT: graph.reshape
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<2x2xf32>, tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func.func @convert_constants
func.func @convert_constants() -> (tensor<4xi32>, tensor<2xi64>, tensor<2xbf16>, tensor<3xi1>, tensor<2xf32>, tensor<2xi64>, tensor<2xui8>, tensor<2xf8E4M3FN>) {
  %f = graph.constant dense<[2.7, -2.7, 0.5, -0.5]> : tensor<4xf32>
  %b = graph.constant dense<[true, false]> : tensor<2xi1>
  // 1 + 2^-8 and 1 + 3 * 2^-8 are ties in bf16: to even gives 1 and 1 + 2^-6.
  %g = graph.constant dense<[1.00390625, 1.01171875]> : tensor<2xf32>
  %z = graph.constant dense<[0.0, -0.0, 3.0]> : tensor<3xf32>
  %i = graph.constant dense<[16777217, -3]> : tensor<2xi64>
  // Float to integer truncates toward zero.
  // CHECK-DAG: graph.constant dense<[2, -2, 0, 0]> : tensor<4xi32>
  %0 = graph.convert %f : (tensor<4xf32>) -> tensor<4xi32>
  // true converts to 1, not -1.
  // CHECK-DAG: graph.constant dense<[1, 0]> : tensor<2xi64>
  %1 = graph.convert %b : (tensor<2xi1>) -> tensor<2xi64>
  // CHECK-DAG: graph.constant dense<[1.000000e+00, 1.015630e+00]> : tensor<2xbf16>
  %2 = graph.convert %g : (tensor<2xf32>) -> tensor<2xbf16>
  // To i1 tests for non-zero; -0 is zero.
  // CHECK-DAG: graph.constant dense<[false, false, true]> : tensor<3xi1>
  %3 = graph.convert %z : (tensor<3xf32>) -> tensor<3xi1>
  // 2^24 + 1 is a tie in f32: to even gives 2^24 (0x4B800000).
  // CHECK-DAG: graph.constant dense<[0x4B800000, -3.000000e+00]> : tensor<2xf32>
  %4 = graph.convert %i : (tensor<2xi64>) -> tensor<2xf32>
  // Unsigned types widen with zeros and saturate at their own bounds.
  %u = graph.constant dense<[200, 255]> : tensor<2xui8>
  // CHECK-DAG: graph.constant dense<[200, 255]> : tensor<2xi64>
  %5 = graph.convert %u : (tensor<2xui8>) -> tensor<2xi64>
  %big = graph.constant dense<[300.0, -5.0]> : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[255, 0]> : tensor<2xui8>
  %6 = graph.convert %big : (tensor<2xf32>) -> tensor<2xui8>
  // f8E4M3FN: 464 is a tie between 448 and 480 (NaN): to even gives 448.
  %e = graph.constant dense<[464.0, 0.3]> : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[4.480000e+02, 3.125000e-01]> : tensor<2xf8E4M3FN>
  %7 = graph.convert %e : (tensor<2xf32>) -> tensor<2xf8E4M3FN>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xi32>, tensor<2xi64>, tensor<2xbf16>, tensor<3xi1>, tensor<2xf32>, tensor<2xi64>, tensor<2xui8>, tensor<2xf8E4M3FN>
}

// -----

// Float to integer saturates, as the runtime's kernel does: NaN gives 0,
// infinities and values beyond the range the nearest bound.
// CHECK-LABEL: func.func @convert_saturates
// CHECK: graph.constant dense<[0, 2147483647, -2147483648, 2147483647, -2147483648, 7]> : tensor<6xi32>
func.func @convert_saturates() -> tensor<6xi32> {
  %f = graph.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000, 3.0e9, -3.0e9, 7.9]> : tensor<6xf32>
  %0 = graph.convert %f : (tensor<6xf32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// CHECK-LABEL: func.func @compare_select_constants
func.func @compare_select_constants() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xf32>) {
  %a = graph.constant dense<[1.0, 0x7FC00000, 3.0]> : tensor<3xf32>
  %b = graph.constant dense<[2.0, 0x7FC00000, 3.0]> : tensor<3xf32>
  // NaN compares unordered: LT false, NE true.
  // CHECK-DAG: graph.constant dense<[true, false, false]> : tensor<3xi1>
  %0 = graph.compare LT, %a, %b : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[true, true, false]> : tensor<3xi1>
  %1 = graph.compare NE, %a, %b : tensor<3xf32>
  %p = graph.constant dense<[true, false, true]> : tensor<3xi1>
  %c = graph.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[1.000000e+01, 0x7FC00000, 3.000000e+01]> : tensor<3xf32>
  %2 = graph.select %p, %c, %b : tensor<3xi1>, tensor<3xf32>
  return %0, %1, %2 : tensor<3xi1>, tensor<3xi1>, tensor<3xf32>
}

// -----

// The shape arithmetic ONNX exporters emit folds to constants.
// CHECK-LABEL: func.func @shape_arithmetic
func.func @shape_arithmetic() -> (tensor<4xi64>, tensor<2x2xi64>, tensor<2x3xi64>, tensor<3x2xi64>, tensor<2x2x3xi64>, tensor<2xf32>) {
  %shape = graph.constant dense<[2, 32, 64]> : tensor<3xi64>
  %i0 = graph.constant dense<0> : tensor<i64>
  %i1 = graph.constant dense<[1, -1]> : tensor<2xi64>
  %heads = graph.constant dense<4> : tensor<1xi64>
  // Gather with a scalar and with negative indices.
  %b = graph.gather %shape[%i0], axis = 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %tc = graph.gather %shape[%i1], axis = 0 : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %b1 = graph.reshape %b : (tensor<i64>) -> tensor<1xi64>
  %t1 = graph.slice %tc, start = [0], limit = [1], strides = [1] : (tensor<2xi64>) -> tensor<1xi64>
  // CHECK-DAG: graph.constant dense<[2, 32, 4, 32]> : tensor<4xi64>
  %0 = graph.concatenate(%b1, %t1, %heads, %tc), dim = 0 : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<5xi64>
  %r = graph.slice %0, start = [0], limit = [5], strides = [1] : (tensor<5xi64>) -> tensor<5xi64>
  %1 = graph.slice %r, start = [0], limit = [4], strides = [1] : (tensor<5xi64>) -> tensor<4xi64>
  %m = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  // CHECK-DAG: graph.constant dense<{{\[}}[1, 3], [4, 6]]> : tensor<2x2xi64>
  %2 = graph.slice %m, start = [0, 0], limit = [2, 3], strides = [1, 2] : (tensor<2x3xi64>) -> tensor<2x2xi64>
  // CHECK-DAG: graph.constant dense<{{\[}}[3, 2, 1], [6, 5, 4]]> : tensor<2x3xi64>
  %rev = graph.constant dense<[2, 1, 0]> : tensor<3xi64>
  %3 = graph.gather %m[%rev], axis = 1 : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // CHECK-DAG: graph.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
  %4 = graph.transpose %m, permutation = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  // CHECK-DAG: graph.constant dense<{{\[}}{{\[}}[1, 2, 3], [1, 2, 3]], {{\[}}[4, 5, 6], [4, 5, 6]]]> : tensor<2x2x3xi64>
  %5 = graph.broadcast_in_dim %m, dims = [0, 2] : (tensor<2x3xi64>) -> tensor<2x2x3xi64>
  %sq = graph.constant dense<[4.0, 2.0]> : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[2.000000e+00, 1.41421354]> : tensor<2xf32>
  %6 = graph.sqrt %sq : tensor<2xf32>
  // CHECK-NOT: graph.gather
  // CHECK-NOT: graph.concatenate
  // CHECK-NOT: graph.slice
  return %1, %2, %3, %4, %5, %6 : tensor<4xi64>, tensor<2x2xi64>, tensor<2x3xi64>, tensor<3x2xi64>, tensor<2x2x3xi64>, tensor<2xf32>
}

// -----

// An index out of range is left for the runtime to report.
// CHECK-LABEL: func.func @gather_out_of_range_stays
func.func @gather_out_of_range_stays() -> tensor<1xi64> {
  %s = graph.constant dense<[2, 32, 64]> : tensor<3xi64>
  %i = graph.constant dense<[3]> : tensor<1xi64>
  // CHECK: graph.gather
  %0 = graph.gather %s[%i], axis = 0 : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// -----

// CHECK-LABEL: func.func @broadcast_chains
// CHECK-SAME: (%[[X:.+]]: tensor<2x32xf32>, %[[B:.+]]: tensor<64xf32>)
func.func @broadcast_chains(%x: tensor<2x32xf32>, %b: tensor<64xf32>) -> (tensor<2x32x64xf32>, tensor<2x32x64xf32>) {
  // A keepdims reshape before a broadcast folds away.
  // CHECK: graph.broadcast_in_dim %[[X]], dims = [0, 1] : (tensor<2x32xf32>) -> tensor<2x32x64xf32>
  %r = graph.reshape %x : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
  %0 = graph.broadcast_in_dim %r, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
  // Two broadcasts compose.
  // CHECK: graph.broadcast_in_dim %[[B]], dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
  %b1 = graph.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<32x64xf32>
  %1 = graph.broadcast_in_dim %b1, dims = [1, 2] : (tensor<32x64xf32>) -> tensor<2x32x64xf32>
  // CHECK-NOT: graph.reshape
  return %0, %1 : tensor<2x32x64xf32>, tensor<2x32x64xf32>
}

// -----

// A reshape that does more than insert unit dims is kept.
// CHECK-LABEL: func.func @broadcast_of_real_reshape_stays
func.func @broadcast_of_real_reshape_stays(%x: tensor<2x3xf32>) -> tensor<4x3x2xf32> {
  // CHECK: graph.reshape
  %r = graph.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %0 = graph.broadcast_in_dim %r, dims = [1, 2] : (tensor<3x2xf32>) -> tensor<4x3x2xf32>
  return %0 : tensor<4x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_zero_ratio
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
func.func @dropout_zero_ratio(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  // CHECK: %[[T:.+]] = graph.constant dense<true> : tensor<4xi1>
  // CHECK: return %[[X]], %[[T]]
  %y, %m = graph.dropout %x, ratio = 0.0, seed = 1 : tensor<4xf32>
  return %y, %m : tensor<4xf32>, tensor<4xi1>
}

// -----

// Keepdims reshapes sink through elementwise ops to the broadcast.
// CHECK-LABEL: func.func @sink_reshape
// CHECK-SAME: (%[[V:.+]]: tensor<2x8xf32>)
func.func @sink_reshape(%v: tensor<2x8xf32>) -> tensor<2x8x16xf32> {
  %r = graph.reshape %v : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
  %eps = graph.constant dense<1.0e-5> : tensor<2x8x1xf32>
  %a = graph.add %r, %eps : tensor<2x8x1xf32>
  %s = graph.sqrt %a : tensor<2x8x1xf32>
  %b = graph.broadcast_in_dim %s, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  // CHECK: %[[A:.+]] = graph.add %[[V]], %{{.+}} : tensor<2x8xf32>
  // CHECK: %[[S:.+]] = graph.sqrt %[[A]] : tensor<2x8xf32>
  // CHECK: %[[B:.+]] = graph.broadcast_in_dim %[[S]], dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
  // CHECK-NOT: graph.reshape
  // CHECK: return %[[B]]
  return %b : tensor<2x8x16xf32>
}

// -----

// Operands reshaped from different shapes, or a reshape with other users,
// stay as they are.
// CHECK-LABEL: func.func @sink_reshape_blocked
func.func @sink_reshape_blocked(%a: tensor<2x8xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %ra = graph.reshape %a : (tensor<2x8xf32>) -> tensor<16xf32>
  // CHECK: graph.add %{{.+}}, %{{.+}} : tensor<16xf32>
  %0 = graph.add %ra, %b : tensor<16xf32>
  return %0, %ra : tensor<16xf32>, tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @iota_folds
func.func @iota_folds() -> (tensor<2x3xi32>, tensor<3xbf16>) {
  // CHECK-DAG: graph.constant dense<{{\[}}[0, 1, 2], [0, 1, 2]]> : tensor<2x3xi32>
  %0 = graph.iota dim = 1 : tensor<2x3xi32>
  // CHECK-DAG: graph.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<3xbf16>
  %1 = graph.iota dim = 0 : tensor<3xbf16>
  return %0, %1 : tensor<2x3xi32>, tensor<3xbf16>
}

// -----

// Widening then rounding back is the identity; rounding then widening, or a
// round trip through a type of the same width (bf16 and f16 have other
// ranges), is not.
// CHECK-LABEL: func.func @convert_round_trips
// CHECK-SAME: (%[[H:.+]]: tensor<4xbf16>, %[[F:.+]]: tensor<4xf32>)
func.func @convert_round_trips(%h: tensor<4xbf16>, %f: tensor<4xf32>)
    -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>) {
  %0 = graph.convert %h : (tensor<4xbf16>) -> tensor<4xf32>
  %1 = graph.convert %0 : (tensor<4xf32>) -> tensor<4xbf16>
  // CHECK: %[[R:.+]] = graph.convert %[[F]] : (tensor<4xf32>) -> tensor<4xbf16>
  // CHECK: %[[W:.+]] = graph.convert %[[R]] : (tensor<4xbf16>) -> tensor<4xf32>
  %2 = graph.convert %f : (tensor<4xf32>) -> tensor<4xbf16>
  %3 = graph.convert %2 : (tensor<4xbf16>) -> tensor<4xf32>
  // CHECK: %[[G:.+]] = graph.convert %[[H]] : (tensor<4xbf16>) -> tensor<4xf16>
  // CHECK: %[[B:.+]] = graph.convert %[[G]] : (tensor<4xf16>) -> tensor<4xbf16>
  %4 = graph.convert %h : (tensor<4xbf16>) -> tensor<4xf16>
  %5 = graph.convert %4 : (tensor<4xf16>) -> tensor<4xbf16>
  // CHECK: return %[[H]], %[[W]], %[[B]]
  return %1, %3, %5 : tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>
}

// -----

// A narrowing convert of a transpose's only use moves before it; a
// widening one stays.
// CHECK-LABEL: func.func @convert_hoists_above_transpose
// CHECK-SAME: (%[[W:.+]]: tensor<2x3xf32>, %[[H:.+]]: tensor<2x3xbf16>)
func.func @convert_hoists_above_transpose(%w: tensor<2x3xf32>, %h: tensor<2x3xbf16>)
    -> (tensor<3x2xbf16>, tensor<3x2xf32>) {
  // CHECK: %[[N:.+]] = graph.convert %[[W]] : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  // CHECK: graph.transpose %[[N]], permutation = [1, 0] : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
  %0 = graph.transpose %w, permutation = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = graph.convert %0 : (tensor<3x2xf32>) -> tensor<3x2xbf16>
  // CHECK: %[[T:.+]] = graph.transpose %[[H]], permutation = [1, 0] : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
  // CHECK: graph.convert %[[T]] : (tensor<3x2xbf16>) -> tensor<3x2xf32>
  %2 = graph.transpose %h, permutation = [1, 0] : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
  %3 = graph.convert %2 : (tensor<3x2xbf16>) -> tensor<3x2xf32>
  return %1, %3 : tensor<3x2xbf16>, tensor<3x2xf32>
}

// -----

// A convolution's patches, converted to bf16 for its product, are made
// from the converted input (K times fewer bytes converted).
// CHECK-LABEL: func.func @convert_hoists_above_extract_patches
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4xf32>)
func.func @convert_hoists_above_extract_patches(%x: tensor<1x2x4xf32>) -> tensor<2x3x1x4xbf16> {
  // CHECK: %[[N:.+]] = graph.convert %[[X]] : (tensor<1x2x4xf32>) -> tensor<1x2x4xbf16>
  // CHECK: graph.extract_patches %[[N]], {{.*}} : (tensor<1x2x4xbf16>) -> tensor<2x3x1x4xbf16>
  %p = graph.extract_patches %x, kernel = [3], strides = [1], dilation = [1], pad_low = [1], pad_high = [1] : (tensor<1x2x4xf32>) -> tensor<2x3x1x4xf32>
  %c = graph.convert %p : (tensor<2x3x1x4xf32>) -> tensor<2x3x1x4xbf16>
  return %c : tensor<2x3x1x4xbf16>
}

// -----

// A widened sum (bf16 operand, f32 result) divided by its count stays: a
// reduce_mean has no widened form.
// CHECK-LABEL: func.func @widened_sum_div
// CHECK: %[[S:.+]] = graph.reduce_sum %{{.+}}, dims = [1] : (tensor<2x8xbf16>) -> tensor<2xf32>
// CHECK: graph.div %[[S]]
// CHECK-NOT: graph.reduce_mean
func.func @widened_sum_div(%x: tensor<2x8xbf16>) -> tensor<2xf32> {
  %n = graph.constant dense<8.0> : tensor<2xf32>
  %s = graph.reduce_sum %x, dims = [1] : (tensor<2x8xbf16>) -> tensor<2xf32>
  %m = graph.div %s, %n : tensor<2xf32>
  return %m : tensor<2xf32>
}

// -----

// JAX's keepdims: a broadcast that only inserts size-1 dims is a reshape,
// which folds into the broadcast that consumes it; sum / N is a mean; the
// row max's guard max(m, -inf) is m.
// CHECK-LABEL: func.func @jax_mean_keepdims
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
func.func @jax_mean_keepdims(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2xf32>) {
  // CHECK: %[[M:.+]] = graph.reduce_mean %[[X]], dims = [1]
  // CHECK: %[[B:.+]] = graph.broadcast_in_dim %[[M]], dims = [0] : (tensor<2xf32>) -> tensor<2x8xf32>
  // CHECK: graph.sub %[[X]], %[[B]]
  %n = graph.constant dense<8.0> : tensor<2x1xf32>
  %s = graph.reduce_sum %x, dims = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
  %k = graph.broadcast_in_dim %s, dims = [0] : (tensor<2xf32>) -> tensor<2x1xf32>
  %m = graph.div %k, %n : tensor<2x1xf32>
  %b = graph.broadcast_in_dim %m, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x8xf32>
  %c = graph.sub %x, %b : tensor<2x8xf32>
  // CHECK: %[[R:.+]] = graph.reduce_max %[[X]], dims = [1]
  // CHECK-NOT: graph.max
  // CHECK: return %{{.+}}, %[[R]]
  %ninf = graph.constant dense<0xFF800000> : tensor<2xf32>
  %r = graph.reduce_max %x, dims = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
  %g = graph.max %r, %ninf : tensor<2xf32>
  return %c, %g : tensor<2x8xf32>, tensor<2xf32>
}

// -----

// Only the exact count makes a mean.
// CHECK-LABEL: func.func @sum_div_other_count
func.func @sum_div_other_count(%x: tensor<2x8xf32>) -> tensor<2xf32> {
  // CHECK: graph.reduce_sum
  // CHECK: graph.div
  %n = graph.constant dense<7.0> : tensor<2xf32>
  %s = graph.reduce_sum %x, dims = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
  %m = graph.div %s, %n : tensor<2xf32>
  return %m : tensor<2xf32>
}

// -----

// The gradients of three slices of one tensor (a fused QKV projection's),
// each padded with -0, sum to one concatenate: x + -0 == x exactly.
// CHECK-LABEL: func.func @add_disjoint_concatenates
// CHECK-SAME: (%[[Q:.+]]: tensor<4x2xf32>, %[[K:.+]]: tensor<4x2xf32>, %[[V:.+]]: tensor<4x2xf32>)
// CHECK-NOT: graph.add
// CHECK: %[[G:.+]] = graph.concatenate(%[[Q]], %[[K]], %[[V]]), dim = 1
// CHECK-NEXT: return %[[G]]
func.func @add_disjoint_concatenates(%q: tensor<4x2xf32>, %k: tensor<4x2xf32>, %v: tensor<4x2xf32>) -> tensor<4x6xf32> {
  %z2 = graph.constant dense<-0.0> : tensor<4x2xf32>
  %z4 = graph.constant dense<-0.0> : tensor<4x4xf32>
  %gv = graph.concatenate(%z4, %v), dim = 1 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %gk = graph.concatenate(%z2, %k, %z2), dim = 1 : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %gq = graph.concatenate(%q, %z4), dim = 1 : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %s = graph.add %gv, %gk : tensor<4x6xf32>
  %t = graph.add %s, %gq : tensor<4x6xf32>
  return %t : tensor<4x6xf32>
}

// -----

// Where both sides are padding, the sum keeps -0 padding (-0 + -0 = -0).
// CHECK-LABEL: func.func @add_disjoint_concatenates_keeps_padding
// CHECK-SAME: (%[[A:.+]]: tensor<3x1xf32>, %[[B:.+]]: tensor<3x2xf32>)
// CHECK-DAG: %[[Z:.+]] = graph.constant dense<-0.000000e+00> : tensor<3x3xf32>
// CHECK: %[[G:.+]] = graph.concatenate(%[[A]], %[[Z]], %[[B]]), dim = 1
// CHECK-NEXT: return %[[G]]
func.func @add_disjoint_concatenates_keeps_padding(%a: tensor<3x1xf32>, %b: tensor<3x2xf32>) -> tensor<3x6xf32> {
  %z5 = graph.constant dense<-0.0> : tensor<3x5xf32>
  %z4 = graph.constant dense<-0.0> : tensor<3x4xf32>
  %ga = graph.concatenate(%a, %z5), dim = 1 : (tensor<3x1xf32>, tensor<3x5xf32>) -> tensor<3x6xf32>
  %gb = graph.concatenate(%z4, %b), dim = 1 : (tensor<3x4xf32>, tensor<3x2xf32>) -> tensor<3x6xf32>
  %s = graph.add %ga, %gb : tensor<3x6xf32>
  return %s : tensor<3x6xf32>
}

// -----

// Not exact: +0 padding (+0 + -0 is +0), and values on both sides at the
// same positions (%fine merges, then its sum with %bz overlaps at columns
// 2-3). Three adds stay.
// CHECK-LABEL: func.func @add_concatenates_kept
// CHECK-COUNT-3: graph.add
func.func @add_concatenates_kept(%a: tensor<4x2xf32>, %b: tensor<4x4xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %p2 = graph.constant dense<0.0> : tensor<4x2xf32>
  %p4 = graph.constant dense<0.0> : tensor<4x4xf32>
  %z2 = graph.constant dense<-0.0> : tensor<4x2xf32>
  %z4 = graph.constant dense<-0.0> : tensor<4x4xf32>
  %pa = graph.concatenate(%a, %p4), dim = 1 : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %pb = graph.concatenate(%p2, %b), dim = 1 : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %plus = graph.add %pa, %pb : tensor<4x6xf32>
  %ab = graph.concatenate(%a, %b), dim = 1 : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %ba = graph.concatenate(%b, %a), dim = 1 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %overlap = graph.add %ab, %ba : tensor<4x6xf32>
  %za = graph.concatenate(%a, %z4), dim = 1 : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %zb = graph.concatenate(%z2, %a, %z2), dim = 1 : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %bz = graph.concatenate(%z2, %b), dim = 1 : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %fine = graph.add %za, %zb : tensor<4x6xf32>
  %partial = graph.add %fine, %bz : tensor<4x6xf32>
  return %plus, %overlap, %partial : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// Bitwise ops on constants fold: shifts by the width or more give 0 (or
// the sign's bits), the amount read as unsigned (-1 of i8 is 255); the
// counts in the operand's type.
// CHECK-LABEL: func.func @bits_fold
// CHECK-DAG: graph.constant dense<[6, 0, 0, -16]> : tensor<4xi8>
// CHECK-DAG: graph.constant dense<[1, 0, 0, 31]> : tensor<4xi8>
// CHECK-DAG: graph.constant dense<[1, 0, -1, -1]> : tensor<4xi8>
// CHECK-DAG: graph.constant dense<[2, 6, 8, 7]> : tensor<4xi8>
// CHECK-DAG: graph.constant dense<[7, 4, 0, 6]> : tensor<4xi8>
// CHECK-DAG: graph.constant dense<[-4, -127, 0, 1]> : tensor<4xi8>
// CHECK-DAG: graph.constant dense<[3, 2147483648]> : tensor<2xui32>
// CHECK-NOT: graph.shift
// CHECK-NOT: graph.xor
func.func @bits_fold() -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<2xui32>) {
  %x = graph.constant dense<[3, 126, -1, -2]> : tensor<4xi8>
  %s = graph.constant dense<[1, 8, -1, 3]> : tensor<4xi8>
  %u = graph.constant dense<[1, 4294967295]> : tensor<2xui32>
  %v = graph.constant dense<[2, 2147483647]> : tensor<2xui32>
  %left = graph.shift_left %x, %s : tensor<4xi8>
  %logical = graph.shift_right_logical %x, %s : tensor<4xi8>
  %arith = graph.shift_right_arithmetic %x, %s : tensor<4xi8>
  %count = graph.pop_count %x : tensor<4xi8>
  %zeros = graph.count_leading_zeros %s : tensor<4xi8>
  %not = graph.not %x : tensor<4xi8>
  %xor = graph.xor %u, %v : tensor<2xui32>
  return %left, %logical, %arith, %count, %zeros, %not, %xor : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<2xui32>
}

// -----

// Floor, round (ties to even), abs and pow of constants fold, as the
// shapes exporters compute with them must (DINOv2's Pow(16, 0.5) in a
// Reshape's shape, Funnel's Ceil in a Range's limit, Ceil being -floor(-x)).
// CHECK-LABEL: func.func @rounding_and_pow_fold
func.func @rounding_and_pow_fold() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<2xui8>, tensor<3xf32>, tensor<bf16>) {
  %x = graph.constant dense<[-2.5, -0.5, 0.5, 2.5]> : tensor<4xf32>
  // CHECK-DAG: graph.constant dense<[-3.000000e+00, -1.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<4xf32>
  %f = graph.floor %x : tensor<4xf32>
  // CHECK-DAG: graph.constant dense<[-2.000000e+00, -0.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<4xf32>
  %r = graph.round %x : tensor<4xf32>
  // CHECK-DAG: graph.constant dense<[2.500000e+00, 5.000000e-01, 5.000000e-01, 2.500000e+00]> : tensor<4xf32>
  %a = graph.abs %x : tensor<4xf32>
  %i = graph.constant dense<[-7, 0, 7]> : tensor<3xi32>
  // CHECK-DAG: graph.constant dense<[7, 0, 7]> : tensor<3xi32>
  %ai = graph.abs %i : tensor<3xi32>
  %u = graph.constant dense<[200, 3]> : tensor<2xui8>
  // CHECK-DAG: graph.constant dense<[200, 3]> : tensor<2xui8>
  %au = graph.abs %u : tensor<2xui8>
  %b = graph.constant dense<[16.0, 2.0, -8.0]> : tensor<3xf32>
  %e = graph.constant dense<[0.5, 0.5, 0.333333343]> : tensor<3xf32>
  // 2^0.5 rounded once to f32; a negative base's fractional power is NaN.
  // CHECK-DAG: graph.constant dense<[4.000000e+00, 1.41421354, 0x{{[7F]}}FC00000]> : tensor<3xf32>
  %p = graph.pow %b, %e : tensor<3xf32>
  %h = graph.constant dense<3.0> : tensor<bf16>
  %two = graph.constant dense<2.0> : tensor<bf16>
  // CHECK-DAG: graph.constant dense<9.000000e+00> : tensor<bf16>
  %ph = graph.pow %h, %two : tensor<bf16>
  // CHECK-NOT: graph.floor
  // CHECK-NOT: graph.round
  // CHECK-NOT: graph.abs
  // CHECK-NOT: graph.pow
  return %f, %r, %a, %ai, %au, %p, %ph : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<2xui8>, tensor<3xf32>, tensor<bf16>
}
