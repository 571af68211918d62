// The sharding rule of every graph op (GraphSharding.cpp), in Shardy's
// notation: each operand's and result's dimensions name their factor ("_":
// none, the dimension stays whole); reduction factors appear only in operands.
// RUN: trainc-opt %s --trainc-test-sharding-rules -verify-diagnostics -split-input-file

func.func @elementwise(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %n: tensor<4x8xi64>) {
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %0 = graph.neg %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %1 = graph.abs %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %2 = graph.exp %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %3 = graph.log %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %4 = graph.tanh %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %5 = graph.erf %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %6 = graph.sqrt %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %7 = graph.rsqrt %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %8 = graph.cos %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %9 = graph.sin %x : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %10 = graph.add %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %11 = graph.sub %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %12 = graph.mul %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %13 = graph.div %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %14 = graph.pow %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %15 = graph.max %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %16 = graph.min %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %17 = graph.compare LT, %x, %y : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %18 = graph.select %17, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %19 = graph.convert %n : (tensor<4x8xi64>) -> tensor<4x8xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=4, j=8}}
  %20 = graph.gelu %x, approximation = erf : tensor<4x8xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=4, j=8}}
  %21 = graph.gelu_grad %x, %y, approximation = tanh : tensor<4x8xf32>
  // The softmax axis is whole.
  // expected-remark@+1 {{([i, _]) -> ([i, _]) sizes i=4}}
  %22 = graph.softmax %x, dim = 1 : tensor<4x8xf32>
  // Dropout draws its mask from each element's index in the whole tensor,
  // which `blocks` gives for a block of any one dimension.
  // expected-remark@+1 {{([i, j]) -> ([i, j], [i, j]) sizes i=4, j=8}}
  %y2, %mask = graph.dropout %x, ratio = 0.1, seed = 7 : tensor<4x8xf32>
  return
}

// -----

func.func @adamw(%p: tensor<4x8xf32>, %q: tensor<4x8xf32>, %r: tensor<8xf32>, %s: tensor<f32>) {
  // The scalar operands have no dimensions.
  // expected-remark@+1 {{([i, j], [i, j], [i, j], [i, j], [], [], [], []) -> ([i, j], [i, j], [i, j]) sizes i=4, j=8}}
  %0:3 = graph.adamw_update params(%p), grads(%p), exp_avgs(%p), exp_avg_sqs(%p), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8
         : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  // The parameters of a group share no factor, even of one shape.
  // expected-remark@+1 {{([i, j], [k, l], [i, j], [k, l], [i, j], [k, l], [i, j], [k, l], [], [], [], []) -> ([i, j], [k, l], [i, j], [k, l], [i, j], [k, l]) sizes i=4, j=8, k=4, l=8}}
  %1:6 = graph.adamw_update params(%p, %q), grads(%p, %q), exp_avgs(%p, %q), exp_avg_sqs(%p, %q), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8
         : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
         -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  // Every dimension is summed over.
  // expected-remark@+1 {{([i, j], [k]) -> ([]) sizes i=4, j=8, k=8; reduction i, j, k}}
  %2 = graph.sum_of_squares %p, %r : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f64>
  return
}

// -----

func.func @linear(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %w: tensor<16x8xf32>, %c: tensor<16xf32>) {
  // expected-remark@+1 {{([i, k, j], [i, j, l]) -> ([i, k, l]) sizes i=2, j=8, k=4, l=16; reduction j}}
  %0 = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  // expected-remark@+1 {{([j, k, i], [l, i]) -> ([j, k, l]) sizes i=8, j=2, k=4, l=16; reduction i}}
  %1 = graph.dot_general %a, %w, batching_dims = [] x [], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // With a bias: it follows rhs's free dimension, and the contraction stays
  // whole (each partial product would get the bias).
  // expected-remark@+1 {{([i, j, _], [k, _], [k]) -> ([i, j, k]) sizes i=2, j=4, k=16}}
  %b1 = graph.dot_general_bias %a, %w, %c, batching_dims = [] x [], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  // Summed dimensions are reduction factors ...
  // expected-remark@+1 {{([i, j, k]) -> ([j]) sizes i=2, j=4, k=8; reduction i, k}}
  %2 = graph.reduce_sum %a, dims = [0, 2] : (tensor<2x4x8xf32>) -> tensor<4xf32>
  // ... a maximum's and a mean's are whole.
  // expected-remark@+1 {{([i, j, _]) -> ([i, j]) sizes i=2, j=4}}
  %3 = graph.reduce_max %a, dims = [2] : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
  // expected-remark@+1 {{([i, _, j]) -> ([i, j]) sizes i=2, j=8}}
  %4 = graph.reduce_mean %a, dims = [1] : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @data_movement(%z: tensor<2x0xf32>, %x: tensor<2x32x64xf32>, %b: tensor<64xf32>, %c: tensor<1x64xf32>, %t: tensor<128x64xf32>, %i: tensor<2x32xi64>, %img: tensor<2x4x8x8xf32>) {
  // expected-remark@+1 {{([k]) -> ([i, j, k]) sizes i=2, j=32, k=64}}
  %0 = graph.broadcast_in_dim %b, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
  // A broadcast size-1 dimension has no factor.
  // expected-remark@+1 {{([_, k]) -> ([i, j, k]) sizes i=2, j=32, k=64}}
  %1 = graph.broadcast_in_dim %c, dims = [1, 2] : (tensor<1x64xf32>) -> tensor<2x32x64xf32>
  // A split dimension carries the factor of its major part (4 heads of 16).
  // expected-remark@+1 {{([i, j, k]) -> ([i, j, k, _]) sizes i=2, j=32, k=4}}
  %2 = graph.reshape %x : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
  // Merged [2, 32] and [4, 16]: the major parts, 2 and 4.
  // expected-remark@+1 {{([i, _, j, _]) -> ([i, j]) sizes i=2, j=4}}
  %3 = graph.reshape %2 : (tensor<2x32x4x16xf32>) -> tensor<64x64xf32>
  // Size-1 dimensions are skipped; [32, 64] -> [2048] shares gcd(32, 2048) = 32.
  // expected-remark@+1 {{([i, j, _]) -> ([_, i, j]) sizes i=2, j=32}}
  %4 = graph.reshape %x : (tensor<2x32x64xf32>) -> tensor<1x2x2048xf32>
  // An empty tensor has nothing to split.
  // expected-remark@+1 {{([_, _]) -> ([_, _])}}
  %e = graph.reshape %z : (tensor<2x0xf32>) -> tensor<0x5xf32>
  // expected-remark@+1 {{([i, k, j, l]) -> ([i, j, k, l]) sizes i=2, j=4, k=32, l=16}}
  %5 = graph.transpose %2, permutation = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
  // A sliced dimension is whole.
  // expected-remark@+1 {{([i, j, _]) -> ([i, j, _]) sizes i=2, j=32}}
  %6 = graph.slice %x, start = [0, 0, 16], limit = [2, 32, 48], strides = [1, 1, 1] : (tensor<2x32x64xf32>) -> tensor<2x32x32xf32>
  // The joined dimension is whole.
  // expected-remark@+1 {{([i, j, _], [i, j, _]) -> ([i, j, _]) sizes i=2, j=32}}
  %7 = graph.concatenate(%x, %x), dim = 2 : (tensor<2x32x64xf32>, tensor<2x32x64xf32>) -> tensor<2x32x128xf32>
  // Any rank may need any row of the table: the looked-up dimension is whole.
  // expected-remark@+1 {{([_, k], [i, j]) -> ([i, j, k]) sizes i=2, j=32, k=64}}
  %8 = graph.gather %t[%i], axis = 0 : (tensor<128x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
  // Index dimensions are summed into the rows: reduction factors.
  // expected-remark@+1 {{([i, j, k], [i, j]) -> ([_, k]) sizes i=2, j=32, k=64; reduction i, j}}
  %9 = graph.scatter_add %x[%i], axis = 0 : (tensor<2x32x64xf32>, tensor<2x32xi64>) -> tensor<128x64xf32>
  // The counted dimension is whole.
  // expected-remark@+1 {{() -> ([i, _]) sizes i=4}}
  %10 = graph.iota dim = 1 : tensor<4x8xi64>
  // The sorted dimension is whole.
  // expected-remark@+1 {{([i, _, j]) -> ([i, _, j]) sizes i=2, j=64}}
  %s = graph.argsort %x, axis = 1, descending = false : (tensor<2x32x64xf32>) -> tensor<2x32x64xi64>
  // Patches: the batch and the channels split; windows read neighbours.
  // expected-remark@+1 {{([i, j, _, _]) -> ([j, _, _, i, _, _]) sizes i=2, j=4}}
  %p = graph.extract_patches %img, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1] : (tensor<2x4x8x8xf32>) -> tensor<4x3x3x2x8x8xf32>
  // expected-remark@+1 {{([j, _, _, i, _, _]) -> ([i, j, _, _]) sizes i=2, j=4}}
  %f = graph.fold_patches %p, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1], spatial = [8, 8] : (tensor<4x3x3x2x8x8xf32>) -> tensor<2x4x8x8xf32>
  // A splat splits anywhere; other constants are whole.
  // expected-remark@+1 {{() -> ([i, j]) sizes i=4, j=8}}
  %11 = graph.constant dense<1.0> : tensor<4x8xf32>
  // expected-remark@+1 {{() -> ([_])}}
  %12 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return
}

// -----

func.func @norms(%x: tensor<8x32x64xf32>, %g: tensor<64xf32>) {
  // Normalized dimensions, scale and bias are whole.
  // expected-remark@+1 {{([i, j, _], [_], [_]) -> ([i, j, _]) sizes i=8, j=32}}
  %0 = graph.layer_norm %x scale %g bias %g, axis = 2, epsilon = 1.0e-5
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
  // expected-remark@+1 {{([i, _, _]) -> ([i, _, _]) sizes i=8}}
  %1 = graph.rms_norm %x, axis = 1, epsilon = 1.0e-6
         : (tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  // expected-remark@+1 {{([i, j, _], [_], [i, j, _]) -> ([i, j, _], [i, j, _]) sizes i=8, j=32}}
  %2:2 = graph.norm_grad %x scale %g, %x, axis = 2, epsilon = 1.0e-5, centered = true
         : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>)
  return
}

// -----

func.func @attention(%q: tensor<2x8x32x16xf32>, %kv: tensor<2x4x32x16xf32>, %m: tensor<1x1x32x32xf32>,
                     %qs: tensor<2x32x8x16xf32>, %kvs: tensor<2x32x4x16xf32>) {
  // Batch and key/value heads (8 query heads in 4 groups: the major part); masks of size-1 dimensions have none.
  // expected-remark@+1 {{([i, j, _, _], [i, j, _, _], [i, j, _, _], [_, _, _, _]) -> ([i, j, _, _]) sizes i=2, j=4}}
  %0 = graph.attention %q, %kv, %kv mask %m, scale = 0.25
         : (tensor<2x8x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>, tensor<1x1x32x32xf32>) -> tensor<2x8x32x16xf32>
  // expected-remark@+1 {{([i, j, _, _], [i, j, _, _], [i, j, _, _], [i, j, _, _]) -> ([i, j, _, _], [i, j, _, _], [i, j, _, _]) sizes i=2, j=4}}
  %1:3 = graph.attention_grad %q, %kv, %kv, %q, scale = 0.25, causal
         : (tensor<2x8x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x8x32x16xf32>)
         -> (tensor<2x8x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>)
  // Tensors stored [B, S, H, D] (seq_major) have their heads in dimension 2.
  // expected-remark@+1 {{([i, _, j, _], [i, j, _, _], [i, _, j, _], [_, _, _, _]) -> ([i, _, j, _]) sizes i=2, j=4}}
  %2 = graph.attention %qs, %kv, %kvs mask %m, scale = 0.25 {seq_major = array<i64: 0, 2, 3>}
         : (tensor<2x32x8x16xf32>, tensor<2x4x32x16xf32>, tensor<2x32x4x16xf32>, tensor<1x1x32x32xf32>) -> tensor<2x32x8x16xf32>
  // expected-remark@+1 {{([i, _, j, _], [i, _, j, _], [i, _, j, _], [i, _, j, _]) -> ([i, j, _, _], [i, _, j, _], [i, j, _, _]) sizes i=2, j=4}}
  %3:3 = graph.attention_grad %qs, %kvs, %kvs, %qs, scale = 0.25, causal {seq_major = array<i64: 0, 1, 2, 3, 5>}
         : (tensor<2x32x8x16xf32>, tensor<2x32x4x16xf32>, tensor<2x32x4x16xf32>, tensor<2x32x8x16xf32>)
         -> (tensor<2x8x32x16xf32>, tensor<2x32x4x16xf32>, tensor<2x4x32x16xf32>)
  // With dropout, the heads only: head_blocks numbers a block of the heads
  // in the whole, but a block of the batch would number its probabilities
  // from 0 and draw another mask.
  // expected-remark@+1 {{([_, i, _, _], [_, i, _, _], [_, i, _, _]) -> ([_, i, _, _]) sizes i=4}}
  %4 = graph.attention %q, %kv, %kv, scale = 0.25 {dropout = 0.1, seed = 3}
         : (tensor<2x8x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>) -> tensor<2x8x32x16xf32>
  // expected-remark@+1 {{([_, i, _, _], [_, i, _, _], [_, i, _, _], [_, i, _, _]) -> ([_, i, _, _], [_, i, _, _], [_, i, _, _]) sizes i=4}}
  %5:3 = graph.attention_grad %q, %kv, %kv, %q, scale = 0.25 {dropout = 0.1, seed = 3}
         : (tensor<2x8x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x8x32x16xf32>)
         -> (tensor<2x8x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>)
  return
}

// -----

// Heads already split over the tensor axis (head_blocks), or a dropout's
// dimension (blocks): whole, since a block of a block would need a second
// axis's coordinate.
module attributes {graph.mesh = {tensor = 2 : i64}} {
  func.func @attention_split(%q: tensor<2x4x32x16xf32>, %kv: tensor<2x2x32x16xf32>, %x: tensor<4x8xf32>) {
    // expected-remark@+1 {{([_, _, _, _], [_, _, _, _], [_, _, _, _]) -> ([_, _, _, _])}}
    %0 = graph.attention %q, %kv, %kv, scale = 0.25 {dropout = 0.1, seed = 3, head_blocks = 2}
           : (tensor<2x4x32x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x16xf32>) -> tensor<2x4x32x16xf32>
    // expected-remark@+1 {{([_, _]) -> ([_, _], [_, _])}}
    %y, %mask = graph.dropout %x, ratio = 0.1, seed = 7 {blocks = 2, block_dim = 1} : tensor<4x8xf32>
    return
  }
}

// -----

func.func @cross_entropy(%l: tensor<8x32x128xf32>, %t: tensor<8x32xi64>, %w: tensor<8x32xf32>) {
  // A mean divides by every rank's count: whole. A sum is a reduction; none keeps positions.
  // expected-remark@+1 {{([_, _, _], [_, _]) -> ([])}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  // expected-remark@+1 {{([i, j, _], [i, j]) -> ([]) sizes i=8, j=32; reduction i, j}}
  %1 = graph.softmax_cross_entropy %l, %t, reduction = sum : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  // expected-remark@+1 {{([i, j, _], [i, j]) -> ([i, j]) sizes i=8, j=32}}
  %2 = graph.softmax_cross_entropy %l, %t, reduction = none : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<8x32xf32>
  // expected-remark@+1 {{([i, j, _], [i, j], [i, j]) -> ([i, j, _]) sizes i=8, j=32}}
  %3 = graph.softmax_cross_entropy_grad %l, %t, %w : (tensor<8x32x128xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> tensor<8x32x128xf32>
  return
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @collectives(%x: tensor<6x2xf32>, %y: tensor<3x2xf32>) {
  // Collectives split or join dimension 0, which stays whole.
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=6, j=2}}
  %0 = graph.all_reduce %x, axis = "data" : tensor<6x2xf32>
  // expected-remark@+1 {{([_, i]) -> ([_, i]) sizes i=2}}
  %1 = graph.reduce_scatter %x, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
  // expected-remark@+1 {{([_, i]) -> ([_, i]) sizes i=2}}
  %2 = graph.all_gather %y, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
  // expected-remark@+1 {{([_, i]) -> ([_, i]) sizes i=2}}
  %3 = graph.shard_slice %x, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
  // expected-remark@+1 {{([i, j]) -> ([i, j]) sizes i=6, j=2}}
  %p = graph.all_reduce_start %x, axis = "data" : tensor<6x2xf32>
  // expected-remark@+1 {{([i, j], [i, j]) -> ([i, j]) sizes i=6, j=2}}
  %s = graph.collective_done %p, %x : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  // expected-remark@+1 {{([_, i]) -> ([_, i]) sizes i=2}}
  %q = graph.reduce_scatter_start %x, axis = "data" : (tensor<6x2xf32>) -> tensor<3x2xf32>
  // expected-remark@+1 {{([i, j], [_, _]) -> ([i, j]) sizes i=3, j=2}}
  %t = graph.collective_done %q, %x : (tensor<3x2xf32>, tensor<6x2xf32>) -> tensor<3x2xf32>
  // expected-remark@+1 {{([_, i]) -> ([_, i]) sizes i=2}}
  %g = graph.all_gather_start %y, axis = "data" : (tensor<3x2xf32>) -> tensor<6x2xf32>
  // expected-remark@+1 {{([i, j], [_, _]) -> ([i, j]) sizes i=6, j=2}}
  %w = graph.collective_done %g, %y : (tensor<6x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
  return
}
}

// -----

// A fused loop: operands of the results' shape share every factor, a 0-d
// one has none, and a broadcast operand (operand_dims) carries the factors
// of the results' dimensions it spans, except where it has size 1.
func.func @fused_elementwise(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %t: tensor<2x1xf32>, %s: tensor<f32>) {
  // expected-remark@+1 {{([i, j, k], [j], [i, _], []) -> ([i, j, k]) sizes i=2, j=3, k=4}}
  %r = graph.fused_elementwise %x, %g, %t, %s {operand_dims = [array<i64: 0, 1, 2>, array<i64: 1>, array<i64: 0, 2>, array<i64>]} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x3x4xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
    // The body's 0-d ops have no dimensions.
    // expected-remark@+1 {{([], []) -> ([])}}
    %m = graph.mul %a, %b : tensor<f32>
    // expected-remark@+1 {{([], []) -> ([])}}
    %p = graph.add %m, %c : tensor<f32>
    // expected-remark@+1 {{([], []) -> ([])}}
    %q = graph.sub %p, %d : tensor<f32>
    graph.yield %q : tensor<f32>
  }
  return
}
