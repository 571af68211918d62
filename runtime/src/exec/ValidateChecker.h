//===- ValidateChecker.h - One instruction's checks -----------*- C++ -*-===//
//
// The checker of Validate.cpp (the opcodes' contracts, executable.fbs),
// whose composite ops' rules are in ValidateComposites.cpp. Private to
// runtime/src/exec.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_EXEC_VALIDATECHECKER_H
#define TRAINC_RUNTIME_EXEC_VALIDATECHECKER_H

#include "exec/Executable.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace trainc::validate {

using Shape = std::vector<int64_t>;

/// The error of an opcode this validator has no contract for (the
/// vocabulary test checks that no opcode of the schema gets it).
constexpr const char *kNoValidationRule = "has no validation rule";

/// Collects the checks of one instruction; the first failure wins.
class Checker {
public:
  Checker(const InstructionInfo &inst, size_t index,
          const std::vector<TensorInfo> &tensors)
      : inst(inst), index(index), tensors(tensors) {}

  Status error(const std::string &message) const {
    return invalidArgument("instruction " + std::to_string(index) + " (" +
                           opcodeName(inst.op) + "): " + message);
  }

  const TensorInfo &operand(size_t i) const {
    return tensors[inst.operands[i]];
  }
  const TensorInfo &result(size_t i) const { return tensors[inst.results[i]]; }

  Status arity(size_t operands, size_t results) const {
    if (inst.operands.size() != operands || inst.results.size() != results)
      return error("expects " + std::to_string(operands) + " operands and " +
                   std::to_string(results) + " results, has " +
                   std::to_string(inst.operands.size()) + " and " +
                   std::to_string(inst.results.size()));
    return okStatus();
  }
  Status attrs(size_t ints, size_t floats) const {
    if (inst.ints.size() != ints || inst.floats.size() != floats)
      return error("has " + std::to_string(inst.ints.size()) + " ints and " +
                   std::to_string(inst.floats.size()) + " floats, expects " +
                   std::to_string(ints) + " and " + std::to_string(floats));
    return okStatus();
  }
  Status sameType(const TensorInfo &a, const TensorInfo &b) const {
    if (a.dtype != b.dtype || a.shape != b.shape)
      return error("'" + a.name + "' and '" + b.name +
                   "' must have the same dtype and shape");
    return okStatus();
  }
  Status shapeIs(const TensorInfo &t, const Shape &shape) const {
    if (t.shape != shape)
      return error("'" + t.name + "' has the wrong shape for its operands");
    return okStatus();
  }
  /// A norm's (or its gradient's) ints[0], the axis, inside x's rank and
  /// floats[0], epsilon, finite and not negative.
  Status normAxisAndEpsilon(const TensorInfo &x) const {
    int64_t axis = inst.ints[0];
    double eps = inst.floats[0];
    if (axis < 0 || axis >= int64_t(x.shape.size()) || !(eps >= 0) ||
        !std::isfinite(eps))
      return error("invalid axis or epsilon");
    return okStatus();
  }
  /// Whether two tensors' planned bytes overlap (same arena; constants
  /// live in the constant section, which no result is).
  static bool overlap(const TensorInfo &a, const TensorInfo &b) {
    return a.role != TensorRole::Constant && b.role != TensorRole::Constant &&
           a.arena == b.arena && a.offset < b.offset + b.size &&
           b.offset < a.offset + a.size;
  }
  /// A cross-entropy's class count: in [1, the logits' last dimension], or
  /// 0 for an empty last dimension.
  Status classesIn(const TensorInfo &logits, int64_t classes) const {
    int64_t size = logits.shape.empty() ? -1 : logits.shape.back();
    if (classes < 0 || classes > size || (classes == 0 && size != 0))
      return error("classes " + std::to_string(classes) +
                   " is not in [1, the logits' last dimension]");
    return okStatus();
  }
  Status floatType(const TensorInfo &t) const {
    if (!isFloat(t.dtype))
      return error("'" + t.name + "' must be a float tensor");
    return okStatus();
  }
  /// `dims` are distinct and in [0, rank).
  Status dimList(const int64_t *dims, size_t n, int64_t rank) const {
    std::vector<bool> seen(std::max<int64_t>(rank, 0), false);
    for (size_t i = 0; i < n; ++i) {
      if (dims[i] < 0 || dims[i] >= rank || seen[dims[i]])
        return error("dimension list is out of range or repeats");
      seen[dims[i]] = true;
    }
    return okStatus();
  }

  Status check() const;

private:
  Status checkDotGeneral() const;
  Status checkDataMovement() const;
  Status checkComposite() const;
  Status checkFusedElementwise() const;
  Status checkBitwise() const;

  const InstructionInfo &inst;
  size_t index;
  const std::vector<TensorInfo> &tensors;
};

} // namespace trainc::validate

#endif // TRAINC_RUNTIME_EXEC_VALIDATECHECKER_H
