//===- Probe.h - Find a CUDA device and prove the toolchain works ---------===//
//
// probeCuda() answers "is there a usable GPU?" without side effects beyond
// CUDA context creation; runCudaSmokeTest() launches a trainc kernel and a
// cuBLAS GEMM on device 0 and checks their results on the host. Both return
// an `unavailable` Status, never a crash, on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_PROBE_H
#define TRAINC_RUNTIME_CUDA_PROBE_H

#include "base/Status.h"

#include <string>

namespace trainc::cuda {

struct DeviceInfo {
  int deviceCount = 0;
  std::string name; ///< Device 0's name.
  int computeMajor = 0;
  int computeMinor = 0;
};

/// NCCL's version as an integer (e.g. 22809 for 2.28.9). Needs no GPU.
int ncclVersionCode();

/// Fills `out` for device 0; `unavailable` when there is no CUDA device.
Status probeCuda(DeviceInfo &out);

/// Runs a fill kernel and a 2x2 cuBLAS SGEMM on device 0 and checks both.
Status runCudaSmokeTest();

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_PROBE_H
