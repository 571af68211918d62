//===- Optimizer.cpp - adamw_update, sum_of_squares -----------------------===//
//
// The optimizer step's multi-tensor ops.
//
// adamw_update: one AdamW step of N parameters, elementwise: math/AdamW.h's
// adamwElement, the formula shared with the CUDA kernel, which equals the
// decomposed update bit for bit. Compiled without FMA contraction
// (runtime/CMakeLists.txt) for that reason, and without errno (sqrt of the
// non-negative v1 is then one instruction). Each element's inputs are read
// before its results are written, so the new values may overwrite the old
// ones in place (the executable does that). The parameters' blocks are
// shared out among the threads together, so a group of small parameters
// is one parallel loop. f32 and f64 only: the optimizer pass keeps the
// decomposed update for 16-bit parameters. With the optional skip flag
// set, nothing is computed.
//
// sum_of_squares: the squares of every element of its operands summed in
// f64, in math/SumOfSquares.h's order (the CUDA kernel's): chunks in
// parallel, then the chunk sums in a fixed tree, so the bits depend on
// neither the thread count nor the device.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "math/AdamW.h"
#include "math/SumOfSquares.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace trainc::cpu {
namespace {

/// The step's scalars: the 0-d operands 4N..4N+3 and the attributes.
template <typename T>
math::AdamwScalars<T> adamwScalars(const KernelCall &call, size_t n) {
  const Span<TensorRef> &in = call.inputs;
  return {
      *in[4 * n].as<T>(),     *in[4 * n + 1].as<T>(), *in[4 * n + 2].as<T>(),
      *in[4 * n + 3].as<T>(), T(call.floats[0]),      T(1 - call.floats[0]),
      T(call.floats[1]),      T(1 - call.floats[1]),  T(call.floats[2])};
}

/// Elements per block of the update (each thread's unit of work).
constexpr int64_t kAdamwBlock = 512;

template <typename T> void adamw(const KernelCall &call, size_t n) {
  const math::AdamwScalars<T> c = adamwScalars<T>(call, n);
  // The blocks of all N parameters, numbered in parameter order.
  std::vector<int64_t> firstBlock(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    firstBlock[i + 1] =
        firstBlock[i] +
        (call.inputs[i].numElements() + kAdamwBlock - 1) / kAdamwBlock;
  parallelFor(firstBlock[n], 32, [&](int64_t begin, int64_t end) {
    // Through local arrays: the results usually are the operands' memory,
    // and a loop whose stores may alias its loads does not vectorize.
    T np[kAdamwBlock], nm[kAdamwBlock], nv[kAdamwBlock];
    size_t i = std::upper_bound(firstBlock.begin(), firstBlock.end(), begin) -
               firstBlock.begin() - 1;
    for (int64_t blk = begin; blk < end; ++blk) {
      while (blk >= firstBlock[i + 1])
        ++i;
      const T *p = call.inputs[i].as<T>(), *g = call.inputs[n + i].as<T>(),
              *m = call.inputs[2 * n + i].as<T>(),
              *v = call.inputs[3 * n + i].as<T>();
      T *p1 = call.outputs[i].as<T>(), *m1 = call.outputs[n + i].as<T>(),
        *v1 = call.outputs[2 * n + i].as<T>();
      int64_t base = (blk - firstBlock[i]) * kAdamwBlock;
      int64_t len = std::min(kAdamwBlock, call.inputs[i].numElements() - base);
      for (int64_t e = 0; e < len; ++e)
        math::adamwElement(c, p[base + e], g[base + e], m[base + e],
                           v[base + e], np[e], nm[e], nv[e]);
      std::memcpy(p1 + base, np, len * sizeof(T));
      std::memcpy(m1 + base, nm, len * sizeof(T));
      std::memcpy(v1 + base, nv, len * sizeof(T));
    }
  });
}

/// The sum of one chunk's squares (math/SumOfSquares.h): the lanes as one
/// vectorizable loop over rounds of kSquaresLanes elements.
template <typename Square>
double laneSums(int64_t begin, int64_t len, Square &&square) {
  double lanes[math::kSquaresLanes] = {};
  int64_t e = 0;
  for (; e + math::kSquaresLanes <= len; e += math::kSquaresLanes)
    for (int j = 0; j < math::kSquaresLanes; ++j)
      lanes[j] += square(begin + e + j);
  for (int j = 0; e + j < len; ++j)
    lanes[j] += square(begin + e + j);
  return math::combineLanes(lanes);
}

double chunkSquares(const TensorRef &t, int64_t begin, int64_t len) {
  switch (t.dtype) {
  case DType::F64:
    return laneSums(begin, len, [p = t.as<double>()](int64_t i) {
      return math::squareF64(p[i]);
    });
  case DType::F32:
    return laneSums(begin, len, [p = t.as<float>()](int64_t i) {
      return math::squareF32(p[i]);
    });
  case DType::BF16:
    return laneSums(begin, len, [p = t.as<uint16_t>()](int64_t i) {
      return math::square16(bf16ToFloat(p[i]));
    });
  default: // F16 (checked by the caller)
    return laneSums(begin, len, [p = t.as<uint16_t>()](int64_t i) {
      return math::square16(f16ToFloat(p[i]));
    });
  }
}

} // namespace

Status runAdamwUpdate(const KernelCall &call) {
  size_t n = size_t(call.numOutputs) / 3;
  // A skipped step (its loss or gradients not finite): the results keep the
  // old values, copied only where they are not the operands' own memory.
  if (size_t(call.inputs.size) == 4 * n + 5 &&
      *call.inputs[4 * n + 4].as<uint8_t>()) {
    for (size_t i = 0; i < n; ++i)
      for (size_t k : {0, 1, 2}) {
        const TensorRef &from = call.inputs[(k == 0 ? 0 : k + 1) * n + i];
        const TensorRef &to = call.outputs[k * n + i];
        if (from.data != to.data)
          std::memcpy(to.data, from.data,
                      from.numElements() * dtypeSize(from.dtype));
      }
    return okStatus();
  }
  switch (call.inputs[0].dtype) {
  case DType::F32:
    adamw<float>(call, n);
    return okStatus();
  case DType::F64:
    adamw<double>(call, n);
    return okStatus();
  default:
    return unsupportedDType(call, call.inputs[0].dtype);
  }
}

Status runSumOfSquares(const KernelCall &call) {
  // Chunk c of the operands in order: operand chunkOf[c], from element
  // (c - firstChunk[operand]) * kSquaresChunk.
  size_t n = size_t(call.inputs.size);
  std::vector<int64_t> firstChunk(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    DType t = call.inputs[i].dtype;
    if (t != DType::F64 && t != DType::F32 && t != DType::BF16 &&
        t != DType::F16)
      return unsupportedDType(call, t);
    firstChunk[i + 1] =
        firstChunk[i] + math::squaresChunks(call.inputs[i].numElements());
  }
  std::vector<double> chunks(firstChunk[n]);
  parallelFor(firstChunk[n], 4, [&](int64_t begin, int64_t end) {
    size_t i = std::upper_bound(firstChunk.begin(), firstChunk.end(), begin) -
               firstChunk.begin() - 1;
    for (int64_t c = begin; c < end; ++c) {
      while (c >= firstChunk[i + 1])
        ++i;
      const TensorRef &t = call.inputs[i];
      int64_t first = (c - firstChunk[i]) * math::kSquaresChunk;
      chunks[c] = chunkSquares(
          t, first, std::min(math::kSquaresChunk, t.numElements() - first));
    }
  });
  double partials[math::kSquaresPartials] = {};
  for (size_t c = 0; c < chunks.size(); ++c)
    partials[c % math::kSquaresPartials] += chunks[c];
  *call.outputs[0].as<double>() = math::combinePartials(partials);
  return okStatus();
}

} // namespace trainc::cpu
