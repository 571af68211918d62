// RUN: trainc-opt %s --trainc-widen-products -split-input-file | FileCheck %s

// A bf16 weight gradient widened for the f32 optimizer is made in f32.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[DY:.+]]: tensor<8x16xbf16>, %[[X:.+]]: tensor<8x4xbf16>)
func.func @weight_gradient(%dy: tensor<8x16xbf16>, %x: tensor<8x4xbf16>) -> tensor<16x4xf32> {
  %p = graph.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
         : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xbf16>
  %g = graph.convert %p : (tensor<16x4xbf16>) -> tensor<16x4xf32>
  // CHECK: %[[G:.+]] = graph.dot_general %[[DY]], %[[X]], batching_dims = [] x [], contracting_dims = [0] x [0] {f32_result} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xf32>
  // CHECK-NOT: graph.convert
  // CHECK: return %[[G]]
  return %g : tensor<16x4xf32>
}

// -----

// f16 too, batched, with a recompute clone's mark on both: kept.
// CHECK-LABEL: func.func @f16_batched_marked
func.func @f16_batched_marked(%a: tensor<2x3x5xf16>, %b: tensor<2x5x7xf16>) -> tensor<2x3x7xf32> {
  %p = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] {recompute.clone}
         : (tensor<2x3x5xf16>, tensor<2x5x7xf16>) -> tensor<2x3x7xf16>
  %g = graph.convert %p {recompute.clone} : (tensor<2x3x7xf16>) -> tensor<2x3x7xf32>
  // CHECK: graph.dot_general {{.+}} {f32_result, recompute.clone} : (tensor<2x3x5xf16>, tensor<2x5x7xf16>) -> tensor<2x3x7xf32>
  // CHECK-NOT: graph.convert
  return %g : tensor<2x3x7xf32>
}

// -----

// Left alone: a product with another use (its 16-bit value is needed), an
// f32 product, a widening to f64, and marks that differ.
// CHECK-LABEL: func.func @stays
func.func @stays(%a: tensor<4x8xbf16>, %b: tensor<8x2xbf16>, %c: tensor<4x8xf32>, %d: tensor<8x2xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xbf16>, tensor<4x2xf64>, tensor<4x2xf64>, tensor<4x2xf32>) {
  // CHECK-NOT: f32_result
  %p = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  %w = graph.convert %p : (tensor<4x2xbf16>) -> tensor<4x2xf32>
  %q = graph.dot_general %c, %d, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %qw = graph.convert %q : (tensor<4x2xf32>) -> tensor<4x2xf64>
  %r = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {tag}
         : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  %rw = graph.convert %r : (tensor<4x2xbf16>) -> tensor<4x2xf64>
  %s = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {recompute.clone}
         : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  %sw = graph.convert %s : (tensor<4x2xbf16>) -> tensor<4x2xf32>
  // CHECK: return
  return %w, %p, %qw, %rw, %sw : tensor<4x2xf32>, tensor<4x2xbf16>, tensor<4x2xf64>, tensor<4x2xf64>, tensor<4x2xf32>
}

// -----

// A bf16 bias gradient summed over rows and widened for the f32 bias is
// summed in f32 (reduce_sum's C3); a sum with another use, or widened to
// f64, or of f32 keeps its convert, and so does an f16 sum (where a
// loss-scaled backward pass overflows as PyTorch's does).
// CHECK-LABEL: func.func @bias_gradient
// CHECK-SAME: (%[[G:[^:]+]]: tensor<8x16xbf16>, %[[H:[^:]+]]: tensor<8x16xf16>, %[[F:[^:]+]]: tensor<8x16xf32>)
// CHECK: %[[DB:.+]] = graph.reduce_sum %[[G]], dims = [0] : (tensor<8x16xbf16>) -> tensor<16xf32>
// CHECK: %[[DH:.+]] = graph.reduce_sum %[[H]], dims = [0] : (tensor<8x16xf16>) -> tensor<16xf16>
// CHECK: graph.convert %[[DH]] : (tensor<16xf16>) -> tensor<16xf32>
// CHECK: %[[KEPT:.+]] = graph.reduce_sum %[[G]], dims = [1] : (tensor<8x16xbf16>) -> tensor<8xbf16>
// CHECK: graph.convert %[[KEPT]] : (tensor<8xbf16>) -> tensor<8xf32>
// CHECK: %[[WIDE:.+]] = graph.reduce_sum %[[H]], dims = [1] : (tensor<8x16xf16>) -> tensor<8xf16>
// CHECK: graph.convert %[[WIDE]] : (tensor<8xf16>) -> tensor<8xf64>
// CHECK: %[[F32:.+]] = graph.reduce_sum %[[F]], dims = [0] : (tensor<8x16xf32>) -> tensor<16xf32>
// CHECK: graph.convert %[[F32]] : (tensor<16xf32>) -> tensor<16xf64>
func.func @bias_gradient(%g: tensor<8x16xbf16>, %h: tensor<8x16xf16>, %f: tensor<8x16xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<8xf64>, tensor<16xf64>) {
  %0 = graph.reduce_sum %g, dims = [0] : (tensor<8x16xbf16>) -> tensor<16xbf16>
  %1 = graph.convert %0 : (tensor<16xbf16>) -> tensor<16xf32>
  %2 = graph.reduce_sum %h, dims = [0] : (tensor<8x16xf16>) -> tensor<16xf16>
  %3 = graph.convert %2 : (tensor<16xf16>) -> tensor<16xf32>
  %4 = graph.reduce_sum %g, dims = [1] : (tensor<8x16xbf16>) -> tensor<8xbf16>
  %5 = graph.convert %4 : (tensor<8xbf16>) -> tensor<8xf32>
  %6 = graph.reduce_sum %h, dims = [1] : (tensor<8x16xf16>) -> tensor<8xf16>
  %7 = graph.convert %6 : (tensor<8xf16>) -> tensor<8xf64>
  %8 = graph.reduce_sum %f, dims = [0] : (tensor<8x16xf32>) -> tensor<16xf32>
  %9 = graph.convert %8 : (tensor<16xf32>) -> tensor<16xf64>
  return %1, %3, %5, %4, %7, %9 : tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<8xf64>, tensor<16xf64>
}

// -----

// A product read only by elementwise math (a GELU gradient, a multiply)
// keeps its 16 bits: trainc-fuse-elementwise puts the convert in their
// loop. Read by a sum (a residual stream), it is widened.
// CHECK-LABEL: func.func @read_by_elementwise_math
// CHECK: %[[P:.+]] = graph.dot_general {{.+}} : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
// CHECK: %[[W:.+]] = graph.convert %[[P]] : (tensor<4x2xbf16>) -> tensor<4x2xf32>
// CHECK: graph.gelu_grad %{{.+}}, %[[W]]
// CHECK: graph.mul %[[W]], %{{.+}}
// CHECK: %[[S:.+]] = graph.dot_general {{.+}} {f32_result} : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
// CHECK: graph.add %{{.+}}, %[[S]]
func.func @read_by_elementwise_math(%a: tensor<4x8xbf16>, %b: tensor<8x2xbf16>, %x: tensor<4x2xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %p = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  %w = graph.convert %p : (tensor<4x2xbf16>) -> tensor<4x2xf32>
  %g = graph.gelu_grad %x, %w, approximation = erf : tensor<4x2xf32>
  %m = graph.mul %w, %x : tensor<4x2xf32>
  %s = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  %sw = graph.convert %s : (tensor<4x2xbf16>) -> tensor<4x2xf32>
  %r = graph.add %x, %sw : tensor<4x2xf32>
  return %g, %m, %r : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
