//===- GraphDialect.h - The graph dialect ----------------------*- C++ -*-===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H
#define TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "trainc/Dialect/Graph/GraphDialect.h.inc"

#endif // TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H
