//===- DotGeneral.cpp - dot_general through OpenBLAS ----------------------===//
//
// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]   (+ bias[n]: dot_general_bias)
//
// dot_general_bias_grad adds a second result, the sum of lhs (rhs) over its
// contracting dims, which is Reduction.cpp's ReduceSum of that operand, run
// as such (the same bits; on a GPU it is the GEMM's bias-gradient epilogue).
// dot_general_bias_gelu is dot_general_bias into its second result, then
// Gelu.cpp's gelu of that into its first; dot_general_gelu_grad is
// dot_general into its result, then FusedGradients.cpp's gelu_grad of the
// pre-activation and that, in place (the same bits as the pairs; on a GPU
// the GEMM's GELU and DGELU epilogues).
//
// Every dot_general is a batched GEMM once its dimensions are grouped: b
// runs over the batching dims (in lhs_batch order), m over lhs's free dims,
// n over rhs's free dims (both in operand order) and k over the contracting
// dims (in lhs_contract order, paired with rhs_contract). The result's
// layout (batch dims, lhs free dims, rhs free dims) is exactly C[b, m, n]
// in row-major order, so the result is never permuted; only the operands
// may be.
//
// An operand is used in place when its memory order is already one of the
// two a GEMM accepts: lhs [b, m, k] or [b, k, m] (transposed), rhs [b, k, n]
// or [b, n, k]. The linear-layer form x[..., K] @ w[K, N] is the first case
// with no batch: x's leading dims fold into m and one GEMM does it all.
// Otherwise the operand is packed into [b, m, k] (resp. [b, k, n]) first.
//
// Precision: f32 and f64 call cblas_sgemm/cblas_dgemm (through Gemm.h,
// which splits the batch or the product over trainc's threads). f16 and bf16
// operands are widened to f32 once, in parallel (then used in place or
// packed like f32), multiplied with sgemm (accumulation in f32), and the
// result is rounded to nearest even once, at the end, in parallel. Under
// OperandRounding::Tf32 (--precision tf32) each f32 operand is first copied
// rounded to TF32 (roundToTf32, the rounding a GPU's tensor cores apply),
// the same way: sgemm's f32 products of 11-bit significands are exact, so
// the only differences from a GPU are the order of the sums. It emulates
// the GPU's numerics and is no faster than f32.
//
// Shape legend: B batch (product of batching dims), M/N products of the lhs
// and rhs free dims, K product of the contracting dims.
//
//===----------------------------------------------------------------------===//

#include "base/Float16.h"
#include "base/Parallel.h"
#include "cpu/Gemm.h"
#include "cpu/KernelUtil.h"
#include "device/DotDims.h"

#include <array>
#include <climits>
#include <string>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

bool isIdentity(const std::vector<int> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int(i))
      return false;
  return true;
}

int64_t product(const TensorRef &t, const std::vector<int> &dims) {
  int64_t n = 1;
  for (int d : dims)
    n *= t.dims[d];
  return n;
}

/// Writes `t` with its dims permuted (packed dim i = source dim perm[i]) to
/// `out`; load(i) reads source element i as T. The innermost packed dim is a
/// strided run of the source; an odometer walks the others.
template <typename T, typename Load>
void packPermuted(const TensorRef &t, const std::vector<int> &perm, Load load,
                  T *out) {
  int rank = t.rank;
  if (rank == 0) {
    out[0] = load(0);
    return;
  }
  std::vector<int64_t> srcStrides = stridesOf(t);
  int64_t inner = t.dims[perm[rank - 1]];
  int64_t innerStride = srcStrides[perm[rank - 1]];
  int64_t outer = t.numElements() / inner;
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  for (int64_t o = 0; o < outer; ++o, out += inner) {
    for (int64_t i = 0; i < inner; ++i)
      out[i] = load(src + i * innerStride);
    // Advance the odometer over packed dims rank-2 .. 0.
    for (int p = rank - 2; p >= 0; --p) {
      int d = perm[p];
      src += srcStrides[d];
      if (++index[p] < t.dims[d])
        break;
      src -= srcStrides[d] * t.dims[d];
      index[p] = 0;
    }
  }
}

/// One GEMM operand: a pointer to [B, rows, cols] (or [B, cols, rows] when
/// `trans`) in the compute type, either the tensor itself or a packed copy.
template <typename T> struct Operand {
  const T *data = nullptr;
  bool trans = false;
  std::vector<T> packed;
};

/// Elements per task of the 16-bit conversions: enough to amortize a task.
constexpr int64_t kConvertGrain = 1 << 15;

/// A 16-bit tensor widened to float, or an f32 one rounded to TF32, in its
/// own layout, split over trainc's threads (a GEMM operand is read many
/// times: converting it once, in parallel, costs far less than converting
/// while packing, element by element).
std::vector<float> operandAsFloat(const TensorRef &t) {
  std::vector<float> wide(t.numElements());
  parallelFor(int64_t(wide.size()), kConvertGrain,
              [&](int64_t begin, int64_t end) {
                if (t.dtype == DType::F32) {
                  const float *src = t.as<float>();
                  for (int64_t i = begin; i < end; ++i)
                    wide[i] = roundToTf32(src[i]);
                } else if (t.dtype == DType::BF16) {
                  const uint16_t *src = t.as<uint16_t>();
                  for (int64_t i = begin; i < end; ++i)
                    wide[i] = bf16ToFloat(src[i]);
                } else {
                  const uint16_t *src = t.as<uint16_t>();
                  for (int64_t i = begin; i < end; ++i)
                    wide[i] = f16ToFloat(src[i]);
                }
              });
  return wide;
}

/// Uses `t` in place when its dims are already in order `plain` ([B, rows,
/// cols]) or `transposed` ([B, cols, rows]) and it holds T; packs it into
/// order `plain` otherwise. A 16-bit operand is widened first, and with
/// `tf32` an f32 one rounded, and then treated as a float tensor of the
/// same layout.
template <typename T>
Operand<T> prepareOperand(const TensorRef &t, const std::vector<int> &plain,
                          const std::vector<int> &transposed, bool tf32) {
  if constexpr (std::is_same_v<T, float>) {
    if (t.dtype == DType::BF16 || t.dtype == DType::F16 ||
        (tf32 && t.dtype == DType::F32)) {
      std::vector<float> wide = operandAsFloat(t);
      TensorRef view = t;
      view.dtype = DType::F32;
      view.data = wide.data();
      Operand<T> op = prepareOperand<T>(view, plain, transposed, false);
      if (op.packed.empty()) { // used in place: keep the widened copy
        op.packed = std::move(wide);
        op.data = op.packed.data();
      }
      return op;
    }
  }
  Operand<T> op;
  bool native =
      t.dtype == (std::is_same<T, double>::value ? DType::F64 : DType::F32);
  if (native && isIdentity(plain)) {
    op.data = t.as<T>();
    return op;
  }
  if (native && isIdentity(transposed)) {
    op.data = t.as<T>();
    op.trans = true;
    return op;
  }
  op.packed.resize(t.numElements());
  if (native) {
    const T *src = t.as<T>();
    packPermuted(
        t, plain, [src](int64_t i) { return src[i]; }, op.packed.data());
  } else {
    packPermuted(
        t, plain, [&t](int64_t i) { return loadAs<T>(t, i); },
        op.packed.data());
  }
  op.data = op.packed.data();
  return op;
}

} // namespace

Status runDotGeneral(const KernelCall &call) {
  const TensorRef &lhs = call.inputs[0], &rhs = call.inputs[1];
  const TensorRef &out = call.outputs[0];
  if (!isFloat(lhs.dtype))
    return unsupportedDType(call, lhs.dtype);
  // dot_general_bias_gelu: exactly dot_general_bias, then gelu of its
  // rounded result.
  if (call.op == Opcode::DotGeneralBiasGelu) {
    TRAINC_RETURN_IF_ERROR(runDotGeneral(biasGeluProductCall(call)));
    return runGelu(biasGeluGeluCall(call));
  }
  // dot_general_gelu_grad: exactly dot_general, then gelu_grad of the
  // pre-activation and that rounded product, in place.
  if (call.op == Opcode::DotGeneralGeluGrad) {
    TRAINC_RETURN_IF_ERROR(runDotGeneral(geluGradProductCall(call)));
    std::array<TensorRef, 2> operands;
    return runGeluGrad(geluGradCall(call, operands));
  }
  int64_t nb = call.ints[0], nc = call.ints[1];
  const int64_t *attrs = call.ints.data + 2;
  if (call.op == Opcode::DotGeneralBiasGrad) {
    std::vector<int64_t> dims;
    TRAINC_RETURN_IF_ERROR(runReduction(biasGradSumCall(call, dims)));
  }
  bool tf32 = OperandRounding(attrs[2 * nb + 2 * nc]) == OperandRounding::Tf32;
  DimGroups l = groupDims(lhs, attrs, attrs + 2 * nb, nb, nc);
  DimGroups r = groupDims(rhs, attrs + nb, attrs + 2 * nb + nc, nb, nc);

  int64_t batch = product(lhs, l.batch), m = product(lhs, l.free),
          n = product(rhs, r.free), k = product(lhs, l.contract);
  // dot_general_bias: bias[j] (j over rhs's free dims) added to every row
  // of the product's sums, before they are rounded to the result's type.
  const TensorRef *bias =
      call.op == Opcode::DotGeneralBias ? &call.inputs[2] : nullptr;
  if (batch * m * n == 0)
    return okStatus();
  if (k == 0) { // An empty sum (plus the bias).
    for (int64_t i = 0, e = out.numElements(); i < e; ++i)
      storeAs(out, i, bias ? 0.0 + loadAs<double>(*bias, i % n) : 0.0);
    return okStatus();
  }
  // cblas takes 32-bit sizes (OpenBLAS built without INTERFACE64).
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    std::string sizes = "M=" + std::to_string(m) + ", N=" + std::to_string(n) +
                        ", K=" + std::to_string(k);
    return kernelError(call, "GEMM sizes (" + sizes +
                                 ") exceed the BLAS's 32-bit limit");
  }

  return withFloatCompute(lhs.dtype, [&](auto zero) {
    using T = decltype(zero);
    Operand<T> a =
        prepareOperand<T>(lhs, concat({&l.batch, &l.free, &l.contract}),
                          concat({&l.batch, &l.contract, &l.free}), tf32);
    Operand<T> b =
        prepareOperand<T>(rhs, concat({&r.batch, &r.contract, &r.free}),
                          concat({&r.batch, &r.free, &r.contract}), tf32);
    // 16-bit results are computed in a float buffer and rounded once.
    bool native = out.dtype == DType::F32 || out.dtype == DType::F64;
    std::vector<T> wide(native ? 0 : batch * m * n);
    T *c = native ? out.as<T>() : wide.data();
    // A native bias is added in the GEMM's blocks; a 16-bit one to the
    // float sums, before the one rounding to the result's type (a GPU
    // GEMM's bias epilogue).
    batchedGemm(batch, a.trans, b.trans, m, n, k, a.data, b.data, c,
                native && bias ? bias->as<T>() : nullptr);
    parallelFor(
        int64_t(wide.size()), kConvertGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            storeAs(out, i, bias ? wide[i] + loadAs<T>(*bias, i % n) : wide[i]);
        });
    return okStatus();
  });
}

} // namespace trainc::cpu
