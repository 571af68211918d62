//===- GraphFusion.cpp - The ops the lower phase's fusion makes -----------===//
//
// graph.fused_elementwise (a loop of elementwise ops: verifier C1-C6, FLOP
// count, in-place rule) and graph.convert_group (several converts as one
// op: verifier C1-C3, FLOP count).
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace trainc::graph;

/// Whether `op` may be in a fused body (C3's list).
static bool isFusibleBodyOp(Operation *op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, TanhOp, ErfOp, SqrtOp, RsqrtOp, CosOp,
             SinOp, FloorOp, RoundOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp,
             MinOp, CompareOp, SelectOp, ConvertOp, GeluOp, GeluGradOp, AndOp,
             OrOp, XorOp, NotOp, ShiftLeftOp, ShiftRightLogicalOp,
             ShiftRightArithmeticOp, PopCountOp, CountLeadingZerosOp>(op);
}

static bool isLoopFloat(Type e) {
  return e.isF64() || e.isF32() || e.isF16() || e.isBF16();
}

/// i32, i64, ui32 or ui64.
static bool isLoopInteger(Type e) {
  auto i = dyn_cast<IntegerType>(e);
  return i && !i.isSigned() && (i.getWidth() == 32 || i.getWidth() == 64);
}

/// A 0-d tensor of f64, f32, f16, bf16, i32, i64, ui32, ui64 or i1.
static bool isScalarOfLoopType(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || tensor.getRank() != 0)
    return false;
  Type e = tensor.getElementType();
  return isLoopFloat(e) || isLoopInteger(e) || e.isInteger(1);
}

LogicalResult FusedElementwiseOp::verifyRegions() {
  // (C1)
  if (getInputs().empty() || getResults().empty())
    return emitOpError("(C1) needs at least one operand and one result");
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(getResult(0).getType()).getShape();
  for (Value r : getResults())
    if (cast<RankedTensorType>(r.getType()).getShape() != shape)
      return emitOpError("(C1) every result must have one shape");
  std::optional<ArrayAttr> operandDims = getOperandDims();
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!operandDims && type.getRank() != 0 && type.getShape() != shape)
      return emitOpError("(C1) operand ")
             << i
             << " must have the results' shape or be 0-d (or be broadcast "
                "by operand_dims)";
  }
  // (C6)
  if (operandDims) {
    if (operandDims->size() != getInputs().size())
      return emitOpError("(C6) operand_dims has ")
             << operandDims->size() << " lists for " << getInputs().size()
             << " operands";
    for (auto [i, v] : llvm::enumerate(getInputs())) {
      ArrayRef<int64_t> in = cast<RankedTensorType>(v.getType()).getShape();
      ArrayRef<int64_t> dims =
          cast<DenseI64ArrayAttr>((*operandDims)[i]).asArrayRef();
      if (dims.size() != in.size())
        return emitOpError("(C6) operand ")
               << i << " has rank " << in.size() << " but " << dims.size()
               << " operand_dims";
      for (auto [k, d] : llvm::enumerate(dims)) {
        if (d < 0 || d >= int64_t(shape.size()) || (k > 0 && d <= dims[k - 1]))
          return emitOpError("(C6) operand ")
                 << i << "'s operand_dims must increase within the results' "
                 << shape.size() << " dimensions";
        if (in[k] != 1 && in[k] != shape[d])
          return emitOpError("(C6) operand ")
                 << i << "'s dimension " << k << " (" << in[k]
                 << ") is neither 1 nor the results' dimension " << d << " ("
                 << shape[d] << ")";
      }
    }
  }
  // (C2)
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("(C2) the body takes ")
           << body.getNumArguments() << " arguments for " << getInputs().size()
           << " operands";
  for (auto [arg, v] : llvm::zip(body.getArguments(), getInputs())) {
    auto type = cast<RankedTensorType>(v.getType());
    if (arg.getType() != RankedTensorType::get({}, type.getElementType()))
      return emitOpError("(C2) body argument ")
             << arg.getArgNumber() << " must be a 0-d "
             << type.getElementType();
  }
  // (C3)
  for (Operation &op : body.without_terminator()) {
    if (!isFusibleBodyOp(&op))
      return emitOpError("(C3) '")
             << op.getName() << "' cannot be in a fused elementwise body";
    SmallVector<Type> types(op.getOperandTypes());
    llvm::append_range(types, op.getResultTypes());
    for (Type t : types)
      if (!isScalarOfLoopType(t))
        return emitOpError("(C3) '")
               << op.getName() << "' in the body has type " << t
               << ": body values are 0-d f64, f32, f16, bf16, i32, i64, "
                  "ui32, ui64 or i1";
    Type e = getElementTypeOrSelf(op.getResult(0).getType());
    bool floatOnly =
        !isa<NegOp, AbsOp, AddOp, SubOp, MulOp, MaxOp, MinOp, CompareOp,
             SelectOp, ConvertOp>(op) &&
        !isa<AndOp, OrOp, XorOp, NotOp, ShiftLeftOp, ShiftRightLogicalOp,
             ShiftRightArithmeticOp, PopCountOp, CountLeadingZerosOp>(op);
    if (floatOnly && !isLoopFloat(e))
      return emitOpError("(C3) '")
             << op.getName() << "' in the body computes on " << e
             << ": only neg, abs, add, sub, mul, max, min, compare, select, "
                "convert and the bitwise ops take integers in a fused body";
  }
  // (C5)
  bool floats = false, integers = false;
  auto note = [&](Type t) {
    Type e = getElementTypeOrSelf(t);
    floats = floats || isLoopFloat(e);
    integers = integers || isLoopInteger(e);
  };
  for (BlockArgument arg : body.getArguments())
    note(arg.getType());
  for (Operation &op : body.without_terminator())
    for (Type t : op.getResultTypes())
      note(t);
  if (floats && integers)
    return emitOpError("(C5) the body computes on floats and on integers; "
                       "a fused loop takes one or the other (and i1)");
  // (C4)
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("(C4) the body must end in graph.yield");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("(C4) the body yields ")
           << yield.getValues().size() << " values for " << getNumResults()
           << " results";
  for (auto [v, r] : llvm::zip(yield.getValues(), getResults())) {
    Type element = cast<RankedTensorType>(r.getType()).getElementType();
    if (v.getType() != RankedTensorType::get({}, element))
      return emitOpError("(C4) a yielded value must be a 0-d ") << element;
  }
  return success();
}

/// The body's FLOPs per element, once per element of the results' shape.
int64_t FusedElementwiseOp::getFlops() {
  int64_t perElement = 0;
  for (Operation &op : getBody().front().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(&op))
      perElement += cost.getFlops();
  return perElement * numElements(getResult(0));
}

/// A result may take an operand's memory of its own type: each element is
/// read before the same element is written, and no other one.
bool FusedElementwiseOp::canOverwriteOperand(unsigned result,
                                             unsigned operand) {
  return getOperand(operand).getType() == getResult(result).getType();
}

LogicalResult ConvertGroupOp::verify() {
  if (getInputs().empty() ||
      getInputs().size() != getResults().size()) // convert_group_c1
    return emitOpError("(C1) needs as many results as operands, at least "
                       "one; has ")
           << getInputs().size() << " and " << getResults().size();
  Type from = getElementTypeOrSelf(getInputs()[0].getType());
  Type to = getElementTypeOrSelf(getResults()[0].getType());
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getInputs(), getResults()))) {
    auto [in, out] = pair;
    auto inType = cast<RankedTensorType>(in.getType());
    auto outType = cast<RankedTensorType>(out.getType());
    if (inType.getShape() != outType.getShape()) // convert_group_c2
      return emitOpError("(C2) result ")
             << i << " must have operand " << i << "'s shape";
    if (inType.getElementType() != from ||
        outType.getElementType() != to) // convert_group_c3
      return emitOpError("(C3) pair ")
             << i << " converts " << inType.getElementType() << " to "
             << outType.getElementType() << ", not " << from << " to " << to;
  }
  return success();
}

/// One conversion per element.
int64_t ConvertGroupOp::getFlops() {
  int64_t flops = 0;
  for (Value r : getResults())
    flops += numElements(r);
  return flops;
}
