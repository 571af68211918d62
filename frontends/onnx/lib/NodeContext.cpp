//===- NodeContext.cpp - Inputs, attributes and helpers of one node -------===//

#include "ImportContext.h"

#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {

std::string NodeContext::describe() const {
  std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
  return "node #" + std::to_string(index) + " '" + node.name() + "' (" +
         node.op_type() + ", domain '" + domain + "', opset " +
         std::to_string(opset()) + ")";
}

InFlightDiagnostic NodeContext::error() const {
  // The message names the file and node itself; no location is repeated.
  InFlightDiagnostic diag = mlir::emitError(UnknownLoc::get(context()));
  diag << graph.modelPath << ": " << describe() << ": ";
  return diag;
}

FailureOr<Value> NodeContext::input(int i) const {
  if (!hasInput(i))
    return error() << "input " << i << " is missing";
  Value v = graph.lookup(node.input(i));
  if (!v && graph.lookupSequence(node.input(i)))
    return error() << "input " << i << " '" << node.input(i)
                   << "' is a sequence; trainc imports sequences only as "
                      "SplitToSequence outputs read by SequenceAt";
  if (!v)
    return error() << "input " << i << " '" << node.input(i)
                   << "' is not defined by any earlier node, initializer or "
                      "graph input";
  return v;
}

FailureOr<DenseElementsAttr> NodeContext::constantInput(int i,
                                                        StringRef what) const {
  auto v = input(i);
  if (failed(v))
    return failure();
  DenseElementsAttr attr;
  if (!matchPattern(*v, m_Constant(&attr)))
    return error() << "input " << i << " '" << node.input(i) << "' (" << what
                   << ") must be a compile-time constant; trainc needs "
                      "static shapes, and this value depends on data";
  return attr;
}

FailureOr<SmallVector<int64_t>>
NodeContext::intListInput(int i, StringRef what) const {
  auto attr = constantInput(i, what);
  if (failed(attr))
    return failure();
  if (!attr->getElementType().isSignlessInteger() ||
      attr->getElementType().isInteger(1))
    return error() << "input " << i << " (" << what
                   << ") must be an integer tensor";
  // A list is 1-D (a scalar where the spec allows one, as Split's size);
  // a matrix read in row order would be a list the exporter never meant.
  if (attr->getType().getRank() > 1)
    return error() << "input " << i << " '" << node.input(i) << "' (" << what
                   << ") must be a 1-D tensor, got " << attr->getType();
  SmallVector<int64_t> values;
  for (const APInt &v : attr->getValues<APInt>())
    values.push_back(v.getSExtValue());
  return values;
}

StringRef GraphImporter::parameterName(unsigned index) const {
  auto fn = cast<FunctionOpInterface>(entry->getParentOp());
  return fn
      .getArgAttrOfType<StringAttr>(index,
                                    trainc::train::TrainDialect::kParamAttr)
      .getValue();
}

std::optional<unsigned> GraphImporter::parameterIndex(Value v) const {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != entry ||
      !cast<FunctionOpInterface>(entry->getParentOp())
           .getArgAttr(arg.getArgNumber(),
                       trainc::train::TrainDialect::kParamAttr))
    return std::nullopt;
  return arg.getArgNumber();
}

FailureOr<double> NodeContext::scalarInput(int i, StringRef what) const {
  auto attr = constantInput(i, what);
  if (failed(attr))
    return failure();
  if (attr->getNumElements() != 1)
    return error() << "input " << i << " (" << what
                   << ") must have one element, got " << attr->getType();
  Type t = attr->getElementType();
  if (isa<FloatType>(t))
    return (*attr->getValues<APFloat>().begin()).convertToDouble();
  APInt v = *attr->getValues<APInt>().begin();
  return t.isInteger(1) || t.isUnsignedInteger() ? double(v.getZExtValue())
                                                 : double(v.getSExtValue());
}

const onnx::AttributeProto *NodeContext::attribute(StringRef name) const {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeContext::intAttr(StringRef name, int64_t defaultValue) const {
  const auto *attr = attribute(name);
  return attr ? attr->i() : defaultValue;
}

float NodeContext::floatAttr(StringRef name, float defaultValue) const {
  const auto *attr = attribute(name);
  return attr ? attr->f() : defaultValue;
}

std::string NodeContext::stringAttr(StringRef name,
                                    StringRef defaultValue) const {
  const auto *attr = attribute(name);
  return attr ? attr->s() : defaultValue.str();
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  const auto *attr = attribute(name);
  if (!attr)
    return std::nullopt;
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

LogicalResult NodeContext::rejectAttribute(StringRef name,
                                           StringRef why) const {
  if (attribute(name))
    return error() << "attribute '" << name << "' is not supported: " << why;
  return success();
}

void NodeContext::setOutput(int i, Value value) const {
  if (outputRequested(i))
    graph.define(node.output(i), value);
}

Value NodeContext::constant(DenseElementsAttr value) const {
  return builder.create<ConstantOp>(loc, value);
}

Value NodeContext::splat(RankedTensorType type, double value) const {
  Type e = type.getElementType();
  // Every element type the importer accepts is a float or an integer
  // (elementTypeFor maps no other; complex and strings are refused by
  // name where a tensor enters).
  assert((isa<FloatType, IntegerType>(e)) && "splat of a non-number type");
  Attribute element;
  if (isa<FloatType>(e))
    element = builder.getFloatAttr(e, value);
  else
    element = builder.getIntegerAttr(e, static_cast<int64_t>(value));
  return constant(SplatElementsAttr::get(type, element));
}

Value NodeContext::broadcastTo(Value value, ArrayRef<int64_t> shape) const {
  auto type = inputType(value);
  if (type.getShape() == shape)
    return value;
  SmallVector<int64_t> dims;
  int64_t offset = static_cast<int64_t>(shape.size()) - type.getRank();
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(offset + d);
  return create<BroadcastInDimOp>(
      RankedTensorType::get(shape, type.getElementType()), value, dims);
}

FailureOr<SmallVector<Value>>
NodeContext::broadcastAll(ArrayRef<Value> values) const {
  SmallVector<int64_t> shape;
  for (Value v : values) {
    ArrayRef<int64_t> s = inputType(v).getShape();
    if (s.size() > shape.size())
      shape.insert(shape.begin(), s.size() - shape.size(), 1);
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t &out = shape[shape.size() - s.size() + k];
      if (out == 1)
        out = s[k];
      else if (s[k] != 1 && s[k] != out) {
        InFlightDiagnostic diag = error();
        diag << "operand shapes do not broadcast:";
        for (Value w : values)
          diag << " " << w.getType();
        return diag;
      }
    }
  }
  SmallVector<Value> result;
  for (Value v : values)
    result.push_back(broadcastTo(v, shape));
  return result;
}

SmallVector<int64_t> iotaVector(int64_t begin, int64_t end) {
  SmallVector<int64_t> v;
  for (int64_t i = begin; i < end; ++i)
    v.push_back(i);
  return v;
}

Value expandReduced(NodeContext &ctx, Value reduced, ArrayRef<int64_t> shape,
                    ArrayRef<int64_t> dims) {
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (!llvm::is_contained(dims, d))
      kept.push_back(d);
  auto type =
      RankedTensorType::get(shape, ctx.inputType(reduced).getElementType());
  return ctx.create<BroadcastInDimOp>(type, reduced, kept);
}

Value NodeContext::reshape(Value value, ArrayRef<int64_t> shape) const {
  auto type = inputType(value);
  return create<ReshapeOp>(RankedTensorType::get(shape, type.getElementType()),
                           value);
}

Value NodeContext::convert(Value value, Type elementType) const {
  auto type = inputType(value);
  return create<ConvertOp>(RankedTensorType::get(type.getShape(), elementType),
                           value);
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank,
                                              StringRef what) const {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return error() << what << " " << axis << " is out of range for rank "
                   << rank;
  return normalized;
}

FailureOr<SmallVector<int64_t>>
NodeContext::normalizeAxes(ArrayRef<int64_t> axes, int64_t rank) const {
  SmallVector<int64_t> result;
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank, "axis");
    if (failed(n))
      return failure();
    if (llvm::is_contained(result, *n))
      return error() << "axis " << a << " is listed twice";
    result.push_back(*n);
  }
  return result;
}

LogicalResult NodeContext::requireFloat(Value v, StringRef what) const {
  if (!isa<FloatType>(inputType(v).getElementType()))
    return error() << what << " must be a float tensor, got " << v.getType();
  return success();
}

} // namespace trainc::onnx_import
