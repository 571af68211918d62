// RUN: trainc-opt %s --trainc-read-qkv-in-place -split-input-file | FileCheck %s

// A GPT block's attention and its gradient on three slices of one fused
// projection [2, 8, 192] (4 heads of 16 each): both read one [2, 8, 12, 16]
// view of it in place, and the slices and their reshapes go. The
// gradients, concatenated for the projection's backward, are written in
// their windows of one result, whose reshape is the concatenation.
// CHECK-LABEL: func.func @gpt_block
// CHECK-SAME: (%[[QKV:.+]]: tensor<2x8x192xf32>, %[[G:.+]]: tensor<2x8x4x16xf32>)
// CHECK-NEXT: %[[VIEW:.+]] = graph.reshape %[[QKV]] : (tensor<2x8x192xf32>) -> tensor<2x8x12x16xf32>
// CHECK-NEXT: %[[O:.+]] = graph.attention %[[VIEW]], %[[VIEW]], %[[VIEW]], scale = 2.500000e-01, causal {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
// CHECK-NEXT: %[[D:.+]] = graph.attention_grad %[[VIEW]], %[[VIEW]], %[[VIEW]], %[[G]], scale = 2.500000e-01, causal {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x12x16xf32>
// CHECK-NEXT: %[[J:.+]] = graph.reshape %[[D]] : (tensor<2x8x12x16xf32>) -> tensor<2x8x192xf32>
// CHECK-NEXT: return %[[O]], %[[J]]
func.func @gpt_block(%qkv: tensor<2x8x192xf32>, %g: tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x192xf32>) {
  %q = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %k = graph.slice %qkv, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %v = graph.slice %qkv, start = [0, 0, 128], limit = [2, 8, 192], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %q4 = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %k4 = graph.reshape %k : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %v4 = graph.reshape %v : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o = graph.attention %q4, %k4, %v4, scale = 0.25, causal {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %dq, %dk, %dv = graph.attention_grad %q4, %k4, %v4, %g, scale = 0.25, causal {seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
      -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  %dv3 = graph.reshape %dv : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %dk3 = graph.reshape %dk : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %dq3 = graph.reshape %dq : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %dqkv = graph.concatenate(%dq3, %dk3, %dv3), dim = 2 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  return %o, %dqkv : tensor<2x8x4x16xf32>, tensor<2x8x192xf32>
}

// -----

// Gradients that are not exactly the projection's stay three: joined in
// another order, or one of them also read on its own.
// CHECK-LABEL: func.func @gradients_stay
// CHECK: graph.attention_grad {{.+}} {qkv_heads = array<i64: 4, 4>, {{.+}} -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
// CHECK: graph.concatenate
// CHECK: graph.attention_grad {{.+}} {qkv_heads = array<i64: 4, 4>, {{.+}} -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
// CHECK: graph.concatenate
func.func @gradients_stay(%qkv: tensor<2x8x192xf32>, %g: tensor<2x8x4x16xf32>) -> (tensor<2x8x192xf32>, tensor<2x8x192xf32>, tensor<2x8x4x16xf32>) {
  %q = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %k = graph.slice %qkv, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %v = graph.slice %qkv, start = [0, 0, 128], limit = [2, 8, 192], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %q4 = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %k4 = graph.reshape %k : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %v4 = graph.reshape %v : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %dq, %dk, %dv = graph.attention_grad %q4, %k4, %v4, %g, scale = 0.25, causal {seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
      -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  %dv3 = graph.reshape %dv : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %dk3 = graph.reshape %dk : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %dq3 = graph.reshape %dq : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %swapped = graph.concatenate(%dk3, %dq3, %dv3), dim = 2 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  %eq, %ek, %ev = graph.attention_grad %q4, %k4, %v4, %g, scale = 0.25, causal {seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
      -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  %ev3 = graph.reshape %ev : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %ek3 = graph.reshape %ek : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %eq3 = graph.reshape %eq : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  %joined = graph.concatenate(%eq3, %ek3, %ev3), dim = 2 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  return %swapped, %joined, %eq : tensor<2x8x192xf32>, tensor<2x8x192xf32>, tensor<2x8x4x16xf32>
}

// -----

// Grouped-query heads (4 query heads, 2 key and value heads: 8 stored)
// from a flattened [16, 128] projection with a mask; a slice that
// something else also reads stays for it.
// CHECK-LABEL: func.func @grouped_flat
// CHECK: %[[VIEW:.+]] = graph.reshape %{{.+}} : (tensor<16x128xf32>) -> tensor<2x8x8x16xf32>
// CHECK: %[[K:.+]] = graph.slice
// CHECK-NOT: graph.slice
// CHECK: graph.attention %[[VIEW]], %[[VIEW]], %[[VIEW]] mask %{{.+}}, scale = 2.500000e-01 {qkv_heads = array<i64: 4, 2>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x8x16xf32>, tensor<2x8x8x16xf32>, tensor<2x8x8x16xf32>, tensor<1x1x8x8xf32>) -> tensor<2x8x4x16xf32>
// CHECK: return %{{.+}}, %[[K]]
func.func @grouped_flat(%qkv: tensor<16x128xf32>, %mask: tensor<1x1x8x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<16x32xf32>) {
  %q = graph.slice %qkv, start = [0, 0], limit = [16, 64], strides = [1, 1] : (tensor<16x128xf32>) -> tensor<16x64xf32>
  %k = graph.slice %qkv, start = [0, 64], limit = [16, 96], strides = [1, 1] : (tensor<16x128xf32>) -> tensor<16x32xf32>
  %v = graph.slice %qkv, start = [0, 96], limit = [16, 128], strides = [1, 1] : (tensor<16x128xf32>) -> tensor<16x32xf32>
  %q4 = graph.reshape %q : (tensor<16x64xf32>) -> tensor<2x8x4x16xf32>
  %k4 = graph.reshape %k : (tensor<16x32xf32>) -> tensor<2x8x2x16xf32>
  %v4 = graph.reshape %v : (tensor<16x32xf32>) -> tensor<2x8x2x16xf32>
  %o = graph.attention %q4, %k4, %v4 mask %mask, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<1x1x8x8xf32>) -> tensor<2x8x4x16xf32>
  return %o, %k : tensor<2x8x4x16xf32>, tensor<16x32xf32>
}

// -----

// What stays: the key before the query (not the fused order), slices
// that do not cover the projection, two projections, a head-major query
// (not yet through trainc-absorb-transposes), a strided slice.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: qkv_heads
// CHECK: return
func.func @stays(%qkv: tensor<2x8x192xf32>, %wide: tensor<2x8x256xf32>, %other: tensor<2x8x192xf32>, %qh: tensor<2x4x8x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) {
  %a = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %b = graph.slice %qkv, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %c = graph.slice %qkv, start = [0, 0, 128], limit = [2, 8, 192], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %a4 = graph.reshape %a : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %b4 = graph.reshape %b : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %c4 = graph.reshape %c : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %swapped = graph.attention %b4, %a4, %c4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %w = graph.slice %wide, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x256xf32>) -> tensor<2x8x64xf32>
  %x = graph.slice %wide, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x256xf32>) -> tensor<2x8x64xf32>
  %y = graph.slice %wide, start = [0, 0, 128], limit = [2, 8, 192], strides = [1, 1, 1] : (tensor<2x8x256xf32>) -> tensor<2x8x64xf32>
  %w4 = graph.reshape %w : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %x4 = graph.reshape %x : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %y4 = graph.reshape %y : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %partial = graph.attention %w4, %x4, %y4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %o = graph.slice %other, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %o4 = graph.reshape %o : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %mixed = graph.attention %a4, %o4, %c4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %headMajor = graph.attention %qh, %b4, %c4, scale = 0.25 {seq_major = array<i64: 1, 2, 3>}
      : (tensor<2x4x8x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %swapped, %partial, %mixed, %headMajor : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
}

// -----

// Every other row (strides 2 along the sequence) is not a window.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: qkv_heads
func.func @strided(%qkv: tensor<2x16x192xf32>) -> tensor<2x8x4x16xf32> {
  %q = graph.slice %qkv, start = [0, 0, 0], limit = [2, 16, 64], strides = [1, 2, 1] : (tensor<2x16x192xf32>) -> tensor<2x8x64xf32>
  %k = graph.slice %qkv, start = [0, 0, 64], limit = [2, 16, 128], strides = [1, 2, 1] : (tensor<2x16x192xf32>) -> tensor<2x8x64xf32>
  %v = graph.slice %qkv, start = [0, 0, 128], limit = [2, 16, 192], strides = [1, 2, 1] : (tensor<2x16x192xf32>) -> tensor<2x8x64xf32>
  %q4 = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %k4 = graph.reshape %k : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %v4 = graph.reshape %v : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o = graph.attention %q4, %k4, %v4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}

// -----

// Slices wider than the heads they are reshaped into: the projection's
// leading dims [2] are not [B, S] = [1, 4] (each row holds two sequence
// positions of q), so no view of it is q's; likewise a rank-1 projection.
// None is rewritten.
// CHECK-LABEL: func.func @not_rows
// CHECK-NOT: qkv_heads
// CHECK: return
func.func @not_rows(%qkv: tensor<2x96xf32>) -> tensor<1x4x4x4xf32> {
  %q = graph.slice %qkv, start = [0, 0], limit = [2, 32], strides = [1, 1] : (tensor<2x96xf32>) -> tensor<2x32xf32>
  %k = graph.slice %qkv, start = [0, 32], limit = [2, 64], strides = [1, 1] : (tensor<2x96xf32>) -> tensor<2x32xf32>
  %v = graph.slice %qkv, start = [0, 64], limit = [2, 96], strides = [1, 1] : (tensor<2x96xf32>) -> tensor<2x32xf32>
  %q4 = graph.reshape %q : (tensor<2x32xf32>) -> tensor<1x4x4x4xf32>
  %k4 = graph.reshape %k : (tensor<2x32xf32>) -> tensor<1x4x4x4xf32>
  %v4 = graph.reshape %v : (tensor<2x32xf32>) -> tensor<1x4x4x4xf32>
  %o = graph.attention %q4, %k4, %v4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %o : tensor<1x4x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @rank1
// CHECK-NOT: qkv_heads
func.func @rank1(%qkv: tensor<96xf32>) -> tensor<1x2x4x4xf32> {
  %q = graph.slice %qkv, start = [0], limit = [32], strides = [1] : (tensor<96xf32>) -> tensor<32xf32>
  %k = graph.slice %qkv, start = [32], limit = [64], strides = [1] : (tensor<96xf32>) -> tensor<32xf32>
  %v = graph.slice %qkv, start = [64], limit = [96], strides = [1] : (tensor<96xf32>) -> tensor<32xf32>
  %q4 = graph.reshape %q : (tensor<32xf32>) -> tensor<1x2x4x4xf32>
  %k4 = graph.reshape %k : (tensor<32xf32>) -> tensor<1x2x4x4xf32>
  %v4 = graph.reshape %v : (tensor<32xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.attention %q4, %k4, %v4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

// -----

// A query with no heads.
// CHECK-LABEL: func.func @zero
// CHECK-NOT: qkv_heads
func.func @zero(%qkv: tensor<2x8x128xf32>) -> tensor<2x8x0x16xf32> {
  %q = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 0], strides = [1, 1, 1] : (tensor<2x8x128xf32>) -> tensor<2x8x0xf32>
  %k = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x128xf32>) -> tensor<2x8x64xf32>
  %v = graph.slice %qkv, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x128xf32>) -> tensor<2x8x64xf32>
  %q4 = graph.reshape %q : (tensor<2x8x0xf32>) -> tensor<2x8x0x16xf32>
  %k4 = graph.reshape %k : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %v4 = graph.reshape %v : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o = graph.attention %q4, %k4, %v4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x0x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x0x16xf32>
  return %o : tensor<2x8x0x16xf32>
}

// -----

// One projection split into heads two ways (4 of 16, 8 of 8): a view for
// each; the projection made by an op, whose marks the views carry.
// CHECK-LABEL: func.func @two_splits
// CHECK: %[[X:.+]] = graph.add %{{.+}}, %{{.+}} {recompute.clone}
// CHECK-NEXT: %[[V8:.+]] = graph.reshape %[[X]] {recompute.clone} : (tensor<2x8x192xf32>) -> tensor<2x8x24x8xf32>
// CHECK-NEXT: %[[V4:.+]] = graph.reshape %[[X]] {recompute.clone} : (tensor<2x8x192xf32>) -> tensor<2x8x12x16xf32>
// CHECK: graph.attention %[[V4]], %[[V4]], %[[V4]], {{.+}} {qkv_heads = array<i64: 4, 4>,
// CHECK: graph.attention %[[V8]], %[[V8]], %[[V8]], {{.+}} {qkv_heads = array<i64: 8, 8>,
func.func @two_splits(%a: tensor<2x8x192xf32>, %b: tensor<2x8x192xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x8x8xf32>) {
  %qkv = graph.add %a, %b {recompute.clone} : tensor<2x8x192xf32>
  %q = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 64], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %k = graph.slice %qkv, start = [0, 0, 64], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %v = graph.slice %qkv, start = [0, 0, 128], limit = [2, 8, 192], strides = [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %q4 = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %k4 = graph.reshape %k : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %v4 = graph.reshape %v : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o = graph.attention %q4, %k4, %v4, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %q8 = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x8x8xf32>
  %k8 = graph.reshape %k : (tensor<2x8x64xf32>) -> tensor<2x8x8x8xf32>
  %v8 = graph.reshape %v : (tensor<2x8x64xf32>) -> tensor<2x8x8x8xf32>
  %p = graph.attention %q8, %k8, %v8, scale = 0.25 {seq_major = array<i64: 0, 1, 2, 3>}
      : (tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  return %o, %p : tensor<2x8x4x16xf32>, tensor<2x8x8x8xf32>
}
