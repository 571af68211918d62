// RUN: trainc-opt %s --trainc-fuse-bias-grad -split-input-file | FileCheck %s

// A linear layer x @ w^T + b in bf16 (the mixed-precision backward pass):
// the weight gradient dy^T x kept in f32 and the bias gradient, dy summed
// over the rows in f32, become one op at the product's place.
// CHECK-LABEL: func.func @lhs_widened
// CHECK-SAME: (%[[DY:.+]]: tensor<2x4x8xbf16>, %[[X:.+]]: tensor<2x4x16xbf16>)
// CHECK-NEXT: %[[DW:.+]], %[[DB:.+]] = graph.dot_general_bias_grad %[[DY]], %[[X]], batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {f32_result, f32_sum} : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>)
// CHECK-NEXT: return %[[DW]], %[[DB]]
func.func @lhs_widened(%dy: tensor<2x4x8xbf16>, %x: tensor<2x4x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %db = graph.reduce_sum %dy, dims = [0, 1] : (tensor<2x4x8xbf16>) -> tensor<8xf32>
  %dw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {f32_result}
      : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> tensor<8x16xf32>
  return %dw, %db : tensor<8x16xf32>, tensor<8xf32>
}

// -----

// Hugging Face GPT-2's Conv1D, x @ w + b with w [in, out]: the weight
// gradient is x^T dy, dy the rhs; the sum's dims in another order.
// CHECK-LABEL: func.func @rhs
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x16xf32>, %[[DY:.+]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[DW:.+]], %[[DB:.+]] = graph.dot_general_bias_grad %[[X]], %[[DY]], batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {sum_rhs} : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<8xf32>)
// CHECK-NEXT: return %[[DW]], %[[DB]]
func.func @rhs(%x: tensor<2x4x16xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<8xf32>) {
  %dw = graph.dot_general %x, %dy, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1]
      : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %db = graph.reduce_sum %dy, dims = [1, 0] : (tensor<2x4x8xf32>) -> tensor<8xf32>
  return %dw, %db : tensor<16x8xf32>, tensor<8xf32>
}

// -----

// An f16 sum that was not widened stays f16 (no f32_sum).
// CHECK-LABEL: func.func @f16
// CHECK-NEXT: graph.dot_general_bias_grad {{.*}} contracting_dims = [0] x [0] : (tensor<4x8xf16>, tensor<4x16xf16>) -> (tensor<8x16xf16>, tensor<8xf16>)
// CHECK-NOT: graph.reduce_sum
func.func @f16(%dy: tensor<4x8xf16>, %x: tensor<4x16xf16>) -> (tensor<8x16xf16>, tensor<8xf16>) {
  %dw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
      : (tensor<4x8xf16>, tensor<4x16xf16>) -> tensor<8x16xf16>
  %db = graph.reduce_sum %dy, dims = [0] : (tensor<4x8xf16>) -> tensor<8xf16>
  return %dw, %db : tensor<8x16xf16>, tensor<8xf16>
}

// -----

// The sum is used before the product (a bucket's collective starts
// there): the fused op takes the sum's place, x being defined before it.
// CHECK-LABEL: func.func @at_the_sum
// CHECK-NEXT: %[[DW:.+]], %[[DB:.+]] = graph.dot_general_bias_grad
// CHECK-NEXT: %[[N:.+]] = graph.neg %[[DB]]
// CHECK-NEXT: %[[DX:.+]] = graph.neg %{{.+}} : tensor<4x8xf32>
// CHECK-NEXT: return %[[DW]], %[[N]], %[[DX]]
func.func @at_the_sum(%dy: tensor<4x8xf32>, %x: tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>, tensor<4x8xf32>) {
  %db = graph.reduce_sum %dy, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %n = graph.neg %db : tensor<8xf32>
  %dx = graph.neg %dy : tensor<4x8xf32>
  %dw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
      : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %dw, %n, %dx : tensor<8x16xf32>, tensor<8xf32>, tensor<4x8xf32>
}

// -----

// An f16 sum widened for its f32 bias just after it, before the product:
// the convert moves after the product, and the fused op takes the
// product's place (after the input gradient, as the schedule put it).
// CHECK-LABEL: func.func @f16_widened_before_the_product
// CHECK-NEXT: %[[DX:.+]] = graph.neg %{{.+}} : tensor<4x8xf16>
// CHECK-NEXT: %[[DW:.+]], %[[DB:.+]] = graph.dot_general_bias_grad
// CHECK-NEXT: %[[W:.+]] = graph.convert %[[DB]] : (tensor<8xf16>) -> tensor<8xf32>
// CHECK-NEXT: return %[[DW]], %[[W]], %[[DX]]
func.func @f16_widened_before_the_product(%dy: tensor<4x8xf16>, %x: tensor<4x16xf16>) -> (tensor<8x16xf16>, tensor<8xf32>, tensor<4x8xf16>) {
  %db = graph.reduce_sum %dy, dims = [0] : (tensor<4x8xf16>) -> tensor<8xf16>
  %w = graph.convert %db : (tensor<8xf16>) -> tensor<8xf32>
  %dx = graph.neg %dy : tensor<4x8xf16>
  %dw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
      : (tensor<4x8xf16>, tensor<4x16xf16>) -> tensor<8x16xf16>
  return %dw, %w, %dx : tensor<8x16xf16>, tensor<8xf32>, tensor<4x8xf16>
}

// -----

// The sum is used before the product and x is made after the sum: no place
// suits both, and the two stay.
// CHECK-LABEL: func.func @no_place
// CHECK-NEXT: graph.reduce_sum
// CHECK-NEXT: graph.neg
// CHECK-NEXT: graph.neg
// CHECK-NEXT: graph.dot_general %
// CHECK-NOT: dot_general_bias_grad
func.func @no_place(%dy: tensor<4x8xf32>, %y: tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %db = graph.reduce_sum %dy, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %n = graph.neg %db : tensor<8xf32>
  %x = graph.neg %y : tensor<4x16xf32>
  %dw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
      : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %dw, %n : tensor<8x16xf32>, tensor<8xf32>
}

// -----

// What stays: a sum over other dims than the contraction, a product with
// batching dims, and a sum and product with different marks (a recompute
// clone's).
// CHECK-LABEL: func.func @stays
// CHECK-NOT: dot_general_bias_grad
// CHECK: return
func.func @stays(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x16xf32>) -> (tensor<4x8xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<8x16xf32>, tensor<8xf32>) {
  %other = graph.reduce_sum %dy, dims = [0] : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
  %bw = graph.dot_general %dy, %x, batching_dims = [0] x [0], contracting_dims = [1] x [1]
      : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %bs = graph.reduce_sum %dy, dims = [1] : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
  %mw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1]
      : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %ms = graph.reduce_sum %dy, dims = [0, 1] {recompute.clone = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<8xf32>
  return %other, %bw, %bs, %mw, %ms : tensor<4x8xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<8x16xf32>, tensor<8xf32>
}

// -----

// Marks that agree are kept on the fused op.
// CHECK-LABEL: func.func @marked
// CHECK-NEXT: graph.dot_general_bias_grad {{.+}} {recompute.clone = 1 : i64}
func.func @marked(%dy: tensor<4x8xf32>, %x: tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %dw = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0] {recompute.clone = 1 : i64}
      : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %db = graph.reduce_sum %dy, dims = [0] {recompute.clone = 1 : i64} : (tensor<4x8xf32>) -> tensor<8xf32>
  return %dw, %db : tensor<8x16xf32>, tensor<8xf32>
}
