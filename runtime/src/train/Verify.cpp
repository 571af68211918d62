//===- Verify.cpp - A device's training steps checked against the CPU's ---===//

#include "train/Verify.h"

#include "base/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

namespace trainc {
namespace {

/// Element i of `data` as a double (floats and the common integers).
double elementAt(const void *data, int64_t i, DType dtype) {
  const char *p = static_cast<const char *>(data);
  switch (dtype) {
  case DType::F64: {
    double v;
    std::memcpy(&v, p + i * 8, 8);
    return v;
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  case DType::BF16:
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return dtype == DType::BF16 ? bf16ToFloat(v) : f16ToFloat(v);
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p + i * 8, 8);
    return double(v);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return double(v);
  }
  default:
    return double(static_cast<const uint8_t *>(data)[i]);
  }
}

} // namespace

L2Sums l2Sums(const void *a, const void *b, int64_t count, DType dtype) {
  L2Sums sums;
  sums.count = count;
  for (int64_t i = 0; i < count; ++i) {
    double x = elementAt(a, i, dtype), y = elementAt(b, i, dtype);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // Non-finite values must agree exactly (NaN with NaN).
      bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      sums.nonFiniteMismatch |= !same;
      continue;
    }
    sums.diff += (x - y) * (x - y);
    sums.norm += y * y;
  }
  return sums;
}

double relativeL2Error(const L2Sums &sums, double floorNorm) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (sums.nonFiniteMismatch)
    return kInf;
  if (sums.diff == 0)
    return 0;
  double denominator = std::max(std::sqrt(sums.norm), floorNorm);
  if (denominator == 0)
    return kInf;
  return std::sqrt(sums.diff) / denominator;
}

double relativeL2Error(const void *a, const void *b, int64_t count,
                       DType dtype) {
  return relativeL2Error(l2Sums(a, b, count, dtype));
}

/// Which operand of its kind operand `i` is: its index, except in a
/// multi-tensor AdamwUpdate, whose N parameters' operands come as N params,
/// N grads, N exp_avgs, N exp_avg_sqs: there, the N of one kind are one.
static size_t operandSlot(const InstructionInfo &inst, size_t i) {
  size_t n = inst.results.size() / 3;
  if (inst.op != Opcode::AdamwUpdate || n == 0)
    return i;
  return i < 4 * n ? i / n : 4 + (i - 4 * n);
}

std::vector<int> verifyKinds(const std::vector<TensorInfo> &tensors,
                             const std::vector<InstructionInfo> &instructions) {
  std::vector<int> kinds(tensors.size(), -1);
  std::map<std::pair<Opcode, size_t>, int> slots;
  int next = 1;
  for (const InstructionInfo &inst : instructions)
    for (size_t i = 0; i < inst.operands.size(); ++i) {
      uint32_t id = inst.operands[i];
      if (tensors[id].role != TensorRole::State || kinds[id] >= 0)
        continue;
      auto [it, added] =
          slots.emplace(std::make_pair(inst.op, operandSlot(inst, i)), next);
      next += added;
      kinds[id] = it->second;
    }
  for (size_t id = 0; id < tensors.size(); ++id) {
    if (tensors[id].role == TensorRole::Parameter)
      kinds[id] = 0;
    else if (tensors[id].role == TensorRole::State && kinds[id] < 0)
      kinds[id] = next++;
  }
  return kinds;
}

VerifyLimits verifyLimits(const std::vector<TensorInfo> &tensors,
                          const std::vector<InstructionInfo> &instructions) {
  const VerifyLimits reduced = {2e-2, 5e-2, 5e-2};
  for (const TensorInfo &t : tensors)
    if (t.dtype == DType::BF16 || t.dtype == DType::F16)
      return reduced;
  for (const InstructionInfo &inst : instructions)
    if ((inst.op == Opcode::DotGeneral || inst.op == Opcode::DotGeneralBias ||
         inst.op == Opcode::DotGeneralBiasGelu ||
         inst.op == Opcode::DotGeneralGeluGrad ||
         inst.op == Opcode::DotGeneralBiasGrad) &&
        isTf32(inst.ints))
      return reduced;
  return {1e-4, 1e-4, 2e-3};
}

} // namespace trainc
