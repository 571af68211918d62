//===- CpuNnTest.cpp - Softmax, norms, GELU, dropout, attention, CE -------===//
//
// Each kernel against a double-precision reference written from the graph
// op's definition, on the rounded inputs the kernel saw. Tolerances are
// bounds, not fits: u is the compute type's unit roundoff (2^-24 for f32
// and the 16-bit types, 2^-53 for f64) and a term n*u bounds an n-term sum
// or a chain of n roundings; 16-bit results add one storage rounding
// (2^-8 bf16, 2^-11 f16) of the result. The errors the tests guard against
// (a wrong axis, epsilon outside the sqrt, the wrong causal offset, a
// dropped mask) are many orders of magnitude larger.
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

//===--- Attention --------------------------------------------------------===//

struct AttentionCase {
  DType dtype;
  int64_t b, hq, hk, sq, sk, d, dv;
  bool causal;
  std::vector<int64_t> maskDims; // Empty: no mask.
  double softcap = 0;            // 0: none.
  double dropout = 0;            // 0: none; else with seed `seed`.
  int64_t seed = 0;
};

/// The kernels' floats: [scale], [scale, softcap] or [scale, softcap or 0,
/// dropout].
std::vector<double> attentionFloats(const AttentionCase &c, double scale) {
  if (c.dropout > 0)
    return {scale, c.softcap, c.dropout};
  if (c.softcap > 0)
    return {scale, c.softcap};
  return {scale};
}

/// The kernels' ints: [causal, has_mask, seq_major 0, no qkv windows,
/// stats], then the dropout stream's seed.
std::vector<int64_t> attentionInts(const AttentionCase &c, bool hasMask,
                                   bool stats = false) {
  std::vector<int64_t> ints = {c.causal, hasMask, 0, 0, 0, stats};
  if (c.dropout > 0)
    ints.push_back(c.seed);
  return ints;
}

/// What probability (b, h, i, j) is multiplied by under `c`'s dropout at
/// step 0 (kernel tests run without a context): graph.dropout's mask of
/// the [B, Hq, Sq, Sk] probabilities, kept ones scaled by 1 / (1 - ratio).
double dropoutFactor(const AttentionCase &c, int64_t b, int64_t h, int64_t i,
                     int64_t j) {
  if (!(c.dropout > 0))
    return 1;
  uint64_t index = uint64_t(((b * c.hq + h) * c.sq + i) * c.sk + j);
  return math::dropoutKeep(math::dropoutKey(uint64_t(c.seed), 0), index,
                           c.dropout)
             ? 1 / (1 - c.dropout)
             : 0;
}

/// The scores of query row (b, h, i) over the keys it may see, in f64 by
/// graph.attention's definition.
std::vector<double> scoresRef(const AttentionCase &c, const TestTensor &q,
                              const TestTensor &k, const TestTensor *mask,
                              double scale, int64_t b, int64_t h, int64_t i) {
  int64_t g = h / (c.hq / c.hk);
  int64_t allowed = c.causal ? i + (c.sk - c.sq) + 1 : c.sk;
  allowed = std::max<int64_t>(0, std::min(allowed, c.sk));
  std::vector<double> s(allowed);
  for (int64_t j = 0; j < allowed; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < c.d; ++e)
      dot += q.get(((b * c.hq + h) * c.sq + i) * c.d + e) *
             k.get(((b * c.hk + g) * c.sk + j) * c.d + e);
    s[j] = scale * dot;
    if (c.softcap > 0)
      s[j] = c.softcap * std::tanh(s[j] / c.softcap);
    if (mask) {
      const std::vector<int64_t> &m = mask->dims();
      int64_t idx[4] = {b, h, i, j}, off = 0;
      for (int a = 0; a < 4; ++a)
        off = off * m[a] + (m[a] == 1 ? 0 : idx[a]);
      s[j] += mask->get(off);
    }
  }
  return s;
}

/// graph.attention by its definition, one (b, h, i) row at a time.
std::vector<double> attentionRef(const AttentionCase &c, const TestTensor &q,
                                 const TestTensor &k, const TestTensor &v,
                                 const TestTensor *mask, double scale) {
  std::vector<double> out(c.b * c.hq * c.sq * c.dv, 0.0);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.sq; ++i) {
        int64_t g = h / (c.hq / c.hk);
        std::vector<double> s = scoresRef(c, q, k, mask, scale, b, h, i);
        int64_t allowed = int64_t(s.size());
        double max = -kInf;
        for (double x : s)
          max = std::max(max, x);
        if (max == -kInf)
          continue; // No key to attend to: zeros.
        double sum = 0;
        for (int64_t j = 0; j < allowed; ++j)
          sum += std::exp(s[j] - max);
        for (int64_t j = 0; j < allowed; ++j)
          for (int64_t e = 0; e < c.dv; ++e)
            out[((b * c.hq + h) * c.sq + i) * c.dv + e] +=
                std::exp(s[j] - max) / sum * dropoutFactor(c, b, h, i, j) *
                v.get(((b * c.hk + g) * c.sk + j) * c.dv + e);
      }
  return out;
}

/// Runs the kernel on `c` (random q, k, v and mask unless `mask` is given)
/// and compares with attentionRef; returns the output.
TestTensor checkAttention(const AttentionCase &c,
                          const TestTensor *mask = nullptr) {
  TestTensor q = randomTensor(c.dtype, {c.b, c.hq, c.sq, c.d}, 13);
  TestTensor k = randomTensor(c.dtype, {c.b, c.hk, c.sk, c.d}, 14);
  TestTensor v = randomTensor(c.dtype, {c.b, c.hk, c.sk, c.dv}, 15);
  TestTensor randomMask = randomTensor(c.dtype, c.maskDims, 16, -2, 2);
  if (!mask && !c.maskDims.empty())
    mask = &randomMask;
  double scale = 1 / std::sqrt(double(c.d));
  std::vector<const TestTensor *> inputs = {&q, &k, &v};
  if (mask)
    inputs.push_back(mask);
  TestTensor out(c.dtype, {c.b, c.hq, c.sq, c.dv});
  Status s =
      runKernel(runAttention, Opcode::Attention, inputs, {&out},
                attentionInts(c, mask != nullptr), attentionFloats(c, scale));
  EXPECT_TRUE(s.ok()) << s.toString();
  std::vector<double> ref = attentionRef(c, q, k, v, mask, scale);
  // Scores: D-term dot products of |q|, |k| <= 1 (error D^2 scale u) plus
  // the mask; softmax: Sk-term sum; output: Sk-term sum of |v| <= 1.
  double tol = 4 * (c.d * c.d * scale + c.sk + 16) * computeEps(c.dtype);
  for (int64_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out.get(i), ref[i],
                tol + storageEps(c.dtype) * std::fabs(ref[i]))
        << "element " << i;
  return out;
}

TEST(CpuNnAttention, Plain) {
  checkAttention({DType::F32, 2, 3, 3, 5, 5, 8, 6, false, {}});
  checkAttention({DType::F32, 1, 2, 2, 3, 9, 8, 8, false, {}});
}

TEST(CpuNnAttention, CausalAlignsToTheLastKey) {
  // Sq == Sk: j <= i.
  checkAttention({DType::F32, 2, 2, 2, 6, 6, 8, 8, true, {}});
  // Sq < Sk (decoding with a KV cache): query i sees keys j <= i + 4.
  checkAttention({DType::F32, 1, 2, 2, 3, 7, 8, 4, true, {}});
  // Sq > Sk: the first two query rows see no key and give zeros.
  TestTensor out = checkAttention({DType::F32, 1, 1, 1, 5, 3, 4, 4, true, {}});
  for (int64_t e = 0; e < 8; ++e)
    EXPECT_EQ(out.get(e), 0.0);
}

TEST(CpuNnAttention, QueryTiles) {
  // More query rows than the kernel's tile of 32: causal tiles read only
  // the keys their last row may see, and the last tile is partial.
  checkAttention({DType::F32, 1, 2, 2, 70, 70, 8, 8, true, {}});
  checkAttention({DType::F32, 1, 2, 1, 40, 75, 8, 4, true, {1, 2, 40, 75}});
  TestTensor out =
      checkAttention({DType::F32, 1, 1, 1, 45, 20, 4, 4, true, {}});
  for (int64_t e = 0; e < 25 * 4; ++e) // rows 0..24 see no key
    EXPECT_EQ(out.get(e), 0.0) << "element " << e;
  checkAttention({DType::F64, 1, 1, 1, 66, 66, 8, 8, false, {1, 1, 66, 66}});
}

TEST(CpuNnAttention, BroadcastMasks) {
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, false, {1, 1, 4, 6}});
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, false, {2, 1, 1, 6}});
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, true, {2, 2, 4, 6}});
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, true, {1, 2, 1, 1}});
}

TEST(CpuNnAttention, GroupedQueryHeads) {
  // Query heads 0,1 share kv head 0 and 2,3 share kv head 1.
  checkAttention({DType::F32, 2, 4, 2, 5, 5, 8, 8, true, {}});
  checkAttention({DType::F32, 1, 4, 1, 3, 6, 8, 8, false, {1, 4, 3, 6}});
}

TEST(CpuNnAttention, OtherDTypes) {
  checkAttention({DType::F64, 2, 4, 2, 5, 7, 8, 8, true, {1, 1, 5, 7}});
  checkAttention({DType::BF16, 1, 2, 1, 4, 4, 16, 8, true, {}});
  checkAttention({DType::F16, 1, 2, 2, 4, 4, 16, 8, false, {1, 1, 1, 4}});
}

/// Soft-capped scores, c tanh(scale q.k / c) before the mask (Gemma 2's
/// logit soft cap): caps below the scores' range (|scale q.k| reaches
/// sqrt(D) = 2.8 to 4 here), where tanh is far from linear.
TEST(CpuNnAttention, SoftCap) {
  checkAttention({DType::F32, 2, 3, 3, 5, 5, 8, 6, false, {}, 0.5});
  checkAttention({DType::F32, 2, 4, 2, 70, 70, 8, 8, true, {1, 1, 70, 70}, 1});
  checkAttention({DType::F32, 1, 2, 2, 3, 9, 16, 8, true, {}, 2});
  checkAttention(
      {DType::F64, 1, 2, 1, 33, 40, 8, 8, true, {1, 2, 33, 40}, 0.3});
  checkAttention({DType::BF16, 1, 2, 1, 4, 4, 16, 8, true, {}, 1});
}

/// Dropout of the probabilities: each (b, h, i, j) kept as graph.dropout
/// keeps that element of [B, Hq, Sq, Sk] (dropoutFactor). Causal tiles,
/// grouped heads, a mask, a soft cap and every dtype; the ratio 0.5 drops
/// half, so a wrong index changes most outputs.
TEST(CpuNnAttention, Dropout) {
  checkAttention({DType::F32, 2, 3, 3, 5, 5, 8, 6, false, {}, 0, 0.5, 7});
  checkAttention(
      {DType::F32, 2, 4, 2, 70, 70, 8, 8, true, {1, 1, 70, 70}, 0, 0.1, 3});
  checkAttention({DType::F32, 1, 2, 2, 3, 9, 16, 8, true, {}, 2, 0.3, -5});
  checkAttention(
      {DType::F64, 1, 2, 1, 33, 40, 8, 8, true, {1, 2, 33, 40}, 0, 0.5, 11});
  checkAttention({DType::BF16, 1, 2, 1, 4, 4, 16, 8, true, {}, 0, 0.5, 1});
}

TEST(CpuNnAttention, FullyMaskedRowGivesZeros) {
  AttentionCase c{DType::F32, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
  TestTensor mask = randomTensor(DType::F32, c.maskDims, 17, -1, 1);
  for (int64_t j = 0; j < 4; ++j)
    mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: nothing.
  mask.set((1 * 3 + 2) * 4 + 0, -kInf);   // Batch 1, query 2: key 0 only.
  TestTensor out = checkAttention(c, &mask);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(out.get(((0 * 2 + h) * 3 + 1) * 8 + e), 0.0) << "head " << h;
}

/// `t` with dims 1 and 2 swapped: [B, H, S, D] <-> [B, S, H, D].
TestTensor swapHeadsAndSeq(const TestTensor &t) {
  const std::vector<int64_t> &d = t.dims();
  TestTensor r(t.dtype(), {d[0], d[2], d[1], d[3]});
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t h = 0; h < d[1]; ++h)
      for (int64_t i = 0; i < d[2]; ++i)
        for (int64_t e = 0; e < d[3]; ++e)
          r.set(((b * d[2] + i) * d[1] + h) * d[3] + e,
                t.get(((b * d[1] + h) * d[2] + i) * d[3] + e));
  return r;
}

/// Attention (or its gradient) on `c` with the tensors whose bits are set
/// in `seqMajor` stored [B, S, H, D]; the results come back [B, H, S, D].
std::vector<TestTensor> runAttentionLayout(const AttentionCase &c, bool grad,
                                           int64_t seqMajor) {
  std::vector<TestTensor> in = {
      randomTensor(c.dtype, {c.b, c.hq, c.sq, c.d}, 21),
      randomTensor(c.dtype, {c.b, c.hk, c.sk, c.d}, 22),
      randomTensor(c.dtype, {c.b, c.hk, c.sk, c.dv}, 23)};
  std::vector<TestTensor> out = {TestTensor(c.dtype, {c.b, c.hq, c.sq, c.dv})};
  if (grad) {
    in.push_back(randomTensor(c.dtype, out[0].dims(), 24));
    out = {TestTensor(c.dtype, in[0].dims()), TestTensor(c.dtype, in[1].dims()),
           TestTensor(c.dtype, in[2].dims())};
  }
  auto stored = [&](const TestTensor &t, int i) {
    return (seqMajor >> i) & 1 ? swapHeadsAndSeq(t) : t;
  };
  std::vector<TestTensor> inStored, outStored;
  for (size_t i = 0; i < in.size(); ++i)
    inStored.push_back(stored(in[i], int(i)));
  for (size_t i = 0; i < out.size(); ++i)
    outStored.push_back(stored(out[i], int(in.size() + i)));
  TestTensor mask = randomTensor(c.dtype, c.maskDims, 25, -2, 2);
  std::vector<const TestTensor *> inputs;
  for (const TestTensor &t : inStored)
    inputs.push_back(&t);
  if (!c.maskDims.empty())
    inputs.push_back(&mask);
  std::vector<TestTensor *> outputs;
  for (TestTensor &t : outStored)
    outputs.push_back(&t);
  Status s = runKernel(grad ? runAttentionGrad : runAttention,
                       grad ? Opcode::AttentionGrad : Opcode::Attention, inputs,
                       outputs, {c.causal, !c.maskDims.empty(), seqMajor, 0, 0},
                       {1 / std::sqrt(double(c.d))});
  EXPECT_TRUE(s.ok()) << s.toString();
  std::vector<TestTensor> results;
  for (size_t i = 0; i < outStored.size(); ++i)
    results.push_back(stored(outStored[i], int(in.size() + i)));
  return results;
}

/// Every tensor but the mask may be stored [B, S, H, D] (ints[2]): the
/// kernels read and write it through strides, so each layout gives the
/// canonical layout's bits, forward and back.
TEST(CpuNnAttention, SeqMajorLayoutsGiveTheSameBits) {
  const AttentionCase cases[] = {
      {DType::F32, 2, 3, 3, 37, 37, 8, 6, true, {}},
      {DType::F32, 2, 4, 2, 5, 70, 8, 8, false, {1, 4, 5, 70}},
      {DType::F64, 1, 2, 1, 33, 33, 4, 4, true, {}},
      {DType::BF16, 2, 4, 2, 40, 40, 16, 16, true, {}},
      {DType::F16, 1, 2, 2, 4, 9, 16, 8, false, {1, 1, 1, 9}},
  };
  for (const AttentionCase &c : cases)
    for (bool grad : {false, true}) {
      int tensors = grad ? kAttentionGradTensors : kAttentionTensors;
      std::vector<TestTensor> want = runAttentionLayout(c, grad, 0);
      for (int64_t bits :
           {(int64_t(1) << tensors) - 1, int64_t(0b1010101), int64_t(0b0101)}) {
        bits &= (int64_t(1) << tensors) - 1;
        std::vector<TestTensor> got = runAttentionLayout(c, grad, bits);
        for (size_t r = 0; r < want.size(); ++r)
          for (int64_t e = 0; e < want[r].size(); ++e)
            ASSERT_EQ(got[r].get(e), want[r].get(e))
                << dtypeName(c.dtype) << (grad ? " grad" : "") << " bits "
                << bits << " result " << r << " element " << e;
      }
    }
}

/// Heads [first, first + count) of a [B, S, H, D] tensor, as a tensor.
TestTensor headWindow(const TestTensor &t, int64_t first, int64_t count) {
  const std::vector<int64_t> &d = t.dims();
  TestTensor r(t.dtype(), {d[0], d[1], count, d[3]});
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t i = 0; i < d[1]; ++i)
      for (int64_t h = 0; h < count; ++h)
        for (int64_t e = 0; e < d[3]; ++e)
          r.set(((b * d[1] + i) * count + h) * d[3] + e,
                t.get(((b * d[1] + i) * d[2] + first + h) * d[3] + e));
  return r;
}

/// q, k and v read as windows of one fused projection [B, S, Hq + 2 Hk,
/// D] (ints[3..4] = [Hq, Hk]) give the bits of the same heads copied out
/// (the slices trainc-read-qkv-in-place removes), forward and back, every
/// tensor sequence-major; and a gradient with one result writes dq, dk and
/// dv into its windows (the concatenation it removes), the same bits.
TEST(CpuNnAttention, QkvWindowsGiveTheSlicesBits) {
  const AttentionCase cases[] = {
      {DType::F32, 2, 4, 2, 37, 37, 8, 8, true, {}}, // grouped heads
      {DType::BF16, 1, 3, 3, 40, 40, 16, 16, true, {1, 1, 40, 40}},
      {DType::F64, 2, 2, 1, 5, 5, 4, 4, false, {}},
      {DType::F16, 1, 2, 2, 9, 9, 16, 16, false, {1, 2, 1, 9}},
  };
  for (const AttentionCase &c : cases) {
    SCOPED_TRACE(dtypeName(c.dtype));
    int64_t heads = c.hq + 2 * c.hk;
    TestTensor packed = randomTensor(c.dtype, {c.b, c.sq, heads, c.d}, 31);
    TestTensor q = headWindow(packed, 0, c.hq),
               k = headWindow(packed, c.hq, c.hk),
               v = headWindow(packed, c.hq + c.hk, c.hk);
    TestTensor mask = randomTensor(c.dtype, c.maskDims, 32, -2, 2);
    TestTensor g = randomTensor(c.dtype, {c.b, c.sq, c.hq, c.d}, 33);
    bool hasMask = !c.maskDims.empty();
    double scale = 1 / std::sqrt(double(c.d));
    for (bool grad : {false, true}) {
      std::vector<TestTensor> want, got;
      for (bool windows : {false, true}) {
        std::vector<const TestTensor *> inputs =
            windows ? std::vector<const TestTensor *>{&packed, &packed, &packed}
                    : std::vector<const TestTensor *>{&q, &k, &v};
        if (grad)
          inputs.push_back(&g);
        if (hasMask)
          inputs.push_back(&mask);
        std::vector<TestTensor> &out = windows ? got : want;
        if (grad)
          out = {TestTensor(c.dtype, q.dims()), TestTensor(c.dtype, k.dims()),
                 TestTensor(c.dtype, v.dims())};
        else
          out = {TestTensor(c.dtype, g.dims())};
        std::vector<TestTensor *> outputs;
        for (TestTensor &t : out)
          outputs.push_back(&t);
        int64_t bits = grad ? 0b1111111 : 0b1111;
        Status st = runKernel(
            grad ? runAttentionGrad : runAttention,
            grad ? Opcode::AttentionGrad : Opcode::Attention, inputs, outputs,
            {c.causal, hasMask, bits, windows ? c.hq : 0, windows ? c.hk : 0},
            {scale});
        ASSERT_TRUE(st.ok()) << st.toString();
      }
      for (size_t r = 0; r < want.size(); ++r)
        for (int64_t e = 0; e < want[r].size(); ++e)
          ASSERT_EQ(got[r].get(e), want[r].get(e))
              << (grad ? "grad " : "") << "result " << r << " element " << e;
      if (!grad)
        continue;
      // One result, the projection's gradient; NaN first, so that a window
      // left unwritten shows.
      TestTensor joined(c.dtype, packed.dims());
      for (int64_t e = 0; e < joined.size(); ++e)
        joined.set(e, std::nan(""));
      std::vector<const TestTensor *> inputs = {&packed, &packed, &packed, &g};
      if (hasMask)
        inputs.push_back(&mask);
      Status st =
          runKernel(runAttentionGrad, Opcode::AttentionGrad, inputs, {&joined},
                    {c.causal, hasMask, 0b1111111, c.hq, c.hk}, {scale});
      ASSERT_TRUE(st.ok()) << st.toString();
      TestTensor windows[3] = {headWindow(joined, 0, c.hq),
                               headWindow(joined, c.hq, c.hk),
                               headWindow(joined, c.hq + c.hk, c.hk)};
      for (int r = 0; r < 3; ++r)
        for (int64_t e = 0; e < want[r].size(); ++e)
          ASSERT_EQ(windows[r].get(e), want[r].get(e))
              << "window " << r << " element " << e;
    }
  }
}

/// The log-sum-exp of each score row of `c` (attentionRef's scores), -inf
/// for a row with no key to attend to.
std::vector<double> logSumExpRef(const AttentionCase &c, const TestTensor &q,
                                 const TestTensor &k, const TestTensor *mask,
                                 double scale) {
  std::vector<double> lse(c.b * c.hq * c.sq, -kInf);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.sq; ++i) {
        std::vector<double> s = scoresRef(c, q, k, mask, scale, b, h, i);
        double max = -kInf;
        for (double x : s)
          max = std::max(max, x);
        if (max == -kInf)
          continue;
        double sum = 0;
        for (double x : s)
          sum += std::exp(x - max);
        lse[(b * c.hq + h) * c.sq + i] = max + std::log(sum);
      }
  return lse;
}

/// Attention's forward and its gradient on `c`, without and with the
/// forward's log-sum-exps (ints[5], trainc-attention-stats).
struct StatsRun {
  TestTensor q, k, v, g, mask, out, lse;
  std::vector<TestTensor> grads, gradsFromStats;
  double scale;
};

/// `lseShift` is added to the log-sum-exps the gradient reads.
StatsRun runWithStats(const AttentionCase &c, const TestTensor *givenMask,
                      double lseShift = 0) {
  StatsRun r{randomTensor(c.dtype, {c.b, c.hq, c.sq, c.d}, 41),
             randomTensor(c.dtype, {c.b, c.hk, c.sk, c.d}, 42),
             randomTensor(c.dtype, {c.b, c.hk, c.sk, c.dv}, 43),
             randomTensor(c.dtype, {c.b, c.hq, c.sq, c.dv}, 44),
             givenMask ? *givenMask
                       : randomTensor(c.dtype, c.maskDims, 45, -2, 2),
             TestTensor(c.dtype, {c.b, c.hq, c.sq, c.dv}),
             TestTensor(attentionLseType(c.dtype), {c.b, c.hq, c.sq}),
             {},
             {},
             1 / std::sqrt(double(c.d))};
  bool hasMask = !c.maskDims.empty();
  std::vector<const TestTensor *> in = {&r.q, &r.k, &r.v};
  if (hasMask)
    in.push_back(&r.mask);
  TestTensor plain(c.dtype, r.out.dims());
  Status s = runKernel(runAttention, Opcode::Attention, in, {&plain},
                       attentionInts(c, hasMask), attentionFloats(c, r.scale));
  EXPECT_TRUE(s.ok()) << s.toString();
  s = runKernel(runAttention, Opcode::Attention, in, {&r.out, &r.lse},
                attentionInts(c, hasMask, /*stats=*/true),
                attentionFloats(c, r.scale));
  EXPECT_TRUE(s.ok()) << s.toString();
  // Keeping the statistics changes no bit of the result.
  for (int64_t e = 0; e < plain.size(); ++e)
    EXPECT_EQ(plain.get(e), r.out.get(e)) << "result element " << e;
  TestTensor lse = r.lse;
  for (int64_t e = 0; e < lse.size(); ++e)
    lse.set(e, lse.get(e) + lseShift);
  for (bool stats : {false, true}) {
    std::vector<TestTensor> &grads = stats ? r.gradsFromStats : r.grads;
    grads = {TestTensor(c.dtype, r.q.dims()), TestTensor(c.dtype, r.k.dims()),
             TestTensor(c.dtype, r.v.dims())};
    std::vector<const TestTensor *> gin = {&r.q, &r.k, &r.v, &r.g};
    if (hasMask)
      gin.push_back(&r.mask);
    if (stats) {
      gin.push_back(&r.out);
      gin.push_back(&lse);
    }
    s = runKernel(runAttentionGrad, Opcode::AttentionGrad, gin,
                  {&grads[0], &grads[1], &grads[2]},
                  attentionInts(c, hasMask, stats),
                  attentionFloats(c, r.scale));
    EXPECT_TRUE(s.ok()) << s.toString();
  }
  return r;
}

const AttentionCase kStatsCases[] = {
    {DType::F32, 2, 3, 3, 37, 37, 8, 6, true, {}},
    {DType::F32, 2, 4, 2, 5, 70, 8, 8, false, {1, 4, 5, 70}},
    {DType::F32, 1, 2, 2, 7, 3, 8, 8, true, {}}, // rows 0-3 see no key
    {DType::F64, 1, 2, 1, 33, 33, 4, 4, true, {1, 1, 33, 33}},
    {DType::BF16, 2, 4, 2, 40, 40, 16, 16, true, {}},
    {DType::F16, 1, 2, 2, 4, 9, 16, 8, false, {1, 1, 1, 9}},
    // Soft-capped scores (Gemma 2's): the tanh remade in the gradient.
    {DType::F32, 2, 4, 2, 37, 37, 8, 8, true, {1, 1, 37, 37}, 0.5},
    {DType::BF16, 1, 2, 2, 40, 40, 16, 16, true, {}, 1.0},
    // Dropout: the mask drawn again in the gradient, with a soft cap too.
    {DType::F32, 2, 4, 2, 37, 37, 8, 8, true, {1, 1, 37, 37}, 0, 0.3, 9},
    {DType::BF16, 1, 2, 2, 40, 40, 16, 16, true, {}, 0.5, 0.5, 2},
};

/// The forward's second result is each row's log-sum-exp (-inf for a row
/// with nothing to attend to), to the rounding of its scores and sum.
TEST(CpuNnAttention, KeepsTheLogSumExps) {
  for (const AttentionCase &c : kStatsCases) {
    SCOPED_TRACE(dtypeName(c.dtype));
    StatsRun r = runWithStats(c, nullptr);
    std::vector<double> ref = logSumExpRef(
        c, r.q, r.k, c.maskDims.empty() ? nullptr : &r.mask, r.scale);
    // As checkAttention's scores, plus the log of a Sk-term sum.
    double tol = 4 * (c.d * c.d * r.scale + c.sk + 16) * computeEps(c.dtype);
    for (int64_t e = 0; e < r.lse.size(); ++e) {
      if (ref[e] == -kInf)
        EXPECT_EQ(r.lse.get(e), -kInf) << "row " << e;
      else
        EXPECT_NEAR(r.lse.get(e), ref[e], tol * (1 + std::fabs(ref[e])))
            << "row " << e;
    }
  }
}

/// The gradient from the forward's log-sum-exps (P = exp(S - lse)) is the
/// remade softmax's to rounding: the two P differ by a few units of the
/// compute type u per element (an exp and a subtraction against an exp and
/// a division), and each gradient element sums at most max(Sq, Sk) such
/// terms of values at most 1 (|dO|, |q|, |k|, |v| <= 1) after D- or
/// Dv-term products: 8 (max(Sq, Sk) + max(D, Dv)) u, of which the worst
/// element uses 0.1% to 13% here. Dropout multiplies the kept P and dP by
/// 1 / (1 - ratio), and their rounding errors with them: the bound too.
/// 16-bit results are each rounded once, so two sums that straddle a
/// rounding boundary land one unit in the last place (2 u of the storage
/// type) apart. A shifted lse (P off by 1%) exceeds the bound 40 to 10^11
/// times, so the kernel does read it.
TEST(CpuNnAttention, GradientFromTheForwardsStatistics) {
  for (const AttentionCase &c : kStatsCases) {
    SCOPED_TRACE(dtypeName(c.dtype));
    int64_t terms = std::max(c.sq, c.sk) + std::max(c.d, c.dv);
    double tol = 8 * terms * computeEps(c.dtype) / (1 - c.dropout);
    auto worst = [&](const StatsRun &r) {
      double w = 0;
      for (int t = 0; t < 3; ++t)
        for (int64_t e = 0; e < r.grads[t].size(); ++e) {
          double want = r.grads[t].get(e), got = r.gradsFromStats[t].get(e);
          w = std::max(w,
                       std::fabs(got - want) /
                           (tol + 2 * storageEps(c.dtype) * std::fabs(want)));
        }
      return w;
    };
    StatsRun r = runWithStats(c, nullptr);
    EXPECT_LE(worst(r), 1.0);
    StatsRun shifted = runWithStats(c, nullptr, 1e-2);
    EXPECT_GT(worst(shifted), 1.0);
  }
}

/// f32's finfo.min: the fill of Hugging Face's masks in f32 and under
/// autocast.
constexpr double kF32Min = -3.4028234663852886e38;

/// The fill of Hugging Face's masks of `dtype`: its finfo.min (f32's for
/// f64 too; f32's rounds to -inf in bf16).
double hfFill(DType dtype) {
  return dtype == DType::BF16 ? -3.3895313892515355e38 : kF32Min;
}

/// A row that a mask leaves nothing to attend to has lse -inf and zero
/// gradients, from the statistics as from the remade softmax. A row whose
/// keys a finite mask all hides (-1e9, or finfo.min as Hugging Face's
/// models write it) has a log-sum-exp that rounds to its max, log(Sk)
/// lost, so exp(S - lse) would be about 1 per key, not 1 / Sk: the kernel
/// remakes such a row's softmax (|lse| >= 64), and its gradient is the
/// remade softmax's, cotangent and all (not only where the cotangent is
/// 0, as for padding whose losses are ignored). The bug it guards against
/// is a factor of Sk = 4 on P, far beyond the 1e-5 allowed for rounding.
TEST(CpuNnAttention, FullyMaskedRowFromTheStatistics) {
  AttentionCase c{DType::F32, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
  TestTensor mask = randomTensor(DType::F32, c.maskDims, 17, -1, 1);
  for (int64_t j = 0; j < 4; ++j)
    mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: nothing.
  StatsRun r = runWithStats(c, &mask);
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(r.lse.get((0 * 2 + h) * 3 + 1), -kInf);
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(r.gradsFromStats[0].get(((0 * 2 + h) * 3 + 1) * 8 + e), 0.0);
  }
  // Batch 0, query 1 hidden by a finite fill instead.
  for (DType dtype : {DType::F32, DType::F64})
    for (double fill : {-1e9, kF32Min}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " + std::to_string(fill));
      c.dtype = dtype;
      TestTensor filled(dtype, c.maskDims);
      for (int64_t e = 0; e < mask.size(); ++e)
        filled.set(e, e / 4 == 1 ? fill : mask.get(e));
      StatsRun finite = runWithStats(c, &filled);
      for (int t = 0; t < 3; ++t)
        for (int64_t e = 0; e < finite.grads[t].size(); ++e)
          EXPECT_NEAR(finite.gradsFromStats[t].get(e), finite.grads[t].get(e),
                      1e-5)
              << "gradient " << t << " element " << e;
    }
}

/// A padding mask of `dims` [B, H|1, Sq|1, Sk] (so, with Sq rows,
/// Hugging Face's attention mask when a model is given one: causal and
/// padding in one term): 0 where query i may see key j and `fill`
/// elsewhere. Key j is among (b, h)'s tokens from left[e] and before Sk -
/// right[e], e = b H + h; with `causal`, query i also sees only j <= i +
/// Sk - Sq.
TestTensor paddingMask(DType dtype, std::vector<int64_t> dims,
                       const std::vector<int64_t> &left,
                       const std::vector<int64_t> &right, double fill,
                       bool causal = true) {
  TestTensor mask(dtype, dims);
  int64_t sq = dims[2], sk = dims[3];
  for (int64_t e = 0; e < dims[0] * dims[1]; ++e)
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j) {
        bool seen =
            (!causal || j <= i + sk - sq) && j >= left[e] && j < sk - right[e];
        mask.set((e * sq + i) * sk + j, seen ? 0.0 : fill);
      }
  return mask;
}

/// Masks that hide keys (entries at or below -2^120) from query tiles.
struct HidingCase {
  AttentionCase c; // its maskDims: the mask's
  std::vector<int64_t> left, right;
  bool causalMask = true; // the mask's own causal part (not c.causal)
  double fill = 0;        // 0: hfFill(c.dtype)
  TestTensor mask(double fillOverride = 0) const {
    double f = fillOverride != 0 ? fillOverride
               : fill != 0       ? fill
                                 : hfFill(c.dtype);
    return paddingMask(c.dtype, c.maskDims, left, right, f, causalMask);
  }
};

const HidingCase kHidingCases[] = {
    // Right padding: the tiles' last keys left out.
    {{DType::F32, 2, 4, 2, 70, 70, 8, 8, false, {2, 1, 70, 70}},
     {0, 10},
     {25, 0}},
    // Rows that see only padding (each keeps its keys: uniform under
    // finfo.min), beside tiles that start past the left padding.
    {{DType::F32, 2, 2, 2, 70, 70, 8, 8, false, {2, 1, 70, 70}, 1},
     {40, 3},
     {0, 20}},
    // Dropout, drawn by each key's own index.
    {{DType::F32, 2, 2, 1, 70, 70, 8, 8, false, {2, 1, 70, 70}, 0, 0.3, 5},
     {10, 37},
     {7, 0}},
    // Sq < Sk.
    {{DType::F64, 1, 2, 2, 40, 75, 8, 8, false, {1, 1, 40, 75}}, {12}, {9}},
    {{DType::BF16, 2, 2, 2, 40, 40, 16, 8, false, {2, 1, 40, 40}},
     {5, 0},
     {0, 11}},
    // Each head its own padding.
    {{DType::F32, 1, 4, 2, 70, 70, 8, 8, false, {1, 4, 70, 70}},
     {0, 33, 5, 0},
     {0, 0, 30, 64}},
    // The causal flag, and padding over the keys alone ([B, 1, 1, Sk]):
    // every tile starts past the left padding.
    {{DType::F32, 2, 2, 2, 70, 70, 8, 8, true, {2, 1, 1, 70}},
     {35, 0},
     {0, 20},
     false},
    // -inf: no row sees padding alone.
    {{DType::F32, 2, 2, 2, 70, 70, 8, 8, false, {2, 1, 1, 70}},
     {12, 0},
     {0, 40},
     false,
     -kInf},
};

/// The definition's results (each row's keys weighed with their mask), for
/// right padding (the tiles' last keys left out), left padding past a
/// tile's first rows (its first keys left out), rows that see only
/// padding, grouped heads, per-head masks, a soft cap, dropout, f64 and
/// bf16, the causal flag, -inf fills and Sq < Sk.
TEST(CpuNnAttention, MasksThatHideKeys) {
  for (const HidingCase &k : kHidingCases) {
    SCOPED_TRACE(dtypeName(k.c.dtype));
    TestTensor mask = k.mask();
    checkAttention(k.c, &mask);
  }
}

/// Leaving keys out changes only the order of the sums: the same calls
/// with the mask's hidden entries at -2^119, which hides nothing (every key
/// read) and still gives those keys probability 0, have the same results,
/// log-sum-exps (but for rows that see only padding, whose are the
/// fill's) and gradients, from the statistics or not, to
/// GradientFromTheForwardsStatistics' bound.
TEST(CpuNnAttention, HidingKeysChangesOnlyTheSumsOrder) {
  for (const HidingCase &k : kHidingCases) {
    const AttentionCase &c = k.c;
    SCOPED_TRACE(dtypeName(c.dtype));
    if (k.fill == -kInf) // -inf and -2^119 differ where a row sees nothing
      continue;
    TestTensor hiding = k.mask(), showing = k.mask(-0x1p119);
    StatsRun skipped = runWithStats(c, &hiding),
             read = runWithStats(c, &showing);
    int64_t terms = std::max(c.sq, c.sk) + std::max(c.d, c.dv);
    double tol = 8 * terms * computeEps(c.dtype) / (1 - c.dropout);
    auto near = [&](const TestTensor &got, const TestTensor &want,
                    const char *what, bool skipFilled = false) {
      for (int64_t e = 0; e < want.size(); ++e) {
        if (skipFilled && want.get(e) <= -1e30)
          continue;
        ASSERT_NEAR(got.get(e), want.get(e),
                    tol + 2 * storageEps(c.dtype) * std::fabs(want.get(e)))
            << what << " element " << e;
      }
    };
    near(skipped.out, read.out, "result");
    near(skipped.lse, read.lse, "log-sum-exp", /*skipFilled=*/true);
    for (int t = 0; t < 3; ++t) {
      near(skipped.grads[t], read.grads[t], "gradient");
      near(skipped.gradsFromStats[t], read.gradsFromStats[t],
           "gradient from the statistics");
    }
  }
}

/// A key the mask hides from every row of a tile is not read: NaN in its
/// key and value rows reaches neither the result nor the gradient, and
/// the gradients of those rows are 0 (read, the NaN would make the rows
/// that read it NaN). Batch 0's keys 0-9 and 60-69, hidden from all its
/// rows, with and without the causal flag (then with Sq = 40 < Sk, so
/// that query 0 sees keys 0-30, not the padding alone).
TEST(CpuNnAttention, KeysHiddenFromATileAreNotRead) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    int64_t sq = causal ? 40 : 70;
    AttentionCase c{DType::F32, 2, 4, 2, sq, 70, 8, 8, causal, {2, 1, 1, 70}};
    TestTensor mask = paddingMask(c.dtype, c.maskDims, {10, 0}, {10, 30},
                                  kF32Min, /*causal=*/false);
    StatsRun clean = runWithStats(c, &mask);
    auto hidden = [](int64_t j) { return j < 10 || j >= 60; };
    TestTensor q = clean.q, k = clean.k, v = clean.v, g = clean.g;
    for (int64_t h = 0; h < c.hk; ++h)
      for (int64_t j = 0; j < 70; ++j)
        for (int64_t e = 0; e < 8 && hidden(j); ++e) {
          k.set((h * 70 + j) * 8 + e, std::nan(""));
          v.set((h * 70 + j) * 8 + e, std::nan(""));
        }
    TestTensor out(c.dtype, clean.out.dims());
    std::vector<int64_t> ints = attentionInts(c, true);
    Status s = runKernel(runAttention, Opcode::Attention, {&q, &k, &v, &mask},
                         {&out}, ints, {clean.scale});
    ASSERT_TRUE(s.ok()) << s.toString();
    for (int64_t e = 0; e < out.size(); ++e)
      ASSERT_EQ(out.get(e), clean.out.get(e)) << "result element " << e;
    std::vector<TestTensor> grads = {TestTensor(c.dtype, q.dims()),
                                     TestTensor(c.dtype, k.dims()),
                                     TestTensor(c.dtype, v.dims())};
    s = runKernel(runAttentionGrad, Opcode::AttentionGrad,
                  {&q, &k, &v, &g, &mask}, {&grads[0], &grads[1], &grads[2]},
                  ints, {clean.scale});
    ASSERT_TRUE(s.ok()) << s.toString();
    for (int t = 0; t < 3; ++t)
      for (int64_t e = 0; e < grads[t].size(); ++e) {
        bool hiddenKey = t > 0 && e < c.hk * 70 * 8 && hidden(e / 8 % 70);
        ASSERT_EQ(grads[t].get(e), hiddenKey ? 0.0 : clean.grads[t].get(e))
            << "gradient " << t << " element " << e;
      }
  }
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
