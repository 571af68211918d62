// Tensor parallelism: seeds (--tensor-parallel's, or graph.sharding written
// by hand on an op) propagate by the ops' sharding rules, then each op runs
// on this rank's blocks (see ShardAxis.cpp).
// RUN: trainc-opt %s --trainc-partition="mesh=tensor=2 tensor-parallel=true" -split-input-file | FileCheck %s

// An MLP (Megatron): the GELU's features are split, so the up projection's
// weight is sliced by columns and the down projection's by rows; the down
// projection's partial sums are completed by one all_reduce. Whole result.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W1:.+]]: tensor<8x16xf32>, %[[W2:.+]]: tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[T:.+]] = graph.transpose %[[W1]], permutation = [1, 0]
// CHECK: %[[S:.+]] = graph.shard_slice %[[T]], axis = "tensor" : (tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[C:.+]] = graph.transpose %[[S]], permutation = [1, 0]
// CHECK: %[[H:.+]] = graph.dot_general %[[X]], %[[C]]{{.*}} -> tensor<4x8xf32>
// CHECK: %[[A:.+]] = graph.gelu %[[H]], approximation = erf : tensor<4x8xf32>
// CHECK: %[[R:.+]] = graph.shard_slice %[[W2]], axis = "tensor" : (tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[P:.+]] = graph.dot_general %[[A]], %[[R]]
// CHECK: %[[Y:.+]] = graph.all_reduce %[[P]], axis = "tensor" : tensor<4x8xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: all_gather
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %h = graph.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = graph.gelu %h, approximation = erf : tensor<4x16xf32>
  %y = graph.dot_general %a, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The same MLP with dropout between the activation and the down projection
// (T5's): the dropout splits with the features and numbers its block of
// them in the whole (blocks, block_dim), so each rank draws its part of one
// device's mask.
// CHECK-LABEL: func.func @main
// CHECK: graph.gelu {{.*}} : tensor<4x8xf32>
// CHECK: graph.dropout %{{.+}}, ratio = 1.000000e-01, seed = 5 {block_dim = 1 : i64, blocks = 2 : i64} : tensor<4x8xf32>
// CHECK: %[[P:.+]] = graph.dot_general
// CHECK: %[[Y:.+]] = graph.all_reduce %[[P]], axis = "tensor" : tensor<4x8xf32>
// CHECK: return %[[Y]]
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %h = graph.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = graph.gelu %h, approximation = erf : tensor<4x16xf32>
  %d, %m = graph.dropout %a, ratio = 0.1, seed = 5 : tensor<4x16xf32>
  %y = graph.dot_general %d, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Attention: split by heads (2 of 4 per rank). The split reaches the query
// projection back through the transpose and the reshape (64 features = 4
// heads x 16: the major part), and the output projection's contraction.
// CHECK-LABEL: func.func @main
// CHECK: graph.shard_slice {{.*}} : (tensor<64x64xf32>) -> tensor<32x64xf32>
// CHECK: graph.dot_general {{.*}} -> tensor<2x8x32xf32>
// CHECK: graph.reshape {{.*}} -> tensor<2x8x2x16xf32>
// CHECK: graph.attention {{.*}} -> tensor<2x2x8x16xf32>
// CHECK: graph.reshape {{.*}} -> tensor<2x8x32xf32>
// CHECK: graph.shard_slice %arg2, axis = "tensor" : (tensor<64x64xf32>) -> tensor<32x64xf32>
// CHECK: %[[P:.+]] = graph.dot_general {{.*}} -> tensor<2x8x64xf32>
// CHECK: %[[Y:.+]] = graph.all_reduce %[[P]], axis = "tensor"
// CHECK: return %[[Y]]
func.func @main(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  %q = graph.dot_general %x, %wq, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  %r = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %t = graph.transpose %r, permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o = graph.attention %t, %t, %t, scale = 0.25, causal : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %ot = graph.transpose %o, permutation = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %or = graph.reshape %ot : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %y = graph.dot_general %or, %wo, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// With dropout the heads split the same way, and the op and its gradient
// number their block of them in the whole (head_blocks): each rank draws
// its 2 heads' part of one device's mask.
// CHECK-LABEL: func.func @main
// CHECK: graph.shard_slice {{.*}} : (tensor<64x64xf32>) -> tensor<32x64xf32>
// CHECK: graph.attention {{.*}} {dropout = 1.000000e-01 : f64, head_blocks = 2 : i64, seed = 7 : i64} {{.*}} -> tensor<2x2x8x16xf32>
// CHECK: %[[P:.+]] = graph.dot_general {{.*}} -> tensor<2x8x64xf32>
// CHECK: graph.attention_grad {{.*}} {dropout = 1.000000e-01 : f64, head_blocks = 2 : i64, seed = 7 : i64} {{.*}} -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// CHECK: %[[Y:.+]] = graph.all_reduce %[[P]], axis = "tensor"
// CHECK: return %[[Y]]
func.func @main(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x4x8x16xf32>) {
  %q = graph.dot_general %x, %wq, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  %r = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %t = graph.transpose %r, permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o = graph.attention %t, %t, %t, scale = 0.25, causal {dropout = 0.1, seed = 7} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %ot = graph.transpose %o, permutation = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %or = graph.reshape %ot : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %y = graph.dot_general %or, %wo, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  %dq, %dk, %dv = graph.attention_grad %t, %t, %t, %o, scale = 0.25, causal {dropout = 0.1, seed = 7} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  return %y, %dq : tensor<2x8x64xf32>, tensor<2x4x8x16xf32>
}

// -----

// The same with attention reading and writing [B, S, H, D] (seq_major, as
// the lower phase leaves it): the seed splits dimension 2, the heads.
// CHECK-LABEL: func.func @main
// CHECK: graph.shard_slice {{.*}} : (tensor<64x64xf32>) -> tensor<32x64xf32>
// CHECK: graph.reshape {{.*}} -> tensor<2x8x2x16xf32>
// CHECK: graph.attention {{.*}} -> tensor<2x8x2x16xf32>
// CHECK: %[[P:.+]] = graph.dot_general {{.*}} -> tensor<2x8x64xf32>
// CHECK: %[[Y:.+]] = graph.all_reduce %[[P]], axis = "tensor"
// CHECK: return %[[Y]]
func.func @main(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  %q = graph.dot_general %x, %wq, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  %r = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o = graph.attention %r, %r, %r, scale = 0.25, causal {seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %or = graph.reshape %o : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %y = graph.dot_general %or, %wo, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// Hand annotations and the conflict rule: the add's first operand, split
// along dimension 0, decides; the second (split along 1 by its annotation)
// is gathered and sliced along 0. A splat constant is made as a block. A
// maximum over the split dimension gathers its operand; a sum over it
// leaves partial sums, completed by an all_reduce where the return needs
// them; a sum over another dimension stays split and is gathered.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.+]] = graph.shard_slice %arg0, axis = "tensor" : (tensor<4x6xf32>) -> tensor<2x6xf32>
// CHECK: %[[X:.+]] = graph.exp %[[A]] : tensor<2x6xf32>
// CHECK: graph.shard_slice {{.*}} : (tensor<6x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[Y:.+]] = graph.exp {{.*}} : tensor<4x3xf32>
// CHECK: %[[YT:.+]] = graph.transpose %[[Y]], permutation = [1, 0]
// CHECK: %[[YG:.+]] = graph.all_gather %[[YT]], axis = "tensor" : (tensor<3x4xf32>) -> tensor<6x4xf32>
// CHECK: %[[YW:.+]] = graph.transpose %[[YG]], permutation = [1, 0]
// CHECK: %[[YS:.+]] = graph.shard_slice %[[YW]], axis = "tensor" : (tensor<4x6xf32>) -> tensor<2x6xf32>
// CHECK: %[[S:.+]] = graph.add %[[X]], %[[YS]] : tensor<2x6xf32>
// CHECK: %[[C:.+]] = graph.constant dense<2.000000e+00> : tensor<2x6xf32>
// CHECK: %[[M:.+]] = graph.mul %[[S]], %[[C]] : tensor<2x6xf32>
// CHECK: %[[MG:.+]] = graph.all_gather %[[M]], axis = "tensor" : (tensor<2x6xf32>) -> tensor<4x6xf32>
// CHECK: graph.reduce_max %[[MG]], dims = [0] : (tensor<4x6xf32>) -> tensor<6xf32>
// CHECK: %[[Q:.+]] = graph.reduce_sum %[[M]], dims = [0] : (tensor<2x6xf32>) -> tensor<6xf32>
// CHECK: %[[R:.+]] = graph.reduce_sum %[[M]], dims = [1] : (tensor<2x6xf32>) -> tensor<2xf32>
// CHECK: %[[QS:.+]] = graph.all_reduce %[[Q]], axis = "tensor" : tensor<6xf32>
// CHECK: %[[RG:.+]] = graph.all_gather %[[R]], axis = "tensor" : (tensor<2xf32>) -> tensor<4xf32>
// CHECK: return %{{.+}}, %[[QS]], %[[RG]]
func.func @main(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<4xf32>) {
  %x = graph.exp %a {graph.sharding = ["tensor", ""]} : tensor<4x6xf32>
  %y = graph.exp %b {graph.sharding = ["", "tensor"]} : tensor<4x6xf32>
  %s = graph.add %x, %y : tensor<4x6xf32>
  %c = graph.constant dense<2.0> : tensor<4x6xf32>
  %m = graph.mul %s, %c : tensor<4x6xf32>
  %max = graph.reduce_max %m, dims = [0] : (tensor<4x6xf32>) -> tensor<6xf32>
  %sum0 = graph.reduce_sum %m, dims = [0] : (tensor<4x6xf32>) -> tensor<6xf32>
  %sum1 = graph.reduce_sum %m, dims = [1] : (tensor<4x6xf32>) -> tensor<4xf32>
  return %max, %sum0, %sum1 : tensor<6xf32>, tensor<6xf32>, tensor<4xf32>
}

// -----

// Partial sums add up before they are completed: the three row-parallel
// products (a QKV projection's input gradient) make one all_reduce; a
// split user gets its block by reduce_scatter.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.+]] = graph.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK: %[[B:.+]] = graph.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK: %[[C:.+]] = graph.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK: %[[AB:.+]] = graph.add %[[A]], %[[B]] : tensor<4x8xf32>
// CHECK: %[[ABC:.+]] = graph.add %[[AB]], %[[C]] : tensor<4x8xf32>
// CHECK: %[[T:.+]] = graph.transpose %[[ABC]], permutation = [1, 0]
// CHECK: %[[RS:.+]] = graph.reduce_scatter %[[T]], axis = "tensor" : (tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[MINE:.+]] = graph.transpose %[[RS]], permutation = [1, 0]
// CHECK: graph.exp %[[MINE]] : tensor<4x4xf32>
// CHECK: %[[W:.+]] = graph.all_reduce %[[ABC]], axis = "tensor" : tensor<4x8xf32>
// CHECK: return %[[W]],
// CHECK-NOT: all_reduce
func.func @main(%q: tensor<4x16xf32>, %k: tensor<4x16xf32>, %v: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %qs = graph.exp %q {graph.sharding = ["", "tensor"]} : tensor<4x16xf32>
  %ks = graph.exp %k {graph.sharding = ["", "tensor"]} : tensor<4x16xf32>
  %vs = graph.exp %v {graph.sharding = ["", "tensor"]} : tensor<4x16xf32>
  %a = graph.dot_general %qs, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %b = graph.dot_general %ks, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %c = graph.dot_general %vs, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %ab = graph.add %a, %b : tensor<4x8xf32>
  %abc = graph.add %ab, %c : tensor<4x8xf32>
  %split = graph.exp %abc {graph.sharding = ["", "tensor"]} : tensor<4x8xf32>
  return %abc, %split : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A SwiGLU MLP (Llama): the down projection's operand is made by
// elementwise ops from two matmuls, so it is split by features; both up
// projections are column-parallel, the down projection row-parallel.
// CHECK-LABEL: func.func @main
// CHECK: graph.shard_slice {{.*}} : (tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK: graph.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK: graph.shard_slice {{.*}} : (tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK: graph.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK: graph.mul {{.*}} : tensor<4x8xf32>
// CHECK: %[[P:.+]] = graph.dot_general
// CHECK: %[[Y:.+]] = graph.all_reduce %[[P]], axis = "tensor" : tensor<4x8xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: all_gather
func.func @main(%x: tensor<4x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %g = graph.dot_general %x, %wg, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %u = graph.dot_general %x, %wu, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %e = graph.exp %g : tensor<4x16xf32>
  %s = graph.mul %g, %e : tensor<4x16xf32>
  %h = graph.mul %s, %u : tensor<4x16xf32>
  %y = graph.dot_general %h, %wd, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// 16-bit partial sums (mixed precision) are completed in f32.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.+]] = graph.dot_general {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[W:.+]] = graph.convert %[[P]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: %[[S:.+]] = graph.all_reduce %[[W]], axis = "tensor" : tensor<4x8xf32>
// CHECK: %[[N:.+]] = graph.convert %[[S]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: return %[[N]]
func.func @main(%x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x8xbf16> {
  %xs = graph.exp %x {graph.sharding = ["", "tensor"]} : tensor<4x16xbf16>
  %y = graph.dot_general %xs, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// A value read twice, converted two ways: x x^T with x split along rows
// reads its block as the lhs and the whole x as the rhs.
// CHECK-LABEL: func.func @main
// CHECK: %[[B:.+]] = graph.exp {{.*}} : tensor<2x6xf32>
// CHECK: %[[W:.+]] = graph.all_gather %[[B]], axis = "tensor" : (tensor<2x6xf32>) -> tensor<4x6xf32>
// CHECK: graph.dot_general %[[B]], %[[W]], {{.*}} -> tensor<2x4xf32>
func.func @main(%a: tensor<4x6xf32>) -> tensor<4x4xf32> {
  %x = graph.exp %a {graph.sharding = ["tensor", ""]} : tensor<4x6xf32>
  %g = graph.dot_general %x, %x, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}
