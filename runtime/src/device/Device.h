//===- Device.h - The runtime's device layer --------------------*- C++ -*-===//
//
// What a Session needs of the hardware, and nothing more:
//   Buffer      one allocation of device memory (a session allocates one per
//               arena, with exactly its planned size);
//   Stream      an ordered queue of work (kernels, copies); a device has a
//               compute stream and a communication stream, so collectives
//               can overlap compute (the schedule phase's `stream`);
//   Event       a point in a stream another stream can wait for (the
//               schedule phase's wait_events / signal_events);
//   Collective  reductions and gathers across the ranks of a run (world size
//               1: the identity; MPI on CPUs and NCCL on GPUs later);
//   Device      makes the above, moves bytes between host and device, and
//               launches a kernel (an instruction of the executable) with a
//               KernelContext.
// The CPU device (CpuDevice.h) runs everything in order on the calling
// thread's pool; a CUDA device implements the same interface beside it, and
// the Session does not change.
//
// Errors are Status values; nothing here exits or aborts.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_DEVICE_H
#define TRAINC_RUNTIME_DEVICE_DEVICE_H

#include "base/Status.h"
#include "device/KernelContext.h"

#include <cstdint>
#include <memory>
#include <string>

namespace trainc {

/// One allocation of device memory.
class Buffer {
public:
  virtual ~Buffer() = default;
  /// The address of byte 0 on the device.
  virtual char *data() = 0;
  virtual uint64_t size() const = 0;
};

/// A point in a stream's work.
class Event {
public:
  virtual ~Event() = default;
};

/// An ordered queue of work on a device.
class Stream {
public:
  virtual ~Stream() = default;
  /// Marks the current end of this stream's work with `event`.
  virtual Status record(Event &event) = 0;
  /// Work queued on this stream after this call waits for `event`.
  virtual Status wait(const Event &event) = 0;
  /// Blocks the caller until this stream's work is done.
  virtual Status synchronize() = 0;
};

/// Collective operations over the ranks of a run, on a stream. Buffers are
/// device memory of `dtype` elements.
class Collective {
public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  /// Every rank's `data` becomes the elementwise sum over ranks.
  virtual Status allReduceSum(void *data, int64_t count, DType dtype,
                              Stream &stream) = 0;
  /// `out` (worldSize * count elements) gets each rank's `in` in rank order.
  virtual Status allGather(const void *in, void *out, int64_t count,
                           DType dtype, Stream &stream) = 0;
  /// `out` (count elements) gets the sum over ranks of this rank's slice
  /// of `in` (worldSize * count elements).
  virtual Status reduceScatterSum(const void *in, void *out, int64_t count,
                                  DType dtype, Stream &stream) = 0;
};

/// The collective of a run of one process: every operation is a copy.
std::unique_ptr<Collective> createLocalCollective();

class Device {
public:
  virtual ~Device() = default;
  /// "cpu", "cuda:0", ...
  virtual std::string name() const = 0;
  /// Whether the host can read and write its buffers directly (the CPU);
  /// else bytes move with copyToDevice / copyToHost.
  virtual bool hostVisible() const = 0;

  /// A buffer of `bytes` bytes, zeroed, aligned to `alignment`.
  virtual Status allocate(uint64_t bytes, uint64_t alignment,
                          std::unique_ptr<Buffer> &out) = 0;
  /// Read-only data the host already holds (the executable's constants):
  /// used in place where the device can read host memory, else copied.
  virtual Status importConstants(const char *host, uint64_t bytes,
                                 std::unique_ptr<Buffer> &out) = 0;
  virtual Status createEvent(std::unique_ptr<Event> &out) = 0;
  virtual Stream &computeStream() = 0;
  virtual Stream &communicationStream() = 0;
  virtual Collective &collective() = 0;

  virtual Status copyToDevice(char *dst, const void *src, uint64_t bytes,
                              Stream &stream) = 0;
  virtual Status copyToHost(void *dst, const char *src, uint64_t bytes,
                            Stream &stream) = 0;
  /// Device to device; the two ranges may overlap.
  virtual Status copy(char *dst, const char *src, uint64_t bytes,
                      Stream &stream) = 0;
  /// Queues one kernel; `call.context` is set by the caller.
  virtual Status launch(const KernelCall &call) = 0;
};

/// The device named `name`: "cpu" (always built). Other names are an error
/// that says which devices this runtime has.
Status createDevice(const std::string &name, std::shared_ptr<Device> &out);

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_DEVICE_H
