//===- GraphComposites.cpp - Verifiers of the composite ops ---------------===//
//
// The optimizer's multi-tensor ops, dropout, softmax, the norms and their
// gradients, cross-entropy and its gradient. Each check cites the
// constraint it enforces, as in GraphOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtil.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

/// The kernel reads each element of a parameter and its moments before it
/// writes that element of their new values: new_params[i] may take
/// params[i]'s memory, new_exp_avgs[i] exp_avgs[i]'s, new_exp_avg_sqs[i]
/// exp_avg_sqs[i]'s. Operands are N params, grads, exp_avgs and
/// exp_avg_sqs, then the scalars; results N of each kind.
bool AdamwUpdateOp::canOverwriteOperand(unsigned result, unsigned operand) {
  unsigned n = getParams().size();
  static constexpr unsigned kReplaced[] = {0, 2, 3};
  return result < 3 * n && operand == kReplaced[result / n] * n + result % n;
}

LogicalResult AdamwUpdateOp::verify() {
  size_t n = getParams().size();
  if (n == 0 || getGrads().size() != n || getExpAvgs().size() != n ||
      getExpAvgSqs().size() != n ||
      getUpdated().size() != 3 * n) // adamw_update_c5
    return emitOpError("(C5) needs one gradient, first and second moment "
                       "and three results per parameter (")
           << n << " parameters, " << getGrads().size() << " gradients, "
           << getExpAvgs().size() << " and " << getExpAvgSqs().size()
           << " moments, " << getUpdated().size() << " results)";
  Type element = getElementTypeOrSelf(getParams()[0].getType());
  for (size_t i = 0; i < n; ++i) {
    Type type = getParams()[i].getType();
    Value group[] = {getGrads()[i],      getExpAvgs()[i],
                     getExpAvgSqs()[i],  getNewParams()[i],
                     getNewExpAvgs()[i], getNewExpAvgSqs()[i]};
    for (Value v : group)
      if (v.getType() != type) // adamw_update_c1
        return emitOpError("(C1) ") << v.getType() << " differs from parameter "
                                    << i << "'s type " << type;
    if (getElementTypeOrSelf(type) != element) // adamw_update_c2
      return emitOpError("(C2) parameter ")
             << i << " is of " << getElementTypeOrSelf(type)
             << ", the first of " << element;
  }
  for (Value v : {getNegStepSize(), getBiasCorrection2Sqrt(), getDecayFactor(),
                  getGradScale()}) {
    auto scalar = cast<RankedTensorType>(v.getType());
    if (scalar.getRank() != 0 ||
        scalar.getElementType() != element) // adamw_update_c2
      return emitOpError("(C2) scalar operand ")
             << scalar << " is not a 0-d tensor of " << element;
  }
  double b1 = getBeta1().convertToDouble(), b2 = getBeta2().convertToDouble(),
         eps = getEpsilon().convertToDouble();
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1) || !std::isfinite(eps) ||
      eps < 0) // adamw_update_c3
    return emitOpError("(C3) betas must be in [0, 1) and epsilon finite and "
                       "not negative (beta1 ")
           << b1 << ", beta2 " << b2 << ", epsilon " << eps << ")";
  if (Value skip = getSkip())
    if (cast<RankedTensorType>(skip.getType()).getRank() !=
        0) // adamw_update_c4
      return emitOpError("(C4) skip must be a 0-d i1, not ") << skip.getType();
  return success();
}

LogicalResult SumOfSquaresOp::verify() {
  if (getOperands().empty()) // sum_of_squares_c1
    return emitOpError("(C1) needs at least one operand");
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getRank() != 0 ||
      !result.getElementType().isF64()) // sum_of_squares_c2
    return emitOpError("(C2) the result must be a 0-d f64, not ") << result;
  Type element = getElementTypeOrSelf(getOperands()[0].getType());
  for (Value v : getOperands())
    if (getElementTypeOrSelf(v.getType()) != element) // sum_of_squares_c3
      return emitOpError("(C3) operand of ")
             << getElementTypeOrSelf(v.getType())
             << " differs from the first's " << element;
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0)) // dropout_c1
    return emitOpError("(C1) ratio ") << ratio << " is not in [0, 1)";
  if (failed(checkTensorBlocks(*this, getBlocks(), ratio > 0, "blocks", "(C3)",
                               [&] { // dropout_c3
                                 return emitOpError();
                               })))
    return failure();
  int64_t rank = getOperand().getType().getRank();
  if (getBlocks() != 1 && (getBlockDim() < 0 || getBlockDim() >= rank))
    return emitOpError("(C3) block_dim ") // dropout_c3
           << getBlockDim() << " is not a dimension of the rank-" << rank
           << " operand";
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto operand = dyn_cast<RankedTensorType>(adaptor.getOperand().getType());
  if (!operand)
    return failure();
  types.push_back(operand);
  types.push_back(
      RankedTensorType::get(operand.getShape(), IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getOperand().getType().getRank();
  int64_t dim = getDim();     // I64Attr getters return it unsigned.
  if (dim < 0 || dim >= rank) // softmax_c1
    return emitOpError("(C1) dim ")
           << dim << " is out of range [0, " << rank << ")";
  return success();
}

/// Checks the constraints shared by layer_norm and rms_norm: (C1) axis,
/// (C2) the shape and (C3) element type of each affine operand, (C4) epsilon.
static LogicalResult checkNormOperands(Type inputType, ValueRange affine,
                                       int64_t axis, double epsilon,
                                       EmitErrorFn emitError) {
  auto input = dyn_cast<RankedTensorType>(inputType);
  if (!input)
    return failure();
  if (axis < 0 || axis >= input.getRank()) // norm_c1
    return emitError() << "(C1) axis " << axis << " is out of range [0, "
                       << input.getRank() << ")";
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (Value v : affine) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return failure();
    if (type.getShape() != normalized) // norm_c2
      return emitError() << "(C2) scale/bias type " << type
                         << " does not have the normalized shape ["
                         << llvm::make_range(normalized.begin(),
                                             normalized.end())
                         << "] (input dimensions " << axis << " and on)";
    if (type.getElementType() != input.getElementType()) // norm_c3
      return emitError() << "(C3) scale/bias element type "
                         << type.getElementType()
                         << " differs from input element type "
                         << input.getElementType();
  }
  if (!std::isfinite(epsilon) || epsilon < 0) // norm_c4
    return emitError() << "(C4) epsilon " << epsilon
                       << " must be finite and not negative";
  return success();
}

/// Collects the present values among optional operands.
static SmallVector<Value> presentValues(std::initializer_list<Value> values) {
  SmallVector<Value> present;
  for (Value v : values)
    if (v)
      present.push_back(v);
  return present;
}

/// A norm's result: the inferred type, or for an f32 input the same shape
/// in bf16 or f16 (layer_norm_c5, rms_norm_c5).
static bool isNormResult(TypeRange inferred, TypeRange actual) {
  return isInferredOr(inferred, actual, [](Type from, Type to) {
    return isWidenedTo32(to, from);
  });
}

bool LayerNormOp::isCompatibleReturnTypes(TypeRange inferred,
                                          TypeRange actual) {
  return isNormResult(inferred, actual);
}

bool RmsNormOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  return isNormResult(inferred, actual);
}

LogicalResult LayerNormOp::verifyShapeConstraints() {
  return checkNormOperands(
      getInput().getType(), presentValues({getScale(), getBias()}), getAxis(),
      getEpsilon().convertToDouble(), [&] { return emitOpError(); });
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(checkNormOperands(
          adaptor.getInput().getType(),
          presentValues({adaptor.getScale(), adaptor.getBias()}),
          adaptor.getAxis(), adaptor.getEpsilon().convertToDouble(),
          [&] { return mlir::emitError(inferenceLoc(ctx, loc)); })))
    return failure();
  types.push_back(adaptor.getInput().getType());
  return success();
}

/// norm_grad's constraints: those of the norms, then (C5) the cotangent.
static LogicalResult checkNormGradOperands(Type inputType, ValueRange scale,
                                           Type cotangent, int64_t axis,
                                           double epsilon,
                                           EmitErrorFn emitError) {
  if (failed(checkNormOperands(inputType, scale, axis, epsilon, emitError)))
    return failure();
  if (cotangent != inputType) // norm_grad_c5
    return emitError() << "(C5) cotangent type " << cotangent
                       << " differs from input type " << inputType;
  return success();
}

LogicalResult NormGradOp::verifyShapeConstraints() {
  return checkNormGradOperands(
      getInput().getType(), presentValues({getScale()}),
      getCotangent().getType(), getAxis(), getEpsilon().convertToDouble(),
      [&] { return emitOpError(); });
}

LogicalResult NormGradOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (failed(checkNormGradOperands(
          adaptor.getInput().getType(), presentValues({adaptor.getScale()}),
          adaptor.getCotangent().getType(), adaptor.getAxis(),
          adaptor.getEpsilon().convertToDouble(),
          [&] { return mlir::emitError(inferenceLoc(ctx, loc)); })))
    return failure();
  types.append(2, adaptor.getInput().getType());
  return success();
}

/// norm_grad_params's constraints: norm_grad's, then (C6) the type, (C8)
/// the addend and (C9) the narrowed type.
static LogicalResult
checkNormGradParamsOperands(NormGradParamsOp::Adaptor adaptor,
                            EmitErrorFn emitError) {
  Type input = adaptor.getInput().getType();
  if (failed(checkNormGradOperands(
          input, adaptor.getScale(), adaptor.getCotangent().getType(),
          adaptor.getAxis(), adaptor.getEpsilon().convertToDouble(),
          emitError)))
    return failure();
  Type element = cast<RankedTensorType>(input).getElementType();
  if (!element.isF32() && !element.isF64()) // norm_grad_params_c6
    return emitError() << "(C6) element type " << element
                       << " is not f32 or f64";
  if (Value addend = adaptor.getAddend();
      addend && addend.getType() != input) // norm_grad_params_c8
    return emitError() << "(C8) addend type " << addend.getType()
                       << " differs from input type " << input;
  if (std::optional<Type> narrowed = adaptor.getNarrowedType()) {
    if (!(narrowed->isBF16() || narrowed->isF16()) ||
        !element.isF32()) // norm_grad_params_c9
      return emitError() << "(C9) narrowed_type " << *narrowed
                         << " must be bf16 or f16, of an f32 input gradient, "
                            "not of "
                         << element;
  }
  return success();
}

LogicalResult NormGradParamsOp::verifyShapeConstraints() {
  return checkNormGradParamsOperands(Adaptor(*this),
                                     [&] { return emitOpError(); });
}

LogicalResult NormGradParamsOp::inferReturnTypes(MLIRContext *ctx,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  if (failed(checkNormGradParamsOperands(
          adaptor, [&] { return mlir::emitError(inferenceLoc(ctx, loc)); })))
    return failure();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  types.push_back(input);
  types.append(adaptor.getWithBiasGrad() ? 2 : 1, adaptor.getScale().getType());
  if (std::optional<Type> narrowed = adaptor.getNarrowedType())
    types.push_back(input.clone(*narrowed));
  return success();
}

/// Only input_grad, in place of the addend (operand 3): each lane reads an
/// element of the addend just before it writes that element of the sum.
/// x and the cotangent are read again after input_grad is written.
bool NormGradParamsOp::canOverwriteOperand(unsigned result, unsigned operand) {
  return result == 0 && operand == 3 && getAddend();
}

LogicalResult RmsNormOp::verifyShapeConstraints() {
  return checkNormOperands(getInput().getType(), presentValues({getScale()}),
                           getAxis(), getEpsilon().convertToDouble(),
                           [&] { return emitOpError(); });
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(checkNormOperands(
          adaptor.getInput().getType(), presentValues({adaptor.getScale()}),
          adaptor.getAxis(), adaptor.getEpsilon().convertToDouble(),
          [&] { return mlir::emitError(inferenceLoc(ctx, loc)); })))
    return failure();
  types.push_back(adaptor.getInput().getType());
  return success();
}

static LogicalResult inferCrossEntropyType(Type logitsType, Type targetsType,
                                           LossReduction reduction,
                                           SmallVectorImpl<Type> *types,
                                           EmitErrorFn emitError) {
  auto logits = dyn_cast<RankedTensorType>(logitsType);
  auto targets = dyn_cast<RankedTensorType>(targetsType);
  if (!logits || !targets)
    return failure();
  if (logits.getRank() < 1) // softmax_cross_entropy_c1
    return emitError() << "(C1) logits must have rank at least 1 (classes "
                          "are the last dimension)";
  if (targets.getShape() !=
      logits.getShape().drop_back()) // softmax_cross_entropy_c2
    return emitError() << "(C2) targets " << targets
                       << " must have the logits' shape without the class "
                          "dimension (logits are "
                       << logits << ")";
  if (types) {
    ArrayRef<int64_t> shape;
    if (reduction == LossReduction::none)
      shape = targets.getShape();
    types->push_back(RankedTensorType::get(shape, logits.getElementType()));
  }
  return success();
}

/// `classes` in [1, C]: C4 of both cross-entropy ops, C5 of
/// softmax_cross_entropy_and_grad (`contract`).
static LogicalResult checkClasses(Operation *op, Type logitsType,
                                  std::optional<uint64_t> classes,
                                  int contract = 4) {
  auto logits = cast<RankedTensorType>(logitsType);
  if (!classes || logits.getRank() < 1)
    return success();
  int64_t size = logits.getShape().back();
  if (int64_t(*classes) < 1 ||
      int64_t(*classes) > size) // softmax_cross_entropy_c4
    return op->emitOpError()
           << "(C" << contract << ") classes " << int64_t(*classes)
           << " is not in [1, " << size << "]";
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verifyShapeConstraints() {
  if (failed(inferCrossEntropyType(getLogits().getType(),
                                   getTargets().getType(), getReduction(),
                                   nullptr, [&] { return emitOpError(); })))
    return failure();
  return checkClasses(*this, getLogits().getType(), getClasses());
}

bool SoftmaxCrossEntropyOp::isCompatibleReturnTypes(TypeRange inferred,
                                                    TypeRange actual) {
  // 16-bit logits may give an f32 loss (the kernel computes in f32).
  return isInferredOr(inferred, actual, isWidenedTo32);
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferCrossEntropyType(
      adaptor.getLogits().getType(), adaptor.getTargets().getType(),
      adaptor.getReduction(), &types,
      [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });
}

bool SoftmaxCrossEntropyGradOp::canOverwriteOperand(unsigned result,
                                                    unsigned operand) {
  return operand == 0;
}

bool SoftmaxCrossEntropyAndGradOp::canOverwriteOperand(unsigned result,
                                                       unsigned operand) {
  return result == 1 && operand == 0;
}

LogicalResult SoftmaxCrossEntropyAndGradOp::verify() {
  RankedTensorType logits = getLogits().getType();
  SmallVector<Type, 1> inferred;
  // C1 and the targets' half of C2, with softmax_cross_entropy's messages.
  if (failed(inferCrossEntropyType(logits, getTargets().getType(),
                                   getReduction(), &inferred,
                                   [&] { return emitOpError(); })))
    return failure();
  if (getWeight().getType().getShape() !=
      logits.getShape().drop_back()) // softmax_cross_entropy_and_grad_c2
    return emitOpError("(C2) weight must have the logits' shape without its "
                       "last dimension");
  Type loss = getLoss().getType();
  if (!isInferredOr(inferred, loss,
                    isWidenedTo32)) // softmax_cross_entropy_and_grad_c3
    return emitOpError() << "(C3) loss type " << loss
                         << " differs from softmax_cross_entropy's "
                         << inferred.front();
  if (getGrad().getType() != logits) // softmax_cross_entropy_and_grad_c4
    return emitOpError("(C4) grad must have the logits' type");
  return checkClasses(*this, logits, getClasses(), /*contract=*/5);
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (logits.getRank() < 1)
    return emitOpError("(C1) logits must have rank at least 1");
  ArrayRef<int64_t> positions = logits.getShape().drop_back();
  if (getTargets().getType().getShape() != positions ||
      getWeight().getType().getShape() != positions)
    return emitOpError("(C2) targets and weight must have the logits' shape "
                       "without its last dimension");
  if (getResult().getType() != logits)
    return emitOpError("(C3) the result must have the logits' type");
  return checkClasses(*this, logits, getClasses());
}
