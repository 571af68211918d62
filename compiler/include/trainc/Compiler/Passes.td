//===- Passes.td - trainc compiler passes ---------------------*- tablegen -*-===//
//
// Every pass of the compiler, in pipeline order (see Pipeline.h). Each has a
// summary, its input invariants and output, an example, and options.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PASSES_TD
#define TRAINC_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecognizeComposites : Pass<"trainc-recognize-composites", "mlir::func::FuncOp"> {
  let summary = "Turn decomposed normalizations, activations and attention into graph composites";
  let description = [{
    Exporters often spell out what the graph dialect has as one op with a
    fast kernel and a known gradient. This pass rewrites, anywhere in a
    function:

    - layer norm: `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)`, or
      with `* rsqrt(...)`, then `* scale` and `+ bias` -> `graph.layer_norm`;
    - RMS norm: `x * rsqrt(mean(x^2) + eps)` or `x / sqrt(...)`, then
      `* scale` -> `graph.rms_norm`;
    - GELU: `0.5 * x * (1 + erf(x / sqrt(2)))` and
      `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`, with the
      factors in any order and association -> `graph.gelu`;
    - softmax: `exp(x - max(x)) / sum(exp(x - max(x)))` -> `graph.softmax`;
    - attention: `softmax(scale * q @ k^T [masked]) @ v` on rank-4
      [batch, heads, seq, dim] operands, where the mask is either a
      `select(cond, -inf, scores)` with a constant condition (recognized as
      `causal` when it is exactly the upper triangle) or an added mask ->
      `graph.attention`.

    Input: graph-dialect IR after canonicalization (broadcasts merged,
    constants folded). Output: the same function with the patterns replaced;
    the decomposed ops become dead and the canonicalizer removes them.
    Numerics: a composite computes the same function, more stably (e.g. a
    softmax without the max subtraction gains it).

    Example:
    ```mlir
    %m = graph.reduce_mean %x, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    ... (x - m) / sqrt(var + 1e-5) * %g + %b ...
    // becomes
    %y = graph.layer_norm %x scale %g bias %b, axis = 1, epsilon = 1.0e-05 ...
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

#endif // TRAINC_COMPILER_PASSES_TD
