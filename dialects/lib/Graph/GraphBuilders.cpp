//===- GraphBuilders.cpp - Compositions of graph ops ----------------------===//

#include "trainc/Dialect/Graph/GraphBuilders.h"
#include "trainc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace trainc::graph {

Value buildTakeAlongAxis(OpBuilder &builder, Location loc, Value data,
                         Value positions, int64_t axis) {
  auto dataType = cast<RankedTensorType>(data.getType());
  auto linearType = cast<RankedTensorType>(positions.getType());
  ArrayRef<int64_t> shape = linearType.getShape();
  // Row-major strides of data; a dimension of size 1 in the result
  // contributes nothing.
  int64_t stride = dataType.getNumElements();
  Value linear;
  for (int64_t d = 0; d < dataType.getRank(); ++d) {
    stride /= std::max<int64_t>(dataType.getDimSize(d), 1);
    if (d != axis && shape[d] == 1)
      continue;
    Value at = d == axis
                   ? positions
                   : builder.create<IotaOp>(loc, linearType, d).getResult();
    if (stride != 1) {
      auto step = builder.create<ConstantOp>(
          loc, SplatElementsAttr::get(
                   linearType, builder.getIntegerAttr(
                                   linearType.getElementType(), stride)));
      at = builder.createOrFold<MulOp>(loc, at, step);
    }
    linear = linear ? builder.createOrFold<AddOp>(loc, linear, at) : at;
  }
  auto flatType = RankedTensorType::get({dataType.getNumElements()},
                                        dataType.getElementType());
  Value flat = dataType.getRank() == 1
                   ? data
                   : builder.createOrFold<ReshapeOp>(loc, flatType, data);
  return builder.createOrFold<GatherOp>(loc, flat, linear, 0);
}

} // namespace trainc::graph
