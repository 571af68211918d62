//===- InputDialects.cpp - Parsing StableHLO's printed forms --------------===//
//
// See InputDialects.h. Each parse hook reads one op's pretty form, as the
// StableHLO printer writes it, into a generic operation whose attributes
// are named as in the op's generic form. Here: the pieces those hooks
// share, the chlo and check hooks, dialect attributes and the dialects;
// the stablehlo hooks are in StablehloSyntax.cpp.
//
//===----------------------------------------------------------------------===//

#include "InputDialects.h"
#include "InputSyntax.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace trainc::stablehlo_import {

//===----------------------------------------------------------------------===//
// Pieces of the pretty forms (InputSyntax.h)
//===----------------------------------------------------------------------===//

/// `[1, 2, 3]` (possibly empty).
ParseResult parseIntList(OpAsmParser &p, SmallVectorImpl<int64_t> &values) {
  return p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    int64_t v = 0;
    if (p.parseInteger(v))
      return failure();
    values.push_back(v);
    return success();
  });
}

/// A value written without a type: `[ints]`, a string, a keyword (an enum
/// value or a type name), an integer, then a float (`tolerance = 0.1`,
/// `max_ulp_difference = 3` after an op's operands) or, inside a dialect
/// attribute's `<...>`, any attribute (`#stablehlo.result_accuracy_mode<..>`).
ParseResult parseLooseValue(AsmParser &p, Attribute &value, bool anyAttribute) {
  Builder b = p.getBuilder();
  if (succeeded(p.parseOptionalLSquare())) {
    SmallVector<int64_t> values;
    if (failed(p.parseOptionalRSquare())) {
      do {
        int64_t v = 0;
        if (p.parseInteger(v))
          return failure();
        values.push_back(v);
      } while (succeeded(p.parseOptionalComma()));
      if (p.parseRSquare())
        return failure();
    }
    value = b.getDenseI64ArrayAttr(values);
    return success();
  }
  std::string text;
  if (succeeded(p.parseOptionalString(&text))) {
    value = b.getStringAttr(text);
    return success();
  }
  StringRef keyword;
  if (succeeded(p.parseOptionalKeyword(&keyword))) {
    value = b.getStringAttr(keyword);
    return success();
  }
  int64_t integer = 0;
  OptionalParseResult parsedInt = p.parseOptionalInteger(integer);
  if (parsedInt.has_value()) {
    if (failed(*parsedInt))
      return failure();
    value = b.getI64IntegerAttr(integer);
    return success();
  }
  if (anyAttribute)
    return p.parseAttribute(value);
  double number = 0;
  if (p.parseFloat(number))
    return failure();
  value = b.getF64FloatAttr(number);
  return success();
}

ParseResult parseI64ArrayAttr(OpAsmParser &p, OperationState &st,
                              StringRef name) {
  SmallVector<int64_t> values;
  if (parseIntList(p, values))
    return failure();
  st.addAttribute(name, p.getBuilder().getDenseI64ArrayAttr(values));
  return success();
}

/// Operands separated by commas up to the first thing that is no operand.
/// `comma` tells whether a comma followed the last operand (a keyword
/// attribute comes next).
ParseResult parseLeadingOperands(OpAsmParser &p, SmallVectorImpl<Operand> &ops,
                                 bool &comma) {
  comma = false;
  while (true) {
    Operand operand;
    OptionalParseResult parsed = p.parseOptionalOperand(operand);
    if (!parsed.has_value())
      return success();
    if (failed(*parsed))
      return failure();
    ops.push_back(operand);
    comma = succeeded(p.parseOptionalComma());
    if (!comma)
      return success();
  }
}

/// The trailing types, in each form the printer uses:
///   `: T`                    every operand and the one result have type T;
///   `: (T1, ...) -> R`       functional;
///   `: P, T`                 select: the predicate's type, then the rest;
///   `: T1, ..., Tn`          one type per operand, also the results' types
///                            (optimization_barrier).
ParseResult parseTypesAndResolve(OpAsmParser &p, OperationState &st,
                                 ArrayRef<Operand> ops, SMLoc loc) {
  SmallVector<Type> types;
  if (p.parseColonTypeList(types))
    return failure();
  if (types.size() == 1) {
    if (auto fn = dyn_cast<FunctionType>(types[0])) {
      if (p.resolveOperands(ops, fn.getInputs(), loc, st.operands))
        return failure();
      st.addTypes(fn.getResults());
      return success();
    }
    if (p.resolveOperands(ops, types[0], st.operands))
      return failure();
    st.addTypes(types[0]);
    return success();
  }
  if (types.size() == 2 && ops.size() == 3) {
    if (p.resolveOperand(ops[0], types[0], st.operands) ||
        p.resolveOperands(ops.drop_front(), types[1], st.operands))
      return failure();
    st.addTypes(types[1]);
    return success();
  }
  if (types.size() == ops.size()) {
    if (p.resolveOperands(ops, types, loc, st.operands))
      return failure();
    st.addTypes(types);
    return success();
  }
  return p.emitError(loc) << "expected ': type', ': (operand types) -> "
                             "result types' or one type per operand";
}

/// Operands with `name = [ints]` attributes renamed by `names` (pretty
/// name, generic name): broadcast_in_dim, transpose, reverse, broadcast,
/// pad, dynamic_slice.
ParseResult parseWithIntLists(OpAsmParser &p, OperationState &st,
                              ArrayRef<std::pair<StringRef, StringRef>> names) {
  return parseOperandsAndKeywords(
      p, st, [&](StringRef name) -> OptionalParseResult {
        for (auto [pretty, generic] : names)
          if (name == pretty)
            return parseI64ArrayAttr(p, st, generic);
        return std::nullopt;
      });
}

namespace {

//===----------------------------------------------------------------------===//
// chlo and check
//===----------------------------------------------------------------------===//

/// `chlo.erf %x : T -> U` (chlo's unary form), `chlo.next_after %x, %y :
/// T, T -> U` (its binary one, one type per operand) or the default forms.
ParseResult parseChlo(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  SmallVector<Type> types;
  if (p.parseOperandList(ops) || p.parseOptionalAttrDict(st.attributes) ||
      p.parseColonTypeList(types))
    return failure();
  if (types.size() == 1) {
    if (auto fn = dyn_cast<FunctionType>(types[0])) {
      st.addTypes(fn.getResults());
      return p.resolveOperands(ops, fn.getInputs(), loc, st.operands);
    }
  }
  Type result = types.front();
  if (succeeded(p.parseOptionalArrow()) && p.parseType(result))
    return failure();
  st.addTypes(result);
  if (types.size() == 1)
    return p.resolveOperands(ops, types[0], st.operands);
  return p.resolveOperands(ops, types, loc, st.operands);
}

/// `chlo.top_k(%x, k = K) : T -> (V, I)`.
ParseResult parseTopK(OpAsmParser &p, OperationState &st) {
  Operand operand;
  int64_t k;
  Type type;
  SmallVector<Type> results;
  if (p.parseLParen() || p.parseOperand(operand) || p.parseComma() ||
      p.parseKeyword("k") || p.parseEqual() || p.parseInteger(k) ||
      p.parseRParen() || p.parseOptionalAttrDict(st.attributes) ||
      p.parseColonType(type) || p.parseArrowTypeList(results))
    return failure();
  st.addAttribute("k", p.getBuilder().getI64IntegerAttr(k));
  st.addTypes(results);
  return p.resolveOperand(operand, type, st.operands);
}

/// `check.expect_eq_const %x, dense<...> : T`: the expected value is the
/// `value` attribute.
ParseResult parseCheckConst(OpAsmParser &p, OperationState &st) {
  Operand operand;
  Attribute value;
  if (p.parseOperand(operand) || p.parseComma() || p.parseAttribute(value) ||
      p.parseOptionalAttrDict(st.attributes))
    return failure();
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed)
    return p.emitError(p.getCurrentLocation(), "expected a typed value");
  st.addAttribute("value", value);
  return p.resolveOperand(operand, typed.getType(), st.operands);
}

/// `check.expect_eq %a, %b, name = value : T` and the other checks.
ParseResult parseCheck(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  bool comma;
  SmallVector<Type> types;
  if (parseLeadingOperands(p, ops, comma) ||
      parseKeywordAttrs(p, comma,
                        [&](StringRef name) -> OptionalParseResult {
                          Attribute value;
                          if (parseLooseValue(p, value, /*anyAttribute=*/false))
                            return failure();
                          st.addAttribute(name, value);
                          return success();
                        }) ||
      p.parseOptionalAttrDict(st.attributes) || p.parseColonTypeList(types))
    return failure();
  if (types.size() == 1)
    return p.resolveOperands(ops, types[0], st.operands);
  return p.resolveOperands(ops, types, loc, st.operands);
}

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

/// `name<field = value, ...>` into a DictionaryAttr; `name<VALUE>` (an
/// enum written in the struct form) into a StringAttr.
Attribute parseStructBody(DialectAsmParser &p) {
  NamedAttrList fields;
  if (p.parseLess())
    return {};
  if (succeeded(p.parseOptionalGreater()))
    return p.getBuilder().getDictionaryAttr({});
  do {
    StringRef name;
    Attribute value;
    if (p.parseKeyword(&name))
      return {};
    if (failed(p.parseOptionalEqual())) {
      // An enum in struct form: `#stablehlo.result_accuracy_mode<DEFAULT>`.
      if (!fields.empty() || p.parseGreater())
        return {};
      return p.getBuilder().getStringAttr(name);
    }
    if (parseLooseValue(p, value, /*anyAttribute=*/true))
      return {};
    fields.append(name, value);
  } while (succeeded(p.parseOptionalComma()));
  if (p.parseGreater())
    return {};
  return fields.getDictionary(p.getContext());
}

/// Parses `#<dialect>.<name><fields>` and `#<dialect><enum VALUE>`.
Attribute parseDialectAttribute(DialectAsmParser &p) {
  StringRef name;
  if (p.parseKeyword(&name))
    return {};
  // `#stablehlo<comparison_direction LT>`: the enum's value.
  StringRef value;
  if (succeeded(p.parseOptionalKeyword(&value)))
    return p.getBuilder().getStringAttr(value);
  if (name == "conv") {
    // `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`.
    DictionaryAttr dims;
    if (p.parseLess() || parseConvDimensions(p, dims) || p.parseGreater())
      return {};
    return dims;
  }
  if (name == "type_extensions") {
    p.emitError(p.getNameLoc())
        << "'" << name << "' attributes are not supported by trainc";
    return {};
  }
  return parseStructBody(p);
}

/// An input dialect: unknown ops allowed, pretty forms through `hooks`,
/// dialect attributes into builtin ones.
class InputDialect : public Dialect {
public:
  InputDialect(StringRef name, MLIRContext *ctx, TypeID id,
               const llvm::StringMap<ParseFn> &hooks)
      : Dialect(name, ctx, id), hooks(hooks) {
    allowUnknownOperations();
  }

  std::optional<ParseOpHook>
  getParseOperationHook(StringRef opName) const override {
    auto it = hooks.find(opName.drop_front(getNamespace().size() + 1));
    if (it == hooks.end())
      return std::nullopt;
    return ParseOpHook(it->second);
  }

  Attribute parseAttribute(DialectAsmParser &p, Type) const override {
    return parseDialectAttribute(p);
  }

  Type parseType(DialectAsmParser &p) const override {
    StringRef name;
    (void)p.parseOptionalKeyword(&name);
    p.emitError(p.getNameLoc())
        << "the type '!" << getNamespace() << "." << name
        << "' is not supported by trainc (tokens, tuples and futures carry "
           "no tensor data a training step uses)";
    return {};
  }

private:
  const llvm::StringMap<ParseFn> &hooks;
};

const llvm::StringMap<ParseFn> &chloHooks() {
  static const llvm::StringMap<ParseFn> hooks = [] {
    llvm::StringMap<ParseFn> h;
    for (StringRef name : {"erf",
                           "square",
                           "erfc",
                           "erf_inv",
                           "tan",
                           "lgamma",
                           "digamma",
                           "sinh",
                           "cosh",
                           "asin",
                           "acos",
                           "atan",
                           "asinh",
                           "acosh",
                           "atanh",
                           "is_inf",
                           "is_neg_inf",
                           "is_pos_inf",
                           "conj",
                           "bessel_i1e",
                           "broadcast_add",
                           "broadcast_subtract",
                           "broadcast_multiply",
                           "broadcast_divide",
                           "broadcast_maximum",
                           "broadcast_minimum",
                           "broadcast_compare",
                           "broadcast_select",
                           "mulhi",
                           "next_after",
                           "polygamma",
                           "zeta"})
      h[name] = parseChlo;
    h["top_k"] = parseTopK;
    return h;
  }();
  return hooks;
}

const llvm::StringMap<ParseFn> &checkHooks() {
  static const llvm::StringMap<ParseFn> hooks = [] {
    llvm::StringMap<ParseFn> h;
    h["expect_eq_const"] = parseCheckConst;
    h["expect_almost_eq_const"] = parseCheckConst;
    for (StringRef name : {"expect_eq", "expect_almost_eq", "expect_close",
                           "expect_serialized_eq"})
      h[name] = parseCheck;
    return h;
  }();
  return hooks;
}

#define TRAINC_INPUT_DIALECT(Class, name, hooks)                               \
  class Class : public InputDialect {                                          \
  public:                                                                      \
    explicit Class(MLIRContext *ctx)                                           \
        : InputDialect(getDialectNamespace(), ctx, TypeID::get<Class>(),       \
                       hooks()) {}                                             \
    static StringRef getDialectNamespace() { return name; }                    \
    MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Class)                        \
  };

TRAINC_INPUT_DIALECT(StablehloInputDialect, "stablehlo", stablehloHooks)
TRAINC_INPUT_DIALECT(ChloInputDialect, "chlo", chloHooks)
TRAINC_INPUT_DIALECT(CheckInputDialect, "check", checkHooks)
#undef TRAINC_INPUT_DIALECT

} // namespace

void loadInputDialects(MLIRContext &context) {
  context.getOrLoadDialect<StablehloInputDialect>();
  context.getOrLoadDialect<ChloInputDialect>();
  context.getOrLoadDialect<CheckInputDialect>();
}

} // namespace trainc::stablehlo_import
