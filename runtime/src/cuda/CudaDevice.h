//===- CudaDevice.h - The CUDA device's streams, for its kernels -*- C++
//-*-===//
//
// What a CUDA kernel family needs of the device beyond device/Device.h: the
// CUDA stream of its call (with the stream's cuBLASLt handle and GEMM
// workspace) and the fault record where a kernel reports a data-dependent
// error (an index out of range, an integer division by zero).
//
// Kernels cannot return a Status: the first failing thread writes a
// KernelFault into mapped host memory and the work goes on; when the host
// next synchronizes the stream (end of a step, before reading an output),
// synchronize() turns the record into an error Status naming the
// instruction, its opcode and the offending value, as the CPU kernel's
// message would. So a bad index stops the run at the step it occurred in,
// never silently.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_CUDADEVICE_H
#define TRAINC_RUNTIME_CUDA_CUDADEVICE_H

#include "device/Device.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace trainc::cuda {

/// Why a kernel failed on data.
enum class FaultKind : int32_t {
  kNone = 0,
  /// `value` is an index outside [-bound, bound) (gather, scatter_add).
  kIndexOutOfRange = 1,
  /// `value` is a class index outside [0, bound) (softmax_cross_entropy).
  kTargetOutOfRange = 2,
  /// An integer division by zero (div).
  kIntegerDivisionByZero = 3,
  /// An integer division whose quotient overflows (`value` / -1, value the
  /// type's minimum).
  kIntegerOverflow = 4,
};

/// The first data-dependent failure on a stream since it was last
/// synchronized. Lives in mapped host memory: kernels write it, the host
/// reads it after synchronizing.
struct KernelFault {
  int32_t kind;
  int32_t opcode;
  int64_t instruction;
  int64_t value;
  int64_t bound;
};

/// Where a kernel reports its fault: the record and the call it serves
/// (passed to kernels by value).
struct FaultSite {
  KernelFault *record;
  int32_t opcode;
  int64_t instruction;
};

class CudaStream final : public Stream {
public:
  /// A non-blocking stream on GPU `ordinal` (made current), with a
  /// cuBLASLt handle, `workspaceBytes` of GEMM workspace and a fault record.
  static Status create(int ordinal, uint64_t workspaceBytes,
                       std::unique_ptr<CudaStream> &out);
  ~CudaStream() override;

  Status record(Event &event) override;
  Status wait(const Event &event) override;
  /// Waits for the stream's work, then reports (and clears) a kernel fault.
  Status synchronize() override;

  cudaStream_t handle() const { return stream_; }
  cublasLtHandle_t blasLt() const { return blasLt_; }
  void *gemmWorkspace() const { return workspace_; }
  uint64_t gemmWorkspaceBytes() const { return workspaceBytes_; }
  /// The fault record, as kernels address it.
  KernelFault *deviceFault() const { return deviceFault_; }
  /// How long synchronize() waits before it reports a hang (0: forever).
  void setTimeout(double seconds) { timeoutSeconds_ = seconds; }
  /// Makes this stream's GPU the calling thread's current device (CUDA's
  /// current device is per thread; every entry point calls it).
  Status makeCurrent() const;

  /// `bytes` (at least 1) of stream-ordered scratch memory in `out`, from
  /// the device's scratch pool (CUDA's default pool where the GPU has no
  /// memory pools); `what` names the use in the error. Give it back with
  /// freeScratch, which frees it after the work queued before that call.
  Status allocateScratch(uint64_t bytes, void *&out, const char *what) const;
  /// allocateScratch's CUDA error, cleared from the thread's last error
  /// (out null on failure), for a caller that handles running out itself.
  cudaError_t tryAllocateScratch(uint64_t bytes, void *&out) const;
  void freeScratch(void *memory) const;
  /// The pool allocateScratch takes from (null: CUDA's default pool). The
  /// device owns it and outlives its streams.
  void setScratchPool(cudaMemPool_t pool) { scratchPool_ = pool; }

private:
  CudaStream() = default;
  int ordinal_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blasLt_ = nullptr;
  void *workspace_ = nullptr;
  uint64_t workspaceBytes_ = 0;
  KernelFault *hostFault_ = nullptr;
  KernelFault *deviceFault_ = nullptr;
  double timeoutSeconds_ = 0;
  cudaMemPool_t scratchPool_ = nullptr;
};

class CudaEvent final : public Event {
public:
  static Status create(std::unique_ptr<CudaEvent> &out);
  ~CudaEvent() override;
  cudaEvent_t handle() const { return event_; }

private:
  cudaEvent_t event_ = nullptr;
};

/// The CUDA device with ordinal `ordinal` (-1: the process's local rank
/// modulo the number of GPUs, so ranks on one machine take one GPU each)
/// whose ranks communicate through
/// `hostCollective` (MPI across processes, or one rank): collectives then
/// run over NCCL, bootstrapped through it. `unavailable` without a GPU.
Status createCudaDevice(int ordinal, std::shared_ptr<Collective> hostCollective,
                        std::shared_ptr<Device> &out);

/// The message of a fault record (for synchronize()).
std::string describeFault(const KernelFault &fault);

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_CUDADEVICE_H
