//===- TrainDialect.h - The training contract ------------------*- C++ -*-===//

#ifndef TRAINC_DIALECT_TRAIN_TRAINDIALECT_H
#define TRAINC_DIALECT_TRAIN_TRAINDIALECT_H

#include "mlir/IR/Dialect.h"

#include <optional>

#include "trainc/Dialect/Train/TrainDialect.h.inc"

#endif // TRAINC_DIALECT_TRAIN_TRAINDIALECT_H
