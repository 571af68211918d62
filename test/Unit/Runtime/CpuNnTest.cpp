//===- CpuNnTest.cpp - Softmax, norms, GELU, dropout, cross-entropy ------===//
//
// Each kernel against a double-precision reference written from the graph
// op's definition, on the rounded inputs the kernel saw. Tolerances are
// bounds, not fits: u is the compute type's unit roundoff (2^-24 for f32
// and the 16-bit types, 2^-53 for f64) and a term n*u bounds an n-term sum
// or a chain of n roundings; 16-bit results add one storage rounding
// (2^-8 bf16, 2^-11 f16) of the result. The errors the tests guard against
// (a wrong axis, epsilon outside the sqrt, the wrong causal offset, a
// dropped mask) are many orders of magnitude larger. Attention's tests
// are in CpuAttentionTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "base/Parallel.h"
#include "math/Dropout.h"
#include "math/NormParamSums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace trainc::cpu {
namespace {

using testing::computeEps;
using testing::countDifferent;
using testing::randomTensor;
using testing::runKernel;
using testing::storageEps;
using testing::TestTensor;

constexpr double kInf = std::numeric_limits<double>::infinity();

//===--- Softmax ----------------------------------------------------------===//

std::vector<double> softmaxRef(const TestTensor &x, int dim) {
  int64_t outer = 1, n = x.dims()[dim], inner = 1;
  for (int d = 0; d < dim; ++d)
    outer *= x.dims()[d];
  for (size_t d = dim + 1; d < x.dims().size(); ++d)
    inner *= x.dims()[d];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
      double max = -kInf, sum = 0;
      for (int64_t j = 0; j < n; ++j)
        max = std::max(max, x.get(at(j)));
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(x.get(at(j)) - max);
      for (int64_t j = 0; j < n; ++j)
        y[at(j)] = std::exp(x.get(at(j)) - max) / sum;
    }
  return y;
}

TestTensor runSoftmaxOn(const TestTensor &x, int dim) {
  TestTensor y(x.dtype(), x.dims());
  Status s = runKernel(runSoftmax, Opcode::Softmax, {&x}, {&y}, {dim});
  EXPECT_TRUE(s.ok()) << s.toString();
  return y;
}

TEST(CpuNnSoftmax, MatchesReferenceAlongEveryDim) {
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    TestTensor x = randomTensor(t, {4, 7, 33}, 1, -8, 8);
    for (int dim = 0; dim < 3; ++dim) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " dim " + std::to_string(dim));
      TestTensor y = runSoftmaxOn(x, dim);
      std::vector<double> ref = softmaxRef(x, dim);
      // exp, the n-term sum and the division, each relative to the value.
      double n = double(x.dims()[dim]);
      double rel = (n + 8) * computeEps(t) + storageEps(t);
      for (int64_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(y.get(i), ref[i], rel * ref[i]) << "element " << i;
    }
  }
}

TEST(CpuNnSoftmax, RowsSumToOne) {
  TestTensor x = randomTensor(DType::F32, {16, 100}, 2, -20, 20);
  TestTensor y = runSoftmaxOn(x, 1);
  for (int64_t r = 0; r < 16; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < 100; ++j)
      sum += y.get(r * 100 + j);
    // Each output is within (n + 8) u of its value (relative), as above.
    EXPECT_NEAR(sum, 1.0, (100 + 8) * 0x1p-24) << "row " << r;
  }
}

TEST(CpuNnSoftmax, LargeInputsAreStable) {
  // exp(1000) overflows any float type; the max-shifted form does not.
  TestTensor x(DType::F32, {2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  TestTensor y = runSoftmaxOn(x, 1);
  TestTensor small(DType::F32, {1, 3}, {0, 1, 2});
  TestTensor expected = runSoftmaxOn(small, 1);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(y.get(j), expected.get(j));
    EXPECT_EQ(y.get(3 + j), expected.get(2 - j));
  }
}

TEST(CpuNnSoftmax, Dim0IsLastDimOfTheTranspose) {
  TestTensor x = randomTensor(DType::F32, {9, 5}, 3, -4, 4);
  TestTensor xt(DType::F32, {5, 9});
  for (int64_t i = 0; i < 9; ++i)
    for (int64_t j = 0; j < 5; ++j)
      xt.set(j * 9 + i, x.get(i * 5 + j));
  TestTensor y = runSoftmaxOn(x, 0), yt = runSoftmaxOn(xt, 1);
  for (int64_t i = 0; i < 9; ++i)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(y.get(i * 5 + j), yt.get(j * 9 + i));
}

//===--- LayerNorm and RmsNorm --------------------------------------------===//

std::vector<double> normRef(const TestTensor &x, int axis, bool layer,
                            const TestTensor *scale, const TestTensor *bias,
                            double eps) {
  int64_t n = 1;
  for (size_t d = axis; d < x.dims().size(); ++d)
    n *= x.dims()[d];
  std::vector<double> y(x.size());
  for (int64_t base = 0; base < x.size(); base += n) {
    double mean = 0, sq = 0;
    if (layer) {
      for (int64_t j = 0; j < n; ++j)
        mean += x.get(base + j);
      mean /= n;
    }
    for (int64_t j = 0; j < n; ++j)
      sq += (x.get(base + j) - mean) * (x.get(base + j) - mean);
    double rstd = 1 / std::sqrt(sq / n + eps);
    for (int64_t j = 0; j < n; ++j)
      y[base + j] =
          (x.get(base + j) - mean) * rstd * (scale ? scale->get(j) : 1) +
          (bias ? bias->get(j) : 0);
  }
  return y;
}

struct NormCase {
  bool layer;
  DType dtype;
  std::vector<int64_t> dims;
  int axis;
  bool hasScale, hasBias;
  double eps;
};

void checkNorm(const NormCase &c) {
  TestTensor x = randomTensor(c.dtype, c.dims, 4, -1, 1);
  std::vector<int64_t> normDims(c.dims.begin() + c.axis, c.dims.end());
  TestTensor scale = randomTensor(c.dtype, normDims, 5, 0.5, 2);
  TestTensor bias = randomTensor(c.dtype, normDims, 6, -1, 1);
  std::vector<const TestTensor *> inputs = {&x};
  if (c.hasScale)
    inputs.push_back(&scale);
  if (c.hasBias)
    inputs.push_back(&bias);
  std::vector<int64_t> ints = {c.axis, c.hasScale};
  if (c.layer)
    ints.push_back(c.hasBias);
  TestTensor y(c.dtype, c.dims);
  Status s = runKernel(runNorm, c.layer ? Opcode::LayerNorm : Opcode::RmsNorm,
                       inputs, {&y}, ints, {c.eps});
  ASSERT_TRUE(s.ok()) << s.toString();
  std::vector<double> ref =
      normRef(x, c.axis, c.layer, c.hasScale ? &scale : nullptr,
              c.hasBias ? &bias : nullptr, c.eps);
  // The mean's error (N u, as |x| <= 1) is scaled by rstd * scale < 3 * 2;
  // the variance's relative error ((N + 3) u) halves in rstd and scales
  // |y|; a few more roundings: |err| <= (2N + 16) u (|y| + 5).
  double n = 1;
  for (int64_t d : normDims)
    n *= d;
  for (int64_t i = 0; i < y.size(); ++i) {
    double tol = (2 * n + 16) * computeEps(c.dtype) * (std::fabs(ref[i]) + 5) +
                 storageEps(c.dtype) * std::fabs(ref[i]);
    ASSERT_NEAR(y.get(i), ref[i], tol) << "element " << i;
  }
}

TEST(CpuNnNorm, LayerNormMatchesReference) {
  // eps = 0.25 is large on purpose: it only matches if added inside the
  // sqrt to the biased variance.
  checkNorm({true, DType::F32, {3, 5, 16}, 2, false, false, 0.25});
  checkNorm({true, DType::F32, {3, 5, 16}, 2, true, true, 1e-5});
  checkNorm({true, DType::F32, {3, 5, 16}, 2, true, false, 0.25});
  checkNorm({true, DType::F32, {3, 5, 16}, 2, false, true, 0.25});
  // Normalized shape [5, 16], with scale and bias of that shape.
  checkNorm({true, DType::F32, {3, 5, 16}, 1, true, true, 0.25});
  checkNorm({true, DType::F64, {4, 2, 3, 8}, 1, true, true, 0.25});
  checkNorm({true, DType::BF16, {6, 32}, 1, true, true, 1e-5});
}

TEST(CpuNnNorm, RmsNormMatchesReference) {
  checkNorm({false, DType::F32, {3, 5, 16}, 2, false, false, 0.25});
  checkNorm({false, DType::F32, {3, 5, 16}, 2, true, false, 1e-6});
  checkNorm({false, DType::F32, {3, 5, 16}, 1, true, false, 0.25});
  checkNorm({false, DType::F64, {2, 3, 8}, 0, true, false, 0.25});
  checkNorm({false, DType::F16, {6, 32}, 1, true, false, 1e-6});
}

/// An f32 norm may write bf16 or f16 (the compiler narrows a norm whose
/// only use was that convert): the bits of the f32 norm converted.
TEST(CpuNnNorm, NarrowedResultIsTheConvertedNorm) {
  TestTensor x = randomTensor(DType::F32, {5, 4099}, 8, -2, 2);
  TestTensor scale = randomTensor(DType::F32, {4099}, 9, 0.5, 2);
  TestTensor bias = randomTensor(DType::F32, {4099}, 10, -1, 1);
  for (bool layer : {true, false})
    for (DType narrow : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(std::string(layer ? "layer_norm " : "rms_norm ") +
                   dtypeName(narrow));
      std::vector<const TestTensor *> in = {&x, &scale};
      std::vector<int64_t> ints = {1, 1};
      if (layer) {
        in.push_back(&bias);
        ints.push_back(1);
      }
      Opcode op = layer ? Opcode::LayerNorm : Opcode::RmsNorm;
      TestTensor wide(DType::F32, x.dims()), want(narrow, x.dims()),
          got(narrow, x.dims());
      ASSERT_TRUE(runKernel(runNorm, op, in, {&wide}, ints, {1e-5}).ok());
      ASSERT_TRUE(
          runKernel(runElementwise, Opcode::Convert, {&wide}, {&want}, {})
              .ok());
      Status s = runKernel(runNorm, op, in, {&got}, ints, {1e-5});
      ASSERT_TRUE(s.ok()) << s.toString();
      for (int64_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(got.get(i), want.get(i)) << "element " << i;
    }
}

/// norm_grad_params is norm_grad's dx bit for bit, and the sums over the
/// rows of g * xhat (each product rounded to T) and of g, with norm_grad's
/// xhat:
///   - bit for bit the order math/NormParamSums.h documents, rebuilt here
///     from its words (segments of max(8, ceil(R / 128)) rows, each summed
///     in f64 from 0 in row order, the segments' sums added in order from
///     0, rounded to T once), which the GPU follows too;
///   - within half an ulp of T of the exact sum S of the terms plus the f64
///     sums' error (at most R 2^-53 sum |term| for R rows);
///   - the same bits with one thread.
/// Shapes: one segment (R = 3 and 15; axis 0: one row), 38 segments of 8
/// rows, the last shorter (R = 300), 128 segments of 33 rows (R = 4224),
/// and no rows (the sums 0).
TEST(CpuNnNorm, NormGradParamsIsNormGradAndItsSums) {
  struct Case {
    DType t;
    std::vector<int64_t> dims;
    int64_t axis;
  };
  const Case cases[] = {
      {DType::F32, {3, 5, 16}, 2},   {DType::F64, {3, 5, 16}, 0},
      {DType::F32, {3, 100, 24}, 2}, {DType::F64, {300, 4, 8}, 1},
      {DType::F32, {4224, 40}, 1},   {DType::F32, {0, 8}, 1}};
  uint32_t seed = 20;
  for (const Case &c : cases)
    for (bool centered : {true, false})
      for (bool withBias : {true, false}) {
        SCOPED_TRACE(std::string(dtypeName(c.t)) + " rows of axis " +
                     std::to_string(c.axis) + (centered ? " centered" : "") +
                     (withBias ? " with bias" : ""));
        std::vector<int64_t> normalized(c.dims.begin() + c.axis, c.dims.end());
        TestTensor x = randomTensor(c.t, c.dims, seed++, -2, 2);
        TestTensor scale = randomTensor(c.t, normalized, seed++, 0.5, 2);
        TestTensor g = randomTensor(c.t, c.dims, seed++, -1, 1);
        TestTensor dx(c.t, c.dims), xhat(c.t, c.dims);
        ASSERT_TRUE(runKernel(runNormGrad, Opcode::NormGrad, {&x, &scale, &g},
                              {&dx, &xhat}, {c.axis, 1, centered}, {1e-5})
                        .ok());
        auto run = [&](std::vector<TestTensor> &out) {
          out.emplace_back(c.t, c.dims);
          out.emplace_back(c.t, normalized);
          if (withBias)
            out.emplace_back(c.t, normalized);
          std::vector<TestTensor *> outs;
          for (TestTensor &o : out)
            outs.push_back(&o);
          Status s =
              runKernel(runNormGrad, Opcode::NormGradParams, {&x, &scale, &g},
                        outs, {c.axis, centered, withBias, 0, 0}, {1e-5});
          ASSERT_TRUE(s.ok()) << s.toString();
        };
        std::vector<TestTensor> got, serial;
        run(got);
        {
          SerialScope one;
          run(serial);
        }
        for (int64_t i = 0; i < x.size(); ++i)
          ASSERT_EQ(got[0].get(i), dx.get(i)) << "dx element " << i;
        int64_t n = scale.size(), rows = n ? x.size() / n : 0;
        int64_t per = std::max<int64_t>(8, (rows + 127) / 128);
        for (int64_t j = 0; j < n; ++j)
          for (size_t k = 1; k < got.size(); ++k) {
            double exact = 0, magnitude = 0, ordered = 0, segment = 0;
            for (int64_t r = 0; r < rows; ++r) {
              double gv = g.get(r * n + j);
              // The product rounded to T (exact in f64 for f32 operands).
              double term = k == 2 ? gv
                            : c.t == DType::F32
                                ? double(float(gv * xhat.get(r * n + j)))
                                : gv * xhat.get(r * n + j);
              exact += term; // its own f64 error: the bound's 2nd half
              magnitude += std::fabs(term);
              segment += term;
              if ((r + 1) % per == 0 || r + 1 == rows) {
                ordered += segment;
                segment = 0;
              }
            }
            if (c.t == DType::F32)
              ordered = double(float(ordered));
            const char *what = k == 1 ? "scale" : "bias";
            ASSERT_EQ(got[k].get(j), ordered) << what << " column " << j;
            double tol = computeEps(c.t) * std::fabs(exact) +
                         2 * double(rows) * 0x1p-53 * magnitude;
            ASSERT_NEAR(got[k].get(j), exact, tol) << what << " column " << j;
            ASSERT_EQ(got[k].get(j), serial[k].get(j)) << "column " << j;
          }
      }
}

/// norm_grad_params with an addend (ints[3]) and a 16-bit copy (ints[4]):
/// bit for bit norm_grad_params alone, then Add(addend, dx) and Convert of
/// the sum, the ops trainc-fuse-norm-grad folds in; also with dx in the
/// addend's memory (the in-place form the planner gives it), and with a
/// copy but no addend. Rows of 40 (no vector tail) and 37, one segment and
/// 38.
/// The GPU's step 3 (math::combineSegments, loads run ahead of the adds)
/// adds in segment order from 0, bit for bit the plain loop: values of
/// wildly different magnitudes, so that any other order changes the sum,
/// at segment counts around its look-ahead.
TEST(CpuNnNorm, CombineSegmentsAddsInOrder) {
  constexpr int64_t stride = 3;
  std::vector<double> partials(stride * 140);
  for (size_t i = 0; i < partials.size(); ++i)
    partials[i] = std::ldexp(i % 2 ? -1.0 : 1.0, int(i * 37 % 101) - 50) +
                  0.1 * double(i);
  for (int64_t segments : {0, 1, 15, 16, 17, 33, 128, 140}) {
    double want = 0;
    for (int64_t s = 0; s < segments; ++s)
      want += partials[s * stride + 1];
    EXPECT_EQ(math::combineSegments(partials.data() + 1, segments, stride),
              want)
        << segments << " segments";
  }
}

TEST(CpuNnNorm, NormGradParamsAddsTheResidualAndNarrows) {
  struct Case {
    DType t, copy; // copy: BF16, F16, or the dtype itself for none
    std::vector<int64_t> dims;
    bool addend;
  };
  const Case cases[] = {{DType::F32, DType::BF16, {3, 5, 40}, true},
                        {DType::F32, DType::F16, {300, 37}, true},
                        {DType::F32, DType::BF16, {7, 37}, false},
                        {DType::F64, DType::F64, {300, 37}, true}};
  uint32_t seed = 400;
  for (const Case &c : cases)
    for (bool inPlace : {false, true}) {
      if (inPlace && !c.addend)
        continue;
      bool narrowed = c.copy != c.t;
      SCOPED_TRACE(std::string(dtypeName(c.t)) + " -> " + dtypeName(c.copy) +
                   (c.addend ? " with addend" : "") +
                   (inPlace ? " in place" : ""));
      int64_t axis = int64_t(c.dims.size()) - 1;
      std::vector<int64_t> normalized = {c.dims.back()};
      TestTensor x = randomTensor(c.t, c.dims, seed++, -2, 2);
      TestTensor scale = randomTensor(c.t, normalized, seed++, 0.5, 2);
      TestTensor g = randomTensor(c.t, c.dims, seed++, -1, 1);
      TestTensor addend = randomTensor(c.t, c.dims, seed++, -3, 3);
      // The unfused ops.
      TestTensor dx(c.t, c.dims), ds(c.t, normalized), db(c.t, normalized);
      ASSERT_TRUE(runKernel(runNormGrad, Opcode::NormGradParams,
                            {&x, &scale, &g}, {&dx, &ds, &db},
                            {axis, 1, 1, 0, 0}, {1e-5})
                      .ok());
      TestTensor sum = dx;
      if (c.addend) {
        ASSERT_TRUE(
            runKernel(runElementwise, Opcode::Add, {&addend, &dx}, {&sum}, {})
                .ok());
      }
      TestTensor copy(c.copy, c.dims);
      if (narrowed) {
        ASSERT_TRUE(
            runKernel(runElementwise, Opcode::Convert, {&sum}, {&copy}, {})
                .ok());
      }
      // The fused op.
      TestTensor in = addend, gotDs(c.t, normalized), gotDb(c.t, normalized);
      TestTensor separate(c.t, c.dims), gotCopy(c.copy, c.dims);
      TestTensor *gotDx = inPlace ? &in : &separate;
      std::vector<const TestTensor *> inputs = {&x, &scale, &g};
      if (c.addend)
        inputs.push_back(&in);
      std::vector<TestTensor *> outputs = {gotDx, &gotDs, &gotDb};
      if (narrowed)
        outputs.push_back(&gotCopy);
      Status st = runKernel(runNormGrad, Opcode::NormGradParams, inputs,
                            outputs, {axis, 1, 1, c.addend, narrowed}, {1e-5});
      ASSERT_TRUE(st.ok()) << st.toString();
      for (int64_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(gotDx->get(i), sum.get(i)) << "input gradient " << i;
        if (narrowed) {
          ASSERT_EQ(gotCopy.get(i), copy.get(i)) << "copy " << i;
        }
      }
      for (int64_t j = 0; j < ds.size(); ++j) {
        ASSERT_EQ(gotDs.get(j), ds.get(j)) << "scale gradient " << j;
        ASSERT_EQ(gotDb.get(j), db.get(j)) << "bias gradient " << j;
      }
    }
}

//===--- Gelu -------------------------------------------------------------===//

TEST(CpuNnGelu, BothFormsMatchReference) {
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    TestTensor x = randomTensor(t, {1000}, 7, -6, 6);
    for (int64_t approx : {0, 1}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + (approx ? " tanh" : " erf"));
      TestTensor y(t, x.dims());
      Status s = runKernel(runGelu, Opcode::Gelu, {&x}, {&y}, {approx});
      ASSERT_TRUE(s.ok()) << s.toString();
      for (int64_t i = 0; i < x.size(); ++i) {
        double v = x.get(i);
        double inner =
            approx ? std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))
                   : std::erf(v / std::sqrt(2.0));
        double ref = 0.5 * v * (1 + inner);
        // A few roundings of magnitude |x| (the cubic's and 1 + inner's).
        double tol = 16 * computeEps(t) * (1 + std::fabs(v)) +
                     storageEps(t) * std::fabs(ref);
        ASSERT_NEAR(y.get(i), ref, tol) << "x = " << v;
      }
    }
  }
}

//===--- Dropout ----------------------------------------------------------===//

struct DropoutResult {
  TestTensor y, mask;
};

DropoutResult runDropoutOn(const TestTensor &x, int64_t seed, double ratio,
                           int64_t step) {
  DropoutResult r{TestTensor(x.dtype(), x.dims()),
                  TestTensor(DType::I1, x.dims())};
  Status s = runKernel(runDropout, Opcode::Dropout, {&x}, {&r.y, &r.mask},
                       {seed}, {ratio}, step);
  EXPECT_TRUE(s.ok()) << s.toString();
  return r;
}

TEST(CpuNnDropout, MaskIsAPureFunctionOfSeedStepAndIndex) {
  TestTensor x = randomTensor(DType::F32, {100, 1000}, 8);
  DropoutResult a = runDropoutOn(x, 7, 0.3, 5), b = runDropoutOn(x, 7, 0.3, 5);
  EXPECT_EQ(countDifferent(a.mask, b.mask), 0);
  EXPECT_EQ(countDifferent(a.y, b.y), 0);
  // Independent masks differ at 2 p (1 - p) = 42% of the elements.
  DropoutResult nextStep = runDropoutOn(x, 7, 0.3, 6);
  DropoutResult otherSeed = runDropoutOn(x, 8, 0.3, 5);
  EXPECT_GT(countDifferent(a.mask, nextStep.mask), x.size() * 0.4);
  EXPECT_GT(countDifferent(a.mask, otherSeed.mask), x.size() * 0.4);
  // A shorter tensor gets the prefix: the index, not the thread split or
  // the shape, decides.
  TestTensor head = randomTensor(DType::F32, {1000}, 9);
  DropoutResult h = runDropoutOn(head, 7, 0.3, 5);
  for (int64_t i = 0; i < head.size(); ++i)
    ASSERT_EQ(h.mask.get(i), a.mask.get(i)) << "element " << i;
}

TEST(CpuNnDropout, MaskIsTheDocumentedFunction) {
  // Restates Dropout.cpp's header: backward replays exactly this.
  auto mix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  int64_t seed = -3, step = 123456789;
  double ratio = 0.25;
  TestTensor x = randomTensor(DType::F32, {4096}, 10);
  DropoutResult r = runDropoutOn(x, seed, ratio, step);
  uint64_t key = mix(mix(uint64_t(seed)) ^ uint64_t(step));
  for (int64_t i = 0; i < x.size(); ++i) {
    double u = double(mix(key ^ uint64_t(i)) >> 11) * 0x1p-53;
    ASSERT_EQ(r.mask.get(i), u >= ratio ? 1.0 : 0.0) << "element " << i;
  }
}

/// The kernels compare the 53-bit draw n with math::keepThreshold(ratio)
/// where the definition compares n 2^-53 with the ratio in f64. Both are
/// monotone in n, so they agree on every n when they agree on the two
/// draws either side of the threshold: checked for ratios whose scaled
/// value is an integer or not, the extremes, and random ones.
TEST(CpuNnDropout, KeepThresholdIsTheDefinitionsBoundary) {
  std::vector<double> ratios = {0,
                                -0.5,
                                std::nextafter(0.0, 1.0),
                                1e-300,
                                0x1p-53,
                                0x1.8p-53,
                                0x1p-54,
                                0.1,
                                0.25,
                                0.3,
                                1.0 / 3,
                                0.5,
                                0.9,
                                std::nextafter(1.0, 0.0),
                                1,
                                2};
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int i = 0; i < 10000; ++i)
    ratios.push_back(uniform(gen));
  const uint64_t draws = uint64_t(1) << 53;
  for (double ratio : ratios) {
    uint64_t t = math::keepThreshold(ratio);
    ASSERT_LE(t, draws) << ratio;
    for (uint64_t n : {t - 1, t, t + 1}) {
      if (n >= draws) // t - 1 wraps below 0; t + 1 may pass the last draw
        continue;
      bool defined = double(n) * 0x1p-53 >= ratio;
      ASSERT_EQ(n >= t, defined) << "ratio " << ratio << ", draw " << n;
    }
  }
}

TEST(CpuNnDropout, KeepFractionAndExactScaling) {
  double ratio = 0.3, keep = 1 - ratio;
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x = randomTensor(t, {100000}, 11, -4, 4);
    DropoutResult r = runDropoutOn(x, 42, ratio, 1);
    double kept = 0;
    for (int64_t i = 0; i < x.size(); ++i) {
      bool m = r.mask.get(i) != 0;
      kept += m;
      // y = x * scale with scale = 1/(1-ratio) rounded to the compute type,
      // then stored: exactly, not approximately.
      double expected = t == DType::F64
                            ? x.get(i) * (1 / keep)
                            : double(float(x.get(i)) * float(1 / keep));
      TestTensor e(t, {1}, {m ? expected : 0.0});
      ASSERT_EQ(r.y.get(i), e.get(0)) << "element " << i;
    }
    double n = double(x.size()), sigma = std::sqrt(n * keep * ratio);
    EXPECT_NEAR(kept, n * keep, 3 * sigma);
  }
}

TEST(CpuNnDropout, RatioZeroKeepsEverything) {
  TestTensor x = randomTensor(DType::F32, {1000}, 12);
  DropoutResult r = runDropoutOn(x, 1, 0.0, 0);
  EXPECT_EQ(countDifferent(r.y, x), 0);
  for (int64_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(r.mask.get(i), 1.0);
}

//===--- SoftmaxCrossEntropy ----------------------------------------------===//

struct CeResult {
  Status status;
  TestTensor out;
};

/// classes < 0: every entry of the last dimension is a class.
CeResult runCe(const TestTensor &logits, const TestTensor &targets,
               int64_t reduction, bool hasIgnore, int64_t ignoreIndex,
               int64_t classes = -1) {
  std::vector<int64_t> outDims =
      reduction ? std::vector<int64_t>{} : targets.dims();
  CeResult r{Status(), TestTensor(logits.dtype(), outDims)};
  r.status = runKernel(runCrossEntropy, Opcode::SoftmaxCrossEntropy,
                       {&logits, &targets}, {&r.out},
                       {reduction, hasIgnore, ignoreIndex,
                        classes < 0 ? logits.dims().back() : classes});
  return r;
}

TEST(CpuNnCrossEntropy, ReductionsMatchReference) {
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor logits = randomTensor(t, {2, 3, 7}, 18, -5, 5);
    std::vector<double> tv = {3, -100, 0, 6, 2, -100};
    TestTensor targets(t == DType::F64 ? DType::I32 : DType::I64, {2, 3}, tv);
    std::vector<double> ref(6, 0.0);
    double sum = 0;
    for (int64_t r = 0; r < 6; ++r) {
      if (tv[r] == -100)
        continue;
      double max = -kInf, s = 0;
      for (int64_t c = 0; c < 7; ++c)
        max = std::max(max, logits.get(r * 7 + c));
      for (int64_t c = 0; c < 7; ++c)
        s += std::exp(logits.get(r * 7 + c) - max);
      ref[r] = max + std::log(s) - logits.get(r * 7 + int64_t(tv[r]));
      sum += ref[r];
    }
    // Per position: a C-term sum, a log and a subtraction, on values of at
    // most |x| + log C < 5 + 1. The sum adds 4 of them (and rounds 3 times).
    double tol = (7 + 8) * computeEps(t) * (5 + 1);
    CeResult none = runCe(logits, targets, 0, true, -100);
    ASSERT_TRUE(none.status.ok()) << none.status.toString();
    for (int64_t r = 0; r < 6; ++r)
      EXPECT_NEAR(none.out.get(r), ref[r],
                  tol + storageEps(t) * std::fabs(ref[r]))
          << "position " << r;
    CeResult total = runCe(logits, targets, 1, true, -100);
    CeResult mean = runCe(logits, targets, 2, true, -100);
    ASSERT_TRUE(total.status.ok() && mean.status.ok());
    EXPECT_NEAR(total.out.get(0), sum, 6 * tol + storageEps(t) * sum);
    EXPECT_NEAR(mean.out.get(0), sum / 4, 2 * tol + storageEps(t) * sum / 4);
  }
}

TEST(CpuNnCrossEntropy, LargeLogitsAreStable) {
  TestTensor logits(DType::F32, {1, 3}, {1000, 1001, 1002});
  TestTensor targets(DType::I64, {1}, {2});
  CeResult r = runCe(logits, targets, 0, false, 0);
  ASSERT_TRUE(r.status.ok());
  double ref = std::log(std::exp(-2.0) + std::exp(-1.0) + 1);
  // ~16 ulps of the 0.41 result; computing m + log(s) - x_t instead rounds
  // to the ulp of 1002 (6e-5) first.
  EXPECT_NEAR(r.out.get(0), ref, 1e-6);
}

TEST(CpuNnCrossEntropy, IgnoreIndexInsideTheClassRange) {
  TestTensor logits = randomTensor(DType::F32, {4, 5}, 19);
  TestTensor targets(DType::I32, {4}, {0, 1, 0, 4});
  CeResult none = runCe(logits, targets, 0, true, 0);
  CeResult mean = runCe(logits, targets, 2, true, 0);
  ASSERT_TRUE(none.status.ok() && mean.status.ok());
  EXPECT_EQ(none.out.get(0), 0.0);
  EXPECT_EQ(none.out.get(2), 0.0);
  EXPECT_GT(none.out.get(1), 0.0);
  // Mean over the 2 counted positions, not the 4 (a few ulps of f32).
  EXPECT_NEAR(mean.out.get(0), (none.out.get(1) + none.out.get(3)) / 2, 1e-6);
}

TEST(CpuNnCrossEntropy, AllIgnoredMeanIsNaN) {
  TestTensor logits = randomTensor(DType::F32, {3, 4}, 20);
  TestTensor targets(DType::I64, {3}, {-1, -1, -1});
  CeResult mean = runCe(logits, targets, 2, true, -1);
  CeResult total = runCe(logits, targets, 1, true, -1);
  ASSERT_TRUE(mean.status.ok() && total.status.ok());
  EXPECT_TRUE(std::isnan(mean.out.get(0)));
  EXPECT_EQ(total.out.get(0), 0.0);
}

TEST(CpuNnCrossEntropy, OutOfRangeTargetIsAnError) {
  TestTensor logits = randomTensor(DType::F32, {2, 3, 7}, 21);
  TestTensor targets(DType::I64, {2, 3}, {0, 1, 2, 3, 4, 7});
  CeResult r = runCe(logits, targets, 2, true, -100);
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("softmax_cross_entropy"),
            std::string::npos);
  EXPECT_NE(r.status.message().find("target 7 at position [1, 2]"),
            std::string::npos)
      << r.status.message();
  // A negative target is out of range unless it is the ignore_index.
  TestTensor negative(DType::I32, {2, 3}, {0, 1, -100, 3, 4, 5});
  EXPECT_FALSE(runCe(logits, negative, 0, false, 0).status.ok());
  EXPECT_TRUE(runCe(logits, negative, 0, true, -100).status.ok());
}

/// A padded class dimension (trainc-pad-classes): logits [R, P] whose
/// first C entries are the classes. The loss and the gradient's first C
/// entries are those of the unpadded [R, C] logits bit for bit, whatever
/// the padding holds (NaN here); the gradient's padding is 0; a target in
/// [C, P) is out of range.
TEST(CpuNnCrossEntropy, PaddedClassesAreNeverRead) {
  const int64_t rows = 5, classes = 1001, padded = 1024;
  for (DType t : {DType::F32, DType::BF16, DType::F64}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor logits = randomTensor(t, {rows, classes}, 22, -5, 5);
    TestTensor wide(t, {rows, padded});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < padded; ++c)
        wide.set(r * padded + c,
                 c < classes ? logits.get(r * classes + c) : std::nan(""));
    TestTensor targets(DType::I64, {rows}, {0, 1000, -100, 17, 999});
    for (int64_t reduction : {0, 2}) {
      CeResult want = runCe(logits, targets, reduction, true, -100);
      CeResult got = runCe(wide, targets, reduction, true, -100, classes);
      ASSERT_TRUE(want.status.ok() && got.status.ok()) << got.status.toString();
      for (int64_t i = 0; i < want.out.size(); ++i)
        ASSERT_EQ(got.out.get(i), want.out.get(i)) << "loss " << i;
    }
    TestTensor weight = randomTensor(DType::F32, {rows}, 23, 0, 1);
    TestTensor want(t, {rows, classes});
    ASSERT_TRUE(runKernel(runCrossEntropyGrad, Opcode::SoftmaxCrossEntropyGrad,
                          {&logits, &targets, &weight}, {&want}, {classes})
                    .ok());
    // Into NaN-filled memory, and in place over the padded logits.
    for (bool inPlace : {false, true}) {
      TestTensor got = wide;
      TestTensor fresh(t, {rows, padded});
      for (int64_t i = 0; i < fresh.size(); ++i)
        fresh.set(i, std::nan(""));
      TestTensor &out = inPlace ? got : fresh;
      Status s = runKernel(runCrossEntropyGrad, Opcode::SoftmaxCrossEntropyGrad,
                           {&got, &targets, &weight}, {&out}, {classes});
      ASSERT_TRUE(s.ok()) << s.toString();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < padded; ++c)
          ASSERT_EQ(out.get(r * padded + c),
                    c < classes ? want.get(r * classes + c) : 0.0)
              << (inPlace ? "in place, " : "") << "row " << r << " column "
              << c;
    }
    TestTensor padTarget(DType::I64, {rows}, {0, 1, 1001, 3, 4});
    CeResult bad = runCe(wide, padTarget, 2, true, -100, classes);
    EXPECT_NE(bad.status.message().find("target 1001 at position [2] is "
                                        "outside [0, 1001)"),
              std::string::npos)
        << bad.status.toString();
  }
}

/// softmax_cross_entropy_and_grad: the gradient bit for bit
/// softmax_cross_entropy_grad's (into fresh memory and in place over the
/// logits), the loss softmax_cross_entropy's bit for bit, for every
/// reduction, with ignored positions and padded classes; an out-of-range
/// target is the loss's error, raised before anything is written.
TEST(CpuNnCrossEntropy, LossAndGradInOnePass) {
  const int64_t rows = 6, padded = 1024;
  TestTensor targets(DType::I64, {rows}, {0, 1000, -100, 17, 999, 512});
  TestTensor weight = randomTensor(DType::F32, {rows}, 24, 0, 1);
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (int64_t classes : {int64_t(1001), padded}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + ", classes " +
                   std::to_string(classes));
      TestTensor logits = randomTensor(t, {rows, padded}, 25, -5, 5);
      TestTensor wantGrad(t, {rows, padded});
      ASSERT_TRUE(
          runKernel(runCrossEntropyGrad, Opcode::SoftmaxCrossEntropyGrad,
                    {&logits, &targets, &weight}, {&wantGrad}, {classes})
              .ok());
      for (int64_t reduction : {0, 1, 2}) {
        SCOPED_TRACE("reduction " + std::to_string(reduction));
        CeResult want = runCe(logits, targets, reduction, true, -100, classes);
        ASSERT_TRUE(want.status.ok()) << want.status.toString();
        for (bool inPlace : {false, true}) {
          TestTensor in = logits, fresh(t, {rows, padded});
          TestTensor &grad = inPlace ? in : fresh;
          TestTensor loss(want.out.dtype(), want.out.dims());
          Status s = runKernel(
              runCrossEntropyGrad, Opcode::SoftmaxCrossEntropyAndGrad,
              {&in, &targets, &weight}, {&loss, &grad},
              {reduction, /*has_ignore=*/1, /*ignore_index=*/-100, classes});
          ASSERT_TRUE(s.ok()) << s.toString();
          for (int64_t i = 0; i < grad.size(); ++i)
            ASSERT_EQ(grad.get(i), wantGrad.get(i))
                << (inPlace ? "in place, " : "") << "gradient " << i;
          // The loss kernel adds the same exps in the same order
          // (math/SoftmaxSum.h): the same bits.
          for (int64_t i = 0; i < loss.size(); ++i)
            EXPECT_EQ(loss.get(i), want.out.get(i)) << "loss " << i;
        }
      }
    }
  }
  TestTensor logits = randomTensor(DType::F32, {rows, padded}, 26);
  TestTensor bad(DType::I64, {rows}, {0, 1, 2, 3, 1001, 5});
  TestTensor loss(DType::F32, {}), grad(DType::F32, {rows, padded});
  for (int64_t i = 0; i < grad.size(); ++i)
    grad.set(i, 7);
  Status s =
      runKernel(runCrossEntropyGrad, Opcode::SoftmaxCrossEntropyAndGrad,
                {&logits, &bad, &weight}, {&loss, &grad}, {2, 1, -100, 1001});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("softmax_cross_entropy_and_grad"),
            std::string::npos)
      << s.message();
  EXPECT_NE(
      s.message().find("target 1001 at position [4] is outside [0, 1001)"),
      std::string::npos)
      << s.message();
  for (int64_t i = 0; i < grad.size(); ++i)
    ASSERT_EQ(grad.get(i), 7) << "written before the error: " << i;
}

} // namespace
} // namespace trainc::cpu
