//===- Session.h - Running an executable on a device ------------*- C++ -*-===//
//
// A Session owns the memory of one executable's run on one device
// (device/Device.h): each arena is one device buffer, allocated at creation
// with exactly its planned size; parameters are copied in from their
// initial values; constants are imported from the executable (read in
// place on the CPU). run() launches the instruction list in order on the
// device's compute stream, each kernel with a KernelContext.
//
// Threading: one Session is not thread-safe; several Sessions of one
// Executable may run concurrently.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_EXEC_SESSION_H
#define TRAINC_RUNTIME_EXEC_SESSION_H

#include "device/Device.h"
#include "exec/Executable.h"

#include <memory>
#include <string>
#include <vector>

namespace trainc {

struct SessionOptions {
  /// The device to run on; null: the device named `deviceName`.
  std::shared_ptr<Device> device;
  /// createDevice's name of the device to make when `device` is null
  /// ("cpu", "cuda", "cuda:N", "auto").
  std::string deviceName = "cpu";
  /// Debug mode: after every instruction, check that no byte outside its
  /// results changed (so no kernel writes outside its buffers). Slow.
  bool checkWrites = false;
  /// Time every instruction (instructionSeconds()); costs a clock read each,
  /// and on a device that queues its work (a GPU) a wait for each.
  bool profile = false;
};

class Session {
public:
  static Status create(std::shared_ptr<const Executable> executable,
                       const SessionOptions &options,
                       std::unique_ptr<Session> &out);
  ~Session();

  const Executable &executable() const { return *executable_; }
  const std::shared_ptr<const Executable> &sharedExecutable() const {
    return executable_;
  }

  /// Copies `bytes` into input `index`; the size must match its tensor.
  Status setInput(size_t index, const void *data, size_t bytes);
  /// Runs every instruction once.
  Status run();
  /// The current value of output `index` (valid until the next run). On a
  /// device that is not host-visible the data pointer is device memory:
  /// read it with readTensor.
  TensorRef output(size_t index) const;
  /// A parameter's current value (the same caveat).
  TensorRef parameter(size_t index) const;
  /// The bytes of any tensor but an activation (whose buffer is reused);
  /// device memory on a device that is not host-visible.
  const void *tensorData(uint32_t id) const { return ref(id).data; }
  /// Copies tensor `id`'s bytes to host memory `out` (its size bytes), from
  /// any device, after the work queued so far.
  Status readTensor(uint32_t id, void *out) const;
  Device &device() const { return *device_; }
  /// The whole (global) value of tensor `id` in host memory: its bytes, or,
  /// for a tensor split over the mesh (ZeRO's parts, a split output), the
  /// parts of its group gathered. A collective: every rank of the run calls
  /// it for the same tensors in the same order.
  Status readWhole(uint32_t id, std::vector<char> &out) const;
  /// Overwrites parameter or optimizer-state tensor `id` (loading trained
  /// weights or resuming) from its whole value (TensorInfo::globalSize
  /// bytes): a split one keeps this rank's part. No communication.
  Status setPersistent(uint32_t id, const void *data, size_t bytes);

  /// Runs so far. Kernels that draw random numbers (dropout) key them on
  /// it, so a resumed run sets it to the steps already done.
  int64_t stepCount() const { return step_; }
  void setStepCount(int64_t step) { step_ = step; }

  /// The highest arena byte any instruction touched, summed over arenas:
  /// equals the plan's peak when the executor follows the plan.
  uint64_t measuredPeak() const;
  /// With SessionOptions::profile: each instruction's wall time summed over
  /// profiledRuns() runs (else empty). The first run is left out once a
  /// second starts: it alone pays one-time costs (a GPU's lazy module loads
  /// and GEMM heuristics, first touches of memory).
  const std::vector<double> &instructionSeconds() const {
    return instructionSeconds_;
  }
  int64_t profiledRuns() const { return profiledRuns_; }
  /// Whether the first run was left out of instructionSeconds().
  bool profileSkipsFirstRun() const { return profileSkipsFirstRun_; }

private:
  Session() = default;
  TensorRef ref(uint32_t id) const;
  Status checkedRun(size_t index, const KernelCall &call);

  std::shared_ptr<const Executable> executable_;
  SessionOptions options_;
  std::shared_ptr<Device> device_;
  std::vector<std::unique_ptr<Buffer>> arenaBuffers_;
  std::vector<char *> arenas_;
  /// The constant section on the device, and splat constants expanded at
  /// creation, in tensor order.
  std::unique_ptr<Buffer> constants_;
  std::vector<std::unique_ptr<Buffer>> expanded_;
  /// Each tensor's bytes.
  std::vector<char *> data_;
  std::vector<uint64_t> touched_;
  std::vector<bool> inputSet_;
  std::vector<double> instructionSeconds_;
  int64_t profiledRuns_ = 0;
  bool profileSkipsFirstRun_ = false;
  int64_t step_ = 0;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_EXEC_SESSION_H
