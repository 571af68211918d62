// RUN: trainc-opt %s --trainc-fuse-loss-grad -split-input-file | FileCheck %s

// A bf16 language model's loss (f32) and its logits gradient, the weight a
// constant (mean over 8 positions): one op at the gradient's place (the
// loss feeds only the outputs), with the loss's reduction, ignore_index
// and the padded classes.
// CHECK-LABEL: func.func @at_the_grad
// CHECK-SAME: (%[[L:.+]]: tensor<8x128xbf16>, %[[T:.+]]: tensor<8xi64>)
// CHECK-NEXT: %[[W:.+]] = graph.constant
// CHECK-NEXT: %[[A:.+]] = graph.neg %[[L]]
// CHECK-NEXT: %[[LOSS:.+]], %[[GRAD:.+]] = graph.softmax_cross_entropy_and_grad %[[L]], %[[T]], %[[W]], reduction = mean, ignore_index = -100 {classes = 100 : i64} : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>) -> (tensor<f32>, tensor<8x128xbf16>)
// CHECK-NEXT: return %[[LOSS]], %[[GRAD]], %[[A]]
func.func @at_the_grad(%l: tensor<8x128xbf16>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x128xbf16>, tensor<8x128xbf16>) {
  %w = graph.constant dense<0.125> : tensor<8xf32>
  %loss = graph.softmax_cross_entropy %l, %t, reduction = mean, ignore_index = -100 {classes = 100}
      : (tensor<8x128xbf16>, tensor<8xi64>) -> tensor<f32>
  %a = graph.neg %l : tensor<8x128xbf16>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w {classes = 100}
      : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x128xbf16>
  return %loss, %g, %a : tensor<f32>, tensor<8x128xbf16>, tensor<8x128xbf16>
}

// -----

// The loss is used before the gradient (a metric, say): the fused op takes
// the loss's place, the weight being defined by then and nothing else
// reading the logits in between; both ops' marks are kept.
// CHECK-LABEL: func.func @at_the_loss
// CHECK-NEXT: %[[LOSS:.+]], %[[GRAD:.+]] = graph.softmax_cross_entropy_and_grad %{{.+}}, %{{.+}}, %{{.+}}, reduction = none {recompute.clone}
// CHECK-NEXT: %[[N:.+]] = graph.neg %[[LOSS]]
// CHECK-NEXT: return %[[N]], %[[GRAD]]
func.func @at_the_loss(%l: tensor<4x16xf32>, %t: tensor<4xi32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x16xf32>) {
  %loss = graph.softmax_cross_entropy %l, %t, reduction = none {recompute.clone}
      : (tensor<4x16xf32>, tensor<4xi32>) -> tensor<4xf32>
  %n = graph.neg %loss : tensor<4xf32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w {recompute.clone}
      : (tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %n, %g : tensor<4xf32>, tensor<4x16xf32>
}

// -----

// As above, but another op reads the logits between the two: at the loss's
// place the gradient could not take the logits' memory (two logits-sized
// buffers where there was one), so the pair stays.
// CHECK-LABEL: func.func @logits_read_between
// CHECK-NOT: softmax_cross_entropy_and_grad
func.func @logits_read_between(%l: tensor<4x16xf32>, %t: tensor<4xi32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %loss = graph.softmax_cross_entropy %l, %t, reduction = none
      : (tensor<4x16xf32>, tensor<4xi32>) -> tensor<4xf32>
  %n = graph.neg %loss : tensor<4xf32>
  %a = graph.neg %l : tensor<4x16xf32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w
      : (tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %n, %g, %a : tensor<4xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The gradient before the loss in the block (nothing requires the forward
// order): at the gradient's place, which precedes every user of the loss.
// CHECK-LABEL: func.func @grad_first
// CHECK-NEXT: %[[LOSS:.+]], %[[GRAD:.+]] = graph.softmax_cross_entropy_and_grad
// CHECK-NEXT: return %[[LOSS]], %[[GRAD]]
func.func @grad_first(%l: tensor<4x16xf32>, %t: tensor<4xi64>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<4x16xf32>) {
  %g = graph.softmax_cross_entropy_grad %l, %t, %w
      : (tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x16xf32>
  %loss = graph.softmax_cross_entropy %l, %t, reduction = sum
      : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss, %g : tensor<f32>, tensor<4x16xf32>
}

// -----

// The weight is the loss's own function (its user comes before the
// gradient, which it feeds): neither place will do, the pair stays.
// CHECK-LABEL: func.func @weight_from_the_loss
// CHECK-NEXT: graph.softmax_cross_entropy %
// CHECK: graph.softmax_cross_entropy_grad
// CHECK-NOT: softmax_cross_entropy_and_grad
func.func @weight_from_the_loss(%l: tensor<4x16xf32>, %t: tensor<4xi64>) -> tensor<4x16xf32> {
  %loss = graph.softmax_cross_entropy %l, %t, reduction = none
      : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<4xf32>
  %w = graph.neg %loss : tensor<4xf32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w
      : (tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// Other targets, or other classes: not the same softmax, nothing fused.
// CHECK-LABEL: func.func @not_a_pair
// CHECK-NOT: softmax_cross_entropy_and_grad
func.func @not_a_pair(%l: tensor<4x16xf32>, %t: tensor<4xi64>, %u: tensor<4xi64>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>) {
  %a = graph.softmax_cross_entropy %l, %t, reduction = sum
      : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %ga = graph.softmax_cross_entropy_grad %l, %u, %w
      : (tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x16xf32>
  %b = graph.softmax_cross_entropy %l, %u, reduction = sum {classes = 10}
      : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %gb = graph.softmax_cross_entropy_grad %l, %t, %w {classes = 10}
      : (tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x16xf32>
  return %a, %ga, %b, %gb : tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>
}

// -----

// A recompute clone's mark on one of the two only: they stay apart.
// CHECK-LABEL: func.func @other_marks
// CHECK-NOT: softmax_cross_entropy_and_grad
func.func @other_marks(%l: tensor<4x16xf32>, %t: tensor<4xi64>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<4x16xf32>) {
  %a = graph.softmax_cross_entropy %l, %t, reduction = mean {recompute.clone}
      : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w
      : (tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x16xf32>
  return %a, %g : tensor<f32>, tensor<4x16xf32>
}
