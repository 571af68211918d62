// The VJP rules of elementwise ops (ElementwiseGradients.cpp). Each case is
// loss = sum(op(w, ...) * x) with x a data input, so the op's cotangent is
// x itself and the rule's ops are not folded away. Numbers are checked by
// finite differences in test/Unit/Compiler/GradientCheckTest.cpp.
// RUN: trainc-opt %s --trainc-autodiff -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.neg %[[X]] : tensor<4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.neg %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// abs: g * sign(w), and 0 where w == 0 (PyTorch's sgn).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[NEG:.+]] = graph.neg %[[X]]
// CHECK: %[[LT:.+]] = graph.compare LT, %[[W]], %[[ZERO]]
// CHECK: %[[INNER:.+]] = graph.select %[[LT]], %[[NEG]], %[[ZERO]]
// CHECK: %[[GT:.+]] = graph.compare GT, %[[W]], %[[ZERO]]
// CHECK: %[[G:.+]] = graph.select %[[GT]], %[[X]], %[[INNER]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.abs %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// exp: g * y, reusing the forward result.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.exp %[[W]]
// CHECK: %[[G:.+]] = graph.mul %[[X]], %[[Y]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.exp %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// log: g / w.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[G:.+]] = graph.div %[[X]], %[[W]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.log %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// tanh: g * (1 - y^2).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.tanh %[[W]]
// CHECK: %[[Y2:.+]] = graph.mul %[[Y]], %[[Y]]
// CHECK: %[[ONE:.+]] = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[SLOPE:.+]] = graph.sub %[[ONE]], %[[Y2]]
// CHECK: %[[G:.+]] = graph.mul %[[X]], %[[SLOPE]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.tanh %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// erf: g * 2/sqrt(pi) * exp(-w^2).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[SQ:.+]] = graph.mul %[[W]], %[[W]]
// CHECK: %[[NEGSQ:.+]] = graph.neg %[[SQ]]
// CHECK: %[[C:.+]] = graph.constant dense<1.12837923> : tensor<4xf32>
// CHECK: %[[E:.+]] = graph.exp %[[NEGSQ]]
// CHECK: %[[SLOPE:.+]] = graph.mul %[[E]], %[[C]]
// CHECK: %[[G:.+]] = graph.mul %[[X]], %[[SLOPE]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.erf %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sqrt: g / (2y).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.sqrt %[[W]]
// CHECK: %[[TWOY:.+]] = graph.add %[[Y]], %[[Y]]
// CHECK: %[[G:.+]] = graph.div %[[X]], %[[TWOY]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.sqrt %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// rsqrt: g * y^3 * -0.5.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.rsqrt %[[W]]
// CHECK: %[[Y2:.+]] = graph.mul %[[Y]], %[[Y]]
// CHECK: %[[Y3:.+]] = graph.mul %[[Y2]], %[[Y]]
// CHECK: %[[C:.+]] = graph.constant dense<-5.000000e-01> : tensor<4xf32>
// CHECK: %[[SLOPE:.+]] = graph.mul %[[Y3]], %[[C]]
// CHECK: %[[G:.+]] = graph.mul %[[X]], %[[SLOPE]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.rsqrt %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// add passes g through unchanged; sub negates it for the rhs.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[V:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[NEG:.+]] = graph.neg %[[X]]
// CHECK: return %{{.+}}, %[[X]], %[[NEG]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %v: tensor<4xf32> {train.param = "v", train.init = dense<1.0> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.sub %w, %v : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mul: w * w gives each operand its term; the pass adds them.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[A:.+]] = graph.mul %[[X]], %[[W]]
// CHECK: %[[B:.+]] = graph.mul %[[X]], %[[W]]
// CHECK: %[[G:.+]] = graph.add %[[A]], %[[B]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.mul %w, %w : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// div: g / v for the numerator, -(g / v) * y for the denominator.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[V:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.div %[[W]], %[[V]]
// CHECK: %[[GW:.+]] = graph.div %[[X]], %[[V]]
// CHECK: %[[T:.+]] = graph.mul %[[GW]], %[[Y]]
// CHECK: %[[GV:.+]] = graph.neg %[[T]]
// CHECK: return %{{.+}}, %[[GW]], %[[GV]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %v: tensor<4xf32> {train.param = "v", train.init = dense<2.0> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.div %w, %v : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// pow with a constant exponent: b * w^(b-1) with b-1 folded, and no
// exponent gradient (no log).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[B:.+]] = graph.constant dense<3.000000e+00>
// CHECK: %[[BM1:.+]] = graph.constant dense<2.000000e+00>
// CHECK: %[[P:.+]] = graph.pow %[[W]], %[[BM1]]
// CHECK: %[[SLOPE:.+]] = graph.mul %[[P]], %[[B]]
// CHECK: %[[G:.+]] = graph.mul %[[X]], %[[SLOPE]]
// CHECK-NOT: graph.log
// CHECK-NOT: graph.select
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %e = graph.constant dense<3.0> : tensor<4xf32>
  %y = graph.pow %w, %e : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// pow with a computed exponent: base term masked where the exponent is 0,
// exponent term g * y * log(a) masked where a == 0 and b >= 0.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32> {{.*}}, %[[B:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[Y:.+]] = graph.pow %[[A]], %[[B]]
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00>
// CHECK: %[[ONE:.+]] = graph.constant dense<1.000000e+00>
// CHECK: %[[BM1:.+]] = graph.sub %[[B]], %[[ONE]]
// CHECK: %[[P:.+]] = graph.pow %[[A]], %[[BM1]]
// CHECK: %[[SLOPE:.+]] = graph.mul %[[B]], %[[P]]
// CHECK: %[[DA:.+]] = graph.mul %[[X]], %[[SLOPE]]
// CHECK: %[[B0:.+]] = graph.compare EQ, %[[B]], %[[ZERO]]
// CHECK: %[[GA:.+]] = graph.select %[[B0]], %{{.+}}, %[[DA]]
// CHECK: %[[LOG:.+]] = graph.log %[[A]]
// CHECK: %[[YLOG:.+]] = graph.mul %[[Y]], %[[LOG]]
// CHECK: %[[DB:.+]] = graph.mul %[[X]], %[[YLOG]]
// CHECK: %[[A0:.+]] = graph.compare EQ, %[[A]], %[[ZERO]]
// CHECK: %[[BGE:.+]] = graph.compare GE, %[[B]], %[[ZERO]]
// CHECK: %[[INNER:.+]] = graph.select %[[BGE]], %{{.+}}, %[[DB]]
// CHECK: %[[GB:.+]] = graph.select %[[A0]], %[[INNER]], %[[DB]]
// CHECK: return %{{.+}}, %[[GA]], %[[GB]]
func.func @main(%a: tensor<4xf32> {train.param = "a", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %b: tensor<4xf32> {train.param = "b", train.init = dense<2.0> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.pow %a, %b : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// max of two computed values: the strictly larger gets g; ties split g/2
// each, as torch.maximum.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[V:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00>
// CHECK: %[[HALFC:.+]] = graph.constant dense<5.000000e-01>
// CHECK: %[[HALF:.+]] = graph.mul %[[X]], %[[HALFC]]
// CHECK: %[[EQ:.+]] = graph.compare EQ, %[[W]], %[[V]]
// CHECK: %[[TIE:.+]] = graph.select %[[EQ]], %[[HALF]], %[[ZERO]]
// CHECK: %[[GT:.+]] = graph.compare GT, %[[W]], %[[V]]
// CHECK: %[[GW:.+]] = graph.select %[[GT]], %[[X]], %[[TIE]]
// CHECK: %[[LT:.+]] = graph.compare LT, %[[W]], %[[V]]
// CHECK: %[[GV:.+]] = graph.select %[[LT]], %[[X]], %[[TIE]]
// CHECK: return %{{.+}}, %[[GW]], %[[GV]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %v: tensor<4xf32> {train.param = "v", train.init = dense<1.0> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.max %w, %v : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// min mirrors max: the strictly smaller operand gets g.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[V:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[EQ:.+]] = graph.compare EQ, %[[W]], %[[V]]
// CHECK: %[[TIE:.+]] = graph.select %[[EQ]]
// CHECK: %[[LT:.+]] = graph.compare LT, %[[W]], %[[V]]
// CHECK: %[[GW:.+]] = graph.select %[[LT]], %[[X]], %[[TIE]]
// CHECK: %[[GT:.+]] = graph.compare GT, %[[W]], %[[V]]
// CHECK: %[[GV:.+]] = graph.select %[[GT]], %[[X]], %[[TIE]]
// CHECK: return %{{.+}}, %[[GW]], %[[GV]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %v: tensor<4xf32> {train.param = "v", train.init = dense<1.0> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.min %w, %v : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ReLU as imported from ONNX, max(w, 0): against a constant the tie goes to
// the constant, so the gradient at w == 0 is 0 as PyTorch's relu (no g/2).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[C:.+]] = graph.constant dense<0.000000e+00>
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00>
// CHECK-NOT: 5.000000e-01
// CHECK-NOT: graph.compare EQ
// CHECK: %[[GT:.+]] = graph.compare GT, %[[W]], %[[C]]
// CHECK: %[[G:.+]] = graph.select %[[GT]], %[[X]], %[[ZERO]]
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[-1.0, 0.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %z = graph.constant dense<0.0> : tensor<4xf32>
  %y = graph.max %w, %z : tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// select routes g by the predicate; compare and the predicate get nothing.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[V:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[P:.+]] = graph.compare LT, %[[W]], %[[V]]
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00>
// CHECK: %[[GW:.+]] = graph.select %[[P]], %[[X]], %[[ZERO]]
// CHECK: %[[GV:.+]] = graph.select %[[P]], %[[ZERO]], %[[X]]
// CHECK: return %{{.+}}, %[[GW]], %[[GV]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %v: tensor<4xf32> {train.param = "v", train.init = dense<1.0> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %p = graph.compare LT, %w, %v : tensor<4xf32>
  %y = graph.select %p, %w, %v : tensor<4xi1>, tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// convert: the cotangent goes back through each float-to-float convert.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32> {{.*}}, %[[X:.+]]: tensor<4xf32> {graph.input = "x"})
// CHECK: %[[H:.+]] = graph.convert %[[W]] : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK: %[[T:.+]] = graph.tanh %[[H]] : tensor<4xbf16>
// CHECK: %[[GT:.+]] = graph.convert %[[X]] : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK: %[[GH:.+]] = graph.mul %[[GT]], %{{.+}} : tensor<4xbf16>
// CHECK: %[[G:.+]] = graph.convert %[[GH]] : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK: return %{{.+}}, %[[G]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}, %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %h = graph.convert %w : (tensor<4xf32>) -> tensor<4xbf16>
  %t = graph.tanh %h : tensor<4xbf16>
  %y = graph.convert %t : (tensor<4xbf16>) -> tensor<4xf32>
  %s = graph.mul %y, %x : tensor<4xf32>
  %l = graph.reduce_sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Integer values carry no cotangent: the gradient of w reaching the loss
// only through an integer convert is zeros.
// CHECK-LABEL: func.func @main
// CHECK: %[[Z:.+]] = graph.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: return %{{.+}}, %[[Z]]
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %i = graph.convert %w : (tensor<4xf32>) -> tensor<4xi32>
  %n = graph.neg %i : tensor<4xi32>
  %f = graph.convert %n : (tensor<4xi32>) -> tensor<4xf32>
  %l = graph.reduce_sum %f, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
