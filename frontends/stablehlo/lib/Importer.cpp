//===- Importer.cpp - StableHLO text to the graph dialect -----------------===//
//
// Parses the text with the input dialects (InputDialects.h), picks the
// entry function, makes its arguments parameters or data inputs, then
// lowers its ops in order into a new graph-dialect @main, inlining the
// private functions it calls. See StablehloImporter.h for the contract.
//
//===----------------------------------------------------------------------===//

#include "trainc/Frontends/Stablehlo/StablehloImporter.h"

#include "InputDialects.h"
#include "LowerContext.h"
#include "Safetensors.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

/// Calls nested deeper than this are taken for recursion.
constexpr int kMaxCallDepth = 64;

/// A check of the interpreter tests: compare `actual` with `expected`.
struct Check {
  /// "eq", "almost_eq" or "close", with the check's own bound if it has
  /// one: "almost_eq_tol0.1", "close_ulp3".
  std::string kind;
  Value actual;
  Value expected;
};

/// The name an argument's location gives it (jax.export writes
/// `loc("params['w']")`); empty if none.
std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string name = locationName(inner);
      if (!name.empty())
        return name;
    }
  return "";
}

/// "['loss']" -> "loss", "[0]" -> "0", "result" -> "result".
std::string resultInfoName(StringRef info) {
  std::string name;
  for (char c : info)
    if (c != '[' && c != ']' && c != '\'' && c != '"')
      name += c;
  return name;
}

/// The value of `v` where it folds to a constant through the ops that make
/// it, without changing the IR: a loop counter sliced from an iota the
/// importer keeps as an op (lax.scan over jnp.arange) is a constant here.
/// `seen` holds each value tried (null where it does not fold), so shared
/// operands are folded once.
DenseElementsAttr foldedValue(Value v,
                              llvm::DenseMap<Value, DenseElementsAttr> &seen,
                              int depth = 0) {
  DenseElementsAttr value;
  if (matchPattern(v, m_Constant(&value)))
    return value;
  auto [it, inserted] = seen.try_emplace(v);
  if (!inserted)
    return it->second;
  Operation *op = v.getDefiningOp();
  if (!op || op->getNumResults() != 1 || op->getNumRegions() != 0 || depth > 32)
    return {};
  SmallVector<Attribute> operands;
  for (Value operand : op->getOperands()) {
    DenseElementsAttr folded = foldedValue(operand, seen, depth + 1);
    if (!folded)
      return {};
    operands.push_back(folded);
  }
  SmallVector<OpFoldResult> results;
  if (failed(op->fold(operands, results)) || results.size() != 1)
    return {};
  if (auto attr = dyn_cast<Attribute>(results[0]))
    value = dyn_cast<DenseElementsAttr>(attr);
  else
    value = foldedValue(cast<Value>(results[0]), seen, depth + 1);
  seen[v] = value;
  return value;
}

DenseElementsAttr foldedValue(Value v) {
  llvm::DenseMap<Value, DenseElementsAttr> seen;
  return foldedValue(v, seen);
}

class Lowering {
public:
  Lowering(OpBuilder &builder, ModuleOp source)
      : builder(builder), source(source) {}

  /// Lowers the body of `fn` with its arguments bound to `args`; returns
  /// the values it returns.
  FailureOr<SmallVector<Value>> lowerFunction(func::FuncOp fn, ValueRange args,
                                              int depth);

  SmallVector<Check> checks;

private:
  LogicalResult lowerOp(Operation &op, IRMapping &values, int depth);
  LogicalResult lowerCall(func::CallOp call, IRMapping &values, int depth);
  /// Lowers the body of function `callee` of the source module in place of
  /// `op` (a call, or a composite's decomposition).
  LogicalResult lowerCallee(Operation &op, StringRef callee, IRMapping &values,
                            int depth);
  LogicalResult lowerWhile(Operation &op, IRMapping &values, int depth);
  LogicalResult lowerBranch(Operation &op, IRMapping &values, int depth);
  /// Lowers `block` with its arguments bound to `args`, seeing the values
  /// of `outer` (a region may use its parent's values); returns the values
  /// its terminator returns.
  FailureOr<SmallVector<Value>> lowerBlock(Block &block, ValueRange args,
                                           const IRMapping &outer, int depth);
  LogicalResult lowerCheck(Operation &op, IRMapping &values);
  LogicalResult checkTypes(Operation &op);

  OpBuilder &builder;
  ModuleOp source;
};

LogicalResult Lowering::checkTypes(Operation &op) {
  auto bad = [&](Type type, StringRef what) -> LogicalResult {
    return emitError(op.getLoc())
           << "'" << op.getName() << "' has " << what << " of type " << type
           << ", which trainc does not support (element types: "
           << kSupportedElementTypes << "; static shapes)";
  };
  auto check = [&](Type type, StringRef what) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() ||
        !isSupportedElementType(tensor.getElementType()))
      return bad(type, what);
    return success();
  };
  for (Value v : op.getOperands())
    if (failed(check(v.getType(), "an operand")))
      return failure();
  for (Value v : op.getResults())
    if (failed(check(v.getType(), "a result")))
      return failure();
  return success();
}

LogicalResult Lowering::lowerCheck(Operation &op, IRMapping &values) {
  StringRef name = op.getName().getStringRef();
  if (auto target = op.getAttrOfType<StringAttr>("call_target_name"))
    name = target.getValue();
  name.consume_front("check.");
  bool isConst = name.consume_back("_const");
  StringRef kind = llvm::StringSwitch<StringRef>(name)
                       .Case("expect_eq", "eq")
                       .Case("expect_almost_eq", "almost_eq")
                       .Case("expect_close", "close")
                       .Default("");
  if (kind.empty())
    return emitError(op.getLoc())
           << "'check." << name
           << "' is not supported (trainc runs expect_eq, expect_almost_eq "
              "and expect_close, with or without _const)";
  if (failed(checkTypes(op)))
    return failure();
  std::string bounded = kind.str();
  auto number = [&](StringRef attr) -> std::optional<double> {
    if (auto f = op.getAttrOfType<FloatAttr>(attr))
      return f.getValueAsDouble();
    if (auto i = op.getAttrOfType<IntegerAttr>(attr))
      return static_cast<double>(i.getInt());
    return std::nullopt;
  };
  if (std::optional<double> tolerance = number("tolerance"))
    bounded += "_tol" + llvm::formatv("{0}", *tolerance).str();
  if (std::optional<double> ulps = number("max_ulp_difference"))
    bounded += "_ulp" + std::to_string(static_cast<int64_t>(*ulps));
  Value actual = values.lookup(op.getOperand(0));
  Value expected;
  if (isConst) {
    auto value = dyn_cast_or_null<DenseElementsAttr>(op.getAttr("value"));
    if (!value)
      return emitError(op.getLoc())
             << "'" << op.getName() << "' needs a dense expected value";
    expected = builder.create<ConstantOp>(op.getLoc(), value);
  } else {
    if (op.getNumOperands() != 2)
      return emitError(op.getLoc())
             << "'" << op.getName() << "' needs two operands";
    expected = values.lookup(op.getOperand(1));
  }
  checks.push_back({bounded, actual, expected});
  return success();
}

LogicalResult Lowering::lowerCall(func::CallOp call, IRMapping &values,
                                  int depth) {
  return lowerCallee(*call, call.getCallee(), values, depth);
}

LogicalResult Lowering::lowerCallee(Operation &op, StringRef name,
                                    IRMapping &values, int depth) {
  auto callee = source.lookupSymbol<func::FuncOp>(name);
  if (!callee || callee.isExternal())
    return emitError(op.getLoc())
           << "calls @" << name
           << ", which is not a function with a body in this module";
  if (callee.getNumArguments() != op.getNumOperands() ||
      callee.getNumResults() != op.getNumResults())
    return emitError(op.getLoc())
           << "calls @" << name << " with " << op.getNumOperands()
           << " operand(s) for " << op.getNumResults()
           << " result(s), but it takes " << callee.getNumArguments()
           << " and returns " << callee.getNumResults();
  if (depth >= kMaxCallDepth)
    return emitError(op.getLoc()) << "calls nest deeper than " << kMaxCallDepth
                                  << " (recursion cannot be inlined)";
  SmallVector<Value> args;
  for (Value v : op.getOperands())
    args.push_back(values.lookup(v));
  auto results = lowerFunction(callee, args, depth + 1);
  if (failed(results))
    return failure();
  for (auto [r, v] : llvm::zip(op.getResults(), *results))
    values.map(r, v);
  return success();
}

LogicalResult Lowering::lowerOp(Operation &op, IRMapping &values, int depth) {
  StringRef name = op.getName().getStringRef();
  if (auto call = dyn_cast<func::CallOp>(op))
    return lowerCall(call, values, depth);
  if (name == "stablehlo.composite") {
    // An op named, with its meaning in StableHLO (its decomposition, a
    // function of this module; JAX writes chlo.erf, sinh, top_k, ... so).
    // An op the table lowers is lowered as that op (chlo.erf: graph.erf,
    // with its exact derivative); any other, as its decomposition.
    auto composite = op.getAttrOfType<StringAttr>("name");
    if (composite && findOp(composite.getValue())) {
      name = composite.getValue();
    } else {
      auto decomposition = op.getAttrOfType<FlatSymbolRefAttr>("decomposition");
      if (!decomposition)
        return emitError(op.getLoc())
               << "'stablehlo.composite' "
               << (composite ? composite.getValue() : StringRef("?"))
               << " has no decomposition function";
      return lowerCallee(op, decomposition.getValue(), values, depth);
    }
  }
  if (name == "stablehlo.while")
    return lowerWhile(op, values, depth);
  if (name == "stablehlo.if" || name == "stablehlo.case")
    return lowerBranch(op, values, depth);
  if (name.starts_with("check."))
    return lowerCheck(op, values);
  if (name == "stablehlo.custom_call") {
    auto target = op.getAttrOfType<StringAttr>("call_target_name");
    if (target && target.getValue().starts_with("check."))
      return lowerCheck(op, values);
    return emitError(op.getLoc())
           << "'stablehlo.custom_call' to '"
           << (target ? target.getValue() : StringRef("?"))
           << "' is not supported: a custom call runs code outside "
              "StableHLO, which trainc cannot compile or differentiate";
  }
  const OpEntry *entry = findOp(name);
  if (!entry) {
    return emitError(op.getLoc())
           << "'" << name
           << "' is not supported by trainc (trainc --list-stablehlo-ops "
              "lists the ops it lowers)";
  }
  if (failed(checkTypes(op)))
    return failure();
  for (Value v : op.getOperands()) {
    Type element = cast<RankedTensorType>(v.getType()).getElementType();
    bool isBool = element.isInteger(1);
    bool isFloat = isa<FloatType>(element);
    StringRef wanted = entry->types == TypeClass::Floats    ? "floats"
                       : entry->types == TypeClass::Numbers ? "numbers (not i1)"
                       : entry->types == TypeClass::Integers
                           ? "integers (not i1)"
                       : entry->types == TypeClass::Bits ? "integers and i1"
                                                         : "i1";
    if ((entry->types == TypeClass::Floats && !isFloat) ||
        (entry->types == TypeClass::Numbers && isBool) ||
        (entry->types == TypeClass::Integers && (isBool || isFloat)) ||
        (entry->types == TypeClass::Bits && isFloat) ||
        (entry->types == TypeClass::Bool && !isBool))
      return emitError(op.getLoc())
             << "'" << name << "' on " << element
             << " tensors is not supported; trainc lowers it on " << wanted
             << " only";
  }
  // Elementwise ops: every operand has the result's shape (select's
  // predicate and clamp's bounds may be scalars).
  if (entry->elementwise && op.getNumResults() == 1) {
    bool scalarsAllowed =
        name == "stablehlo.select" || name == "stablehlo.clamp";
    Type resultType = op.getResult(0).getType();
    for (Value v : op.getOperands()) {
      auto shape = cast<RankedTensorType>(v.getType()).getShape();
      if (shape != cast<RankedTensorType>(resultType).getShape() &&
          !(scalarsAllowed && shape.empty()))
        return emitError(op.getLoc())
               << "'" << name << "' has an operand of type " << v.getType()
               << " for a result of type " << resultType;
    }
  }
  Block *block = builder.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  OpContext ctx(&op, builder, values);
  if (failed(entry->lower(ctx)) || ctx.failed())
    return failure();
  // What the lowering built must verify: a malformed op (shapes that do not
  // fit) is reported at its line, not at the end of the import.
  for (Operation &built :
       llvm::make_range(last ? std::next(last->getIterator()) : block->begin(),
                        block->end()))
    if (failed(mlir::verify(&built)))
      return emitError(op.getLoc())
             << "'" << name
             << "' has operands or attributes that do not fit together (the "
                "error above names the constraint)";
  for (Value r : op.getResults())
    if (!values.contains(r))
      return emitError(op.getLoc()) << "'" << name
                                    << "': the lowering defined no value for "
                                       "a result (a trainc importer bug)";
  return success();
}

FailureOr<SmallVector<Value>> Lowering::lowerBlock(Block &block,
                                                   ValueRange args,
                                                   const IRMapping &outer,
                                                   int depth) {
  IRMapping values = outer;
  for (auto [arg, v] : llvm::zip(block.getArguments(), args))
    values.map(arg, v);
  for (Operation &op : block.without_terminator())
    if (failed(lowerOp(op, values, depth)))
      return failure();
  SmallVector<Value> results;
  for (Value v : block.getTerminator()->getOperands())
    results.push_back(values.lookup(v));
  return results;
}

FailureOr<SmallVector<Value>>
Lowering::lowerFunction(func::FuncOp fn, ValueRange args, int depth) {
  if (!fn.getBody().hasOneBlock())
    return emitError(fn.getLoc())
           << "@" << fn.getSymName()
           << " has more than one block; trainc imports straight-line "
              "functions";
  return lowerBlock(fn.getBody().front(), args, IRMapping(), depth);
}

/// A loop whose condition folds to a constant at every iteration (lax.scan,
/// lax.fori_loop with static bounds: the counter is a constant from the
/// start) is unrolled: the body is lowered once per iteration, with the
/// carried values of the previous one, so a dynamic_slice at the counter
/// becomes a static slice. A condition that depends on data is an error.
LogicalResult Lowering::lowerWhile(Operation &op, IRMapping &values,
                                   int depth) {
  constexpr int64_t kMaxIterations = 4096;
  if (op.getNumRegions() != 2 || !op.getRegion(0).hasOneBlock() ||
      !op.getRegion(1).hasOneBlock())
    return emitError(op.getLoc())
           << "'stablehlo.while' needs a cond and a do region of one block";
  Block &cond = op.getRegion(0).front(), &body = op.getRegion(1).front();
  if (cond.getNumArguments() != op.getNumOperands() ||
      body.getNumArguments() != op.getNumOperands() ||
      op.getNumResults() != op.getNumOperands())
    return emitError(op.getLoc())
           << "'stablehlo.while' has regions whose arguments do not match "
              "its operands";
  if (failed(checkTypes(op)))
    return failure();
  SmallVector<Value> carried;
  for (Value v : op.getOperands())
    carried.push_back(values.lookup(v));
  for (int64_t iteration = 0;; ++iteration) {
    auto test = lowerBlock(cond, carried, values, depth);
    if (failed(test))
      return failure();
    DenseElementsAttr verdict =
        test->size() == 1 ? foldedValue((*test)[0]) : DenseElementsAttr();
    if (!verdict || !verdict.getElementType().isInteger(1))
      return emitError(op.getLoc())
             << "'stablehlo.while' has a condition that depends on data "
                "(after "
             << iteration
             << " iterations); trainc unrolls loops whose trip count is known "
                "at compile time (lax.scan, lax.fori_loop with static "
                "bounds); write a data-dependent loop another way";
    if (!verdict.getSplatValue<bool>())
      break;
    if (iteration == kMaxIterations)
      return emitError(op.getLoc())
             << "'stablehlo.while' runs more than " << kMaxIterations
             << " iterations; trainc unrolls loops and stops there";
    auto next = lowerBlock(body, carried, values, depth);
    if (failed(next))
      return failure();
    if (next->size() != carried.size())
      return emitError(op.getLoc())
             << "'stablehlo.while' body returns " << next->size()
             << " values for " << carried.size() << " carried ones";
    carried = *next;
  }
  for (auto [result, v] : llvm::zip(op.getResults(), carried))
    values.map(result, v);
  return success();
}

/// `stablehlo.if` and `stablehlo.case` (JAX's lax.cond and lax.switch)
/// whose predicate or index folds to a constant, as a counter does in an
/// unrolled loop (a lax.scan over layers that alternates two kinds): only
/// the chosen branch is lowered, so the program and its gradient are that
/// branch's. A choice made by data is an error: lowering every branch and
/// selecting would keep the forward values but not the gradient, since the
/// branch not taken would still be differentiated (0 * inf is NaN where a
/// cond guards a log or a division).
LogicalResult Lowering::lowerBranch(Operation &op, IRMapping &values,
                                    int depth) {
  StringRef name = op.getName().getStringRef();
  bool isIf = name == "stablehlo.if";
  if (op.getNumOperands() != 1 ||
      (isIf ? op.getNumRegions() != 2 : op.getNumRegions() == 0))
    return emitError(op.getLoc())
           << "'" << name << "' needs one operand and "
           << (isIf ? "two regions" : "at least one region");
  auto selector = dyn_cast<RankedTensorType>(op.getOperand(0).getType());
  if (!selector || selector.getRank() != 0 ||
      !selector.getElementType().isSignlessInteger(isIf ? 1 : 32))
    return emitError(op.getLoc())
           << "'" << name << "' takes a "
           << (isIf ? "tensor<i1>" : "tensor<i32>") << " operand, not "
           << op.getOperand(0).getType();
  if (failed(checkTypes(op)))
    return failure();
  DenseElementsAttr chosen = foldedValue(values.lookup(op.getOperand(0)));
  if (!chosen)
    return emitError(op.getLoc())
           << "'" << name
           << "' chooses its branch by data (lax.cond or "
              "lax.switch on a traced value); trainc lowers a branch only "
              "when its "
           << (isIf ? "predicate" : "index")
           << " folds to a constant (as a loop counter does in an unrolled "
              "lax.scan). Use jnp.where where both sides are safe to "
              "compute and differentiate";
  // stablehlo.if: region 0 is taken when true. stablehlo.case: an index
  // outside [0, N) takes the last branch (the specification's default).
  int64_t count = op.getNumRegions();
  int64_t branch = isIf ? (chosen.getSplatValue<bool>() ? 0 : 1)
                        : chosen.getSplatValue<APInt>().getSExtValue();
  if (branch < 0 || branch >= count)
    branch = count - 1;
  Region &region = op.getRegion(branch);
  if (!region.hasOneBlock() || region.front().getNumArguments() != 0)
    return emitError(op.getLoc()) << "'" << name << "' branch " << branch
                                  << " must be one block without arguments";
  auto results = lowerBlock(region.front(), {}, values, depth);
  if (failed(results))
    return failure();
  if (results->size() != op.getNumResults())
    return emitError(op.getLoc())
           << "'" << name << "' branch " << branch << " returns "
           << results->size() << " values for " << op.getNumResults()
           << " results";
  for (auto [result, v] : llvm::zip(op.getResults(), *results))
    values.map(result, v);
  return success();
}

/// The function to import: @main, or the only public function.
FailureOr<func::FuncOp> entryFunction(ModuleOp module, StringRef path) {
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    return main;
  SmallVector<func::FuncOp> candidates;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal())
      candidates.push_back(fn);
  if (candidates.size() == 1)
    return candidates[0];
  InFlightDiagnostic diag = emitError(module.getLoc());
  diag << path << ": no @main and " << candidates.size()
       << " public functions; trainc imports @main or the only public "
          "function";
  for (auto fn : candidates)
    diag << " @" << fn.getSymName();
  return diag;
}

/// JAX prints source ranges, `loc("f.py":5:8 to :41)` or `to 6:2`, a
/// location syntax newer than MLIR 19's parser: keep each range's start.
std::unique_ptr<llvm::MemoryBuffer>
dropLocationRanges(std::unique_ptr<llvm::MemoryBuffer> file) {
  StringRef text = file->getBuffer();
  if (!text.contains(" to "))
    return file;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t to = text.find(" to ", i);
    if (to == StringRef::npos) {
      out.append(text.substr(i));
      break;
    }
    // The range start just before: `":<line>:<col>`.
    StringRef before = text.substr(i, to - i);
    size_t colon2 = before.rfind(':');
    size_t colon1 = colon2 == StringRef::npos || colon2 == 0
                        ? StringRef::npos
                        : before.rfind(':', colon2 - 1);
    bool isRange =
        colon1 != StringRef::npos && colon1 > 0 && before[colon1 - 1] == '"' &&
        llvm::all_of(before.slice(colon1 + 1, colon2), llvm::isDigit) &&
        llvm::all_of(before.drop_front(colon2 + 1), llvm::isDigit) &&
        colon2 + 1 < before.size();
    // The range end: `[<line>]:<col>`.
    size_t end = to + 4;
    while (end < text.size() && llvm::isDigit(text[end]))
      ++end;
    if (isRange && end < text.size() && text[end] == ':') {
      ++end;
      size_t digits = end;
      while (end < text.size() && llvm::isDigit(text[end]))
        ++end;
      isRange = end > digits;
    } else {
      isRange = false;
    }
    if (!isRange) {
      out.append(text.substr(i, to + 4 - i));
      i = to + 4;
      continue;
    }
    out.append(before);
    i = end;
  }
  return llvm::MemoryBuffer::getMemBufferCopy(out, file->getBufferIdentifier());
}

} // namespace

bool isStablehloText(StringRef text) {
  return text.contains("stablehlo.") || text.contains("chlo.") ||
         text.contains("check.expect_");
}

StringRef supportedElementTypes() { return kSupportedElementTypes; }

std::vector<SupportedOp> supportedOps() {
  std::vector<SupportedOp> ops;
  for (const OpEntry &e : opTable())
    ops.push_back({e.name, typeClassName(e.types).str(), e.note});
  ops.push_back({"func.call", "any", "of functions in the module: inlined"});
  ops.push_back({"stablehlo.custom_call", "any",
                 "only @check.expect_* (the StableHLO tests' checks)"});
  ops.push_back({"stablehlo.composite", "any",
                 "as the op it names when listed here (chlo.erf), else as "
                 "its decomposition function"});
  ops.push_back(
      {"stablehlo.return", "any", "in reduce, while and branch bodies"});
  for (StringRef branchOp : {"stablehlo.case", "stablehlo.if"})
    ops.push_back({branchOp.str(), "any",
                   "the one branch chosen: the predicate or index must fold "
                   "to a constant (lax.cond in an unrolled loop)"});
  ops.push_back({"stablehlo.while", "any",
                 "unrolled: the condition must fold to a constant at every "
                 "iteration (lax.scan, fori_loop with static bounds)"});
  llvm::sort(ops, [](const SupportedOp &a, const SupportedOp &b) {
    return a.name < b.name;
  });
  return ops;
}

FailureOr<OwningOpRef<ModuleOp>>
importStablehlo(MLIRContext &context, StringRef path,
                std::unique_ptr<llvm::MemoryBuffer> file,
                const ImportOptions &options) {
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  if (!options.inputShapes.empty() || !options.bindings.empty())
    return emitError(fileLoc)
           << "--input-shape and --bind apply to ONNX models; " << path
           << " is StableHLO, whose shapes are static";
  context.loadDialect<GraphDialect, trainc::train::TrainDialect,
                      func::FuncDialect>();
  loadInputDialects(context);

  OwningOpRef<ModuleOp> source;
  {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(dropLocationRanges(std::move(file)),
                                 llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    source = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!source)
      return failure();
  }
  auto entry = entryFunction(*source, path);
  if (failed(entry))
    return failure();
  func::FuncOp fn = *entry;

  // Parameters: the arguments named in the parameters file.
  llvm::StringMap<SafetensorsEntry> initial;
  if (!options.parameters.empty()) {
    auto entries = readSafetensors(&context, options.parameters);
    if (failed(entries))
      return failure();
    for (SafetensorsEntry &e : *entries)
      initial[e.name] = std::move(e);
  }
  SmallVector<llvm::GlobPattern> frozen;
  for (const std::string &pattern : options.frozen) {
    auto glob = llvm::GlobPattern::create(pattern);
    if (!glob)
      return emitError(fileLoc) << "--freeze '" << pattern
                                << "': " << llvm::toString(glob.takeError());
    frozen.push_back(std::move(*glob));
  }

  struct Arg {
    unsigned index;
    std::string name;
    RankedTensorType type;
    const SafetensorsEntry *init = nullptr;
  };
  SmallVector<Arg> params, inputs;
  llvm::StringSet<> names;
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    std::string name = locationName(arg.getLoc());
    if (name.empty())
      name = "arg" + std::to_string(i);
    if (!names.insert(name).second)
      return emitError(arg.getLoc())
             << "arguments " << i << " and an earlier one are both named '"
             << name << "'";
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() ||
        !isSupportedElementType(type.getElementType()))
      return emitError(arg.getLoc())
             << "argument " << i << " '" << name << "' has type "
             << arg.getType() << ", which trainc does not support (element "
             << "types: " << kSupportedElementTypes << "; static shapes)";
    auto it = initial.find(name);
    if (it == initial.end()) {
      inputs.push_back({i, name, type});
      continue;
    }
    if (it->second.type != type)
      return emitError(arg.getLoc())
             << "parameter '" << name << "' is " << type << " in " << path
             << " but " << it->second.type << " in " << options.parameters;
    if (!isa<FloatType>(type.getElementType()))
      return emitError(arg.getLoc())
             << "parameter '" << name << "' has element type "
             << type.getElementType() << "; trainable parameters are floats";
    params.push_back({i, name, type, &it->second});
  }
  for (const auto &[name, e] : initial)
    if (!names.contains(name)) {
      InFlightDiagnostic diag = emitError(fileLoc);
      diag << options.parameters << " holds '" << name
           << "', which names no argument of @" << fn.getSymName() << " in "
           << path << " (arguments:";
      for (BlockArgument arg : fn.getArguments()) {
        std::string n = locationName(arg.getLoc());
        diag << " '"
             << (n.empty() ? "arg" + std::to_string(arg.getArgNumber()) : n)
             << "'";
      }
      diag << ")";
      return diag;
    }

  // @main: parameters first, then data inputs.
  OpBuilder builder(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes;
  for (const Arg &a : params)
    argTypes.push_back(a.type);
  for (const Arg &a : inputs)
    argTypes.push_back(a.type);
  auto main = builder.create<func::FuncOp>(
      fn.getLoc(), "main", builder.getFunctionType(argTypes, {}));
  Block *block = main.addEntryBlock();
  builder.setInsertionPointToStart(block);
  SmallVector<Value> bound(fn.getNumArguments());
  unsigned next = 0;
  for (const Arg &a : params) {
    main.setArgAttr(next, trainc::train::TrainDialect::kParamAttr,
                    builder.getStringAttr(a.name));
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(a.init->bytes.data(), a.init->bytes.size()),
        alignof(double));
    // The blob's key must be an identifier for the IR to parse back:
    // params['w'] -> params_w.
    std::string key;
    for (char c : a.name)
      if (llvm::isAlnum(c) || c == '_' || c == '.')
        key += c;
      else if (!key.empty() && key.back() != '_')
        key += '_';
    while (!key.empty() && key.back() == '_')
      key.pop_back();
    main.setArgAttr(next, trainc::train::TrainDialect::kInitAttr,
                    DenseResourceElementsAttr::get(
                        a.type, key.empty() ? "param" : key, std::move(blob)));
    if (llvm::any_of(frozen, [&](const llvm::GlobPattern &g) {
          return g.match(a.name);
        }))
      main.setArgAttr(next, trainc::train::TrainDialect::kFrozenAttr,
                      builder.getUnitAttr());
    bound[a.index] = block->getArgument(next++);
  }
  for (const Arg &a : inputs) {
    main.setArgAttr(next, GraphDialect::kInputAttr,
                    builder.getStringAttr(a.name));
    bound[a.index] = block->getArgument(next++);
  }

  Lowering lowering(builder, *source);
  auto results = lowering.lowerFunction(fn, bound, 0);
  if (failed(results))
    return failure();

  // Outputs: the function's results, then the checks.
  SmallVector<Value> outputs;
  SmallVector<std::string> outputNames;
  bool jaxLoss = fn.getNumResults() == 1 && results->size() == 1 &&
                 tensorType((*results)[0]).getRank() == 0 &&
                 isa<FloatType>(tensorType((*results)[0]).getElementType());
  llvm::StringSet<> used;
  for (auto [i, v] : llvm::enumerate(*results)) {
    std::string name;
    if (auto info = fn.getResultAttrOfType<StringAttr>(i, "jax.result_info"))
      name = resultInfoName(info.getValue());
    if (jaxLoss)
      name = "loss";
    if (name.empty() || name == "result" || used.contains(name))
      name = "output" + std::to_string(i);
    used.insert(name);
    outputs.push_back(v);
    outputNames.push_back(name);
  }
  for (auto [i, check] : llvm::enumerate(lowering.checks)) {
    std::string base = "check" + std::to_string(i) + "_" + check.kind;
    outputs.push_back(check.actual);
    outputNames.push_back(base + "_actual");
    outputs.push_back(check.expected);
    outputNames.push_back(base + "_expected");
  }
  if (outputs.empty())
    return emitError(fn.getLoc())
           << "@" << fn.getSymName()
           << " returns nothing and checks nothing; there is nothing to "
              "compute";
  builder.create<func::ReturnOp>(fn.getLoc(), outputs);
  main.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(outputs).getTypes()));
  for (auto [i, name] : llvm::enumerate(outputNames))
    main.setResultAttr(i, GraphDialect::kOutputAttr,
                       builder.getStringAttr(name));
  if (failed(mlir::verify(*module)))
    return emitError(fileLoc)
           << path
           << ": the imported IR does not verify (a trainc importer bug; the "
              "errors above name the op)";
  return module;
}

} // namespace trainc::stablehlo_import
