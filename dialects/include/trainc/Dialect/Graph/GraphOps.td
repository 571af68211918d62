//===- GraphOps.td - graph dialect operations ----------------*- tablegen -*-===//
//
// Ops in four groups: elementwise, linear algebra and reductions, data
// movement (here), and composites (GraphCompositeOps.td). Constraint numbers (C1)... are cited in
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

/// Every op states its sharding rule (GraphSharding.cpp).
class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic,
         !listconcat([Pure, DeclareOpInterfaceMethods<Graph_ShardingRuleOpInterface>],
                     traits)>;

/// A collective: communication that every rank of a group issues in the
/// same order. Not Pure, so that generic passes neither merge two of them
/// (CSE would make ZeRO-3's forward and backward gathers of a parameter
/// one, live in between), drop nor reorder them; the schedule phase moves
/// them deliberately.
class Graph_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic,
         !listconcat([MemoryEffects<[MemRead, MemWrite]>,
                      DeclareOpInterfaceMethods<Graph_ShardingRuleOpInterface>],
                     traits)>;

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
def Graph_AbsOp : Graph_UnaryElementwiseOp<"abs", Graph_NumericTensor, "|x|"> {
  let hasFolder = 1;
}
def Graph_ExpOp : Graph_UnaryElementwiseOp<"exp", Graph_FloatTensor, "exp(x)">;
def Graph_LogOp : Graph_UnaryElementwiseOp<"log", Graph_FloatTensor, "log(x)">;
def Graph_TanhOp : Graph_UnaryElementwiseOp<"tanh", Graph_FloatTensor, "tanh(x)">;
def Graph_ErfOp : Graph_UnaryElementwiseOp<"erf", Graph_FloatTensor, "erf(x)">;
def Graph_SqrtOp : Graph_UnaryElementwiseOp<"sqrt", Graph_FloatTensor, "sqrt(x)"> {
  let hasFolder = 1;
}
def Graph_RsqrtOp : Graph_UnaryElementwiseOp<"rsqrt", Graph_FloatTensor, "1 / sqrt(x)">;
def Graph_CosOp : Graph_UnaryElementwiseOp<"cos", Graph_FloatTensor, "cos(x)">;
def Graph_SinOp : Graph_UnaryElementwiseOp<"sin", Graph_FloatTensor, "sin(x)">;
def Graph_FloorOp : Graph_UnaryElementwiseOp<"floor", Graph_FloatTensor,
    "floor(x): the largest integer <= x (its gradient is 0)"> {
  let hasFolder = 1;
}
def Graph_RoundOp : Graph_UnaryElementwiseOp<"round", Graph_FloatTensor,
    "x rounded to the nearest integer, ties to even (its gradient is 0)"> {
  let hasFolder = 1;
}

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

def Graph_AddOp : Graph_BinaryElementwiseOp<"add", Graph_NumericTensor, "x + y", [Commutative]> {
  let hasCanonicalizer = 1;
}
def Graph_SubOp : Graph_BinaryElementwiseOp<"sub", Graph_NumericTensor, "x - y">;
def Graph_MulOp : Graph_BinaryElementwiseOp<"mul", Graph_NumericTensor, "x * y", [Commutative]>;
def Graph_DivOp : Graph_BinaryElementwiseOp<"div", Graph_NumericTensor,
    "x / y (integers: truncated toward zero)">;
def Graph_PowOp : Graph_BinaryElementwiseOp<"pow", Graph_FloatTensor, "x ^ y">;
def Graph_RemainderOp : Graph_BinaryElementwiseOp<"remainder", Graph_FloatTensor,
    "fmod(x, y): x - n y with n = x / y truncated toward zero, exact, of x's "
    "sign (NaN where y is 0 or x infinite; x where y is infinite)"> {
  let hasFolder = 0;
}
def Graph_MaxOp : Graph_BinaryElementwiseOp<"max", Graph_NumericTensor,
    "max(x, y) (NaN if either is NaN)", [Commutative]>;
def Graph_MinOp : Graph_BinaryElementwiseOp<"min", Graph_NumericTensor,
    "min(x, y) (NaN if either is NaN)", [Commutative]>;

//===----------------------------------------------------------------------===//
// Bitwise ops: integers as bit patterns (two's complement for the signed
// types). Integer results carry no gradient, so these need no rule.
//===----------------------------------------------------------------------===//

def Graph_AndOp : Graph_BinaryElementwiseOp<"and", Graph_BitsTensor,
    "x & y (bitwise)", [Commutative]>;
def Graph_OrOp : Graph_BinaryElementwiseOp<"or", Graph_BitsTensor,
    "x | y (bitwise)", [Commutative]>;
def Graph_XorOp : Graph_BinaryElementwiseOp<"xor", Graph_BitsTensor,
    "x ^ y (bitwise exclusive or)", [Commutative]>;
def Graph_NotOp : Graph_UnaryElementwiseOp<"not", Graph_BitsTensor,
    "~x (every bit flipped)"> {
  let hasFolder = 1;
}
def Graph_ShiftLeftOp : Graph_BinaryElementwiseOp<"shift_left",
    Graph_BitsTensor, "x << y: 0 where y, read as unsigned, is at least the "
    "bit width (StableHLO's shift_left)">;
def Graph_ShiftRightLogicalOp : Graph_BinaryElementwiseOp<"shift_right_logical",
    Graph_BitsTensor, "x >> y filling with zeros: 0 where y, read as "
    "unsigned, is at least the bit width">;
def Graph_ShiftRightArithmeticOp : Graph_BinaryElementwiseOp<
    "shift_right_arithmetic", Graph_BitsTensor, "x >> y filling with the sign "
    "bit: every bit the sign bit where y, read as unsigned, is at least the "
    "bit width">;
def Graph_PopCountOp : Graph_UnaryElementwiseOp<"pop_count", Graph_BitsTensor,
    "the number of bits of x that are set"> {
  let hasFolder = 1;
}
def Graph_CountLeadingZerosOp : Graph_UnaryElementwiseOp<"count_leading_zeros",
    Graph_BitsTensor, "the number of zero bits above the highest set bit of x "
    "(the bit width for 0)"> {
  let hasFolder = 1;
}

def Graph_BitcastOp : Graph_Op<"bitcast", [Elementwise,
    SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "elementwise reinterpretation of bits";
  let description = [{
    Each element's stored bits read as the result's element type, which has
    the operand's bit width (StableHLO's bitcast_convert between types of
    one width: `jax.random` makes uniform floats so from random integers).
    No gradient flows through it.

    Constraints:
    - (C1) the operand and the result have the same shape.
    - (C2) the element types have the same bit width.

    Example:
    ```mlir
    %f = graph.bitcast %bits : (tensor<4xui32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Graph_BitcastTensor:$operand);
  let results = (outs Graph_BitcastTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type($operand, $result)";
  let hasVerifier = 1;
}

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
    rounds to nearest, ties to even; float to integer truncates toward zero
    and saturates (NaN gives 0, a value beyond the integer range the nearest
    bound: ONNX leaves such casts undefined and onnxruntime and PyTorch go
    on, so trainc does too); integer to float rounds to nearest; to i1 tests
    for non-zero; from i1 gives 0 or 1.

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
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Fusion (the lower phase)
//===----------------------------------------------------------------------===//

def Graph_FusedElementwiseOp : Graph_Op<"fused_elementwise", [
    IsolatedFromAbove, SingleBlock,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface, ["canOverwriteOperand"]>]> {
  let summary = "one loop over the elements of a shape, several elementwise ops";
  let description = [{
    Computes, for each element index of the results' shape, the program in
    its body: elementwise graph ops on the operands' elements, each a 0-d
    tensor, each op rounded to its own result type as the op alone would
    be. So the results equal those of the ops written out, bit for bit,
    while the values only the body uses are never stored. An operand of
    the results' shape gives its element at the index; a 0-d operand the
    same value at every index. With `operand_dims`, operand i is read as
    `graph.broadcast_in_dim` with dims `operand_dims[i]` would expand it
    to the results' shape (a per-channel scale over NCHW: `[1]`), without
    the expanded copy being stored. The `trainc-fuse-elementwise` pass
    makes these in the lower phase; autodiff and the partition phase never
    see one.

    Constraints:
    - (C1) at least one operand and one result; every result has one
      shape; without `operand_dims`, every operand has that shape or is
      0-d.
    - (C2) the body's block has one argument per operand, a 0-d tensor of
      the operand's element type.
    - (C3) the body's ops are `neg`, `abs`, `exp`, `log`, `tanh`, `erf`,
      `sqrt`, `rsqrt`, `cos`, `sin`, `floor`, `round`, `add`, `sub`, `mul`,
      `div`, `pow`, `max`, `min`, `compare`, `select`, `convert`, `gelu`,
      `gelu_grad` and the bitwise ops (`and` ... `count_leading_zeros`) on
      0-d tensors of f64, f32, f16, bf16, i32, i64, ui32, ui64 or i1 (the
      element types the executable's fused loop computes in; not the
      8-bit floats or the narrow integers). Only `neg`, `abs`, `add`,
      `sub`, `mul`, `max`, `min`, `compare`, `select`, `convert` and the
      bitwise ops compute on integers (no integer division: no step may
      fail).
    - (C4) the body ends in `graph.yield` of one 0-d value per result, of
      the result's element type.
    - (C5) the body's arguments and values are floats and i1, or integers
      and i1, not both (each device has one register file per loop; a
      convert between floats and integers stays outside).
    - (C6) `operand_dims`, where present, has one list per operand: as
      many entries as the operand's rank, increasing, each a dimension of
      the results; the operand's dimension k has the size of the results'
      dimension `operand_dims[i][k]` or 1.

    Example:
    ```mlir
    %sum = graph.fused_elementwise %residual, %h
        : (tensor<8x64xf32>, tensor<8x64xbf16>) -> tensor<8x64xf32> {
    ^bb0(%r: tensor<f32>, %x: tensor<bf16>):
      %w = graph.convert %x : (tensor<bf16>) -> tensor<f32>
      %s = graph.add %r, %w : tensor<f32>
      graph.yield %s : tensor<f32>
    }

    %scaled = graph.fused_elementwise %x, %scale
        {operand_dims = [array<i64: 0, 1, 2, 3>, array<i64: 1>]}
        : (tensor<16x32x8x8xf32>, tensor<32xf32>) -> tensor<16x32x8x8xf32> {
    ^bb0(%a: tensor<f32>, %s: tensor<f32>):
      %m = graph.mul %a, %s : tensor<f32>
      graph.yield %m : tensor<f32>
    }
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs,
                   OptionalAttr<TypedArrayAttrBase<DenseI64ArrayAttr,
                       "one dimension list per operand">>:$operand_dims);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, $results) $body";
  let hasRegionVerifier = 1;
}

def Graph_ConvertGroupOp : Graph_Op<"convert_group", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "converts several tensors of one element type to another";
  let description = [{
    Result i is `graph.convert` of operand i, for tensors of any shapes
    that share their element types: one op (a kernel launch per 32
    tensors on a GPU) where there were N. The lower phase's
    `trainc-fuse-elementwise` makes one of the casts of the parameters
    (f32 master weights to the bf16 or f16 copies the matmuls read).

    Constraints:
    - (C1) as many results as operands, at least one.
    - (C2) result i has operand i's shape.
    - (C3) the operands share one float element type, the results another
      float element type.

    Example:
    ```mlir
    %w16, %b16 = graph.convert_group %w, %b
        : (tensor<256x64xf32>, tensor<256xf32>) -> (tensor<256x64xbf16>, tensor<256xbf16>)
    ```
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Variadic<Graph_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Graph_YieldOp : Op<Graph_Dialect, "yield", [Pure, Terminator,
    HasParent<"FusedElementwiseOp">]> {
  let summary = "the values a graph.fused_elementwise body gives per element";
  let description = [{
    Ends the body of `graph.fused_elementwise`: one 0-d value per result
    (that op's C4).
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
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

    With the unit attribute `tf32` (set by `--precision tf32`), each f32
    operand element is first rounded to TF32 (10 explicit mantissa bits,
    f32's exponent range; to nearest, ties away from zero), and the rounded
    products are summed in f32. The CPU computes exactly that and is the
    reference; a GPU uses cuBLASLt's TF32 mode, whose conversion may
    truncate instead of round and which may skip TF32 for some shapes, so
    it agrees with the CPU within `--verify-steps`' reduced limits, not bit
    for bit.

    With the unit attribute `f32_result` (set by `trainc-widen-products`
    on a 16-bit product that is only widened), the result is f32: the f32
    sums, not rounded to the operands' type. That is the product widened
    without its 16-bit rounding (Megatron's weight gradients accumulated in
    f32), one rounding fewer.

    Constraints:
    - (C1) the two batching-dimension lists have the same length.
    - (C2) the two contracting-dimension lists have the same length.
    - (C3) every listed dimension is in range of its operand's rank.
    - (C4) no dimension of an operand is listed twice.
    - (C5) paired batching dimensions have the same size.
    - (C6) paired contracting dimensions have the same size.
    - (C7) `lhs` and `rhs` have the same element type.
    - (C8) the result type is the inferred one.
    - (C9) `tf32` is set only on f32 operands.
    - (C10) `f32_result` is set only on bf16 or f16 operands.

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
                       DenseI64ArrayAttr:$rhs_contracting_dimensions,
                       UnitAttr:$tf32, UnitAttr:$f32_result);
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
    "- (C3) the result type is the inferred one; a `reduce_sum` of bf16 or "
    "f16 may give f32 instead: its f32 sum, not rounded to 16 bits (the "
    "lower phase's `trainc-widen-products` makes these for bf16 sums that "
    "were only widened).\n\n"
    "Example:\n```mlir\n%s = graph." # mnemonic # " %x, dims = [1]"
    " : (tensor<4x8xf32>) -> tensor<4xf32>\n```";
  let arguments = (ins T:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs T:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $dims attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
  let extraClassDeclaration = [{
    ::llvm::LogicalResult verifyShapeConstraints();
    /// The inferred type; for reduce_sum also f32 in place of 16 bits (C3).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", Graph_NumericTensor, "sum">;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", Graph_NumericTensor, "maximum">;
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", Graph_FloatTensor, "mean">;
def Graph_ReduceProdOp : Graph_ReduceOp<"reduce_prod", Graph_NumericTensor, "product">;

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

    `padding_index` p (optional): slices taken at index p (or p - n, the
    same slice) get no gradient, as PyTorch's `Embedding(padding_idx=p)`
    defines its lookup; the forward is unchanged.

    Constraints:
    - (C1) `axis` is in [0, rank(operand)).
    - (C2) the result type is the inferred one.
    - (C3) `padding_index`, when present, is in [0, n), n the operand's
      size along `axis`.

    Example (an embedding table [vocab, d] looked up by [batch, seq] tokens;
    row 0 is padding):
    ```mlir
    %e = graph.gather %wte[%tokens], axis = 0, padding_index = 0
           : (tensor<128x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, Graph_IntTensor:$indices,
                       I64Attr:$axis, OptionalAttr<I64Attr>:$padding_index);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `,` `axis` `=` $axis
    (`,` `padding_index` `=` $padding_index^)? attr-dict
    `:` functional-type(operands, results)
  }];
  // Without padding_index (every gather but an embedding lookup's).
  let builders = [
    OpBuilder<(ins "::mlir::Value":$operand, "::mlir::Value":$indices,
                   "int64_t":$axis), [{
      build($_builder, $_state, operand, indices,
            $_builder.getI64IntegerAttr(axis), ::mlir::IntegerAttr());
    }]>
  ];

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
    runtime reports an index outside [-n, n) as an error. Floats add in
    index order (16-bit ones in f32, rounded once); i32 and i64 wrap
    around (StableHLO's integer scatter with an add).

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
  let arguments = (ins Graph_FloatOrIntTensor:$updates,
                       Graph_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Graph_FloatOrIntTensor:$result);
  let assemblyFormat = [{
    $updates `[` $indices `]` `,` `axis` `=` $axis attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ExtractPatchesOp : Graph_InferredOp<"extract_patches", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "a convolution's input patches (im2col), channels first";
  let description = [{
    For an operand `[N, C, S1, ..., Sd]` and a window of `kernel` sizes
    `K1..Kd`, `strides`, `dilation` and zero padding `pad_low`/`pad_high`
    on each spatial dimension, the result `[C, K1, ..., Kd, N, O1, ...,
    Od]` holds, for every kernel position `k` and output position `o`,

        result[c, k..., n, o...] = operand[n, c, s...],
        s_i = o_i * strides[i] + k_i * dilation[i] - pad_low[i]

    or 0 where some `s_i` falls in the padding (outside `[0, S_i)`). With
    `O_i = (S_i + pad_low[i] + pad_high[i] - (K_i - 1) * dilation[i] - 1)
    / strides[i] + 1`. Reshaped to `[C K, N O]` it is the left side of a
    convolution's product: each column one output position of the batch.
    Its gradient is `graph.fold_patches`.

    Constraints:
    - (C1) the operand has rank `d + 2` with `1 <= d <= 3`.
    - (C2) `kernel`, `strides`, `dilation`, `pad_low` and `pad_high` have
      `d` entries each.
    - (C3) kernel sizes, strides and dilations are in [1, 2^31); paddings
      in [0, 2^31).
    - (C4) every `O_i` is at least 1 (the window fits the padded input).
    - (C5) the result type is the inferred one.

    Example (a 3x3 convolution's patches, stride 1, padding 1):
    ```mlir
    %p = graph.extract_patches %x, kernel = [3, 3], strides = [1, 1],
           dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1]
           : (tensor<2x4x8x8xf32>) -> tensor<4x3x3x2x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilation,
                       DenseI64ArrayAttr:$pad_low, DenseI64ArrayAttr:$pad_high);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `kernel` `=` $kernel `,` `strides` `=` $strides `,`
    `dilation` `=` $dilation `,` `pad_low` `=` $pad_low `,` `pad_high` `=`
    $pad_high attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_FoldPatchesOp : Graph_InferredOp<"fold_patches", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "sums patches back into their input (col2im)";
  let description = [{
    The transpose of `graph.extract_patches` (its gradient): for patches
    `[C, K1, ..., Kd, N, O1, ..., Od]` of an input whose spatial sizes are
    `spatial`, the result `[N, C, S1, ..., Sd]` is

        result[n, c, s...] = sum of operand[c, k..., n, o...]
                             over s_i = o_i * strides[i] + k_i * dilation[i]
                                        - pad_low[i]

    in row-major order of `k` (each input position is read at most once
    per kernel position); positions no patch reads are 0. 16-bit floats
    add in f32 and round once.

    Constraints:
    - (C1) `spatial` has `d` entries, `1 <= d <= 3`, and the operand has
      rank `2 d + 2`.
    - (C2) `kernel`, `strides`, `dilation`, `pad_low` and `pad_high` have
      `d` entries each.
    - (C3) kernel sizes, strides and dilations are in [1, 2^31); paddings
      and spatial sizes in [0, 2^31).
    - (C4) every `O_i` that extract_patches gives for `spatial` is at
      least 1, and the operand's kernel dimensions are `kernel` and its
      output dimensions those `O_i`.
    - (C5) the result type is the inferred one.

    Example:
    ```mlir
    %dx = graph.fold_patches %dp, kernel = [3, 3], strides = [1, 1],
            dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1],
            spatial = [8, 8]
            : (tensor<4x3x3x2x8x8xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilation,
                       DenseI64ArrayAttr:$pad_low, DenseI64ArrayAttr:$pad_high,
                       DenseI64ArrayAttr:$spatial);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` `kernel` `=` $kernel `,` `strides` `=` $strides `,`
    `dilation` `=` $dilation `,` `pad_low` `=` $pad_low `,` `pad_high` `=`
    $pad_high `,` `spatial` `=` $spatial attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_ArgsortOp : Graph_Op<"argsort", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "the permutation that sorts along one axis (stable)";
  let description = [{
    `result[i..., j, k...]` is the index along `axis` of the element that a
    stable sort of `operand[i..., :, k...]` puts at position j: ascending
    (descending with `descending`), ties in index order. Floats sort as
    numbers, -0 equal to +0 and NaN after every number (before, when
    descending), as JAX's sort orders them; with `total_order`, in IEEE
    754 totalOrder (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN), as
    chlo.top_k does. Values sorted with it are a gather at these indices,
    so their gradient is a scatter_add; the indices themselves have none.

    Constraints:
    - (C1) `axis` is in [0, rank(operand)).
    - (C2) the result has the operand's shape and element type i64.

    Example (the order of each row's scores, largest first):
    ```mlir
    %order = graph.argsort %scores, axis = 1, descending = true
               : (tensor<4x8xf32>) -> tensor<4x8xi64>
    ```
  }];
  let arguments = (ins Graph_FloatOrIntTensor:$operand, I64Attr:$axis,
                       BoolAttr:$descending, UnitAttr:$total_order);
  let results = (outs Graph_IntTensor:$result);
  let assemblyFormat = [{
    $operand `,` `axis` `=` $axis `,` `descending` `=` $descending
    (`total_order` $total_order^)? attr-dict
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
// Collectives (the partition phase's per-rank program)
//===----------------------------------------------------------------------===//

def Graph_AllReduceOp : Graph_CollectiveOp<"all_reduce", [SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    Graph_InPlaceOpInterface]> {
  let summary = "sum over the ranks of one mesh axis";
  let description = [{
    Every rank of a group gets the elementwise sum of the group's operands.
    A group is the ranks that differ only in their coordinate on mesh axis
    `axis` (the module's `graph.mesh`). Every rank runs the same program, so
    every rank issues the same collectives in the same order. The sum's
    order is the runtime's choice unless it is asked for a deterministic one
    (rank order); every rank of a group gets the same bits either way.

    Constraints:
    - (C1) the operand and the result have the same type.
    - (C2) the element type is a float.
    - (C3) `axis` is a mesh axis: `data` or `tensor` (see `graph.mesh`).

    Example (a data-parallel gradient, summed over the `data` axis):
    ```mlir
    %sum = graph.all_reduce %grad, axis = "data" : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_ReduceScatterOp : Graph_CollectiveOp<"reduce_scatter", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "sum over the ranks of one mesh axis, each keeping its part";
  let description = [{
    The sum over a group (as in `graph.all_reduce`) split along dimension 0
    into as many parts as the group has ranks: the rank with index i on
    `axis` gets the i-th part. Half the traffic of an all_reduce; ZeRO-2 and
    ZeRO-3 reduce gradients with it.

    Constraints:
    - (C1) the operand and the result have the same element type and rank
      (at least 1), and equal dimensions after the first.
    - (C2) the operand's dimension 0 is the result's times the size of
      `axis`.
    - (C3) the element type is a float.
    - (C4) `axis` is a mesh axis: `data` or `tensor` (see `graph.mesh`).

    Example (2 data-parallel ranks):
    ```mlir
    %part = graph.reduce_scatter %grads, axis = "data" : (tensor<8x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` functional-type($operand, $result)";
  let hasVerifier = 1;
}

def Graph_AllGatherOp : Graph_CollectiveOp<"all_gather", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "the parts of the ranks of one mesh axis, joined";
  let description = [{
    Every rank of a group (as in `graph.all_reduce`) gets the group's
    operands concatenated along dimension 0 in the order of their index on
    `axis`. ZeRO gathers sharded parameters with it.

    Constraints:
    - (C1) the operand and the result have the same element type and rank
      (at least 1), and equal dimensions after the first.
    - (C2) the result's dimension 0 is the operand's times the size of
      `axis`.
    - (C3) `axis` is a mesh axis: `data` or `tensor` (see `graph.mesh`).

    Example (2 data-parallel ranks):
    ```mlir
    %whole = graph.all_gather %part, axis = "data" : (tensor<4x4xf32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, StrAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` functional-type($operand, $result)";
  let hasVerifier = 1;
}

def Graph_ShardSliceOp : Graph_Op<"shard_slice", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "this rank's part of a value every rank of an axis holds";
  let description = [{
    The operand split along dimension 0 into as many parts as `axis` has
    ranks; the rank with index i on `axis` gets the i-th part. No
    communication: every rank of the group holds the whole operand (ZeRO-1
    and ZeRO-2 update their part of a replicated parameter). The one op
    whose value depends on the rank, through its coordinate, never through
    data.

    Constraints:
    - (C1) the operand and the result have the same element type and rank
      (at least 1), and equal dimensions after the first.
    - (C2) the operand's dimension 0 is the result's times the size of
      `axis`.
    - (C3) `axis` is a mesh axis: `data` or `tensor` (see `graph.mesh`).

    Example (2 data-parallel ranks):
    ```mlir
    %mine = graph.shard_slice %param, axis = "data" : (tensor<8x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$operand, StrAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` functional-type($operand, $result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives (the schedule phase)
//===----------------------------------------------------------------------===//

def Graph_AllReduceStartOp : Graph_CollectiveOp<"all_reduce_start", [
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "starts a graph.all_reduce; graph.collective_done ends it";
  let description = [{
    Starts the sum of `graph.all_reduce` and returns at once: the ops
    between it and its `graph.collective_done` run while the ranks
    communicate. `pending` holds the sum only after the done, which is its
    one user. The schedule phase makes these from `graph.all_reduce`.

    Constraints:
    - (C1) the operand and the result have the same type.
    - (C2) the element type is a float.
    - (C3) `axis` is a mesh axis: `data` or `tensor` (see `graph.mesh`).
    - (C4) the result's one user is a `graph.collective_done` that takes it
      and this op's operand.

    Example:
    ```mlir
    %p = graph.all_reduce_start %grad, axis = "data" : tensor<64xf32>
    %sum = graph.collective_done %p, %grad : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Graph_FloatTensor:$pending);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` type($pending)";
  let hasVerifier = 1;
}

def Graph_ReduceScatterStartOp : Graph_CollectiveOp<"reduce_scatter_start", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "starts a graph.reduce_scatter; graph.collective_done ends it";
  let description = [{
    As `graph.all_reduce_start`, for `graph.reduce_scatter`.

    Constraints:
    - (C1) the operand and the result have the same element type and rank
      (at least 1), and equal dimensions after the first.
    - (C2) the operand's dimension 0 is the result's times the size of
      `axis`.
    - (C3) the element type is a float.
    - (C4) `axis` is a mesh axis.
    - (C5) the result's one user is a `graph.collective_done` that takes it
      and this op's operand.
  }];
  let arguments = (ins Graph_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Graph_FloatTensor:$pending);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` functional-type($operand, $pending)";
  let hasVerifier = 1;
}

def Graph_AllGatherStartOp : Graph_CollectiveOp<"all_gather_start", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>]> {
  let summary = "starts a graph.all_gather; graph.collective_done ends it";
  let description = [{
    As `graph.all_reduce_start`, for `graph.all_gather` (ZeRO-3 starts the
    gather of a parameter one gather ahead of its use: a prefetch).

    Constraints:
    - (C1) the operand and the result have the same element type and rank
      (at least 1), and equal dimensions after the first.
    - (C2) the result's dimension 0 is the operand's times the size of
      `axis`.
    - (C3) `axis` is a mesh axis.
    - (C4) the result's one user is a `graph.collective_done` that takes it
      and this op's operand.
  }];
  let arguments = (ins Graph_Tensor:$operand, StrAttr:$axis);
  let results = (outs Graph_Tensor:$pending);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` functional-type($operand, $pending)";
  let hasVerifier = 1;
}

def Graph_CollectiveDoneOp : Graph_CollectiveOp<"collective_done", [
    DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Graph_InPlaceOpInterface, ["canOverwriteOperand"]>]> {
  let summary = "waits for a started collective; its result";
  let description = [{
    Waits until the collective that `pending` started has completed on this
    rank and returns its result. `source` is the start's operand: reading it
    here keeps its buffer unchanged while the ranks may still read it. The
    result may take `pending`'s memory.

    Constraints:
    - (C1) `pending` is the result of `graph.all_reduce_start`,
      `graph.reduce_scatter_start` or `graph.all_gather_start`.
    - (C2) `source` is that start's operand.
    - (C3) the result has `pending`'s type.
  }];
  let arguments = (ins Graph_Tensor:$pending, Graph_Tensor:$source);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$pending `,` $source attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

// The composites (softmax, gelu, norms, attention, the loss) and the fused
// backward and optimizer ops.
include "trainc/Dialect/Graph/GraphCompositeOps.td"

#endif // TRAINC_DIALECT_GRAPH_GRAPHOPS_TD
