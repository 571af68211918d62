//===- CpuDevice.cpp - The CPU device -------------------------------------===//
//
// Buffers are aligned host allocations, constants are read in place, and
// work runs in order on the calling thread (kernels split it over the
// runtime's thread pool, base/Parallel.h), so streams and events are
// already complete when recorded. Kernels are cpu::kernelFor's.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include "cpu/Kernels.h"

#include <cstdlib>
#include <cstring>

namespace trainc {
namespace {

class HostBuffer final : public Buffer {
public:
  HostBuffer(char *data, uint64_t size, bool owned)
      : data_(data), size_(size), owned_(owned) {}
  ~HostBuffer() override {
    if (owned_)
      std::free(data_);
  }
  char *data() override { return data_; }
  uint64_t size() const override { return size_; }

private:
  char *data_;
  uint64_t size_;
  bool owned_;
};

class InOrderEvent final : public Event {};

/// Work is done when it is queued: recording, waiting and synchronizing
/// have nothing to do.
class InOrderStream final : public Stream {
public:
  Status record(Event &) override { return okStatus(); }
  Status wait(const Event &) override { return okStatus(); }
  Status synchronize() override { return okStatus(); }
};

class CpuDevice final : public Device {
public:
  explicit CpuDevice(std::shared_ptr<Collective> collective)
      : collective_(std::move(collective)) {}

  std::string name() const override { return "cpu"; }
  bool hostVisible() const override { return true; }

  Status allocate(uint64_t bytes, uint64_t alignment,
                  std::unique_ptr<Buffer> &out) override {
    uint64_t size = std::max<uint64_t>(bytes, 1);
    size = (size + alignment - 1) / alignment * alignment;
    void *memory = std::aligned_alloc(alignment, size);
    if (!memory)
      return Status(StatusCode::kUnavailable, "cannot allocate " +
                                                  std::to_string(bytes) +
                                                  " bytes on the CPU");
    std::memset(memory, 0, size);
    out = std::make_unique<HostBuffer>(static_cast<char *>(memory), bytes,
                                       /*owned=*/true);
    return okStatus();
  }
  Status importConstants(const char *host, uint64_t bytes,
                         std::unique_ptr<Buffer> &out) override {
    out = std::make_unique<HostBuffer>(const_cast<char *>(host), bytes,
                                       /*owned=*/false);
    return okStatus();
  }
  Status createEvent(std::unique_ptr<Event> &out) override {
    out = std::make_unique<InOrderEvent>();
    return okStatus();
  }
  Stream &computeStream() override { return compute_; }
  Stream &communicationStream() override { return communication_; }
  Collective &collective() override { return *collective_; }

  Status copyToDevice(char *dst, const void *src, uint64_t bytes,
                      Stream &) override {
    std::memcpy(dst, src, bytes);
    return okStatus();
  }
  Status copyToHost(void *dst, const char *src, uint64_t bytes,
                    Stream &) override {
    std::memcpy(dst, src, bytes);
    return okStatus();
  }
  Status copy(char *dst, const char *src, uint64_t bytes, Stream &) override {
    std::memmove(dst, src, bytes);
    return okStatus();
  }
  Status launch(const KernelCall &call) override {
    return cpu::runCpuKernel(call);
  }

private:
  InOrderStream compute_, communication_;
  std::shared_ptr<Collective> collective_;
};

} // namespace

std::shared_ptr<Device>
createCpuDevice(std::shared_ptr<Collective> collective) {
  return std::make_shared<CpuDevice>(
      collective ? std::move(collective)
                 : std::shared_ptr<Collective>(createLocalCollective()));
}

} // namespace trainc
