//===- Dropout.cpp - Dropout with a counter-based mask --------------------===//
//
// Inverted dropout: y[i] = keep[i] ? x[i] * scale : 0, mask[i] = keep[i],
// with scale = 1 / (1 - ratio) computed in f64 and rounded to the compute
// type (f64 for f64, f32 otherwise) before the multiply.
//
// keep[i] is a pure function of (seed, step, i), i the flat row-major
// element index: math/Dropout.h's dropoutKeep, the formula (a format: it
// fixes every trained model's masks) shared with the CUDA kernel. On a
// block of a tensor split over the tensor axis (ints[3..5]), i is the
// element's index in the whole (math::wholeIndex).
//
//===----------------------------------------------------------------------===//

#include "math/Dropout.h"
#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "device/Device.h"

namespace trainc::cpu {

Status runDropout(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0], &mask = call.outputs[1];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  double ratio = call.floats[0];
  if (!(ratio >= 0 && ratio < 1))
    return kernelError(call,
                       "ratio " + std::to_string(ratio) + " is outside [0, 1)");
  uint64_t key = dropoutKeyOf(call, 0);
  math::DropoutBlock block = dropoutBlockOf(call, x);
  uint8_t *keepOut = mask.as<uint8_t>();

  withFloatCompute(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    T scale = T(1.0 / (1.0 - ratio));
    parallelFor(x.numElements(), 16384, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        bool keep = math::dropoutKeep(key, math::wholeIndex(block, i), ratio);
        keepOut[i] = keep;
        storeAs(y, i, keep ? loadAs<T>(x, i) * scale : T(0));
      }
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
