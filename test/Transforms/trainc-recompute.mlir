// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse --trainc-recompute=mode=full | FileCheck %s --check-prefix=FULL
// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse --trainc-recompute=mode=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse "--trainc-recompute=mode=none compare-options=1" | FileCheck %s --check-prefix=OPTIONS
// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse --trainc-recompute=mode=budget=1700 | FileCheck %s --check-prefix=BUDGET
// RUN: not trainc-opt %s --trainc-autodiff --trainc-recompute=mode=budget=64 2>&1 | FileCheck %s --check-prefix=LOW
// RUN: not trainc-opt %s --trainc-recompute=mode=sometimes 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: trainc-opt %s --trainc-autodiff --canonicalize --cse "--trainc-recompute=mode=none compare-options=1 lower=attention-stats=false,pad-classes=0" | FileCheck %s --check-prefix=LOWER
// RUN: not trainc-opt %s "--trainc-recompute=mode=none lower=fuse-everything=true" 2>&1 | FileCheck %s --check-prefix=LOWER-NAME
// RUN: not trainc-opt %s "--trainc-recompute=mode=none lower=attention-stats=maybe" 2>&1 | FileCheck %s --check-prefix=LOWER-BOOL
// RUN: not trainc-opt %s "--trainc-recompute=mode=none lower=pad-classes=-1" 2>&1 | FileCheck %s --check-prefix=LOWER-RANGE

// Two pre-norm residual blocks, x_{j+1} = x_j + attention(norm(x_j)) W.
// The cuts (one live activation) are x0, x1 and x2; block j runs from x_j
// to x_{j+1}.

// full: each block's backward remakes the block from its input (x1 = %7,
// then x0 = %3), the clones marked and placed after the forward pass.
// FULL-LABEL: func.func @main
// FULL-SAME: recompute.added_flops = {{[1-9][0-9]*}} : i64, recompute.added_live_bytes = {{[1-9][0-9]*}} : i64, recompute.blocks = 2 : i64
// FULL: %[[X0:.+]] = graph.dot_general %arg2, %arg0
// FULL: graph.layer_norm %[[X0]] scale
// FULL: %[[X1:.+]] = graph.add %[[X0]],
// FULL: %[[LOSS:.+]] = graph.reduce_sum
// FULL: %[[N1:.+]] = graph.layer_norm %[[X1]] scale %arg1, axis = 3, epsilon = 1.000000e-05 {recompute.clone}
// FULL-NEXT: graph.attention %[[N1]], %[[N1]], %[[N1]], scale = 3.500000e-01, causal {recompute.clone}
// FULL: graph.norm_grad %[[X1]] scale
// FULL: %[[N0:.+]] = graph.layer_norm %[[X0]] scale %arg1, axis = 3, epsilon = 1.000000e-05 {recompute.clone}
// FULL-NEXT: graph.attention %[[N0]], %[[N0]], %[[N0]], scale = 3.500000e-01, causal {recompute.clone}
// FULL: graph.norm_grad %[[X0]] scale

// selective: the attentions are remade from their saved inputs (the norms'
// results, which the attention gradient reads anyway); nothing else is.
// SELECTIVE-LABEL: func.func @main
// SELECTIVE: %[[N0:.+]] = graph.layer_norm
// SELECTIVE: %[[N1:.+]] = graph.layer_norm
// SELECTIVE: graph.reduce_sum
// SELECTIVE-NOT: graph.layer_norm {{.*}}recompute.clone
// SELECTIVE: graph.attention %[[N1]], %[[N1]], %[[N1]], scale = 3.500000e-01, causal {recompute.clone}
// SELECTIVE: graph.attention %[[N0]], %[[N0]], %[[N0]], scale = 3.500000e-01, causal {recompute.clone}
// SELECTIVE-NOT: recompute.clone

// compare-options plans none, selective and full on copies:
// [activation bytes, added FLOPs, step FLOPs]; the IR is not changed.
// OPTIONS: recompute.options = {full = [1604, 1600, 11560], none = [1924, 0, 9960], selective = [1732, 1216, 11176]}
// OPTIONS-NOT: recompute.clone

// `lower` plans with the lower phase as trainc's flags set it: without
// the attentions' log-sum-exps (--attention-stats=false) none plans 256
// bytes fewer, selective and full 192. A flag that is not one, or a bad
// value, is an error.
// LOWER: recompute.options = {full = [1412, 1600, 11560], none = [1668, 0, 9960], selective = [1540, 1216, 11176]}
// LOWER-NAME: error: recompute: lower option 'fuse-everything' is none of fuse-elementwise, pad-classes, qkv-in-place, fuse-gelu, fuse-bias-grad, fuse-loss-grad, attention-stats
// LOWER-BOOL: error: recompute: lower option attention-stats='maybe' is not true, false, 1 or 0
// LOWER-RANGE: error: recompute: pad-classes must be in [0, 65536] (0: off), not -1

// A budget takes the first step of the ladder (none, selective on blocks
// 0..k, then full on blocks 0..k) that fits: 1700 bytes is below what
// selective everywhere plans (1732; the plans include each attention's
// log-sum-exps, kept for its gradient by the lower phase), so block 0 is recomputed in full (its
// norm too, from x0) and block 1 selectively.
// BUDGET-LABEL: func.func @main
// BUDGET: %[[X0:.+]] = graph.dot_general %arg2, %arg0
// BUDGET: graph.reduce_sum
// BUDGET: graph.attention {{.*}}{recompute.clone}
// BUDGET: %[[N0:.+]] = graph.layer_norm %[[X0]] scale %arg1, axis = 3, epsilon = 1.000000e-05 {recompute.clone}
// BUDGET-NEXT: graph.attention %[[N0]], %[[N0]], %[[N0]], scale = 3.500000e-01, causal {recompute.clone}
// BUDGET-NOT: recompute.clone

// LOW: error: recompute budget=64: the smallest planned activation peak is 1604 bytes (selective recompute everywhere, full of blocks 0..0 of 2); its plan:
// LOW: activations {{ *}}1604 bytes

// BAD: error: recompute mode 'sometimes' is not none, full, selective or budget=BYTES

func.func @main(%w: tensor<8x8xf32> {train.param = "w", train.init = dense<0.1> : tensor<8x8xf32>},
                %g: tensor<8xf32> {train.param = "g", train.init = dense<1.0> : tensor<8xf32>},
                %x: tensor<1x1x4x8xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %x0 = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [3] x [0] : (tensor<1x1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x1x4x8xf32>
  %n0 = graph.layer_norm %x0 scale %g, axis = 3, epsilon = 1.0e-5 : (tensor<1x1x4x8xf32>, tensor<8xf32>) -> tensor<1x1x4x8xf32>
  %a0 = graph.attention %n0, %n0, %n0, scale = 0.35, causal : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %p0 = graph.dot_general %a0, %w, batching_dims = [] x [], contracting_dims = [3] x [0] : (tensor<1x1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x1x4x8xf32>
  %x1 = graph.add %x0, %p0 : tensor<1x1x4x8xf32>
  %n1 = graph.layer_norm %x1 scale %g, axis = 3, epsilon = 1.0e-5 : (tensor<1x1x4x8xf32>, tensor<8xf32>) -> tensor<1x1x4x8xf32>
  %a1 = graph.attention %n1, %n1, %n1, scale = 0.35, causal : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %p1 = graph.dot_general %a1, %w, batching_dims = [] x [], contracting_dims = [3] x [0] : (tensor<1x1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x1x4x8xf32>
  %x2 = graph.add %x1, %p1 : tensor<1x1x4x8xf32>
  %sq = graph.mul %x2, %x2 : tensor<1x1x4x8xf32>
  %loss = graph.reduce_sum %sq, dims = [0, 1, 2, 3] : (tensor<1x1x4x8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
