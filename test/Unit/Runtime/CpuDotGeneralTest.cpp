//===- CpuDotGeneralTest.cpp - dot_general against a naive reference ------===//
//
// Every case compares the kernel with a double-precision loop over the
// result and the contracting dims, written straight from graph.dot_general's
// definition (result dims: batch, lhs free, rhs free).
//
// Tolerance: the kernel computes each element as a K-term dot product in
// the compute type (unit roundoff u = 2^-24 for f32/f16/bf16, 2^-53 for
// f64), for which the classical bound is |err| <= gamma_K * sum_k |a_k b_k|
// with gamma_K = K u / (1 - K u), whatever order or blocking the BLAS
// uses. 16-bit results are then rounded once more (u16 = 2^-8 for bf16,
// 2^-11 for f16), adding u16 * |c|. A wrong dim order or pairing gives
// errors of the size of the values themselves, far outside this bound.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "base/Float16.h"
#include "cpu/Gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace trainc::cpu {
namespace {

using testing::DotDims;
using testing::dotInts;
using testing::TestTensor;

std::vector<int64_t> freeDims(int rank, const std::vector<int64_t> &batch,
                              const std::vector<int64_t> &contract) {
  std::vector<int64_t> free;
  for (int d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      free.push_back(d);
  return free;
}

int64_t offsetOf(const std::vector<int64_t> &dims,
                 const std::vector<int64_t> &index) {
  int64_t off = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    off = off * dims[d] + index[d];
  return off;
}

/// The result shape of dot_general, by its definition.
std::vector<int64_t> resultDims(const TestTensor &lhs, const TestTensor &rhs,
                                const DotDims &dd) {
  std::vector<int64_t> dims;
  for (int64_t d : dd.lhsBatch)
    dims.push_back(lhs.dims()[d]);
  for (int64_t d :
       freeDims(int(lhs.dims().size()), dd.lhsBatch, dd.lhsContract))
    dims.push_back(lhs.dims()[d]);
  for (int64_t d :
       freeDims(int(rhs.dims().size()), dd.rhsBatch, dd.rhsContract))
    dims.push_back(rhs.dims()[d]);
  return dims;
}

/// Checks runDotGeneral on `lhs` x `rhs` against the naive double loop.
void checkDot(const TestTensor &lhs, const TestTensor &rhs, const DotDims &dd,
              const std::vector<int64_t> &expectedDims) {
  std::vector<int64_t> outDims = resultDims(lhs, rhs, dd);
  ASSERT_EQ(outDims, expectedDims);
  TestTensor out(lhs.dtype(), outDims);
  for (int64_t i = 0; i < out.size(); ++i)
    out.set(i, 7.0); // The kernel must overwrite every element.
  Status s = testing::runKernel(runDotGeneral, Opcode::DotGeneral, {&lhs, &rhs},
                                {&out}, dotInts(dd));
  ASSERT_TRUE(s.ok()) << s.toString();

  const std::vector<int64_t> &ld = lhs.dims(), &rd = rhs.dims();
  std::vector<int64_t> lFree = freeDims(int(ld.size()), dd.lhsBatch,
                                        dd.lhsContract),
                       rFree = freeDims(int(rd.size()), dd.rhsBatch,
                                        dd.rhsContract);
  int64_t k = 1;
  for (int64_t d : dd.lhsContract)
    k *= ld[d];
  double u = testing::computeEps(lhs.dtype());
  double gamma = k * u / (1 - k * u);
  double u16 = lhs.dtype() == DType::F16 || lhs.dtype() == DType::BF16
                   ? testing::storageEps(lhs.dtype())
                   : 0;

  std::vector<int64_t> resIdx(outDims.size(), 0);
  for (int64_t flat = 0; flat < out.size(); ++flat) {
    // Decode the result index; place it in the operands' indices.
    for (int64_t r = flat, d = int64_t(outDims.size()) - 1; d >= 0; --d) {
      resIdx[d] = r % outDims[d];
      r /= outDims[d];
    }
    std::vector<int64_t> li(ld.size(), 0), ri(rd.size(), 0);
    size_t pos = 0;
    for (size_t b = 0; b < dd.lhsBatch.size(); ++b, ++pos)
      li[dd.lhsBatch[b]] = ri[dd.rhsBatch[b]] = resIdx[pos];
    for (int64_t d : lFree)
      li[d] = resIdx[pos++];
    for (int64_t d : rFree)
      ri[d] = resIdx[pos++];
    double ref = 0, absSum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t r = kk, c = int64_t(dd.lhsContract.size()) - 1; c >= 0;
           --c) {
        int64_t size = ld[dd.lhsContract[c]];
        li[dd.lhsContract[c]] = ri[dd.rhsContract[c]] = r % size;
        r /= size;
      }
      double a = lhs.get(offsetOf(ld, li)), b = rhs.get(offsetOf(rd, ri));
      ref += a * b;
      absSum += std::fabs(a * b);
    }
    double tol = gamma * absSum + u16 * std::fabs(ref);
    ASSERT_LE(std::fabs(out.get(flat) - ref), tol)
        << "result element " << flat << ": got " << out.get(flat)
        << ", expected " << ref;
  }
}

/// OpenBLAS loads, and on a CPU with AVX2 or AVX-512 does not run its
/// generic x86-64 kernels: 0.3.21 falls back to them ("Prescott") for a
/// CPU model newer than its table, 3x slower, unless trainc loads it again
/// with the kernels the CPU's features allow (cpu/Gemm.h).
TEST(CpuDotGeneral, OpenBlasUsesTheCpusVectorKernels) {
  std::string core;
  Status s = cpu::loadGemm(&core);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_FALSE(core.empty());
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!std::getenv("OPENBLAS_CORETYPE") && __builtin_cpu_supports("avx2")) {
    EXPECT_NE(core, "Prescott") << "OpenBLAS runs its generic kernels";
  }
#endif
}

TEST(CpuDotGeneral, PlainMatmul) {
  TestTensor a = testing::randomTensor(DType::F32, {37, 29}, 1);
  TestTensor b = testing::randomTensor(DType::F32, {29, 23}, 2);
  checkDot(a, b, {{}, {}, {1}, {0}}, {37, 23});
}

TEST(CpuDotGeneral, BatchedMatmul) {
  TestTensor a = testing::randomTensor(DType::F32, {3, 9, 17}, 3);
  TestTensor b = testing::randomTensor(DType::F32, {3, 17, 5}, 4);
  checkDot(a, b, {{0}, {0}, {2}, {1}}, {3, 9, 5});
}

TEST(CpuDotGeneral, LinearLayerFoldsLeadingDims) {
  // x [B, T, K] @ w [K, N]: no batching dims, lhs dims 0 and 1 are free.
  TestTensor x = testing::randomTensor(DType::F32, {4, 6, 32}, 5);
  TestTensor w = testing::randomTensor(DType::F32, {32, 24}, 6);
  checkDot(x, w, {{}, {}, {2}, {0}}, {4, 6, 24});
}

TEST(CpuDotGeneral, TransposedOperandsInPlace) {
  // lhs [K, M] contracting dim 0, rhs [N, K] contracting dim 1: A^T B^T.
  TestTensor a = testing::randomTensor(DType::F32, {19, 11}, 7);
  TestTensor b = testing::randomTensor(DType::F32, {13, 19}, 8);
  checkDot(a, b, {{}, {}, {0}, {1}}, {11, 13});
  // The same with a batch: [B, K, M] x [B, N, K].
  TestTensor c = testing::randomTensor(DType::F32, {2, 19, 11}, 9);
  TestTensor d = testing::randomTensor(DType::F32, {2, 13, 19}, 10);
  checkDot(c, d, {{0}, {0}, {1}, {2}}, {2, 11, 13});
}

/// A few rows times a long sum against [N, K] (a convolution's weight
/// gradient: dY [Cout, NP] x patches [CK, NP]^T) is computed as its
/// transpose and transposed back (cpu/Gemm.cpp, swapIsFaster): the values
/// against the reference, through the dot kernel (whose threads split the
/// columns, so each block writes a window of C's rows) and through gemm
/// with a row stride wider than the block, whose padding stays untouched.
TEST(CpuDotGeneral, FewRowsLongSumRunsTransposed) {
  TestTensor dy = testing::randomTensor(DType::F32, {13, 1031}, 40);
  TestTensor p = testing::randomTensor(DType::F32, {150, 1031}, 41);
  checkDot(dy, p, {{}, {}, {1}, {1}}, {13, 150});
  TestTensor dyb = testing::randomTensor(DType::F32, {2, 64, 1024}, 42);
  TestTensor pb = testing::randomTensor(DType::F32, {2, 65, 1024}, 43);
  checkDot(dyb, pb, {{0}, {0}, {2}, {2}}, {2, 64, 65});

  constexpr int64_t m = 5, n = 70, k = 1500, ldc = n + 3;
  std::vector<float> a(m * k), b(n * k), c(m * ldc, -1.0f);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int64_t(i * 7 % 13) - 6) / 8;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int64_t(i * 5 % 11) - 5) / 4;
  gemm(false, true, m, n, k, 0.5f, a.data(), k, b.data(), k, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0; // exact: small dyadic values, sums below 2^24
      for (int64_t l = 0; l < k; ++l)
        ref += double(a[i * k + l]) * b[j * k + l];
      ASSERT_EQ(c[i * ldc + j], float(0.5 * ref)) << i << ", " << j;
    }
    for (int64_t j = n; j < ldc; ++j)
      ASSERT_EQ(c[i * ldc + j], -1.0f) << "padding " << i << ", " << j;
  }
}

TEST(CpuDotGeneral, BatchNotLeadingIsPacked) {
  // lhs [M, B, K], rhs [K, B, N]: neither operand is [B, ...] in memory.
  TestTensor a = testing::randomTensor(DType::F32, {7, 3, 10}, 11);
  TestTensor b = testing::randomTensor(DType::F32, {10, 3, 6}, 12);
  checkDot(a, b, {{1}, {1}, {2}, {0}}, {3, 7, 6});
}

TEST(CpuDotGeneral, MultipleContractingDims) {
  // Contiguous in the same order: lhs [M, K1, K2] x rhs [K1, K2, N].
  TestTensor a = testing::randomTensor(DType::F32, {5, 4, 6}, 13);
  TestTensor b = testing::randomTensor(DType::F32, {4, 6, 7}, 14);
  checkDot(a, b, {{}, {}, {1, 2}, {0, 1}}, {5, 7});
  // Paired out of memory order: lhs [K1, M, K2] contracting (K2, K1) with
  // rhs [K2, N, K1] contracting (K2, K1).
  TestTensor c = testing::randomTensor(DType::F32, {4, 5, 6}, 15);
  TestTensor d = testing::randomTensor(DType::F32, {6, 7, 4}, 16);
  checkDot(c, d, {{}, {}, {2, 0}, {0, 2}}, {5, 7});
}

TEST(CpuDotGeneral, ManyBatchAndFreeDims) {
  // lhs [B1, M1, B2, K, M2], rhs [N1, B2, K, B1].
  TestTensor a = testing::randomTensor(DType::F32, {2, 3, 4, 5, 2}, 17);
  TestTensor b = testing::randomTensor(DType::F32, {3, 4, 5, 2}, 18);
  checkDot(a, b, {{0, 2}, {3, 1}, {3}, {2}}, {2, 4, 3, 2, 3});
}

TEST(CpuDotGeneral, OuterProductAndScalar) {
  TestTensor a = testing::randomTensor(DType::F32, {6}, 19);
  TestTensor b = testing::randomTensor(DType::F32, {4}, 20);
  checkDot(a, b, {{}, {}, {}, {}}, {6, 4});
  TestTensor s = testing::randomTensor(DType::F32, {}, 21);
  checkDot(s, b, {{}, {}, {}, {}}, {4});
}

TEST(CpuDotGeneral, F64) {
  TestTensor a = testing::randomTensor(DType::F64, {2, 33, 40}, 22);
  TestTensor b = testing::randomTensor(DType::F64, {2, 40, 21}, 23);
  checkDot(a, b, {{0}, {0}, {2}, {1}}, {2, 33, 21});
  TestTensor c = testing::randomTensor(DType::F64, {40, 33}, 24);
  checkDot(c, b, {{}, {}, {0}, {1}}, {33, 2, 21});
}

TEST(CpuDotGeneral, Bf16AndF16AccumulateInF32) {
  for (DType t : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x = testing::randomTensor(t, {3, 5, 64}, 25);
    TestTensor w = testing::randomTensor(t, {64, 9}, 26);
    checkDot(x, w, {{}, {}, {2}, {0}}, {3, 5, 9});
    TestTensor c = testing::randomTensor(t, {64, 5}, 27);
    checkDot(c, w, {{}, {}, {0}, {0}}, {5, 9});
  }
}

TEST(CpuDotGeneral, ZeroSizeDims) {
  // M = 0: an empty result.
  TestTensor a = testing::randomTensor(DType::F32, {0, 8}, 28);
  TestTensor b = testing::randomTensor(DType::F32, {8, 3}, 29);
  checkDot(a, b, {{}, {}, {1}, {0}}, {0, 3});
  // Batch = 0.
  TestTensor c = testing::randomTensor(DType::F32, {0, 2, 8}, 30);
  TestTensor d = testing::randomTensor(DType::F32, {0, 8, 3}, 31);
  checkDot(c, d, {{0}, {0}, {2}, {1}}, {0, 2, 3});
  // K = 0: every element is an empty sum, 0 (checkDot pre-fills 7s).
  for (DType t : {DType::F32, DType::BF16}) {
    TestTensor e = testing::randomTensor(t, {4, 0}, 32);
    TestTensor f = testing::randomTensor(t, {0, 5}, 33);
    checkDot(e, f, {{}, {}, {1}, {0}}, {4, 5});
  }
}

// dot_general_bias is, bit for bit, the product's sums plus the bias
// broadcast onto the result's last dims, rounded once: for f32 and f64,
// dot_general and then graph.add (the bias is added inside the GEMM's row
// or column blocks); for 16-bit types, the f32 product (dot_general's
// f32_result) plus the bias in f32, then rounded to the type (a GPU GEMM's
// bias epilogue), one rounding fewer than dot_general then add.
TEST(CpuDotGeneral, BiasIsTheAddBitForBit) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
  } cases[] = {
      {DType::F32, {4, 32, 24}, {40, 24}, {{}, {}, {2}, {1}}}, // rows split
      {DType::F32, {8, 300}, {300, 200}, {{}, {}, {1}, {0}}},  // columns split
      {DType::F32, {3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}}, // batched
      {DType::F32, {2, 3, 7}, {7, 4, 5}, {{}, {}, {2}, {0}}},     // bias [4, 5]
      {DType::F64, {33, 40}, {40, 21}, {{}, {}, {1}, {0}}},
      {DType::BF16, {3, 5, 64}, {64, 9}, {{}, {}, {2}, {0}}},
      {DType::F16, {5, 64}, {9, 64}, {{}, {}, {1}, {1}}},
      {DType::F32, {4, 0}, {0, 5}, {{}, {}, {1}, {0}}}, // K = 0: the bias
      {DType::BF16, {4, 0}, {0, 5}, {{}, {}, {1}, {0}}},
      {DType::F64, {4, 0}, {0, 5}, {{}, {}, {1}, {0}}},
  };
  uint32_t seed = 40;
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(dtypeName(c.t)) + " case " +
                 std::to_string(&c - cases));
    TestTensor lhs = testing::randomTensor(c.t, c.lhs, seed++);
    TestTensor rhs = testing::randomTensor(c.t, c.rhs, seed++);
    std::vector<int64_t> outDims = resultDims(lhs, rhs, c.dims);
    std::vector<int64_t> rFree =
        freeDims(int(c.rhs.size()), c.dims.rhsBatch, c.dims.rhsContract);
    std::vector<int64_t> biasDims, broadcastDims;
    for (size_t i = 0; i < rFree.size(); ++i) {
      biasDims.push_back(c.rhs[rFree[i]]);
      broadcastDims.push_back(int64_t(outDims.size() - rFree.size() + i));
    }
    TestTensor bias = testing::randomTensor(c.t, biasDims, seed++);
    std::vector<int64_t> ints = dotInts(c.dims);

    TestTensor fused(c.t, outDims);
    Status s = testing::runKernel(runDotGeneral, Opcode::DotGeneralBias,
                                  {&lhs, &rhs, &bias}, {&fused}, ints);
    ASSERT_TRUE(s.ok()) << s.toString();

    // The sums in the compute type: f32 for 16-bit operands.
    bool narrow = c.t == DType::BF16 || c.t == DType::F16;
    DType wide = narrow ? DType::F32 : c.t;
    TestTensor product(wide, outDims), broadcast(c.t, outDims),
        broadcastWide(wide, outDims), sumWide(wide, outDims), sum(c.t, outDims);
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                   {&lhs, &rhs}, {&product}, ints)
                    .ok());
    ASSERT_TRUE(testing::runKernel(runDataMovement, Opcode::BroadcastInDim,
                                   {&bias}, {&broadcast}, broadcastDims)
                    .ok());
    ASSERT_TRUE(testing::runKernel(runElementwise, Opcode::Convert,
                                   {&broadcast}, {&broadcastWide}, {})
                    .ok());
    ASSERT_TRUE(testing::runKernel(runElementwise, Opcode::Add,
                                   {&product, &broadcastWide}, {&sumWide}, {})
                    .ok());
    ASSERT_TRUE(testing::runKernel(runElementwise, Opcode::Convert, {&sumWide},
                                   {&sum}, {})
                    .ok());
    if (narrow && lhs.size() > 0) {
      // One rounding fewer than dot_general then add: some element shows it.
      TestTensor rounded(c.t, outDims), twice(c.t, outDims);
      ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                     {&lhs, &rhs}, {&rounded}, ints)
                      .ok());
      ASSERT_TRUE(testing::runKernel(runElementwise, Opcode::Add,
                                     {&rounded, &broadcast}, {&twice}, {})
                      .ok());
      EXPECT_NE(std::memcmp(twice.ref().data, sum.ref().data,
                            size_t(sum.size()) * dtypeSize(c.t)),
                0);
    }
    for (int64_t i = 0; i < sum.size(); ++i)
      ASSERT_EQ(fused.get(i), sum.get(i)) << "element " << i;
    // get() widens to double: equal values, and the same bits (-0).
    ASSERT_EQ(std::memcmp(fused.ref().data, sum.ref().data,
                          size_t(sum.size()) * dtypeSize(c.t)),
              0);
  }
}

// dot_general_bias_gelu is, bit for bit, dot_general_bias (its second
// result) and gelu of that (its first), for both approximations, every
// float type, a batch, a 2-D bias and K = 0.
TEST(CpuDotGeneral, BiasGeluIsTheBiasThenTheGeluBitForBit) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
    bool tanh;
  } cases[] = {
      {DType::F32, {4, 32, 24}, {40, 24}, {{}, {}, {2}, {1}}, true},
      {DType::F32, {3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}, false},
      {DType::F64, {2, 3, 7}, {7, 4, 5}, {{}, {}, {2}, {0}}, true},
      {DType::BF16, {3, 5, 64}, {64, 9}, {{}, {}, {2}, {0}}, true},
      {DType::BF16, {5, 64}, {9, 64}, {{}, {}, {1}, {1}}, false},
      {DType::F16, {5, 64}, {9, 64}, {{}, {}, {1}, {1}}, true},
      {DType::BF16, {4, 0}, {0, 5}, {{}, {}, {1}, {0}}, true},
  };
  uint32_t seed = 70;
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(dtypeName(c.t)) + " case " +
                 std::to_string(&c - cases));
    TestTensor lhs = testing::randomTensor(c.t, c.lhs, seed++);
    TestTensor rhs = testing::randomTensor(c.t, c.rhs, seed++);
    std::vector<int64_t> outDims = resultDims(lhs, rhs, c.dims);
    std::vector<int64_t> rFree =
        freeDims(int(c.rhs.size()), c.dims.rhsBatch, c.dims.rhsContract);
    std::vector<int64_t> biasDims;
    for (int64_t d : rFree)
      biasDims.push_back(c.rhs[d]);
    TestTensor bias = testing::randomTensor(c.t, biasDims, seed++);
    std::vector<int64_t> ints = dotInts(c.dims);
    TestTensor pre(c.t, outDims), gelu(c.t, outDims);
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneralBias,
                                   {&lhs, &rhs, &bias}, {&pre}, ints)
                    .ok());
    ASSERT_TRUE(testing::runKernel(runGelu, Opcode::Gelu, {&pre}, {&gelu},
                                   {int64_t(c.tanh)})
                    .ok());
    std::vector<int64_t> fusedInts = ints;
    fusedInts.push_back(c.tanh);
    TestTensor fused(c.t, outDims), fusedPre(c.t, outDims);
    Status s =
        testing::runKernel(runDotGeneral, Opcode::DotGeneralBiasGelu,
                           {&lhs, &rhs, &bias}, {&fused, &fusedPre}, fusedInts);
    ASSERT_TRUE(s.ok()) << s.toString();
    size_t bytes = size_t(pre.size()) * dtypeSize(c.t);
    EXPECT_EQ(std::memcmp(fusedPre.ref().data, pre.ref().data, bytes), 0);
    EXPECT_EQ(std::memcmp(fused.ref().data, gelu.ref().data, bytes), 0);
    // Not vacuous: the GELU moved something.
    if (pre.size() > 0) {
      EXPECT_NE(std::memcmp(fused.ref().data, pre.ref().data, bytes), 0);
    }
  }
}

// dot_general_gelu_grad is, bit for bit, dot_general (rounded to its type)
// and then gelu_grad of the pre-activation and that product, for both
// approximations, every float type, a batch and K = 0.
TEST(CpuDotGeneral, GeluGradIsTheProductThenTheGradientBitForBit) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
    bool tanh;
  } cases[] = {
      {DType::F32, {4, 32, 24}, {40, 24}, {{}, {}, {2}, {1}}, true},
      {DType::F32, {3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}, false},
      {DType::F64, {7, 33}, {33, 9}, {{}, {}, {1}, {0}}, true},
      {DType::BF16, {3, 5, 64}, {64, 9}, {{}, {}, {2}, {0}}, true},
      {DType::BF16, {5, 64}, {9, 64}, {{}, {}, {1}, {1}}, false},
      {DType::F16, {5, 64}, {9, 64}, {{}, {}, {1}, {1}}, true},
      {DType::BF16, {4, 0}, {0, 5}, {{}, {}, {1}, {0}}, true},
  };
  uint32_t seed = 90;
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(dtypeName(c.t)) + " case " +
                 std::to_string(&c - cases));
    TestTensor lhs = testing::randomTensor(c.t, c.lhs, seed++);
    TestTensor rhs = testing::randomTensor(c.t, c.rhs, seed++);
    std::vector<int64_t> outDims = resultDims(lhs, rhs, c.dims);
    TestTensor pre = testing::randomTensor(c.t, outDims, seed++);
    std::vector<int64_t> ints = dotInts(c.dims);
    TestTensor product(c.t, outDims), grad(c.t, outDims);
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                   {&lhs, &rhs}, {&product}, ints)
                    .ok());
    ASSERT_TRUE(testing::runKernel(runGeluGrad, Opcode::GeluGrad,
                                   {&pre, &product}, {&grad}, {int64_t(c.tanh)})
                    .ok());
    std::vector<int64_t> fusedInts = ints;
    fusedInts.push_back(c.tanh);
    TestTensor fused(c.t, outDims);
    Status s = testing::runKernel(runDotGeneral, Opcode::DotGeneralGeluGrad,
                                  {&lhs, &rhs, &pre}, {&fused}, fusedInts);
    ASSERT_TRUE(s.ok()) << s.toString();
    size_t bytes = size_t(grad.size()) * dtypeSize(c.t);
    EXPECT_EQ(std::memcmp(fused.ref().data, grad.ref().data, bytes), 0);
    // Not vacuous: the gradient moved something.
    if (grad.size() > 0 && c.lhs.back() > 0) {
      EXPECT_NE(std::memcmp(fused.ref().data, product.ref().data, bytes), 0);
    }
  }
}

// --precision tf32: each f32 operand element is rounded to TF32 before the
// product. The sums are sgemm's in both runs below, so the kernel must give,
// bit for bit, the plain f32 kernel's result on operands rounded first
// (roundToTf32, tested in Float16Test), in every operand layout (in place,
// transposed in place, packed, batched) and with a bias, which is added,
// not rounded.
TEST(CpuDotGeneral, Tf32IsTheProductOfRoundedOperands) {
  struct Case {
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
    bool bias;
  } cases[] = {
      {{37, 29}, {29, 23}, {{}, {}, {1}, {0}}, false},       // plain
      {{19, 11}, {13, 19}, {{}, {}, {0}, {1}}, false},       // both transposed
      {{7, 3, 10}, {10, 3, 6}, {{1}, {1}, {2}, {0}}, false}, // packed
      {{3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}, false}, // batched
      {{4, 32, 24}, {40, 24}, {{}, {}, {2}, {1}}, true},     // linear + bias
      {{8, 300}, {300, 200}, {{}, {}, {1}, {0}}, true},      // columns split
  };
  uint32_t seed = 70;
  for (const Case &c : cases) {
    SCOPED_TRACE("case " + std::to_string(&c - cases));
    TestTensor lhs = testing::randomTensor(DType::F32, c.lhs, seed++);
    TestTensor rhs = testing::randomTensor(DType::F32, c.rhs, seed++);
    TestTensor lhsRounded = lhs, rhsRounded = rhs;
    for (TestTensor *t : {&lhsRounded, &rhsRounded})
      for (int64_t i = 0; i < t->size(); ++i)
        t->set(i, roundToTf32(float(t->get(i))));
    std::vector<int64_t> outDims = resultDims(lhs, rhs, c.dims);
    std::vector<int64_t> biasDims(outDims.end() - 1, outDims.end());
    TestTensor bias = testing::randomTensor(DType::F32, biasDims, seed++);
    Opcode op = c.bias ? Opcode::DotGeneralBias : Opcode::DotGeneral;
    auto inputs = [&](const TestTensor &l, const TestTensor &r) {
      std::vector<const TestTensor *> in = {&l, &r};
      if (c.bias)
        in.push_back(&bias);
      return in;
    };
    TestTensor tf32(DType::F32, outDims), want(DType::F32, outDims),
        exact(DType::F32, outDims);
    ASSERT_TRUE(testing::runKernel(runDotGeneral, op, inputs(lhs, rhs), {&tf32},
                                   dotInts(c.dims, OperandRounding::Tf32))
                    .ok());
    ASSERT_TRUE(testing::runKernel(runDotGeneral, op,
                                   inputs(lhsRounded, rhsRounded), {&want},
                                   dotInts(c.dims))
                    .ok());
    ASSERT_TRUE(testing::runKernel(runDotGeneral, op, inputs(lhs, rhs),
                                   {&exact}, dotInts(c.dims))
                    .ok());
    ASSERT_EQ(
        std::memcmp(tf32.ref().data, want.ref().data, size_t(want.size()) * 4),
        0);
    // The rounding changed something (else the case tests nothing).
    EXPECT_NE(std::memcmp(tf32.ref().data, exact.ref().data,
                          size_t(exact.size()) * 4),
              0);
  }
}

// graph.dot_general's f32_result: 16-bit operands and an f32 result are the
// f32 kernel's result on the operands' values (widened exactly), bit for
// bit, in every layout; rounded to the 16-bit type it is the 16-bit
// product, and it keeps bits that product loses.
TEST(CpuDotGeneral, F32ResultIsTheUnroundedSum) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
  } cases[] = {
      {DType::BF16, {37, 29}, {29, 23}, {{}, {}, {1}, {0}}},       // plain
      {DType::F16, {19, 11}, {13, 19}, {{}, {}, {0}, {1}}},        // transposed
      {DType::BF16, {7, 3, 10}, {10, 3, 6}, {{1}, {1}, {2}, {0}}}, // packed
      {DType::F16, {3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}},  // batched
  };
  uint32_t seed = 90;
  for (const Case &c : cases) {
    SCOPED_TRACE("case " + std::to_string(&c - cases));
    TestTensor lhs = testing::randomTensor(c.t, c.lhs, seed++);
    TestTensor rhs = testing::randomTensor(c.t, c.rhs, seed++);
    TestTensor lhs32(DType::F32, c.lhs, lhs.values()),
        rhs32(DType::F32, c.rhs, rhs.values());
    std::vector<int64_t> outDims = resultDims(lhs, rhs, c.dims);
    TestTensor wide(DType::F32, outDims), want(DType::F32, outDims),
        narrow(c.t, outDims);
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                   {&lhs, &rhs}, {&wide}, dotInts(c.dims))
                    .ok());
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                   {&lhs32, &rhs32}, {&want}, dotInts(c.dims))
                    .ok());
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                   {&lhs, &rhs}, {&narrow}, dotInts(c.dims))
                    .ok());
    ASSERT_EQ(
        std::memcmp(wide.ref().data, want.ref().data, size_t(want.size()) * 4),
        0);
    bool lost = false;
    for (int64_t i = 0; i < wide.size(); ++i) {
      TestTensor rounded(c.t, {1}, {wide.get(i)});
      ASSERT_EQ(rounded.get(0), narrow.get(i)) << "element " << i;
      lost |= wide.get(i) != narrow.get(i);
    }
    EXPECT_TRUE(lost); // else the case shows nothing
  }
}

// dot_general_bias_grad: the product is DotGeneral's and the sum ReduceSum's
// over the summed operand's contracting dims, bit for bit, whichever
// operand is summed, in every float dtype, widened or not, and for empty
// products (the sum is still written) and empty sums (zeros).
TEST(CpuDotGeneral, BiasGradIsTheProductAndTheSumBitForBit) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
    bool sumRhs, f32Result, f32Sum;
  } cases[] = {
      // dy [B, S, out] as lhs: dw = dy^T x, db = sum(dy) (a linear layer).
      {DType::F32,
       {3, 7, 13},
       {3, 7, 11},
       {{}, {}, {0, 1}, {0, 1}},
       false,
       false,
       false},
      // x as lhs, dy as rhs (Conv1D), the contraction in another order.
      {DType::F32,
       {3, 7, 11},
       {3, 7, 13},
       {{}, {}, {1, 0}, {1, 0}},
       true,
       false,
       false},
      {DType::F64, {29, 5}, {29, 9}, {{}, {}, {0}, {0}}, false, false, false},
      // Mixed precision: 16-bit operands, f32 product and sum.
      {DType::BF16,
       {4, 33, 17},
       {4, 33, 6},
       {{}, {}, {0, 1}, {0, 1}},
       false,
       true,
       true},
      {DType::BF16,
       {4, 33, 6},
       {4, 33, 17},
       {{}, {}, {0, 1}, {0, 1}},
       true,
       true,
       true},
      {DType::F16, {21, 10}, {21, 12}, {{}, {}, {0}, {0}}, false, false, false},
      // fp16 training: an f32 product and an f16 sum.
      {DType::F16, {21, 10}, {21, 12}, {{}, {}, {0}, {0}}, true, true, false},
      {DType::BF16, {21, 10}, {21, 12}, {{}, {}, {0}, {0}}, true, false, true},
      // A transposed dy (contracting its last dim) is packed for the GEMM.
      {DType::F32, {13, 9}, {5, 9}, {{}, {}, {1}, {1}}, false, false, false},
      // Empty: no rhs free elements (the product is empty, the sum is not),
      // and an empty contraction (zeros).
      {DType::F32, {6, 4}, {6, 0}, {{}, {}, {0}, {0}}, false, false, false},
      {DType::BF16, {0, 4}, {0, 3}, {{}, {}, {0}, {0}}, true, true, true},
  };
  uint32_t seed = 120;
  for (const Case &c : cases) {
    SCOPED_TRACE("case " + std::to_string(&c - cases));
    TestTensor lhs = testing::randomTensor(c.t, c.lhs, seed++);
    TestTensor rhs = testing::randomTensor(c.t, c.rhs, seed++);
    const TestTensor &summed = c.sumRhs ? rhs : lhs;
    const std::vector<int64_t> &contract =
        c.sumRhs ? c.dims.rhsContract : c.dims.lhsContract;
    std::vector<int64_t> sumDims;
    for (int64_t d : freeDims(int(summed.dims().size()), {}, contract))
      sumDims.push_back(summed.dims()[d]);
    std::vector<int64_t> outDims = resultDims(lhs, rhs, c.dims);
    DType productType = c.f32Result ? DType::F32 : c.t;
    DType sumType = c.f32Sum ? DType::F32 : c.t;
    TestTensor product(productType, outDims), sum(sumType, sumDims),
        wantProduct(productType, outDims), wantSum(sumType, sumDims);
    for (TestTensor *t : {&product, &sum})
      for (int64_t i = 0; i < t->size(); ++i)
        t->set(i, 7.0); // The kernel must overwrite every element.
    std::vector<int64_t> ints = dotInts(c.dims);
    ints.push_back(c.sumRhs);
    Status s = testing::runKernel(runDotGeneral, Opcode::DotGeneralBiasGrad,
                                  {&lhs, &rhs}, {&product, &sum}, ints);
    ASSERT_TRUE(s.ok()) << s.toString();
    ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                   {&lhs, &rhs}, {&wantProduct},
                                   dotInts(c.dims))
                    .ok());
    ASSERT_TRUE(testing::runKernel(runReduction, Opcode::ReduceSum, {&summed},
                                   {&wantSum}, contract)
                    .ok());
    size_t productBytes = size_t(product.size()) * dtypeSize(productType);
    size_t sumBytes = size_t(sum.size()) * dtypeSize(sumType);
    EXPECT_EQ(
        std::memcmp(product.ref().data, wantProduct.ref().data, productBytes),
        0);
    EXPECT_EQ(std::memcmp(sum.ref().data, wantSum.ref().data, sumBytes), 0);
    // The sum is the summed operand's, over the right dims: against a
    // double loop from the definition. For a few dozen f32 or 16-bit terms
    // in [-1, 1] the double sum is exact or a double ulp off, which rounds
    // to the same f32 or 16-bit value but at a tie (the fixed seeds hit
    // none); f64 sums are not, and are left to the ReduceSum comparison.
    int64_t n = sum.size();
    if (c.t != DType::F64 && n > 0 && summed.size() > 0) {
      std::vector<double> exact(size_t(n), 0.0);
      std::vector<int64_t> index(summed.dims().size(), 0);
      std::vector<int64_t> kept =
          freeDims(int(summed.dims().size()), {}, contract);
      for (int64_t e = 0; e < summed.size(); ++e) {
        int64_t rem = e;
        for (size_t d = summed.dims().size(); d-- > 0;) {
          index[d] = rem % summed.dims()[d];
          rem /= summed.dims()[d];
        }
        int64_t out = 0;
        for (int64_t d : kept)
          out = out * summed.dims()[d] + index[d];
        exact[size_t(out)] += summed.get(e);
      }
      for (int64_t j = 0; j < n; ++j) {
        TestTensor rounded(sumType, {1}, {exact[size_t(j)]});
        EXPECT_EQ(sum.get(j), rounded.get(0)) << "sum " << j;
      }
    }
  }
}

// The rounding in numbers: 1 + 2^-12 is 1 in TF32, so 1,024 such terms sum
// to exactly 1,024 (f32: 1,024.25, also exact); 1 + 2^-11 is a tie, which
// goes away from zero, to 1 + 2^-10 (1,024 terms: 1,025).
TEST(CpuDotGeneral, Tf32DropsTheLowMantissaBits) {
  const int64_t k = 1024;
  TestTensor lhs(DType::F32, {2, k}), rhs(DType::F32, {k, 1});
  for (int64_t j = 0; j < k; ++j) {
    lhs.set(j, 1 + std::ldexp(1.0, -12));
    lhs.set(k + j, -(1 + std::ldexp(1.0, -11)));
    rhs.set(j, 1.0);
  }
  DotDims dd{{}, {}, {1}, {0}};
  TestTensor tf32(DType::F32, {2, 1}), exact(DType::F32, {2, 1});
  ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                 {&lhs, &rhs}, {&tf32},
                                 dotInts(dd, OperandRounding::Tf32))
                  .ok());
  ASSERT_TRUE(testing::runKernel(runDotGeneral, Opcode::DotGeneral,
                                 {&lhs, &rhs}, {&exact}, dotInts(dd))
                  .ok());
  EXPECT_EQ(tf32.get(0), 1024.0);
  EXPECT_EQ(tf32.get(1), -1025.0);
  EXPECT_EQ(exact.get(0), 1024.25);
  EXPECT_EQ(exact.get(1), -1024.5);
}

TEST(CpuDotGeneral, IntegerOperandsAreUnsupported) {
  TestTensor a(DType::I32, {2, 2}), b(DType::I32, {2, 2}),
      out(DType::I32, {2, 2});
  Status s = testing::runKernel(runDotGeneral, Opcode::DotGeneral, {&a, &b},
                                {&out}, {0, 1, 1, 0, 0});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("dot_general"), std::string::npos);
}

} // namespace
} // namespace trainc::cpu
