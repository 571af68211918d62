//===- Plugin.h - The CUDA device as a library loaded on demand -*- C++ -*-===//
//
// The CUDA device lives in its own shared library, libtrainc_cuda.so, which
// links cudart, cuBLASLt and NCCL; the runtime opens it (dlopen) only when
// a CUDA device is asked for and a CUDA driver is installed. A runtime
// built with CUDA therefore starts as fast and as small as one without
// (loading cuBLASLt and NCCL costs about 0.16 s and 220 MB of resident
// memory per process), and runs on machines without the CUDA libraries.
//
// The library exports two C symbols: the ABI version below and the device
// factory. Both sides are built from one tree, so C++ types (Status,
// shared_ptr, the Device interface) pass between them; the version guards
// against a library from another build.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_PLUGIN_H
#define TRAINC_RUNTIME_CUDA_PLUGIN_H

#include "device/Device.h"

#include <memory>

namespace trainc::cuda {

/// Changes whenever Device.h, KernelContext.h, Status or this factory
/// change in a way the two sides must agree on (and with the project
/// version, which the factory also checks).
constexpr int kPluginAbi = 1;

} // namespace trainc::cuda

extern "C" {
/// kPluginAbi * 1000000 + the project version (major * 10000 + minor * 100
/// + patch) the library was built with.
int trainc_cuda_plugin_abi(void);
/// createCudaDevice (CudaDevice.h) behind a C name.
void trainc_cuda_plugin_create_device(
    int ordinal, const std::shared_ptr<trainc::Collective> *hostCollective,
    std::shared_ptr<trainc::Device> *out, trainc::Status *status);
}

#endif // TRAINC_RUNTIME_CUDA_PLUGIN_H
