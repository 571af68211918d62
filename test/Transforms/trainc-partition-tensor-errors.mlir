// Sharding annotations that cannot hold are errors naming the op.
// RUN: trainc-opt %s --trainc-partition="mesh=tensor=2" -split-input-file -verify-diagnostics

func.func @main(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{partition: cannot split dimension 0 (3) of 'tensor<3x4xf32>' into 2 equal parts over 'tensor'}}
  %x = graph.exp %a {graph.sharding = ["tensor", ""]} : tensor<3x4xf32>
  return %x : tensor<3x4xf32>
}

// -----

func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{partition: 'graph.sharding' splits dimensions 0 and 1 over 'tensor'; a value is split along one dimension of an axis}}
  %x = graph.exp %a {graph.sharding = ["tensor", "tensor"]} : tensor<4x4xf32>
  return %x : tensor<4x4xf32>
}

// -----

func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{partition: 'graph.sharding' on an op may name only 'tensor', not 'data'}}
  %x = graph.exp %a {graph.sharding = ["data", ""]} : tensor<4x4xf32>
  return %x : tensor<4x4xf32>
}

// -----

// expected-error@+1 {{partition: argument 0 is split over 'tensor', but arguments split over it are not supported yet: annotate the ops that read it instead}}
func.func @main(%a: tensor<4x4xf32> {graph.sharding = ["tensor", ""]}) -> tensor<4x4xf32> {
  %x = graph.exp %a : tensor<4x4xf32>
  return %x : tensor<4x4xf32>
}

// -----

// expected-error@+1 {{partition: the mesh's tensor axis has 2 ranks but nothing is split over it}}
module {
func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %x = graph.exp %a : tensor<4x4xf32>
  return %x : tensor<4x4xf32>
}
}

// -----

func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{'graph.sharding' on an op names "pipe", which is not a mesh axis}}
  %x = graph.exp %a {graph.sharding = ["pipe", ""]} : tensor<4x4xf32>
  return %x : tensor<4x4xf32>
}
