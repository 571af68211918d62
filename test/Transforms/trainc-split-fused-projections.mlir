// RUN: trainc-opt %s --pass-pipeline="builtin.module(func.func(trainc-split-fused-projections))" -split-input-file | FileCheck %s

// A fused QKV projection with a broadcast bias, sliced three ways along the
// features: one product per slice, of the weight's slice (its dimension 1
// makes result dimension 2) plus the bias's slice, broadcast.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[W:.+]]: tensor<64x192xf32>, %[[B:.+]]: tensor<192xf32>)
// CHECK: %[[WQ:.+]] = graph.slice %[[W]], start = [0, 0], limit = [64, 64]
// CHECK: %[[Q:.+]] = graph.dot_general %[[X]], %[[WQ]]{{.*}} -> tensor<2x8x64xf32>
// CHECK: %[[BQ:.+]] = graph.slice %[[B]], start = [0], limit = [64]
// CHECK: %[[BQB:.+]] = graph.broadcast_in_dim %[[BQ]], dims = [2] : (tensor<64xf32>) -> tensor<2x8x64xf32>
// CHECK: %[[QB:.+]] = graph.add %[[BQB]], %[[Q]]
// CHECK: graph.slice %[[W]], start = [0, 64], limit = [64, 128]
// CHECK: graph.slice %[[B]], start = [64], limit = [128]
// CHECK: graph.slice %[[W]], start = [0, 128], limit = [64, 192]
// CHECK: graph.slice %[[B]], start = [128], limit = [192]
// CHECK-NOT: tensor<2x8x192xf32>
// CHECK: return %[[QB]],
func.func @qkv(%x: tensor<2x8x64xf32>, %w: tensor<64x192xf32>, %b: tensor<192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  %d = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x192xf32>) -> tensor<2x8x192xf32>
  %bb = graph.broadcast_in_dim %b, dims = [2] : (tensor<192xf32>) -> tensor<2x8x192xf32>
  %f = graph.add %bb, %d : tensor<2x8x192xf32>
  %q = graph.slice %f, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %k = graph.slice %f, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %v = graph.slice %f, start = [0, 0, 128], limit = [2, 8, 192], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  return %q, %k, %v : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
}

// -----

// The weight as lhs ([192, 64] rows make result dimension 0), no bias.
// CHECK-LABEL: func.func @lhs_weight
// CHECK: %[[A:.+]] = graph.slice %arg0, start = [0, 0], limit = [96, 64]
// CHECK: graph.dot_general %[[A]], %arg1{{.*}} -> tensor<96x8xf32>
// CHECK: %[[B:.+]] = graph.slice %arg0, start = [96, 0], limit = [192, 64]
// CHECK: graph.dot_general %[[B]], %arg1{{.*}} -> tensor<96x8xf32>
func.func @lhs_weight(%w: tensor<192x64xf32>, %x: tensor<64x8xf32>) -> (tensor<96x8xf32>, tensor<96x8xf32>) {
  %d = graph.dot_general %w, %x, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<192x64xf32>, tensor<64x8xf32>) -> tensor<192x8xf32>
  %a = graph.slice %d, start = [0, 0], limit = [96, 8], strides = [1, 1] : (tensor<192x8xf32>) -> tensor<96x8xf32>
  %b = graph.slice %d, start = [96, 0], limit = [192, 8], strides = [1, 1] : (tensor<192x8xf32>) -> tensor<96x8xf32>
  return %a, %b : tensor<96x8xf32>, tensor<96x8xf32>
}

// -----

// Left alone: a user that is not a slice, a slice with a stride, and
// slices of a batching dimension (in both operands).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: graph.dot_general
// CHECK-NOT: graph.dot_general
func.func @kept(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %xb: tensor<3x4x8xf32>, %wb: tensor<3x8x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<1x4x8xf32>, tensor<2x4x8xf32>) {
  %d = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = graph.slice %d, start = [0, 0], limit = [4, 8], strides = [1, 1] : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %e = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = graph.slice %e, start = [0, 0], limit = [4, 16], strides = [1, 2] : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %f = graph.dot_general %xb, %wb, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x4x8xf32>, tensor<3x8x8xf32>) -> tensor<3x4x8xf32>
  %f0 = graph.slice %f, start = [0, 0, 0], limit = [1, 4, 8], strides = [1, 1, 1] : (tensor<3x4x8xf32>) -> tensor<1x4x8xf32>
  %f1 = graph.slice %f, start = [1, 0, 0], limit = [3, 4, 8], strides = [1, 1, 1] : (tensor<3x4x8xf32>) -> tensor<2x4x8xf32>
  return %a, %d, %s, %f0, %f1 : tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<1x4x8xf32>, tensor<2x4x8xf32>
}
