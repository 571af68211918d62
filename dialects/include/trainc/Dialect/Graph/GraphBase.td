//===- GraphBase.td - The graph dialect, its types and enums -*- tablegen -*-===//
//
// The `graph` dialect is trainc's tensor vocabulary: statically shaped,
// value-semantic tensor ops at roughly StableHLO granularity, plus the
// composites (softmax, norms, GELU, attention, cross-entropy) that have fast
// kernels and known gradients. Frontends produce it; compiler passes
// (autodiff, precision, recompute, partition, memory planning) consume it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHBASE_TD
#define TRAINC_DIALECT_GRAPH_GRAPHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::trainc::graph";
  let useDefaultTypePrinterParser = 1;
  let summary = "Statically shaped tensor ops for training graphs.";
  let description = [{
    Every value is a ranked tensor with a static shape whose element type is
    one of f64, f32, f16, bf16, the signed integers i64, i32, i16, i8
    (signless types, read as two's complement), the unsigned ui64, ui32,
    ui16, ui8 (which divide, compare and widen as unsigned) or i1; or a
    storage-only type (the 8-bit floats f8E4M3FN, f8E4M3FNUZ, f8E5M2,
    f8E5M2FNUZ, the dialect's own !graph.f4E2M1FN and !graph.f8E8M0FNU,
    which MLIR 19 lacks, and the integers i4, ui4, i2, ui2), which
    graph.convert reads and writes and no arithmetic accepts. Indices
    (gather, scatter) are i64 or i32; reductions and the composites take
    floats (reduce_sum/max also i64 and i32). There is no implicit
    broadcasting: operands of elementwise ops have identical types and
    `graph.broadcast_in_dim` makes broadcasts explicit, so every shape rule
    (and every gradient rule) is local to one op.

    Each op's description numbers its constraints (C1), (C2), ...; the
    verifier cites the same numbers and `test/Dialect/Graph/invalid.mlir`
    has a failing case for each.

    A model is a `func.func` whose data arguments carry
    `graph.input = "name"` and whose results carry `graph.output = "name"`
    (checked by the dialect); parameters, optimizer state and updates are
    the `train` dialect's attributes. Names are the user's (ONNX value
    names), kept exactly.

    A program for several ranks (after the partition phase) is one per-rank
    (SPMD) program, the same on every rank:
    - `graph.mesh = {data = 2 : i64, tensor = 1 : i64}` on the module: the
      device mesh, one size per axis. Axes are `data` and `tensor`; ranks
      are numbered with `tensor` varying fastest (rank = data index *
      tensor size + tensor index), so a tensor-parallel group is adjacent
      ranks. An absent axis has size 1.
    - `graph.sharding = ["data", ""]` on an argument or result: for each
      dimension, the mesh axis it is split over ("" for none). The value's
      type is one rank's part; dimension d of the whole (global) tensor is
      its size times the size of its axis, and the rank with index i on that
      axis holds the i-th part.
    - `graph.sharding = ["", "tensor"]` on an op (before the partition
      phase, written by hand or by `--tensor-parallel`): how to split the
      op's one result over the tensor axis. The partition phase propagates
      it through the other ops by their sharding rules, then consumes it.
    - `graph.global_shape = array<i64: 50, 16>` beside a `graph.sharding`:
      the whole tensor's shape when a split dimension does not divide
      evenly (ZeRO's sharded parameters and optimizer state). Each rank's
      part of a split dimension is then ceil(global / axis size) long; the
      last parts are padded at the end, and the padding is never read as
      part of the whole. A parameter's `train.init` is the whole tensor.
    - collectives (`graph.all_reduce`, `graph.reduce_scatter`,
      `graph.all_gather`) combine values across one axis; `graph.shard_slice`
      takes this rank's part of a value every rank holds whole.
  }];
  let hasOperationAttrVerify = 1;
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    // Argument and result attribute names (see the description).
    static constexpr ::llvm::StringLiteral kInputAttr = "graph.input";
    static constexpr ::llvm::StringLiteral kOutputAttr = "graph.output";
    static constexpr ::llvm::StringLiteral kMeshAttr = "graph.mesh";
    static constexpr ::llvm::StringLiteral kShardingAttr = "graph.sharding";
    static constexpr ::llvm::StringLiteral kGlobalShapeAttr =
        "graph.global_shape";
    /// The mesh axes in rank order (the last varies fastest).
    static ::llvm::ArrayRef<::llvm::StringLiteral> meshAxisNames() {
      static const ::llvm::StringLiteral names[] = {"data", "tensor"};
      return names;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

// Storage formats of ONNX (and the OCP MX spec) that MLIR 19's builtin
// types lack. They have no attributes (DenseElementsAttr cannot hold them),
// so they appear only as graph inputs, outputs and convert results.
def Graph_F4E2M1FN : TypeDef<Graph_Dialect, "F4E2M1FN"> {
  let mnemonic = "f4E2M1FN";
  let summary = "4-bit float: 1 sign, 2 exponent (bias 1), 1 mantissa bit";
  let description = [{
    Values +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}; no infinity or NaN. Stored one
    per byte in the low 4 bits. Converting to it rounds to nearest even and
    saturates to +-6 (infinities too); NaN becomes -0, as ONNX's reference.
  }];
}
def Graph_F8E8M0FNU : TypeDef<Graph_Dialect, "F8E8M0FNU"> {
  let mnemonic = "f8E8M0FNU";
  let summary = "8-bit power of two: 2^(e - 127), e in [0, 254]; 255 is NaN";
  let description = [{
    The MX block scale: no sign, no zero, no mantissa. Converting to it
    rounds up (ONNX Cast's default round_mode) and saturates to
    [2^-127, 2^127]; NaN, and any value converted by a non-up round mode,
    are handled by the importer (see the ONNX frontend).
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Graph_FloatElement : AnyTypeOf<[F64, F32, F16, BF16]>;
def Graph_IntElement : AnyTypeOf<[I64, I32]>;

/// Any tensor the dialect accepts.
def Graph_Tensor : StaticShapeTensorOf<[F64, F32, F16, BF16, I64, I32, I16, I8,
                                        UI64, UI32, UI16, UI8, I1,
                                        F8E4M3FN, F8E4M3FNUZ, F8E5M2,
                                        F8E5M2FNUZ, Graph_F4E2M1FN,
                                        Graph_F8E8M0FNU, I<4>, UI<4>, I<2>,
                                        UI<2>]>;
/// Tensors of real numbers: floats and integers (signless i8 ... i64 are
/// signed, ui8 ... ui64 unsigned; not i1).
def Graph_NumericTensor : StaticShapeTensorOf<[F64, F32, F16, BF16, I64, I32,
                                               I16, I8, UI64, UI32, UI16, UI8]>;
def Graph_FloatTensor : StaticShapeTensorOf<[F64, F32, F16, BF16]>;
/// Integers as bit patterns (the bitwise ops): i8 ... i64 and ui8 ... ui64.
def Graph_BitsTensor : StaticShapeTensorOf<[I64, I32, I16, I8, UI64, UI32,
                                            UI16, UI8]>;
/// What graph.bitcast reinterprets: the numeric types and the 8-bit
/// floats (not i1 or the sub-byte types, whose storage byte is no bit
/// pattern of the value's width).
def Graph_BitcastTensor : StaticShapeTensorOf<[F64, F32, F16, BF16, I64, I32,
                                               I16, I8, UI64, UI32, UI16, UI8,
                                               F8E4M3FN, F8E4M3FNUZ, F8E5M2,
                                               F8E5M2FNUZ, Graph_F8E8M0FNU]>;
def Graph_IntTensor : StaticShapeTensorOf<[I64, I32]>;
def Graph_FloatOrIntTensor : StaticShapeTensorOf<[F64, F32, F16, BF16, I64,
                                                  I32]>;
def Graph_PredTensor : StaticShapeTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Graph_ComparisonDirection : I32EnumAttr<"ComparisonDirection",
    "how graph.compare compares its operands", [
      I32EnumAttrCase<"EQ", 0>, I32EnumAttrCase<"NE", 1>,
      I32EnumAttrCase<"LT", 2>, I32EnumAttrCase<"LE", 3>,
      I32EnumAttrCase<"GT", 4>, I32EnumAttrCase<"GE", 5>]> {
  let cppNamespace = "::trainc::graph";
}

def Graph_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "which formula graph.gelu computes", [
      I32EnumAttrCase<"erf", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::trainc::graph";
}

def Graph_LossReduction : I32EnumAttr<"LossReduction",
    "how a per-position loss is reduced", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::trainc::graph";
}

//===----------------------------------------------------------------------===//
// Traits
//===----------------------------------------------------------------------===//

/// Runs the op's `verifyShapeConstraints()` as a trait verifier, then checks
/// the result type against the inferred one. List it before
/// InferTypeOpAdaptor: trait verifiers run in order, so a broken constraint
/// is reported once, with its number, before type inference runs on
/// operands it could not make sense of.
def Graph_ShapeChecked : NativeOpTrait<"ShapeChecked"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}

#endif // TRAINC_DIALECT_GRAPH_GRAPHBASE_TD
