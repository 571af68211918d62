//===- Dropout.cpp - Dropout with a counter-based mask --------------------===//
//
// Inverted dropout: y[i] = keep[i] ? x[i] * scale : 0, mask[i] = keep[i],
// with scale = 1 / (1 - ratio) computed in f64 and rounded to the compute
// type (f64 for f64, f32 otherwise) before the multiply.
//
// keep[i] is a pure function of (seed, step, i), i the flat row-major
// element index: math/Dropout.h's dropoutKept, the formula (a format: it
// fixes every trained model's masks) shared with the CUDA kernel. On a
// block of a tensor split over the tensor axis (ints[3..5]), i is the
// element's index in the whole (math::wholeIndex).
//
//===----------------------------------------------------------------------===//

#include "math/Dropout.h"
#include "base/Parallel.h"
#include "cpu/Clones.h"
#include "cpu/DropoutMask.h"
#include "cpu/KernelUtil.h"
#include "device/Device.h"

#include <algorithm>

namespace trainc::cpu {

// Cloned (Clones.h): AVX2 and AVX-512 take 4 and 8 elements a step, where
// the scalar loop with f64 draws took twice the time (`DropoutMask.h`).
TRAINC_CPU_CLONES void drawKeep(uint64_t key, uint64_t threshold,
                                uint64_t first, int64_t n, uint8_t *keep) {
  for (int64_t j = 0; j < n; ++j)
    keep[j] = math::dropoutKept(key, first + uint64_t(j), threshold);
}

namespace {

/// y[i] = keep[i] ? x[i] * scale : 0 for i in [begin, end), in x's dtype.
template <typename T>
void applyMask(const TensorRef &x, const TensorRef &y, const uint8_t *keep,
               int64_t begin, int64_t end, T scale) {
  if (x.dtype == DType::F32 || x.dtype == DType::F64) {
    applyKeep(x.as<T>() + begin, y.as<T>() + begin, keep + begin, end - begin,
              scale);
    return;
  }
  for (int64_t i = begin; i < end; ++i)
    storeAs(y, i, keep[i] ? loadAs<T>(x, i) * scale : T(0));
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
  uint64_t key = dropoutKeyOf(call, 0);
  uint64_t threshold = math::keepThreshold(ratio);
  math::DropoutBlock block = dropoutBlockOf(call, x);
  uint8_t *keep = mask.as<uint8_t>();

  withFloatCompute(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    T scale = T(1.0 / (1.0 - ratio));
    parallelFor(x.numElements(), 16384, [&](int64_t begin, int64_t end) {
      // The bits, a run of consecutive stream elements at a time: the
      // whole range, or on a block each stretch within one of its runs.
      if (block.blocks == 1)
        drawKeep(key, threshold, uint64_t(begin), end - begin, keep + begin);
      else
        for (int64_t i = begin; i < end;) {
          int64_t outer = i / block.run, within = i % block.run;
          int64_t n = std::min(end - i, block.run - within);
          drawKeep(key, threshold, math::wholeIndex(block, outer, within), n,
                   keep + i);
          i += n;
        }
      applyMask(x, y, keep, begin, end, scale);
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
