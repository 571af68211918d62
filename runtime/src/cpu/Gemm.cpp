//===- Gemm.cpp - Matrix products through OpenBLAS on trainc's threads ----===//

#include "cpu/Gemm.h"

#include "base/Parallel.h"

#include <algorithm>
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

/// OpenBLAS, loaded at run time (see Gemm.h).
struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  std::string core;  ///< openblas_get_corename(), or "".
  std::string error; ///< Why it could not be loaded, or "".
};

/// The kernels OpenBLAS should use on this CPU when its own detection
/// fell back to the generic x86-64 ones ("Prescott"), by the CPU's
/// features: null where that is all the CPU has.
const char *coreForFeatures() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SKYLAKEX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "HASWELL";
  if (__builtin_cpu_supports("avx"))
    return "SANDYBRIDGE";
#endif
  return nullptr;
}

/// dlopen of the first of OpenBLAS's names that loads (its runtime soname,
/// found on the loader's path, then the library CMake found); null and
/// `error` naming each try when none does.
void *openBlas(std::string &error) {
  error = "OpenBLAS could not be loaded (";
  const char *sep = "";
  for (const char *name : {"libopenblas.so.0", TRAINC_OPENBLAS_PATH}) {
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      error.clear();
      return handle;
    }
    const char *why = dlerror();
    error += std::string(sep) + (why ? why : name);
    sep = "; ";
  }
  error += "): install it (apt-get install libopenblas0)";
  return nullptr;
}

Blas loadBlas() {
  Blas blas;
  void *handle = openBlas(blas.error);
  if (!handle)
    return blas;
  auto corename = [&] {
    auto fn =
        reinterpret_cast<char *(*)()>(dlsym(handle, "openblas_get_corename"));
    return std::string(fn ? fn() : "");
  };
  blas.core = corename();
  // OpenBLAS picks its kernels when it loads, by the CPU's model; a model
  // newer than its table (0.3.21 and a 2023 Xeon) gets the generic SSE3
  // ones, 3x slower on this project's machines. Then load it again with
  // the kernels the CPU's features allow, unless the user chose some. (A
  // process that has OpenBLAS loaded already keeps it as it is: dlclose
  // does not unload it.)
  const char *better = coreForFeatures();
  if (blas.core == "Prescott" && better && !std::getenv("OPENBLAS_CORETYPE") &&
      dlclose(handle) == 0) {
    setenv("OPENBLAS_CORETYPE", better, 0);
    handle = openBlas(blas.error);
    unsetenv("OPENBLAS_CORETYPE");
    if (!handle) // It loaded before: the generic kernels, then.
      handle = openBlas(blas.error);
    if (!handle)
      return blas;
    blas.core = corename();
  }
  blas.sgemm =
      reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(handle, "cblas_sgemm"));
  blas.dgemm =
      reinterpret_cast<decltype(&cblas_dgemm)>(dlsym(handle, "cblas_dgemm"));
  auto setThreads = reinterpret_cast<void (*)(int)>(
      dlsym(handle, "openblas_set_num_threads"));
  if (!blas.sgemm || !blas.dgemm || !setThreads) {
    blas.error = "the OpenBLAS library loaded has no cblas_sgemm, cblas_dgemm "
                 "or openblas_set_num_threads";
    blas.sgemm = nullptr;
    return blas;
  }
  // OpenBLAS computes on the thread that calls it; trainc's pool
  // parallelizes.
  setThreads(1);
  return blas;
}

const Blas &loadedBlas() {
  static const Blas loaded = loadBlas();
  return loaded;
}

/// Loads OpenBLAS as the runtime library itself loads, as when it was
/// linked: setenv is safe only while no other thread reads the
/// environment, which at load time (before main, or in dlopen of the C
/// API's library) is the likeliest. A failure is reported when a CPU
/// device is made (loadGemm).
[[maybe_unused]] const bool kLoadedAtStart = (loadedBlas(), true);

const Blas &blas() {
  const Blas &loaded = loadedBlas();
  if (!loaded.sgemm) { // The CPU device's creation reports this first.
    std::fprintf(stderr, "trainc: %s\n", loaded.error.c_str());
    std::abort();
  }
  return loaded;
}

void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
              float alpha, const float *a, int lda, const float *b, int ldb,
              float beta, float *c, int ldc) {
  blas().sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
               ldc);
}
void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
              double alpha, const double *a, int lda, const double *b, int ldb,
              double beta, double *c, int ldc) {
  blas().dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
               ldc);
}

/// Whether C = A B^T (A [m, k], B [n, k]) is faster as its transpose,
/// C^T = B A^T, written to scratch and transposed back. OpenBLAS's f32
/// kernels (0.3.21, SkylakeX and Cooperlake on a Zen 4) run this product
/// slowly with few rows and a long sum: the weight gradient of a
/// convolution with 32 or 64 output channels over 1,024 or more positions
/// (dY [Cout, NP] times the patches [CK, NP] transposed). One thread, m in
/// 16..256, n in 144..4096, k in 64..4096: with m <= 64, m < n and k >=
/// 1024 the swap was 1.1-2.1x faster in every case; with k = 64 it lost up
/// to 1.6x. Its bits equalled the direct call's every time (each sum runs
/// over k in the same order). f64's dgemm gained nothing (0.77-1.22x), so
/// it is never swapped. The transpose copies m n elements: 1/(2k) of the
/// product's work.
constexpr int64_t kSwapMaxRows = 64, kSwapMinSum = 1024;

bool swapIsFaster(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  return !ta && tb && m <= kSwapMaxRows && m < n && k >= kSwapMinSum;
}

/// c[i, j] (row stride ldc) = s[j, i] for i < m, j < n (s is [n, m]), in
/// tiles so that both sides stay in cache.
void transposeInto(const float *s, int64_t m, int64_t n, float *c,
                   int64_t ldc) {
  constexpr int64_t kTile = 32;
  for (int64_t j0 = 0; j0 < n; j0 += kTile)
    for (int64_t i0 = 0; i0 < m; i0 += kTile)
      for (int64_t i = i0, i1 = std::min(m, i0 + kTile); i < i1; ++i)
        for (int64_t j = j0, j1 = std::min(n, j0 + kTile); j < j1; ++j)
          c[i * ldc + j] = s[j * m + i];
}

template <typename T>
void gemmImpl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
              const T *a, int64_t lda, const T *b, int64_t ldb, T *c,
              int64_t ldc, T beta = T(0)) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) { // An empty sum; BLAS would reject the leading dimensions.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (beta == 0.0f && swapIsFaster(ta, tb, m, n, k)) {
      // Scratch per thread (m n <= 64 n floats), kept, outside the memory
      // plan: the same shapes come every step.
      thread_local std::vector<float> scratch;
      scratch.resize(size_t(m * n));
      blasGemm(CblasNoTrans, CblasTrans, int(n), int(m), int(k), alpha, b,
               int(ldb), a, int(lda), 0.0f, scratch.data(), int(m));
      transposeInto(scratch.data(), m, n, c, ldc);
      return;
    }
  }
  blasGemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
           int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c,
           int(ldc));
}

/// Rows (or columns) of a block: enough that BLAS runs at full speed.
constexpr int64_t kMinBlock = 64;

/// Rows [0, rows) of c (row stride ldc), columns [0, cols): += bias[j].
template <typename T>
void addRowBias(T *c, int64_t ldc, int64_t rows, int64_t cols, const T *bias) {
  for (int64_t i = 0; i < rows; ++i) {
    T *row = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j)
      row[j] += bias[j];
  }
}

template <typename T>
void batchedGemmImpl(int64_t batch, bool ta, bool tb, int64_t m, int64_t n,
                     int64_t k, const T *a, const T *b, T *c,
                     const T *rowBias) {
  // Blocks per product: one per thread when the batch alone does not give
  // every thread work, along the larger of m and n. Not more: each block
  // packs its own copy of the shared operand and runs a smaller GEMM, and
  // on the benchmark GPT's shapes two blocks per thread ran 2-3% slower
  // (tools/bench_train.py --baseline-bin-dir, 1 and 2 threads).
  int threads = parallelThreads();
  bool splitRows = m >= n;
  int64_t extent = splitRows ? m : n;
  int64_t blocks = 1;
  if (batch < threads)
    blocks = std::clamp<int64_t>(extent / kMinBlock, 1,
                                 (threads + batch - 1) / batch);
  int64_t per = (extent + blocks - 1) / blocks;
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  parallelFor(batch * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t i = t / blocks, lo = (t % blocks) * per,
              hi = std::min(extent, lo + per);
      if (lo >= hi)
        continue;
      const T *ai = a + i * m * k, *bi = b + i * k * n;
      T *ci = c + i * m * n;
      if (splitRows) { // rows [lo, hi) of A and C
        gemm(ta, tb, hi - lo, n, k, T(1), ai + (ta ? lo : lo * k), lda, bi, ldb,
             ci + lo * n, n);
        if (rowBias)
          addRowBias(ci + lo * n, n, hi - lo, n, rowBias);
      } else { // columns [lo, hi) of B and C
        gemm(ta, tb, m, hi - lo, k, T(1), ai, lda, bi + (tb ? lo * k : lo), ldb,
             ci + lo, n);
        if (rowBias)
          addRowBias(ci + lo, n, m, hi - lo, rowBias + lo);
      }
    }
  });
}

} // namespace

Status loadGemm(std::string *core) {
  const Blas &loaded = loadedBlas();
  if (!loaded.sgemm)
    return Status(StatusCode::kUnavailable, loaded.error);
  if (core)
    *core = loaded.core;
  return okStatus();
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
          const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
          int64_t ldc, float beta) {
  gemmImpl(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, beta);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double *c,
          int64_t ldc, double beta) {
  gemmImpl(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, beta);
}

void batchedGemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const float *a, const float *b, float *c,
                 const float *rowBias) {
  batchedGemmImpl(batch, ta, tb, m, n, k, a, b, c, rowBias);
}

void batchedGemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const double *a, const double *b, double *c,
                 const double *rowBias) {
  batchedGemmImpl(batch, ta, tb, m, n, k, a, b, c, rowBias);
}

} // namespace trainc::cpu
