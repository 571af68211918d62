//===- CrossEntropy.cpp - Softmax cross-entropy with integer targets ------===//
//
// For each position r with target t = targets[r]:
//
//   loss[r] = logsumexp(x[r, :]) - x[r, t]
//           = (m - x[r, t]) + log(sum_c exp(x[r, c] - m)),  m = max_c x[r, c]
//
// The max-shifted sum cannot overflow, and subtracting x[r, t] from m
// before adding the log keeps the result accurate when the logits are large
// (m + log(...) would round to the ulp of m first). Positions whose target
// equals ignore_index have loss 0 and are not counted. Reductions, as PyTorch's
// cross_entropy:
//   none: loss[r], shape of targets
//   sum:  sum_r loss[r]
//   mean: sum_r loss[r] / #(positions not ignored); NaN when that is 0.
// A target outside [0, C) that is not ignore_index is an error naming the
// position and the value; targets are all checked before any output is
// written. Compute and the reduction in f64 for f64 (libm's exp), in f32
// otherwise (VectorMath.h's maxAndSumExpF32: vectorized exp, the sum in
// math/SoftmaxSum.h's 128 partial sums; 16-bit rows are widened into a
// float buffer first); the
// reduction adds the per-position losses in order, so the result does not
// depend on the thread count. softmax_cross_entropy_grad's softmax is
// softmaxRowF32 for f32 and (widened) 16-bit logits, as the CUDA kernel's,
// and libm's exp for f64.
//
// Shape legend: logits [R..., P] viewed as [R, P], targets [R...] (i32 or
// i64); the classes are the first C = ints[3] <= P of each row, the others
// padding (trainc-pad-classes), never read.
//
// softmax_cross_entropy_and_grad (the end of this file) gives both: each
// row's gradient exactly as softmax_cross_entropy_grad computes it, and its
// loss from that softmax's max and sum (for f32 the bits of
// maxAndSumExpF32's, so the same loss as softmax_cross_entropy's), reduced
// as softmax_cross_entropy reduces; the targets are checked first, as there.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "cpu/VectorMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

/// "[i, j, ...]": the multi-index of flat position `r` in `t`.
std::string positionString(const TensorRef &t, int64_t r) {
  std::vector<int64_t> strides = stridesOf(t);
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d) {
    s += (d ? ", " : "") + std::to_string(r / strides[d]);
    r %= strides[d];
  }
  return s + "]";
}

/// What a loss instruction (softmax_cross_entropy, and the fused op with
/// its gradient) reads from its ints and targets.
struct LossCall {
  int64_t reduction = 0;
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
  /// The first `classes` of each row of `stride` (the rest: padding).
  int64_t classes = 0, stride = 0;
  /// The targets as int64, and how many positions are not ignored.
  std::vector<int64_t> target;
  int64_t counted = 0;
};

/// The call's loss arguments (logits and targets are operands 0 and 1);
/// a target outside [0, classes) that is not the ignored index is an error
/// naming its position (before anything is written).
Status readLossCall(const KernelCall &call, LossCall &loss) {
  const TensorRef &logits = call.inputs[0], &targets = call.inputs[1];
  if (!isFloat(logits.dtype))
    return unsupportedDType(call, logits.dtype);
  if (targets.dtype != DType::I32 && targets.dtype != DType::I64)
    return unsupportedDType(call, targets.dtype);
  loss.reduction = call.ints[0];
  loss.hasIgnore = call.ints[1] != 0;
  loss.ignoreIndex = call.ints[2];
  loss.classes = call.ints[3];
  loss.stride = logits.dims[logits.rank - 1];
  int64_t rows = targets.numElements();
  loss.target.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = loadAs<int64_t>(targets, r);
    loss.target[r] = t;
    if (loss.hasIgnore && t == loss.ignoreIndex)
      continue;
    if (t < 0 || t >= loss.classes)
      return kernelError(call, "target " + std::to_string(t) + " at position " +
                                   positionString(targets, r) +
                                   " is outside [0, " +
                                   std::to_string(loss.classes) + ")");
    ++loss.counted;
  }
  return okStatus();
}

/// The per-position losses into `out` as `reduction` asks: each (none),
/// their sum in position order (sum), or that over `counted` (mean; NaN
/// when 0).
template <typename T>
void storeLosses(const TensorRef &out, const std::vector<T> &loss,
                 int64_t reduction, int64_t counted) {
  if (reduction == 0) {
    for (size_t r = 0; r < loss.size(); ++r)
      storeAs(out, int64_t(r), loss[r]);
    return;
  }
  T total = 0;
  for (T l : loss)
    total += l;
  if (reduction == 2)
    total = counted ? total / T(counted) : std::numeric_limits<T>::quiet_NaN();
  storeAs(out, 0, total);
}

} // namespace

Status runCrossEntropy(const KernelCall &call) {
  const TensorRef &logits = call.inputs[0], &out = call.outputs[0];
  LossCall lc;
  TRAINC_RETURN_IF_ERROR(readLossCall(call, lc));
  const std::vector<int64_t> &target = lc.target;
  int64_t classes = lc.classes, stride = lc.stride;
  int64_t rows = int64_t(target.size());

  withFloatCompute(logits.dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> loss(rows, T(0));
    int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(classes, 1));
    parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> buffer;
      for (int64_t r = begin; r < end; ++r) {
        if (lc.hasIgnore && target[r] == lc.ignoreIndex)
          continue;
        int64_t base = r * stride;
        const T *row;
        if (logits.dtype == DType::F32 || logits.dtype == DType::F64) {
          row = logits.as<T>() + base;
        } else {
          buffer.resize(classes);
          for (int64_t c = 0; c < classes; ++c)
            buffer[c] = loadAs<T>(logits, base + c);
          row = buffer.data();
        }
        T max, sum;
        if constexpr (std::is_same_v<T, float>) {
          maxAndSumExpF32(row, classes, &max, &sum);
        } else {
          max = -std::numeric_limits<T>::infinity();
          for (int64_t c = 0; c < classes; ++c)
            max = std::max(max, row[c]);
          sum = 0;
          for (int64_t c = 0; c < classes; ++c)
            sum += std::exp(row[c] - max);
        }
        loss[r] = (max - row[target[r]]) + std::log(sum);
      }
    });
    storeLosses(out, loss, lc.reduction, lc.counted);
  });
  return okStatus();
}

} // namespace trainc::cpu

//===--- The logits gradient
//----------------------------------------------------===//
//
// dlogits[r, c] = (p[r, c] - (c == t)) * weight[r], p = softmax(x[r, :]),
// computed as the decomposition it replaces did: p by the softmax kernel's
// row math, then (p - 1) * w at the target and p * w elsewhere. A target
// outside [0, C) adds no one-hot term (its weight is 0: the ignored index).
// The result may be the logits' memory: a row is read whole (max, exps)
// before any of it is written, and rows are disjoint. A padded row (C =
// `classes` of its entries) gets 0 in the padding, which is never read.

namespace trainc::cpu {
namespace {

/// What a gradient row leaves for its loss: its softmax's max and sum of
/// exps and the logit at the target (read before the row is written).
template <typename T> struct RowLoss { T max, sum, atTarget; };

/// Row r (at `base`) of the logits' gradient into `out`, with weight w and
/// target t; with `rowLoss`, also what the row's loss needs (t must then be
/// in [0, classes)). `buffer` is the caller's scratch.
template <typename T>
void gradientRow(const TensorRef &logits, const TensorRef &out, int64_t base,
                 int64_t classes, int64_t stride, T w, int64_t t,
                 std::vector<T> &buffer, RowLoss<T> *rowLoss) {
  for (int64_t c = classes; c < stride; ++c)
    storeAs(out, base + c, T(0));
  bool hit = t >= 0 && t < classes;
  T *row = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    // f32 in place in the result, 16-bit widened into the buffer
    // first; both through f32's softmax (the CUDA kernel's as well).
    const float *in = nullptr;
    if (logits.dtype == DType::F32) {
      in = logits.as<float>() + base;
      row = out.as<float>() + base;
    } else {
      buffer.resize(classes);
      for (int64_t c = 0; c < classes; ++c)
        buffer[c] = loadAs<float>(logits, base + c);
      in = row = buffer.data();
    }
    if (rowLoss) {
      rowLoss->atTarget = in[t]; // before `row`, maybe `in`, is written
      softmaxRowF32(in, row, classes, &rowLoss->max, &rowLoss->sum);
    } else {
      softmaxRowF32(in, row, classes);
    }
  } else {
    buffer.resize(classes);
    for (int64_t c = 0; c < classes; ++c)
      buffer[c] = loadAs<T>(logits, base + c);
    if (rowLoss)
      rowLoss->atTarget = buffer[t];
    T max = -std::numeric_limits<T>::infinity();
    for (T x : buffer)
      max = std::max(max, x);
    T sum = 0;
    for (T &x : buffer)
      sum += (x = std::exp(x - max));
    for (T &x : buffer)
      x = x / sum;
    row = buffer.data();
    if (rowLoss) {
      rowLoss->max = max;
      rowLoss->sum = sum;
    }
  }
  T atTarget = hit ? (row[t] - T(1)) * w : T(0);
  for (int64_t c = 0; c < classes; ++c)
    row[c] = row[c] * w;
  if (hit)
    row[t] = atTarget;
  if (logits.dtype != DType::F32)
    for (int64_t c = 0; c < classes; ++c)
      storeAs(out, base + c, row[c]);
}

/// softmax_cross_entropy_and_grad: ints as softmax_cross_entropy's, the
/// weight operand and the gradient result as softmax_cross_entropy_grad's.
Status runCrossEntropyAndGrad(const KernelCall &call) {
  const TensorRef &logits = call.inputs[0], &weight = call.inputs[2];
  const TensorRef &lossOut = call.outputs[0], &out = call.outputs[1];
  LossCall lc;
  TRAINC_RETURN_IF_ERROR(readLossCall(call, lc));
  int64_t classes = lc.classes, stride = lc.stride;
  int64_t rows = int64_t(lc.target.size());
  int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(stride, 1));
  withFloatCompute(logits.dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> loss(rows, T(0));
    parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> buffer;
      for (int64_t r = begin; r < end; ++r) {
        int64_t t = lc.target[r];
        bool ignored = lc.hasIgnore && t == lc.ignoreIndex;
        RowLoss<T> rowLoss;
        gradientRow(logits, out, r * stride, classes, stride,
                    loadAs<T>(weight, r), t, buffer,
                    ignored ? nullptr : &rowLoss);
        if (!ignored)
          loss[r] = (rowLoss.max - rowLoss.atTarget) + std::log(rowLoss.sum);
      }
    });
    storeLosses(lossOut, loss, lc.reduction, lc.counted);
  });
  return okStatus();
}

} // namespace

Status runCrossEntropyGrad(const KernelCall &call) {
  if (call.op == Opcode::SoftmaxCrossEntropyAndGrad)
    return runCrossEntropyAndGrad(call);
  const TensorRef &logits = call.inputs[0], &targets = call.inputs[1],
                  &weight = call.inputs[2];
  const TensorRef &out = call.outputs[0];
  if (!isFloat(logits.dtype))
    return unsupportedDType(call, logits.dtype);
  if (targets.dtype != DType::I32 && targets.dtype != DType::I64)
    return unsupportedDType(call, targets.dtype);
  // The first `classes` of each row of `stride` (the rest: padding, 0).
  int64_t classes = call.ints[0], stride = logits.dims[logits.rank - 1];
  int64_t rows = targets.numElements();
  int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(stride, 1));
  withFloatCompute(logits.dtype, [&](auto zero) {
    using T = decltype(zero);
    parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> buffer;
      for (int64_t r = begin; r < end; ++r)
        gradientRow(logits, out, r * stride, classes, stride,
                    loadAs<T>(weight, r), loadAs<int64_t>(targets, r), buffer,
                    static_cast<RowLoss<T> *>(nullptr));
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
