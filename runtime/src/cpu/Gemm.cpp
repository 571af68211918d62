//===- Gemm.cpp - Matrix products through OpenBLAS on trainc's threads ----===//

#include "cpu/Gemm.h"

#include "base/Parallel.h"

#include <algorithm>
#include <cblas.h>
#include <mutex>

namespace trainc::cpu {
namespace {

/// OpenBLAS computes on the thread that calls it; trainc's pool parallelizes.
void singleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
              float alpha, const float *a, int lda, const float *b, int ldb,
              float beta, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}
void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
              double alpha, const double *a, int lda, const double *b, int ldb,
              double beta, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
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
  singleThreadedBlas();
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
