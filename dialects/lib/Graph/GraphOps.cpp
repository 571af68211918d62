//===- GraphOps.cpp - Verifiers and type inference of graph ops -----------===//
//
// Shape rules of every op. Each check cites the constraint it enforces, by
// the number used in the op's ODS description (e.g. `// transpose_c2`).
// Folders live in GraphFolds.cpp, FLOP/byte counts in GraphCost.cpp; the
// composites' verifiers in GraphComposites.cpp, attention's in
// GraphAttention.cpp.
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphOps.h"
#include "VerifierUtil.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto lhs = dyn_cast<RankedTensorType>(adaptor.getLhs().getType());
  if (!lhs)
    return failure(); // The operand type constraint reports this.
  types.push_back(
      RankedTensorType::get(lhs.getShape(), IntegerType::get(ctx, 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// dot_general
//===----------------------------------------------------------------------===//

/// Checks dot_general's constraints C1-C7 and computes the result shape.
static LogicalResult
inferDotGeneralShape(RankedTensorType lhs, RankedTensorType rhs,
                     ArrayRef<int64_t> lhsBatch, ArrayRef<int64_t> rhsBatch,
                     ArrayRef<int64_t> lhsContract,
                     ArrayRef<int64_t> rhsContract,
                     SmallVectorImpl<int64_t> &shape, EmitErrorFn emitError) {
  if (lhsBatch.size() != rhsBatch.size()) // dot_general_c1
    return emitError() << "(C1) " << lhsBatch.size()
                       << " lhs batching dimensions but " << rhsBatch.size()
                       << " rhs batching dimensions";
  if (lhsContract.size() != rhsContract.size()) // dot_general_c2
    return emitError() << "(C2) " << lhsContract.size()
                       << " lhs contracting dimensions but "
                       << rhsContract.size() << " rhs contracting dimensions";
  // dot_general_c3, dot_general_c4
  SmallVector<int64_t> lhsDims(lhsBatch), rhsDims(rhsBatch);
  llvm::append_range(lhsDims, lhsContract);
  llvm::append_range(rhsDims, rhsContract);
  if (failed(checkDimList(lhsDims, lhs.getRank(), "lhs batching/contracting",
                          "(C3)", "(C4)", emitError)) ||
      failed(checkDimList(rhsDims, rhs.getRank(), "rhs batching/contracting",
                          "(C3)", "(C4)", emitError)))
    return failure();
  for (auto [l, r] : llvm::zip_equal(lhsBatch, rhsBatch)) // dot_general_c5
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return emitError() << "(C5) batching dimension sizes differ: lhs dim "
                         << l << " has " << lhs.getDimSize(l) << ", rhs dim "
                         << r << " has " << rhs.getDimSize(r);
  for (auto [l, r] :
       llvm::zip_equal(lhsContract, rhsContract)) // dot_general_c6
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return emitError() << "(C6) contracting dimension sizes differ: lhs dim "
                         << l << " has " << lhs.getDimSize(l) << ", rhs dim "
                         << r << " has " << rhs.getDimSize(r);
  if (lhs.getElementType() != rhs.getElementType()) // dot_general_c7
    return emitError() << "(C7) lhs element type " << lhs.getElementType()
                       << " differs from rhs element type "
                       << rhs.getElementType();

  for (int64_t d : lhsBatch)
    shape.push_back(lhs.getDimSize(d));
  for (int64_t d = 0; d < lhs.getRank(); ++d)
    if (!llvm::is_contained(lhsDims, d))
      shape.push_back(lhs.getDimSize(d));
  for (int64_t d = 0; d < rhs.getRank(); ++d)
    if (!llvm::is_contained(rhsDims, d))
      shape.push_back(rhs.getDimSize(d));
  return success();
}

/// `tf32` (dot_general's C9, dot_general_bias's C11): only on f32 operands.
static LogicalResult checkTf32(bool tf32, Type lhs, StringRef rule,
                               EmitErrorFn emitError) {
  Type element = cast<RankedTensorType>(lhs).getElementType();
  if (tf32 && !element.isF32())
    return emitError() << rule << " tf32 rounds f32 operands, not " << element;
  return success();
}

/// dot_general's C1-C7, C9 and C10 (dot_general_bias_grad's too).
template <typename DotOp>
static LogicalResult verifyDotGeneral(DotOp op, EmitErrorFn emitError) {
  SmallVector<int64_t> shape;
  if (failed(inferDotGeneralShape(
          op.getLhs().getType(), op.getRhs().getType(),
          op.getLhsBatchingDimensions(), op.getRhsBatchingDimensions(),
          op.getLhsContractingDimensions(), op.getRhsContractingDimensions(),
          shape, emitError)))
    return failure();
  if (failed(checkTf32(op.getTf32(), op.getLhs().getType(),
                       "(C9)", // dot_general_c9
                       emitError)))
    return failure();
  Type element = op.getLhs().getType().getElementType();
  if (op.getF32Result() && !element.isBF16() &&
      !element.isF16()) // dot_general_c10
    return emitError() << "(C10) f32_result widens bf16 or f16 products, not "
                       << element;
  return success();
}

LogicalResult DotGeneralOp::verifyShapeConstraints() {
  return verifyDotGeneral(*this, [&] { return emitOpError(); });
}

/// The product's type in the operands' element type (dot_general's,
/// dot_general_bias_grad's first result and dot_general_gelu_grad's), or
/// failure (reported at `loc`).
template <typename Adaptor>
static FailureOr<RankedTensorType>
productType(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor) {
  auto lhs = dyn_cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = dyn_cast<RankedTensorType>(adaptor.getRhs().getType());
  if (!lhs || !rhs)
    return failure();
  SmallVector<int64_t> shape;
  if (failed(inferDotGeneralShape(
          lhs, rhs, adaptor.getLhsBatchingDimensions(),
          adaptor.getRhsBatchingDimensions(),
          adaptor.getLhsContractingDimensions(),
          adaptor.getRhsContractingDimensions(), shape,
          [&] { return mlir::emitError(inferenceLoc(ctx, loc)); })))
    return failure();
  return RankedTensorType::get(shape, lhs.getElementType());
}

/// productType, f32 with `f32_result`, appended to `types`.
template <typename Adaptor>
static LogicalResult
inferProductType(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> product = productType(ctx, loc, adaptor);
  if (failed(product))
    return failure();
  types.push_back(adaptor.getF32Result() ? product->clone(Float32Type::get(ctx))
                                         : *product);
  return success();
}

LogicalResult DotGeneralOp::inferReturnTypes(MLIRContext *ctx,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferProductType(ctx, loc, adaptor, types);
}

//===----------------------------------------------------------------------===//
// dot_general_bias
//===----------------------------------------------------------------------===//

/// dot_general_bias's C1-C9 and the result shape (the product's).
static LogicalResult inferDotGeneralBiasShape(
    RankedTensorType lhs, RankedTensorType rhs, RankedTensorType bias,
    ArrayRef<int64_t> lhsBatch, ArrayRef<int64_t> rhsBatch,
    ArrayRef<int64_t> lhsContract, ArrayRef<int64_t> rhsContract,
    SmallVectorImpl<int64_t> &shape, EmitErrorFn emitError) {
  if (failed(inferDotGeneralShape(lhs, rhs, lhsBatch, rhsBatch, lhsContract,
                                  rhsContract, shape, emitError)))
    return failure();
  int64_t rhsFree =
      rhs.getRank() - int64_t(rhsBatch.size()) - int64_t(rhsContract.size());
  ArrayRef<int64_t> trailing = ArrayRef<int64_t>(shape).take_back(rhsFree);
  if (bias.getShape() != trailing) // dot_general_bias_c8
    return emitError() << "(C8) bias shape [" << bias.getShape()
                       << "] is not that of rhs's free dimensions [" << trailing
                       << "]";
  if (bias.getElementType() != lhs.getElementType()) // dot_general_bias_c9
    return emitError() << "(C9) bias element type " << bias.getElementType()
                       << " differs from the operands' "
                       << lhs.getElementType();
  return success();
}

/// dot_general_bias's C1-C9 and its tf32 rule (numbered `tf32Label`) on
/// `op`, a dot_general_bias or a dot_general_bias_gelu.
template <typename OpT>
static LogicalResult verifyBiasedDot(OpT op, const char *tf32Label) {
  SmallVector<int64_t> shape;
  auto emitError = [&] { return op.emitOpError(); };
  if (failed(inferDotGeneralBiasShape(
          op.getLhs().getType(), op.getRhs().getType(), op.getBias().getType(),
          op.getLhsBatchingDimensions(), op.getRhsBatchingDimensions(),
          op.getLhsContractingDimensions(), op.getRhsContractingDimensions(),
          shape, emitError)))
    return failure();
  return checkTf32(op.getTf32(), op.getLhs().getType(), tf32Label, emitError);
}

/// The product type of a dot_general_bias's or dot_general_bias_gelu's
/// operands, or failure (reported at `loc`).
template <typename AdaptorT>
static FailureOr<RankedTensorType>
biasedProductType(MLIRContext *ctx, std::optional<Location> loc,
                  AdaptorT adaptor) {
  auto lhs = dyn_cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = dyn_cast<RankedTensorType>(adaptor.getRhs().getType());
  auto bias = dyn_cast<RankedTensorType>(adaptor.getBias().getType());
  if (!lhs || !rhs || !bias)
    return failure();
  SmallVector<int64_t> shape;
  if (failed(inferDotGeneralBiasShape(
          lhs, rhs, bias, adaptor.getLhsBatchingDimensions(),
          adaptor.getRhsBatchingDimensions(),
          adaptor.getLhsContractingDimensions(),
          adaptor.getRhsContractingDimensions(), shape,
          [&] { return mlir::emitError(inferenceLoc(ctx, loc)); })))
    return failure();
  return RankedTensorType::get(shape, lhs.getElementType());
}

LogicalResult DotGeneralBiasOp::verifyShapeConstraints() {
  // C1-C9 as above; dot_general_bias_c11
  return verifyBiasedDot(*this, "(C11)");
}

LogicalResult DotGeneralBiasOp::inferReturnTypes(MLIRContext *ctx,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> product = biasedProductType(ctx, loc, adaptor);
  if (failed(product))
    return failure();
  types.push_back(*product);
  return success();
}

//===----------------------------------------------------------------------===//
// dot_general_bias_gelu
//===----------------------------------------------------------------------===//

LogicalResult DotGeneralBiasGeluOp::verifyShapeConstraints() {
  // dot_general_bias_gelu_c1 to dot_general_bias_gelu_c9 (dot_general_bias's);
  // dot_general_bias_gelu_c11
  return verifyBiasedDot(*this, "(C11)");
}

LogicalResult DotGeneralBiasGeluOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> product = biasedProductType(ctx, loc, adaptor);
  if (failed(product))
    return failure();
  types.append(2, *product); // dot_general_bias_gelu_c12
  return success();
}

//===----------------------------------------------------------------------===//
// dot_general_gelu_grad
//===----------------------------------------------------------------------===//

LogicalResult DotGeneralGeluGradOp::verifyShapeConstraints() {
  SmallVector<int64_t> shape;
  auto emitError = [&] { return emitOpError(); };
  RankedTensorType lhs = getLhs().getType();
  if (failed(inferDotGeneralShape( // dot_general_gelu_grad_c1 to c7
          lhs, getRhs().getType(), getLhsBatchingDimensions(),
          getRhsBatchingDimensions(), getLhsContractingDimensions(),
          getRhsContractingDimensions(), shape, emitError)))
    return failure();
  auto product = RankedTensorType::get(shape, lhs.getElementType());
  if (getPreactivation().getType() != product) // dot_general_gelu_grad_c8
    return emitError() << "(C8) preactivation type "
                       << getPreactivation().getType()
                       << " is not the product's " << product;
  return checkTf32(getTf32(), lhs,
                   "(C9)", // dot_general_gelu_grad_c9
                   emitError);
}

LogicalResult DotGeneralGeluGradOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> product = productType(ctx, loc, adaptor);
  if (failed(product))
    return failure();
  types.push_back(*product); // dot_general_gelu_grad_c10
  return success();
}

//===----------------------------------------------------------------------===//
// dot_general_bias_grad
//===----------------------------------------------------------------------===//

LogicalResult DotGeneralBiasGradOp::verifyShapeConstraints() {
  auto emitError = [&] { return emitOpError(); };
  if (failed(verifyDotGeneral(*this, emitError)))
    return failure();
  if (!getLhsBatchingDimensions().empty()) // dot_general_bias_grad_c11
    return emitError() << "(C11) the sum takes no batching dimensions, "
                          "but there are "
                       << getLhsBatchingDimensions().size();
  Type element = getLhs().getType().getElementType();
  if (getF32Sum() && !element.isBF16() &&
      !element.isF16()) // dot_general_bias_grad_c12
    return emitError() << "(C12) f32_sum widens bf16 or f16 sums, not "
                       << element;
  return success();
}

// dot_general_bias_grad_c13: the result types are the inferred ones.
LogicalResult DotGeneralBiasGradOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(inferProductType(ctx, loc, adaptor, types)))
    return failure();
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  // The summed operand's free dims (C11: no batching dims), in order.
  RankedTensorType summed = adaptor.getSumRhs() ? rhs : lhs;
  ArrayRef<int64_t> summedDims = adaptor.getSumRhs()
                                     ? adaptor.getRhsContractingDimensions()
                                     : adaptor.getLhsContractingDimensions();
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < summed.getRank(); ++d)
    if (!llvm::is_contained(summedDims, d))
      kept.push_back(summed.getDimSize(d));
  types.push_back(RankedTensorType::get(kept, adaptor.getF32Sum()
                                                  ? Float32Type::get(ctx)
                                                  : lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduceType(Type operandType, ArrayRef<int64_t> dims,
                                     SmallVectorImpl<Type> *types,
                                     EmitErrorFn emitError) {
  auto operand = dyn_cast<RankedTensorType>(operandType);
  if (!operand)
    return failure();
  // reduce_c1, reduce_c2
  if (failed(checkDimList(dims, operand.getRank(), "reduced", "(C1)", "(C2)",
                          emitError)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < operand.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      shape.push_back(operand.getDimSize(d));
  if (types)
    types->push_back(RankedTensorType::get(shape, operand.getElementType()));
  return success();
}

#define TRAINC_DEFINE_REDUCE_SHAPE_RULES(Op)                                   \
  LogicalResult Op::verifyShapeConstraints() {                                 \
    return inferReduceType(getOperand().getType(), getDims(), nullptr,         \
                           [&] { return emitOpError(); });                     \
  }                                                                            \
  LogicalResult Op::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,          \
      SmallVectorImpl<Type> &types) {                                          \
    return inferReduceType(                                                    \
        adaptor.getOperand().getType(), adaptor.getDims(), &types,             \
        [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });              \
  }
TRAINC_DEFINE_REDUCE_SHAPE_RULES(ReduceSumOp)
TRAINC_DEFINE_REDUCE_SHAPE_RULES(ReduceMaxOp)
TRAINC_DEFINE_REDUCE_SHAPE_RULES(ReduceMeanOp)
TRAINC_DEFINE_REDUCE_SHAPE_RULES(ReduceProdOp)
#undef TRAINC_DEFINE_REDUCE_SHAPE_RULES

// reduce_c3: a widened sum (16-bit operand, f32 result) is reduce_sum's.
bool ReduceSumOp::isCompatibleReturnTypes(TypeRange inferred,
                                          TypeRange actual) {
  return isInferredOr(inferred, actual, isWidenedTo32);
}
bool ReduceMaxOp::isCompatibleReturnTypes(TypeRange inferred,
                                          TypeRange actual) {
  return inferred == actual;
}
bool ReduceMeanOp::isCompatibleReturnTypes(TypeRange inferred,
                                           TypeRange actual) {
  return inferred == actual;
}
bool ReduceProdOp::isCompatibleReturnTypes(TypeRange inferred,
                                           TypeRange actual) {
  return inferred == actual;
}

LogicalResult BitcastOp::verify() {
  Type from = getOperand().getType().getElementType();
  Type to = getResult().getType().getElementType();
  // Every type bitcast takes is stored in whole bytes of its width.
  if (elementStorageBytes(from) != elementStorageBytes(to)) // bitcast_c2
    return emitOpError("(C2) element types ")
           << from << " and " << to << " have different bit widths";
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult BroadcastInDimOp::verify() {
  RankedTensorType operand = getOperand().getType();
  RankedTensorType result = getResult().getType();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != operand.getRank()) // broadcast_c1
    return emitOpError("(C1) dims has ")
           << dims.size() << " entries but the operand has rank "
           << operand.getRank();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= result.getRank()) // broadcast_c2
      return emitOpError("(C2) dims[")
             << i << "] = " << d << " is out of range [0, " << result.getRank()
             << ")";
    if (i > 0 && d <= dims[i - 1]) // broadcast_c3
      return emitOpError("(C3) dims must be strictly increasing, but dims[")
             << i << "] = " << d << " follows " << dims[i - 1];
    int64_t from = operand.getDimSize(i), to = result.getDimSize(d);
    if (from != 1 && from != to) // broadcast_c4
      return emitOpError("(C4) operand dimension ")
             << i << " has size " << from << ", which is neither 1 nor " << to
             << " (the size of result dimension " << d << ")";
  }
  if (operand.getElementType() != result.getElementType()) // broadcast_c5
    return emitOpError("(C5) operand element type ")
           << operand.getElementType() << " differs from result element type "
           << result.getElementType();
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType operand = getOperand().getType();
  RankedTensorType result = getResult().getType();
  if (operand.getNumElements() != result.getNumElements()) // reshape_c1
    return emitOpError("(C1) operand has ")
           << operand.getNumElements() << " elements but the result has "
           << result.getNumElements();
  if (operand.getElementType() != result.getElementType()) // reshape_c2
    return emitOpError("(C2) operand element type ")
           << operand.getElementType() << " differs from result element type "
           << result.getElementType();
  return success();
}

static LogicalResult inferTransposeType(Type operandType,
                                        ArrayRef<int64_t> perm,
                                        SmallVectorImpl<Type> *types,
                                        EmitErrorFn emitError) {
  auto operand = dyn_cast<RankedTensorType>(operandType);
  if (!operand)
    return failure();
  if (static_cast<int64_t>(perm.size()) != operand.getRank()) // transpose_c1
    return emitError() << "(C1) permutation has " << perm.size()
                       << " entries but the operand has rank "
                       << operand.getRank();
  if (failed(checkDimList(perm, operand.getRank(), "permutation", "(C2)",
                          "(C2)", emitError))) // transpose_c2
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(operand.getDimSize(p));
  if (types)
    types->push_back(RankedTensorType::get(shape, operand.getElementType()));
  return success();
}

LogicalResult TransposeOp::verifyShapeConstraints() {
  return inferTransposeType(getOperand().getType(), getPermutation(), nullptr,
                            [&] { return emitOpError(); });
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferTransposeType(
      adaptor.getOperand().getType(), adaptor.getPermutation(), &types,
      [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });
}

static LogicalResult inferSliceType(Type operandType, ArrayRef<int64_t> start,
                                    ArrayRef<int64_t> limit,
                                    ArrayRef<int64_t> strides,
                                    SmallVectorImpl<Type> *types,
                                    EmitErrorFn emitError) {
  auto operand = dyn_cast<RankedTensorType>(operandType);
  if (!operand)
    return failure();
  size_t rank = operand.getRank();
  if (start.size() != rank || limit.size() != rank ||
      strides.size() != rank) // slice_c1
    return emitError() << "(C1) start, limit and strides have " << start.size()
                       << ", " << limit.size() << " and " << strides.size()
                       << " entries; the operand has rank " << rank;
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1) // slice_c2
      return emitError() << "(C2) stride " << strides[d] << " in dimension "
                         << d << " is not positive";
    int64_t size = operand.getDimSize(d);
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > size) // slice_c3
      return emitError() << "(C3) dimension " << d << " needs 0 <= start ("
                         << start[d] << ") <= limit (" << limit[d]
                         << ") <= size (" << size << ")";
    shape.push_back(llvm::divideCeil(limit[d] - start[d], strides[d]));
  }
  if (types)
    types->push_back(RankedTensorType::get(shape, operand.getElementType()));
  return success();
}

LogicalResult SliceOp::verifyShapeConstraints() {
  return inferSliceType(getOperand().getType(), getStart(), getLimit(),
                        getStrides(), nullptr, [&] { return emitOpError(); });
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferSliceType(adaptor.getOperand().getType(), adaptor.getStart(),
                        adaptor.getLimit(), adaptor.getStrides(), &types, [&] {
                          return mlir::emitError(inferenceLoc(ctx, loc));
                        });
}

static LogicalResult inferConcatenateType(TypeRange inputTypes, int64_t dim,
                                          SmallVectorImpl<Type> *types,
                                          EmitErrorFn emitError) {
  if (inputTypes.empty()) // concatenate_c1
    return emitError() << "(C1) needs at least one operand";
  auto first = dyn_cast<RankedTensorType>(inputTypes.front());
  if (!first)
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, type] : llvm::enumerate(inputTypes)) {
    auto input = dyn_cast<RankedTensorType>(type);
    if (!input)
      return failure();
    if (input.getRank() != first.getRank()) // concatenate_c2
      return emitError() << "(C2) operand " << i << " has rank "
                         << input.getRank() << " but operand 0 has rank "
                         << first.getRank();
    if (dim < 0 || dim >= first.getRank()) // concatenate_c3
      return emitError() << "(C3) dim " << dim << " is out of range [0, "
                         << first.getRank() << ")";
    if (input.getElementType() != first.getElementType()) // concatenate_c4
      return emitError() << "(C4) operand " << i << " has element type "
                         << input.getElementType() << " but operand 0 has "
                         << first.getElementType();
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != dim &&
          input.getDimSize(d) != first.getDimSize(d)) // concatenate_c5
        return emitError() << "(C5) operand " << i << " has size "
                           << input.getDimSize(d) << " in dimension " << d
                           << " but operand 0 has " << first.getDimSize(d);
    if (i > 0)
      shape[dim] += input.getDimSize(dim);
  }
  if (types)
    types->push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult ConcatenateOp::verifyShapeConstraints() {
  return inferConcatenateType(getInputs().getTypes(), getDim(), nullptr,
                              [&] { return emitOpError(); });
}

LogicalResult ConcatenateOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferConcatenateType(
      adaptor.getInputs().getTypes(), adaptor.getDim(), &types,
      [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });
}

static LogicalResult inferGatherType(Type operandType, Type indicesType,
                                     int64_t axis, SmallVectorImpl<Type> *types,
                                     EmitErrorFn emitError) {
  auto operand = dyn_cast<RankedTensorType>(operandType);
  auto indices = dyn_cast<RankedTensorType>(indicesType);
  if (!operand || !indices)
    return failure();
  if (axis < 0 || axis >= operand.getRank()) // gather_c1
    return emitError() << "(C1) axis " << axis << " is out of range [0, "
                       << operand.getRank() << ")";
  SmallVector<int64_t> shape(operand.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, operand.getShape().drop_front(axis + 1));
  if (types)
    types->push_back(RankedTensorType::get(shape, operand.getElementType()));
  return success();
}

LogicalResult GatherOp::verifyShapeConstraints() {
  if (failed(inferGatherType(getOperand().getType(), getIndices().getType(),
                             getAxis(), nullptr,
                             [&] { return emitOpError(); })))
    return failure();
  int64_t n = getOperand().getType().getDimSize(getAxis());
  // (The attribute is signless: read as signed, a negative one is caught.)
  if (IntegerAttr p = getPaddingIndexAttr();
      p && (p.getInt() < 0 || p.getInt() >= n)) // C3
    return emitOpError("(C3) padding_index ")
           << p.getInt() << " is out of range [0, " << n << ")";
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferGatherType(
      adaptor.getOperand().getType(), adaptor.getIndices().getType(),
      adaptor.getAxis(), &types,
      [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });
}

LogicalResult AllReduceOp::verify() {
  // all_reduce_c1, all_reduce_c2: SameOperandsAndResultType, FloatTensor.
  Mesh mesh = getMesh(*this);
  if (mesh.axisIndex(getAxis()) < 0) // all_reduce_c3
    return emitOpError("(C3) axis '")
           << getAxis() << "' is not a mesh axis (data, tensor)";
  return success();
}

/// The shared contracts of reduce_scatter, all_gather and shard_slice:
/// `part` is one of `size(axis)` parts of `whole` along dimension 0. The
/// constraint numbers: same element type, rank and trailing dimensions
/// (c1); dimension 0 (c2); the axis (cAxis).
static LogicalResult verifyParts(Operation *op, RankedTensorType whole,
                                 RankedTensorType part, StringRef axis,
                                 int cAxis) {
  Mesh mesh = getMesh(op);
  if (mesh.axisIndex(axis) < 0)
    return op->emitOpError("(C") << cAxis << ") axis '" << axis
                                 << "' is not a mesh axis (data, tensor)";
  if (whole.getElementType() != part.getElementType() ||
      whole.getRank() != part.getRank() || whole.getRank() < 1 ||
      whole.getShape().drop_front() != part.getShape().drop_front())
    return op->emitOpError("(C1) operand and result must have one element "
                           "type, rank >= 1 and equal dimensions after the "
                           "first, not ")
           << op->getOperand(0).getType() << " and "
           << op->getResult(0).getType();
  int64_t n = mesh.size(axis);
  if (whole.getDimSize(0) != part.getDimSize(0) * n)
    return op->emitOpError("(C2) dimension 0 of ")
           << whole << " must be " << n << " (the size of axis '" << axis
           << "') times that of " << part;
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  // reduce_scatter_c3: FloatTensor.
  return verifyParts(*this, getOperand().getType(), getType(), getAxis(), 4);
}

LogicalResult AllGatherOp::verify() {
  return verifyParts(*this, getType(), getOperand().getType(), getAxis(), 3);
}

LogicalResult ShardSliceOp::verify() {
  return verifyParts(*this, getOperand().getType(), getType(), getAxis(), 3);
}

/// A start's contract with its done (constraint `c`): its result's one
/// user is a graph.collective_done that takes it and the start's operand.
static LogicalResult verifyStartsOneDone(Operation *start, int c) {
  Value pending = start->getResult(0);
  auto done = pending.hasOneUse()
                  ? dyn_cast<CollectiveDoneOp>(*pending.getUsers().begin())
                  : CollectiveDoneOp();
  if (!done || done.getPending() != pending ||
      done.getSource() != start->getOperand(0))
    return start->emitOpError("(C")
           << c << ") the result's one user must be a graph.collective_done "
           << "that takes it and this op's operand";
  return success();
}

LogicalResult AllReduceStartOp::verify() {
  // all_reduce_start_c1, c2: SameOperandsAndResultType, FloatTensor.
  if (getMesh(*this).axisIndex(getAxis()) < 0) // all_reduce_start_c3
    return emitOpError("(C3) axis '")
           << getAxis() << "' is not a mesh axis (data, tensor)";
  return verifyStartsOneDone(*this, 4);
}

LogicalResult ReduceScatterStartOp::verify() {
  if (failed(
          verifyParts(*this, getOperand().getType(), getType(), getAxis(), 4)))
    return failure();
  return verifyStartsOneDone(*this, 5);
}

LogicalResult AllGatherStartOp::verify() {
  if (failed(
          verifyParts(*this, getType(), getOperand().getType(), getAxis(), 3)))
    return failure();
  return verifyStartsOneDone(*this, 4);
}

LogicalResult CollectiveDoneOp::verify() {
  Operation *start = getPending().getDefiningOp();
  if (!isa_and_nonnull<AllReduceStartOp, ReduceScatterStartOp,
                       AllGatherStartOp>(start))
    return emitOpError("(C1) pending must be the result of "
                       "graph.all_reduce_start, graph.reduce_scatter_start or "
                       "graph.all_gather_start");
  if (getSource() != start->getOperand(0))
    return emitOpError("(C2) source must be the start's operand");
  if (getType() != getPending().getType())
    return emitOpError("(C3) the result must have pending's type ")
           << getPending().getType();
  return success();
}

bool CollectiveDoneOp::canOverwriteOperand(unsigned result, unsigned operand) {
  return operand == 0; // the pending buffer, never the source
}

LogicalResult ScatterAddOp::verify() {
  RankedTensorType result = getType();
  int64_t axis = getAxis(); // I64Attr getters return it unsigned.
  if (axis < 0 || axis >= result.getRank()) // scatter_add_c1
    return emitOpError("(C1) axis ")
           << axis << " is out of range [0, " << result.getRank() << ")";
  SmallVector<int64_t> expected(result.getShape().take_front(axis));
  llvm::append_range(expected, getIndices().getType().getShape());
  llvm::append_range(expected, result.getShape().drop_front(axis + 1));
  if (getUpdates().getType().getShape() !=
      ArrayRef<int64_t>(expected)) // scatter_add_c2
    return emitOpError("(C2) updates ")
           << getUpdates().getType()
           << " must have shape result.shape[:axis] + indices.shape + "
              "result.shape[axis+1:]";
  if (getUpdates().getType().getElementType() !=
      result.getElementType()) // scatter_add_c3
    return emitOpError("(C3) updates element type ")
           << getUpdates().getType().getElementType()
           << " differs from result element type " << result.getElementType();
  return success();
}

LogicalResult ArgsortOp::verify() {
  RankedTensorType operand = getOperand().getType();
  int64_t axis = getAxis(); // I64Attr getters return it unsigned.
  if (axis < 0 || axis >= operand.getRank()) // argsort_c1
    return emitOpError("(C1) axis ")
           << axis << " is out of range [0, " << operand.getRank() << ")";
  RankedTensorType result = getResult().getType();
  if (result.getShape() != operand.getShape() ||
      !result.getElementType().isSignlessInteger(64)) // argsort_c2
    return emitOpError("(C2) result ")
           << result << " must be i64 of the shape of the operand " << operand;
  return success();
}

LogicalResult IotaOp::verify() {
  int64_t rank = getResult().getType().getRank();
  int64_t dim = getDim(); // I64Attr getters return it unsigned.
  if (rank < 1)           // iota_c1
    return emitOpError("(C1) result must have rank at least 1");
  if (dim < 0 || dim >= rank) // iota_c2
    return emitOpError("(C2) dim ")
           << dim << " is out of range [0, " << rank << ")";
  return success();
}

#define GET_OP_CLASSES
#include "trainc/Dialect/Graph/GraphOps.cpp.inc"
