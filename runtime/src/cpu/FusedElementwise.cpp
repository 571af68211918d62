//===- FusedElementwise.cpp - A program of elementwise steps per element -===//
//
//   for each element i of the results' shape:
//     r[0..I-1] = the operands' elements at i (a 0-d operand: its value)
//     r[I+k]    = step k applied to earlier registers
//     result[j] = r[results[j]]
//
// The program (math/FusedProgram.h) is run over chunks of kChunk elements:
// each step is the step's own CPU kernel (Elementwise.cpp, Gelu.cpp,
// FusedGradients.cpp) called on the chunk, reading the operands in place
// and the earlier steps' values from per-thread scratch that stays in the
// cache. So every step rounds exactly as its unfused instruction does and
// the loop gives the unfused program's bits, vector code included; only
// the stores and loads of the intermediate tensors are gone. Chunks are
// the parallel unit; the step kernels run inline on the chunk's thread
// (SerialScope). A 0-d operand is repeated over one chunk of scratch once
// per thread.
//
// A result may be the memory of an operand of its type: a chunk's results
// are copied out only after every step of that chunk has read its
// operands, and no chunk reads another chunk's elements.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "cpu/Kernels.h"
#include "math/FusedProgram.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

namespace trainc::cpu {
namespace {

/// Elements per chunk: a few registers of it fit in L2 (32 KiB each at
/// f64), and a step kernel's call overhead is small next to the chunk's
/// work.
constexpr int64_t kChunk = 4096;

/// One thread's registers for one chunk: scratch for every step and every
/// 0-d operand, views of the other operands.
class Registers {
public:
  Registers(const KernelCall &call, const math::FusedProgram &program)
      : call_(call), program_(program),
        scratch_(size_t(program.numRegisters()) * kChunk) {
    // A 0-d operand's value, repeated over its chunk of scratch.
    for (int r = 0; r < program.numInputs; ++r) {
      const TensorRef &in = call.inputs[r];
      if (in.rank != 0)
        continue;
      size_t size = dtypeSize(in.dtype);
      auto *bytes = reinterpret_cast<unsigned char *>(slot(r));
      for (int64_t i = 0; i < kChunk; ++i)
        std::memcpy(bytes + i * size, in.data, size);
    }
  }

  /// Register `r` over the chunk starting at element `offset`.
  TensorRef ref(int r, int64_t offset, const int64_t *length) {
    TensorRef t;
    t.dtype = program_.registerDType[r];
    t.rank = 1;
    t.dims = length;
    bool operandInPlace = r < program_.numInputs && call_.inputs[r].rank != 0;
    t.data = operandInPlace
                 ? static_cast<unsigned char *>(call_.inputs[r].data) +
                       offset * dtypeSize(t.dtype)
                 : slot(r);
    return t;
  }

private:
  void *slot(int r) { return scratch_.data() + size_t(r) * kChunk; }

  const KernelCall &call_;
  const math::FusedProgram &program_;
  /// kChunk 8-byte words per register (the widest dtype).
  std::vector<double> scratch_;
};

} // namespace

Status runFusedElementwise(const KernelCall &call) {
  int numInputs = int(call.inputs.size), numResults = call.numOutputs;
  if (numInputs > kFusedMaxInputs || numResults > kFusedMaxResults)
    return kernelError(call, "has more operands or results than a fused "
                             "loop takes");
  DType inputTypes[kFusedMaxInputs], resultTypes[kFusedMaxResults];
  for (int i = 0; i < numInputs; ++i)
    inputTypes[i] = call.inputs[i].dtype;
  for (int i = 0; i < numResults; ++i)
    resultTypes[i] = call.outputs[i].dtype;
  math::FusedProgram program;
  std::string invalid =
      math::decodeFusedProgram(call.ints.data, call.ints.size, inputTypes,
                               numInputs, resultTypes, numResults, program);
  if (!invalid.empty())
    return kernelError(call, invalid);

  int64_t n = call.outputs[0].numElements();
  std::mutex failureMutex;
  Status failure = okStatus();
  parallelFor((n + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    SerialScope serial;
    Registers registers(call, program);
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      int64_t offset = chunk * kChunk;
      int64_t length = std::min(kChunk, n - offset);
      for (int k = 0; k < program.numSteps; ++k) {
        const math::FusedStep &step = program.steps[k];
        TensorRef operands[3];
        int arity = math::fusedStepArity(step.op);
        for (int j = 0; j < arity; ++j)
          operands[j] = registers.ref(step.operand[j], offset, &length);
        TensorRef value = registers.ref(program.numInputs + k, 0, &length);
        int64_t attr = step.attr;
        bool hasAttr = step.op == Opcode::Compare || step.op == Opcode::Gelu ||
                       step.op == Opcode::GeluGrad;
        KernelCall stepCall{step.op,     {operands, arity}, &value,
                            1,           {&attr, hasAttr},  {},
                            call.context};
        Status status = kernelFor(step.op)(stepCall);
        if (!status.ok()) {
          std::lock_guard<std::mutex> lock(failureMutex);
          if (failure.ok())
            failure = kernelError(call, "step " + std::to_string(k) + ": " +
                                            status.message());
          return;
        }
      }
      for (int r = 0; r < numResults; ++r) {
        const TensorRef &out = call.outputs[r];
        size_t size = dtypeSize(out.dtype);
        TensorRef value = registers.ref(program.results[r], 0, &length);
        std::memcpy(static_cast<unsigned char *>(out.data) + offset * size,
                    value.data, size_t(length) * size);
      }
    }
  });
  return failure;
}

} // namespace trainc::cpu
