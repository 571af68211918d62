//===- Gemm.h - Matrix products through OpenBLAS on trainc's threads -*- C++
//-*-=//
//
// Every GEMM of the CPU device goes through here. OpenBLAS runs
// single-threaded (set once, on first use) and trainc's own pool
// (base/Parallel.h) splits the work: over the batch of a batched product,
// or into row or column blocks of one large product. One pool for all
// kernels: OpenBLAS's threads spin after each call, and on a machine with
// few cores they took the cores trainc's elementwise kernels ran on.
//
// Row-major throughout; `ta`/`tb` mean A is stored [k, m] / B is [n, k].
//
// OpenBLAS is loaded at run time (dlopen of libopenblas.so.0 as the
// library starts, else of the file CMake found), not linked:
// it picks its kernels as it loads, by the CPU's model, and a model newer
// than its table gets the generic x86-64 ones ("Prescott"; OpenBLAS 0.3.21
// on the Xeons this project runs on: a 256x1024x1024 sgemm took 8.5 ms
// against 2.6 ms with its AVX-512 kernels). Then it is loaded again with
// OPENBLAS_CORETYPE set from the CPU's features (AVX-512: SKYLAKEX, AVX2
// and FMA: HASWELL, AVX: SANDYBRIDGE), unless the user set it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_GEMM_H
#define TRAINC_RUNTIME_CPU_GEMM_H

#include "base/Status.h"

#include <cstdint>
#include <string>

namespace trainc::cpu {

/// Loads OpenBLAS (once; the CPU device's creation calls it): an error
/// naming the library when it cannot be loaded. `core`, when given, gets
/// the kernels OpenBLAS uses ("SkylakeX").
Status loadGemm(std::string *core = nullptr);

/// C[m, n] = alpha * op(A) op(B) + beta * C, one BLAS call on the calling
/// thread; lda/ldb/ldc are the row strides as stored.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
          const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
          int64_t ldc, float beta = 0);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double *c,
          int64_t ldc, double beta = 0);

/// C_i = op(A_i) op(B_i) for i < batch, each operand densely packed
/// ([m, k] or [k, m] etc.) at a + i*m*k, b + i*k*n, c + i*m*n; split over
/// trainc's threads. With `rowBias` (n values), C_i[r, j] += rowBias[j]
/// afterwards, each block by the thread that computed it, while the block
/// is in its cache: the same sums as a separate add.
void batchedGemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const float *a, const float *b, float *c,
                 const float *rowBias = nullptr);
void batchedGemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const double *a, const double *b, double *c,
                 const double *rowBias = nullptr);

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_GEMM_H
