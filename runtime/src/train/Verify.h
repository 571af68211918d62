//===- Verify.h - A device's training steps checked against the CPU's -*- C++
//-*-===//
//
// `trainc-run --verify-steps N` (TrainerOptions::verifySteps): the first N
// steps run on the trainer's device and on a CPU twin from the same state
// and batch, and are compared after each step: the loss, the gradient norm
// and every parameter and optimizer-state tensor, each by its relative L2
// error against the limits of the executable's precision (verifyLimits). A
// step beyond a limit stops the run with an error listing each tensor that
// differs.
//
// Why relative L2 per tensor and these limits: the devices sum in different
// orders (cuBLASLt's GEMMs, block reductions), so single elements may differ
// by a few ulp times the length of their sums, and AdamW's first steps
// divide by sqrt(v) ~ |g|, turning a tiny gradient's rounding into a sign
// flip of its update (2 lr on that element). Norms over a tensor average
// such elements out; a wrong kernel changes whole tensors.
//
// Why a floor under the norm: some tensors are rounding noise on every
// device. A key projection's bias has an exactly zero gradient (softmax
// ignores a shift shared by all keys), so its moments are noise and AdamW
// gives it updates of +-lr with random signs; measured against its own
// norm its error is about 1 however right the kernels are (seen on an
// H100 at bf16: 0.73 for GPT-2's fused c_attn.bias). So each tensor's
// error is ||device - cpu|| / max(||cpu||, share), where share is the norm
// of all tensors of its kind (parameters; each optimizer slot, such as
// AdamW's first moments) scaled to the tensor's size: sqrt(n / N) * ||kind||.
// A tensor as large as its kind's average is measured against its own norm
// as before; only a tensor far smaller than its peers is measured against
// their scale. A kernel that gets such a tensor's gradient wrong still shows
// in its moments, whose kind (the gradients' scale) it shares.
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

/// The sums behind a relative L2 error of a against b, in f64.
struct L2Sums {
  /// ||a - b||^2 and ||b||^2 over the finite elements.
  double diff = 0, norm = 0;
  int64_t count = 0;
  /// A NaN or infinity in one and not at the same place in the other.
  bool nonFiniteMismatch = false;
};

/// The sums over `count` elements of `dtype` (a float or integer dtype).
L2Sums l2Sums(const void *a, const void *b, int64_t count, DType dtype);

/// ||a - b|| / max(||b||, floorNorm): 0 when a equals b, +inf when only the
/// denominator is zero or non-finite values differ.
double relativeL2Error(const L2Sums &sums, double floorNorm = 0);

/// The same, with no floor, straight from the elements.
double relativeL2Error(const void *a, const void *b, int64_t count,
                       DType dtype);

/// Per tensor id, the kind it is compared within (see the floor above), or
/// -1 for a tensor not compared: parameters are kind 0; a state tensor's
/// kind is the (opcode, operand position) of the first instruction that
/// reads it, so every AdamW first moment is one kind and every second
/// moment another; a state tensor nothing reads is a kind of its own.
std::vector<int> verifyKinds(const std::vector<TensorInfo> &tensors,
                             const std::vector<InstructionInfo> &instructions);
inline std::vector<int> verifyKinds(const Executable &exe) {
  return verifyKinds(exe.tensors(), exe.instructions());
}

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
/// tf32 executables get the same: TF32 rounds to 2^-11 relative, four
/// times finer than bf16's 2^-9, so for them these limits are four times
/// looser; the two devices' sums (and, where cuBLASLt truncates rather
/// than rounds, their operands) differ by less than that.
VerifyLimits verifyLimits(const std::vector<TensorInfo> &tensors,
                          const std::vector<InstructionInfo> &instructions);
inline VerifyLimits verifyLimits(const Executable &exe) {
  return verifyLimits(exe.tensors(), exe.instructions());
}

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
