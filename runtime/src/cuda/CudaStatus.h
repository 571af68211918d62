//===- CudaStatus.h - The one place CUDA library errors become Status -----===//
//
// Every CUDA runtime, cuBLAS and NCCL return code is turned into a
// trainc::Status here, so messages look the same wherever they arise.
// This header is plain C++: it declares the error codes as ints so that
// callers need not include the CUDA headers.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_CUDASTATUS_H
#define TRAINC_RUNTIME_CUDA_CUDASTATUS_H

#include "base/Status.h"

namespace trainc::cuda {

/// `what` names the call that failed, e.g. "cudaMalloc(1 MiB)".
Status fromCudaError(int cudaError, const char *what);
Status fromCublasStatus(int cublasStatus, const char *what);
Status fromNcclResult(int ncclResult, const char *what);

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_CUDASTATUS_H
