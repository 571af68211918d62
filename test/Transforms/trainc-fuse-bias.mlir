// RUN: trainc-opt %s --trainc-fuse-bias -split-input-file | FileCheck %s

// A linear layer x @ w^T + b: the dot adds the bias, and the broadcast and
// the add are gone.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[W:.+]]: tensor<16x8xf32>, %[[B:.+]]: tensor<16xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.dot_general_bias %[[X]], %[[W]], %[[B]], batching_dims = [] x [], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [2] x [1]
      : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %bb = graph.broadcast_in_dim %b, dims = [2] : (tensor<16xf32>) -> tensor<2x4x16xf32>
  %y = graph.add %p, %bb : tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// A tf32 product (--precision tf32) stays tf32 with its bias.
// CHECK-LABEL: func.func @tf32
// CHECK-NEXT: graph.dot_general_bias {{.*}} contracting_dims = [1] x [0] {tf32}
// CHECK-NEXT: return
func.func @tf32(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] {tf32}
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %y = graph.add %p, %bb : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// The bias first (as PyTorch's exporter writes it), one broadcast shared by
// two layers: both fuse, and the broadcast goes once nothing reads it.
// CHECK-LABEL: func.func @shared_broadcast
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x8xf32>, %[[B:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.dot_general_bias %[[X]], %[[W]], %[[B]]
// CHECK-NEXT: %[[Z:.+]] = graph.dot_general_bias %[[Y]], %[[W]], %[[B]]
// CHECK-NEXT: return %[[Z]]
func.func @shared_broadcast(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = graph.add %bb, %p : tensor<4x8xf32>
  %q = graph.dot_general %y, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = graph.add %bb, %q : tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// A batched product: the bias covers rhs's free dimension, over the batch
// and lhs's free dimension.
// CHECK-LABEL: func.func @batched
// CHECK: graph.dot_general_bias %{{.+}}, %{{.+}}, %{{.+}}, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NOT: graph.add
func.func @batched(%a: tensor<2x4x8xf32>, %m: tensor<2x8x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %p = graph.dot_general %a, %m, batching_dims = [0] x [0], contracting_dims = [2] x [1]
      : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %bb = graph.broadcast_in_dim %b, dims = [2] : (tensor<16xf32>) -> tensor<2x4x16xf32>
  %y = graph.add %p, %bb : tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// What stays: a product read twice (the add is not its only use), a vector
// broadcast along lhs's free dimension, a size-1 bias broadcast onto the
// whole row, an add of a full tensor, a dot and an add whose marks differ
// (a recompute clone's), and a bias of the right shape broadcast along the
// wrong dimension of a square result.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: graph.dot_general_bias
// CHECK-COUNT-6: graph.add
func.func @unfused(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %r: tensor<4xf32>,
                   %one: tensor<1xf32>, %full: tensor<4x16xf32>, %sq: tensor<16x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x16xf32>) {
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y1 = graph.add %p, %bb : tensor<4x16xf32>
  %p2 = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %y2 = graph.add %p2, %rb : tensor<4x16xf32>
  %p3 = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %ob = graph.broadcast_in_dim %one, dims = [1] : (tensor<1xf32>) -> tensor<4x16xf32>
  %y3 = graph.add %p3, %ob : tensor<4x16xf32>
  %p4 = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y4 = graph.add %p4, %full : tensor<4x16xf32>
  %p5 = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] {recompute.clone = 1 : i64}
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y5 = graph.add %p5, %bb : tensor<4x16xf32>
  %p6 = graph.dot_general %sq, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x16xf32>
  %cb = graph.broadcast_in_dim %b, dims = [0] : (tensor<16xf32>) -> tensor<16x16xf32>
  %y6 = graph.add %p6, %cb : tensor<16x16xf32>
  return %p, %y1, %y2, %y3, %y4, %y5, %y6 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x16xf32>
}

// -----

// A recompute clone's mark on both: kept on the fused op.
// CHECK-LABEL: func.func @marked
// CHECK: graph.dot_general_bias {{.+}} {recompute.clone = 1 : i64}
func.func @marked(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] {recompute.clone = 1 : i64}
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y = graph.add %p, %bb {recompute.clone = 1 : i64} : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
