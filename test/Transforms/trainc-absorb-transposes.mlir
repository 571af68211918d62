// RUN: trainc-opt %s --trainc-absorb-transposes -split-input-file | FileCheck %s

// A weight used transposed by a matmul: the dot reads it in place, with its
// contracting dimension renumbered, and the transpose is gone.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.dot_general %[[X]], %[[W]], batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %wt = graph.transpose %w, permutation = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = graph.dot_general %x, %wt, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Attention's K^T with batch and head dims: both dots read K directly.
// CHECK-LABEL: func.func @scores
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[K:.+]]: tensor<2x4x8x16xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.dot_general %[[Q]], %[[K]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
// CHECK: graph.dot_general %[[K]], %[[Q]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
func.func @scores(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %kt = graph.transpose %k, permutation = [0, 1, 3, 2] : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
      : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %t = graph.dot_general %kt, %q, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [3]
      : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  return %s, %t : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// A transpose with another use stays for every use (it is materialized
// anyway).
// CHECK-LABEL: func.func @also_returned
// CHECK: %[[T:.+]] = graph.transpose
// CHECK: graph.dot_general %{{.+}}, %[[T]]
// CHECK: return %{{.+}}, %[[T]]
func.func @also_returned(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %wt = graph.transpose %w, permutation = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = graph.dot_general %x, %wt, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y, %wt : tensor<4x16xf32>, tensor<8x16xf32>
}

// -----

// Reading through the transpose would reorder the operand's free dims
// (the result lists them in operand order): it stays.
// CHECK-LABEL: func.func @reorders_free_dims
// CHECK: %[[T:.+]] = graph.transpose
// CHECK: graph.dot_general %{{.+}}, %[[T]]
func.func @reorders_free_dims(%x: tensor<4x8xf32>, %w: tensor<3x5x8xf32>) -> tensor<4x5x3xf32> {
  %wt = graph.transpose %w, permutation = [2, 1, 0] : (tensor<3x5x8xf32>) -> tensor<8x5x3xf32>
  %y = graph.dot_general %x, %wt, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x5x3xf32>) -> tensor<4x5x3xf32>
  return %y : tensor<4x5x3xf32>
}
