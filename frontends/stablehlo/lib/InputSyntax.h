//===- InputSyntax.h - Pieces of the input dialects' parsers ---*- C++ -*-===//
//
// Shared by InputDialects.cpp and StablehloSyntax.cpp (see InputDialects.h):
// the parts of the pretty forms several ops print, and the stablehlo
// dialect's parse hooks.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_STABLEHLO_INPUTSYNTAX_H
#define TRAINC_FRONTENDS_STABLEHLO_INPUTSYNTAX_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringMap.h"

namespace trainc::stablehlo_import {

using Operand = mlir::OpAsmParser::UnresolvedOperand;
using ParseFn = mlir::ParseResult (*)(mlir::OpAsmParser &,
                                      mlir::OperationState &);

/// `[1, 2, 3]` (possibly empty).
mlir::ParseResult parseIntList(mlir::OpAsmParser &p,
                               llvm::SmallVectorImpl<int64_t> &values);
/// A value written without a type (see InputDialects.cpp).
mlir::ParseResult parseLooseValue(mlir::AsmParser &p, mlir::Attribute &value,
                                  bool anyAttribute);
/// `[ints]` into the attribute `name`.
mlir::ParseResult parseI64ArrayAttr(mlir::OpAsmParser &p,
                                    mlir::OperationState &st,
                                    llvm::StringRef name);
/// Operands separated by commas up to the first thing that is no operand;
/// `comma` tells whether a comma followed the last one.
mlir::ParseResult parseLeadingOperands(mlir::OpAsmParser &p,
                                       llvm::SmallVectorImpl<Operand> &ops,
                                       bool &comma);
/// The trailing types in each form the printer uses, resolving `ops`.
mlir::ParseResult parseTypesAndResolve(mlir::OpAsmParser &p,
                                       mlir::OperationState &st,
                                       llvm::ArrayRef<Operand> ops,
                                       llvm::SMLoc loc);
/// Operands with `name = [ints]` attributes renamed by `names`.
mlir::ParseResult parseWithIntLists(
    mlir::OpAsmParser &p, mlir::OperationState &st,
    llvm::ArrayRef<std::pair<llvm::StringRef, llvm::StringRef>> names);
/// A convolution's dimension numbers (StablehloSyntax.cpp).
mlir::ParseResult parseConvDimensions(mlir::AsmParser &p,
                                      mlir::DictionaryAttr &result);
/// The stablehlo dialect's parse hooks, by op name (StablehloSyntax.cpp).
const llvm::StringMap<ParseFn> &stablehloHooks();

/// `name = value` pairs after the operands, each read by `parseValue`,
/// which returns failure for a name it does not know.
template <typename Fn>
mlir::ParseResult parseKeywordAttrs(mlir::OpAsmParser &p, bool comma,
                                    Fn parseValue) {
  while (comma) {
    llvm::StringRef name;
    llvm::SMLoc loc = p.getCurrentLocation();
    if (p.parseKeyword(&name) || p.parseEqual())
      return mlir::failure();
    mlir::OptionalParseResult parsed = parseValue(name);
    if (!parsed.has_value())
      return p.emitError(loc) << "unexpected '" << name << " ='";
    if (mlir::failed(*parsed))
      return mlir::failure();
    comma = mlir::succeeded(p.parseOptionalComma());
  }
  return mlir::success();
}

/// Operands, `name = value` attributes read by `parseValue` (see
/// parseKeywordAttrs), the attribute dictionary and the types: the form of
/// most ops with keyword attributes.
template <typename Fn>
mlir::ParseResult parseOperandsAndKeywords(mlir::OpAsmParser &p,
                                           mlir::OperationState &st,
                                           Fn parseValue) {
  llvm::SMLoc loc = p.getCurrentLocation();
  llvm::SmallVector<Operand> ops;
  bool comma;
  if (parseLeadingOperands(p, ops, comma) ||
      parseKeywordAttrs(p, comma, parseValue) ||
      p.parseOptionalAttrDict(st.attributes))
    return mlir::failure();
  return parseTypesAndResolve(p, st, ops, loc);
}

} // namespace trainc::stablehlo_import

#endif // TRAINC_FRONTENDS_STABLEHLO_INPUTSYNTAX_H
