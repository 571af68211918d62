// trainc-sync-batch-statistics (--sync-batch-norm): each reduce_mean marked
// train.batch_statistic becomes the mean over the data ranks of the ranks'
// means, its all_reduce divided by the ranks; unmarked reductions stay.
// RUN: trainc-opt %s --trainc-sync-batch-statistics=ranks=4 -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: %[[M:.+]] = graph.reduce_mean %{{.+}}, dims = [0, 2] {train.batch_statistic}
// CHECK: %[[S:.+]] = graph.all_reduce %[[M]], axis = "data" : tensor<3xf32>
// CHECK: %[[N:.+]] = graph.constant dense<4.000000e+00> : tensor<3xf32>
// CHECK: %[[G:.+]] = graph.div %[[S]], %[[N]] : tensor<3xf32>
// CHECK: %[[B:.+]] = graph.broadcast_in_dim %[[G]]
// CHECK: %[[U:.+]] = graph.reduce_mean %{{.+}}, dims = [0, 1, 2] :
// CHECK-NOT: graph.all_reduce
// CHECK: return
func.func @main(%x: tensor<2x3x4xf32> {graph.input = "x"}) -> (tensor<2x3x4xf32>, tensor<f32>) {
  %m = graph.reduce_mean %x, dims = [0, 2] {train.batch_statistic} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %b = graph.broadcast_in_dim %m, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
  %c = graph.sub %x, %b : tensor<2x3x4xf32>
  %u = graph.reduce_mean %x, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %c, %u : tensor<2x3x4xf32>, tensor<f32>
}

// -----

// Nothing to synchronize is an error: --sync-batch-norm on a model with no
// batch norm in training mode.
// expected-error @+1 {{sync-batch-statistics: the model has no batch statistics to synchronize (no BatchNormalization in training mode)}}
module {
  func.func @main(%x: tensor<2x3xf32> {graph.input = "x"}) -> tensor<3xf32> {
    %m = graph.reduce_mean %x, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
    return %m : tensor<3xf32>
  }
}

// -----

// The mark belongs on a reduce_mean only.
func.func @main(%x: tensor<2x3xf32> {graph.input = "x"}) -> tensor<3xf32> {
  // expected-error @+1 {{'train.batch_statistic' must be a unit attribute of a graph.reduce_mean}}
  %m = graph.reduce_sum %x, dims = [0] {train.batch_statistic} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %m : tensor<3xf32>
}
