// trainc-sync-batch-statistics (--sync-batch-norm): each reduce_mean marked
// train.batch_statistic becomes the mean over the data ranks of the ranks'
// means, its all_reduce divided by the ranks; unmarked reductions stay.
// RUN: trainc-opt %s --trainc-sync-batch-statistics=ranks=4 -split-input-file -verify-diagnostics | FileCheck %s

// A batch norm's statistics: the variance is taken around the global mean
// (it reads the divided all_reduce), then summed and divided itself.
// CHECK-LABEL: func.func @main
// CHECK: %[[M:.+]] = graph.reduce_mean %[[X:.+]], dims = [0, 2] {train.batch_statistic}
// CHECK: %[[S:.+]] = graph.all_reduce %[[M]], axis = "data" : tensor<3xf32>
// CHECK: %[[N:.+]] = graph.constant dense<4.000000e+00> : tensor<3xf32>
// CHECK: %[[G:.+]] = graph.div %[[S]], %[[N]] : tensor<3xf32>
// CHECK: %[[B:.+]] = graph.broadcast_in_dim %[[G]]
// CHECK: %[[C:.+]] = graph.sub %[[X]], %[[B]]
// CHECK: %[[Q:.+]] = graph.mul %[[C]], %[[C]]
// CHECK: %[[V:.+]] = graph.reduce_mean %[[Q]], dims = [0, 2] {train.batch_statistic}
// CHECK: %[[VS:.+]] = graph.all_reduce %[[V]], axis = "data" : tensor<3xf32>
// CHECK: %[[VN:.+]] = graph.constant dense<4.000000e+00> : tensor<3xf32>
// CHECK: %[[VG:.+]] = graph.div %[[VS]], %[[VN]] : tensor<3xf32>
// CHECK: %[[U:.+]] = graph.reduce_mean %[[X]], dims = [0, 1, 2] :
// CHECK-NOT: graph.all_reduce
// CHECK: return %[[C]], %[[VG]], %[[U]]
func.func @main(%x: tensor<2x3x4xf32> {graph.input = "x"}) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<f32>) {
  %m = graph.reduce_mean %x, dims = [0, 2] {train.batch_statistic} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %b = graph.broadcast_in_dim %m, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
  %c = graph.sub %x, %b : tensor<2x3x4xf32>
  %q = graph.mul %c, %c : tensor<2x3x4xf32>
  %v = graph.reduce_mean %q, dims = [0, 2] {train.batch_statistic} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %u = graph.reduce_mean %x, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %c, %v, %u : tensor<2x3x4xf32>, tensor<3xf32>, tensor<f32>
}

// -----

// Bessel's correction of a variance (--unbiased-running-var): c / (c - 1)
// of a rank's 8 elements (2 x 4) becomes that of the 4 ranks' 32, 32 / 31.
// CHECK-LABEL: func.func @main
// CHECK: %[[V:.+]] = graph.reduce_mean %{{.+}}, dims = [0, 2] {train.batch_statistic}
// CHECK: %[[S:.+]] = graph.all_reduce %[[V]], axis = "data"
// CHECK: %[[G:.+]] = graph.div %[[S]], %{{.+}} : tensor<3xf32>
// CHECK: %[[F:.+]] = graph.constant dense<1.03225803> : tensor<3xf32>
// CHECK: graph.mul %[[G]], %[[F]] {train.bessel_correction} : tensor<3xf32>
func.func @main(%x: tensor<2x3x4xf32> {graph.input = "x"}) -> tensor<3xf32> {
  %v = graph.reduce_mean %x, dims = [0, 2] {train.batch_statistic} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %k = graph.constant dense<1.14285719> : tensor<3xf32>
  %u = graph.mul %v, %k {train.bessel_correction} : tensor<3xf32>
  return %u : tensor<3xf32>
}

// -----

// A correction of anything but a batch statistic is refused.
func.func @main(%x: tensor<2x3x4xf32> {graph.input = "x"}) -> tensor<3xf32> {
  %v = graph.reduce_mean %x, dims = [0, 2] {train.batch_statistic} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %k = graph.constant dense<1.14285719> : tensor<3xf32>
  // expected-error @+1 {{'graph.mul' op marked train.bessel_correction does not multiply a batch statistic}}
  %u = graph.mul %k, %v {train.bessel_correction} : tensor<3xf32>
  return %u : tensor<3xf32>
}

// -----

// Nothing to synchronize is an error: --sync-batch-norm on a model with no
// batch norm in training mode.
// expected-error @+1 {{sync-batch-statistics: the model has no batch statistics to synchronize (the ONNX importer marks those of a BatchNormalization in training mode; this model has none)}}
module {
  func.func @main(%x: tensor<2x3xf32> {graph.input = "x"}) -> tensor<3xf32> {
    %m = graph.reduce_mean %x, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
    return %m : tensor<3xf32>
  }
}

// -----

// The mark belongs on a reduce_mean only, as a unit attribute.
func.func @main(%x: tensor<2x3xf32> {graph.input = "x"}) -> tensor<3xf32> {
  // expected-error @+1 {{'train.batch_statistic' must be a unit attribute of a graph.reduce_mean}}
  %m = graph.reduce_sum %x, dims = [0] {train.batch_statistic} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %m : tensor<3xf32>
}

// -----

func.func @main(%x: tensor<2x3xf32> {graph.input = "x"}) -> tensor<3xf32> {
  // expected-error @+1 {{'train.batch_statistic' must be a unit attribute of a graph.reduce_mean}}
  %m = graph.reduce_mean %x, dims = [0] {train.batch_statistic = 1 : i64} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %m : tensor<3xf32>
}

// -----

func.func @main(%x: tensor<2x3xf32> {graph.input = "x"}) -> tensor<3xf32> {
  // expected-error @+1 {{unknown train op attribute 'train.loss'}}
  %m = graph.reduce_mean %x, dims = [0] {train.loss} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %m : tensor<3xf32>
}
