//===- CpuOptimizerTest.cpp - adamw_update, sum_of_squares ----------------===//
//
// The optimizer step's multi-tensor kernels on the CPU:
// - a group update is N single-parameter updates, bit for bit, in place or
//   not, skipped or not; a single update follows AdamW's formula in T;
// - sum_of_squares follows math/SumOfSquares.h's order exactly (a
//   reference written here from that text gives the same bits), is within
//   a few f64 roundings of the exact sum, and squares a 16-bit operand's
//   elements exactly: an f16 element above 256 has a finite square.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "math/TensorGroups.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace trainc::cpu {
namespace {

using testing::randomTensor;
using testing::runKernel;
using testing::TestTensor;

const std::vector<double> kBetas = {0.9, 0.999, 1e-8};

/// The scalars of a step: neg_step_size, bias_correction2_sqrt,
/// decay_factor, grad_scale.
std::vector<TestTensor> stepScalars(DType t) {
  std::vector<TestTensor> s;
  for (double v : {-1e-3, 0.3, 0.9999, 0.5})
    s.emplace_back(t, std::vector<int64_t>{}, std::vector<double>{v});
  return s;
}

struct Param {
  TestTensor p, g, m, v;
};

Param randomParam(DType t, int64_t n, uint32_t seed) {
  return {randomTensor(t, {n}, seed), randomTensor(t, {n}, seed + 1),
          randomTensor(t, {n}, seed + 2, -0.1, 0.1),
          randomTensor(t, {n}, seed + 3, 0, 0.01)};
}

/// adamw_update over `params`, with the skip flag when `skip` >= 0. In
/// place: each parameter's results are its operands' memory.
void update(std::vector<Param> &params, DType t, int skip, bool inPlace,
            std::vector<Param> &results) {
  size_t n = params.size();
  std::vector<TestTensor> scalars = stepScalars(t);
  TestTensor flag(DType::I1, {}, {double(skip)});
  std::vector<const TestTensor *> in(4 * n);
  std::vector<TestTensor *> out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    in[i] = &params[i].p;
    in[n + i] = &params[i].g;
    in[2 * n + i] = &params[i].m;
    in[3 * n + i] = &params[i].v;
    Param &r = inPlace ? params[i] : results[i];
    out[i] = &r.p;
    out[n + i] = &r.m;
    out[2 * n + i] = &r.v;
  }
  for (const TestTensor &s : scalars)
    in.push_back(&s);
  if (skip >= 0)
    in.push_back(&flag);
  Status s =
      runKernel(runAdamwUpdate, Opcode::AdamwUpdate, in, out, {}, kBetas);
  ASSERT_TRUE(s.ok()) << s.toString();
}

bool sameBytes(const TestTensor &a, const TestTensor &b) {
  TensorRef x = a.ref(), y = b.ref();
  return x.numElements() == y.numElements() &&
         std::memcmp(x.data, y.data, x.numElements() * dtypeSize(x.dtype)) == 0;
}

TEST(CpuOptimizer, AdamwGroupIsOneUpdatePerParameter) {
  const std::vector<int64_t> sizes = {1, 0, 37, 512, 513, 4099, 3};
  for (DType t : {DType::F32, DType::F64})
    for (int skip : {-1, 0, 1})
      for (bool inPlace : {false, true}) {
        std::vector<Param> group, single;
        for (size_t i = 0; i < sizes.size(); ++i) {
          group.push_back(randomParam(t, sizes[i], 10 * i + 1));
          single.push_back(randomParam(t, sizes[i], 10 * i + 1));
        }
        std::vector<Param> old = group, groupOut = group, singleOut = single;
        update(group, t, skip, inPlace, groupOut);
        for (size_t i = 0; i < sizes.size(); ++i) {
          std::vector<Param> one = {single[i]}, oneOut = {singleOut[i]};
          update(one, t, skip, inPlace, oneOut);
          const Param &want = inPlace ? one[0] : oneOut[0];
          const Param &got = inPlace ? group[i] : groupOut[i];
          SCOPED_TRACE(std::string(dtypeName(t)) + " parameter " +
                       std::to_string(i) + " skip " + std::to_string(skip) +
                       (inPlace ? " in place" : ""));
          EXPECT_TRUE(sameBytes(got.p, want.p));
          EXPECT_TRUE(sameBytes(got.m, want.m));
          EXPECT_TRUE(sameBytes(got.v, want.v));
          if (skip == 1) { // A skipped step keeps the old values.
            EXPECT_TRUE(sameBytes(got.p, old[i].p));
            EXPECT_TRUE(sameBytes(got.m, old[i].m));
            EXPECT_TRUE(sameBytes(got.v, old[i].v));
          }
        }
      }
}

/// One element against AdamW's formula (GraphCompositeOps.td), each
/// operation in float.
TEST(CpuOptimizer, AdamwFollowsTheFormula) {
  std::vector<Param> params = {randomParam(DType::F32, 5, 3)};
  std::vector<Param> results = params;
  update(params, DType::F32, -1, false, results);
  for (int64_t i = 0; i < 5; ++i) {
    float p = float(params[0].p.get(i)), g = float(params[0].g.get(i)),
          m = float(params[0].m.get(i)), v = float(params[0].v.get(i));
    float gi = g * 0.5f, pd = p * 0.9999f;
    float m1 = m * 0.9f + float(1 - 0.9) * gi;
    float v1 = v * 0.999f + float(1 - 0.999) * (gi * gi);
    float p1 = pd + -1e-3f * (m1 / (std::sqrt(v1) / 0.3f + 1e-8f));
    EXPECT_EQ(float(results[0].p.get(i)), p1) << i;
    EXPECT_EQ(float(results[0].m.get(i)), m1) << i;
    EXPECT_EQ(float(results[0].v.get(i)), v1) << i;
  }
}

double sumOfSquares(const std::vector<TestTensor> &xs) {
  std::vector<const TestTensor *> in;
  for (const TestTensor &x : xs)
    in.push_back(&x);
  TestTensor out(DType::F64, {});
  Status s = runKernel(runSumOfSquares, Opcode::SumOfSquares, in, {&out}, {});
  EXPECT_TRUE(s.ok()) << s.toString();
  return out.get(0);
}

/// math/SumOfSquares.h's text, written out again: chunks of 2,048 in
/// operand order, eight lanes per chunk, 1,024 accumulators, a pairwise
/// tree. `square` rounds to the operands' type.
double orderedReference(const std::vector<TestTensor> &xs,
                        double (*square)(double)) {
  std::vector<double> chunks;
  for (const TestTensor &x : xs)
    for (int64_t first = 0; first < x.size(); first += 2048) {
      double lanes[8] = {};
      for (int64_t e = 0; e < 2048 && first + e < x.size(); ++e)
        lanes[e % 8] += square(x.get(first + e));
      chunks.push_back(((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                       ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])));
    }
  std::vector<double> acc(1024, 0.0);
  for (size_t c = 0; c < chunks.size(); ++c)
    acc[c % 1024] += chunks[c];
  for (int s = 512; s > 0; s /= 2)
    for (int t = 0; t < s; ++t)
      acc[t] = acc[t] + acc[t + s];
  return acc[0];
}

TEST(CpuOptimizer, SumOfSquaresFollowsItsOrder) {
  // 3,000,000 elements: 1,465 chunks, more than the accumulators.
  for (std::vector<int64_t> sizes :
       {std::vector<int64_t>{1}, {0, 7}, {2047, 2048, 2049}, {3000000, 129}}) {
    std::vector<TestTensor> f32, f64;
    uint32_t seed = 1;
    for (int64_t n : sizes) {
      f32.push_back(randomTensor(DType::F32, {n}, seed, -2, 2));
      f64.push_back(randomTensor(DType::F64, {n}, seed++, -2, 2));
    }
    double got32 = sumOfSquares(f32), got64 = sumOfSquares(f64);
    EXPECT_EQ(got32, orderedReference(f32, [](double x) {
                return double(float(x) * float(x));
              }));
    EXPECT_EQ(got64, orderedReference(f64, [](double x) { return x * x; }));
    // Against the exact sum (long double): at most one rounding per add on
    // the longest path, 256 + 3 + 2 + 10 adds, of values all positive.
    long double exact = 0;
    for (const TestTensor &x : f64)
      for (int64_t i = 0; i < x.size(); ++i)
        exact += (long double)x.get(i) * x.get(i);
    EXPECT_LE(std::fabs(double(got64 - exact)), 300 * 0x1p-53 * double(exact));
  }
}

TEST(CpuOptimizer, SumOfSquaresSquaresSixteenBitElementsExactly) {
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14: kept whole for bf16 and f16 (their
  // squares are exact), and in f32.
  double x = 1 + 0x1p-7;
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    EXPECT_EQ(sumOfSquares({TestTensor(t, {1}, {x})}), 1 + 0x1p-6 + 0x1p-14);
  // An f16 gradient of 300 (and f16's largest, 65504): finite squares,
  // where rounding them to f16 gave infinity (every step skipped).
  EXPECT_EQ(sumOfSquares({TestTensor(DType::F16, {2}, {300, 65504})}),
            300.0 * 300.0 + 65504.0 * 65504.0);
  // bf16's range squared is beyond f32's, within f64's.
  EXPECT_EQ(sumOfSquares({TestTensor(DType::BF16, {1}, {0x1p70})}), 0x1p140);
  // No operand element at all: 0.
  EXPECT_EQ(sumOfSquares({TestTensor(DType::F32, {0})}), 0.0);
}

TEST(CpuOptimizer, SumOfSquaresOfANonFiniteIsNotFinite) {
  // The optimizer skips a step whose norm is not finite.
  EXPECT_TRUE(std::isinf(
      sumOfSquares({TestTensor(DType::F32, {3}, {1.0, INFINITY, 2.0})})));
  EXPECT_TRUE(
      std::isnan(sumOfSquares({TestTensor(DType::F32, {3}, {1.0, NAN, 2.0})})));
}

// The CUDA kernels' launches (math/TensorGroups.h), checked here since
// they run only on a GPU: every tensor with units is a member of exactly
// one launch, in order, at most 32 per launch, none without units; every
// unit of a launch maps back to the member that owns it.
TEST(CpuOptimizer, GroupLaunchesCoverEveryTensorOnce) {
  std::vector<std::vector<int64_t>> groups = {{},
                                              {0, 0, 0},
                                              {5},
                                              {1, 0, 3, 0, 2},
                                              std::vector<int64_t>(32, 1),
                                              std::vector<int64_t>(33, 1)};
  std::vector<int64_t> many;
  for (int i = 0; i < 150; ++i) // GPT-2's 148 parameters, some empty
    many.push_back(i % 11 == 4 ? 0 : (i * 7919) % 40 + 1);
  groups.push_back(many);
  for (const std::vector<int64_t> &units : groups) {
    SCOPED_TRACE(std::to_string(units.size()) + " tensors");
    size_t next = 0, launches = 0;
    std::vector<int> seen(units.size(), 0);
    int32_t last = -1;
    math::GroupLaunch launch;
    auto unitsOf = [&](size_t i) { return units[i]; };
    while (math::nextLaunch(units.size(), next, unitsOf, launch)) {
      ++launches;
      ASSERT_GT(launch.count, 0);
      ASSERT_LE(launch.count, math::kGroupTensors);
      ASSERT_EQ(launch.firstUnit[0], 0);
      for (int k = 0; k < launch.count; ++k) {
        int32_t t = launch.tensor[k];
        EXPECT_GT(t, last); // in order
        last = t;
        ++seen[t];
        EXPECT_EQ(launch.firstUnit[k + 1] - launch.firstUnit[k], units[t]);
        for (int64_t u = launch.firstUnit[k]; u < launch.firstUnit[k + 1]; ++u)
          ASSERT_EQ(math::memberOfUnit(launch, u), k) << "unit " << u;
      }
      // A launch is full unless it is the last.
      if (next < units.size()) {
        EXPECT_EQ(launch.count, math::kGroupTensors);
      }
    }
    size_t withUnits = 0;
    for (size_t i = 0; i < units.size(); ++i) {
      EXPECT_EQ(seen[i], units[i] > 0 ? 1 : 0) << "tensor " << i;
      withUnits += units[i] > 0;
    }
    EXPECT_EQ(launches, (withUnits + math::kGroupTensors - 1) /
                            size_t(math::kGroupTensors));
  }
}

} // namespace
} // namespace trainc::cpu
