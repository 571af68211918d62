// RUN: trainc-opt %s --trainc-precision=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: trainc-opt %s "--trainc-precision=precision=bf16 keep-f32=graph.dot_general" | FileCheck %s --check-prefix=KEEP
// RUN: trainc-opt %s --trainc-precision=precision=f32 | FileCheck %s --check-prefix=F32

// A program compiled before (a widened 16-bit product, f32_result, as
// trainc-widen-products leaves it) compiled again: the precision policy
// types the product anew, without the mark; the lower phase may set it
// again.
// BF16-LABEL: func.func @main
// BF16: graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// BF16-NOT: f32_result
// Kept in f32: f32 operands, an f32 product.
// KEEP: graph.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// KEEP-NOT: f32_result
// F32: graph.dot_general {{.+}} {f32_result} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
func.func @main(%w: tensor<3x4xbf16> {train.param = "w", train.init = dense<0.5> : tensor<3x4xbf16>},
                %x: tensor<2x3xbf16> {graph.input = "x"},
                %c: tensor<2x4xf32> {graph.input = "c"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %y = graph.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  %loss = graph.dot_general %y, %c, batching_dims = [] x [], contracting_dims = [0, 1] x [0, 1] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
