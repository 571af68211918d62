//===- CudaStatus.cpp - CUDA, cuBLAS and NCCL errors as Status ------------===//

#include "cuda/CudaStatus.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace trainc::cuda {

Status fromCudaError(int cudaError, const char *what) {
  auto err = static_cast<cudaError_t>(cudaError);
  if (err == cudaSuccess)
    return okStatus();
  std::string msg = std::string(what) + " failed: " + cudaGetErrorName(err) +
                    " (" + cudaGetErrorString(err) + ")";
  // No driver or no device is an environment fact, not a trainc bug.
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
    return unavailable("no CUDA device: " + msg);
  return internalError(msg);
}

Status fromCublasStatus(int cublasStatus, const char *what) {
  auto st = static_cast<cublasStatus_t>(cublasStatus);
  if (st == CUBLAS_STATUS_SUCCESS)
    return okStatus();
  std::string msg = std::string(what) + " failed: " + cublasGetStatusName(st) +
                    " (" + cublasGetStatusString(st) + ")";
  if (st == CUBLAS_STATUS_NOT_INITIALIZED)
    return unavailable("no CUDA device: " + msg);
  return internalError(msg);
}

Status fromNcclResult(int ncclResult, const char *what) {
  auto res = static_cast<ncclResult_t>(ncclResult);
  if (res == ncclSuccess)
    return okStatus();
  std::string msg = std::string(what) + " failed: " + ncclGetErrorString(res);
  if (res == ncclSystemError || res == ncclRemoteError)
    return unavailable(msg);
  return internalError(msg);
}

} // namespace trainc::cuda
