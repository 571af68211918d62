// The VJP rules of dot_general and the composites (CompositeGradients.cpp).
// Each loss is a dot_general of the op's result with a data input %c, so the
// result cotangent G is the dot_general of the seed 1.0 with %c; the checks
// follow G into the rule. (The pass does not clean up: cotangents of
// operands that are not trained stay as dead ops for canonicalize.)
// RUN: trainc-opt %s --trainc-autodiff -split-input-file | FileCheck %s

// x[2,3] @ w[3,4]: dW = x^T g is one dot_general over the rows, already in
// w's layout.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:arg[0-9]+]]: tensor<3x4xf32> {{.*}}, %[[X:arg[0-9]+]]: tensor<2x3xf32> {{.*}}, %[[C:arg[0-9]+]]: tensor<2x4xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %[[C]], batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[DW:.+]] = graph.dot_general %[[X]], %[[G]], batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK-NOT: graph.transpose
// CHECK: return %{{.+}}, %[[DW]]
func.func @main(%w: tensor<3x4xf32> {train.param = "w", train.init = dense<0.5> : tensor<3x4xf32>},
                %x: tensor<2x3xf32> {graph.input = "x"},
                %c: tensor<2x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A widened bf16 product (f32_result): its f32 cotangent is rounded to bf16
// first, as convert(product)'s gradient would, and the gradient products
// are bf16 ones.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:arg[0-9]+]]: tensor<3x4xbf16> {{.*}}, %[[X:arg[0-9]+]]: tensor<2x3xbf16> {{.*}}, %[[C:arg[0-9]+]]: tensor<2x4xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %[[C]], batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[GN:.+]] = graph.convert %[[G]] : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[DW:.+]] = graph.dot_general %[[X]], %[[GN]], batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<2x3xbf16>, tensor<2x4xbf16>) -> tensor<3x4xbf16>
// CHECK: return %{{.+}}, %[[DW]]
func.func @main(%w: tensor<3x4xbf16> {train.param = "w", train.init = dense<0.5> : tensor<3x4xbf16>},
                %x: tensor<2x3xbf16> {graph.input = "x"},
                %c: tensor<2x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// x[2,3] @ w[4,3]^T: dW comes out [3, 4] (contracting dim first) and is
// transposed into w's [4, 3].
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:arg[0-9]+]]: tensor<4x3xf32> {{.*}}, %[[X:arg[0-9]+]]: tensor<2x3xf32> {{.*}}, %[[C:arg[0-9]+]]: tensor<2x4xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %[[C]], batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[P:.+]] = graph.dot_general %[[X]], %[[G]], batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[DW:.+]] = graph.transpose %[[P]], permutation = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK: return %{{.+}}, %[[DW]]
func.func @main(%w: tensor<4x3xf32> {train.param = "w", train.init = dense<0.5> : tensor<4x3xf32>},
                %x: tensor<2x3xf32> {graph.input = "x"},
                %c: tensor<2x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Batching dims out of order on both sides. Result [2, 3, 4, 6] is
// (batch a1/b1, batch a0/b2, a2, b3). dA = dot_general(g, b) gives
// [2, 3, 4, 5] in (a1, a0, a2, a3) order; dB = dot_general(a, g) gives
// [2, 3, 5, 6] in (b1, b2, b0, b3) order.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:arg[0-9]+]]: tensor<3x2x4x5xf32> {{.*}}, %[[B:arg[0-9]+]]: tensor<5x2x3x6xf32> {{.*}}, %[[C:arg[0-9]+]]: tensor<2x3x4x6xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %[[C]], batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[PA:.+]] = graph.dot_general %[[G]], %[[B]], batching_dims = [0, 1] x [1, 2], contracting_dims = [3] x [3] : (tensor<2x3x4x6xf32>, tensor<5x2x3x6xf32>) -> tensor<2x3x4x5xf32>
// CHECK: %[[PB:.+]] = graph.dot_general %[[A]], %[[G]], batching_dims = [1, 0] x [0, 1], contracting_dims = [2] x [2] : (tensor<3x2x4x5xf32>, tensor<2x3x4x6xf32>) -> tensor<2x3x5x6xf32>
// CHECK: %[[DA:.+]] = graph.transpose %[[PA]], permutation = [1, 0, 2, 3] : (tensor<2x3x4x5xf32>) -> tensor<3x2x4x5xf32>
// CHECK: %[[DB:.+]] = graph.transpose %[[PB]], permutation = [2, 0, 1, 3] : (tensor<2x3x5x6xf32>) -> tensor<5x2x3x6xf32>
// CHECK: return %{{.+}}, %[[DA]], %[[DB]]
func.func @main(%a: tensor<3x2x4x5xf32> {train.param = "a", train.init = dense<0.5> : tensor<3x2x4x5xf32>},
                %b: tensor<5x2x3x6xf32> {train.param = "b", train.init = dense<0.25> : tensor<5x2x3x6xf32>},
                %c: tensor<2x3x4x6xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %a, %b, batching_dims = [1, 0] x [1, 2], contracting_dims = [3] x [0] : (tensor<3x2x4x5xf32>, tensor<5x2x3x6xf32>) -> tensor<2x3x4x6xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2, 3] x [0, 1, 2, 3] : (tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Two contracting dims, paired in a different order on each side.
// dA = dot_general(g, b) contracts b's free dim and gives [2, 5, 3]
// (a0, then b's contracting dims in b's order: b0 ~ a2, b2 ~ a1), so a's
// dims come back with permutation [0, 2, 1].
// CHECK-LABEL: func.func @main
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[PA:.+]] = graph.dot_general %[[G]], %{{.+}}, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x4xf32>, tensor<5x4x3xf32>) -> tensor<2x5x3xf32>
// CHECK: %[[DA:.+]] = graph.transpose %[[PA]], permutation = [0, 2, 1] : (tensor<2x5x3xf32>) -> tensor<2x3x5xf32>
// CHECK: return %{{.+}}, %[[DA]]
func.func @main(%a: tensor<2x3x5xf32> {train.param = "a", train.init = dense<0.5> : tensor<2x3x5xf32>},
                %b: tensor<5x4x3xf32> {graph.input = "b"},
                %c: tensor<2x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [2, 1] x [0, 2] : (tensor<2x3x5xf32>, tensor<5x4x3xf32>) -> tensor<2x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// softmax: dx = y * (g - sum(g * y, dim)), from the forward result y.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.+]] = graph.softmax %{{.+}}, dim = 1 : tensor<2x5x3xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[GY:.+]] = graph.mul %[[G]], %[[Y]] : tensor<2x5x3xf32>
// CHECK: %[[S:.+]] = graph.reduce_sum %[[GY]], dims = [1] : (tensor<2x5x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[SB:.+]] = graph.broadcast_in_dim %[[S]], dims = [0, 2] : (tensor<2x3xf32>) -> tensor<2x5x3xf32>
// CHECK: %[[D:.+]] = graph.sub %[[G]], %[[SB]]
// CHECK: %[[DX:.+]] = graph.mul %[[Y]], %[[D]]
// CHECK: return %{{.+}}, %[[DX]]
func.func @main(%w: tensor<2x5x3xf32> {train.param = "w", train.init = dense<0.5> : tensor<2x5x3xf32>},
                %c: tensor<2x5x3xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.softmax %w, dim = 1 : tensor<2x5x3xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2] x [0, 1, 2] : (tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// gelu (erf): one graph.gelu_grad (Phi(x) + x * phi(x), its description).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:arg[0-9]+]]: tensor<8xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[DX:.+]] = graph.gelu_grad %[[W]], %[[G]], approximation = erf : tensor<8xf32>
// CHECK-NEXT: return %{{.+}}, %[[DX]]
func.func @main(%w: tensor<8xf32> {train.param = "w", train.init = dense<0.5> : tensor<8xf32>},
                %c: tensor<8xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.gelu %w, approximation = erf : tensor<8xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// gelu (tanh): one graph.gelu_grad.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:arg[0-9]+]]: tensor<8xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[DX:.+]] = graph.gelu_grad %[[W]], %[[G]], approximation = tanh : tensor<8xf32>
// CHECK-NEXT: return %{{.+}}, %[[DX]]
func.func @main(%w: tensor<8xf32> {train.param = "w", train.init = dense<0.5> : tensor<8xf32>},
                %c: tensor<8xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.gelu %w, approximation = tanh : tensor<8xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// layer_norm with scale and bias, over the last dim: graph.norm_grad gives
// dx and xhat in one pass; dscale = sum over the leading dims of g * xhat,
// dbias = sum of g.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x3x4xf32> {{.*}}, %[[S:arg[0-9]+]]: tensor<4xf32> {{.*}}, %[[B:arg[0-9]+]]: tensor<4xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[DX:.+]], %[[XHAT:.+]] = graph.norm_grad %[[X]] scale %[[S]], %[[G]], axis = 2, epsilon = 1.000000e-05, centered = true : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT: %[[GXHAT:.+]] = graph.mul %[[G]], %[[XHAT]]
// CHECK-NEXT: %[[DS:.+]] = graph.reduce_sum %[[GXHAT]], dims = [0, 1] : (tensor<2x3x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[DB:.+]] = graph.reduce_sum %[[G]], dims = [0, 1] : (tensor<2x3x4xf32>) -> tensor<4xf32>
// CHECK: return %{{.+}}, %[[DX]], %[[DS]], %[[DB]]
func.func @main(%x: tensor<2x3x4xf32> {train.param = "x", train.init = dense<0.5> : tensor<2x3x4xf32>},
                %s: tensor<4xf32> {train.param = "s", train.init = dense<1.0> : tensor<4xf32>},
                %b: tensor<4xf32> {train.param = "b", train.init = dense<0.0> : tensor<4xf32>},
                %c: tensor<2x3x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.layer_norm %x scale %s bias %b, axis = 2, epsilon = 1.0e-05 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2] x [0, 1, 2] : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A bf16 layer_norm without scale or bias, over two dims: the rule computes
// in f32 (as the kernel does) and rounds dx to bf16 once.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x3x4xbf16>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[G32:.+]] = graph.convert %[[G]] : (tensor<2x3x4xbf16>) -> tensor<2x3x4xf32>
// CHECK: %[[X32:.+]] = graph.convert %[[X]] : (tensor<2x3x4xbf16>) -> tensor<2x3x4xf32>
// CHECK: %[[DX32:.+]], %{{.+}} = graph.norm_grad %[[X32]], %[[G32]], axis = 1, epsilon = 1.000000e-05, centered = true
// CHECK: %[[DX:.+]] = graph.convert %[[DX32]] : (tensor<2x3x4xf32>) -> tensor<2x3x4xbf16>
// CHECK-NEXT: return %{{.+}}, %[[DX]]
func.func @main(%x: tensor<2x3x4xbf16> {train.param = "x", train.init = dense<0.5> : tensor<2x3x4xbf16>},
                %c: tensor<2x3x4xbf16> {graph.input = "c"}) -> (tensor<bf16> {graph.output = "loss", train.loss}) {
  %y = graph.layer_norm %x, axis = 1, epsilon = 1.0e-05 : (tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2] x [0, 1, 2] : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<bf16>
  return %loss : tensor<bf16>
}

// -----

// rms_norm: graph.norm_grad without centring.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x4xf32> {{.*}}, %[[S:arg[0-9]+]]: tensor<4xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[DX:.+]], %[[XHAT:.+]] = graph.norm_grad %[[X]] scale %[[S]], %[[G]], axis = 1, epsilon = 9.9999999999999995E-7, centered = false
// CHECK-NEXT: %[[GXHAT:.+]] = graph.mul %[[G]], %[[XHAT]]
// CHECK-NEXT: %[[DS:.+]] = graph.reduce_sum %[[GXHAT]], dims = [0] : (tensor<2x4xf32>) -> tensor<4xf32>
// CHECK: return %{{.+}}, %[[DX]], %[[DS]]
func.func @main(%x: tensor<2x4xf32> {train.param = "x", train.init = dense<0.5> : tensor<2x4xf32>},
                %s: tensor<4xf32> {train.param = "s", train.init = dense<1.0> : tensor<4xf32>},
                %c: tensor<2x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.rms_norm %x scale %s, axis = 1, epsilon = 1.0e-06 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// dropout: the forward's own mask selects g * scale, scale = 1 / (1 - 0.1)
// rounded to f32 as the kernel rounds it.
// CHECK-LABEL: func.func @main
// CHECK: %{{.+}}, %[[MASK:.+]] = graph.dropout
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[SCALE:.+]] = graph.constant dense<1.11111116> : tensor<2x8xf32>
// CHECK: %[[GS:.+]] = graph.mul %[[G]], %[[SCALE]]
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<2x8xf32>
// CHECK: %[[DX:.+]] = graph.select %[[MASK]], %[[GS]], %[[ZERO]]
// CHECK: return %{{.+}}, %[[DX]]
func.func @main(%w: tensor<2x8xf32> {train.param = "w", train.init = dense<0.5> : tensor<2x8xf32>},
                %c: tensor<2x8xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y, %mask = graph.dropout %w, ratio = 1.000000e-01, seed = 7 : tensor<2x8xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// dropout in f16: the multiply happens in f32 with the f32 scale, then
// rounds to f16, as the kernel's.
// CHECK-LABEL: func.func @main
// CHECK: %{{.+}}, %[[MASK:.+]] = graph.dropout
// CHECK: %[[G32:.+]] = graph.convert %{{.+}} : (tensor<8xf16>) -> tensor<8xf32>
// CHECK: %[[SCALE:.+]] = graph.constant dense<1.42857146> : tensor<8xf32>
// CHECK: %[[GS:.+]] = graph.mul %[[G32]], %[[SCALE]]
// CHECK: %[[GS16:.+]] = graph.convert %[[GS]] : (tensor<8xf32>) -> tensor<8xf16>
// CHECK: graph.select %[[MASK]], %[[GS16]], %{{.+}} : tensor<8xi1>, tensor<8xf16>
func.func @main(%w: tensor<8xf16> {train.param = "w", train.init = dense<0.5> : tensor<8xf16>},
                %c: tensor<8xf16> {graph.input = "c"}) -> (tensor<f16> {graph.output = "loss", train.loss}) {
  %y, %mask = graph.dropout %w, ratio = 3.000000e-01, seed = 7 : tensor<8xf16>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<8xf16>, tensor<8xf16>) -> tensor<f16>
  return %loss : tensor<f16>
}

// -----

// attention, grouped-query (Hq = 4, Hk = 2), causal with Sq = 3 < Sk = 5,
// and a trained additive mask broadcast over batch and heads. Q, K and V
// get one graph.attention_grad (no scores tensor). The mask's cotangent is
// decomposed: Q reshapes to [B, Hk, G * Sq, D] so each key head meets its
// group as extra rows; P is recomputed with the causal mask (key j visible
// to query i when j <= i + 2), rows the mask could empty are zeroed, and
// dS is summed over the heads the mask broadcasts along.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:arg[0-9]+]]: tensor<1x4x3x8xf32> {{.*}}, %[[K:arg[0-9]+]]: tensor<1x2x5x8xf32> {{.*}}, %[[V:arg[0-9]+]]: tensor<1x2x5x6xf32> {{.*}}, %[[M:arg[0-9]+]]: tensor<1x1x3x5xf32>
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []
// CHECK: %[[D:[^ ]+]]:3 = graph.attention_grad %[[Q]], %[[K]], %[[V]], %[[G]] mask %[[M]], scale = 3.500000e-01, causal : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<1x4x3x6xf32>, tensor<1x1x3x5xf32>) -> (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>)
// CHECK: %[[QG:.+]] = graph.reshape %[[Q]] : (tensor<1x4x3x8xf32>) -> tensor<1x2x6x8xf32>
// CHECK: %[[GG:.+]] = graph.reshape %[[G]] : (tensor<1x4x3x6xf32>) -> tensor<1x2x6x6xf32>
// CHECK: %[[QK:.+]] = graph.dot_general %[[QG]], %[[K]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : (tensor<1x2x6x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x6x5xf32>
// CHECK: %[[QK4:.+]] = graph.reshape %[[QK]] : (tensor<1x2x6x5xf32>) -> tensor<1x4x3x5xf32>
// CHECK: %[[S0:.+]] = graph.mul %[[QK4]], %{{.+}}
// CHECK: %[[MB:.+]] = graph.broadcast_in_dim %[[M]], dims = [0, 1, 2, 3] : (tensor<1x1x3x5xf32>) -> tensor<1x4x3x5xf32>
// CHECK: %[[S1:.+]] = graph.add %[[S0]], %[[MB]]
// CHECK: %[[S:.+]] = graph.select %{{.+}}, %[[S1]], %{{.+}}
// CHECK: %[[SM:.+]] = graph.softmax %[[S]], dim = 3
// CHECK: %[[ROWMAX:.+]] = graph.reduce_max %[[S]], dims = [3]
// CHECK: %[[LIVE:.+]] = graph.compare NE, %[[ROWMAX]], %{{.+}} : tensor<1x4x3xf32>
// CHECK: %[[LIVEB:.+]] = graph.broadcast_in_dim %[[LIVE]], dims = [0, 1, 2]
// CHECK: %[[P:.+]] = graph.select %[[LIVEB]], %[[SM]], %{{.+}}
// CHECK: %[[DPG:.+]] = graph.dot_general %[[GG]], %[[V]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
// CHECK: %[[DP:.+]] = graph.reshape %[[DPG]] : (tensor<1x2x6x5xf32>) -> tensor<1x4x3x5xf32>
// CHECK: %[[DPP:.+]] = graph.mul %[[DP]], %[[P]]
// CHECK: %[[ROW:.+]] = graph.reduce_sum %[[DPP]], dims = [3]
// CHECK: %[[ROWB:.+]] = graph.broadcast_in_dim %[[ROW]], dims = [0, 1, 2]
// CHECK: %[[DIFF:.+]] = graph.sub %[[DP]], %[[ROWB]]
// CHECK: %[[DS:.+]] = graph.mul %[[P]], %[[DIFF]]
// CHECK: %[[DMS:.+]] = graph.reduce_sum %[[DS]], dims = [1] : (tensor<1x4x3x5xf32>) -> tensor<1x3x5xf32>
// CHECK: %[[DM:.+]] = graph.reshape %[[DMS]] : (tensor<1x3x5xf32>) -> tensor<1x1x3x5xf32>
// CHECK: return %{{.+}}, %[[D]]#0, %[[D]]#1, %[[D]]#2, %[[DM]]
func.func @main(%q: tensor<1x4x3x8xf32> {train.param = "q", train.init = dense<0.5> : tensor<1x4x3x8xf32>},
                %k: tensor<1x2x5x8xf32> {train.param = "k", train.init = dense<0.25> : tensor<1x2x5x8xf32>},
                %v: tensor<1x2x5x6xf32> {train.param = "v", train.init = dense<0.125> : tensor<1x2x5x6xf32>},
                %m: tensor<1x1x3x5xf32> {train.param = "m", train.init = dense<0.0> : tensor<1x1x3x5xf32>},
                %c: tensor<1x4x3x6xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.attention %q, %k, %v mask %m, scale = 0.35, causal : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<1x1x3x5xf32>) -> tensor<1x4x3x6xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2, 3] x [0, 1, 2, 3] : (tensor<1x4x3x6xf32>, tensor<1x4x3x6xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// attention without mask, not causal, Hq = Hk: one graph.attention_grad,
// and nothing of the scores' size.
// CHECK-LABEL: func.func @main
// CHECK: graph.attention_grad %arg0, %arg1, %arg2, %{{.+}}, scale = 5.000000e-01 : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>) -> (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>)
// CHECK-NOT: tensor<2x2x4x4xf32>
// CHECK: return
func.func @main(%q: tensor<2x2x4x3xf32> {train.param = "q", train.init = dense<0.5> : tensor<2x2x4x3xf32>},
                %k: tensor<2x2x4x3xf32> {graph.input = "k"},
                %v: tensor<2x2x4x3xf32> {graph.input = "v"},
                %c: tensor<2x2x4x3xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.attention %q, %k, %v, scale = 0.5 : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x4x3xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2, 3] x [0, 1, 2, 3] : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Soft-capped attention: the gradient op keeps the cap; the mask's
// cotangent remakes the capped scores, c * tanh(scale * q k^T / c), before
// the mask is added.
// CHECK-LABEL: func.func @main
// CHECK: graph.attention_grad %arg0, %arg1, %arg2, %{{.+}} mask %arg3, scale = 5.000000e-01 {softcap = 2.000000e+00 : f64}
// CHECK: %[[T:.+]] = graph.tanh
// CHECK: graph.mul %[[T]]
// CHECK: graph.softmax
// CHECK: return
func.func @main(%q: tensor<2x2x4x3xf32> {train.param = "q", train.init = dense<0.5> : tensor<2x2x4x3xf32>},
                %k: tensor<2x2x4x3xf32> {graph.input = "k"},
                %v: tensor<2x2x4x3xf32> {graph.input = "v"},
                %m: tensor<1x1x4x4xf32> {train.param = "m", train.init = dense<0.0> : tensor<1x1x4x4xf32>},
                %c: tensor<2x2x4x3xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.attention %q, %k, %v mask %m, scale = 0.5 {softcap = 2.0} : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x3xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2, 3] x [0, 1, 2, 3] : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention with dropout: the gradient op takes the same stream; the
// mask's cotangent passes g V^T through the forward's mask, which
// graph.dropout of that stream draws again over [B, H, Sq, Sk].
// CHECK-LABEL: func.func @main
// CHECK: graph.attention_grad %arg0, %arg1, %arg2, %{{.+}} mask %arg3, scale = 5.000000e-01 {dropout = 2.500000e-01 : f64, seed = 11 : i64}
// CHECK: graph.softmax
// CHECK: %[[DP:.+]] = graph.dot_general
// CHECK: graph.dropout %[[DP]], ratio = 2.500000e-01, seed = 11 : tensor<2x2x4x4xf32>
// CHECK: return
func.func @main(%q: tensor<2x2x4x3xf32> {train.param = "q", train.init = dense<0.5> : tensor<2x2x4x3xf32>},
                %k: tensor<2x2x4x3xf32> {graph.input = "k"},
                %v: tensor<2x2x4x3xf32> {graph.input = "v"},
                %m: tensor<1x1x4x4xf32> {train.param = "m", train.init = dense<0.0> : tensor<1x1x4x4xf32>},
                %c: tensor<2x2x4x3xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.attention %q, %k, %v mask %m, scale = 0.5 {dropout = 0.25, seed = 11} : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x3xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1, 2, 3] x [0, 1, 2, 3] : (tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// softmax_cross_entropy, mean over the positions not ignored:
// dlogits = (softmax - onehot) * g / count, 0 at ignored positions, as one
// softmax_cross_entropy_grad of per-position weights (no one-hot the size
// of the logits); the integer targets get no cotangent.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x3x5xf32> {{.*}}, %[[T:arg[0-9]+]]: tensor<2x3xi64>
// CHECK: %[[SEED:.+]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[IGN:.+]] = graph.constant dense<-100> : tensor<2x3xi64>
// CHECK: %[[LIVE:.+]] = graph.compare NE, %[[T]], %[[IGN]]
// CHECK: %[[LIVEF:.+]] = graph.convert %[[LIVE]] : (tensor<2x3xi1>) -> tensor<2x3xf32>
// CHECK: %[[COUNT:.+]] = graph.reduce_sum %[[LIVEF]], dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK: %[[GN:.+]] = graph.div %[[SEED]], %[[COUNT]]
// CHECK: %[[W0:.+]] = graph.broadcast_in_dim %[[GN]], dims = [] : (tensor<f32>) -> tensor<2x3xf32>
// CHECK: %[[W:.+]] = graph.select %[[LIVE]], %[[W0]], %{{.+}}
// CHECK-NOT: graph.iota
// CHECK: %[[DX:.+]] = graph.softmax_cross_entropy_grad %[[X]], %[[T]], %[[W]] : (tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x3x5xf32>
// CHECK: return %{{.+}}, %[[DX]]
func.func @main(%x: tensor<2x3x5xf32> {train.param = "x", train.init = dense<0.5> : tensor<2x3x5xf32>},
                %t: tensor<2x3xi64> {graph.input = "t"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %loss = graph.softmax_cross_entropy %x, %t, reduction = mean, ignore_index = -100 : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// softmax_cross_entropy with reduction = none: each position's cotangent
// weights its own row.
// CHECK-LABEL: func.func @main
// CHECK: %[[G:.+]] = graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [] x []{{.*}} -> tensor<4xf32>
// CHECK-NOT: graph.reduce_sum
// CHECK: %[[DX:.+]] = graph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %[[G]] : (tensor<4x3xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x3xf32>
// CHECK: return %{{.+}}, %[[DX]]
func.func @main(%x: tensor<4x3xf32> {train.param = "x", train.init = dense<0.5> : tensor<4x3xf32>},
                %t: tensor<4xi32> {graph.input = "t"},
                %c: tensor<4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %l = graph.softmax_cross_entropy %x, %t, reduction = none : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<4xf32>
  %loss = graph.dot_general %l, %c, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
