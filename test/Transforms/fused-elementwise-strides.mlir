// RUN: not trainc %s -o %t.tcx 2>&1 | FileCheck %s

// A hand-written loop whose broadcast operand the executable would read
// through 7 strides (a [2, 2, 2] value spanning every other dimension of
// seven; the limit is 6): the serializer refuses it, naming the operand.
// CHECK: operand 1 of a fused loop is read through more than 6 strided dimensions of its results, the executable's limit
func.func @main(%x: tensor<2x2x2x2x2x2x2xf32> {graph.input = "x"}, %w: tensor<2x2x2xf32> {graph.input = "w"}) -> (tensor<2x2x2x2x2x2x2xf32> {graph.output = "y"}) {
  %r = graph.fused_elementwise %x, %w {operand_dims = [array<i64: 0, 1, 2, 3, 4, 5, 6>, array<i64: 1, 3, 5>]} : (tensor<2x2x2x2x2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2x2x2x2x2xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = graph.mul %a, %b : tensor<f32>
    graph.yield %m : tensor<f32>
  }
  return %r : tensor<2x2x2x2x2x2x2xf32>
}
