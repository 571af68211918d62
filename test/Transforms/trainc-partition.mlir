// RUN: trainc-opt %s --trainc-partition="mesh=data=4 data-parallel=true bucket-bytes=0" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: trainc-opt %s --trainc-partition="mesh=data=4 data-parallel=true" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=BUCKET

// Data parallelism: the mesh on the module, the data input and the batched
// output split over `data`, the loss and the gradient summed over it and
// divided by the 4 ranks; parameters stay whole.
// CHECK: module attributes {graph.mesh = {data = 4 : i64, tensor = 1 : i64}}
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {train.init
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {graph.input = "x", graph.sharding = ["data", ""]}
// CHECK-SAME: {graph.output = "loss", train.loss}
// CHECK-SAME: {graph.output = "w.grad", train.grad_of = "w"}
// CHECK-SAME: {graph.output = "v.grad", train.grad_of = "v"}
// CHECK-SAME: {graph.output = "y", graph.sharding = ["data", ""]}
// CHECK: %[[LS:.+]] = graph.all_reduce %{{.+}}, axis = "data" : tensor<f32>
// CHECK: %[[N:.+]] = graph.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[L:.+]] = graph.div %[[LS]], %[[N]] : tensor<f32>
// CHECK: %[[GS:.+]] = graph.all_reduce %[[G:.+]], axis = "data" : tensor<4xf32>
// CHECK: %[[N4:.+]] = graph.constant dense<4.000000e+00> : tensor<4xf32>
// CHECK: %[[GM:.+]] = graph.div %[[GS]], %[[N4]] : tensor<4xf32>
// CHECK: %[[GS2:.+]] = graph.all_reduce %{{.+}}, axis = "data" : tensor<4xf32>
// CHECK: %[[GM2:.+]] = graph.div %[[GS2]], %{{.+}} : tensor<4xf32>
// CHECK: return %[[L]], %[[GM]], %[[GM2]], %{{.+}} :
// Bucketed (the default, 25 MiB): the gradients, in the order they are
// computed, flattened and joined; one all_reduce and one divide; each
// sliced back to its shape. The loss (a metric) is averaged on its own.
// BUCKET: %[[LOSS:.+]] = graph.reduce_mean %{{.+}}, dims = [0, 1]
// BUCKET: %[[LS:.+]] = graph.all_reduce %[[LOSS]], axis = "data" : tensor<f32>
// BUCKET: %[[L:.+]] = graph.div %[[LS]], %{{.+}} : tensor<f32>
// BUCKET: %[[B:.+]] = graph.reduce_mean %{{.+}}, dims = [0]
// BUCKET: %[[B2:.+]] = graph.reduce_mean %{{.+}}, dims = [0]
// BUCKET: %[[J:.+]] = graph.concatenate(%[[B]], %[[B2]]), dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
// BUCKET: %[[S:.+]] = graph.all_reduce %[[J]], axis = "data" : tensor<8xf32>
// BUCKET: %[[M:.+]] = graph.div %[[S]], %{{.+}} : tensor<8xf32>
// BUCKET: %[[G:.+]] = graph.slice %[[M]], start = [0], limit = [4], strides = [1]
// BUCKET: %[[G2:.+]] = graph.slice %[[M]], start = [4], limit = [8], strides = [1]
// BUCKET-NOT: graph.all_reduce
// BUCKET: return %[[L]], %[[G]], %[[G2]], %{{.+}} :
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %v: tensor<4xf32> {train.param = "v", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<2x4xf32> {graph.input = "x"})
    -> (tensor<f32> {graph.output = "loss", train.loss},
        tensor<4xf32> {graph.output = "w.grad", train.grad_of = "w"},
        tensor<4xf32> {graph.output = "v.grad", train.grad_of = "v"},
        tensor<2x4xf32> {graph.output = "y"}) {
  %wb = graph.broadcast_in_dim %w, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
  %p = graph.mul %x, %wb : tensor<2x4xf32>
  %l = graph.reduce_mean %p, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %g = graph.reduce_mean %x, dims = [0] : (tensor<2x4xf32>) -> tensor<4xf32>
  %g2 = graph.reduce_mean %p, dims = [0] : (tensor<2x4xf32>) -> tensor<4xf32>
  return %l, %g, %g2, %p : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
}

// -----

module {
// expected-error@+1 {{partition: output 1 ('tensor<4xf32>') is neither the loss, a gradient nor batched along dimension 0, so it has no data-parallel meaning}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<4xf32> {graph.output = "w_out"}) {
  %l = graph.reduce_sum %x, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}
}

// -----

// Dropout: rank r on the data axis draws with seed + r * 3 * 2^64/phi, so it
// continues the micro-batch seeds of grad-accum (here 3 micro-batches).
// RUN: trainc-opt %s --trainc-partition="mesh=data=4 data-parallel=true micro-batches=3" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=DROPOUT
// DROPOUT: graph.dropout %{{.+}}, ratio = 1.000000e-01, seed = 5 {data_seed_stride = -2691343689449507777 : i64}
// DROPOUT: graph.attention {{.+}} {data_seed_stride = -2691343689449507777 : i64, dropout = 1.000000e-01 : f64, seed = 9 : i64}
module {
func.func @main(%x: tensor<2x4xf32> {graph.input = "x"}, %a: tensor<2x1x4x4xf32> {graph.input = "a"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %d, %m = graph.dropout %x, ratio = 0.1, seed = 5 : tensor<2x4xf32>
  %l = graph.reduce_sum %d, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %o = graph.attention %a, %a, %a, scale = 0.5 {dropout = 0.1, seed = 9} : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %s = graph.reduce_sum %o, dims = [0, 1, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<f32>
  %t = graph.add %l, %s : tensor<f32>
  return %t : tensor<f32>
}
}

// -----

module {
// expected-error@+1 {{partition: data input 0 ('tensor<f32>') has no batch dimension to split over the data axis}}
func.func @main(%x: tensor<f32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  return %x : tensor<f32>
}
}

// -----

module {
// expected-error@+1 {{partition: @main has no data inputs to split over the data axis}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %l = graph.reduce_sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
}

// -----

module {
// expected-error@+1 {{partition: data parallelism needs a training step: no result is marked train.loss}}
func.func @main(%x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<2x4xf32> {graph.output = "y"}) {
  return %x : tensor<2x4xf32>
}
}
