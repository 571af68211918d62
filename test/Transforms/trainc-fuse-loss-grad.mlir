// RUN: trainc-opt %s --trainc-fuse-loss-grad -split-input-file | FileCheck %s

// A bf16 language model's loss (f32) and its logits gradient, the weight a
// constant (mean over 8 positions): one op at the loss's place, with the
// loss's reduction, ignore_index and the padded classes.
// CHECK-LABEL: func.func @at_the_loss
// CHECK-SAME: (%[[L:.+]]: tensor<8x128xbf16>, %[[T:.+]]: tensor<8xi64>)
// CHECK-NEXT: %[[W:.+]] = graph.constant
// CHECK-NEXT: %[[LOSS:.+]], %[[GRAD:.+]] = graph.softmax_cross_entropy_and_grad %[[L]], %[[T]], %[[W]], reduction = mean, ignore_index = -100 {classes = 100 : i64} : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>) -> (tensor<f32>, tensor<8x128xbf16>)
// CHECK-NEXT: %[[N:.+]] = graph.neg %[[GRAD]]
// CHECK-NEXT: return %[[LOSS]], %[[N]]
func.func @at_the_loss(%l: tensor<8x128xbf16>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x128xbf16>) {
  %w = graph.constant dense<0.125> : tensor<8xf32>
  %loss = graph.softmax_cross_entropy %l, %t, reduction = mean, ignore_index = -100 {classes = 100}
      : (tensor<8x128xbf16>, tensor<8xi64>) -> tensor<f32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w {classes = 100}
      : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x128xbf16>
  %n = graph.neg %g : tensor<8x128xbf16>
  return %loss, %n : tensor<f32>, tensor<8x128xbf16>
}

// -----

// The weight is made after the loss (from the loss's own scale, say): the
// fused op takes the gradient's place, every user of the loss following it.
// CHECK-LABEL: func.func @at_the_grad
// CHECK-NEXT: %[[W:.+]] = graph.neg
// CHECK-NEXT: %[[LOSS:.+]], %[[GRAD:.+]] = graph.softmax_cross_entropy_and_grad %{{.+}}, %{{.+}}, %[[W]], reduction = none
// CHECK-NEXT: return %[[LOSS]], %[[GRAD]]
func.func @at_the_grad(%l: tensor<4x16xf32>, %t: tensor<4xi32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x16xf32>) {
  %loss = graph.softmax_cross_entropy %l, %t, reduction = none
      : (tensor<4x16xf32>, tensor<4xi32>) -> tensor<4xf32>
  %w = graph.neg %v : tensor<4xf32>
  %g = graph.softmax_cross_entropy_grad %l, %t, %w
      : (tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %loss, %g : tensor<4xf32>, tensor<4x16xf32>
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
