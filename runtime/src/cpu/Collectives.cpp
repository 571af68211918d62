//===- Collectives.cpp - Collective instructions on host memory -----------===//
//
// all_reduce: the result gets the operand's values, then the sum over the
// rank's group on the mesh axis in place (the memory plan may give both the
// same buffer). The communication itself is the context's Collective
// (MPI across processes; the identity for one rank).
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

} // namespace trainc::cpu
