// The autodiff pass's errors: no loss marked, ops without rules.
// RUN: trainc-opt %s --trainc-autodiff -split-input-file -verify-diagnostics

// The loss is found by its train.loss mark (trainc-infer-signature), never
// by name.
// expected-error@+1 {{autodiff: no result is marked train.loss (run --trainc-infer-signature, which marks the output named by trainc --loss)}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<f32> {graph.output = "loss"}) {
  %0 = graph.reduce_sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  // expected-error@+1 {{autodiff: 'func.call' has no gradient rule, and it lies on a path from a trainable parameter to the loss}}
  %0 = func.call @helper(%w) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.reduce_sum %0, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
