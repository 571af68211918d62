// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse --trainc-recompute=mode=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse --trainc-recompute=mode=full | FileCheck %s --check-prefix=FULL
// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse "--trainc-recompute=mode=none compare-options=1" | FileCheck %s --check-prefix=OPTIONS

// A CNN's residual block: r0 = relu(conv0(x)) is the cut before the block's
// convolutions (conv0 reads data, so no cut precedes it), and the block
// r1 = relu(conv2(relu(conv1(r0))) + r0) is one block (both convolutions
// follow the same cut).

// selective: each weight gradient's patches are remade. conv1's from r0,
// the block's input; conv2's from a1 = relu(h1), which no gradient reads
// (ReLU's reads h1), so the ReLU is remade first, from h1. What recompute
// can add to what is live: the remade a1, which no gradient reads, and the
// remakes' inputs r0 and h1, whose lives they may extend (128 bytes each).
// SELECTIVE-LABEL: func.func @main
// SELECTIVE-SAME: recompute.added_live_bytes = 384 : i64, recompute.blocks = 1 : i64
// SELECTIVE: %[[R0:.+]] = graph.max %[[H0:.+]], %[[ZERO:.+]] : tensor<1x2x4x4xf32>
// SELECTIVE: graph.extract_patches %[[R0]], kernel = [3, 3]
// SELECTIVE: %[[A1:.+]] = graph.max %[[H1:.+]], %[[ZERO]] : tensor<1x2x4x4xf32>
// SELECTIVE: graph.extract_patches %[[A1]], kernel = [3, 3]
// SELECTIVE: graph.reduce_sum
// SELECTIVE: %[[A1C:.+]] = graph.max %[[H1]], %[[ZERO]] {recompute.clone}
// SELECTIVE-NEXT: graph.extract_patches %[[A1C]], {{.*}}{recompute.clone}
// SELECTIVE: graph.extract_patches %[[R0]], {{.*}}{recompute.clone}
// SELECTIVE-NOT: recompute.clone

// full: the block is remade from r0, its convolutions included.
// FULL-LABEL: func.func @main
// FULL-SAME: recompute.added_flops = 2400 : i64, recompute.added_live_bytes = 3200 : i64, recompute.blocks = 1 : i64
// FULL: %[[R0:.+]] = graph.max
// FULL: graph.reduce_sum
// FULL: %[[P1:.+]] = graph.extract_patches %[[R0]], {{.*}}{recompute.clone}
// FULL-NEXT: graph.dot_general %arg1, %[[P1]], {{.*}}{recompute.clone}

// The patches dominate the plan: selective saves 22% of it for 32 FLOPs
// (the ReLU's), full nothing here (one block, remade whole).
// OPTIONS: recompute.options = {full = [4292, 2400, 12640], none = [4292, 0, 10240], selective = [3332, 32, 10272]}
// OPTIONS-NOT: recompute.clone

func.func @main(%w0: tensor<2x2x3x3xf32> {train.param = "w0", train.init = dense<0.1> : tensor<2x2x3x3xf32>},
                %w1: tensor<2x2x3x3xf32> {train.param = "w1", train.init = dense<0.2> : tensor<2x2x3x3xf32>},
                %w2: tensor<2x2x3x3xf32> {train.param = "w2", train.init = dense<-0.1> : tensor<2x2x3x3xf32>},
                %x: tensor<1x2x4x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %zero = graph.constant dense<0.0> : tensor<1x2x4x4xf32>
  %p0 = graph.extract_patches %x, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1] : (tensor<1x2x4x4xf32>) -> tensor<2x3x3x1x4x4xf32>
  %d0 = graph.dot_general %w0, %p0, batching_dims = [] x [], contracting_dims = [1, 2, 3] x [0, 1, 2] : (tensor<2x2x3x3xf32>, tensor<2x3x3x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %h0 = graph.transpose %d0, permutation = [1, 0, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r0 = graph.max %h0, %zero : tensor<1x2x4x4xf32>
  %p1 = graph.extract_patches %r0, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1] : (tensor<1x2x4x4xf32>) -> tensor<2x3x3x1x4x4xf32>
  %d1 = graph.dot_general %w1, %p1, batching_dims = [] x [], contracting_dims = [1, 2, 3] x [0, 1, 2] : (tensor<2x2x3x3xf32>, tensor<2x3x3x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %h1 = graph.transpose %d1, permutation = [1, 0, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a1 = graph.max %h1, %zero : tensor<1x2x4x4xf32>
  %p2 = graph.extract_patches %a1, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1] : (tensor<1x2x4x4xf32>) -> tensor<2x3x3x1x4x4xf32>
  %d2 = graph.dot_general %w2, %p2, batching_dims = [] x [], contracting_dims = [1, 2, 3] x [0, 1, 2] : (tensor<2x2x3x3xf32>, tensor<2x3x3x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %h2 = graph.transpose %d2, permutation = [1, 0, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s = graph.add %h2, %r0 : tensor<1x2x4x4xf32>
  %r1 = graph.max %s, %zero : tensor<1x2x4x4xf32>
  %sq = graph.mul %r1, %r1 : tensor<1x2x4x4xf32>
  %loss = graph.reduce_sum %sq, dims = [0, 1, 2, 3] : (tensor<1x2x4x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
