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
