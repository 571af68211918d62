//===- EinsumOp.cpp - ONNX Einsum -----------------------------------------===//
//
// Einsum as graph.dot_general, reduce_sum and transpose: the operands are
// folded left to right, each pair one dot_general whose batching
// dimensions are the labels both share that a later operand or the output
// still needs, and whose contracting dimensions are the labels both share
// that nothing later needs. A label only one operand has and nothing later
// needs is summed out before its product. The result is transposed to the
// output's order. A dimension of size 1 broadcasts to its label's size
// elsewhere, as numpy's. `...` stands for dimensions of the same rank in
// every operand that has it (numpy's right-aligned broadcasting of
// ellipses of different ranks is not supported). A label repeated within
// one operand (a diagonal, "ii->i") is refused.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// A label: a letter, or one of the ellipsis's dimensions (0, 1, ...: the
/// last ellipsis dimension of every operand is the same label).
using Label = int;
constexpr Label kEllipsisBase = 1000;

struct Operand {
  Value value;
  SmallVector<Label> labels; ///< One per dimension.
};

/// Parses one term ("bij", "...ij") against an operand of `rank`
/// dimensions (rank -1: the output, whose ellipsis has `ellipsisRank`).
FailureOr<SmallVector<Label>> parseTerm(NodeContext &ctx, StringRef term,
                                        int64_t rank, int64_t &ellipsisRank,
                                        StringRef what) {
  SmallVector<Label> labels;
  size_t dots = term.find("...");
  int64_t letters =
      static_cast<int64_t>(term.size()) - (dots == StringRef::npos ? 0 : 3);
  if (dots != StringRef::npos && term.find("...", dots + 3) != StringRef::npos)
    return ctx.error() << what << " '" << term << "' has two ellipses";
  int64_t ellipsis = 0;
  if (rank >= 0) {
    ellipsis = rank - letters;
    if (ellipsis < 0 || (dots == StringRef::npos && ellipsis != 0))
      return ctx.error() << what << " '" << term << "' has " << letters
                         << " labels for a tensor of rank " << rank;
    if (dots != StringRef::npos) {
      if (ellipsisRank >= 0 && ellipsisRank != ellipsis)
        return ctx.error() << "the ellipsis stands for " << ellipsis
                           << " dimensions in " << what << " but "
                           << ellipsisRank
                           << " in another (trainc does not broadcast it)";
      ellipsisRank = ellipsis;
    }
  } else if (dots != StringRef::npos) {
    ellipsis = std::max<int64_t>(ellipsisRank, 0);
  }
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      for (int64_t k = 0; k < ellipsis; ++k)
        labels.push_back(kEllipsisBase + static_cast<Label>(k));
      i += 2;
      continue;
    }
    char c = term[i];
    if (!llvm::isAlpha(c))
      return ctx.error() << what << " '" << term << "' has the character '" << c
                         << "'; labels are letters";
    if (llvm::is_contained(labels, Label(c)))
      return ctx.error() << what << " '" << term << "' repeats the label '" << c
                         << "' (a diagonal, which trainc does not support)";
    labels.push_back(c);
  }
  return labels;
}

/// Sums `operand` over the labels `keep` rejects.
Operand sumOut(NodeContext &ctx, Operand operand,
               function_ref<bool(Label)> keep) {
  SmallVector<int64_t> dims;
  Operand result{operand.value, {}};
  for (auto [d, label] : llvm::enumerate(operand.labels)) {
    if (keep(label))
      result.labels.push_back(label);
    else
      dims.push_back(static_cast<int64_t>(d));
  }
  if (!dims.empty())
    result.value = ctx.create<ReduceSumOp>(operand.value, dims);
  return result;
}

/// Positions of `labels` in `operand`.
SmallVector<int64_t> positions(const Operand &operand, ArrayRef<Label> labels) {
  SmallVector<int64_t> dims;
  for (Label l : labels)
    dims.push_back(llvm::find(operand.labels, l) - operand.labels.begin());
  return dims;
}

} // namespace

LogicalResult importEinsum(NodeContext &ctx) {
  std::string equation = ctx.stringAttr("equation", "");
  llvm::erase(equation, ' ');
  if (equation.empty())
    return ctx.error() << "attribute 'equation' is missing or empty";
  StringRef eq(equation);
  auto [inputsPart, outputPart] = eq.split("->");
  bool explicitOutput = eq.contains("->");
  SmallVector<StringRef> terms;
  inputsPart.split(terms, ',');
  if (static_cast<int>(terms.size()) != ctx.node.input_size())
    return ctx.error() << "equation '" << equation << "' has " << terms.size()
                       << " operand terms for " << ctx.node.input_size()
                       << " inputs";

  SmallVector<Operand> operands;
  llvm::DenseMap<Label, int64_t> sizes;
  int64_t ellipsisRank = -1;
  Type element;
  for (auto [i, term] : llvm::enumerate(terms)) {
    auto v = ctx.input(static_cast<int>(i));
    if (failed(v))
      return failure();
    auto type = ctx.inputType(*v);
    Type e = type.getElementType();
    if (!(e.isF64() || e.isF32() || e.isF16() || e.isBF16()))
      return ctx.error() << "input " << i << " has element type " << e
                         << "; Einsum takes f64, f32, f16 or bf16";
    if (element && type.getElementType() != element)
      return ctx.error() << "inputs have different element types";
    element = type.getElementType();
    std::string what = "term " + std::to_string(i);
    auto labels = parseTerm(ctx, term, type.getRank(), ellipsisRank, what);
    if (failed(labels))
      return failure();
    for (auto [d, label] : llvm::enumerate(*labels)) {
      // A size 1 broadcasts to the label's size elsewhere, as numpy's.
      int64_t size = type.getDimSize(d);
      auto [it, inserted] = sizes.try_emplace(label, size);
      if (!inserted && it->second != size && size != 1 && it->second != 1)
        return ctx.error() << "label '"
                           << (label >= kEllipsisBase ? std::string("...")
                                                      : std::string(1, label))
                           << "' has size " << size << " in term " << i
                           << " but " << it->second << " before";
      if (!inserted)
        it->second = std::max(it->second, size);
    }
    operands.push_back({*v, *labels});
  }

  // Size-1 dimensions broadcast to their label's size.
  for (Operand &o : operands) {
    auto type = ctx.inputType(o.value);
    SmallVector<int64_t> shape;
    for (Label l : o.labels)
      shape.push_back(sizes[l]);
    if (ArrayRef<int64_t>(shape) != type.getShape())
      o.value = ctx.broadcastTo(o.value, shape);
  }

  SmallVector<Label> output;
  if (explicitOutput) {
    auto labels = parseTerm(ctx, outputPart, -1, ellipsisRank, "the output");
    if (failed(labels))
      return failure();
    output = *labels;
    for (Label l : output)
      if (!sizes.count(l))
        return ctx.error() << "the output label '" << char(l)
                           << "' is in no input term";
  } else {
    // numpy's implicit output: the ellipsis, then the letters that occur
    // once, in alphabetical order.
    for (int64_t k = 0; k < std::max<int64_t>(ellipsisRank, 0); ++k)
      output.push_back(kEllipsisBase + static_cast<Label>(k));
    SmallVector<Label> once;
    for (const Operand &o : operands)
      for (Label l : o.labels)
        if (l < kEllipsisBase) {
          int count = 0;
          for (const Operand &p : operands)
            count += llvm::count(p.labels, l);
          if (count == 1)
            once.push_back(l);
        }
    llvm::sort(once);
    llvm::append_range(output, once);
  }

  // Whether a label is needed after operand `i` is folded in.
  auto neededAfter = [&](Label l, size_t i) {
    if (llvm::is_contained(output, l))
      return true;
    for (size_t j = i + 1; j < operands.size(); ++j)
      if (llvm::is_contained(operands[j].labels, l))
        return true;
    return false;
  };
  Operand acc =
      sumOut(ctx, operands[0], [&](Label l) { return neededAfter(l, 0); });
  for (size_t i = 1; i < operands.size(); ++i) {
    // Labels only this operand has, that nothing later needs.
    Operand next = sumOut(ctx, operands[i], [&](Label l) {
      return llvm::is_contained(acc.labels, l) || neededAfter(l, i);
    });
    SmallVector<Label> batch, contract;
    for (Label l : acc.labels)
      if (llvm::is_contained(next.labels, l))
        (neededAfter(l, i) ? batch : contract).push_back(l);
    Value product = ctx.create<DotGeneralOp>(
        acc.value, next.value, positions(acc, batch), positions(next, batch),
        positions(acc, contract), positions(next, contract));
    Operand result{product, batch};
    for (const Operand *o : {&acc, &next})
      for (Label l : o->labels)
        if (!llvm::is_contained(batch, l) && !llvm::is_contained(contract, l))
          result.labels.push_back(l);
    acc = result;
  }
  acc =
      sumOut(ctx, acc, [&](Label l) { return llvm::is_contained(output, l); });
  SmallVector<int64_t> permutation = positions(acc, output);
  Value result = acc.value;
  if (!llvm::equal(permutation, iotaVector(0, permutation.size())))
    result = ctx.create<TransposeOp>(result, permutation);
  ctx.setOutput(0, result);
  return success();
}

} // namespace trainc::onnx_import
