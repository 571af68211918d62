// The VJP rules of reductions and data movement (DataMovementGradients.cpp).
// Each case is loss = sum(op(w) * x) with x a data input, so the op's
// cotangent is x itself and the rule's ops are not folded away. Numbers are
// checked by finite differences in test/Unit/Compiler/GradientCheckTest.cpp.
// RUN: trainc-opt %s --trainc-autodiff -split-input-file | FileCheck %s

// reduce_sum: g broadcast back over the reduced dims.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3x4xf32> {{.*}}, %[[X:.+]]: tensor<3xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.broadcast_in_dim %[[X]], dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<2x3x4xf32>}, %x: tensor<3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.reduce_sum %w, dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %s = graph.mul %y, %x : tensor<3xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A widened reduce_sum (bf16 operand, f32 result): g is narrowed to the
// operand's type before the broadcast, so w's gradient is bf16.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3xbf16> {{.*}}, %[[X:.+]]: tensor<3xf32> {graph.input = "x"})
// CHECK: %[[N:.+]] = graph.convert %[[X]] : (tensor<3xf32>) -> tensor<3xbf16>
// CHECK: %[[G:.+]] = graph.broadcast_in_dim %[[N]], dims = [1] : (tensor<3xbf16>) -> tensor<2x3xbf16>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3xbf16> {train.param = "w", train.init = dense<1.0> : tensor<2x3xbf16>}, %x: tensor<3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.reduce_sum %w, dims = [0] : (tensor<2x3xbf16>) -> tensor<3xf32>
  %s = graph.mul %y, %x : tensor<3xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_mean: g / 8 (2 * 4 elements reduced), scaled before the broadcast.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3x4xf32> {{.*}}, %[[X:.+]]: tensor<3xf32> {graph.input = "x"})
// CHECK: %[[C:.+]] = graph.constant dense<1.250000e-01> : tensor<3xf32>
// CHECK: %[[S:.+]] = graph.mul %[[X]], %[[C]] : tensor<3xf32>
// CHECK: %[[G:.+]] = graph.broadcast_in_dim %[[S]], dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<2x3x4xf32>}, %x: tensor<3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.reduce_mean %w, dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %s = graph.mul %y, %x : tensor<3xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_max: g shared evenly among the positions equal to the max (as
// torch.amax), zeros elsewhere.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3x4xf32> {{.*}}, %[[X:.+]]: tensor<3xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.reduce_max %[[W]], dims = [0, 2]
// CHECK: %[[YB:.+]] = graph.broadcast_in_dim %[[Y]], dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[IS:.+]] = graph.compare EQ, %[[W]], %[[YB]] : tensor<2x3x4xf32>
// CHECK: %[[ISF:.+]] = graph.convert %[[IS]] : (tensor<2x3x4xi1>) -> tensor<2x3x4xf32>
// CHECK: %[[TIES:.+]] = graph.reduce_sum %[[ISF]], dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK: %[[SHARE:.+]] = graph.div %[[X]], %[[TIES]] : tensor<3xf32>
// CHECK: %[[SB:.+]] = graph.broadcast_in_dim %[[SHARE]], dims = [1]
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<2x3x4xf32>
// CHECK: %[[G:.+]] = graph.select %[[IS]], %[[SB]], %[[ZERO]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<2x3x4xf32>}, %x: tensor<3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.reduce_max %w, dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %s = graph.mul %y, %x : tensor<3xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// broadcast_in_dim: summed over the new dim 0 and the size-1 dim 2, which
// a reshape restores.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<3x1xf32> {{.*}}, %[[X:.+]]: tensor<2x3x4xf32> {graph.input = "x"})
// CHECK: %[[S:.+]] = graph.reduce_sum %[[X]], dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK: %[[G:.+]] = graph.reshape %[[S]] : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<3x1xf32> {train.param = "w", train.init = dense<1.0> : tensor<3x1xf32>}, %x: tensor<2x3x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.broadcast_in_dim %w, dims = [1, 2] : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %s = graph.mul %y, %x : tensor<2x3x4xf32>
  %l = graph.reduce_sum %s, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3x4xf32> {{.*}}, %[[X:.+]]: tensor<6x4xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.reshape %[[X]] : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<2x3x4xf32>}, %x: tensor<6x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.reshape %w : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %s = graph.mul %y, %x : tensor<6x4xf32>
  %l = graph.reduce_sum %s, dims = [0, 1] : (tensor<6x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// transpose: the inverse permutation of [2, 0, 1] is [1, 2, 0].
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3x4xf32> {{.*}}, %[[X:.+]]: tensor<4x2x3xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.transpose %[[X]], permutation = [1, 2, 0] : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<2x3x4xf32>}, %x: tensor<4x2x3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.transpose %w, permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %s = graph.mul %y, %x : tensor<4x2x3xf32>
  %l = graph.reduce_sum %s, dims = [0, 1, 2] : (tensor<4x2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice with stride 1: g padded with zero blocks before start and after
// limit; dimension 0 is taken whole and needs no padding. The zeros are -0,
// the additive identity, so that sums of such gradients are exact
// concatenations (test/Dialect/Graph/canonicalize.mlir,
// @add_disjoint_concatenates).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4x8xf32> {{.*}}, %[[X:.+]]: tensor<4x5xf32> {graph.input = "x"})
// CHECK-NOT: graph.concatenate{{.*}}dim = 0
// CHECK: %[[BEFORE:.+]] = graph.constant dense<-0.000000e+00> : tensor<4x2xf32>
// CHECK: %[[AFTER:.+]] = graph.constant dense<-0.000000e+00> : tensor<4x1xf32>
// CHECK: %[[G:.+]] = graph.concatenate(%[[BEFORE]], %[[X]], %[[AFTER]]), dim = 1 : (tensor<4x2xf32>, tensor<4x5xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4x8xf32> {train.param = "w", train.init = dense<1.0> : tensor<4x8xf32>}, %x: tensor<4x5xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.slice %w, start = [0, 2], limit = [4, 7], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x5xf32>
  %s = graph.mul %y, %x : tensor<4x5xf32>
  %l = graph.reduce_sum %s, dims = [0, 1] : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice with stride 2 (columns 1, 3, 5 of 8): g's 3 columns are spread 2
// apart by joining each with a zero column ([4,3,1] ++ [4,3,1] -> [4,3,2]
// -> [4,6]), the trailing zero is sliced off ([4,5]: g, 0, g, 0, g), and
// zeros pad it to columns 1..5 of 8.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4x8xf32> {{.*}}, %[[X:.+]]: tensor<4x3xf32> {graph.input = "x"})
// CHECK: %[[COL:.+]] = graph.reshape %[[X]] : (tensor<4x3xf32>) -> tensor<4x3x1xf32>
// CHECK: %[[Z:.+]] = graph.constant dense<-0.000000e+00> : tensor<4x3x1xf32>
// CHECK: %[[J:.+]] = graph.concatenate(%[[COL]], %[[Z]]), dim = 2 : (tensor<4x3x1xf32>, tensor<4x3x1xf32>) -> tensor<4x3x2xf32>
// CHECK: %[[FLAT:.+]] = graph.reshape %[[J]] : (tensor<4x3x2xf32>) -> tensor<4x6xf32>
// CHECK: %[[SPREAD:.+]] = graph.slice %[[FLAT]], start = [0, 0], limit = [4, 5], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x5xf32>
// CHECK: %[[BEFORE:.+]] = graph.constant dense<-0.000000e+00> : tensor<4x1xf32>
// CHECK: %[[AFTER:.+]] = graph.constant dense<-0.000000e+00> : tensor<4x2xf32>
// CHECK: %[[G:.+]] = graph.concatenate(%[[BEFORE]], %[[SPREAD]], %[[AFTER]]), dim = 1 : (tensor<4x1xf32>, tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4x8xf32> {train.param = "w", train.init = dense<1.0> : tensor<4x8xf32>}, %x: tensor<4x3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.slice %w, start = [0, 1], limit = [4, 7], strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  %s = graph.mul %y, %x : tensor<4x3xf32>
  %l = graph.reduce_sum %s, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concatenate: each operand gets its slice of g.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4x2xf32> {{.*}}, %[[V:.+]]: tensor<4x6xf32> {{.*}}, %[[X:.+]]: tensor<4x8xf32> {graph.input = "x"})
// CHECK: %[[GW:.+]] = graph.slice %[[X]], start = [0, 0], limit = [4, 2], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x2xf32>
// CHECK: %[[GV:.+]] = graph.slice %[[X]], start = [0, 2], limit = [4, 8], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x6xf32>
// CHECK: return %{{.+}}, %[[GW]], %[[GV]]
func.func @main(%w: tensor<4x2xf32> {train.param = "w", train.init = dense<1.0> : tensor<4x2xf32>}, %v: tensor<4x6xf32> {train.param = "v", train.init = dense<1.0> : tensor<4x6xf32>}, %x: tensor<4x8xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.concatenate(%w, %v), dim = 1 : (tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x8xf32>
  %s = graph.mul %y, %x : tensor<4x8xf32>
  %l = graph.reduce_sum %s, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gather (an embedding lookup): g scattered back, adding at repeated tokens.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<16x4xf32> {{.*}}, %[[T:.+]]: tensor<2x3xi64> {graph.input = "t"}, %[[X:.+]]: tensor<2x3x4xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.scatter_add %[[X]][%[[T]]], axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<16x4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<16x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<16x4xf32>}, %t: tensor<2x3xi64> {graph.input = "t"}, %x: tensor<2x3x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.gather %w[%t], axis = 0 : (tensor<16x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %s = graph.mul %y, %x : tensor<2x3x4xf32>
  %l = graph.reduce_sum %s, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gather with padding_index (PyTorch's Embedding(padding_idx=2)): the
// cotangents of the slices taken at row 2 (or -14, the same row) are
// zeroed before the scatter; the forward gather is unchanged.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<16x4xf32> {{.*}}, %[[T:.+]]: tensor<2x3xi64> {graph.input = "t"}, %[[X:.+]]: tensor<2x3x4xf32> {graph.input = "x"})
// CHECK: graph.gather %[[W]][%[[T]]], axis = 0, padding_index = 2
// CHECK-DAG: %[[NEG:.+]] = graph.compare LT, %[[T]], %{{.+}} : tensor<2x3xi64>
// CHECK-DAG: %[[WRAP:.+]] = graph.add %[[T]], %{{.+}} : tensor<2x3xi64>
// CHECK: %[[ROW:.+]] = graph.select %[[NEG]], %[[WRAP]], %[[T]]
// CHECK: %[[PAD:.+]] = graph.compare EQ, %[[ROW]], %{{.+}} : tensor<2x3xi64>
// CHECK: %[[MASK:.+]] = graph.broadcast_in_dim %[[PAD]], dims = [0, 1] : (tensor<2x3xi1>) -> tensor<2x3x4xi1>
// CHECK: %[[KEPT:.+]] = graph.select %[[MASK]], %{{.+}}, %[[X]]
// CHECK: %[[G:.+]] = graph.scatter_add %[[KEPT]][%[[T]]], axis = 0
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<16x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<16x4xf32>}, %t: tensor<2x3xi64> {graph.input = "t"}, %x: tensor<2x3x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.gather %w[%t], axis = 0, padding_index = 2 : (tensor<16x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %s = graph.mul %y, %x : tensor<2x3x4xf32>
  %l = graph.reduce_sum %s, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// scatter_add: g gathered at the same indices.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<2x3x4xf32> {{.*}}, %[[T:.+]]: tensor<2x3xi64> {graph.input = "t"}, %[[X:.+]]: tensor<16x4xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.gather %[[X]][%[[T]]], axis = 0 : (tensor<16x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<2x3x4xf32> {train.param = "w", train.init = dense<1.0> : tensor<2x3x4xf32>}, %t: tensor<2x3xi64> {graph.input = "t"}, %x: tensor<16x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.scatter_add %w[%t], axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<16x4xf32>
  %s = graph.mul %y, %x : tensor<16x4xf32>
  %l = graph.reduce_sum %s, dims = [0, 1] : (tensor<16x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// all_reduce (a batch statistic summed over the data ranks by
// --sync-batch-norm): every rank's result is the sum of every rank's
// operand, so the operand's cotangent is the all_reduce of the result's.
// (One rank runs it as the identity; runtime.sync_batch_norm checks 2.)
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<3xf32> {{.*}}, %[[X:.+]]: tensor<3xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.all_reduce %[[X]], axis = "data" : tensor<3xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<3xf32> {train.param = "w", train.init = dense<1.0> : tensor<3xf32>}, %x: tensor<3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.all_reduce %w, axis = "data" : tensor<3xf32>
  %s = graph.mul %y, %x : tensor<3xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
