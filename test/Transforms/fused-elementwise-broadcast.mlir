// RUN: trainc %s -o %t.tcx && trainc-run %t.tcx --inspect | FileCheck %s

// A batch norm's scale and shift over NCHW: the fused loop reads the [C]
// values through the dims section (format 30), and no broadcast is left
// to store the [N, C, H, W] copies.
// CHECK: instructions (1):
// CHECK-NEXT: 0: %3 = fused_elementwise(%0, %1, %2) { r3 = mul.f32(r0, r1); r4 = add.f32(r3, r2) -> r4; r1 spans [1]; r2 spans [1] }
// CHECK-NOT: broadcast_in_dim
func.func @main(%x: tensor<2x3x4x4xf32> {graph.input = "x"}, %g: tensor<3xf32> {graph.input = "g"}, %b: tensor<3xf32> {graph.input = "b"}) -> (tensor<2x3x4x4xf32> {graph.output = "y"}) {
  %bg = graph.broadcast_in_dim %g, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %m = graph.mul %x, %bg : tensor<2x3x4x4xf32>
  %y = graph.add %m, %bb : tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}
