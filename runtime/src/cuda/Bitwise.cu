//===- Bitwise.cu - Bitwise ops on integers, and bitcast ------------------===//
//
// As cpu/Bitwise.cpp (the reference): one thread per element (grid-stride),
//   binary  z[i] = f(x[i], y[i]) and, or, xor, shift_left,
//                                shift_right_logical, shift_right_arithmetic
//   unary   y[i] = f(x[i])       not, pop_count, count_leading_zeros
// on i8 ... i64 and ui8 ... ui64, each element by math/Bits.h's bitOp, the
// function the CPU kernel calls: the same bits on both devices. The op is a
// kernel argument, the same for every thread. Each thread reads its operands
// before it writes, so results may share an operand's memory.
//   bitcast y = x's bytes: a device-to-device copy (none in place).
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "math/Bits.h"

#include <cstdint>
#include <optional>

namespace trainc::cuda {
namespace {

using math::BitOp;

template <typename T>
__global__ void bitKernel(const T *x, const T *y, T *z, int64_t n, BitOp op) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    z[i] = math::bitOp<T>(op, x[i], y[i]);
}

template <typename T> Status launchBits(const KernelCall &call, BitOp op) {
  int64_t n = call.outputs[0].numElements();
  if (n == 0)
    return okStatus();
  const T *x = call.inputs[0].as<const T>();
  // A unary op reads x as its unused second operand.
  const T *y = math::isBinaryBitOp(op) ? call.inputs[1].as<const T>() : x;
  bitKernel<T><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
      x, y, call.outputs[0].as<T>(), n, op);
  return checkLaunch(call, "bitKernel");
}

Status runBitcast(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (dtypeSize(x.dtype) != dtypeSize(y.dtype))
    return kernelError(
        call, std::string("cannot bitcast ") + dtypeName(x.dtype) + " to " +
                  dtypeName(y.dtype) + ": the element sizes differ");
  int64_t n = x.numElements();
  if (x.data == y.data || n == 0)
    return okStatus();
  return fromCudaError(
      int(cudaMemcpyAsync(y.data, x.data, uint64_t(n) * dtypeSize(x.dtype),
                          cudaMemcpyDeviceToDevice, streamOf(call).handle())),
      "bitcast: cudaMemcpyAsync");
}

} // namespace

Status runBitwise(const KernelCall &call) {
  if (call.op == Opcode::Bitcast)
    return runBitcast(call);
  std::optional<BitOp> op = math::bitOpOf(call.op);
  if (!op)
    return kernelError(call, "not a bitwise op");
  switch (call.inputs[0].dtype) {
  case DType::I8:
    return launchBits<int8_t>(call, *op);
  case DType::I16:
    return launchBits<int16_t>(call, *op);
  case DType::I32:
    return launchBits<int32_t>(call, *op);
  case DType::I64:
    return launchBits<int64_t>(call, *op);
  case DType::U8:
    return launchBits<uint8_t>(call, *op);
  case DType::U16:
    return launchBits<uint16_t>(call, *op);
  case DType::U32:
    return launchBits<uint32_t>(call, *op);
  case DType::U64:
    return launchBits<uint64_t>(call, *op);
  default:
    return unsupported(call, call.inputs[0].dtype);
  }
}

} // namespace trainc::cuda
