//===- FusedElementwise.cpp - A program of elementwise steps per element -===//
//
// fused_elementwise, and convert_group (several converts: each pair is
// Elementwise.cpp's Convert, so the same bits) at the end.
//
//   for each element i of the results' shape:
//     r[0..I-1] = the operands' elements at i (a 0-d operand: its value;
//                 a broadcast one: math/BroadcastView.h's element)
//     r[I+k]    = step k applied to earlier registers
//     result[j] = r[results[j]]
//
// The program (math/FusedProgram.h) is run over chunks of kChunk elements:
// each step is the step's own CPU kernel (Elementwise.cpp, Gelu.cpp,
// FusedGradients.cpp, Bitwise.cpp) called on the chunk, reading the operands in
// place and the earlier steps' values from per-thread scratch that stays in the
// cache. So every step rounds exactly as its unfused instruction does and
// the loop gives the unfused program's bits, vector code included; only
// the stores and loads of the intermediate tensors are gone. Chunks are
// the parallel unit; the step kernels run inline on the chunk's thread
// (SerialScope). A 0-d operand is repeated over one chunk of scratch once
// per thread; a broadcast one (a per-channel scale) is copied into scratch
// for each chunk, run by run of its view's innermost dimension (a fill
// where it does not vary there, else a copy).
//
// A result that shares no memory with an operand is written by its step
// directly. One that is the memory of an operand of its type (the plan's
// in-place reuse) is computed into scratch and copied out only after
// every step of the chunk has read its operands; no chunk reads another
// chunk's elements.
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

/// How a register of an operand gets its chunk's elements.
enum class Read {
  kInPlace,  ///< the operand's memory at the chunk's offset
  kRepeated, ///< one value, repeated in scratch once per thread
  kGathered, ///< copied into scratch through its view for each chunk
};

/// Whether result `out` shares no byte with an operand read in place
/// (the others are copied to scratch first).
bool overlapsNoOperand(const KernelCall &call, const Read *reads,
                       const TensorRef &out) {
  auto *begin = static_cast<const unsigned char *>(out.data);
  const unsigned char *end = begin + out.numElements() * dtypeSize(out.dtype);
  for (int64_t r = 0; r < call.inputs.size; ++r) {
    const TensorRef &in = call.inputs[r];
    if (reads[r] != Read::kInPlace)
      continue;
    auto *b = static_cast<const unsigned char *>(in.data);
    const unsigned char *e = b + in.numElements() * dtypeSize(in.dtype);
    if (b < end && begin < e)
      return false;
  }
  return true;
}

/// An operand's views and how each is read.
struct Operands {
  math::BroadcastView views[kFusedMaxInputs];
  Read reads[kFusedMaxInputs];
};

/// One thread's registers for one chunk: views of the operands, scratch
/// for the steps and the operands not read in place, and for a result
/// that takes no operand's memory, the result itself.
class Registers {
public:
  Registers(const KernelCall &call, const math::FusedProgram &program,
            const Operands &operands)
      : call_(call), program_(program), operands_(operands),
        scratch_(threadScratch(program)) {
    for (int r = 0; r < kFusedMaxInputs + kFusedMaxSteps; ++r)
      output_[r] = -1;
    for (int q = 0; q < program.numResults; ++q)
      if (overlapsNoOperand(call, operands.reads, call.outputs[q]))
        output_[program.results[q]] = q;
    // A constant operand's value, repeated over its chunk of scratch.
    for (int r = 0; r < program.numInputs; ++r)
      if (operands.reads[r] == Read::kRepeated)
        byWord(r, [&](auto word) {
          using W = decltype(word);
          std::fill_n(static_cast<W *>(slot(r)), kChunk,
                      *static_cast<const W *>(call.inputs[r].data));
        });
  }

  /// Copies the broadcast operands' elements of the chunk at `offset`.
  void gather(int64_t offset, int64_t length) {
    for (int r = 0; r < program_.numInputs; ++r)
      if (operands_.reads[r] == Read::kGathered)
        byWord(r, [&](auto word) {
          using W = decltype(word);
          gatherRuns(static_cast<const W *>(call_.inputs[r].data),
                     operands_.views[r], offset, length,
                     static_cast<W *>(slot(r)));
        });
  }

  /// Register `r` over the chunk starting at element `offset`.
  TensorRef ref(int r, int64_t offset, const int64_t *length) {
    TensorRef t;
    t.dtype = program_.registerDType[r];
    t.rank = 1;
    t.dims = length;
    void *base = nullptr;
    if (r < program_.numInputs && operands_.reads[r] == Read::kInPlace)
      base = call_.inputs[r].data;
    else if (output_[r] >= 0)
      base = call_.outputs[output_[r]].data;
    t.data =
        base ? static_cast<unsigned char *>(base) + offset * dtypeSize(t.dtype)
             : slot(r);
    return t;
  }

  /// Whether register `r` is written straight into its result.
  bool isDirect(int r) const { return output_[r] >= 0; }

private:
  /// Calls fn with a word of operand r's element size (elements are moved
  /// as bits).
  template <typename Fn> void byWord(int r, Fn fn) const {
    switch (dtypeSize(call_.inputs[r].dtype)) {
    case 1:
      return fn(uint8_t());
    case 2:
      return fn(uint16_t());
    case 4:
      return fn(uint32_t());
    default:
      return fn(uint64_t());
    }
  }

  /// x's elements at flat indices [offset, offset + length) of view v, at
  /// `to`: a run of v's innermost dimension at a time, a fill or a copy.
  template <typename W>
  static void gatherRuns(const W *x, const math::BroadcastView &v,
                         int64_t offset, int64_t length, W *to) {
    math::BroadcastCursor cursor;
    cursor.start(v, offset);
    bool fill = v.stride[v.rank - 1] == 0; // else 1: BroadcastView.h
    for (int64_t done = 0; done < length;) {
      int64_t m = std::min(cursor.run(v), length - done);
      const W *from = x + cursor.offset;
      if (fill)
        std::fill_n(to + done, m, *from);
      else
        std::memcpy(to + done, from, size_t(m) * sizeof(W));
      done += m;
      cursor.advance(v, m);
    }
  }

  /// This thread's scratch, kept between calls (grown, never zeroed): a
  /// step runs hundreds of loops, each on every thread.
  static double *threadScratch(const math::FusedProgram &program) {
    thread_local std::vector<double> scratch;
    size_t words = size_t(program.numRegisters()) * kChunk;
    if (scratch.size() < words)
      scratch.resize(words);
    return scratch.data();
  }

  void *slot(int r) { return scratch_ + size_t(r) * kChunk; }

  const KernelCall &call_;
  const math::FusedProgram &program_;
  const Operands &operands_;
  /// kChunk 8-byte words per register (the widest dtype).
  double *scratch_;
  /// Per register: the result it is written into directly, or -1.
  int output_[kFusedMaxInputs + kFusedMaxSteps];
};

} // namespace

Status runFusedElementwise(const KernelCall &call) {
  int numInputs = int(call.inputs.size), numResults = call.numOutputs;
  if (numInputs > kFusedMaxInputs || numResults > kFusedMaxResults)
    return kernelError(call, "has more operands or results than a fused "
                             "loop takes");
  DType inputTypes[kFusedMaxInputs], resultTypes[kFusedMaxResults];
  int inputRanks[kFusedMaxInputs];
  for (int i = 0; i < numInputs; ++i) {
    inputTypes[i] = call.inputs[i].dtype;
    inputRanks[i] = call.inputs[i].rank;
  }
  for (int i = 0; i < numResults; ++i)
    resultTypes[i] = call.outputs[i].dtype;
  const TensorRef &shape = call.outputs[0];
  math::FusedProgram program;
  std::string invalid = math::decodeFusedProgram(
      call.ints.data, call.ints.size, inputTypes, inputRanks, numInputs,
      resultTypes, numResults, shape.rank, program);
  if (!invalid.empty())
    return kernelError(call, invalid);
  Operands operands;
  for (int r = 0; r < numInputs; ++r) {
    const TensorRef &x = call.inputs[r];
    math::BroadcastView &view = operands.views[r];
    invalid = math::fusedOperandView(program, r, shape.dims, shape.rank, x.dims,
                                     x.rank, view);
    if (!invalid.empty())
      return kernelError(call, invalid);
    operands.reads[r] = view.constant()     ? Read::kRepeated
                        : view.contiguous() ? Read::kInPlace
                                            : Read::kGathered;
  }

  int64_t n = shape.numElements();
  std::mutex failureMutex;
  Status failure = okStatus();
  parallelFor((n + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    SerialScope serial;
    Registers registers(call, program, operands);
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      int64_t offset = chunk * kChunk;
      int64_t length = std::min(kChunk, n - offset);
      registers.gather(offset, length);
      for (int k = 0; k < program.numSteps; ++k) {
        const math::FusedStep &step = program.steps[k];
        TensorRef operands[3];
        int arity = math::fusedStepArity(step.op);
        for (int j = 0; j < arity; ++j)
          operands[j] = registers.ref(step.operand[j], offset, &length);
        TensorRef value = registers.ref(program.numInputs + k, offset, &length);
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
        if (registers.isDirect(program.results[r]))
          continue;
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

Status runConvertGroup(const KernelCall &call) {
  if (call.inputs.size < 1 || call.numOutputs != call.inputs.size)
    return kernelError(call, "needs as many results as operands, at least "
                             "one");
  for (int64_t i = 0; i < call.inputs.size; ++i)
    if (call.inputs[i].dtype != call.inputs[0].dtype ||
        call.outputs[i].dtype != call.outputs[0].dtype)
      return kernelError(call, "pair " + std::to_string(i) +
                                   " does not convert pair 0's dtypes");
  for (int64_t i = 0; i < call.inputs.size; ++i) {
    KernelCall pair{
        Opcode::Convert, {&call.inputs[i], 1}, &call.outputs[i], 1, {}, {},
        call.context};
    TRAINC_RETURN_IF_ERROR(runElementwise(pair));
  }
  return okStatus();
}

} // namespace trainc::cpu
