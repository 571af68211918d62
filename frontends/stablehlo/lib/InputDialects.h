//===- InputDialects.h - The stablehlo, chlo and check input dialects -*- C++
//-*-===//
//
// Debian ships no StableHLO dialect, so trainc reads StableHLO text with
// three small input dialects of its own, written from the public StableHLO
// specification: `stablehlo`, `chlo` (the few CHLO ops `jax.jit(...).lower`
// leaves in) and `check` (the assertions of the StableHLO interpreter
// tests). They define no op classes: each dialect allows unknown operations
// and registers a parse hook per op name for its pretty form (the form JAX
// prints), which builds a generic operation with the attributes the generic
// form would carry (`dimensions`, `broadcast_dimensions`,
// `comparison_direction`, ...). Both forms of an op therefore reach the
// importer as the same generic operation, and the importer checks each
// op's operands and attributes itself.
//
// Dialect attributes (`#stablehlo.gather<...>`, `#stablehlo.dot<...>`,
// `#stablehlo<comparison_direction LT>`, ...) parse into builtin attributes:
// a struct into a DictionaryAttr of its fields (integer lists as
// DenseI64ArrayAttr, enum keywords as StringAttr), an enum into the
// StringAttr of its value.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_STABLEHLO_INPUTDIALECTS_H
#define TRAINC_FRONTENDS_STABLEHLO_INPUTDIALECTS_H

#include "mlir/IR/Dialect.h"

namespace trainc::stablehlo_import {

/// Loads the three input dialects into `context`.
void loadInputDialects(mlir::MLIRContext &context);

} // namespace trainc::stablehlo_import

#endif // TRAINC_FRONTENDS_STABLEHLO_INPUTDIALECTS_H
