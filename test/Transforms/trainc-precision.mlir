// RUN: trainc-opt %s --trainc-precision=precision=bf16 --canonicalize --cse | FileCheck %s --check-prefix=BF16
// RUN: trainc-opt %s "--trainc-precision=precision=bf16 keep-f32=/mlp/*" --canonicalize --cse | FileCheck %s --check-prefix=KEEPNAME
// RUN: trainc-opt %s "--trainc-precision=precision=fp16 keep-f32=graph.dot_general loss-scaling=1" --canonicalize --cse | FileCheck %s --check-prefix=KEEPOP
// RUN: trainc-opt %s --trainc-precision=precision=bf16 --canonicalize --cse --trainc-autodiff --canonicalize --cse | FileCheck %s --check-prefix=BACKWARD
// RUN: trainc-opt %s --trainc-precision=precision=f32 | FileCheck %s --check-prefix=F32
// RUN: trainc-opt %s --trainc-precision=precision=tf32 --trainc-autodiff --canonicalize --cse | FileCheck %s --check-prefix=TF32
// RUN: trainc-opt %s "--trainc-precision=precision=tf32 keep-f32=dot_general" | FileCheck %s --check-prefix=TF32KEEP
// RUN: trainc-opt %s --trainc-precision=precision=tf32 | trainc-opt --trainc-precision=precision=bf16 | FileCheck %s --check-prefix=TF32BF16
// RUN: not trainc-opt %s --trainc-precision=precision=f8 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not trainc-opt %s "--trainc-precision=precision=bf16 keep-f32=/mlp/*,/mpl/*" 2>&1 | FileCheck %s --check-prefix=UNUSEDNAME
// RUN: not trainc-opt %s "--trainc-precision=precision=bf16 keep-f32=attention" 2>&1 | FileCheck %s --check-prefix=UNUSEDOP
// RUN: not trainc-opt %s "--trainc-precision=precision=tf32 keep-f32=/mlp/*" 2>&1 | FileCheck %s --check-prefix=UNUSEDTF32

// A keep-f32 entry that keeps nothing (a typo, an op the model lacks, a
// name tf32 would not round: it rounds only matmuls) is an error.
// UNUSEDNAME: error: precision: keep-f32 entry '/mpl/*' matches no node name of the model (node names
// UNUSEDOP: error: precision: keep-f32 entry 'attention' matches no op of the model (node names
// UNUSEDTF32: error: precision: keep-f32 entry '/mlp/*' matches no node name of the model's matmuls (tf32 rounds only matmuls)

// x -> layer_norm -> linear (w, b) -> gelu -> residual add -> cross-entropy.

// The dot runs in bf16 on cast operands: the norm's result and the weight,
// cast before its transpose (one 16-bit copy, the transpose still next to
// the dot). The bias is cast for the 16-bit add, gelu follows its input;
// the residual add promotes to f32 (x is f32); the loss is f32.
// BF16-LABEL: func.func @main
// BF16: %[[N:.+]] = graph.layer_norm %arg3 scale %arg2, {{.*}} -> tensor<4x8xf32>
// BF16-NEXT: %[[NL:.+]] = graph.convert %[[N]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// BF16-NEXT: %[[WL:.+]] = graph.convert %arg0 : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// BF16-NEXT: %[[WT:.+]] = graph.transpose %[[WL]], permutation = [1, 0] : (tensor<8x8xbf16>) -> tensor<8x8xbf16>
// BF16-NEXT: %[[Y:.+]] = graph.dot_general %[[NL]], %[[WT]], {{.*}} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// BF16-NEXT: %[[BL:.+]] = graph.convert %arg1 : (tensor<8xf32>) -> tensor<8xbf16>
// BF16-NEXT: %[[BB:.+]] = graph.broadcast_in_dim %[[BL]], dims = [1] : (tensor<8xbf16>) -> tensor<4x8xbf16>
// BF16-NEXT: %[[YB:.+]] = graph.add %[[Y]], %[[BB]] : tensor<4x8xbf16>
// BF16-NEXT: %[[H:.+]] = graph.gelu %[[YB]], approximation = erf : tensor<4x8xbf16>
// BF16-NEXT: %[[HF:.+]] = graph.convert %[[H]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// BF16-NEXT: %[[R:.+]] = graph.add %arg3, %[[HF]] : tensor<4x8xf32>
// BF16-NEXT: graph.softmax_cross_entropy %[[R]], %arg4, reduction = mean : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>

// keep-f32 by node name: the add named /mlp/Add stays f32, so the dot's
// result is cast up for it and gelu follows in f32.
// KEEPNAME-LABEL: func.func @main
// KEEPNAME: graph.dot_general {{.*}} -> tensor<4x8xbf16>
// KEEPNAME: graph.add {{.*}} : tensor<4x8xf32>
// KEEPNAME-NEXT: graph.gelu {{.*}} : tensor<4x8xf32>

// keep-f32 by op: no dot runs in fp16, so nothing does; training in fp16
// adds the loss scale, a state argument that starts at 2^16.
// KEEPOP-LABEL: func.func @main
// KEEPOP-SAME: %arg5: tensor<f32> {train.init = dense<6.553600e+04> : tensor<f32>, train.loss_scale, train.state = "loss_scale"}
// KEEPOP-NOT: f16
// KEEPOP: graph.dot_general {{.*}} -> tensor<4x8xf32>

// The backward pass follows the forward's precisions: the two gradient
// dots are bf16, reading the forward's bf16 copies of the weight and the
// norm; the weight's gradient is cast to f32 for the f32 parameter.
// BACKWARD-LABEL: func.func @main
// BACKWARD: %[[NL:.+]] = graph.convert %{{.+}} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// BACKWARD: %[[WL:.+]] = graph.convert %arg0 : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// BACKWARD-NEXT: %[[WT:.+]] = graph.transpose %[[WL]]
// BACKWARD: graph.softmax_cross_entropy_grad
// BACKWARD: graph.dot_general %{{.+}}, %[[WT]], {{.*}} -> tensor<4x8xbf16>
// BACKWARD: %[[DW:.+]] = graph.dot_general %[[NL]], %{{.+}}, {{.*}} -> tensor<8x8xbf16>
// BACKWARD: graph.convert %{{.+}} : (tensor<8x8xbf16>) -> tensor<8x8xf32>
// BACKWARD: return

// F32-NOT: graph.convert
// F32-NOT: tf32

// tf32: no casts; the dot and both of its gradients' dots round their
// operands to TF32.
// TF32-LABEL: func.func @main
// TF32-NOT: graph.convert
// TF32: graph.dot_general {{.*}} contracting_dims = [1] x [0] {tf32} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// TF32: graph.dot_general {{.*}} contracting_dims = [1] x [1] {tf32} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// TF32: graph.dot_general {{.*}} contracting_dims = [0] x [0] {tf32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// TF32-NOT: graph.convert
// TF32: return

// tf32 with the matmuls kept in f32: nothing changes.
// TF32KEEP-NOT: tf32

// A tf32 program compiled again with bf16: the narrowed dot loses its mark
// (C9: tf32 only on f32 operands).
// TF32BF16-NOT: tf32
// TF32BF16: graph.dot_general {{.*}} contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// TF32BF16-NOT: tf32

// BAD: precision 'f8' is not f32, tf32, bf16 or fp16

func.func @main(%w: tensor<8x8xf32> {train.param = "w", train.init = dense<0.1> : tensor<8x8xf32>},
                %b: tensor<8xf32> {train.param = "b", train.init = dense<0.0> : tensor<8xf32>},
                %g: tensor<8xf32> {train.param = "g", train.init = dense<1.0> : tensor<8xf32>},
                %x: tensor<4x8xf32> {graph.input = "x"},
                %t: tensor<4xi64> {graph.input = "t"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %n = graph.layer_norm %x scale %g, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %wt = graph.transpose %w, permutation = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = graph.dot_general %n, %wt, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %yb = graph.add %y, %bb : tensor<4x8xf32> loc("/mlp/Add")
  %h = graph.gelu %yb, approximation = erf : tensor<4x8xf32>
  %r = graph.add %x, %h : tensor<4x8xf32>
  %loss = graph.softmax_cross_entropy %r, %t, reduction = mean : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
