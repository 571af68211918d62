//===- GraphCompositeOps.td - graph dialect composite ops ----*- tablegen -*-===//
//
// Included by GraphOps.td (its op classes and includes apply). Composites
// are ops with fast kernels and known gradients that recognition forms from
// decomposed math, plus the fused backward and optimizer ops that gradient
// rules and the optimizer pass build. Constraint numbers (C1)... are cited
// in GraphOps.cpp and each has a failing case in
// test/Dialect/Graph/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHCOMPOSITEOPS_TD
#define TRAINC_DIALECT_GRAPH_GRAPHCOMPOSITEOPS_TD

//===----------------------------------------------------------------------===//
// Composites: ops with fast kernels and known gradients
//===----------------------------------------------------------------------===//

def Graph_SoftmaxOp : Graph_Op<"softmax", [SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "softmax along one dimension";
  let description = [{
    `result = exp(x - max(x)) / sum(exp(x - max(x)))` along `dim`, computed
    in at least f32.

    Constraints:
    - (C1) `dim` is in [0, rank(operand)).
    - (C2) the operand and the result have the same type.

    Example:
    ```mlir
    %p = graph.softmax %scores, dim = 3 : tensor<2x4x32x32xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, I64Attr:$dim);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_GeluOp : Graph_Op<"gelu", [Elementwise, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    Graph_InPlaceOpInterface]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `erf`: `0.5 * x * (1 + erf(x / sqrt(2)))`;
    `tanh`: `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`,
    as PyTorch's `gelu(approximate="none" | "tanh")`.

    Constraints:
    - (C1) the operand and the result have the same type.

    Example:
    ```mlir
    %h = graph.gelu %x, approximation = tanh : tensor<8x32x256xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand,
                       Graph_GeluApproximation:$approximation);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` `approximation` `=` $approximation attr-dict `:` type($result)
  }];
}

def Graph_GeluGradOp : Graph_Op<"gelu_grad", [Elementwise,
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "the input gradient of gelu";
  let description = [{
    `cotangent * gelu'(operand)` for the given approximation, in one pass
    (the gradient rule of `graph.gelu`; decomposed it took a dozen
    elementwise ops, each a pass over memory):
    erf: `gelu'(x) = Phi(x) + x * phi(x)` with `Phi(x) = 0.5 * (1 +
    erf(x / sqrt(2)))` and `phi(x) = exp(-x^2 / 2) / sqrt(2 pi)`;
    tanh: with `k = sqrt(2 / pi)`, `u = k * (x + 0.044715 x^3)`,
    `t = tanh(u)`: `gelu'(x) = 0.5 * (1 + t) + 0.5 * x * (1 - t^2) * k *
    (1 + 3 * 0.044715 x^2)`.

    Constraints:
    - (C1) the operands and the result have the same type.

    Example:
    ```mlir
    %dx = graph.gelu_grad %x, %g, approximation = erf : tensor<8x32x256xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, Graph_FloatTensor:$cotangent,
                       Graph_GeluApproximation:$approximation);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $cotangent `,` `approximation` `=` $approximation attr-dict
    `:` type($result)
  }];
}

def Graph_NormGradOp : Graph_InferredOp<"norm_grad", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "the input gradient of layer_norm and rms_norm";
  let description = [{
    Over the normalized dimensions `axis..rank-1` (means below are over
    them), with `rstd = 1 / sqrt(mean(c^2) + epsilon)` where `c = x -
    mean(x)` (`centered`, layer_norm) or `c = x` (rms_norm), `xhat = c *
    rstd` and `dxhat = cotangent * scale` (`scale` absent: 1):
    `input_grad = rstd * (dxhat - xhat * mean(dxhat * xhat) - mean(dxhat))`,
    the last term only when `centered`. `normalized` is `xhat`, from which
    the rule takes the scale's gradient (`sum(cotangent * xhat)`). One pass
    per row, in the operands' type (the rule widens 16-bit types first).

    Constraints:
    - (C1) `axis` is in [0, rank(input)).
    - (C2) `scale` has the normalized shape `input.shape[axis:]`.
    - (C3) `scale` has the input's element type.
    - (C4) `epsilon` is finite and not negative.
    - (C5) `cotangent` has the input's type.
    - (C6) the result types are the inferred ones (the input's type).

    Example:
    ```mlir
    %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 2, epsilon = 1.0e-05, centered = true
           : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$scale,
                       Graph_FloatTensor:$cotangent,
                       I64Attr:$axis, F64Attr:$epsilon, BoolAttr:$centered);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$normalized);
  let assemblyFormat = [{
    $input (`scale` $scale^)? `,` $cotangent `,` `axis` `=` $axis `,`
    `epsilon` `=` $epsilon `,` `centered` `=` $centered attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_NormGradParamsOp : Graph_InferredOp<"norm_grad_params", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface,
                              ["canOverwriteOperand"]>]> {
  let summary = "norm_grad with the gradients of the norm's scale and bias";
  let description = [{
    `graph.norm_grad`'s `input_grad`, and the sums over the leading
    dimensions `0..axis-1` that the norms' gradient rule takes from its
    `normalized` result:
    `scale_grad = reduce_sum(cotangent * xhat)` and, when present,
    `bias_grad = reduce_sum(cotangent)`, each product rounded to the element
    type and the sums made as `graph.reduce_sum` makes them (in f64, rounded
    once), in an order fixed by the shape
    (runtime/src/math/NormParamSums.h). The pass `trainc-fuse-norm-grad`
    forms it after the pipeline's differentiation (so it has no gradient
    rule), where the unfused ops write `xhat` and the product, each the
    size of the input, only to sum them.

    With `addend`, `input_grad` is `addend + dx` (dx the norm's input
    gradient, rounded to the element type, then the sum rounded to it: a
    `graph.add` of the two), the gradient of a residual stream summed where
    the norm writes its own. With `narrowed_type` (bf16 or f16, for f32),
    a last result, `narrowed_input_grad`, is `input_grad` rounded to that
    type as `graph.convert` rounds it (the copy a 16-bit matmul reads).
    `trainc-fuse-norm-grad` folds such an add and convert in
    (`--fuse-residual-grad`). `input_grad` may take the addend's memory
    (each element of the addend is read before that element of
    `input_grad` is written).

    Constraints:
    - (C1) to (C5): those of `graph.norm_grad`, with `scale` present.
    - (C6) the element type is f32 or f64 (the gradient rule widens 16-bit
      types before `graph.norm_grad`).
    - (C7) the result types are the inferred ones: `input_grad` the input's,
      `scale_grad` and `bias_grad` the scale's, `narrowed_input_grad` the
      input's shape in `narrowed_type`.
    - (C8) `addend`, when present, has the input's type.
    - (C9) `narrowed_type`, when present, is bf16 or f16, and the element
      type is f32.

    Example:
    ```mlir
    %dx, %ds, %db = graph.norm_grad_params %x scale %s, %g, axis = 2,
           epsilon = 1.0e-05, centered = true
           : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>)
           -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
    // The residual stream's gradient %r added, and the sum's bf16 copy:
    %sum, %ds2, %db2, %sum16 = graph.norm_grad_params %x scale %s, %g
           addend %r, axis = 2, epsilon = 1.0e-05, centered = true
           {narrowed_type = bf16, with_bias_grad}
           : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<8x32x64xf32>,
              tensor<8x32x64xf32>)
           -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>,
               tensor<8x32x64xbf16>)
    ```
  }];
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
    /// The bias's gradient (with_bias_grad), or null.
    ::mlir::Value getBiasGrad() {
      return getWithBiasGrad() ? getExtraGrads().front() : ::mlir::Value();
    }
    /// input_grad rounded to narrowed_type, or null.
    ::mlir::Value getNarrowedInputGrad() {
      return getNarrowedType() ? getExtraGrads().back() : ::mlir::Value();
    }
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$cotangent,
                       Optional<Graph_FloatTensor>:$addend,
                       I64Attr:$axis, F64Attr:$epsilon, BoolAttr:$centered,
                       UnitAttr:$with_bias_grad,
                       OptionalAttr<TypeAttr>:$narrowed_type);
  /// extra_grads: bias_grad (with_bias_grad), then narrowed_input_grad
  /// (narrowed_type); getBiasGrad and getNarrowedInputGrad name them.
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$scale_grad,
                      Variadic<Graph_FloatTensor>:$extra_grads);
  let assemblyFormat = [{
    $input `scale` $scale `,` $cotangent (`addend` $addend^)? `,` `axis` `=`
    $axis `,` `epsilon` `=` $epsilon `,` `centered` `=` $centered attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_AdamwUpdateOp : Graph_Op<"adamw_update", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface,
                              ["canOverwriteOperand"]>]> {
  let summary = "one AdamW step of a group of parameters";
  let description = [{
    The AdamW update the optimizer pass builds for f32 or f64 parameters,
    as one op over every parameter that shares the step's scalars (a
    multi-tensor update: one pass over each parameter and its moments,
    where the decomposed update took a dozen elementwise ops per parameter
    and materialized broadcasts of its scalars, and a few kernel launches
    for the group where it took one per parameter). Elementwise, each operation rounded to the parameter's type
    in this order (PyTorch's AdamW):
    ```
    g'  = grad * grad_scale                  (clipping; 1 when not clipped)
    p'  = param * decay_factor               (1 - lr * wd; 1 when not decayed)
    m1  = exp_avg * beta1 + (1 - beta1) * g'
    v1  = exp_avg_sq * beta2 + (1 - beta2) * (g' * g')
    new_param = p' + neg_step_size * (m1 / (sqrt(v1) / bias_correction2_sqrt + epsilon))
    ```
    with `neg_step_size = -lr / (1 - beta1^t)` and
    `bias_correction2_sqrt = sqrt(1 - beta2^t)`. The constants `beta1`,
    `1 - beta1`, `beta2`, `1 - beta2` and `epsilon` are computed in f64 and
    rounded to the parameters' type. The N parameters of a group are
    independent: `params[i]` is updated with `grads[i]`, `exp_avgs[i]` and
    `exp_avg_sqs[i]`. The results are the N new parameters, then the N new
    first moments, then the N new second moments; an executable writes
    them over the old ones in place. With `skip` (a 0-d i1, true when the
    step's loss or gradients are not finite) the results are the old
    parameters and moments unchanged: a bad step touches no weight. Not
    differentiable (it follows the backward pass).

    Constraints:
    - (C1) `params[i]`, `grads[i]`, `exp_avgs[i]`, `exp_avg_sqs[i]` and
      the three results of parameter i have one type.
    - (C2) the four scalar operands are 0-d with the parameters' element
      type, which every parameter has.
    - (C3) `beta1` and `beta2` are in [0, 1) and `epsilon` is finite and not
      negative.
    - (C4) `skip`, when present, is a 0-d i1.
    - (C5) there is at least one parameter, and one gradient, first and
      second moment per parameter, and three results per parameter.

    Example:
    ```mlir
    %p1, %q1, %m1, %n1, %v1, %w1 = graph.adamw_update params(%p, %q),
        grads(%g, %h), exp_avgs(%m, %n), exp_avg_sqs(%v, %w),
        scalars(%step, %bc2, %decay, %clip),
        beta1 = 9.000000e-01, beta2 = 9.990000e-01, epsilon = 1.000000e-08
        : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
           tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
           tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
            tensor<4x8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$params,
                       Variadic<Graph_FloatTensor>:$grads,
                       Variadic<Graph_FloatTensor>:$exp_avgs,
                       Variadic<Graph_FloatTensor>:$exp_avg_sqs,
                       Graph_FloatTensor:$neg_step_size,
                       Graph_FloatTensor:$bias_correction2_sqrt,
                       Graph_FloatTensor:$decay_factor,
                       Graph_FloatTensor:$grad_scale,
                       Optional<Graph_PredTensor>:$skip,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon);
  let results = (outs Variadic<Graph_FloatTensor>:$updated);
  let assemblyFormat = [{
    `params` `(` $params `)` `,` `grads` `(` $grads `)` `,`
    `exp_avgs` `(` $exp_avgs `)` `,` `exp_avg_sqs` `(` $exp_avg_sqs `)` `,`
    `scalars` `(` $neg_step_size `,` $bias_correction2_sqrt `,`
    $decay_factor `,` $grad_scale `)` (`skip` $skip^)? `,` `beta1` `=`
    $beta1 `,` `beta2` `=` $beta2 `,` `epsilon` `=` $epsilon attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The results of the group: N new parameters, first and second moments.
    ::mlir::ResultRange getNewParams() {
      return getUpdated().take_front(getParams().size());
    }
    ::mlir::ResultRange getNewExpAvgs() {
      return getUpdated().slice(getParams().size(), getParams().size());
    }
    ::mlir::ResultRange getNewExpAvgSqs() {
      return getUpdated().take_back(getParams().size());
    }
  }];
  let hasVerifier = 1;
}

def Graph_SumOfSquaresOp : Graph_Op<"sum_of_squares", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "the sum of the squares of every element of its operands";
  let description = [{
    Each element squared in its operand's type (rounded to it; a 16-bit
    element's square exactly, so that an f16 gradient above 256
    does not make the norm infinite), the squares of all operands summed
    in f64: the optimizer pass's global
    gradient norm squared, over every gradient in one op (a few kernel
    launches and no gradient-sized temporary, where a multiply and a
    reduction per gradient took two launches and wrote the squares). The
    op leaves the order of the sum to the runtime, whose devices share one
    fixed order (runtime/src/math/SumOfSquares.h): deterministic, the same
    bits on the CPU and a GPU.

    Constraints:
    - (C1) there is at least one operand.
    - (C2) the result is a 0-d f64.
    - (C3) the operands have one element type.

    Example:
    ```mlir
    %sq = graph.sum_of_squares %g, %h : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f64>
    ```
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$operands);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $operands attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout", [
    AllTypesMatch<["operand", "result"]>, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Graph_RandomOpInterface>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "inverted dropout with a reproducible mask";
  let description = [{
    Zeroes each element with probability `ratio` and scales the others by
    `1 / (1 - ratio)`; `mask` is true where the element was kept. The mask
    is a pure function of (`seed`, the training step, the element's index)
    computed by a counter-based generator, so the backward pass and
    recomputation replay exactly the mask of the forward pass, and two runs
    with the same seed agree bit for bit. On a mesh, the rank with index i
    on the `data` axis draws with `seed + i * data_seed_stride` (the
    partition phase sets the stride, so data-parallel ranks draw the masks
    of one rank's micro-batches under grad-accum; 0 by default). With
    `blocks = n` (tensor parallelism: `trainc-partition` splits dimension
    `block_dim` over the mesh's `tensor` axis of n ranks) the op holds
    block c of that dimension, c this rank's coordinate on the axis, and
    numbers its elements as those of the whole (dimension `block_dim` n
    times as large), from the block's first: each rank draws its part of
    one device's mask.

    Constraints:
    - (C1) `ratio` is in [0, 1).
    - (C2) the operand and the result have the same type (the mask has the
      operand's shape, element type i1).
    - (C3) `blocks` is at least 1; above 1 only with a `ratio` above 0,
      equal to the size of the module's mesh axis `tensor`, and with
      `block_dim` a dimension of the operand.

    Example:
    ```mlir
    %y, %mask = graph.dropout %x, ratio = 1.000000e-01, seed = 7 : tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, F64Attr:$ratio, I64Attr:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$data_seed_stride,
                       DefaultValuedAttr<I64Attr, "1">:$blocks,
                       DefaultValuedAttr<I64Attr, "0">:$block_dim);
  let results = (outs Graph_FloatTensor:$result, Graph_PredTensor:$mask);
  let assemblyFormat = [{
    $operand `,` `ratio` `=` $ratio `,` `seed` `=` $seed attr-dict `:` type($operand)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_LayerNormOp : Graph_InferredOp<"layer_norm", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `axis..rank-1` (the "normalized shape", as
    ONNX LayerNormalization and PyTorch's layer_norm):
    `y = (x - mean) / sqrt(var + epsilon) * scale + bias`, with the biased
    variance, computed in at least f32. `scale` and `bias` are optional
    (absent: 1 and 0).

    Constraints:
    - (C1) `axis` is in [0, rank(input)).
    - (C2) `scale` and `bias` have the normalized shape `input.shape[axis:]`.
    - (C3) `scale` and `bias` have the input's element type.
    - (C4) `epsilon` is finite and not negative.
    - (C5) the result type is the inferred one (the input's type), or for
      an f32 input the same shape in bf16 or f16: the f32 result rounded
      once, as a convert of it would be (the lower phase's fusion narrows
      a norm whose only use is such a convert).

    Example:
    ```mlir
    %y = graph.layer_norm %x scale %g bias %b, axis = 2, epsilon = 1.0e-05
           : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
    ```
  }];
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
    /// The inferred type, or bf16/f16 in place of f32 (C5).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$scale,
                       Optional<Graph_FloatTensor>:$bias,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^)? (`bias` $bias^)? `,` `axis` `=` $axis `,`
    `epsilon` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_RmsNormOp : Graph_InferredOp<"rms_norm", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "root-mean-square normalization over the trailing dimensions";
  let description = [{
    `y = x / sqrt(mean(x^2) + epsilon) * scale` over dimensions
    `axis..rank-1`, computed in at least f32 (Llama's RMSNorm). `scale` is
    optional (absent: 1).

    Constraints:
    - (C1) `axis` is in [0, rank(input)).
    - (C2) `scale` has the normalized shape `input.shape[axis:]`.
    - (C3) `scale` has the input's element type.
    - (C4) `epsilon` is finite and not negative.
    - (C5) the result type is the inferred one (the input's type), or for
      an f32 input the same shape in bf16 or f16, as layer_norm's.

    Example:
    ```mlir
    %y = graph.rms_norm %x scale %g, axis = 2, epsilon = 1.0e-06
           : (tensor<8x32x64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$scale,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
    /// The inferred type, or bf16/f16 in place of f32 (C5).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
  let assemblyFormat = [{
    $input (`scale` $scale^)? `,` `axis` `=` $axis `,` `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_AttentionOp : Graph_InferredOp<"attention", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_RandomOpInterface, ["drawsMasks"]>]> {
  let summary = "scaled dot-product attention";
  let description = [{
    For query `[B, Hq, Sq, D]`, key `[B, Hk, Sk, D]` and value
    `[B, Hk, Sk, Dv]`:
    `result = softmax(scale * q @ k^T + mask) @ v`, shape `[B, Hq, Sq, Dv]`.
    Grouped-query attention: query head `h` uses key/value head
    `h / (Hq / Hk)`. `mask` is added to the scores; each of its dimensions
    is 1 (broadcast) or the scores' size. With `causal`, query `i` attends
    to key `j` only when `j <= i + (Sk - Sq)` (aligned to the last key, as
    in KV-cached decoding; `j <= i` when Sq == Sk). A row with no key to
    attend to gives zeros. Softmax is computed in at least f32. With
    `softcap = c` the scores are capped before the mask is added (Gemma 2's
    logit soft-capping): `s = c * tanh(scale * q @ k^T / c)`.

    Dropout: with `dropout = r`, the probabilities are `graph.dropout`'s of
    ratio r and seed `seed` (and `data_seed_stride`) applied to the
    `[B, Hq, Sq, Sk]` probabilities before the product with v: `result =
    dropout(softmax(...)) @ v`, each kept probability scaled by
    `1 / (1 - r)`. Element (b, h, i, j) is kept as graph.dropout keeps the
    element of that row-major index, so the fused op draws exactly the
    mask of the ops it replaces, and its gradient and a recomputation
    draw it again from the seed and the step; no mask is stored. With
    `head_blocks = n` (tensor parallelism: `trainc-partition` splits the
    heads over the mesh's `tensor` axis of n ranks) the op holds block c of
    the heads, c this rank's coordinate on that axis, and numbers its
    probabilities as elements of the whole `[B, n Hq, Sq, Sk]`, from head
    `c Hq`: each rank draws its heads' part of one device's mask.

    Constraints:
    - (C1) query, key and value have rank 4.
    - (C2) query, key and value have the same batch size.
    - (C3) query and key have the same head dimension D.
    - (C4) key and value have the same number of heads and sequence length.
    - (C5) the number of query heads is a multiple of the key heads.
    - (C6) `mask`, when present, has rank 4 and each dimension is 1 or the
      size of that dimension of the scores `[B, Hq, Sq, Sk]`.
    - (C7) all operands have the same element type.
    - (C8) `scale` is finite.
    - (C9) the result type is the inferred one.
    - (C10) `seq_major`, when present, lists tensor numbers (query 0, key
      1, value 2, result 3) in increasing order.
    - (C11) `qkv_heads = [Hq, Hk]`, when present, has two entries of at
      least 1, `seq_major` lists query, key and value, and they have one
      type, `[B, S, Hq + 2 Hk, D]`.
    - (C12) there is a second result, `lse`, exactly when `with_lse` is
      set: `[B, Hq, Sq]` of f32 (f64 for f64 operands).
    - (C13) `softcap`, when present, is finite and positive.
    - (C14) `dropout`, when present, is in [0, 1).
    - (C15) `head_blocks` is at least 1; above 1 only with a `dropout`
      above 0, and equal to the size of the module's mesh axis `tensor`.

    Statistics: with `with_lse`, `lse[b, h, i]` is the log-sum-exp of row
    i's scores over the keys it may see (-inf for a row with none), what
    the softmax divides by: `graph.attention_grad` reads it with the
    result instead of remaking the softmax (`trainc-attention-stats`,
    lower phase, where the program has both ops).

    Layout: the shapes above are logical. A tensor whose number is in
    `seq_major` is stored `[B, S, H, D]` (sequence before heads), the
    layout of a projection's output reshaped into heads; the lower phase
    sets it where the program would otherwise transpose heads in or out
    (`trainc-absorb-transposes`). With `qkv_heads`, query, key and value
    are read from one fused projection's output, reshaped to
    `[B, S, Hq + 2 Hk, D]`: the query is its heads `[0, Hq)`, the key
    `[Hq, Hq + Hk)` and the value the last Hk (`trainc-read-qkv-in-place`,
    lower phase, where the program sliced them out). The mask is always
    `[B, H, Sq, Sk]`.

    Example:
    ```mlir
    %o = graph.attention %q, %k, %v, scale = 0.125, causal
           : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
           -> tensor<8x4x32x16xf32>
    // Gemma 2's capped scores: 50 * tanh(0.125 * q k^T / 50).
    %oc = graph.attention %q, %k, %v, scale = 0.125, causal {softcap = 50.0}
           : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
           -> tensor<8x4x32x16xf32>
    // Dropout of ratio 0.1 on the probabilities, BERT's and GPT-2's:
    %od = graph.attention %q, %k, %v, scale = 0.125 {dropout = 0.1, seed = 7}
           : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
           -> tensor<8x4x32x16xf32>
    // The same, q and the result stored [B, S, H, D]:
    %o2 = graph.attention %qs, %k, %v, scale = 0.125, causal
            {seq_major = array<i64: 0, 3>}
           : (tensor<8x32x4x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
           -> tensor<8x32x4x16xf32>
    // q, k and v: 4 heads each of one [B, S, 12, D] projection.
    %o3 = graph.attention %qkv, %qkv, %qkv, scale = 0.125, causal
            {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3>}
           : (tensor<8x32x12x16xf32>, tensor<8x32x12x16xf32>, tensor<8x32x12x16xf32>)
           -> tensor<8x32x4x16xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value,
                       Optional<Graph_FloatTensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<F64Attr>:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$data_seed_stride,
                       OptionalAttr<DenseI64ArrayAttr>:$seq_major,
                       OptionalAttr<DenseI64ArrayAttr>:$qkv_heads,
                       UnitAttr:$with_lse,
                       DefaultValuedAttr<I64Attr, "1">:$head_blocks);
  let results = (outs Graph_FloatTensor:$result,
                      Optional<Graph_FloatTensor>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? `,` `scale` `=` $scale
    (`,` `causal` $causal^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
    /// Whether tensor `i` (C10's numbering) is stored [B, S, H, D].
    bool isSeqMajor(int i) {
      return getSeqMajor() && llvm::is_contained(*getSeqMajor(), i);
    }
    /// The logical [B, H, S, D] sizes of tensor `i` (C10's numbering),
    /// read through `seq_major` and `qkv_heads`.
    ::llvm::SmallVector<int64_t, 4> logicalDims(int i);
  }];
}

def Graph_SoftmaxCrossEntropyOp : Graph_InferredOp<"softmax_cross_entropy", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "softmax cross-entropy with integer targets";
  let description = [{
    Logits `[..., C]` (classes last) and integer targets `[...]`:
    `loss[i] = logsumexp(logits[i, :]) - logits[i, targets[i]]`, computed in
    at least f32. Positions whose target equals `ignore_index` contribute
    nothing. `reduction = mean` divides the sum by the number of positions
    not ignored (as PyTorch's `cross_entropy`; NaN when all are ignored),
    `sum` adds them, `none` returns the per-position loss (0 where ignored).
    A target outside [0, C) that is not `ignore_index` is a runtime error.
    With `classes` (set by `trainc-pad-classes`), only the first `classes`
    entries of the last dimension are classes, C = `classes` above, and the
    others are padding that nothing reads (a class dimension padded for
    the alignment of the matmul that makes the logits).

    Constraints:
    - (C1) logits have rank at least 1.
    - (C2) targets have the logits' shape without its last dimension.
    - (C3) the result type is the inferred one: a scalar of the logits'
      element type for `mean` and `sum`, the targets' shape for `none`;
      with 16-bit logits the element type may also be f32 (the mixed
      precision policy's loss, computed from 16-bit logits without a wide
      copy of them).
    - (C4) `classes`, when present, is in [1, size of the last dimension].

    Example:
    ```mlir
    %loss = graph.softmax_cross_entropy %logits, %targets, reduction = mean,
              ignore_index = -100
              : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$targets,
                       Graph_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<I64Attr>:$classes);
  let results = (outs Graph_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
    /// The inferred type, or f32 in place of a 16-bit element type (C3).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
  let assemblyFormat = [{
    $logits `,` $targets `,` `reduction` `=` $reduction
    (`,` `ignore_index` `=` $ignore_index^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_SoftmaxCrossEntropyGradOp : Graph_Op<"softmax_cross_entropy_grad", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface,
                              ["canOverwriteOperand"]>]> {
  let summary = "the logits gradient of softmax_cross_entropy";
  let description = [{
    `result[i, c] = (softmax(logits[i, :])[c] - (c == targets[i])) *
    weight[i]`, one pass over each row (the gradient rule of
    `graph.softmax_cross_entropy`, where `weight` is the loss's cotangent
    spread over the positions: divided by the count for `mean`, 0 where
    ignored). Decomposed, it materialized a class-index iota, broadcast
    targets and a one-hot mask the size of the logits. A target outside
    [0, C) adds no one-hot term (the forward op has already reported it
    unless it is the ignored index, whose weight is 0). The result may take
    the logits' memory: each row is read whole before it is written. With
    `classes`, as `graph.softmax_cross_entropy`'s: the softmax is over the
    first `classes` entries, and the padding's gradient is 0.

    Constraints:
    - (C1) logits have rank at least 1.
    - (C2) targets and weight have the logits' shape without its last
      dimension.
    - (C3) the result has the logits' type (the weight is any float type:
      the loss's, f32 for 16-bit logits under mixed precision).
    - (C4) `classes`, when present, is in [1, size of the last dimension].

    Example:
    ```mlir
    %dlogits = graph.softmax_cross_entropy_grad %logits, %targets, %weight
                 : (tensor<8x32x128xf32>, tensor<8x32xi64>, tensor<8x32xf32>)
                 -> tensor<8x32x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$targets,
                       Graph_FloatTensor:$weight,
                       OptionalAttr<I64Attr>:$classes);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyAndGradOp : Graph_Op<
    "softmax_cross_entropy_and_grad", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface,
                              ["canOverwriteOperand"]>]> {
  let summary = "softmax cross-entropy and its logits gradient, one pass";
  let description = [{
    `graph.softmax_cross_entropy` (`loss`, with the same `reduction`,
    `ignore_index` and `classes`) and `graph.softmax_cross_entropy_grad`
    (`grad`, with the same logits, targets, `weight` and `classes`) from
    one reading of the logits: each row's max and sum of exps are taken
    once and serve both. A training step needs both of the vocabulary's
    [positions, classes] logits, the largest activation of a language
    model; the pair read it five times and this op three (max, sum,
    gradient). The fusion pass `trainc-fuse-loss-grad` forms it after
    differentiation, so it has no gradient rule.

    `grad` is bit for bit `softmax_cross_entropy_grad`'s. `loss` is
    `(max - logits[i, t]) + log(sum)` with the gradient's softmax sum,
    whose order differs from `softmax_cross_entropy`'s (in f32, a few
    units in the last place of the loss; nothing the gradient reads). A
    target outside [0, C) that is not `ignore_index` is a runtime error,
    as for the loss. `grad` may take the logits' memory.

    Constraints:
    - (C1) logits have rank at least 1.
    - (C2) targets and weight have the logits' shape without its last
      dimension.
    - (C3) `loss` has `graph.softmax_cross_entropy`'s type: a scalar for
      `mean` and `sum`, the targets' shape for `none`, of the logits'
      element type or, for 16-bit logits, f32.
    - (C4) `grad` has the logits' type.
    - (C5) `classes`, when present, is in [1, size of the last dimension].

    Example:
    ```mlir
    %loss, %dlogits = graph.softmax_cross_entropy_and_grad %logits, %targets,
        %weight, reduction = mean
        : (tensor<8x32x128xbf16>, tensor<8x32xi64>, tensor<8x32xf32>)
        -> (tensor<f32>, tensor<8x32x128xbf16>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$targets,
                       Graph_FloatTensor:$weight,
                       Graph_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<I64Attr>:$classes);
  let results = (outs Graph_FloatTensor:$loss, Graph_FloatTensor:$grad);
  let assemblyFormat = [{
    $logits `,` $targets `,` $weight `,` `reduction` `=` $reduction
    (`,` `ignore_index` `=` $ignore_index^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_DotGeneralBiasOp : Graph_InferredOp<"dot_general_bias", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "dot_general with a bias added to every row of its result";
  let description = [{
    `dot_general(lhs, rhs) + broadcast(bias)`: `bias`, which has the shape
    of rhs's free dimensions (the result's last ones), added over the
    batching and lhs free dimensions to the product's sums as
    `graph.dot_general` forms them with the same dimension attributes (in
    f32, f64 for f64), in that precision, and the result rounded to the
    element type. For f32 and f64 that is bit for bit `graph.dot_general`
    then `graph.add`; for bf16 and f16 it is one rounding fewer (the
    unfused pair rounds the product to 16 bits before adding), which is
    what a GPU GEMM's bias epilogue computes.
    The fusion pass `trainc-fuse-bias` forms it from a dot_general and an
    add of a broadcast bias, after the pass pipeline's differentiation, so
    it has no gradient rule; the kernel adds the bias to each block of the
    product while the block is still in cache, instead of broadcasting the
    bias into a tensor of the result's size and adding that.

    Constraints:
    - (C1) to (C7): those of `graph.dot_general`.
    - (C8) `bias` has the shape of rhs's free dimensions, in order.
    - (C9) `bias` has the operands' element type.
    - (C10) the result type is the inferred one (that of the product).
    - (C11) `tf32` (the product's operands rounded to TF32, as in
      `graph.dot_general`) is set only on f32 operands.

    Example (a linear layer x @ w^T + b):
    ```mlir
    %y = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [],
           contracting_dims = [2] x [1]
           : (tensor<8x128x256xf32>, tensor<768x256xf32>, tensor<768xf32>)
           -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       Graph_FloatTensor:$bias,
                       DenseI64ArrayAttr:$lhs_batching_dimensions,
                       DenseI64ArrayAttr:$rhs_batching_dimensions,
                       DenseI64ArrayAttr:$lhs_contracting_dimensions,
                       DenseI64ArrayAttr:$rhs_contracting_dimensions,
                       UnitAttr:$tf32);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias `,` `batching_dims` `=` $lhs_batching_dimensions
    `x` $rhs_batching_dimensions `,` `contracting_dims` `=`
    $lhs_contracting_dimensions `x` $rhs_contracting_dimensions attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_DotGeneralBiasGeluOp : Graph_InferredOp<"dot_general_bias_gelu", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "dot_general_bias and gelu of its result, in one op";
  let description = [{
    Two results: `preactivation` is `graph.dot_general_bias` of the
    operands with the same attributes (bit for bit its value), and
    `result` is `graph.gelu` of `preactivation` with `approximation` (bit
    for bit its value: gelu of the rounded sums). A transformer MLP's
    first layer, whose output's gradient (`graph.gelu_grad`) reads the
    pre-activation; a GPU GEMM's GELU epilogue (cuBLASLt's GELU_AUX_BIAS)
    writes both while the tile is in registers, applying GELU to the f32
    sums before their rounding (within the 16-bit tolerance of the same
    value). The fusion pass `trainc-fuse-gelu` forms it after
    differentiation, so it has no gradient rule.

    Constraints:
    - (C1) to (C11): those of `graph.dot_general_bias`.
    - (C12) the result types are the inferred ones: both the product's.

    Example (GPT-2's c_fc and its GELU):
    ```mlir
    %h, %pre = graph.dot_general_bias_gelu %x, %w, %b,
           batching_dims = [] x [], contracting_dims = [2] x [1],
           approximation = tanh
           : (tensor<8x128x768xbf16>, tensor<3072x768xbf16>, tensor<3072xbf16>)
           -> (tensor<8x128x3072xbf16>, tensor<8x128x3072xbf16>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       Graph_FloatTensor:$bias,
                       DenseI64ArrayAttr:$lhs_batching_dimensions,
                       DenseI64ArrayAttr:$rhs_batching_dimensions,
                       DenseI64ArrayAttr:$lhs_contracting_dimensions,
                       DenseI64ArrayAttr:$rhs_contracting_dimensions,
                       Graph_GeluApproximation:$approximation,
                       UnitAttr:$tf32);
  let results = (outs Graph_FloatTensor:$result,
                      Graph_FloatTensor:$preactivation);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias `,` `batching_dims` `=` $lhs_batching_dimensions
    `x` $rhs_batching_dimensions `,` `contracting_dims` `=`
    $lhs_contracting_dimensions `x` $rhs_contracting_dimensions `,`
    `approximation` `=` $approximation attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_DotGeneralGeluGradOp : Graph_InferredOp<"dot_general_gelu_grad", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "gelu_grad of a pre-activation and a dot_general, in one op";
  let description = [{
    `graph.gelu_grad(preactivation, dot_general(lhs, rhs))` with the
    dot_general's attributes and `approximation`: the product rounded to
    its element type, then the GELU's gradient at `preactivation` times it
    (bit for bit that pair). The gradient that reaches a transformer MLP's
    GELU is such a product (the output's gradient times the second
    layer's weight); a GPU GEMM's DGELU epilogue (cuBLASLt's) multiplies
    each tile by gelu' of the pre-activation before the tile is stored,
    from the unrounded f32 sums (within the 16-bit tolerance of the same
    value). The fusion pass `trainc-fuse-gelu` forms it after
    differentiation, so it has no gradient rule.

    Constraints:
    - (C1) to (C7): those of `graph.dot_general`.
    - (C8) `preactivation` has the result's type.
    - (C9) `tf32` (as in `graph.dot_general`) is set only on f32 operands.
    - (C10) the result type is the inferred one (that of the product).

    Example (GPT-2's MLP: the gradient at its GELU's input):
    ```mlir
    %dh = graph.dot_general_gelu_grad %dy, %w, %pre, batching_dims = [] x [],
           contracting_dims = [2] x [0], approximation = tanh
           : (tensor<8x128x768xbf16>, tensor<768x3072xbf16>,
              tensor<8x128x3072xbf16>) -> tensor<8x128x3072xbf16>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       Graph_FloatTensor:$preactivation,
                       DenseI64ArrayAttr:$lhs_batching_dimensions,
                       DenseI64ArrayAttr:$rhs_batching_dimensions,
                       DenseI64ArrayAttr:$lhs_contracting_dimensions,
                       DenseI64ArrayAttr:$rhs_contracting_dimensions,
                       Graph_GeluApproximation:$approximation,
                       UnitAttr:$tf32);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $preactivation `,` `batching_dims` `=`
    $lhs_batching_dimensions `x` $rhs_batching_dimensions `,`
    `contracting_dims` `=` $lhs_contracting_dimensions `x`
    $rhs_contracting_dimensions `,` `approximation` `=` $approximation
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_DotGeneralBiasGradOp : Graph_InferredOp<"dot_general_bias_grad", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "dot_general and the sum of one operand over its contraction";
  let description = [{
    Two results from one pass over the operands: `result` is
    `graph.dot_general` of `lhs` and `rhs` with the same attributes (bit
    for bit its value), and `sum` is `graph.reduce_sum` of `lhs` (of `rhs`
    with `sum_rhs`) over that operand's contracting dimensions (bit for
    bit its value: the exact sum rounded once, to f32 with `f32_sum`). A
    linear layer's weight and bias gradients: with `dy` the output's
    gradient, `dw = dy^T x` (or `x^T dy`) contracts the rows that
    `db = sum(dy)` sums, which a GPU GEMM's bias-gradient epilogue
    (cuBLASLt's BGRADB, BGRADA) computes while `dy` is in its tiles. The
    fusion pass `trainc-fuse-bias-grad` forms it after differentiation, so
    it has no gradient rule.

    Constraints:
    - (C1) to (C10): those of `graph.dot_general`.
    - (C11) there are no batching dimensions.
    - (C12) `f32_sum` (the sum kept in f32, as reduce_sum's C3) is set
      only on bf16 or f16 operands.
    - (C13) the result types are the inferred ones: the product's, and
      the summed operand's free dimensions in order, of its element type
      (f32 with `f32_sum`).

    Example (a linear layer's weight and bias gradients):
    ```mlir
    %dw, %db = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [],
           contracting_dims = [0, 1] x [0, 1]
           : (tensor<8x128x768xf32>, tensor<8x128x256xf32>)
           -> (tensor<768x256xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batching_dimensions,
                       DenseI64ArrayAttr:$rhs_batching_dimensions,
                       DenseI64ArrayAttr:$lhs_contracting_dimensions,
                       DenseI64ArrayAttr:$rhs_contracting_dimensions,
                       UnitAttr:$tf32, UnitAttr:$f32_result,
                       UnitAttr:$f32_sum, UnitAttr:$sum_rhs);
  let results = (outs Graph_FloatTensor:$result, Graph_FloatTensor:$sum);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` `batching_dims` `=` $lhs_batching_dimensions
    `x` $rhs_batching_dimensions `,` `contracting_dims` `=`
    $lhs_contracting_dimensions `x` $rhs_contracting_dimensions attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_AttentionGradOp : Graph_Op<"attention_grad", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_RandomOpInterface, ["drawsMasks"]>]> {
  let summary = "the query, key and value gradients of attention";
  let description = [{
    The gradient rule of `graph.attention` as one op, for a mask (when
    present) that needs no gradient. With `S = scale * q @ k^T + mask`
    (causal: future keys -inf), `P = softmax(S)` per row (0 for a row with
    no key), `g` the result's cotangent and `D_i = sum_j P_ij dP_ij`:
    `dP = g @ v^T`, `dS = P * (dP - D)`, `dq = scale * dS @ k`,
    `dk = scale * dS^T @ q`, `dv = P^T @ g`, the key and value gradients
    summed over the query heads of a group. With `softcap = c` (graph.attention's),
    `S = c * t + mask` with `t = tanh(scale * q @ k^T / c)`, and dS is
    multiplied by `1 - t^2` before the products with k and q. With
    `dropout = r` (graph.attention's, with its `seed`, `data_seed_stride`
    and `head_blocks`), `Z = P * keep / (1 - r)` with the forward's mask
    `keep`, `dv = Z^T @ g`, `dZ = g @ v^T`, `dP = dZ * keep / (1 - r)`
    and `D_i = sum_j Z_ij dZ_ij` (the same sum). The kernel remakes S and P one
    (batch, key head) at a time, so no [B, H, Sq, Sk] tensor is ever
    materialized (the decomposed rule kept several: for GPT-2 124M at
    sequence 1,024, 192 MiB each).

    Constraints:
    - (C1) query, key, value and the cotangent have rank 4, with
      attention's shapes (C1-C6 of graph.attention): the cotangent is
      [B, Hq, Sq, Dv].
    - (C2) all operands have one element type; the results have the
      element type and the logical shapes of query, key and value.
    - (C3) `scale` is finite.
    - (C4) `seq_major`, when present, lists tensor numbers (query 0, key 1,
      value 2, cotangent 3, the gradients of query 4, key 5, value 6) in
      increasing order; the shapes of C1 and C2 are read through it, as
      graph.attention's.
    - (C5) `qkv_heads`, when present, is graph.attention's (C11): query,
      key and value are windows of heads of `[B, S, Hq + 2 Hk, D]`
      tensors.
    - (C6) there are three results (the gradients of query, key and
      value), or, with `qkv_heads` and `seq_major` listing 4, 5 and 6, one:
      the gradient of the fused projection, `[B, S, Hq + 2 Hk, D]` of the
      query's element type, with the gradients of query, key and value in
      their windows (`trainc-read-qkv-in-place`, where the program
      concatenated them).
    - (C7) `stats`, when present, are two operands: the forward's result,
      of the cotangent's type (stored as it is: seq_major 3), and its
      log-sum-exps, `[B, Hq, Sq]` of f32 (f64 for f64 operands); C2's one
      element type does not include the latter. They must be what
      graph.attention with `with_lse` gives for these operands
      (`trainc-attention-stats` pairs the two ops): the kernels take
      `P = exp(S - lse)` and `D_i` from them.
    - (C8) `softcap`, when present, is finite and positive.
    - (C9) `dropout`, when present, is in [0, 1).
    - (C10) `head_blocks` is graph.attention's (C15).

    Example:
    ```mlir
    %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %g, scale = 0.125, causal
        : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>,
           tensor<8x4x32x16xf32>)
        -> (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
    // Windows of one projection [B, S, 4 + 2 * 4, D], and its gradient:
    %dqkv = graph.attention_grad %qkv, %qkv, %qkv, %gs, scale = 0.125, causal
        {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
        : (tensor<8x32x12x16xf32>, tensor<8x32x12x16xf32>, tensor<8x32x12x16xf32>,
           tensor<8x32x4x16xf32>) -> tensor<8x32x12x16xf32>
    // With the forward's result and log-sum-exps:
    %o, %lse = graph.attention %q, %k, %v, scale = 0.125, causal {with_lse}
        : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
        -> (tensor<8x4x32x16xf32>, tensor<8x4x32xf32>)
    %dq2, %dk2, %dv2 = graph.attention_grad %q, %k, %v, %g stats(%o, %lse),
        scale = 0.125, causal
        : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>,
           tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32xf32>)
        -> (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value, Graph_FloatTensor:$cotangent,
                       Optional<Graph_FloatTensor>:$mask,
                       Variadic<Graph_FloatTensor>:$stats,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<F64Attr>:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$data_seed_stride,
                       OptionalAttr<DenseI64ArrayAttr>:$seq_major,
                       OptionalAttr<DenseI64ArrayAttr>:$qkv_heads,
                       DefaultValuedAttr<I64Attr, "1">:$head_blocks);
  let results = (outs Variadic<Graph_FloatTensor>:$grads);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cotangent (`mask` $mask^)?
    (`stats` `(` $stats^ `)`)? `,` `scale` `=` $scale
    (`,` `causal` $causal^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Whether tensor `i` (C4's numbering) is stored [B, S, H, D].
    bool isSeqMajor(int i) {
      return getSeqMajor() && llvm::is_contained(*getSeqMajor(), i);
    }
    /// Whether the op writes one gradient, the fused projection's (C6).
    bool hasPackedGrad() { return getGrads().size() == 1; }
    /// Whether it reads the forward's result and log-sum-exps (C7).
    bool hasStats() { return !getStats().empty(); }
    /// The logical [B, H, S, D] sizes of tensor `i` (C4's numbering),
    /// read through `seq_major` and `qkv_heads`.
    ::llvm::SmallVector<int64_t, 4> logicalDims(int i);
  }];
  let hasVerifier = 1;
}

#endif // TRAINC_DIALECT_GRAPH_GRAPHCOMPOSITEOPS_TD
