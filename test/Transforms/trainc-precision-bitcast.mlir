// RUN: trainc-opt %s --trainc-precision=precision=bf16 --canonicalize --cse | FileCheck %s

// A bitcast reads the bits of its operand as the program typed it: the
// dot's result, narrowed to bf16, is widened back to f32 for a bitcast to
// i32 (as for jnp.signbit of an activation); a bitcast made f32 by the
// program stays f32.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.+]] = graph.dot_general {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[YF:.+]] = graph.convert %[[Y]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: graph.bitcast %[[YF]] : (tensor<4x8xf32>) -> tensor<4x8xi32>
// CHECK: graph.bitcast %arg2 : (tensor<4x8xui32>) -> tensor<4x8xf32>
func.func @main(%w: tensor<8x8xf32> {train.param = "w", train.init = dense<0.1> : tensor<8x8xf32>},
                %x: tensor<4x8xf32> {graph.input = "x"},
                %bits: tensor<4x8xui32> {graph.input = "bits"}) -> (tensor<4x8xi32> {graph.output = "signs"}, tensor<4x8xf32> {graph.output = "uniform"}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %i = graph.bitcast %y : (tensor<4x8xf32>) -> tensor<4x8xi32>
  %f = graph.bitcast %bits : (tensor<4x8xui32>) -> tensor<4x8xf32>
  return %i, %f : tensor<4x8xi32>, tensor<4x8xf32>
}
