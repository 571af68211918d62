// RUN: trainc %s -o %t.tcx && trainc-run %t.tcx --inspect | FileCheck %s

// The serializer writes each fused loop's result from a step register of
// its own: a value yielded twice and a yielded operand are copied by a
// same-type convert (CSE and folding can make either), so the file passes
// the loader's check that results are distinct step registers.
// CHECK: instructions (1):
// CHECK-NEXT: 0: %1, %2, %3 = fused_elementwise(%0) { r1 = exp.f32(r0); r2 = convert.f32(r1); r3 = convert.f32(r0) -> r1 r2 r3 }
func.func @main(%x: tensor<8xf32> {graph.input = "x"}) -> (tensor<8xf32> {graph.output = "a"}, tensor<8xf32> {graph.output = "b"}, tensor<8xf32> {graph.output = "c"}) {
  %r:3 = graph.fused_elementwise %x : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%u: tensor<f32>):
    %e = graph.exp %u : tensor<f32>
    graph.yield %e, %e, %u : tensor<f32>, tensor<f32>, tensor<f32>
  }
  return %r#0, %r#1, %r#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
