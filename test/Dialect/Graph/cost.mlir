// FLOP and byte counts of the cost interface (see GraphCost.cpp).
// RUN: trainc-opt %s --trainc-test-op-cost -verify-diagnostics -split-input-file

func.func @elementwise(%x: tensor<4x8xf32>, %h: tensor<4x8xbf16>) {
  // One FLOP per element; 3 tensors of 128 bytes.
  // expected-remark@+1 {{flops = 32, bytes = 384}}
  %0 = graph.add %x, %x : tensor<4x8xf32>
  // 16-bit elements: 3 tensors of 64 bytes.
  // expected-remark@+1 {{flops = 32, bytes = 192}}
  %1 = graph.mul %h, %h : tensor<4x8xbf16>
  // A reshape is a view.
  // expected-remark@+1 {{flops = 0, bytes = 0}}
  %2 = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>
  // expected-remark@+1 {{flops = 0, bytes = 256}}
  %3 = graph.transpose %x, permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @matmul(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>) {
  // 2 * (2 * 4 * 16 results) * 8 contraction = 2048; (64 + 256 + 128) * 4 bytes.
  // expected-remark@+1 {{flops = 2048, bytes = 1792}}
  %0 = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  // One add per input element.
  // expected-remark@+1 {{flops = 64, bytes = 288}}
  %1 = graph.reduce_sum %a, dims = [2] : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
  // log2(8) = 3 comparisons per element; 256 bytes in, 512 out.
  // expected-remark@+1 {{flops = 192, bytes = 768}}
  %2 = graph.argsort %a, axis = 2, descending = false : (tensor<2x4x8xf32>) -> tensor<2x4x8xi64>
  // Patches move data: 64 elements in (256 bytes), 4 x 3 x 2 x 3 = 72 out.
  // expected-remark@+1 {{flops = 0, bytes = 544}}
  %3 = graph.extract_patches %a, kernel = [3], strides = [3], dilation = [1], pad_low = [0], pad_high = [1] : (tensor<2x4x8xf32>) -> tensor<4x3x2x3xf32>
  // At most one add per patch element.
  // expected-remark@+1 {{flops = 72, bytes = 544}}
  %4 = graph.fold_patches %3, kernel = [3], strides = [3], dilation = [1], pad_low = [0], pad_high = [1], spatial = [8] : (tensor<4x3x2x3xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @matmul_bias(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %c: tensor<16xf32>) {
  // The product's 2048 and one add per result: 2048 + 128; the bias's 64 bytes more.
  // expected-remark@+1 {{flops = 2176, bytes = 1856}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @matmul_bias_gelu(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %c: tensor<16xf32>) {
  // matmul_bias's 2176 and 9 per tanh GELU of the 128 results: 3328; the
  // pre-activation's 512 bytes more.
  // expected-remark@+1 {{flops = 3328, bytes = 2368}}
  %0, %1 = graph.dot_general_bias_gelu %a, %b, %c, batching_dims = [0] x [0], contracting_dims = [2] x [1], approximation = tanh
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @matmul_gelu_grad(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %p: tensor<2x4x16xf32>) {
  // The product's 2048 and 16 per tanh GELU gradient of the 128 results:
  // 4096; the pre-activation read, 512 bytes more than a dot_general.
  // expected-remark@+1 {{flops = 4096, bytes = 2304}}
  %0 = graph.dot_general_gelu_grad %a, %b, %p, batching_dims = [0] x [0], contracting_dims = [2] x [1], approximation = tanh
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @attention(%q: tensor<1x2x4x8xf32>) {
  // scores = 1*2*4*4 = 32: 2*32*8 (q k^T) + 2*32*8 (p v) + 32*(1 scale + 5 softmax) = 1216.
  // expected-remark@+1 {{flops = 1216, bytes = 1024}}
  %0 = graph.attention %q, %q, %q, scale = 0.35, causal
         : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  // A soft cap adds a divide, a tanh and a multiply per score: 1216 + 3*32.
  // expected-remark@+1 {{flops = 1312, bytes = 1024}}
  %1 = graph.attention %q, %q, %q, scale = 0.35, causal {softcap = 50.0}
         : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  // Dropout adds graph.dropout's draw, test and scale per score: 1216 + 3*32.
  // expected-remark@+1 {{flops = 1312, bytes = 1024}}
  %2 = graph.attention %q, %q, %q, scale = 0.35, causal {dropout = 0.1, seed = 1}
         : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @loss(%l: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // 4 per logit (4 * 40) + 2 per row (2 * 4) = 168; bytes 160 + 32 + 4.
  // expected-remark@+1 {{flops = 168, bytes = 196}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}
