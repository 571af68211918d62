//===- Probe.cu - Find a CUDA device and prove the toolchain works --------===//

#include "cuda/CudaStatus.h"
#include "cuda/Probe.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cmath>
#include <string>

namespace trainc::cuda {
namespace {

/// out[i] = a * i + b, for i < n.
__global__ void affineIotaKernel(float *out, int n, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = a * static_cast<float>(i) + b;
}

/// Frees device memory and the cuBLAS handle on every exit path.
struct SmokeResources {
  float *buffer = nullptr;
  cublasHandle_t blas = nullptr;
  ~SmokeResources() {
    if (blas)
      cublasDestroy(blas);
    if (buffer)
      cudaFree(buffer);
  }
};

} // namespace

int ncclVersionCode() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess)
    return 0;
  return version;
}

Status probeCuda(DeviceInfo &out) {
  // Without a device, cudaGetDeviceCount fails and leaves the count as is.
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError(); // Clear the sticky-free error so later calls are clean.
    return unavailable(std::string("no CUDA device: cudaGetDeviceCount: ") +
                       cudaGetErrorString(err));
  }
  if (count == 0)
    return unavailable("no CUDA device: cudaGetDeviceCount returned 0");
  cudaDeviceProp prop{};
  TRAINC_RETURN_IF_ERROR(fromCudaError(cudaGetDeviceProperties(&prop, 0),
                                       "cudaGetDeviceProperties"));
  out.deviceCount = count;
  out.name = prop.name;
  out.computeMajor = prop.major;
  out.computeMinor = prop.minor;
  return okStatus();
}

Status runCudaSmokeTest() {
  DeviceInfo info;
  TRAINC_RETURN_IF_ERROR(probeCuda(info));
  SmokeResources res;
  constexpr int kN = 256;
  TRAINC_RETURN_IF_ERROR(fromCudaError(
      cudaMalloc(&res.buffer, (kN + 4) * sizeof(float)), "cudaMalloc"));
  affineIotaKernel<<<(kN + 127) / 128, 128>>>(res.buffer, kN, 0.5f, 1.0f);
  TRAINC_RETURN_IF_ERROR(
      fromCudaError(cudaGetLastError(), "affineIotaKernel launch"));

  // C = A * B with A = [[1, 1.5], [2, 2.5]] and B = the identity
  // (column-major), taken from the iota buffer's first entries: 1, 1.5, 2, 2.5.
  TRAINC_RETURN_IF_ERROR(
      fromCublasStatus(cublasCreate(&res.blas), "cublasCreate"));
  const float identity[4] = {1, 0, 0, 1};
  float *b = res.buffer + kN; // 4 spare floats after the iota.
  TRAINC_RETURN_IF_ERROR(fromCudaError(
      cudaMemcpy(b, identity, sizeof(identity), cudaMemcpyHostToDevice),
      "cudaMemcpy(identity)"));
  float *c = res.buffer + 8; // Overwrite iota entries 8..11 with C.
  const float alpha = 1.0f, beta = 0.0f;
  TRAINC_RETURN_IF_ERROR(
      fromCublasStatus(cublasSgemm(res.blas, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2,
                                   &alpha, res.buffer, 2, b, 2, &beta, c, 2),
                       "cublasSgemm"));

  float host[kN];
  TRAINC_RETURN_IF_ERROR(fromCudaError(
      cudaMemcpy(host, res.buffer, sizeof(host), cudaMemcpyDeviceToHost),
      "cudaMemcpy(result)"));
  for (int i = 0; i < kN; ++i) {
    float expected =
        (i >= 8 && i < 12) ? 0.5f * (i - 8) + 1.0f : 0.5f * i + 1.0f;
    if (host[i] != expected)
      return internalError("CUDA smoke test: element " + std::to_string(i) +
                           " is " + std::to_string(host[i]) + ", expected " +
                           std::to_string(expected));
  }
  return okStatus();
}

} // namespace trainc::cuda
