//===- GraphOps.td - graph dialect operations ----------------*- tablegen -*-===//
//
// Ops in four groups: elementwise, linear algebra and reductions, data
// movement, and composites. Constraint numbers (C1)... are cited in
// GraphOps.cpp and each has a failing case in test/Dialect/Graph/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHOPS_TD
#define TRAINC_DIALECT_GRAPH_GRAPHOPS_TD

include "trainc/Dialect/Graph/GraphBase.td"
include "trainc/Dialect/Graph/GraphInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, !listconcat([Pure], traits)>;

/// An op whose result type follows from its operands and attributes. Its
/// constraints are checked by `verifyShapeConstraints()` (the ShapeChecked
/// trait), then the result type is compared with the inferred one ("result
/// type ... differs from the inferred type ...").
class Graph_InferredOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Graph_ShapeChecked, InferTypeOpAdaptor])> {
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Graph_UnaryElementwiseOp<string mnemonic, Type T, string math,
                               list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Elementwise,
          SameOperandsAndResultType, Graph_CostOpInterface,
          Graph_InPlaceOpInterface])> {
  let summary = "elementwise " # math;
  let description = "Computes `" # math # "` for each element.\n\n"
    "Constraints:\n"
    "- (C1) the operand and the result have the same type.\n"
    "- (C2) the element type is one that the op accepts (`" # T.summary # "`).\n\n"
    "Example:\n```mlir\n%y = graph." # mnemonic # " %x : tensor<4x8xf32>\n```";
  let arguments = (ins T:$operand);
  let results = (outs T:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Graph_NegOp : Graph_UnaryElementwiseOp<"neg", Graph_NumericTensor, "-x"> {
  let hasFolder = 1;
}
def Graph_AbsOp : Graph_UnaryElementwiseOp<"abs", Graph_NumericTensor, "|x|">;
def Graph_ExpOp : Graph_UnaryElementwiseOp<"exp", Graph_FloatTensor, "exp(x)">;
def Graph_LogOp : Graph_UnaryElementwiseOp<"log", Graph_FloatTensor, "log(x)">;
def Graph_TanhOp : Graph_UnaryElementwiseOp<"tanh", Graph_FloatTensor, "tanh(x)">;
def Graph_ErfOp : Graph_UnaryElementwiseOp<"erf", Graph_FloatTensor, "erf(x)">;
def Graph_SqrtOp : Graph_UnaryElementwiseOp<"sqrt", Graph_FloatTensor, "sqrt(x)"> {
  let hasFolder = 1;
}
def Graph_RsqrtOp : Graph_UnaryElementwiseOp<"rsqrt", Graph_FloatTensor, "1 / sqrt(x)">;

class Graph_BinaryElementwiseOp<string mnemonic, Type T, string math,
                                list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Elementwise,
          SameOperandsAndResultType, Graph_CostOpInterface,
          Graph_InPlaceOpInterface])> {
  let summary = "elementwise " # math;
  let description = "Computes `" # math # "` for each pair of elements at the "
    "same index. There is no implicit broadcasting: use "
    "`graph.broadcast_in_dim` first.\n\n"
    "Constraints:\n"
    "- (C1) both operands and the result have the same type.\n"
    "- (C2) the element type is one that the op accepts (`" # T.summary # "`).\n\n"
    "Example:\n```mlir\n%z = graph." # mnemonic # " %x, %y : tensor<4x8xf32>\n```";
  let arguments = (ins T:$lhs, T:$rhs);
  let results = (outs T:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Graph_AddOp : Graph_BinaryElementwiseOp<"add", Graph_NumericTensor, "x + y", [Commutative]>;
def Graph_SubOp : Graph_BinaryElementwiseOp<"sub", Graph_NumericTensor, "x - y">;
def Graph_MulOp : Graph_BinaryElementwiseOp<"mul", Graph_NumericTensor, "x * y", [Commutative]>;
def Graph_DivOp : Graph_BinaryElementwiseOp<"div", Graph_NumericTensor,
    "x / y (integers: truncated toward zero)">;
def Graph_PowOp : Graph_BinaryElementwiseOp<"pow", Graph_FloatTensor, "x ^ y"> {
  let hasFolder = 0;
}
def Graph_MaxOp : Graph_BinaryElementwiseOp<"max", Graph_NumericTensor,
    "max(x, y) (NaN if either is NaN)", [Commutative]>;
def Graph_MinOp : Graph_BinaryElementwiseOp<"min", Graph_NumericTensor,
    "min(x, y) (NaN if either is NaN)", [Commutative]>;

def Graph_CompareOp : Graph_Op<"compare", [Elementwise, SameTypeOperands,
    InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let hasFolder = 1;
  let summary = "elementwise comparison";
  let description = [{
    `result[i] = lhs[i] <direction> rhs[i]` as an i1 tensor of the operands'
    shape. Float comparisons are ordered: any comparison with NaN is false,
    except NE, which is true.

    Constraints:
    - (C1) `lhs` and `rhs` have the same type.

    Example:
    ```mlir
    %m = graph.compare LT, %x, %y : tensor<4xi64>
    ```
  }];
  let arguments = (ins Graph_ComparisonDirection:$direction, Graph_Tensor:$lhs,
                       Graph_Tensor:$rhs);
  let results = (outs Graph_PredTensor:$result);
  let assemblyFormat = "$direction `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Graph_SelectOp : Graph_Op<"select", [Elementwise,
    AllTypesMatch<["on_true", "on_false", "result"]>, Graph_CostOpInterface,
    Graph_InPlaceOpInterface]> {
  let summary = "elementwise choice between two tensors";
  let description = [{
    `result[i] = pred[i] ? on_true[i] : on_false[i]`.

    Constraints:
    - (C1) `pred` has the shape of `on_true` (the Elementwise trait).
    - (C2) `on_true`, `on_false` and the result have the same type.

    Example:
    ```mlir
    %y = graph.select %mask, %x, %neg_inf : tensor<4x4xi1>, tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_PredTensor:$pred, Graph_Tensor:$on_true,
                       Graph_Tensor:$on_false);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)";
  let hasFolder = 1;
}

def Graph_ConvertOp : Graph_Op<"convert", [Elementwise,
    SameOperandsAndResultShape, Graph_CostOpInterface]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts each element to the result's element type. Float to float
    rounds to nearest, ties to even; float to integer truncates toward zero;
    integer to float rounds to nearest; to i1 tests for non-zero; from i1
    gives 0 or 1.

    Constraints:
    - (C1) the operand and the result have the same shape.

    Example:
    ```mlir
    %h = graph.convert %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type($operand, $result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

def Graph_DotGeneralOp : Graph_InferredOp<"dot_general", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "batched matrix product over named dimensions";
  let description = [{
    A generalized (batched) matrix product, as StableHLO's dot_general
    without precision config. The result's dimensions are, in order: the
    batching dimensions (in `lhs_batching_dimensions` order), then lhs's
    remaining dimensions, then rhs's remaining dimensions. Contracting
    dimensions are summed over; accumulation is in at least f32.

    Constraints:
    - (C1) the two batching-dimension lists have the same length.
    - (C2) the two contracting-dimension lists have the same length.
    - (C3) every listed dimension is in range of its operand's rank.
    - (C4) no dimension of an operand is listed twice.
    - (C5) paired batching dimensions have the same size.
    - (C6) paired contracting dimensions have the same size.
    - (C7) `lhs` and `rhs` have the same element type.
    - (C8) the result type is the inferred one.

    Example (a batched matmul [b,m,k] x [b,k,n] -> [b,m,n]):
    ```mlir
    %c = graph.dot_general %a, %b, batching_dims = [0] x [0],
           contracting_dims = [2] x [1]
           : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batching_dimensions,
                       DenseI64ArrayAttr:$rhs_batching_dimensions,
                       DenseI64ArrayAttr:$lhs_contracting_dimensions,
                       DenseI64ArrayAttr:$rhs_contracting_dimensions);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` `batching_dims` `=` $lhs_batching_dimensions `x`
    $rhs_batching_dimensions `,` `contracting_dims` `=`
    $lhs_contracting_dimensions `x` $rhs_contracting_dimensions attr-dict
    `:` functional-type(operands, results)
  }];
}

class Graph_ReduceOp<string mnemonic, Type T, string math>
    : Graph_InferredOp<mnemonic, [
          DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "reduction by " # math # " over dimensions";
  let description = "Reduces `operand` by " # math # " over `dims`; the "
    "reduced dimensions are dropped from the result (use `graph.reshape` to "
    "keep them as size 1). Floats accumulate in at least f32.\n\n"
    "Constraints:\n"
    "- (C1) every entry of `dims` is in [0, rank(operand)).\n"
    "- (C2) `dims` has no duplicates.\n"
    "- (C3) the result type is the inferred one.\n\n"
    "Example:\n```mlir\n%s = graph." # mnemonic # " %x, dims = [1]"
    " : (tensor<4x8xf32>) -> tensor<4xf32>\n```";
  let arguments = (ins T:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs T:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $dims attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", Graph_NumericTensor, "sum">;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", Graph_NumericTensor, "maximum">;
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", Graph_FloatTensor, "mean">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Graph_BroadcastInDimOp : Graph_Op<"broadcast_in_dim", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "broadcast to a larger shape";
  let description = [{
    Operand dimension `i` becomes result dimension `dims[i]`; result
    dimensions not in `dims` are new. An operand dimension of size 1 is
    repeated along its result dimension.

    Constraints:
    - (C1) `dims` has one entry per operand dimension.
    - (C2) every entry of `dims` is in [0, rank(result)).
    - (C3) `dims` is strictly increasing (reorder with `graph.transpose`).
    - (C4) each operand dimension has size 1 or the size of its result dimension.
    - (C5) the operand and the result have the same element type.

    Example:
    ```mlir
    %b = graph.broadcast_in_dim %bias, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $dims attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Graph_ReshapeOp : Graph_Op<"reshape", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops", "getBytesAccessed"]>]> {
  let summary = "reinterpret the shape (row-major order kept)";
  let description = [{
    Same elements in the same row-major order, new shape.

    Constraints:
    - (C1) the operand and the result have the same number of elements.
    - (C2) the operand and the result have the same element type.

    Example:
    ```mlir
    %r = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_InferredOp<"transpose", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "permute dimensions";
  let description = [{
    `result.shape[i] = operand.shape[permutation[i]]`.

    Constraints:
    - (C1) `permutation` has one entry per operand dimension.
    - (C2) `permutation` is a permutation of [0, rank(operand)).
    - (C3) the result type is the inferred one.

    Example:
    ```mlir
    %t = graph.transpose %x, permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `permutation` `=` $permutation attr-dict
    `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_InferredOp<"slice", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "static strided slice";
  let description = [{
    Takes indices `start[d], start[d] + strides[d], ...` below `limit[d]` in
    each dimension `d`; result dimension `d` has
    `ceil((limit[d] - start[d]) / strides[d])` elements.

    Constraints:
    - (C1) `start`, `limit` and `strides` have one entry per operand dimension.
    - (C2) every stride is at least 1.
    - (C3) `0 <= start[d] <= limit[d] <= operand.shape[d]`.
    - (C4) the result type is the inferred one.

    Example:
    ```mlir
    %s = graph.slice %x, start = [0, 2], limit = [4, 8], strides = [1, 2]
           : (tensor<4x8xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$strides);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `start` `=` $start `,` `limit` `=` $limit `,` `strides` `=`
    $strides attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_ConcatenateOp : Graph_InferredOp<"concatenate", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "join tensors along one dimension";
  let description = [{
    Places the operands one after another along `dim`.

    Constraints:
    - (C1) there is at least one operand.
    - (C2) all operands have the same rank.
    - (C3) `dim` is in [0, rank).
    - (C4) all operands have the same element type.
    - (C5) all operands have the same size in every dimension but `dim`.
    - (C6) the result type is the inferred one.

    Example:
    ```mlir
    %c = graph.concatenate(%a, %b), dim = 1
           : (tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    `(` $inputs `)` `,` `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_GatherOp : Graph_InferredOp<"gather", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "take slices of a tensor at integer indices (embedding lookup)";
  let description = [{
    As ONNX Gather: `result[i..., j, k...] = operand[i..., indices[j], k...]`
    where `i...` are the dimensions before `axis`; the result's shape is
    `operand.shape[:axis] + indices.shape + operand.shape[axis+1:]`. An index
    may be negative (counted from the end, as in ONNX); the runtime reports
    an index outside [-n, n) as an error naming the op.

    Constraints:
    - (C1) `axis` is in [0, rank(operand)).
    - (C2) the result type is the inferred one.

    Example (an embedding table [vocab, d] looked up by [batch, seq] tokens):
    ```mlir
    %e = graph.gather %wte[%tokens], axis = 0
           : (tensor<128x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, Graph_IntTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `,` `axis` `=` $axis attr-dict
    `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_ScatterAddOp : Graph_Op<"scatter_add", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "add slices into zeros at integer indices (gather's transpose)";
  let description = [{
    The gradient of `graph.gather`: starting from zeros of the result type,
    `result[i..., indices[j...], k...] += updates[i..., j..., k...]` for
    every index position, where `i...` are the dimensions before `axis`.
    Duplicate indices accumulate (an embedding row used twice gets both
    gradients). Negative indices count from the end as in gather; the
    runtime reports an index outside [-n, n) as an error.

    Constraints:
    - (C1) `axis` is in [0, rank(result)).
    - (C2) `updates` has shape
      `result.shape[:axis] + indices.shape + result.shape[axis+1:]`.
    - (C3) `updates` and the result have the same element type.

    Example (the gradient of an embedding table [vocab, d]):
    ```mlir
    %dwte = graph.scatter_add %dembed[%tokens], axis = 0
              : (tensor<8x32x64xf32>, tensor<8x32xi64>) -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$updates, Graph_IntTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $updates `[` $indices `]` `,` `axis` `=` $axis attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_IotaOp : Graph_Op<"iota", [Graph_CostOpInterface]> {
  let summary = "indices along one dimension";
  let description = [{
    `result[i_0, ..., i_n] = i_dim`, converted to the element type.

    Constraints:
    - (C1) the result has rank at least 1.
    - (C2) `dim` is in [0, rank(result)).

    Example:
    ```mlir
    %pos = graph.iota dim = 0 : tensor<32xi64>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConstantOp : Graph_Op<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops", "getBytesAccessed"]>]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor known at compile time. (Trainable weights are not constants:
    they are parameters of the step function.)

    Constraints:
    - (C1) `value` has the result's type, which is a valid graph tensor type.

    Example:
    ```mlir
    %c = graph.constant dense<0.5> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let builders = [
    OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
      build($_builder, $_state, value.getType(), value);
    }]>
  ];
}

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

def Graph_AdamwUpdateOp : Graph_Op<"adamw_update", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface,
                              ["canOverwriteOperand"]>]> {
  let summary = "one AdamW step of one parameter";
  let description = [{
    The AdamW update the optimizer pass builds for an f32 or f64 parameter,
    as one op (one pass over the parameter and its moments, where the
    decomposed update took a dozen elementwise ops and materialized
    broadcasts of its scalars). Elementwise, each operation rounded to the
    parameter's type in this order (PyTorch's AdamW):
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
    rounded to the parameter's type. The results are the new parameter and
    moments; an executable writes them over the old ones in place. Not
    differentiable (it follows the backward pass).

    Constraints:
    - (C1) `param`, `grad`, `exp_avg`, `exp_avg_sq` and the three results
      have one type.
    - (C2) the four scalar operands are 0-d with the parameter's element type.
    - (C3) `beta1` and `beta2` are in [0, 1) and `epsilon` is finite and not
      negative.

    Example:
    ```mlir
    %p1, %m1, %v1 = graph.adamw_update %p, %g, %m, %v, %step, %bc2, %decay, %clip,
        beta1 = 9.000000e-01, beta2 = 9.990000e-01, epsilon = 1.000000e-08
        : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
           tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$exp_avg, Graph_FloatTensor:$exp_avg_sq,
                       Graph_FloatTensor:$neg_step_size,
                       Graph_FloatTensor:$bias_correction2_sqrt,
                       Graph_FloatTensor:$decay_factor,
                       Graph_FloatTensor:$grad_scale,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$new_param,
                      Graph_FloatTensor:$new_exp_avg,
                      Graph_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $neg_step_size `,`
    $bias_correction2_sqrt `,` $decay_factor `,` $grad_scale `,` `beta1` `=`
    $beta1 `,` `beta2` `=` $beta2 `,` `epsilon` `=` $epsilon attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout", [
    AllTypesMatch<["operand", "result"]>, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "inverted dropout with a reproducible mask";
  let description = [{
    Zeroes each element with probability `ratio` and scales the others by
    `1 / (1 - ratio)`; `mask` is true where the element was kept. The mask
    is a pure function of (`seed`, the training step, the element's index)
    computed by a counter-based generator, so the backward pass and
    recomputation replay exactly the mask of the forward pass, and two runs
    with the same seed agree bit for bit.

    Constraints:
    - (C1) `ratio` is in [0, 1).
    - (C2) the operand and the result have the same type (the mask has the
      operand's shape, element type i1).

    Example:
    ```mlir
    %y, %mask = graph.dropout %x, ratio = 1.000000e-01, seed = 7 : tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, F64Attr:$ratio, I64Attr:$seed);
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
    - (C5) the result type is the inferred one (the input's type).

    Example:
    ```mlir
    %y = graph.layer_norm %x scale %g bias %b, axis = 2, epsilon = 1.0e-05
           : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
    ```
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
    - (C5) the result type is the inferred one (the input's type).

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
  let assemblyFormat = [{
    $input (`scale` $scale^)? `,` `axis` `=` $axis `,` `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_AttentionOp : Graph_InferredOp<"attention", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
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
    attend to gives zeros. Softmax is computed in at least f32.

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

    Example:
    ```mlir
    %o = graph.attention %q, %k, %v, scale = 0.125, causal
           : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
           -> tensor<8x4x32x16xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value,
                       Optional<Graph_FloatTensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? `,` `scale` `=` $scale
    (`,` `causal` $causal^)? attr-dict `:` functional-type(operands, results)
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

    Constraints:
    - (C1) logits have rank at least 1.
    - (C2) targets have the logits' shape without its last dimension.
    - (C3) the result type is the inferred one: a scalar of the logits'
      element type for `mean` and `sum`, the targets' shape for `none`.

    Example:
    ```mlir
    %loss = graph.softmax_cross_entropy %logits, %targets, reduction = mean,
              ignore_index = -100
              : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$targets,
                       Graph_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` `reduction` `=` $reduction
    (`,` `ignore_index` `=` $ignore_index^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

#endif // TRAINC_DIALECT_GRAPH_GRAPHOPS_TD
