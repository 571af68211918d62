// RUN: trainc-opt %s -canonicalize --trainc-recognize-composites -canonicalize -split-input-file | FileCheck %s

// PyTorch's LayerNorm below opset 17: (x - mean) / sqrt(var + eps) * w + b.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf32>, %[[W:.+]]: tensor<16xf32>, %[[B:.+]]: tensor<16xf32>)
func.func @layer_norm(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %mean = graph.reduce_mean %x, dims = [2] : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
  %meanb = graph.broadcast_in_dim %mean, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
  %c = graph.sub %x, %meanb : tensor<2x8x16xf32>
  %two = graph.constant dense<2.0> : tensor<2x8x16xf32>
  %sq = graph.pow %c, %two : tensor<2x8x16xf32>
  %var = graph.reduce_mean %sq, dims = [2] : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
  %eps = graph.constant dense<1.0e-5> : tensor<2x8xf32>
  %ve = graph.add %var, %eps : tensor<2x8xf32>
  %sd = graph.sqrt %ve : tensor<2x8xf32>
  %sdb = graph.broadcast_in_dim %sd, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
  %n = graph.div %c, %sdb : tensor<2x8x16xf32>
  %wb = graph.broadcast_in_dim %w, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
  %s = graph.mul %n, %wb : tensor<2x8x16xf32>
  %bb = graph.broadcast_in_dim %b, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
  %y = graph.add %bb, %s : tensor<2x8x16xf32>
  // CHECK: %[[Y:.+]] = graph.layer_norm %[[X]] scale %[[W]] bias %[[B]], axis = 2, epsilon = 9.9999997473787516E-6
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<2x8x16xf32>
}

// -----

// Normalizing over the last two dims, with rsqrt and x*x, no affine part.
// CHECK-LABEL: func.func @layer_norm_rsqrt_two_dims
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf32>)
func.func @layer_norm_rsqrt_two_dims(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %mean = graph.reduce_mean %x, dims = [1, 2] : (tensor<2x8x16xf32>) -> tensor<2xf32>
  %meanb = graph.broadcast_in_dim %mean, dims = [0] : (tensor<2xf32>) -> tensor<2x8x16xf32>
  %c = graph.sub %x, %meanb : tensor<2x8x16xf32>
  %sq = graph.mul %c, %c : tensor<2x8x16xf32>
  %var = graph.reduce_mean %sq, dims = [1, 2] : (tensor<2x8x16xf32>) -> tensor<2xf32>
  %eps = graph.constant dense<1.0e-6> : tensor<2xf32>
  %ve = graph.add %eps, %var : tensor<2xf32>
  %r = graph.rsqrt %ve : tensor<2xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0] : (tensor<2xf32>) -> tensor<2x8x16xf32>
  %n = graph.mul %rb, %c : tensor<2x8x16xf32>
  // CHECK: %[[Y:.+]] = graph.layer_norm %[[X]], axis = 1, epsilon = 9.9999999747524271E-7
  // CHECK-NEXT: return %[[Y]]
  return %n : tensor<2x8x16xf32>
}

// -----

// Llama's RMSNorm: x * rsqrt(mean(x^2) + eps) * w.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xbf16>, %[[W:.+]]: tensor<16xbf16>)
func.func @rms_norm(%x: tensor<2x8x16xbf16>, %w: tensor<16xbf16>) -> tensor<2x8x16xbf16> {
  %sq = graph.mul %x, %x : tensor<2x8x16xbf16>
  %ms = graph.reduce_mean %sq, dims = [2] : (tensor<2x8x16xbf16>) -> tensor<2x8xbf16>
  %eps = graph.constant dense<1.0e-6> : tensor<2x8xbf16>
  %ve = graph.add %ms, %eps : tensor<2x8xbf16>
  %r = graph.rsqrt %ve : tensor<2x8xbf16>
  %rb = graph.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x8xbf16>) -> tensor<2x8x16xbf16>
  %n = graph.mul %x, %rb : tensor<2x8x16xbf16>
  %wb = graph.broadcast_in_dim %w, dims = [2] : (tensor<16xbf16>) -> tensor<2x8x16xbf16>
  %y = graph.mul %wb, %n : tensor<2x8x16xbf16>
  // CHECK: %[[Y:.+]] = graph.rms_norm %[[X]] scale %[[W]], axis = 2
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<2x8x16xbf16>
}

// -----

// The same as exported from ONNX (no Rsqrt there): x * (1 / sqrt(...)),
// with the mean of x^2 written as pow(x, 2), as Llama, Mistral, Qwen2 and
// T5 export their RMSNorm.
// CHECK-LABEL: func.func @rms_norm_reciprocal_sqrt
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf32>, %[[W:.+]]: tensor<16xf32>)
func.func @rms_norm_reciprocal_sqrt(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %two = graph.constant dense<2.0> : tensor<2x8x16xf32>
  %sq = graph.pow %x, %two : tensor<2x8x16xf32>
  %ms = graph.reduce_mean %sq, dims = [2] : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
  %eps = graph.constant dense<1.0e-6> : tensor<2x8xf32>
  %ve = graph.add %ms, %eps : tensor<2x8xf32>
  %s = graph.sqrt %ve : tensor<2x8xf32>
  %one = graph.constant dense<1.0> : tensor<2x8xf32>
  %r = graph.div %one, %s : tensor<2x8xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
  %n = graph.mul %x, %rb : tensor<2x8x16xf32>
  %wb = graph.broadcast_in_dim %w, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
  %y = graph.mul %wb, %n : tensor<2x8x16xf32>
  // CHECK: %[[Y:.+]] = graph.rms_norm %[[X]] scale %[[W]], axis = 2, epsilon = 9.9999999747524271E-7
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<2x8x16xf32>
}

// -----

// 1 / sqrt(v) becomes rsqrt(v) on its own too.
// CHECK-LABEL: func.func @reciprocal_sqrt
// CHECK: %[[R:.+]] = graph.rsqrt %arg0
// CHECK-NEXT: return %[[R]]
func.func @reciprocal_sqrt(%v: tensor<4xf32>) -> tensor<4xf32> {
  %s = graph.sqrt %v : tensor<4xf32>
  %one = graph.constant dense<1.0> : tensor<4xf32>
  %r = graph.div %one, %s : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The centered value is also returned: recognizing would compute it twice.
// CHECK-LABEL: func.func @layer_norm_shared_intermediate_stays
func.func @layer_norm_shared_intermediate_stays(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %mean = graph.reduce_mean %x, dims = [1] : (tensor<4x16xf32>) -> tensor<4xf32>
  %meanb = graph.broadcast_in_dim %mean, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %c = graph.sub %x, %meanb : tensor<4x16xf32>
  %sq = graph.mul %c, %c : tensor<4x16xf32>
  %var = graph.reduce_mean %sq, dims = [1] : (tensor<4x16xf32>) -> tensor<4xf32>
  %eps = graph.constant dense<1.0e-5> : tensor<4xf32>
  %ve = graph.add %var, %eps : tensor<4xf32>
  %sd = graph.sqrt %ve : tensor<4xf32>
  %sdb = graph.broadcast_in_dim %sd, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %n = graph.div %c, %sdb : tensor<4x16xf32>
  // CHECK-NOT: graph.layer_norm
  // CHECK: graph.div
  return %n, %c : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// GELU, erf form, as PyTorch exports it: (x * (erf(x / sqrt 2) + 1)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s2 = graph.constant dense<1.41421354> : tensor<4x8xf32>
  %d = graph.div %x, %s2 : tensor<4x8xf32>
  %e = graph.erf %d : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %a = graph.add %e, %one : tensor<4x8xf32>
  %m = graph.mul %x, %a : tensor<4x8xf32>
  %half = graph.constant dense<0.5> : tensor<4x8xf32>
  %y = graph.mul %m, %half : tensor<4x8xf32>
  // CHECK: %[[Y:.+]] = graph.gelu %[[X]], approximation = erf
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<4x8xf32>
}

// -----

// The same with x * (1 / sqrt 2) and the half applied first.
// CHECK-LABEL: func.func @gelu_erf_reassociated
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
func.func @gelu_erf_reassociated(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<4x8xf32>
  %hx = graph.mul %half, %x : tensor<4x8xf32>
  %r2 = graph.constant dense<0.707106769> : tensor<4x8xf32>
  %d = graph.mul %r2, %x : tensor<4x8xf32>
  %e = graph.erf %d : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %a = graph.add %one, %e : tensor<4x8xf32>
  %y = graph.mul %hx, %a : tensor<4x8xf32>
  // CHECK: %[[Y:.+]] = graph.gelu %[[X]], approximation = erf
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<4x8xf32>
}

// -----

// GELU, tanh form with pow(x, 3).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
func.func @gelu_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = graph.constant dense<3.0> : tensor<4x8xf32>
  %x3 = graph.pow %x, %three : tensor<4x8xf32>
  %k = graph.constant dense<0.044715> : tensor<4x8xf32>
  %kx3 = graph.mul %k, %x3 : tensor<4x8xf32>
  %inner = graph.add %x, %kx3 : tensor<4x8xf32>
  %c = graph.constant dense<0.797884583> : tensor<4x8xf32>
  %arg = graph.mul %inner, %c : tensor<4x8xf32>
  %t = graph.tanh %arg : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %a = graph.add %t, %one : tensor<4x8xf32>
  %half = graph.constant dense<0.5> : tensor<4x8xf32>
  %m = graph.mul %x, %half : tensor<4x8xf32>
  %y = graph.mul %m, %a : tensor<4x8xf32>
  // CHECK: %[[Y:.+]] = graph.gelu %[[X]], approximation = tanh
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<4x8xf32>
}

// -----

// BLOOM's tanh GELU: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x))).
// CHECK-LABEL: func.func @gelu_tanh_bloom
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
func.func @gelu_tanh_bloom(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<4x8xf32>
  %c = graph.constant dense<0.797884583> : tensor<4x8xf32>
  %k = graph.constant dense<0.044715> : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %xh = graph.mul %x, %half : tensor<4x8xf32>
  %xc = graph.mul %x, %c : tensor<4x8xf32>
  %xk = graph.mul %x, %k : tensor<4x8xf32>
  %xkx = graph.mul %xk, %x : tensor<4x8xf32>
  %inner = graph.add %xkx, %one : tensor<4x8xf32>
  %arg = graph.mul %xc, %inner : tensor<4x8xf32>
  %t = graph.tanh %arg : tensor<4x8xf32>
  %a = graph.add %t, %one : tensor<4x8xf32>
  %y = graph.mul %xh, %a : tensor<4x8xf32>
  // CHECK: %[[Y:.+]] = graph.gelu %[[X]], approximation = tanh
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<4x8xf32>
}

// -----

// x * (1 + 0.044715 x^3) inside the tanh is not GELU: the power must be 2.
// CHECK-LABEL: func.func @not_gelu_tanh_bloom_power
func.func @not_gelu_tanh_bloom_power(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<4x8xf32>
  %c = graph.constant dense<0.797884583> : tensor<4x8xf32>
  %k = graph.constant dense<0.044715> : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %three = graph.constant dense<3.0> : tensor<4x8xf32>
  %xh = graph.mul %x, %half : tensor<4x8xf32>
  %xc = graph.mul %x, %c : tensor<4x8xf32>
  %x3 = graph.pow %x, %three : tensor<4x8xf32>
  %xkx = graph.mul %k, %x3 : tensor<4x8xf32>
  %inner = graph.add %xkx, %one : tensor<4x8xf32>
  %arg = graph.mul %xc, %inner : tensor<4x8xf32>
  %t = graph.tanh %arg : tensor<4x8xf32>
  %a = graph.add %t, %one : tensor<4x8xf32>
  %y = graph.mul %xh, %a : tensor<4x8xf32>
  // CHECK-NOT: graph.gelu
  // CHECK: graph.tanh
  return %y : tensor<4x8xf32>
}

// -----

// x^-1 * x^3 is not x^2 where x = 0 (NaN there, GELU 0): powers count
// only from 1 to the one needed.
// CHECK-LABEL: func.func @not_gelu_tanh_negative_power
func.func @not_gelu_tanh_negative_power(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<4x8xf32>
  %c = graph.constant dense<0.797884583> : tensor<4x8xf32>
  %k = graph.constant dense<0.044715> : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %m1 = graph.constant dense<-1.0> : tensor<4x8xf32>
  %three = graph.constant dense<3.0> : tensor<4x8xf32>
  %xh = graph.mul %x, %half : tensor<4x8xf32>
  %xc = graph.mul %x, %c : tensor<4x8xf32>
  %x3 = graph.pow %x, %three : tensor<4x8xf32>
  %xi = graph.pow %x, %m1 : tensor<4x8xf32>
  %a1 = graph.mul %k, %x3 : tensor<4x8xf32>
  %a2 = graph.mul %a1, %xi : tensor<4x8xf32>
  %inner = graph.add %a2, %one : tensor<4x8xf32>
  %arg = graph.mul %xc, %inner : tensor<4x8xf32>
  %t = graph.tanh %arg : tensor<4x8xf32>
  %a = graph.add %t, %one : tensor<4x8xf32>
  %y = graph.mul %xh, %a : tensor<4x8xf32>
  // CHECK-NOT: graph.gelu
  // CHECK: graph.tanh
  return %y : tensor<4x8xf32>
}

// -----

// A constant that is not 1/2 is not GELU.
// CHECK-LABEL: func.func @not_gelu
func.func @not_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s2 = graph.constant dense<1.41421354> : tensor<4x8xf32>
  %d = graph.div %x, %s2 : tensor<4x8xf32>
  %e = graph.erf %d : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %a = graph.add %e, %one : tensor<4x8xf32>
  %m = graph.mul %x, %a : tensor<4x8xf32>
  %c = graph.constant dense<0.6> : tensor<4x8xf32>
  %y = graph.mul %m, %c : tensor<4x8xf32>
  // CHECK-NOT: graph.gelu
  // CHECK: graph.erf
  return %y : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
func.func @softmax(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %max = graph.reduce_max %x, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %maxb = graph.broadcast_in_dim %max, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %s = graph.sub %x, %maxb : tensor<4x8xf32>
  %e = graph.exp %s : tensor<4x8xf32>
  %sum = graph.reduce_sum %e, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %sumb = graph.broadcast_in_dim %sum, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %y = graph.div %e, %sumb : tensor<4x8xf32>
  // Without the max subtraction, along dim 0.
  %e0 = graph.exp %x : tensor<4x8xf32>
  %sum0 = graph.reduce_sum %e0, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %sum0b = graph.broadcast_in_dim %sum0, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %y0 = graph.div %e0, %sum0b : tensor<4x8xf32>
  // CHECK-DAG: %[[Y:.+]] = graph.softmax %[[X]], dim = 1
  // CHECK-DAG: %[[Y0:.+]] = graph.softmax %[[X]], dim = 0
  // CHECK: return %[[Y]], %[[Y0]]
  return %y, %y0 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// GPT-2 attention as exported: masked_fill(causal == 0, -inf) on scaled scores.
// CHECK-LABEL: func.func @attention_causal
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>)
func.func @attention_causal(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = graph.constant dense<0.25> : tensor<2x4x8x8xf32>
  %sc = graph.mul %s, %c : tensor<2x4x8x8xf32>
  %row = graph.iota dim = 0 : tensor<8x8xi64>
  %col = graph.iota dim = 1 : tensor<8x8xi64>
  %upper = graph.compare GT, %col, %row : tensor<8x8xi64>
  %upperb = graph.broadcast_in_dim %upper, dims = [2, 3] : (tensor<8x8xi1>) -> tensor<2x4x8x8xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %m = graph.select %upperb, %ninf, %sc : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: %[[K:.+]] = graph.transpose %[[KT]], permutation = [0, 1, 3, 2]
  // CHECK: %[[O:.+]] = graph.attention %[[Q]], %[[K]], %[[V]], scale = 2.500000e-01, causal
  // CHECK-NEXT: return %[[O]]
  return %o : tensor<2x4x8x16xf32>
}

// -----

// PyTorch's exported scaled_dot_product_attention (Hugging Face GPT-2 and
// BERT, TorchScript exporter): q and k^T each scaled by sqrt(scale) before
// the product. The factors join attention's scale (0.5 * 0.5 * 2) and q
// and k enter unscaled; the multiplies are gone.
// CHECK-LABEL: func.func @attention_scaled_operands
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>)
// CHECK-NOT: graph.mul
// CHECK: %[[K:.+]] = graph.transpose %[[KT]], permutation = [0, 1, 3, 2]
// CHECK: %[[O:.+]] = graph.attention %[[Q]], %[[K]], %[[V]], scale = 5.000000e-01 :
// CHECK-NEXT: return %[[O]]
func.func @attention_scaled_operands(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %cq = graph.constant dense<0.5> : tensor<2x4x8x16xf32>
  %ck = graph.constant dense<0.5> : tensor<2x4x16x8xf32>
  %qs = graph.mul %q, %cq : tensor<2x4x8x16xf32>
  %ks = graph.mul %ck, %kt : tensor<2x4x16x8xf32>
  %s = graph.dot_general %qs, %ks, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = graph.constant dense<2.0> : tensor<2x4x8x8xf32>
  %sc = graph.mul %s, %c : tensor<2x4x8x8xf32>
  %p = graph.softmax %sc, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Flax's einsum attention: q, k, v in [b, s, h, d]
// ('bqhd,bkhd->bhqk', then 'bhqk,bkhd->bqhd'): the operands are transposed
// into [b, h, s, d] and the output, [b, h, q, d] as graph.attention gives
// it, is what the einsum's dot_general returns.
// CHECK-LABEL: func.func @attention_bshd
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x4x16xf32>, %[[K:.+]]: tensor<2x8x4x16xf32>, %[[V:.+]]: tensor<2x8x4x16xf32>)
func.func @attention_bshd(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3]
         : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32>
  %c = graph.constant dense<0.25> : tensor<2x4x8x8xf32>
  %sc = graph.mul %s, %c : tensor<2x4x8x8xf32>
  %p = graph.softmax %sc, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1]
         : (tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK-DAG: %[[QT:.+]] = graph.transpose %[[Q]], permutation = [0, 2, 1, 3]
  // CHECK-DAG: %[[KT:.+]] = graph.transpose %[[K]], permutation = [0, 2, 1, 3]
  // CHECK-DAG: %[[VT:.+]] = graph.transpose %[[V]], permutation = [0, 2, 1, 3]
  // CHECK: %[[O:.+]] = graph.attention %[[QT]], %[[KT]], %[[VT]], scale = 2.500000e-01 :
  // CHECK-NEXT: return %[[O]]
  return %o : tensor<2x4x8x16xf32>
}

// -----

// jax.nn.dot_product_attention (JAX's XLA form): queries [b, t, n, g=1, h],
// keys and values [b, s, n, h]; the scores [b, n, t, 1, s] get their unit
// dim moved to the front before the causal mask (finfo.min fill) and the
// softmax; the second product reads the probabilities on the right and
// gives [b, n, h, 1, t].
// CHECK-LABEL: func.func @attention_jax_dot_product_attention
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x4x1x16xf32>, %[[K:.+]]: tensor<2x8x4x16xf32>, %[[V:.+]]: tensor<2x8x4x16xf32>)
func.func @attention_jax_dot_product_attention(%q: tensor<2x8x4x1x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> tensor<2x4x16x1x8xf32> {
  %s = graph.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [4] x [3]
         : (tensor<2x8x4x1x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x1x8xf32>
  %c = graph.constant dense<0.25> : tensor<2x4x8x1x8xf32>
  %sc = graph.mul %s, %c : tensor<2x4x8x1x8xf32>
  %t = graph.transpose %sc, permutation = [3, 0, 1, 2, 4] : (tensor<2x4x8x1x8xf32>) -> tensor<1x2x4x8x8xf32>
  %row = graph.iota dim = 0 : tensor<8x8xi64>
  %col = graph.iota dim = 1 : tensor<8x8xi64>
  %keep = graph.compare LE, %col, %row : tensor<8x8xi64>
  %keepb = graph.broadcast_in_dim %keep, dims = [3, 4] : (tensor<8x8xi1>) -> tensor<1x2x4x8x8xi1>
  %fill = graph.constant dense<-3.40282347E+38> : tensor<1x2x4x8x8xf32>
  %m = graph.select %keepb, %t, %fill : tensor<1x2x4x8x8xi1>, tensor<1x2x4x8x8xf32>
  %p = graph.softmax %m, dim = 4 : tensor<1x2x4x8x8xf32>
  %o = graph.dot_general %v, %p, batching_dims = [0, 2] x [1, 2], contracting_dims = [1] x [4]
         : (tensor<2x8x4x16xf32>, tensor<1x2x4x8x8xf32>) -> tensor<2x4x16x1x8xf32>
  // CHECK: %[[A:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01, causal : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK-NEXT: %[[T:.+]] = graph.transpose %[[A]], permutation = [0, 1, 3, 2]
  // CHECK-NEXT: %[[O:.+]] = graph.reshape %[[T]] : (tensor<2x4x16x8xf32>) -> tensor<2x4x16x1x8xf32>
  // CHECK-NEXT: return %[[O]]
  return %o : tensor<2x4x16x1x8xf32>
}

// -----

// A transpose that moves dims of more than size 1 between the product and
// the softmax changes which scores are which: not attention.
// CHECK-LABEL: func.func @attention_real_transpose_stays
// CHECK-NOT: graph.attention
func.func @attention_real_transpose_stays(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %t = graph.transpose %s, permutation = [0, 1, 3, 2] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %t, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// The probabilities as the second operand (v^T p^T, [b, h, d, q]): the
// attention's output is transposed into that layout.
// CHECK-LABEL: func.func @attention_probs_on_the_right
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>)
func.func @attention_probs_on_the_right(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %s, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %v, %p, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [3]
         : (tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x16x8xf32>
  // CHECK: %[[A:.+]] = graph.attention %[[Q]], %{{.+}}, %[[V]], scale = 1.000000e+00 :
  // CHECK-NEXT: %[[O:.+]] = graph.transpose %[[A]], permutation = [0, 1, 3, 2]
  // CHECK-NEXT: return %[[O]]
  return %o : tensor<2x4x16x8xf32>
}

// -----

// The probabilities contracted over the query dim (not a softmax's
// distribution over keys): not attention.
// CHECK-LABEL: func.func @attention_wrong_contraction
// CHECK-NOT: graph.attention
func.func @attention_wrong_contraction(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %s, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// An additive mask (e.g. padding) broadcast over heads, scale by division.
// CHECK-LABEL: func.func @attention_additive_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>, %[[M:.+]]: tensor<2x8x8xf32>)
func.func @attention_additive_mask(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = graph.constant dense<4.0> : tensor<2x4x8x8xf32>
  %sc = graph.div %s, %c : tensor<2x4x8x8xf32>
  %mb = graph.broadcast_in_dim %mask, dims = [0, 2, 3] : (tensor<2x8x8xf32>) -> tensor<2x4x8x8xf32>
  %m = graph.add %sc, %mb : tensor<2x4x8x8xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  // The mask keeps its broadcast: it is not over trailing dims only.
  // CHECK: %[[MB:.+]] = graph.broadcast_in_dim %[[M]], dims = [0, 2, 3]
  // CHECK: %[[O:.+]] = graph.attention %[[Q]], %{{.+}}, %[[V]] mask %[[MB]], scale = 2.500000e-01 :
  // CHECK-NEXT: return %[[O]]
  return %o : tensor<2x4x8x16xf32>
}

// -----

// BLOOM: the heads folded into the batch ([b * h, s, d] products, the
// softmax's [b, h, q, k] reshaped), ALiBi's biases ([b * h, 1, k]) added to
// the folded scores and a padding mask ([b, 1, q, k]) to the unfolded ones.
// The two terms become one mask, their sum.
// CHECK-LABEL: func.func @attention_folded_heads_alibi
// CHECK-SAME: (%[[Q:.+]]: tensor<8x12x16xf32>, %[[KT:.+]]: tensor<8x16x12xf32>, %[[V:.+]]: tensor<8x12x16xf32>, %[[AL:.+]]: tensor<8x1x12xf32>, %[[M:.+]]: tensor<2x1x12x12xf32>)
func.func @attention_folded_heads_alibi(%q: tensor<8x12x16xf32>, %kt: tensor<8x16x12xf32>, %v: tensor<8x12x16xf32>,
                                        %alibi: tensor<8x1x12xf32>, %mask: tensor<2x1x12x12xf32>) -> tensor<8x12x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x12x16xf32>, tensor<8x16x12xf32>) -> tensor<8x12x12xf32>
  %c = graph.constant dense<0.25> : tensor<8x12x12xf32>
  %sc = graph.mul %s, %c : tensor<8x12x12xf32>
  %ab = graph.broadcast_in_dim %alibi, dims = [0, 1, 2] : (tensor<8x1x12xf32>) -> tensor<8x12x12xf32>
  %sa = graph.add %sc, %ab : tensor<8x12x12xf32>
  %u = graph.reshape %sa : (tensor<8x12x12xf32>) -> tensor<2x4x12x12xf32>
  %mb = graph.broadcast_in_dim %mask, dims = [0, 1, 2, 3] : (tensor<2x1x12x12xf32>) -> tensor<2x4x12x12xf32>
  %sm = graph.add %u, %mb : tensor<2x4x12x12xf32>
  %p = graph.softmax %sm, dim = 3 : tensor<2x4x12x12xf32>
  %pf = graph.reshape %p : (tensor<2x4x12x12xf32>) -> tensor<8x12x12xf32>
  %o = graph.dot_general %pf, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x12x12xf32>, tensor<8x12x16xf32>) -> tensor<8x12x16xf32>
  // CHECK-DAG: %[[QH:.+]] = graph.reshape %[[Q]] : (tensor<8x12x16xf32>) -> tensor<2x4x12x16xf32>
  // CHECK-DAG: %[[KH:.+]] = graph.reshape %{{.+}} : (tensor<8x12x16xf32>) -> tensor<2x4x12x16xf32>
  // CHECK-DAG: %[[VH:.+]] = graph.reshape %[[V]] : (tensor<8x12x16xf32>) -> tensor<2x4x12x16xf32>
  // CHECK-DAG: %[[AH:.+]] = graph.reshape %[[AL]] : (tensor<8x1x12xf32>) -> tensor<2x4x1x12xf32>
  // CHECK-DAG: %[[MW:.+]] = graph.broadcast_in_dim %[[M]], dims = [0, 1, 2, 3] : (tensor<2x1x12x12xf32>) -> tensor<2x4x12x12xf32>
  // CHECK-DAG: %[[AW:.+]] = graph.broadcast_in_dim %[[AH]], dims = [0, 1, 2, 3] : (tensor<2x4x1x12xf32>) -> tensor<2x4x12x12xf32>
  // CHECK: %[[SUM:.+]] = graph.add %[[MW]], %[[AW]] : tensor<2x4x12x12xf32>
  // CHECK: %[[O:.+]] = graph.attention %[[QH]], %[[KH]], %[[VH]] mask %[[SUM]], scale = 2.500000e-01 :
  // CHECK: %[[OF:.+]] = graph.reshape %[[O]] : (tensor<2x4x12x16xf32>) -> tensor<8x12x16xf32>
  // CHECK-NEXT: return %[[OF]]
  return %o : tensor<8x12x16xf32>
}

// -----

// Folded heads with the softmax over the queries (dim 2), not the keys:
// left alone.
// CHECK-LABEL: func.func @attention_folded_softmax_over_queries_stays
func.func @attention_folded_softmax_over_queries_stays(%q: tensor<8x12x16xf32>, %kt: tensor<8x16x12xf32>, %v: tensor<8x12x16xf32>) -> tensor<8x12x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x12x16xf32>, tensor<8x16x12xf32>) -> tensor<8x12x12xf32>
  %u = graph.reshape %s : (tensor<8x12x12xf32>) -> tensor<2x4x12x12xf32>
  %p = graph.softmax %u, dim = 2 : tensor<2x4x12x12xf32>
  %pf = graph.reshape %p : (tensor<2x4x12x12xf32>) -> tensor<8x12x12xf32>
  %o = graph.dot_general %pf, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x12x12xf32>, tensor<8x12x16xf32>) -> tensor<8x12x16xf32>
  // CHECK-NOT: graph.attention
  // CHECK: graph.softmax
  return %o : tensor<8x12x16xf32>
}

// -----

// One query, scores written k q^T and transposed (a transpose of unit
// dims): the product's operands are the keys, then the query. Left alone
// (this aborted the compiler when the query was taken for the lhs), in the
// head layout and with folded heads.
// CHECK-LABEL: func.func @attention_key_first_single_query_stays
func.func @attention_key_first_single_query_stays(%q: tensor<2x4x1x16xf32>, %k: tensor<2x4x12x16xf32>, %v: tensor<2x4x12x16xf32>) -> tensor<2x4x1x16xf32> {
  %s = graph.dot_general %k, %q, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<2x4x12x16xf32>, tensor<2x4x1x16xf32>) -> tensor<2x4x12x1xf32>
  %t = graph.transpose %s, permutation = [0, 1, 3, 2] : (tensor<2x4x12x1xf32>) -> tensor<2x4x1x12xf32>
  %p = graph.softmax %t, dim = 3 : tensor<2x4x1x12xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x1x12xf32>, tensor<2x4x12x16xf32>) -> tensor<2x4x1x16xf32>
  // CHECK-NOT: graph.attention
  // CHECK: graph.softmax
  return %o : tensor<2x4x1x16xf32>
}

// -----

// CHECK-LABEL: func.func @attention_folded_key_first_single_query_stays
func.func @attention_folded_key_first_single_query_stays(%q: tensor<8x1x16xf32>, %k: tensor<8x12x16xf32>, %v: tensor<8x12x16xf32>) -> tensor<8x1x16xf32> {
  %s = graph.dot_general %k, %q, batching_dims = [0] x [0], contracting_dims = [2] x [2]
         : (tensor<8x12x16xf32>, tensor<8x1x16xf32>) -> tensor<8x12x1xf32>
  %t = graph.transpose %s, permutation = [0, 2, 1] : (tensor<8x12x1xf32>) -> tensor<8x1x12xf32>
  %u = graph.reshape %t : (tensor<8x1x12xf32>) -> tensor<2x4x1x12xf32>
  %p = graph.softmax %u, dim = 3 : tensor<2x4x1x12xf32>
  %pf = graph.reshape %p : (tensor<2x4x1x12xf32>) -> tensor<8x1x12xf32>
  %o = graph.dot_general %pf, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x1x12xf32>, tensor<8x12x16xf32>) -> tensor<8x1x16xf32>
  // CHECK-NOT: graph.attention
  // CHECK: graph.softmax
  return %o : tensor<8x1x16xf32>
}

// -----

// PyTorch's scaled_dot_product_attention as both exporters write it: the
// probabilities of a fully masked row (NaN) are zeroed by
// where(isnan(p), 0, p); graph.attention does that itself, so the guard
// folds in.
// CHECK-LABEL: func.func @attention_sdpa_nan_guard
func.func @attention_sdpa_nan_guard(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = graph.constant dense<0.25> : tensor<2x4x8x8xf32>
  %sc = graph.mul %s, %c : tensor<2x4x8x8xf32>
  %mb = graph.broadcast_in_dim %mask, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %m = graph.add %sc, %mb : tensor<2x4x8x8xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x8x8xf32>
  %nan = graph.compare NE, %p, %p : tensor<2x4x8x8xf32>
  %zero = graph.constant dense<0.0> : tensor<2x4x8x8xf32>
  %g = graph.select %nan, %zero, %p : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %o = graph.dot_general %g, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: %[[O:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}}, scale = 2.500000e-01 :
  // CHECK-NOT: graph.select
  // CHECK-NEXT: return %[[O]]
  return %o : tensor<2x4x8x16xf32>
}

// -----

// A guard that replaces NaN by anything but zero changes the result: no
// attention.
// CHECK-LABEL: func.func @attention_nan_guard_not_zero
func.func @attention_nan_guard_not_zero(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %s, dim = 3 : tensor<2x4x8x8xf32>
  %nan = graph.compare NE, %p, %p : tensor<2x4x8x8xf32>
  %one = graph.constant dense<1.0> : tensor<2x4x8x8xf32>
  %g = graph.select %nan, %one, %p : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %o = graph.dot_general %g, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK-NOT: graph.attention
  return %o : tensor<2x4x8x16xf32>
}

// -----

// A constant mask that is not causal (a sliding window) becomes an additive
// mask, folded to a constant; here masked where the condition is false.
// CHECK-LABEL: func.func @attention_window_mask
func.func @attention_window_mask(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %keep = graph.constant dense<[[true, false, false, false], [true, true, false, false], [false, true, true, false], [false, false, true, true]]> : tensor<4x4xi1>
  %keepb = graph.broadcast_in_dim %keep, dims = [2, 3] : (tensor<4x4xi1>) -> tensor<1x2x4x4xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<1x2x4x4xf32>
  %m = graph.select %keepb, %s, %ninf : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %p = graph.softmax %m, dim = 3 : tensor<1x2x4x4xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  // CHECK: %[[MASK:.+]] = graph.constant dense<{{\[\[\[}}[0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000], [0xFF800000, 0.000000e+00, 0.000000e+00, 0xFF800000], [0xFF800000, 0xFF800000, 0.000000e+00, 0.000000e+00]], {{.+}} : tensor<1x2x4x4xf32>
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %[[MASK]], scale = 1.000000e+00 :
  // CHECK-NOT: causal
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A select mask of data (masked_fill(pad, finfo.min), as MPT and
// jnp.where write it) becomes an additive mask of the select's own fill:
// a score plus f32's lowest is that lowest, so the masked scores are the
// select's, and a row that masks every key keeps its uniform weights.
// CHECK-LABEL: func.func @attention_select_mask_keeps_its_fill
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<1x1x4x4xi1>
// CHECK-DAG: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<1x1x4x4xf32>
// CHECK-DAG: %[[MIN:.+]] = graph.constant dense<-3.40282347E+38> : tensor<1x1x4x4xf32>
// CHECK: %[[MASK:.+]] = graph.select %[[PAD]], %[[MIN]], %[[ZERO]]
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %[[MASK]], scale = 1.000000e+00 :
func.func @attention_select_mask_keeps_its_fill(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %padb = graph.broadcast_in_dim %pad, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xi1>) -> tensor<1x2x4x4xi1>
  %min = graph.constant dense<-3.40282347E+38> : tensor<1x2x4x4xf32>
  %m = graph.select %padb, %min, %s : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %p = graph.softmax %m, dim = 3 : tensor<1x2x4x4xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A fill whose sum with a score is not the fill (-1e9) becomes -inf in
// the additive mask (a row that masks every key gives zeros). Under an
// outer scale of 1/4 f32's lowest is kept as the select's scaled fill
// (-8.5e37, still below -2^120), which the scores' scale does not touch.
// CHECK-LABEL: func.func @attention_select_mask_small_fill_is_inf
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<1x1x4x4xi1>
// CHECK-DAG: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<1x1x4x4xf32>
// CHECK-DAG: %[[NINF:.+]] = graph.constant dense<0xFF800000> : tensor<1x1x4x4xf32>
// CHECK: %[[MASK:.+]] = graph.select %[[PAD]], %[[NINF]], %[[ZERO]]
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %[[MASK]], scale = 1.000000e+00 :
// CHECK-LABEL: func.func @attention_select_mask_scaled_fill
// CHECK: graph.constant dense<-8.50705867E+37> : tensor<1x1x4x4xf32>
// CHECK: graph.attention {{.+}}, scale = 2.500000e-01 :
func.func @attention_select_mask_small_fill_is_inf(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %padb = graph.broadcast_in_dim %pad, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xi1>) -> tensor<1x2x4x4xi1>
  %fill = graph.constant dense<-1.0e9> : tensor<1x2x4x4xf32>
  %m = graph.select %padb, %fill, %s : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %p = graph.softmax %m, dim = 3 : tensor<1x2x4x4xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
func.func @attention_select_mask_scaled_fill(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %padb = graph.broadcast_in_dim %pad, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xi1>) -> tensor<1x2x4x4xi1>
  %min = graph.constant dense<-3.40282347E+38> : tensor<1x2x4x4xf32>
  %m = graph.select %padb, %min, %s : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %four = graph.constant dense<4.0> : tensor<1x2x4x4xf32>
  %d = graph.div %m, %four : tensor<1x2x4x4xf32>
  %p = graph.softmax %d, dim = 3 : tensor<1x2x4x4xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Attention probabilities used elsewhere keep the decomposed form.
// CHECK-LABEL: func.func @attention_probs_returned_stays
func.func @attention_probs_returned_stays(%q: tensor<1x1x4x8xf32>, %kt: tensor<1x1x8x4xf32>, %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x4x4xf32>
  %p = graph.softmax %s, dim = 3 : tensor<1x1x4x4xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  // CHECK-NOT: graph.attention
  return %o, %p : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

// jnp.take_along_axis(jax.nn.log_softmax(logits), targets).mean(), negated,
// as the StableHLO importer writes it: log-probabilities flattened and
// gathered at row * C + target, targets wrapped and clamped, out-of-range
// rows filled with NaN.
// CHECK-LABEL: func.func @jax_cross_entropy
// CHECK-SAME: (%[[L:.+]]: tensor<2x4xf32>, %[[T:.+]]: tensor<2xi32>)
// CHECK: %[[CE:.+]] = graph.softmax_cross_entropy %[[L]], %[[T]], reduction = mean : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
// CHECK: return %[[CE]]
func.func @jax_cross_entropy(%logits: tensor<2x4xf32>, %t: tensor<2xi32>) -> tensor<f32> {
  %m = graph.reduce_max %logits, dims = [1] : (tensor<2x4xf32>) -> tensor<2xf32>
  %mb = graph.broadcast_in_dim %m, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %s = graph.sub %logits, %mb : tensor<2x4xf32>
  %e = graph.exp %s : tensor<2x4xf32>
  %z = graph.reduce_sum %e, dims = [1] : (tensor<2x4xf32>) -> tensor<2xf32>
  %lz = graph.log %z : tensor<2xf32>
  %lzb = graph.broadcast_in_dim %lz, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %logp = graph.sub %s, %lzb : tensor<2x4xf32>
  %zero = graph.constant dense<0> : tensor<2xi32>
  %c = graph.constant dense<4> : tensor<2xi32>
  %neg = graph.compare LT, %t, %zero : tensor<2xi32>
  %tw = graph.add %t, %c : tensor<2xi32>
  %w = graph.select %neg, %tw, %t : tensor<2xi1>, tensor<2xi32>
  %w64 = graph.convert %w : (tensor<2xi32>) -> tensor<2xi64>
  %lo = graph.constant dense<0> : tensor<2xi64>
  %hi = graph.constant dense<3> : tensor<2xi64>
  %c1 = graph.max %w64, %lo : tensor<2xi64>
  %c2 = graph.min %c1, %hi : tensor<2xi64>
  %rows = graph.constant dense<[0, 4]> : tensor<2xi64>
  %pos = graph.add %c2, %rows : tensor<2xi64>
  %flat = graph.reshape %logp : (tensor<2x4xf32>) -> tensor<8xf32>
  %picked = graph.gather %flat[%pos], axis = 0 : (tensor<8xf32>, tensor<2xi64>) -> tensor<2xf32>
  %valid = graph.constant dense<true> : tensor<2xi1>
  %nan = graph.constant dense<0x7FC00000> : tensor<2xf32>
  %g = graph.select %valid, %picked, %nan : tensor<2xi1>, tensor<2xf32>
  %mean = graph.reduce_mean %g, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  %loss = graph.neg %mean : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Rows gathered elsewhere than row * C are no cross-entropy.
// CHECK-LABEL: func.func @gather_not_per_row
// CHECK-NOT: graph.softmax_cross_entropy
func.func @gather_not_per_row(%logits: tensor<2x4xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %e = graph.exp %logits : tensor<2x4xf32>
  %z = graph.reduce_sum %e, dims = [1] : (tensor<2x4xf32>) -> tensor<2xf32>
  %lz = graph.log %z : tensor<2xf32>
  %lzb = graph.broadcast_in_dim %lz, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %logp = graph.sub %logits, %lzb : tensor<2x4xf32>
  %rows = graph.constant dense<[0, 3]> : tensor<2xi64>
  %pos = graph.add %t, %rows : tensor<2xi64>
  %flat = graph.reshape %logp : (tensor<2x4xf32>) -> tensor<8xf32>
  %picked = graph.gather %flat[%pos], axis = 0 : (tensor<8xf32>, tensor<2xi64>) -> tensor<2xf32>
  %neg = graph.neg %picked : tensor<2xf32>
  %mean = graph.reduce_mean %neg, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %mean : tensor<f32>
}

// -----

// jax.nn.gelu(approximate=False) as JAX exports it: 0.5 x erfc(-x / sqrt 2),
// erfc spelled out by StableHLO's chlo decomposition (a select between
// 1 - z P(z^2) and exp(-z^2) / |z| times polynomials in 1/z^2, |z| as the
// import writes it). erfc becomes 1 - erf(z), and the whole graph.gelu.
// CHECK-LABEL: func.func @gelu_jax_exact
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu %[[X]], approximation = erf
// CHECK-NEXT: return %[[Y]]
func.func @gelu_jax_exact(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.constant dense<1.12837911> : tensor<3xf32>
  %1 = graph.constant dense<-0.37612626> : tensor<3xf32>
  %2 = graph.constant dense<0.112835854> : tensor<3xf32>
  %3 = graph.constant dense<-0.0268538129> : tensor<3xf32>
  %4 = graph.constant dense<0.00518832775> : tensor<3xf32>
  %5 = graph.constant dense<-8.0101937E-4> : tensor<3xf32>
  %6 = graph.constant dense<7.85386146E-5> : tensor<3xf32>
  %7 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %8 = graph.constant dense<-88.7228394> : tensor<3xf32>
  %9 = graph.constant dense<0.564189494> : tensor<3xf32>
  %10 = graph.constant dense<-0.282076746> : tensor<3xf32>
  %11 = graph.constant dense<0.42184633> : tensor<3xf32>
  %12 = graph.constant dense<-1.01526523> : tensor<3xf32>
  %13 = graph.constant dense<2.92101908> : tensor<3xf32>
  %14 = graph.constant dense<-7.49551868> : tensor<3xf32>
  %15 = graph.constant dense<1.297720e+01> : tensor<3xf32>
  %16 = graph.constant dense<-10.477664> : tensor<3xf32>
  %17 = graph.constant dense<0.563825965> : tensor<3xf32>
  %18 = graph.constant dense<-0.274112701> : tensor<3xf32>
  %19 = graph.constant dense<3.404880e-01> : tensor<3xf32>
  %20 = graph.constant dense<-0.494451523> : tensor<3xf32>
  %21 = graph.constant dense<0.621000468> : tensor<3xf32>
  %22 = graph.constant dense<-0.582473278> : tensor<3xf32>
  %23 = graph.constant dense<0.368742466> : tensor<3xf32>
  %24 = graph.constant dense<-0.138703942> : tensor<3xf32>
  %25 = graph.constant dense<2.326820e-02> : tensor<3xf32>
  %26 = graph.constant dense<2.000000e+00> : tensor<3xf32>
  %27 = graph.constant dense<1.000000e+00> : tensor<3xf32>
  %28 = graph.constant dense<0.000000e+00> : tensor<f32>
  %29 = graph.constant dense<0.707106769> : tensor<f32>
  %30 = graph.constant dense<5.000000e-01> : tensor<f32>
  %31 = graph.constant dense<5.000000e-01> : tensor<3xf32>
  %32 = graph.mul %arg0, %31 : tensor<3xf32>
  %33 = graph.neg %arg0 : tensor<3xf32>
  %34 = graph.constant dense<0.707106769> : tensor<3xf32>
  %35 = graph.mul %33, %34 : tensor<3xf32>
  %36 = graph.mul %35, %35 : tensor<3xf32>
  %37 = graph.neg %36 : tensor<3xf32>
  %38 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %39 = graph.compare GE, %35, %38 : tensor<3xf32>
  %40 = graph.neg %35 : tensor<3xf32>
  %41 = graph.add %35, %38 : tensor<3xf32>
  %42 = graph.select %39, %41, %40 : tensor<3xi1>, tensor<3xf32>
  %43 = graph.div %27, %36 : tensor<3xf32>
  %44 = graph.exp %37 : tensor<3xf32>
  %45 = graph.div %27, %42 : tensor<3xf32>
  %46 = graph.mul %44, %45 : tensor<3xf32>
  %47 = graph.compare LT, %42, %26 : tensor<3xf32>
  %48 = graph.mul %43, %25 : tensor<3xf32>
  %49 = graph.add %48, %24 : tensor<3xf32>
  %50 = graph.mul %49, %43 : tensor<3xf32>
  %51 = graph.add %50, %23 : tensor<3xf32>
  %52 = graph.mul %51, %43 : tensor<3xf32>
  %53 = graph.add %52, %22 : tensor<3xf32>
  %54 = graph.mul %53, %43 : tensor<3xf32>
  %55 = graph.add %54, %21 : tensor<3xf32>
  %56 = graph.mul %55, %43 : tensor<3xf32>
  %57 = graph.add %56, %20 : tensor<3xf32>
  %58 = graph.mul %57, %43 : tensor<3xf32>
  %59 = graph.add %58, %19 : tensor<3xf32>
  %60 = graph.mul %59, %43 : tensor<3xf32>
  %61 = graph.add %60, %18 : tensor<3xf32>
  %62 = graph.mul %61, %43 : tensor<3xf32>
  %63 = graph.add %62, %17 : tensor<3xf32>
  %64 = graph.mul %43, %16 : tensor<3xf32>
  %65 = graph.add %64, %15 : tensor<3xf32>
  %66 = graph.mul %65, %43 : tensor<3xf32>
  %67 = graph.add %66, %14 : tensor<3xf32>
  %68 = graph.mul %67, %43 : tensor<3xf32>
  %69 = graph.add %68, %13 : tensor<3xf32>
  %70 = graph.mul %69, %43 : tensor<3xf32>
  %71 = graph.add %70, %12 : tensor<3xf32>
  %72 = graph.mul %71, %43 : tensor<3xf32>
  %73 = graph.add %72, %11 : tensor<3xf32>
  %74 = graph.mul %73, %43 : tensor<3xf32>
  %75 = graph.add %74, %10 : tensor<3xf32>
  %76 = graph.mul %75, %43 : tensor<3xf32>
  %77 = graph.add %76, %9 : tensor<3xf32>
  %78 = graph.select %47, %63, %77 : tensor<3xi1>, tensor<3xf32>
  %79 = graph.mul %46, %78 : tensor<3xf32>
  %80 = graph.compare LT, %37, %8 : tensor<3xf32>
  %81 = graph.select %80, %7, %79 : tensor<3xi1>, tensor<3xf32>
  %82 = graph.compare LT, %35, %7 : tensor<3xf32>
  %83 = graph.sub %26, %81 : tensor<3xf32>
  %84 = graph.select %82, %83, %81 : tensor<3xi1>, tensor<3xf32>
  %85 = graph.mul %35, %35 : tensor<3xf32>
  %86 = graph.mul %85, %6 : tensor<3xf32>
  %87 = graph.add %86, %5 : tensor<3xf32>
  %88 = graph.mul %87, %85 : tensor<3xf32>
  %89 = graph.add %88, %4 : tensor<3xf32>
  %90 = graph.mul %89, %85 : tensor<3xf32>
  %91 = graph.add %90, %3 : tensor<3xf32>
  %92 = graph.mul %91, %85 : tensor<3xf32>
  %93 = graph.add %92, %2 : tensor<3xf32>
  %94 = graph.mul %93, %85 : tensor<3xf32>
  %95 = graph.add %94, %1 : tensor<3xf32>
  %96 = graph.mul %95, %85 : tensor<3xf32>
  %97 = graph.add %96, %0 : tensor<3xf32>
  %98 = graph.mul %35, %97 : tensor<3xf32>
  %99 = graph.sub %27, %98 : tensor<3xf32>
  %100 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %101 = graph.compare GE, %35, %100 : tensor<3xf32>
  %102 = graph.neg %35 : tensor<3xf32>
  %103 = graph.add %35, %100 : tensor<3xf32>
  %104 = graph.select %101, %103, %102 : tensor<3xi1>, tensor<3xf32>
  %105 = graph.compare LT, %104, %27 : tensor<3xf32>
  %106 = graph.select %105, %99, %84 : tensor<3xi1>, tensor<3xf32>
  %107 = graph.mul %32, %106 : tensor<3xf32>
  return %107 : tensor<3xf32>
}
// -----

// The erfc alone: 1 - erf(z), z = -x / sqrt 2; no polynomial or exp left.
// CHECK-LABEL: func.func @erfc_expansion
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>)
// CHECK: %[[N:.+]] = graph.neg %[[X]]
// CHECK: %[[Z:.+]] = graph.mul %[[N]], %{{.+}} : tensor<3xf32>
// CHECK: %[[E:.+]] = graph.erf %[[Z]]
// CHECK: %[[R:.+]] = graph.sub %{{.+}}, %[[E]]
// CHECK-NOT: graph.exp
// CHECK: return %[[R]]
func.func @erfc_expansion(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.constant dense<1.12837911> : tensor<3xf32>
  %1 = graph.constant dense<-0.37612626> : tensor<3xf32>
  %2 = graph.constant dense<0.112835854> : tensor<3xf32>
  %3 = graph.constant dense<-0.0268538129> : tensor<3xf32>
  %4 = graph.constant dense<0.00518832775> : tensor<3xf32>
  %5 = graph.constant dense<-8.0101937E-4> : tensor<3xf32>
  %6 = graph.constant dense<7.85386146E-5> : tensor<3xf32>
  %7 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %8 = graph.constant dense<-88.7228394> : tensor<3xf32>
  %9 = graph.constant dense<0.564189494> : tensor<3xf32>
  %10 = graph.constant dense<-0.282076746> : tensor<3xf32>
  %11 = graph.constant dense<0.42184633> : tensor<3xf32>
  %12 = graph.constant dense<-1.01526523> : tensor<3xf32>
  %13 = graph.constant dense<2.92101908> : tensor<3xf32>
  %14 = graph.constant dense<-7.49551868> : tensor<3xf32>
  %15 = graph.constant dense<1.297720e+01> : tensor<3xf32>
  %16 = graph.constant dense<-10.477664> : tensor<3xf32>
  %17 = graph.constant dense<0.563825965> : tensor<3xf32>
  %18 = graph.constant dense<-0.274112701> : tensor<3xf32>
  %19 = graph.constant dense<3.404880e-01> : tensor<3xf32>
  %20 = graph.constant dense<-0.494451523> : tensor<3xf32>
  %21 = graph.constant dense<0.621000468> : tensor<3xf32>
  %22 = graph.constant dense<-0.582473278> : tensor<3xf32>
  %23 = graph.constant dense<0.368742466> : tensor<3xf32>
  %24 = graph.constant dense<-0.138703942> : tensor<3xf32>
  %25 = graph.constant dense<2.326820e-02> : tensor<3xf32>
  %26 = graph.constant dense<2.000000e+00> : tensor<3xf32>
  %27 = graph.constant dense<1.000000e+00> : tensor<3xf32>
  %28 = graph.constant dense<0.000000e+00> : tensor<f32>
  %29 = graph.constant dense<0.707106769> : tensor<f32>
  %30 = graph.constant dense<5.000000e-01> : tensor<f32>
  %31 = graph.constant dense<5.000000e-01> : tensor<3xf32>
  %32 = graph.mul %arg0, %31 : tensor<3xf32>
  %33 = graph.neg %arg0 : tensor<3xf32>
  %34 = graph.constant dense<0.707106769> : tensor<3xf32>
  %35 = graph.mul %33, %34 : tensor<3xf32>
  %36 = graph.mul %35, %35 : tensor<3xf32>
  %37 = graph.neg %36 : tensor<3xf32>
  %38 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %39 = graph.compare GE, %35, %38 : tensor<3xf32>
  %40 = graph.neg %35 : tensor<3xf32>
  %41 = graph.add %35, %38 : tensor<3xf32>
  %42 = graph.select %39, %41, %40 : tensor<3xi1>, tensor<3xf32>
  %43 = graph.div %27, %36 : tensor<3xf32>
  %44 = graph.exp %37 : tensor<3xf32>
  %45 = graph.div %27, %42 : tensor<3xf32>
  %46 = graph.mul %44, %45 : tensor<3xf32>
  %47 = graph.compare LT, %42, %26 : tensor<3xf32>
  %48 = graph.mul %43, %25 : tensor<3xf32>
  %49 = graph.add %48, %24 : tensor<3xf32>
  %50 = graph.mul %49, %43 : tensor<3xf32>
  %51 = graph.add %50, %23 : tensor<3xf32>
  %52 = graph.mul %51, %43 : tensor<3xf32>
  %53 = graph.add %52, %22 : tensor<3xf32>
  %54 = graph.mul %53, %43 : tensor<3xf32>
  %55 = graph.add %54, %21 : tensor<3xf32>
  %56 = graph.mul %55, %43 : tensor<3xf32>
  %57 = graph.add %56, %20 : tensor<3xf32>
  %58 = graph.mul %57, %43 : tensor<3xf32>
  %59 = graph.add %58, %19 : tensor<3xf32>
  %60 = graph.mul %59, %43 : tensor<3xf32>
  %61 = graph.add %60, %18 : tensor<3xf32>
  %62 = graph.mul %61, %43 : tensor<3xf32>
  %63 = graph.add %62, %17 : tensor<3xf32>
  %64 = graph.mul %43, %16 : tensor<3xf32>
  %65 = graph.add %64, %15 : tensor<3xf32>
  %66 = graph.mul %65, %43 : tensor<3xf32>
  %67 = graph.add %66, %14 : tensor<3xf32>
  %68 = graph.mul %67, %43 : tensor<3xf32>
  %69 = graph.add %68, %13 : tensor<3xf32>
  %70 = graph.mul %69, %43 : tensor<3xf32>
  %71 = graph.add %70, %12 : tensor<3xf32>
  %72 = graph.mul %71, %43 : tensor<3xf32>
  %73 = graph.add %72, %11 : tensor<3xf32>
  %74 = graph.mul %73, %43 : tensor<3xf32>
  %75 = graph.add %74, %10 : tensor<3xf32>
  %76 = graph.mul %75, %43 : tensor<3xf32>
  %77 = graph.add %76, %9 : tensor<3xf32>
  %78 = graph.select %47, %63, %77 : tensor<3xi1>, tensor<3xf32>
  %79 = graph.mul %46, %78 : tensor<3xf32>
  %80 = graph.compare LT, %37, %8 : tensor<3xf32>
  %81 = graph.select %80, %7, %79 : tensor<3xi1>, tensor<3xf32>
  %82 = graph.compare LT, %35, %7 : tensor<3xf32>
  %83 = graph.sub %26, %81 : tensor<3xf32>
  %84 = graph.select %82, %83, %81 : tensor<3xi1>, tensor<3xf32>
  %85 = graph.mul %35, %35 : tensor<3xf32>
  %86 = graph.mul %85, %6 : tensor<3xf32>
  %87 = graph.add %86, %5 : tensor<3xf32>
  %88 = graph.mul %87, %85 : tensor<3xf32>
  %89 = graph.add %88, %4 : tensor<3xf32>
  %90 = graph.mul %89, %85 : tensor<3xf32>
  %91 = graph.add %90, %3 : tensor<3xf32>
  %92 = graph.mul %91, %85 : tensor<3xf32>
  %93 = graph.add %92, %2 : tensor<3xf32>
  %94 = graph.mul %93, %85 : tensor<3xf32>
  %95 = graph.add %94, %1 : tensor<3xf32>
  %96 = graph.mul %95, %85 : tensor<3xf32>
  %97 = graph.add %96, %0 : tensor<3xf32>
  %98 = graph.mul %35, %97 : tensor<3xf32>
  %99 = graph.sub %27, %98 : tensor<3xf32>
  %100 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %101 = graph.compare GE, %35, %100 : tensor<3xf32>
  %102 = graph.neg %35 : tensor<3xf32>
  %103 = graph.add %35, %100 : tensor<3xf32>
  %104 = graph.select %101, %103, %102 : tensor<3xi1>, tensor<3xf32>
  %105 = graph.compare LT, %104, %27 : tensor<3xf32>
  %106 = graph.select %105, %99, %84 : tensor<3xi1>, tensor<3xf32>
  return %106 : tensor<3xf32>
}
// -----

// One coefficient of the large branch differs (0.56 for 0.563825965): not
// erfc's expansion, left as it is.
// CHECK-LABEL: func.func @erfc_expansion_other_coefficient
// CHECK-NOT: graph.erf
// CHECK: graph.exp
// CHECK-NOT: graph.erf
func.func @erfc_expansion_other_coefficient(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.constant dense<1.12837911> : tensor<3xf32>
  %1 = graph.constant dense<-0.37612626> : tensor<3xf32>
  %2 = graph.constant dense<0.112835854> : tensor<3xf32>
  %3 = graph.constant dense<-0.0268538129> : tensor<3xf32>
  %4 = graph.constant dense<0.00518832775> : tensor<3xf32>
  %5 = graph.constant dense<-8.0101937E-4> : tensor<3xf32>
  %6 = graph.constant dense<7.85386146E-5> : tensor<3xf32>
  %7 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %8 = graph.constant dense<-88.7228394> : tensor<3xf32>
  %9 = graph.constant dense<0.564189494> : tensor<3xf32>
  %10 = graph.constant dense<-0.282076746> : tensor<3xf32>
  %11 = graph.constant dense<0.42184633> : tensor<3xf32>
  %12 = graph.constant dense<-1.01526523> : tensor<3xf32>
  %13 = graph.constant dense<2.92101908> : tensor<3xf32>
  %14 = graph.constant dense<-7.49551868> : tensor<3xf32>
  %15 = graph.constant dense<1.297720e+01> : tensor<3xf32>
  %16 = graph.constant dense<-10.477664> : tensor<3xf32>
  %17 = graph.constant dense<0.56> : tensor<3xf32>
  %18 = graph.constant dense<-0.274112701> : tensor<3xf32>
  %19 = graph.constant dense<3.404880e-01> : tensor<3xf32>
  %20 = graph.constant dense<-0.494451523> : tensor<3xf32>
  %21 = graph.constant dense<0.621000468> : tensor<3xf32>
  %22 = graph.constant dense<-0.582473278> : tensor<3xf32>
  %23 = graph.constant dense<0.368742466> : tensor<3xf32>
  %24 = graph.constant dense<-0.138703942> : tensor<3xf32>
  %25 = graph.constant dense<2.326820e-02> : tensor<3xf32>
  %26 = graph.constant dense<2.000000e+00> : tensor<3xf32>
  %27 = graph.constant dense<1.000000e+00> : tensor<3xf32>
  %28 = graph.constant dense<0.000000e+00> : tensor<f32>
  %29 = graph.constant dense<0.707106769> : tensor<f32>
  %30 = graph.constant dense<5.000000e-01> : tensor<f32>
  %31 = graph.constant dense<5.000000e-01> : tensor<3xf32>
  %32 = graph.mul %arg0, %31 : tensor<3xf32>
  %33 = graph.neg %arg0 : tensor<3xf32>
  %34 = graph.constant dense<0.707106769> : tensor<3xf32>
  %35 = graph.mul %33, %34 : tensor<3xf32>
  %36 = graph.mul %35, %35 : tensor<3xf32>
  %37 = graph.neg %36 : tensor<3xf32>
  %38 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %39 = graph.compare GE, %35, %38 : tensor<3xf32>
  %40 = graph.neg %35 : tensor<3xf32>
  %41 = graph.add %35, %38 : tensor<3xf32>
  %42 = graph.select %39, %41, %40 : tensor<3xi1>, tensor<3xf32>
  %43 = graph.div %27, %36 : tensor<3xf32>
  %44 = graph.exp %37 : tensor<3xf32>
  %45 = graph.div %27, %42 : tensor<3xf32>
  %46 = graph.mul %44, %45 : tensor<3xf32>
  %47 = graph.compare LT, %42, %26 : tensor<3xf32>
  %48 = graph.mul %43, %25 : tensor<3xf32>
  %49 = graph.add %48, %24 : tensor<3xf32>
  %50 = graph.mul %49, %43 : tensor<3xf32>
  %51 = graph.add %50, %23 : tensor<3xf32>
  %52 = graph.mul %51, %43 : tensor<3xf32>
  %53 = graph.add %52, %22 : tensor<3xf32>
  %54 = graph.mul %53, %43 : tensor<3xf32>
  %55 = graph.add %54, %21 : tensor<3xf32>
  %56 = graph.mul %55, %43 : tensor<3xf32>
  %57 = graph.add %56, %20 : tensor<3xf32>
  %58 = graph.mul %57, %43 : tensor<3xf32>
  %59 = graph.add %58, %19 : tensor<3xf32>
  %60 = graph.mul %59, %43 : tensor<3xf32>
  %61 = graph.add %60, %18 : tensor<3xf32>
  %62 = graph.mul %61, %43 : tensor<3xf32>
  %63 = graph.add %62, %17 : tensor<3xf32>
  %64 = graph.mul %43, %16 : tensor<3xf32>
  %65 = graph.add %64, %15 : tensor<3xf32>
  %66 = graph.mul %65, %43 : tensor<3xf32>
  %67 = graph.add %66, %14 : tensor<3xf32>
  %68 = graph.mul %67, %43 : tensor<3xf32>
  %69 = graph.add %68, %13 : tensor<3xf32>
  %70 = graph.mul %69, %43 : tensor<3xf32>
  %71 = graph.add %70, %12 : tensor<3xf32>
  %72 = graph.mul %71, %43 : tensor<3xf32>
  %73 = graph.add %72, %11 : tensor<3xf32>
  %74 = graph.mul %73, %43 : tensor<3xf32>
  %75 = graph.add %74, %10 : tensor<3xf32>
  %76 = graph.mul %75, %43 : tensor<3xf32>
  %77 = graph.add %76, %9 : tensor<3xf32>
  %78 = graph.select %47, %63, %77 : tensor<3xi1>, tensor<3xf32>
  %79 = graph.mul %46, %78 : tensor<3xf32>
  %80 = graph.compare LT, %37, %8 : tensor<3xf32>
  %81 = graph.select %80, %7, %79 : tensor<3xi1>, tensor<3xf32>
  %82 = graph.compare LT, %35, %7 : tensor<3xf32>
  %83 = graph.sub %26, %81 : tensor<3xf32>
  %84 = graph.select %82, %83, %81 : tensor<3xi1>, tensor<3xf32>
  %85 = graph.mul %35, %35 : tensor<3xf32>
  %86 = graph.mul %85, %6 : tensor<3xf32>
  %87 = graph.add %86, %5 : tensor<3xf32>
  %88 = graph.mul %87, %85 : tensor<3xf32>
  %89 = graph.add %88, %4 : tensor<3xf32>
  %90 = graph.mul %89, %85 : tensor<3xf32>
  %91 = graph.add %90, %3 : tensor<3xf32>
  %92 = graph.mul %91, %85 : tensor<3xf32>
  %93 = graph.add %92, %2 : tensor<3xf32>
  %94 = graph.mul %93, %85 : tensor<3xf32>
  %95 = graph.add %94, %1 : tensor<3xf32>
  %96 = graph.mul %95, %85 : tensor<3xf32>
  %97 = graph.add %96, %0 : tensor<3xf32>
  %98 = graph.mul %35, %97 : tensor<3xf32>
  %99 = graph.sub %27, %98 : tensor<3xf32>
  %100 = graph.constant dense<0.000000e+00> : tensor<3xf32>
  %101 = graph.compare GE, %35, %100 : tensor<3xf32>
  %102 = graph.neg %35 : tensor<3xf32>
  %103 = graph.add %35, %100 : tensor<3xf32>
  %104 = graph.select %101, %103, %102 : tensor<3xi1>, tensor<3xf32>
  %105 = graph.compare LT, %104, %27 : tensor<3xf32>
  %106 = graph.select %105, %99, %84 : tensor<3xi1>, tensor<3xf32>
  return %106 : tensor<3xf32>
}
// -----

// GPT-Neo as exported: unscaled scores, the causal mask a select with
// torch.finfo(f32).min below the additive padding bias (the padding bias is
// added to the masked scores, so the select is not outermost).
// CHECK-LABEL: func.func @attention_mask_select_below_bias
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>, %[[M:.+]]: tensor<2x1x8x8xf32>)
// CHECK-NOT: graph.softmax
// CHECK: %[[K:.+]] = graph.transpose %[[KT]], permutation = [0, 1, 3, 2]
// CHECK: %[[O:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] mask %[[M]], scale = 1.000000e+00, causal :
// CHECK-NEXT: return %[[O]]
func.func @attention_mask_select_below_bias(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %row = graph.iota dim = 0 : tensor<8x8xi64>
  %col = graph.iota dim = 1 : tensor<8x8xi64>
  %keep = graph.compare LE, %col, %row : tensor<8x8xi64>
  %keepb = graph.broadcast_in_dim %keep, dims = [2, 3] : (tensor<8x8xi1>) -> tensor<2x4x8x8xi1>
  %min = graph.constant dense<-3.40282347E+38> : tensor<2x4x8x8xf32>
  %m = graph.select %keepb, %s, %min : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %mb = graph.broadcast_in_dim %mask, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %a = graph.add %m, %mb : tensor<2x4x8x8xf32>
  %p = graph.softmax %a, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// CodeGen as exported: the causally masked scores plus the padding bias,
// all divided by sqrt(head dim): the division becomes attention's scale and
// divides the bias too (the select's fill stays -inf: causal).
// CHECK-LABEL: func.func @attention_scale_after_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>, %[[M:.+]]: tensor<2x1x8x8xf32>)
// CHECK-NOT: graph.softmax
// CHECK-DAG: %[[QUARTER:.+]] = graph.constant dense<2.500000e-01> : tensor<2x4x8x8xf32>
// CHECK-DAG: %[[MB:.+]] = graph.broadcast_in_dim %[[M]], dims = [0, 1, 2, 3]
// CHECK: %[[MS:.+]] = graph.mul %[[MB]], %[[QUARTER]]
// CHECK: %[[O:.+]] = graph.attention %[[Q]], %{{.+}}, %[[V]] mask %[[MS]], scale = 2.500000e-01, causal :
// CHECK-NEXT: return %[[O]]
func.func @attention_scale_after_mask(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %row = graph.iota dim = 0 : tensor<8x8xi64>
  %col = graph.iota dim = 1 : tensor<8x8xi64>
  %keep = graph.compare LE, %col, %row : tensor<8x8xi64>
  %keepb = graph.broadcast_in_dim %keep, dims = [2, 3] : (tensor<8x8xi1>) -> tensor<2x4x8x8xi1>
  %min = graph.constant dense<-3.40282347E+38> : tensor<2x4x8x8xf32>
  %m = graph.select %keepb, %s, %min : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %mb = graph.broadcast_in_dim %mask, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %a = graph.add %m, %mb : tensor<2x4x8x8xf32>
  %four = graph.constant dense<4.0> : tensor<2x4x8x8xf32>
  %d = graph.div %a, %four : tensor<2x4x8x8xf32>
  %p = graph.softmax %d, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// A negative factor over a finite mask fill turns the fill into a real
// score (-1e4 * -0.5 = 5000): not attention; the softmax stays.
// CHECK-LABEL: func.func @attention_not_negative_scale_over_fill
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @attention_not_negative_scale_over_fill(%q: tensor<1x1x4x8xf32>, %kt: tensor<1x1x8x4xf32>, %v: tensor<1x1x4x8xf32>, %bias: tensor<1x1x4x4xf32>) -> tensor<1x1x4x8xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x4x4xf32>
  %row = graph.iota dim = 0 : tensor<4x4xi64>
  %col = graph.iota dim = 1 : tensor<4x4xi64>
  %keep = graph.compare LE, %col, %row : tensor<4x4xi64>
  %keepb = graph.broadcast_in_dim %keep, dims = [2, 3] : (tensor<4x4xi1>) -> tensor<1x1x4x4xi1>
  %min = graph.constant dense<-1.0e4> : tensor<1x1x4x4xf32>
  %m = graph.select %keepb, %s, %min : tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>
  %a = graph.add %m, %bias : tensor<1x1x4x4xf32>
  %cn = graph.constant dense<-0.5> : tensor<1x1x4x4xf32>
  %an = graph.mul %a, %cn : tensor<1x1x4x4xf32>
  %p = graph.softmax %an, dim = 3 : tensor<1x1x4x4xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// Gemma 2's soft-capped scores (Hugging Face's eager attention): scaled,
// divided by the cap, tanh, times the cap, then the mask added. The
// divisor joins the scale: 50 * tanh(0.25 qk / 50) is scale 0.25, softcap
// 50.
// CHECK-LABEL: func.func @attention_softcap
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KT:.+]]: tensor<2x4x16x8xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>, %[[M:.+]]: tensor<2x1x8x8xf32>)
// CHECK-NOT: graph.tanh
// CHECK: %[[O:.+]] = graph.attention %[[Q]], %{{.+}}, %[[V]] mask %[[M]], scale = 2.500000e-01 {softcap = 5.000000e+01 : f64} :
// CHECK-NEXT: return %[[O]]
func.func @attention_softcap(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %quarter = graph.constant dense<0.25> : tensor<2x4x8x8xf32>
  %scaled = graph.mul %s, %quarter : tensor<2x4x8x8xf32>
  %cap = graph.constant dense<50.0> : tensor<2x4x8x8xf32>
  %d = graph.div %scaled, %cap : tensor<2x4x8x8xf32>
  %t = graph.tanh %d : tensor<2x4x8x8xf32>
  %capped = graph.mul %t, %cap : tensor<2x4x8x8xf32>
  %mb = graph.broadcast_in_dim %mask, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %m = graph.add %capped, %mb : tensor<2x4x8x8xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// The cap as a JAX program writes it, causal: where(mask, c * tanh(s * r),
// -inf) with the factor r = 1/30 inside and the cap's product the other
// way round; unscaled scores, so the scale is r * 30 (1 + 5e-8: r is
// rounded to f32).
// CHECK-LABEL: func.func @attention_softcap_causal_select
// CHECK-NOT: graph.tanh
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.00000{{[0-9]+}}, causal {softcap = 3.000000e+01 : f64} :
func.func @attention_softcap_causal_select(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %r = graph.constant dense<0.033333333333333333> : tensor<2x4x8x8xf32>
  %d = graph.mul %s, %r : tensor<2x4x8x8xf32>
  %t = graph.tanh %d : tensor<2x4x8x8xf32>
  %cap = graph.constant dense<30.0> : tensor<2x4x8x8xf32>
  %capped = graph.mul %cap, %t : tensor<2x4x8x8xf32>
  %row = graph.iota dim = 0 : tensor<8x8xi64>
  %col = graph.iota dim = 1 : tensor<8x8xi64>
  %keep = graph.compare LE, %col, %row : tensor<8x8xi64>
  %keepb = graph.broadcast_in_dim %keep, dims = [2, 3] : (tensor<8x8xi1>) -> tensor<2x4x8x8xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %m = graph.select %keepb, %capped, %ninf : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// A negative cap is no soft cap (-c tanh(x / c) = c tanh(-x / c) flips the
// scores' sign): nothing is recognized, the softmax stays.
// CHECK-LABEL: func.func @attention_negative_softcap_stays
// CHECK-NOT: graph.attention
// CHECK: graph.tanh
// CHECK: graph.softmax
func.func @attention_negative_softcap_stays(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %cap = graph.constant dense<-5.0> : tensor<2x4x8x8xf32>
  %d = graph.div %s, %cap : tensor<2x4x8x8xf32>
  %t = graph.tanh %d : tensor<2x4x8x8xf32>
  %capped = graph.mul %t, %cap : tensor<2x4x8x8xf32>
  %p = graph.softmax %capped, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// A tanh whose value something else reads too stays: the attention op
// would not give it.
// CHECK-LABEL: func.func @attention_softcap_tanh_read_twice_stays
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @attention_softcap_tanh_read_twice_stays(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>) {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %cap = graph.constant dense<5.0> : tensor<2x4x8x8xf32>
  %d = graph.div %s, %cap : tensor<2x4x8x8xf32>
  %t = graph.tanh %d : tensor<2x4x8x8xf32>
  %capped = graph.mul %t, %cap : tensor<2x4x8x8xf32>
  %p = graph.softmax %capped, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o, %t : tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>
}

// -----

// Flax's LayerNorm: the "fast" variance mean(x^2) - mean(x)^2 clamped at
// 0, and the scale multiplied into the reciprocal before it meets x - mean.
// CHECK-LABEL: func.func @layer_norm_flax
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x32xf32>, %[[W:.+]]: tensor<32xf32>, %[[B:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[LN:.+]] = graph.layer_norm %[[X]] scale %[[W]] bias %[[B]], axis = 2, epsilon = 9.99999{{[0-9]+}}E-7
// CHECK-NEXT: return %[[LN]]
func.func @layer_norm_flax(%x: tensor<2x16x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x16x32xf32> {
  %eps = graph.constant dense<9.99999997E-7> : tensor<2x16xf32>
  %zero = graph.constant dense<0.000000e+00> : tensor<2x16xf32>
  %xx = graph.mul %x, %x : tensor<2x16x32xf32>
  %m = graph.reduce_mean %x, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %mxx = graph.reduce_mean %xx, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %mm = graph.mul %m, %m : tensor<2x16xf32>
  %v = graph.sub %mxx, %mm : tensor<2x16xf32>
  %vc = graph.max %v, %zero : tensor<2x16xf32>
  %mb = graph.broadcast_in_dim %m, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %c = graph.sub %x, %mb : tensor<2x16x32xf32>
  %ve = graph.add %vc, %eps : tensor<2x16xf32>
  %r = graph.rsqrt %ve : tensor<2x16xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %wb = graph.broadcast_in_dim %w, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %rw = graph.mul %rb, %wb : tensor<2x16x32xf32>
  %n = graph.mul %c, %rw : tensor<2x16x32xf32>
  %bb = graph.broadcast_in_dim %b, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %y = graph.add %n, %bb : tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}

// -----

// Equinox's LayerNorm: jnp.var's mean((x - mean)^2), clamped at 0
// (max(0, var)), the scale after.
// CHECK-LABEL: func.func @layer_norm_equinox
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x32xf32>, %[[W:.+]]: tensor<32xf32>, %[[B:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[LN:.+]] = graph.layer_norm %[[X]] scale %[[W]] bias %[[B]], axis = 2
// CHECK-NEXT: return %[[LN]]
func.func @layer_norm_equinox(%x: tensor<2x16x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x16x32xf32> {
  %eps = graph.constant dense<9.99999974E-6> : tensor<2x16xf32>
  %zero = graph.constant dense<0.000000e+00> : tensor<2x16xf32>
  %m = graph.reduce_mean %x, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %mb = graph.broadcast_in_dim %m, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %c = graph.sub %x, %mb : tensor<2x16x32xf32>
  %cc = graph.mul %c, %c : tensor<2x16x32xf32>
  %v = graph.reduce_mean %cc, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %vc = graph.max %zero, %v : tensor<2x16xf32>
  %ve = graph.add %vc, %eps : tensor<2x16xf32>
  %r = graph.rsqrt %ve : tensor<2x16xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %n = graph.mul %c, %rb : tensor<2x16x32xf32>
  %wb = graph.broadcast_in_dim %w, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %s = graph.mul %wb, %n : tensor<2x16x32xf32>
  %bb = graph.broadcast_in_dim %b, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %y = graph.add %s, %bb : tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}

// -----

// Flax's RMSNorm: x * (rsqrt(mean(x^2) + eps) * scale).
// CHECK-LABEL: func.func @rms_norm_flax
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x32xf32>, %[[W:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[N:.+]] = graph.rms_norm %[[X]] scale %[[W]], axis = 2
// CHECK-NEXT: return %[[N]]
func.func @rms_norm_flax(%x: tensor<2x16x32xf32>, %w: tensor<32xf32>) -> tensor<2x16x32xf32> {
  %eps = graph.constant dense<9.99999997E-7> : tensor<2x16xf32>
  %xx = graph.mul %x, %x : tensor<2x16x32xf32>
  %v = graph.reduce_mean %xx, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %ve = graph.add %v, %eps : tensor<2x16xf32>
  %r = graph.rsqrt %ve : tensor<2x16xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %wb = graph.broadcast_in_dim %w, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %rw = graph.mul %rb, %wb : tensor<2x16x32xf32>
  %y = graph.mul %x, %rw : tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}

// -----

// Not a variance: the mean of squares is of another tensor than the one
// centred (mean(y^2) - mean(x)^2), or the clamp is not at 0. Neither is a
// layer norm.
// CHECK-LABEL: func.func @fast_variance_of_another_tensor_stays
// CHECK-NOT: graph.layer_norm
// CHECK-NOT: graph.rms_norm
// CHECK: graph.rsqrt
// CHECK: graph.rsqrt
func.func @fast_variance_of_another_tensor_stays(%x: tensor<2x16x32xf32>, %y: tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>) {
  %eps = graph.constant dense<9.99999997E-7> : tensor<2x16xf32>
  %floor = graph.constant dense<1.000000e-03> : tensor<2x16xf32>
  %yy = graph.mul %y, %y : tensor<2x16x32xf32>
  %m = graph.reduce_mean %x, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %myy = graph.reduce_mean %yy, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %mm = graph.mul %m, %m : tensor<2x16xf32>
  %v = graph.sub %myy, %mm : tensor<2x16xf32>
  %mb = graph.broadcast_in_dim %m, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %c = graph.sub %x, %mb : tensor<2x16x32xf32>
  %ve = graph.add %v, %eps : tensor<2x16xf32>
  %r = graph.rsqrt %ve : tensor<2x16xf32>
  %rb = graph.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %n = graph.mul %c, %rb : tensor<2x16x32xf32>
  // mean((y - mean(y))^2) clamped at 1e-3, not 0.
  %my = graph.reduce_mean %y, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %myb = graph.broadcast_in_dim %my, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %c2 = graph.sub %y, %myb : tensor<2x16x32xf32>
  %cc = graph.mul %c2, %c2 : tensor<2x16x32xf32>
  %v2 = graph.reduce_mean %cc, dims = [2] : (tensor<2x16x32xf32>) -> tensor<2x16xf32>
  %vc = graph.max %v2, %floor : tensor<2x16xf32>
  %ve2 = graph.add %vc, %eps : tensor<2x16xf32>
  %r2 = graph.rsqrt %ve2 : tensor<2x16xf32>
  %rb2 = graph.broadcast_in_dim %r2, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
  %n2 = graph.mul %c2, %rb2 : tensor<2x16x32xf32>
  return %n, %n2 : tensor<2x16x32xf32>, tensor<2x16x32xf32>
}

// -----

// optax.softmax_cross_entropy_with_integer_labels, mean: logsumexp(logits)
// (jax.nn.logsumexp: the max where finite, log of the sum's absolute
// value) minus the logits picked by jnp.take_along_axis (its gather, its
// out-of-range NaN fill, the pick of the trailing unit dim).
// CHECK-LABEL: func.func @cross_entropy_optax_integer_labels
// CHECK-SAME: (%[[L:.+]]: tensor<2x3x4xf32>, %[[T:.+]]: tensor<2x3xi32>)
// CHECK-NEXT: %[[CE:.+]] = graph.softmax_cross_entropy %[[L]], %[[T]], reduction = mean
// CHECK-NEXT: return %[[CE]]
func.func @cross_entropy_optax_integer_labels(%logits: tensor<2x3x4xf32>, %labels: tensor<2x3xi32>) -> tensor<f32> {
  %0 = graph.constant dense<3> : tensor<2x3x1x1xi64>
  %1 = graph.constant dense<0> : tensor<2x3x1x1xi64>
  %2 = graph.constant dense<[[[[0]], [[4]], [[8]]], [[[12]], [[16]], [[20]]]]> : tensor<2x3x1x1xi64>
  %3 = graph.constant dense<0.000000e+00> : tensor<2x3xf32>
  %4 = graph.constant dense<0x7FC00000> : tensor<2x3xf32>
  %5 = graph.constant dense<0> : tensor<1xi64>
  %6 = graph.constant dense<false> : tensor<i1>
  %7 = graph.constant dense<0> : tensor<1xi32>
  %8 = graph.constant dense<0x7FC00000> : tensor<2x3x1xf32>
  %9 = graph.constant dense<true> : tensor<2x3x1xi1>
  %10 = graph.constant dense<false> : tensor<2x3x1xi1>
  %11 = graph.constant dense<false> : tensor<2x3x1x1xi1>
  %12 = graph.constant dense<3> : tensor<2x3x1x1xi32>
  %13 = graph.constant dense<0> : tensor<2x3x1x1xi32>
  %14 = graph.constant dense<4> : tensor<2x3x1xi32>
  %15 = graph.constant dense<0> : tensor<2x3x1xi32>
  %16 = graph.constant dense<true> : tensor<i1>
  %17 = graph.constant dense<0> : tensor<i32>
  %19 = graph.reshape %labels : (tensor<2x3xi32>) -> tensor<2x3x1xi32>
  %20 = graph.compare LT, %19, %15 : tensor<2x3x1xi32>
  %21 = graph.add %19, %14 : tensor<2x3x1xi32>
  %22 = graph.select %20, %21, %19 : tensor<2x3x1xi1>, tensor<2x3x1xi32>
  %23 = graph.reshape %22 : (tensor<2x3x1xi32>) -> tensor<2x3x1x1xi32>
  %24 = graph.compare GE, %23, %13 : tensor<2x3x1x1xi32>
  %25 = graph.compare LE, %23, %12 : tensor<2x3x1x1xi32>
  %26 = graph.select %24, %25, %11 : tensor<2x3x1x1xi1>, tensor<2x3x1x1xi1>
  %27 = graph.compare EQ, %26, %11 : tensor<2x3x1x1xi1>
  %28 = graph.convert %27 : (tensor<2x3x1x1xi1>) -> tensor<2x3x1x1xi32>
  %29 = graph.reduce_max %28, dims = [3] : (tensor<2x3x1x1xi32>) -> tensor<2x3x1xi32>
  %30 = graph.compare NE, %29, %15 : tensor<2x3x1xi32>
  %31 = graph.compare EQ, %30, %10 : tensor<2x3x1xi1>
  %32 = graph.select %31, %9, %10 : tensor<2x3x1xi1>, tensor<2x3x1xi1>
  %33 = graph.reshape %logits : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %34 = graph.convert %23 : (tensor<2x3x1x1xi32>) -> tensor<2x3x1x1xi64>
  %35 = graph.max %34, %1 : tensor<2x3x1x1xi64>
  %36 = graph.min %35, %0 : tensor<2x3x1x1xi64>
  %37 = graph.add %36, %2 : tensor<2x3x1x1xi64>
  %38 = graph.gather %33[%37], axis = 0 : (tensor<24xf32>, tensor<2x3x1x1xi64>) -> tensor<2x3x1x1xf32>
  %39 = graph.reshape %38 : (tensor<2x3x1x1xf32>) -> tensor<2x3x1xf32>
  %40 = graph.select %32, %39, %8 : tensor<2x3x1xi1>, tensor<2x3x1xf32>
  %41 = graph.reduce_max %7, dims = [0] : (tensor<1xi32>) -> tensor<i32>
  %42 = graph.compare NE, %41, %17 : tensor<i32>
  %43 = graph.compare EQ, %42, %6 : tensor<i1>
  %44 = graph.select %43, %16, %6 : tensor<i1>, tensor<i1>
  %45 = graph.transpose %40, permutation = [2, 0, 1] : (tensor<2x3x1xf32>) -> tensor<1x2x3xf32>
  %46 = graph.gather %45[%5], axis = 0 : (tensor<1x2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
  %47 = graph.reshape %46 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %48 = graph.broadcast_in_dim %44, dims = [] : (tensor<i1>) -> tensor<2x3xi1>
  %49 = graph.select %48, %47, %4 : tensor<2x3xi1>, tensor<2x3xf32>
  %50 = graph.reduce_max %logits, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %51 = graph.sub %50, %50 : tensor<2x3xf32>
  %52 = graph.compare EQ, %51, %3 : tensor<2x3xf32>
  %53 = graph.select %52, %50, %3 : tensor<2x3xi1>, tensor<2x3xf32>
  %54 = graph.broadcast_in_dim %53, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %55 = graph.sub %logits, %54 : tensor<2x3x4xf32>
  %56 = graph.exp %55 : tensor<2x3x4xf32>
  %57 = graph.reduce_sum %56, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %58 = graph.compare GE, %57, %3 : tensor<2x3xf32>
  %59 = graph.neg %57 : tensor<2x3xf32>
  %60 = graph.add %57, %3 : tensor<2x3xf32>
  %61 = graph.select %58, %60, %59 : tensor<2x3xi1>, tensor<2x3xf32>
  %62 = graph.log %61 : tensor<2x3xf32>
  %63 = graph.add %62, %53 : tensor<2x3xf32>
  %64 = graph.sub %63, %49 : tensor<2x3xf32>
  %65 = graph.reduce_mean %64, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %65 : tensor<f32>
}

// -----

// -mean(sum(one_hot(labels) * log_softmax(logits), -1)): the Flax MNIST
// example's loss (optax.softmax_cross_entropy of one-hot labels is the
// same), the iota folded to a constant.
// CHECK-LABEL: func.func @cross_entropy_one_hot
// CHECK-SAME: (%[[L:.+]]: tensor<2x3x4xf32>, %[[T:.+]]: tensor<2x3xi32>)
// CHECK-NEXT: %[[CE:.+]] = graph.softmax_cross_entropy %[[L]], %[[T]], reduction = mean
// CHECK-NEXT: return %[[CE]]
func.func @cross_entropy_one_hot(%logits: tensor<2x3x4xf32>, %labels: tensor<2x3xi32>) -> tensor<f32> {
  %0 = graph.constant dense<[[[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]], [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]]> : tensor<2x3x4xi32>
  %2 = graph.broadcast_in_dim %labels, dims = [0, 1] : (tensor<2x3xi32>) -> tensor<2x3x4xi32>
  %3 = graph.compare EQ, %2, %0 : tensor<2x3x4xi32>
  %4 = graph.convert %3 : (tensor<2x3x4xi1>) -> tensor<2x3x4xf32>
  %5 = graph.reduce_max %logits, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %6 = graph.broadcast_in_dim %5, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %7 = graph.sub %logits, %6 : tensor<2x3x4xf32>
  %8 = graph.exp %7 : tensor<2x3x4xf32>
  %9 = graph.reduce_sum %8, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %10 = graph.log %9 : tensor<2x3xf32>
  %11 = graph.broadcast_in_dim %10, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %12 = graph.sub %7, %11 : tensor<2x3x4xf32>
  %13 = graph.mul %4, %12 : tensor<2x3x4xf32>
  %14 = graph.reduce_sum %13, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %15 = graph.reduce_mean %14, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  %16 = graph.neg %15 : tensor<f32>
  return %16 : tensor<f32>
}

// -----

// Compared with a permutation of the classes, not an iota: no one-hot of
// the labels, so no cross-entropy of them.
// CHECK-LABEL: func.func @cross_entropy_not_one_hot_stays
// CHECK-NOT: graph.softmax_cross_entropy
// CHECK: graph.compare EQ
func.func @cross_entropy_not_one_hot_stays(%logits: tensor<2x3x4xf32>, %labels: tensor<2x3xi32>) -> tensor<f32> {
  %0 = graph.constant dense<[[[1, 0, 2, 3], [1, 0, 2, 3], [1, 0, 2, 3]], [[1, 0, 2, 3], [1, 0, 2, 3], [1, 0, 2, 3]]]> : tensor<2x3x4xi32>
  %2 = graph.broadcast_in_dim %labels, dims = [0, 1] : (tensor<2x3xi32>) -> tensor<2x3x4xi32>
  %3 = graph.compare EQ, %2, %0 : tensor<2x3x4xi32>
  %4 = graph.convert %3 : (tensor<2x3x4xi1>) -> tensor<2x3x4xf32>
  %5 = graph.reduce_max %logits, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %6 = graph.broadcast_in_dim %5, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %7 = graph.sub %logits, %6 : tensor<2x3x4xf32>
  %8 = graph.exp %7 : tensor<2x3x4xf32>
  %9 = graph.reduce_sum %8, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %10 = graph.log %9 : tensor<2x3xf32>
  %11 = graph.broadcast_in_dim %10, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %12 = graph.sub %7, %11 : tensor<2x3x4xf32>
  %13 = graph.mul %4, %12 : tensor<2x3x4xf32>
  %14 = graph.reduce_sum %13, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %15 = graph.reduce_mean %14, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  %16 = graph.neg %15 : tensor<f32>
  return %16 : tensor<f32>
}

// -----

// A Flax RMSNorm of a rank-1 input: the scale is no broadcast, so the
// scale is not moved out of the reciprocal (moving it would match again
// with x and the scale swapped, for ever); the pass ends, nothing fused.
// CHECK-LABEL: func.func @rms_norm_flax_rank1_ends
// CHECK-NOT: graph.rms_norm
// CHECK: graph.rsqrt
func.func @rms_norm_flax_rank1_ends(%x: tensor<32xf32>, %w: tensor<32xf32>) -> tensor<32xf32> {
  %eps = graph.constant dense<9.99999997E-7> : tensor<f32>
  %xx = graph.mul %x, %x : tensor<32xf32>
  %v = graph.reduce_mean %xx, dims = [0] : (tensor<32xf32>) -> tensor<f32>
  %ve = graph.add %v, %eps : tensor<f32>
  %r = graph.rsqrt %ve : tensor<f32>
  %rb = graph.broadcast_in_dim %r, dims = [] : (tensor<f32>) -> tensor<32xf32>
  %rw = graph.mul %rb, %w : tensor<32xf32>
  %y = graph.mul %x, %rw : tensor<32xf32>
  return %y : tensor<32xf32>
}

// -----

// The one-hot form with a vocabulary's iota (too large to fold: it stays
// graph.iota).
// CHECK-LABEL: func.func @cross_entropy_one_hot_iota
// CHECK-SAME: (%[[L:.+]]: tensor<2x8x8192xf32>, %[[T:.+]]: tensor<2x8xi64>)
// CHECK-NEXT: %[[CE:.+]] = graph.softmax_cross_entropy %[[L]], %[[T]], reduction = mean
// CHECK-NEXT: return %[[CE]]
func.func @cross_entropy_one_hot_iota(%logits: tensor<2x8x8192xf32>, %labels: tensor<2x8xi64>) -> tensor<f32> {
  %iota = graph.iota dim = 2 : tensor<2x8x8192xi64>
  %lb = graph.broadcast_in_dim %labels, dims = [0, 1] : (tensor<2x8xi64>) -> tensor<2x8x8192xi64>
  %eq = graph.compare EQ, %lb, %iota : tensor<2x8x8192xi64>
  %hot = graph.convert %eq : (tensor<2x8x8192xi1>) -> tensor<2x8x8192xf32>
  %m = graph.reduce_max %logits, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %mb = graph.broadcast_in_dim %m, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x8192xf32>
  %s = graph.sub %logits, %mb : tensor<2x8x8192xf32>
  %e = graph.exp %s : tensor<2x8x8192xf32>
  %sum = graph.reduce_sum %e, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %log = graph.log %sum : tensor<2x8xf32>
  %logb = graph.broadcast_in_dim %log, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x8192xf32>
  %logp = graph.sub %s, %logb : tensor<2x8x8192xf32>
  %prod = graph.mul %hot, %logp : tensor<2x8x8192xf32>
  %nll = graph.reduce_sum %prod, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %neg = graph.neg %nll : tensor<2x8xf32>
  %loss = graph.reduce_mean %neg, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Not one-hots of the positions' targets: [2, 1] targets broadcast over
// the sequence (each row's one target for all its positions), and a NaN
// fill around the summed terms (JAX gives NaN there; the fused loss would
// not). Neither is a cross-entropy.
// CHECK-LABEL: func.func @cross_entropy_one_hot_not_per_position_stays
// CHECK-NOT: graph.softmax_cross_entropy
// CHECK: return
func.func @cross_entropy_one_hot_not_per_position_stays(%logits: tensor<2x8x8192xf32>, %labels: tensor<2x1xi64>, %keep: tensor<2x8xi1>) -> (tensor<f32>, tensor<f32>) {
  %iota = graph.iota dim = 2 : tensor<2x8x8192xi64>
  %lb = graph.broadcast_in_dim %labels, dims = [0, 1] : (tensor<2x1xi64>) -> tensor<2x8x8192xi64>
  %eq = graph.compare EQ, %lb, %iota : tensor<2x8x8192xi64>
  %hot = graph.convert %eq : (tensor<2x8x8192xi1>) -> tensor<2x8x8192xf32>
  %m = graph.reduce_max %logits, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %mb = graph.broadcast_in_dim %m, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x8192xf32>
  %s = graph.sub %logits, %mb : tensor<2x8x8192xf32>
  %e = graph.exp %s : tensor<2x8x8192xf32>
  %sum = graph.reduce_sum %e, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %log = graph.log %sum : tensor<2x8xf32>
  %logb = graph.broadcast_in_dim %log, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x8192xf32>
  %logp = graph.sub %s, %logb : tensor<2x8x8192xf32>
  %prod = graph.mul %hot, %logp : tensor<2x8x8192xf32>
  %nll = graph.reduce_sum %prod, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %neg = graph.neg %nll : tensor<2x8xf32>
  %loss = graph.reduce_mean %neg, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
  // The same with per-position targets, under a NaN fill.
  %labels2 = graph.broadcast_in_dim %labels, dims = [0, 1] : (tensor<2x1xi64>) -> tensor<2x8xi64>
  %lb2 = graph.broadcast_in_dim %labels2, dims = [0, 1] : (tensor<2x8xi64>) -> tensor<2x8x8192xi64>
  %eq2 = graph.compare EQ, %lb2, %iota : tensor<2x8x8192xi64>
  %hot2 = graph.convert %eq2 : (tensor<2x8x8192xi1>) -> tensor<2x8x8192xf32>
  %s2 = graph.sub %logits, %mb : tensor<2x8x8192xf32>
  %e2 = graph.exp %s2 : tensor<2x8x8192xf32>
  %sum2 = graph.reduce_sum %e2, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %log2 = graph.log %sum2 : tensor<2x8xf32>
  %logb2 = graph.broadcast_in_dim %log2, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x8192xf32>
  %logp2 = graph.sub %s2, %logb2 : tensor<2x8x8192xf32>
  %prod2 = graph.mul %hot2, %logp2 : tensor<2x8x8192xf32>
  %nll2 = graph.reduce_sum %prod2, dims = [2] : (tensor<2x8x8192xf32>) -> tensor<2x8xf32>
  %nan = graph.constant dense<0x7FC00000> : tensor<2x8xf32>
  %guarded = graph.select %keep, %nll2, %nan : tensor<2x8xi1>, tensor<2x8xf32>
  %neg2 = graph.neg %guarded : tensor<2x8xf32>
  %loss2 = graph.reduce_mean %neg2, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
  return %loss, %loss2 : tensor<f32>, tensor<f32>
}

// -----

// Dropout of the probabilities (Hugging Face's eager GPT-2 and BERT in
// training mode: attn_dropout between the softmax and the product) is taken
// into the op: its mask is drawn by each element's index in [B, H, Sq, Sk],
// which is the op's.
// CHECK-LABEL: func.func @attention_dropout
// CHECK-NOT: graph.dropout
// CHECK-NOT: graph.softmax
// CHECK: %[[O:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01 {dropout = 1.000000e-01 : f64, seed = 42 : i64} :
// CHECK-NEXT: return %[[O]]
func.func @attention_dropout(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %quarter = graph.constant dense<0.25> : tensor<2x4x8x8xf32>
  %scaled = graph.mul %s, %quarter : tensor<2x4x8x8xf32>
  %p = graph.softmax %scaled, dim = 3 : tensor<2x4x8x8xf32>
  %d, %keep = graph.dropout %p, ratio = 0.1, seed = 42 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %d, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// BLOOM drops out the [b, h, q, k] probabilities, then folds the heads into
// the batch for its bmm: the same elements in the same order.
// CHECK-LABEL: func.func @attention_dropout_folded
// CHECK-NOT: graph.dropout
// CHECK: graph.attention {{.+}} {dropout = 5.000000e-01 : f64, seed = 3 : i64}
func.func @attention_dropout_folded(%q: tensor<8x8x16xf32>, %kt: tensor<8x16x8xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  %u = graph.reshape %s : (tensor<8x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %u, dim = 3 : tensor<2x4x8x8xf32>
  %d, %keep = graph.dropout %p, ratio = 0.5, seed = 3 : tensor<2x4x8x8xf32>
  %f = graph.reshape %d : (tensor<2x4x8x8xf32>) -> tensor<8x8x8xf32>
  %o = graph.dot_general %f, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// -----

// A dropout whose mask the program also reads stays, and so does the
// softmax: the op keeps no mask to give.
// CHECK-LABEL: func.func @attention_dropout_mask_read_stays
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
// CHECK: graph.dropout
func.func @attention_dropout_mask_read_stays(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x8xi1>) {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %s, dim = 3 : tensor<2x4x8x8xf32>
  %d, %keep = graph.dropout %p, ratio = 0.1, seed = 42 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %d, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o, %keep : tensor<2x4x8x16xf32>, tensor<2x4x8x8xi1>
}

// -----

// A term of zeros added to the scores (the dynamo exporter writes one for
// ViT) is no mask.
// CHECK-LABEL: func.func @attention_zero_term
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, scale = 2.500000e-01 :
func.func @attention_zero_term(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %quarter = graph.constant dense<0.25> : tensor<2x4x8x8xf32>
  %scaled = graph.mul %s, %quarter : tensor<2x4x8x8xf32>
  %zero = graph.constant dense<0.0> : tensor<2x4x8x8xf32>
  %z = graph.add %scaled, %zero : tensor<2x4x8x8xf32>
  %p = graph.softmax %z, dim = 3 : tensor<2x4x8x8xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Hugging Face's eager attention without an attention mask (GPT-2, as the
// TorchScript exporter writes it at any sequence length): the causal mask
// an additive term, 0 where key j <= query i and finfo.min elsewhere, its
// condition a compare of iotas broadcast to [S, S], too large to fold. The
// term becomes `causal` and no mask is left.
// CHECK-LABEL: func.func @attention_causal_additive_term
// CHECK-NOT: graph.select
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, scale = 1.250000e-01, causal :
func.func @attention_causal_additive_term(%q: tensor<2x4x64x16xf32>, %kt: tensor<2x4x16x64xf32>, %v: tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x64x16xf32>, tensor<2x4x16x64xf32>) -> tensor<2x4x64x64xf32>
  %eighth = graph.constant dense<0.125> : tensor<2x4x64x64xf32>
  %sc = graph.mul %s, %eighth : tensor<2x4x64x64xf32>
  %cols = graph.iota dim = 3 : tensor<1x1x1x64xi64>
  %rows = graph.iota dim = 2 : tensor<1x1x64x1xi64>
  %colsb = graph.broadcast_in_dim %cols, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xi64>) -> tensor<1x1x64x64xi64>
  %rowsb = graph.broadcast_in_dim %rows, dims = [0, 1, 2, 3] : (tensor<1x1x64x1xi64>) -> tensor<1x1x64x64xi64>
  %seen = graph.compare LE, %colsb, %rowsb : tensor<1x1x64x64xi64>
  %seenb = graph.broadcast_in_dim %seen, dims = [0, 1, 2, 3] : (tensor<1x1x64x64xi1>) -> tensor<2x1x64x64xi1>
  %zero = graph.constant dense<0.0> : tensor<2x1x64x64xf32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<2x1x64x64xf32>
  %term = graph.select %seenb, %zero, %min : tensor<2x1x64x64xi1>, tensor<2x1x64x64xf32>
  %termb = graph.broadcast_in_dim %term, dims = [0, 1, 2, 3] : (tensor<2x1x64x64xf32>) -> tensor<2x4x64x64xf32>
  %m = graph.add %sc, %termb : tensor<2x4x64x64xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x64x64xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x64x64xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32>
  return %o : tensor<2x4x64x16xf32>
}

// -----

// A select-style causal mask (masked_fill) whose condition is too large to
// fold to a constant: causal, as when it folds (@attention_causal).
// CHECK-LABEL: func.func @attention_causal_unfolded_condition
// CHECK-NOT: graph.select
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, scale = 1.250000e-01, causal :
func.func @attention_causal_unfolded_condition(%q: tensor<2x4x64x16xf32>, %kt: tensor<2x4x16x64xf32>, %v: tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32> {
  %s = graph.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x64x16xf32>, tensor<2x4x16x64xf32>) -> tensor<2x4x64x64xf32>
  %eighth = graph.constant dense<0.125> : tensor<2x4x64x64xf32>
  %sc = graph.mul %s, %eighth : tensor<2x4x64x64xf32>
  %cols = graph.iota dim = 1 : tensor<1x64xi64>
  %rows = graph.iota dim = 0 : tensor<64x1xi64>
  %colsb = graph.broadcast_in_dim %cols, dims = [0, 1] : (tensor<1x64xi64>) -> tensor<64x64xi64>
  %rowsb = graph.broadcast_in_dim %rows, dims = [0, 1] : (tensor<64x1xi64>) -> tensor<64x64xi64>
  %upper = graph.compare GT, %colsb, %rowsb : tensor<64x64xi64>
  %upperb = graph.broadcast_in_dim %upper, dims = [2, 3] : (tensor<64x64xi1>) -> tensor<2x4x64x64xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<2x4x64x64xf32>
  %m = graph.select %upperb, %ninf, %sc : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>
  %p = graph.softmax %m, dim = 3 : tensor<2x4x64x64xf32>
  %o = graph.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<2x4x64x64xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32>
  return %o : tensor<2x4x64x16xf32>
}

// -----

// Additive terms that are not causal masks stay masks: a causal condition
// with more queries than keys (rows 0 to 3 see no key: the fill's
// uniform weights there, not causal attention's zeros), a fill that does
// not mask (-1), and a condition that is not causal (each query sees the
// keys before it, not itself).
// CHECK-LABEL: func.func @attention_additive_terms_not_causal
// CHECK-COUNT-3: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} mask %{{[^ ,]+}}, scale = 1.000000e+00 :
// CHECK-NOT: causal
func.func @attention_additive_terms_not_causal(%q: tensor<1x2x40x8xf32>, %k: tensor<1x2x36x8xf32>, %kk: tensor<1x2x40x8xf32>) -> (tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>) {
  %zero36 = graph.constant dense<0.0> : tensor<40x36xf32>
  %min36 = graph.constant dense<-3.40282347E+38> : tensor<40x36xf32>
  %cols36 = graph.iota dim = 1 : tensor<1x36xi64>
  %rows36 = graph.iota dim = 0 : tensor<40x1xi64>
  %four = graph.constant dense<4> : tensor<40x1xi64>
  %rows36s = graph.sub %rows36, %four : tensor<40x1xi64>
  %c36 = graph.broadcast_in_dim %cols36, dims = [0, 1] : (tensor<1x36xi64>) -> tensor<40x36xi64>
  %r36 = graph.broadcast_in_dim %rows36s, dims = [0, 1] : (tensor<40x1xi64>) -> tensor<40x36xi64>
  %seen36 = graph.compare LE, %c36, %r36 : tensor<40x36xi64>
  %t1 = graph.select %seen36, %zero36, %min36 : tensor<40x36xi1>, tensor<40x36xf32>
  %t1b = graph.broadcast_in_dim %t1, dims = [2, 3] : (tensor<40x36xf32>) -> tensor<1x2x40x36xf32>
  %s1 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x40x8xf32>, tensor<1x2x36x8xf32>) -> tensor<1x2x40x36xf32>
  %m1 = graph.add %s1, %t1b : tensor<1x2x40x36xf32>
  %p1 = graph.softmax %m1, dim = 3 : tensor<1x2x40x36xf32>
  %o1 = graph.dot_general %p1, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x40x36xf32>, tensor<1x2x36x8xf32>) -> tensor<1x2x40x8xf32>

  %zero = graph.constant dense<0.0> : tensor<40x40xf32>
  %minus1 = graph.constant dense<-1.0> : tensor<40x40xf32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<40x40xf32>
  %cols = graph.iota dim = 1 : tensor<1x40xi64>
  %rows = graph.iota dim = 0 : tensor<40x1xi64>
  %c = graph.broadcast_in_dim %cols, dims = [0, 1] : (tensor<1x40xi64>) -> tensor<40x40xi64>
  %r = graph.broadcast_in_dim %rows, dims = [0, 1] : (tensor<40x1xi64>) -> tensor<40x40xi64>
  %seen = graph.compare LE, %c, %r : tensor<40x40xi64>
  %t2 = graph.select %seen, %zero, %minus1 : tensor<40x40xi1>, tensor<40x40xf32>
  %t2b = graph.broadcast_in_dim %t2, dims = [2, 3] : (tensor<40x40xf32>) -> tensor<1x2x40x40xf32>
  %s2 = graph.dot_general %q, %kk, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>) -> tensor<1x2x40x40xf32>
  %m2 = graph.add %s2, %t2b : tensor<1x2x40x40xf32>
  %p2 = graph.softmax %m2, dim = 3 : tensor<1x2x40x40xf32>
  %o2 = graph.dot_general %p2, %kk, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x40x40xf32>, tensor<1x2x40x8xf32>) -> tensor<1x2x40x8xf32>

  %before = graph.compare LT, %c, %r : tensor<40x40xi64>
  %t3 = graph.select %before, %zero, %min : tensor<40x40xi1>, tensor<40x40xf32>
  %t3b = graph.broadcast_in_dim %t3, dims = [2, 3] : (tensor<40x40xf32>) -> tensor<1x2x40x40xf32>
  %s3 = graph.dot_general %q, %kk, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>) -> tensor<1x2x40x40xf32>
  %m3 = graph.add %s3, %t3b : tensor<1x2x40x40xf32>
  %p3 = graph.softmax %m3, dim = 3 : tensor<1x2x40x40xf32>
  %o3 = graph.dot_general %p3, %kk, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x40x40xf32>, tensor<1x2x40x8xf32>) -> tensor<1x2x40x8xf32>
  return %o1, %o2, %o3 : tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>
}

// -----

// The fill on the condition's true side (masked where key j > i + Sk - Sq),
// with more keys than queries (a cached prefix): causal.
// CHECK-LABEL: func.func @attention_causal_additive_term_more_keys
// CHECK-NOT: graph.select
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, scale = 1.000000e+00, causal :
func.func @attention_causal_additive_term_more_keys(%q: tensor<1x2x40x8xf32>, %k: tensor<1x2x48x8xf32>) -> tensor<1x2x40x8xf32> {
  %s = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x40x8xf32>, tensor<1x2x48x8xf32>) -> tensor<1x2x40x48xf32>
  %cols = graph.iota dim = 1 : tensor<1x48xi64>
  %rows = graph.iota dim = 0 : tensor<40x1xi64>
  %eight = graph.constant dense<8> : tensor<40x1xi64>
  %last = graph.add %rows, %eight : tensor<40x1xi64>
  %c = graph.broadcast_in_dim %cols, dims = [0, 1] : (tensor<1x48xi64>) -> tensor<40x48xi64>
  %r = graph.broadcast_in_dim %last, dims = [0, 1] : (tensor<40x1xi64>) -> tensor<40x48xi64>
  %after = graph.compare GT, %c, %r : tensor<40x48xi64>
  %ninf = graph.constant dense<0xFF800000> : tensor<40x48xf32>
  %zero = graph.constant dense<0.0> : tensor<40x48xf32>
  %term = graph.select %after, %ninf, %zero : tensor<40x48xi1>, tensor<40x48xf32>
  %termb = graph.broadcast_in_dim %term, dims = [2, 3] : (tensor<40x48xf32>) -> tensor<1x2x40x48xf32>
  %m = graph.add %s, %termb : tensor<1x2x40x48xf32>
  %p = graph.softmax %m, dim = 3 : tensor<1x2x40x48xf32>
  %o = graph.dot_general %p, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x40x48xf32>, tensor<1x2x48x8xf32>) -> tensor<1x2x40x8xf32>
  return %o : tensor<1x2x40x8xf32>
}

// -----

// More terms that stay masks: a +inf fill (every row with a masked key
// becomes NaN, which causal attention would not give), and a causal
// condition broadcast over the heads and keys (dims [1, 3]): each [q, k]
// slice is then constant along q, not causal, though the condition is.
// CHECK-LABEL: func.func @attention_additive_terms_not_causal_either
// CHECK-COUNT-2: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} mask %{{[^ ,]+}}, scale = 1.000000e+00 :
// CHECK-NOT: causal
func.func @attention_additive_terms_not_causal_either(%q: tensor<1x40x40x8xf32>, %k: tensor<1x40x40x8xf32>) -> (tensor<1x40x40x8xf32>, tensor<1x40x40x8xf32>) {
  %cols = graph.iota dim = 1 : tensor<1x40xi64>
  %rows = graph.iota dim = 0 : tensor<40x1xi64>
  %c = graph.broadcast_in_dim %cols, dims = [0, 1] : (tensor<1x40xi64>) -> tensor<40x40xi64>
  %r = graph.broadcast_in_dim %rows, dims = [0, 1] : (tensor<40x1xi64>) -> tensor<40x40xi64>
  %seen = graph.compare LE, %c, %r : tensor<40x40xi64>
  %zero = graph.constant dense<0.0> : tensor<40x40xf32>
  %pinf = graph.constant dense<0x7F800000> : tensor<40x40xf32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<40x40xf32>

  %t1 = graph.select %seen, %zero, %pinf : tensor<40x40xi1>, tensor<40x40xf32>
  %t1b = graph.broadcast_in_dim %t1, dims = [2, 3] : (tensor<40x40xf32>) -> tensor<1x40x40x40xf32>
  %s1 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x40x40x8xf32>, tensor<1x40x40x8xf32>) -> tensor<1x40x40x40xf32>
  %m1 = graph.add %s1, %t1b : tensor<1x40x40x40xf32>
  %p1 = graph.softmax %m1, dim = 3 : tensor<1x40x40x40xf32>
  %o1 = graph.dot_general %p1, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x40x40x40xf32>, tensor<1x40x40x8xf32>) -> tensor<1x40x40x8xf32>

  %t2 = graph.select %seen, %zero, %min : tensor<40x40xi1>, tensor<40x40xf32>
  %t2b = graph.broadcast_in_dim %t2, dims = [1, 3] : (tensor<40x40xf32>) -> tensor<1x40x40x40xf32>
  %s2 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x40x40x8xf32>, tensor<1x40x40x8xf32>) -> tensor<1x40x40x40xf32>
  %m2 = graph.add %s2, %t2b : tensor<1x40x40x40xf32>
  %p2 = graph.softmax %m2, dim = 3 : tensor<1x40x40x40xf32>
  %o2 = graph.dot_general %p2, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x40x40x40xf32>, tensor<1x40x40x8xf32>) -> tensor<1x40x40x8xf32>
  return %o1, %o2 : tensor<1x40x40x8xf32>, tensor<1x40x40x8xf32>
}

// -----

// JAX's causal mask (jnp.tril of ones, then jnp.where with finfo.min) past
// the folders' limit (300 x 300 > 65,536 elements): iota + 0 >= iota, a
// select of true and false, then the select of the scores. Causal.
// CHECK-LABEL: func.func @attention_causal_jax_tril
// CHECK-NOT: graph.select
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, scale = 2.500000e-01, causal :
func.func @attention_causal_jax_tril(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>) -> tensor<1x2x300x16xf32> {
  %s = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>) -> tensor<1x2x300x300xf32>
  %quarter = graph.constant dense<0.25> : tensor<1x2x300x300xf32>
  %sc = graph.mul %s, %quarter : tensor<1x2x300x300xf32>
  %rows = graph.iota dim = 0 : tensor<300x300xi32>
  %zero = graph.constant dense<0> : tensor<i32>
  %zerob = graph.broadcast_in_dim %zero, dims = [] : (tensor<i32>) -> tensor<300x300xi32>
  %rows0 = graph.add %rows, %zerob : tensor<300x300xi32>
  %cols = graph.iota dim = 1 : tensor<300x300xi32>
  %lower = graph.compare GE, %rows0, %cols : tensor<300x300xi32>
  %true = graph.constant dense<true> : tensor<i1>
  %false = graph.constant dense<false> : tensor<i1>
  %trueb = graph.broadcast_in_dim %true, dims = [] : (tensor<i1>) -> tensor<300x300xi1>
  %falseb = graph.broadcast_in_dim %false, dims = [] : (tensor<i1>) -> tensor<300x300xi1>
  %tril = graph.select %lower, %trueb, %falseb : tensor<300x300xi1>, tensor<300x300xi1>
  %trilb = graph.broadcast_in_dim %tril, dims = [2, 3] : (tensor<300x300xi1>) -> tensor<1x2x300x300xi1>
  %min = graph.constant dense<-3.40282347E+38> : tensor<1x2x300x300xf32>
  %m = graph.select %trilb, %sc, %min : tensor<1x2x300x300xi1>, tensor<1x2x300x300xf32>
  %p = graph.softmax %m, dim = 3 : tensor<1x2x300x300xf32>
  %o = graph.dot_general %p, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x300x300xf32>, tensor<1x2x300x16xf32>) -> tensor<1x2x300x16xf32>
  return %o : tensor<1x2x300x16xf32>
}

// -----

// scaled_dot_product_attention(is_causal=True) as PyTorch's TorchScript
// exporter writes it (Hugging Face's "sdpa" attention without an
// attention mask): a constant additive term, 0 on and below the diagonal
// and -inf above. Causal; a constant with one seen key filled is not.
// CHECK-LABEL: func.func @attention_causal_constant_term
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, scale = 1.000000e+00, causal :
// CHECK: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} mask %{{[^ ,]+}}, scale = 1.000000e+00 :
func.func @attention_causal_constant_term(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %causal = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %causalb = graph.broadcast_in_dim %causal, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s1 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m1 = graph.add %s1, %causalb : tensor<1x2x4x4xf32>
  %p1 = graph.softmax %m1, dim = 3 : tensor<1x2x4x4xf32>
  %o1 = graph.dot_general %p1, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %other = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0xFF800000, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %otherb = graph.broadcast_in_dim %other, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s2 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m2 = graph.add %s2, %otherb : tensor<1x2x4x4xf32>
  %p2 = graph.softmax %m2, dim = 3 : tensor<1x2x4x4xf32>
  %o2 = graph.dot_general %p2, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o1, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// JAX's tril(k=1) past the folders' limit: iota + 1 >= iota lets each
// query see the key after it, which is not causal; and i8 iotas, which
// wrap past 127 (300 positions), do not compare as positions. Both stay
// masks.
// CHECK-LABEL: func.func @attention_jax_tril_not_causal
// CHECK-COUNT-2: graph.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} mask %{{[^ ,]+}}, scale = 1.000000e+00 :
// CHECK-NOT: causal
func.func @attention_jax_tril_not_causal(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>) {
  %min = graph.constant dense<-3.40282347E+38> : tensor<1x2x300x300xf32>
  %rows = graph.iota dim = 0 : tensor<300x300xi32>
  %one = graph.constant dense<1> : tensor<i32>
  %oneb = graph.broadcast_in_dim %one, dims = [] : (tensor<i32>) -> tensor<300x300xi32>
  %rows1 = graph.add %rows, %oneb : tensor<300x300xi32>
  %cols = graph.iota dim = 1 : tensor<300x300xi32>
  %upto = graph.compare GE, %rows1, %cols : tensor<300x300xi32>
  %uptob = graph.broadcast_in_dim %upto, dims = [2, 3] : (tensor<300x300xi1>) -> tensor<1x2x300x300xi1>
  %s1 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>) -> tensor<1x2x300x300xf32>
  %m1 = graph.select %uptob, %s1, %min : tensor<1x2x300x300xi1>, tensor<1x2x300x300xf32>
  %p1 = graph.softmax %m1, dim = 3 : tensor<1x2x300x300xf32>
  %o1 = graph.dot_general %p1, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x300x300xf32>, tensor<1x2x300x16xf32>) -> tensor<1x2x300x16xf32>
  %rows8 = graph.iota dim = 0 : tensor<300x300xi8>
  %cols8 = graph.iota dim = 1 : tensor<300x300xi8>
  %lower8 = graph.compare GE, %rows8, %cols8 : tensor<300x300xi8>
  %lower8b = graph.broadcast_in_dim %lower8, dims = [2, 3] : (tensor<300x300xi1>) -> tensor<1x2x300x300xi1>
  %s2 = graph.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
         : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>) -> tensor<1x2x300x300xf32>
  %m2 = graph.select %lower8b, %s2, %min : tensor<1x2x300x300xi1>, tensor<1x2x300x300xf32>
  %p2 = graph.softmax %m2, dim = 3 : tensor<1x2x300x300xf32>
  %o2 = graph.dot_general %p2, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
         : (tensor<1x2x300x300xf32>, tensor<1x2x300x16xf32>) -> tensor<1x2x300x16xf32>
  return %o1, %o2 : tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>
}
