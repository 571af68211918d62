// RUN: trainc-opt %s --trainc-autodiff --trainc-optimizer -canonicalize -split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: trainc-opt %s --trainc-autodiff --trainc-optimizer="decay-all=true weight-decay=0.1" -canonicalize -split-input-file | FileCheck %s --check-prefix=ALL
// RUN: trainc-opt %s --trainc-autodiff --trainc-optimizer="optimizer=sgd momentum=0.9 nesterov=true weight-decay=0.1" -canonicalize -split-input-file | FileCheck %s --check-prefix=SGD
// RUN: trainc-opt %s --trainc-autodiff --trainc-optimizer="lr-schedule=cosine warmup-steps=2 total-steps=6 min-lr=1e-4 clip-grad-norm=1.0" -canonicalize -split-input-file | FileCheck %s --check-prefix=COSINE
// RUN: trainc-opt %s --trainc-autodiff --trainc-optimizer="lr-schedule=wsd warmup-steps=1 total-steps=5 decay-steps=2 min-lr=2e-4" -canonicalize -split-input-file | FileCheck %s --check-prefix=WSD
// RUN: not trainc-opt %s --trainc-optimizer -split-input-file 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not trainc-opt %s --trainc-autodiff --trainc-optimizer="lr-schedule=cosine total-steps=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADOPT

// A matrix (decayed by default) and a bias (not decayed).
// ADAMW-LABEL: func.func @main
// ADAMW-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {train.init = {{[^}]+}}, train.param = "w"}
// ADAMW-SAME: %[[B:[a-z0-9]+]]: tensor<3xf32> {train.init = {{[^}]+}}, train.param = "b"}
// ADAMW-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {train.init = dense<0> : tensor<i64>, train.state = "step"}
// ADAMW-SAME: %[[M:[a-z0-9]+]]: tensor<2x3xf32> {train.init = dense<0.000000e+00> : tensor<2x3xf32>, train.state = "w.exp_avg"}
// ADAMW-SAME: train.state = "w.exp_avg_sq"}
// ADAMW-SAME: train.state = "b.exp_avg"}
// ADAMW-SAME: train.state = "b.exp_avg_sq"}
// ADAMW-SAME: -> (tensor<f32> {graph.output = "loss", train.loss}, tensor<f32> {graph.output = "grad_norm", train.metric = "grad_norm"}, tensor<f32> {graph.output = "lr", train.metric = "lr"}, tensor<f32> {graph.output = "step_skipped", train.metric = "step_skipped"},
// ADAMW-SAME: {train.update = "w.exp_avg"}, {{.+}} {train.update = "w.exp_avg_sq"}, {{.+}} {train.update = "w"},
// ADAMW-SAME: {train.update = "b.exp_avg"}, {{.+}} {train.update = "b.exp_avg_sq"}, {{.+}} {train.update = "b"}, tensor<i64> {train.update = "step"})
// Bias corrections in f64 from the step count: 1 - 0.9^t and 1 - 0.999^t.
// ADAMW-DAG: graph.pow %{{.+}}, %{{.+}} : tensor<f64>
// ADAMW-DAG: graph.add %[[STEP]], %{{.+}} : tensor<i64>
// f32 parameters get one graph.adamw_update each. Decoupled weight decay on
// w only: p * (1 - lr * wd) = 0.99999 in f32; b's decay factor (and both
// gradient scales: no clipping) is 1.
// ADAMW-DAG: %[[DECAY:.+]] = graph.constant dense<0.999989986> : tensor<f32>
// ADAMW-DAG: %[[ONE:.+]] = graph.constant dense<1.000000e+00> : tensor<f32>
// A step whose loss or gradient norm is not finite (x * 0 != 0) is skipped:
// the fused updates take the flag, and the step count keeps its value.
// ADAMW-DAG: %[[NF:.+]] = graph.compare NE, %{{.+}}, %{{.+}} : tensor<f64>
// ADAMW-DAG: %[[SKIP:.+]] = graph.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<i1>, tensor<i1>
// The global norm: one sum of squares over every gradient.
// ADAMW-DAG: graph.sum_of_squares %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<f64>
// One update per group of parameters sharing their scalars (here w, decayed,
// and b, not).
// ADAMW: graph.adamw_update params(%[[W]]), grads(%{{.+}}), exp_avgs(%[[M]]), exp_avg_sqs(%{{.+}}), scalars(%{{.+}}, %{{.+}}, %[[DECAY]], %[[ONE]]) skip %[[SKIP]], beta1 = 9.000000e-01, beta2 = 0.99899999999999999, epsilon = 1.000000e-08 : (tensor<2x3xf32>,
// ADAMW: graph.adamw_update params(%[[B]]), grads(%{{.+}}), exp_avgs(%{{.+}}), exp_avg_sqs(%{{.+}}), scalars(%{{.+}}, %{{.+}}, %[[ONE]], %[[ONE]]) skip %[[SKIP]], beta1
// With every parameter decayed, one update for both, each result returned
// in its place.
// ALL-LABEL: func.func @main
// ALL: %[[NEW:.+]]:6 = graph.adamw_update params(%arg0, %arg1), grads(%{{.+}}, %{{.+}}), exp_avgs(%arg4, %arg6), exp_avg_sqs(%arg5, %arg7)
// ALL: return %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[NEW]]#2, %[[NEW]]#4, %[[NEW]]#0, %[[NEW]]#3, %[[NEW]]#5, %[[NEW]]#1, %{{.+}} :
// ADAMW: graph.select %[[SKIP]], %[[STEP]], %{{.+}} : tensor<i1>, tensor<i64>
// ADAMW: return
// SGD-LABEL: func.func @main
// SGD-SAME: train.state = "w.momentum_buffer"}
// SGD-SAME: train.state = "b.momentum_buffer"}
// SGD-NOT: exp_avg
// The decomposed (SGD) update keeps every tensor on a skipped step.
// SGD-COUNT-5: graph.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<{{.*}}i1>, tensor<
// SGD: return
// The cosine schedule is a table read by the step count, clamped to its end.
// COSINE-LABEL: func.func @main
// lr(t) for t = 1..6: warmup 1/2, 2/2 of 1e-3, then 1e-4 + 9e-4 (1 + cos(pi p)) / 2
// for p = 1/4, 2/4, 3/4, 1.
// COSINE: graph.constant dense<[5.000000e-04, 1.000000e-03, 8.6819805153394641E-4, 5.500000e-04, 2.3180194846605365E-4, 1.000000e-04]> : tensor<6xf64>
// COSINE: graph.min %{{.+}}, %{{.+}} : tensor<i64>
// COSINE: graph.gather
// Clipping: min(1, max_norm / (norm + 1e-6)).
// COSINE: graph.min %{{.+}}, %{{.+}} : tensor<f64>
// Warmup (1 step), stable, then linear to 2e-4 over the last 2 steps.
// WSD: graph.constant dense<[1.000000e-03, 1.000000e-03, 1.000000e-03, 6.0000000000000006E-4, 2.000000e-04]> : tensor<5xf64>
// NOGRAD: optimizer: @main has no loss and gradients (run autodiff first)
// BADOPT: optimizer: the cosine and wsd schedules need 0 <= warmup-steps < total-steps and 0 <= min-lr <= lr
func.func @main(%w: tensor<2x3xf32> {train.param = "w", train.init = dense<0.5> : tensor<2x3xf32>},
                %b: tensor<3xf32> {train.param = "b", train.init = dense<0.1> : tensor<3xf32>},
                %x: tensor<4x2xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.add %y, %bb : tensor<4x3xf32>
  %sq = graph.mul %z, %z : tensor<4x3xf32>
  %l = graph.reduce_mean %sq, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
