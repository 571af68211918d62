// ZeRO over 2 data-parallel ranks. w (5x2) splits into parts of 3 rows, the
// last padded with a zero row; the 0-d b stays whole.
// RUN: trainc-opt %s --trainc-partition="mesh=data=2 data-parallel=true zero=1" | FileCheck %s --check-prefix=ZERO1
// RUN: trainc-opt %s --trainc-partition="mesh=data=2 data-parallel=true zero=2" | FileCheck %s --check-prefix=ZERO2
// RUN: trainc-opt %s --trainc-partition="mesh=data=2 data-parallel=true zero=3" | FileCheck %s --check-prefix=ZERO3
// RUN: trainc-opt %s --trainc-partition="mesh=data=2 data-parallel=true zero=2" --trainc-optimizer | FileCheck %s --check-prefix=OPT2
// RUN: trainc-opt %s --trainc-partition="mesh=data=2 data-parallel=true zero=3" --trainc-optimizer | FileCheck %s --check-prefix=OPT3

// ZeRO-1: the gradient is averaged whole, then this rank keeps its part.
// ZERO1-LABEL: func.func @main
// ZERO1-SAME: -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<3x2xf32> {graph.global_shape = array<i64: 5, 2>, graph.output = "w.grad", graph.sharding = ["data", ""], train.grad_of = "w"}, tensor<f32> {graph.output = "b.grad", train.grad_of = "b"})
// ZERO1: graph.all_reduce %{{.+}}, axis = "data" : tensor<f32>
// ZERO1: graph.all_reduce %{{.+}}, axis = "data" : tensor<11xf32>
// ZERO1: %[[PAD:.+]] = graph.concatenate(%{{.+}}, %{{.+}}), dim = 0 : (tensor<5x2xf32>, tensor<1x2xf32>) -> tensor<6x2xf32>
// ZERO1: graph.shard_slice %[[PAD]], axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
// ZERO1-NOT: graph.reduce_scatter

// ZeRO-2: the padded gradient, as [rank][part], reduced straight into this
// rank's part; the loss and the 0-d gradient are averaged whole.
// ZERO2-LABEL: func.func @main
// ZERO2: graph.all_reduce %{{.+}}, axis = "data" : tensor<f32>
// ZERO2: %[[PAD:.+]] = graph.concatenate(%{{.+}}, %{{.+}}), dim = 0 : (tensor<5x2xf32>, tensor<1x2xf32>) -> tensor<6x2xf32>
// ZERO2: %[[ROWS:.+]] = graph.reshape %[[PAD]] : (tensor<6x2xf32>) -> tensor<2x6xf32>
// ZERO2: %[[FLAT:.+]] = graph.reshape %[[ROWS]] : (tensor<2x6xf32>) -> tensor<12xf32>
// ZERO2: %[[SUM:.+]] = graph.reduce_scatter %[[FLAT]], axis = "data" : (tensor<12xf32>) -> tensor<6xf32>
// ZERO2: %[[MEAN:.+]] = graph.div %[[SUM]], %{{.+}} : tensor<6xf32>
// ZERO2: %[[PART:.+]] = graph.reshape %[[MEAN]] : (tensor<6xf32>) -> tensor<3x2xf32>
// ZERO2: graph.all_reduce %{{.+}}, axis = "data" : tensor<f32>
// ZERO2: return %{{.+}}, %[[PART]], %{{.+}} :

// ZeRO-3: the parameter is its part; each op that reads it gathers it whole
// just before (here two) and drops the padding row.
// ZERO3-LABEL: func.func @main
// ZERO3-SAME: %{{.+}}: tensor<3x2xf32> {graph.global_shape = array<i64: 5, 2>, graph.sharding = ["data", ""], train.init = dense<1.000000e+00> : tensor<5x2xf32>, train.param = "w"}
// ZERO3: %[[G1:.+]] = graph.all_gather %arg0, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
// ZERO3: %[[W1:.+]] = graph.slice %[[G1]], start = [0, 0], limit = [5, 2], strides = [1, 1]
// ZERO3: graph.dot_general %{{.+}}, %[[W1]]
// ZERO3: %[[G2:.+]] = graph.all_gather %arg0, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
// ZERO3: %[[W2:.+]] = graph.slice %[[G2]]
// ZERO3: graph.mul %{{.+}}, %[[W2]]
// ZERO3: graph.reduce_scatter

// The optimizer keeps the moments as parts and updates this rank's part of
// the parameter: a slice of the whole one, gathered back after (ZeRO-2), or
// the part itself (ZeRO-3). The parts' squares are summed over the ranks
// for the global norm.
// OPT2-LABEL: func.func @main
// OPT2-SAME: %{{.+}}: tensor<5x2xf32> {train.init = dense<1.000000e+00> : tensor<5x2xf32>, train.param = "w"}
// OPT2-SAME: tensor<3x2xf32> {graph.global_shape = array<i64: 5, 2>, graph.sharding = ["data", ""], train.init = dense<0.000000e+00> : tensor<5x2xf32>, train.state = "w.exp_avg"}
// OPT2-SAME: tensor<3x2xf32> {graph.global_shape = array<i64: 5, 2>, graph.sharding = ["data", ""], train.update = "w.exp_avg"}
// OPT2-SAME: tensor<5x2xf32> {train.update = "w"}
// OPT2: graph.all_reduce %{{.+}}, axis = "data" : tensor<f64>
// OPT2: %[[MINE:.+]] = graph.shard_slice %{{.+}}, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
// OPT2: %[[NEW:[a-z_0-9]+]]:3 = graph.adamw_update params(%[[MINE]]),
// OPT2: %[[ALL:.+]] = graph.all_gather %[[NEW]]#0, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
// OPT2: %[[WHOLE:.+]] = graph.slice %[[ALL]], start = [0, 0], limit = [5, 2], strides = [1, 1]
// OPT2: return {{.*}}%[[WHOLE]]
// OPT3-LABEL: func.func @main
// OPT3-SAME: tensor<3x2xf32> {graph.global_shape = array<i64: 5, 2>, graph.sharding = ["data", ""], train.update = "w"}
// OPT3: %[[NEW:[a-z_0-9]+]]:3 = graph.adamw_update params(%arg0),
// OPT3-NOT: graph.all_gather %[[NEW]]#0
// OPT3: return
func.func @main(%w: tensor<5x2xf32> {train.param = "w", train.init = dense<1.0> : tensor<5x2xf32>},
                %b: tensor<f32> {train.param = "b", train.init = dense<0.5> : tensor<f32>},
                %x: tensor<2x5xf32> {graph.input = "x"})
    -> (tensor<f32> {graph.output = "loss", train.loss},
        tensor<5x2xf32> {graph.output = "w.grad", train.grad_of = "w"},
        tensor<f32> {graph.output = "b.grad", train.grad_of = "b"}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x5xf32>, tensor<5x2xf32>) -> tensor<2x2xf32>
  %l = graph.reduce_mean %y, dims = [0, 1] : (tensor<2x2xf32>) -> tensor<f32>
  %l2 = graph.add %l, %b : tensor<f32>
  %xt = graph.transpose %x, permutation = [1, 0] : (tensor<2x5xf32>) -> tensor<5x2xf32>
  %g = graph.mul %xt, %w : tensor<5x2xf32>
  %gb = graph.reduce_sum %l2, dims = [] : (tensor<f32>) -> tensor<f32>
  return %l2, %g, %gb : tensor<f32>, tensor<5x2xf32>, tensor<f32>
}
