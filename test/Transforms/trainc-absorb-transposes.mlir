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

// -----

// A weight gradient X^T dY transposed to the weight's layout: the dot is
// written with its operands swapped and the transpose is gone.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8xf32>, %[[DY:.+]]: tensor<2x3x16xf32>)
// CHECK-NOT: graph.transpose
// CHECK: %[[G:.+]] = graph.dot_general %[[DY]], %[[X]], batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x3x16xf32>, tensor<2x3x8xf32>) -> tensor<16x8xf32>
// CHECK: return %[[G]]
func.func @weight_gradient(%x: tensor<2x3x8xf32>, %dy: tensor<2x3x16xf32>) -> tensor<16x8xf32> {
  %g = graph.dot_general %x, %dy, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1]
      : (tensor<2x3x8xf32>, tensor<2x3x16xf32>) -> tensor<8x16xf32>
  %t = graph.transpose %g, permutation = [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

// -----

// The swapped dot keeps its TF32 rounding (--precision tf32).
// CHECK-LABEL: func.func @weight_gradient_tf32
// CHECK-NOT: graph.transpose
// CHECK: graph.dot_general {{.*}} contracting_dims = [0] x [0] {tf32} : (tensor<3x16xf32>, tensor<3x8xf32>) -> tensor<16x8xf32>
func.func @weight_gradient_tf32(%x: tensor<3x8xf32>, %dy: tensor<3x16xf32>) -> tensor<16x8xf32> {
  %g = graph.dot_general %x, %dy, batching_dims = [] x [], contracting_dims = [0] x [0] {tf32}
      : (tensor<3x8xf32>, tensor<3x16xf32>) -> tensor<8x16xf32>
  %t = graph.transpose %g, permutation = [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

// -----

// With batch dims and several free dims per operand: batch dims stay
// first, each operand's free dims keep their order.
// CHECK-LABEL: func.func @batched_blocks
// CHECK-SAME: (%[[A:.+]]: tensor<2x3x4x5xf32>, %[[B:.+]]: tensor<2x5x6x7xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.dot_general %[[B]], %[[A]], batching_dims = [0] x [0], contracting_dims = [1] x [3] : (tensor<2x5x6x7xf32>, tensor<2x3x4x5xf32>) -> tensor<2x6x7x3x4xf32>
func.func @batched_blocks(%a: tensor<2x3x4x5xf32>, %b: tensor<2x5x6x7xf32>) -> tensor<2x6x7x3x4xf32> {
  %c = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [3] x [1]
      : (tensor<2x3x4x5xf32>, tensor<2x5x6x7xf32>) -> tensor<2x3x4x6x7xf32>
  %t = graph.transpose %c, permutation = [0, 3, 4, 1, 2] : (tensor<2x3x4x6x7xf32>) -> tensor<2x6x7x3x4xf32>
  return %t : tensor<2x6x7x3x4xf32>
}

// -----

// A product also used untransposed, or a permutation that mixes the free
// dims: the transpose stays.
// CHECK-LABEL: func.func @product_kept
// CHECK: graph.transpose
// CHECK: graph.transpose
func.func @product_kept(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %a: tensor<2x3x4x5xf32>, %b: tensor<2x5x6x7xf32>)
    -> (tensor<16x4xf32>, tensor<4x16xf32>, tensor<2x6x3x7x4xf32>) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %t = graph.transpose %y, permutation = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %c = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [3] x [1]
      : (tensor<2x3x4x5xf32>, tensor<2x5x6x7xf32>) -> tensor<2x3x4x6x7xf32>
  %u = graph.transpose %c, permutation = [0, 3, 1, 4, 2] : (tensor<2x3x4x6x7xf32>) -> tensor<2x6x3x7x4xf32>
  return %t, %y, %u : tensor<16x4xf32>, tensor<4x16xf32>, tensor<2x6x3x7x4xf32>
}

// -----

// A GPT block's attention: q, k and v are a projection reshaped to
// [B, S, H, D] and transposed into heads, the output transposed back. The
// forward op and its gradient read and write [B, S, H, D] in place (their
// seq_major lists), and no transpose is left. The saved q, k and v are read
// by both ops; the transposes of the gradients go too.
// CHECK-LABEL: func.func @gpt_block
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x8x4x16xf32>, %[[K:[^:]+]]: tensor<2x8x4x16xf32>, %[[V:[^:]+]]: tensor<2x8x4x16xf32>, %[[G:[^:]+]]: tensor<2x8x4x16xf32>)
// CHECK-NOT: graph.transpose
// CHECK: %[[O:.+]] = graph.attention %[[Q]], %[[K]], %[[V]], scale = 2.500000e-01, causal {seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
// CHECK: %[[D:[^ ]+]]:3 = graph.attention_grad %[[Q]], %[[K]], %[[V]], %[[G]], scale = 2.500000e-01, causal {seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : {{.*}} -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
// CHECK: return %[[O]], %[[D]]#0, %[[D]]#1, %[[D]]#2
func.func @gpt_block(%qs: tensor<2x8x4x16xf32>, %ks: tensor<2x8x4x16xf32>, %vs: tensor<2x8x4x16xf32>, %gs: tensor<2x8x4x16xf32>)
    -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) {
  %q = graph.transpose %qs, permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %k = graph.transpose %ks, permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %v = graph.transpose %vs, permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o = graph.attention %q, %k, %v, scale = 0.25, causal : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %os = graph.transpose %o, permutation = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %g = graph.transpose %gs, permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %g, scale = 0.25, causal
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
      -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  %dqs = graph.transpose %dq, permutation = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %dks = graph.transpose %dk, permutation = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %dvs = graph.transpose %dv, permutation = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  return %os, %dqs, %dks, %dvs : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
}

// -----

// What stays: a transpose of the mask (always [B, H, Sq, Sk]), a
// permutation other than heads <-> sequence, a result with another use
// besides its transpose, and an operand transpose that is also returned.
// A transpose into an operand listed as [B, S, H, D] flips it back.
// CHECK-LABEL: func.func @stays
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x2x4x8xf32>, %[[M:[^:]+]]: tensor<1x4x2x4xf32>, %[[Y:[^:]+]]: tensor<1x2x8x4xf32>)
// CHECK: %[[MT:.+]] = graph.transpose %[[M]], permutation = [0, 2, 1, 3]
// CHECK: %[[YT:.+]] = graph.transpose %[[Y]], permutation = [0, 1, 3, 2]
// CHECK: %[[XT:.+]] = graph.transpose %[[X]], permutation = [0, 2, 1, 3]
// CHECK-NOT: graph.transpose
// CHECK: %[[O:.+]] = graph.attention %[[YT]], %[[X]], %[[XT]] mask %[[MT]], scale = 1.000000e+00 {seq_major = array<i64: 2>} :
// CHECK: %[[OT:.+]] = graph.transpose %[[O]], permutation = [0, 2, 1, 3]
// CHECK: %[[P:.+]] = graph.attention %[[X]], %[[X]], %[[X]], scale = 1.000000e+00 :
// CHECK: return %[[O]], %[[OT]], %[[XT]], %[[P]]
func.func @stays(%x: tensor<1x2x4x8xf32>, %m: tensor<1x4x2x4xf32>, %y: tensor<1x2x8x4xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4x8xf32>) {
  %mt = graph.transpose %m, permutation = [0, 2, 1, 3] : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %yt = graph.transpose %y, permutation = [0, 1, 3, 2] : (tensor<1x2x8x4xf32>) -> tensor<1x2x4x8xf32>
  %xt = graph.transpose %x, permutation = [0, 2, 1, 3] : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  %kt = graph.transpose %x, permutation = [0, 2, 1, 3] : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  %o = graph.attention %yt, %kt, %xt mask %mt, scale = 1.0 {seq_major = array<i64: 1, 2>} : (tensor<1x2x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %ot = graph.transpose %o, permutation = [0, 2, 1, 3] : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  %p = graph.attention %x, %x, %x, scale = 1.0 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %ot, %xt, %p : tensor<1x2x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4x8xf32>
}
