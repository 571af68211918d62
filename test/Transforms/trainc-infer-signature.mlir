// RUN: trainc-opt %s --trainc-infer-signature -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not trainc-opt %s --trainc-infer-signature="loss=total require-loss=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=NAMED

// A language model whose inputs have names nobody guesses: the targets are
// what reaches the cross-entropy's targets (here through a shift), the
// tokens what reaches the embedding gather.
// CHECK-LABEL: func.func @main
// CHECK-SAME: {graph.input = "ids", train.data = "tokens"}
// CHECK-SAME: {graph.input = "y_true", train.data = "targets"}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss", train.loss})
// With require-loss, the named loss must exist (each case fails here).
// NAMED: no output named 'total' to train on (outputs: 'loss'); name the loss with --loss
func.func @main(%wte: tensor<16x4xf32> {train.param = "wte", train.init = dense<1.0> : tensor<16x4xf32>},
                %ids: tensor<2x8xi64> {graph.input = "ids"},
                %y: tensor<2x9xi64> {graph.input = "y_true"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.gather %wte[%ids], axis = 0 : (tensor<16x4xf32>, tensor<2x8xi64>) -> tensor<2x8x4xf32>
  %w = graph.transpose %wte, permutation = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %logits = graph.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [2] x [0]
      : (tensor<2x8x4xf32>, tensor<4x16xf32>) -> tensor<2x8x16xf32>
  %t = graph.slice %y, start = [0, 1], limit = [2, 9], strides = [1, 1] : (tensor<2x9xi64>) -> tensor<2x8xi64>
  %loss = graph.softmax_cross_entropy %logits, %t, reduction = mean : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Two inputs reach embedding gathers (tokens and token types): ambiguous,
// so no input is marked and the runtime asks which is which.
// CHECK-LABEL: func.func @main
// CHECK-NOT: train.data
// CHECK: graph.softmax_cross_entropy
func.func @main(%wte: tensor<16x4xf32> {train.param = "wte", train.init = dense<1.0> : tensor<16x4xf32>},
                %tt: tensor<2x4xf32> {train.param = "tt", train.init = dense<1.0> : tensor<2x4xf32>},
                %ids: tensor<2x8xi64> {graph.input = "ids"},
                %types: tensor<2x8xi64> {graph.input = "types"},
                %y: tensor<2x8xi64> {graph.input = "labels"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.gather %wte[%ids], axis = 0 : (tensor<16x4xf32>, tensor<2x8xi64>) -> tensor<2x8x4xf32>
  %g = graph.gather %tt[%types], axis = 0 : (tensor<2x4xf32>, tensor<2x8xi64>) -> tensor<2x8x4xf32>
  %s = graph.add %h, %g : tensor<2x8x4xf32>
  %w = graph.transpose %wte, permutation = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %logits = graph.dot_general %s, %w, batching_dims = [] x [], contracting_dims = [2] x [0]
      : (tensor<2x8x4xf32>, tensor<4x16xf32>) -> tensor<2x8x16xf32>
  %loss = graph.softmax_cross_entropy %logits, %y, reduction = mean : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The loss must be a scalar float.
// NAMED: no output named 'total' to train on (outputs: 'loss')
// NAMED: no output named 'total' to train on (outputs: 'loss')
// expected-error@+1 {{the loss 'loss' must be a scalar float, but it is 'tensor<4xf32>'}}
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>}) -> (tensor<4xf32> {graph.output = "loss"}) {
  %0 = graph.exp %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
