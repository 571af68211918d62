// RUN: trainc-opt %s --trainc-fuse-gelu -split-input-file | FileCheck %s

// An MLP's first layer in training: the GELU comes from the fused op, and
// the GELU's gradient reads the pre-activation, its second result. The op
// takes the dot's place, before the other use of the GELU's operand.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xbf16>, %[[W:.+]]: tensor<16x8xbf16>, %[[B:.+]]: tensor<16xbf16>, %[[G:.+]]: tensor<4x16xbf16>)
// CHECK-NEXT: %[[H:.+]], %[[P:.+]] = graph.dot_general_bias_gelu %[[X]], %[[W]], %[[B]], batching_dims = [] x [], contracting_dims = [1] x [1], approximation = tanh : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
// CHECK-NEXT: %[[D:.+]] = graph.gelu_grad %[[P]], %[[G]], approximation = tanh
// CHECK-NEXT: return %[[H]], %[[D]]
func.func @mlp(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>, %g: tensor<4x16xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %p = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  %d = graph.gelu_grad %p, %g, approximation = tanh : tensor<4x16xbf16>
  %h = graph.gelu %p, approximation = tanh : tensor<4x16xbf16>
  return %h, %d : tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// The erf form, f32 and tf32: the op is the same on every type (the GPU
// chooses its epilogue); a recompute clone's mark on both is kept.
// CHECK-LABEL: func.func @erf_tf32_marked
// CHECK-NEXT: %[[H:.+]], %{{.+}} = graph.dot_general_bias_gelu {{.*}} approximation = erf {recompute.clone = 1 : i64, tf32}
// CHECK-NEXT: return %[[H]]
func.func @erf_tf32_marked(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %p = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {recompute.clone = 1 : i64, tf32}
      : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h = graph.gelu %p, approximation = erf {recompute.clone = 1 : i64} : tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

// Not fused: a GELU of a product without a bias, and of a dot_general_bias
// whose mark differs from the GELU's (a recompute clone's).
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: graph.dot_general_bias_gelu
// CHECK-COUNT-2: graph.gelu
func.func @unfused(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %p = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h1 = graph.gelu %p, approximation = tanh : tensor<4x16xf32>
  %q = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {recompute.clone = 1 : i64}
      : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h2 = graph.gelu %q, approximation = tanh : tensor<4x16xf32>
  return %h1, %h2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The gradient at an f32 GELU's input: the product and gelu_grad become one
// op, at the product's place (the pre-activation is defined before it).
// CHECK-LABEL: func.func @gradient_f32
// CHECK-SAME: (%[[P:.+]]: tensor<4x16xf32>, %[[DY:.+]]: tensor<4x8xf32>, %[[V:.+]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[D:.+]] = graph.dot_general_gelu_grad %[[DY]], %[[V]], %[[P]], batching_dims = [] x [], contracting_dims = [1] x [0], approximation = erf : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: graph.neg
// CHECK-NEXT: return %[[D]]
func.func @gradient_f32(%p: tensor<4x16xf32>, %dy: tensor<4x8xf32>, %v: tensor<8x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  %q = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %n = graph.neg %dy : tensor<4x8xf32>
  %d = graph.gelu_grad %p, %q, approximation = erf : tensor<4x16xf32>
  return %d, %n : tensor<4x16xf32>, tensor<4x8xf32>
}

// -----

// Mixed precision: the 16-bit product and pre-activation widened, the
// gradient narrowed back: one bf16 op; the pre-activation's widening goes
// with it, and a pre-activation made after the product puts the op at the
// chain's end.
// CHECK-LABEL: func.func @gradient_bf16
// CHECK-SAME: (%[[X:.+]]: tensor<4x16xbf16>, %[[DY:.+]]: tensor<4x8xbf16>, %[[V:.+]]: tensor<8x16xbf16>)
// CHECK-NEXT: graph.dot_general
// CHECK-NEXT: %[[P:.+]] = graph.neg %[[X]]
// CHECK-NEXT: %[[D:.+]] = graph.dot_general_gelu_grad %[[DY]], %[[V]], %[[P]], {{.*}} approximation = tanh : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
// CHECK-NEXT: return %[[D]]
func.func @gradient_bf16(%x: tensor<4x16xbf16>, %dy: tensor<4x8xbf16>, %v: tensor<8x16xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %q = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %other = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %p = graph.neg %x : tensor<4x16xbf16>
  %qw = graph.convert %q : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %pw = graph.convert %p : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %g = graph.gelu_grad %pw, %qw, approximation = tanh : tensor<4x16xf32>
  %d = graph.convert %g : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  return %d, %other : tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// Not fused: a product read by something else too, a widened (f32_result)
// product, a gradient read before it is narrowed, and a cotangent that is
// not a product.
// CHECK-LABEL: func.func @gradient_unfused
// CHECK-NOT: graph.dot_general_gelu_grad
// CHECK-COUNT-4: graph.gelu_grad
func.func @gradient_unfused(%p: tensor<4x16xbf16>, %pf: tensor<4x16xf32>, %dy: tensor<4x8xbf16>,
                            %v: tensor<8x16xbf16>, %g: tensor<4x16xf32>)
    -> (tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %q = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %d1 = graph.gelu_grad %p, %q, approximation = tanh : tensor<4x16xbf16>
  %w = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result}
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  %d2 = graph.gelu_grad %pf, %w, approximation = tanh : tensor<4x16xf32>
  %r = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %rw = graph.convert %r : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %pw = graph.convert %p : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %d3 = graph.gelu_grad %pw, %rw, approximation = tanh : tensor<4x16xf32>
  %d3n = graph.convert %d3 : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  %d4 = graph.gelu_grad %pf, %g, approximation = tanh : tensor<4x16xf32>
  return %d1, %q, %d2, %d3n, %d3, %d4 : tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Forward and backward together: the gradient reads the fused forward's
// pre-activation. Under mixed precision a pre-activation widening that
// something else reads stays for it.
// CHECK-LABEL: func.func @both
// CHECK-NEXT: %[[H:.+]], %[[P:.+]] = graph.dot_general_bias_gelu
// CHECK-NEXT: %[[D:.+]] = graph.dot_general_gelu_grad %{{.+}}, %{{.+}}, %[[P]]
// CHECK-NEXT: %[[W:.+]] = graph.convert %[[P]]
// CHECK-NEXT: return %[[H]], %[[D]], %[[W]]
func.func @both(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>,
                %dy: tensor<4x8xbf16>, %v: tensor<8x16xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xf32>) {
  %p = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  %h = graph.gelu %p, approximation = tanh : tensor<4x16xbf16>
  %q = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %qw = graph.convert %q : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %pw = graph.convert %p : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %g = graph.gelu_grad %pw, %qw, approximation = tanh : tensor<4x16xf32>
  %d = graph.convert %g : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  return %h, %d, %pw : tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xf32>
}

// -----

// Not fused: a narrowing back that carries another mark than the gradient
// (a recompute clone's), and one to another 16-bit type.
// CHECK-LABEL: func.func @marks_and_types
// CHECK-NOT: graph.dot_general_gelu_grad
// CHECK-COUNT-2: graph.gelu_grad
func.func @marks_and_types(%p: tensor<4x16xbf16>, %dy: tensor<4x8xbf16>, %v: tensor<8x16xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x16xf16>) {
  %q = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %qw = graph.convert %q : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %pw = graph.convert %p : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %g = graph.gelu_grad %pw, %qw, approximation = tanh : tensor<4x16xf32>
  %d = graph.convert %g {recompute.clone = 1 : i64} : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  %r = graph.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %rw = graph.convert %r : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %g2 = graph.gelu_grad %pw, %rw, approximation = tanh : tensor<4x16xf32>
  %e = graph.convert %g2 : (tensor<4x16xf32>) -> tensor<4x16xf16>
  return %d, %e : tensor<4x16xbf16>, tensor<4x16xf16>
}
