//===- GraphBuilders.h - Compositions of graph ops ----------------*- C++
//-*-===//
//
// Values that take several graph ops to build and that more than one
// component builds (both frontends today), written once.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHBUILDERS_H
#define TRAINC_DIALECT_GRAPH_GRAPHBUILDERS_H

#include "mlir/IR/Builders.h"

namespace trainc::graph {

/// data[p with p[axis] replaced by positions[p]] for every index p of
/// `positions` (i64 in [0, n) along `axis`; data's rank, each dimension at
/// most data's): numpy's take_along_axis, ONNX's GatherElements, a sort's
/// values from its order. A graph.gather of the flattened data at linear
/// positions built from iotas, so autodiff and the runtime need nothing
/// beyond graph.gather.
mlir::Value buildTakeAlongAxis(mlir::OpBuilder &builder, mlir::Location loc,
                               mlir::Value data, mlir::Value positions,
                               int64_t axis);

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRAPHBUILDERS_H
