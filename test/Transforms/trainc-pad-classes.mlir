// RUN: trainc-opt %s --trainc-pad-classes -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-pad-classes=multiple=0 -split-input-file | FileCheck %s --check-prefix=OFF

// A language model's head and loss, as the lower phase sees them (1,001
// classes): the weight gets 23 zero rows, the losses read rows of 1,024
// with classes = 1001, the hidden states' gradient contracts the padded
// rows with the padded weight, and the weight's gradient drops its padded
// rows.
// CHECK-LABEL: func.func @head
// CHECK-SAME: (%[[H:.+]]: tensor<2x4x8xbf16>, %[[W:.+]]: tensor<1001x8xbf16>, %[[T:.+]]: tensor<8xi64>, %[[WT:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[Z:.+]] = graph.constant dense<0.000000e+00> : tensor<23x8xbf16>
// CHECK-NEXT: %[[WP:.+]] = graph.concatenate(%[[W]], %[[Z]]), dim = 0 : (tensor<1001x8xbf16>, tensor<23x8xbf16>) -> tensor<1024x8xbf16>
// CHECK-NEXT: %[[L:.+]] = graph.dot_general %[[H]], %[[WP]], batching_dims = [] x [], contracting_dims = [2] x [1] : (tensor<2x4x8xbf16>, tensor<1024x8xbf16>) -> tensor<2x4x1024xbf16>
// CHECK-NEXT: %[[L2:.+]] = graph.reshape %[[L]] : (tensor<2x4x1024xbf16>) -> tensor<8x1024xbf16>
// CHECK-NEXT: %[[LOSS:.+]] = graph.softmax_cross_entropy %[[L2]], %[[T]], reduction = mean {classes = 1001 : i64} : (tensor<8x1024xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: %[[G:.+]] = graph.softmax_cross_entropy_grad %[[L2]], %[[T]], %[[WT]] {classes = 1001 : i64} : (tensor<8x1024xbf16>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x1024xbf16>
// CHECK-NEXT: %[[G3:.+]] = graph.reshape %[[G]] : (tensor<8x1024xbf16>) -> tensor<2x4x1024xbf16>
// CHECK-NEXT: %[[DH:.+]] = graph.dot_general %[[G3]], %[[WP]], batching_dims = [] x [], contracting_dims = [2] x [0] {f32_result} : (tensor<2x4x1024xbf16>, tensor<1024x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[DWP:.+]] = graph.dot_general %[[G3]], %[[H]], batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {f32_result} : (tensor<2x4x1024xbf16>, tensor<2x4x8xbf16>) -> tensor<1024x8xf32>
// CHECK-NEXT: %[[DW:.+]] = graph.slice %[[DWP]], start = [0, 0], limit = [1001, 8], strides = [1, 1] : (tensor<1024x8xf32>) -> tensor<1001x8xf32>
// CHECK-NEXT: return %[[LOSS]], %[[DH]], %[[DW]]
// OFF-LABEL: func.func @head
// OFF-NOT: classes
// OFF: return
func.func @head(%h: tensor<2x4x8xbf16>, %w: tensor<1001x8xbf16>, %t: tensor<8xi64>, %wt: tensor<8xf32>)
    -> (tensor<f32>, tensor<2x4x8xf32>, tensor<1001x8xf32>) {
  %l = graph.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [2] x [1]
      : (tensor<2x4x8xbf16>, tensor<1001x8xbf16>) -> tensor<2x4x1001xbf16>
  %l2 = graph.reshape %l : (tensor<2x4x1001xbf16>) -> tensor<8x1001xbf16>
  %loss = graph.softmax_cross_entropy %l2, %t, reduction = mean : (tensor<8x1001xbf16>, tensor<8xi64>) -> tensor<f32>
  %g = graph.softmax_cross_entropy_grad %l2, %t, %wt : (tensor<8x1001xbf16>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x1001xbf16>
  %g3 = graph.reshape %g : (tensor<8x1001xbf16>) -> tensor<2x4x1001xbf16>
  %dh = graph.dot_general %g3, %w, batching_dims = [] x [], contracting_dims = [2] x [0] {f32_result}
      : (tensor<2x4x1001xbf16>, tensor<1001x8xbf16>) -> tensor<2x4x8xf32>
  %dw = graph.dot_general %g3, %h, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] {f32_result}
      : (tensor<2x4x1001xbf16>, tensor<2x4x8xbf16>) -> tensor<1001x8xf32>
  return %loss, %dh, %dw : tensor<f32>, tensor<2x4x8xf32>, tensor<1001x8xf32>
}

// -----

// The classes as the weight's columns (w: [8, 1001], no reshape): the
// padding is on dim 1, and the weight's gradient (the classes last) drops
// its padded columns.
// CHECK-LABEL: func.func @columns
// CHECK: graph.concatenate(%{{.+}}, %{{.+}}), dim = 1 : (tensor<8x1001xf32>, tensor<8x23xf32>) -> tensor<8x1024xf32>
// CHECK: graph.softmax_cross_entropy_grad {{.*}} {classes = 1001 : i64} : (tensor<4x1024xf32>
// CHECK: %[[DWP:.+]] = graph.dot_general {{.*}} -> tensor<8x1024xf32>
// CHECK-NEXT: graph.slice %[[DWP]], start = [0, 0], limit = [8, 1001], strides = [1, 1]
func.func @columns(%h: tensor<4x8xf32>, %w: tensor<8x1001xf32>, %t: tensor<4xi32>, %wt: tensor<4xf32>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<8x1001xf32>) {
  %l = graph.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x1001xf32>) -> tensor<4x1001xf32>
  %loss = graph.softmax_cross_entropy %l, %t, reduction = sum : (tensor<4x1001xf32>, tensor<4xi32>) -> tensor<f32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %wt : (tensor<4x1001xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x1001xf32>
  %dh = graph.dot_general %g, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x1001xf32>, tensor<8x1001xf32>) -> tensor<4x8xf32>
  %dw = graph.dot_general %h, %g, batching_dims = [] x [], contracting_dims = [0] x [0]
      : (tensor<4x8xf32>, tensor<4x1001xf32>) -> tensor<8x1001xf32>
  return %loss, %dh, %dw : tensor<f32>, tensor<4x8xf32>, tensor<8x1001xf32>
}

// -----

// What stays (each with a gradient, so that only the named reason stops
// it): classes already a multiple of 64 (1,024); too few classes for the
// padding (100 -> 128 adds more than 1/32); logits returned; the gradient
// read by something other than a matmul; a gradient contracted with
// another tensor than the weight.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: classes =
// CHECK-NOT: graph.concatenate
// CHECK: return
func.func @stays(%h: tensor<4x8xf32>, %w: tensor<1024x8xf32>, %w2: tensor<100x8xf32>, %w3: tensor<1001x8xf32>,
                 %v3: tensor<1001x8xf32>, %t: tensor<4xi64>, %wt: tensor<4xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x1001xf32>, tensor<f32>, tensor<4x1001xf32>, tensor<f32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %l = graph.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<1024x8xf32>) -> tensor<4x1024xf32>
  %a = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<4x1024xf32>, tensor<4xi64>) -> tensor<f32>
  %ga = graph.softmax_cross_entropy_grad %l, %t, %wt : (tensor<4x1024xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x1024xf32>
  %da = graph.dot_general %ga, %w, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x1024xf32>, tensor<1024x8xf32>) -> tensor<4x8xf32>
  %l2 = graph.dot_general %h, %w2, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<100x8xf32>) -> tensor<4x100xf32>
  %b = graph.softmax_cross_entropy %l2, %t, reduction = mean : (tensor<4x100xf32>, tensor<4xi64>) -> tensor<f32>
  %gb = graph.softmax_cross_entropy_grad %l2, %t, %wt : (tensor<4x100xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x100xf32>
  %db = graph.dot_general %gb, %w2, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x100xf32>, tensor<100x8xf32>) -> tensor<4x8xf32>
  %l3 = graph.dot_general %h, %w3, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<1001x8xf32>) -> tensor<4x1001xf32>
  %c = graph.softmax_cross_entropy %l3, %t, reduction = mean : (tensor<4x1001xf32>, tensor<4xi64>) -> tensor<f32>
  %gc = graph.softmax_cross_entropy_grad %l3, %t, %wt : (tensor<4x1001xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x1001xf32>
  %dc = graph.dot_general %gc, %w3, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x1001xf32>, tensor<1001x8xf32>) -> tensor<4x8xf32>
  %l4 = graph.dot_general %h, %v3, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<1001x8xf32>) -> tensor<4x1001xf32>
  %d = graph.softmax_cross_entropy %l4, %t, reduction = mean : (tensor<4x1001xf32>, tensor<4xi64>) -> tensor<f32>
  %g4 = graph.softmax_cross_entropy_grad %l4, %t, %wt : (tensor<4x1001xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x1001xf32>
  %e = graph.neg %g4 : tensor<4x1001xf32>
  %l5 = graph.dot_general %h, %w3, batching_dims = [] x [], contracting_dims = [1] x [1] {tf32}
      : (tensor<4x8xf32>, tensor<1001x8xf32>) -> tensor<4x1001xf32>
  %f = graph.softmax_cross_entropy %l5, %t, reduction = mean : (tensor<4x1001xf32>, tensor<4xi64>) -> tensor<f32>
  %g5 = graph.softmax_cross_entropy_grad %l5, %t, %wt : (tensor<4x1001xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x1001xf32>
  %dh5 = graph.dot_general %g5, %v3, batching_dims = [] x [], contracting_dims = [1] x [0]
      : (tensor<4x1001xf32>, tensor<1001x8xf32>) -> tensor<4x8xf32>
  return %a, %b, %c, %l3, %d, %e, %f, %dh5, %da, %db, %dc
      : tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x1001xf32>, tensor<f32>, tensor<4x1001xf32>, tensor<f32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Two losses of one matmul and a batched head (a weight per batch, padded
// on its dim 1): one padded weight, both losses get classes, the weight's
// gradient drops its padded rows on dim 1.
// CHECK-LABEL: func.func @two_losses_batched
// CHECK: graph.concatenate(%{{.+}}, %{{.+}}), dim = 1 : (tensor<2x1001x8xf32>, tensor<2x23x8xf32>) -> tensor<2x1024x8xf32>
// CHECK-NOT: graph.concatenate
// CHECK: graph.softmax_cross_entropy {{.*}} {classes = 1001 : i64}
// CHECK: graph.softmax_cross_entropy {{.*}} {classes = 1001 : i64}
// CHECK: graph.softmax_cross_entropy_grad {{.*}} {classes = 1001 : i64}
// CHECK: graph.dot_general {{.*}} batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x1024xf32>, tensor<2x1024x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DWP:.+]] = graph.dot_general {{.*}} -> tensor<2x1024x8xf32>
// CHECK-NEXT: graph.slice %[[DWP]], start = [0, 0, 0], limit = [2, 1001, 8], strides = [1, 1, 1]
func.func @two_losses_batched(%h: tensor<2x4x8xf32>, %w: tensor<2x1001x8xf32>, %t: tensor<2x4xi64>, %wt: tensor<2x4xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<2x4x8xf32>, tensor<2x1001x8xf32>) {
  %l = graph.dot_general %h, %w, batching_dims = [0] x [0], contracting_dims = [2] x [2]
      : (tensor<2x4x8xf32>, tensor<2x1001x8xf32>) -> tensor<2x4x1001xf32>
  %a = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<2x4x1001xf32>, tensor<2x4xi64>) -> tensor<f32>
  %b = graph.softmax_cross_entropy %l, %t, reduction = sum : (tensor<2x4x1001xf32>, tensor<2x4xi64>) -> tensor<f32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %wt : (tensor<2x4x1001xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<2x4x1001xf32>
  %dh = graph.dot_general %g, %w, batching_dims = [0] x [0], contracting_dims = [2] x [1]
      : (tensor<2x4x1001xf32>, tensor<2x1001x8xf32>) -> tensor<2x4x8xf32>
  %dw = graph.dot_general %g, %h, batching_dims = [0] x [0], contracting_dims = [1] x [1]
      : (tensor<2x4x1001xf32>, tensor<2x4x8xf32>) -> tensor<2x1001x8xf32>
  return %a, %b, %dh, %dw : tensor<f32>, tensor<f32>, tensor<2x4x8xf32>, tensor<2x1001x8xf32>
}

// -----

// An inference program's loss (no gradient) is not padded.
// CHECK-LABEL: func.func @inference
// CHECK-NOT: classes
// CHECK: return
func.func @inference(%h: tensor<4x8xf32>, %w: tensor<1001x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = graph.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [1] x [1]
      : (tensor<4x8xf32>, tensor<1001x8xf32>) -> tensor<4x1001xf32>
  %a = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<4x1001xf32>, tensor<4xi64>) -> tensor<f32>
  return %a : tensor<f32>
}
