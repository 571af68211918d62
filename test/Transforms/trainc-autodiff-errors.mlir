// The autodiff pass's errors: what the loss must be, and ops without rules.
// RUN: trainc-opt %s --trainc-autodiff -split-input-file -verify-diagnostics
// RUN: not trainc-opt %s --trainc-autodiff="loss=total" -split-input-file 2>&1 | FileCheck %s --check-prefix=NAMED

// expected-error@+1 {{autodiff: no output named 'loss' to differentiate (outputs: 'y')}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<4xf32> {graph.output = "y"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error@+1 {{autodiff: the loss 'loss' must be a scalar float, but it is 'tensor<4xf32>'}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<4xf32> {graph.output = "loss"}) {
  %0 = graph.exp %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// The loss is chosen by name.
// NAMED: autodiff: no output named 'total' to differentiate (outputs: 'y')
// NAMED: autodiff: no output named 'total' to differentiate (outputs: 'loss')
