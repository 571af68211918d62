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
//               1: the identity; MPI on CPUs, MpiCollective.cpp; NCCL on
//               GPUs, cuda/NcclCollective.cpp);
//   Device      makes the above, moves bytes between host and device, and
//               launches a kernel (an instruction of the executable) with a
//               KernelContext.
// The CPU device (CpuDevice.cpp) runs everything in order on the calling
// thread's pool; the CUDA device (cuda/CudaDevice.cpp) implements the same
// interface beside it, and the Session does not change.
//
// Errors are Status values; nothing here exits or aborts.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_DEVICE_H
#define TRAINC_RUNTIME_DEVICE_DEVICE_H

#include "base/Status.h"
#include "device/KernelContext.h"
#include "math/Dropout.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

/// Where a collective was called from, for the message of one that does not
/// complete: the training step and the instruction.
struct CollectiveSite {
  /// Steps done before this one (-1: not in a step).
  int64_t step = -1;
  int64_t instruction = -1;
  /// The opcode's name ("all_reduce").
  const char *what = "";
};

/// Collective operations over the ranks of a run, on a stream. Buffers are
/// device memory of `dtype` elements. Ranks form a mesh (setMesh): a
/// collective on axis `a` combines the ranks whose coordinates on every
/// other axis equal this rank's (its group), in the order of their
/// coordinate on `a`.
class Collective {
public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  /// Arranges the ranks as a mesh of `axisSizes` (the last varies fastest;
  /// their product must be worldSize()) for a program whose identity is
  /// `programHash`. Every rank calls it before the program's first
  /// collective; it fails, naming the ranks, unless every rank passes the
  /// same sizes and hash. The default mesh is one axis of worldSize()
  /// ranks.
  virtual Status setMesh(const std::vector<int64_t> &axisSizes,
                         uint64_t programHash) = 0;
  /// This rank's coordinate on mesh axis `axis`.
  virtual int coordinate(int axis) const = 0;
  /// Every rank's `data` becomes the elementwise sum over its group.
  virtual Status allReduceSum(int axis, void *data, int64_t count, DType dtype,
                              Stream &stream, const CollectiveSite &site) = 0;
  /// `in` holds group size * count elements; `out` (count elements) gets
  /// the part of their sum over the group at this rank's coordinate.
  virtual Status reduceScatterSum(int axis, const void *in, void *out,
                                  int64_t count, DType dtype, Stream &stream,
                                  const CollectiveSite &site) = 0;
  /// `out` (group size * count elements) gets each group member's
  /// `in` in coordinate order. Axis -1: every rank, in rank order.
  virtual Status allGather(int axis, const void *in, void *out, int64_t count,
                           DType dtype, Stream &stream,
                           const CollectiveSite &site) = 0;
  /// Asynchronous collectives: each start* posts the collective and returns
  /// at once with a handle; finish() waits for it (with the timeout) and
  /// completes it. Between the two, the buffers belong to the collective:
  /// `data` / `out` hold the result only after finish, `in` must not change.
  /// Every rank starts the same collectives in the same order.
  using Handle = int64_t;
  virtual Status startAllReduceSum(int axis, void *data, int64_t count,
                                   DType dtype, Stream &stream,
                                   const CollectiveSite &site, Handle &out) = 0;
  virtual Status startReduceScatterSum(int axis, const void *in, void *out,
                                       int64_t count, DType dtype,
                                       Stream &stream,
                                       const CollectiveSite &site,
                                       Handle &handle) = 0;
  virtual Status startAllGather(int axis, const void *in, void *out,
                                int64_t count, DType dtype, Stream &stream,
                                const CollectiveSite &site, Handle &handle) = 0;
  /// Waits for `handle` (site: where it is waited for) and completes it.
  virtual Status finish(Handle handle, const CollectiveSite &site) = 0;
  /// Lets the collectives in flight advance (MPI progresses nonblocking
  /// collectives only inside MPI calls): the session calls it between
  /// instructions while any is in flight.
  virtual void progress() {}
  /// Seconds this rank has spent waiting in collectives so far (the
  /// communication its compute did not hide).
  virtual double secondsWaiting() const = 0;
  /// Seconds so far during which at least one collective was in flight
  /// (from a start to the moment this rank saw the last one complete, in
  /// progress() or finish()): communication hidden or not. World size 1: 0.
  virtual double secondsInFlight() const { return 0; }
  /// How long a collective may wait for its peers before it fails (the
  /// run's WorldOptions::timeoutSeconds; 0: forever, and for one rank).
  virtual double timeoutSeconds() const { return 0; }
  /// Ends every rank of the run now (after a fatal error on this one, so the
  /// others do not wait for it). World size 1: does nothing.
  virtual void abort(int code) = 0;
};

/// The collective of a run of one process: every operation is a copy.
std::unique_ptr<Collective> createLocalCollective();

/// How the ranks of an MPI-launched run communicate.
struct WorldOptions {
  /// A collective that has not completed after this long fails with a
  /// message naming the step, the instruction and the ranks that did not
  /// arrive (0: wait forever).
  double timeoutSeconds = 300;
  /// Sum in rank order (an all-gather, then one sum on every rank): the
  /// same bits as one rank summing micro-batches in order, at the cost of
  /// N times the traffic. Otherwise MPI's order.
  bool deterministic = false;
};

/// The ranks this process runs with: MPI's world when an MPI launcher
/// (mpirun, srun) started it, else a world of one (createLocalCollective).
/// Made on the first call, with the first call's options; later calls
/// return the same collective.
Status worldCollective(const WorldOptions &options,
                       std::shared_ptr<Collective> &out);
/// Whether the runtime was built with MPI.
bool haveMpi();
/// Whether the runtime was built with the CUDA device.
bool haveCuda();

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
  /// The same ranks, on host memory: for the runtime's own small exchanges
  /// (metrics, agreements, whole tensors gathered to the host). The CPU
  /// device's collective(); MPI (or one rank) beside a GPU's NCCL.
  virtual Collective &hostCollective() { return collective(); }

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

/// The device named `name`: "cpu" (always built), "cuda" (the GPU of this
/// rank: the launcher's local rank modulo the GPUs present) or "cuda:N"
/// (built with TRAINC_ENABLE_CUDA; `unavailable` on a machine without that
/// GPU). Other names are an error that says which devices this runtime
/// has.
Status createDevice(const std::string &name, std::shared_ptr<Device> &out);
/// The same, with the ranks `collective` joins (null: a world of one).
Status createDevice(const std::string &name,
                    std::shared_ptr<Collective> collective,
                    std::shared_ptr<Device> &out);

/// The key of the dropout stream whose ints start at `first` in `call`
/// (executable.fbs' Dropout: [seed], or [seed, axis, stride] on a mesh
/// whose data ranks draw apart; two ints more on a block of the tensor
/// axis, read by tensorBlockOf): math::dropoutKey of the seed, plus this rank's
/// coordinate on the axis times the stride, and the step.
inline uint64_t dropoutKeyOf(const KernelCall &call, int64_t first) {
  uint64_t seed = uint64_t(call.ints[first]);
  if (call.ints.size >= first + 3 && call.context && call.context->collective)
    seed += uint64_t(call.context->collective->coordinate(
                int(call.ints[first + 1]))) *
            uint64_t(call.ints[first + 2]);
  return math::dropoutKey(seed, uint64_t(call.step()));
}

/// The block of a random op's operand whose stream names [tensor axis,
/// blocks] at ints[at..at+1] (executable.fbs' Dropout and Attention): block
/// c of `blocks`, c this rank's coordinate on the tensor axis, with `run`
/// elements from the split dimension on; the whole when the stream has
/// no blocks, or one (block 0, whatever coordinate the axis gives).
inline math::DropoutBlock tensorBlockOf(const KernelCall &call, int64_t at,
                                        int64_t run) {
  if (call.ints.size < at + 2 || call.ints[at + 1] == 1)
    return {0, 1, run};
  int64_t block = call.context && call.context->collective
                      ? call.context->collective->coordinate(int(call.ints[at]))
                      : 0;
  return {block, call.ints[at + 1], run};
}

/// Where dropout operand `x` lies in the whole: with [seed, data axis,
/// stride, tensor axis, blocks, dim], a block of dimension dim.
inline math::DropoutBlock dropoutBlockOf(const KernelCall &call,
                                         const TensorRef &x) {
  int64_t run = 1;
  if (call.ints.size == 6)
    for (int d = int(call.ints[5]); d < x.rank; ++d)
      run *= x.dims[d];
  return tensorBlockOf(call, 3, run);
}

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_DEVICE_H
