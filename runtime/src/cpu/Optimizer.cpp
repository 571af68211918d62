//===- Optimizer.cpp - adamw_update ---------------------------------------===//
//
// One AdamW step of one parameter, elementwise: math/AdamW.h's
// adamwElement, the formula shared with the CUDA kernel, which equals the
// decomposed update bit for bit. Compiled without FMA contraction
// (runtime/CMakeLists.txt) for that reason, and without errno (sqrt of the
// non-negative v1 is then one instruction). Each element's inputs are read
// before its results are written, so the new values may overwrite the old
// ones in place (the executable does that).
// f32 and f64 only: the optimizer pass keeps the decomposed update for
// 16-bit parameters. With the optional skip flag set, nothing is computed.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "math/AdamW.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace trainc::cpu {
namespace {

/// The step's scalars: the 0-d operands 4-7 and the attributes.
template <typename T>
math::AdamwScalars<T> adamwScalars(const KernelCall &call) {
  return {
      *call.inputs[4].as<T>(), *call.inputs[5].as<T>(), *call.inputs[6].as<T>(),
      *call.inputs[7].as<T>(), T(call.floats[0]),       T(1 - call.floats[0]),
      T(call.floats[1]),       T(1 - call.floats[1]),   T(call.floats[2])};
}

template <typename T> void adamw(const KernelCall &call) {
  const T *p = call.inputs[0].as<T>(), *g = call.inputs[1].as<T>(),
          *m = call.inputs[2].as<T>(), *v = call.inputs[3].as<T>();
  const math::AdamwScalars<T> c = adamwScalars<T>(call);
  T *p1 = call.outputs[0].as<T>(), *m1 = call.outputs[1].as<T>(),
    *v1 = call.outputs[2].as<T>();
  // Blocks through local arrays: the results usually are the operands'
  // memory, and a loop whose stores may alias its loads does not vectorize.
  constexpr int64_t kBlock = 512;
  int64_t n = call.inputs[0].numElements();
  parallelFor((n + kBlock - 1) / kBlock, 32, [&](int64_t begin, int64_t end) {
    T np[kBlock], nm[kBlock], nv[kBlock];
    for (int64_t blk = begin; blk < end; ++blk) {
      int64_t base = blk * kBlock, len = std::min(kBlock, n - base);
      const T *pb = p + base, *gb = g + base, *mb = m + base, *vb = v + base;
      for (int64_t i = 0; i < len; ++i)
        math::adamwElement(c, pb[i], gb[i], mb[i], vb[i], np[i], nm[i], nv[i]);
      std::memcpy(p1 + base, np, len * sizeof(T));
      std::memcpy(m1 + base, nm, len * sizeof(T));
      std::memcpy(v1 + base, nv, len * sizeof(T));
    }
  });
}

} // namespace

Status runAdamwUpdate(const KernelCall &call) {
  // A skipped step (its loss or gradients not finite): the results keep the
  // old values, copied only where they are not the operands' own memory.
  if (call.inputs.size == 9 && *call.inputs[8].as<uint8_t>()) {
    for (auto [in, out] : {std::pair{0, 0}, {2, 1}, {3, 2}})
      if (call.inputs[in].data != call.outputs[out].data)
        std::memcpy(call.outputs[out].data, call.inputs[in].data,
                    call.inputs[in].numElements() *
                        dtypeSize(call.inputs[in].dtype));
    return okStatus();
  }
  switch (call.inputs[0].dtype) {
  case DType::F32:
    adamw<float>(call);
    return okStatus();
  case DType::F64:
    adamw<double>(call);
    return okStatus();
  default:
    return unsupportedDType(call, call.inputs[0].dtype);
  }
}

} // namespace trainc::cpu
