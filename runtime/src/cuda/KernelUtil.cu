//===- KernelUtil.cu - Shared helpers of the CUDA kernels ----------------===//

#include "cuda/KernelUtil.cuh"

namespace trainc::cuda {

Status dimsOf(const KernelCall &call, const TensorRef &t, Dims &out) {
  if (t.rank > kMaxRank)
    return Status(
        StatusCode::kUnimplemented,
        std::string(opcodeName(call.op)) + ": rank " + std::to_string(t.rank) +
            " is above the CUDA kernels' limit of " + std::to_string(kMaxRank));
  out = Dims();
  out.rank = t.rank;
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    out.size[d] = t.dims[d];
    out.stride[d] = stride;
    stride *= t.dims[d];
  }
  return okStatus();
}

CudaStream &streamOf(const KernelCall &call) {
  // CudaDevice::launch gives every call a context with one of its streams.
  return static_cast<CudaStream &>(*call.context->stream);
}

FaultSite faultSiteOf(const KernelCall &call) {
  return FaultSite{streamOf(call).deviceFault(), int32_t(call.op),
                   call.context->instruction};
}

Status checkLaunch(const KernelCall &call, const char *kernel) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess)
    return okStatus();
  std::string what = std::string(opcodeName(call.op)) + ": " + kernel;
  return fromCudaError(int(err), what.c_str());
}

Status unsupported(const KernelCall &call, DType t) {
  return Status(StatusCode::kUnimplemented,
                std::string(opcodeName(call.op)) + ": dtype " + dtypeName(t) +
                    " is not supported on the CUDA device");
}

Status kernelError(const KernelCall &call, const std::string &message) {
  return invalidArgument(std::string(opcodeName(call.op)) + ": " + message);
}

Scratch::~Scratch() {
  if (data_)
    stream_->freeScratch(data_);
}

Status Scratch::allocate(const KernelCall &call, uint64_t bytes) {
  stream_ = &streamOf(call);
  std::string what = std::string(opcodeName(call.op)) + ": scratch memory";
  return stream_->allocateScratch(bytes, data_, what.c_str());
}

} // namespace trainc::cuda
