// RUN: trainc-opt %s --trainc-grad-accum="grad-accum=3" -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<6x4xf32> {graph.input = "x"}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<6x4xf32> {graph.output = "y"})
// The micro-batches run one after the other on their slices, each with its
// own dropout seed; the loss is summed as each ends, then divided: the
// mean. Batched outputs are concatenated.
// CHECK: graph.slice %[[X]], start = [0, 0], limit = [2, 4], strides = [1, 1]
// CHECK: graph.dropout %{{.+}}, ratio = 1.000000e-01, seed = 5 :
// CHECK: graph.slice %[[X]], start = [2, 0], limit = [4, 4], strides = [1, 1]
// CHECK: graph.dropout %{{.+}}, ratio = 1.000000e-01, seed = -7046029254386353126 :
// CHECK: %[[L01:.+]] = graph.add
// CHECK: graph.slice %[[X]], start = [4, 0], limit = [6, 4], strides = [1, 1]
// CHECK: graph.dropout %{{.+}}, ratio = 1.000000e-01, seed = 4354685564936845359 :
// CHECK: %[[L012:.+]] = graph.add %[[L01]]
// CHECK: %[[MEAN:.+]] = graph.div %[[L012]], %{{.+}} : tensor<f32>
// CHECK: %[[Y:.+]] = graph.concatenate(%{{.+}}, %{{.+}}, %{{.+}}), dim = 0
// CHECK: return %[[MEAN]], %[[Y]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<2x4xf32> {graph.output = "y"}) {
  %wb = graph.broadcast_in_dim %w, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
  %p = graph.mul %x, %wb : tensor<2x4xf32>
  %d, %m = graph.dropout %p, ratio = 0.1, seed = 5 : tensor<2x4xf32>
  %l = graph.reduce_sum %d, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l, %d : tensor<f32>, tensor<2x4xf32>
}

// -----

// Attention's dropout moves with the micro-batch as graph.dropout's does,
// in the forward and in the gradient, which draws the same mask again;
// attention without dropout draws nothing and keeps its attributes.
// CHECK-LABEL: func.func @main
// CHECK: graph.attention %{{.+}}, scale = 2.500000e-01 : (
// CHECK: graph.attention {{.+}} {dropout = 1.000000e-01 : f64, seed = 5 : i64}
// CHECK: graph.attention_grad {{.+}} {dropout = 1.000000e-01 : f64, seed = 5 : i64}
// CHECK: graph.attention %{{.+}}, scale = 2.500000e-01 : (
// CHECK: graph.attention {{.+}} {dropout = 1.000000e-01 : f64, seed = -7046029254386353126 : i64}
// CHECK: graph.attention_grad {{.+}} {dropout = 1.000000e-01 : f64, seed = -7046029254386353126 : i64}
// CHECK: graph.attention %{{.+}}, scale = 2.500000e-01 : (
// CHECK: graph.attention {{.+}} {dropout = 1.000000e-01 : f64, seed = 4354685564936845359 : i64}
// CHECK: graph.attention_grad {{.+}} {dropout = 1.000000e-01 : f64, seed = 4354685564936845359 : i64}
func.func @main(%x: tensor<2x2x4x8xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<2x2x4x8xf32> {graph.output = "dx"}) {
  %plain = graph.attention %x, %x, %x, scale = 0.25 : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %o = graph.attention %plain, %x, %x, scale = 0.5 {dropout = 0.1, seed = 5} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %g:3 = graph.attention_grad %x, %x, %x, %o, scale = 0.5 {dropout = 0.1, seed = 5} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>)
  %l = graph.reduce_sum %o, dims = [0, 1, 2, 3] : (tensor<2x2x4x8xf32>) -> tensor<f32>
  return %l, %g#0 : tensor<f32>, tensor<2x2x4x8xf32>
}

// -----

// expected-error@+1 {{grad-accum: input 2 of type 'tensor<3x4xf32>' does not have the micro-batch size 2 as its leading dimension}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<2x4xf32> {graph.input = "x"}, %z: tensor<3x4xf32> {graph.input = "z"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %l = graph.reduce_sum %x, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{grad-accum: output 1 ('tensor<4xf32>') is neither the loss, a gradient nor batched along dimension 0}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<4xf32> {graph.output = "w_out"}) {
  %l = graph.reduce_sum %x, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// After autodiff: gradients (train.grad_of) are averaged like the loss, each
// summed as its micro-batch ends.
// CHECK-LABEL: func.func @main
// CHECK: %[[G0:.+]] = graph.mul %[[A:[0-9]+]], %[[A]] : tensor<4xf32>
// CHECK: %[[G1:.+]] = graph.mul %[[B:[0-9]+]], %[[B]] : tensor<4xf32>
// CHECK: %[[G01:.+]] = graph.add %[[G0]], %[[G1]] : tensor<4xf32>
// CHECK: %[[G2:.+]] = graph.mul %[[C:[0-9]+]], %[[C]] : tensor<4xf32>
// CHECK: %[[G012:.+]] = graph.add %[[G01]], %[[G2]] : tensor<4xf32>
// CHECK: %[[K:.+]] = graph.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK: %[[G:.+]] = graph.div %[[G012]], %[[K]] : tensor<4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<4xf32> {graph.output = "w.grad", train.grad_of = "w"}) {
  %p = graph.mul %x, %w : tensor<4xf32>
  %l = graph.reduce_sum %p, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %g = graph.mul %x, %x : tensor<4xf32>
  return %l, %g : tensor<f32>, tensor<4xf32>
}
