//===- Kernels.h - CPU kernels: the executor/kernel contract ---*- C++ -*-===//
//
// Every instruction of an executable names an Opcode, its operand and result
// tensors, and two attribute lists, `ints` and `floats`, whose layout per
// opcode is fixed below (and in runtime/schema/executable.fbs). The executor
// resolves tensors to TensorRefs (data pointers into the arena or the
// constant storage) and calls runCpuKernel. Kernels may assume what the
// compiler's verifier guarantees (shapes and dtypes consistent, as in the
// graph dialect's op constraints) but must check what depends on data
// (gather indices, cross-entropy targets) and report it as a Status.
//
// Shape legend in kernel comments: B batch, H heads, S/T sequence, D head
// dim, C classes, N normalized size, M/K/N matmul sizes.
//
// Numerics: f64 computes in f64; f32, f16 and bf16 compute in f32 (16-bit
// values are loaded with f16ToFloat/bf16ToFloat and stored rounded to
// nearest even). Float sums and means accumulate in f64 in a fixed order,
// so a reduction is the exact sum rounded once whatever the row length or
// thread count; matmuls through BLAS accumulate in the BLAS's precision
// (f32 for f32, f16 and bf16).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_KERNELS_H
#define TRAINC_RUNTIME_CPU_KERNELS_H

#include "base/DType.h"
#include "base/Status.h"

#include <cstdint>

namespace trainc::cpu {

/// The numbering is part of the executable format: append, never reorder.
enum class Opcode : uint16_t {
  // Elementwise unary (1 operand, 1 result of the same shape).
  // neg/abs: numeric; the others: float only.
  kNeg = 0,
  kAbs = 1,
  kExp = 2,
  kLog = 3,
  kTanh = 4,
  kErf = 5,
  kSqrt = 6,
  kRsqrt = 7,
  // Elementwise binary (2 operands and a result, all of one shape and
  // dtype). div on integers truncates toward zero (division by zero is an
  // error Status); max/min propagate NaN; pow is float only.
  kAdd = 8,
  kSub = 9,
  kMul = 10,
  kDiv = 11,
  kPow = 12,
  kMax = 13,
  kMin = 14,
  /// ints = [direction]: 0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE. Result i1.
  /// Float comparisons are ordered (NaN compares false, except NE).
  kCompare = 15,
  /// Operands (pred i1, on_true, on_false), all one shape.
  kSelect = 16,
  /// Same shape, any dtype to any dtype, as graph.convert: float->float
  /// rounds to nearest even, float->int truncates toward zero (NaN and
  /// out-of-range values are an error), ->i1 tests non-zero, i1-> 0/1.
  kConvert = 17,
  /// ints = [nb, nc, lhs_batch[nb], rhs_batch[nb], lhs_contract[nc],
  ///         rhs_contract[nc]]. Result dims: batch, lhs free, rhs free
  /// (graph.dot_general). Float only.
  kDotGeneral = 18,
  /// ints = reduced dims (dropped from the result).
  kReduceSum = 19,
  kReduceMax = 20,
  kReduceMean = 21,
  /// ints = dims: operand dim i -> result dim dims[i] (size 1 broadcasts).
  kBroadcastInDim = 22,
  /// Same elements, new shape (a copy; the planner may alias it away).
  kReshape = 23,
  /// ints = permutation: result.shape[i] = operand.shape[perm[i]].
  kTranspose = 24,
  /// ints = [start[r], limit[r], strides[r]] for operand rank r.
  kSlice = 25,
  /// ints = [dim]; any number of operands.
  kConcatenate = 26,
  /// ints = [axis]; operands (table, indices i32/i64). ONNX Gather:
  /// negative indices count from the end; out of range is an error Status
  /// naming the index.
  kGather = 27,
  /// ints = [dim]; no operands.
  kIota = 28,
  /// ints = [dim].
  kSoftmax = 29,
  /// ints = [approximation]: 0 erf, 1 tanh.
  kGelu = 30,
  /// ints = [axis, has_scale, has_bias]; floats = [epsilon]. Operands x,
  /// then scale and bias when present (shape x.shape[axis:]).
  kLayerNorm = 31,
  /// ints = [axis, has_scale]; floats = [epsilon].
  kRmsNorm = 32,
  /// ints = [seed]; floats = [ratio]. Results (y, mask i1). The mask is a
  /// pure function of (seed, step, element index): see Dropout.cpp.
  kDropout = 33,
  /// ints = [causal, has_mask]; floats = [scale]. Operands q [B,Hq,Sq,D],
  /// k [B,Hk,Sk,D], v [B,Hk,Sk,Dv], and an additive mask broadcastable to
  /// [B,Hq,Sq,Sk] when present. Result [B,Hq,Sq,Dv] (graph.attention).
  kAttention = 34,
  /// ints = [reduction (0 none, 1 sum, 2 mean), has_ignore_index,
  /// ignore_index]. Operands logits [..., C], targets [...] (i32/i64).
  kSoftmaxCrossEntropy = 35,
  /// ints = [axis]; operands (updates, indices i32/i64). The result starts
  /// at zero and each update is added at its (wrapped) index; an index out
  /// of range is an error Status (graph.scatter_add).
  kScatterAdd = 36,
  /// ints = [tanh]; operands (x, cotangent), result cotangent * gelu'(x),
  /// all of one type (graph.gelu_grad).
  kGeluGrad = 37,
  /// ints = [axis, has_scale, centered]; floats = [epsilon]. Operands x,
  /// scale (when present, the normalized shape), cotangent (x's type);
  /// results (input gradient, xhat), x's type (graph.norm_grad).
  kNormGrad = 38,
  /// floats = [beta1, beta2, epsilon]. Operands param, grad, exp_avg,
  /// exp_avg_sq (one type) and the 0-d neg_step_size,
  /// bias_correction2_sqrt, decay_factor, grad_scale of its element type;
  /// results (new param, exp_avg, exp_avg_sq), which may be the memory of
  /// operands 0, 2, 3 (graph.adamw_update).
  kAdamwUpdate = 39,
};
constexpr int kNumOpcodes = 40;

/// "add", "dot_general", ... (the graph op's name).
const char *opcodeName(Opcode op);

/// A tensor as a kernel sees it: dtype, shape and a pointer to its
/// row-major elements (16-bit floats as bit patterns, i1 as bytes).
struct TensorRef {
  DType dtype = DType::kF32;
  int rank = 0;
  const int64_t *dims = nullptr;
  void *data = nullptr;

  int64_t numElements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  int64_t dim(int i) const { return dims[i]; }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// A read-only view of `size` elements.
template <typename T> struct Span {
  const T *data = nullptr;
  int64_t size = 0;
  const T &operator[](int64_t i) const { return data[i]; }
  const T *begin() const { return data; }
  const T *end() const { return data + size; }
};

/// One kernel invocation.
struct KernelCall {
  Opcode op;
  Span<TensorRef> inputs;
  TensorRef *outputs = nullptr;
  int numOutputs = 0;
  Span<int64_t> ints;
  Span<double> floats;
  /// The training step (for Dropout's mask); 0 outside training.
  int64_t step = 0;
};

/// Runs one instruction. Returns an error Status (naming the op) for
/// data-dependent failures and for dtype combinations a kernel lacks.
Status runCpuKernel(const KernelCall &call);

// Kernel families (one file each), called by runCpuKernel.
Status runElementwise(const KernelCall &call);  // Elementwise.cpp
Status runReduction(const KernelCall &call);    // Reduction.cpp
Status runDataMovement(const KernelCall &call); // DataMovement.cpp
Status runDotGeneral(const KernelCall &call);   // DotGeneral.cpp
Status runSoftmax(const KernelCall &call);      // Softmax.cpp
Status runNorm(const KernelCall &call);         // Norm.cpp (layer, rms)
Status runGelu(const KernelCall &call);         // Gelu.cpp
Status runDropout(const KernelCall &call);      // Dropout.cpp
Status runAttention(const KernelCall &call);    // Attention.cpp
Status runCrossEntropy(const KernelCall &call); // CrossEntropy.cpp
Status runScatterAdd(const KernelCall &call);   // Scatter.cpp
Status runGeluGrad(const KernelCall &call);     // FusedGradients.cpp
Status runNormGrad(const KernelCall &call);     // FusedGradients.cpp
Status runAdamwUpdate(const KernelCall &call);  // Optimizer.cpp

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_KERNELS_H
