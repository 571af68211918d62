// RUN: trainc-opt %s --trainc-fuse-norm-grad -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-fuse-norm-grad=residual-grad=false -split-input-file | FileCheck %s --check-prefix=OFF

// layer_norm's rule (scale and bias over the last dim of [2, 3, 4]): the
// product, both sums and xhat are gone; the gradients come from one op.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[S:.+]]: tensor<4xf32>, %[[G:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[DX:.+]], %[[DS:.+]], %[[DB:.+]] = graph.norm_grad_params %[[X]] scale %[[S]], %[[G]], axis = 2, epsilon = 1.000000e-05, centered = true {with_bias_grad} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: return %[[DX]], %[[DS]], %[[DB]]
func.func @layer_norm(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %g: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 2, epsilon = 1.0e-05, centered = true
      : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>)
  %p = graph.mul %g, %xhat : tensor<2x3x4xf32>
  %ds = graph.reduce_sum %p, dims = [0, 1] : (tensor<2x3x4xf32>) -> tensor<4xf32>
  %db = graph.reduce_sum %g, dims = [0, 1] : (tensor<2x3x4xf32>) -> tensor<4xf32>
  return %dx, %ds, %db : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// rms_norm (no bias) in f64, the product written the other way round, the
// dims in another order: the scale's sum only; a sum of g over other dims
// is not the bias's and stays.
// CHECK-LABEL: func.func @rms_norm
// CHECK-NEXT: %[[DX:.+]], %[[DS:.+]] = graph.norm_grad_params %{{.+}} scale %{{.+}}, %[[G:.+]], axis = 2, epsilon = 9.9999999999999995E-7, centered = false : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<2x3x4xf64>) -> (tensor<2x3x4xf64>, tensor<4xf64>)
// CHECK-NEXT: %[[OTHER:.+]] = graph.reduce_sum %[[G]], dims = [0] :
// CHECK-NEXT: return %[[DX]], %[[DS]], %[[OTHER]]
func.func @rms_norm(%x: tensor<2x3x4xf64>, %s: tensor<4xf64>, %g: tensor<2x3x4xf64>) -> (tensor<2x3x4xf64>, tensor<4xf64>, tensor<3x4xf64>) {
  %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 2, epsilon = 1.0e-06, centered = false
      : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<2x3x4xf64>) -> (tensor<2x3x4xf64>, tensor<2x3x4xf64>)
  %p = graph.mul %xhat, %g : tensor<2x3x4xf64>
  %ds = graph.reduce_sum %p, dims = [1, 0] : (tensor<2x3x4xf64>) -> tensor<4xf64>
  %other = graph.reduce_sum %g, dims = [0] : (tensor<2x3x4xf64>) -> tensor<3x4xf64>
  return %dx, %ds, %other : tensor<2x3x4xf64>, tensor<4xf64>, tensor<3x4xf64>
}

// -----

// A sum of g before the norm_grad stays (its users may come before it).
// CHECK-LABEL: func.func @bias_sum_first
// CHECK-NEXT: %[[DB:.+]] = graph.reduce_sum
// CHECK-NEXT: graph.norm_grad_params {{.*}} centered = true : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
func.func @bias_sum_first(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %db = graph.reduce_sum %g, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p = graph.mul %g, %xhat : tensor<4x8xf32>
  %ds = graph.reduce_sum %p, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  return %dx, %ds, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// What stays: xhat with another use; a product of xhat with something other
// than g; a product with another use; a sum over not all leading dims; a
// widened (bf16 -> f32) or mismatched-mark sum; no scale; a 16-bit norm_grad.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: graph.norm_grad_params
// CHECK: return
func.func @stays(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xf32>, %h: tensor<4x8xf32>,
                 %xb: tensor<4x8xbf16>, %sb: tensor<8xbf16>, %gb: tensor<4x8xbf16>, %x3: tensor<2x4x8xf32>, %s3: tensor<8xf32>, %g3: tensor<2x4x8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  // xhat used twice
  %dx0, %xh0 = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p0 = graph.mul %g, %xh0 : tensor<4x8xf32>
  %ds0 = graph.reduce_sum %p0, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  // xhat times another tensor
  %dx1, %xh1 = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 2.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p1 = graph.mul %h, %xh1 : tensor<4x8xf32>
  %ds1 = graph.reduce_sum %p1, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  // the product used twice
  %dx2, %xh2 = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 3.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p2 = graph.mul %g, %xh2 : tensor<4x8xf32>
  %ds2 = graph.reduce_sum %p2, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  // a widened 16-bit norm_grad's sum
  %dx3, %xh3 = graph.norm_grad %xb scale %sb, %gb, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>)
  %p3 = graph.mul %gb, %xh3 : tensor<4x8xbf16>
  %ds3 = graph.reduce_sum %p3, dims = [0] : (tensor<4x8xbf16>) -> tensor<8xf32>
  // a sum over dim 1 only of a [2, 4, 8] product
  %dx4, %xh4 = graph.norm_grad %x3 scale %s3, %g3, axis = 2, epsilon = 1.0e-05, centered = true
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %p4 = graph.mul %g3, %xh4 : tensor<2x4x8xf32>
  %ds4 = graph.reduce_sum %p4, dims = [1] : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
  %ds4r = graph.reduce_sum %ds4, dims = [0] : (tensor<2x8xf32>) -> tensor<8xf32>
  // marks differ (a recompute clone's)
  %dx5, %xh5 = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 4.0e-05, centered = true {recompute}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p5 = graph.mul %g, %xh5 {recompute} : tensor<4x8xf32>
  %ds5 = graph.reduce_sum %p5, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  // no scale
  %dx6, %xh6 = graph.norm_grad %x, %g, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p6 = graph.mul %g, %xh6 : tensor<4x8xf32>
  %ds6 = graph.reduce_sum %p6, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  return %dx0, %ds0, %xh0, %ds1, %ds2, %p2, %ds5, %dx1, %dx2, %dx3, %ds3, %dx4, %dx5, %ds6
      : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// A pre-norm block's residual gradient %r (defined before the norm's
// backward) added to the norm's input gradient, and the sum's bf16 copy,
// inside the op: the add and the convert are gone; the sum is the op's
// input_grad. Off, they stay.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[S:.+]]: tensor<8xf32>, %[[G:.+]]: tensor<4x8xf32>, %[[R:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[SUM:[^,]+]], %[[DS:[^,]+]], %[[EXTRA:[^,]+]]:2 = graph.norm_grad_params %[[X]] scale %[[S]], %[[G]] addend %[[R]], axis = 1, epsilon = 1.000000e-05, centered = true {narrowed_type = bf16, with_bias_grad} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xbf16>)
// CHECK-NEXT: return %[[SUM]], %[[DS]], %[[EXTRA]]#0, %[[EXTRA]]#1
// OFF-LABEL: func.func @residual
// OFF: graph.norm_grad_params {{.*}} centered = true {with_bias_grad} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) ->
// OFF-NEXT: graph.add
// OFF-NEXT: graph.convert
func.func @residual(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xbf16>) {
  %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p = graph.mul %g, %xhat : tensor<4x8xf32>
  %ds = graph.reduce_sum %p, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %db = graph.reduce_sum %g, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %sum = graph.add %dx, %r : tensor<4x8xf32>
  %copy = graph.convert %sum : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %sum, %ds, %db, %copy : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xbf16>
}

// -----

// f64 (rms_norm): the addend only (no 16-bit copy of an f64 gradient; the
// convert stays). An f32 input gradient with two uses takes no add, but
// its f16 copy; the other use reads the f32 one.
// CHECK-LABEL: func.func @partial
// CHECK: %[[SUM:[^,]+]], %{{.+}} = graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}} addend %{{.+}}, axis = 1, epsilon = 1.000000e-05, centered = false : (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<4x8xf64>, tensor<8xf64>)
// CHECK-NEXT: graph.convert %[[SUM]] : (tensor<4x8xf64>) -> tensor<4x8xbf16>
// CHECK: %[[DX:[^,]+]], %{{[^,]+}}, %[[COPY:[^,]+]] = graph.norm_grad_params %{{.+}} scale %{{.+}}, %{{.+}}, axis = 1, epsilon = 1.000000e-05, centered = true {narrowed_type = f16} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf16>)
// CHECK-NEXT: %[[TWICE:.+]] = graph.add %[[DX]], %[[DX]]
// CHECK-NEXT: return {{.*}}, %[[TWICE]], %[[COPY]]
func.func @partial(%x: tensor<4x8xf64>, %s: tensor<8xf64>, %g: tensor<4x8xf64>, %r: tensor<4x8xf64>,
                   %y: tensor<4x8xf32>, %t: tensor<8xf32>, %h: tensor<4x8xf32>)
    -> (tensor<4x8xbf16>, tensor<8xf64>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf16>) {
  %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 1.0e-05, centered = false
      : (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xf64>) -> (tensor<4x8xf64>, tensor<4x8xf64>)
  %p = graph.mul %g, %xhat : tensor<4x8xf64>
  %ds = graph.reduce_sum %p, dims = [0] : (tensor<4x8xf64>) -> tensor<8xf64>
  %sum = graph.add %r, %dx : tensor<4x8xf64>
  %narrow = graph.convert %sum : (tensor<4x8xf64>) -> tensor<4x8xbf16>
  %dy, %yhat = graph.norm_grad %y scale %t, %h, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %q = graph.mul %h, %yhat : tensor<4x8xf32>
  %dt = graph.reduce_sum %q, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %twice = graph.add %dy, %dy : tensor<4x8xf32>
  %copy = graph.convert %dy : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return %narrow, %ds, %dt, %twice, %copy : tensor<4x8xbf16>, tensor<8xf64>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf16>
}

// -----

// What stays unfolded: an addend defined after the norm's op (a post-norm
// block's residual, or a later gradient: its users could come first); an
// add or a convert without the op's marks (a recompute clone's).
// CHECK-LABEL: func.func @stays_unfolded
// CHECK-NOT: addend
// CHECK-NOT: narrowed_type
// CHECK: return
func.func @stays_unfolded(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>) {
  %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 1.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p = graph.mul %g, %xhat : tensor<4x8xf32>
  %ds = graph.reduce_sum %p, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %later = graph.exp %g : tensor<4x8xf32>
  %sum = graph.add %later, %dx : tensor<4x8xf32>
  %dy, %yhat = graph.norm_grad %x scale %s, %g, axis = 1, epsilon = 2.0e-05, centered = true
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %q = graph.mul %g, %yhat : tensor<4x8xf32>
  %dt = graph.reduce_sum %q, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %marked = graph.add %g, %dy {recompute} : tensor<4x8xf32>
  %copy = graph.convert %marked {recompute} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %sum, %ds, %marked, %dt, %copy : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>
}

// -----

// An op that has its copy already (the pass run again, or hand-written)
// takes no add: its copy is of the unsummed gradient.
// CHECK-LABEL: func.func @copy_first
// CHECK: graph.norm_grad_params {{.*}} centered = true {narrowed_type = bf16} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) ->
// CHECK-NEXT: graph.add
func.func @copy_first(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xf32>, %r: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>) {
  %dx, %ds, %copy = graph.norm_grad_params %x scale %s, %g, axis = 1, epsilon = 1.0e-05, centered = true {narrowed_type = bf16}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>)
  %sum = graph.add %r, %dx : tensor<4x8xf32>
  return %sum, %ds, %copy : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>
}
