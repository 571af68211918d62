//===- LowerContext.cpp - Attributes and helpers of one StableHLO op ------===//

#include "LowerContext.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {

bool isSupportedElementType(Type type) {
  if (isa<Float64Type, Float32Type, Float16Type, BFloat16Type>(type))
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer || integer.isSigned())
    return false;
  unsigned width = integer.getWidth();
  if (integer.isUnsigned())
    return width == 8 || width == 16 || width == 32 || width == 64;
  return width == 1 || width == 8 || width == 16 || width == 32 || width == 64;
}

InFlightDiagnostic OpContext::error() const {
  InFlightDiagnostic diag = mlir::emitError(loc);
  diag << "'" << op->getName() << "' ";
  return diag;
}

namespace {

/// The integers of a list attribute in any spelling; none if `attr` is no
/// integer list.
std::optional<SmallVector<int64_t>> intList(Attribute attr) {
  if (auto array = dyn_cast<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(array.asArrayRef());
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    SmallVector<int64_t> values;
    for (const APInt &v : dense.getValues<APInt>())
      values.push_back(v.getSExtValue());
    return values;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    SmallVector<int64_t> values;
    for (Attribute element : array) {
      auto integer = dyn_cast<IntegerAttr>(element);
      if (!integer)
        return std::nullopt;
      values.push_back(integer.getInt());
    }
    return values;
  }
  return std::nullopt;
}

} // namespace

FailureOr<SmallVector<int64_t>> OpContext::ints(StringRef name) const {
  Attribute attr = attribute(name);
  if (!attr)
    return error() << "is missing the attribute '" << name << "'";
  std::optional<SmallVector<int64_t>> values = intList(attr);
  if (!values)
    return error() << "has '" << name << "' = " << attr
                   << ", not a list of integers";
  return *values;
}

FailureOr<SmallVector<int64_t>>
OpContext::ints(DictionaryAttr dict, StringRef name, StringRef dictName) const {
  Attribute attr = dict.get(name);
  if (!attr)
    return SmallVector<int64_t>{};
  std::optional<SmallVector<int64_t>> values = intList(attr);
  if (!values)
    return error() << "has " << dictName << "." << name << " = " << attr
                   << ", not a list of integers";
  return *values;
}

FailureOr<int64_t> OpContext::integer(StringRef name) const {
  Attribute attr = attribute(name);
  if (!attr)
    return error() << "is missing the attribute '" << name << "'";
  auto integer = dyn_cast<IntegerAttr>(attr);
  if (!integer)
    return error() << "has '" << name << "' = " << attr << ", not an integer";
  return integer.getInt();
}

Attribute OpContext::attribute(StringRef name) const {
  if (Attribute attr = op->getAttr(name))
    return attr;
  // A stablehlo.composite lowered as the op it names (chlo.top_k) carries
  // that op's attributes in composite_attributes.
  if (auto composite =
          dyn_cast_or_null<DictionaryAttr>(op->getAttr("composite_attributes")))
    return composite.get(name);
  return {};
}

StringRef OpContext::enumValue(StringRef name) const {
  if (auto s = dyn_cast_or_null<StringAttr>(attribute(name)))
    return s.getValue();
  return "";
}

FailureOr<DictionaryAttr> OpContext::dict(StringRef name) const {
  auto attr = dyn_cast_or_null<DictionaryAttr>(attribute(name));
  if (!attr)
    return error() << "is missing the attribute '" << name << "'";
  return attr;
}

Value OpContext::splat(RankedTensorType type, double value) const {
  Type e = type.getElementType();
  Attribute element;
  if (isa<FloatType>(e))
    element = builder.getFloatAttr(e, value);
  else
    element = builder.getIntegerAttr(e, static_cast<int64_t>(value));
  return builder.create<ConstantOp>(loc, SplatElementsAttr::get(type, element));
}

Value OpContext::fromF64(Value value, RankedTensorType type) const {
  // Through i64 for every integer type but i64 itself: ui64 too, where
  // a negative sum must wrap, not saturate to 0.
  auto integer = dyn_cast<IntegerType>(type.getElementType());
  if (integer && !(integer.getWidth() == 64 && !integer.isUnsigned()))
    value = create<ConvertOp>(
        RankedTensorType::get(type.getShape(), builder.getI64Type()), value);
  return create<ConvertOp>(type, value);
}

Value OpContext::broadcastScalar(Value value, ArrayRef<int64_t> shape) const {
  auto type = tensorType(value);
  if (type.getShape() == shape)
    return value;
  return create<BroadcastInDimOp>(
      RankedTensorType::get(shape, type.getElementType()), value,
      ArrayRef<int64_t>{});
}

std::optional<DenseElementsAttr> OpContext::constantOf(Value v) const {
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr;
  return std::nullopt;
}

InFlightDiagnostic OpContext::refuse() const {
  refused = true;
  return error();
}

Value OpContext::reshape(Value value, ArrayRef<int64_t> shape) const {
  auto type = tensorType(value);
  if (type.getShape() == shape)
    return value;
  if (type.getNumElements() != product(shape)) {
    refuse() << "reshapes " << type << " to "
             << RankedTensorType::get(shape, type.getElementType())
             << ", another number of elements";
    return value;
  }
  return create<ReshapeOp>(RankedTensorType::get(shape, type.getElementType()),
                           value);
}

Value OpContext::transpose(Value value, ArrayRef<int64_t> permutation) const {
  int64_t rank = tensorType(value).getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(permutation.size()) == rank;
  for (int64_t p : permutation) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid) {
    refuse() << "needs a permutation of [0, " << rank << "), not ["
             << permutation << "]";
    return value;
  }
  if (llvm::equal(permutation, llvm::seq<int64_t>(0, rank)))
    return value;
  return create<TransposeOp>(value, permutation);
}

Value OpContext::slice(Value value, ArrayRef<int64_t> start,
                       ArrayRef<int64_t> limit,
                       ArrayRef<int64_t> strides) const {
  auto type = tensorType(value);
  SmallVector<int64_t> steps(strides);
  if (steps.empty())
    steps.assign(start.size(), 1);
  size_t rank = type.getRank();
  if (start.size() != rank || limit.size() != rank || steps.size() != rank) {
    refuse() << "needs one start, limit and stride per dimension of " << type;
    return value;
  }
  for (size_t d = 0; d < rank; ++d)
    if (steps[d] < 1 || start[d] < 0 || start[d] > limit[d] ||
        limit[d] > type.getDimSize(d)) {
      refuse() << "slices dimension " << d << " of " << type << " as ["
               << start[d] << ":" << limit[d] << ":" << steps[d]
               << "], outside [0, " << type.getDimSize(d) << "]";
      return value;
    }
  bool whole = llvm::all_of(start, [](int64_t s) { return s == 0; }) &&
               limit == type.getShape() &&
               llvm::all_of(steps, [](int64_t s) { return s == 1; });
  if (whole)
    return value;
  return create<SliceOp>(value, start, limit, steps);
}

Value OpContext::concatenate(ValueRange values, int64_t dim) const {
  auto first = tensorType(values.front());
  for (Value v : values) {
    auto type = tensorType(v);
    bool fits = type.getRank() == first.getRank() && dim >= 0 &&
                dim < type.getRank() &&
                type.getElementType() == first.getElementType();
    for (int64_t d = 0; fits && d < type.getRank(); ++d)
      fits = d == dim || type.getDimSize(d) == first.getDimSize(d);
    if (!fits) {
      refuse() << "joins " << type << " and " << first << " along dimension "
               << dim;
      return values.front();
    }
  }
  if (values.size() == 1)
    return values.front();
  return create<ConcatenateOp>(values, dim);
}

LogicalResult OpContext::requireFloat(Type type, StringRef what) const {
  Type element = getElementTypeOrSelf(type);
  if (!isa<FloatType>(element))
    return error() << "needs floats for " << what << ", but it has " << element;
  return success();
}

} // namespace trainc::stablehlo_import
