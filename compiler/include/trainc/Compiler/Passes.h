//===- Passes.h - trainc compiler passes -----------------------*- C++ -*-===//

#ifndef TRAINC_COMPILER_PASSES_H
#define TRAINC_COMPILER_PASSES_H

#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace trainc {

/// Micro-batch m of a step draws its dropout masks with seed + m * this
/// (grad-accum), and data-parallel rank r's micro-batches continue the
/// count (partition): one rank with --grad-accum N*K and N ranks with K
/// draw the same masks. (2^64 / golden ratio: consecutive seeds far apart.)
constexpr uint64_t kMicroBatchSeedStride = 0x9E3779B97F4A7C15ull;

#define GEN_PASS_DECL
#include "trainc/Compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trainc/Compiler/Passes.h.inc"

} // namespace trainc

#endif // TRAINC_COMPILER_PASSES_H
