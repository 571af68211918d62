//===- Json.h - Writing JSON values -----------------------------*- C++ -*-===//
//
// The few pieces trainc's JSON writers (safetensors headers, JSONL metrics,
// run state) share.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_JSON_H
#define TRAINC_RUNTIME_IO_JSON_H

#include <string>

namespace trainc {

/// `s` as a JSON string literal; a byte that is not part of well-formed
/// UTF-8 becomes U+FFFD (\ufffd).
std::string jsonString(const std::string &s);
/// `v` as a JSON number with 17 significant digits (null for NaN/inf).
std::string jsonNumber(double v);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_JSON_H
