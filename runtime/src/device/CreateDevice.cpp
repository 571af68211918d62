//===- CreateDevice.cpp - Devices by name ---------------------------------===//
//
// "cpu" is always built; "cuda" (one GPU per rank of the machine: the
// launcher's local rank modulo the GPUs present) and "cuda:N" when the
// runtime was built with CUDA (TRAINC_ENABLE_CUDA), from the library
// libtrainc_cuda.so, opened on first use (cuda/Plugin.h); "auto": "cuda"
// when it is built and a GPU is present, else "cpu".
//
//===----------------------------------------------------------------------===//

#include "cpu/Gemm.h"
#include "device/Device.h"

#ifdef TRAINC_CUDA_PLUGIN
#include "cuda/Plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>
#endif

namespace trainc {

std::shared_ptr<Device> createCpuDevice(std::shared_ptr<Collective> collective);

namespace {

#ifdef TRAINC_CUDA_PLUGIN
using CreateCudaDevice = decltype(&trainc_cuda_plugin_create_device);

/// Opens libtrainc_cuda.so (cuda/Plugin.h) once per process and returns
/// its factory, or why it cannot: no CUDA driver (then no GPU, and the
/// CUDA libraries are not even loaded), no library, or one of another
/// build. Where it looks: $TRAINC_CUDA_PLUGIN alone when set (a path the
/// user names is never silently replaced by another library); else beside
/// the binary or library holding this code and in ../lib (../_lib in the
/// Python package) from there, the build tree, then the loader's search
/// path.
Status cudaPlugin(CreateCudaDevice &out) {
  static std::mutex mutex;
  static CreateCudaDevice create = nullptr;
  static Status failure = okStatus();
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried) {
    tried = true;
    failure = [&]() -> Status {
      if (!dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL))
        return unavailable("no CUDA device: the CUDA driver (libcuda.so.1) "
                           "is not installed");
      const char *chosen = std::getenv("TRAINC_CUDA_PLUGIN");
      bool named = chosen && *chosen;
      std::vector<std::string> candidates;
      if (named) {
        candidates.push_back(chosen);
      } else {
        Dl_info self{};
        if (dladdr(reinterpret_cast<void *>(&cudaPlugin), &self) &&
            self.dli_fname) {
          std::string dir = self.dli_fname;
          dir = dir.find('/') == std::string::npos
                    ? "."
                    : dir.substr(0, dir.rfind('/'));
          candidates.push_back(dir + "/libtrainc_cuda.so");
          candidates.push_back(dir + "/../lib/libtrainc_cuda.so");
          // The Python package: tools in trainc/_bin, libraries in
          // trainc/_lib.
          candidates.push_back(dir + "/../_lib/libtrainc_cuda.so");
        }
        candidates.push_back(TRAINC_CUDA_PLUGIN_BUILD_PATH);
        candidates.push_back("libtrainc_cuda.so");
      }
      std::string tried;
      for (const std::string &path : candidates) {
        void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
          const char *why = dlerror();
          tried += "\n  " + path + ": " + (why ? why : "cannot be opened");
          continue;
        }
        auto abi = reinterpret_cast<int (*)()>(
            dlsym(handle, "trainc_cuda_plugin_abi"));
        int expected = cuda::kPluginAbi * 1000000 + TRAINC_PROJECT_VERSION_CODE;
        if (!abi) {
          tried += "\n  " + path +
                   ": not a trainc CUDA device library (no "
                   "trainc_cuda_plugin_abi)";
          dlclose(handle);
          continue;
        }
        if (int got = abi(); got != expected) {
          tried += "\n  " + path + ": built by another version of trainc (" +
                   std::to_string(got) + ", this trainc needs " +
                   std::to_string(expected) + ")";
          dlclose(handle);
          continue;
        }
        create = reinterpret_cast<CreateCudaDevice>(
            dlsym(handle, "trainc_cuda_plugin_create_device"));
        if (create)
          return okStatus();
        tried += "\n  " + path + ": has no device factory";
        dlclose(handle);
      }
      return unavailable(std::string("the CUDA device library ") +
                         (named ? "$TRAINC_CUDA_PLUGIN" : "libtrainc_cuda.so") +
                         " was not found or could not be loaded:" + tried);
    }();
  }
  out = create;
  return failure;
}
#endif

/// The ordinal of "cuda" (-1: chosen by local rank) or "cuda:N"; false for
/// any other name.
bool parseCudaName(const std::string &name, int &ordinal) {
  if (name == "cuda") {
    ordinal = -1;
    return true;
  }
  if (name.rfind("cuda:", 0) != 0 || name.size() == 5 || name.size() > 8)
    return false;
  ordinal = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9')
      return false;
    ordinal = ordinal * 10 + (c - '0');
  }
  return true;
}

} // namespace

bool haveCuda() {
#ifdef TRAINC_CUDA_PLUGIN
  return true;
#else
  return false;
#endif
}

Status createDevice(const std::string &name, std::shared_ptr<Device> &out) {
  return createDevice(name, nullptr, out);
}

Status createDevice(const std::string &name,
                    std::shared_ptr<Collective> collective,
                    std::shared_ptr<Device> &out) {
  if (name == "cpu") {
    TRAINC_RETURN_IF_ERROR(cpu::loadGemm());
    out = createCpuDevice(std::move(collective));
    return okStatus();
  }
  if (name == "auto") {
    // The GPU when there is one; any other failure of it is an error.
    if (haveCuda()) {
      Status s = createDevice("cuda", collective, out);
      if (s.code() != StatusCode::kUnavailable)
        return s;
    }
    return createDevice("cpu", std::move(collective), out);
  }
  int ordinal = 0;
  if (parseCudaName(name, ordinal)) {
#ifdef TRAINC_CUDA_PLUGIN
    CreateCudaDevice create = nullptr;
    TRAINC_RETURN_IF_ERROR(cudaPlugin(create));
    if (!collective)
      collective = createLocalCollective();
    Status status = okStatus();
    create(ordinal, &collective, &out, &status);
    return status;
#else
    return Status(StatusCode::kUnavailable,
                  "device '" + name +
                      "': this runtime was built without CUDA (configure "
                      "with -DTRAINC_ENABLE_CUDA=ON where the CUDA toolkit "
                      "and NCCL are installed)");
#endif
  }
  return Status(StatusCode::kNotFound,
                "device '" + name + "' is not available: this runtime has " +
                    (haveCuda() ? "'cpu', 'cuda', 'cuda:N' and 'auto'"
                                : "'cpu' and 'auto'"));
}

} // namespace trainc
