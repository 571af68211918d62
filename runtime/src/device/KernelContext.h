//===- KernelContext.h - What a kernel gets from its device ----*- C++ -*-===//
//
// Every kernel call carries a context from the device that launches it: the
// stream it runs on, the collective of its ranks, scratch memory, and the
// training step (random ops key their draws on it, so a resumed run draws
// the same numbers). A CPU kernel ignores the stream (the CPU device runs
// in order); a CUDA kernel launches on it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_KERNELCONTEXT_H
#define TRAINC_RUNTIME_DEVICE_KERNELCONTEXT_H

#include <cstdint>

namespace trainc {

class Collective;
class Stream;

struct KernelContext {
  Stream *stream = nullptr;
  /// The ranks this program runs on (world size 1: the identity).
  Collective *collective = nullptr;
  /// Scratch memory for the kernel, valid for the call (may be null).
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  /// Runs of the executable before this one (0 outside training).
  int64_t step = 0;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_KERNELCONTEXT_H
