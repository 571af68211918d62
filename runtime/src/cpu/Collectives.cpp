//===- Collectives.cpp - Collective instructions on host memory -----------===//
//
// all_reduce: the result gets the operand's values, then the sum over the
// rank's group on the mesh axis in place (the memory plan may give both the
// same buffer). reduce_scatter and all_gather: the Collective's, between
// the operand and the result. shard_slice: a copy of this rank's part, no
// communication. The communication itself is the context's Collective
// (MPI across processes, NCCL between GPUs; the identity for one rank).
// Without a context (kernel unit tests) there is one rank.
//
// Nothing here touches tensor memory itself: bytes move with the context's
// device (host memcpy without one), so the CUDA device runs these same
// kernels on device memory.
//
//===----------------------------------------------------------------------===//

#include "cpu/Kernels.h"

#include "device/Device.h"

#include <algorithm>
#include <cstring>

namespace trainc::cpu {
namespace {

/// Copies `bytes` from `src` to `dst` in the call's device memory, ordered
/// on its stream.
Status copyBytes(const KernelCall &call, void *dst, const void *src,
                 size_t bytes) {
  if (call.context && call.context->device && call.context->stream)
    return call.context->device->copy(static_cast<char *>(dst),
                                      static_cast<const char *>(src), bytes,
                                      *call.context->stream);
  std::memmove(dst, src, bytes);
  return okStatus();
}

} // namespace

Status runAllReduce(const KernelCall &call) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  int64_t count = in.numElements();
  if (in.data != out.data)
    TRAINC_RETURN_IF_ERROR(copyBytes(call, out.data, in.data,
                                     size_t(count) * dtypeSize(in.dtype)));
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
  if (!call.context || !call.context->collective)
    return copyBytes(call, out.data, in.data,
                     size_t(count) * dtypeSize(in.dtype));
  const KernelContext &context = *call.context;
  return context.collective->reduceScatterSum(
      int(call.ints[0]), in.data, out.data, count, in.dtype, *context.stream,
      siteOf(context, "reduce_scatter"));
}

Status runAllGather(const KernelCall &call) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  int64_t count = in.numElements();
  if (!call.context || !call.context->collective)
    return copyBytes(call, out.data, in.data,
                     size_t(count) * dtypeSize(in.dtype));
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
  return copyBytes(call, out.data,
                   static_cast<const char *>(in.data) + coordinate * bytes,
                   bytes);
}

// The asynchronous forms: a start posts the collective into its result
// (the pending buffer) and records it; the done finds it by that buffer,
// waits, and leaves the value in its result (the same buffer when the plan
// gives it, else a copy). Without a session (kernel unit tests) a start
// does the whole collective of one rank and the done copies.

namespace {

Status startCollective(const KernelCall &call, const char *what) {
  const TensorRef &in = call.inputs[0];
  TensorRef &out = call.outputs[0];
  const KernelContext *context = call.context;
  if (!context || !context->collective || !context->inFlight)
    return copyBytes(call, out.data, in.data,
                     size_t(std::min(in.numElements(), out.numElements())) *
                         dtypeSize(in.dtype));
  int axis = int(call.ints[0]);
  Collective &ranks = *context->collective;
  CollectiveSite site = siteOf(*context, what);
  Collective::Handle handle = 0;
  if (call.op == Opcode::AllReduceStart) {
    if (in.data != out.data)
      TRAINC_RETURN_IF_ERROR(
          copyBytes(call, out.data, in.data,
                    size_t(in.numElements()) * dtypeSize(in.dtype)));
    TRAINC_RETURN_IF_ERROR(
        ranks.startAllReduceSum(axis, out.data, out.numElements(), in.dtype,
                                *context->stream, site, handle));
  } else if (call.op == Opcode::ReduceScatterStart) {
    TRAINC_RETURN_IF_ERROR(
        ranks.startReduceScatterSum(axis, in.data, out.data, out.numElements(),
                                    in.dtype, *context->stream, site, handle));
  } else {
    TRAINC_RETURN_IF_ERROR(
        ranks.startAllGather(axis, in.data, out.data, in.numElements(),
                             in.dtype, *context->stream, site, handle));
  }
  context->inFlight->entries.push_back(
      {out.data, handle, context->instruction});
  return okStatus();
}

} // namespace

Status runAllReduceStart(const KernelCall &call) {
  return startCollective(call, "all_reduce_start");
}
Status runReduceScatterStart(const KernelCall &call) {
  return startCollective(call, "reduce_scatter_start");
}
Status runAllGatherStart(const KernelCall &call) {
  return startCollective(call, "all_gather_start");
}

Status runCollectiveDone(const KernelCall &call) {
  const TensorRef &pending = call.inputs[0];
  TensorRef &out = call.outputs[0];
  const KernelContext *context = call.context;
  if (context && context->collective && context->inFlight) {
    std::vector<CollectivesInFlight::Entry> &entries =
        context->inFlight->entries;
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const CollectivesInFlight::Entry &e) {
                             return e.pending == pending.data;
                           });
    if (it == entries.end()) // only a damaged executable pairs them so
      return Status(StatusCode::kDataLoss,
                    "collective_done: no collective was started into its "
                    "pending operand");
    CollectivesInFlight::Entry entry = *it;
    entries.erase(it);
    CollectiveSite site = siteOf(*context, "collective_done");
    TRAINC_RETURN_IF_ERROR(context->collective->finish(entry.handle, site));
  }
  if (out.data != pending.data)
    return copyBytes(call, out.data, pending.data,
                     size_t(out.numElements()) * dtypeSize(out.dtype));
  return okStatus();
}

} // namespace trainc::cpu
