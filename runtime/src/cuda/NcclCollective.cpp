//===- NcclCollective.cpp - Collectives between GPUs over NCCL ------------===//
//
// The CUDA device's Collective. The ranks are the host collective's (MPI's
// world, or one process): it bootstraps NCCL (rank 0's ncclUniqueId reaches
// every rank through the host collective's all-gather), agrees on the mesh
// and the program (setMesh's hash exchange), and aborts the job. NCCL then
// does the reductions and gathers on device memory: one communicator for
// the world and one per mesh axis, split from it (ncclCommSplit; color: the
// rank's coordinates on the other axes, key: its coordinate on the axis),
// so a group's ranks are in coordinate order as the Collective contract
// says.
//
// A world of one (no MPI launcher) needs no NCCL: its sums are the values
// and its gathers and scatters copies on the stream, so no communicator is
// made (on an H100, the one NCCL made for a single process failed
// compute-sanitizer memcheck with 16 errors inside ncclCommSplit).
//
// Synchronous collectives are queued on the caller's stream (stream order
// makes their results visible to the next kernels). Asynchronous ones are
// queued on the communication stream after an event of the caller's
// stream, and finish() waits, polling with the timeout, for the event that
// ends them, then orders the caller's stream after it. A collective that
// does not complete within the timeout aborts the communicators and fails
// naming the step, the instruction and the collective; a synchronous one
// that hangs is caught by the stream's synchronize() (CudaDevice.cpp).
// The timeout is the host collective's (the run's WorldOptions; 0: none);
// while waiting, finish() also polls NCCL's asynchronous error (a peer's
// broken connection).
//
// Not yet: NCCL's reduction order is its own (no deterministic option);
// the time waited is measured only in finish(); finish() blocks the host
// until the collective ends, which leaves the GPU idle once its queue
// drains (an event the compute stream waits on, without the host, would
// keep more overlap).
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDevice.h"
#include "cuda/CudaStatus.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace trainc::cuda {
namespace {

using Clock = std::chrono::steady_clock;

Status ncclTypeOf(DType t, ncclDataType_t &out) {
  switch (t) {
  case DType::F32:
    out = ncclFloat32;
    return okStatus();
  case DType::F64:
    out = ncclFloat64;
    return okStatus();
  case DType::F16:
    out = ncclFloat16;
    return okStatus();
  case DType::BF16:
    out = ncclBfloat16;
    return okStatus();
  case DType::I32:
    out = ncclInt32;
    return okStatus();
  case DType::I64:
    out = ncclInt64;
    return okStatus();
  case DType::I1:
  case DType::U8:
    out = ncclUint8;
    return okStatus();
  default:
    return Status(StatusCode::kUnimplemented,
                  std::string("NCCL collectives do not take dtype ") +
                      dtypeName(t));
  }
}

std::string siteText(const CollectiveSite &site) {
  std::string text = site.what;
  if (site.instruction >= 0)
    text += " (instruction " + std::to_string(site.instruction) + ")";
  if (site.step >= 0)
    text += " in step " + std::to_string(site.step + 1);
  return text;
}

class NcclCollective final : public Collective {
public:
  NcclCollective(std::shared_ptr<Collective> host, CudaStream &communication)
      : host_(std::move(host)), communication_(communication),
        timeoutSeconds_(host_->timeoutSeconds()) {}

  ~NcclCollective() override {
    for (auto &[id, pending] : pending_) {
      cudaEventDestroy(pending.started);
      cudaEventDestroy(pending.done);
    }
    for (ncclComm_t comm : axisComms_)
      if (comm)
        ncclCommDestroy(comm);
    if (world_)
      ncclCommDestroy(world_);
  }

  Status init() {
    if (single())
      return okStatus();
    ncclUniqueId id{};
    if (host_->rank() == 0)
      TRAINC_RETURN_IF_ERROR(
          fromNcclResult(int(ncclGetUniqueId(&id)), "ncclGetUniqueId"));
    // Every rank's id, of which rank 0's is the one (host memory: the host
    // collective ignores the stream).
    std::vector<char> all(sizeof(id) * size_t(host_->worldSize()));
    CollectiveSite site;
    site.what = "NCCL bootstrap";
    TRAINC_RETURN_IF_ERROR(host_->allGather(-1, &id, all.data(),
                                            int64_t(sizeof(id)), DType::U8,
                                            communication_, site));
    std::memcpy(&id, all.data(), sizeof(id));
    TRAINC_RETURN_IF_ERROR(fromNcclResult(
        int(ncclCommInitRank(&world_, host_->worldSize(), id, host_->rank())),
        "ncclCommInitRank"));
    return setAxes({int64_t(host_->worldSize())});
  }

  int rank() const override { return host_->rank(); }
  int worldSize() const override { return host_->worldSize(); }

  Status setMesh(const std::vector<int64_t> &axisSizes,
                 uint64_t programHash) override {
    TRAINC_RETURN_IF_ERROR(host_->setMesh(axisSizes, programHash));
    return setAxes(axisSizes);
  }
  int coordinate(int axis) const override { return host_->coordinate(axis); }

  Status allReduceSum(int axis, void *data, int64_t count, DType dtype,
                      Stream &stream, const CollectiveSite &site) override {
    ncclDataType_t type;
    TRAINC_RETURN_IF_ERROR(ncclTypeOf(dtype, type));
    if (single())
      return okStatus();
    return check(ncclAllReduce(data, data, size_t(count), type, ncclSum,
                               comm(axis), handleOf(stream)),
                 site);
  }
  Status reduceScatterSum(int axis, const void *in, void *out, int64_t count,
                          DType dtype, Stream &stream,
                          const CollectiveSite &site) override {
    ncclDataType_t type;
    TRAINC_RETURN_IF_ERROR(ncclTypeOf(dtype, type));
    if (single())
      return copy(in, out, count, dtype, stream);
    return check(ncclReduceScatter(in, out, size_t(count), type, ncclSum,
                                   comm(axis), handleOf(stream)),
                 site);
  }
  Status allGather(int axis, const void *in, void *out, int64_t count,
                   DType dtype, Stream &stream,
                   const CollectiveSite &site) override {
    ncclDataType_t type;
    TRAINC_RETURN_IF_ERROR(ncclTypeOf(dtype, type));
    if (single())
      return copy(in, out, count, dtype, stream);
    return check(ncclAllGather(in, out, size_t(count), type, comm(axis),
                               handleOf(stream)),
                 site);
  }

  Status startAllReduceSum(int axis, void *data, int64_t count, DType dtype,
                           Stream &stream, const CollectiveSite &site,
                           Handle &out) override {
    return start(stream, site, out, [&] {
      return allReduceSum(axis, data, count, dtype, communication_, site);
    });
  }
  Status startReduceScatterSum(int axis, const void *in, void *out,
                               int64_t count, DType dtype, Stream &stream,
                               const CollectiveSite &site,
                               Handle &handle) override {
    return start(stream, site, handle, [&] {
      return reduceScatterSum(axis, in, out, count, dtype, communication_,
                              site);
    });
  }
  Status startAllGather(int axis, const void *in, void *out, int64_t count,
                        DType dtype, Stream &stream, const CollectiveSite &site,
                        Handle &handle) override {
    return start(stream, site, handle, [&] {
      return allGather(axis, in, out, count, dtype, communication_, site);
    });
  }

  Status finish(Handle handle, const CollectiveSite &site) override {
    auto it = pending_.find(handle);
    if (it == pending_.end())
      return internalError("NCCL: finish of an unknown collective " +
                           std::to_string(handle));
    Pending p = it->second;
    pending_.erase(it);
    Clock::time_point begin = Clock::now();
    Status status = okStatus();
    for (int polls = 0;; ++polls) {
      cudaError_t err = cudaEventQuery(p.done);
      if (err == cudaSuccess)
        break;
      if (err != cudaErrorNotReady) {
        status = fromCudaError(int(err), "cudaEventQuery(collective)");
        break;
      }
      // Not ready is also the thread's last error now: clear it, or the
      // next launch's check would report it.
      (void)cudaGetLastError();
      // A peer's failure NCCL noticed (a broken connection).
      ncclResult_t async = ncclSuccess;
      if (world_ && ncclCommGetAsyncError(world_, &async) == ncclSuccess &&
          async != ncclSuccess && async != ncclInProgress) {
        abortCommunicators();
        status = fromNcclResult(int(async), (siteText(site) + ": " + p.what +
                                             " (asynchronous NCCL error)")
                                                .c_str());
        break;
      }
      double waited =
          std::chrono::duration<double>(Clock::now() - p.startTime).count();
      if (timeoutSeconds_ > 0 && waited > timeoutSeconds_) {
        abortCommunicators();
        status = Status(StatusCode::kUnavailable,
                        siteText(site) + ": the collective " + p.what +
                            " did not complete within " +
                            std::to_string(timeoutSeconds_) +
                            " s: a rank did not arrive");
        break;
      }
      if (polls > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    secondsWaiting_ +=
        std::chrono::duration<double>(Clock::now() - begin).count();
    if (status.ok())
      status = fromCudaError(int(cudaStreamWaitEvent(p.caller, p.done, 0)),
                             "cudaStreamWaitEvent(collective)");
    cudaEventDestroy(p.started);
    cudaEventDestroy(p.done);
    return status;
  }

  double secondsWaiting() const override { return secondsWaiting_; }

  void abort(int code) override {
    abortCommunicators();
    host_->abort(code);
  }

private:
  struct Pending {
    cudaEvent_t started = nullptr, done = nullptr;
    cudaStream_t caller = nullptr;
    Clock::time_point startTime;
    std::string what;
  };

  static cudaStream_t handleOf(Stream &stream) {
    return static_cast<CudaStream &>(stream).handle();
  }

  bool single() const { return host_->worldSize() == 1; }

  /// A world of one's gather or scatter: `in` to `out` on the stream.
  static Status copy(const void *in, void *out, int64_t count, DType dtype,
                     Stream &stream) {
    if (in == out || count == 0)
      return okStatus();
    return fromCudaError(
        int(cudaMemcpyAsync(out, in, size_t(count) * dtypeSize(dtype),
                            cudaMemcpyDeviceToDevice, handleOf(stream))),
        "cudaMemcpyAsync(collective of one rank)");
  }

  ncclComm_t comm(int axis) const {
    return axis < 0 || axis >= int(axisComms_.size()) ? world_
                                                      : axisComms_[axis];
  }

  Status check(ncclResult_t result, const CollectiveSite &site) {
    std::string what = "NCCL " + siteText(site);
    return fromNcclResult(int(result), what.c_str());
  }

  /// Queues `issue` (a collective on the communication stream) after the
  /// work queued so far on `stream`.
  template <typename Issue>
  Status start(Stream &stream, const CollectiveSite &site, Handle &out,
               Issue &&issue) {
    Pending p;
    p.caller = handleOf(stream);
    p.what = site.what;
    p.startTime = Clock::now();
    // The events are destroyed on every error return; kept on success.
    struct Events {
      Pending &p;
      bool keep = false;
      ~Events() {
        if (keep)
          return;
        if (p.started)
          cudaEventDestroy(p.started);
        if (p.done)
          cudaEventDestroy(p.done);
      }
    } events{p};
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaEventCreateWithFlags(&p.started, cudaEventDisableTiming)),
        "cudaEventCreateWithFlags"));
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming)),
        "cudaEventCreateWithFlags"));
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaEventRecord(p.started, p.caller)), "cudaEventRecord"));
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaStreamWaitEvent(communication_.handle(), p.started, 0)),
        "cudaStreamWaitEvent"));
    TRAINC_RETURN_IF_ERROR(issue());
    TRAINC_RETURN_IF_ERROR(
        fromCudaError(int(cudaEventRecord(p.done, communication_.handle())),
                      "cudaEventRecord"));
    events.keep = true;
    out = nextHandle_++;
    pending_.emplace(out, p);
    return okStatus();
  }

  /// One communicator per mesh axis: the ranks that differ only in their
  /// coordinate on it.
  Status setAxes(const std::vector<int64_t> &axisSizes) {
    for (ncclComm_t c : axisComms_)
      if (c)
        ncclCommDestroy(c);
    axisComms_.clear();
    if (single())
      return okStatus();
    if (!world_)
      return unavailable("NCCL: the communicators were aborted");
    for (size_t axis = 0; axis < axisSizes.size(); ++axis) {
      int color = 0;
      for (size_t other = 0; other < axisSizes.size(); ++other)
        if (other != axis)
          color = color * int(axisSizes[other]) + coordinate(int(other));
      ncclComm_t c = nullptr;
      TRAINC_RETURN_IF_ERROR(fromNcclResult(
          int(ncclCommSplit(world_, color, coordinate(int(axis)), &c, nullptr)),
          "ncclCommSplit(mesh axis)"));
      axisComms_.push_back(c);
    }
    return okStatus();
  }

  void abortCommunicators() {
    for (ncclComm_t &c : axisComms_)
      if (c) {
        ncclCommAbort(c);
        c = nullptr;
      }
    if (world_) {
      ncclCommAbort(world_);
      world_ = nullptr;
    }
  }

  std::shared_ptr<Collective> host_;
  CudaStream &communication_;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> axisComms_;
  std::map<Handle, Pending> pending_;
  Handle nextHandle_ = 1;
  /// The host collective's (0: wait forever).
  double timeoutSeconds_ = 0;
  double secondsWaiting_ = 0;
};

} // namespace

Status createNcclCollective(std::shared_ptr<Collective> host,
                            CudaStream &communication,
                            std::unique_ptr<Collective> &out) {
  auto collective =
      std::make_unique<NcclCollective>(std::move(host), communication);
  TRAINC_RETURN_IF_ERROR(collective->init());
  out = std::move(collective);
  return okStatus();
}

} // namespace trainc::cuda
