//===- Verify.h - A device's training steps checked against the CPU's -*- C++
//-*-===//
//
// `trainc-run --verify-steps N` (TrainerOptions::verifySteps): the first N
// steps run on the trainer's device and on a CPU twin from the same state
// and batch, and are compared after each step: the loss, the gradient norm
// and every parameter and optimizer-state tensor, each by its relative L2
// error ||device - cpu|| / ||cpu|| against the limits of the executable's
// precision (verifyLimits). A step beyond a limit stops the run with an
// error listing each tensor that differs.
//
// Why relative L2 per tensor and these limits: the devices sum in different
// orders (cuBLASLt's GEMMs, block reductions), so single elements may differ
// by a few ulp times the length of their sums, and AdamW's first steps
// divide by sqrt(v) ~ |g|, turning a tiny gradient's rounding into a sign
// flip of its update (2 lr on that element). Norms over a tensor average
// such elements out; a wrong kernel changes whole tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_VERIFY_H
#define TRAINC_RUNTIME_TRAIN_VERIFY_H

#include "base/DType.h"
#include "exec/Executable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

/// ||a - b|| / ||b|| over `count` elements of `dtype` (a float or integer
/// dtype), computed in f64: 0 when both are all zeros, +inf when only b
/// is, and +inf when a NaN or infinity is in one and not at the same place
/// in the other.
double relativeL2Error(const void *a, const void *b, int64_t count,
                       DType dtype);

/// The largest relative errors a correct device shows against the CPU.
struct VerifyLimits {
  /// The loss and the gradient norm.
  double scalars;
  /// Optimizer state (moments: sums of gradients) and parameters.
  double state, parameters;
};

/// f32 executables: 1e-4 / 1e-4 / 2e-3 (f32 sums of a few thousand terms
/// in another order are within ~1e-6; parameters after AdamW's first steps
/// carry the sign flips above). Executables with 16-bit tensors (the
/// precision phase): 2e-2 / 5e-2 / 5e-2 (bf16 rounds to 2^-9 relative).
VerifyLimits verifyLimits(const Executable &exe);

/// One tensor over its limit.
struct TensorMismatch {
  std::string name;
  double error, limit;
};

/// The comparison of one step.
struct StepComparison {
  double lossError = 0, gradNormError = 0;
  /// The tensor with the largest error / limit, its error and limit.
  std::string worst;
  double worstError = 0, worstLimit = 0;
  /// Every value over its limit (the step then fails, naming them).
  std::vector<TensorMismatch> mismatches;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_VERIFY_H
