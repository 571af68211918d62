//===- Collectives.cpp - Collective instructions on host memory -----------===//
//
// all_reduce: the result gets the operand's values, then the sum over the
// rank's group on the mesh axis in place (the memory plan may give both the
// same buffer). reduce_scatter and all_gather: the Collective's, between
// the operand and the result. shard_slice: a copy of this rank's part, no
// communication. The communication itself is the context's Collective
// (MPI across processes; the identity for one rank). Without a context
// (kernel unit tests) there is one rank.
//
//===----------------------------------------------------------------------===//

#include "cpu/Kernels.h"

#include "device/Device.h"

#include <cstring>

namespace trainc::cpu {

Status runAllReduce(const KernelCall &call) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  int64_t count = in.numElements();
  if (in.data != out.data)
    std::memcpy(out.data, in.data, size_t(count) * dtypeSize(in.dtype));
  // Kernel unit tests run without a context: one rank.
  if (!call.context || !call.context->collective)
    return okStatus();
  const KernelContext &context = *call.context;
  CollectiveSite site;
  site.step = context.step;
  site.instruction = context.instruction;
  site.what = "all_reduce";
  return context.collective->allReduceSum(int(call.ints[0]), out.data, count,
                                          in.dtype, *context.stream, site);
}

namespace {

CollectiveSite siteOf(const KernelContext &context, const char *what) {
  CollectiveSite site;
  site.step = context.step;
  site.instruction = context.instruction;
  site.what = what;
  return site;
}

} // namespace

Status runReduceScatter(const KernelCall &call) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  int64_t count = out.numElements();
  if (!call.context || !call.context->collective) {
    std::memcpy(out.data, in.data, size_t(count) * dtypeSize(in.dtype));
    return okStatus();
  }
  const KernelContext &context = *call.context;
  return context.collective->reduceScatterSum(
      int(call.ints[0]), in.data, out.data, count, in.dtype, *context.stream,
      siteOf(context, "reduce_scatter"));
}

Status runAllGather(const KernelCall &call) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  int64_t count = in.numElements();
  if (!call.context || !call.context->collective) {
    std::memcpy(out.data, in.data, size_t(count) * dtypeSize(in.dtype));
    return okStatus();
  }
  const KernelContext &context = *call.context;
  return context.collective->allGather(int(call.ints[0]), in.data, out.data,
                                       count, in.dtype, *context.stream,
                                       siteOf(context, "all_gather"));
}

Status runShardSlice(const KernelCall &call) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  size_t bytes = size_t(out.numElements()) * dtypeSize(in.dtype);
  int coordinate = call.context && call.context->collective
                       ? call.context->collective->coordinate(int(call.ints[0]))
                       : 0;
  std::memcpy(out.data, static_cast<const char *>(in.data) + coordinate * bytes,
              bytes);
  return okStatus();
}

} // namespace trainc::cpu
