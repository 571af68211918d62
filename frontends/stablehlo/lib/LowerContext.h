//===- LowerContext.h - State shared by the StableHLO op lowerings -*- C++
//-*-===//
//
// The importer walks the entry function in order (inlining calls); for each
// StableHLO op it builds an OpContext and calls the op's lowering function
// (ElementwiseOps.cpp, ShapeOps.cpp, ReduceOps.cpp, IndexingOps.cpp), which
// reads operands and attributes through the context, emits graph ops with
// createOrFold (so index arithmetic on constants folds at once) and defines
// the op's results. Every error names the op and its location in the file.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_STABLEHLO_LOWERCONTEXT_H
#define TRAINC_FRONTENDS_STABLEHLO_LOWERCONTEXT_H

#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

#include <optional>

namespace trainc::stablehlo_import {

class OpContext;

/// The lowering function of one op.
using LowerFn = mlir::LogicalResult (*)(OpContext &);

/// The operand element types an op is lowered for (among
/// isSupportedElementType's), checked by the importer before the op's
/// lowering runs: any of them, numbers (not i1), floats, i1 only, or
/// integers (not i1).
/// Integers: not i1; Bits: integers and i1.
enum class TypeClass { Any, Numbers, Floats, Bool, Integers, Bits };
llvm::StringRef typeClassName(TypeClass types);

/// One row of the op table (OpTable.cpp).
struct OpEntry {
  const char *name; ///< With its dialect: "stablehlo.add".
  LowerFn lower;
  TypeClass types; ///< Of the operands, checked before `lower` runs.
  /// Operands have the result's shape (select's predicate and clamp's
  /// bounds may be scalars), also checked before `lower` runs.
  bool elementwise;
  const char *note; ///< Limits, or "".
};

/// The row of `name`, or null.
const OpEntry *findOp(llvm::StringRef name);
llvm::ArrayRef<OpEntry> opTable();

/// Whether trainc's graph dialect holds tensors of `type`'s element type
/// as StableHLO means them (signless integers are signed, as in both).
bool isSupportedElementType(mlir::Type type);
/// The element types isSupportedElementType accepts, for messages.
constexpr const char *kSupportedElementTypes =
    "f64, f32, f16, bf16, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1";

class OpContext {
public:
  OpContext(mlir::Operation *op, mlir::OpBuilder &builder,
            mlir::IRMapping &values)
      : op(op), builder(builder), values(values), loc(op->getLoc()) {}

  mlir::Operation *op;
  mlir::OpBuilder &builder;
  mlir::IRMapping &values;
  mlir::Location loc;

  /// An error naming the op (its location names the file, line and column).
  mlir::InFlightDiagnostic error() const;

  unsigned numOperands() const { return op->getNumOperands(); }
  /// Operand `i`, as lowered.
  mlir::Value operand(unsigned i) const {
    return values.lookup(op->getOperand(i));
  }
  mlir::RankedTensorType operandType(unsigned i) const {
    return mlir::cast<mlir::RankedTensorType>(op->getOperand(i).getType());
  }
  mlir::RankedTensorType resultType(unsigned i = 0) const {
    return mlir::cast<mlir::RankedTensorType>(op->getResult(i).getType());
  }
  void setResult(unsigned i, mlir::Value v) const {
    values.map(op->getResult(i), v);
  }

  /// An integer-list attribute in any of its spellings (array<i64: ...>,
  /// dense<...> : tensor<Nxi64>, [1, 2]); an error if missing or malformed.
  mlir::FailureOr<llvm::SmallVector<int64_t>> ints(llvm::StringRef name) const;
  /// The same list inside a dictionary attribute (#stablehlo.dot<...>).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  ints(mlir::DictionaryAttr dict, llvm::StringRef name,
       llvm::StringRef dictName) const;
  /// A required integer attribute.
  mlir::FailureOr<int64_t> integer(llvm::StringRef name) const;
  /// An enum attribute's value (`LT` of #stablehlo<comparison_direction LT>);
  /// empty when absent.
  llvm::StringRef enumValue(llvm::StringRef name) const;
  /// A dictionary (struct) attribute; an error if missing.
  mlir::FailureOr<mlir::DictionaryAttr> dict(llvm::StringRef name) const;
  /// Attribute `name` of the op, or of the op a stablehlo.composite names
  /// (its composite_attributes); null if absent. The accessors above read
  /// attributes through it.
  mlir::Attribute attribute(llvm::StringRef name) const;

  template <typename OpT, typename... Args>
  mlir::Value create(Args &&...args) const {
    return builder.createOrFold<OpT>(loc, std::forward<Args>(args)...);
  }
  /// A constant of `type` with every element `value`.
  mlir::Value splat(mlir::RankedTensorType type, double value) const;
  /// `value`, a float product (integers' in f64), converted to `type`:
  /// integers through i64, so that a sum beyond the type's range wraps as
  /// integer arithmetic does (a float converts to an integer saturating).
  /// Integer results are exact, and wrap, while |value| < 2^53; beyond,
  /// f64 has rounded them.
  mlir::Value fromF64(mlir::Value value, mlir::RankedTensorType type) const;
  /// `value` (a scalar or a tensor of `shape`) broadcast to `shape`.
  mlir::Value broadcastScalar(mlir::Value value,
                              llvm::ArrayRef<int64_t> shape) const;
  /// The constant `v` holds (after folding), if any.
  std::optional<mlir::DenseElementsAttr> constantOf(mlir::Value v) const;
  // The builders below check their arguments first, as the graph ops'
  // type inference would (which aborts on failure): on bad input (a
  // malformed file) they emit an error naming the op, mark the context
  // failed() and return `value` unchanged.
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape) const;
  mlir::Value transpose(mlir::Value value,
                        llvm::ArrayRef<int64_t> permutation) const;
  mlir::Value slice(mlir::Value value, llvm::ArrayRef<int64_t> start,
                    llvm::ArrayRef<int64_t> limit,
                    llvm::ArrayRef<int64_t> strides = {}) const;
  mlir::Value concatenate(mlir::ValueRange values, int64_t dim) const;
  /// Whether a builder above refused its arguments.
  bool failed() const { return refused; }

  mlir::LogicalResult requireFloat(mlir::Type type, llvm::StringRef what) const;

private:
  /// An error (as error()) that also marks the context failed.
  mlir::InFlightDiagnostic refuse() const;
  mutable bool refused = false;
};

inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

inline int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t p = 1;
  for (int64_t d : shape)
    p *= d;
  return p;
}

// Lowering functions, by family.
#define TRAINC_STABLEHLO_LOWER_FN(name)                                        \
  mlir::LogicalResult lower##name(OpContext &ctx);
// ElementwiseOps.cpp
TRAINC_STABLEHLO_LOWER_FN(Add)
TRAINC_STABLEHLO_LOWER_FN(Subtract)
TRAINC_STABLEHLO_LOWER_FN(Multiply)
TRAINC_STABLEHLO_LOWER_FN(Divide)
TRAINC_STABLEHLO_LOWER_FN(Maximum)
TRAINC_STABLEHLO_LOWER_FN(Minimum)
TRAINC_STABLEHLO_LOWER_FN(Power)
TRAINC_STABLEHLO_LOWER_FN(And)
TRAINC_STABLEHLO_LOWER_FN(Or)
TRAINC_STABLEHLO_LOWER_FN(Xor)
TRAINC_STABLEHLO_LOWER_FN(Not)
TRAINC_STABLEHLO_LOWER_FN(ShiftLeft)
TRAINC_STABLEHLO_LOWER_FN(ShiftRightLogical)
TRAINC_STABLEHLO_LOWER_FN(ShiftRightArithmetic)
TRAINC_STABLEHLO_LOWER_FN(Popcnt)
TRAINC_STABLEHLO_LOWER_FN(CountLeadingZeros)
TRAINC_STABLEHLO_LOWER_FN(BitcastConvert)
TRAINC_STABLEHLO_LOWER_FN(Negate)
TRAINC_STABLEHLO_LOWER_FN(Abs)
TRAINC_STABLEHLO_LOWER_FN(Exponential)
TRAINC_STABLEHLO_LOWER_FN(ExponentialMinusOne)
TRAINC_STABLEHLO_LOWER_FN(Log)
TRAINC_STABLEHLO_LOWER_FN(LogPlusOne)
TRAINC_STABLEHLO_LOWER_FN(Logistic)
TRAINC_STABLEHLO_LOWER_FN(Tanh)
TRAINC_STABLEHLO_LOWER_FN(Sqrt)
TRAINC_STABLEHLO_LOWER_FN(Rsqrt)
TRAINC_STABLEHLO_LOWER_FN(Sine)
TRAINC_STABLEHLO_LOWER_FN(Cosine)
TRAINC_STABLEHLO_LOWER_FN(Floor)
TRAINC_STABLEHLO_LOWER_FN(Ceil)
TRAINC_STABLEHLO_LOWER_FN(RoundNearestEven)
TRAINC_STABLEHLO_LOWER_FN(RoundNearestAfz)
TRAINC_STABLEHLO_LOWER_FN(Remainder)
TRAINC_STABLEHLO_LOWER_FN(Sign)
TRAINC_STABLEHLO_LOWER_FN(IsFinite)
TRAINC_STABLEHLO_LOWER_FN(Erf)
TRAINC_STABLEHLO_LOWER_FN(Erfc)
TRAINC_STABLEHLO_LOWER_FN(ErfInv)
TRAINC_STABLEHLO_LOWER_FN(NextAfter)
TRAINC_STABLEHLO_LOWER_FN(ReducePrecision)
TRAINC_STABLEHLO_LOWER_FN(Square)
// LinalgOps.cpp
TRAINC_STABLEHLO_LOWER_FN(TriangularSolve)
TRAINC_STABLEHLO_LOWER_FN(Convolution)
// IntegerOps.cpp
TRAINC_STABLEHLO_LOWER_FN(Mulhi)
TRAINC_STABLEHLO_LOWER_FN(IntegerPower)
TRAINC_STABLEHLO_LOWER_FN(Tan)
TRAINC_STABLEHLO_LOWER_FN(Sinh)
TRAINC_STABLEHLO_LOWER_FN(Cosh)
TRAINC_STABLEHLO_LOWER_FN(Atan)
TRAINC_STABLEHLO_LOWER_FN(Atan2)
TRAINC_STABLEHLO_LOWER_FN(Asin)
TRAINC_STABLEHLO_LOWER_FN(Acos)
TRAINC_STABLEHLO_LOWER_FN(Asinh)
TRAINC_STABLEHLO_LOWER_FN(Acosh)
TRAINC_STABLEHLO_LOWER_FN(Atanh)
TRAINC_STABLEHLO_LOWER_FN(Cbrt)
TRAINC_STABLEHLO_LOWER_FN(Clamp)
TRAINC_STABLEHLO_LOWER_FN(Select)
TRAINC_STABLEHLO_LOWER_FN(Compare)
TRAINC_STABLEHLO_LOWER_FN(Convert)
// ShapeOps.cpp
TRAINC_STABLEHLO_LOWER_FN(Constant)
TRAINC_STABLEHLO_LOWER_FN(Iota)
TRAINC_STABLEHLO_LOWER_FN(BroadcastInDim)
TRAINC_STABLEHLO_LOWER_FN(Broadcast)
TRAINC_STABLEHLO_LOWER_FN(Reshape)
TRAINC_STABLEHLO_LOWER_FN(Transpose)
TRAINC_STABLEHLO_LOWER_FN(Slice)
TRAINC_STABLEHLO_LOWER_FN(DynamicSlice)
TRAINC_STABLEHLO_LOWER_FN(DynamicUpdateSlice)
TRAINC_STABLEHLO_LOWER_FN(Concatenate)
TRAINC_STABLEHLO_LOWER_FN(Reverse)
TRAINC_STABLEHLO_LOWER_FN(Pad)
TRAINC_STABLEHLO_LOWER_FN(OptimizationBarrier)
// ReduceOps.cpp
TRAINC_STABLEHLO_LOWER_FN(Reduce)
TRAINC_STABLEHLO_LOWER_FN(ReduceWindow)
TRAINC_STABLEHLO_LOWER_FN(DotGeneral)
TRAINC_STABLEHLO_LOWER_FN(Dot)
// IndexingOps.cpp
TRAINC_STABLEHLO_LOWER_FN(Gather)
TRAINC_STABLEHLO_LOWER_FN(Scatter)
// SortOps.cpp
TRAINC_STABLEHLO_LOWER_FN(Sort)
TRAINC_STABLEHLO_LOWER_FN(TopK)
#undef TRAINC_STABLEHLO_LOWER_FN

} // namespace trainc::stablehlo_import

#endif // TRAINC_FRONTENDS_STABLEHLO_LOWERCONTEXT_H
