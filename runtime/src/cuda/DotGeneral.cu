//===- DotGeneral.cu - dot_general through cuBLASLt -----------------------===//
//
// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]
//
// As on the CPU (cpu/DotGeneral.cpp): b runs over the batching dims (in
// lhs_batch order), m over lhs's free dims, n over rhs's free dims (both in
// operand order) and k over the contracting dims (in lhs_contract order,
// paired with rhs_contract). The result (batch dims, lhs free dims, rhs free
// dims) is C[b, m, n] in row-major order, so only the operands may need
// moving.
//
// An operand is read in place when each of its three groups of dims (batch,
// free, contracting) is one run of memory in group order (strides chain:
// stride[d] = stride[next] * size[next], size-1 dims ignored) and one of
// its two matrix groups has stride 1: then it is a strided-batched matrix,
// possibly transposed, with the other group's stride as leading dimension.
// That covers the CPU's two in-place forms ([b, m, k] and [b, k, m]) and
// more (batch dims need not lead: x[m, b, k] is batch stride k, row stride
// b * k). Any other operand is first packed into [b, m, k] (lhs) or
// [b, k, n] (rhs) by packKernel into Scratch memory.
//
// cuBLASLt is column-major: the row-major C[M, N] is the column-major
// D[N, M] = B^T A^T, so rhs is cuBLASLt's A and lhs its B.
//
// Precision: f32 computes in f32 (CUBLAS_COMPUTE_32F: no TF32, as the CPU's
// sgemm) unless the instruction's OperandRounding is Tf32 (--precision
// tf32): then CUBLAS_COMPUTE_32F_FAST_TF32, the tensor cores' TF32 products
// summed in f32, which the CPU emulates by rounding its operands
// (roundToTf32). f64 computes in f64. bf16 and f16 operands are read as they
// are with f32 accumulation and the 16-bit result rounded once, to nearest
// even, from the f32 sum, as on the CPU (or, for a dot_general with an f32
// result, graph.dot_general's f32_result, the f32 sum itself); split-K
// algorithms are restricted to reducing their partial sums in f32 (never in the
// 16-bit output type). What differs from the CPU: the order of each long sum
// (cuBLASLt's blocking and split-K against OpenBLAS's), so results agree to
// rounding, not bit for bit.
//
// Epilogues: dot_general_bias adds its bias with cuBLASLt's BIAS epilogue,
// in f32 before the one rounding as on the CPU; dot_general_bias_gelu of
// 16-bit operands with the tanh form, rows a multiple of 8 elements, takes
// GELU_AUX_BIAS, cuBLASLt's GELU of the biased f32 sums into D and the sums
// rounded into the aux matrix (the pre-activation), where the CPU takes the
// GELU of the rounded pre-activation with its own tanh (within a 16-bit
// tolerance; any other dot_general_bias_gelu runs as dot_general_bias and
// the gelu kernel); dot_general_gelu_grad of the same kind in bf16 takes
// DGELU, the f32 sums times cuBLASLt's gelu' of the pre-activation (read as
// the aux matrix) rounded once, where the CPU rounds the product first (not
// fp16, whose product may overflow to inf where gelu' times the f32 sum
// would not; any other runs as dot_general and the gelu_grad kernel in
// place);
// dot_general_bias_grad's sum of lhs (rhs) over K is the BGRADB (BGRADA)
// epilogue where the sum has the product's type (bf16's f32 product and f32
// sum; not fp16's f32 product and f16 sum), the product is not TF32 and the
// summed operand lies as cuBLASLt requires (BGRADA: its A untransposed; BGRADB:
// its B transposed), summed in cuBLASLt's order, not the CPU's f64 one (within
// the GEMM's tolerance). Otherwise, and where the heuristic has no algorithm
// with the epilogue or cublasLtMatmul refuses it, the product runs alone and a
// second kernel adds the bias (addRowBiasKernel; biasGeluKernel also writes the
// pre-activation and the GELU) or sums the operand (the ReduceSum kernel); a
// refused GEMM never asks again.
//
// The algorithm of each GEMM is cuBLASLt's first heuristic choice for the
// stream's workspace, cached per (device, dtype, shape, layout, pointer
// alignment) in a small map under a mutex; descriptors are built per call
// (host-only work).
//
// Shape legend: B batch (product of batching dims), M/N products of the lhs
// and rhs free dims, K product of the contracting dims.
//
//===----------------------------------------------------------------------===//

#include "cuda/GeluMath.cuh"
#include "cuda/KernelUtil.cuh"
#include "cuda/Kernels.h"
#include "device/DotDims.h"

#include <cublasLt.h>

#include <array>
#include <climits>
#include <initializer_list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace trainc::cuda {
namespace {

//===--- Operand layout ---------------------------------------------------===//

/// The stride of a run of extent 1: any stride reads it.
constexpr int64_t kAnyStride = -1;

/// A group of an operand's dims flattened into one index: its extent, and
/// its stride in memory when the group is one run (`contiguous`).
struct Run {
  int64_t extent = 1;
  int64_t stride = kAnyStride;
  bool contiguous = true;
};

/// The run of `dims` (in that order) of `t`, whose row-major strides are
/// `strides`.
Run runOf(const TensorRef &t, const std::vector<int64_t> &strides,
          const std::vector<int> &dims) {
  Run run;
  for (size_t i = dims.size(); i-- > 0;) {
    int d = dims[i];
    if (t.dims[d] == 1)
      continue;
    if (run.stride == kAnyStride)
      run.stride = strides[d];
    else if (strides[d] != run.stride * run.extent)
      run.contiguous = false;
    run.extent *= t.dims[d];
  }
  return run;
}

/// An operand's three groups as runs.
struct OperandRuns {
  Run batch, free, contract;
};

std::vector<int64_t> rowMajorStrides(const TensorRef &t) {
  std::vector<int64_t> strides(t.rank);
  int64_t s = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= t.dims[d];
  }
  return strides;
}

/// A column-major strided-batched matrix as cuBLASLt reads it: the stored
/// rows x cols with leading dimension ld, used transposed when `trans`.
struct Matrix {
  const void *data = nullptr;
  bool trans = false;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, batchStride = 0;
};

/// Reads a logical [rows, cols] operand (rows along `rowRun`, columns
/// along `colRun`, matrices along `batch`) as a column-major Matrix: stored
/// as is (rows stride 1) or transposed (columns stride 1). False when
/// neither run has stride 1 or a group is not one run of memory.
bool asMatrix(const void *data, const Run &batch, const Run &rowRun,
              const Run &colRun, Matrix &out) {
  if (!batch.contiguous || !rowRun.contiguous || !colRun.contiguous)
    return false;
  int64_t rows = rowRun.extent, cols = colRun.extent;
  out.data = data;
  out.batchStride = batch.stride == kAnyStride ? 0 : batch.stride;
  if (rowRun.stride == 1 || rowRun.stride == kAnyStride) {
    out.trans = false;
    out.rows = uint64_t(rows);
    out.cols = uint64_t(cols);
    out.ld = colRun.stride == kAnyStride ? rows : colRun.stride;
  } else if (colRun.stride == 1 || colRun.stride == kAnyStride) {
    out.trans = true;
    out.rows = uint64_t(cols);
    out.cols = uint64_t(rows);
    out.ld = rowRun.stride;
  } else {
    return false;
  }
  // Holds for every run layout of a row-major tensor; checked all the same.
  return out.ld >= int64_t(out.rows);
}

//===--- Packing ----------------------------------------------------------===//

/// out[e] = in[the source offset of packed element e]: `dims` holds the
/// packed dims' sizes and, for each, the source stride. Elements move as
/// W-byte words (the GEMM reads the operand's own dtype).
template <typename W>
__global__ void packKernel(const W *in, W *out, int64_t n, Dims dims) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += step) {
    out[e] = in[offsetOf(dims, e)];
  }
}

/// Copies `t` with its dims in order `perm` into `out` (t.numElements()
/// elements of t's dtype).
Status pack(const KernelCall &call, const TensorRef &t,
            const std::vector<int> &perm, void *out) {
  Dims src;
  TRAINC_RETURN_IF_ERROR(dimsOf(call, t, src));
  Dims packed;
  packed.rank = t.rank;
  for (int i = 0; i < t.rank; ++i) {
    packed.size[i] = src.size[perm[i]];
    packed.stride[i] = src.stride[perm[i]];
  }
  int64_t n = t.numElements();
  cudaStream_t stream = streamOf(call).handle();
  switch (dtypeSize(t.dtype)) {
  case 2:
    packKernel<<<gridFor(n), kThreads, 0, stream>>>(
        t.as<const uint16_t>(), static_cast<uint16_t *>(out), n, packed);
    break;
  case 4:
    packKernel<<<gridFor(n), kThreads, 0, stream>>>(
        t.as<const uint32_t>(), static_cast<uint32_t *>(out), n, packed);
    break;
  default:
    packKernel<<<gridFor(n), kThreads, 0, stream>>>(
        t.as<const uint64_t>(), static_cast<uint64_t *>(out), n, packed);
    break;
  }
  return checkLaunch(call, "packKernel");
}

//===--- cuBLASLt ---------------------------------------------------------===//

/// The element, scale and compute types of a dtype's GEMM.
struct GemmTypes {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
};

GemmTypes gemmTypes(DType t, bool tf32) {
  switch (t) {
  case DType::F64:
    return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
  case DType::BF16:
    return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  case DType::F16:
    return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  default:
    return {CUDA_R_32F, CUDA_R_32F,
            tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
  }
}

/// The largest power of two (at most 256, cuBLASLt's default requirement)
/// that divides the address.
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && address % align != 0)
    align /= 2;
  return align;
}

/// The descriptors of one cublasLtMatmul call, destroyed with the object.
struct LtDescriptors {
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors &) = delete;
  LtDescriptors &operator=(const LtDescriptors &) = delete;
  ~LtDescriptors() {
    if (preference)
      cublasLtMatmulPreferenceDestroy(preference);
    if (d)
      cublasLtMatrixLayoutDestroy(d);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (matmul)
      cublasLtMatmulDescDestroy(matmul);
  }
};

/// Everything the heuristic's choice depends on.
using GemmKey = std::array<int64_t, 22>;

/// The cached algorithms. Bounded: a program has few distinct GEMMs, and a
/// full map (shapes that keep changing) starts over.
struct AlgoCache {
  static constexpr size_t kMaxEntries = 4096;
  std::mutex mutex;
  struct Choice {
    cublasLtMatmulAlgo_t algo;
    /// Whether the algorithm has the epilogue (the bias's, or the bias
    /// gradient's); when the heuristic had none with it, the caller adds
    /// the bias or sums the operand itself.
    bool withEpilogue;
  };
  std::map<GemmKey, Choice> algos;
  /// GEMMs whose epilogue algorithm cublasLtMatmul refused.
  std::set<GemmKey> epilogueRefused;
};

AlgoCache &algoCache() {
  static AlgoCache cache;
  return cache;
}

/// `status` of cuBLASLt call `what` as a Status naming the op.
Status ltStatus(const KernelCall &call, cublasStatus_t status,
                const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return okStatus();
  std::string name = std::string(opcodeName(call.op)) + ": " + what;
  return fromCublasStatus(int(status), name.c_str());
}

/// A column-major layout of `type`: rows x cols with leading dimension ld,
/// `batch` of them `batchStride` elements apart.
Status createLayout(const KernelCall &call, cudaDataType_t type, uint64_t rows,
                    uint64_t cols, int64_t ld, int32_t batch,
                    int64_t batchStride, cublasLtMatrixLayout_t &out) {
  TRAINC_RETURN_IF_ERROR(
      ltStatus(call, cublasLtMatrixLayoutCreate(&out, type, rows, cols, ld),
               "cublasLtMatrixLayoutCreate"));
  if (batch == 1)
    return okStatus();
  TRAINC_RETURN_IF_ERROR(ltStatus(
      call,
      cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                       &batch, sizeof(batch)),
      "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
  return ltStatus(call,
                  cublasLtMatrixLayoutSetAttribute(
                      out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                      &batchStride, sizeof(batchStride)),
                  "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

/// What cuBLASLt does besides the product: nothing, add a bias
/// (dot_general_bias), or write the sum of an operand over K
/// (dot_general_bias_grad: BGRADA sums x, the rhs, giving N values; BGRADB
/// sums y, the lhs, giving M).
struct Epilogue {
  cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  /// The bias, or where the sum goes: the output's type either way
  /// (cuBLASLt's default bias type, the one its documentation promises).
  const void *vector = nullptr;
  /// GELU_AUX_BIAS: where the GELU's input (the biased product, D's type
  /// and layout) goes; DGELU: where it is read from.
  const void *aux = nullptr;

  bool any() const { return kind != CUBLASLT_EPILOGUE_DEFAULT; }
  bool sums() const {
    return kind == CUBLASLT_EPILOGUE_BGRADA || kind == CUBLASLT_EPILOGUE_BGRADB;
  }
};

/// D[N, M] (column-major, ld N, batch stride M * N) = op(x) op(y), x the
/// [N, K] operand (rhs), y the [K, M] one (lhs): the row-major C[M, N].
/// With a bias `epilogue` (N elements of the output's type), cuBLASLt adds
/// bias[row] to D's rows (C's columns) in f32 before the one rounding, in
/// every batch; with a bias-gradient one, it writes the sum over K of x's
/// rows (BGRADA) or y's columns (BGRADB). `done` says whether it did (false
/// when no algorithm has the epilogue for this GEMM: the caller does it).
Status runGemm(const KernelCall &call, DType dtype, DType outDtype, bool tf32,
               int32_t batch, int64_t m, int64_t n, int64_t k, const Matrix &x,
               const Matrix &y, void *out, const Epilogue &epilogue,
               bool &done) {
  CudaStream &stream = streamOf(call);
  GemmTypes types = gemmTypes(dtype, tf32);
  // C and D: the operands' type, or f32 for a widened 16-bit product.
  cudaDataType_t outType = gemmTypes(outDtype, false).data;
  uint64_t workspaceBytes = stream.gemmWorkspaceBytes();
  uint32_t alignX = alignmentOf(x.data), alignY = alignmentOf(y.data),
           alignD = alignmentOf(out);
  int64_t outStride = m * n;

  LtDescriptors desc;
  TRAINC_RETURN_IF_ERROR(ltStatus(
      call, cublasLtMatmulDescCreate(&desc.matmul, types.compute, types.scale),
      "cublasLtMatmulDescCreate"));
  cublasOperation_t opX = x.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opY = y.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  TRAINC_RETURN_IF_ERROR(
      ltStatus(call,
               cublasLtMatmulDescSetAttribute(
                   desc.matmul, CUBLASLT_MATMUL_DESC_TRANSA, &opX, sizeof(opX)),
               "cublasLtMatmulDescSetAttribute(TRANSA)"));
  TRAINC_RETURN_IF_ERROR(
      ltStatus(call,
               cublasLtMatmulDescSetAttribute(
                   desc.matmul, CUBLASLT_MATMUL_DESC_TRANSB, &opY, sizeof(opY)),
               "cublasLtMatmulDescSetAttribute(TRANSB)"));
  TRAINC_RETURN_IF_ERROR(createLayout(call, types.data, x.rows, x.cols, x.ld,
                                      batch, x.batchStride, desc.a));
  TRAINC_RETURN_IF_ERROR(createLayout(call, types.data, y.rows, y.cols, y.ld,
                                      batch, y.batchStride, desc.b));
  // C (beta = 0, never read) shares D's layout and memory.
  TRAINC_RETURN_IF_ERROR(createLayout(call, outType, uint64_t(n), uint64_t(m),
                                      n, batch, outStride, desc.d));

  // The epilogue, on or off.
  auto setEpilogue = [&](bool on) -> Status {
    cublasLtEpilogue_t kind = on ? epilogue.kind : CUBLASLT_EPILOGUE_DEFAULT;
    TRAINC_RETURN_IF_ERROR(ltStatus(
        call,
        cublasLtMatmulDescSetAttribute(
            desc.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind, sizeof(kind)),
        "cublasLtMatmulDescSetAttribute(EPILOGUE)"));
    // Off: the vector pointer goes too. cuBLASLt 13.1's heuristic accepts a
    // bias pointer with EPILOGUE_DEFAULT, but cublasLtMatmul refuses it
    // (CUBLAS_STATUS_INVALID_VALUE, "The Bias pointer ... is NOT allowed for
    // EPILOGUE_DEFAULT").
    const void *vector = on ? epilogue.vector : nullptr;
    if (!on && !epilogue.any())
      return okStatus();
    TRAINC_RETURN_IF_ERROR(ltStatus(
        call,
        cublasLtMatmulDescSetAttribute(desc.matmul,
                                       CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &vector, sizeof(vector)),
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
    // The aux matrix of a GELU epilogue: the pre-activation in D's layout,
    // leading dimension N, M * N elements per batch (cuBLASLt wants both
    // multiples of 8: the caller asks only then). Off: the pointer, the
    // leading dimension and the stride go back to their defaults, lest
    // cublasLtMatmul refuse leftovers as it refuses a bias pointer.
    if (epilogue.aux) {
      const void *aux = on ? epilogue.aux : nullptr;
      int64_t auxLd = on ? n : 0, auxBatchStride = on ? outStride : 0;
      TRAINC_RETURN_IF_ERROR(
          ltStatus(call,
                   cublasLtMatmulDescSetAttribute(
                       desc.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                       &aux, sizeof(aux)),
                   "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)"));
      TRAINC_RETURN_IF_ERROR(ltStatus(
          call,
          cublasLtMatmulDescSetAttribute(desc.matmul,
                                         CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                         &auxLd, sizeof(auxLd)),
          "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)"));
      TRAINC_RETURN_IF_ERROR(ltStatus(
          call,
          cublasLtMatmulDescSetAttribute(
              desc.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
              &auxBatchStride, sizeof(auxBatchStride)),
          "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_BATCH_STRIDE)"));
    }
    if (!on || epilogue.sums())
      return okStatus();
    int64_t biasBatchStride = 0; // one bias for every batch
    if (epilogue.vector)         // not DGELU's
      TRAINC_RETURN_IF_ERROR(
          ltStatus(call,
                   cublasLtMatmulDescSetAttribute(
                       desc.matmul, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                       &biasBatchStride, sizeof(biasBatchStride)),
                   "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)"));
    return okStatus();
  };
  // A bias's type is D's (cuBLASLt's default). A vector under 16-byte
  // alignment (never a planned buffer's) or a library that refuses the
  // attributes gets the separate kernel.
  // cuBLASLt's bias-gradient epilogues take one layout each: BGRADA an
  // untransposed A (x), BGRADB a transposed B (y); any other gets
  // NOT_SUPPORTED from the heuristic ("CUBLASLT_EPILOGUE_BGRADB only works
  // with transposed B", cuBLASLt 13.1 on an H200), so it is not asked.
  bool layoutOk = epilogue.kind == CUBLASLT_EPILOGUE_BGRADA   ? !x.trans
                  : epilogue.kind == CUBLASLT_EPILOGUE_BGRADB ? y.trans
                                                              : true;
  done = epilogue.any() && layoutOk && alignmentOf(epilogue.vector) >= 16 &&
         (!epilogue.aux || alignmentOf(epilogue.aux) >= 16);
  if (done && !setEpilogue(true).ok()) {
    done = false;
    TRAINC_RETURN_IF_ERROR(setEpilogue(false));
  }

  int device = 0;
  TRAINC_RETURN_IF_ERROR(
      fromCudaError(int(cudaGetDevice(&device)), "dot_general: cudaGetDevice"));
  GemmKey key = {device,
                 int64_t(dtype),
                 int64_t(outDtype),
                 int64_t(x.trans),
                 int64_t(y.trans),
                 m,
                 n,
                 k,
                 x.ld,
                 y.ld,
                 int64_t(batch),
                 x.batchStride,
                 y.batchStride,
                 outStride,
                 int64_t(alignX),
                 int64_t(alignY),
                 int64_t(alignD),
                 int64_t(workspaceBytes),
                 int64_t(types.compute),
                 int64_t(epilogue.kind),
                 epilogue.any() ? int64_t(alignmentOf(epilogue.vector)) : 0,
                 epilogue.aux ? int64_t(alignmentOf(epilogue.aux)) : 0};
  AlgoCache &cache = algoCache();
  cublasLtMatmulAlgo_t algo;
  bool cached = false;
  if (epilogue.any()) {
    bool refused;
    {
      std::lock_guard<std::mutex> lock(cache.mutex);
      refused = cache.epilogueRefused.count(key) != 0;
    }
    if (refused) // the product alone; the caller does the rest
      return runGemm(call, dtype, outDtype, tf32, batch, m, n, k, x, y, out,
                     Epilogue{}, done);
  }
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.algos.find(key);
    if (it != cache.algos.end()) {
      algo = it->second.algo;
      done = done && it->second.withEpilogue;
      cached = true;
    }
  }
  if (cached && epilogue.any() && !done)
    TRAINC_RETURN_IF_ERROR(setEpilogue(false));
  if (!cached) {
    TRAINC_RETURN_IF_ERROR(
        ltStatus(call, cublasLtMatmulPreferenceCreate(&desc.preference),
                 "cublasLtMatmulPreferenceCreate"));
    auto setPreference = [&](cublasLtMatmulPreferenceAttributes_t attr,
                             const void *value, size_t bytes) {
      return ltStatus(call,
                      cublasLtMatmulPreferenceSetAttribute(desc.preference,
                                                           attr, value, bytes),
                      "cublasLtMatmulPreferenceSetAttribute");
    };
    TRAINC_RETURN_IF_ERROR(
        setPreference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
                      sizeof(workspaceBytes)));
    TRAINC_RETURN_IF_ERROR(setPreference(
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignX, sizeof(alignX)));
    TRAINC_RETURN_IF_ERROR(setPreference(
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignY, sizeof(alignY)));
    TRAINC_RETURN_IF_ERROR(setPreference(
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignD, sizeof(alignD)));
    TRAINC_RETURN_IF_ERROR(setPreference(
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD, sizeof(alignD)));
    if (outType != types.scale) {
      // 16-bit results: split-K partial sums stay in f32, so the result is
      // the f32 sum rounded once (INPLACE and OUTPUT_TYPE would add the
      // partial sums in the 16-bit type). An f32 result of 16-bit operands
      // needs no restriction.
      uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      TRAINC_RETURN_IF_ERROR(setPreference(
          CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &scheme, sizeof(scheme)));
    }
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    auto heuristic = [&]() {
      found = 0;
      return ltStatus(call,
                      cublasLtMatmulAlgoGetHeuristic(
                          stream.blasLt(), desc.matmul, desc.a, desc.b, desc.d,
                          desc.d, desc.preference, 1, &result, &found),
                      "cublasLtMatmulAlgoGetHeuristic");
    };
    Status withEpilogue = heuristic();
    if (done && (!withEpilogue.ok() || found < 1 ||
                 result.state != CUBLAS_STATUS_SUCCESS)) {
      // No algorithm with the epilogue: without it, and the caller adds
      // the bias or sums the operand.
      done = false;
      TRAINC_RETURN_IF_ERROR(setEpilogue(false));
      TRAINC_RETURN_IF_ERROR(heuristic());
    } else {
      TRAINC_RETURN_IF_ERROR(withEpilogue);
    }
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
      return ltStatus(call, CUBLAS_STATUS_NOT_SUPPORTED,
                      ("cublasLtMatmulAlgoGetHeuristic (no algorithm for B=" +
                       std::to_string(batch) + ", M=" + std::to_string(m) +
                       ", N=" + std::to_string(n) + ", K=" + std::to_string(k) +
                       ")")
                          .c_str());
    algo = result.algo;
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.algos.size() >= AlgoCache::kMaxEntries)
      cache.algos.clear();
    cache.algos.emplace(key, AlgoCache::Choice{algo, done});
  }

  float alpha32 = 1, beta32 = 0;
  double alpha64 = 1, beta64 = 0;
  bool f64 = types.scale == CUDA_R_64F;
  const void *alpha = f64 ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = f64 ? static_cast<const void *>(&beta64) : &beta32;
  Status status = ltStatus(
      call,
      cublasLtMatmul(stream.blasLt(), desc.matmul, alpha, x.data, desc.a,
                     y.data, desc.b, beta, out, desc.d, out, desc.d, &algo,
                     stream.gemmWorkspace(), workspaceBytes, stream.handle()),
      "cublasLtMatmul");
  if (status.ok() || !done)
    return status;
  // The heuristic's algorithm with the epilogue was refused at the call
  // (PyTorch met such shapes): this GEMM never asks for the epilogue
  // again, and the caller does its work.
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    cache.algos.erase(key);
    cache.epilogueRefused.insert(key);
  }
  return runGemm(call, dtype, outDtype, tf32, batch, m, n, k, x, y, out,
                 Epilogue{}, done);
}

/// dot_general_bias's epilogue: out[i] += bias[i % n], in the compute type
/// and rounded once, as the binary add kernel computes it.
template <typename S>
__global__ void addRowBiasKernel(S *out, const S *bias, int64_t total,
                                 int64_t n) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step)
    store(out, i, load(out, i) + load(bias, i % n));
}

Status addRowBias(const KernelCall &call, const TensorRef &out,
                  const TensorRef &bias, int64_t n) {
  return withFloatStorage(call, out.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    int64_t total = out.numElements();
    addRowBiasKernel<S>
        <<<gridFor(total), kThreads, 0, streamOf(call).handle()>>>(
            static_cast<S *>(out.data), static_cast<const S *>(bias.data),
            total, n);
    return checkLaunch(call, "addRowBiasKernel");
  });
}

/// dot_general_bias_gelu's epilogue where cuBLASLt did not apply it: out
/// holds the product; pre[i] = out[i] + bias[i % n], rounded, and out[i] =
/// gelu(pre[i]), as the add and gelu kernels compute them.
template <typename S>
__global__ void biasGeluKernel(S *out, S *pre, const S *bias, int64_t total,
                               int64_t n, bool useTanh) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    store(pre, i, load(out, i) + load(bias, i % n));
    store(out, i, geluOf(load(pre, i), useTanh));
  }
}

Status biasGelu(const KernelCall &call, const TensorRef &out,
                const TensorRef &pre, const TensorRef &bias, int64_t n,
                bool useTanh) {
  return withFloatStorage(call, out.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    int64_t total = out.numElements();
    biasGeluKernel<S><<<gridFor(total), kThreads, 0, streamOf(call).handle()>>>(
        static_cast<S *>(out.data), static_cast<S *>(pre.data),
        static_cast<const S *>(bias.data), total, n, useTanh);
    return checkLaunch(call, "biasGeluKernel");
  });
}

} // namespace

Status runDotGeneral(const KernelCall &call) {
  const TensorRef &lhs = call.inputs[0], &rhs = call.inputs[1];
  const TensorRef &out = call.outputs[0];
  if (!isFloat(lhs.dtype))
    return unsupported(call, lhs.dtype);
  bool gelu = call.op == Opcode::DotGeneralBiasGelu;
  bool geluGrad = call.op == Opcode::DotGeneralGeluGrad;
  bool biased = call.op == Opcode::DotGeneralBias || gelu;
  bool sixteen = lhs.dtype == DType::BF16 || lhs.dtype == DType::F16;
  bool biasDiffers = (biased || geluGrad) && call.inputs[2].dtype != lhs.dtype;
  bool widened = !biased && !geluGrad && out.dtype == DType::F32 && sixteen;
  if (rhs.dtype != lhs.dtype || (out.dtype != lhs.dtype && !widened) ||
      biasDiffers)
    return kernelError(call, std::string("operands ") + dtypeName(lhs.dtype) +
                                 " and " + dtypeName(rhs.dtype) +
                                 " with result " + dtypeName(out.dtype) +
                                 ": the CUDA kernel takes one dtype (or an "
                                 "f32 result of 16-bit operands)");
  int64_t nb = call.ints[0], nc = call.ints[1];
  const int64_t *attrs = call.ints.data + 2;
  bool tf32 = OperandRounding(attrs[2 * nb + 2 * nc]) == OperandRounding::Tf32;
  DimGroups l = groupDims(lhs, attrs, attrs + 2 * nb, nb, nc);
  DimGroups r = groupDims(rhs, attrs + nb, attrs + 2 * nb + nc, nb, nc);
  std::vector<int64_t> lStrides = rowMajorStrides(lhs),
                       rStrides = rowMajorStrides(rhs);
  OperandRuns a{runOf(lhs, lStrides, l.batch), runOf(lhs, lStrides, l.free),
                runOf(lhs, lStrides, l.contract)};
  OperandRuns b{runOf(rhs, rStrides, r.batch), runOf(rhs, rStrides, r.free),
                runOf(rhs, rStrides, r.contract)};
  int64_t batch = a.batch.extent, m = a.free.extent, n = b.free.extent,
          k = a.contract.extent;
  // dot_general_bias_gelu: cuBLASLt's GELU_AUX_BIAS epilogue writes the
  // GELU (D) and the pre-activation (aux) for 16-bit tanh GELUs whose
  // rows are a multiple of 8 elements (the aux matrix's leading dimension
  // must be); elsewhere (f32 and f64, whose tolerances cuBLASLt's own GELU
  // need not meet; the erf form, which it does not compute) the product
  // with its bias and then the gelu kernel, the same two kernels as
  // unfused.
  // dot_general_gelu_grad likewise takes DGELU, the product times gelu' of
  // the pre-activation (the aux matrix, read), or the product and then the
  // gelu_grad kernel in place.
  // DGELU only for bf16: it multiplies the f32 sums by gelu', so an fp16
  // product beyond 65504, which the op rounds to inf (and fp16 training's
  // loss scaling must see), could come out finite.
  bool useTanh = (gelu || geluGrad) && call.ints[call.ints.size - 1] == 1;
  bool geluEpilogue =
      (geluGrad ? lhs.dtype == DType::BF16 : sixteen) && useTanh && n % 8 == 0;
  if (gelu && !geluEpilogue) {
    TRAINC_RETURN_IF_ERROR(runDotGeneral(biasGeluProductCall(call)));
    return runGelu(biasGeluGeluCall(call));
  }
  std::array<TensorRef, 2> gradOperands;
  auto geluGradAlone = [&] {
    return runGeluGrad(geluGradCall(call, gradOperands));
  };
  if (geluGrad && !geluEpilogue) {
    TRAINC_RETURN_IF_ERROR(runDotGeneral(geluGradProductCall(call)));
    return geluGradAlone();
  }
  // dot_general_bias_grad: the sum of lhs (BGRADB) or rhs (BGRADA) over K
  // by cuBLASLt's bias-gradient epilogue; where no algorithm has it (or
  // the product is empty), by Reduction.cu's ReduceSum kernel.
  std::vector<int64_t> sumDims;
  auto sumAlone = [&] { return runReduction(biasGradSumCall(call, sumDims)); };
  bool biasGrad = call.op == Opcode::DotGeneralBiasGrad;
  if (batch == 0 || m == 0 || n == 0)
    return biasGrad ? sumAlone() : okStatus();
  // dot_general_bias: the bias (rhs's free dims) is added to every row of
  // the product by cuBLASLt's bias epilogue, in f32 before the one
  // rounding, as on the CPU; where no algorithm has the epilogue, by a
  // second kernel after the product is rounded (for 16-bit results one
  // rounding more than the CPU's, within the GEMM's tolerance).
  const TensorRef *bias = biased ? &call.inputs[2] : nullptr;
  cudaStream_t stream = streamOf(call).handle();
  if (k == 0) { // An empty sum: +0 everywhere (all-zero bits in every dtype).
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cudaMemsetAsync(out.data, 0,
                            uint64_t(out.numElements()) * dtypeSize(out.dtype),
                            stream)),
        "dot_general: cudaMemsetAsync"));
    if (gelu)
      return biasGelu(call, out, call.outputs[1], *bias, n, useTanh);
    if (geluGrad)
      return geluGradAlone();
    if (bias)
      return addRowBias(call, out, *bias, n);
    return biasGrad ? sumAlone() : okStatus();
  }
  if (batch > INT_MAX)
    return Status(StatusCode::kUnimplemented,
                  "dot_general: a batch of " + std::to_string(batch) +
                      " is above cuBLASLt's 32-bit batch count");

  // rhs^T is cuBLASLt's A ([N, K]), lhs^T its B ([K, M]).
  uint64_t elem = dtypeSize(lhs.dtype);
  Matrix x, y;
  bool xInPlace = asMatrix(rhs.data, b.batch, b.free, b.contract, x);
  bool yInPlace = asMatrix(lhs.data, a.batch, a.contract, a.free, y);
  // The packed rhs starts 256-byte aligned after the packed lhs, so that
  // cuBLASLt may pick its vectorized kernels for it too.
  Scratch packed;
  if (!xInPlace || !yInPlace)
    TRAINC_RETURN_IF_ERROR(packed.allocate(
        call, (yInPlace ? 0 : aligned(elem * uint64_t(lhs.numElements()))) +
                  (xInPlace ? 0 : elem * uint64_t(rhs.numElements()))));
  char *next = packed.as<char>();
  if (!yInPlace) { // lhs as [b, m, k]
    TRAINC_RETURN_IF_ERROR(
        pack(call, lhs, concat({&l.batch, &l.free, &l.contract}), next));
    Run bRun{batch, m * k, true}, mRun{m, k, true}, kRun{k, 1, true};
    asMatrix(next, bRun, kRun, mRun, y); // k has stride 1: always a Matrix
    next += aligned(elem * uint64_t(lhs.numElements()));
  }
  if (!xInPlace) { // rhs as [b, k, n]
    TRAINC_RETURN_IF_ERROR(
        pack(call, rhs, concat({&r.batch, &r.contract, &r.free}), next));
    Run bRun{batch, k * n, true}, kRun{k, n, true}, nRun{n, 1, true};
    asMatrix(next, bRun, nRun, kRun, x); // n has stride 1: always a Matrix
  }
  Epilogue epilogue;
  if (gelu) {
    epilogue.kind = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    epilogue.vector = bias->data;
    epilogue.aux = call.outputs[1].data;
  } else if (geluGrad) {
    epilogue.kind = CUBLASLT_EPILOGUE_DGELU;
    epilogue.aux = call.inputs[2].data;
  } else if (bias) {
    epilogue.kind = CUBLASLT_EPILOGUE_BIAS;
    epilogue.vector = bias->data;
  } else if (biasGrad && call.outputs[1].dtype == out.dtype && !tf32) {
    // The epilogue writes the sum in D's type (fp16's f16 sum of an f32
    // product takes the fallback), and under TF32 may sum the converted
    // tiles, not the operand (the fallback sums the operand itself).
    bool sumRhs = call.ints[call.ints.size - 1] != 0;
    epilogue.kind =
        sumRhs ? CUBLASLT_EPILOGUE_BGRADA : CUBLASLT_EPILOGUE_BGRADB;
    epilogue.vector = call.outputs[1].data;
  }
  bool done = false;
  TRAINC_RETURN_IF_ERROR(runGemm(call, lhs.dtype, out.dtype, tf32,
                                 int32_t(batch), m, n, k, x, y, out.data,
                                 epilogue, done));
  if (gelu && !done)
    return biasGelu(call, out, call.outputs[1], *bias, n, useTanh);
  if (geluGrad && !done)
    return geluGradAlone();
  if (bias && !done)
    return addRowBias(call, out, *bias, n);
  return biasGrad && !done ? sumAlone() : okStatus();
}

} // namespace trainc::cuda
