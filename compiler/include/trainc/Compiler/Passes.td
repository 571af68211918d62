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

def Autodiff : Pass<"trainc-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of @main's loss w.r.t. its trainable parameters";
  let description = [{
    Input: `@main` in the graph dialect with parameter arguments
    (`graph.param`, trainable unless `graph.frozen`) and a scalar float
    result named by `loss` (`graph.output`).

    Output: the same function, extended with one result per trainable
    parameter, in argument order: the gradient of the loss with respect to
    it, named `<parameter>.grad`. The backward pass is built by a reverse
    sweep over the ops in value semantics: each op's GradientOpInterface
    rule turns its results' cotangents into its operands' cotangents, and a
    value used several times (a tied embedding) accumulates the sum. Integer
    values carry no gradient. A parameter that does not reach the loss gets
    a zero gradient.

    Errors: a loss that is missing or not a scalar float; an op without a
    gradient rule on a path from a trainable parameter to the loss (named
    with its location).

    Example:
    ```mlir
    func.func @main(%w: tensor<4xf32> {graph.param = "w", ...}, %x: ...)
        -> (tensor<f32> {graph.output = "loss"}) { ... }
    // becomes
    func.func @main(...) -> (tensor<f32> {graph.output = "loss"},
                             tensor<4xf32> {graph.output = "w.grad"})
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"loss\"",
           "Name (graph.output) of the scalar loss to differentiate">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

#endif // TRAINC_COMPILER_PASSES_TD
