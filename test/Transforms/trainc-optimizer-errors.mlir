// The optimizer's refusals of a step it cannot update, each naming why.
// RUN: not trainc-opt %s --trainc-autodiff --trainc-optimizer -split-input-file 2>&1 | FileCheck %s

// No parameter at all (a StableHLO function compiled without --params).
// CHECK: optimizer: the model has no parameters to train
func.func @main(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %l = graph.reduce_sum %x, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Every parameter frozen.
// CHECK: optimizer: no parameter is trained: each is frozen
func.func @main(%w: tensor<4xf32> {train.param = "w", train.frozen, train.init = dense<0.5> : tensor<4xf32>},
                %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.mul %w, %x : tensor<4xf32>
  %l = graph.reduce_sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
