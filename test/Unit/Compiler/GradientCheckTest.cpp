//===- GradientCheckTest.cpp - VJP rules against finite differences -------===//
//
// Every graph op's gradient rule checked as DESIGN.md promises: in f64 on
// the CPU runtime, against central finite differences of the loss.
//
// A case is the MLIR text of an f64 `@main` whose trainable parameters
// (train.param, seeded random train.init values) feed the ops under test and
// whose `loss` is sum(y * W), W a seeded random constant of y's shape, so
// every output element reaches the loss with its own weight. The harness
//   1. runs the autodiff pass, writes the executable to a temporary file and
//      loads it (and, separately, autodiff + canonicalize + cse, as trainc's
//      pipeline runs it, so folding the backward IR is checked too);
//   2. runs a Session once: the `<param>.grad` outputs are the analytic
//      gradients;
//   3. for every element of every parameter, writes w +- h into the
//      session's parameter buffer, re-runs, reads the loss and restores w:
//      numeric = (L(w + h) - L(w - h)) / (2h);
//   4. compares element by element (kStep and kTolerance say why these).
//
// A failure names the case (op family/op), the parameter, the worst element
// and the analytic and numeric values. Tests never loosen the bound to pass.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/ExecutableWriter.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Compiler/Pipeline.h"
#include "trainc/Compiler/Registration.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "exec/Executable.h"
#include "exec/Session.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

using llvm::formatv;

namespace {

/// Finite-difference step, relative to the weight: h = kStep * max(1, |w|).
/// The central difference errs by h^2/6 |L'''| (truncation: ~1e-12 for the
/// O(1)-curvature losses here) plus the rounding of the two losses divided
/// by 2h: each loss is an f64 sum of at most ~100 terms of magnitude O(1),
/// exact to a few eps, so ~1e-14 absolute and ~5e-9 after dividing by
/// 2h = 2e-6. A smaller step raises the rounding part, a larger one the
/// truncation part. Observed: at most ~1e-9 (the "[gradient-check]" lines
/// print max |err| / tolerance per case, all below 1e-3).
constexpr double kStep = 1e-6;
/// Per element: |analytic - numeric| <= kTolerance * max(1, max|numeric|)
/// over the parameter: ~200x above the finite-difference error bound and
/// >1000x above the observed error, while a wrong rule (a missing term, a
/// wrong factor, a transposed index, a lost accumulation) is off by
/// O(|gradient|), 1e-3 .. 1 here. Even dropping layer_norm's epsilon
/// (1e-5) from its rule, a ~1e-5 relative change, fails by 30x.
constexpr double kTolerance = 1e-6;
/// Below this, no element of a parameter moves the loss, so the case could
/// not catch a wrong rule for it: a defect of the case, reported as such.
constexpr double kMinSignal = 1e-4;

using Shape = std::vector<int64_t>;

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// "tensor<2x3xf64>", "tensor<f64>".
std::string T(const Shape &shape, llvm::StringRef element = "f64") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element.str() + ">";
}

/// A dense literal holding exactly the bytes of `values` (MLIR's hex form:
/// f64 values round-trip bit for bit and no rank needs nested brackets).
template <typename E>
std::string dense(const std::vector<E> &values, const Shape &shape,
                  llvm::StringRef element) {
  auto *bytes = reinterpret_cast<const uint8_t *>(values.data());
  return "dense<\"0x" +
         llvm::toHex(
             llvm::ArrayRef<uint8_t>(bytes, values.size() * sizeof(E))) +
         "\"> : " + T(shape, element);
}

/// "[1, 2]": the multi-index of flat row-major element `flat`.
std::string multiIndex(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < index.size(); ++d)
    s += (d ? ", " : "") + std::to_string(index[d]);
  return s + "]";
}

/// A seeded generator, reproducible across standard libraries (unlike
/// std::uniform_real_distribution).
class Rng {
public:
  explicit Rng(uint64_t seed) : engine(seed) {}
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * double(engine() >> 11) * 0x1.0p-53;
  }
  double sign() { return (engine() >> 63) ? -1.0 : 1.0; }
  size_t below(size_t n) { return size_t(engine() % n); }

private:
  std::mt19937_64 engine;
};

/// How a parameter's initial values are drawn: uniform in [lo, hi], times a
/// random sign when `randomSign` (to stay away from a kink at 0).
struct Dist {
  double lo = -1, hi = 1;
  bool randomSign = false;
};
Dist uniform(double lo, double hi) { return {lo, hi, false}; }
Dist awayFromZero(double lo, double hi) { return {lo, hi, true}; }

/// Builds the MLIR text of one case: parameters, ops, and the weighted-sum
/// loss.
class Model {
public:
  explicit Model(uint64_t seed) : rng(seed) {}

  std::vector<double> sample(const Shape &shape, Dist dist) {
    std::vector<double> v(numElements(shape));
    for (double &x : v)
      x = rng.uniform(dist.lo, dist.hi) * (dist.randomSign ? rng.sign() : 1.0);
    return v;
  }
  /// Distinct values at least (hi - lo) / n apart, shuffled: no ties for
  /// max-like ops within a finite-difference step.
  std::vector<double> distinct(const Shape &shape, double lo, double hi) {
    size_t n = numElements(shape);
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = lo + (hi - lo) * (double(i) + 0.5) / double(n);
    for (size_t i = n; i > 1; --i)
      std::swap(v[i - 1], v[rng.below(i)]);
    return v;
  }

  /// A trainable (or, with `frozen`, frozen) parameter %name.
  std::string param(const std::string &name, const Shape &shape,
                    const std::vector<double> &values, bool frozen = false) {
    EXPECT_EQ(int64_t(values.size()), numElements(shape)) << name;
    args.push_back("%" + name + ": " + T(shape) + " {train.param = \"" + name +
                   "\", train.init = " + dense(values, shape, "f64") +
                   (frozen ? ", train.frozen" : "") + "}");
    return "%" + name;
  }
  std::string param(const std::string &name, const Shape &shape,
                    Dist dist = {}) {
    return param(name, shape, sample(shape, dist));
  }

  std::string constant(const std::string &name, const Shape &shape,
                       const std::vector<double> &values) {
    op("%" + name + " = graph.constant " + dense(values, shape, "f64"));
    return "%" + name;
  }
  std::string indices(const std::string &name, const Shape &shape,
                      const std::vector<int64_t> &values) {
    op("%" + name + " = graph.constant " + dense(values, shape, "i64"));
    return "%" + name;
  }
  std::string indices32(const std::string &name, const Shape &shape,
                        const std::vector<int32_t> &values) {
    op("%" + name + " = graph.constant " + dense(values, shape, "i32"));
    return "%" + name;
  }

  /// Appends one line of the body.
  void op(const std::string &line) { body += "  " + line + "\n"; }
  /// An extra output beside the loss.
  void output(const std::string &name, const std::string &value,
              const std::string &type) {
    outputs.push_back({name, value, type});
  }

  /// The module: loss = sum(value * W) over all of value's dimensions.
  std::string build(const std::string &value, const Shape &shape) {
    weights = sample(shape, uniform(-1, 1));
    constant("loss_w", shape, weights);
    op("%loss_terms = graph.mul " + value + ", %loss_w : " + T(shape));
    std::string loss = "%loss_terms";
    if (!shape.empty()) {
      std::string dims;
      for (size_t d = 0; d < shape.size(); ++d)
        dims += (d ? ", " : "") + std::to_string(d);
      op("%loss = graph.reduce_sum %loss_terms, dims = [" + dims + "] : (" +
         T(shape) + ") -> tensor<f64>");
      loss = "%loss";
    }
    return buildWithLoss(loss);
  }
  /// The module with `loss` (a tensor<f64> value) returned as is.
  std::string buildWithLoss(const std::string &loss) {
    std::string results = "tensor<f64> {graph.output = \"loss\"}";
    std::string values = loss, types = "tensor<f64>";
    for (const Output &o : outputs) {
      results += ", " + o.type + " {graph.output = \"" + o.name + "\"}";
      values += ", " + o.value;
      types += ", " + o.type;
    }
    std::string text = "func.func @main(";
    for (size_t i = 0; i < args.size(); ++i)
      text += (i ? ",\n    " : "") + args[i];
    return text + ") -> (" + results + ") {\n" + body + "  return " + values +
           " : " + types + "\n}\n";
  }

  /// W of the last build().
  const std::vector<double> &lossWeights() const { return weights; }

  Rng rng;

private:
  struct Output {
    std::string name, value, type;
  };
  std::vector<std::string> args;
  std::string body;
  std::vector<Output> outputs;
  std::vector<double> weights;
};

/// The executable of a case, or the diagnostics that stopped it.
struct Compiled {
  std::shared_ptr<const trainc::Executable> executable;
  std::string errors;
};

/// Parses `source`, differentiates it (then canonicalize + cse when
/// `canonicalize`), writes the executable to a temporary file and loads it.
Compiled compile(const std::string &source, bool canonicalize) {
  Compiled result;
  mlir::DialectRegistry registry;
  trainc::registerTraincDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::raw_string_ostream errors(result.errors);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors << d << "\n";
    for (mlir::Diagnostic &note : d.getNotes())
      errors << "  note: " << note << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return result;
  mlir::PassManager pm(&context);
  pm.addPass(trainc::createInferSignature(
      trainc::InferSignatureOptions{"loss", /*requireLoss=*/true}));
  pm.addPass(trainc::createAutodiff());
  if (canonicalize) {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  trainc::buildExecutablePhases(pm);
  if (mlir::failed(pm.run(*module)))
    return result;
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createTemporaryFile("gradient-check", "tcx", path)) {
    errors << "cannot create a temporary file\n";
    return result;
  }
  llvm::FileRemover remover(path);
  trainc::MemoryPlanReport report;
  if (mlir::failed(trainc::writeExecutable(*module, path, {}, report)))
    return result;
  std::unique_ptr<trainc::Executable> executable;
  trainc::Status status =
      trainc::Executable::load(path.str().str(), executable);
  if (!status.ok()) {
    errors << status.toString() << "\n";
    return result;
  }
  result.executable = std::move(executable);
  return result;
}

/// The index of the output named `name`, or -1.
int findOutput(const trainc::Executable &exe, const std::string &name) {
  for (size_t i = 0; i < exe.outputs().size(); ++i)
    if (exe.tensors()[exe.outputs()[i]].name == name)
      return int(i);
  return -1;
}

std::vector<double> readF64(const trainc::TensorRef &t) {
  EXPECT_EQ(t.dtype, trainc::DType::F64);
  const double *p = t.as<double>();
  return std::vector<double>(p, p + t.numElements());
}

std::unique_ptr<trainc::Session>
newSession(const std::shared_ptr<const trainc::Executable> &exe) {
  std::unique_ptr<trainc::Session> session;
  trainc::Status status = trainc::Session::create(exe, {}, session);
  EXPECT_TRUE(status.ok()) << status.toString();
  return session;
}

struct CheckOptions {
  /// Parameters that must not reach the loss: their gradient must be exactly
  /// zero (analytic and numeric), and they are exempt from kMinSignal.
  std::set<std::string> unreachable;
  /// Evaluate every loss in a new Session: for ops whose value depends on
  /// the session's step counter (dropout's mask), so that all evaluations
  /// see step 0.
  bool freshSessions = false;
};

/// One parameter's gradients.
struct ParamGradient {
  std::string name;
  size_t parameterIndex = 0;
  std::vector<int64_t> shape;
  std::vector<double> analytic, numeric;
};

struct CheckResult {
  std::shared_ptr<const trainc::Executable> executable;
  std::vector<ParamGradient> params;
};

/// Runs `exe` once in a new session and returns the `<param>.grad` outputs
/// of the parameters that have one (frozen ones have none).
bool analyticGradients(const std::string &label,
                       const std::shared_ptr<const trainc::Executable> &exe,
                       std::vector<ParamGradient> &params) {
  std::unique_ptr<trainc::Session> session = newSession(exe);
  if (!session)
    return false;
  trainc::Status status = session->run();
  if (!status.ok()) {
    ADD_FAILURE() << label << ": run failed: " << status.toString();
    return false;
  }
  params.clear();
  for (size_t p = 0; p < exe->parameters().size(); ++p) {
    const trainc::TensorInfo &info = exe->tensors()[exe->parameters()[p]];
    int out = findOutput(*exe, info.name + ".grad");
    if (out < 0)
      continue;
    ParamGradient g;
    g.name = info.name;
    g.parameterIndex = p;
    g.shape = info.shape;
    g.analytic = readF64(session->output(out));
    params.push_back(std::move(g));
  }
  return true;
}

/// Compares analytic with numeric gradients; returns the worst
/// |analytic - numeric| / tolerance over all parameters.
double compareGradients(const std::string &label,
                        const std::vector<ParamGradient> &params,
                        const std::vector<ParamGradient> &numeric,
                        const CheckOptions &options) {
  double worstRatio = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    const ParamGradient &a = params[k];
    const std::vector<double> &n = numeric[k].numeric;
    double maxNumeric = 0, maxAnalytic = 0;
    for (size_t i = 0; i < n.size(); ++i) {
      maxNumeric = std::max(maxNumeric, std::abs(n[i]));
      maxAnalytic = std::max(maxAnalytic, std::abs(a.analytic[i]));
    }
    if (options.unreachable.count(a.name)) {
      EXPECT_TRUE(maxNumeric == 0 && maxAnalytic == 0)
          << label << ": parameter '" << a.name
          << "' does not reach the loss, but max|analytic| = " << maxAnalytic
          << ", max|numeric| = " << maxNumeric;
      continue;
    }
    EXPECT_GE(maxNumeric, kMinSignal)
        << label << ": parameter '" << a.name
        << "' does not move the loss, so this case cannot check its rule";
    double tolerance = kTolerance * std::max(1.0, maxNumeric);
    int64_t worst = -1, bad = 0;
    double worstDiff = -1;
    for (size_t i = 0; i < n.size(); ++i) {
      double diff = std::abs(a.analytic[i] - n[i]);
      if (std::isnan(diff))
        diff = std::numeric_limits<double>::infinity();
      if (!(diff <= tolerance))
        ++bad;
      if (diff > worstDiff)
        worstDiff = diff, worst = int64_t(i);
    }
    worstRatio = std::max(worstRatio, worstDiff / tolerance);
    if (bad)
      ADD_FAILURE() << label << ": parameter '" << a.name << "' " << T(a.shape)
                    << ": " << bad << " of " << n.size()
                    << " elements differ; worst element " << worst << " "
                    << multiIndex(worst, a.shape) << ": analytic "
                    << formatv("{0:e}", a.analytic[worst]).str()
                    << " vs numeric " << formatv("{0:e}", n[worst]).str()
                    << " (|diff| " << formatv("{0:e}", worstDiff).str()
                    << " > tolerance " << formatv("{0:e}", tolerance).str()
                    << ")";
  }
  return worstRatio;
}

/// The gradient check of one case (see the file header). Prints one summary
/// line; failures are gtest failures naming the case.
CheckResult checkGradients(const std::string &name, const std::string &source,
                           const CheckOptions &options = {}) {
  CheckResult result;
  Compiled compiled = compile(source, /*canonicalize=*/false);
  if (!compiled.executable) {
    ADD_FAILURE() << name << ": does not compile:\n"
                  << compiled.errors << "source:\n"
                  << source;
    return result;
  }
  std::shared_ptr<const trainc::Executable> exe = compiled.executable;
  result.executable = exe;
  if (!analyticGradients(name, exe, result.params))
    return result;
  int lossIndex = findOutput(*exe, "loss");
  EXPECT_GE(lossIndex, 0) << name;
  EXPECT_FALSE(result.params.empty()) << name << ": no gradient outputs";
  if (lossIndex < 0 || result.params.empty())
    return result;

  // Central differences, perturbing the session's parameter buffers.
  std::unique_ptr<trainc::Session> session = newSession(exe);
  bool failedRun = false;
  auto loss = [&](size_t param, int64_t element, double value) {
    std::unique_ptr<trainc::Session> fresh;
    trainc::Session *s = session.get();
    if (options.freshSessions)
      s = (fresh = newSession(exe)).get();
    double *w = s->parameter(param).as<double>();
    double saved = w[element];
    w[element] = value;
    trainc::Status status = s->run();
    w[element] = saved;
    if (!status.ok() && !failedRun) {
      ADD_FAILURE() << name << ": run failed: " << status.toString();
      failedRun = true;
    }
    return status.ok() ? s->output(lossIndex).as<double>()[0]
                       : std::numeric_limits<double>::quiet_NaN();
  };
  // The unperturbed loss, before and after: every perturbation was undone.
  auto unperturbed = [&] {
    size_t p = result.params[0].parameterIndex;
    return loss(p, 0, session->parameter(p).as<double>()[0]);
  };
  double before = unperturbed();
  for (ParamGradient &g : result.params) {
    const double *w = session->parameter(g.parameterIndex).as<double>();
    g.numeric.resize(g.analytic.size());
    for (size_t i = 0; i < g.numeric.size(); ++i) {
      double w0 = w[i], h = kStep * std::max(1.0, std::abs(w0));
      // The representable points actually evaluated, for the divisor.
      double plus = w0 + h, minus = w0 - h;
      g.numeric[i] =
          (loss(g.parameterIndex, i, plus) - loss(g.parameterIndex, i, minus)) /
          (plus - minus);
    }
  }
  double after = unperturbed();
  if (failedRun)
    return result;
  EXPECT_EQ(before, after) << name << ": the loss changed across runs";

  double ratio = compareGradients(name + " (autodiff)", result.params,
                                  result.params, options);

  // The same gradients after the pipeline's cleanup of the backward IR.
  Compiled canonical = compile(source, /*canonicalize=*/true);
  double canonicalRatio = -1;
  std::vector<ParamGradient> canonicalParams;
  if (!canonical.executable)
    ADD_FAILURE() << name << ": does not compile with canonicalize + cse:\n"
                  << canonical.errors;
  else if (analyticGradients(name, canonical.executable, canonicalParams)) {
    EXPECT_EQ(canonicalParams.size(), result.params.size()) << name;
    if (canonicalParams.size() == result.params.size())
      canonicalRatio =
          compareGradients(name + " (autodiff + canonicalize + cse)",
                           canonicalParams, result.params, options);
  }

  std::string summary;
  for (const ParamGradient &g : result.params)
    summary += (summary.empty() ? "" : ", ") + g.name + T(g.shape).substr(6);
  std::printf("[gradient-check] %-34s max |err|/tol %.1e (canonicalized "
              "%.1e); params %s\n",
              name.c_str(), ratio, canonicalRatio, summary.c_str());
  std::fflush(stdout);
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// A unary op and the distribution of its operand.
struct Case {
  const char *op;
  Dist dist;
};

TEST(GradientCheck, ElementwiseUnary) {
  // Domains: abs away from its kink, log/sqrt/rsqrt on positive values.
  const Case cases[] = {
      {"neg", uniform(-1, 1)},   {"abs", awayFromZero(0.2, 1.5)},
      {"exp", uniform(-1, 1)},   {"log", uniform(0.3, 2)},
      {"tanh", uniform(-2, 2)},  {"erf", uniform(-2, 2)},
      {"sqrt", uniform(0.3, 2)}, {"rsqrt", uniform(0.3, 2)},
      {"cos", uniform(-3, 3)},   {"sin", uniform(-3, 3)},
  };
  uint64_t seed = 100;
  for (const Case &c : cases) {
    Model m(seed++);
    std::string a = m.param("a", {3, 4}, c.dist);
    m.op(formatv("%y = graph.{0} {1} : {2}", c.op, a, T({3, 4})));
    checkGradients(std::string("unary/") + c.op, m.build("%y", {3, 4}));
  }
}

/// floor and round are locally constant (gradient 0), which alone would
/// not move the loss: a * floor(a), whose gradient is floor(a) only if
/// floor's own is 0, away from the jumps.
TEST(GradientCheck, ElementwiseRounding) {
  const Case cases[] = {{"floor", uniform(1.1, 1.9)},
                        {"round", uniform(-2.4, -1.6)}};
  uint64_t seed = 150;
  for (const Case &c : cases) {
    Model m(seed++);
    std::string a = m.param("a", {3, 4}, c.dist);
    m.op(formatv("%r = graph.{0} {1} : {2}", c.op, a, T({3, 4})));
    m.op(formatv("%y = graph.mul {0}, %r : {1}", a, T({3, 4})));
    checkGradients(std::string("rounding/") + c.op, m.build("%y", {3, 4}));
  }
}

TEST(GradientCheck, ElementwiseBinary) {
  const Shape s = {3, 4};
  uint64_t seed = 200;
  for (const char *op :
       {"add", "sub", "mul", "div", "pow", "max", "min", "remainder"}) {
    Model m(seed++);
    std::string opName = op;
    std::vector<double> a, b;
    if (opName == "div") {
      a = m.sample(s, uniform(-1, 1));
      b = m.sample(s, awayFromZero(0.5, 1.5));
    } else if (opName == "pow") {
      a = m.sample(s, uniform(0.5, 2)); // a positive base
      b = m.sample(s, uniform(-1.5, 1.5));
    } else if (opName == "remainder") {
      // Away from the jumps: x / y is 0.2 .. 0.8 past an integer (from -3
      // to 3), so a finite-difference step does not cross one.
      b = m.sample(s, awayFromZero(0.5, 1.5));
      a = b;
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = b[i] * (double(int(m.rng.uniform(-3, 3))) +
                       m.rng.sign() * m.rng.uniform(0.2, 0.8));
    } else if (opName == "max" || opName == "min") {
      // No ties: b is 0.1 .. 0.5 above or below a.
      a = m.sample(s, uniform(-1, 1));
      b = a;
      for (double &x : b)
        x += m.rng.sign() * m.rng.uniform(0.1, 0.5);
    } else {
      a = m.sample(s, uniform(-1, 1));
      b = m.sample(s, uniform(-1, 1));
    }
    m.param("a", s, a);
    m.param("b", s, b);
    m.op(formatv("%y = graph.{0} %a, %b : {1}", op, T(s)));
    checkGradients("binary/" + opName, m.build("%y", s));
  }

  // Broadcasting with size-1 dimensions: the rules of broadcast_in_dim sum
  // the cotangent back over the repeated dimensions.
  Model m(250);
  m.param("a", {3, 1});
  m.param("b", {4});
  m.param("c", {2, 1, 1}, uniform(0.5, 1.5));
  const std::string t = T({2, 3, 4});
  m.op(formatv("%ba = graph.broadcast_in_dim %a, dims = [1, 2] : ({0}) -> {1}",
               T({3, 1}), t));
  m.op(formatv("%bb = graph.broadcast_in_dim %b, dims = [2] : ({0}) -> {1}",
               T({4}), t));
  m.op(formatv("%bc = graph.broadcast_in_dim %c, dims = [0, 1, 2] : ({0}) -> "
               "{1}",
               T({2, 1, 1}), t));
  m.op(formatv("%p = graph.mul %ba, %bb : {0}", t));
  m.op(formatv("%q = graph.div %p, %bc : {0}", t));
  m.op(formatv("%r = graph.sub %bb, %bc : {0}", t));
  m.op(formatv("%y = graph.add %q, %r : {0}", t));
  checkGradients("binary/broadcast", m.build("%y", {2, 3, 4}));
}

TEST(GradientCheck, SelectCompare) {
  const Shape s = {3, 4};
  Model m(300);
  std::vector<double> a = m.sample(s, uniform(-1, 1)), b = a;
  for (double &x : b)
    x += m.rng.sign() * m.rng.uniform(0.1, 0.5);
  m.param("a", s, a);
  m.param("b", s, b);
  m.constant("zero", s, std::vector<double>(12, 0.0));
  const std::string t = T(s), p = T(s, "i1");
  // The predicate is computed from the parameters, but is an integer path:
  // only the chosen branch's value carries gradient.
  m.op(formatv("%gt = graph.compare GT, %a, %b : {0}", t));
  m.op(formatv("%y1 = graph.select %gt, %a, %b : {0}, {1}", p, t));
  m.op(formatv("%e = graph.exp %b : {0}", t));
  m.op(formatv("%y2 = graph.select %gt, %zero, %e : {0}, {1}", p, t));
  m.op(formatv("%y = graph.add %y1, %y2 : {0}", t));
  checkGradients("select/compare", m.build("%y", s));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Reductions) {
  struct Case {
    const char *op;
    Shape dims, result;
  };
  const Case cases[] = {
      {"reduce_sum", {0, 2}, {3}},   {"reduce_sum", {1}, {2, 4}},
      {"reduce_sum", {0, 1, 2}, {}}, {"reduce_mean", {0, 2}, {3}},
      {"reduce_mean", {2}, {2, 3}},  {"reduce_mean", {0, 1, 2}, {}},
      {"reduce_max", {0, 2}, {3}},   {"reduce_max", {2}, {2, 3}},
      {"reduce_max", {0, 1, 2}, {}},
  };
  uint64_t seed = 400;
  for (const Case &c : cases) {
    Model m(seed++);
    // Distinct values: reduce_max has a unique maximum in every row.
    m.param("x", {2, 3, 4}, m.distinct({2, 3, 4}, -1, 1));
    std::string dims;
    for (size_t d = 0; d < c.dims.size(); ++d)
      dims += (d ? ", " : "") + std::to_string(c.dims[d]);
    m.op(formatv("%y = graph.{0} %x, dims = [{1}] : ({2}) -> {3}", c.op, dims,
                 T({2, 3, 4}), T(c.result)));
    checkGradients(formatv("reduction/{0}[{1}]", c.op, dims).str(),
                   m.build("%y", c.result));
  }
}

/// reduce_prod away from zero (g * p / x), and with rows holding one zero
/// (only the zero's gradient is nonzero: the product of the others) or two
/// (every gradient is 0), each row's product over dims [1].
TEST(GradientCheck, ReduceProd) {
  struct Case {
    const char *name;
    std::vector<std::pair<int, int>> zeros; // (row, column) set to 0
  };
  const Case cases[] = {{"nonzero", {}},
                        {"one zero", {{0, 2}, {2, 0}}},
                        {"two zeros", {{1, 1}, {1, 3}}}};
  uint64_t seed = 450;
  for (const Case &c : cases) {
    Model m(seed++);
    // Magnitudes in [0.5, 1.5] of either sign keep the products near 1.
    std::vector<double> x(12);
    for (double &v : x)
      v = m.rng.sign() * m.rng.uniform(0.5, 1.5);
    for (auto [r, col] : c.zeros)
      x[r * 4 + col] = 0.0;
    m.param("x", {3, 4}, x);
    m.op(formatv("%y = graph.reduce_prod %x, dims = [1] : ({0}) -> {1}",
                 T({3, 4}), T({3})));
    checkGradients(std::string("reduction/reduce_prod ") + c.name,
                   m.build("%y", {3}));
  }
  // Over every dim, to a scalar.
  Model m(seed);
  std::vector<double> x(6);
  for (double &v : x)
    v = m.rng.sign() * m.rng.uniform(0.7, 1.3);
  m.param("x", {2, 3}, x);
  m.op(formatv("%y = graph.reduce_prod %x, dims = [0, 1] : ({0}) -> {1}",
               T({2, 3}), T({})));
  checkGradients("reduction/reduce_prod[0, 1]", m.build("%y", {}));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// One op from parameter %x of `in` to %y of `out`.
void checkDataMovement(const std::string &name, uint64_t seed, const Shape &in,
                       const Shape &out, const std::string &op) {
  Model m(seed);
  m.param("x", in);
  m.op(formatv("%y = graph.{0} : ({1}) -> {2}", op, T(in), T(out)));
  checkGradients("data/" + name, m.build("%y", out));
}

TEST(GradientCheck, DataMovement) {
  checkDataMovement("broadcast_in_dim[1]", 500, {3}, {2, 3, 4},
                    "broadcast_in_dim %x, dims = [1]");
  checkDataMovement("broadcast_in_dim[size1]", 501, {1, 4}, {3, 4},
                    "broadcast_in_dim %x, dims = [0, 1]");
  checkDataMovement("broadcast_in_dim[scalar]", 502, {}, {2, 3},
                    "broadcast_in_dim %x, dims = []");
  checkDataMovement("reshape", 503, {2, 3, 4}, {6, 4}, "reshape %x");
  checkDataMovement("reshape[flat]", 504, {2, 3, 4}, {24}, "reshape %x");
  checkDataMovement("transpose", 505, {2, 3, 4}, {4, 2, 3},
                    "transpose %x, permutation = [2, 0, 1]");
  checkDataMovement("slice", 506, {4, 6}, {2, 4},
                    "slice %x, start = [1, 1], limit = [3, 5], strides = [1, "
                    "1]");
  checkDataMovement("slice[strided]", 507, {5, 6}, {2, 2},
                    "slice %x, start = [1, 0], limit = [5, 6], strides = [2, "
                    "3]");
  checkDataMovement("slice[strided3d]", 508, {3, 7, 4}, {2, 3, 2},
                    "slice %x, start = [0, 1, 1], limit = [3, 7, 4], strides "
                    "= [2, 2, 2]");

  // A convolution's patches and their transpose: strides, dilation,
  // padding on both sides, and positions no window reads.
  checkDataMovement("extract_patches[2d]", 512, {2, 3, 5, 4},
                    {3, 3, 2, 2, 3, 2},
                    "extract_patches %x, kernel = [3, 2], strides = [2, 1], "
                    "dilation = [1, 2], pad_low = [1, 0], pad_high = [1, 0]");
  checkDataMovement("extract_patches[1d]", 513, {1, 2, 6}, {2, 3, 1, 4},
                    "extract_patches %x, kernel = [3], strides = [2], "
                    "dilation = [1], pad_low = [2], pad_high = [1]");
  checkDataMovement("fold_patches[2d]", 514, {3, 3, 2, 2, 3, 2}, {2, 3, 5, 4},
                    "fold_patches %x, kernel = [3, 2], strides = [2, 1], "
                    "dilation = [1, 2], pad_low = [1, 0], pad_high = [1, 0], "
                    "spatial = [5, 4]");
  checkDataMovement("fold_patches[1d]", 515, {2, 3, 1, 4}, {1, 2, 6},
                    "fold_patches %x, kernel = [3], strides = [2], "
                    "dilation = [1], pad_low = [2], pad_high = [1], "
                    "spatial = [6]");

  // Concatenate, with one operand appearing twice.
  {
    Model m(510);
    m.param("a", {2, 3});
    m.param("b", {2, 1});
    m.op(formatv("%y = graph.concatenate(%a, %b, %a), dim = 1 : ({0}, {1}, "
                 "{0}) -> {2}",
                 T({2, 3}), T({2, 1}), T({2, 7})));
    checkGradients("data/concatenate[dim1]", m.build("%y", {2, 7}));
  }
  {
    Model m(511);
    m.param("a", {2, 3});
    m.param("c", {1, 3});
    m.op(formatv("%y = graph.concatenate(%a, %c), dim = 0 : ({0}, {1}) -> {2}",
                 T({2, 3}), T({1, 3}), T({3, 3})));
    checkGradients("data/concatenate[dim0]", m.build("%y", {3, 3}));
  }
}

TEST(GradientCheck, GatherScatterAdd) {
  // Embedding rows used several times (row 1 three times, row 4 via -1)
  // must accumulate every use; rows 2 unused get zero.
  {
    Model m(600);
    m.param("table", {5, 3});
    m.indices("idx", {2, 3}, {1, 3, 1, 0, -1, 1});
    m.op(formatv("%y = graph.gather %table[%idx], axis = 0 : ({0}, {1}) -> "
                 "{2}",
                 T({5, 3}), T({2, 3}, "i64"), T({2, 3, 3})));
    checkGradients("gather[axis0,dup]", m.build("%y", {2, 3, 3}));
  }
  {
    Model m(601);
    m.param("x", {2, 5, 3});
    m.indices32("idx", {4}, {4, 0, 4, 2});
    m.op(formatv("%y = graph.gather %x[%idx], axis = 1 : ({0}, {1}) -> {2}",
                 T({2, 5, 3}), T({4}, "i32"), T({2, 4, 3})));
    checkGradients("gather[axis1,i32,dup]", m.build("%y", {2, 4, 3}));
  }
  {
    Model m(602);
    m.param("table", {5, 3});
    m.indices("idx", {}, {3});
    m.op(formatv("%y = graph.gather %table[%idx], axis = 0 : ({0}, {1}) -> "
                 "{2}",
                 T({5, 3}), T({}, "i64"), T({3})));
    checkGradients("gather[scalar index]", m.build("%y", {3}));
  }
  {
    Model m(603);
    m.param("u", {2, 3, 3});
    m.indices("idx", {2, 3}, {1, 3, 1, 0, -1, 1});
    m.op(formatv("%y = graph.scatter_add %u[%idx], axis = 0 : ({0}, {1}) -> "
                 "{2}",
                 T({2, 3, 3}), T({2, 3}, "i64"), T({5, 3})));
    checkGradients("scatter_add[axis0,dup]", m.build("%y", {5, 3}));
  }
  {
    Model m(604);
    m.param("u", {2, 4, 3});
    m.indices32("idx", {4}, {4, 0, 4, 2});
    m.op(formatv("%y = graph.scatter_add %u[%idx], axis = 1 : ({0}, {1}) -> "
                 "{2}",
                 T({2, 4, 3}), T({4}, "i32"), T({2, 5, 3})));
    checkGradients("scatter_add[axis1,i32,dup]", m.build("%y", {2, 5, 3}));
  }
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

TEST(GradientCheck, DotGeneral) {
  struct Case {
    const char *name;
    Shape lhs, rhs, result;
    const char *dims;
  };
  const Case cases[] = {
      {"matmul",
       {3, 4},
       {4, 5},
       {3, 5},
       "batching_dims = [] x [], "
       "contracting_dims = [1] x [0]"},
      {"batched",
       {2, 3, 4},
       {2, 4, 5},
       {2, 3, 5},
       "batching_dims = [0] x [0], contracting_dims = [2] x [1]"},
      {"transposed",
       {4, 3},
       {5, 4},
       {3, 5},
       "batching_dims = [] x [], contracting_dims = [0] x [1]"},
      {"multi-contracting",
       {2, 3, 4},
       {4, 2, 5},
       {3, 5},
       "batching_dims = [] x [], contracting_dims = [0, 2] x [1, 0]"},
      {"inner batch",
       {3, 2, 4},
       {4, 2, 5},
       {2, 3, 5},
       "batching_dims = [1] x [1], contracting_dims = [2] x [0]"},
      {"outer product",
       {3},
       {4},
       {3, 4},
       "batching_dims = [] x [], contracting_dims = [] x []"},
  };
  uint64_t seed = 700;
  for (const Case &c : cases) {
    Model m(seed++);
    m.param("a", c.lhs);
    m.param("b", c.rhs);
    m.op(formatv("%y = graph.dot_general %a, %b, {0} : ({1}, {2}) -> {3}",
                 c.dims, T(c.lhs), T(c.rhs), T(c.result)));
    checkGradients(std::string("dot_general/") + c.name,
                   m.build("%y", c.result));
  }
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Softmax) {
  uint64_t seed = 800;
  for (int dim : {0, 1, 2}) {
    Model m(seed++);
    m.param("x", {2, 3, 4}, uniform(-2, 2));
    m.op(formatv("%y = graph.softmax %x, dim = {0} : {1}", dim, T({2, 3, 4})));
    checkGradients(formatv("softmax[dim{0}]", dim).str(),
                   m.build("%y", {2, 3, 4}));
  }
}

TEST(GradientCheck, LayerNorm) {
  struct Case {
    const char *name;
    int axis;
    bool scale, bias;
  };
  const Case cases[] = {
      {"axis2,scale,bias", 2, true, true}, {"axis2", 2, false, false},
      {"axis1,scale,bias", 1, true, true}, {"axis1,scale", 1, true, false},
      {"axis2,bias", 2, false, true},
  };
  const Shape s = {2, 3, 4};
  uint64_t seed = 900;
  for (const Case &c : cases) {
    Model m(seed++);
    Shape normalized(s.begin() + c.axis, s.end());
    m.param("x", s, uniform(-1, 1));
    std::string operands = "%x", types = T(s);
    if (c.scale) {
      m.param("g", normalized, uniform(0.5, 1.5));
      operands += " scale %g", types += ", " + T(normalized);
    }
    if (c.bias) {
      m.param("b", normalized, uniform(-1, 1));
      operands += " bias %b", types += ", " + T(normalized);
    }
    m.op(formatv("%y = graph.layer_norm {0}, axis = {1}, epsilon = 1.0e-05 : "
                 "({2}) -> {3}",
                 operands, c.axis, types, T(s)));
    checkGradients(std::string("layer_norm/") + c.name, m.build("%y", s));
  }
}

TEST(GradientCheck, RmsNorm) {
  const Shape s = {2, 3, 4};
  {
    Model m(1000);
    m.param("x", s);
    m.param("g", {4}, uniform(0.5, 1.5));
    m.op(formatv("%y = graph.rms_norm %x scale %g, axis = 2, epsilon = "
                 "1.0e-06 : ({0}, {1}) -> {0}",
                 T(s), T({4})));
    checkGradients("rms_norm/axis2,scale", m.build("%y", s));
  }
  {
    Model m(1001);
    m.param("x", s);
    m.op(formatv("%y = graph.rms_norm %x, axis = 1, epsilon = 1.0e-06 : "
                 "({0}) -> {0}",
                 T(s)));
    checkGradients("rms_norm/axis1", m.build("%y", s));
  }
}

TEST(GradientCheck, Gelu) {
  uint64_t seed = 1100;
  for (const char *approximation : {"erf", "tanh"}) {
    Model m(seed++);
    m.param("x", {3, 5}, uniform(-3, 3));
    m.op(formatv("%y = graph.gelu %x, approximation = {0} : {1}", approximation,
                 T({3, 5})));
    checkGradients(std::string("gelu/") + approximation, m.build("%y", {3, 5}));
  }
}

/// Attention over parameters q, k, v (and `mask` operands/types appended),
/// its scores soft-capped at `softcap` when not 0, its probabilities
/// dropped out at `dropout` (seed 5) when not 0.
std::string attentionCase(Model &m, const Shape &q, const Shape &k,
                          const Shape &v, const std::string &maskOperand,
                          const Shape &maskShape, bool causal,
                          const Shape &result, double softcap = 0,
                          double dropout = 0) {
  m.param("q", q);
  m.param("k", k);
  m.param("v", v);
  std::string types = T(q) + ", " + T(k) + ", " + T(v);
  if (!maskOperand.empty())
    types += ", " + T(maskShape);
  std::vector<std::string> attrs;
  if (softcap > 0)
    attrs.push_back(formatv("softcap = {0}", softcap).str());
  if (dropout > 0)
    attrs.push_back(formatv("dropout = {0}, seed = 5", dropout).str());
  m.op(formatv("%y = graph.attention %q, %k, %v{0}, scale = 0.5{1}{2} : ({3}) "
               "-> {4}",
               maskOperand.empty() ? "" : " mask " + maskOperand,
               causal ? ", causal" : "",
               attrs.empty() ? std::string()
                             : " {" + llvm::join(attrs, ", ") + "}",
               types, T(result)));
  return m.build("%y", result);
}

TEST(GradientCheck, Attention) {
  {
    Model m(1200);
    checkGradients("attention/causal",
                   attentionCase(m, {1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3},
                                 "", {}, true, {1, 2, 4, 3}));
  }
  {
    // The additive mask is a parameter too (its cotangent is the scores').
    Model m(1201);
    m.param("mask", {1, 1, 4, 4});
    checkGradients("attention/additive mask",
                   attentionCase(m, {1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3},
                                 "%mask", {1, 1, 4, 4}, false, {1, 2, 4, 3}));
  }
  {
    // Grouped-query: 4 query heads on 2 key/value heads, Sk > Sq, Dv != D.
    Model m(1202);
    checkGradients("attention/gqa causal",
                   attentionCase(m, {2, 4, 3, 3}, {2, 2, 5, 3}, {2, 2, 5, 2},
                                 "", {}, true, {2, 4, 3, 2}));
  }
  {
    // A fully masked row (query 1: every key -inf) gives zeros, and other
    // rows mask some keys; the mask is a constant.
    Model m(1203);
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> mask = m.sample({1, 1, 4, 4}, uniform(-1, 1));
    for (int j = 0; j < 4; ++j)
      mask[1 * 4 + j] = -inf;
    mask[0 * 4 + 3] = -inf;
    mask[2 * 4 + 0] = -inf;
    m.constant("mask", {1, 1, 4, 4}, mask);
    checkGradients("attention/masked row",
                   attentionCase(m, {1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3},
                                 "%mask", {1, 1, 4, 4}, false, {1, 2, 4, 3}));
  }
  {
    // Causal with Sq > Sk: queries 0 and 1 have no key (j <= i - 2).
    Model m(1204);
    checkGradients("attention/causal rows without keys",
                   attentionCase(m, {1, 1, 5, 3}, {1, 1, 3, 3}, {1, 1, 3, 3},
                                 "", {}, true, {1, 1, 5, 3}));
  }
  {
    // More query rows than the CPU kernel's tile of 32: causal tiles read
    // only the keys their last row may see and add into dK and dV in turn;
    // Sq < Sk shifts the tiles' key ranges, Sq > Sk leaves a tile's first
    // rows without keys.
    Model m(1206);
    checkGradients("attention/causal tiles",
                   attentionCase(m, {1, 1, 70, 2}, {1, 1, 70, 2}, {1, 1, 70, 2},
                                 "", {}, true, {1, 1, 70, 2}));
    Model shifted(1207);
    checkGradients("attention/causal tiles, Sq < Sk",
                   attentionCase(shifted, {1, 1, 40, 2}, {1, 1, 75, 2},
                                 {1, 1, 75, 1}, "", {}, true, {1, 1, 40, 1}));
    Model fewKeys(1208);
    checkGradients("attention/causal tiles, Sq > Sk",
                   attentionCase(fewKeys, {1, 1, 45, 2}, {1, 1, 20, 2},
                                 {1, 1, 20, 1}, "", {}, true, {1, 1, 45, 1}));
  }
  {
    // Causal and a per-head mask broadcast over the batch.
    Model m(1205);
    m.param("mask", {1, 2, 4, 4});
    checkGradients("attention/causal + mask",
                   attentionCase(m, {2, 2, 4, 3}, {2, 2, 4, 3}, {2, 2, 4, 3},
                                 "%mask", {1, 2, 4, 4}, true, {2, 2, 4, 3}));
  }
  {
    // Soft-capped scores (Gemma 2's), the cap below the scores' range so
    // that tanh bends: the kernel's slope 1 - tanh^2, and the decomposed
    // rule of the mask's cotangent (which remakes the capped scores);
    // causal tiles and grouped heads.
    Model m(1209);
    m.param("mask", {1, 2, 4, 4});
    checkGradients("attention/softcap + mask",
                   attentionCase(m, {2, 2, 4, 3}, {2, 2, 4, 3}, {2, 2, 4, 3},
                                 "%mask", {1, 2, 4, 4}, false, {2, 2, 4, 3},
                                 0.3));
    Model tiles(1210);
    checkGradients("attention/softcap causal tiles, gqa",
                   attentionCase(tiles, {1, 2, 40, 3}, {1, 1, 40, 3},
                                 {1, 1, 40, 2}, "", {}, true, {1, 2, 40, 2},
                                 0.5));
  }
  {
    // Dropout of the probabilities (BERT's, GPT-2's): the mask is a function
    // of the step, so every loss is evaluated in a fresh session (step 0),
    // where attention is a smooth function of q, k and v with the mask
    // fixed. With a trained mask the decomposed rule of its cotangent draws
    // the dropout mask again (graph.dropout); causal tiles with grouped
    // heads cross the CPU kernel's 32-row tiles.
    CheckOptions options;
    options.freshSessions = true;
    Model m(1211);
    m.param("mask", {1, 2, 4, 4});
    checkGradients("attention/dropout + mask",
                   attentionCase(m, {2, 2, 4, 3}, {2, 2, 4, 3}, {2, 2, 4, 3},
                                 "%mask", {1, 2, 4, 4}, false, {2, 2, 4, 3},
                                 /*softcap=*/0, /*dropout=*/0.4),
                   options);
    Model tiles(1212);
    checkGradients("attention/dropout causal tiles, gqa, softcap",
                   attentionCase(tiles, {1, 2, 40, 3}, {1, 1, 40, 3},
                                 {1, 1, 40, 2}, "", {}, true, {1, 2, 40, 2},
                                 /*softcap=*/0.5, /*dropout=*/0.25),
                   options);
  }
}

/// graph.attention's dropout is graph.dropout of the [B, H, Sq, Sk]
/// probabilities, as the recognizer assumes when it takes one into the
/// other: the fused op and the ops it replaces (softmax, dropout of the
/// same seed, product) give the same loss and gradients at every step, to
/// f64 rounding, and both change with the step (the mask does).
TEST(GradientCheck, AttentionDropoutIsTheUnfusedOps) {
  const Shape q = {2, 2, 5, 3}, scores = {2, 2, 5, 5};
  auto build = [&](bool fused) {
    Model m(1213); // the same parameters and loss weights for both
    m.param("q", q);
    m.param("k", q);
    m.param("v", q);
    if (fused) {
      m.op(formatv("%y = graph.attention %q, %k, %v, scale = 0.5 {{dropout = "
                   "0.4, seed = 5} : ({0}, {0}, {0}) -> {0}",
                   T(q)));
    } else {
      m.op(formatv("%s = graph.dot_general %q, %k, batching_dims = [0, 1] x "
                   "[0, 1], contracting_dims = [3] x [3] : ({0}, {0}) -> {1}",
                   T(q), T(scores)));
      m.op(formatv("%half = graph.constant dense<0.5> : {0}", T(scores)));
      m.op(formatv("%ss = graph.mul %s, %half : {0}", T(scores)));
      m.op(formatv("%p = graph.softmax %ss, dim = 3 : {0}", T(scores)));
      m.op(formatv("%d, %mask = graph.dropout %p, ratio = 4.000000e-01, seed "
                   "= 5 : {0}",
                   T(scores)));
      m.op(formatv("%y = graph.dot_general %d, %v, batching_dims = [0, 1] x "
                   "[0, 1], contracting_dims = [3] x [2] : ({0}, {1}) -> {1}",
                   T(scores), T(q)));
    }
    return m.build("%y", q);
  };
  Compiled fused = compile(build(true), /*canonicalize=*/true);
  Compiled unfused = compile(build(false), /*canonicalize=*/true);
  ASSERT_TRUE(fused.executable) << fused.errors;
  ASSERT_TRUE(unfused.executable) << unfused.errors;
  std::unique_ptr<trainc::Session> a = newSession(fused.executable),
                                   b = newSession(unfused.executable);
  std::vector<double> firstLoss;
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(a->run().ok());
    ASSERT_TRUE(b->run().ok());
    for (const char *name : {"loss", "q.grad", "k.grad", "v.grad"}) {
      int ia = findOutput(*fused.executable, name),
          ib = findOutput(*unfused.executable, name);
      ASSERT_GE(ia, 0) << name;
      ASSERT_GE(ib, 0) << name;
      std::vector<double> x = readF64(a->output(ia)),
                          y = readF64(b->output(ib));
      ASSERT_EQ(x.size(), y.size()) << name;
      double norm = 0;
      for (double e : y)
        norm = std::max(norm, std::abs(e));
      // Sums of at most 5 + 3 terms of values below 2 in another order.
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_NEAR(x[i], y[i], 1e-14 * std::max(1.0, norm))
            << name << " element " << i << " at step " << step;
      if (std::string(name) == "loss") {
        if (step == 0)
          firstLoss = x;
        else
          EXPECT_NE(x, firstLoss) << "the mask did not change with the step";
      }
    }
  }
}

TEST(GradientCheck, SoftmaxCrossEntropy) {
  const Shape logits = {2, 3, 5}, positions = {2, 3};
  const std::vector<int64_t> targets = {0, 4, 2, 1, 1, 3};
  // Everything ignored but position [1, 1].
  const std::vector<int64_t> mostlyIgnored = {-100, -100, -100, -100, 2, -100};
  uint64_t seed = 1300;
  for (const char *reduction : {"mean", "sum", "none"}) {
    for (bool ignore : {false, true}) {
      Model m(seed++);
      m.param("x", logits, uniform(-2, 2));
      m.indices("t", positions, ignore ? mostlyIgnored : targets);
      bool none = std::string(reduction) == "none";
      Shape result = none ? positions : Shape{};
      m.op(formatv("%y = graph.softmax_cross_entropy %x, %t, reduction = "
                   "{0}{1} : ({2}, {3}) -> {4}",
                   reduction, ignore ? ", ignore_index = -100" : "", T(logits),
                   T(positions, "i64"), T(result)));
      checkGradients(formatv("softmax_cross_entropy/{0}{1}", reduction,
                             ignore ? ",ignore all but one" : "")
                         .str(),
                     m.build("%y", result));
    }
  }
}

TEST(GradientCheck, Dropout) {
  // The mask depends on the session's step, which advances on every run:
  // the finite differences evaluate each loss in a new session (step 0),
  // where the mask is the analytic run's, and dropout is then linear.
  const Shape s = {6, 8};
  const double ratio = 0.3;
  Model m(1400);
  m.param("x", s);
  m.op(formatv("%y, %mask = graph.dropout %x, ratio = 3.000000e-01, seed = 7 "
               ": {0}",
               T(s)));
  m.output("mask", "%mask", T(s, "i1"));
  std::string source = m.build("%y", s);
  CheckOptions options;
  options.freshSessions = true;
  CheckResult result = checkGradients("dropout", source, options);
  if (!result.executable)
    return;

  // Analytically, run after run (the step, so the mask, changes): the
  // gradient is select(mask, W / (1 - ratio), 0) with the mask of that run.
  const std::vector<double> &weights = m.lossWeights();
  std::shared_ptr<const trainc::Executable> exe = result.executable;
  std::unique_ptr<trainc::Session> session = newSession(exe);
  int maskOut = findOutput(*exe, "mask"), gradOut = findOutput(*exe, "x.grad");
  ASSERT_GE(maskOut, 0);
  ASSERT_GE(gradOut, 0);
  std::vector<uint8_t> firstMask;
  for (int step = 0; step < 3; ++step) {
    trainc::Status status = session->run();
    ASSERT_TRUE(status.ok()) << status.toString();
    const uint8_t *mask = session->output(maskOut).as<uint8_t>();
    std::vector<double> grad = readF64(session->output(gradOut));
    int64_t kept = 0;
    for (size_t i = 0; i < grad.size(); ++i) {
      kept += mask[i];
      // The rule's g * (1 / (1 - ratio)) (or g / (1 - ratio)) differs from
      // this by rounding only: a few ulps.
      double expected = mask[i] ? weights[i] / (1 - ratio) : 0.0;
      EXPECT_NEAR(grad[i], expected, 1e-15 * std::abs(expected))
          << "dropout: step " << step << " element " << i << " "
          << multiIndex(i, s) << " (mask " << int(mask[i]) << ")";
    }
    // The case checks something only if the mask keeps some and drops some.
    EXPECT_GT(kept, 0) << "step " << step;
    EXPECT_LT(kept, int64_t(grad.size())) << "step " << step;
    std::vector<uint8_t> current(mask, mask + grad.size());
    if (step == 0)
      firstMask = current;
    else
      EXPECT_NE(current, firstMask) << "the mask did not change with the step";
  }
}

//===----------------------------------------------------------------------===//
// Whole-graph properties
//===----------------------------------------------------------------------===//

TEST(GradientCheck, TiedParameters) {
  // A tied embedding: wte is gathered (with repeated tokens) and is the
  // output projection, as in GPT-2; its gradient is the sum of both uses.
  {
    Model m(1500);
    m.param("wte", {6, 4}, uniform(-1, 1));
    m.indices("tokens", {2, 3}, {1, 4, 1, 5, 0, 1});
    m.indices("targets", {2, 3}, {4, 1, 5, 0, 1, 2});
    m.op(formatv("%emb = graph.gather %wte[%tokens], axis = 0 : ({0}, {1}) -> "
                 "{2}",
                 T({6, 4}), T({2, 3}, "i64"), T({2, 3, 4})));
    m.op(formatv("%h = graph.tanh %emb : {0}", T({2, 3, 4})));
    m.op(formatv("%logits = graph.dot_general %h, %wte, batching_dims = [] x "
                 "[], contracting_dims = [2] x [1] : ({0}, {1}) -> {2}",
                 T({2, 3, 4}), T({6, 4}), T({2, 3, 6})));
    m.op(formatv("%y = graph.softmax_cross_entropy %logits, %targets, "
                 "reduction = mean : ({0}, {1}) -> {2}",
                 T({2, 3, 6}), T({2, 3}, "i64"), T({})));
    checkGradients("tied/embedding+projection", m.build("%y", {}));
  }
  // One value used as both operands of an op, and by two ops.
  {
    Model m(1501);
    m.param("a", {3, 4});
    const std::string t = T({3, 4});
    m.op(formatv("%sq = graph.mul %a, %a : {0}", t));
    m.op(formatv("%e = graph.exp %a : {0}", t));
    m.op(formatv("%y = graph.add %sq, %e : {0}", t));
    checkGradients("tied/same operand twice", m.build("%y", {3, 4}));
  }
}

TEST(GradientCheck, IntegerPathsAndUnreachableParameters) {
  // w reaches the loss only through a comparison and a float->int->float
  // conversion: integer values carry no gradient, so w.grad is zero (and so
  // is the finite difference: no value is within h of a step). u does not
  // reach the loss at all; `frozen` is used but not trained.
  const Shape s = {2, 3};
  const std::string t = T(s), ti = T(s, "i64"), tp = T(s, "i1");
  Model m(1600);
  std::vector<double> w = m.sample(s, uniform(0.2, 0.8));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] += double(i % 3) - 1; // in (-0.8, -0.2) + {0, 1, 2}: off integers
  m.param("w", s, w);
  m.param("u", s);
  m.param("frozen", s, m.sample(s, uniform(-1, 1)), /*frozen=*/true);
  m.param("a", s);
  m.constant("zero", s, std::vector<double>(6, 0.0));
  m.constant("two", s, std::vector<double>(6, 2.0));
  m.op(formatv("%gt = graph.compare GT, %w, %zero : {0}", t));
  m.op(formatv("%sel = graph.select %gt, %two, %zero : {0}, {1}", tp, t));
  m.op(formatv("%wi = graph.convert %w : ({0}) -> {1}", t, ti));
  m.op(formatv("%wf = graph.convert %wi : ({0}) -> {1}", ti, t));
  m.op(formatv("%p = graph.mul %a, %frozen : {0}", t));
  m.op(formatv("%q = graph.add %sel, %wf : {0}", t));
  m.op(formatv("%y = graph.add %p, %q : {0}", t));
  CheckOptions options;
  options.unreachable = {"w", "u"};
  CheckResult result =
      checkGradients("integer paths/unreachable", m.build("%y", s), options);
  if (!result.executable)
    return;
  EXPECT_LT(findOutput(*result.executable, "frozen.grad"), 0)
      << "a frozen parameter got a gradient output";
  for (const char *name : {"w.grad", "u.grad", "a.grad"})
    EXPECT_GE(findOutput(*result.executable, name), 0) << name;
}

//===----------------------------------------------------------------------===//
// Errors and coverage
//===----------------------------------------------------------------------===//

/// Runs the autodiff pass on `source`; returns its diagnostics, expecting
/// it to fail.
std::string autodiffErrors(const std::string &source) {
  Compiled compiled = compile(source, /*canonicalize=*/false);
  EXPECT_FALSE(compiled.executable) << "expected autodiff to fail:\n" << source;
  return compiled.errors;
}

TEST(GradientCheck, ErrorNonScalarLoss) {
  std::string errors = autodiffErrors(R"(
func.func @main(%w: tensor<4xf64> {train.param = "w", train.init = dense<1.0> : tensor<4xf64>})
    -> (tensor<4xf64> {graph.output = "loss"}) {
  %0 = graph.exp %w : tensor<4xf64>
  return %0 : tensor<4xf64>
})");
  EXPECT_NE(errors.find("the loss 'loss' must be a scalar float, but it is "
                        "'tensor<4xf64>'"),
            std::string::npos)
      << errors;
}

TEST(GradientCheck, ErrorMissingLoss) {
  std::string errors = autodiffErrors(R"(
func.func @main(%w: tensor<4xf64> {train.param = "w", train.init = dense<1.0> : tensor<4xf64>})
    -> (tensor<f64> {graph.output = "total"}) {
  %0 = graph.reduce_sum %w, dims = [0] : (tensor<4xf64>) -> tensor<f64>
  return %0 : tensor<f64>
})");
  EXPECT_NE(errors.find("no output named 'loss' to train on (outputs: "
                        "'total')"),
            std::string::npos)
      << errors;
}

TEST(GradientCheck, ErrorOpWithoutRuleOnThePath) {
  // Every graph op on a differentiable path has a rule (see the next
  // test), so the op without one is a call.
  std::string errors = autodiffErrors(R"(
func.func private @helper(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = graph.exp %x : tensor<4xf64>
  return %0 : tensor<4xf64>
}
func.func @main(%w: tensor<4xf64> {train.param = "w", train.init = dense<1.0> : tensor<4xf64>})
    -> (tensor<f64> {graph.output = "loss"}) {
  %0 = func.call @helper(%w) : (tensor<4xf64>) -> tensor<4xf64>
  %1 = graph.reduce_sum %0, dims = [0] : (tensor<4xf64>) -> tensor<f64>
  return %1 : tensor<f64>
})");
  EXPECT_NE(errors.find("autodiff: 'func.call' has no gradient rule, and it "
                        "lies on a path from a trainable parameter to the "
                        "loss"),
            std::string::npos)
      << errors;
}

TEST(GradientCheck, EveryDifferentiableGraphOpHasARule) {
  // Ops that never need one: no operands (constant, iota), no float
  // result (compare, argsort, the bitwise ops), made by gradient rules
  // themselves (gelu_grad, norm_grad, softmax_cross_entropy_grad,
  // attention_grad: differentiating twice is not supported, and autodiff says
  // so naming the op), or made by the optimizer after the backward pass
  // (adamw_update, sum_of_squares) or by the partition phase after it
  // (reduce_scatter, all_gather, shard_slice, until tensor parallelism puts
  // one in the forward pass; their start/done forms come from the schedule
  // phase, later still; all_reduce has a rule, since --sync-batch-norm puts
  // it in the forward pass), or by a fusion pass of the lower phase
  // (dot_general_bias, dot_general_bias_gelu, dot_general_gelu_grad,
  // dot_general_bias_grad, norm_grad_params, softmax_cross_entropy_and_grad,
  // fused_elementwise and its body's terminator, yield, convert_group). Every
  // other graph op can lie between a parameter and the loss (DESIGN.md: "every
  // differentiable op carries a VJP rule").
  const std::set<std::string> exempt = {"graph.constant",
                                        "graph.iota",
                                        "graph.compare",
                                        "graph.argsort",
                                        "graph.and",
                                        "graph.or",
                                        "graph.xor",
                                        "graph.not",
                                        "graph.shift_left",
                                        "graph.shift_right_logical",
                                        "graph.shift_right_arithmetic",
                                        "graph.pop_count",
                                        "graph.count_leading_zeros",
                                        "graph.gelu_grad",
                                        "graph.norm_grad",
                                        "graph.softmax_cross_entropy_grad",
                                        "graph.attention_grad",
                                        "graph.adamw_update",
                                        "graph.reduce_scatter",
                                        "graph.all_gather",
                                        "graph.shard_slice",
                                        "graph.all_reduce_start",
                                        "graph.reduce_scatter_start",
                                        "graph.all_gather_start",
                                        "graph.collective_done",
                                        "graph.dot_general_bias",
                                        "graph.sum_of_squares",
                                        "graph.fused_elementwise",
                                        "graph.yield",
                                        "graph.convert_group",
                                        "graph.norm_grad_params",
                                        "graph.dot_general_bias_grad",
                                        "graph.dot_general_bias_gelu",
                                        "graph.dot_general_gelu_grad",
                                        "graph.softmax_cross_entropy_and_grad"};
  mlir::DialectRegistry registry;
  trainc::registerTraincDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::vector<std::string> missing;
  int checked = 0;
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "graph" ||
        exempt.count(op.getStringRef().str()))
      continue;
    ++checked;
    if (!op.hasInterface<trainc::graph::GradientOpInterface>())
      missing.push_back(op.getStringRef().str());
  }
  EXPECT_GT(checked, 30);
  EXPECT_TRUE(missing.empty())
      << "graph ops without a gradient rule: " << llvm::join(missing, ", ");
}

} // namespace
