//===- Dropout.cpp - Dropout with a counter-based mask --------------------===//
//
// Inverted dropout: y[i] = keep[i] ? x[i] * scale : 0, mask[i] = keep[i],
// with scale = 1 / (1 - ratio) computed in f64 and rounded to the compute
// type (f64 for f64, f32 otherwise) before the multiply.
//
// keep[i] is a pure function of (seed, step, i), i the flat row-major
// element index, so backward and recomputation can replay the forward mask
// without storing it, on any thread split and any device:
//
//   mix(z)  = splitmix64's output function applied to z + 0x9E3779B97F4A7C15:
//               z += 0x9E3779B97F4A7C15
//               z  = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//               z  = (z ^ (z >> 27)) * 0x94D049BB133111EB
//               return z ^ (z >> 31)                    (all mod 2^64)
//   key     = mix(mix(uint64(seed)) ^ uint64(step))
//   u[i]    = (mix(key ^ uint64(i)) >> 11) * 2^-53     (uniform in [0, 1))
//   keep[i] = u[i] >= ratio                            (in f64)
//
// so P(keep) = 1 - ratio up to 2^-53. Each mix is a bijection of 64-bit
// words with full avalanche, so distinct (seed, step) pairs give unrelated
// streams and neighbouring indices unrelated bits. Changing this function
// changes every trained model's dropout masks: treat it as a format.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "device/Device.h"

namespace trainc::cpu {
namespace {

uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

} // namespace

Status runDropout(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0], &mask = call.outputs[1];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  double ratio = call.floats[0];
  if (!(ratio >= 0 && ratio < 1))
    return kernelError(call,
                       "ratio " + std::to_string(ratio) + " is outside [0, 1)");
  // On a mesh: seed + (this rank's index on the axis) * stride.
  uint64_t seed = uint64_t(call.ints[0]);
  if (call.ints.size == 3 && call.context && call.context->collective)
    seed += uint64_t(call.context->collective->coordinate(int(call.ints[1]))) *
            uint64_t(call.ints[2]);
  uint64_t key = mix(mix(seed) ^ uint64_t(call.step()));
  uint8_t *keepOut = mask.as<uint8_t>();

  withFloatCompute(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    T scale = T(1.0 / (1.0 - ratio));
    parallelFor(x.numElements(), 16384, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double u = double(mix(key ^ uint64_t(i)) >> 11) * 0x1p-53;
        bool keep = u >= ratio;
        keepOut[i] = keep;
        storeAs(y, i, keep ? loadAs<T>(x, i) * scale : T(0));
      }
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
