// RUN: trainc-opt %s --trainc-lower -split-input-file -verify-diagnostics | FileCheck %s

// Graph ops are instructions; the IR is unchanged.
// CHECK-LABEL: func.func @main
// CHECK: graph.exp
func.func @main(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An op that is no executable instruction fails in this phase, at the op.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  // expected-error @+1 {{'func.call' cannot be lowered to a trainc executable}}
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{no function @main to compile}}
module {
  func.func @other() {
    return
  }
}
