// RUN: trainc-opt %s --trainc-attention-stats -split-input-file | FileCheck %s

// A causal attention and its gradient (GQA, with a mask): the forward
// keeps its log-sum-exps, which the gradient reads with its result. Each
// op keeps its own marks.
// CHECK-LABEL: func.func @pair
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[KV:.+]]: tensor<2x2x8x16xf32>, %[[M:.+]]: tensor<1x1x8x8xf32>, %[[G:.+]]: tensor<2x4x8x16xf32>)
// CHECK-NEXT: %[[O:.+]], %[[LSE:.+]] = graph.attention %[[Q]], %[[KV]], %[[KV]] mask %[[M]], scale = 2.500000e-01, causal {recompute.saved, with_lse} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x8x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT: %[[N:.+]] = graph.neg %[[O]]
// CHECK-NEXT: %[[D:.+]]:3 = graph.attention_grad %[[Q]], %[[KV]], %[[KV]], %[[G]] mask %[[M]] stats(%[[O]], %[[LSE]]), scale = 2.500000e-01, causal : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x1x8x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// CHECK-NEXT: return %[[N]], %[[D]]#0, %[[D]]#1, %[[D]]#2
func.func @pair(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %m: tensor<1x1x8x8xf32>, %g: tensor<2x4x8x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %o = graph.attention %q, %kv, %kv mask %m, scale = 0.25, causal {recompute.saved}
      : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  %n = graph.neg %o : tensor<2x4x8x16xf32>
  %d:3 = graph.attention_grad %q, %kv, %kv, %g mask %m, scale = 0.25, causal
      : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x1x8x8xf32>)
      -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return %n, %d#0, %d#1, %d#2 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

// GPT-2's form after the lower phase's other passes: q, k and v windows of
// one bf16 projection, every tensor sequence-major, one packed gradient.
// The log-sum-exps are f32.
// CHECK-LABEL: func.func @qkv_windows
// CHECK-NEXT: %[[O:.+]], %[[LSE:.+]] = graph.attention {{.+}}with_lse{{.+}} -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
// CHECK-NEXT: graph.attention_grad {{.+}} stats(%[[O]], %[[LSE]]), {{.+}} -> tensor<2x8x12x16xbf16>
func.func @qkv_windows(%qkv: tensor<2x8x12x16xbf16>, %g: tensor<2x8x4x16xbf16>)
    -> (tensor<2x8x4x16xbf16>, tensor<2x8x12x16xbf16>) {
  %o = graph.attention %qkv, %qkv, %qkv, scale = 0.25, causal
      {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>) -> tensor<2x8x4x16xbf16>
  %d = graph.attention_grad %qkv, %qkv, %qkv, %g, scale = 0.25, causal
      {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
      : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x4x16xbf16>) -> tensor<2x8x12x16xbf16>
  return %o, %d : tensor<2x8x4x16xbf16>, tensor<2x8x12x16xbf16>
}

// -----

// Recompute: the gradient reads the clone just before it, not the forward
// pass's attention (its result and statistics then live the shortest);
// the forward pass's keeps one result.
// CHECK-LABEL: func.func @recomputed
// CHECK-NEXT: %[[F:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01 : {{.+}} -> tensor<1x2x8x16xf32>
// CHECK-NEXT: graph.neg %[[F]]
// CHECK-NEXT: %[[O:.+]], %[[LSE:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01 {recompute.clone, with_lse}
// CHECK-NEXT: graph.neg %[[O]]
// CHECK-NEXT: graph.attention_grad {{.+}} stats(%[[O]], %[[LSE]]), scale = 2.500000e-01 {recompute.clone}
func.func @recomputed(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %o = graph.attention %q, %q, %q, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %n = graph.neg %o : tensor<1x2x8x16xf32>
  %o2 = graph.attention %q, %q, %q, scale = 0.25 {recompute.clone}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %n2 = graph.neg %o2 : tensor<1x2x8x16xf32>
  %d:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.25 {recompute.clone}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %n, %n2, %d#0 : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// A mask made again for the gradient (a recompute clone of the forward
// pass's ops: the same ops, attributes and inputs) holds the same values:
// the gradient reads the forward pass's statistics. A mask made otherwise
// (another constant) does not.
// CHECK-LABEL: func.func @recomputed_mask
// CHECK: %[[O:.+]], %[[LSE:.+]] = graph.attention {{.+}}with_lse
// CHECK: graph.attention_grad {{.+}} stats(%[[O]], %[[LSE]])
// CHECK-NOT: stats(
func.func @recomputed_mask(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>, %m: tensor<1x1x8x8xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %c = graph.constant dense<-1.0e4> : tensor<1x1x8x8xf32>
  %mask = graph.mul %m, %c : tensor<1x1x8x8xf32>
  %o = graph.attention %q, %q, %q mask %mask, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xf32>) -> tensor<1x2x8x16xf32>
  %mask2 = graph.mul %m, %c {recompute.clone} : tensor<1x1x8x8xf32>
  %d:3 = graph.attention_grad %q, %q, %q, %g mask %mask2, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %c2 = graph.constant dense<-1.0e3> : tensor<1x1x8x8xf32>
  %other = graph.mul %m, %c2 : tensor<1x1x8x8xf32>
  %e:3 = graph.attention_grad %q, %q, %q, %g mask %other, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %o, %d#0, %e#0 : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// No forward to read: another scale, another mask, the result stored
// otherwise than the cotangent, not causal, another query, the forward
// after the gradient, a soft cap the forward does not have. Nothing
// changes.
// CHECK-LABEL: func.func @unmatched
// CHECK-NOT: with_lse
// CHECK-NOT: stats(
func.func @unmatched(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>, %gs: tensor<1x8x2x16xf32>,
                     %m: tensor<1x1x8x8xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
        tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
        tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %o = graph.attention %q, %q, %q, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %capped:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.25 {softcap = 50.0}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %a:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.5
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %b:3 = graph.attention_grad %q, %q, %q, %g mask %m, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %c:3 = graph.attention_grad %q, %q, %q, %gs, scale = 0.25 {seq_major = array<i64: 3>}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8x2x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %causal:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.25, causal
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %otherQ:3 = graph.attention_grad %g, %q, %q, %g, scale = 0.25
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %late:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.125
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %o3 = graph.attention %q, %q, %q, scale = 0.125
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %os = graph.attention %q, %q, %q, scale = 0.25 {seq_major = array<i64: 3>}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  return %o, %os, %a#0, %b#0, %c#0, %late#0, %o3, %causal#0, %otherQ#0, %capped#0 : tensor<1x2x8x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
      tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// Soft-capped attention pairs with its gradient when both have the cap,
// which each keeps.
// CHECK-LABEL: func.func @softcap_pair
// CHECK-NEXT: %[[O:.+]], %[[LSE:.+]] = graph.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01, causal {softcap = 5.000000e+01 : f64, with_lse}
// CHECK-NEXT: graph.attention_grad {{.+}} stats(%[[O]], %[[LSE]]), scale = 2.500000e-01, causal {softcap = 5.000000e+01 : f64}
func.func @softcap_pair(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %o = graph.attention %q, %q, %q, scale = 0.25, causal {softcap = 50.0}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %d:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.25, causal {softcap = 50.0}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %o, %d#0 : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}
