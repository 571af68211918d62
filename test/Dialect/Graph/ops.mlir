// Round trip of every graph op through the custom and the generic syntax.
// RUN: trainc-opt %s | trainc-opt | FileCheck %s
// RUN: trainc-opt %s --mlir-print-op-generic | trainc-opt | FileCheck %s
// RUN: trainc-opt %s --emit-bytecode | trainc-opt | FileCheck %s

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[I:.+]]: tensor<4xi32>)
func.func @unary(%x: tensor<4x8xf32>, %i: tensor<4xi32>) {
  // CHECK: graph.neg %[[X]] : tensor<4x8xf32>
  %0 = graph.neg %x : tensor<4x8xf32>
  // CHECK: graph.neg %[[I]] : tensor<4xi32>
  %1 = graph.neg %i : tensor<4xi32>
  // CHECK: graph.abs %[[X]] : tensor<4x8xf32>
  %2 = graph.abs %x : tensor<4x8xf32>
  // CHECK: graph.exp %[[X]] : tensor<4x8xf32>
  %3 = graph.exp %x : tensor<4x8xf32>
  // CHECK: graph.log %[[X]] : tensor<4x8xf32>
  %4 = graph.log %x : tensor<4x8xf32>
  // CHECK: graph.tanh %[[X]] : tensor<4x8xf32>
  %5 = graph.tanh %x : tensor<4x8xf32>
  // CHECK: graph.erf %[[X]] : tensor<4x8xf32>
  %6 = graph.erf %x : tensor<4x8xf32>
  // CHECK: graph.sqrt %[[X]] : tensor<4x8xf32>
  %7 = graph.sqrt %x : tensor<4x8xf32>
  // CHECK: graph.rsqrt %[[X]] : tensor<4x8xf32>
  %8 = graph.rsqrt %x : tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xbf16>, %[[B:.+]]: tensor<2x3xbf16>, %[[I:.+]]: tensor<5xi64>)
func.func @binary(%a: tensor<2x3xbf16>, %b: tensor<2x3xbf16>, %i: tensor<5xi64>) {
  // CHECK: graph.add %[[A]], %[[B]] : tensor<2x3xbf16>
  %0 = graph.add %a, %b : tensor<2x3xbf16>
  // CHECK: graph.sub %[[A]], %[[B]] : tensor<2x3xbf16>
  %1 = graph.sub %a, %b : tensor<2x3xbf16>
  // CHECK: graph.mul %[[A]], %[[B]] : tensor<2x3xbf16>
  %2 = graph.mul %a, %b : tensor<2x3xbf16>
  // CHECK: graph.div %[[I]], %[[I]] : tensor<5xi64>
  %3 = graph.div %i, %i : tensor<5xi64>
  // CHECK: graph.pow %[[A]], %[[B]] : tensor<2x3xbf16>
  %4 = graph.pow %a, %b : tensor<2x3xbf16>
  // CHECK: graph.max %[[A]], %[[B]] : tensor<2x3xbf16>
  %5 = graph.max %a, %b : tensor<2x3xbf16>
  // CHECK: graph.min %[[I]], %[[I]] : tensor<5xi64>
  %6 = graph.min %i, %i : tensor<5xi64>
  return
}

// CHECK-LABEL: func.func @bitwise
// CHECK-SAME: (%[[U:.+]]: tensor<4xui32>, %[[S:.+]]: tensor<4xi8>)
func.func @bitwise(%u: tensor<4xui32>, %s: tensor<4xi8>) {
  // CHECK: graph.and %[[U]], %[[U]] : tensor<4xui32>
  %0 = graph.and %u, %u : tensor<4xui32>
  // CHECK: graph.or %[[S]], %[[S]] : tensor<4xi8>
  %1 = graph.or %s, %s : tensor<4xi8>
  // CHECK: graph.xor %[[U]], %[[U]] : tensor<4xui32>
  %2 = graph.xor %u, %u : tensor<4xui32>
  // CHECK: graph.not %[[S]] : tensor<4xi8>
  %3 = graph.not %s : tensor<4xi8>
  // CHECK: graph.shift_left %[[U]], %[[U]] : tensor<4xui32>
  %4 = graph.shift_left %u, %u : tensor<4xui32>
  // CHECK: graph.shift_right_logical %[[U]], %[[U]] : tensor<4xui32>
  %5 = graph.shift_right_logical %u, %u : tensor<4xui32>
  // CHECK: graph.shift_right_arithmetic %[[S]], %[[S]] : tensor<4xi8>
  %6 = graph.shift_right_arithmetic %s, %s : tensor<4xi8>
  // CHECK: graph.pop_count %[[U]] : tensor<4xui32>
  %7 = graph.pop_count %u : tensor<4xui32>
  // CHECK: graph.count_leading_zeros %[[S]] : tensor<4xi8>
  %8 = graph.count_leading_zeros %s : tensor<4xi8>
  // CHECK: graph.bitcast %[[U]] : (tensor<4xui32>) -> tensor<4xf32>
  %9 = graph.bitcast %u : (tensor<4xui32>) -> tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @compare_select_convert
func.func @compare_select_convert(%x: tensor<4xf16>, %y: tensor<4xf16>, %n: tensor<4xi64>) -> tensor<4xf64> {
  // CHECK: %[[P:.+]] = graph.compare LT, %{{.+}}, %{{.+}} : tensor<4xf16>
  %p = graph.compare LT, %x, %y : tensor<4xf16>
  // CHECK: graph.compare EQ, %{{.+}}, %{{.+}} : tensor<4xi64>
  %q = graph.compare EQ, %n, %n : tensor<4xi64>
  // CHECK: graph.compare NE, {{.+}} : tensor<4xi1>
  %r = graph.compare NE, %p, %q : tensor<4xi1>
  // CHECK: graph.compare LE
  %s = graph.compare LE, %x, %y : tensor<4xf16>
  // CHECK: graph.compare GT
  %t = graph.compare GT, %x, %y : tensor<4xf16>
  // CHECK: graph.compare GE
  %u = graph.compare GE, %x, %y : tensor<4xf16>
  // CHECK: %[[S:.+]] = graph.select %[[P]], %{{.+}}, %{{.+}} : tensor<4xi1>, tensor<4xf16>
  %sel = graph.select %p, %x, %y : tensor<4xi1>, tensor<4xf16>
  // CHECK: graph.convert %[[S]] : (tensor<4xf16>) -> tensor<4xf64>
  %c = graph.convert %sel : (tensor<4xf16>) -> tensor<4xf64>
  // CHECK: graph.convert %{{.+}} : (tensor<4xi1>) -> tensor<4xi32>
  %d = graph.convert %p : (tensor<4xi1>) -> tensor<4xi32>
  return %c : tensor<4xf64>
}

// CHECK-LABEL: func.func @dot_general
func.func @dot_general(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %w: tensor<16x8xf32>) {
  // CHECK: graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %0 = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  // A linear layer x @ w^T: no batching dims, contract x's last with w's last.
  // CHECK: batching_dims = [] x [], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %1 = graph.dot_general %a, %w, batching_dims = [] x [], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  return
}

// A weight gradient and its bias's: the sum of lhs (or, with sum_rhs, of
// rhs) over its contracting dims, widened with f32_sum.
// CHECK-LABEL: func.func @dot_general_bias_gelu
func.func @dot_general_bias_gelu(%x: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) {
  // CHECK: graph.dot_general_bias_gelu %{{.+}}, %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [2] x [1], approximation = tanh : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>)
  %0, %1 = graph.dot_general_bias_gelu %x, %w, %b, batching_dims = [] x [], contracting_dims = [2] x [1], approximation = tanh
         : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>)
  return
}

// CHECK-LABEL: func.func @dot_general_gelu_grad
func.func @dot_general_gelu_grad(%dy: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %p: tensor<2x4x16xbf16>) {
  // CHECK: graph.dot_general_gelu_grad %{{.+}}, %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [2] x [0], approximation = erf : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
  %0 = graph.dot_general_gelu_grad %dy, %w, %p, batching_dims = [] x [], contracting_dims = [2] x [0], approximation = erf
         : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
  return
}

// CHECK-LABEL: func.func @dot_general_bias_grad
func.func @dot_general_bias_grad(%dy: tensor<2x4x8xbf16>, %x: tensor<2x4x16xbf16>) {
  // CHECK: graph.dot_general_bias_grad %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {f32_result, f32_sum} : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>)
  %0, %1 = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {f32_result, f32_sum}
         : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>)
  // CHECK: graph.dot_general_bias_grad %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [1, 0] x [1, 0] {sum_rhs} : (tensor<2x4x16xbf16>, tensor<2x4x8xbf16>) -> (tensor<16x8xbf16>, tensor<8xbf16>)
  %2, %3 = graph.dot_general_bias_grad %x, %dy, batching_dims = [] x [], contracting_dims = [1, 0] x [1, 0] {sum_rhs}
         : (tensor<2x4x16xbf16>, tensor<2x4x8xbf16>) -> (tensor<16x8xbf16>, tensor<8xbf16>)
  return
}

// A 16-bit product kept in f32.
// CHECK-LABEL: func.func @dot_general_f32_result
func.func @dot_general_f32_result(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) {
  // CHECK: graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result} : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result}
         : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  return
}

// CHECK-LABEL: func.func @dot_general_bias
func.func @dot_general_bias(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %w: tensor<16x8xf32>, %c: tensor<16xf32>) {
  // CHECK: graph.dot_general_bias %{{.+}}, %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %0 = graph.dot_general_bias %a, %w, %c, batching_dims = [] x [], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  // Batched: the bias is broadcast over the batch too.
  // CHECK: batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %1 = graph.dot_general_bias %a, %b, %c, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x8x16xf32>, %i: tensor<4x8xi32>) {
  // CHECK: graph.reduce_sum %{{.+}}, dims = [0, 2] : (tensor<4x8x16xf32>) -> tensor<8xf32>
  %0 = graph.reduce_sum %x, dims = [0, 2] : (tensor<4x8x16xf32>) -> tensor<8xf32>
  // CHECK: graph.reduce_max %{{.+}}, dims = [1] : (tensor<4x8xi32>) -> tensor<4xi32>
  %1 = graph.reduce_max %i, dims = [1] : (tensor<4x8xi32>) -> tensor<4xi32>
  // CHECK: graph.reduce_mean %{{.+}}, dims = [0, 1, 2] : (tensor<4x8x16xf32>) -> tensor<f32>
  %2 = graph.reduce_mean %x, dims = [0, 1, 2] : (tensor<4x8x16xf32>) -> tensor<f32>
  // CHECK: graph.reduce_prod %{{.+}}, dims = [1] : (tensor<4x8xi32>) -> tensor<4xi32>
  %p = graph.reduce_prod %i, dims = [1] : (tensor<4x8xi32>) -> tensor<4xi32>
  // A 16-bit sum may give f32 (the widened sum, C3).
  // CHECK: graph.reduce_sum %{{.+}}, dims = [0] : (tensor<4x8x16xbf16>) -> tensor<8x16xf32>
  %h = graph.convert %x : (tensor<4x8x16xf32>) -> tensor<4x8x16xbf16>
  %3 = graph.reduce_sum %h, dims = [0] : (tensor<4x8x16xbf16>) -> tensor<8x16xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %t: tensor<2x3xi64>) {
  // CHECK: graph.broadcast_in_dim %{{.+}}, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %0 = graph.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: graph.reshape %{{.+}} : (tensor<4x8xf32>) -> tensor<2x16xf32>
  %1 = graph.reshape %x : (tensor<4x8xf32>) -> tensor<2x16xf32>
  // CHECK: graph.transpose %{{.+}}, permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %2 = graph.transpose %x, permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  // CHECK: graph.slice %{{.+}}, start = [0, 2], limit = [4, 8], strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  %3 = graph.slice %x, start = [0, 2], limit = [4, 8], strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  // CHECK: graph.concatenate(%{{.+}}, %{{.+}}, %{{.+}}), dim = 1 : (tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<4x19xf32>
  %4 = graph.concatenate(%x, %3, %x), dim = 1 : (tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<4x19xf32>
  // CHECK: graph.gather %{{.+}}[%{{.+}}], axis = 0 : (tensor<4x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %5 = graph.gather %x[%t], axis = 0 : (tensor<4x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  // CHECK: graph.gather %{{.+}}[%{{.+}}], axis = 1 : (tensor<4x8xf32>, tensor<2x3xi64>) -> tensor<4x2x3xf32>
  %6 = graph.gather %x[%t], axis = 1 : (tensor<4x8xf32>, tensor<2x3xi64>) -> tensor<4x2x3xf32>
  // CHECK: graph.iota dim = 1 : tensor<4x8xi64>
  %7 = graph.iota dim = 1 : tensor<4x8xi64>
  // CHECK: graph.iota dim = 0 : tensor<32xf32>
  %8 = graph.iota dim = 0 : tensor<32xf32>
  return
}

// CHECK-LABEL: func.func @constants
func.func @constants() {
  // CHECK: graph.constant dense<5.000000e-01> : tensor<4x8xf32>
  %0 = graph.constant dense<0.5> : tensor<4x8xf32>
  // CHECK: graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %1 = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  // CHECK: graph.constant dense<true> : tensor<i1>
  %2 = graph.constant dense<true> : tensor<i1>
  // CHECK: graph.constant dense<{{.+}}> : tensor<2xbf16>
  %3 = graph.constant dense<[1.0, -2.5]> : tensor<2xbf16>
  return
}

// CHECK-LABEL: func.func @composites
func.func @composites(%x: tensor<8x32x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %s: tensor<2x4x32x32xf32>) {
  // CHECK: graph.softmax %{{.+}}, dim = 3 : tensor<2x4x32x32xf32>
  %0 = graph.softmax %s, dim = 3 : tensor<2x4x32x32xf32>
  // CHECK: graph.gelu %{{.+}}, approximation = erf : tensor<8x32x64xf32>
  %1 = graph.gelu %x, approximation = erf : tensor<8x32x64xf32>
  // CHECK: graph.gelu %{{.+}}, approximation = tanh : tensor<8x32x64xf32>
  %2 = graph.gelu %x, approximation = tanh : tensor<8x32x64xf32>
  // CHECK: graph.layer_norm %{{.+}} scale %{{.+}} bias %{{.+}}, axis = 2, epsilon = 1.000000e-05 : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
  %3 = graph.layer_norm %x scale %g bias %b, axis = 2, epsilon = 1.0e-5
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
  // CHECK: graph.layer_norm %{{.+}} bias %{{.+}}, axis = 2
  %4 = graph.layer_norm %x bias %b, axis = 2, epsilon = 1.0e-5
         : (tensor<8x32x64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
  // CHECK: graph.layer_norm %{{.+}}, axis = 1, epsilon = 0.000000e+00 : (tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  %5 = graph.layer_norm %x, axis = 1, epsilon = 0.0 : (tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  // An f32 norm may write bf16 or f16 (the f32 result rounded once).
  // CHECK: graph.layer_norm %{{.+}}, axis = 2, epsilon = 1.000000e-05 : (tensor<8x32x64xf32>) -> tensor<8x32x64xbf16>
  %n16 = graph.layer_norm %x, axis = 2, epsilon = 1.0e-5 : (tensor<8x32x64xf32>) -> tensor<8x32x64xbf16>
  // CHECK: graph.rms_norm %{{.+}}, axis = 2, epsilon = 1.000000e-05 : (tensor<8x32x64xf32>) -> tensor<8x32x64xf16>
  %r16 = graph.rms_norm %x, axis = 2, epsilon = 1.0e-5 : (tensor<8x32x64xf32>) -> tensor<8x32x64xf16>
  // CHECK: graph.rms_norm %{{.+}} scale %{{.+}}, axis = 2, epsilon = 9.9999999999999995E-7 : (tensor<8x32x64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
  %6 = graph.rms_norm %x scale %g, axis = 2, epsilon = 1.0e-6
         : (tensor<8x32x64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
  // The backward ops the gradient rules build.
  // CHECK: graph.gelu_grad %{{.+}}, %{{.+}}, approximation = tanh : tensor<8x32x64xf32>
  %7 = graph.gelu_grad %x, %2, approximation = tanh : tensor<8x32x64xf32>
  // CHECK: graph.norm_grad %{{.+}} scale %{{.+}}, %{{.+}}, axis = 2, epsilon = 1.000000e-05, centered = true : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>)
  %8:2 = graph.norm_grad %x scale %g, %2, axis = 2, epsilon = 1.0e-5, centered = true
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>)
  // CHECK: graph.norm_grad %{{.+}}, %{{.+}}, axis = 1, epsilon = 0.000000e+00, centered = false : (tensor<8x32x64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>)
  %9:2 = graph.norm_grad %x, %2, axis = 1, epsilon = 0.0, centered = false
         : (tensor<8x32x64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>)
  // CHECK: graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}}, axis = 2, epsilon = 1.000000e-05, centered = true {with_bias_grad} : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
  %p:3 = graph.norm_grad_params %x scale %g, %2, axis = 2, epsilon = 1.0e-5, centered = true {with_bias_grad}
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
  // CHECK: graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}}, axis = 2, epsilon = 1.000000e-05, centered = false : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>)
  %r:2 = graph.norm_grad_params %x scale %g, %2, axis = 2, epsilon = 1.0e-5, centered = false
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>)
  // CHECK: graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}} addend %{{.+}}, axis = 2, epsilon = 1.000000e-05, centered = true {narrowed_type = bf16, with_bias_grad} : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x32x64xbf16>)
  %ra:4 = graph.norm_grad_params %x scale %g, %2 addend %x, axis = 2, epsilon = 1.0e-5, centered = true {narrowed_type = bf16, with_bias_grad}
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x32x64xbf16>)
  // CHECK: graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}} addend %{{.+}}, axis = 2, epsilon = 1.000000e-05, centered = false : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>)
  %rb:2 = graph.norm_grad_params %x scale %g, %2 addend %x, axis = 2, epsilon = 1.0e-5, centered = false
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>)
  // CHECK: graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}}, axis = 2, epsilon = 1.000000e-05, centered = false {narrowed_type = f16} : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf16>)
  %rc:3 = graph.norm_grad_params %x scale %g, %2, axis = 2, epsilon = 1.0e-5, centered = false {narrowed_type = f16}
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf16>)
  // CHECK: graph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x32x64xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> tensor<8x32x64xf32>
  %t = graph.constant dense<3> : tensor<8x32xi64>
  %w = graph.constant dense<0.5> : tensor<8x32xf32>
  %10 = graph.softmax_cross_entropy_grad %x, %t, %w
         : (tensor<8x32x64xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> tensor<8x32x64xf32>
  // CHECK: graph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} {classes = 60 : i64} : (tensor<8x32x64xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> tensor<8x32x64xf32>
  %padded = graph.softmax_cross_entropy_grad %x, %t, %w {classes = 60}
         : (tensor<8x32x64xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> tensor<8x32x64xf32>
  // CHECK: graph.softmax_cross_entropy_and_grad %{{.+}}, %{{.+}}, %{{.+}}, reduction = mean, ignore_index = -100 {classes = 60 : i64} : (tensor<8x32x64xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> (tensor<f32>, tensor<8x32x64xf32>)
  %both:2 = graph.softmax_cross_entropy_and_grad %x, %t, %w, reduction = mean, ignore_index = -100 {classes = 60}
         : (tensor<8x32x64xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> (tensor<f32>, tensor<8x32x64xf32>)
  // CHECK: graph.softmax_cross_entropy_and_grad %{{.+}}, %{{.+}}, %{{.+}}, reduction = none : (tensor<8x32x64xbf16>, tensor<8x32xi64>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32x64xbf16>)
  %x16 = graph.convert %x : (tensor<8x32x64xf32>) -> tensor<8x32x64xbf16>
  %each:2 = graph.softmax_cross_entropy_and_grad %x16, %t, %w, reduction = none
         : (tensor<8x32x64xbf16>, tensor<8x32xi64>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32x64xbf16>)
  // CHECK: graph.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01, causal : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x4x32x16xf32>) -> (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>)
  %q = graph.reshape %x : (tensor<8x32x64xf32>) -> tensor<8x4x32x16xf32>
  %kv = graph.constant dense<0.5> : tensor<8x2x32x16xf32>
  %11:3 = graph.attention_grad %q, %kv, %kv, %q, scale = 0.125, causal
         : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x4x32x16xf32>)
         -> (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>)
  // Soft-capped scores (Gemma 2), forward and gradient.
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01, causal {softcap = 5.000000e+01 : f64} : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>) -> tensor<8x4x32x16xf32>
  // CHECK: graph.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01 {softcap = 3.000000e+01 : f64} : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x4x32x16xf32>) -> (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>)
  %capped = graph.attention %q, %kv, %kv, scale = 0.125, causal {softcap = 50.0}
         : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>) -> tensor<8x4x32x16xf32>
  %cappedGrad:3 = graph.attention_grad %q, %kv, %kv, %capped, scale = 0.125 {softcap = 30.0}
         : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x4x32x16xf32>)
         -> (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>)
  // Dropout of the probabilities, forward and gradient (one stream).
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01, causal {data_seed_stride = 9 : i64, dropout = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>) -> tensor<8x4x32x16xf32>
  // CHECK: graph.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01, causal {data_seed_stride = 9 : i64, dropout = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x4x32x16xf32>) -> (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>)
  %dropped = graph.attention %q, %kv, %kv, scale = 0.125, causal {dropout = 0.1, seed = 7, data_seed_stride = 9}
         : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>) -> tensor<8x4x32x16xf32>
  %droppedGrad:3 = graph.attention_grad %q, %kv, %kv, %dropped, scale = 0.125, causal {dropout = 0.1, seed = 7, data_seed_stride = 9}
         : (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x4x32x16xf32>)
         -> (tensor<8x4x32x16xf32>, tensor<8x2x32x16xf32>, tensor<8x2x32x16xf32>)
  // The forward's log-sum-exps, and the gradient reading them (f32 for
  // 16-bit attention).
  // CHECK: %[[O:.+]], %[[LSE:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01, causal {with_lse} : (tensor<8x4x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x2x32x16xbf16>) -> (tensor<8x4x32x16xbf16>, tensor<8x4x32xf32>)
  // CHECK: graph.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} stats(%[[O]], %[[LSE]]), scale = 1.250000e-01, causal : (tensor<8x4x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x4x32x16xbf16>, tensor<8x4x32x16xbf16>, tensor<8x4x32xf32>) -> (tensor<8x4x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x2x32x16xbf16>)
  %q16 = graph.convert %q : (tensor<8x4x32x16xf32>) -> tensor<8x4x32x16xbf16>
  %kv16 = graph.convert %kv : (tensor<8x2x32x16xf32>) -> tensor<8x2x32x16xbf16>
  %o16, %lse = graph.attention %q16, %kv16, %kv16, scale = 0.125, causal {with_lse}
         : (tensor<8x4x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x2x32x16xbf16>)
         -> (tensor<8x4x32x16xbf16>, tensor<8x4x32xf32>)
  %12:3 = graph.attention_grad %q16, %kv16, %kv16, %q16 stats(%o16, %lse), scale = 0.125, causal
         : (tensor<8x4x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x4x32x16xbf16>, tensor<8x4x32x16xbf16>, tensor<8x4x32xf32>)
         -> (tensor<8x4x32x16xbf16>, tensor<8x2x32x16xbf16>, tensor<8x2x32x16xbf16>)
  return
}

// CHECK-LABEL: func.func @optimizer
func.func @optimizer(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>,
                     %v: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %skip: tensor<i1>) {
  // CHECK: graph.adamw_update params(%{{.+}}), grads(%{{.+}}), exp_avgs(%{{.+}}), exp_avg_sqs(%{{.+}}), scalars(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}), beta1 = 9.000000e-01, beta2 = 0.99899999999999999, epsilon = 1.000000e-08 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %0:3 = graph.adamw_update params(%p), grads(%g), exp_avgs(%m), exp_avg_sqs(%v), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8
         : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  // A group of two parameters of different shapes, with the skip flag.
  // CHECK: graph.adamw_update params(%{{.+}}, %{{.+}}), grads(%{{.+}}, %{{.+}}), exp_avgs(%{{.+}}, %{{.+}}), exp_avg_sqs(%{{.+}}, %{{.+}}), scalars(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) skip %{{.+}}, beta1
  // CHECK-SAME: -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  %1:6 = graph.adamw_update params(%p, %b), grads(%g, %b), exp_avgs(%m, %b), exp_avg_sqs(%v, %b), scalars(%s, %s, %s, %s) skip %skip, beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8
         : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
            tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i1>)
        -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  // CHECK: graph.sum_of_squares %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f64>
  %2 = graph.sum_of_squares %g, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f64>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x8x16x32xbf16>, %k: tensor<2x2x24x32xbf16>, %v: tensor<2x2x24x8xbf16>,
                     %m: tensor<2x1x1x24xbf16>, %qkv: tensor<2x16x12x32xbf16>) {
  // Grouped-query attention (8 query heads, 2 key/value heads), causal.
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.250000e-01, causal : {{.+}} -> tensor<2x8x16x8xbf16>
  %0 = graph.attention %q, %k, %v, scale = 0.125, causal
         : (tensor<2x8x16x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x8xbf16>) -> tensor<2x8x16x8xbf16>
  // A padding mask broadcast over heads and queries; not causal.
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}}, scale = 1.250000e-01 : {{.+}} -> tensor<2x8x16x8xbf16>
  %1 = graph.attention %q, %k, %v mask %m, scale = 0.125
         : (tensor<2x8x16x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x8xbf16>, tensor<2x1x1x24xbf16>) -> tensor<2x8x16x8xbf16>
  // The query and the result stored [B, S, H, D] (seq_major), the mask
  // still [B, H, Sq, Sk].
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}}, scale = 1.250000e-01 {seq_major = array<i64: 0, 3>} : (tensor<2x16x8x32xbf16>, {{.+}}) -> tensor<2x16x8x8xbf16>
  %qs = graph.transpose %q, permutation = [0, 2, 1, 3] : (tensor<2x8x16x32xbf16>) -> tensor<2x16x8x32xbf16>
  %2 = graph.attention %qs, %k, %v mask %m, scale = 0.125 {seq_major = array<i64: 0, 3>}
         : (tensor<2x16x8x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x8xbf16>, tensor<2x1x1x24xbf16>) -> tensor<2x16x8x8xbf16>
  // The gradient of the same, every tensor [B, S, H, D].
  // CHECK: graph.attention_grad {{.+}} {seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : {{.+}} -> (tensor<2x16x8x32xbf16>, tensor<2x24x2x32xbf16>, tensor<2x24x2x8xbf16>)
  %ks = graph.transpose %k, permutation = [0, 2, 1, 3] : (tensor<2x2x24x32xbf16>) -> tensor<2x24x2x32xbf16>
  %vs = graph.transpose %v, permutation = [0, 2, 1, 3] : (tensor<2x2x24x8xbf16>) -> tensor<2x24x2x8xbf16>
  %3:3 = graph.attention_grad %qs, %ks, %vs, %2, scale = 0.125 {seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
         : (tensor<2x16x8x32xbf16>, tensor<2x24x2x32xbf16>, tensor<2x24x2x8xbf16>, tensor<2x16x8x8xbf16>)
         -> (tensor<2x16x8x32xbf16>, tensor<2x24x2x32xbf16>, tensor<2x24x2x8xbf16>)
  // Query, key and value as windows of one fused projection's 12 heads
  // (8 query heads, 2 key and 2 value heads), forward and back.
  // CHECK: graph.attention %[[QKV:.+]], %[[QKV]], %[[QKV]], scale = 1.250000e-01, causal {qkv_heads = array<i64: 8, 2>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>) -> tensor<2x16x8x32xbf16>
  // CHECK: graph.attention_grad {{.+}} {qkv_heads = array<i64: 8, 2>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : {{.+}} -> (tensor<2x16x8x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>)
  %4 = graph.attention %qkv, %qkv, %qkv, scale = 0.125, causal {qkv_heads = array<i64: 8, 2>, seq_major = array<i64: 0, 1, 2, 3>}
         : (tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>) -> tensor<2x16x8x32xbf16>
  %5:3 = graph.attention_grad %qkv, %qkv, %qkv, %4, scale = 0.125, causal {qkv_heads = array<i64: 8, 2>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
         : (tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>, tensor<2x16x8x32xbf16>)
         -> (tensor<2x16x8x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>)
  // The same gradients in their windows of one result.
  // CHECK: graph.attention_grad {{.+}} {qkv_heads = array<i64: 8, 2>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : {{.+}} -> tensor<2x16x12x32xbf16>
  %6 = graph.attention_grad %qkv, %qkv, %qkv, %4, scale = 0.125, causal {qkv_heads = array<i64: 8, 2>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
         : (tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>, tensor<2x16x12x32xbf16>, tensor<2x16x8x32xbf16>)
         -> tensor<2x16x12x32xbf16>
  return
}

// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<8x32x128xf32>, %t: tensor<8x32xi64>, %t32: tensor<8x32xi32>) {
  // CHECK: graph.softmax_cross_entropy %{{.+}}, %{{.+}}, reduction = mean, ignore_index = -100 : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  %0 = graph.softmax_cross_entropy %logits, %t, reduction = mean, ignore_index = -100
         : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  // CHECK: graph.softmax_cross_entropy %{{.+}}, %{{.+}}, reduction = mean, ignore_index = -100 {classes = 100 : i64} : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  %pad = graph.softmax_cross_entropy %logits, %t, reduction = mean, ignore_index = -100 {classes = 100}
         : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  // CHECK: graph.softmax_cross_entropy %{{.+}}, %{{.+}}, reduction = sum : (tensor<8x32x128xf32>, tensor<8x32xi32>) -> tensor<f32>
  %1 = graph.softmax_cross_entropy %logits, %t32, reduction = sum
         : (tensor<8x32x128xf32>, tensor<8x32xi32>) -> tensor<f32>
  // CHECK: graph.softmax_cross_entropy %{{.+}}, %{{.+}}, reduction = none : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<8x32xf32>
  %2 = graph.softmax_cross_entropy %logits, %t, reduction = none
         : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<8x32xf32>
  return
}

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // CHECK: %{{.+}}, %{{.+}} = graph.dropout %{{.+}}, ratio = 1.000000e-01, seed = 7 : tensor<8x32xf32>
  %y, %mask = graph.dropout %x, ratio = 0.1, seed = 7 : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// The model contract: parameters, data inputs and named outputs.
// CHECK-LABEL: func.func @model
// CHECK-SAME: %{{.+}}: tensor<4xf32> {train.init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>, train.param = "ln.weight"}
// CHECK-SAME: %{{.+}}: tensor<4xf32> {train.frozen, train.init = dense<0.000000e+00> : tensor<4xf32>, train.param = "ln.bias"}
// CHECK-SAME: %{{.+}}: tensor<2x4xf32> {graph.input = "x"}
// CHECK-SAME: -> (tensor<2x4xf32> {graph.output = "y"})
func.func @model(%w: tensor<4xf32> {train.param = "ln.weight", train.init = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>},
                 %b: tensor<4xf32> {train.param = "ln.bias", train.init = dense<0.0> : tensor<4xf32>, train.frozen},
                 %x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<2x4xf32> {graph.output = "y"}) {
  %y = graph.layer_norm %x scale %w bias %b, axis = 1, epsilon = 1.0e-5
         : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @scatter_add
func.func @scatter_add(%u: tensor<2x3x8xf32>, %i: tensor<2x3xi64>) -> tensor<16x8xf32> {
  // CHECK: graph.scatter_add %{{.+}}[%{{.+}}], axis = 0 : (tensor<2x3x8xf32>, tensor<2x3xi64>) -> tensor<16x8xf32>
  %0 = graph.scatter_add %u[%i], axis = 0 : (tensor<2x3x8xf32>, tensor<2x3xi64>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @argsort
func.func @argsort(%x: tensor<4x8xbf16>, %i: tensor<5xi32>) -> (tensor<4x8xi64>, tensor<5xi64>, tensor<4x8xi64>) {
  // CHECK: graph.argsort %{{.+}}, axis = 1, descending = true : (tensor<4x8xbf16>) -> tensor<4x8xi64>
  %0 = graph.argsort %x, axis = 1, descending = true : (tensor<4x8xbf16>) -> tensor<4x8xi64>
  // CHECK: graph.argsort %{{.+}}, axis = 0, descending = false : (tensor<5xi32>) -> tensor<5xi64>
  %1 = graph.argsort %i, axis = 0, descending = false : (tensor<5xi32>) -> tensor<5xi64>
  // CHECK: graph.argsort %{{.+}}, axis = 0, descending = false total_order : (tensor<4x8xbf16>) -> tensor<4x8xi64>
  %2 = graph.argsort %x, axis = 0, descending = false total_order : (tensor<4x8xbf16>) -> tensor<4x8xi64>
  return %0, %1, %2 : tensor<4x8xi64>, tensor<5xi64>, tensor<4x8xi64>
}

// The storage-only types: MLIR's f8 and sub-byte integers, and the
// dialect's own f4E2M1FN and f8E8M0FNU, in and out of graph.convert.
// CHECK-LABEL: func.func @storage_types
func.func @storage_types(%x: tensor<4xf32>, %s: tensor<4x!graph.f8E8M0FNU>) -> (tensor<4x!graph.f4E2M1FN>, tensor<4xf32>, tensor<4xf8E4M3FN>, tensor<4xui4>) {
  // CHECK: graph.convert %{{.+}} : (tensor<4xf32>) -> tensor<4x!graph.f4E2M1FN>
  %0 = graph.convert %x : (tensor<4xf32>) -> tensor<4x!graph.f4E2M1FN>
  // CHECK: graph.convert %{{.+}} : (tensor<4x!graph.f8E8M0FNU>) -> tensor<4xf32>
  %1 = graph.convert %s : (tensor<4x!graph.f8E8M0FNU>) -> tensor<4xf32>
  %2 = graph.convert %x : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  %3 = graph.convert %x : (tensor<4xf32>) -> tensor<4xui4>
  return %0, %1, %2, %3 : tensor<4x!graph.f4E2M1FN>, tensor<4xf32>, tensor<4xf8E4M3FN>, tensor<4xui4>
}

// ZeRO's collectives on 2 data-parallel ranks, and a padded part: 5 rows
// split 2 ways are parts of 3 rows.
// CHECK-LABEL: func.func @zero_collectives
// CHECK-SAME: graph.global_shape = array<i64: 5, 2>, graph.sharding = ["data", ""]
// CHECK: graph.all_gather %{{.+}}, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
// CHECK: graph.reduce_scatter %{{.+}}, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
// CHECK: graph.shard_slice %{{.+}}, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
module attributes {graph.mesh = {data = 2 : i64}} {
func.func @zero_collectives(%p: tensor<3x2xf32> {graph.sharding = ["data", ""], graph.global_shape = array<i64: 5, 2>}) -> tensor<3x2xf32> {
  %whole = graph.all_gather %p, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
  %sum = graph.reduce_scatter %whole, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
  %mine = graph.shard_slice %whole, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
  %r = graph.add %sum, %mine : tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}
}

// The lower phase's fused loop: a body of 0-d ops, a 0-d operand, two
// results.
// CHECK-LABEL: func.func @fused_elementwise
// CHECK: %[[F:.+]]:2 = graph.fused_elementwise %{{.+}}, %{{.+}} : (tensor<4x8xbf16>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
// CHECK: ^bb0(%[[A:.+]]: tensor<bf16>, %[[S:.+]]: tensor<f32>):
// CHECK: %[[W:.+]] = graph.convert %[[A]] : (tensor<bf16>) -> tensor<f32>
// CHECK: %[[M:.+]] = graph.mul %[[W]], %[[S]] : tensor<f32>
// CHECK: %[[P:.+]] = graph.compare GT, %[[M]], %[[S]] : tensor<f32>
// CHECK: graph.yield %[[M]], %[[P]] : tensor<f32>, tensor<i1>
func.func @fused_elementwise(%x: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %r:2 = graph.fused_elementwise %x, %s : (tensor<4x8xbf16>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  ^bb0(%a: tensor<bf16>, %b: tensor<f32>):
    %w = graph.convert %a : (tensor<bf16>) -> tensor<f32>
    %m = graph.mul %w, %b : tensor<f32>
    %p = graph.compare GT, %m, %b : tensor<f32>
    graph.yield %m, %p : tensor<f32>, tensor<i1>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xi1>
}

// An integer loop (a threefry round's steps): ui32 arithmetic and bit
// ops, a 0-d key word, a ui64 counter narrowed, an i1 predicate.
// A per-channel scale and a size-1 dimension read in place.
// CHECK-LABEL: func.func @fused_elementwise_broadcast
// CHECK: graph.fused_elementwise %{{.+}}, %{{.+}}, %{{.+}} {operand_dims = [array<i64: 0, 1, 2, 3>, array<i64: 1>, array<i64: 0, 2>]} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3x4x5xf32>
func.func @fused_elementwise_broadcast(%x: tensor<2x3x4x5xf32>, %s: tensor<3xf32>, %t: tensor<2x1xf32>) -> tensor<2x3x4x5xf32> {
  %r = graph.fused_elementwise %x, %s, %t {operand_dims = [array<i64: 0, 1, 2, 3>, array<i64: 1>, array<i64: 0, 2>]} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3x4x5xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>):
    %m = graph.mul %a, %b : tensor<f32>
    %p = graph.add %m, %c : tensor<f32>
    graph.yield %p : tensor<f32>
  }
  return %r : tensor<2x3x4x5xf32>
}

// CHECK-LABEL: func.func @fused_elementwise_integers
// CHECK: graph.fused_elementwise %{{.+}}, %{{.+}}, %{{.+}} : (tensor<16xui32>, tensor<ui32>, tensor<16xui64>) -> (tensor<16xui32>, tensor<16xi1>) {
// CHECK: graph.shift_left
// CHECK: graph.xor
// CHECK: graph.compare LT
func.func @fused_elementwise_integers(%x: tensor<16xui32>, %k: tensor<ui32>, %c: tensor<16xui64>) -> (tensor<16xui32>, tensor<16xi1>) {
  %r:2 = graph.fused_elementwise %x, %k, %c : (tensor<16xui32>, tensor<ui32>, tensor<16xui64>) -> (tensor<16xui32>, tensor<16xi1>) {
  ^bb0(%a: tensor<ui32>, %b: tensor<ui32>, %n: tensor<ui64>):
    %lo = graph.convert %n : (tensor<ui64>) -> tensor<ui32>
    %s = graph.add %a, %lo : tensor<ui32>
    %t = graph.shift_left %s, %b : tensor<ui32>
    %u = graph.xor %t, %s : tensor<ui32>
    %p = graph.compare LT, %u, %b : tensor<ui32>
    %v = graph.select %p, %u, %a : tensor<i1>, tensor<ui32>
    graph.yield %v, %p : tensor<ui32>, tensor<i1>
  }
  return %r#0, %r#1 : tensor<16xui32>, tensor<16xi1>
}

// The parameters' casts at once.
// CHECK-LABEL: func.func @convert_group
// CHECK: graph.convert_group %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<8xbf16>)
func.func @convert_group(%w: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<8xbf16>) {
  %r:2 = graph.convert_group %w, %b : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<8xbf16>)
  return %r#0, %r#1 : tensor<4x8xbf16>, tensor<8xbf16>
}

// The schedule phase's asynchronous forms: a start, and a done that reads
// the pending value and the start's operand.
// CHECK-LABEL: func.func @async_collectives
// CHECK: %[[P:.+]] = graph.all_reduce_start %{{.+}}, axis = "data" : tensor<6x2xf32>
// CHECK: graph.collective_done %[[P]], %{{.+}} : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
// CHECK: graph.reduce_scatter_start %{{.+}}, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
// CHECK: graph.all_gather_start %{{.+}}, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
module attributes {graph.mesh = {data = 2 : i64}} {
func.func @async_collectives(%x: tensor<6x2xf32>, %y: tensor<3x2xf32>) -> (tensor<6x2xf32>, tensor<3x2xf32>, tensor<6x2xf32>) {
  %p = graph.all_reduce_start %x, axis = "data" : tensor<6x2xf32>
  %s = graph.collective_done %p, %x : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %q = graph.reduce_scatter_start %x, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
  %t = graph.collective_done %q, %x : (tensor<3x2xf32>, tensor<6x2xf32>) -> tensor<3x2xf32>
  %g = graph.all_gather_start %y, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
  %w = graph.collective_done %g, %y : (tensor<6x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
  return %s, %t, %w : tensor<6x2xf32>, tensor<3x2xf32>, tensor<6x2xf32>
}
}
