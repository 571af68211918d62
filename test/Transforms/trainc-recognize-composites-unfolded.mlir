// RUN: trainc-opt %s --trainc-recognize-composites | FileCheck %s

// Forms the importer writes before canonicalization has simplified them:
// the patterns must decline them without harm (and may match after it).

// jax.nn.logsumexp(logits, keepdims=True) subtracted from the logits: the
// log of a [2, 1] sum broadcast with dims [0, 1], not a log-softmax this
// pattern knows. Left as it is (this once crashed the pattern).
// CHECK-LABEL: func.func @logsumexp_keepdims
// CHECK: graph.gather
// CHECK-NOT: graph.softmax_cross_entropy
func.func @logsumexp_keepdims(%logits: tensor<2x4xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %e = graph.exp %logits : tensor<2x4xf32>
  %z = graph.reduce_sum %e, dims = [1] : (tensor<2x4xf32>) -> tensor<2xf32>
  %keep = graph.broadcast_in_dim %z, dims = [0] : (tensor<2xf32>) -> tensor<2x1xf32>
  %lz = graph.log %keep : tensor<2x1xf32>
  %lzb = graph.broadcast_in_dim %lz, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %logp = graph.sub %logits, %lzb : tensor<2x4xf32>
  %rows = graph.constant dense<[0, 4]> : tensor<2xi64>
  %pos = graph.add %t, %rows : tensor<2xi64>
  %flat = graph.reshape %logp : (tensor<2x4xf32>) -> tensor<8xf32>
  %picked = graph.gather %flat[%pos], axis = 0 : (tensor<8xf32>, tensor<2xi64>) -> tensor<2xf32>
  %neg = graph.neg %picked : tensor<2xf32>
  %mean = graph.reduce_mean %neg, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %mean : tensor<f32>
}
