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
  Status setMesh(const std::vector<int64_t> &axisSizes, uint64_t) override {
    for (int64_t size : axisSizes)
      if (size != 1)
        return invalidArgument(
            "this executable runs on a mesh of several ranks, but this "
            "process was not started by an MPI launcher: run it with "
            "mpirun -np <ranks>");
    return okStatus();
  }
  int coordinate(int) const override { return 0; }
  Status allReduceSum(int, void *, int64_t, DType, Stream &,
                      const CollectiveSite &) override {
    return okStatus();
  }
  Status reduceScatterSum(int, const void *in, void *out, int64_t count,
                          DType dtype, Stream &,
                          const CollectiveSite &) override {
    if (in != out)
      std::memmove(out, in, size_t(count) * dtypeSize(dtype));
    return okStatus();
  }
  Status allGather(int, const void *in, void *out, int64_t count, DType dtype,
                   Stream &, const CollectiveSite &) override {
    if (in != out)
      std::memmove(out, in, size_t(count) * dtypeSize(dtype));
    return okStatus();
  }
  // One rank: a start does the whole (copying) work; finish has none left.
  Status startAllReduceSum(int, void *, int64_t, DType, Stream &,
                           const CollectiveSite &, Handle &out) override {
    out = 0;
    return okStatus();
  }
  Status startReduceScatterSum(int axis, const void *in, void *out,
                               int64_t count, DType dtype, Stream &stream,
                               const CollectiveSite &site,
                               Handle &handle) override {
    handle = 0;
    return reduceScatterSum(axis, in, out, count, dtype, stream, site);
  }
  Status startAllGather(int axis, const void *in, void *out, int64_t count,
                        DType dtype, Stream &stream, const CollectiveSite &site,
                        Handle &handle) override {
    handle = 0;
    return allGather(axis, in, out, count, dtype, stream, site);
  }
  Status finish(Handle, const CollectiveSite &) override { return okStatus(); }
  double secondsWaiting() const override { return 0; }
  void abort(int) override {}
};

} // namespace

std::unique_ptr<Collective> createLocalCollective() {
  return std::make_unique<LocalCollective>();
}

} // namespace trainc
