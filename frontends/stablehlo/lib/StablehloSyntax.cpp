//===- StablehloSyntax.cpp - The stablehlo dialect's pretty forms ---------===//
//
// One parse hook per stablehlo op that JAX prints in a pretty form (see
// InputDialects.h): each reads the form into a generic operation with the
// attributes the generic form would carry.
//
//===----------------------------------------------------------------------===//

#include "InputSyntax.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace trainc::stablehlo_import {

/// A convolution's dimension numbers, `[b, 0, 1, f]x[0, 1, i, o]->[b, 0,
/// 1, f]` (each list names what each dimension of the input, the kernel
/// and the output holds: b/f the batch and features, i/o the kernel's
/// input and output features, integers the spatial dimensions in order),
/// as a dictionary with StableHLO's field names.
ParseResult parseConvDimensions(AsmParser &p, DictionaryAttr &result) {
  Builder b = p.getBuilder();
  NamedAttrList fields;
  auto list = [&](StringRef prefix, char first, char second,
                  StringRef firstName, StringRef secondName) -> ParseResult {
    SMLoc loc = p.getCurrentLocation();
    int64_t position = 0, firstAt = -1, secondAt = -1;
    SmallVector<std::pair<int64_t, int64_t>> spatial; // (index, position)
    if (p.parseCommaSeparatedList(
            AsmParser::Delimiter::Square, [&]() -> ParseResult {
              int64_t index = 0;
              OptionalParseResult number = p.parseOptionalInteger(index);
              if (number.has_value()) {
                if (failed(*number))
                  return failure();
                spatial.push_back({index, position++});
                return success();
              }
              StringRef letter;
              if (p.parseKeyword(&letter))
                return failure();
              if (letter.size() == 1 && letter[0] == first)
                firstAt = position++;
              else if (letter.size() == 1 && letter[0] == second)
                secondAt = position++;
              else
                return p.emitError(p.getCurrentLocation())
                       << "unexpected '" << letter << "' in dimension numbers";
              return success();
            }))
      return failure();
    llvm::sort(spatial);
    SmallVector<int64_t> positions;
    for (auto [i, entry] : llvm::enumerate(spatial)) {
      if (entry.first != static_cast<int64_t>(i))
        return p.emitError(loc) << "spatial dimensions must be 0, 1, ... once";
      positions.push_back(entry.second);
    }
    if (firstAt < 0 || secondAt < 0)
      return p.emitError(loc) << "dimension numbers need '" << first
                              << "' and '" << second << "'";
    fields.append(prefix.str() + firstName.str(), b.getI64IntegerAttr(firstAt));
    fields.append(prefix.str() + secondName.str(),
                  b.getI64IntegerAttr(secondAt));
    fields.append(prefix.str() + "spatial_dimensions",
                  b.getDenseI64ArrayAttr(positions));
    return success();
  };
  if (list("input_", 'b', 'f', "batch_dimension", "feature_dimension") ||
      p.parseKeyword("x") ||
      list("kernel_", 'i', 'o', "input_feature_dimension",
           "output_feature_dimension") ||
      p.parseArrow() ||
      list("output_", 'b', 'f', "batch_dimension", "feature_dimension"))
    return failure();
  result = fields.getDictionary(p.getContext());
  return success();
}

namespace {

//===----------------------------------------------------------------------===//
// stablehlo
//===----------------------------------------------------------------------===//

/// `operands attr-dict : types`: elementwise ops, reshape, convert, select,
/// clamp, dynamic_update_slice, optimization_barrier.
ParseResult parseDefault(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  if (p.parseOperandList(ops) || p.parseOptionalAttrDict(st.attributes))
    return failure();
  return parseTypesAndResolve(p, st, ops, loc);
}

/// `stablehlo.convolution(%lhs, %rhs) dim_numbers = ..., window = {stride
/// = [..], pad = [[lo, hi], ..], lhs_dilate = [..], rhs_dilate = [..],
/// reverse = [..]} {attributes} : (T, U) -> V`, into the generic form's
/// attributes (dimension_numbers, window_strides, padding flattened,
/// lhs_dilation, rhs_dilation, window_reversal).
ParseResult parseConvolution(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  Builder b = p.getBuilder();
  if (p.parseOperandList(ops, AsmParser::Delimiter::Paren))
    return failure();
  bool comma = true;
  while (comma) {
    StringRef name;
    if (failed(p.parseOptionalKeyword(&name)))
      break;
    if (p.parseEqual())
      return failure();
    if (name == "dim_numbers") {
      DictionaryAttr dims;
      if (parseConvDimensions(p, dims))
        return failure();
      st.addAttribute("dimension_numbers", dims);
    } else if (name == "window") {
      if (p.parseLBrace())
        return failure();
      do {
        StringRef field;
        if (p.parseKeyword(&field) || p.parseEqual())
          return failure();
        SmallVector<int64_t> values;
        auto element = [&]() -> ParseResult {
          if (field == "pad")
            return parseIntList(p, values);
          if (field == "reverse") {
            StringRef flag;
            if (p.parseKeyword(&flag))
              return failure();
            values.push_back(flag == "true");
            return success();
          }
          int64_t v = 0;
          if (p.parseInteger(v))
            return failure();
          values.push_back(v);
          return success();
        };
        if (p.parseCommaSeparatedList(AsmParser::Delimiter::Square, element))
          return failure();
        StringRef generic = llvm::StringSwitch<StringRef>(field)
                                .Case("stride", "window_strides")
                                .Case("pad", "padding")
                                .Case("lhs_dilate", "lhs_dilation")
                                .Case("rhs_dilate", "rhs_dilation")
                                .Case("reverse", "window_reversal")
                                .Default("");
        if (generic.empty())
          return p.emitError(p.getCurrentLocation())
                 << "unexpected window field '" << field << "'";
        st.addAttribute(generic, b.getDenseI64ArrayAttr(values));
      } while (succeeded(p.parseOptionalComma()));
      if (p.parseRBrace())
        return failure();
    } else {
      return p.emitError(p.getCurrentLocation())
             << "unexpected '" << name << " ='";
    }
    comma = succeeded(p.parseOptionalComma());
  }
  if (p.parseOptionalAttrDict(st.attributes))
    return failure();
  return parseTypesAndResolve(p, st, ops, loc);
}

/// `stablehlo.reduce_precision %x, format = e5m10 : T`: the format becomes
/// the generic form's exponent_bits and mantissa_bits.
ParseResult parseReducePrecision(OpAsmParser &p, OperationState &st) {
  return parseOperandsAndKeywords(
      p, st, [&](StringRef name) -> OptionalParseResult {
        if (name != "format")
          return std::nullopt;
        SMLoc loc = p.getCurrentLocation();
        StringRef format;
        if (p.parseKeyword(&format))
          return failure();
        int64_t exponent = 0, mantissa = 0;
        auto [e, m] = format.drop_front().split('m');
        if (!format.starts_with("e") || e.getAsInteger(10, exponent) ||
            m.getAsInteger(10, mantissa))
          return p.emitError(loc)
                 << "expected a format eXmY (exponent and mantissa bits), "
                    "got '"
                 << format << "'";
        st.addAttribute("exponent_bits",
                        p.getBuilder().getI32IntegerAttr(exponent));
        st.addAttribute("mantissa_bits",
                        p.getBuilder().getI32IntegerAttr(mantissa));
        return success();
      });
}

/// `stablehlo.constant attr-dict dense<...> : type`.
ParseResult parseConstant(OpAsmParser &p, OperationState &st) {
  Attribute value;
  if (p.parseOptionalAttrDict(st.attributes) || p.parseAttribute(value))
    return failure();
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed)
    return p.emitError(p.getCurrentLocation(), "expected a typed value");
  st.addAttribute("value", value);
  st.addTypes(typed.getType());
  return success();
}

/// `stablehlo.return %a, %b : T, U` (or nothing).
ParseResult parseReturn(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  SmallVector<Type> types;
  if (p.parseOperandList(ops) || p.parseOptionalAttrDict(st.attributes))
    return failure();
  if (!ops.empty() && p.parseColonTypeList(types))
    return failure();
  return p.resolveOperands(ops, types, loc, st.operands);
}

/// `stablehlo.compare LT, %a, %b, FLOAT : (T, T) -> U`.
ParseResult parseCompare(OpAsmParser &p, OperationState &st) {
  StringRef direction, compareType;
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  bool comma;
  if (p.parseKeyword(&direction) || p.parseComma() ||
      parseLeadingOperands(p, ops, comma))
    return failure();
  st.addAttribute("comparison_direction",
                  p.getBuilder().getStringAttr(direction));
  if (comma) {
    if (p.parseKeyword(&compareType))
      return failure();
    st.addAttribute("compare_type", p.getBuilder().getStringAttr(compareType));
  }
  if (p.parseOptionalAttrDict(st.attributes))
    return failure();
  return parseTypesAndResolve(p, st, ops, loc);
}

/// `stablehlo.iota dim = 0 : T`.
ParseResult parseIota(OpAsmParser &p, OperationState &st) {
  int64_t dim;
  Type type;
  if (p.parseKeyword("dim") || p.parseEqual() || p.parseInteger(dim) ||
      p.parseOptionalAttrDict(st.attributes) || p.parseColonType(type))
    return failure();
  st.addAttribute("iota_dimension", p.getBuilder().getI64IntegerAttr(dim));
  st.addTypes(type);
  return success();
}

/// `stablehlo.slice %x [0:2, 1:7:2] : (T) -> U`.
ParseResult parseSlice(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  Operand operand;
  SmallVector<int64_t> start, limit, strides;
  if (p.parseOperand(operand) ||
      p.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] {
            int64_t a = 0, b = 0, s = 1;
            if (p.parseInteger(a) || p.parseColon() || p.parseInteger(b))
              return failure();
            if (succeeded(p.parseOptionalColon()) && p.parseInteger(s))
              return failure();
            start.push_back(a);
            limit.push_back(b);
            strides.push_back(s);
            return success();
          }) ||
      p.parseOptionalAttrDict(st.attributes))
    return failure();
  Builder b = p.getBuilder();
  st.addAttribute("start_indices", b.getDenseI64ArrayAttr(start));
  st.addAttribute("limit_indices", b.getDenseI64ArrayAttr(limit));
  st.addAttribute("strides", b.getDenseI64ArrayAttr(strides));
  return parseTypesAndResolve(p, st, {operand}, loc);
}

/// `stablehlo.concatenate %a, %b, dim = 0 : (T, T) -> U`.
ParseResult parseConcatenate(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> ops;
  bool comma;
  int64_t dim;
  if (parseLeadingOperands(p, ops, comma))
    return failure();
  if (!comma)
    return p.emitError(p.getCurrentLocation(), "expected ', dim = N'");
  if (p.parseKeyword("dim") || p.parseEqual() || p.parseInteger(dim) ||
      p.parseOptionalAttrDict(st.attributes))
    return failure();
  st.addAttribute("dimension", p.getBuilder().getI64IntegerAttr(dim));
  return parseTypesAndResolve(p, st, ops, loc);
}

/// `precision = [DEFAULT, HIGHEST]` into `precision_config`.
ParseResult parsePrecision(OpAsmParser &p, OperationState &st) {
  SmallVector<Attribute> values;
  if (p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        StringRef v;
        if (p.parseKeyword(&v))
          return failure();
        values.push_back(p.getBuilder().getStringAttr(v));
        return success();
      }))
    return failure();
  st.addAttribute("precision_config", p.getBuilder().getArrayAttr(values));
  return success();
}

/// `algorithm = <field = value, ...>` into an `algorithm` dictionary.
ParseResult parseAlgorithm(OpAsmParser &p, OperationState &st) {
  NamedAttrList fields;
  if (p.parseLess())
    return failure();
  do {
    StringRef name;
    Attribute value;
    if (p.parseKeyword(&name) || p.parseEqual() ||
        parseLooseValue(p, value, /*anyAttribute=*/false))
      return failure();
    fields.append(name, value);
  } while (succeeded(p.parseOptionalComma()));
  if (p.parseGreater())
    return failure();
  st.addAttribute("algorithm", fields.getDictionary(p.getContext()));
  return success();
}

/// `stablehlo.dot_general %a, %b, batching_dims = [0] x [0],
/// contracting_dims = [2] x [1], precision = [...] : (T, T) -> U`; the
/// dimension numbers go into a `dot_dimension_numbers` dictionary, as
/// `#stablehlo.dot<...>` parses.
ParseResult parseDotGeneral(OpAsmParser &p, OperationState &st) {
  SmallVector<int64_t> lb, rb, lc, rc;
  auto pair = [&](SmallVectorImpl<int64_t> &lhs,
                  SmallVectorImpl<int64_t> &rhs) {
    return failure(parseIntList(p, lhs) || p.parseKeyword("x") ||
                   parseIntList(p, rhs));
  };
  if (parseOperandsAndKeywords(p, st,
                               [&](StringRef name) -> OptionalParseResult {
                                 if (name == "batching_dims")
                                   return pair(lb, rb);
                                 if (name == "contracting_dims")
                                   return pair(lc, rc);
                                 if (name == "precision")
                                   return parsePrecision(p, st);
                                 if (name == "algorithm")
                                   return parseAlgorithm(p, st);
                                 return std::nullopt;
                               }))
    return failure();
  Builder b = p.getBuilder();
  st.addAttribute(
      "dot_dimension_numbers",
      b.getDictionaryAttr({
          b.getNamedAttr("lhs_batching_dimensions", b.getDenseI64ArrayAttr(lb)),
          b.getNamedAttr("rhs_batching_dimensions", b.getDenseI64ArrayAttr(rb)),
          b.getNamedAttr("lhs_contracting_dimensions",
                         b.getDenseI64ArrayAttr(lc)),
          b.getNamedAttr("rhs_contracting_dimensions",
                         b.getDenseI64ArrayAttr(rc)),
      }));
  return success();
}

/// `stablehlo.dot %a, %b, precision = [...] : (T, T) -> U`.
ParseResult parseDot(OpAsmParser &p, OperationState &st) {
  return parseOperandsAndKeywords(p, st,
                                  [&](StringRef name) -> OptionalParseResult {
                                    if (name == "precision")
                                      return parsePrecision(p, st);
                                    return std::nullopt;
                                  });
}

ParseResult parseBroadcastInDim(OpAsmParser &p, OperationState &st) {
  return parseWithIntLists(p, st, {{"dims", "broadcast_dimensions"}});
}
ParseResult parseTranspose(OpAsmParser &p, OperationState &st) {
  return parseWithIntLists(p, st, {{"dims", "permutation"}});
}
ParseResult parseReverse(OpAsmParser &p, OperationState &st) {
  return parseWithIntLists(p, st, {{"dims", "dimensions"}});
}
ParseResult parseBroadcast(OpAsmParser &p, OperationState &st) {
  return parseWithIntLists(p, st, {{"sizes", "broadcast_sizes"}});
}
ParseResult parseDynamicSlice(OpAsmParser &p, OperationState &st) {
  return parseWithIntLists(p, st, {{"sizes", "slice_sizes"}});
}
ParseResult parsePad(OpAsmParser &p, OperationState &st) {
  return parseWithIntLists(p, st,
                           {{"low", "edge_padding_low"},
                            {"high", "edge_padding_high"},
                            {"interior", "interior_padding"}});
}

/// Builds the body `^bb0(%a: T, %b: T): %r = <opName> %a, %b; return %r`
/// of the compact reduce form.
void buildCompactBody(OperationState &st, Region &region, StringRef opName,
                      Type scalar) {
  MLIRContext *ctx = st.getContext();
  Block *block = new Block();
  region.push_back(block);
  Value a = block->addArgument(scalar, st.location);
  Value b = block->addArgument(scalar, st.location);
  OperationState inner(st.location, OperationName(opName, ctx));
  inner.addOperands({a, b});
  inner.addTypes(scalar);
  Operation *op = Operation::create(inner);
  block->push_back(op);
  OperationState ret(st.location, OperationName("stablehlo.return", ctx));
  ret.addOperands(op->getResults());
  block->push_back(Operation::create(ret));
}

/// `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions =
/// [1] : (T, S) -> U`, or with a body: `stablehlo.reduce(%x init: %c), (%y
/// init: %d) across dimensions = [1] : (...) -> (...) reducer(%a: S, %b: S)
/// (%c: S2, %d: S2) { ... }`, where pair i names block arguments i and i+N.
ParseResult parseReduce(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<Operand> inputs, inits;
  if (p.parseCommaSeparatedList([&] {
        Operand input, init;
        if (p.parseLParen() || p.parseOperand(input) ||
            p.parseKeyword("init") || p.parseColon() || p.parseOperand(init) ||
            p.parseRParen())
          return failure();
        inputs.push_back(input);
        inits.push_back(init);
        return success();
      }))
    return failure();
  StringRef applied;
  if (succeeded(p.parseOptionalKeyword("applies")) && p.parseKeyword(&applied))
    return failure();
  Type type;
  if (p.parseKeyword("across") || p.parseKeyword("dimensions") ||
      p.parseEqual() || parseI64ArrayAttr(p, st, "dimensions") ||
      p.parseOptionalAttrDict(st.attributes) || p.parseColonType(type))
    return failure();
  auto fn = dyn_cast<FunctionType>(type);
  size_t n = inputs.size();
  if (!fn || fn.getNumInputs() != 2 * n)
    return p.emitError(loc) << "expected ': (input and init types) -> result "
                               "types' with "
                            << 2 * n << " operand types";
  SmallVector<Operand> ops(inputs);
  ops.append(inits);
  if (p.resolveOperands(ops, fn.getInputs(), loc, st.operands))
    return failure();
  st.addTypes(fn.getResults());
  Region *body = st.addRegion();
  if (!applied.empty()) {
    if (n != 1)
      return p.emitError(loc, "'applies' needs exactly one input");
    buildCompactBody(st, *body, applied, fn.getInput(1));
    return success();
  }
  SmallVector<OpAsmParser::Argument> args(2 * n);
  if (p.parseKeyword("reducer"))
    return failure();
  for (size_t i = 0; i < n; ++i)
    if (p.parseLParen() || p.parseArgument(args[i], /*allowType=*/true) ||
        p.parseComma() || p.parseArgument(args[i + n], /*allowType=*/true) ||
        p.parseRParen())
      return failure();
  return p.parseRegion(*body, args);
}

/// `stablehlo.while(%a = %x, %b = %y) : T, U attributes {...} cond { ... }
/// do { ... }`.
ParseResult parseWhile(OpAsmParser &p, OperationState &st) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<OpAsmParser::Argument> args;
  SmallVector<Operand> ops;
  SmallVector<Type> types;
  if (p.parseCommaSeparatedList(AsmParser::Delimiter::Paren,
                                [&] {
                                  OpAsmParser::Argument arg;
                                  Operand operand;
                                  if (p.parseArgument(arg) || p.parseEqual() ||
                                      p.parseOperand(operand))
                                    return failure();
                                  args.push_back(arg);
                                  ops.push_back(operand);
                                  return success();
                                }) ||
      p.parseColonTypeList(types) ||
      p.resolveOperands(ops, types, loc, st.operands) ||
      p.parseOptionalAttrDictWithKeyword(st.attributes))
    return failure();
  if (types.size() != args.size())
    return p.emitError(loc) << "expected " << args.size() << " types";
  for (auto [arg, type] : llvm::zip(args, types))
    arg.type = type;
  st.addTypes(types);
  Region *cond = st.addRegion();
  Region *body = st.addRegion();
  return failure(p.parseKeyword("cond") || p.parseRegion(*cond, args) ||
                 p.parseKeyword("do") || p.parseRegion(*body, args));
}

/// `stablehlo.custom_call @target(%a, %b) {attrs} : (T...) -> R`.
ParseResult parseCustomCall(OpAsmParser &p, OperationState &st) {
  StringAttr target;
  SmallVector<Operand> ops;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseSymbolName(target) ||
      p.parseOperandList(ops, AsmParser::Delimiter::Paren) ||
      p.parseOptionalAttrDict(st.attributes))
    return failure();
  st.addAttribute("call_target_name", target);
  return parseTypesAndResolve(p, st, ops, loc);
}

/// `stablehlo.composite "name" %a, %b {decomposition = @f, ...} : (T...) ->
/// R`: the name becomes the attribute "name".
ParseResult parseComposite(OpAsmParser &p, OperationState &st) {
  std::string name;
  SmallVector<Operand> ops;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseString(&name) || p.parseOperandList(ops) ||
      p.parseOptionalAttrDict(st.attributes))
    return failure();
  st.addAttribute("name", StringAttr::get(p.getContext(), name));
  return parseTypesAndResolve(p, st, ops, loc);
}

} // namespace

const llvm::StringMap<ParseFn> &stablehloHooks() {
  static const llvm::StringMap<ParseFn> hooks = [] {
    llvm::StringMap<ParseFn> h;
    for (StringRef name : {"abs",
                           "add",
                           "and",
                           "atan2",
                           "bitcast_convert",
                           "cbrt",
                           "ceil",
                           "clamp",
                           "convert",
                           "cosine",
                           "count_leading_zeros",
                           "divide",
                           "dynamic_update_slice",
                           "exponential",
                           "exponential_minus_one",
                           "floor",
                           "imag",
                           "is_finite",
                           "log",
                           "log_plus_one",
                           "logistic",
                           "maximum",
                           "minimum",
                           "multiply",
                           "negate",
                           "not",
                           "optimization_barrier",
                           "or",
                           "popcnt",
                           "power",
                           "real",
                           "remainder",
                           "reshape",
                           "round_nearest_afz",
                           "round_nearest_even",
                           "rsqrt",
                           "select",
                           "shift_left",
                           "shift_right_arithmetic",
                           "shift_right_logical",
                           "sign",
                           "sine",
                           "sqrt",
                           "subtract",
                           "tan",
                           "tanh",
                           "xor"})
      h[name] = parseDefault;
    h["constant"] = parseConstant;
    h["return"] = parseReturn;
    h["compare"] = parseCompare;
    h["iota"] = parseIota;
    h["slice"] = parseSlice;
    h["concatenate"] = parseConcatenate;
    h["dot_general"] = parseDotGeneral;
    h["dot"] = parseDot;
    h["broadcast_in_dim"] = parseBroadcastInDim;
    h["broadcast"] = parseBroadcast;
    h["transpose"] = parseTranspose;
    h["reverse"] = parseReverse;
    h["dynamic_slice"] = parseDynamicSlice;
    h["pad"] = parsePad;
    h["reduce"] = parseReduce;
    h["while"] = parseWhile;
    h["custom_call"] = parseCustomCall;
    h["composite"] = parseComposite;
    h["reduce_precision"] = parseReducePrecision;
    h["convolution"] = parseConvolution;
    return h;
  }();
  return hooks;
}

} // namespace trainc::stablehlo_import
