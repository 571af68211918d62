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

// -----

// An attention keeping its log-sum-exps is the lower phase's form
// (trainc-attention-stats, after differentiation): no gradient rule.
func.func @main(%w: tensor<1x2x4x8xf32> {train.param = "w", train.init = dense<0.5> : tensor<1x2x4x8xf32>}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  // expected-error@+2 {{'graph.attention' op with qkv_heads or with_lse has no gradient rule: the lower phase forms it, after differentiation}}
  // expected-error@+1 {{autodiff: the gradient rule of 'graph.attention' failed}}
  %o, %lse = graph.attention %w, %w, %w, scale = 0.25 {with_lse} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  %1 = graph.reduce_sum %o, dims = [0, 1, 2, 3] : (tensor<1x2x4x8xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// all_reduce has a rule over the data axis only (--sync-batch-norm's
// statistics): over the tensor axis every rank computes the same loss, and
// the rule would differ.
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  // expected-error@+2 {{'graph.all_reduce' op over the 'tensor' axis has no gradient rule (only 'data', whose ranks' losses the partition phase averages)}}
  // expected-error@+1 {{autodiff: the gradient rule of 'graph.all_reduce' failed}}
  %0 = graph.all_reduce %w, axis = "tensor" : tensor<4xf32>
  %1 = graph.reduce_sum %0, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
