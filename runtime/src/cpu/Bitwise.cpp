//===- Bitwise.cpp - Bitwise ops on integers, and bitcast -----------------===//
//
// Every op maps elements at one flat index i to the result at i:
//   binary  z[i] = f(x[i], y[i]) and, or, xor, shift_left,
//                                shift_right_logical, shift_right_arithmetic
//   unary   y[i] = f(x[i])       not, pop_count, count_leading_zeros
//   bitcast y[i] = x[i]'s bits as the result's dtype
// on i8 ... i64 and ui8 ... ui64 (bitcast: any dtype of the result's element
// size). Each element's math is math/Bits.h's, which the CUDA kernels call
// too, so both devices give the same bits.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/Clones.h"
#include "cpu/KernelUtil.h"
#include "math/Bits.h"

#include <cstring>
#include <optional>

namespace trainc::cpu {
namespace {

using math::BitOp;

/// Elements per parallel chunk (as Elementwise.cpp's).
constexpr int64_t kGrain = 16384;

// The loops are cloned (cpu/Clones.h): SSE2 has no shift by a per-lane
// amount, so the baseline shifts one element at a time.

/// z[i] = op(x[i], y[i]) for i in [0, n), the op a constant of the loop
/// body, so that the switch in math::bitOp folds away and the loop
/// vectorizes.
template <typename T, BitOp kOp>
TRAINC_CPU_CLONES void bitSpan(const T *x, const T *y, T *z, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    z[i] = math::bitOp<T>(kOp, x[i], y[i]);
}

template <typename T, BitOp kOp> void bitLoop(const KernelCall &call) {
  const T *x = call.inputs[0].as<T>();
  const T *y = math::isBinaryBitOp(kOp) ? call.inputs[1].as<T>() : x;
  T *z = call.outputs[0].as<T>();
  parallelFor(call.outputs[0].numElements(), kGrain,
              [=](int64_t begin, int64_t end) {
                bitSpan<T, kOp>(x + begin, y + begin, z + begin, end - begin);
              });
}

template <typename T> void bitTyped(const KernelCall &call, BitOp op) {
  switch (op) {
  case BitOp::kAnd:
    return bitLoop<T, BitOp::kAnd>(call);
  case BitOp::kOr:
    return bitLoop<T, BitOp::kOr>(call);
  case BitOp::kXor:
    return bitLoop<T, BitOp::kXor>(call);
  case BitOp::kNot:
    return bitLoop<T, BitOp::kNot>(call);
  case BitOp::kShiftLeft:
    return bitLoop<T, BitOp::kShiftLeft>(call);
  case BitOp::kShiftRightLogical:
    return bitLoop<T, BitOp::kShiftRightLogical>(call);
  case BitOp::kShiftRightArithmetic:
    return bitLoop<T, BitOp::kShiftRightArithmetic>(call);
  case BitOp::kPopCount:
    return bitLoop<T, BitOp::kPopCount>(call);
  case BitOp::kCountLeadingZeros:
    return bitLoop<T, BitOp::kCountLeadingZeros>(call);
  }
}

Status runBitcast(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (dtypeSize(x.dtype) != dtypeSize(y.dtype))
    return kernelError(
        call, std::string("cannot bitcast ") + dtypeName(x.dtype) + " to " +
                  dtypeName(y.dtype) + ": the element sizes differ");
  if (x.data != y.data)
    std::memmove(y.data, x.data, size_t(x.numElements()) * dtypeSize(x.dtype));
  return okStatus();
}

} // namespace

Status runBitwise(const KernelCall &call) {
  if (call.op == Opcode::Bitcast)
    return runBitcast(call);
  std::optional<BitOp> op = math::bitOpOf(call.op);
  if (!op)
    return kernelError(call, "not a bitwise op");
  auto run = [&](auto zero) {
    bitTyped<decltype(zero)>(call, *op);
    return okStatus();
  };
  switch (call.inputs[0].dtype) {
  case DType::I8:
    return run(int8_t());
  case DType::I16:
    return run(int16_t());
  case DType::I32:
    return run(int32_t());
  case DType::I64:
    return run(int64_t());
  case DType::U8:
    return run(uint8_t());
  case DType::U16:
    return run(uint16_t());
  case DType::U32:
    return run(uint32_t());
  case DType::U64:
    return run(uint64_t());
  default:
    return unsupportedDType(call, call.inputs[0].dtype);
  }
}

} // namespace trainc::cpu
