//===- LocalCollective.cpp - The collective of one process ----------------===//
//
// World size 1: a sum over one rank is the value itself, a gather of one
// rank is a copy. For host-visible memory (the CPU device); a device whose
// memory the host cannot touch copies on its own stream instead.
// Collectives over several ranks (MPI, NCCL) implement the same interface.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include <cstring>

namespace trainc {
namespace {

class LocalCollective final : public Collective {
public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  Status allReduceSum(void *, int64_t, DType, Stream &) override {
    return okStatus();
  }
  Status allGather(const void *in, void *out, int64_t count, DType dtype,
                   Stream &) override {
    if (in != out)
      std::memmove(out, in, size_t(count) * dtypeSize(dtype));
    return okStatus();
  }
  Status reduceScatterSum(const void *in, void *out, int64_t count, DType dtype,
                          Stream &) override {
    if (in != out)
      std::memmove(out, in, size_t(count) * dtypeSize(dtype));
    return okStatus();
  }
};

} // namespace

std::unique_ptr<Collective> createLocalCollective() {
  return std::make_unique<LocalCollective>();
}

} // namespace trainc
