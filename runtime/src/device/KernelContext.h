//===- KernelContext.h - What a kernel gets from its device ----*- C++ -*-===//
//
// The contract between a device and the kernels it launches, whatever the
// device: a KernelCall names the opcode, the operand and result tensors
// (TensorRef: dtype, shape and data pointer in that device's memory) and
// the attribute lists. Every call carries a context from the device: the
// stream it runs on, the collective of its ranks, scratch memory, and the
// training step (random ops key their draws on it, so a resumed run draws
// the same numbers). A CPU kernel ignores the stream (the CPU device runs
// in order); a CUDA kernel launches on it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_KERNELCONTEXT_H
#define TRAINC_RUNTIME_DEVICE_KERNELCONTEXT_H

#include "base/DType.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace trainc {

class Collective;
class Device;
class Stream;

/// The collectives a *Start instruction began and its CollectiveDone has
/// not ended yet: each with the pending buffer it writes (how the done finds
/// it) and the instruction that started it. Owned by the session.
struct CollectivesInFlight {
  struct Entry {
    const void *pending;
    int64_t handle;
    int64_t instruction;
  };
  std::vector<Entry> entries;
};

struct KernelContext {
  /// The device that launched the kernel (its copies serve kernels that only
  /// move bytes, such as the collectives'); null in CPU kernel unit tests.
  Device *device = nullptr;
  Stream *stream = nullptr;
  /// The ranks this program runs on (world size 1: the identity).
  Collective *collective = nullptr;
  /// Scratch memory for the kernel, valid for the call (may be null).
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  /// Runs of the executable before this one (0 outside training).
  int64_t step = 0;
  /// The instruction being run (for messages; -1 outside a session).
  int64_t instruction = -1;
  /// Asynchronous collectives in flight (null outside a session).
  CollectivesInFlight *inFlight = nullptr;
};

/// A tensor as a kernel sees it: dtype, shape and a pointer to its
/// row-major elements (16-bit floats as bit patterns, i1 as bytes).
struct TensorRef {
  DType dtype = DType::F32;
  int rank = 0;
  const int64_t *dims = nullptr;
  void *data = nullptr;

  int64_t numElements() const { return product(0, rank); }
  /// The product of dims [begin, end): e.g. a norm's rows, product(0,
  /// axis), and row length, product(axis, rank).
  int64_t product(int begin, int end) const {
    int64_t n = 1;
    for (int i = begin; i < end; ++i)
      n *= dims[i];
    return n;
  }
  int64_t dim(int i) const { return dims[i]; }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// A read-only view of `size` elements.
template <typename T> struct Span {
  const T *data = nullptr;
  int64_t size = 0;
  const T &operator[](int64_t i) const { return data[i]; }
  const T *begin() const { return data; }
  const T *end() const { return data + size; }
};

/// One kernel invocation.
struct KernelCall {
  Opcode op;
  Span<TensorRef> inputs;
  TensorRef *outputs = nullptr;
  int numOutputs = 0;
  Span<int64_t> ints;
  Span<double> floats;
  /// From the device that launches it (stream, collective, workspace, the
  /// training step); null in kernel unit tests, where a kernel sees step 0.
  const KernelContext *context = nullptr;

  int64_t step() const { return context ? context->step : 0; }
};

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_KERNELCONTEXT_H
