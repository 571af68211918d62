//===- Plugin.cpp - The exported entry points of libtrainc_cuda.so --------===//

#include "cuda/Plugin.h"

#include "cuda/CudaDevice.h"

#define TRAINC_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" TRAINC_PLUGIN_EXPORT int trainc_cuda_plugin_abi(void) {
  return trainc::cuda::kPluginAbi * 1000000 + TRAINC_PROJECT_VERSION_CODE;
}

extern "C" TRAINC_PLUGIN_EXPORT void trainc_cuda_plugin_create_device(
    int ordinal, const std::shared_ptr<trainc::Collective> *hostCollective,
    std::shared_ptr<trainc::Device> *out, trainc::Status *status) {
  *status = trainc::cuda::createCudaDevice(ordinal, *hostCollective, *out);
}
