//===- CudaDevice.cpp - The CUDA device -----------------------------------===//
//
// One device per process (ordinal N of "cuda:N"): buffers are cudaMalloc
// allocations (one per arena, as on the CPU), constants are copied to the
// device once, work is queued in order on the compute stream, and the
// communication stream carries the asynchronous collectives (NCCL,
// NcclCollective.cpp). Kernels are cuda::kernelFor's; the collective
// instructions are cpu/Collectives.cpp's, which copy through this device.
//
// Hangs: on several ranks synchronize() waits at most the run's
// collective timeout (WorldOptions::timeoutSeconds), polling the stream,
// so a collective whose peers never arrive ends in an error instead of a
// process that waits forever (trainc-run then aborts the job). CUDA's
// current device is per thread: every entry point makes this device's GPU
// current first.
//
// Scratch memory (what a few kernels need beside the static plan: cuDNN's
// workspace, sorted indices, partial sums; CudaStream::allocateScratch) is
// stream-ordered, from a pool of the device's own that keeps what it has
// reserved (release threshold UINT64_MAX). CUDA's default pool has
// threshold 0: a stream, event or device synchronize (cuDNN, NCCL and
// cuBLASLt may call one, and --profile waits after every instruction)
// gives its unused memory back to the driver, and the next allocation maps
// it again. So the pool keeps about the most scratch memory ever live at
// once, until an arena's cudaMalloc runs out, which trims it first.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDevice.h"

#include "cpu/Kernels.h"
#include "cuda/CudaStatus.h"
#include "cuda/Kernels.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace trainc::cuda {

Status createNcclCollective(std::shared_ptr<Collective> host,
                            CudaStream &communication,
                            std::unique_ptr<Collective> &out);

namespace {

/// GEMM workspace per stream: what cuBLASLt's heuristics want for large
/// GEMMs on Hopper (32 MiB).
constexpr uint64_t kGemmWorkspaceBytes = 32ull << 20;

std::string bytesText(uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

class CudaBuffer final : public Buffer {
public:
  CudaBuffer(char *data, uint64_t size) : data_(data), size_(size) {}
  ~CudaBuffer() override { cudaFree(data_); }
  char *data() override { return data_; }
  uint64_t size() const override { return size_; }

private:
  char *data_;
  uint64_t size_;
};

/// A memory pool handle, destroyed with its owner. Destroying a pool with
/// allocations outstanding (or frees still queued) releases it once they
/// are freed.
struct ScratchPool {
  cudaMemPool_t pool = nullptr;
  ScratchPool() = default;
  ScratchPool(const ScratchPool &) = delete;
  ScratchPool &operator=(const ScratchPool &) = delete;
  ~ScratchPool() {
    if (pool)
      cudaMemPoolDestroy(pool);
  }

  /// The pool of GPU `ordinal` for scratch memory, keeping what it
  /// reserves (see the file comment); none (null) where the GPU has no
  /// memory pools, whose stream-ordered allocations then fail as before.
  Status create(int ordinal) {
    int supported = 0;
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported,
                                   ordinal)),
        "cudaDeviceGetAttribute(memory pools supported)"));
    if (!supported)
      return okStatus();
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ordinal;
    TRAINC_RETURN_IF_ERROR(fromCudaError(int(cudaMemPoolCreate(&pool, &props)),
                                         "cudaMemPoolCreate(scratch)"));
    uint64_t keep = UINT64_MAX;
    return fromCudaError(int(cudaMemPoolSetAttribute(
                             pool, cudaMemPoolAttrReleaseThreshold, &keep)),
                         "cudaMemPoolSetAttribute(release threshold)");
  }
};

class CudaDevice final : public Device {
public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {}

  Status init(std::shared_ptr<Collective> host) {
    host_ = host;
    TRAINC_RETURN_IF_ERROR(
        CudaStream::create(ordinal_, kGemmWorkspaceBytes, compute_));
    TRAINC_RETURN_IF_ERROR(CudaStream::create(ordinal_, 0, communication_));
    TRAINC_RETURN_IF_ERROR(scratch_.create(ordinal_));
    compute_->setScratchPool(scratch_.pool);
    communication_->setScratchPool(scratch_.pool);
    // A stream that does not finish is a hang only where peers can fail
    // to arrive: on several ranks, after the run's collective timeout.
    double timeout = host->worldSize() > 1 ? host->timeoutSeconds() : 0;
    compute_->setTimeout(timeout);
    communication_->setTimeout(timeout);
    return createNcclCollective(std::move(host), *communication_, collective_);
  }

  std::string name() const override {
    return "cuda:" + std::to_string(ordinal_);
  }
  bool hostVisible() const override { return false; }

  Status allocate(uint64_t bytes, uint64_t alignment,
                  std::unique_ptr<Buffer> &out) override {
    // cudaMalloc aligns to 256 bytes.
    if (alignment > 256 || (alignment && 256 % alignment != 0))
      return invalidArgument("the CUDA device cannot align to " +
                             std::to_string(alignment) + " bytes");
    TRAINC_RETURN_IF_ERROR(compute_->makeCurrent());
    void *memory = nullptr;
    std::string what = "cudaMalloc(" + bytesText(bytes) + ") on " + name();
    cudaError_t err = cudaMalloc(&memory, bytes ? bytes : 1);
    if (err == cudaErrorMemoryAllocation && scratch_.pool) {
      // The scratch pool keeps what it reserved: once the streams' frees
      // are done, give all of it back and try again (an arena is made
      // before the steps, scratch memory during them).
      (void)cudaGetLastError();
      TRAINC_RETURN_IF_ERROR(compute_->synchronize());
      TRAINC_RETURN_IF_ERROR(communication_->synchronize());
      TRAINC_RETURN_IF_ERROR(fromCudaError(
          int(cudaMemPoolTrimTo(scratch_.pool, 0)), "cudaMemPoolTrimTo"));
      err = cudaMalloc(&memory, bytes ? bytes : 1);
    }
    TRAINC_RETURN_IF_ERROR(fromCudaError(int(err), what.c_str()));
    auto buffer =
        std::make_unique<CudaBuffer>(static_cast<char *>(memory), bytes);
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaMemsetAsync(memory, 0, bytes ? bytes : 1, compute_->handle())),
        "cudaMemsetAsync"));
    out = std::move(buffer);
    return okStatus();
  }

  Status importConstants(const char *host, uint64_t bytes,
                         std::unique_ptr<Buffer> &out) override {
    TRAINC_RETURN_IF_ERROR(allocate(bytes, 256, out));
    TRAINC_RETURN_IF_ERROR(copyToDevice(out->data(), host, bytes, *compute_));
    return compute_->synchronize();
  }

  Status createEvent(std::unique_ptr<Event> &out) override {
    std::unique_ptr<CudaEvent> event;
    TRAINC_RETURN_IF_ERROR(CudaEvent::create(event));
    out = std::move(event);
    return okStatus();
  }
  Stream &computeStream() override { return *compute_; }
  Stream &communicationStream() override { return *communication_; }
  Collective &collective() override { return *collective_; }
  Collective &hostCollective() override { return *host_; }

  Status copyToDevice(char *dst, const void *src, uint64_t bytes,
                      Stream &stream) override {
    if (!bytes)
      return okStatus();
    TRAINC_RETURN_IF_ERROR(compute_->makeCurrent());
    return fromCudaError(
        int(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                            static_cast<CudaStream &>(stream).handle())),
        "cudaMemcpyAsync(host to device)");
  }
  Status copyToHost(void *dst, const char *src, uint64_t bytes,
                    Stream &stream) override {
    if (!bytes)
      return okStatus();
    TRAINC_RETURN_IF_ERROR(compute_->makeCurrent());
    return fromCudaError(
        int(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost,
                            static_cast<CudaStream &>(stream).handle())),
        "cudaMemcpyAsync(device to host)");
  }
  Status copy(char *dst, const char *src, uint64_t bytes,
              Stream &stream) override {
    if (!bytes || dst == src)
      return okStatus();
    TRAINC_RETURN_IF_ERROR(compute_->makeCurrent());
    cudaStream_t s = static_cast<CudaStream &>(stream).handle();
    bool overlap = dst < src + bytes && src < dst + bytes;
    if (!overlap)
      return fromCudaError(
          int(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)),
          "cudaMemcpyAsync(device to device)");
    // cudaMemcpy forbids overlapping ranges: through a temporary.
    auto &on = static_cast<CudaStream &>(stream);
    void *staging = nullptr;
    TRAINC_RETURN_IF_ERROR(
        on.allocateScratch(bytes, staging, "an overlapping copy's staging"));
    Status st = fromCudaError(
        int(cudaMemcpyAsync(staging, src, bytes, cudaMemcpyDeviceToDevice, s)),
        "cudaMemcpyAsync(device to device)");
    if (st.ok())
      st = fromCudaError(int(cudaMemcpyAsync(dst, staging, bytes,
                                             cudaMemcpyDeviceToDevice, s)),
                         "cudaMemcpyAsync(device to device)");
    on.freeScratch(staging);
    return st;
  }

  Status launch(const KernelCall &call) override {
    KernelFn kernel = kernelFor(call.op);
    if (!kernel)
      return Status(StatusCode::kUnimplemented,
                    std::string(opcodeName(call.op)) +
                        " has no kernel on the CUDA device");
    TRAINC_RETURN_IF_ERROR(compute_->makeCurrent());
    if (call.context && call.context->stream)
      return kernel(call);
    // A call from outside a session (kernel tests): the compute stream.
    KernelContext context;
    if (call.context)
      context = *call.context;
    context.device = this;
    context.stream = compute_.get();
    context.collective = collective_.get();
    KernelCall withContext = call;
    withContext.context = &context;
    return kernel(withContext);
  }

private:
  int ordinal_;
  /// Declared before the streams, so destroyed after them.
  ScratchPool scratch_;
  std::unique_ptr<CudaStream> compute_, communication_;
  std::unique_ptr<Collective> collective_;
  std::shared_ptr<Collective> host_;
};

} // namespace

//===--- CudaStream and CudaEvent -----------------------------------------===//

Status CudaStream::create(int ordinal, uint64_t workspaceBytes,
                          std::unique_ptr<CudaStream> &out) {
  std::unique_ptr<CudaStream> s(new CudaStream());
  s->ordinal_ = ordinal;
  TRAINC_RETURN_IF_ERROR(s->makeCurrent());
  TRAINC_RETURN_IF_ERROR(fromCudaError(
      int(cudaStreamCreateWithFlags(&s->stream_, cudaStreamNonBlocking)),
      "cudaStreamCreateWithFlags"));
  TRAINC_RETURN_IF_ERROR(
      fromCublasStatus(int(cublasLtCreate(&s->blasLt_)), "cublasLtCreate"));
  if (workspaceBytes) {
    TRAINC_RETURN_IF_ERROR(
        fromCudaError(int(cudaMalloc(&s->workspace_, workspaceBytes)),
                      "cudaMalloc(GEMM workspace)"));
    s->workspaceBytes_ = workspaceBytes;
  }
  void *fault = nullptr;
  TRAINC_RETURN_IF_ERROR(fromCudaError(
      int(cudaHostAlloc(&fault, sizeof(KernelFault), cudaHostAllocMapped)),
      "cudaHostAlloc(fault record)"));
  s->hostFault_ = static_cast<KernelFault *>(fault);
  std::memset(s->hostFault_, 0, sizeof(KernelFault));
  void *devicePointer = nullptr;
  TRAINC_RETURN_IF_ERROR(
      fromCudaError(int(cudaHostGetDevicePointer(&devicePointer, fault, 0)),
                    "cudaHostGetDevicePointer(fault record)"));
  s->deviceFault_ = static_cast<KernelFault *>(devicePointer);
  out = std::move(s);
  return okStatus();
}

Status CudaStream::makeCurrent() const {
  return fromCudaError(int(cudaSetDevice(ordinal_)), "cudaSetDevice");
}

CudaStream::~CudaStream() {
  // No synchronize first: after a hang it would never return. Destroying
  // a stream and freeing memory wait for the work queued on them.
  cudaSetDevice(ordinal_);
  if (blasLt_)
    cublasLtDestroy(blasLt_);
  if (workspace_)
    cudaFree(workspace_);
  if (hostFault_)
    cudaFreeHost(hostFault_);
  if (stream_)
    cudaStreamDestroy(stream_);
}

cudaError_t CudaStream::tryAllocateScratch(uint64_t bytes, void *&out) const {
  size_t size = bytes < 1 ? 1 : size_t(bytes);
  cudaError_t err =
      scratchPool_ ? cudaMallocFromPoolAsync(&out, size, scratchPool_, stream_)
                   : cudaMallocAsync(&out, size, stream_);
  if (err != cudaSuccess) {
    // Not sticky: cleared, or the next launch's check would report it.
    (void)cudaGetLastError();
    out = nullptr;
  }
  return err;
}

Status CudaStream::allocateScratch(uint64_t bytes, void *&out,
                                   const char *what) const {
  std::string message = std::string(what) + " (" + bytesText(bytes) + ")";
  return fromCudaError(int(tryAllocateScratch(bytes, out)), message.c_str());
}

void CudaStream::freeScratch(void *memory) const {
  if (memory)
    cudaFreeAsync(memory, stream_);
}

Status CudaStream::record(Event &event) {
  return fromCudaError(
      int(cudaEventRecord(static_cast<CudaEvent &>(event).handle(), stream_)),
      "cudaEventRecord");
}

Status CudaStream::wait(const Event &event) {
  return fromCudaError(
      int(cudaStreamWaitEvent(
          stream_, static_cast<const CudaEvent &>(event).handle(), 0)),
      "cudaStreamWaitEvent");
}

Status CudaStream::synchronize() {
  TRAINC_RETURN_IF_ERROR(makeCurrent());
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  // Spin briefly (most waits are short), then sleep between polls.
  for (int polls = 0;; ++polls) {
    cudaError_t err = cudaStreamQuery(stream_);
    if (err == cudaSuccess)
      break;
    if (err != cudaErrorNotReady)
      return fromCudaError(int(err), "cudaStreamQuery");
    // Not ready is also recorded as the thread's last error: clear it, or
    // the next launch's check would report it.
    (void)cudaGetLastError();
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (timeoutSeconds_ > 0 && waited > timeoutSeconds_)
      return Status(StatusCode::kUnavailable,
                    "the CUDA stream's work did not finish within " +
                        std::to_string(timeoutSeconds_) +
                        " s (a collective whose peers did not arrive, or a "
                        "kernel that does not end)");
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (hostFault_->kind == int32_t(FaultKind::kNone))
    return okStatus();
  KernelFault fault = *hostFault_;
  std::memset(hostFault_, 0, sizeof(KernelFault));
  return invalidArgument(describeFault(fault));
}

Status CudaEvent::create(std::unique_ptr<CudaEvent> &out) {
  std::unique_ptr<CudaEvent> e(new CudaEvent());
  TRAINC_RETURN_IF_ERROR(fromCudaError(
      int(cudaEventCreateWithFlags(&e->event_, cudaEventDisableTiming)),
      "cudaEventCreateWithFlags"));
  out = std::move(e);
  return okStatus();
}

CudaEvent::~CudaEvent() {
  if (event_)
    cudaEventDestroy(event_);
}

std::string describeFault(const KernelFault &fault) {
  std::string where = "instruction " + std::to_string(fault.instruction) +
                      " (" + opcodeName(Opcode(fault.opcode)) + "): ";
  switch (FaultKind(fault.kind)) {
  case FaultKind::kIndexOutOfRange:
    return where + "index " + std::to_string(fault.value) +
           " is out of range for an axis of size " +
           std::to_string(fault.bound);
  case FaultKind::kTargetOutOfRange:
    return where + "target " + std::to_string(fault.value) +
           " is outside [0, " + std::to_string(fault.bound) + ")";
  case FaultKind::kIntegerDivisionByZero:
    return where + "integer division by zero";
  case FaultKind::kIntegerOverflow:
    return where + "integer overflow in " + std::to_string(fault.value) +
           " / -1";
  case FaultKind::kNone:
    break;
  }
  return where + "unknown kernel fault " + std::to_string(fault.kind);
}

Status createCudaDevice(int ordinal, std::shared_ptr<Collective> hostCollective,
                        std::shared_ptr<Device> &out) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return unavailable(std::string("no CUDA device: cudaGetDeviceCount: ") +
                       cudaGetErrorString(err));
  }
  if (ordinal < 0) {
    // One GPU per rank of the machine: the launcher's local rank.
    int local = 0;
    for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                            "MPI_LOCALRANKID", "LOCAL_RANK"})
      if (const char *value = std::getenv(var)) {
        local = std::atoi(value);
        break;
      }
    ordinal = count > 0 ? local % count : 0;
  }
  if (ordinal >= count)
    return unavailable("no CUDA device cuda:" + std::to_string(ordinal) +
                       ": this machine has " + std::to_string(count));
  auto device = std::make_shared<CudaDevice>(ordinal);
  TRAINC_RETURN_IF_ERROR(device->init(std::move(hostCollective)));
  out = std::move(device);
  return okStatus();
}

} // namespace trainc::cuda
