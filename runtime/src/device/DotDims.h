//===- DotDims.h - dot_general's dimensions grouped for a GEMM --*- C++ -*-===//
//
// Host-side bookkeeping both devices' dot_general kernels share: an
// operand's dims split into batch, free and contracting groups (each in the
// order its elements are flattened), the concatenation of groups into a
// permutation, dot_general_bias_grad's sum as a ReduceSum call,
// dot_general_bias_gelu as a DotGeneralBias call and a Gelu call, and
// dot_general_gelu_grad as a DotGeneral call and a GeluGrad call.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_DOTDIMS_H
#define TRAINC_RUNTIME_DEVICE_DOTDIMS_H

#include "device/KernelContext.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace trainc {

struct DimGroups {
  std::vector<int> batch, free, contract;
};

/// t's dims grouped: `batch` and `contract` (nb and nc dims, in the given
/// order) and the rest, in order, as free.
inline DimGroups groupDims(const TensorRef &t, const int64_t *batch,
                           const int64_t *contract, int64_t nb, int64_t nc) {
  DimGroups g;
  std::vector<bool> used(t.rank, false);
  for (int64_t i = 0; i < nb; ++i) {
    g.batch.push_back(int(batch[i]));
    used[batch[i]] = true;
  }
  for (int64_t i = 0; i < nc; ++i) {
    g.contract.push_back(int(contract[i]));
    used[contract[i]] = true;
  }
  for (int d = 0; d < t.rank; ++d)
    if (!used[d])
      g.free.push_back(d);
  return g;
}

/// dot_general_bias_grad's second result as a ReduceSum instruction of its
/// own: the summed operand (lhs, or rhs when the last int, sum_rhs, is 1)
/// over its contracting dims, sorted into `dims` (which must outlive the
/// call), into the second output. Either device runs it where its GEMM
/// does not sum the operand itself.
inline KernelCall biasGradSumCall(const KernelCall &call,
                                  std::vector<int64_t> &dims) {
  int64_t nb = call.ints[0], nc = call.ints[1];
  bool sumRhs = call.ints[call.ints.size - 1] != 0;
  const int64_t *contract = call.ints.data + 2 + 2 * nb + (sumRhs ? nc : 0);
  dims.assign(contract, contract + nc);
  std::sort(dims.begin(), dims.end());
  KernelCall sum = call;
  sum.op = Opcode::ReduceSum;
  sum.inputs = {&call.inputs[sumRhs ? 1 : 0], 1};
  sum.outputs = &call.outputs[1];
  sum.numOutputs = 1;
  sum.ints = {dims.data(), int64_t(dims.size())};
  sum.floats = {};
  return sum;
}

/// dot_general_bias_gelu's pre-activation as a DotGeneralBias instruction
/// of its own (the ints without the last, the approximation) into the
/// second output.
inline KernelCall biasGeluProductCall(const KernelCall &call) {
  KernelCall product = call;
  product.op = Opcode::DotGeneralBias;
  product.outputs = &call.outputs[1];
  product.numOutputs = 1;
  product.ints = {call.ints.data, call.ints.size - 1};
  return product;
}

/// dot_general_bias_gelu's GELU as a Gelu instruction of its own: the
/// second output (the pre-activation) into the first, with the last int
/// (0 erf, 1 tanh) as Gelu's.
inline KernelCall biasGeluGeluCall(const KernelCall &call) {
  KernelCall gelu = call;
  gelu.op = Opcode::Gelu;
  gelu.inputs = {&call.outputs[1], 1};
  gelu.outputs = &call.outputs[0];
  gelu.numOutputs = 1;
  gelu.ints = {call.ints.data + call.ints.size - 1, 1};
  gelu.floats = {};
  return gelu;
}

/// dot_general_gelu_grad's product as a DotGeneral instruction of its own
/// (the operands without the pre-activation, the ints without the last)
/// into the output.
inline KernelCall geluGradProductCall(const KernelCall &call) {
  KernelCall product = call;
  product.op = Opcode::DotGeneral;
  product.inputs = {call.inputs.data, 2};
  product.ints = {call.ints.data, call.ints.size - 1};
  return product;
}

/// dot_general_gelu_grad's gradient as a GeluGrad instruction of its own,
/// in place: the pre-activation and the product (the output, which
/// `operands` holds with it and must outlive the call) into the output,
/// with the last int (0 erf, 1 tanh) as GeluGrad's.
inline KernelCall geluGradCall(const KernelCall &call,
                               std::array<TensorRef, 2> &operands) {
  operands = {call.inputs[2], call.outputs[0]};
  KernelCall grad = call;
  grad.op = Opcode::GeluGrad;
  grad.inputs = {operands.data(), 2};
  grad.ints = {call.ints.data + call.ints.size - 1, 1};
  grad.floats = {};
  return grad;
}

/// The groups one after another.
inline std::vector<int>
concat(std::initializer_list<const std::vector<int> *> parts) {
  std::vector<int> out;
  for (const std::vector<int> *p : parts)
    out.insert(out.end(), p->begin(), p->end());
  return out;
}

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_DOTDIMS_H
