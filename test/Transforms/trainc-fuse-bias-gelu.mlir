// RUN: trainc-opt %s --trainc-fuse-bias-gelu -split-input-file | FileCheck %s

// An MLP's first layer in training: the GELU comes from the fused op, and
// the GELU's gradient reads the pre-activation, its second result. The op
// takes the dot's place, before the other use of the GELU's operand.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xbf16>, %[[W:.+]]: tensor<16x8xbf16>, %[[B:.+]]: tensor<16xbf16>, %[[G:.+]]: tensor<4x16xbf16>)
// CHECK-NEXT: %[[H:.+]], %[[P:.+]] = graph.dot_general_bias_gelu %[[X]], %[[W]], %[[B]], batching_dims = [] x [], contracting_dims = [1] x [1], approximation = tanh : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
// CHECK-NEXT: %[[D:.+]] = graph.gelu_grad %[[P]], %[[G]], approximation = tanh
// CHECK-NEXT: return %[[H]], %[[D]]
func.func @mlp(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>, %g: tensor<4x16xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %p = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  %d = graph.gelu_grad %p, %g, approximation = tanh : tensor<4x16xbf16>
  %h = graph.gelu %p, approximation = tanh : tensor<4x16xbf16>
  return %h, %d : tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// The erf form, f32 and tf32: the op is the same on every type (the GPU
// chooses its epilogue); a recompute clone's mark on both is kept.
// CHECK-LABEL: func.func @erf_tf32_marked
// CHECK-NEXT: %[[H:.+]], %{{.+}} = graph.dot_general_bias_gelu {{.*}} approximation = erf {recompute.clone = 1 : i64, tf32}
// CHECK-NEXT: return %[[H]]
func.func @erf_tf32_marked(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %p = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {recompute.clone = 1 : i64, tf32}
      : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h = graph.gelu %p, approximation = erf {recompute.clone = 1 : i64} : tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

// Not fused: a GELU of a product without a bias, and of a dot_general_bias
// whose mark differs from the GELU's (a recompute clone's).
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: graph.dot_general_bias_gelu
// CHECK-COUNT-2: graph.gelu
func.func @unfused(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h1 = graph.gelu %p, approximation = tanh : tensor<4x16xf32>
  %q = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {recompute.clone = 1 : i64}
      : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h2 = graph.gelu %q, approximation = tanh : tensor<4x16xf32>
  return %h1, %h2 : tensor<4x16xf32>, tensor<4x16xf32>
}
